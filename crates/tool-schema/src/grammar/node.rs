//! What the generator makes of one schema node: the tool-schema reading of it ([`Shape`])
//! next to the JSON it came from, sorted into the few kinds a grammar expresses.

use serde_json::Value;

use crate::shape::{ExtraKeys, Property, Shape, TypeSet};

/// Keywords whose meaning the grammar cannot follow: a node that holds one is free (the
/// protocol's permissive form for its value), never an error.
const NOT_FOLLOWED: [&str; 16] = [
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$dynamicRef",
    "if",
    "then",
    "else",
    "prefixItems",
    "contains",
    "patternProperties",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
];

/// Nesting beyond this many objects and arrays is free text: the grammar stays small and
/// no schema can make the generator recurse deeply.
pub(super) const MAX_DEPTH: usize = 12;

/// One schema node: its shape and, where there is one, the JSON it was read from.
#[derive(Clone, Copy)]
pub(super) struct Node<'s> {
    pub(super) shape: &'s Shape,
    pub(super) raw: Option<&'s Value>,
}

/// The kinds of value the grammars express.
pub(super) enum Kind<'s> {
    /// Anything the protocol can carry: strings, untyped values, mixed types with a
    /// string, keywords not followed, nesting too deep.
    Free,
    /// One of these values (`enum`, or `const`).
    Enum(Vec<&'s Value>),
    /// Some of integer, number, boolean, null, and no other type.
    Scalars(TypeSet),
    /// An array whose items are this node (`None`: items of any kind).
    Array(Option<Node<'s>>),
    /// An object with exactly these members, in declaration order.
    Object(Vec<Member<'s>>),
    /// An object that takes keys it does not declare.
    OpenObject,
    /// Several types, an array or an object among them, no string: JSON text of one of
    /// them.
    Union(TypeSet),
}

/// A declared member of an object (or a tool's parameter).
#[derive(Clone, Copy)]
pub(super) struct Member<'s> {
    pub(super) name: &'s str,
    pub(super) canonical: &'s str,
    pub(super) required: bool,
    pub(super) node: Node<'s>,
}

impl<'s> Node<'s> {
    pub(super) fn new(shape: &'s Shape, raw: Option<&'s Value>) -> Node<'s> {
        Node { shape, raw }
    }

    fn keyword(&self, key: &str) -> Option<&'s Value> {
        self.raw.and_then(|raw| raw.get(key))
    }

    /// The items of an array node: `None` for items of any kind (none declared, or a
    /// list of item schemas, which is not followed).
    pub(super) fn items(&self) -> Option<Node<'s>> {
        let raw = self.keyword("items");
        if matches!(raw, Some(Value::Array(_))) {
            return None;
        }
        self.shape
            .items
            .as_deref()
            .map(|items| Node::new(items, raw))
    }

    /// The members of an object node, in declaration order.
    pub(super) fn members(&self) -> Vec<Member<'s>> {
        let properties = self.keyword("properties");
        self.shape
            .object
            .iter()
            .flat_map(|object| object.properties.iter())
            .map(|property: &'s Property| Member {
                name: &property.name,
                canonical: &property.canonical,
                required: property.required,
                node: Node::new(
                    &property.shape,
                    properties.and_then(|p| p.get(&property.name)),
                ),
            })
            .collect()
    }

    /// The node's kind, `depth` levels of objects and arrays below a parameter.
    pub(super) fn kind(&self, depth: usize) -> Kind<'s> {
        if depth > MAX_DEPTH {
            return Kind::Free;
        }
        if let Some(Value::Object(raw)) = self.raw
            && NOT_FOLLOWED.iter().any(|key| raw.contains_key(*key))
        {
            return Kind::Free;
        }
        if let Some(Value::Array(members)) = self.keyword("enum") {
            if members.is_empty() {
                return Kind::Free;
            }
            return Kind::Enum(members.iter().collect());
        }
        if let Some(member) = self.keyword("const") {
            return Kind::Enum(vec![member]);
        }
        let types = self.shape.types;
        let scalars = TypeSet::INTEGER | TypeSet::NUMBER | TypeSet::BOOLEAN | TypeSet::NULL;
        if types.is_any() || types.contains(TypeSet::STRING) {
            return Kind::Free;
        }
        if !types.contains(TypeSet::ARRAY) && !types.contains(TypeSet::OBJECT) {
            // Only scalar bits are left.
            debug_assert!(types.contains(scalars));
            return Kind::Scalars(types);
        }
        if types == TypeSet::ARRAY {
            return match self.keyword("items") {
                // A list of item schemas (a tuple in older drafts) is not followed.
                Some(Value::Array(_)) => Kind::Free,
                _ => Kind::Array(self.items()),
            };
        }
        if types == TypeSet::OBJECT {
            return match &self.shape.object {
                Some(object) if matches!(object.extra, ExtraKeys::Reject) => {
                    Kind::Object(self.members())
                }
                _ => Kind::OpenObject,
            };
        }
        // An array or an object together with other types.
        Kind::Union(types)
    }
}

/// True when `name` is an XML 1.0 `Name` (ACTION writes tool and parameter names as tag
/// names; any other name cannot be written as one).
pub(super) fn is_xml_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

fn is_name_start(c: char) -> bool {
    matches!(c,
        ':' | 'A'..='Z' | '_' | 'a'..='z'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind_of(schema: Value) -> &'static str {
        let shape = crate::coerce::read_shape(&schema);
        match Node::new(&shape, Some(&schema)).kind(0) {
            Kind::Free => "free",
            Kind::Enum(_) => "enum",
            Kind::Scalars(_) => "scalars",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
            Kind::OpenObject => "open object",
            Kind::Union(_) => "union",
        }
    }

    #[test]
    fn kinds_follow_the_schema_and_degrade_to_free() {
        assert_eq!(kind_of(json!({"type": "string"})), "free");
        assert_eq!(kind_of(json!({})), "free");
        assert_eq!(kind_of(json!({"type": ["integer", "null"]})), "scalars");
        assert_eq!(kind_of(json!({"type": "string", "enum": ["a"]})), "enum");
        assert_eq!(kind_of(json!({"const": 3})), "enum");
        assert_eq!(kind_of(json!({"type": "integer", "anyOf": []})), "free");
        assert_eq!(kind_of(json!({"$ref": "#/x"})), "free");
        assert_eq!(kind_of(json!({"type": "array", "items": [{}]})), "free");
        assert_eq!(kind_of(json!({"type": "array"})), "array");
        assert_eq!(kind_of(json!({"type": ["array", "null"]})), "union");
        assert_eq!(kind_of(json!({"type": ["array", "string"]})), "free");
        assert_eq!(
            kind_of(json!({"type": "object", "properties": {"a": {}}})),
            "object"
        );
        assert_eq!(kind_of(json!({"type": "object"})), "open object");
        assert_eq!(
            kind_of(json!({"type": "object", "properties": {}, "additionalProperties": true})),
            "open object"
        );
        assert_eq!(kind_of(json!({"type": "integer", "enum": []})), "free");
    }

    #[test]
    fn xml_names() {
        assert!(is_xml_name("workflow:summarize_text"));
        assert!(is_xml_name("日本"));
        assert!(is_xml_name("a-b.c"));
        assert!(!is_xml_name("1a"));
        assert!(!is_xml_name("a b"));
        assert!(!is_xml_name(""));
        assert!(!is_xml_name("a>"));
    }
}
