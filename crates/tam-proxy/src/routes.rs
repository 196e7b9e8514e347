//! The routes: health, the three client APIs (whole or streamed) over one flow, models.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use tokio::sync::OwnedSemaphorePermit;

use access::{LogsItself, RequestInfo, RequestLog, Summary};

use api::chat::ChunkWriter;
use api::{Ending, ErrorShape, Gathered, Wire, unique_id};
use conversation::{Conversation, Translated};
use response::Translator;
use serde_json::{Map, Value};
use tam_model::openai::{LlamaCompletionModel, OpenAiConfig, OpenAiModel, UpstreamKind};
use tam_model::{
    BoxError, Constraint, LanguageModel, Message, ModelItem, ModelOptions, ModelRequest,
};
use tool_dispatch::{Protocol, grammar_options_for, taught_protocol};
use tool_schema::ToolDefinition;
use tool_schema::grammar::{Activation, StrictGrammar};

use crate::config::{self, Shared};
use crate::{ProxyConfig, ProxyError, access, api, conversation, response};

/// `GET /health`: `{"status":"ok"}`, without a key and without asking the upstream.
pub(crate) async fn health() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
        .into_response()
}

pub(crate) async fn not_found(uri: Uri) -> Response {
    ProxyError::NotFound(uri.path().to_owned())
        .into_shaped_response(ErrorShape::of_path(uri.path()))
}

pub(crate) async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    request: Request,
) -> Response {
    handle(
        &shared,
        request,
        ErrorShape::OpenAi,
        None,
        |body, model, id| {
            let conversation = api::chat::read(body, model)?;
            let writer = ChunkWriter::new(id, &conversation.model, conversation.include_usage);
            Ok((conversation, writer))
        },
    )
    .await
}

/// How long an idle Messages stream waits before a `ping` event.
const PING_EVERY: Duration = Duration::from_secs(10);

pub(crate) async fn messages(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    handle(
        &shared,
        request,
        ErrorShape::Anthropic,
        Some(PING_EVERY),
        api::messages::read,
    )
    .await
}

pub(crate) async fn count_tokens(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    match api::messages::count_tokens(&shared, request).await {
        Ok(response) => response,
        Err(error) => error.into_shaped_response(ErrorShape::Anthropic),
    }
}

pub(crate) async fn responses(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    handle(
        &shared,
        request,
        ErrorShape::OpenAi,
        None,
        api::responses::read,
    )
    .await
}

/// One request of any API: its reply, and the facts of its log line in the response's
/// extensions.
async fn handle<W: Wire>(
    shared: &Shared,
    request: Request,
    shape: ErrorShape,
    ping: Option<Duration>,
    read: impl FnOnce(&[u8], &str, &str) -> Result<(Conversation, W), ProxyError>,
) -> Response {
    let info = request.extensions().get::<RequestInfo>().cloned();
    let mut summary = Summary::default();
    match complete(shared, request, info, &mut summary, read, ping).await {
        Ok(mut response) => {
            response.extensions_mut().insert(summary);
            response
        }
        Err(error) => {
            summary.outcome = Some(error.code().to_owned());
            let mut response = error.into_shaped_response(shape);
            response.extensions_mut().insert(summary);
            response
        }
    }
}

/// The request's body, within the size limit and the body time-out.
pub(crate) async fn read_body(config: &ProxyConfig, request: Request) -> Result<Bytes, ProxyError> {
    let read = Bytes::from_request(request, &());
    let body = if config.body_timeout.is_zero() {
        read.await
    } else {
        tokio::time::timeout(config.body_timeout, read)
            .await
            .map_err(|_| ProxyError::RequestTimeout(config.body_timeout))?
    };
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ProxyError::BodyTooLarge {
                limit: config.max_request_bytes,
            }
        } else {
            ProxyError::invalid("invalid_json", rejection.body_text())
        }
    })
}

