//! Writes calls as TAM text, for round trips and for examples in prompts.

use std::fmt;

use crate::decoder::{Dialect, ESCAPE_CLOSE, ESCAPE_OPEN, VALUE_CLOSE, VALUE_OPEN};
use crate::entry::{canonical_key, command_number};

/// Why calls cannot be written so that they decode back to themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RenderError {
    /// The key is empty (or only `_`/`-`), holds whitespace, `:`, `：` or `「`, begins with
    /// `#`, or holds a block marker.
    InvalidKey(String),
    /// The key would be read as the command (`command`, `commandN`; `tool_name` in VCP).
    ReservedKey(String),
    /// In a chain, a key ending in a digit (or in `_`/`-`, which the chain suffix strips)
    /// would not read back as written.
    AmbiguousKey(String),
    /// Two keys of one call have the same canonical form.
    DuplicateKey(String),
    /// The tool id is blank or has surrounding whitespace (it is trimmed when read).
    InvalidTool(String),
    /// The value contains both `「末」` and `「末ESCAPE」`: no form can carry it.
    UnrepresentableValue(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::InvalidKey(k) => write!(f, "key '{k}' cannot be written as a TAM key"),
            RenderError::ReservedKey(k) => write!(f, "key '{k}' would be read as the command"),
            RenderError::AmbiguousKey(k) => {
                write!(
                    f,
                    "key '{k}' ends in a digit, '_' or '-', which is ambiguous in a chain"
                )
            }
            RenderError::DuplicateKey(k) => write!(f, "key '{k}' is given twice (canonically)"),
            RenderError::InvalidTool(t) => write!(f, "tool id '{t}' is blank or not trimmed"),
            RenderError::UnrepresentableValue(key) => write!(
                f,
                "value of '{key}' contains both {VALUE_CLOSE} and {ESCAPE_CLOSE}"
            ),
        }
    }
}

impl std::error::Error for RenderError {}

fn push_entry(out: &mut String, key: &str, value: &str) -> Result<(), RenderError> {
    let (open, close) = if value.contains(VALUE_CLOSE) {
        if value.contains(ESCAPE_CLOSE) {
            return Err(RenderError::UnrepresentableValue(key.to_owned()));
        }
        (ESCAPE_OPEN, ESCAPE_CLOSE)
    } else {
        (VALUE_OPEN, VALUE_CLOSE)
    };
    out.push_str(key);
    out.push(':');
    out.push_str(open);
    out.push_str(value);
    out.push_str(close);
    out.push('\n');
    Ok(())
}

fn check_key(key: &str, dialect: Dialect, chained: bool) -> Result<String, RenderError> {
    let bad_char = |c: char| c.is_whitespace() || c == ':' || c == '：' || c == '「';
    if key.is_empty()
        || key.chars().any(bad_char)
        || key.starts_with('#')
        || key.contains(dialect.start_marker())
        || key.contains(dialect.end_marker())
    {
        return Err(RenderError::InvalidKey(key.to_owned()));
    }
    let canonical = canonical_key(key);
    if canonical.is_empty() {
        return Err(RenderError::InvalidKey(key.to_owned()));
    }
    let reserved = match dialect {
        Dialect::Tam => command_number(&canonical).is_some(),
        Dialect::Vcp => canonical == "toolname",
    };
    if reserved {
        return Err(RenderError::ReservedKey(key.to_owned()));
    }
    if chained && (canonical.ends_with(|c: char| c.is_ascii_digit()) || key.ends_with(['_', '-'])) {
        return Err(RenderError::AmbiguousKey(key.to_owned()));
    }
    Ok(canonical)
}

fn push_call<'a>(
    out: &mut String,
    tool: &str,
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
    dialect: Dialect,
    chain: Option<usize>,
) -> Result<(), RenderError> {
    if tool.trim().is_empty() || tool.trim() != tool {
        return Err(RenderError::InvalidTool(tool.to_owned()));
    }
    let suffix = chain.map(|n| n.to_string()).unwrap_or_default();
    let command = match dialect {
        Dialect::Tam => format!("command{suffix}"),
        Dialect::Vcp => "tool_name".to_owned(),
    };
    push_entry(out, &command, tool)?;
    let mut seen = Vec::new();
    for (key, value) in params {
        let canonical = check_key(key, dialect, chain.is_some())?;
        if seen.contains(&canonical) {
            return Err(RenderError::DuplicateKey(key.to_owned()));
        }
        seen.push(canonical);
        push_entry(out, &format!("{key}{suffix}"), value)?;
    }
    Ok(())
}

/// Writes one call as a block of `dialect`. The ESCAPE value form is used for values that
/// contain `「末」`. Decoding the result gives back exactly `tool` and `params`.
pub fn render_call<'a>(
    tool: &str,
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
    dialect: Dialect,
) -> Result<String, RenderError> {
    let mut out = String::new();
    out.push_str(dialect.start_marker());
    out.push('\n');
    push_call(&mut out, tool, params, dialect, None)?;
    out.push_str(dialect.end_marker());
    Ok(out)
}

/// Writes calls to run in order: for TAM one block with `command1`, `command2`, … (one
/// call is written unsuffixed, as [`render_call`] does); for VCP, which has no chains, one
/// block per call, separated by a line break.
pub fn render_block<'a, P>(
    calls: impl IntoIterator<Item = (&'a str, P)>,
    dialect: Dialect,
) -> Result<String, RenderError>
where
    P: IntoIterator<Item = (&'a str, &'a str)>,
{
    let calls: Vec<(&str, P)> = calls.into_iter().collect();
    if calls.len() == 1 || dialect == Dialect::Vcp {
        let mut blocks = Vec::with_capacity(calls.len());
        for (tool, params) in calls {
            blocks.push(render_call(tool, params, dialect)?);
        }
        return Ok(blocks.join("\n"));
    }
    let mut out = String::new();
    out.push_str(dialect.start_marker());
    out.push('\n');
    for (i, (tool, params)) in calls.into_iter().enumerate() {
        push_call(&mut out, tool, params, dialect, Some(i + 1))?;
    }
    out.push_str(dialect.end_marker());
    Ok(out)
}
