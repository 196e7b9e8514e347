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
//!
//! [`read_llama_event`] reads one event of llama.cpp's native `/completion` stream the same
//! way (its fields are listed there).

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

impl Chunk {
    /// Reads a `content` field: text (when not empty), nothing for `null` or no field, and
    /// any other JSON kind named in `bad_content`.
    fn content(&mut self, content: Option<&Value>) {
        match content {
            None | Some(Value::Null) => {}
            Some(Value::String(content)) => {
                if !content.is_empty() {
                    self.items.push(ModelItem::Text(content.clone()));
                }
            }
            Some(Value::Bool(_)) => self.bad_content = Some("a boolean"),
            Some(Value::Number(_)) => self.bad_content = Some("a number"),
            Some(Value::Array(_)) => self.bad_content = Some("an array"),
            Some(Value::Object(_)) => self.bad_content = Some("an object"),
        }
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
            out.content(delta.get("content"));
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

/// Reads one event of llama.cpp's native `/completion` stream (`llama-server`; the data of
/// one server-sent event, or the whole answer when not streamed).
///
/// ```
/// use tam_model::chunk::read_llama_event;
/// use tam_model::{FinishReason, ModelItem};
///
/// let last = r#"{"content":"","stop":true,"stop_type":"word","stopping_word":"</ACTION>","tokens_predicted":9,"tokens_evaluated":40}"#;
/// let items = read_llama_event(last).unwrap().items;
/// assert_eq!(items[0], ModelItem::StopSequence("</ACTION>".into()));
/// assert_eq!(items[1], ModelItem::Finish(FinishReason::Stop));
/// assert!(matches!(&items[2], ModelItem::Usage(u) if u["total_tokens"] == 49));
/// ```
///
/// * `content` → [`ModelItem::Text`] (empty skipped; another JSON kind is named in
///   [`Chunk::bad_content`]).
/// * `stop: true` marks the last event; its `stop_type` is how the reply ended: `eos` (the
///   model ended it) and `word` (a stop sequence) → [`FinishReason::Stop`], `limit` (the
///   token limit, or the context filled up) → [`FinishReason::Length`], any other name →
///   [`FinishReason::Other`], none → `Stop`. With `word`, a non-empty `stopping_word` comes
///   first as [`ModelItem::StopSequence`] (the server leaves it out of `content`).
/// * On the last event, `tokens_evaluated` (the prompt's tokens), `tokens_predicted` (the
///   reply's) → [`ModelItem::Usage`] as `prompt_tokens`, `completion_tokens` and their sum
///   `total_tokens`, with the server's `timings` object as sent. Earlier events carry the
///   running counts too; they are not usage.
/// * `error` → [`ChunkError::Server`], as in [`read_chunk`].
///
/// The endpoint has no reasoning field: a reasoning model's `<think>…</think>` arrives as
/// text ([`ThinkSplitter`](crate::ThinkSplitter) splits it out).
pub fn read_llama_event(data: &str) -> Result<Chunk, ChunkError> {
    let event: Map<String, Value> =
        serde_json::from_str(data).map_err(|error| ChunkError::NotJson(error.to_string()))?;
    if let Some(error) = event.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(ChunkError::Server(message));
    }
    let mut out = Chunk::default();
    out.content(event.get("content"));
    if event.get("stop").and_then(Value::as_bool) != Some(true) {
        return Ok(out);
    }
    let stop_type = event.get("stop_type").and_then(Value::as_str);
    if stop_type == Some("word")
        && let Some(word) = event
            .get("stopping_word")
            .and_then(Value::as_str)
            .filter(|w| !w.is_empty())
    {
        out.items.push(ModelItem::StopSequence(word.to_owned()));
    }
    let reason = match stop_type {
        None | Some("eos" | "word") => FinishReason::Stop,
        Some("limit") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_owned()),
    };
    out.items.push(ModelItem::Finish(reason));
    let mut usage = Map::new();
    let prompt = event.get("tokens_evaluated").and_then(Value::as_u64);
    let completion = event.get("tokens_predicted").and_then(Value::as_u64);
    if let Some(n) = prompt {
        usage.insert("prompt_tokens".into(), n.into());
    }
    if let Some(n) = completion {
        usage.insert("completion_tokens".into(), n.into());
    }
    if let (Some(p), Some(c)) = (prompt, completion) {
        usage.insert("total_tokens".into(), p.saturating_add(c).into());
    }
    if let Some(timings) = event.get("timings").filter(|t| t.is_object()) {
        usage.insert("timings".into(), timings.clone());
    }
    if !usage.is_empty() {
        out.items.push(ModelItem::Usage(usage));
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

    fn llama(data: &str) -> Vec<ModelItem> {
        read_llama_event(data).unwrap().items
    }

    /// The events llama-server writes on `/completion` with `"stream": true` (fields as its
    /// server sends them: every event carries the running counts, the last one `stop`,
    /// `stop_type`, `stopping_word` and `timings`).
    #[test]
    fn llama_completion_events_are_read() {
        let partial = r#"{"index":0,"content":"Hi","tokens":[13048],"stop":false,"id_slot":0,"tokens_predicted":1,"tokens_evaluated":12}"#;
        assert_eq!(llama(partial), [ModelItem::Text("Hi".into())]);
        let last = r#"{"index":0,"content":" x","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":7,"tokens_evaluated":12,"generation_settings":{},"prompt":"p","has_new_line":false,"truncated":false,"stop_type":"word","stopping_word":"</ACTION>","tokens_cached":18,"timings":{"prompt_n":12,"predicted_n":7}}"#;
        let got = llama(last);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], ModelItem::Text(" x".into()));
        assert_eq!(got[1], ModelItem::StopSequence("</ACTION>".into()));
        assert_eq!(got[2], ModelItem::Finish(FinishReason::Stop));
        let ModelItem::Usage(usage) = &got[3] else {
            panic!("{got:?}")
        };
        assert_eq!(
            Value::Object(usage.clone()),
            serde_json::json!({
                "prompt_tokens": 12,
                "completion_tokens": 7,
                "total_tokens": 19,
                "timings": {"prompt_n": 12, "predicted_n": 7}
            })
        );
        assert!(read_llama_event(last).unwrap().finished());
        assert!(!read_llama_event(partial).unwrap().finished());
    }

    #[test]
    fn llama_stop_types_are_finish_reasons() {
        let finish = |stop_type: &str| {
            let data = format!(
                r#"{{"content":"","stop":true,"stop_type":"{stop_type}","stopping_word":""}}"#
            );
            llama(&data)
        };
        assert_eq!(finish("eos"), [ModelItem::Finish(FinishReason::Stop)]);
        assert_eq!(finish("limit"), [ModelItem::Finish(FinishReason::Length)]);
        // A word stop whose word is empty names none.
        assert_eq!(finish("word"), [ModelItem::Finish(FinishReason::Stop)]);
        assert_eq!(
            finish("none"),
            [ModelItem::Finish(FinishReason::Other("none".into()))]
        );
        assert_eq!(
            llama(r#"{"content":"","stop":true}"#),
            [ModelItem::Finish(FinishReason::Stop)]
        );
        // The stopping word only counts with a word stop.
        assert_eq!(
            llama(r#"{"stop":true,"stop_type":"eos","stopping_word":"</ACTION>"}"#),
            [ModelItem::Finish(FinishReason::Stop)]
        );
    }

    #[test]
    fn llama_errors_and_bad_content() {
        assert_eq!(
            read_llama_event(r#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#),
            Err(ChunkError::Server("boom".into()))
        );
        assert!(matches!(
            read_llama_event("[1]"),
            Err(ChunkError::NotJson(_))
        ));
        let chunk = read_llama_event(r#"{"content":[1],"stop":false}"#).unwrap();
        assert_eq!(chunk.items, []);
        assert_eq!(chunk.bad_content, Some("an array"));
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
