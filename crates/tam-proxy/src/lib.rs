//! A server that gives native tool calling to any model that can follow a text protocol
//! (`tam serve`), for clients of OpenAI Chat Completions, Anthropic Messages and OpenAI
//! Responses.
//!
//! A client sends `POST /v1/chat/completions` with `tools`, as to OpenAI. The proxy writes
//! tool-schema's compact [`SystemPrompt`](tool_schema::SystemPrompt) (the protocol's
//! format, its rules and an example block first, the tool list last; English) for its
//! [`ProtocolChoice`] (ACTION XML by default, TAM on request; `Auto` teaches TAM) after the
//! client's own system message (in ACTION followed by two fixed example turns), rewrites
//! the history (an assistant message's `tool_calls` → the protocol's block, a `tool` message →
//! its `Observation: …` line), asks the upstream server — any OpenAI-compatible server,
//! through [`OpenAiModel`] — without `tools`, and decodes the upstream's text as it
//! streams: prose comes back as `delta.content`, each call as `delta.tool_calls` chunks
//! whose arguments are a JSON object typed by the tool's schema, string arguments
//! streaming while the model writes them ("Arguments that stream").
//!
//! ```no_run
//! use tam::ProtocolChoice;
//! use tam_model::openai::OpenAiConfig;
//! use tam_proxy::{ProxyConfig, serve};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // A server's sockets are open files: raise the process's soft limit to its hard one
//! // first (unix), and the default connection cap is sized from it.
//! let _ = tam_proxy::raise_open_file_limit();
//! let config = ProxyConfig::new(OpenAiConfig::new("http://127.0.0.1:8081/v1", ""))
//!     .with_protocol(ProtocolChoice::Tam) // the default is ProtocolChoice::Action
//!     .with_client_keys(["a-long-random-key"]); // none: open to anyone who reaches it
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // With its connection cap and header time-out; `tam_proxy::router(config)` is the
//! // same proxy as an axum::Router to mount in your own server.
//! serve(listener, config, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! Three client APIs over one translation: each reads its own request into one
//! conversation (turns, offered tools, tool choice, sampling options), the proxy decodes
//! the upstream's text into one stream of pieces (prose, reasoning, a call starting, its
//! arguments, its end), and each writes those pieces in its own events. Every rule below —
//! a tool not offered is text, a block that fails is text, the turn ends at the call, a
//! quoted, cut, reasoned or unfinished call never becomes a call — holds in each.
//!
//! * `POST /v1/chat/completions` — `stream` true (server-sent events, `data: [DONE]` at
//!   the end) or false (one `chat.completion`).
//! * `POST /v1/messages` (Anthropic Messages; `?beta=true` and other query parameters
//!   ignored) — `system` (a string or text blocks; `cache_control` ignored), `messages`
//!   whose content is a string or blocks (`text`; `tool_use` → the protocol's block;
//!   `tool_result` → its observation, `is_error` → `Observation: Error - …`; `thinking`
//!   and `redacted_thinking` dropped; a `system` message among the turns, as Claude Code
//!   sends, is a system turn), `tools` (`name`, `description`, `input_schema`; a tool of
//!   another `type`, a server tool, is not offered and is named in one log line),
//!   `tool_choice` (`auto`, `any`, `tool`, `none`; `disable_parallel_tool_use`),
//!   `max_tokens`, `stop_sequences` (after the protocol's end marker), `temperature`,
//!   `top_p` and `top_k` (passed on); every other field (`metadata`, `thinking`,
//!   `context_management`, `output_config`, …) is accepted and not sent upstream. An
//!   `image` or `document` block is a 400 naming it: the upstream is a text model. The
//!   reply: a `message` whose `content` holds `text`, `thinking` (reasoning, empty
//!   `signature`) and `tool_use` blocks (`toolu_…` ids, `input` typed by the tool's
//!   schema), `stop_reason` `end_turn`, `tool_use`, `max_tokens` or `stop_sequence`, and
//!   `usage` from the upstream's; streamed as `message_start`, `content_block_start` /
//!   `content_block_delta` (`text_delta`, `thinking_delta`, `input_json_delta`) /
//!   `content_block_stop` — blocks one after another, never interleaved: a call that
//!   begins while another's block is open waits for its end — `message_delta`,
//!   `message_stop`, a `ping` every 10 s of silence, and an `error` event when the upstream
//!   breaks. Errors are Anthropic's shape, `{"type":"error","error":{"type","message"}}`.
//!   Client keys are read from `x-api-key` as well as `Authorization: Bearer`.
//! * `POST /v1/messages/count_tokens` — the tokens of the prompt the upstream would get
//!   (the system prompt with the tools, the demonstration, the history as text), counted
//!   by the upstream's tokenizer where it has one (llama-server's `POST /tokenize`), else
//!   estimated: one token per four bytes of each message, plus four per message.
//! * `POST /v1/responses` (OpenAI Responses) — `instructions`, `input` (a string, or items:
//!   `message` of role `user`, `assistant`, `system` or `developer` with text parts;
//!   `function_call` and `custom_tool_call` → the protocol's block; their outputs →
//!   observations; `reasoning` and built-in tools' items dropped), `tools` (`function`;
//!   `custom` — freeform, raw text — offered as a tool with one string parameter `input`
//!   and returned as a `custom_tool_call` whose `input` is that text exactly; a
//!   `namespace`'s functions offered by their own names, a call returned as a
//!   `function_call` with its `namespace`; built-in tools not offered, named in one log
//!   line), `tool_choice`, `parallel_tool_calls`, `max_output_tokens`, `temperature`,
//!   `top_p`; `store`, `include`, `reasoning`, `text` and other fields accepted and not
//!   sent upstream. Responses are not stored: `previous_response_id` is a 400 saying so.
//!   The reply: a `response` (`output` items `message`, `reasoning`, `function_call`,
//!   `custom_tool_call`; `usage`; `status` `incomplete` with `incomplete_details` at the
//!   token limit), streamed as `response.created`, `response.in_progress`,
//!   `response.output_item.added`, `response.content_part.added`,
//!   `response.output_text.delta` / `.done`, `response.content_part.done`,
//!   `response.function_call_arguments.delta` / `.done`,
//!   `response.custom_tool_call_input.delta` / `.done` (a custom call's text whole, at its
//!   end), `response.output_item.done`, and `response.completed` (`response.incomplete`;
//!   `response.failed` when the upstream breaks), each with its `sequence_number`.
//!
//! In TAM the key `command` names the tool, so a parameter whose key reads as one
//! (Claude Code's `Bash` takes `command`) is offered to the model as `arg_command` and
//! read back under its own name, in calls and in the history.
//! * `GET /v1/models`, `GET /v1/models/{id}` — passed through to the upstream (status,
//!   content type and body as they come).
//! * `GET /health` — `200 {"status":"ok"}` without asking the upstream and without a key
//!   (a liveness check; it says nothing of the upstream).
//!
//! # Access
//!
//! Every route but `/health` (unknown paths included) first applies, in this order:
//!
//! * **`Origin`.** A request with an `Origin` header comes from a web page; it gets 403
//!   `origin_not_allowed` unless the origin is one of [`ProxyConfig::allowed_origins`]
//!   (compared exactly, as the browser writes it: `https://app.example`). Allowed origins
//!   also get CORS answers (preflight included; methods GET and POST, headers
//!   `Authorization` and `Content-Type`). None are allowed by default: the proxy's clients
//!   are programs, and a page the operator visits must not be able to use it.
//! * **Client keys.** With [`ProxyConfig::client_keys`], a request must send one as
//!   `Authorization: Bearer KEY` (the scheme in any case) or as `x-api-key: KEY` (as
//!   Anthropic's clients do), else 401 `invalid_api_key` with `WWW-Authenticate: Bearer`
//!   (in Anthropic's error shape on the Messages routes). Keys are compared in constant
//!   time ([`ClientKeys`]). Without keys the proxy is open to anyone who reaches it; it
//!   listens where it is told, so keep it on loopback or behind a firewall then.
//! * **JSON only.** A POST's `Content-Type` must be `application/json` (parameters such as
//!   `charset` allowed), else 415 `unsupported_media_type`: the bodies a web page can send
//!   without a CORS preflight (`text/plain`, forms) are never read.
//!
//! Then the body must arrive within [`ProxyConfig::body_timeout`] (30 s; else 408
//! `request_timeout`) and be at most [`ProxyConfig::max_request_bytes`] (4 MiB; else 413).
//! At most [`ProxyConfig::max_upstream_concurrency`] (64) requests ask the upstream at
//! once; a request over it waits in a queue, first come first served, for at most
//! [`ProxyConfig::upstream_queue_timeout`] (60 s). It gets 503 `server_busy` with
//! `Retry-After: 1` when the queue already holds [`ProxyConfig::upstream_queue`] (1 024)
//! requests, or when its wait runs out: a burst of clients is served in turn instead of
//! being turned away, and the queue cannot grow without bound behind a slow upstream. A
//! client that goes away while it waits leaves the queue. A streamed reply holds its
//! slot until it ends.
//!
//! [`serve`] adds limits of its own (a [`router`] mounted elsewhere gets its server's):
//!
//! * **Open connections**: at most [`ProxyConfig::max_connections`], by default half the
//!   process's soft open-file limit ([`default_max_connections`], at most 16 384; call
//!   [`raise_open_file_limit`] before making the configuration, as `tam serve` does). At
//!   the cap a new connection closes the oldest open connection that is not serving a
//!   request — one still sending its header, or an idle kept-alive one — so connections
//!   that send half a header and then nothing can never lock real clients out. A
//!   connection serves a request from the moment its header has arrived until the last
//!   bytes of the answer (a stream's included) are written to its socket, and is never
//!   closed meanwhile. Only when every open connection is serving a request is a new one
//!   answered `503` `too_many_connections` at once, as far as the socket takes it, and
//!   closed.
//! * **Header time-out**: a request's header must arrive within
//!   [`ProxyConfig::header_timeout`] (10 s, counted from when the connection waits for a
//!   request: an idle kept-alive connection is closed after it too), else the connection
//!   is closed unanswered.
//! * **Header size**: a request header over 16 KiB is answered 431 and the connection
//!   closed: a connection's read buffer never holds more.
//!
//! Every answer carries an `x-request-id` header, the id of its log line.
//!
//! # Logs
//!
//! One [`tracing`] event per request (not `/health`), target `tam_proxy::request`, level
//! INFO, written when the answer is complete (for a stream: when it ends, or when the
//! client goes away, outcome `client_closed`). Fields: `request_id`, `method`, `path`,
//! `status`, `model`, `calls`, `prompt_tokens` and `completion_tokens` when the upstream
//! reported usage, `outcome` (the finish reason or the error code), `constrained` (for a
//! request whose reply is decoded: whether strict calls constrained it), `queued_ms` (the time
//! it waited in the upstream queue; 0 when it did not wait) and `latency_ms` (from its
//! header to its end, the wait included). A request whose client goes away before its
//! answer is logged with `status` 499 and `outcome` `client_closed` (nothing was sent).
//! Never a key (client or upstream), never a message or an argument of the request or the
//! reply. The crate installs no subscriber: `tam serve` prints them on standard error.
//! When asked ([`ProxyConfig::log_prompts`], `tam serve --log-prompts`), one more event
//! per request, target `tam_proxy::prompt`: `request_id`, `model` and `messages` (the
//! messages the upstream gets, as JSON).
//!
//! # What a request becomes
//!
//! * `tools` (function definitions with JSON Schema parameters) → tool-schema definitions;
//!   the protocol's instructions and the tool list follow the first system message's text
//!   (after a blank line), or make a new first system message. `developer` messages are
//!   system messages. With ACTION, a function (or a top-level parameter) whose name is no
//!   XML element name (`get/weather`, `1password`, `first name`) is refused (400
//!   `invalid_tools`, naming it): a model could never write its call; TAM writes any name.
//! * `tool_choice`: `auto` (default); `none` → no tool prompt and the text passes through
//!   undecoded; `required` → the prompt asks for a call; a named function → only that tool
//!   is offered and the prompt asks for it. `parallel_tool_calls: false` → the prompt asks
//!   for one call and only the first call is a tool call.
//! * The upstream request has no `tools`, `tool_choice`, `parallel_tool_calls`,
//!   `stream_options` or `n` (`n` over 1 is refused: one choice is returned); it always
//!   streams. `max_tokens`, `stop` and `seed` go through [`ModelOptions`](tam_model::ModelOptions);
//!   every other field (`temperature`, `top_p`, `response_format`, vendor fields …) goes
//!   through unchanged as an extra body field, so numbers keep their exact JSON text.
//!   The upstream config's [`extra_body`](tam_model::openai::OpenAiConfig::extra_body) overrides the client's.
//! * The client's `Authorization` header is not forwarded: the upstream gets the key of
//!   the upstream config ([`OpenAiConfig::api_key`](tam_model::openai::OpenAiConfig::api_key)), or none; a client key (see
//!   "Access") is the proxy's own.
//! * Message content may be a string or text parts (joined by a line break); an image,
//!   audio or file part is refused (400 `unsupported_content`): the upstream is a text model.
//! * History: an assistant message's `tool_calls` are written after its text as one block
//!   of the protocol (a TAM chain for several calls; non-string TAM values as their JSON
//!   text, which coercion reads back); a call the renderer cannot write (a key that is not
//!   a TAM key or an XML name, arguments that are not a JSON object) as the line
//!   `Tool call: NAME ARGUMENTS` — ARGUMENTS the client's JSON text, or its text as one
//!   JSON string when it is not JSON; NAME a JSON string unless it is a plain name; every
//!   `<` written `\u003c` — so the line holds no block marker or reasoning tag: the
//!   model's turn never shows a block it did not write. A `tool` message becomes
//!   `Observation: Tool NAME executed successfully. Result: CONTENT`, or
//!   `Observation: Error - Tool NAME failed: MESSAGE` when its content is a result object
//!   with `"success": false`; NAME comes from the call its `tool_call_id` answers. A run
//!   of `tool` messages is one user message, one observation per line (chat templates
//!   want user and assistant turns to alternate), closed — when the request's tools are
//!   prompted — by a blank line and the prompt's line on what to do next
//!   ([`SystemPrompt::after_observations`](tool_schema::SystemPrompt::after_observations):
//!   "Now answer the request in plain text with these results.").
//!   Without it a 1.5B model answered nothing after its results in TAM (`e2e/README.md`,
//!   "Prompt variants").
//!
//! # What a reply becomes
//!
//! * Prose → `delta.content`, as early as the decoder decides it (it holds back at most a
//!   possible marker prefix); `reasoning_content` / `reasoning` → `delta.reasoning_content`,
//!   and so does a `<think>…</think>` section of the text (the decoder's reasoning:
//!   never decoded into calls).
//! * A closed block that decoded without an error and names at least one offered tool
//!   (names compared exactly) → one call per block call to an offered tool, in order: a chunk with `index`,
//!   `id` (`call_…`, unique in the process), `type: "function"`, `function.name` and empty
//!   arguments, then the arguments' JSON text. The arguments are coerced by the tool's
//!   schema (`"3"` → `3` for an integer, TAM keys matched canonically), per argument: an
//!   argument that does not validate is sent as the model wrote it, and so is an unknown
//!   key, while the others are still typed (the client validates, as it must with OpenAI
//!   too). In a streaming request, calls and string arguments stream while the
//!   block is written (below); without `stream`, the reply is made from whole blocks.
//! * A call in such a block to a tool the request did not offer is not a call: it
//!   comes back as content after the block's calls (a small model lists a tool it imagines
//!   beside the ones it has; the others stay calls, and calls already streamed stay
//!   valid). In ACTION such elements come back as the model wrote them, in one `<ACTION>`
//!   block: text in an element outside any parameter stays (a parameter written after its
//!   call closed, `…</kinematics><distance>300</distance>`, reads as a call of a tool
//!   `distance`; re-rendered from its arguments, none, its `300` was lost). TAM calls are
//!   re-rendered in the protocol (their values are all text: nothing is lost). A name that differs from one offered tool's only
//!   in ASCII case and the separators `_`, `-` and `.` names that tool, and the call comes
//!   under the offered name (`prob_dist.binomial` for `prob_dist_binomial`: clients
//!   rewrite names an API refuses, and models write the one they know); when two offered
//!   names match that way, neither does. (The agent of `tool-dispatch` answers such a
//!   call with the registry's "did you mean" instead: it has a next round; the proxy has
//!   not.)
//! * A block naming no offered tool, a block with a decode error, an
//!   ACTION block after the first, and a block left open by a cut stream come back as
//!   their raw text in `delta.content`: never as calls. A block over the decoder's size
//!   limit, whose bytes the decoder drops, comes back as a bracketed note with the error
//!   (`[tool block not shown (CODE): MESSAGE]`), whether it closed or not; a call streamed
//!   from it is never completed (see "Arguments that stream").
//! * Past the call limit (`parallel_tool_calls: false`), further calls come back as content,
//!   the same way.
//! * Native `delta.tool_calls` the upstream sends anyway pass through when they name an
//!   offered tool (indexes after the proxy's own, the upstream's ids); a native call to a
//!   tool the request did not offer (or with no name) is never a call: it comes back at
//!   the end of the content as the line `Tool call: NAME ARGUMENTS`.
//! * `finish_reason` is `tool_calls` when any call was emitted (and every streamed call
//!   was completed), else the upstream's (`stop` for an upstream `tool_calls` whose calls
//!   were not passed on). A `length` finish or a transport error cuts the reply: no call
//!   from a block open at the cut, and a reply with native calls is not
//!   `tool_calls` (their arguments may be cut short): it finishes `length`.
//!
//! # Arguments that stream
//!
//! Long string values stream while the model writes them. A streaming
//! request's reply is decoded with the parsers' argument events, by these rules:
//!
//! * **Short calls wait for their block.** A call goes out before its block closes only
//!   once one of its string values (below) has grown to
//!   [`ProxyConfig::stream_after_bytes`] (256 bytes by default): a file's content, code.
//!   A call whose values stay shorter — most calls — goes out whole when its block closes
//!   and decodes, so a block that turns out not to be calls (a close tag matching
//!   nothing, `<species1>human</species2>`; a start marker repeated and never closed)
//!   comes back as content and voids nothing. Measured on BFCL cases outside the dev set,
//!   such blocks were the last stream errors from a real model's writing (e2e/README.md).
//!   With `stream_after_bytes` 0 every call streams from its tool id, as below.
//! * **When a call may stream.** As soon as the tool id is known and offered and the call
//!   limit allows: an ACTION call element's start tag is complete (`CallStart`) in the
//!   reply's first ACTION block, or a TAM block's unchained `command` value closed
//!   (`CommandSeen`, chain number 0; chained `command1`… calls, and the later calls of a
//!   block without chain numbers — a second `command`, a repeated key —
//!   are emitted whole at the block's close). From there it counts against the call
//!   limit. Its first chunk (`index`, `id`, `function.name`, empty `arguments`) goes out
//!   when its first value streams, after the first chunks of the block's calls before it
//!   that have not gone out (indexes follow the block's order); at once with
//!   `stream_after_bytes` 0.
//! * **Which parameters stream.** A parameter of such a call written after that point
//!   whose key is exactly a property of the tool's schema with `"type": "string"` and
//!   no `enum` or `const` (coercion may change such a value at its close: a quoted member
//!   `'asc'` is `asc`; it goes out complete instead), the first time the key appears in
//!   the call. Once the value is `stream_after_bytes` long its JSON text streams:
//!   `{"key":"` (or `,"key":"`), the value's pieces JSON-escaped as they arrive, then
//!   `"`; a shorter value is held to its end, as below. A value that
//!   coercion may still read as something other than its text is held back, its key
//!   too, until it cannot be (`CompiledTool::text_may_change`): one quoted literal
//!   (`'Apple Inc.'` is `Apple Inc.`), or `None`/`null` for an optional parameter (left
//!   out). A value held to its end did not stream: it goes out with the typed arguments
//!   at the block's close. TAM values
//!   stream verbatim. ACTION values follow the block's edge rules (action-xml's crate
//!   docs): leading whitespace and blank text runs are dropped, trailing whitespace is
//!   held until more text follows, a leading CDATA section loses one line break and the
//!   last keeps its final line break (`tam::ValueEdges`, the same rules as the closed
//!   block, fed the pieces' `cdata` flag). An ACTION value's text also waits from a
//!   close tag in it that names the call's tool or another of its parameters, or its own
//!   key but for ASCII case and the separators `_`, `-` and `.` (`<date>March
//!   10</room_type>`, `<DNA_id>XYZ123</dna_id>`: misspelt close tags the block reads as
//!   the value's): the rest goes out at the value's close tag, or as the block's value.
//! * **The rest at the close.** Every other argument (typed: integers, booleans, objects,
//!   keys matched canonically, parameters written before the call was known) goes out
//!   when the block closes, coerced by the schema as for whole blocks, then `}`. The
//!   concatenated `arguments` are then valid JSON equal to the block's typed arguments
//!   (key order: streamed keys first).
//! * **The block is authoritative.** At the close, every streamed value must equal the
//!   block's final (coerced) value of that key, the call must still be there under the
//!   same tool, and the block must be calls (no decode error). Chunks
//!   cannot be taken back, so when this fails the call's arguments are never completed
//!   (they stay invalid JSON), the block's raw text follows as `delta.content` (nothing
//!   the model wrote is dropped), and the event stream ends with an error event, code
//!   `streamed_call_invalid` (502 body), and no finish chunk and no `[DONE]`: the client
//!   must not run the call. A block never closed at a normal end is the same.
//! * **A cut reply.** A `length` finish with a streamed call's block still open: the
//!   call's arguments are never completed, the block's text follows as content, and
//!   `finish_reason` is `length`, not `tool_calls`. A transport error: the same, then the
//!   error event as below. A call the model did not finish never completes.

