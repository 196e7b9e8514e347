//! Decoded TAM blocks: calls and parameters, and how entries become calls.

use std::collections::BTreeMap;
use std::ops::Range;

use bytestring::ByteString;

use crate::diagnostic::{Code, Diagnostic, Span};
use crate::entry::{canonical_key, command_number, digit_suffix, is_canonical, strip_chain_suffix};

/// One parameter of a call. All three strings are slices of the block's buffer (no copy),
/// except a canonical key that differs from the key as written.
///
/// With feature `serde`: `{"key", "canonical", "value", "span"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Param {
    /// The key as written, chain suffix stripped (`filePath1` → `filePath`).
    pub key: ByteString,
    /// The canonical key: lowercase, `_` and `-` removed (`filepath`).
    pub canonical: ByteString,
    /// The value, verbatim.
    pub value: ByteString,
    /// Where the entry (`key:「始」value「末」`) is in the stream.
    pub span: Span,
}

/// One tool call.
///
/// With feature `serde`: `{"index", "tool", "params", "span"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Call {
    /// Chain number: `N` for `commandN`, 0 for an unsuffixed `command` in a chained block
    /// (and for VCP). In a block without chain numbers: the call's place in the block, from
    /// 0, in the order written (calls dropped for a blank command keep their number).
    pub index: u64,
    /// The tool id: the command value, surrounding whitespace trimmed.
    pub tool: ByteString,
    /// Parameters in the order first written.
    pub params: Vec<Param>,
    /// Where the command entry that names its tool is in the stream. A call started by a
    /// repeated parameter key has no command entry of its own: its span is that
    /// of the call it repeats.
    pub span: Span,
}

impl Param {
    /// A parameter `key` = `value` at `span`; its canonical key is
    /// [`canonical_key`]`(key)`.
    pub fn new(key: impl Into<ByteString>, value: impl Into<ByteString>, span: Span) -> Self {
        let key = key.into();
        Param {
            canonical: canonical_of(&key, &key),
            key,
            value: value.into(),
            span,
        }
    }
}

impl Call {
    /// Call number `index` of tool `tool` (taken as given: not trimmed) with `params`, its
    /// command entry at `span`.
    pub fn new(index: u64, tool: impl Into<ByteString>, params: Vec<Param>, span: Span) -> Self {
        Call {
            index,
            tool: tool.into(),
            params,
            span,
        }
    }

    /// The value of the parameter whose canonical key equals `canonical_key(key)`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let want = canonical_key(key);
        self.params
            .iter()
            .find(|p| *p.canonical == *want)
            .map(|p| &*p.value)
    }
}

/// A closed block: its calls in execution order and what was wrong with it.
///
/// With feature `serde`: `{"span", "calls", "diagnostics", "raw"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Block {
    /// Start marker to end marker, inclusive.
    pub span: Span,
    /// Calls in execution order: ascending chain order, or in a block without chain
    /// numbers the order written.
    pub calls: Vec<Call>,
    /// Warnings and errors about this block, in stream order.
    pub diagnostics: Vec<Diagnostic>,
    /// The block's raw text (empty when it exceeded `max_block_bytes`).
    pub raw: ByteString,
}

impl Block {
    /// A block at `span` with `calls`, `diagnostics` and its `raw` text.
    pub fn new(
        span: Span,
        calls: Vec<Call>,
        diagnostics: Vec<Diagnostic>,
        raw: impl Into<ByteString>,
    ) -> Self {
        Block {
            span,
            calls,
            diagnostics,
            raw: raw.into(),
        }
    }

    /// True when some diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// An entry as found in the block buffer.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub key: Range<usize>,
    pub value: Range<usize>,
    /// The whole entry, key to value close marker.
    pub text: Range<usize>,
    pub span: Span,
    /// The key's span.
    pub key_span: Span,
    /// Its call, decided when its key was read.
    pub place: Place,
}

/// Where an entry goes, decided when its key is read (before its value streams) with O(1)
/// work by the decoder's call tracker. For a block without chain numbers this is final; in
/// a chained block only `command` and `call` of a command are used (for `CommandSeen`),
/// and the calls are built from the keys at the block end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Place {
    /// The call: in a block without chain numbers, calls counted from 0 in the order
    /// written; `N` for `commandN`.
    pub call: u64,
    /// The entry names its call's tool (`command`, `commandN`; VCP: `tool_name`).
    pub command: bool,
    /// The entry starts a new call (block without chain numbers): a command after the
    /// first, or a parameter key the current call already has.
    pub starts: bool,
    /// A parameter's position in its call's list.
    pub slot: usize,
    /// A parameter key given before in the same call, before the block's first command:
    /// it replaces the value in `slot`.
    pub duplicate: bool,
    /// For a call started by a parameter key: the tool it repeats (trimmed, a range of the
    /// block buffer; `None` when blank) and that call's command entry, until its
    /// `CommandSeen` is emitted.
    pub repeats: Option<(Range<usize>, Span)>,
}

