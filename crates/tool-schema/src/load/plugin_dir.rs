//! A plugin directory as a whole: its `plugin.yaml` tools and the workflow
//! files they reference, resolved inside the directory.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::plugin::plugin_manifest;
use super::workflow::workflow_from_value;
use super::{parse_json, read_text};
use crate::{Error, Implementation, ToolDefinition, ToolId};

/// The manifest file a plugin directory holds.
pub const PLUGIN_MANIFEST: &str = "plugin.yaml";

/// A loaded plugin directory: its name, its tools, and the parsed workflow documents its
/// `workflow` tools run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PluginDir {
    /// The plugin's name: `plugin.yaml`'s `name`, else the directory's name. Every tool id
    /// is `<name>:<tool>`.
    pub name: String,
    /// The directory.
    pub root: PathBuf,
    /// The tools, in manifest order.
    pub tools: Vec<ToolDefinition>,
    /// The workflow document of each `workflow` tool, by tool id.
    pub workflows: BTreeMap<ToolId, Value>,
}

impl PluginDir {
    /// The workflow document the `workflow` tool `id` runs.
    pub fn workflow(&self, id: &ToolId) -> Option<&Value> {
        self.workflows.get(id)
    }
}

/// Loads the plugin in directory `dir`: `dir/plugin.yaml`'s tools, with the namespace
/// `插件名:工具名` enforced from the plugin's name (the directory's name when the manifest
/// has no `name`), and each `workflow` tool's `workflowId` file read from inside `dir`.
///
/// A workflow file is resolved component by component: a `..`, an absolute path or a
/// symbolic link anywhere on the way (the directory itself excepted) is refused, so a
/// plugin can never make the loader read outside its directory. A `workflow` tool whose
/// manifest entry gives no parameters (or no description) takes those of the workflow
/// file's interface.
///
/// # Errors
/// [`Error::Io`] when the manifest or a workflow file cannot be read;
/// [`Error::InvalidField`] for a bad manifest (as [`super::plugin_from_str`]), a tool outside
/// the plugin's namespace, or a `workflowId` that leaves the directory
/// (`tools[1].implementation.workflowId`); [`Error::Syntax`] for a workflow file that is not
/// JSON.
pub fn plugin_dir(dir: &Path) -> Result<PluginDir, Error> {
    let manifest = dir.join(PLUGIN_MANIFEST);
    let source = manifest.display().to_string();
    let text = read_text(&manifest)?;
    let dir_name = dir
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().and_then(|n| n.to_str()).map(str::to_owned));
    let (name, mut tools) = plugin_manifest(&text, &source, dir_name.as_deref())?;
    let name = name.ok_or_else(|| Error::InvalidField {
        file: source.clone(),
        line: None,
        field: "name".to_owned(),
        reason: "the plugin has no name and its directory name is not UTF-8".to_owned(),
    })?;
    let mut workflows = BTreeMap::new();
    for (index, tool) in tools.iter_mut().enumerate() {
        let Implementation::Workflow { workflow_id } = &tool.implementation else {
            continue;
        };
        let field = format!("tools[{index}].implementation.workflowId");
        let path = resolve_inside(dir, workflow_id).map_err(|reason| Error::InvalidField {
            file: source.clone(),
            line: None,
            field,
            reason,
        })?;
        let workflow_source = path.display().to_string();
        let document = parse_json(&read_text(&path)?, &workflow_source)?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let interface = workflow_from_value(&document, &stem, &workflow_source)?;
        let declares_parameters = tool
            .parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if !declares_parameters {
            tool.parameters = interface.parameters;
        }
        if tool.description.is_empty() {
            tool.description = interface.description;
        }
        if tool.output_schema.is_none() {
            tool.output_schema = interface.output_schema;
        }
        workflows.insert(tool.id.clone(), document);
    }
    Ok(PluginDir {
        name,
        root: dir.to_owned(),
        tools,
        workflows,
    })
}

/// `dir/reference`, refusing anything that could end outside `dir`: absolute paths,
/// `..`, and symbolic links on any component below `dir`.
fn resolve_inside(dir: &Path, reference: &str) -> Result<PathBuf, String> {
    let mut path = dir.to_owned();
    for component in Path::new(reference).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "'{reference}' leaves the plugin directory: only paths inside it are allowed"
                ));
            }
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "'{reference}' goes through the symbolic link {}: plugin files must lie \
                     inside the plugin directory",
                    path.display()
                ));
            }
            Ok(_) => {}
            // A missing file is reported when it is read, with its path.
            Err(_) => break,
        }
    }
    Ok(path)
}
