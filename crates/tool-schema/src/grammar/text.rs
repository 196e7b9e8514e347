//! The grammar text itself: literals and character classes escaped so that no client
//! string can change the grammar's structure, and the rule table that names rules, shares
//! identical ones and keeps the output within its limits.
//!
//! Every escape used here is one that llama.cpp's GBNF parser and xgrammar's EBNF parser
//! read alike: `\"`, `\\`, `\n`, `\r`, `\t`, `\uXXXX` and `\UXXXXXXXX`. `\xHH` is never
//! written: llama.cpp reads exactly two hex digits after it, xgrammar as many as follow, so
//! `"\x41B"` would mean two different things. Everything outside printable ASCII is
//! written as `\u`/`\U`, so the grammar is ASCII whatever the tools hold.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::GrammarError;

/// A literal matching `text` exactly: `"…"` with every character that is not printable
/// ASCII, and `"` and `\`, escaped.
pub(super) fn lit(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            _ => push_code_point(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// `\uXXXX` or `\UXXXXXXXX`.
fn push_code_point(out: &mut String, c: char) {
    let code = u32::from(c);
    if code <= 0xFFFF {
        let _ = write!(out, "\\u{code:04X}");
    } else {
        let _ = write!(out, "\\U{code:08X}");
    }
}

/// One member of a character class.
#[derive(Debug, Clone, Copy)]
pub(super) enum Class {
    One(char),
    Range(char, char),
}

/// A character in a class: ASCII letters and digits as they are, everything else escaped
/// (`]`, `-`, `^`, `\` and `[` among them, which would otherwise be syntax).
fn push_class_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        push_code_point(out, c);
    }
}

/// `[…]`, or `[^…]` when `negated`.
///
/// Two ways around xgrammar releases before 0.2.8, which read some classes wrongly:
/// - a negated class that excludes a character outside ASCII is written as the positive
///   class of everything else: xgrammar compiles negated classes to byte automata that
///   keep only their ASCII members (it logs "clamping to 127"), so the excluded
///   characters would get through (a `「末」` inside free text);
/// - a range of characters outside ASCII is cut where the length or a leading byte of
///   its UTF-8 encoding changes (`U+300D–U+672A` is five ranges): across such a border
///   those releases dropped characters from the range.
///
/// The class means the same either way, to llama.cpp and to any xgrammar.
pub(super) fn class(negated: bool, members: &[Class]) -> String {
    let beyond_ascii = members.iter().any(|member| match *member {
        Class::One(c) => !c.is_ascii(),
        Class::Range(_, high) => !high.is_ascii(),
    });
    if negated && beyond_ascii {
        return complement(members);
    }
    let mut out = String::from(if negated { "[^" } else { "[" });
    for member in members {
        match *member {
            Class::One(c) => push_class_char(&mut out, c),
            Class::Range(low, high) => push_range(&mut out, u32::from(low), u32::from(high)),
        }
    }
    out.push(']');
    out
}

/// `low-high`, cut into ranges whose UTF-8 encodings differ only in their last bytes.
fn push_range(out: &mut String, low: u32, high: u32) {
    let mut pieces = Vec::new();
    for (start, end) in [
        (0, 0x7F),
        (0x80, 0x7FF),
        (0x800, 0xFFFF),
        (0x1_0000, 0x10_FFFF),
    ] {
        let (a, b) = (low.max(start), high.min(end));
        if a <= b {
            utf8_pieces(a, b, &mut pieces);
        }
    }
    for (a, b) in pieces {
        let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) else {
            continue;
        };
        push_class_char(out, a);
        if b != a {
            out.push('-');
            push_class_char(out, b);
        }
    }
}

/// `[a, b]` (of one UTF-8 length) as ranges that each share every byte but the ones
/// that vary over their whole span, as UTF-8 range tables are built.
fn utf8_pieces(a: u32, b: u32, out: &mut Vec<(u32, u32)>) {
    let length = match b {
        0..=0x7F => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    };
    for i in 1..length {
        let mask = (1u32 << (6 * i)) - 1;
        if a & !mask != b & !mask {
            if a & mask != 0 {
                utf8_pieces(a, a | mask, out);
                utf8_pieces((a | mask) + 1, b, out);
                return;
            }
            if b & mask != mask {
                utf8_pieces(a, (b & !mask) - 1, out);
                utf8_pieces(b & !mask, b, out);
                return;
            }
        }
    }
    out.push((a, b));
}

