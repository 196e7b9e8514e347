//! [`LlamaCompletionModel`]: llama.cpp's `llama-server` through its native `/completion`
//! endpoint, where a caller's lazy grammar is honoured.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::stream::BoxStream;
use serde_json::{Map, Value, json};

use super::{
    Dialect, OpenAiConfig, OpenAiError, OpenAiModel, build_client, connect, error_answer,
    messages_json, post_json, send, stream_items, whole_body,
};
use crate::BoxError;
use crate::model::{Constraint, LanguageModel, ModelItem, ModelRequest};

/// Default of [`LlamaCompletionModel::with_max_prompt_bytes`]: 16 MiB, far above the
/// rendered prompt of any context a server holds (128 Ki tokens are about 0.5 MB of text).
pub const DEFAULT_MAX_PROMPT_BYTES: usize = 16 << 20;

/// The [`OpenAiConfig::extra_body`] fields that shape the prompt: they go to
/// `/apply-template`, every other one to `/completion`.
const TEMPLATE_FIELDS: [&str; 5] = [
    "chat_template_kwargs",
    "add_generation_prompt",
    "continue_final_message",
    "reasoning_format",
    "reasoning_effort",
];

/// llama-server's grammar-trigger type for a word (`COMMON_GRAMMAR_TRIGGER_TYPE_WORD`):
/// the server reads a trigger's `type` as a number (`"type": "word"` is a 400, "type must
/// be number", and the older `{"word": …, "at_start": …}` a 400, "key 'type' not found").
const TRIGGER_TYPE_WORD: u8 = 1;

/// llama-server's grammar-trigger type for a regular expression searched in the reply
/// written so far (`COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN`): the grammar applies from the
/// match's first capture group.
const TRIGGER_TYPE_PATTERN: u8 = 2;

/// A [`LanguageModel`] for llama.cpp's `llama-server` over its native endpoints, so that a
/// request's [`Constraint::Gbnf`] grammar — lazy ones included — constrains the reply
/// (llama-server's `chat/completions` replaces a caller's lazy grammar and triggers with
/// the chat template's own).
///
/// For each request:
///
/// 1. `POST {server}/apply-template` with `{"messages": […]}` (the same messages
///    [`OpenAiModel`] sends) renders the conversation with the model's chat template; the
///    answer's `prompt` is the text to complete (it ends with the assistant turn's start).
/// 2. `POST {server}/completion` with `"prompt"`, `"stream": true`, `"cache_prompt": true`
///    (the server reuses the cached prefix of the last prompt: an agent's next turn only
///    evaluates what was added), the options that are set (`temperature`, `n_predict` for
///    `max_tokens`, `stop`, `seed`) and, for a [`Constraint::Gbnf`]: `grammar`,
///    `grammar_lazy`, `grammar_triggers` as `[{"type": 1, "value": WORD}]` (the server
///    reads the type as a number, 1 being a word), then `{"type": 2, "value": PATTERN}`
///    for each trigger pattern, and `preserved_tokens` listing the
///    trigger words (a trigger that is a single token must be one, or the server refuses
///    the request; a preserved special token is also written into the reply's text, where
///    the decoder must see the block's start).
///
/// `{server}` is [`OpenAiConfig::server_url`] (the base URL without `/v1`). When
/// [`OpenAiConfig::model`] is not empty both bodies carry it as `model` (llama-server's
/// router mode picks the model by it; a single-model server ignores it). The
/// [`OpenAiConfig::extra_body`] fields that shape the prompt — `chat_template_kwargs`,
/// `add_generation_prompt`, `continue_final_message`, `reasoning_format`,
/// `reasoning_effort` — go to `/apply-template`; every other one goes to `/completion`,
/// over the built fields (`"cache_prompt": false` for reproducible output). A
/// [`Constraint::StructuralTag`] is not sent: llama-server has no structural tags.
///
/// The stream's events are read by [`read_llama_event`](crate::chunk::read_llama_event):
/// `content` → [`ModelItem::Text`]; the last event (`"stop": true`) → a
/// [`ModelItem::StopSequence`] for a `word` stop, [`ModelItem::Finish`] (`eos`, `word` →
/// `stop`, `limit` → `length`) and [`ModelItem::Usage`]. The usage comes only there,
/// after all of the reply's text: a consumer that stops reading where the text closed a
/// call, before the model's end of generation arrives, has none. The endpoint has no
/// reasoning field, so a reasoning model's `<think>` section comes as text. A stream that
/// closes before its last event is cut ([`OpenAiError::Transport`]).
///
/// The completion request asks `Connection: close`: llama-server closes the connection
/// after a streamed answer anyway, without saying so, and a pooled connection it closed
/// fails the next request sent on it.
///
/// Errors are the [`OpenAiError`]s of [`OpenAiModel`], for either request: a non-2xx
/// answer is `Http` (llama-server answers a refused grammar or trigger with 400 and its
/// message), a silent server `IdleTimeout`, and so on; an `/apply-template` answer without
/// a prompt is `InvalidTemplate`.
#[derive(Debug, Clone)]
pub struct LlamaCompletionModel {
    client: reqwest::Client,
    config: Arc<OpenAiConfig>,
    max_prompt_bytes: usize,
}

