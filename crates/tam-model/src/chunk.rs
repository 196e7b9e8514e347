//! One OpenAI `chat.completion.chunk`, read: the one chunk reader of the family (the
//! OpenAI client, `tam decode --input sse` and the proxy's upstream all go through it).
//!
//! ```
//! use tam_model::chunk::read_chunk;
//! use tam_model::{FinishReason, ModelItem};
//!
//! let chunk = read_chunk(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"length"}]}"#).unwrap();
//! assert_eq!(chunk.items, [ModelItem::Text("Hi".into()), ModelItem::Finish(FinishReason::Length)]);
//! ```
//!
//! Of a chunk, the choice with `index` 0 (the first when none says) is read:
//! `delta.reasoning_content` or `delta.reasoning` → [`ModelItem::Reasoning`],
//! `delta.content` → [`ModelItem::Text`], each of `delta.tool_calls` →
//! [`ModelItem::ToolCallChunk`], `finish_reason` → [`ModelItem::Finish`], then `usage`
//! (on the chunk, with or without choices) → [`ModelItem::Usage`]; empty pieces are skipped.
//! A `delta.content` that is neither text nor `null` gives no item and is named in
//! [`Chunk::bad_content`]. The `data: [DONE]` sentinel is not a chunk: callers check for it
//! first.

use serde_json::{Map, Value};

use crate::model::{FinishReason, ModelItem, ToolCallChunk};

/// What one chunk carried, in the order above.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Chunk {
    /// The items, in stream order.
    pub items: Vec<ModelItem>,
    /// The kind of a `delta.content` that was neither a string nor `null` ("a number",
    /// "an array", …): the chunk's content was skipped.
    pub bad_content: Option<&'static str>,
}

impl Chunk {
    /// Whether the chunk said how the reply finished.
    pub fn finished(&self) -> bool {
        self.items
            .iter()
            .any(|item| matches!(item, ModelItem::Finish(_)))
    }
}

/// Why a chunk could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkError {
    /// The data is not a JSON object (the parser's message).
    NotJson(String),
    /// The chunk carries an `error` object instead of a reply: its `message` (or the whole
    /// `error` value as JSON text).
    Server(String),
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::NotJson(reason) => write!(f, "not a JSON object: {reason}"),
            ChunkError::Server(message) => write!(f, "the server reported an error: {message}"),
        }
    }
}

impl std::error::Error for ChunkError {}

/// Reads one chunk's data (the `data` of one server-sent event).
pub fn read_chunk(data: &str) -> Result<Chunk, ChunkError> {
    let chunk: Map<String, Value> =
        serde_json::from_str(data).map_err(|error| ChunkError::NotJson(error.to_string()))?;
    if let Some(error) = chunk.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(ChunkError::Server(message));
    }
    let mut out = Chunk::default();
    if let Some(choice) = first_choice(&chunk) {
        if let Some(delta) = choice.get("delta") {
            let text = |key: &str| {
                delta
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
            };
            if let Some(reasoning) = text("reasoning_content").or_else(|| text("reasoning")) {
                out.items.push(ModelItem::Reasoning(reasoning.to_owned()));
            }
            match delta.get("content") {
                None | Some(Value::Null) => {}
                Some(Value::String(content)) => {
                    if !content.is_empty() {
                        out.items.push(ModelItem::Text(content.clone()));
                    }
                }
                Some(Value::Bool(_)) => out.bad_content = Some("a boolean"),
                Some(Value::Number(_)) => out.bad_content = Some("a number"),
                Some(Value::Array(_)) => out.bad_content = Some("an array"),
                Some(Value::Object(_)) => out.bad_content = Some("an object"),
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (position, call) in calls.iter().enumerate() {
                    out.items
                        .push(ModelItem::ToolCallChunk(tool_call_chunk(position, call)));
                }
            }
        }
        // Where the server stopped, when it names a stop sequence (a number there is a
        // stop token's id: not a sequence of the text).
        if let Some(sequence) = ["stop_reason", "matched_stop"]
            .iter()
            .find_map(|key| choice.get(*key).and_then(Value::as_str))
            .filter(|s| !s.is_empty())
        {
            out.items.push(ModelItem::StopSequence(sequence.to_owned()));
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            out.items
                .push(ModelItem::Finish(FinishReason::from_name(reason)));
        }
    }
    // `usage` may come on a chunk of its own, with no choices (OpenAI's `include_usage`),
    // or beside the finish (llama-server).
    if let Some(usage) = chunk
        .get("usage")
        .and_then(Value::as_object)
        .filter(|u| !u.is_empty())
    {
        out.items.push(ModelItem::Usage(usage.clone()));
    }
    Ok(out)
}