/// Which dialect's rules build the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallRules {
    /// `command` / `commandN` chains.
    Tam,
    /// One call named by `tool_name`; every other key is a parameter.
    Vcp,
}

struct CallDraft {
    index: u64,
    tool: Option<(ByteString, Span)>,
    params: Vec<Param>,
    /// Started by a repeated parameter key: `tool` is the previous call's.
    repeats: bool,
}

impl CallDraft {
    fn new(index: u64) -> Self {
        CallDraft {
            index,
            tool: None,
            params: Vec::new(),
            repeats: false,
        }
    }

    fn set_tool(&mut self, value: ByteString, span: Span, key: &str, diags: &mut Vec<Diagnostic>) {
        if self.tool.is_some() {
            diags.push(duplicate(key, span));
        }
        self.tool = Some((value, span));
    }

    fn push(&mut self, param: Param, diags: &mut Vec<Diagnostic>) {
        match self
            .params
            .iter_mut()
            .find(|p| p.canonical == param.canonical)
        {
            Some(old) => {
                diags.push(duplicate(&param.key, param.span));
                *old = param;
            }
            None => self.params.push(param),
        }
    }
}

fn duplicate(key: &str, span: Span) -> Diagnostic {
    Diagnostic::warning(
        Code::DUPLICATE_PARAMETER,
        span,
        format!("parameter '{key}' is given more than once; the last value is used"),
    )
}

fn canonical_of(raw: &ByteString, key: &str) -> ByteString {
    if is_canonical(key) {
        raw.slice_ref(key)
    } else {
        ByteString::from(canonical_key(key))
    }
}

/// Builds the calls of a block from its entries. `chained`: some key
/// canonicalises to `command<digits>` (TAM only).
pub(crate) fn build_calls(
    raw: &ByteString,
    entries: &[Entry],
    rules: CallRules,
    chained: bool,
    max_calls: usize,
    block_span: Span,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Call> {
    if rules == CallRules::Tam && !chained {
        let drafts = drafts_as_written(raw, entries, diags);
        return finish_calls(drafts, rules, max_calls, block_span, diags);
    }
    let chained = chained && rules == CallRules::Tam;
    struct Keyed<'e> {
        entry: &'e Entry,
        key: &'e str,
        canonical: ByteString,
        command: Option<Option<u64>>,
    }
    let keyed: Vec<Keyed<'_>> = entries
        .iter()
        .map(|entry| {
            let key = &raw[entry.key.clone()];
            let canonical = canonical_of(raw, key);
            let command = match rules {
                CallRules::Tam => command_number(&canonical),
                CallRules::Vcp => (&*canonical == "toolname").then_some(None),
            };
            Keyed {
                entry,
                key,
                canonical,
                command,
            }
        })
        .collect();
    let value = |e: &Entry| raw.slice_ref(&raw[e.value.clone()]);

    let mut drafts: BTreeMap<u64, CallDraft> = BTreeMap::new();
    for k in &keyed {
        if let Some(n) = k.command {
            // In a single-call block `commandN` cannot occur, so `n` is None there.
            let index = if chained { n.unwrap_or(0) } else { 0 };
            drafts
                .entry(index)
                .or_insert_with(|| CallDraft::new(index))
                .set_tool(value(k.entry), k.entry.span, k.key, diags);
        }
    }
    for k in keyed.iter().filter(|k| k.command.is_none()) {
        let mut param = Param {
            key: raw.slice_ref(k.key),
            canonical: k.canonical.clone(),
            value: value(k.entry),
            span: k.entry.span,
        };
        let mut target = 0;
        if let Some((stem_len, n)) = digit_suffix(&k.canonical).filter(|_| chained)
            && stem_len > 0
            && drafts.contains_key(&n)
        {
            let digits = k.canonical.len() - stem_len;
            param.key = raw.slice_ref(strip_chain_suffix(k.key, digits));
            param.canonical = k.canonical.slice_ref(&k.canonical[..stem_len]);
            target = n;
        }
        let any_call = !drafts.is_empty();
        match drafts.get_mut(&target) {
            Some(call) => call.push(param, diags),
            None if any_call => diags.push(
                Diagnostic::error(
                    Code::ORPHAN_PARAMETER,
                    param.span,
                    format!(
                        "parameter '{}' belongs to no call: add a command with its number or an unsuffixed command",
                        k.key
                    ),
                )
                .with_raw(raw.slice_ref(&raw[k.entry.text.clone()])),
            ),
            None => {
                // No command at all: reported once below, parameters kept out of calls.
            }
        }
    }
    finish_calls(
        drafts.into_values().collect(),
        rules,
        max_calls,
        block_span,
        diags,
    )
}