/// The one flow of every API: read the request into the conversation, translate it, ask
/// the upstream, decode its reply, and write it with the API's `W`.
async fn complete<W: Wire>(
    shared: &Shared,
    request: Request,
    info: Option<RequestInfo>,
    summary: &mut Summary,
    read: impl FnOnce(&[u8], &str, &str) -> Result<(Conversation, W), ProxyError>,
    ping: Option<Duration>,
) -> Result<Response, ProxyError> {
    let config = &shared.config;
    let body = read_body(config, request).await?;
    let id = unique_id();
    let (conversation, writer) = read(&body, &config.upstream.model, &id)?;
    let request = conversation::translate(conversation, config.decoder.protocol)?;
    summary.model = Some(request.model.clone());
    let slot = shared.upstream_slot().await?;
    let Translated {
        model: model_name,
        messages,
        mut options,
        extra,
        stream,
        offered,
        decode,
        max_calls,
        prompted,
        activation,
    } = request;
    let translator = Translator::new(
        config.decoder,
        decode,
        stream.then_some(config.stream_after_bytes),
        offered,
        max_calls,
        id.clone(),
    );
    merge_stop_sequences(&mut options, translator.stop_sequences());
    // Strict calls: the grammar of the offered tools, in the form the upstream takes.
    let strict = if config.strict && decode {
        strict_constraint(shared, &prompted, activation, info.as_ref()).await
    } else {
        None
    };
    if decode {
        summary.constrained = Some(strict.is_some());
    }
    let upstream_config = request_upstream_config(config, &model_name, strict.as_ref(), extra);
    if config.log_prompts {
        log_prompt(info.as_ref(), &model_name, &messages);
    }
    let model = shared.model.with_config(upstream_config);
    let mut upstream = open_upstream(&model, ModelRequest::new(messages, options), strict);

    // The first item decides the status: an upstream error is answered with its own.
    let first = match upstream.next().await {
        Some(Err(error)) => return Err(ProxyError::from_upstream(&*error)),
        other => other,
    };
    if stream {
        let log = info.map(|info| RequestLog::new(info, 200, std::mem::take(summary)));
        let mut response = stream_response(
            first,
            upstream,
            translator,
            writer,
            Held {
                slot: Some(slot),
                log,
            },
            ping,
        );
        response.extensions_mut().insert(LogsItself);
        Ok(response)
    } else {
        whole_response(first, upstream, translator, writer, slot, summary).await
    }
}

/// Puts the protocol's end markers (`stop`) before the client's own stop sequences.
fn merge_stop_sequences(options: &mut ModelOptions, mut stop: Vec<String>) {
    // The model's turn ends at its call: the protocol's end markers go upstream
    // as stop sequences, before the client's own.
    if !stop.is_empty() {
        for own in options.stop.drain(..) {
            if !stop.contains(&own) {
                stop.push(own);
            }
        }
        options.stop = stop;
    }
}

/// The upstream's configuration for one request: its model name and body fields.
fn request_upstream_config(
    config: &ProxyConfig,
    model_name: &str,
    strict: Option<&Constraint>,
    mut extra: Map<String, Value>,
) -> OpenAiConfig {
    // Usage is always asked for (the proxy streams from the upstream), and reported to the
    // client as its API does.
    extra.insert(
        "stream_options".into(),
        serde_json::json!({"include_usage": true}),
    );
    let mut upstream_config = config.upstream.clone();
    model_name.clone_into(&mut upstream_config.model);
    if matches!(strict, Some(Constraint::Gbnf { .. })) {
        // The fields that make the `/completion` request itself are the proxy's: a
        // client's own would replace the rendered prompt or the grammar.
        for field in COMPLETION_OWN_FIELDS {
            extra.remove(field);
        }
    }
    // The client's fields first; the operator's `extra_body` wins.
    let mut fields = extra;
    fields.extend(std::mem::take(&mut upstream_config.extra_body));
    upstream_config.extra_body = fields;
    upstream_config
}

/// Logs the messages sent upstream (with `log_prompts`).
fn log_prompt(info: Option<&RequestInfo>, model_name: &str, messages: &[Message]) {
    tracing::info!(
        target: "tam_proxy::prompt",
        request_id = info.map(|i| tracing::field::display(&i.id)),
        model = %model_name,
        messages = %serde_json::to_string(&messages).unwrap_or_default(),
    );
}

