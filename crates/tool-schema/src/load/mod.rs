//! Tool definitions from files: workflow JSON, node definitions, `plugin.yaml` and
//! `agent_profile.json`.
//!
//! Each format has a `*_from_str` function taking the text and a source name used in
//! messages, and a `*_from_path` function that reads a file and uses its path as the
//! source name. Every error names the file, the field (as a path from the document root,
//! `tools[0].implementation.type`) and the reason; for `plugin.yaml` also the line
//! (`plugin.yaml:10: tools[1].implementation.type: …`). The JSON formats carry no line:
//! `serde_json::Value` keeps no positions.
//!
//! [`plugin_dir`] loads a whole plugin directory: its `plugin.yaml` and the workflow files
//! its `workflow` tools name, resolved inside the directory only.

mod agent_profile;
mod fields;
mod interface;
mod node;
mod plugin;
mod plugin_dir;
mod workflow;
mod yaml_lines;

use std::path::Path;

use serde_json::Value;

use crate::Error;

pub use agent_profile::AgentProfile;
pub use node::{nodes_from_path, nodes_from_str};
pub use plugin::{plugin_from_path, plugin_from_str};
pub use plugin_dir::{PLUGIN_MANIFEST, PluginDir, plugin_dir};
pub use workflow::{workflow_from_dir, workflow_from_path, workflow_from_str, workflow_from_value};

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

fn parse_json(text: &str, source: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|error| Error::Syntax {
        file: source.to_owned(),
        message: error.to_string(),
    })
}