//! # Strict calls
//!
//! Where the upstream can constrain its own sampling, the proxy asks it to
//! ([`ProxyConfig::strict`], on by default): once the model starts a block, it can only
//! write a block that decodes into calls of the offered tools — tool names from the
//! request, parameter names from each tool's schema (required ones present, each at most
//! once), values of the schema's type (integers, numbers, booleans, enum members), tags
//! or entries that close. Prose outside blocks is never constrained. The grammar is
//! tool-schema's [`StrictGrammar`](tool_schema::grammar::StrictGrammar), built per request
//! from the tools as the prompt lists them, in the serve protocol (TAM for `Auto`).
//!
//! * **Which servers.** The upstream's kind ([`ProxyConfig::upstream_kind`]) is named or
//!   detected: [`serve`] asks once, at start (llama-server answers `GET /props`, SGLang
//!   `GET /get_server_info`, vLLM `GET /version`), a [`router`] at its first request
//!   with tools; one log line on target `tam_proxy::upstream` gives the kind detected.
//!   llama.cpp's `llama-server` gets a GBNF grammar on its native `/completion`: its
//!   `/v1/chat/completions` replaces a caller's lazy grammar with the chat template's, so
//!   the proxy renders the conversation with `POST /apply-template` and streams
//!   `/completion` ([`LlamaCompletionModel`](tam_model::openai::LlamaCompletionModel),
//!   sharing the proxy's connection pool), with `grammar`, `grammar_lazy`,
//!   `grammar_triggers` (the block's start marker) and `preserved_tokens`. vLLM and SGLang
//!   get `response_format: {"type": "structural_tag", …}` (triggered at the start marker,
//!   `stop_after_first`) on `/v1/chat/completions`. Any other server gets the prompt
//!   alone, as with strict calls off.
//! * **When.** A request that offers tools and whose `tool_choice` is not `none`.
//!   `tool_choice` `auto`: a lazy grammar, free until the model writes the start marker.
//!   `required` (Messages: `{"type":"any"}`) or a named tool (Chat
//!   `{"type":"function","function":{"name":…}}`, Messages `{"type":"tool","name":…}`,
//!   Responses `{"type":"function","name":…}`): a grammar that applies from the reply's
//!   first token, of the named tool alone when one is named.
//! * **The fallback.** A tool set no grammar can be built for — over the grammar's size
//!   limit (1 MiB, 16 384 rules), or no offered tool whose name the protocol can write
//!   (an ACTION tool named `action`, whose close tag would end the block) — is one
//!   warning on target `tam_proxy::strict` and the prompt alone: never a failed request.
//!   The request's log line says whether its reply was constrained (`constrained`).
//! * **What stays the same.** Decoding, the stop sequences (the end marker first), the
//!   three APIs, streaming, and `usage`: `/completion`'s events are read into the same
//!   items — text deltas, the finish (`eos` and `word` → `stop`, `limit` → `length`), the
//!   stop word it stopped at (`stop_type: "word"` with `stopping_word`, so a block stopped
//!   at its end marker closes as a call), and usage from `tokens_evaluated` and
//!   `tokens_predicted` (with `timings`).
//! * **Passthrough fields on `/completion`.** `max_tokens` becomes `n_predict`; `stop`
//!   and `seed` go as they are. Every other field a client sends (and the upstream
//!   config's `extra_body`) goes in the `/completion` body under its own name, where
//!   llama-server reads the sampling fields it shares with the Chat API — `temperature`,
//!   `top_p`, `top_k`, `min_p`, `typical_p`, `presence_penalty`, `frequency_penalty`,
//!   `repeat_penalty`, `logit_bias`, `n_probs`, `max_completion_tokens`, `samplers`, the
//!   `dry_*`, `xtc_*` and `mirostat*` fields — and ignores the others. The fields that
//!   shape the prompt (`chat_template_kwargs`, `add_generation_prompt`,
//!   `continue_final_message`, `reasoning_format`, `reasoning_effort`) go to
//!   `/apply-template` instead. A client's `prompt`, `stream`, `grammar`,
//!   `grammar_lazy`, `grammar_triggers`, `preserved_tokens`, `json_schema` and
//!   `response_format` are dropped: they would replace the rendered prompt or the grammar.
//! * **Off.** [`ProxyConfig::with_strict`]`(false)` (`tam serve --no-strict`): every
//!   request goes to `/v1/chat/completions` with the prompt alone, and the server's kind
//!   is never asked.
//!
//! # Errors
//!
//! Errors are OpenAI error bodies, `{"error":{"message","type","code","param"}}`, see
//! [`ProxyError`]: the upstream's status and message for an upstream HTTP error, 502 for an
//! unreachable upstream or a broken upstream stream, 504 for the upstream time-out
//! ([`ProxyConfig::with_upstream_timeout`], 120 s by default), 413 for a body over
//! [`ProxyConfig::max_request_bytes`], 400 for a request the proxy cannot serve, and the
//! answers of "Access": 401, 403, 415, 408, 503.
//! The proxy waits for the upstream's first item before it answers, so an upstream error
//! arrives with its status even for a streaming request. An upstream that ignores
//! `stream` and answers one whole JSON `chat.completion` is read as that reply (tam-model's
//! OpenAI client), and a whole JSON error object as the upstream's error (502
//! `server_error`). An error after that (the stream
//! broke mid-reply) ends the event stream with a `data: {"error":…}` event and no
//! `[DONE]`; the text decided before it was sent.
//!
//! # Cancellation and limits
//!
//! A client that disconnects — mid-stream, or while waiting for a whole reply — drops its
//! response (or the handler's future), which drops the upstream request: the upstream sees
//! its connection closed. One that disconnects while its request waits in the queue
//! leaves the queue. Memory per stream is the decoder's (at most a
//! block, [`tam::tam_parse::Config::max_block_bytes`], 1 MiB by default, plus 64 KiB) and one
//! upstream event ([`SseConfig::max_event_bytes`](tam_model::sse::SseConfig), 1 MiB by
//! default); a request body is at most [`ProxyConfig::max_request_bytes`] (4 MiB).
//!
//! # The turn ends at the call
//!
//! Models go on writing after a block: an invented `Observation: …`, then more calls built
//! on it. The proxy asks the upstream to stop at the protocol's end marker (a `stop`
//! sequence, before the client's own), and once a block with calls has closed it closes
//! the upstream request and finishes the reply (`finish_reason: "tool_calls"`): nothing the
//! model writes after that block reaches the client. A reply the upstream stopped at the
//! sequence ends where the end marker would begin: at a `stop` finish a block still open
//! is closed by its marker when the upstream says it stopped at that sequence (vLLM's
//! `stop_reason`, SGLang's `matched_stop`), or, when it says nothing, when the block can
//! end there — its last entry or call element complete and nothing but blank space after
//! it ([`tam::turn::stopped_block_closes`]); its decoder then decides whether it holds
//! calls. A reply that merely mentions a start marker and ends by itself also finishes
//! with `stop`: its block never closed, and its text comes back as content. A block the marker would take past the decoder's
//! size limit is not closed: its bytes were dropped, and it is a block that never closed. A block that yields no call does not end the turn.
//!
//! # Usage
//!
//! The upstream is always asked for `usage` (`stream_options.include_usage`); the proxy
//! reports it in a whole reply's `usage`, and in a stream as OpenAI does when the client
//! asked (`stream_options.include_usage`: a last chunk with empty `choices`), else on the
//! finish chunk, as llama-server does. A reply whose turn ended at a call before the
//! upstream finished (a server that ignores the stop sequence) has no usage to report.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod access;
mod api;
mod conversation;
mod error;
mod history;
mod open_files;
mod prompt;
mod response;
mod server;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method, header};
use axum::routing::{get, post};
use tokio::sync::Semaphore;

