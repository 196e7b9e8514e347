//! The ACTION block: `<ACTION>`, one or more call elements, `</ACTION>`.

use std::collections::HashMap;

use serde_json::Value;

use super::json::{self, Flavor};
use super::node::{Kind, Member, Node, is_xml_name};
use super::text::{BLANKS, Class, Fixed, Rules, XML_INVALID, class, either_case, lit};
use super::{GrammarError, MAX_CALLS, Omission, OmitReason};
use crate::ToolDefinition;
use crate::shape::Shape;

pub(super) const START: &str = "<ACTION>";
pub(super) const END: &str = "</ACTION>";

/// The block's own name: its close tag ends the block wherever it stands (ASCII case
/// ignored), so no value may hold it and no element may be named so.
const BLOCK: &str = "action";

/// The characters a tool name may differ by and still name the same tool, as the proxy
/// resolves names (with ASCII case).
pub(super) const LOOSE_SEPARATORS: [char; 3] = ['_', '-', '.'];

/// The ASCII characters that go on with an XML name.
const NAME_ASCII: [Class; 7] = [
    Class::Range('a', 'z'),
    Class::Range('A', 'Z'),
    Class::Range('0', '9'),
    Class::One('_'),
    Class::One('-'),
    Class::One('.'),
    Class::One(':'),
];

/// Element names longer than this are left out: every free value's rules spell its own
/// and its ancestors' names out character by character.
const MAX_NAME_BYTES: usize = 128;

/// Why `name` cannot be an element's name, if it cannot.
pub(super) fn unusable_name(name: &str) -> Option<OmitReason> {
    if name.len() > MAX_NAME_BYTES {
        Some(OmitReason::NameTooLong)
    } else if !is_xml_name(name) {
        Some(OmitReason::NotAnXmlName)
    } else if name.eq_ignore_ascii_case(BLOCK) {
        Some(OmitReason::ReservedName)
    } else {
        None
    }
}

/// The generator of one ACTION grammar.
/// The rules of one tool's call.
pub(super) struct Call {
    /// The call with its element named by any of the tool's spellings.
    pub(super) any: String,
    /// The call with its element named as declared.
    pub(super) exact: String,
}

pub(super) struct Action<'r> {
    rules: &'r mut Rules,
    /// Free text rules, by the names of the element and its ancestors.
    texts: HashMap<Vec<String>, String>,
    /// Close-tag rules, by group of names.
    groups: HashMap<Vec<String>, Group>,
}

