//! Argument coercion: text and loosely typed JSON values turned into what a tool's schema
//! declares, with every problem collected. Coercion is per argument: a top-level argument
//! whose value (or anything inside it) cannot take its schema stays as written, and every
//! other argument is still typed.

use std::fmt;

use serde_json::{Map, Number, Value};

use crate::Error;
use crate::keys::{KeyMatch, canonical_chars, suggest};
use crate::literal::{self, LiteralError};
use crate::quoted::{MAX_QUOTED_LEN, quoted_text};
use crate::shape::{ExtraKeys, ObjectShape, Property, Shape, TypeSet};

/// Where a value sits in the arguments, built on the stack and rendered only for messages.
#[derive(Clone, Copy)]
pub(crate) enum ValuePath<'a> {
    Root,
    Key(&'a ValuePath<'a>, &'a str),
    Index(&'a ValuePath<'a>, usize),
}

impl fmt::Display for ValuePath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValuePath::Root => f.write_str("arguments"),
            ValuePath::Key(ValuePath::Root, key) => f.write_str(key),
            ValuePath::Key(parent, key) => write!(f, "{parent}.{key}"),
            ValuePath::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// One walk over one call's arguments.
pub(crate) struct Coercion {
    keys: KeyMatch,
    pub(crate) errors: Vec<Error>,
    /// The canonical form of the key being matched, reused so that matching a key
    /// lowercases it once and allocates at most once per call.
    canonical: String,
}

impl Coercion {
    pub(crate) fn new(keys: KeyMatch) -> Coercion {
        Coercion {
            keys,
            errors: Vec::new(),
            canonical: String::new(),
        }
    }

    /// Matches `members` to the declared properties, coerces each value, applies defaults
    /// and reports unknown, duplicate and missing keys. The result lists declared
    /// properties in declaration order, then kept extra keys in argument order.
    pub(crate) fn object<K: AsRef<str>>(
        &mut self,
        shape: &ObjectShape,
        members: impl IntoIterator<Item = (K, Value)>,
        path: &ValuePath<'_>,
    ) -> Map<String, Value> {
        let mut given: Vec<Option<(K, Value)>> = Vec::new();
        given.resize_with(shape.properties.len(), || None);
        let mut extra = Map::new();
        let mut unknown = Vec::new();
        let root = matches!(path, ValuePath::Root);
        // Properties an unknown key was taken for: their absence is the same mistake, not a
        // second one (`Unknown parameter 'playerId', did you mean 'player_id'?` alone).
        let mut suggested = vec![false; shape.properties.len()];
        for (key, value) in members {
            let raw = key.as_ref();
            match self.find(&shape.properties, raw) {
                // `None` or `null` written for an optional parameter that does not take
                // null: the model's way of leaving it out.
                Some(index) if says_absent(&shape.properties[index], &value) => {}
                Some(index) => match &given[index] {
                    Some((first, _)) => self.errors.push(Error::DuplicateParameter {
                        path: ValuePath::Key(path, &shape.properties[index].name).to_string(),
                        first: first.as_ref().to_owned(),
                        second: raw.to_owned(),
                    }),
                    None => given[index] = Some((key, value)),
                },
                None => match &shape.extra {
                    ExtraKeys::Reject => {
                        let suggestion =
                            suggest(raw, shape.properties.iter().map(|p| p.name.as_str()));
                        if let Some(name) = suggestion
                            && let Some(i) = shape.properties.iter().position(|p| p.name == name)
                        {
                            suggested[i] = true;
                        }
                        self.errors.push(Error::UnknownParameter {
                            path: ValuePath::Key(path, raw).to_string(),
                            suggestion: suggestion
                                .map(|name| ValuePath::Key(path, name).to_string()),
                        });
                        // Kept as written (and reported): a caller that goes on despite
                        // the problems still sees what the model wrote.
                        unknown.push((raw.to_owned(), value));
                    }
                    ExtraKeys::Keep => {
                        extra.insert(raw.to_owned(), value);
                    }
                    ExtraKeys::Coerce(extra_shape) => {
                        let value =
                            self.member(extra_shape, value, &ValuePath::Key(path, raw), root);
                        extra.insert(raw.to_owned(), value);
                    }
                },
            }
        }
        let mut coerced = Map::with_capacity(shape.properties.len() + extra.len());
        for ((property, slot), suggested) in shape.properties.iter().zip(given).zip(suggested) {
            let name = property.name.as_str();
            match slot {
                Some((_, value)) => {
                    let value =
                        self.member(&property.shape, value, &ValuePath::Key(path, name), root);
                    coerced.insert(name.to_owned(), value);
                }
                None => match &property.shape.default {
                    Some(default) => {
                        coerced.insert(name.to_owned(), default.clone());
                    }
                    None if property.required && !suggested => {
                        self.errors.push(Error::MissingParameter {
                            path: ValuePath::Key(path, name).to_string(),
                        })
                    }
                    None => {}
                },
            }
        }
        coerced.extend(extra);
        for (key, value) in unknown {
            coerced.entry(key).or_insert(value);
        }
        coerced
    }