/// The positive class of every character not in `members` (surrogates, which are no
/// characters, left out).
fn complement(members: &[Class]) -> String {
    let mut excluded: Vec<(u32, u32)> = members
        .iter()
        .map(|member| match *member {
            Class::One(c) => (u32::from(c), u32::from(c)),
            Class::Range(low, high) => (u32::from(low), u32::from(high)),
        })
        .collect();
    excluded.push((0xD800, 0xDFFF));
    excluded.sort_unstable();
    let mut out = String::from("[");
    let mut next = 0u32;
    for (low, high) in excluded {
        if low > next {
            push_range(&mut out, next, low - 1);
        }
        next = next.max(high.saturating_add(1));
    }
    if next <= 0x10_FFFF {
        push_range(&mut out, next, 0x10_FFFF);
    }
    out.push(']');
    out
}

/// The characters XML 1.0 does not allow in a document (C0 controls but tab, line feed
/// and carriage return; U+FFFE, U+FFFF): never offered inside an ACTION value.
pub(super) const XML_INVALID: [Class; 5] = [
    Class::Range('\u{0}', '\u{8}'),
    Class::One('\u{B}'),
    Class::One('\u{C}'),
    Class::Range('\u{E}', '\u{1F}'),
    Class::Range('\u{FFFE}', '\u{FFFF}'),
];

/// U+0000, left out of TAM's free text too: llama.cpp ends a string at it, so it could
/// never match it anyway, and no model writes it.
pub(super) const NUL: Class = Class::One('\u{0}');

/// XML whitespace, also the blanks the TAM reader skips between entries.
pub(super) const BLANKS: [Class; 4] = [
    Class::One(' '),
    Class::One('\t'),
    Class::One('\n'),
    Class::One('\r'),
];

/// `c` in either ASCII case: `[aA]` for a letter, else the literal.
pub(super) fn either_case(c: char) -> String {
    if c.is_ascii_alphabetic() {
        class(
            false,
            &[
                Class::One(c.to_ascii_lowercase()),
                Class::One(c.to_ascii_uppercase()),
            ],
        )
    } else {
        lit(c.encode_utf8(&mut [0; 4]))
    }
}

/// How large a grammar may grow: the generator stops with
/// [`GrammarError::TooLarge`] as soon as either bound would be passed, so it never
/// builds more than this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Budget {
    pub(super) max_bytes: usize,
    pub(super) max_rules: usize,
}

/// Rules of fixed shape that the generated ones refer to by name. Each is written once,
/// when first used; their names never end in `-<digits>`, so they cannot meet a generated
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Fixed {
    /// Blanks between elements and entries, at most 32 (a model cannot loop on them).
    Ws,
    /// One character of ACTION text: not `<`, not invalid in XML.
    XmlChar,
    /// After `<` in ACTION text: not `/`, `<`, `!`, not invalid in XML.
    XmlAfterLt,
    /// After `<!` in ACTION text: not `-`, `[`, `<`, not invalid in XML.
    XmlAfterBang,
    /// A CDATA section's content and its `]]>`.
    Cdata,
    Cdata1,
    Cdata2,
    /// An XML comment's content and its `-->`.
    Comment,
    Comment1,
    Comment2,
    /// JSON scalars.
    JsonInt,
    JsonNumber,
    JsonBool,
    /// JSON text inside a TAM value: strings may not hold `「` (write `\u300c`), so no
    /// string can hold the value's closing marker.
    JsonStringTam,
    JsonCharTam,
    JsonValueTam,
    JsonObjectTam,
    JsonArrayTam,
    /// JSON text inside an ACTION element: strings may not hold `<` or `&` (write
    /// `\u003c`, `\u0026`), so no string can open markup.
    JsonStringXml,
    JsonCharXml,
    JsonValueXml,
    JsonObjectXml,
    JsonArrayXml,
    /// A free TAM value: `「始」…「末」` or `「始ESCAPE」…「末ESCAPE」`, markers included.
    TamValue,
    TamText,
    TamText1,
    TamText2,
    TamEscape,
    /// The separator between TAM entries: blanks, and `#` comment lines after a line
    /// break.
    Gap,
}

