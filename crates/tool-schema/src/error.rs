//! The crate's error type and the collection of parameter problems one call can have.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::ToolId;

/// Everything that can go wrong in this crate.
///
/// Loading and schema errors follow the usual lowercase style and name the file, the field
/// and the reason. Parameter problems ([`Error::UnknownParameter`] and the variants after
/// it) are fed back to the model verbatim, so they are worded as the ACTION XML seed words
/// them (`Unknown parameter 'playerId', did you mean 'player_id'?`); they reach callers
/// collected in [`ValidationErrors`]. A parameter `path` is the declared name, with `.key`
/// and `[index]` for nested values (`args.file[1].path`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool id that cannot be used.
    #[error("invalid tool id '{id}': {reason}")]
    InvalidToolId {
        /// The id as given.
        id: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A file that is not valid JSON or YAML.
    #[error("{file}: {message}")]
    Syntax {
        /// The source name given to the loader (usually the file name).
        file: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A field of a definition file that is missing or has an unusable value.
    #[error("{file}{}: {field}: {reason}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
    InvalidField {
        /// The source name given to the loader (usually the file name).
        file: String,
        /// The 1-based line where the field was written — for a missing field, where the
        /// object that lacks it begins. Known for `plugin.yaml` (serde-saphyr keeps
        /// positions); `None` for the JSON formats, whose parser does not.
        line: Option<u32>,
        /// The field, as a path from the document root (`tools[0].implementation.type`).
        field: String,
        /// Why it is wrong.
        reason: String,
    },
    /// A file that could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A tool whose parameter schema cannot be compiled.
    #[error("invalid parameter schema for {tool}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: ToolId,
        /// Why the schema was rejected.
        reason: String,
    },
    /// An argument whose key matches no declared parameter.
    #[error(
        "Unknown parameter '{path}'{}",
        suggestion.as_ref().map(|s| format!(", did you mean '{s}'?")).unwrap_or_default()
    )]
    UnknownParameter {
        /// The key as written (prefixed by its parent's path when nested).
        path: String,
        /// The declared parameter the key most likely meant.
        suggestion: Option<String>,
    },
    /// A required parameter that was not given and has no default.
    #[error("Missing required parameter '{path}'")]
    MissingParameter {
        /// The declared parameter.
        path: String,
    },
    /// Two keys that name the same parameter (`filePath` and `file_path` in canonical mode).
    #[error("Parameter '{path}' is given twice, as '{first}' and as '{second}'")]
    DuplicateParameter {
        /// The declared parameter.
        path: String,
        /// The first key as written.
        first: String,
        /// The second key as written.
        second: String,
    },
    /// A value that has, and cannot be converted to, a type the schema allows.
    #[error("Parameter '{path}' must be {expected}, got {}", ValuePreview(found))]
    WrongType {
        /// The parameter.
        path: String,
        /// The allowed types in words (`an integer`, `a string or null`).
        expected: String,
        /// The value as given (boxed: a `Value` would double the size of every `Error`).
        found: Box<Value>,
    },
    /// Text meant as an array or object (it closes its bracket, or nests too deep) that
    /// cannot be read as JSON nor as a Python or JavaScript literal.
    #[error(
        "Parameter '{path}' must be {expected}, got {} ({reason})",
        ValuePreview(found)
    )]
    UnreadableValue {
        /// The parameter.
        path: String,
        /// The allowed types in words (`an array`, `an object or null`).
        expected: String,
        /// The value as given.
        found: Box<Value>,
        /// Why it could not be read: `unquoted word at byte 1`, or
        /// `arrays and objects nested deeper than 64 levels`.
        reason: String,
    },
    /// A value outside the parameter's `enum`.
    #[error(
        "Parameter '{path}' must be one of {}, got {}",
        ValueList(allowed),
        ValuePreview(found)
    )]
    NotInEnum {
        /// The parameter.
        path: String,
        /// The enum.
        allowed: Vec<Value>,
        /// The value after coercion.
        found: Box<Value>,
    },
    /// A value that breaks a schema rule the coercion walk does not cover (`minimum`,
    /// `pattern`, …), as reported by the `jsonschema` crate.
    #[error("Parameter '{path}' is invalid: {message}")]
    SchemaViolation {
        /// The parameter (`arguments` for the whole argument object).
        path: String,
        /// The validator's message.
        message: String,
    },
}