    /// Coerces one member of an object. At the top level coercion is per argument: when
    /// anything inside the value was reported, the argument stays exactly as written.
    fn member(&mut self, shape: &Shape, value: Value, path: &ValuePath<'_>, root: bool) -> Value {
        // Text for a shape that takes text, unless it is one quoted literal, comes back as
        // written whatever is reported (an enum miss): no copy of what may be a whole
        // file's content is needed. A quoted literal (at most `MAX_QUOTED_LEN` bytes, so
        // the copy is small) loses its quotes only when nothing is reported: outside the
        // enum it stays exactly as written, quotes and all, as the crate's rule says.
        let unchanged = shape.types.contains(TypeSet::STRING)
            && matches!(&value, Value::String(text) if quoted_text(text).is_none());
        if !root || unchanged {
            return self.value(shape, value, path);
        }
        let before = self.errors.len();
        let original = value.clone();
        let coerced = self.value(shape, value, path);
        if self.errors.len() > before {
            original
        } else {
            coerced
        }
    }

    pub(crate) fn find(&mut self, properties: &[Property], key: &str) -> Option<usize> {
        let exact = properties.iter().position(|property| property.name == key);
        if exact.is_some() || self.keys == KeyMatch::Exact {
            return exact;
        }
        self.canonical.clear();
        self.canonical.extend(canonical_chars(key));
        properties
            .iter()
            .position(|property| property.canonical == self.canonical)
    }

    /// Coerces one value to `shape`, then its members or items, then checks `enum`.
    /// A value that cannot be converted is reported and returned unchanged.
    pub(crate) fn value(&mut self, shape: &Shape, value: Value, path: &ValuePath<'_>) -> Value {
        let value = match convert(shape, value) {
            Ok(value) => value,
            Err(Refusal { value, reason }) => {
                let path = path.to_string();
                let expected = shape.types.in_words();
                let found = Box::new(value.clone());
                self.errors.push(match reason {
                    Some(reason) => Error::UnreadableValue {
                        path,
                        expected,
                        found,
                        reason,
                    },
                    None => Error::WrongType {
                        path,
                        expected,
                        found,
                    },
                });
                return value;
            }
        };
        let value = match (value, &shape.object, &shape.items) {
            (Value::Object(members), Some(object), _) => {
                Value::Object(self.object(object, members, path))
            }
            (Value::Array(items), _, Some(item_shape)) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(index, item)| {
                        self.value(item_shape, item, &ValuePath::Index(path, index))
                    })
                    .collect(),
            ),
            (value, _, _) => value,
        };
        if let Some(allowed) = &shape.enumeration
            && !allowed.contains(&value)
        {
            self.errors.push(Error::NotInEnum {
                path: path.to_string(),
                allowed: allowed.clone(),
                found: Box::new(value.clone()),
            });
        }
        value
    }
}

/// A value no rule could convert, given back, and why when the reason is worth telling
/// (text meant as an array or object that cannot be read as one).
pub(crate) struct Refusal {
    pub(crate) value: Value,
    reason: Option<String>,
}

impl From<Value> for Refusal {
    fn from(value: Value) -> Refusal {
        Refusal {
            value,
            reason: None,
        }
    }
}

/// Whether `value` is the text `None` or `null` (blanks around it allowed, no longer than
/// [`MAX_QUOTED_LEN`] in all) given for an optional property with a declared type that
/// does not take null: read as the property left out.
fn says_absent(property: &Property, value: &Value) -> bool {
    may_be_absent(property)
        && matches!(value, Value::String(text)
            if text.len() <= MAX_QUOTED_LEN && matches!(text.trim(), "None" | "null"))
}

/// Whether the text `None` or `null` leaves `property` out ([`says_absent`]).
pub(crate) fn may_be_absent(property: &Property) -> bool {
    let types = property.shape.types;
    !property.required && !types.contains(TypeSet::NULL) && !types.is_any()
}

