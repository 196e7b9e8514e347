//! The `tools:` section of a `plugin.yaml`.

use std::path::Path;

use serde_json::Value;

use super::fields::Fields;
use super::read_text;
use crate::id::check_workflow_reference;
use crate::{Error, Implementation, ToolDefinition, ToolId, empty_parameters};

const TOOL_FIELDS: &[&str] = &[
    "id",
    "displayName",
    "description",
    "parameters",
    "outputSchema",
    "implementation",
];
const NODE_FIELDS: &[&str] = &["type", "nodeType"];
const WORKFLOW_FIELDS: &[&str] = &["type", "workflowId"];
const SERVICE_FIELDS: &[&str] = &["type"];

/// Reads the tools a `plugin.yaml` declares under `tools:` (other sections are ignored; no
/// `tools:` means no tools). `source` names the text in error messages.
///
/// Each tool has an `id` of the form `plugin:tool` (when the file has a top-level `name`,
/// the namespace must equal it), optional `displayName`, `description` and
/// `outputSchema`, `parameters` as a JSON Schema object (absent or empty: no parameters)
/// and an `implementation` of `type` `node` (with `nodeType`), `workflow` (with
/// `workflowId`, a path inside the plugin) or `service`. The seed's example writes defaults
/// as `defaultValue`; inside `parameters` that key is read as JSON Schema's `default`.
///
/// # Errors
/// [`Error::Syntax`] for bad YAML; [`Error::InvalidField`] naming the field
/// (`tools[1].implementation.type`) and the line it is on for a missing or unknown field, a value of the wrong
/// kind, an id without a namespace or outside the plugin's, a repeated id, an unsafe
/// workflow path, or parameters that are not a valid JSON Schema.
pub fn plugin_from_str(text: &str, source: &str) -> Result<Vec<ToolDefinition>, Error> {
    plugin_manifest(text, source, None).map(|(_, tools)| tools)
}

/// [`plugin_from_str`] that also gives the plugin's name: the file's `name`, else
/// `default_name` (a plugin directory's name). With a name, every tool id's namespace must
/// equal it.
pub(crate) fn plugin_manifest(
    text: &str,
    source: &str,
    default_name: Option<&str>,
) -> Result<(Option<String>, Vec<ToolDefinition>), Error> {
    let document: Value = serde_saphyr::from_str(text).map_err(|error| Error::Syntax {
        file: source.to_owned(),
        message: error.to_string(),
    })?;
    plugin_tools(&document, source, default_name).map_err(|mut error| {
        if let Error::InvalidField {
            line: line @ None,
            field,
            ..
        } = &mut error
        {
            *line = super::yaml_lines::line_of(text, field);
        }
        error
    })
}

/// [`plugin_from_str`] on the parsed document; errors carry no line yet.
fn plugin_tools(
    document: &Value,
    source: &str,
    default_name: Option<&str>,
) -> Result<(Option<String>, Vec<ToolDefinition>), Error> {
    if document.is_null() {
        return Ok((default_name.map(str::to_owned), Vec::new()));
    }
    let root = Fields::root(source, document)?;
    let plugin_name = root.optional_str("name")?.or(default_name);
    let mut tools: Vec<ToolDefinition> = Vec::new();
    for tool in root.objects("tools")? {
        let definition = plugin_tool(&tool, plugin_name)?;
        if let Some(index) = tools.iter().position(|seen| seen.id == definition.id) {
            return Err(tool.error(
                tool.field("id"),
                format!(
                    "tool id '{}' is already declared by tools[{index}]",
                    definition.id
                ),
            ));
        }
        tools.push(definition);
    }
    Ok((plugin_name.map(str::to_owned), tools))
}

/// Reads the tools declared in the `plugin.yaml` at `path`.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, else as [`plugin_from_str`].
pub fn plugin_from_path(path: &Path) -> Result<Vec<ToolDefinition>, Error> {
    plugin_from_str(&read_text(path)?, &path.display().to_string())
}

