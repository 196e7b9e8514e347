//! The unified tool result (`tool-result-format.md`): every call, whatever ran it, ends as
//! one [`ToolExecutionResult`].

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::Error;

/// Well-known values of [`ToolExecutionResult::operation_type`]; the field is open, a tool
/// may use any other string.
pub mod operation_type {
    /// A read: the data is what was found.
    pub const QUERY: &str = "query";
    /// An action with a side effect other than saving.
    pub const OPERATION: &str = "operation";
    /// A write that stored something.
    pub const SAVE: &str = "save";
    /// The dispatcher's own results (null returns, time-outs, refusals), where the tool's
    /// kind of operation is not known.
    pub const UNKNOWN: &str = "unknown";
}

/// Message of the result that replaces a tool's missing return value.
pub const NULL_RESULT_MESSAGE: &str = "tool returned null";

/// The result of one tool call, serialised exactly as the seed's JSON: `success`,
/// `operationType`, `data`, `message` and, when present, `metadata`.
///
/// `data` is three-state because the seed's JSON is: `None` omits the field (only the
/// null-return result does this), `Some(Value::Null)` writes `"data": null` (empty and
/// failure results), anything else is the payload.
///
/// ```
/// use tool_dispatch::ToolExecutionResult;
/// use serde_json::json;
///
/// let found = ToolExecutionResult::query_success(json!(["a", "b"]), "found 2 rows");
/// assert_eq!(
///     found.to_string(),
///     r#"{"success":true,"operationType":"query","data":["a","b"],"message":"found 2 rows"}"#
/// );
/// let nothing = ToolExecutionResult::null_result();
/// assert_eq!(
///     nothing.to_string(),
///     r#"{"success":false,"operationType":"unknown","message":"tool returned null"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolExecutionResult {
    /// `true` when the operation succeeded and produced data; `false` for a failure or no
    /// data. A workflow stops on `false`.
    pub success: bool,
    /// `query`, `operation`, `save`, … (see [`operation_type`]). Parsing a result that
    /// lacks it gives `unknown`.
    #[serde(default = "unknown_operation")]
    pub operation_type: String,
    /// The payload; see the type's docs for `None` versus `Some(Value::Null)`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "deserialize_present"
    )]
    pub data: Option<Value>,
    /// What happened, for the model and for logs. Parsing a result that lacks it gives "".
    #[serde(default)]
    pub message: String,
    /// Optional extra facts (paging, totals, timings); omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

fn unknown_operation() -> String {
    operation_type::UNKNOWN.to_owned()
}

/// Keeps an explicit `"data": null` apart from a missing field: serde only calls this when
/// the field is present.
fn deserialize_present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl ToolExecutionResult {
    /// A successful result of any operation type.
    pub fn success(
        operation_type: impl Into<String>,
        data: Value,
        message: impl Into<String>,
    ) -> Self {
        Self {
            success: true,
            operation_type: operation_type.into(),
            data: Some(data),
            message: message.into(),
            metadata: None,
        }
    }

    /// `querySuccess(data, message)`: a query that found data.
    pub fn query_success(data: Value, message: impl Into<String>) -> Self {
        Self::success(operation_type::QUERY, data, message)
    }

    /// `saveSuccess(data, message)`: a write that stored something.
    pub fn save_success(data: Value, message: impl Into<String>) -> Self {
        Self::success(operation_type::SAVE, data, message)
    }

    /// `empty(operationType, message)`: the operation ran but found nothing; `success` is
    /// `false` so a workflow stops, `data` is `null`.
    pub fn empty(operation_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            success: false,
            operation_type: operation_type.into(),
            data: Some(Value::Null),
            message: message.into(),
            metadata: None,
        }
    }

    /// `failure(operationType, message)`: the operation failed; `data` is `null`.
    ///
    /// The JSON is the same shape as [`empty`](Self::empty): the seed's format does not
    /// tell "failed" from "found nothing" apart, only the message does.
    pub fn failure(operation_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self::empty(operation_type, message)
    }

    /// What a tool that returned nothing becomes:
    /// `{"success":false,"operationType":"unknown","message":"tool returned null"}`.
    pub fn null_result() -> Self {
        Self {
            success: false,
            operation_type: unknown_operation(),
            data: None,
            message: NULL_RESULT_MESSAGE.to_owned(),
            metadata: None,
        }
    }

    /// Attaches `metadata`, replacing any already there.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// `ToolResultProcessor.parse`: reads a result from the JSON text a tool returned.
    ///
    /// # Errors
    /// [`Error::InvalidResult`] when the text is not JSON or is not an object with a
    /// boolean `success`.
    pub fn parse(json: &str) -> Result<Self, Error> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| Error::InvalidResult(e.to_string()))?;
        Self::from_value(value)
    }

    /// Reads a result from a JSON value (an object with a boolean `success`).
    ///
    /// # Errors
    /// [`Error::InvalidResult`] when the value does not have that shape.
    pub fn from_value(value: Value) -> Result<Self, Error> {
        serde_json::from_value(value).map_err(|e| Error::InvalidResult(e.to_string()))
    }

    /// `isSuccess`: the `success` flag.
    pub fn is_success(&self) -> bool {
        self.success
    }

    /// `isEmpty`: `true` when the data holds nothing: the field is absent, `null`, an empty
    /// string, an empty array or an empty object. Independent of `success`.
    pub fn is_empty(&self) -> bool {
        match &self.data {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(o)) => o.is_empty(),
            Some(_) => false,
        }
    }

    /// `extractData`: the payload, or `None` when it is absent or `null`.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref().filter(|v| !v.is_null())
    }

    /// `getMessage`: the message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `toAiFriendlyMessage`: one line a model reads easily, e.g.
    /// `Success (query): found 2 rows. Data: ["a","b"]` or
    /// `Failure (save): title must not be empty`.
    pub fn to_ai_friendly_message(&self) -> String {
        let verdict = if self.success { "Success" } else { "Failure" };
        let mut out = format!("{verdict} ({}): {}", self.operation_type, self.message);
        if let Some(data) = self.data() {
            out.push_str(". Data: ");
            out.push_str(&render_value(data));
        }
        out
    }
}