/// Whether some continuation of `prefix` is `None` or `null` with blanks around it: a
/// streaming value for a property [`may_be_absent`] holds this far.
pub(crate) fn may_say_absent(prefix: &str) -> bool {
    if prefix.len() > MAX_QUOTED_LEN {
        return false;
    }
    let started = prefix.trim_start();
    let word = started.trim_end();
    if word.len() < started.len() {
        matches!(word, "None" | "null")
    } else {
        "None".starts_with(word) || "null".starts_with(word)
    }
}

/// Text an `enum` of strings refuses that names one value it allows: that value. Models
/// writing Python or JSON quote their strings (`"asc"`, `'asc'`), and models write the
/// members of a list in their own case (`elevation` for `Elevation`): one quoted literal of
/// a member is that member, and so is text (quoted or not, blanks around it aside) that
/// equals exactly one member but for ASCII case. Two members that differ only in case
/// leave such text as written.
fn unquoted_member(shape: &Shape, text: &str) -> Option<Value> {
    let allowed = shape.enumeration.as_ref()?;
    if allowed.iter().any(|v| v.as_str() == Some(text)) {
        return None;
    }
    let trimmed = text.trim();
    let quoted = trimmed.len() >= 2
        && ((trimmed.starts_with('"') && trimmed.ends_with('"'))
            || (trimmed.starts_with('\'') && trimmed.ends_with('\'')));
    let inner = match quoted.then(|| literal::read(trimmed)) {
        Some(Ok(Value::String(inner))) => inner,
        Some(_) => return None,
        None => trimmed.to_owned(),
    };
    if allowed.iter().any(|v| v.as_str() == Some(&inner)) {
        return Some(Value::String(inner));
    }
    let mut folded = allowed
        .iter()
        .filter(|v| v.as_str().is_some_and(|m| m.eq_ignore_ascii_case(&inner)));
    match (folded.next(), folded.next()) {
        (Some(member), None) => Some(member.clone()),
        _ => None,
    }
}

/// Reads a schema node ([`Shape::read`]) and converts every default in it to the type its
/// schema declares: a default written as text for another type (`"True"` for a boolean)
/// is coerced once, here; one no rule converts is kept as written.
pub(crate) fn read_shape(schema: &Value) -> Shape {
    let mut shape = Shape::read(schema);
    settle_defaults(&mut shape);
    shape
}

/// Converts the defaults of `shape` and of every shape inside it, innermost first (a
/// default is converted against a shape whose parts are already settled).
fn settle_defaults(shape: &mut Shape) {
    if let Some(items) = &mut shape.items {
        settle_defaults(items);
    }
    if let Some(object) = &mut shape.object {
        for property in &mut object.properties {
            settle_defaults(&mut property.shape);
        }
        if let ExtraKeys::Coerce(extra) = &mut object.extra {
            settle_defaults(extra);
        }
    }
    if let Some(default) = shape.default.take() {
        shape.default = Some(convert(shape, default).unwrap_or_else(|refused| refused.value));
    }
}

/// Converts `value` to a type `shape` allows; `Err` gives the value back when no rule
/// applies. Values that already have an allowed type are kept as they are.
pub(crate) fn convert(shape: &Shape, value: Value) -> Result<Value, Refusal> {
    let types = shape.types;
    // Only where the shape takes text: a member the declared type refuses (`"true"` in
    // the enum of a `number`, a schema at odds with itself) is never what text becomes.
    if let Value::String(text) = &value
        && (types.is_any() || types.contains(TypeSet::STRING))
        && let Some(member) = unquoted_member(shape, text)
    {
        return Ok(member);
    }
    if types.is_any() {
        return Ok(match (&shape.enumeration, value) {
            // An untyped enum of numbers or booleans still accepts their text.
            (Some(allowed), Value::String(text)) if !allowed.iter().any(|v| v == &*text) => {
                match serde_json::from_str::<Value>(text.trim()) {
                    Ok(parsed) if allowed.contains(&parsed) => parsed,
                    _ => Value::String(text),
                }
            }
            (_, value) => value,
        });
    }
    if let Value::String(text) = &value
        && types.contains(TypeSet::STRING)
    {
        if shape
            .enumeration
            .as_ref()
            .is_some_and(|allowed| allowed.contains(&value))
        {
            return Ok(value);
        }
        return Ok(match quoted_text(text) {
            Some(inner) => Value::String(inner.to_owned()),
            None => value,
        });
    }
    if has_type(types, &value) {
        return Ok(value);
    }
    match value {
        Value::String(text) => from_text(shape, text),
        Value::Number(number) if types.contains(TypeSet::INTEGER) => {
            match number.as_f64().and_then(integral) {
                Some(integer) => Ok(integer),
                None => Err(Value::Number(number).into()),
            }
        }
        scalar @ (Value::Number(_) | Value::Bool(_)) if types.contains(TypeSet::STRING) => {
            Ok(Value::String(scalar.to_string()))
        }
        other @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::Array(_)
        | Value::Object(_)) => {
            if types.contains(TypeSet::ARRAY) {
                Ok(Value::Array(vec![other]))
            } else {
                Err(other.into())
            }
        }
    }
}

