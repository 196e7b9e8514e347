//! Spans and diagnostics shared by every decoder in the workspace.

use std::fmt;

use bytestring::ByteString;

/// Byte offsets `[start, end)` in the concatenated stream (all deltas fed so far).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// A key given twice for one call; the last value wins (warning).
    pub const DUPLICATE_PARAMETER: Code = Code("duplicate_parameter");
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
    /// A start marker that began no tool block: the block never closed and held no
    /// complete entry, so its bytes, marker included, were emitted as text (warning; the
    /// span is the marker's).
    pub const MARKER_IN_PROSE: Code = Code("marker_in_prose");
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