impl Fixed {
    pub(super) fn name(self) -> &'static str {
        match self {
            Fixed::Ws => "ws",
            Fixed::XmlChar => "xml-char",
            Fixed::XmlAfterLt => "xml-after-lt",
            Fixed::XmlAfterBang => "xml-after-bang",
            Fixed::Cdata => "cdata",
            Fixed::Cdata1 => "cdata-a",
            Fixed::Cdata2 => "cdata-b",
            Fixed::Comment => "comment",
            Fixed::Comment1 => "comment-a",
            Fixed::Comment2 => "comment-b",
            Fixed::JsonInt => "json-int",
            Fixed::JsonNumber => "json-number",
            Fixed::JsonBool => "json-bool",
            Fixed::JsonStringTam => "json-string-tam",
            Fixed::JsonCharTam => "json-char-tam",
            Fixed::JsonValueTam => "json-value-tam",
            Fixed::JsonObjectTam => "json-object-tam",
            Fixed::JsonArrayTam => "json-array-tam",
            Fixed::JsonStringXml => "json-string-xml",
            Fixed::JsonCharXml => "json-char-xml",
            Fixed::JsonValueXml => "json-value-xml",
            Fixed::JsonObjectXml => "json-object-xml",
            Fixed::JsonArrayXml => "json-array-xml",
            Fixed::TamValue => "tam-value",
            Fixed::TamText => "tam-text",
            Fixed::TamText1 => "tam-text-a",
            Fixed::TamText2 => "tam-text-b",
            Fixed::TamEscape => "tam-escape",
            Fixed::Gap => "gap",
        }
    }
}

/// The rules of one grammar, in the order they were defined (a rule may refer to one
/// defined later: both parsers allow forward references).
pub(super) struct Rules {
    lines: Vec<(String, String)>,
    /// Body → name, to share identical generated rules.
    shared: HashMap<String, String>,
    fixed: Vec<Fixed>,
    bytes: usize,
    budget: Budget,
    next: usize,
}

impl Rules {
    pub(super) fn new(budget: Budget) -> Rules {
        Rules {
            lines: Vec::new(),
            shared: HashMap::new(),
            fixed: Vec::new(),
            bytes: 0,
            budget,
            next: 0,
        }
    }

    /// Fails when `more` bytes of text on top of what is written would pass the limit:
    /// bodies that grow with the input (an enum's members, a tool list) call this as they
    /// grow, so no body is ever built much past the limit.
    pub(super) fn check_room(&self, more: usize) -> Result<(), GrammarError> {
        if self.bytes.saturating_add(more) > self.budget.max_bytes {
            return Err(self.too_large(self.bytes.saturating_add(more), self.lines.len()));
        }
        Ok(())
    }

    fn too_large(&self, bytes: usize, rules: usize) -> GrammarError {
        GrammarError::TooLarge {
            bytes,
            rules,
            max_bytes: self.budget.max_bytes,
            max_rules: self.budget.max_rules,
        }
    }

