//! Writes calls as ACTION XML that parses back to the same values, for round trips and
//! for examples in prompts.
//!
//! Strings are written as text when they can be, and as CDATA when they hold `<`, `&` or
//! `\r`, or begin or end with whitespace that the parser would trim. `]]>` inside CDATA is
//! split (`]]]]><![CDATA[>`), and the sections are arranged so that the parser's CDATA rule
//! (a line break right after `<![CDATA[` and blanks after the last line break are dropped)
//! gives the string back exactly.
//!
//! Arrays are written as `<item>` children and objects as child elements. XML has no form
//! for the rest, so they read back differently: numbers and booleans are written as their
//! JSON text and read back as strings; `null`, `[]` and `{}` are written as empty elements
//! and read back as `""`. Names (the tool id and every object key) must be XML names;
//! anything else is refused with [`RenderError`], as are strings with characters XML 1.0
//! cannot carry, and a nested object whose only key is `item` (it would read back as an
//! array).

use std::fmt;

use serde_json::{Map, Value};

use crate::xml_chars::{is_name, is_name_start, is_xml_char, trim_xml};

/// Why calls cannot be written so that they parse back to themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RenderError {
    /// The tool id or a key is not an XML name (`a b`, `1st`, `x/y`, `a:b:c`, `xmlns:x`).
    InvalidName(String),
    /// A nested object whose only key is `item` would read back as an array; the string
    /// is the key that holds it.
    AmbiguousItemObject(String),
    /// The string under the key holds a character that XML 1.0 cannot carry (most C0
    /// controls, U+FFFE, U+FFFF).
    UnrepresentableChar {
        /// The key whose value holds it (`item` inside arrays).
        key: String,
        /// The character.
        ch: char,
    },
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::InvalidName(n) => write!(f, "'{n}' is not an XML name"),
            RenderError::AmbiguousItemObject(k) => write!(
                f,
                "value of '{k}' is an object whose only key is 'item', which reads back as an array"
            ),
            RenderError::UnrepresentableChar { key, ch } => {
                write!(f, "value of '{key}' holds {ch:?}, which XML cannot carry")
            }
        }
    }
}

impl std::error::Error for RenderError {}

/// Whether `name` can be written as an ACTION element (a tool id or a parameter key) that
/// reads back as written: an XML name (`get_weather`, `FileOperator.ApplyEdit`,
/// `workflow:summarize_text`) with at most one colon, between a non-empty prefix other than
/// `xmlns` and a local name. `a b`, `1st`, `x/y`, `a:b:c` and `xmlns:x` cannot: a model can
/// never write a call to a tool so named.
///
/// ```
/// assert!(action_xml::is_element_name("workflow:summarize_text"));
/// assert!(!action_xml::is_element_name("get/weather"));
/// ```
pub fn is_element_name(name: &str) -> bool {
    check_name(name).is_ok()
}

/// An element name the parser reads back as written: an XML name with at most one colon,
/// between a non-empty prefix other than `xmlns` and a local name.
fn check_name(name: &str) -> Result<(), RenderError> {
    let ok = is_name(name)
        && match name.split_once(':') {
            None => true,
            Some((prefix, local)) => {
                !prefix.is_empty()
                    && prefix != "xmlns"
                    && !local.contains(':')
                    && local.chars().next().is_some_and(is_name_start)
            }
        };
    if ok {
        Ok(())
    } else {
        Err(RenderError::InvalidName(name.to_owned()))
    }
}

const INDENT: &str = "  ";

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str(INDENT);
    }
}

fn push_string(out: &mut String, key: &str, s: &str) -> Result<(), RenderError> {
    if let Some(ch) = s.chars().find(|&c| !is_xml_char(c)) {
        return Err(RenderError::UnrepresentableChar {
            key: key.to_owned(),
            ch,
        });
    }
    let needs_cdata = s.contains(['<', '&', '\r']) || trim_xml(s).len() != s.len();
    if !needs_cdata {
        out.push_str(&s.replace("]]>", "]]&gt;"));
        return Ok(());
    }
    out.push_str("<![CDATA[");
    if s.starts_with('\n') || s.starts_with("\r\n") {
        // The parser drops a line break right after `<![CDATA[`: this one.
        out.push('\n');
    }
    out.push_str(&s.replace("]]>", "]]]]><![CDATA[>"));
    let kept = s.trim_end_matches([' ', '\t']);
    if kept.len() < s.len() && kept.ends_with('\n') {
        // The parser drops blanks after the last line break of the last section: end with
        // an empty section so that these are not the last.
        out.push_str("]]><![CDATA[");
    }
    out.push_str("]]>");
    Ok(())
}

