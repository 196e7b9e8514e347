//! Reading fields of a parsed definition file, with errors that name the file and field.

use serde_json::{Map, Value};

use crate::keys::suggest;
use crate::{Error, ToolId};

/// A JSON object inside a definition file, with the path that leads to it.
pub(crate) struct Fields<'a> {
    pub(crate) file: &'a str,
    pub(crate) path: String,
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// The document root, which must be an object.
    pub(crate) fn root(file: &'a str, document: &'a Value) -> Result<Fields<'a>, Error> {
        match document {
            Value::Object(map) => Ok(Fields {
                file,
                path: String::new(),
                map,
            }),
            other @ (Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_)) => Err(Error::InvalidField {
                line: None,
                file: file.to_owned(),
                field: "(document)".to_owned(),
                reason: format!("expected an object, found {}", kind(other)),
            }),
        }
    }

    /// The path of `key` inside this object.
    pub(crate) fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn error(&self, field: String, reason: impl Into<String>) -> Error {
        Error::InvalidField {
            line: None,
            file: self.file.to_owned(),
            field,
            reason: reason.into(),
        }
    }

    fn wrong_kind(&self, key: &str, expected: &str, found: &Value) -> Error {
        self.error(
            self.field(key),
            format!("expected {expected}, found {}", kind(found)),
        )
    }

    /// `key`'s value; absent and `null` are both `None`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|value| !value.is_null())
    }

    pub(crate) fn optional_str(&self, key: &str) -> Result<Option<&'a str>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.wrong_kind(key, "a string", other)),
        }
    }

    pub(crate) fn required_str(&self, key: &str) -> Result<&'a str, Error> {
        self.optional_str(key)?
            .ok_or_else(|| self.error(self.field(key), "missing required field"))
    }

    pub(crate) fn optional_bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(self.wrong_kind(key, "true or false", other)),
        }
    }

    pub(crate) fn optional_array(&self, key: &str) -> Result<Option<&'a [Value]>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.wrong_kind(key, "an array", other)),
        }
    }

    pub(crate) fn optional_object(&self, key: &str) -> Result<Option<Fields<'a>>, Error> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                file: self.file,
                path: self.field(key),
                map,
            })),
            Some(other) => Err(self.wrong_kind(key, "an object", other)),
        }
    }

    pub(crate) fn required_object(&self, key: &str) -> Result<Fields<'a>, Error> {
        self.optional_object(key)?
            .ok_or_else(|| self.error(self.field(key), "missing required field"))
    }

    /// Each element of the array at `key`, which must be an object.
    pub(crate) fn objects(&self, key: &str) -> Result<Vec<Fields<'a>>, Error> {
        let items = self.optional_array(key)?.unwrap_or_default();
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let path = format!("{}[{index}]", self.field(key));
                match item {
                    Value::Object(map) => Ok(Fields {
                        file: self.file,
                        path,
                        map,
                    }),
                    other @ (Value::Null
                    | Value::Bool(_)
                    | Value::Number(_)
                    | Value::String(_)
                    | Value::Array(_)) => {
                        Err(self.error(path, format!("expected an object, found {}", kind(other))))
                    }
                }
            })
            .collect()
    }

    /// Each member of the object at `key` (absent or `null`: none).
    pub(crate) fn members(&self, key: &str) -> Result<Vec<(&'a str, Fields<'a>)>, Error> {
        let Some(object) = self.optional_object(key)? else {
            return Ok(Vec::new());
        };
        object
            .map
            .iter()
            .map(|(name, value)| match value {
                Value::Object(map) => Ok((
                    name.as_str(),
                    Fields {
                        file: self.file,
                        path: object.field(name),
                        map,
                    },
                )),
                other @ (Value::Null
                | Value::Bool(_)
                | Value::Number(_)
                | Value::String(_)
                | Value::Array(_)) => Err(object.wrong_kind(name, "an object", other)),
            })
            .collect()
    }

    /// Rejects keys outside `known`, suggesting the closest known key.
    pub(crate) fn reject_unknown_keys(&self, known: &[&str]) -> Result<(), Error> {
        let Some(unknown) = self.map.keys().find(|key| !known.contains(&key.as_str())) else {
            return Ok(());
        };
        let mut reason = match suggest(unknown, known.iter().copied()) {
            Some(candidate) => format!("unknown field, did you mean '{candidate}'?"),
            None => "unknown field".to_owned(),
        };
        reason.push_str(&format!(" (known fields: {})", known.join(", ")));
        Err(self.error(self.field(unknown), reason))
    }
}

/// A JSON value's kind, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Fields<'_> {
    /// The tool id at `key`.
    pub(crate) fn tool_id(&self, key: &str) -> Result<ToolId, Error> {
        let text = self.required_str(key)?;
        parse_tool_id(self.file, self.field(key), text)
    }
}

/// Parses a tool id found in a file, reporting a bad one as a field error.
pub(crate) fn parse_tool_id(file: &str, field: String, text: &str) -> Result<ToolId, Error> {
    ToolId::parse(text).map_err(|error| Error::InvalidField {
        line: None,
        file: file.to_owned(),
        field,
        reason: error.to_string(),
    })
}