pub use access::{ClientKeyError, ClientKeys};
pub use error::ProxyError;
pub use open_files::{
    MAX_DEFAULT_CONNECTIONS, default_max_connections, open_file_limit, raise_open_file_limit,
};

pub use tam::ProtocolChoice;
use tam_model::openai::{OpenAiError, OpenAiModel, UpstreamChoice};

mod config;
mod routes;

use config::Shared;
pub use config::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_UPSTREAM_CONCURRENCY, DEFAULT_STREAM_AFTER_BYTES, DEFAULT_UPSTREAM_QUEUE,
    DEFAULT_UPSTREAM_QUEUE_TIMEOUT, ProxyConfig,
};
use routes::{
    chat_completions, count_tokens, health, messages, model_by_id, models, not_found, responses,
};

/// The proxy as an axum [`Router`] (a tower service): mount it in an application or serve
/// it with [`serve`]. Any other path answers 404 with an OpenAI error body. The router
/// applies the client keys, the `Origin` and `Content-Type` rules, the body time-out and
/// the upstream concurrency cap; the connection cap and the header time-out are
/// [`serve`]'s.
///
/// # Errors
/// [`OpenAiError::Client`] when the HTTP client cannot be built.
pub fn router(config: ProxyConfig) -> Result<Router, OpenAiError> {
    let model = OpenAiModel::new(config.upstream.clone())?;
    let http = reqwest::Client::builder()
        .connect_timeout(config.upstream.idle_timeout)
        .build()
        .map_err(|e| OpenAiError::Client(e.to_string()))?;
    let limit = config.max_request_bytes;
    let upstream_slots = Arc::new(config::permits(config.max_upstream_concurrency));
    let queue_places = Semaphore::new(config.upstream_queue.min(Semaphore::MAX_PERMITS));
    let cors = cors(&config.allowed_origins);
    let kind = match config.upstream_kind {
        UpstreamChoice::Kind(kind) => tokio::sync::OnceCell::new_with(Some(kind)),
        UpstreamChoice::Auto => tokio::sync::OnceCell::new(),
    };
    let shared = Arc::new(Shared {
        config,
        model,
        http,
        upstream_slots,
        queue_places,
        kind,
    });
    let guarded = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route("/v1/models", get(models))
        .route("/v1/models/{*id}", get(model_by_id))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            access::guard,
        ));
    let app = Router::new()
        .route("/health", get(health))
        .merge(guarded)
        .with_state(shared);
    Ok(match cors {
        Some(cors) => app.layer(cors),
        None => app,
    })
}