fn push_element(
    out: &mut String,
    name: &str,
    value: &Value,
    depth: usize,
) -> Result<(), RenderError> {
    indent(out, depth);
    out.push('<');
    out.push_str(name);
    out.push('>');
    match value {
        Value::String(s) => push_string(out, name, s)?,
        Value::Null => {}
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            for item in items {
                push_element(out, "item", item, depth + 1)?;
            }
            indent(out, depth);
        }
        Value::Object(map) if !map.is_empty() => {
            if map.len() == 1 && map.contains_key("item") {
                return Err(RenderError::AmbiguousItemObject(name.to_owned()));
            }
            out.push('\n');
            push_members(out, map, depth + 1)?;
            indent(out, depth);
        }
        Value::Array(_) | Value::Object(_) => {}
    }
    out.push_str("</");
    out.push_str(name);
    out.push_str(">\n");
    Ok(())
}

fn push_members(
    out: &mut String,
    map: &Map<String, Value>,
    depth: usize,
) -> Result<(), RenderError> {
    for (key, value) in map {
        check_name(key)?;
        push_element(out, key, value, depth)?;
    }
    Ok(())
}

fn push_call(
    out: &mut String,
    tool: &str,
    args: &Map<String, Value>,
    depth: usize,
) -> Result<(), RenderError> {
    check_name(tool)?;
    indent(out, depth);
    out.push('<');
    out.push_str(tool);
    out.push_str(">\n");
    push_members(out, args, depth + 1)?;
    indent(out, depth);
    out.push_str("</");
    out.push_str(tool);
    out.push_str(">\n");
    Ok(())
}

/// One call as an element, `<tool>` with one child per argument, ending in a line break.
///
/// ```
/// use serde_json::json;
/// let args = json!({"path": "src/main.rs", "code": "if a < b {}"});
/// let xml = action_xml::render_call("write_file", args.as_object().unwrap()).unwrap();
/// assert_eq!(xml, "<write_file>\n  <path>src/main.rs</path>\n  <code><![CDATA[if a < b {}]]></code>\n</write_file>\n");
/// ```
pub fn render_call(tool: &str, args: &Map<String, Value>) -> Result<String, RenderError> {
    let mut out = String::new();
    push_call(&mut out, tool, args, 0)?;
    Ok(out)
}

/// A whole `<ACTION>` block holding `calls` (tool id and arguments each), ending in a line
/// break.
pub fn render_action<'c>(
    calls: impl IntoIterator<Item = (&'c str, &'c Map<String, Value>)>,
) -> Result<String, RenderError> {
    let mut out = String::from("<ACTION>\n");
    for (tool, args) in calls {
        push_call(&mut out, tool, args, 1)?;
    }
    out.push_str("</ACTION>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value_xml(v: &str) -> String {
        let mut out = String::new();
        push_string(&mut out, "k", v).unwrap();
        out
    }

    #[test]
    fn strings() {
        assert_eq!(value_xml("plain"), "plain");
        assert_eq!(value_xml("a]]>b"), "a]]&gt;b");
        assert_eq!(value_xml("a&b"), "<![CDATA[a&b]]>");
        assert_eq!(value_xml("x]]>y<"), "<![CDATA[x]]]]><![CDATA[>y<]]>");
        assert_eq!(value_xml("\nx"), "<![CDATA[\n\nx]]>");
        assert_eq!(value_xml("x\n  "), "<![CDATA[x\n  ]]><![CDATA[]]>");
        assert_eq!(value_xml(" "), "<![CDATA[ ]]>");
    }

    #[test]
    fn names_are_checked() {
        let args = json!({"a b": 1});
        assert_eq!(
            render_call("t", args.as_object().unwrap()),
            Err(RenderError::InvalidName("a b".into()))
        );
        assert!(render_call("workflow:summarize_text", &Map::new()).is_ok());
        for bad in ["a:b:c", ":a", "xmlns:a", "a:1", "x/y", ""] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let args = json!({"k": {"item": 1}});
        assert_eq!(
            render_call("t", args.as_object().unwrap()),
            Err(RenderError::AmbiguousItemObject("k".into()))
        );
        let args = json!({"k": "\u{1}"});
        assert!(matches!(
            render_call("t", args.as_object().unwrap()),
            Err(RenderError::UnrepresentableChar { ch: '\u{1}', .. })
        ));
    }
}