/// The upstream's stream for `model_request`, with the `strict` constraint if any.
fn open_upstream(
    model: &OpenAiModel,
    mut model_request: ModelRequest,
    strict: Option<Constraint>,
) -> Upstream {
    match strict {
        Some(constraint @ Constraint::Gbnf { .. }) => {
            model_request = model_request.with_constraint(constraint);
            LlamaCompletionModel::sharing(model).stream(&model_request)
        }
        Some(constraint) => {
            model_request = model_request.with_constraint(constraint);
            model.stream(&model_request)
        }
        None => model.stream(&model_request),
    }
}

/// A request without `stream`: the whole reply as one JSON body, its facts in `summary`.
async fn whole_response<W: Wire>(
    first: Option<Result<ModelItem, BoxError>>,
    upstream: Upstream,
    translator: Translator,
    writer: W,
    slot: OwnedSemaphorePermit,
    summary: &mut Summary,
) -> Result<Response, ProxyError> {
    let (gathered, mut translator) = gather(first, upstream, translator).await?;
    drop(slot);
    let finish = translator.finish(false);
    let mut gathered = gathered;
    for piece in translator.drain() {
        gathered.push(piece);
    }
    summary.calls = translator.calls();
    summary.usage = translator.usage().cloned();
    summary.outcome = Some(finish.as_openai().to_owned());
    let ending = Ending {
        finish: &finish,
        usage: translator.usage(),
        stop_sequence: translator.client_stop_sequence(),
    };
    let value = writer.whole(gathered, &ending);
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response())
}

/// The fields of a llama-server `/completion` request the proxy makes itself when it sends
/// a grammar: the rendered prompt, streaming, and the constraint (`json_schema` and
/// `response_format` would ask for another one). A client's are dropped.
const COMPLETION_OWN_FIELDS: [&str; 8] = [
    "prompt",
    "stream",
    "grammar",
    "grammar_lazy",
    "grammar_triggers",
    "preserved_tokens",
    "json_schema",
    "response_format",
];

/// The constraint for a request offering `tools` (as prompted) in the proxy's protocol,
/// in the form the upstream's kind takes: a GBNF grammar for llama.cpp, a structural tag
/// for vLLM and SGLang, none for any other server. A grammar that cannot be built (too
/// large, no tool that can be written in the protocol) is one log line and no constraint:
/// the request is answered from the prompt alone, as without strict calls.
async fn strict_constraint(
    shared: &Shared,
    tools: &[ToolDefinition],
    activation: Activation,
    info: Option<&RequestInfo>,
) -> Option<Constraint> {
    let kind = shared.upstream_kind().await;
    // Only the kinds that take a constraint get one.
    config::strict_form(kind)?;
    let config = &shared.config;
    let options = grammar_options_for(config.decoder.protocol).with_activation(activation);
    let grammar = match StrictGrammar::new(tools, &options) {
        Ok(grammar) => grammar,
        Err(error) => {
            tracing::warn!(
                target: "tam_proxy::strict",
                request_id = info.map(|i| tracing::field::display(&i.id)),
                %error,
                "no strict-call grammar for this request: answered from the prompt alone"
            );
            return None;
        }
    };
    // The decoder's TAM dialect must end its blocks where the grammar does.
    if taught_protocol(config.decoder.protocol) == Protocol::Tam
        && grammar.end_marker() != config.decoder.tam.dialect.end_marker()
    {
        return None;
    }
    Some(match kind {
        UpstreamKind::LlamaCpp => Constraint::Gbnf {
            grammar: grammar.gbnf().to_owned(),
            lazy: activation == Activation::Lazy,
            // A grammar that applies from the reply's start needs no trigger.
            triggers: match activation {
                Activation::Lazy => grammar.triggers().map(str::to_owned).to_vec(),
                Activation::Required => Vec::new(),
            },
            patterns: grammar.trigger_patterns(),
        },
        UpstreamKind::Vllm | UpstreamKind::Sglang | UpstreamKind::Other => {
            Constraint::StructuralTag(grammar.structural_tag())
        }
    })
}