impl fmt::Display for ToolExecutionResult {
    /// The compact JSON form, as a tool in the seed returns it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&json)
    }
}

impl FromStr for ToolExecutionResult {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

/// A value as a model should read it: a string verbatim, anything else as compact JSON.
pub(crate) fn render_value(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::Array(_)
        | Value::Object(_)) => Cow::Owned(other.to_string()),
    }
}

/// What a tool body may return; the dispatcher turns it into a [`ToolExecutionResult`].
///
/// Returning nothing (`()`, `None`, JSON `null`) gives [`ToolExecutionResult::null_result`];
/// `Err(e)` gives a failure whose message is `e`'s `Display`; JSON text or a JSON value must
/// have the result's shape (the seed's tools return JSON strings), anything else becomes a
/// failure that says so.
pub trait IntoToolResult {
    /// Converts into the unified result.
    fn into_tool_result(self) -> ToolExecutionResult;
}

impl IntoToolResult for ToolExecutionResult {
    fn into_tool_result(self) -> ToolExecutionResult {
        self
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> ToolExecutionResult {
        ToolExecutionResult::null_result()
    }
}

impl<T: IntoToolResult> IntoToolResult for Option<T> {
    fn into_tool_result(self) -> ToolExecutionResult {
        self.map_or_else(ToolExecutionResult::null_result, T::into_tool_result)
    }
}

impl<T: IntoToolResult, E: fmt::Display> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> ToolExecutionResult {
        match self {
            Ok(v) => v.into_tool_result(),
            Err(e) => ToolExecutionResult::failure(operation_type::UNKNOWN, e.to_string()),
        }
    }
}

impl IntoToolResult for Value {
    fn into_tool_result(self) -> ToolExecutionResult {
        if self.is_null() {
            return ToolExecutionResult::null_result();
        }
        ToolExecutionResult::from_value(self).into_tool_result()
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolExecutionResult {
        self.as_str().into_tool_result()
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolExecutionResult {
        serde_json::from_str::<Value>(self)
            .map_err(|e| Error::InvalidResult(e.to_string()))
            .map(Value::into_tool_result)
            .into_tool_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seed_shapes_serialise_field_for_field() {
        let cases = [
            (
                ToolExecutionResult::empty("query", "no rows"),
                json!({"success":false,"operationType":"query","data":null,"message":"no rows"}),
            ),
            (
                ToolExecutionResult::save_success(json!({"blogId":7}), "saved"),
                json!({"success":true,"operationType":"save","data":{"blogId":7},"message":"saved"}),
            ),
            (
                ToolExecutionResult::failure("operation", "denied"),
                json!({"success":false,"operationType":"operation","data":null,"message":"denied"}),
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(serde_json::to_value(&result).unwrap(), expected);
        }
    }

    #[test]
    fn explicit_null_data_survives_a_round_trip_and_absent_data_stays_absent() {
        let with_null = ToolExecutionResult::parse(
            r#"{"success":false,"operationType":"query","data":null,"message":"m"}"#,
        )
        .unwrap();
        assert_eq!(with_null.data, Some(Value::Null));
        let absent =
            ToolExecutionResult::parse(r#"{"success":false,"message":"tool returned null"}"#)
                .unwrap();
        assert_eq!(absent, ToolExecutionResult::null_result());
    }
}
