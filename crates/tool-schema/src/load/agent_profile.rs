//! `agent_profile.json`: the tools an agent may call.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{Fields, kind, parse_tool_id};
use super::{parse_json, read_text};
use crate::{Error, ToolId};

/// An agent profile: its `tool_ids_inventory` read as tool ids, every other field kept as
/// it was (serialising gives them back, after the inventory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentProfile {
    /// The tools the agent may call; empty when the profile has no inventory.
    #[serde(default)]
    pub tool_ids_inventory: Vec<ToolId>,
    /// The profile's other fields, in file order.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl AgentProfile {
    /// Reads a profile; `source` names the text in error messages.
    ///
    /// # Errors
    /// [`Error::Syntax`] for bad JSON, [`Error::InvalidField`] for an inventory that is not
    /// an array of valid tool ids (`tool_ids_inventory[2]: invalid tool id …`).
    pub fn from_str(text: &str, source: &str) -> Result<AgentProfile, Error> {
        let document = parse_json(text, source)?;
        let root = Fields::root(source, &document)?;
        let inventory = root
            .optional_array("tool_ids_inventory")?
            .unwrap_or_default();
        let tool_ids_inventory = inventory
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let field = format!("tool_ids_inventory[{index}]");
                match entry {
                    Value::String(text) => parse_tool_id(source, field, text),
                    other @ (Value::Null
                    | Value::Bool(_)
                    | Value::Number(_)
                    | Value::Array(_)
                    | Value::Object(_)) => Err(root.error(
                        field,
                        format!("expected a tool id string, found {}", kind(other)),
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut other = root.map.clone();
        other.remove("tool_ids_inventory");
        Ok(AgentProfile {
            tool_ids_inventory,
            other,
        })
    }

    /// Reads the profile at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, else as [`AgentProfile::from_str`].
    pub fn from_path(path: &Path) -> Result<AgentProfile, Error> {
        AgentProfile::from_str(&read_text(path)?, &path.display().to_string())
    }
}