impl<'r> Action<'r> {
    pub(super) fn new(rules: &'r mut Rules) -> Action<'r> {
        Action {
            rules,
            texts: HashMap::new(),
            groups: HashMap::new(),
        }
    }

    /// The rules of one call of `tool`, its element named by any of `spellings` (the
    /// declared name first), or `None` when its name cannot be a tag name. Parameters
    /// that cannot be written are left out, each reported in `omitted`.
    pub(super) fn call(
        &mut self,
        tool: &ToolDefinition,
        shape: &Shape,
        spellings: &[String],
        omitted: &mut Vec<Omission>,
    ) -> Result<Option<Call>, GrammarError> {
        let id = tool.id.as_str();
        if let Some(reason) = unusable_name(id) {
            omitted.push(Omission::tool(id, reason));
            return Ok(None);
        }
        let node = Node::new(shape, Some(&tool.parameters));
        let members = node.members();
        let mut lost_required = false;
        for member in &members {
            if let Some(reason) = unusable_name(member.name) {
                omitted.push(Omission::parameter(id, member.name, reason));
                lost_required |= member.required && member.node.shape.default.is_none();
            }
        }
        if lost_required {
            omitted.push(Omission::tool(id, OmitReason::RequiredParameterLeftOut));
            return Ok(None);
        }
        // Every spelling is an ancestor of the values: none may close the call early,
        // so the parameters' rules are the same for all of them.
        let spellings: Vec<&str> = spellings
            .iter()
            .map(String::as_str)
            .filter(|s| *s == id || unusable_name(s).is_none())
            .collect();
        let names: Vec<&str> = members
            .iter()
            .map(|m| m.name)
            .filter(|n| unusable_name(n).is_none())
            .collect();
        let mut parts = Vec::new();
        for member in members {
            if unusable_name(member.name).is_some() {
                continue;
            }
            let part = self.element(&spellings, &names, member)?;
            self.rules.check_room(part.len())?;
            parts.push((part, member.required));
        }
        let ws = self.rules.fixed(Fixed::Ws)?;
        let mut members = super::ordered(self.rules, parts, "", false)?;
        if spellings.len() > 1 && !members.trim().is_empty() {
            members = self.rules.add("params", id, members)?;
        }
        let element = |s: &str| {
            format!(
                "{} {ws} {members} {}",
                lit(&format!("<{s}>")),
                lit(&format!("</{s}>"))
            )
        };
        let mut alternatives: Vec<String> = spellings.iter().map(|s| element(s)).collect();
        self.rules
            .check_room(alternatives.iter().map(String::len).sum())?;
        let exact = if spellings.len() > 1 {
            let exact = self.rules.fresh("exact", id);
            self.rules.define(exact.clone(), alternatives[0].clone())?;
            alternatives[0] = exact.clone();
            Some(exact)
        } else {
            None
        };
        let name = self.rules.fresh("call", id);
        self.rules.define(name.clone(), alternatives.join(" | "))?;
        let exact = exact.unwrap_or_else(|| name.clone());
        Ok(Some(Call { any: name, exact }))
    }

    /// The block body between `<ACTION>` and `</ACTION>`: calls, blanks around them.
    ///
    /// With `unoffered` (the offered tools' names), the body may instead be empty, or
    /// start with an element of a tool not offered ([`Action::unoffered`]): a block that
    /// gives no call.
    pub(super) fn body(
        &mut self,
        calls: &[String],
        unoffered: Option<&[&str]>,
    ) -> Result<String, GrammarError> {
        let ws = self.rules.fixed(Fixed::Ws)?;
        let any = super::alternatives(self.rules, "action-call", calls)?;
        let calls = format!("{any} ( {ws} {any} ){{0,{}}} {ws}", MAX_CALLS - 1);
        let body = match unoffered {
            None => format!("{ws} {calls}"),
            Some(names) => {
                let other = self.unoffered(names)?;
                format!("{ws} ( {calls} | \"<\" {other} )?")
            }
        };
        let name = self.rules.fresh("action-body", "");
        self.rules.define(name.clone(), body)?;
        Ok(name)
    }

    /// After the `<` of a block's first element: the name of a tool not offered, then
    /// any text up to the end marker in which no element of an offered tool opens.
    ///
    /// "Not offered" is read as the proxy reads a call's tool: ASCII case and the
    /// separators `_`, `-` and `.` do not count (`Get.Weather` is `get_weather`), so
    /// neither the first element nor any later `<name` may spell an offered name that
    /// way (nor `action`, the block's own name). The name automaton is a trie of those
    /// loose names: a separator stays where it is, a letter of a branch goes down it, any
    /// other name character leaves every name, and a name may end (at a character that
    /// cannot go on with a name) only where no offered name ends. The text after it is
    /// XML characters in which `</` and blanks cannot go on to spell `action`, so the
    /// block ends at the first `</ACTION>`.
    ///
    /// The decoder reads such a block as calls of tools not offered, or as a block that
    /// fails: either way, no call of an offered tool — the proxy answers it as text.
    fn unoffered(&mut self, names: &[&str]) -> Result<String, GrammarError> {
        self.rules
            .check_room(names.iter().map(|n| n.len() * 64).sum())?;
        let trie = Trie::loose(names.iter().copied().chain([BLOCK]));
        let xml_char = self.rules.fixed(Fixed::XmlChar)?;
        let text = self.rules.fresh("other-text", "");
        let lt = self.rules.fresh("other-lt", "");
        let first = self.rules.fresh("other-name", "");
        let free = self.rules.fresh("other-free", "");
        // A name that has ended: the character after it (not a name character), or the
        // end of the text.
        let mut after: Vec<Class> = NAME_ASCII.to_vec();
        after.extend([Class::One('<'), Class::Range('\u{80}', '\u{10FFFF}')]);
        after.extend(XML_INVALID);
        let ended = format!("( {} {text} | \"<\" {lt} )?", class(true, &after));
        let any_name_char = name_char_except(self.rules, &[])?;
        self.rules
            .define(free.clone(), format!("{any_name_char} {free} | {ended}"))?;
        let children = self.trie_children(&trie, &free, &ended)?;
        let root = self.rules.fresh("other", "");
        let body = self.trie_body(&root, &children, trie.end, &free, &ended)?;
        self.rules.define(root.clone(), body)?;
        // The first character: a name start (letters, `_`, `:`, beyond ASCII).
        let mut starts = Vec::new();
        let mut taken: Vec<char> = LOOSE_SEPARATORS.to_vec();
        for (c, rule) in &children {
            if c.is_ascii_alphabetic() || *c == ':' || !c.is_ascii() {
                starts.push(format!("{} {rule}", either_case(*c)));
            }
            taken.extend([c.to_ascii_lowercase(), c.to_ascii_uppercase()]);
        }
        starts.push(format!("\"_\" {root}"));
        taken.extend('0'..='9');
        starts.push(format!("{} {free}", name_char_except(self.rules, &taken)?));
        self.rules.define(first.clone(), starts.join(" | "))?;
        self.rules
            .define(text.clone(), format!("( {xml_char} {text} | \"<\" {lt} )?"))?;
        // After `<`: a close tag, another `<`, a name, or text.
        let close = self.unoffered_close(&text, &lt)?;
        let mut not_text: Vec<Class> = NAME_ASCII.to_vec();
        not_text.extend([
            Class::One('<'),
            Class::One('/'),
            Class::Range('\u{80}', '\u{10FFFF}'),
        ]);
        not_text.extend(XML_INVALID);
        self.rules.define(
            lt.clone(),
            format!(
                "( \"/\" {close} | \"<\" {lt} | {first} | {} {text} )?",
                class(true, &not_text)
            ),
        )?;
        Ok(first)
    }

    /// The rules of the children of `node` of the loose-name trie, by their character.
    fn trie_children(
        &mut self,
        node: &Trie,
        free: &str,
        ended: &str,
    ) -> Result<Vec<(char, String)>, GrammarError> {
        let mut children = Vec::new();
        for (c, child) in &node.children {
            let grandchildren = self.trie_children(child, free, ended)?;
            let name = self.rules.fresh("other", "");
            let body = self.trie_body(&name, &grandchildren, child.end, free, ended)?;
            self.rules.define(name.clone(), body)?;
            children.push((*c, name));
        }
        Ok(children)
    }

    /// The body of rule `name` for a node of the loose-name trie, its character written:
    /// separators stay, a branch's letter goes down it, another name character leaves
    /// every name (`free`), and the name may end (`ended`) unless an offered name ends
    /// here (`end`).
    fn trie_body(
        &mut self,
        name: &str,
        children: &[(char, String)],
        end: bool,
        free: &str,
        ended: &str,
    ) -> Result<String, GrammarError> {
        let separators = LOOSE_SEPARATORS.map(Class::One);
        let mut alternatives = vec![format!("{} {name}", class(false, &separators))];
        let mut taken: Vec<char> = LOOSE_SEPARATORS.to_vec();
        for (c, rule) in children {
            alternatives.push(format!("{} {rule}", either_case(*c)));
            taken.extend([c.to_ascii_lowercase(), c.to_ascii_uppercase()]);
        }
        alternatives.push(format!("{} {free}", name_char_except(self.rules, &taken)?));
        if !end {
            alternatives.push(ended.to_owned());
        }
        self.rules
            .check_room(alternatives.iter().map(String::len).sum())?;
        Ok(alternatives.join(" | "))
    }

    /// After `</` in the text of a block that gives no call: blanks, then anything but
    /// `action` in any case, which would end the block there.
    fn unoffered_close(&mut self, text: &str, lt: &str) -> Result<String, GrammarError> {
        let names: Vec<String> = (0..BLOCK.len())
            .map(|_| self.rules.fresh("other-close", ""))
            .collect();
        for (k, c) in BLOCK.chars().enumerate() {
            let mut alternatives = Vec::new();
            let mut excluded = vec![
                Class::One('<'),
                Class::One(c.to_ascii_lowercase()),
                Class::One(c.to_ascii_uppercase()),
            ];
            if k == 0 {
                alternatives.push(format!("{} {}", class(false, &BLANKS), names[0]));
                excluded.extend(BLANKS);
            }
            if let Some(next) = names.get(k + 1) {
                alternatives.push(format!("{} {next}", either_case(c)));
            }
            alternatives.push(format!("\"<\" {lt}"));
            excluded.extend(XML_INVALID);
            alternatives.push(format!("{} {text}", class(true, &excluded)));
            self.rules.define(
                names[k].clone(),
                format!("( {} )?", alternatives.join(" | ")),
            )?;
        }
        Ok(names[0].clone())
    }

    /// `<name>` + value + blanks, for a member inside `ancestors`, among the members
    /// named `siblings`.
    fn element(
        &mut self,
        ancestors: &[&str],
        siblings: &[&str],
        member: Member<'_>,
    ) -> Result<String, GrammarError> {
        let ws = self.rules.fixed(Fixed::Ws)?;
        let value = self.value(ancestors, siblings, member.name, member.node, 0)?;
        Ok(format!(
            "{} {value} {ws}",
            lit(&format!("<{}>", member.name))
        ))
    }

    /// An expression for the content of element `name` (inside `ancestors`, among the
    /// members named `siblings`) holding a value of `node`, and its close tag.
    fn value(
        &mut self,
        ancestors: &[&str],
        siblings: &[&str],
        name: &str,
        node: Node<'_>,
        depth: usize,
    ) -> Result<String, GrammarError> {
        let close = lit(&format!("</{name}>"));
        let ws = self.rules.fixed(Fixed::Ws)?;
        match node.kind(depth) {
            Kind::Free => self.text(ancestors, siblings, name),
            Kind::OpenObject | Kind::Union(_) => {
                let json = json::value(self.rules, node, Flavor::Xml, depth)?;
                let body = in_element(&json, ws);
                self.rules.add("json", name, format!("{body} {close}"))
            }
            Kind::Enum(members) => {
                let mut body = String::new();
                for member in members {
                    let Some(text) = member_text(member) else {
                        continue;
                    };
                    let alternative = lit(&text);
                    self.rules.check_room(body.len() + alternative.len())?;
                    if !body.is_empty() {
                        body.push_str(" | ");
                    }
                    body.push_str(&alternative);
                }
                if body.is_empty() {
                    return self.text(ancestors, siblings, name);
                }
                self.rules.add("enum", name, format!("( {body} ) {close}"))
            }
            Kind::Scalars(types) => {
                let scalars = json::scalars(self.rules, types)?;
                self.rules.add("scalar", name, format!("{scalars} {close}"))
            }
            Kind::Array(items) => {
                let inner: Vec<&str> = ancestors.iter().copied().chain([name]).collect();
                let item = match items {
                    Some(items) => self.value(&inner, &[], "item", items, depth + 1)?,
                    None => self.text(&inner, &[], "item")?,
                };
                let json = json::array(self.rules, items, Flavor::Xml, depth)?;
                let json = in_element(&json, ws);
                self.rules.add(
                    "array",
                    name,
                    format!("( {ws} ( \"<item>\" {item} {ws} )+ | {json} ) {close}"),
                )
            }
            Kind::Object(members) => {
                let json = json::value(self.rules, node, Flavor::Xml, depth)?;
                let json = in_element(&json, ws);
                // Members that cannot be tags: JSON text only. The same for a member named
                // `item` unless another member must be written: member elements all named
                // `item` are read as an array.
                let item_alone = members.iter().any(|m| m.name == "item")
                    && !members.iter().any(|m| m.required && m.name != "item");
                if item_alone || members.iter().any(|m| unusable_name(m.name).is_some()) {
                    return self.rules.add("object", name, format!("{json} {close}"));
                }
                let inner: Vec<&str> = ancestors.iter().copied().chain([name]).collect();
                let names: Vec<&str> = members.iter().map(|m| m.name).collect();
                let mut parts = Vec::with_capacity(members.len());
                for member in members {
                    let value = self.value(&inner, &names, member.name, member.node, depth + 1)?;
                    let part = format!("{} {value} {ws}", lit(&format!("<{}>", member.name)));
                    self.rules.check_room(part.len())?;
                    parts.push((part, member.required));
                }
                // An element with no member element reads as an empty string, not as
                // an object: at least one member, or the JSON text (`{}`).
                let elements = super::ordered(self.rules, parts, "", true)?;
                let body = if elements.is_empty() {
                    format!("{json} {close}")
                } else {
                    format!("( {ws} {elements} | {json} ) {close}")
                };
                self.rules.add("object", name, body)
            }
        }
    }

    /// The free text of element `name` (inside `ancestors`, among the members named
    /// `siblings`), and its close tag: a rule `S0` of a right-linear automaton.
    ///
    /// Text is any characters XML allows, with `<` where it opens no close tag that
    /// would end an element the value sits in: `</name>` of the value, of an ancestor, or
    /// `</ACTION>`, in any ASCII case, with blanks after `</` and before `>` (the reader
    /// takes each of those as that close tag). Markup that does not close (`<b>x</b>`,
    /// `Vec<u8>`, `a < b`, `</other>`) is text, as the reader takes it. A CDATA section
    /// (which may hold anything up to `]]>`) and a comment (up to `-->`) must close: an
    /// unclosed one would swallow the close tag. After `<!` anything else but `-` and `[`
    /// is text. The value ends at its own close tag with the name in its own case
    /// (blanks allowed after `</` and before `>`): the reader takes another case as the
    /// close tag too, but not after an element left open in the value.
    ///
    /// A close tag's name, once written whole, is followed by blanks and `>` only: models
    /// that write a close tag mean to close an element. So the name of an ancestor, of
    /// `ACTION`, of a sibling (any case), and the own name in another case, cannot be
    /// written whole after `</` and its blanks. The reader would take `</sibling>` inside
    /// the value as text, and `</ancestor` followed by anything but `>` too; a small model
    /// that writes `<a>x</b>y</b>` believes `a` closed and never writes `</a>`, and its
    /// value then runs to the token limit. The own name written whole goes on only to its
    /// `>` or as a longer name (`</contents` in `content`).
    ///
    /// States: `S0` (text), `S1` (after `<`), `M` (after `</` and blanks). From `M`, the
    /// names are followed by groups of those that share their first letter; a group's
    /// rules ([`Action::group`]) do not depend on where the value is, so every value
    /// whose close tags start alike shares them.
    fn text(
        &mut self,
        ancestors: &[&str],
        siblings: &[&str],
        name: &str,
    ) -> Result<String, GrammarError> {
        // Ancestors and the name, then (after an empty string, which no name is) the
        // siblings.
        let key: Vec<String> = ancestors
            .iter()
            .chain([&name, &""])
            .chain(siblings)
            .map(|s| (*s).to_owned())
            .collect();
        if let Some(rule) = self.texts.get(&key) {
            return Ok(rule.clone());
        }
        let s0 = self.rules.fresh("t", name);
        let s1 = self.rules.fresh("t", "");
        let m = self.rules.fresh("t", "");
        self.texts.insert(key, s0.clone());

        let xml_char = self.rules.fixed(Fixed::XmlChar)?;
        let after_lt = self.rules.fixed(Fixed::XmlAfterLt)?;
        let after_bang = self.rules.fixed(Fixed::XmlAfterBang)?;
        let cdata = self.rules.fixed(Fixed::Cdata)?;
        let comment = self.rules.fixed(Fixed::Comment)?;
        self.rules
            .define(s0.clone(), format!("{xml_char} {s0} | \"<\" {s1}"))?;
        self.rules.define(
            s1.clone(),
            format!(
                "\"/\" {m} | \"<\" {s1} | \"!\" ( \"[CDATA[\" {cdata} {s0} | \"--\" {comment} {s0} | \"<\" {s1} | {after_bang} {s0} ) | {after_lt} {s0}"
            ),
        )?;

        // The names by first letter (ASCII case folded), the own name's group first.
        let mut words: Vec<&str> = vec![name];
        for word in ancestors
            .iter()
            .copied()
            .chain([BLOCK])
            .chain(siblings.iter().copied())
        {
            if !words.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                words.push(word);
            }
        }
        let first = |w: &str| w.chars().next().map(|c| c.to_ascii_lowercase());
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for word in words {
            match groups.iter_mut().find(|g| first(g[0]) == first(word)) {
                Some(group) => group.push(word),
                None => groups.push(vec![word]),
            }
        }
        let mut alternatives = vec![
            format!("{} {m}", class(false, &BLANKS)),
            format!("\"<\" {s1}"),
        ];
        let mut starts: Vec<char> = vec!['<', ' ', '\t', '\n', '\r'];
        for (index, group) in groups.iter().enumerate() {
            let own = (index == 0).then_some(name);
            let rules = self.group(group, own)?;
            if let Some(text) = rules.text {
                alternatives.push(format!("{text} {s0}"));
            }
            if let Some(lt) = rules.lt {
                alternatives.push(format!("{lt} {s1}"));
            }
            if let Some(close) = rules.close {
                alternatives.push(close);
            }
            if let Some(c) = first(group[0]) {
                starts.extend([c, c.to_ascii_uppercase()]);
            }
        }
        let leave = xml_char_except(self.rules, &starts)?;
        alternatives.push(format!("{leave} {s0}"));
        self.rules.define(m, alternatives.join(" | "))?;
        Ok(s0)
    }

