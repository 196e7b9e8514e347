//! Spans and diagnostics shared by every decoder in the workspace.

use std::fmt;

use bytestring::ByteString;

/// Byte offsets `[start, end)` in the concatenated stream (all deltas fed so far).
///
/// With feature `serde`: the pair `[start, end]`; deserializing refuses `start > end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `[start, end)`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// Number of bytes covered.
    pub const fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when the span covers no byte.
    pub const fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// How bad a [`Diagnostic`] is.
///
/// With feature `serde`: `"warning"` or `"error"` ([`Severity::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Severity {
    /// The input was understood, possibly after a repair.
    Warning,
    /// Part of the input could not be used.
    Error,
}

impl Severity {
    /// `"warning"` or `"error"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stable, machine-readable diagnostic code such as `unterminated_block`.
///
/// Codes are plain strings so that every protocol crate can define its own next to the
/// ones here (`action-xml` adds `malformed_xml`, …) while all share one [`Diagnostic`]
/// type. Tests and clients match on [`Code::as_str`] or on the constants.
///
/// With feature `serde`: the name as a string. A `Code` holds a `&'static str`, so
/// deserializing a name that is not one of this crate's constants interns it: each
/// distinct name is allocated once for the life of the process. Only names of 1 to 64
/// bytes of `a`–`z`, `0`–`9` and `_` are accepted, and at most 1024 distinct ones are
/// interned (about 64 KiB at worst); past that, deserialization fails rather than grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(&'static str);

impl Code {
    /// A code from its stable name (snake_case).
    pub const fn new(name: &'static str) -> Self {
        Code(name)
    }

