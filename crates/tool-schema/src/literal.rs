//! A reader for values written as Python or JavaScript literals, the way models write
//! arrays and objects inside text: `['Sam', 'Alice']`, `[True, False, None]`,
//! `{'a': 1, b: null,}`.
//!
//! The grammar is JSON's, widened:
//! - strings in single or double quotes, with the escapes `\n \t \r \b \f \v \0 \\ \' \"
//!   \/`, `\xHH`, `\uXXXX` (surrogate pairs joined, a lone surrogate read as U+FFFD) and a
//!   backslash before a line break (the break is dropped); any other backslash is kept
//!   with the character after it, as Python does;
//! - `True`/`true`, `False`/`false`, `None`/`null`;
//! - numbers with an optional `+` or `-`, a fraction and an exponent (`.5` and `5.` too);
//!   integers that fit `i64`/`u64` stay integers, others become floats; a number with no
//!   finite float value (`1e400`) is refused;
//! - object keys quoted, or bare JavaScript identifiers (`{a: 1}`);
//! - a trailing comma before `]` or `}`.
//!
//! It never evaluates anything and never panics. It is bounded: containers nest at most
//! [`MAX_DEPTH`] levels (the recursion is one call per level, so the stack stays small);
//! deeper text is refused with [`LiteralError::TooDeep`] as soon as the limit is passed.

use std::fmt;

use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects the reader accepts.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LiteralError {
    /// Arrays and objects nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Text that is not a literal: what was wrong and at which byte offset.
    Syntax {
        /// Byte offset into the text.
        offset: usize,
        /// What the reader wanted or found.
        message: &'static str,
    },
}

impl fmt::Display for LiteralError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiteralError::TooDeep => {
                write!(
                    f,
                    "arrays and objects nested deeper than {MAX_DEPTH} levels"
                )
            }
            LiteralError::Syntax { offset, message } => write!(f, "{message} at byte {offset}"),
        }
    }
}

/// Reads the whole of `text` (surrounding whitespace allowed) as one literal value.
pub(crate) fn read(text: &str) -> Result<Value, LiteralError> {
    let mut reader = Reader { text, pos: 0 };
    let value = reader.value(0)?;
    reader.skip_whitespace();
    if reader.pos < text.len() {
        return Err(reader.error("unexpected text after the value"));
    }
    Ok(value)
}

