//! The TAM block: `<|[REQUEST_TOOL]|>`, `key:「始」value「末」` entries, `<|[END_TOOL]|>`.

use serde_json::Value;

use super::action::{LOOSE_SEPARATORS, Trie};
use super::json::{self, Flavor, json_text};
use super::node::{Kind, Member, Node};
use super::text::{BLANKS, Class, Fixed, NUL, Rules, class, either_case, lit};
use super::{GrammarError, MAX_CALLS, Omission, OmitReason};
use crate::ToolDefinition;
use crate::shape::{Shape, TypeSet};

pub(super) const START: &str = "<|[REQUEST_TOOL]|>";
pub(super) const END: &str = "<|[END_TOOL]|>";
pub(super) const OPEN: &str = "「始」";
pub(super) const CLOSE: &str = "「末」";
pub(super) const OPEN_ESCAPE: &str = "「始ESCAPE」";
pub(super) const CLOSE_ESCAPE: &str = "「末ESCAPE」";

/// Keys longer than this are left out: the reader refuses keys over 128 bytes, and a
/// chained key adds up to two digits.
const MAX_KEY_BYTES: usize = 120;

/// Why `name` cannot be a TAM key, if it cannot.
fn unusable_key(name: &str, canonical: &str) -> Option<OmitReason> {
    if name.is_empty()
        || name.len() > MAX_KEY_BYTES
        || name.starts_with('#')
        || name
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, ':' | '：' | '「'))
        || name.contains(START)
        || name.contains(END)
    {
        return Some(OmitReason::NotATamKey);
    }
    // `command` and `command<digits>` name the tool of a call, whatever their case and
    // `_`/`-`: such a parameter would start a call.
    if canonical
        .strip_prefix("command")
        .is_some_and(|digits| digits.chars().all(|c| c.is_ascii_digit()))
    {
        return Some(OmitReason::ReservedName);
    }
    None
}

/// One tool's parameters that TAM can carry.
pub(super) struct TamTool<'s> {
    pub(super) id: &'s str,
    members: Vec<Member<'s>>,
    /// Whether a chained call (`commandN`, `keyN`) can carry every parameter: none of
    /// them ends in a digit after canonicalisation (the reader would take that digit as
    /// part of the chain number).
    pub(super) chainable: bool,
}

/// The generator of one TAM grammar.
pub(super) struct Tam<'r> {
    rules: &'r mut Rules,
}

