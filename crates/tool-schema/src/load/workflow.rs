//! Workflow files as `workflow:<workflow_id>` tools.

use std::path::Path;

use super::fields::Fields;
use super::interface::interface_schema;
use super::{parse_json, read_text};
use crate::{Error, Implementation, ToolDefinition, ToolId};

/// Reads a workflow definition (`description`, `interfaceInputs` — or `inputInterface`,
/// as a skill names its inputs —, `interfaceOutputs` or
/// `outputInterface`, and `name` as the display name) as the tool `workflow:<workflow_id>`. `source` names the
/// text in error messages.
///
/// # Errors
/// [`Error::InvalidToolId`] for a workflow id that could leave the workflow directory,
/// [`Error::Syntax`] for bad JSON, [`Error::InvalidField`] for a field of the wrong kind or
/// an unsupported `dataFlowType`.
pub fn workflow_from_str(
    text: &str,
    workflow_id: &str,
    source: &str,
) -> Result<ToolDefinition, Error> {
    ToolId::workflow(workflow_id)?;
    workflow_from_value(&parse_json(text, source)?, workflow_id, source)
}

/// [`workflow_from_str`] for a workflow document already parsed — for a caller that also
/// needs the document itself (an engine that runs the workflow's graph), so the file is
/// parsed once.
///
/// # Errors
/// As [`workflow_from_str`], but for [`Error::Syntax`].
pub fn workflow_from_value(
    document: &serde_json::Value,
    workflow_id: &str,
    source: &str,
) -> Result<ToolDefinition, Error> {
    let id = ToolId::workflow(workflow_id)?;
    let root = Fields::root(source, document)?;
    let inputs = interface_key(&root, INPUT_KEYS)?;
    let mut definition = ToolDefinition::new(
        id,
        root.optional_str("description")?.unwrap_or_default(),
        interface_schema(&root, inputs)?,
        Implementation::Workflow {
            workflow_id: workflow_id.to_owned(),
        },
    );
    definition.display_name = root.optional_str("name")?.map(str::to_owned);
    let outputs = interface_key(&root, OUTPUT_KEYS)?;
    if root.get(outputs).is_some() {
        definition.output_schema = Some(interface_schema(&root, outputs)?);
    }
    Ok(definition)
}

/// The two spellings of a workflow's inputs: the workflow seeds' `interfaceInputs` and the
/// ACTION seed's `inputInterface` (a skill's `WorkflowDefinition`).
const INPUT_KEYS: [&str; 2] = ["interfaceInputs", "inputInterface"];
/// The two spellings of a workflow's outputs.
const OUTPUT_KEYS: [&str; 2] = ["interfaceOutputs", "outputInterface"];

/// The spelling `root` uses (the first when it uses neither); both at once is an error, as
/// one would silently shadow the other.
fn interface_key(
    root: &Fields<'_>,
    [first, second]: [&'static str; 2],
) -> Result<&'static str, Error> {
    match (root.get(first), root.get(second)) {
        (Some(_), Some(_)) => Err(root.error(
            root.field(second),
            format!("'{first}' and '{second}' are two names for the same interface: give one"),
        )),
        (None, Some(_)) => Ok(second),
        _ => Ok(first),
    }
}

/// Reads the workflow file at `path`; its stem is the workflow id.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, else as [`workflow_from_str`].
pub fn workflow_from_path(path: &Path) -> Result<ToolDefinition, Error> {
    let stem = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or_default();
    // Check the id before touching the file system.
    ToolId::workflow(stem)?;
    let text = read_text(path)?;
    workflow_from_str(&text, stem, &path.display().to_string())
}

/// Reads the definition of the `workflow:` tool `id` from `dir/<workflow_id>.json`. The id
/// was checked when it was parsed, so the file is always directly inside `dir`.
///
/// # Errors
/// [`Error::InvalidToolId`] when `id` is not in the `workflow` namespace, else as
/// [`workflow_from_path`].
pub fn workflow_from_dir(dir: &Path, id: &ToolId) -> Result<ToolDefinition, Error> {
    let path = id.workflow_file(dir).ok_or_else(|| Error::InvalidToolId {
        id: id.to_string(),
        reason: "expected a 'workflow:' id",
    })?;
    workflow_from_path(&path)
}