/// The CORS answers for the allowed origins (none: no CORS layer, and a browser's
/// preflight gets 404/405).
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("x-api-key"),
                header::HeaderName::from_static("anthropic-version"),
                header::HeaderName::from_static("anthropic-beta"),
            ])
            .expose_headers([header::HeaderName::from_static("x-request-id")]),
    )
}

/// Serves the proxy on `listener` until `shutdown` completes (then finishes the requests
/// in flight and closes the idle connections at once), HTTP/1.1, with
/// [`ProxyConfig::max_connections`], [`ProxyConfig::header_timeout`] and a 16 KiB cap on
/// a request header (see "Access" in the crate docs). It does not raise the open-file
/// limit: [`raise_open_file_limit`] says why, and is the call to make first.
///
/// # Errors
/// The router's error, or an I/O error of the server.
pub async fn serve(
    listener: tokio::net::TcpListener,
    mut config: ProxyConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if config.strict && config.upstream_kind == UpstreamChoice::Auto {
        let kind = config.upstream_kind.resolve(&config.upstream).await;
        config::log_upstream_kind(kind, config.upstream_kind);
        config.upstream_kind = UpstreamChoice::Kind(kind);
    }
    let limits = server::Limits {
        max_connections: config.max_connections,
        header_timeout: config.header_timeout,
    };
    let app = router(config).map_err(std::io::Error::other)?;
    server::run(listener, app, limits, shutdown).await
}