    /// The stable name, e.g. `"stray_text"`.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// Text inside a block that is neither an entry, a comment nor a marker (warning).
    pub const STRAY_TEXT: Code = Code("stray_text");
    /// A value contains `「始」`: probably a `「末」` is missing before it (warning).
    pub const VALUE_CONTAINS_OPEN_MARKER: Code = Code("value_contains_open_marker");
    /// A block was never closed (error); the diagnostic carries the block's raw text.
    pub const UNTERMINATED_BLOCK: Code = Code("unterminated_block");
    /// The stream ended inside a value; the value was closed before the block's last end
    /// marker (warning).
    pub const MISSING_VALUE_CLOSE: Code = Code("missing_value_close");
    /// A chained-call parameter whose call does not exist (error).
    pub const ORPHAN_PARAMETER: Code = Code("orphan_parameter");
    /// A key given twice for one call; the last value wins (warning). In a block
    /// without chain numbers this happens only before the block's first command.
    pub const DUPLICATE_PARAMETER: Code = Code("duplicate_parameter");
    /// A block without chain numbers repeats a key, which starts a new call: a second
    /// `command` (a call of the tool it names) or a parameter key the current call already
    /// has (another call of the current call's tool) (warning; the span is the key's).
    pub const IMPLICIT_CALL: Code = Code("implicit_call");
    /// A command whose value is blank; the call is dropped (error).
    pub const EMPTY_COMMAND: Code = Code("empty_command");
    /// A block without any command; the block has no calls (error).
    pub const MISSING_COMMAND: Code = Code("missing_command");
    /// A block larger than the configured limit; its bytes were dropped (error).
    pub const BLOCK_TOO_LARGE: Code = Code("block_too_large");
    /// More calls in a block than the configured limit; the rest were dropped (error).
    pub const TOO_MANY_CALLS: Code = Code("too_many_calls");
    /// A key longer than the configured limit; the entry was dropped (error).
    pub const KEY_TOO_LONG: Code = Code("key_too_long");
    /// A start marker that began no tool block (warning; the span is the marker's): the
    /// model quoted it (inside inline code, on a line quoted with `>`), the block never
    /// closed and held no complete entry, or it closed holding no entry at all. Its bytes,
    /// marker included, were emitted as text.
    pub const MARKER_IN_PROSE: Code = Code("marker_in_prose");
    /// The block was written inside a fenced code block (```` ``` ````); it was read as a
    /// call all the same (warning, in the block's diagnostics; the span is the fence's
    /// opening line).
    pub const FENCED_BLOCK: Code = Code("fenced_block");
    /// A value written between bare corner brackets, `KEY:「VALUE」`, without `始`/`末`;
    /// it was read as the value (warning).
    pub const BARE_BRACKETS: Code = Code("bare_brackets");
    /// Bytes that are not UTF-8 (error); they are carried in the diagnostic.
    pub const INVALID_UTF8: Code = Code("invalid_utf8");
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A structured warning or error about the model's output.
///
/// `message` is meant for the model or a human; `code` is stable and meant for programs.
/// `raw` carries the model's text the diagnostic is about when that text is not emitted
/// anywhere else (an unterminated block, stray text, an orphan entry), so nothing the model
/// wrote is silently dropped.
///
/// With feature `serde`: `{"severity", "code", "message", "span", "raw"}` (the `tam decode`
/// diagnostic line without its `type`), `raw` left out when there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Diagnostic {
    /// Warning or error.
    pub severity: Severity,
    /// Stable machine-readable code.
    pub code: Code,
    /// Human-readable explanation, lowercase, without trailing period.
    pub message: String,
    /// Where in the stream the problem is.
    pub span: Span,
    /// The model's text the diagnostic is about, when it is not emitted elsewhere.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub raw: Option<ByteString>,
}

impl Diagnostic {
    /// A warning.
    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            span,
            raw: None,
        }
    }

    /// An error.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            raw: None,
        }
    }

    /// The same diagnostic carrying `raw`.
    pub fn with_raw(mut self, raw: impl Into<ByteString>) -> Self {
        self.raw = Some(raw.into());
        self
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} at {}: {}",
            self.severity, self.code, self.span, self.message
        )
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(feature = "serde")]
mod serde_impls {
    //! The hand-written serde forms: [`Span`] as a pair, [`Code`] as its name.

    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};

    use serde::de::{self, Deserialize, Deserializer, Visitor};
    use serde::ser::{Serialize, SerializeTuple, Serializer};

    use super::{Code, Span};

    impl Serialize for Span {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut pair = serializer.serialize_tuple(2)?;
            pair.serialize_element(&self.start)?;
            pair.serialize_element(&self.end)?;
            pair.end()
        }
    }

    impl<'de> Deserialize<'de> for Span {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let (start, end) = <(usize, usize)>::deserialize(deserializer)?;
            if start > end {
                return Err(de::Error::custom(format_args!(
                    "span [{start}, {end}] starts after its end"
                )));
            }
            Ok(Span { start, end })
        }
    }

    impl Serialize for Code {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_str(self.0)
        }
    }

    impl<'de> Deserialize<'de> for Code {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_str(CodeVisitor)
        }
    }

    struct CodeVisitor;

    impl Visitor<'_> for CodeVisitor {
        type Value = Code;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a diagnostic code: 1 to 64 bytes of a-z, 0-9 and _")
        }

        fn visit_str<E: de::Error>(self, name: &str) -> Result<Code, E> {
            code_named(name).map_err(E::custom)
        }
    }

    /// This crate's codes: deserialized without interning.
    const KNOWN: [Code; 16] = [
        Code::STRAY_TEXT,
        Code::VALUE_CONTAINS_OPEN_MARKER,
        Code::UNTERMINATED_BLOCK,
        Code::MISSING_VALUE_CLOSE,
        Code::ORPHAN_PARAMETER,
        Code::DUPLICATE_PARAMETER,
        Code::IMPLICIT_CALL,
        Code::EMPTY_COMMAND,
        Code::MISSING_COMMAND,
        Code::BLOCK_TOO_LARGE,
        Code::TOO_MANY_CALLS,
        Code::KEY_TOO_LONG,
        Code::MARKER_IN_PROSE,
        Code::FENCED_BLOCK,
        Code::BARE_BRACKETS,
        Code::INVALID_UTF8,
    ];

    /// Longest name accepted, in bytes.
    const MAX_NAME_LEN: usize = 64;
    /// Most distinct names interned per process.
    const MAX_INTERNED: usize = 1024;

    /// The code named `name`: one of [`KNOWN`], or an interned name.
    fn code_named(name: &str) -> Result<Code, String> {
        if let Some(code) = KNOWN.iter().find(|c| c.0 == name) {
            return Ok(*code);
        }
        let valid = !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(format!(
                "invalid diagnostic code {name:?}: expected 1 to {MAX_NAME_LEN} bytes of a-z, 0-9 and _"
            ));
        }
        static INTERNED: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
        let mut interned = INTERNED
            .get_or_init(Mutex::default)
            .lock()
            // The set is valid whatever a panicking holder did: it only ever grows.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(known) = interned.get(name) {
            return Ok(Code(known));
        }
        if interned.len() >= MAX_INTERNED {
            return Err(format!(
                "diagnostic code {name:?} refused: {MAX_INTERNED} distinct unknown codes were already read"
            ));
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        interned.insert(leaked);
        Ok(Code(leaked))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn known_codes_are_not_interned_and_names_are_checked() {
            assert_eq!(code_named("stray_text"), Ok(Code::STRAY_TEXT));
            let a = code_named("some_other_code_7").unwrap();
            let b = code_named("some_other_code_7").unwrap();
            assert_eq!(a.as_str(), "some_other_code_7");
            // Interned once: both are the same allocation.
            assert!(std::ptr::eq(a.as_str(), b.as_str()));
            for bad in ["", "Upper", "with space", "dash-ed", &"x".repeat(65)] {
                assert!(code_named(bad).is_err(), "{bad:?} accepted");
            }
            // The interner stops at its limit (the only test of this binary that interns).
            let mut refused = None;
            for i in 0..=MAX_INTERNED {
                if let Err(e) = code_named(&format!("filler_{i}")) {
                    refused = Some((i, e));
                    break;
                }
            }
            let (at, error) = refused.expect("the interner never refused");
            assert_eq!(at, MAX_INTERNED - 1, "one slot went to some_other_code_7");
            assert!(error.contains("refused"), "{error}");
            // Names already interned and this crate's codes still read.
            assert_eq!(code_named("some_other_code_7"), Ok(a));
            assert_eq!(code_named("filler_0").unwrap().as_str(), "filler_0");
            assert_eq!(code_named("invalid_utf8"), Ok(Code::INVALID_UTF8));
        }
    }
}

/// The first `max_chars` characters of `text`, with `…` after them when `text` was longer:
/// how diagnostics and error messages quote the model's text (callers trim it first when
/// the edges are not worth showing).
///
/// ```
/// assert_eq!(tam_parse::preview("日本語のテキスト", 3), "日本語…");
/// assert_eq!(tam_parse::preview("short", 60), "short");
/// ```
pub fn preview(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