    /// A fresh name: `kind-hint-N`, the hint sanitised to `[a-z0-9-]` and cut to 24
    /// characters, `N` a counter, so two client names that sanitise alike still get two
    /// rules.
    pub(super) fn fresh(&mut self, kind: &str, hint: &str) -> String {
        let mut name = String::from(kind);
        let mut cleaned = String::new();
        for c in hint.chars() {
            if cleaned.len() >= 24 {
                break;
            }
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                cleaned.push(c);
            } else if !cleaned.is_empty() && !cleaned.ends_with('-') {
                cleaned.push('-');
            }
        }
        let cleaned = cleaned.trim_end_matches('-');
        if !cleaned.is_empty() {
            name.push('-');
            name.push_str(cleaned);
        }
        let _ = write!(name, "-{}", self.next);
        self.next += 1;
        name
    }

    /// Writes `name ::= body`.
    pub(super) fn define(&mut self, name: String, body: String) -> Result<(), GrammarError> {
        let bytes = self.bytes + name.len() + body.len() + 6;
        let rules = self.lines.len() + 1;
        if bytes > self.budget.max_bytes || rules > self.budget.max_rules {
            return Err(self.too_large(bytes, rules));
        }
        self.bytes = bytes;
        self.lines.push((name, body));
        Ok(())
    }

    /// A rule with `body`, shared with any earlier rule of the same body.
    pub(super) fn add(
        &mut self,
        kind: &str,
        hint: &str,
        body: String,
    ) -> Result<String, GrammarError> {
        if let Some(name) = self.shared.get(&body) {
            return Ok(name.clone());
        }
        let name = self.fresh(kind, hint);
        self.define(name.clone(), body.clone())?;
        self.shared.insert(body, name.clone());
        Ok(name)
    }

    /// The name of a fixed rule, written (with the fixed rules it uses) on first use.
    pub(super) fn fixed(&mut self, rule: Fixed) -> Result<&'static str, GrammarError> {
        if !self.fixed.contains(&rule) {
            self.fixed.push(rule);
            let body = self.fixed_body(rule)?;
            self.define(rule.name().to_owned(), body)?;
        }
        Ok(rule.name())
    }

    fn fixed_body(&mut self, rule: Fixed) -> Result<String, GrammarError> {
        let xml_char_not = |extra: &[Class]| {
            let mut members = extra.to_vec();
            members.extend(XML_INVALID);
            class(true, &members)
        };
        Ok(match rule {
            Fixed::Ws => format!("{}{{0,32}}", class(false, &BLANKS)),
            Fixed::XmlChar => xml_char_not(&[Class::One('<')]),
            Fixed::XmlAfterLt => xml_char_not(&[Class::One('/'), Class::One('<'), Class::One('!')]),
            Fixed::XmlAfterBang => {
                xml_char_not(&[Class::One('-'), Class::One('['), Class::One('<')])
            }
            // A right-linear automaton for "anything XML allows up to and including
            // `]]>`".
            Fixed::Cdata => {
                let a = self.fixed(Fixed::Cdata1)?;
                format!("{} cdata | \"]\" {a}", xml_char_not(&[Class::One(']')]))
            }
            Fixed::Cdata1 => {
                let b = self.fixed(Fixed::Cdata2)?;
                format!("{} cdata | \"]\" {b}", xml_char_not(&[Class::One(']')]))
            }
            Fixed::Cdata2 => {
                self.fixed(Fixed::Cdata)?;
                format!(
                    "\">\" | \"]\" cdata-b | {} cdata",
                    xml_char_not(&[Class::One(']'), Class::One('>')])
                )
            }
            // The same for "anything up to and including `-->`".
            Fixed::Comment => {
                let a = self.fixed(Fixed::Comment1)?;
                format!("{} comment | \"-\" {a}", xml_char_not(&[Class::One('-')]))
            }
            Fixed::Comment1 => {
                let b = self.fixed(Fixed::Comment2)?;
                format!("{} comment | \"-\" {b}", xml_char_not(&[Class::One('-')]))
            }
            Fixed::Comment2 => {
                self.fixed(Fixed::Comment)?;
                format!(
                    "\">\" | \"-\" comment-b | {} comment",
                    xml_char_not(&[Class::One('-'), Class::One('>')])
                )
            }
            // At most 18 digits: always an i64, never refused by coercion.
            Fixed::JsonInt => "\"-\"? ( \"0\" | [1-9] [0-9]{0,17} )".to_owned(),
            // An exponent of at most two digits: always a finite f64.
            Fixed::JsonNumber => {
                let int = self.fixed(Fixed::JsonInt)?;
                format!("{int} ( \".\" [0-9]{{1,17}} )? ( [eE] [-+]? [0-9]{{1,2}} )?")
            }
            Fixed::JsonBool => "\"true\" | \"false\"".to_owned(),
            Fixed::JsonStringTam => {
                let c = self.fixed(Fixed::JsonCharTam)?;
                format!("\"\\\"\" {c}* \"\\\"\"")
            }
            Fixed::JsonStringXml => {
                let c = self.fixed(Fixed::JsonCharXml)?;
                format!("\"\\\"\" {c}* \"\\\"\"")
            }
            Fixed::JsonCharTam => json_char(&[Class::One('\u{300C}')]),
            Fixed::JsonCharXml => {
                let mut excluded = vec![Class::One('<'), Class::One('&')];
                excluded.extend(XML_INVALID);
                json_char(&excluded)
            }
            Fixed::JsonValueTam | Fixed::JsonValueXml => {
                let tam = rule == Fixed::JsonValueTam;
                let (object, array, string) = if tam {
                    (
                        Fixed::JsonObjectTam,
                        Fixed::JsonArrayTam,
                        Fixed::JsonStringTam,
                    )
                } else {
                    (
                        Fixed::JsonObjectXml,
                        Fixed::JsonArrayXml,
                        Fixed::JsonStringXml,
                    )
                };
                let object = self.fixed(object)?;
                let array = self.fixed(array)?;
                let string = self.fixed(string)?;
                let number = self.fixed(Fixed::JsonNumber)?;
                let boolean = self.fixed(Fixed::JsonBool)?;
                format!("{object} | {array} | {string} | {number} | {boolean} | \"null\"")
            }
            Fixed::JsonObjectTam | Fixed::JsonObjectXml => {
                let (value, string) = if rule == Fixed::JsonObjectTam {
                    (Fixed::JsonValueTam, Fixed::JsonStringTam)
                } else {
                    (Fixed::JsonValueXml, Fixed::JsonStringXml)
                };
                let ws = self.fixed(Fixed::Ws)?;
                let value = self.fixed(value)?;
                let string = self.fixed(string)?;
                let member = format!("{string} {ws} \":\" {ws} {value} {ws}");
                format!("\"{{\" {ws} ( {member} ( \",\" {ws} {member} )* )? \"}}\"")
            }
            Fixed::JsonArrayTam | Fixed::JsonArrayXml => {
                let value = if rule == Fixed::JsonArrayTam {
                    Fixed::JsonValueTam
                } else {
                    Fixed::JsonValueXml
                };
                let ws = self.fixed(Fixed::Ws)?;
                let value = self.fixed(value)?;
                format!("\"[\" {ws} ( {value} {ws} ( \",\" {ws} {value} {ws} )* )? \"]\"")
            }
            Fixed::TamValue => {
                let text = self.fixed(Fixed::TamText)?;
                let escape = self.fixed(Fixed::TamEscape)?;
                format!(
                    "{} {text} | {} {escape}",
                    lit(super::tam::OPEN),
                    lit(super::tam::OPEN_ESCAPE)
                )
            }
            // "Anything up to and including 「末」", one state per matched prefix; `「`
            // occurs only first in the marker, so a mismatch falls back to the start or
            // (on `「`) to the state after it. After `「末` only `」` follows: the reader
            // would take `「末ESCAPE」` or `「末` and a line break in a plain value as text,
            // but a model that writes them means to end the value, and would then write
            // on without end.
            Fixed::TamText => {
                let a = self.fixed(Fixed::TamText1)?;
                format!(
                    "{} tam-text | \"\\u300C\" {a}",
                    class(true, &[Class::One('\u{300C}'), NUL])
                )
            }
            Fixed::TamText1 => {
                let b = self.fixed(Fixed::TamText2)?;
                format!(
                    "\"\\u672B\" {b} | \"\\u300C\" tam-text-a | {} tam-text",
                    class(true, &[Class::One('\u{672B}'), Class::One('\u{300C}'), NUL])
                )
            }
            Fixed::TamText2 => "\"\\u300D\"".to_owned(),
            Fixed::TamEscape => self.escape_automaton()?,
            Fixed::Gap => {
                let ws = self.fixed(Fixed::Ws)?;
                let comment_char = class(
                    true,
                    &[
                        Class::One('\n'),
                        Class::One('\r'),
                        Class::One('\u{300C}'),
                        Class::One('<'),
                        NUL,
                    ],
                );
                // A comment is a line whose first non-blank character is `#`: it may
                // only follow a line break, and ends with one (a `#` after an entry on
                // its line would be stray text; an entry after `#` on one line would be
                // part of the comment). It holds no `「` and no `<`, so neither an entry
                // nor a marker can hide in it.
                format!(
                    "{ws} ( ( \"\\n\" [ \\t]{{0,16}} \"#\" {comment_char}{{0,160}} ){{1,8}} \"\\n\" {ws} )?"
                )
            }
        })
    }

    /// `tam-escape`: anything up to and including `「末ESCAPE」`, one rule per matched
    /// prefix (`tam-escape`, `tam-escape-1` … `tam-escape-8`). After `「末ESCAPE` only
    /// `」` follows (as after `「末` in a plain value); `「末」` is text here, which is what
    /// the escaped form is for.
    fn escape_automaton(&mut self) -> Result<String, GrammarError> {
        let marker: Vec<char> = super::tam::CLOSE_ESCAPE.chars().collect();
        let state = |i: usize| {
            if i == 0 {
                "tam-escape".to_owned()
            } else {
                format!("tam-escape-{}", letter(i))
            }
        };
        let open = marker[0];
        let mut first = String::new();
        for i in 0..marker.len() {
            let c = marker[i];
            let next = if i + 1 == marker.len() {
                String::new()
            } else {
                format!(" {}", state(i + 1))
            };
            let mut alternatives = vec![format!("{}{next}", lit(c.encode_utf8(&mut [0; 4])))];
            if i + 1 == marker.len() {
                self.define(state(i), alternatives.join(" | "))?;
                continue;
            }
            if i > 0 {
                alternatives.push(format!(
                    "{} {}",
                    lit(open.encode_utf8(&mut [0; 4])),
                    state(1)
                ));
            }
            let mut not = vec![Class::One(c), NUL];
            if c != open {
                not.push(Class::One(open));
            }
            alternatives.push(format!("{} {}", class(true, &not), state(0)));
            let body = alternatives.join(" | ");
            if i == 0 {
                first = body;
            } else {
                self.define(state(i), body)?;
            }
        }
        Ok(first)
    }

    /// Number of rules written.
    pub(super) fn count(&self) -> usize {
        self.lines.len()
    }

    /// The grammar: `root ::= root_body` first, then every rule in definition order.
    pub(super) fn render(&self, root_body: &str) -> Result<String, GrammarError> {
        let bytes = self.bytes + root_body.len() + 10;
        if bytes > self.budget.max_bytes || self.lines.len() + 1 > self.budget.max_rules {
            return Err(self.too_large(bytes, self.lines.len() + 1));
        }
        let mut out = String::with_capacity(bytes);
        let _ = writeln!(out, "root ::= {root_body}");
        for (name, body) in &self.lines {
            let _ = writeln!(out, "{name} ::= {body}");
        }
        Ok(out)
    }
}