/// Reads text as the first allowed type it parses as: integer, number, boolean, null,
/// object (`{…}`: JSON, else a Python/JavaScript literal), array (`[…]` likewise; for
/// number or boolean items, a comma-separated list; for enumerated string items, a
/// comma-separated list of members: [`member_list`]; quoted strings without brackets:
/// [`quoted_list`]); failing those, an array type takes
/// the text as its one element. Text that is plainly meant as an array or object (it
/// closes its bracket, or nests too deep) but cannot be read is refused with the reason.
fn from_text(shape: &Shape, text: String) -> Result<Value, Refusal> {
    let types = shape.types;
    let trimmed = text.trim();
    // A number or a boolean written as a quoted literal (`'12'`) is read without its quotes.
    let scalar = quoted_text(trimmed).map_or(trimmed, str::trim);
    if types.contains(TypeSet::INTEGER)
        && let Some(integer) = parse_integer(scalar)
    {
        return Ok(integer);
    }
    if types.contains(TypeSet::NUMBER)
        && let Some(number) = parse_number(scalar)
    {
        return Ok(number);
    }
    if types.contains(TypeSet::BOOLEAN) {
        if scalar.eq_ignore_ascii_case("true") {
            return Ok(Value::Bool(true));
        }
        if scalar.eq_ignore_ascii_case("false") {
            return Ok(Value::Bool(false));
        }
    }
    if types.contains(TypeSet::NULL) && trimmed == "null" {
        return Ok(Value::Null);
    }
    let mut reason = None;
    if types.contains(TypeSet::OBJECT) && trimmed.starts_with('{') {
        match structured(trimmed, '}') {
            Ok(object @ Value::Object(_)) => return Ok(object),
            Ok(_) => {}
            Err(why) => reason = why,
        }
    }
    if types.contains(TypeSet::ARRAY) {
        if trimmed.starts_with('[') {
            match structured(trimmed, ']') {
                Ok(array @ Value::Array(_)) => return Ok(array),
                Ok(_) => {}
                Err(why) => reason = reason.or(why),
            }
        } else if splits_on_commas(shape) && trimmed.contains(LIST_SEPARATORS) {
            return Ok(comma_list(trimmed));
        } else if let Some(members) = member_list(shape, trimmed) {
            return Ok(members);
        } else if let Some(list) = quoted_list(trimmed) {
            return Ok(list);
        }
        if reason.is_none() {
            return Ok(Value::Array(vec![Value::String(text)]));
        }
    }
    Err(Refusal {
        value: Value::String(text),
        reason,
    })
}

/// Text that opens with `[` or `{`, read as JSON, else as a Python/JavaScript literal.
/// `Err(Some(reason))` when it cannot be read but is plainly meant as one (it ends with
/// `close`, or nests deeper than the reader allows); `Err(None)` when it may be plain text
/// that merely starts with a bracket (`[draft] notes`).
fn structured(trimmed: &str, close: char) -> Result<Value, Option<String>> {
    // serde_json has its own recursion limit (128), so neither reader can blow the stack.
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    match literal::read(trimmed) {
        Ok(value) => Ok(value),
        Err(error @ LiteralError::TooDeep) => Err(Some(error.to_string())),
        Err(error) if trimmed.ends_with(close) => Err(Some(error.to_string())),
        Err(_) => Err(None),
    }
}

/// Whether an array's text may be a bare comma-separated list: its items are numbers or
/// booleans (maybe null), never strings, objects or arrays, whose text can hold commas.
fn splits_on_commas(shape: &Shape) -> bool {
    shape.items.as_ref().is_some_and(|items| {
        let types = items.types;
        types.contains(TypeSet::INTEGER | TypeSet::NUMBER | TypeSet::BOOLEAN)
            && !types.contains(TypeSet::STRING | TypeSet::OBJECT | TypeSet::ARRAY)
    })
}