/// What a streamed response holds until it ends: its upstream slot and its log line.
pub(crate) struct Held {
    /// `None` once the upstream request is closed.
    pub(crate) slot: Option<OwnedSemaphorePermit>,
    pub(crate) log: Option<RequestLog>,
}

type Upstream = BoxStream<'static, Result<ModelItem, BoxError>>;

/// A request without `stream`: the reply's pieces up to the end of the turn (the caller
/// finishes the translator).
pub(crate) async fn gather(
    first: Option<Result<ModelItem, BoxError>>,
    mut upstream: Upstream,
    mut translator: Translator,
) -> Result<(Gathered, Translator), ProxyError> {
    let mut gathered = Gathered::default();
    let mut next = first;
    while let Some(item) = next {
        match item {
            Ok(item) => translator.feed(item),
            Err(error) => return Err(ProxyError::from_upstream(&*error)),
        }
        for piece in translator.drain() {
            gathered.push(piece);
        }
        if translator.turn_over() {
            // The turn ended at the call: the upstream request is closed now, whatever
            // the model would write next.
            break;
        }
        next = upstream.next().await;
    }
    drop(upstream);
    Ok((gathered, translator))
}

/// The state of one streamed response.
pub(crate) struct Streaming<W: Wire> {
    pub(crate) first: Option<Option<Result<ModelItem, BoxError>>>,
    /// `None` once the turn ended at a call: the upstream request is dropped then.
    pub(crate) upstream: Option<Upstream>,
    pub(crate) translator: Translator,
    pub(crate) writer: W,
    pub(crate) done: bool,
    /// Released when the response ends or is dropped (the client went away): the
    /// upstream slot, and the log line, written then.
    pub(crate) held: Held,
}

impl<W: Wire> Streaming<W> {
    /// The events of the next upstream item (none, or the last ones).
    pub(crate) async fn step(&mut self) -> Vec<Event> {
        let next = match (self.first.take(), &mut self.upstream) {
            (Some(first), _) => first,
            (None, Some(upstream)) => upstream.next().await,
            (None, None) => None,
        };
        let mut events = Vec::new();
        match next {
            Some(Ok(item)) => {
                self.translator.feed(item);
                self.drain_into(&mut events);
                if self.translator.turn_over() {
                    // The turn ended at the call: close the upstream request
                    // now; the next step finishes the reply.
                    self.upstream = None;
                    self.held.slot = None;
                }
            }
            Some(Err(error)) => {
                self.translator.finish(true);
                self.drain_into(&mut events);
                let error = ProxyError::from_upstream(&*error);
                events.extend(self.writer.fail(&error));
                self.log(error.code());
                self.done = true;
            }
            None => {
                let finish = self.translator.finish(false);
                self.drain_into(&mut events);
                if let Some(error) = self.translator.failure() {
                    // A streamed call the block did not confirm: chunks cannot be taken
                    // back, so the reply ends as a broken stream.
                    events.extend(self.writer.fail(&error));
                    self.log(error.code());
                } else {
                    self.log(finish.as_openai());
                    let ending = Ending {
                        finish: &finish,
                        usage: self.translator.usage(),
                        stop_sequence: self.translator.client_stop_sequence(),
                    };
                    events.extend(self.writer.finish(&ending));
                }
                self.done = true;
            }
        }
        events
    }

    /// Fills in the log line's outcome (written when the response is dropped).
    pub(crate) fn log(&mut self, outcome: &str) {
        if let Some(log) = &mut self.held.log {
            log.summary.outcome = Some(outcome.to_owned());
        }
    }

    pub(crate) fn drain_into(&mut self, events: &mut Vec<Event>) {
        for piece in self.translator.drain() {
            events.extend(self.writer.piece(piece));
        }
    }
}