    /// The rules for what may follow `</` and its blanks when the next character starts
    /// one of `words` (all of one first letter), with `own` the value's own name among
    /// them (`None` when they are all names that must not close). Shared by every value
    /// with the same group.
    fn group(&mut self, words: &[&str], own: Option<&str>) -> Result<Group, GrammarError> {
        let mut key: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
        key.sort();
        key.push(own.unwrap_or("").to_owned());
        if let Some(group) = self.groups.get(&key) {
            return Ok(group.clone());
        }
        let mut trie = Trie::default();
        for word in words {
            trie.insert(word);
        }
        let own_chars: Vec<char> = own.map(|o| o.chars().collect()).unwrap_or_default();
        let writer = Writer { own: &own_chars };
        let mut rule = |exit: Exit| -> Result<Option<String>, GrammarError> {
            match writer.write(&trie, self.rules, 0, own.is_some(), exit)? {
                Some(body) => self.rules.add("close", words[0], body).map(Some),
                None => Ok(None),
            }
        };
        let text = rule(Exit::Text)?;
        let lt = rule(Exit::Lt)?;
        let close = if own.is_some() {
            rule(Exit::Close)?
        } else {
            None
        };
        let group = Group { text, lt, close };
        self.groups.insert(key, group.clone());
        Ok(group)
    }
}