/// `vegan, gluten-free` for an array whose items are enumerated strings: a comma-separated
/// list when the text is not itself a member and every part names one (exactly, quoted or
/// in another ASCII case, as [`unquoted_member`] reads an item). Text with commas that
/// does not list members (`Paris, France` for free strings, or for an enum that lacks
/// one of its parts) stays a single value. The parts are coerced as items after.
fn member_list(shape: &Shape, trimmed: &str) -> Option<Value> {
    let items = shape.items.as_deref()?;
    if items.enumeration.is_none()
        || !items.types.contains(TypeSet::STRING)
        || !trimmed.contains(LIST_SEPARATORS)
        || names_member(items, trimmed)
    {
        return None;
    }
    let list = comma_list(trimmed);
    let Value::Array(parts) = &list else {
        return None;
    };
    let every = parts
        .iter()
        .all(|part| part.as_str().is_some_and(|text| names_member(items, text)));
    every.then_some(list)
}

/// `"2018-2019", "2019-2020"`: a list of two or more quoted strings written without its
/// brackets (the e2e model wrote lists so in both protocols), read as the literal list it
/// is inside `[` … `]`. Text that only starts with a quote (`"Hi", she said`) does not read
/// as a list of strings and stays a single value.
fn quoted_list(trimmed: &str) -> Option<Value> {
    if !trimmed.starts_with(['"', '\'']) || !trimmed.contains(',') {
        return None;
    }
    match literal::read(&format!("[{trimmed}]")) {
        Ok(Value::Array(items)) if items.len() >= 2 && items.iter().all(Value::is_string) => {
            Some(Value::Array(items))
        }
        _ => None,
    }
}

/// Whether `text` is a member of `shape`'s enum or names exactly one ([`unquoted_member`]).
fn names_member(shape: &Shape, text: &str) -> bool {
    let exact = shape
        .enumeration
        .as_ref()
        .is_some_and(|allowed| allowed.iter().any(|v| v.as_str() == Some(text)));
    exact || unquoted_member(shape, text).is_some()
}

/// What separates the items of a bare list: the ASCII comma, the full-width comma and the
/// ideographic enumeration comma models writing CJK text use (`3，5`, `3、5`).
const LIST_SEPARATORS: [char; 3] = [',', '，', '、'];

/// `3,4,5` or `3, 4, 5,` (or `3、4、5`) as text items, trimmed (one trailing separator
/// allowed); the items are coerced after, each reported on its own index.
fn comma_list(trimmed: &str) -> Value {
    let trimmed = trimmed.strip_suffix(LIST_SEPARATORS).unwrap_or(trimmed);
    Value::Array(
        trimmed
            .split(LIST_SEPARATORS)
            .map(|item| Value::String(item.trim().to_owned()))
            .collect(),
    )
}

fn has_type(types: TypeSet, value: &Value) -> bool {
    match value {
        Value::String(_) => types.contains(TypeSet::STRING),
        Value::Bool(_) => types.contains(TypeSet::BOOLEAN),
        Value::Null => types.contains(TypeSet::NULL),
        Value::Object(_) => types.contains(TypeSet::OBJECT),
        Value::Array(_) => types.contains(TypeSet::ARRAY),
        Value::Number(number) => {
            types.contains(TypeSet::NUMBER)
                || (types.contains(TypeSet::INTEGER) && (number.is_i64() || number.is_u64()))
        }
    }
}

fn parse_integer(text: &str) -> Option<Value> {
    if let Ok(integer) = text.parse::<i64>() {
        return Some(integer.into());
    }
    if let Ok(integer) = text.parse::<u64>() {
        return Some(integer.into());
    }
    // `1e3` and `12.0` are integers too, when exact; `12.5` is not.
    text.parse::<f64>().ok().and_then(integral)
}

fn parse_number(text: &str) -> Option<Value> {
    if let Ok(integer) = text.parse::<i64>() {
        return Some(integer.into());
    }
    if let Ok(integer) = text.parse::<u64>() {
        return Some(integer.into());
    }
    text.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

/// The integer a float equals, when it is finite, whole and fits in an `i64`.
fn integral(float: f64) -> Option<Value> {
    // i64::MAX as f64 rounds up to 2^63, which does not fit: compare with `<`.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (float.is_finite() && float.fract() == 0.0 && (-LIMIT..LIMIT).contains(&float))
        .then(|| Value::from(float as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_rejects_fractions_and_out_of_range() {
        assert_eq!(integral(12.0), Some(Value::from(12)));
        assert_eq!(integral(12.5), None);
        assert_eq!(integral(9.3e18), None);
        assert_eq!(integral(f64::NAN), None);
    }
}