impl<'r> Tam<'r> {
    pub(super) fn new(rules: &'r mut Rules) -> Tam<'r> {
        Tam { rules }
    }

    /// The parameters of `tool` TAM can carry, or `None` when its id cannot be a command
    /// value. What is left out is reported in `omitted`.
    pub(super) fn tool<'s>(
        tool: &'s ToolDefinition,
        shape: &'s Shape,
        omitted: &mut Vec<Omission>,
    ) -> Option<TamTool<'s>> {
        let id = tool.id.as_str();
        // The reader trims the command value and ends it at 「末」.
        if id.is_empty() || id.trim() != id || id.contains(CLOSE) {
            omitted.push(Omission::tool(id, OmitReason::NotATamValue));
            return None;
        }
        let node = Node::new(shape, Some(&tool.parameters));
        let mut members: Vec<Member<'s>> = Vec::new();
        let mut lost_required = false;
        for member in node.members() {
            let reason = unusable_key(member.name, member.canonical).or_else(|| {
                // Keys are matched by their canonical form: a second key of the same
                // form would start another call.
                members
                    .iter()
                    .any(|m| m.canonical == member.canonical)
                    .then_some(OmitReason::DuplicateKey)
            });
            match reason {
                Some(reason) => {
                    omitted.push(Omission::parameter(id, member.name, reason));
                    lost_required |= member.required && member.node.shape.default.is_none();
                }
                None => members.push(member),
            }
        }
        if lost_required {
            omitted.push(Omission::tool(id, OmitReason::RequiredParameterLeftOut));
            return None;
        }
        let chainable = members.iter().all(|m| {
            !m.canonical.is_empty() && !m.canonical.ends_with(|c: char| c.is_ascii_digit())
        });
        Some(TamTool {
            id,
            members,
            chainable,
        })
    }

    /// The rule of one call of `tool`: `command:` (or `command<chain>:`) with one of
    /// `spellings` of its name (the declared one first), then its parameters in
    /// declaration order, keys suffixed with `chain` in a chained call.
    pub(super) fn call(
        &mut self,
        tool: &TamTool<'_>,
        spellings: &[String],
        chain: Option<usize>,
    ) -> Result<String, GrammarError> {
        let suffix = chain.map(|n| n.to_string()).unwrap_or_default();
        let gap = self.rules.fixed(Fixed::Gap)?;
        let mut parts = Vec::with_capacity(tool.members.len());
        for member in &tool.members {
            let value = self.value(member.node, 0)?;
            let part = format!(
                "{gap} {} {value}",
                lit(&format!("{}{suffix}:", member.name))
            );
            self.rules.check_room(part.len())?;
            parts.push((part, member.required));
        }
        let members = super::ordered(self.rules, parts, "", false)?;
        let names: Vec<String> = spellings
            .iter()
            .filter(|s| *s == tool.id || !s.contains(CLOSE))
            .map(|s| lit(s))
            .collect();
        let names = match names.as_slice() {
            [one] => one.clone(),
            [] => lit(tool.id),
            _ => format!("( {} )", names.join(" | ")),
        };
        let body = format!(
            "{} {names} {} {members}",
            lit(&format!("command{suffix}:{OPEN}")),
            lit(CLOSE)
        );
        let kind = if chain.is_some() { "chained" } else { "call" };
        let name = self.rules.fresh(kind, tool.id);
        self.rules.define(name.clone(), body)?;
        Ok(name)
    }

    /// The block body between the markers: calls written one after another
    /// (`command:` again for each, as the compact prompt teaches), or chained calls
    /// `command1` … `commandN` in order (as the full prompt teaches), then blanks.
    ///
    /// With `unoffered` (the offered tools' names), the block may instead start with a
    /// call of a tool not offered ([`Tam::unoffered`]): a block that gives no call.
    pub(super) fn body(
        &mut self,
        calls: &[String],
        chained: &[Vec<String>],
        unoffered: Option<&[&str]>,
    ) -> Result<String, GrammarError> {
        let gap = self.rules.fixed(Fixed::Gap)?;
        let any = super::alternatives(self.rules, "tam-call", calls)?;
        let plain = format!("{gap} {any} ( {gap} {any} ){{0,{}}}", MAX_CALLS - 1);
        let mut body = plain;
        if !chained.is_empty() {
            // chain-k ::= call k ( gap chain-(k+1) )?, from the last link back.
            let mut next: Option<String> = None;
            for (index, calls) in chained.iter().enumerate().rev() {
                let any = super::alternatives(self.rules, "tam-chained", calls)?;
                let link = match &next {
                    Some(next) => format!("{any} ( {gap} {next} )?"),
                    None => any,
                };
                let name = self.rules.fresh("chain", &format!("n{}", index + 1));
                self.rules.define(name.clone(), link)?;
                next = Some(name);
            }
            if let Some(first) = next {
                body = format!("( {body} | {gap} {first} )");
            }
        }
        let body = match unoffered {
            None => format!("{body} {gap}"),
            Some(names) => {
                let other = self.unoffered(names)?;
                format!("( {body} {gap} | {gap} {other} )")
            }
        };
        let name = self.rules.fresh("tam-body", "");
        self.rules.define(name.clone(), body)?;
        Ok(name)
    }

    /// A block whose first call names a tool not offered: `command:` (or `command1:`),
    /// a value that is no offered name (read as the proxy reads a call's tool: trimmed,
    /// ASCII case and `_`, `-`, `.` not counted), then any text up to the end marker in
    /// which no `「始」` value is an offered name (so no later `command` can call one) and
    /// no `「始ESCAPE」` value opens. The decoder reads it as calls of tools not offered.
    fn unoffered(&mut self, names: &[&str]) -> Result<String, GrammarError> {
        self.rules
            .check_room(names.iter().map(|n| n.len() * 128).sum())?;
        let trie = Trie::loose(names.iter().copied());
        let mut ends = Ends {
            text: self.rules.fresh("other-text", ""),
            corner: String::new(),
            lt: String::new(),
            named: self.rules.fresh("other-named", ""),
            named_corner: self.rules.fresh("other-named", ""),
        };
        let b1 = self.rules.fresh("other-open", "");
        let b2 = self.rules.fresh("other-open", "");
        let marker: Vec<char> = END.chars().collect();
        // m[k]: the first k characters of the end marker written (m[0] is text).
        let m: Vec<String> = (0..marker.len())
            .map(|k| {
                if k == 0 {
                    String::new()
                } else {
                    self.rules.fresh("other-end", "")
                }
            })
            .collect();
        ends.lt = format!("\"<\" {}", m[1]);
        ends.corner = format!("\"\\u300C\" {b1}");
        self.other_text_rules(&marker, &m, &ends)?;
        self.value_open_rules(&trie, b1, &b2, &ends)?;
        self.named_rules(&b2, &ends)?;
        let first = self.first_tool_rules(&trie, &ends.text)?;
        Ok(format!("\"command\" \"1\"? \":\" {} {first}", lit(OPEN)))
    }

    /// Defines the text after an unoffered block's first call, and the states `m` inside
    /// the end `marker`, whose last character never comes.
    fn other_text_rules(
        &mut self,
        marker: &[char],
        m: &[String],
        ends: &Ends,
    ) -> Result<(), GrammarError> {
        let Ends {
            text, corner, lt, ..
        } = ends;
        // Text: `<` may start the end marker, `「` a value.
        self.rules.define(
            text.clone(),
            format!("( {} {text} | {lt} | {corner} )?", not(&['<', '「'])),
        )?;
        // Inside the end marker (m[k]: its first k characters written): its last
        // character never comes.
        for k in 1..marker.len() {
            let c = marker[k];
            let mut alternatives = Vec::new();
            if k + 1 < marker.len() {
                alternatives.push(format!("{} {}", lit(&c.to_string()), m[k + 1]));
            }
            alternatives.extend([
                lt.clone(),
                corner.clone(),
                format!("{} {text}", not(&[c, '<', '「'])),
            ]);
            self.rules
                .define(m[k].clone(), format!("( {} )?", alternatives.join(" | ")))?;
        }
        Ok(())
    }

    /// Defines `b1` and `b2`, the states after `「` and `「始` in the text after an
    /// unoffered block's first call, and the rules of the names in the value they open.
    fn value_open_rules(
        &mut self,
        trie: &Trie,
        b1: String,
        b2: &str,
        ends: &Ends,
    ) -> Result<(), GrammarError> {
        let Ends {
            text, corner, lt, ..
        } = ends;
        // `「`, then `始`: a value opens; `ESCAPE` may not follow.
        let root = self.name_rules(trie, true, ends)?;
        self.rules.define(
            b1,
            format!(
                "( \"\\u59CB\" {b2} | {corner} | {lt} | {} {text} )?",
                not(&['始', '「', '<'])
            ),
        )?;
        self.rules.define(
            b2.to_owned(),
            format!(
                "( \"\\u300D\" {root} | {corner} | {lt} | {} {text} )?",
                not(&['」', 'E', '「', '<'])
            ),
        )?;
        Ok(())
    }

    /// Defines the states after an offered name written in a value of the text after an
    /// unoffered block's first call (`b2`: the state after `「始`).
    fn named_rules(&mut self, b2: &str, ends: &Ends) -> Result<(), GrammarError> {
        let Ends {
            text,
            corner,
            lt,
            named,
            named_corner,
        } = ends;
        // An offered name written, then blanks: `「末」` may not follow.
        let blanks = class(false, &BLANKS);
        self.rules.define(
            named.clone(),
            format!(
                "{blanks} {named} | \"\\u300C\" {named_corner} | {lt} | {} {text}",
                not(&['「', '<', ' ', '\t', '\n', '\r'])
            ),
        )?;
        self.rules.define(
            named_corner.clone(),
            format!(
                "\"\\u59CB\" {b2} | {corner} | {lt} | {} {text}",
                not(&['末', '始', '「', '<'])
            ),
        )?;
        Ok(())
    }

    /// The rule of an unoffered block's first tool, after its `「始」`: a value that
    /// closes and is no offered name, then `text`.
    fn first_tool_rules(&mut self, trie: &Trie, text: &str) -> Result<String, GrammarError> {
        let blanks = class(false, &BLANKS);
        // The first call's tool: a value that closes, and is no offered name.
        let free = self.rules.fresh("other-value", "");
        let close = lit(CLOSE);
        self.rules.define(
            free.clone(),
            format!("{} {free} | {close} {text}", not(&['「'])),
        )?;
        let first_named = self.rules.fresh("other-named", "");
        self.rules.define(
            first_named.clone(),
            format!(
                "{blanks} {first_named} | {} {free}",
                not(&['「', ' ', '\t', '\n', '\r'])
            ),
        )?;
        self.first_rules(trie, true, &first_named, &free, text)
    }

    /// The rule of `node` of the loose-name trie inside a `「始」` value of the text after
    /// the first call (`at_root` at the value's start, where blanks are skipped): a name
    /// that leaves every offered one is text; an offered one may not close.
    fn name_rules(
        &mut self,
        node: &Trie,
        at_root: bool,
        ends: &Ends,
    ) -> Result<String, GrammarError> {
        let name = self.rules.fresh("other", "");
        let blank = class(false, &BLANKS);
        let mut alternatives = vec![match (at_root, node.end) {
            (true, _) => format!("{blank} {name}"),
            (false, true) => format!("{blank} {}", ends.named),
            (false, false) => format!("{blank} {}", ends.text),
        }];
        alternatives.push(format!(
            "{} {name}",
            class(false, &LOOSE_SEPARATORS.map(Class::One))
        ));
        let mut taken: Vec<char> = LOOSE_SEPARATORS.to_vec();
        taken.extend(['「', '<', ' ', '\t', '\n', '\r']);
        for (c, child) in &node.children {
            let rule = self.name_rules(child, false, ends)?;
            alternatives.push(format!("{} {rule}", either_case(*c)));
            taken.extend([c.to_ascii_lowercase(), c.to_ascii_uppercase()]);
        }
        alternatives.push(if node.end {
            format!("\"\\u300C\" {}", ends.named_corner)
        } else {
            ends.corner.clone()
        });
        alternatives.push(ends.lt.clone());
        alternatives.push(format!("{} {}", not(&taken), ends.text));
        self.rules
            .check_room(alternatives.iter().map(String::len).sum())?;
        let body = alternatives.join(" | ");
        // The text may end anywhere but right after an offered name.
        let body = if node.end {
            body
        } else {
            format!("( {body} )?")
        };
        self.rules.define(name.clone(), body)?;
        Ok(name)
    }

    /// The rule of `node` of the loose-name trie in the first call's tool value: it
    /// closes with `「末」` only where no offered name ends, and not empty.
    fn first_rules(
        &mut self,
        node: &Trie,
        at_root: bool,
        first_named: &str,
        free: &str,
        text: &str,
    ) -> Result<String, GrammarError> {
        let name = self.rules.fresh("other", "");
        let blank = class(false, &BLANKS);
        let mut alternatives = vec![match (at_root, node.end) {
            (true, _) => format!("{blank} {name}"),
            (false, true) => format!("{blank} {first_named}"),
            (false, false) => format!("{blank} {free}"),
        }];
        alternatives.push(format!(
            "{} {name}",
            class(false, &LOOSE_SEPARATORS.map(Class::One))
        ));
        let mut taken: Vec<char> = LOOSE_SEPARATORS.to_vec();
        taken.extend(['「', ' ', '\t', '\n', '\r']);
        for (c, child) in &node.children {
            let rule = self.first_rules(child, false, first_named, free, text)?;
            alternatives.push(format!("{} {rule}", either_case(*c)));
            taken.extend([c.to_ascii_lowercase(), c.to_ascii_uppercase()]);
        }
        if !node.end && !at_root {
            alternatives.push(format!("{} {text}", lit(CLOSE)));
        }
        alternatives.push(format!("{} {free}", not(&taken)));
        self.rules
            .check_room(alternatives.iter().map(String::len).sum())?;
        self.rules.define(name.clone(), alternatives.join(" | "))?;
        Ok(name)
    }

    /// An expression for one value of `node`, its markers included.
    fn value(&mut self, node: Node<'_>, depth: usize) -> Result<String, GrammarError> {
        let open = lit(OPEN);
        let close = lit(CLOSE);
        match node.kind(depth) {
            Kind::Free => Ok(self.rules.fixed(Fixed::TamValue)?.to_owned()),
            Kind::Enum(members) => {
                let mut plain = String::new();
                let mut escaped = String::new();
                for member in members {
                    let text = match member {
                        Value::String(s) => s.clone(),
                        other @ (Value::Null
                        | Value::Bool(_)
                        | Value::Number(_)
                        | Value::Array(_)
                        | Value::Object(_)) => json_text(other, Flavor::Tam),
                    };
                    let alternative = lit(&text);
                    self.rules
                        .check_room(plain.len() + escaped.len() + alternative.len())?;
                    let target = if !text.contains(CLOSE) {
                        &mut plain
                    } else if !text.contains(CLOSE_ESCAPE) {
                        &mut escaped
                    } else {
                        // Neither form can carry it.
                        continue;
                    };
                    if !target.is_empty() {
                        target.push_str(" | ");
                    }
                    target.push_str(&alternative);
                }
                let mut alternatives = Vec::new();
                if !plain.is_empty() {
                    alternatives.push(format!("{open} ( {plain} ) {close}"));
                }
                if !escaped.is_empty() {
                    alternatives.push(format!(
                        "{} ( {escaped} ) {}",
                        lit(OPEN_ESCAPE),
                        lit(CLOSE_ESCAPE)
                    ));
                }
                if alternatives.is_empty() {
                    return Ok(self.rules.fixed(Fixed::TamValue)?.to_owned());
                }
                self.rules.add("enum", "", alternatives.join(" | "))
            }
            Kind::Scalars(types) => {
                let scalars = json::scalars(self.rules, types)?;
                self.rules
                    .add("scalar", "", format!("{open} {scalars} {close}"))
            }
            Kind::Array(items) => {
                let json = json::array(self.rules, items, Flavor::Tam, depth)?;
                // One item alone is a one-element list, for items that are numbers,
                // booleans or enum members (`3`, `celsius`); text items must be a list.
                let single = match items.map(|items| (items, items.kind(depth + 1))) {
                    Some((items, Kind::Enum(_))) => Some(self.value(items, depth + 1)?),
                    Some((_, Kind::Scalars(types))) if !types.contains(TypeSet::NULL) => {
                        let scalars = json::scalars(self.rules, types)?;
                        Some(format!("{open} {scalars} {close}"))
                    }
                    _ => None,
                };
                let body = match single {
                    Some(single) => format!("{open} {json} {close} | {single}"),
                    None => format!("{open} {json} {close}"),
                };
                self.rules.add("array", "", body)
            }
            Kind::Object(_) | Kind::OpenObject | Kind::Union(_) => {
                let json = json::value(self.rules, node, Flavor::Tam, depth)?;
                self.rules
                    .add("object", "", format!("{open} {json} {close}"))
            }
        }
    }
}

/// The rules a block that gives no call leads to, by where it stands.
struct Ends {
    /// Free text.
    text: String,
    /// `「` written in text: its expression (`"「" rule`).
    corner: String,
    /// `<` written: its expression.
    lt: String,
    /// An offered name written in a value, then blanks.
    named: String,
    /// An offered name written in a value, then `「`.
    named_corner: String,
}

/// A character of TAM text (not U+0000) other than `excluded`.
fn not(excluded: &[char]) -> String {
    let mut members: Vec<Class> = excluded.iter().map(|c| Class::One(*c)).collect();
    members.push(NUL);
    class(true, &members)
}