fn plugin_tool(tool: &Fields<'_>, plugin_name: Option<&str>) -> Result<ToolDefinition, Error> {
    tool.reject_unknown_keys(TOOL_FIELDS)?;
    let id = tool.tool_id("id")?;
    check_namespace(tool, &id, plugin_name)?;
    let mut definition = ToolDefinition::new(
        id,
        tool.optional_str("description")?.unwrap_or_default(),
        schema_field(tool, "parameters")?.unwrap_or_else(empty_parameters),
        implementation(&tool.required_object("implementation")?)?,
    );
    definition.display_name = tool.optional_str("displayName")?.map(str::to_owned);
    definition.output_schema = schema_field(tool, "outputSchema")?;
    Ok(definition)
}

fn check_namespace(tool: &Fields<'_>, id: &ToolId, plugin_name: Option<&str>) -> Result<(), Error> {
    match (id.namespace(), plugin_name) {
        (None, _) => Err(tool.error(
            tool.field("id"),
            format!("a plugin tool id needs a namespace: 'plugin:{id}'"),
        )),
        (Some(namespace), Some(plugin)) if namespace != plugin => Err(tool.error(
            tool.field("id"),
            format!("the namespace '{namespace}' differs from the plugin name '{plugin}'"),
        )),
        _ => Ok(()),
    }
}

/// A JSON Schema object at `key`, of type `object` if it says, with `defaultValue` read
/// as `default`, checked against its meta-schema.
fn schema_field(tool: &Fields<'_>, key: &str) -> Result<Option<Value>, Error> {
    let Some(schema) = tool.optional_object(key)? else {
        return Ok(None);
    };
    if let Some(kind) = schema.map.get("type")
        && kind != "object"
    {
        return Err(tool.error(
            schema.field("type"),
            format!("a tool's {key} must be of type 'object', not {kind}"),
        ));
    }
    let mut schema = Value::Object(schema.map.clone());
    rename_default_value(&mut schema);
    if let Err(error) = jsonschema::meta::validate(&schema) {
        let location = error.instance_path().as_str();
        let at = if location.is_empty() {
            String::new()
        } else {
            format!(" at {location}")
        };
        return Err(tool.error(
            tool.field(key),
            format!("not a valid JSON Schema{at}: {error}"),
        ));
    }
    Ok(Some(schema))
}

/// Renames `defaultValue` to `default` in every property and item schema.
fn rename_default_value(schema: &mut Value) {
    let Value::Object(schema) = schema else {
        return;
    };
    if !schema.contains_key("default")
        && let Some(default) = schema.remove("defaultValue")
    {
        schema.insert("default".to_owned(), default);
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.values_mut().for_each(rename_default_value);
    }
    if let Some(items) = schema.get_mut("items") {
        rename_default_value(items);
    }
}

fn implementation(fields: &Fields<'_>) -> Result<Implementation, Error> {
    let kind = fields.required_str("type")?;
    let implementation = match kind {
        "node" => {
            fields.reject_unknown_keys(NODE_FIELDS)?;
            Implementation::Node {
                node_type: fields.required_str("nodeType")?.to_owned(),
            }
        }
        "workflow" => {
            fields.reject_unknown_keys(WORKFLOW_FIELDS)?;
            let workflow_id = fields.required_str("workflowId")?;
            check_workflow_reference(workflow_id, true)
                .map_err(|reason| fields.error(fields.field("workflowId"), reason))?;
            Implementation::Workflow {
                workflow_id: workflow_id.to_owned(),
            }
        }
        "service" => {
            fields.reject_unknown_keys(SERVICE_FIELDS)?;
            Implementation::Service
        }
        other => {
            return Err(fields.error(
                fields.field("type"),
                format!(
                    "unknown implementation type '{other}' (expected node, workflow or service)"
                ),
            ));
        }
    };
    Ok(implementation)
}
