//! Tool lists in the OpenAI, Anthropic and MCP tool formats, with reversible aliases for
//! ids those formats reject.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use crate::{ToolDefinition, ToolId};

/// The longest name the export formats accept.
pub const MAX_EXPORT_NAME_LEN: usize = 64;

/// Characters kept before the hash suffix of a disambiguated or shortened alias:
/// `_` and 8 hex digits follow them.
const HASHED_PREFIX_LEN: usize = MAX_EXPORT_NAME_LEN - 9;

/// A tool format of an LLM API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExportFormat {
    /// OpenAI chat `tools`: `{"type":"function","function":{"name","description","parameters"}}`.
    OpenAi,
    /// Anthropic messages `tools`: `{"name","description","input_schema"}`.
    Anthropic,
    /// MCP `tools/list`: `{"name","title"?,"description","inputSchema","outputSchema"?}`
    /// (`title` is the display name).
    Mcp,
}

/// Tools in an export format, with the aliases their names use.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExportedTools {
    /// One JSON object per distinct tool, in the order given.
    pub tools: Vec<Value>,
    /// Maps each exported name back to its tool id.
    pub aliases: AliasMap,
}

/// Exports `tools` in `format`. Tools are named by [`AliasMap`] aliases: an id that
/// matches `^[a-zA-Z0-9_-]{1,64}$` keeps its name, others get an alias; resolve the name
/// the model calls with [`AliasMap::resolve`]. A tool id given twice is exported once.
pub fn export_tools<'a>(
    tools: impl IntoIterator<Item = &'a ToolDefinition>,
    format: ExportFormat,
) -> ExportedTools {
    let mut seen = Vec::new();
    let tools: Vec<&ToolDefinition> = tools
        .into_iter()
        .filter(|tool| {
            let first = !seen.contains(&&tool.id);
            seen.push(&tool.id);
            first
        })
        .collect();
    let aliases = AliasMap::new(tools.iter().map(|tool| &tool.id));
    let tools = tools
        .into_iter()
        .map(|tool| {
            let name = aliases.alias(&tool.id).unwrap_or(tool.id.as_str());
            export_tool(tool, name, format)
        })
        .collect();
    ExportedTools { tools, aliases }
}

fn export_tool(tool: &ToolDefinition, name: &str, format: ExportFormat) -> Value {
    match format {
        ExportFormat::OpenAi => json!({
            "type": "function",
            "function": {
                "name": name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
        }),
        ExportFormat::Anthropic => json!({
            "name": name,
            "description": tool.description,
            "input_schema": tool.parameters,
        }),
        ExportFormat::Mcp => {
            let mut entry = Map::new();
            entry.insert("name".to_owned(), name.into());
            if let Some(title) = &tool.display_name {
                entry.insert("title".to_owned(), title.as_str().into());
            }
            entry.insert("description".to_owned(), tool.description.as_str().into());
            entry.insert("inputSchema".to_owned(), tool.parameters.clone());
            if let Some(output) = &tool.output_schema {
                entry.insert("outputSchema".to_owned(), output.clone());
            }
            Value::Object(entry)
        }
    }
}

/// Whether the export formats accept `name`: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_export_name(name: &str) -> bool {
    (1..=MAX_EXPORT_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Export names for tool ids, both ways.
///
/// An id the formats accept is its own name. Any other id is spelled with `:` as `__` and
/// every other rejected character as `_` (`workflow:summarize_text` →
/// `workflow__summarize_text`). When that spelling is longer than 64 characters, or is
/// shared with another id or another id's own name, the alias is its first 55 characters,
/// `_` and 8 hex digits of a stable hash of the id (FNV-1a), which is unique in practice;
/// a numeric suffix settles the remaining case. The result does not depend on the order
/// of the ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AliasMap {
    by_alias: BTreeMap<String, ToolId>,
    by_id: HashMap<ToolId, String>,
}

impl AliasMap {
    /// Names every id in `ids` (repeats are named once).
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a ToolId>) -> AliasMap {
        let mut ids: Vec<&ToolId> = ids.into_iter().collect();
        ids.sort();
        ids.dedup();
        let mut map = AliasMap::default();
        let (valid, invalid): (Vec<&ToolId>, Vec<&ToolId>) = ids
            .into_iter()
            .partition(|id| is_valid_export_name(id.as_str()));
        for id in valid {
            map.insert(id.as_str().to_owned(), id);
        }
        let spelled: Vec<(String, &ToolId)> = invalid
            .into_iter()
            .map(|id| (spell(id.as_str()), id))
            .collect();
        let mut uses: HashMap<&str, usize> = HashMap::new();
        for (spelling, _) in &spelled {
            *uses.entry(spelling).or_default() += 1;
        }
        for (spelling, id) in &spelled {
            let clash = uses[spelling.as_str()] > 1 || map.by_alias.contains_key(spelling);
            let mut alias = if clash || spelling.len() > MAX_EXPORT_NAME_LEN {
                hashed(spelling, id)
            } else {
                spelling.clone()
            };
            let mut counter = 2;
            while map.by_alias.contains_key(&alias) {
                let suffix = format!("_{counter}");
                let base = hashed(spelling, id);
                let keep = base.len().min(MAX_EXPORT_NAME_LEN - suffix.len());
                alias = format!("{}{suffix}", &base[..keep]);
                counter += 1;
            }
            map.insert(alias, id);
        }
        map
    }

    fn insert(&mut self, alias: String, id: &ToolId) {
        self.by_id.insert(id.clone(), alias.clone());
        self.by_alias.insert(alias, id.clone());
    }

    /// The export name of `id`, if it was named.
    pub fn alias(&self, id: &ToolId) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    /// The tool id an export name stands for.
    pub fn resolve(&self, name: &str) -> Option<&ToolId> {
        self.by_alias.get(name)
    }

    /// `(alias, id)` pairs, ordered by alias.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolId)> {
        self.by_alias.iter().map(|(alias, id)| (alias.as_str(), id))
    }

    /// How many ids are named.
    pub fn len(&self) -> usize {
        self.by_alias.len()
    }

    /// Whether no id is named.
    pub fn is_empty(&self) -> bool {
        self.by_alias.is_empty()
    }
}

/// `:` → `__`, any other rejected character → `_`. The result is ASCII.
fn spell(id: &str) -> String {
    let mut spelling = String::with_capacity(id.len() + 1);
    for c in id.chars() {
        match c {
            ':' => spelling.push_str("__"),
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') => spelling.push(c),
            _ => spelling.push('_'),
        }
    }
    spelling
}

/// The first [`HASHED_PREFIX_LEN`] characters of `spelling`, `_` and the id's hash.
fn hashed(spelling: &str, id: &ToolId) -> String {
    let prefix = &spelling[..spelling.len().min(HASHED_PREFIX_LEN)];
    format!("{prefix}_{:08x}", fnv1a(id.as_str()))
}

/// FNV-1a, folded to 32 bits: stable across runs, platforms and Rust versions.
fn fnv1a(text: &str) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash ^ (hash >> 32)) as u32
}
