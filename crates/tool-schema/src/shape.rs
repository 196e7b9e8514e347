//! The part of JSON Schema that tools use, read once into a tree the coercion walk and the
//! prompt renderers follow: `type`, `properties`, `required`, `additionalProperties`,
//! `enum`, `items`, `default`, `description`.
//!
//! Reading is lenient: keywords outside that set, and `type` names it does not know, are
//! ignored here. The `jsonschema` crate compiles the full schema and rejects invalid ones.

use serde_json::{Map, Value};

use crate::keys::canonical_key;

/// The JSON types a value may have; the empty set allows every type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TypeSet(u8);

impl TypeSet {
    pub(crate) const STRING: TypeSet = TypeSet(1);
    pub(crate) const INTEGER: TypeSet = TypeSet(1 << 1);
    pub(crate) const NUMBER: TypeSet = TypeSet(1 << 2);
    pub(crate) const BOOLEAN: TypeSet = TypeSet(1 << 3);
    pub(crate) const OBJECT: TypeSet = TypeSet(1 << 4);
    pub(crate) const ARRAY: TypeSet = TypeSet(1 << 5);
    pub(crate) const NULL: TypeSet = TypeSet(1 << 6);

    /// Names in the order messages and prompts list them.
    const NAMES: [(TypeSet, &'static str, &'static str); 7] = [
        (TypeSet::STRING, "string", "a string"),
        (TypeSet::INTEGER, "integer", "an integer"),
        (TypeSet::NUMBER, "number", "a number"),
        (TypeSet::BOOLEAN, "boolean", "a boolean"),
        (TypeSet::OBJECT, "object", "an object"),
        (TypeSet::ARRAY, "array", "an array"),
        (TypeSet::NULL, "null", "null"),
    ];

    fn from_name(name: &str) -> TypeSet {
        TypeSet::NAMES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map_or(TypeSet(0), |(set, _, _)| *set)
    }

    pub(crate) fn is_any(self) -> bool {
        self.0 == 0
    }

    pub(crate) fn contains(self, other: TypeSet) -> bool {
        self.0 & other.0 != 0
    }

    fn names(self) -> impl Iterator<Item = (&'static str, &'static str)> {
        TypeSet::NAMES
            .iter()
            .filter(move |(set, _, _)| self.contains(*set))
            .map(|(_, name, words)| (*name, *words))
    }

    /// `string`, `string | null`, or `any`.
    pub(crate) fn label(self) -> String {
        if self.is_any() {
            return "any".to_owned();
        }
        self.names()
            .map(|(name, _)| name)
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// `an integer`, `a string or null`: for messages.
    pub(crate) fn in_words(self) -> String {
        self.names()
            .map(|(_, words)| words)
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

impl std::ops::BitOr for TypeSet {
    type Output = TypeSet;

    fn bitor(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 | other.0)
    }
}

/// One schema node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    pub(crate) types: TypeSet,
    pub(crate) description: Option<String>,
    pub(crate) enumeration: Option<Vec<Value>>,
    pub(crate) default: Option<Value>,
    /// Set when the schema says anything about object members.
    pub(crate) object: Option<ObjectShape>,
    /// The `items` schema of an array.
    pub(crate) items: Option<Box<Shape>>,
}

/// The members of an object schema.
#[derive(Debug, Clone)]
pub(crate) struct ObjectShape {
    /// Declared properties, in declaration order.
    pub(crate) properties: Vec<Property>,
    /// What happens to a key that matches no declared property.
    pub(crate) extra: ExtraKeys,
}

/// One declared property.
#[derive(Debug, Clone)]
pub(crate) struct Property {
    pub(crate) name: String,
    /// `name` lowercased without `_` and `-`.
    pub(crate) canonical: String,
    pub(crate) required: bool,
    pub(crate) shape: Shape,
}

/// Undeclared keys of an object.
#[derive(Debug, Clone)]
pub(crate) enum ExtraKeys {
    /// Rejected with an "unknown parameter" error.
    Reject,
    /// Kept as they are.
    Keep,
    /// Kept after coercion to this schema.
    Coerce(Box<Shape>),
}

impl Shape {
    /// Reads a schema node. A non-object schema (`true`, `false`) reads as "anything".
    /// Defaults stay as written: read schemas through [`crate::coerce::read_shape`], which
    /// also converts them.
    ///
    /// An object schema that lists `properties` (even none) is closed unless
    /// `additionalProperties` is `true` or a schema; one without `properties` is open
    /// unless `additionalProperties` is `false`.
    pub(crate) fn read(schema: &Value) -> Shape {
        let Value::Object(schema) = schema else {
            return Shape::default();
        };
        let types = match schema.get("type") {
            Some(Value::String(name)) => TypeSet::from_name(name),
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .map(TypeSet::from_name)
                .fold(TypeSet::default(), |all, one| all | one),
            _ => TypeSet::default(),
        };
        let mut shape = Shape {
            types,
            description: schema
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            enumeration: schema.get("enum").and_then(Value::as_array).cloned(),
            default: None,
            object: read_object(schema),
            items: schema
                .get("items")
                .filter(|items| items.is_object())
                .map(|items| Box::new(Shape::read(items))),
        };
        // A default written as text for another type (`"True"` for a boolean) is coerced
        // once, here; one no rule converts is used as written. The text `None` or `null`
        // for a typed schema that does not take null says there is no default, as it says
        // "left out" for an argument (BFCL writes `"default": "None"` for an array).
        let says_none = |default: &Value| {
            matches!(default, Value::String(text) if matches!(text.trim(), "None" | "null"))
                && !shape.types.contains(TypeSet::NULL)
                && !shape.types.is_any()
        };
        // Read as written; `coerce::read_shape` converts it once the whole shape is read.
        shape.default = schema
            .get("default")
            .filter(|default| !says_none(default))
            .cloned();
        shape
    }
}

fn read_object(schema: &Map<String, Value>) -> Option<ObjectShape> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    if properties.is_none() && additional.is_none() {
        return None;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let extra = match additional {
        Some(Value::Bool(false)) => ExtraKeys::Reject,
        Some(Value::Bool(true)) => ExtraKeys::Keep,
        Some(schema @ Value::Object(_)) => ExtraKeys::Coerce(Box::new(Shape::read(schema))),
        _ if properties.is_some() => ExtraKeys::Reject,
        _ => ExtraKeys::Keep,
    };
    let mut properties: Vec<Property> = properties
        .into_iter()
        .flatten()
        .map(|(name, schema)| Property::new(name, required.contains(&name.as_str()), schema))
        .collect();
    // A name that is required but not described is still a parameter, of any type.
    for name in required {
        if !properties.iter().any(|property| property.name == name) {
            properties.push(Property::new(name, true, &Value::Bool(true)));
        }
    }
    Some(ObjectShape { properties, extra })
}

impl Property {
    fn new(name: &str, required: bool, schema: &Value) -> Property {
        Property {
            name: name.to_owned(),
            canonical: canonical_key(name),
            required,
            shape: Shape::read(schema),
        }
    }
}