impl LlamaCompletionModel {
    /// A model over `config` (its `base_url` may end in `/v1`, as for [`OpenAiModel`]).
    ///
    /// # Errors
    /// [`OpenAiError::Client`] when the HTTP client cannot be built (TLS set-up).
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        Ok(Self {
            client: build_client(&config)?,
            config: Arc::new(config),
            max_prompt_bytes: DEFAULT_MAX_PROMPT_BYTES,
        })
    }

    /// A model over `model`'s configuration sharing its HTTP client and connection pool:
    /// cheap, so a proxy holding an [`OpenAiModel`] makes one per request.
    pub fn sharing(model: &OpenAiModel) -> Self {
        Self {
            client: model.client().clone(),
            config: Arc::new(model.config().clone()),
            max_prompt_bytes: DEFAULT_MAX_PROMPT_BYTES,
        }
    }

    /// A model over `config` sharing this model's HTTP client (see
    /// [`OpenAiModel::with_config`]).
    pub fn with_config(&self, config: OpenAiConfig) -> Self {
        Self {
            client: self.client.clone(),
            config: Arc::new(config),
            max_prompt_bytes: self.max_prompt_bytes,
        }
    }

    /// This model with the most bytes of an `/apply-template` answer it reads (at least
    /// 1); past it the stream ends with [`OpenAiError::InvalidTemplate`]. Default:
    /// [`DEFAULT_MAX_PROMPT_BYTES`].
    #[must_use]
    pub fn with_max_prompt_bytes(mut self, max_prompt_bytes: usize) -> Self {
        self.max_prompt_bytes = max_prompt_bytes.max(1);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL of the template request: `{server}/apply-template`.
    pub fn template_url(&self) -> String {
        format!("{}/apply-template", self.config.server_url())
    }

    /// The URL of the completion request: `{server}/completion`.
    pub fn completion_url(&self) -> String {
        format!("{}/completion", self.config.server_url())
    }

    /// The JSON body of the template request for `request`: `messages`, `model` (when
    /// set) and the prompt-shaping fields of [`OpenAiConfig::extra_body`].
    pub fn template_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        if !self.config.model.is_empty() {
            body.insert("model".into(), self.config.model.clone().into());
        }
        body.insert("messages".into(), messages_json(&request.messages));
        for (key, value) in &self.config.extra_body {
            if TEMPLATE_FIELDS.contains(&key.as_str()) {
                body.insert(key.clone(), value.clone());
            }
        }
        Value::Object(body)
    }

    /// The JSON body of the completion request for `request` once its conversation is
    /// rendered as `prompt` (see the type's documentation for the fields).
    pub fn completion_body(&self, request: &ModelRequest, prompt: &str) -> Value {
        let mut body = Map::new();
        if !self.config.model.is_empty() {
            body.insert("model".into(), self.config.model.clone().into());
        }
        body.insert("prompt".into(), prompt.into());
        body.insert("stream".into(), true.into());
        body.insert("cache_prompt".into(), true.into());
        let options = &request.options;
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = options.max_tokens {
            body.insert("n_predict".into(), n.into());
        }
        if !options.stop.is_empty() {
            body.insert("stop".into(), options.stop.clone().into());
        }
        if let Some(seed) = options.seed {
            body.insert("seed".into(), seed.into());
        }
        if let Some(Constraint::Gbnf {
            grammar,
            lazy,
            triggers,
            patterns,
        }) = &request.constraint
        {
            body.insert("grammar".into(), grammar.clone().into());
            body.insert("grammar_lazy".into(), (*lazy).into());
            let words: Vec<Value> = triggers
                .iter()
                .map(|word| json!({"type": TRIGGER_TYPE_WORD, "value": word}))
                .chain(
                    patterns
                        .iter()
                        .map(|p| json!({"type": TRIGGER_TYPE_PATTERN, "value": p})),
                )
                .collect();
            body.insert("grammar_triggers".into(), words.into());
            body.insert("preserved_tokens".into(), triggers.clone().into());
        }
        for (key, value) in &self.config.extra_body {
            if !TEMPLATE_FIELDS.contains(&key.as_str()) {
                body.insert(key.clone(), value.clone());
            }
        }
        Value::Object(body)
    }
}