/// The rules of one group of names: after `</`, text that starts like them then leaves
/// them all (`text`: text goes on), then meets a `<` (`lt`), or is the value's own close
/// tag (`close`). `None` where no way leads there (one-letter names that must not close
/// leave no text that starts like them).
#[derive(Clone)]
struct Group {
    text: Option<String>,
    lt: Option<String>,
    close: Option<String>,
}

/// JSON text as an element's content: as it is, or in a CDATA section (as the prompt
/// shows for objects), blanks around it.
fn in_element(json: &str, ws: &str) -> String {
    format!("( {ws} {json} {ws} | {ws} \"<![CDATA[\" {ws} {json} {ws} \"]]>\" {ws} )")
}

/// How an element's value may be written as text: a string member as it is, entity
/// escaped; any other JSON value as its JSON text. `None` for a member XML cannot carry
/// (a character XML does not allow).
fn member_text(member: &Value) -> Option<String> {
    let raw = match member {
        Value::String(s) => s.clone(),
        other @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::Array(_)
        | Value::Object(_)) => other.to_string(),
    };
    if raw.chars().any(|c| {
        matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}')
    }) {
        return None;
    }
    let mut text = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '&' => text.push_str("&amp;"),
            '<' => text.push_str("&lt;"),
            '>' => text.push_str("&gt;"),
            // The reader trims XML whitespace around a value: a carriage return inside
            // one would still be normalised; written as a reference it stays.
            '\r' => text.push_str("&#13;"),
            _ => text.push(c),
        }
    }
    Some(text)
}

