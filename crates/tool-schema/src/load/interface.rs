//! ComfyTavern interface slots (a workflow's `interfaceInputs`/`interfaceOutputs`, a node's
//! `inputs`/`outputs`) as JSON Schema: each slot's `dataFlowType` gives its type
//! (STRING → string, INTEGER → integer, FLOAT → number, BOOLEAN → boolean, OBJECT →
//! object, ARRAY → array).

use serde_json::{Map, Value, json};

use super::fields::Fields;
use crate::Error;

/// `dataFlowType` → JSON Schema `type`. `WILDCARD` and `CONVERTIBLE_ANY` accept anything
/// and map to no `type` at all.
const DATA_FLOW_TYPES: [(&str, Option<&str>); 8] = [
    ("STRING", Some("string")),
    ("INTEGER", Some("integer")),
    ("FLOAT", Some("number")),
    ("BOOLEAN", Some("boolean")),
    ("OBJECT", Some("object")),
    ("ARRAY", Some("array")),
    ("WILDCARD", None),
    ("CONVERTIBLE_ANY", None),
];

/// The `matchCategories` entry that turns `suggestions` into an `enum`.
const COMBO_OPTION: &str = "ComboOption";

/// The object schema of the slots at `owner.key`: one property per slot, in file order,
/// with `type`, `description`, `enum` and `default`, and `required` listing the slots
/// marked `required: true` (left out when none is).
pub(crate) fn interface_schema(owner: &Fields<'_>, key: &str) -> Result<Value, Error> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, slot) in owner.members(key)? {
        let mut property = Map::new();
        if let Some(schema_type) = slot_type(&slot)? {
            property.insert("type".to_owned(), schema_type.into());
        }
        if let Some(description) = slot.optional_str("description")? {
            property.insert("description".to_owned(), description.into());
        }
        let config = slot.optional_object("config")?;
        if let Some(values) = slot_enum(&slot, config.as_ref())? {
            property.insert("enum".to_owned(), Value::Array(values));
        }
        if let Some(default) = config.as_ref().and_then(|config| config.get("default")) {
            property.insert("default".to_owned(), default.clone());
        }
        if slot.optional_bool("required")? == Some(true) {
            required.push(Value::from(name));
        }
        properties.insert(name.to_owned(), Value::Object(property));
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    Ok(schema)
}

fn slot_type(slot: &Fields<'_>) -> Result<Option<&'static str>, Error> {
    let data_flow_type = slot.required_str("dataFlowType")?;
    DATA_FLOW_TYPES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(data_flow_type))
        .map(|(_, schema_type)| *schema_type)
        .ok_or_else(|| {
            let known: Vec<&str> = DATA_FLOW_TYPES.iter().map(|(name, _)| *name).collect();
            slot.error(
                slot.field("dataFlowType"),
                format!(
                    "unsupported data flow type '{data_flow_type}' (expected one of {})",
                    known.join(", ")
                ),
            )
        })
}

/// The `value`s of the slot's `suggestions` when its `matchCategories` holds
/// `ComboOption`. Both lists may sit on the slot or in its `config`; a suggestion is
/// `{"value": …}` or the bare value.
fn slot_enum(slot: &Fields<'_>, config: Option<&Fields<'_>>) -> Result<Option<Vec<Value>>, Error> {
    let mut is_combo = false;
    let mut suggestions = None;
    for holder in std::iter::once(slot).chain(config) {
        if let Some(categories) = holder.optional_array("matchCategories")? {
            is_combo |= categories.iter().any(|category| category == COMBO_OPTION);
        }
        if suggestions.is_none() {
            suggestions = holder
                .optional_array("suggestions")?
                .map(|items| (holder.field("suggestions"), items));
        }
    }
    let (Some((field, items)), true) = (suggestions, is_combo) else {
        return Ok(None);
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::Object(suggestion) => suggestion.get("value").cloned().ok_or_else(|| {
                slot.error(format!("{field}[{index}]"), "a suggestion needs a 'value'")
            }),
            bare @ (Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_)) => Ok(bare.clone()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