impl LanguageModel for LlamaCompletionModel {
    fn stream(&self, request: &ModelRequest) -> BoxStream<'static, Result<ModelItem, BoxError>> {
        let client = self.client.clone();
        let config = self.config.clone();
        let template = post_json(
            &client,
            &config,
            self.template_url(),
            &self.template_body(request),
        )
        .header("accept", "application/json");
        let completion_url = self.completion_url();
        let mut body = self.completion_body(request, "");
        let limit = self.max_prompt_bytes;
        let start = async move {
            let prompt = render(template, &config, limit).await?;
            body["prompt"] = prompt.into();
            // llama-server closes the connection after a streamed answer without saying
            // so (its stream ends with the last chunk, then its HTTP layer reads the
            // finished stream as a failed write and closes): a client that pools the
            // connection sends its next request into the closing socket, and a third of
            // such requests failed with "connection closed before message completed".
            // `Connection: close` keeps the connection out of the pool.
            let start = post_json(&client, &config, completion_url, &body)
                .header("accept", "text/event-stream")
                .header("connection", "close");
            connect(start, config.idle_timeout).await
        };
        stream_items(start.boxed(), Dialect::LlamaCompletion, &self.config)
    }
}

/// Sends the template request and reads the prompt from its answer.
async fn render(
    request: reqwest::RequestBuilder,
    config: &OpenAiConfig,
    limit: usize,
) -> Result<String, OpenAiError> {
    let idle = config.idle_timeout;
    let response = send(request, idle).await?;
    if !response.status().is_success() {
        return Err(error_answer(response, idle).await);
    }
    let Some(bytes) = whole_body(response, idle, limit).await? else {
        return Err(OpenAiError::InvalidTemplate(format!(
            "the answer is larger than {limit} bytes"
        )));
    };
    let cut = || {
        String::from_utf8_lossy(&bytes)
            .chars()
            .take(200)
            .collect::<String>()
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut answer)) => match answer.remove("prompt") {
            Some(Value::String(prompt)) => Ok(prompt),
            _ => Err(OpenAiError::InvalidTemplate(format!(
                "no string \"prompt\" in '{}'",
                cut()
            ))),
        },
        Ok(_) => Err(OpenAiError::InvalidTemplate(format!(
            "not a JSON object: '{}'",
            cut()
        ))),
        Err(error) => Err(OpenAiError::InvalidTemplate(format!(
            "not JSON ({error}): '{}'",
            cut()
        ))),
    }
}
