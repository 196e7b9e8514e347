//! [`ToolCall`]: one call as a decoder produced it, protocol-neutral, and the one
//! conversion of the workspace from the decoders' calls (`from_tam`, `from_action` and
//! their block forms). Always compiled: the proxy uses it without the runtime.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tam::Span;
use tool_schema::KeyMatch;

/// One call as a parser produced it, protocol-neutral.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool id as written (trimmed).
    pub tool: String,
    /// The arguments as written: text values from TAM, JSON values from ACTION XML.
    pub args: Map<String, Value>,
    /// How argument keys match parameter names: canonical for TAM, exact for ACTION XML.
    pub key_match: KeyMatch,
    /// A stable id for the call, when it came from a decoded block: `tam-S-I` or
    /// `action-S-I`, `S` the block's start offset in the reply and `I` the call's place in
    /// the block (from 0). The same whatever the split of the stream. `None` for calls
    /// built by hand.
    pub id: Option<String>,
    /// The exact source text of each parameter's content, by key as written (ACTION XML:
    /// [`tam::ActionCall::source`]; first element of a repeated name). A parameter
    /// declared a string whose value was read as an object or array takes this text
    /// ([`tool_schema::CompiledTool::coerce_with_source`]). Empty for TAM.
    pub sources: BTreeMap<String, String>,
}

impl ToolCall {
    /// A call whose keys must match parameter names exactly (ACTION XML, code).
    pub fn new(tool: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            tool: tool.into(),
            args,
            key_match: KeyMatch::Exact,
            id: None,
            sources: BTreeMap::new(),
        }
    }

    /// The stable id of call `index` of the block of `protocol` that starts at
    /// `block.start` ([`ToolCall::id`]).
    pub fn call_id(protocol: tam::Protocol, block: Span, index: usize) -> String {
        format!("{}-{}-{index}", protocol.as_str(), block.start)
    }

    /// Call `index` of the TAM block at `block`: text values, keys as written (chain
    /// suffix stripped), matched canonically; with its stable id.
    pub fn from_tam(call: &tam::TamCall, block: Span, index: usize) -> Self {
        let args = call
            .params
            .iter()
            .map(|p| (p.key.to_string(), Value::String(p.value.to_string())))
            .collect();
        Self {
            id: Some(Self::call_id(tam::Protocol::Tam, block, index)),
            ..Self::canonical(call.tool.to_string(), args)
        }
    }

    /// Call `index` of the ACTION block at `block`: JSON values, tag names matched
    /// exactly, each parameter's source text kept; with its stable id.
    pub fn from_action(call: &tam::ActionCall, block: Span, index: usize) -> Self {
        let mut sources = BTreeMap::new();
        for param in &call.params {
            sources
                .entry(param.key.to_string())
                .or_insert_with(|| param.source.to_string());
        }
        Self {
            id: Some(Self::call_id(tam::Protocol::Action, block, index)),
            sources,
            ..Self::new(call.tool.clone(), call.args.clone())
        }
    }

    /// Every call of a closed TAM block, in execution order ([`ToolCall::from_tam`]).
    pub fn from_tam_block(block: &tam::TamBlock) -> Vec<Self> {
        block
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| Self::from_tam(call, block.span, i))
            .collect()
    }

    /// Every call of a closed TAM block, as [`from_tam_block`](Self::from_tam_block), with
    /// one reading that needs the tools' schemas: a call the decoder started because the
    /// model wrote a parameter key again, and whose every parameter is one more item of a
    /// parameter the tool declares an array, is those items, not a call. Its values are
    /// appended, in order, to that parameter of the call before it (whose value becomes a
    /// list of the items as written), as ACTION reads an element written twice. A model
    /// lists an array's items that way (`information:「始」Elevation「末」`, then
    /// `information:「始」Area「末」`); where any value of the repeat is not one item of an
    /// array parameter (`artist:「始」Maroon 5「末」` for a string, `polynomial:「始」[1, 0,
    /// -1]「末」` for a whole array), it stays a call of its own.
    ///
    /// `one_item(tool, key, text)` tells whether `text`, written for `key` of `tool`, is one
    /// item of a parameter the tool declares an array
    /// ([`CompiledTool::is_one_item`](tool_schema::CompiledTool::is_one_item)); a tool it
    /// does not know has none. Calls keep their stable ids ([`call_id`](Self::call_id) of
    /// their place in the block); the block's `implicit_call` warnings are left as the
    /// decoder gave them.
    pub fn from_tam_block_with(
        block: &tam::TamBlock,
        one_item: impl Fn(&str, &str, &str) -> bool,
    ) -> Vec<Self> {
        let mut calls: Vec<Self> = Vec::with_capacity(block.calls.len());
        for (i, call) in block.calls.iter().enumerate() {
            let repeat = i > 0 && {
                let before = &block.calls[i - 1];
                before.span == call.span && before.tool == call.tool
            };
            if repeat
                && let Some(target) = calls.last_mut()
                && target.takes_items_of(call, &one_item)
            {
                for p in &call.params {
                    let item = Value::String(p.value.to_string());
                    let canonical = tool_schema::canonical_key(&p.key);
                    let existing = target
                        .args
                        .iter_mut()
                        .find(|(k, _)| tool_schema::canonical_key(k) == canonical);
                    match existing {
                        Some((_, Value::Array(items))) => items.push(item),
                        Some((_, value)) => *value = Value::Array(vec![value.take(), item]),
                        None => {
                            target.args.insert(p.key.to_string(), item);
                        }
                    }
                }
                continue;
            }
            calls.push(Self::from_tam(call, block.span, i));
        }
        calls
    }

    /// Whether every parameter of `repeat` (a TAM call started by a repeated key) is one
    /// item of an array parameter of this call's tool, and this call's value of it, if
    /// any, is one item too or a list of them already ([`from_tam_block_with`]).
    fn takes_items_of(
        &self,
        repeat: &tam::TamCall,
        one_item: &impl Fn(&str, &str, &str) -> bool,
    ) -> bool {
        !repeat.params.is_empty()
            && repeat.params.iter().all(|p| {
                if !one_item(&self.tool, &p.key, &p.value) {
                    return false;
                }
                let canonical = tool_schema::canonical_key(&p.key);
                self.args
                    .iter()
                    .find(|(k, _)| tool_schema::canonical_key(k) == canonical)
                    .is_none_or(|(k, v)| match v {
                        Value::Array(_) => true,
                        Value::String(text) => one_item(&self.tool, k, text),
                        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => false,
                    })
            })
    }

    /// Every call of a closed ACTION block, in document order ([`ToolCall::from_action`]).
    pub fn from_action_block(block: &tam::ActionBlock) -> Vec<Self> {
        block
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| Self::from_action(call, block.span, i))
            .collect()
    }

    /// A call whose keys match by canonical form (TAM: `filePath` names `file_path`).
    pub fn canonical(tool: impl Into<String>, args: Map<String, Value>) -> Self {
        Self {
            key_match: KeyMatch::Canonical,
            ..Self::new(tool, args)
        }
    }
}
