//! A tool with its parameter schema compiled once, ready to check many calls.

use jsonschema::paths::LocationSegment;
use serde_json::{Map, Value};

use crate::coerce::{Coercion, ValuePath};
use crate::shape::{ExtraKeys, ObjectShape, TypeSet};
use crate::{Error, KeyMatch, ToolDefinition, ToolId, ValidationErrors};

/// A [`ToolDefinition`] with its parameter schema compiled: the coercion tree and the
/// `jsonschema` validator are built once in [`CompiledTool::new`] and reused by every
/// [`CompiledTool::coerce`]. It is `Send + Sync`, so a registry can share it.
#[derive(Debug)]
pub struct CompiledTool {
    definition: ToolDefinition,
    parameters: ObjectShape,
    validator: jsonschema::Validator,
}

impl CompiledTool {
    /// Compiles the definition's parameter schema.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] when `parameters` is not a JSON object, declares a `type`
    /// other than `object`, or is not a valid JSON Schema.
    pub fn new(definition: ToolDefinition) -> Result<CompiledTool, Error> {
        let invalid = |reason: String| Error::InvalidSchema {
            tool: definition.id.clone(),
            reason,
        };
        if !definition.parameters.is_object() {
            return Err(invalid(
                "the parameter schema must be a JSON object".to_owned(),
            ));
        }
        let shape = crate::coerce::read_shape(&definition.parameters);
        if !(shape.types.is_any() || shape.types == TypeSet::OBJECT) {
            return Err(invalid(format!(
                "the parameter schema must have type 'object', not '{}'",
                shape.types.label()
            )));
        }
        let validator = jsonschema::validator_for(&definition.parameters)
            .map_err(|error| invalid(error.to_string()))?;
        let parameters = shape.object.unwrap_or(ObjectShape {
            properties: Vec::new(),
            extra: ExtraKeys::Keep,
        });
        Ok(CompiledTool {
            definition,
            parameters,
            validator,
        })
    }

    /// The definition this tool was compiled from.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The tool's id.
    pub fn id(&self) -> &ToolId {
        &self.definition.id
    }

    /// Whether text for the parameter `key` (its declared name, exactly) that begins with
    /// `prefix` may, once it ends, be coerced to something other than the text itself: one
    /// quoted literal (`'Apple Inc.'` is `Apple Inc.`, [`quoted_text`](crate::quoted_text)),
    /// or `None`/`null` for an optional parameter that does not take null (left out). A
    /// reader that streams string arguments while they are written holds a value back
    /// while this is `true`: what it streamed is then always the coerced value. When it
    /// is `false`, no continuation of `prefix` changes (for a parameter declared a string).
    /// It is `false` for a prefix longer than [`MAX_QUOTED_LEN`](crate::MAX_QUOTED_LEN)
    /// bytes: a reader holds at most that much, and each call looks at no more.
    pub fn text_may_change(&self, key: &str, prefix: &str) -> bool {
        if crate::quoted::may_be_quoted_text(prefix) {
            return true;
        }
        self.parameters
            .properties
            .iter()
            .find(|property| property.name == key)
            .is_some_and(|property| {
                crate::coerce::may_be_absent(property) && crate::coerce::may_say_absent(prefix)
            })
    }

    /// Whether `text`, written as the value of the parameter `key` (matched as `keys`
    /// says), is one item of a list: the parameter is declared an array (and nothing
    /// else), and the text reads as exactly one item of it — not a bracketed literal, not
    /// a comma-separated list, which are whole arrays as written.
    ///
    /// A TAM reader uses it to tell a key the model repeats to list an array's items
    /// (`information:「始」Elevation「末」`, then `information:「始」Area「末」`) from a key repeated
    /// to start another call, as ACTION reads `<information>` written twice.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_schema::{CompiledTool, KeyMatch, ToolDefinition};
    ///
    /// let tool: ToolDefinition = serde_json::from_value(json!({
    ///     "id": "park_information",
    ///     "parameters": {"type": "object", "properties": {
    ///         "park_name": {"type": "string"},
    ///         "information": {"type": "array", "items": {"type": "string"}},
    ///         "sizes": {"type": "array", "items": {"type": "integer"}}}},
    ///     "implementation": {"type": "service"}
    /// })).unwrap();
    /// let tool = CompiledTool::new(tool).unwrap();
    /// assert!(tool.is_one_item("information", KeyMatch::Exact, "Elevation"));
    /// assert!(tool.is_one_item("Information", KeyMatch::Canonical, "Elevation"));
    /// assert!(!tool.is_one_item("information", KeyMatch::Exact, "['Elevation', 'Area']"));
    /// assert!(!tool.is_one_item("sizes", KeyMatch::Exact, "3, 5"));
    /// assert!(tool.is_one_item("sizes", KeyMatch::Exact, "3"));
    /// assert!(!tool.is_one_item("park_name", KeyMatch::Exact, "Yellowstone"));
    /// assert!(!tool.is_one_item("nothing", KeyMatch::Exact, "x"));
    /// ```
    pub fn is_one_item(&self, key: &str, keys: KeyMatch, text: &str) -> bool {
        let mut matcher = Coercion::new(keys);
        let Some(index) = matcher.find(&self.parameters.properties, key) else {
            return false;
        };
        let shape = &self.parameters.properties[index].shape;
        if shape.types != TypeSet::ARRAY || text.trim_start().starts_with('[') {
            return false;
        }
        matches!(
            crate::coerce::convert(shape, Value::String(text.to_owned())),
            Ok(Value::Array(items)) if items.len() == 1
        )
    }

