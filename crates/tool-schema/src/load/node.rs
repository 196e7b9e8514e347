//! Node definitions as single-node tools.

use std::path::Path;

use serde_json::Value;

use super::fields::{Fields, kind};
use super::interface::interface_schema;
use super::{parse_json, read_text};
use crate::{Error, Implementation, ToolDefinition};

/// Reads node definitions (`fullType`, `displayName`, `description`, `inputs`, and
/// `outputs` as the output schema) as tools that run the node in a one-node workflow. The
/// text is one definition object or an array of them; the tool id is the `fullType`.
///
/// # Errors
/// [`Error::Syntax`] for bad JSON, [`Error::InvalidField`] for a missing `fullType`, a bad
/// id, a field of the wrong kind or an unsupported `dataFlowType`.
pub fn nodes_from_str(text: &str, source: &str) -> Result<Vec<ToolDefinition>, Error> {
    let document = parse_json(text, source)?;
    match &document {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::Object(map) => node_tool(&Fields {
                    file: source,
                    path: format!("[{index}]"),
                    map,
                }),
                other @ (Value::Null
                | Value::Bool(_)
                | Value::Number(_)
                | Value::String(_)
                | Value::Array(_)) => Err(Error::InvalidField {
                    line: None,
                    file: source.to_owned(),
                    field: format!("[{index}]"),
                    reason: format!("expected a node definition object, found {}", kind(other)),
                }),
            })
            .collect(),
        single @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::String(_)
        | Value::Object(_)) => Ok(vec![node_tool(&Fields::root(source, single)?)?]),
    }
}

/// Reads the node definitions in the file at `path`.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, else as [`nodes_from_str`].
pub fn nodes_from_path(path: &Path) -> Result<Vec<ToolDefinition>, Error> {
    nodes_from_str(&read_text(path)?, &path.display().to_string())
}

fn node_tool(node: &Fields<'_>) -> Result<ToolDefinition, Error> {
    let id = node.tool_id("fullType")?;
    let mut definition = ToolDefinition::new(
        id.clone(),
        node.optional_str("description")?.unwrap_or_default(),
        interface_schema(node, "inputs")?,
        Implementation::Node {
            node_type: id.to_string(),
        },
    );
    definition.display_name = node.optional_str("displayName")?.map(str::to_owned);
    if node.get("outputs").is_some() {
        definition.output_schema = Some(interface_schema(node, "outputs")?);
    }
    Ok(definition)
}
