//! JSON text typed by a schema: how TAM writes objects and arrays, and how ACTION may
//! (`<tags>["a", "b"]</tags>`). Integers, numbers, booleans, enum members and declared
//! object members are followed; anything else is any JSON value.

use serde_json::Value;

use super::GrammarError;
use super::node::{Kind, Node};
use super::text::{Fixed, Rules, lit};
use crate::shape::TypeSet;

/// Where the JSON text goes, which decides what its strings may not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    /// Inside a TAM value: no `「` in strings (so no `「末」`).
    Tam,
    /// Inside an ACTION element: no `<` or `&` in strings (so no markup).
    Xml,
}

impl Flavor {
    fn value(self) -> Fixed {
        match self {
            Flavor::Tam => Fixed::JsonValueTam,
            Flavor::Xml => Fixed::JsonValueXml,
        }
    }

    fn string(self) -> Fixed {
        match self {
            Flavor::Tam => Fixed::JsonStringTam,
            Flavor::Xml => Fixed::JsonStringXml,
        }
    }

    fn object(self) -> Fixed {
        match self {
            Flavor::Tam => Fixed::JsonObjectTam,
            Flavor::Xml => Fixed::JsonObjectXml,
        }
    }

    fn array(self) -> Fixed {
        match self {
            Flavor::Tam => Fixed::JsonArrayTam,
            Flavor::Xml => Fixed::JsonArrayXml,
        }
    }
}

/// `value` as JSON text that may stand in `flavor`: the characters its strings may not
/// hold written as `\u` escapes (they can only occur inside strings).
pub(super) fn json_text(value: &Value, flavor: Flavor) -> String {
    let text = value.to_string();
    match flavor {
        Flavor::Tam => text.replace('\u{300C}', "\\u300c"),
        Flavor::Xml => text.replace('<', "\\u003c").replace('&', "\\u0026"),
    }
}

/// An expression for JSON text of `node`.
pub(super) fn value(
    rules: &mut Rules,
    node: Node<'_>,
    flavor: Flavor,
    depth: usize,
) -> Result<String, GrammarError> {
    match node.kind(depth) {
        Kind::Free => free_typed(rules, node.shape.types, flavor),
        Kind::OpenObject => Ok(rules.fixed(flavor.object())?.to_owned()),
        Kind::Enum(members) => {
            let mut body = String::new();
            for member in members {
                let alternative = lit(&json_text(member, flavor));
                rules.check_room(body.len() + alternative.len())?;
                if !body.is_empty() {
                    body.push_str(" | ");
                }
                body.push_str(&alternative);
            }
            rules.add("json-enum", "", body)
        }
        Kind::Scalars(types) => scalars(rules, types),
        Kind::Union(types) => {
            let mut alternatives = Vec::new();
            if types.contains(TypeSet::ARRAY) {
                alternatives.push(array(rules, node.items(), flavor, depth)?);
            }
            if types.contains(TypeSet::OBJECT) {
                alternatives.push(rules.fixed(flavor.object())?.to_owned());
            }
            let rest = TypeSet::INTEGER | TypeSet::NUMBER | TypeSet::BOOLEAN | TypeSet::NULL;
            if types.contains(rest) {
                alternatives.push(scalars(rules, types)?);
            }
            rules.add("json-union", "", alternatives.join(" | "))
        }
        Kind::Array(items) => array(rules, items, flavor, depth),
        Kind::Object(members) => {
            let ws = rules.fixed(Fixed::Ws)?;
            let mut parts = Vec::with_capacity(members.len());
            for member in members {
                let key = lit(&json_text(&Value::from(member.name), flavor));
                let value = value(rules, member.node, flavor, depth + 1)?;
                let part = format!("{key} {ws} \":\" {ws} {value} {ws}");
                rules.check_room(part.len())?;
                parts.push((part, member.required));
            }
            let separator = format!("\",\" {ws}");
            let inner = super::ordered(rules, parts, &separator, false)?;
            let body = if inner.is_empty() {
                format!("\"{{\" {ws} \"}}\"")
            } else {
                format!("\"{{\" {ws} {inner} \"}}\"")
            };
            rules.add("json-object", "", body)
        }
    }
}

/// A free node: a string alone is any JSON string; anything else any JSON value.
fn free_typed(rules: &mut Rules, types: TypeSet, flavor: Flavor) -> Result<String, GrammarError> {
    if types == TypeSet::STRING {
        Ok(rules.fixed(flavor.string())?.to_owned())
    } else {
        Ok(rules.fixed(flavor.value())?.to_owned())
    }
}

/// `[…]` of `items` (any values when `None`).
pub(super) fn array(
    rules: &mut Rules,
    items: Option<Node<'_>>,
    flavor: Flavor,
    depth: usize,
) -> Result<String, GrammarError> {
    let Some(items) = items else {
        return Ok(rules.fixed(flavor.array())?.to_owned());
    };
    let ws = rules.fixed(Fixed::Ws)?;
    let item = value(rules, items, flavor, depth + 1)?;
    rules.add(
        "json-array",
        "",
        format!("\"[\" {ws} ( {item} {ws} ( \",\" {ws} {item} {ws} )* )? \"]\""),
    )
}

/// Integers, numbers, booleans and `null`, as `types` allows.
pub(super) fn scalars(rules: &mut Rules, types: TypeSet) -> Result<String, GrammarError> {
    let mut alternatives = Vec::new();
    if types.contains(TypeSet::NUMBER) {
        alternatives.push(rules.fixed(Fixed::JsonNumber)?.to_owned());
    } else if types.contains(TypeSet::INTEGER) {
        alternatives.push(rules.fixed(Fixed::JsonInt)?.to_owned());
    }
    if types.contains(TypeSet::BOOLEAN) {
        alternatives.push(rules.fixed(Fixed::JsonBool)?.to_owned());
    }
    if types.contains(TypeSet::NULL) {
        alternatives.push("\"null\"".to_owned());
    }
    if alternatives.len() == 1 && !alternatives[0].starts_with('"') {
        return Ok(alternatives.remove(0));
    }
    rules.add("scalar", "", alternatives.join(" | "))
}