struct Reader<'t> {
    text: &'t str,
    /// Byte offset of the next character; always on a char boundary.
    pos: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn error(&self, message: &'static str) -> LiteralError {
        LiteralError::Syntax {
            offset: self.pos,
            message,
        }
    }

    fn skip_whitespace(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// One value; `depth` counts the containers around it.
    fn value(&mut self, depth: usize) -> Result<Value, LiteralError> {
        self.skip_whitespace();
        match self.peek() {
            Some('[') => self.array(depth + 1),
            Some('{') => self.object(depth + 1),
            Some(quote @ ('\'' | '"')) => self.string(quote).map(Value::String),
            Some('+' | '-' | '.' | '0'..='9') => self.number(),
            Some(c) if is_identifier_start(c) => {
                let start = self.pos;
                let word = self.identifier();
                match word {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    _ => Err(LiteralError::Syntax {
                        offset: start,
                        message: "unquoted word",
                    }),
                }
            }
            Some(_) => Err(self.error("unexpected character")),
            None => Err(self.error("unexpected end of text")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, LiteralError> {
        if depth > MAX_DEPTH {
            return Err(LiteralError::TooDeep);
        }
        self.bump(); // `[`
        let mut items = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek() == Some(']') {
                self.bump();
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {
                    self.bump();
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.error("expected ',' or ']'")),
                None => return Err(self.error("unclosed '['")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, LiteralError> {
        if depth > MAX_DEPTH {
            return Err(LiteralError::TooDeep);
        }
        self.bump(); // `{`
        let mut members = Map::new();
        loop {
            self.skip_whitespace();
            let key = match self.peek() {
                Some('}') => {
                    self.bump();
                    return Ok(Value::Object(members));
                }
                Some(quote @ ('\'' | '"')) => self.string(quote)?,
                Some(c) if is_identifier_start(c) => self.identifier().to_owned(),
                Some(_) => return Err(self.error("expected a key")),
                None => return Err(self.error("unclosed '{'")),
            };
            self.skip_whitespace();
            if self.peek() != Some(':') {
                return Err(self.error("expected ':'"));
            }
            self.bump();
            let value = self.value(depth)?;
            members.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {
                    self.bump();
                    return Ok(Value::Object(members));
                }
                Some(_) => return Err(self.error("expected ',' or '}'")),
                None => return Err(self.error("unclosed '{'")),
            }
        }
    }

    fn identifier(&mut self) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !(is_identifier_start(c) || c.is_ascii_digit()) {
                break;
            }
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn number(&mut self) -> Result<Value, LiteralError> {
        let start = self.pos;
        if let Some('+' | '-') = self.peek() {
            self.bump();
        }
        let digits = self.pos;
        while let Some(c) = self.peek() {
            let sign_in_exponent = matches!(c, '+' | '-')
                && matches!(self.text[..self.pos].chars().next_back(), Some('e' | 'E'));
            if !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E') || sign_in_exponent) {
                break;
            }
            self.bump();
        }
        let token = &self.text[start..self.pos];
        let unsigned = &self.text[digits..self.pos];
        // Rust's float syntax also takes `inf` and `nan`; a number here starts with a
        // digit or a dot.
        if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Err(LiteralError::Syntax {
                offset: start,
                message: "not a number",
            });
        }
        let token = token.strip_prefix('+').unwrap_or(token);
        if let Ok(integer) = token.parse::<i64>() {
            return Ok(integer.into());
        }
        if let Ok(integer) = token.parse::<u64>() {
            return Ok(integer.into());
        }
        token
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or(LiteralError::Syntax {
                offset: start,
                message: "not a finite number",
            })
    }

    /// A quoted string; the reader stands on its opening `quote`.
    fn string(&mut self, quote: char) -> Result<String, LiteralError> {
        let open = self.pos;
        self.bump();
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(LiteralError::Syntax {
                    offset: open,
                    message: "unclosed string",
                });
            };
            if c == quote {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let escape_at = self.pos - 1;
            let Some(e) = self.bump() else {
                return Err(LiteralError::Syntax {
                    offset: open,
                    message: "unclosed string",
                });
            };
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' | '/' => out.push(e),
                '\n' => {}
                '\r' => {
                    if self.peek() == Some('\n') {
                        self.bump();
                    }
                }
                'x' => {
                    let code = self.hex(2).ok_or(LiteralError::Syntax {
                        offset: escape_at,
                        message: "bad \\x escape",
                    })?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                'u' => {
                    let code = self.hex(4).ok_or(LiteralError::Syntax {
                        offset: escape_at,
                        message: "bad \\u escape",
                    })?;
                    out.push(self.utf16(code));
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    /// The character of a `\u` escape's code unit, joined with a following `\uDC00`-style
    /// low surrogate when it is a high one.
    fn utf16(&mut self, code: u32) -> char {
        if (0xD800..0xDC00).contains(&code) && self.text[self.pos..].starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            match self.hex(4) {
                Some(low @ 0xDC00..0xE000) => {
                    let joined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(joined).unwrap_or('\u{fffd}');
                }
                _ => self.pos = save,
            }
        }
        char::from_u32(code).unwrap_or('\u{fffd}')
    }

    /// Exactly `digits` hexadecimal digits, or `None` (nothing consumed).
    fn hex(&mut self, digits: usize) -> Option<u32> {
        let rest = self.text.get(self.pos..)?;
        let token = rest.get(..digits)?;
        if !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let code = u32::from_str_radix(token, 16).ok()?;
        self.pos += digits;
        Some(code)
    }
}

fn is_identifier_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_and_javascript_literals() {
        assert_eq!(read("['Sam', 'Alice']"), Ok(json!(["Sam", "Alice"])));
        assert_eq!(read(" [3, 5,] "), Ok(json!([3, 5])));
        assert_eq!(
            read("[True, False, None, true, null]"),
            Ok(json!([true, false, null, true, null]))
        );
        assert_eq!(
            read("{'a': 1, \"b\": None, c: [1.5, -2e3, +4, .5],}"),
            Ok(json!({"a": 1, "b": null, "c": [1.5, -2000.0, 4, 0.5]}))
        );
        assert_eq!(read("[]"), Ok(json!([])));
        assert_eq!(read("{}"), Ok(json!({})));
        assert_eq!(read("18446744073709551615"), Ok(json!(u64::MAX)));
    }

    #[test]
    fn escapes() {
        assert_eq!(read(r"'it\'s'"), Ok(json!("it's")));
        assert_eq!(read(r#""a\"b\n\t\\""#), Ok(json!("a\"b\n\t\\")));
        assert_eq!(read(r"'\x41\u00e9\ud83d\ude00'"), Ok(json!("Aé😀")));
        assert_eq!(read(r"'\ud83d'"), Ok(json!("\u{fffd}")));
        assert_eq!(read(r"'C:\path'"), Ok(json!("C:\\path")));
        assert_eq!(read("'a\\\nb'"), Ok(json!("ab")));
        assert_eq!(read("'文字, \"q\"'"), Ok(json!("文字, \"q\"")));
    }

    #[test]
    fn refusals_say_where() {
        for (text, offset) in [
            ("[Sam, Alice]", 1),
            ("[1, 2", 5),
            ("[1 2]", 3),
            ("[,]", 1),
            ("[1,,2]", 3),
            ("{'a' 1}", 5),
            ("{1: 2}", 1),
            ("'open", 0),
            ("[1] x", 4),
            ("", 0),
            ("[NaN]", 1),
            ("[1e400]", 1),
            ("[-]", 1),
            ("[0x10]", 2),
            (r"'\u12'", 1),
        ] {
            match read(text) {
                Err(LiteralError::Syntax { offset: at, .. }) => {
                    assert_eq!(at, offset, "{text:?}")
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn depth_is_bounded() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(read(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(read(&deep), Err(LiteralError::TooDeep));
        assert_eq!(read(&"[{'a':".repeat(10_000)), Err(LiteralError::TooDeep));
        assert_eq!(
            LiteralError::TooDeep.to_string(),
            "arrays and objects nested deeper than 64 levels"
        );
    }

    #[test]
    fn never_panics_on_cut_text() {
        let text = "{'a': [1, 'x\\u00e9\\ud83d\\ude00', {b: None}], \"c\": -1.5e3,}";
        for end in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let _ = read(&text[..end]);
        }
    }
}
