//! Tool definition files, recognised by extension and content: a workflow (`*.json` with
//! `interfaceInputs`, `inputInterface`, `nodes` or `edges`), node definitions (`*.json` holding an object with
//! `fullType` or an array of them), a plugin manifest (`*.yaml` / `*.yml`, its `tools:`) or a
//! plugin directory (its `plugin.yaml` and the workflow files its tools name).

use std::path::Path;

use serde_json::Value;
use tool_schema::ToolDefinition;
use tool_schema::load::{nodes_from_str, plugin_dir, plugin_from_str, workflow_from_str};

use crate::error::CliError;

/// What a tool file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolFileKind {
    /// A workflow: one `workflow:<file stem>` tool.
    Workflow,
    /// Node definitions: one single-node tool each.
    Nodes,
    /// A `plugin.yaml`: the tools under `tools:`.
    Plugin,
}

/// Fields any one of which marks a JSON object as a workflow.
const WORKFLOW_FIELDS: &[&str] = &[
    "interfaceInputs",
    "interfaceOutputs",
    "inputInterface",
    "outputInterface",
    "nodes",
    "edges",
];

/// Reads the tool definitions in the file at `path`.
///
/// # Errors
/// [`CliError::Read`] when the file cannot be read; [`CliError::Definition`] when its kind
/// cannot be told; [`CliError::Schema`] (file, field and reason) when it is not a valid
/// definition of its kind.
pub(crate) fn load_tool_file(path: &Path) -> Result<Vec<ToolDefinition>, CliError> {
    if path.is_dir() {
        // A whole plugin: its plugin.yaml and the workflow files it names.
        return Ok(plugin_dir(path)?.tools);
    }
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    let source = path.display().to_string();
    match detect_kind(path, &text)? {
        ToolFileKind::Plugin => Ok(plugin_from_str(&text, &source)?),
        ToolFileKind::Nodes => Ok(nodes_from_str(&text, &source)?),
        ToolFileKind::Workflow => {
            let stem = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or_default();
            Ok(vec![workflow_from_str(&text, stem, &source)?])
        }
    }
}

/// Tells the kind of a tool file from its extension, and for JSON from its top-level
/// fields. A file with another extension is JSON when it starts with `{` or `[`, else YAML.
fn detect_kind(path: &Path, text: &str) -> Result<ToolFileKind, CliError> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let is_json = match extension.as_deref() {
        Some("yaml" | "yml") => false,
        Some("json") => true,
        _ => text.trim_start().starts_with(['{', '[']),
    };
    if !is_json {
        return Ok(ToolFileKind::Plugin);
    }
    let document: Value =
        serde_json::from_str(text).map_err(|error| tool_schema::Error::Syntax {
            file: path.display().to_string(),
            message: error.to_string(),
        })?;
    match &document {
        Value::Array(_) => Ok(ToolFileKind::Nodes),
        Value::Object(fields) if fields.contains_key("fullType") => Ok(ToolFileKind::Nodes),
        Value::Object(fields) if WORKFLOW_FIELDS.iter().any(|f| fields.contains_key(*f)) => {
            Ok(ToolFileKind::Workflow)
        }
        Value::Object(fields) if fields.contains_key("tool_ids_inventory") => {
            Err(CliError::Definition(format!(
                "{}: this is an agent profile, not a tool file; give it to `tam prompt` as PROFILE",
                path.display()
            )))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_) => {
            Err(CliError::Definition(format!(
                "{}: not a tool file: a workflow has one of the fields {}, node definitions have \
             `fullType` (an object or an array of them), a plugin manifest is YAML",
                path.display(),
                WORKFLOW_FIELDS.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(name: &str, text: &str) -> Result<ToolFileKind, String> {
        detect_kind(Path::new(name), text).map_err(|e| e.to_string())
    }

    #[test]
    fn kinds_come_from_the_extension_then_the_content() {
        assert_eq!(kind("plugin.yaml", "tools: []"), Ok(ToolFileKind::Plugin));
        assert_eq!(
            kind("p.YML", "{}"),
            Ok(ToolFileKind::Plugin),
            "YAML may look like JSON"
        );
        assert_eq!(
            kind("w.json", r#"{"interfaceInputs": {}}"#),
            Ok(ToolFileKind::Workflow)
        );
        assert_eq!(
            kind("skill.json", r#"{"inputInterface": {}}"#),
            Ok(ToolFileKind::Workflow),
            "a skill names its inputs inputInterface"
        );
        assert_eq!(
            kind("w.json", r#"{"nodes": [], "edges": []}"#),
            Ok(ToolFileKind::Workflow)
        );
        assert_eq!(
            kind("n.json", r#"{"fullType": "a:B"}"#),
            Ok(ToolFileKind::Nodes)
        );
        assert_eq!(kind("n.json", "[]"), Ok(ToolFileKind::Nodes));
        assert_eq!(
            kind("manifest", "name: x\ntools: []"),
            Ok(ToolFileKind::Plugin)
        );
        assert_eq!(kind("defs", " [ ]"), Ok(ToolFileKind::Nodes));
    }

    #[test]
    fn unknown_json_is_refused_with_the_reason() {
        let profile = kind("agent.json", r#"{"tool_ids_inventory": []}"#).unwrap_err();
        assert!(profile.contains("agent profile"), "{profile}");
        let other = kind("x.json", r#"{"hello": 1}"#).unwrap_err();
        assert!(other.starts_with("x.json: not a tool file"), "{other}");
        let broken = kind("x.json", "{\n  \"a\": ,\n}").unwrap_err();
        assert!(broken.contains("line 2"), "{broken}");
    }
}