/// A rule for one character XML allows, other than `excluded`.
fn xml_char_except(rules: &mut Rules, excluded: &[char]) -> Result<String, GrammarError> {
    let mut members: Vec<Class> = excluded.iter().map(|c| Class::One(*c)).collect();
    members.extend(XML_INVALID);
    rules.add("char", "", class(true, &members))
}

/// A rule for one character that goes on with an XML name, other than `excluded`: the
/// ASCII name characters and any character beyond ASCII XML allows (the reader takes a
/// name to end at the first character that cannot go on with it; beyond ASCII the grammar
/// allows a little more than that, all of it text either way).
fn name_char_except(rules: &mut Rules, excluded: &[char]) -> Result<String, GrammarError> {
    let mut members: Vec<Class> = excluded.iter().map(|c| Class::One(*c)).collect();
    members.extend([
        Class::Range('\u{0}', ','),
        Class::One('/'),
        Class::Range(';', '@'),
        Class::Range('[', '^'),
        Class::One('`'),
        Class::Range('{', '\u{7F}'),
    ]);
    members.extend(XML_INVALID);
    rules.add("char", "", class(true, &members))
}

/// The names of a group, ASCII letters folded to lower case: the reader takes a close
/// tag in any case as the element's.
#[derive(Default)]
pub(super) struct Trie {
    pub(super) children: Vec<(char, Trie)>,
    /// A name ends here.
    pub(super) end: bool,
}