/// A state name suffix that is no number (`a`, `b`, … `z`, `aa`, …): fixed rules never end
/// in `-<digits>`.
fn letter(i: usize) -> String {
    let mut i = i;
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (i % 26) as u8);
        i /= 26;
        if i == 0 {
            break;
        }
        i -= 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// One character of a JSON string: anything but `"`, `\`, controls and `excluded`, or an
/// escape. `\u` escapes of surrogates (D800–DFFF) are not offered: a lone one is refused
/// by JSON readers, and characters outside the BMP can be written as they are.
fn json_char(excluded: &[Class]) -> String {
    let mut members = vec![
        Class::One('"'),
        Class::One('\\'),
        Class::Range('\u{0}', '\u{1F}'),
    ];
    members.extend_from_slice(excluded);
    format!(
        "{} | \"\\\\\" ( {} | \"u\" ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{{3}} | [dD] [0-7] [0-9a-fA-F]{{2}} ) )",
        class(true, &members),
        class(
            false,
            &[
                Class::One('"'),
                Class::One('\\'),
                Class::One('/'),
                Class::One('b'),
                Class::One('f'),
                Class::One('n'),
                Class::One('r'),
                Class::One('t'),
            ]
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_everything_that_is_syntax_or_not_ascii() {
        assert_eq!(lit("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(lit("x\ny\tz\r"), r#""x\ny\tz\r""#);
        assert_eq!(lit("「始」"), r#""\u300C\u59CB\u300D""#);
        assert_eq!(lit("😀\u{0}"), r#""\U0001F600\u0000""#);
        assert_eq!(lit("]|[#"), r#""]|[#""#);
    }

    #[test]
    fn negated_classes_beyond_ascii_are_written_as_their_complement() {
        assert_eq!(
            class(true, &[Class::One('\u{300C}')]),
            concat!(
                r"[\u0000-\u007F\u0080-\u07FF\u0800-\u0FFF\u1000-\u2FFF\u3000-\u300B",
                r"\u300D-\u303F\u3040-\u3FFF\u4000-\uCFFF\uD000-\uD7FF\uE000-\uFFFF",
                r"\U00010000-\U0003FFFF\U00040000-\U000FFFFF\U00100000-\U0010FFFF]"
            )
        );
        assert_eq!(class(true, &[Class::One('<')]), r"[^\u003C]");
    }

    /// The pieces of a range cover it exactly, in order, and each is a product of byte
    /// ranges: its first and last code points differ only in bytes that span their whole
    /// continuation range.
    #[test]
    fn ranges_beyond_ascii_are_cut_at_utf8_borders() {
        let mut pieces = Vec::new();
        utf8_pieces(0x300D, 0x672A, &mut pieces);
        assert_eq!(
            pieces,
            [
                (0x300D, 0x303F),
                (0x3040, 0x3FFF),
                (0x4000, 0x5FFF),
                (0x6000, 0x66FF),
                (0x6700, 0x672A)
            ]
        );
        for (low, high) in [
            (0x80, 0x7FF),
            (0x3D, 0x7F),
            (0x800, 0xFFFF),
            (0x1_0000, 0x10_FFFF),
            (0xE9, 0x1F600),
        ] {
            let mut pieces = Vec::new();
            for (start, end) in [
                (0, 0x7F),
                (0x80, 0x7FF),
                (0x800, 0xFFFF),
                (0x1_0000, 0x10_FFFF),
            ] {
                let (a, b) = (u32::max(low, start), u32::min(high, end));
                if a <= b {
                    utf8_pieces(a, b, &mut pieces);
                }
            }
            assert_eq!(pieces.first().map(|p| p.0), Some(low));
            assert_eq!(pieces.last().map(|p| p.1), Some(high));
            assert!(pieces.windows(2).all(|w| w[0].1 + 1 == w[1].0));
        }
        assert_eq!(class(false, &[Class::Range('a', 'z')]), "[a-z]");
        assert_eq!(
            class(false, &[Class::Range('\u{3D}', '\u{FF}')]),
            r"[\u003D-\u007F\u0080-\u00FF]"
        );
    }

    #[test]
    fn classes_escape_every_punctuation_character() {
        assert_eq!(
            class(true, &[Class::One(']'), Class::One('-'), Class::One('^')]),
            r"[^\u005D\u002D\u005E]"
        );
        assert_eq!(
            class(false, &[Class::Range('a', 'z'), Class::One('\\')]),
            r"[a-z\u005C]"
        );
    }

    #[test]
    fn fresh_names_are_sanitised_and_unique() {
        let mut rules = Rules::new(Budget {
            max_bytes: 1 << 20,
            max_rules: 100,
        });
        let a = rules.fresh("call", "Get Weather!");
        let b = rules.fresh("call", "get-weather");
        assert_eq!(a, "call-get-weather-0");
        assert_eq!(b, "call-get-weather-1");
        assert_eq!(rules.fresh("call", "日本"), "call-2");
        assert_eq!(rules.fresh("p", "x".repeat(100).as_str()).len(), 2 + 24 + 2);
    }

    #[test]
    fn state_letters_never_look_like_numbers() {
        assert_eq!(letter(0), "a");
        assert_eq!(letter(25), "z");
        assert_eq!(letter(26), "aa");
    }
}