    /// Turns one call's arguments into the object the tool expects.
    ///
    /// `arguments` are `(key, value)` pairs in the order the model wrote them: a
    /// `serde_json::Map`, or pairs with `Value::String` values from TAM. Each key is matched
    /// to a declared parameter as `keys` says; each value is coerced to its schema (text to
    /// integer, number, boolean, null, object or array, read as JSON or as a Python or
    /// JavaScript literal; a comma-separated list for an array of numbers or booleans; a
    /// single value to a one-element array; a number or boolean to text for a string
    /// parameter), recursively through `properties` and `items`; `enum` is checked and
    /// `default`s fill absent parameters (the crate docs list every rule). The result, keyed
    /// by declared names in declaration order, is then checked against the full schema with
    /// the cached `jsonschema` validator.
    ///
    /// Coercion is per argument: an argument that cannot take its type is reported and
    /// stays as written, while every other argument is still typed. The typed arguments
    /// travel with the problems in [`ValidationErrors::arguments`].
    ///
    /// # Errors
    /// Every problem found, not only the first: unknown, duplicate and missing
    /// parameters, values of the wrong type, unreadable or outside their enum, and (when
    /// the walk found none of those) violations of the rest of the schema. The error also
    /// carries the arguments as far as they could be typed.
    pub fn coerce<K, I>(
        &self,
        arguments: I,
        keys: KeyMatch,
    ) -> Result<Map<String, Value>, ValidationErrors>
    where
        K: AsRef<str>,
        I: IntoIterator<Item = (K, Value)>,
    {
        let mut coercion = Coercion::new(keys);
        let coerced = coercion.object(&self.parameters, arguments, &ValuePath::Root);
        let mut errors = coercion.errors;
        if !errors.is_empty() {
            return Err(ValidationErrors::new(self.id().clone(), errors, coerced));
        }
        let coerced = Value::Object(coerced);
        if !self.validator.is_valid(&coerced) {
            errors.extend(self.validator.iter_errors(&coerced).map(|error| {
                Error::SchemaViolation {
                    path: instance_path(error.instance_path().segments()),
                    message: error.to_string(),
                }
            }));
        }
        let Value::Object(coerced) = coerced else {
            unreachable!("the coerced arguments were built as an object")
        };
        if errors.is_empty() {
            Ok(coerced)
        } else {
            Err(ValidationErrors::new(self.id().clone(), errors, coerced))
        }
    }

    /// [`coerce`](Self::coerce) for arguments whose source text is known (ACTION XML keeps
    /// the exact text of each parameter element's content): a top-level argument whose
    /// declared schema allows a string but neither an object nor an array, and whose value
    /// arrived as a JSON object or array (`<code>let s = "<b>x</b>";</code>` read as
    /// `{"b": "x"}`), takes `source(key)` as its string instead. `key` is the argument key
    /// as written; the text is used exactly as `source` returns it. Where `source` returns
    /// `None` the value is coerced as [`coerce`](Self::coerce) would (and reported as the
    /// wrong type). Nested members are never replaced: only a whole parameter has a span.
    ///
    /// # Errors
    /// As [`coerce`](Self::coerce).
    pub fn coerce_with_source<'s, K, I, S>(
        &self,
        arguments: I,
        keys: KeyMatch,
        source: S,
    ) -> Result<Map<String, Value>, ValidationErrors>
    where
        K: AsRef<str>,
        I: IntoIterator<Item = (K, Value)>,
        S: Fn(&str) -> Option<&'s str>,
    {
        let mut matcher = Coercion::new(keys);
        let arguments: Vec<(K, Value)> = arguments
            .into_iter()
            .map(|(key, value)| {
                if !(value.is_object() || value.is_array()) {
                    return (key, value);
                }
                let takes_text = matcher
                    .find(&self.parameters.properties, key.as_ref())
                    .map(|index| self.parameters.properties[index].shape.types)
                    .is_some_and(|types| {
                        types.contains(TypeSet::STRING)
                            && !types.contains(TypeSet::OBJECT)
                            && !types.contains(TypeSet::ARRAY)
                    });
                match takes_text.then(|| source(key.as_ref())).flatten() {
                    Some(text) => (key, Value::String(text.to_owned())),
                    None => (key, value),
                }
            })
            .collect();
        self.coerce(arguments, keys)
    }
}

/// A JSON pointer's segments as a parameter path: `args.file[1].path`.
fn instance_path<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            LocationSegment::Property(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            }
            LocationSegment::Index(index) => {
                path.push_str(&format!("[{index}]"));
            }
        }
    }
    if path.is_empty() {
        path.push_str("arguments");
    }
    path
}