impl Trie {
    /// The trie of `names` as the proxy matches tool names: ASCII case folded, the
    /// [`LOOSE_SEPARATORS`] left out.
    pub(super) fn loose<'a>(names: impl IntoIterator<Item = &'a str>) -> Trie {
        let mut trie = Trie::default();
        for name in names {
            let loose: String = name
                .chars()
                .filter(|c| !LOOSE_SEPARATORS.contains(c))
                .collect();
            trie.insert(&loose);
        }
        trie
    }

    fn insert(&mut self, name: &str) {
        let mut node = self;
        for c in name.chars().map(|c| c.to_ascii_lowercase()) {
            let index = match node.children.iter().position(|(k, _)| *k == c) {
                Some(index) => index,
                None => {
                    node.children.push((c, Trie::default()));
                    node.children.len() - 1
                }
            };
            node = &mut node.children[index].1;
        }
        node.end = true;
    }
}

/// Where a group's rule ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// On a character that leaves every name (not `<`): text goes on.
    Text,
    /// On a `<`: it may start another tag.
    Lt,
    /// On the `>` of the value's own close tag.
    Close,
}

struct Writer<'a> {
    /// The value's own name as written (empty for none).
    own: &'a [char],
}

impl Writer<'_> {
    /// The expression for `node`, `depth` characters into the names, `exact` while they
    /// spell the start of the own name in its own case: the next character of a name,
    /// and the way out `exit` names. `None` when no way leads there.
    fn write(
        &self,
        node: &Trie,
        rules: &mut Rules,
        depth: usize,
        exact: bool,
        exit: Exit,
    ) -> Result<Option<String>, GrammarError> {
        let mut alternatives: Vec<String> = Vec::new();
        let mut excluded: Vec<char> = Vec::new();
        let own_next = self.own.get(depth).copied().filter(|_| exact);
        for (c, child) in &node.children {
            let mut edges: Vec<(String, bool)> = Vec::new();
            match own_next {
                Some(own) if own.to_ascii_lowercase() == *c => {
                    edges.push((lit(own.encode_utf8(&mut [0; 4])), true));
                    let other = if own.is_ascii_lowercase() {
                        own.to_ascii_uppercase()
                    } else {
                        own.to_ascii_lowercase()
                    };
                    if other != own {
                        edges.push((lit(other.encode_utf8(&mut [0; 4])), false));
                    }
                }
                _ => edges.push((either_case(*c), false)),
            }
            for (text, exact) in edges {
                if let Some(inner) = self.write(child, rules, depth + 1, exact, exit)? {
                    alternatives.push(format!("{text} {inner}"));
                }
            }
            for variant in [c.to_ascii_lowercase(), c.to_ascii_uppercase()] {
                if !excluded.contains(&variant) {
                    excluded.push(variant);
                }
            }
        }
        if depth > 0 {
            // A whole name is a close tag once its name ends: only its own, written as
            // it is, may be; a name that must not close leads nowhere (no text goes on
            // from it, not even a longer name), and the own name goes on only as a
            // longer name (`</contents`) or to its `>`.
            let own_end = node.end && exact && depth == self.own.len();
            match exit {
                Exit::Text if !node.end => {
                    excluded.push('<');
                    alternatives.push(xml_char_except(rules, &excluded)?);
                }
                Exit::Text if own_end => alternatives.push(name_char_except(rules, &excluded)?),
                Exit::Lt if !node.end => alternatives.push("\"<\"".to_owned()),
                Exit::Close if own_end => {
                    alternatives.push(format!("{}* \">\"", class(false, &BLANKS)));
                }
                Exit::Text | Exit::Lt | Exit::Close => {}
            }
        }
        rules.check_room(alternatives.iter().map(String::len).sum())?;
        Ok(match alternatives.len() {
            0 => None,
            1 => alternatives.pop(),
            _ => Some(format!("( {} )", alternatives.join(" | "))),
        })
    }
}