/// The request readers, for the fuzz targets (`fuzz/`): not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    use crate::api::{self, ErrorShape};
    use crate::{ProxyError, conversation};

    /// Reads `body` as a request of `api` (`"chat"`, `"messages"`, `"responses"`) and
    /// translates it in both protocols, as the proxy would before asking the upstream.
    /// `Err` holds the status of a refusal, which must be a 4xx and render in the API's
    /// shape.
    pub fn read_request(api: &str, body: &[u8]) -> Result<(), u16> {
        for protocol in [crate::ProtocolChoice::Action, crate::ProtocolChoice::Tam] {
            let read = match api {
                "messages" => api::messages::read(body, "", "f").map(|(c, _)| c),
                "responses" => api::responses::read(body, "", "f").map(|(c, _)| c),
                _ => api::chat::read(body, ""),
            };
            let result = read.and_then(|c| conversation::translate(c, protocol));
            if let Err(error) = result {
                return Err(refusal(error, api));
            }
        }
        Ok(())
    }

    fn refusal(error: ProxyError, api: &str) -> u16 {
        let shape = if api == "messages" {
            ErrorShape::Anthropic
        } else {
            ErrorShape::OpenAi
        };
        error.into_shaped_response(shape).status().as_u16()
    }
}

/// This crate's README example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