/// The calls of a block without chain numbers, from the places its entries were given as
/// they were read: calls in the order written, each entry in the call of its place.
fn drafts_as_written(
    raw: &ByteString,
    entries: &[Entry],
    diags: &mut Vec<Diagnostic>,
) -> Vec<CallDraft> {
    let mut drafts: Vec<CallDraft> = Vec::new();
    if !entries.iter().any(|e| e.place.command) {
        // No command at all: `missing_command`, parameters kept out of calls.
        return drafts;
    }
    for e in entries {
        let key = &raw[e.key.clone()];
        let value = raw.slice_ref(&raw[e.value.clone()]);
        let place = &e.place;
        let at = usize::try_from(place.call).unwrap_or(usize::MAX);
        if at >= drafts.len() {
            // A call started by a parameter key repeats the tool of the call before it.
            let tool = if place.command {
                None
            } else {
                drafts.last().and_then(|d| d.tool.clone())
            };
            // Calls are numbered as they start, one after another; the loop only guards
            // against a gap.
            while drafts.len() <= at.min(entries.len()) {
                let index = drafts.len() as u64;
                drafts.push(CallDraft::new(index));
            }
            if let Some(d) = drafts.last_mut() {
                d.repeats = tool.is_some();
                d.tool = tool;
            }
        }
        let Some(draft) = drafts.get_mut(at) else {
            continue;
        };
        if place.starts {
            diags.push(implicit_call(key, e, place, draft, &value));
        }
        if place.command {
            draft.tool = Some((value, e.span));
            continue;
        }
        let param = Param {
            key: raw.slice_ref(key),
            canonical: canonical_of(raw, key),
            value,
            span: e.span,
        };
        match draft.params.get_mut(place.slot) {
            Some(old) if place.duplicate => {
                diags.push(duplicate(key, param.span));
                *old = param;
            }
            _ => draft.params.push(param),
        }
    }
    drafts
}

fn implicit_call(
    key: &str,
    entry: &Entry,
    place: &Place,
    draft: &CallDraft,
    value: &str,
) -> Diagnostic {
    let message = if place.command {
        format!(
            "a second '{key}' in a block without chain numbers starts call {} of '{}'",
            place.call,
            value.trim()
        )
    } else {
        let tool = draft.tool.as_ref().map_or("", |(t, _)| t.trim());
        let of = if tool.is_empty() {
            "the same command".to_owned()
        } else {
            format!("'{tool}'")
        };
        format!(
            "parameter '{key}' is given again in a block without chain numbers: it starts call {}, another call of {of}",
            place.call
        )
    };
    Diagnostic::warning(Code::IMPLICIT_CALL, entry.key_span, message)
}

/// The block's calls from its drafts in execution order: `missing_command`,
/// `empty_command` and `too_many_calls` applied.
fn finish_calls(
    drafts: Vec<CallDraft>,
    rules: CallRules,
    max_calls: usize,
    block_span: Span,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Call> {
    if drafts.is_empty() {
        let key = if rules == CallRules::Vcp {
            "tool_name"
        } else {
            "command"
        };
        diags.push(Diagnostic::error(
            Code::MISSING_COMMAND,
            block_span,
            format!("tool block has no '{key}' entry naming the tool"),
        ));
        return Vec::new();
    }
    let mut calls = Vec::with_capacity(drafts.len());
    for draft in drafts {
        let Some((tool, span)) = draft.tool else {
            // A chain number seen only on parameters never creates a call.
            continue;
        };
        let trimmed = tool.trim();
        if trimmed.is_empty() {
            diags.push(Diagnostic::error(
                Code::EMPTY_COMMAND,
                span,
                if draft.repeats {
                    format!(
                        "call {} repeats call {} whose command names no tool; the call is dropped",
                        draft.index,
                        draft.index.saturating_sub(1)
                    )
                } else {
                    format!("command {} names no tool; the call is dropped", draft.index)
                },
            ));
            continue;
        }
        if calls.len() == max_calls {
            diags.push(Diagnostic::error(
                Code::TOO_MANY_CALLS,
                span,
                format!(
                    "more than {max_calls} calls in one block; call {} and later are dropped",
                    draft.index
                ),
            ));
            break;
        }
        calls.push(Call {
            index: draft.index,
            tool: tool.slice_ref(trimmed),
            params: draft.params,
            span,
        });
    }
    diags.sort_by_key(|d| d.span.start);
    calls
}