/// A chunk's first choice (`index` 0, else the first of `choices`).
fn first_choice(chunk: &Map<String, Value>) -> Option<&Value> {
    let choices = chunk.get("choices")?.as_array()?;
    choices
        .iter()
        .find(|choice| choice.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| choices.first())
}

/// One entry of `delta.tool_calls` (`position`: its place in the array, the index when it
/// names none).
fn tool_call_chunk(position: usize, call: &Value) -> ToolCallChunk {
    let string = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let index = call
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(position);
    let function = call.get("function");
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(text)) => text.clone(),
        // Some servers send the arguments as an object rather than JSON text.
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    ToolCallChunk::new(
        index,
        string(call.get("id")),
        string(function.and_then(|f| f.get("name"))),
        arguments,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(data: &str) -> Vec<ModelItem> {
        read_chunk(data).unwrap().items
    }

    /// vLLM names the stop sequence it stopped at (`stop_reason`), SGLang too
    /// (`matched_stop`); a number there is a stop token's id, and null says nothing.
    #[test]
    fn the_stop_sequence_a_server_names_is_read() {
        let vllm = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":"</ACTION>"}]}"#;
        assert_eq!(
            items(vllm),
            [
                ModelItem::StopSequence("</ACTION>".into()),
                ModelItem::Finish(FinishReason::Stop)
            ]
        );
        let sglang = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","matched_stop":"<|[END_TOOL]|>"}]}"#;
        assert_eq!(
            items(sglang)[0],
            ModelItem::StopSequence("<|[END_TOOL]|>".into())
        );
        for silent in [
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop","matched_stop":151645}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ] {
            assert_eq!(
                items(silent),
                [ModelItem::Finish(FinishReason::Stop)],
                "{silent}"
            );
        }
    }

    #[test]
    fn the_choice_with_index_0_is_read() {
        let data = r#"{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}"#;
        assert_eq!(items(data), [ModelItem::Text("a".into())]);
        let unindexed = r#"{"choices":[{"delta":{"content":"x"}}]}"#;
        assert_eq!(items(unindexed), [ModelItem::Text("x".into())]);
    }

    #[test]
    fn chunks_without_content_give_no_text() {
        for data in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":null}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""}}]}"#,
            r#"{"choices":[]}"#,
        ] {
            assert_eq!(items(data), [], "{data}");
        }
    }

    #[test]
    fn reasoning_text_calls_finish_and_usage_come_in_order() {
        let data = r#"{"choices":[{"index":0,"delta":{"reasoning_content":"r","content":"t","tool_calls":[{"id":"c1","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"total_tokens":3}}"#;
        let got = items(data);
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[0], ModelItem::Reasoning("r".into()));
        assert_eq!(got[1], ModelItem::Text("t".into()));
        assert_eq!(
            got[2],
            ModelItem::ToolCallChunk(ToolCallChunk::new(
                0,
                Some("c1".into()),
                Some("f".into()),
                r#"{"a":1}"#
            ))
        );
        assert_eq!(got[3], ModelItem::Finish(FinishReason::ToolCalls));
        assert!(matches!(&got[4], ModelItem::Usage(u) if u["total_tokens"] == 3));
        assert!(read_chunk(data).unwrap().finished());
    }

    #[test]
    fn usage_alone_is_read() {
        let got = items(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#);
        assert!(matches!(&got[..], [ModelItem::Usage(_)]));
    }

    #[test]
    fn bad_content_is_named_not_fed() {
        let chunk = read_chunk(r#"{"choices":[{"delta":{"content":7}}]}"#).unwrap();
        assert_eq!(chunk.items, []);
        assert_eq!(chunk.bad_content, Some("a number"));
    }

    #[test]
    fn errors_and_non_json_are_errors() {
        assert_eq!(
            read_chunk(r#"{"error":{"message":"boom"}}"#),
            Err(ChunkError::Server("boom".into()))
        );
        assert!(matches!(
            read_chunk("not json"),
            Err(ChunkError::NotJson(_))
        ));
        assert!(matches!(read_chunk("[1]"), Err(ChunkError::NotJson(_))));
    }
}