/// A request with `stream: true`: the writer's events, as the upstream streams. Dropping
/// the response (the client went away) drops the upstream stream and its connection.
/// With `ping`, an idle stream gets the API's keep-alive event that often.
pub(crate) fn stream_response<W: Wire>(
    first: Option<Result<ModelItem, BoxError>>,
    upstream: Upstream,
    translator: Translator,
    mut writer: W,
    mut held: Held,
    ping: Option<Duration>,
) -> Response {
    let start = writer.start();
    if let Some(log) = &mut held.log {
        // Until the reply ends, the outcome is that the client went away.
        log.summary.outcome = Some("client_closed".to_owned());
    }
    let state = Streaming {
        first: Some(first),
        upstream: Some(upstream),
        translator,
        writer,
        done: false,
        held,
    };
    let events = stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let events = state.step().await;
        Some((stream::iter(events), state))
    })
    .flatten();
    let all = stream::iter(start)
        .chain(events)
        .map(Ok::<Event, Infallible>);
    let sse = Sse::new(all);
    match ping {
        Some(every) => sse
            .keep_alive(
                KeepAlive::new()
                    .interval(every)
                    .event(Event::default().event("ping").data(r#"{"type":"ping"}"#)),
            )
            .into_response(),
        None => sse.into_response(),
    }
}

impl<W: Wire> Drop for Streaming<W> {
    fn drop(&mut self) {
        if let Some(log) = &mut self.held.log {
            log.summary.calls = self.translator.calls();
            log.summary.usage = self.translator.usage().cloned();
        }
    }
}

pub(crate) async fn models(State(shared): State<Arc<Shared>>) -> Response {
    pass_models(&shared, "").await
}

pub(crate) async fn model_by_id(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Response {
    match model_segment(&id) {
        Some(segment) => pass_models(&shared, &format!("/{segment}")).await,
        None => ProxyError::invalid("invalid_model", format!("'{id}' is not a model id"))
            .into_response(),
    }
}

/// A model id as one path segment of `{upstream}/models/…`: every byte but the URL's
/// unreserved ones percent-encoded (a `/` in the id included), so the id can never name
/// another path on the upstream (`../../admin/keys` stays inside `/models`). `None` for
/// an empty id and for `.` and `..`, which a URL reads as a step up.
pub(crate) fn model_segment(id: &str) -> Option<String> {
    if id.is_empty() || id == "." || id == ".." {
        return None;
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(out)
}

/// `GET {upstream}/models{suffix}`, answered with the upstream's status, content type and
/// body (streamed, not buffered).
pub(crate) async fn pass_models(shared: &Shared, suffix: &str) -> Response {
    let _slot = match shared.upstream_slot().await {
        Ok(slot) => slot,
        Err(error) => return error.into_response(),
    };
    let upstream = &shared.config.upstream;
    let url = format!("{}/models{suffix}", upstream.base_url.trim_end_matches('/'));
    let mut request = shared.http.get(url);
    if let Some(key) = &upstream.api_key {
        request = request.bearer_auth(key);
    }
    let response = match tokio::time::timeout(upstream.idle_timeout, request.send()).await {
        Err(_) => {
            return ProxyError::Timeout(format!(
                "no answer from the upstream for {:?}",
                upstream.idle_timeout
            ))
            .into_response();
        }
        Ok(Err(error)) => return ProxyError::Unreachable(error.to_string()).into_response(),
        Ok(Ok(response)) => response,
    };
    let status =
        StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| header::HeaderValue::from_static("application/json"));
    let body = Body::from_stream(response.bytes_stream());
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::model_segment;

    #[test]
    fn a_model_id_is_one_segment_that_cannot_step_out() {
        assert_eq!(model_segment("qwen").as_deref(), Some("qwen"));
        assert_eq!(
            model_segment("../../admin/keys").as_deref(),
            Some("..%2F..%2Fadmin%2Fkeys")
        );
        assert_eq!(
            model_segment("meta-llama/Llama 3?x#y").as_deref(),
            Some("meta-llama%2FLlama%203%3Fx%23y")
        );
        assert_eq!(model_segment("模型").as_deref(), Some("%E6%A8%A1%E5%9E%8B"));
        for refused in ["", ".", ".."] {
            assert_eq!(model_segment(refused), None, "{refused:?}");
        }
    }
}