/// Every parameter problem found in one call, for one tool, with the call's arguments as
/// far as they could be typed.
///
/// `Display` renders the problems as one line for an observation:
/// `Invalid parameters for GetPlayerInfo: Unknown parameter 'playerId', did you mean 'player_id'?`
/// (several problems are joined with `; `).
///
/// A strict caller (a dispatcher about to run the tool) refuses the call on any problem; a
/// lenient one (a proxy handing the call on to a client that validates again) takes
/// [`arguments`](Self::arguments).
#[derive(Debug)]
pub struct ValidationErrors {
    tool: ToolId,
    errors: Vec<Error>,
    /// Boxed so that `Result<Map, ValidationErrors>` stays small.
    arguments: Box<Map<String, Value>>,
}

impl ValidationErrors {
    pub(crate) fn new(
        tool: ToolId,
        errors: Vec<Error>,
        arguments: Map<String, Value>,
    ) -> ValidationErrors {
        ValidationErrors {
            tool,
            errors,
            arguments: Box::new(arguments),
        }
    }

    /// The tool the arguments were meant for.
    pub fn tool(&self) -> &ToolId {
        &self.tool
    }

    /// The problems, never empty: unknown and repeated keys in argument order, then the
    /// problems of each declared parameter in declaration order, then (only when there
    /// were none of those) the validator's findings.
    pub fn errors(&self) -> &[Error] {
        &self.errors
    }

    /// The problems, by value.
    pub fn into_errors(self) -> Vec<Error> {
        self.errors
    }

    /// The arguments as far as they could be typed: what
    /// [`CompiledTool::coerce`](crate::CompiledTool::coerce) would have returned, except
    /// that
    /// - a top-level argument with a problem anywhere inside it (wrong type, unreadable,
    ///   outside its enum, a nested unknown or missing key) stays exactly as written,
    ///   under its declared name;
    /// - an unknown top-level key stays, with its value as written, after the declared
    ///   parameters (the first of a repeated one);
    /// - of a parameter given twice, the first value is kept (typed) and the second left
    ///   out (it is reported);
    /// - a missing required parameter is absent.
    ///
    /// When the only problems are the validator's (`minimum`, `pattern`, …), every
    /// argument is typed.
    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }

    /// The arguments as far as they could be typed (see [`arguments`](Self::arguments)),
    /// by value.
    pub fn into_arguments(self) -> Map<String, Value> {
        *self.arguments
    }

    /// The arguments as far as they could be typed and the problems, by value.
    pub fn into_parts(self) -> (Map<String, Value>, Vec<Error>) {
        (*self.arguments, self.errors)
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Invalid parameters for {}: ", self.tool)?;
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// Longest string shown in full in a message; longer ones are cut at a char boundary.
const PREVIEW_CHARS: usize = 60;

/// A value as a message shows it: strings quoted and cut short, others as JSON.
struct ValuePreview<'a>(&'a Value);

impl fmt::Display for ValuePreview<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::String(text) => match text.char_indices().nth(PREVIEW_CHARS) {
                Some((cut, _)) => write!(f, "'{}…'", &text[..cut]),
                None => write!(f, "'{text}'"),
            },
            Value::Object(_) => f.write_str("an object"),
            Value::Array(_) => f.write_str("an array"),
            other @ (Value::Null | Value::Bool(_) | Value::Number(_)) => write!(f, "{other}"),
        }
    }
}

/// Enum values as a message lists them: `'a', 'b', 3`.
struct ValueList<'a>(&'a [Value]);

impl fmt::Display for ValueList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, value) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", ValuePreview(value))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_stay_small_enough_to_return_by_value() {
        // Every `Result<_, Error>` in this crate and its users carries this size.
        assert!(
            std::mem::size_of::<Error>() <= 96,
            "{}",
            std::mem::size_of::<Error>()
        );
    }
}
