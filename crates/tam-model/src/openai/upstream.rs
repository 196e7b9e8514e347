//! Which server answers at a base URL: [`detect_upstream_kind`], and the
//! `--upstream-kind` value that names it instead ([`UpstreamChoice`]).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{OpenAiConfig, authorized, whole_body};

/// Longest [`detect_upstream_kind`] waits for the servers' answers: 5 s (or the
/// configuration's idle time-out, when shorter). The endpoints asked answer from memory.
pub const DETECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Most bytes of one detection answer read: 1 MiB (llama-server's `/props` carries the chat
/// template, a few KiB to some tens).
const MAX_PROBE_BYTES: usize = 1 << 20;

/// The kind of OpenAI-compatible server, for what it can constrain: llama.cpp takes a lazy
/// GBNF grammar on its native `/completion`
/// ([`LlamaCompletionModel`](super::LlamaCompletionModel)), vLLM and SGLang a structural
/// tag in `response_format` ([`OpenAiModel`](super::OpenAiModel)), any other server the
/// prompt alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpstreamKind {
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// vLLM.
    Vllm,
    /// SGLang.
    Sglang,
    /// Any other server (Ollama, OpenAI, a proxy, …), or one that did not say.
    Other,
}

impl UpstreamKind {
    /// The kind's name: `llama.cpp`, `vllm`, `sglang`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamKind::LlamaCpp => "llama.cpp",
            UpstreamKind::Vllm => "vllm",
            UpstreamKind::Sglang => "sglang",
            UpstreamKind::Other => "other",
        }
    }
}

impl fmt::Display for UpstreamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads a kind's name, in any case: `llama-cpp` (also `llama.cpp`, `llamacpp`,
/// `llama-server`), `vllm`, `sglang`, `other`. `auto` is no kind: [`UpstreamChoice`] reads it.
impl FromStr for UpstreamKind {
    type Err = ParseUpstreamKindError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "llama-cpp" | "llama.cpp" | "llamacpp" | "llama-server" => Ok(UpstreamKind::LlamaCpp),
            "vllm" => Ok(UpstreamKind::Vllm),
            "sglang" => Ok(UpstreamKind::Sglang),
            "other" => Ok(UpstreamKind::Other),
            _ => Err(ParseUpstreamKindError {
                name: name.to_owned(),
                auto: false,
            }),
        }
    }
}

/// The value of an `--upstream-kind` flag: detect the kind ([`UpstreamChoice::Auto`], the
/// default) or take the one named.
///
/// ```
/// use tam_model::openai::{UpstreamChoice, UpstreamKind};
///
/// assert_eq!("auto".parse(), Ok(UpstreamChoice::Auto));
/// assert_eq!("llama-cpp".parse(), Ok(UpstreamChoice::Kind(UpstreamKind::LlamaCpp)));
/// assert_eq!("llamacpp".parse(), Ok(UpstreamChoice::Kind(UpstreamKind::LlamaCpp)));
/// assert!("tgi".parse::<UpstreamChoice>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum UpstreamChoice {
    /// Ask the server ([`detect_upstream_kind`]).
    #[default]
    Auto,
    /// This kind, without asking.
    Kind(UpstreamKind),
}

impl UpstreamChoice {
    /// The kind: the one named, or the one [`detect_upstream_kind`] finds at `config`'s
    /// server.
    pub async fn resolve(self, config: &OpenAiConfig) -> UpstreamKind {
        match self {
            UpstreamChoice::Kind(kind) => kind,
            UpstreamChoice::Auto => detect_upstream_kind(config).await,
        }
    }
}

impl fmt::Display for UpstreamChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamChoice::Auto => f.write_str("auto"),
            UpstreamChoice::Kind(kind) => kind.fmt(f),
        }
    }
}

/// Reads `auto` or a kind's name (see [`UpstreamKind`'s `FromStr`](UpstreamKind)).
impl FromStr for UpstreamChoice {
    type Err = ParseUpstreamKindError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name.trim().eq_ignore_ascii_case("auto") {
            return Ok(UpstreamChoice::Auto);
        }
        name.parse()
            .map(UpstreamChoice::Kind)
            .map_err(|_| ParseUpstreamKindError {
                name: name.to_owned(),
                auto: true,
            })
    }
}

/// A name that is no upstream kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseUpstreamKindError {
    name: String,
    auto: bool,
}

impl ParseUpstreamKindError {
    /// The name that was read.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ParseUpstreamKindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown upstream kind '{}': expected llama-cpp (or llama.cpp, llamacpp, llama-server), vllm, sglang{}",
            self.name,
            if self.auto {
                ", other or auto"
            } else {
                " or other"
            }
        )
    }
}

impl std::error::Error for ParseUpstreamKindError {}

/// Which server answers at `config`'s server ([`OpenAiConfig::server_url`]), asked at once
/// with `GET` (and the API key, when one is configured), each answer within
/// [`DETECT_TIMEOUT`] (or the idle time-out, when shorter):
///
/// * `/props` answering a JSON object with a `default_generation_settings` object:
///   [`UpstreamKind::LlamaCpp`] (llama-server's global properties; its router mode
///   answers the same way);
/// * `/get_server_info` answering an object with `model_path` and a string `version` (or
///   `internal_states`): [`UpstreamKind::Sglang`] (its server arguments and state);
/// * `/version` answering an object with a string `version`: [`UpstreamKind::Vllm`].
///
/// The first that holds, in this order, wins (SGLang is asked before vLLM's `/version`,
/// which a later SGLang may answer too). It never fails: a server that answers none as
/// expected — not running, an error status, another body, too slow — is
/// [`UpstreamKind::Other`].
pub async fn detect_upstream_kind(config: &OpenAiConfig) -> UpstreamKind {
    let timeout = config.idle_timeout.min(DETECT_TIMEOUT);
    let Ok(client) = reqwest::Client::builder().connect_timeout(timeout).build() else {
        return UpstreamKind::Other;
    };
    let server = config.server_url();
    let ask = |path: &str| ask(&client, config, format!("{server}{path}"), timeout);
    let (props, info, version) =
        futures_util::join!(ask("/props"), ask("/get_server_info"), ask("/version"));
    if props.is_some_and(|p| {
        p.get("default_generation_settings")
            .is_some_and(Value::is_object)
    }) {
        UpstreamKind::LlamaCpp
    } else if info.is_some_and(|i| {
        i.contains_key("model_path")
            && (i.get("version").is_some_and(Value::is_string) || i.contains_key("internal_states"))
    }) {
        UpstreamKind::Sglang
    } else if version.is_some_and(|v| v.get("version").is_some_and(Value::is_string)) {
        UpstreamKind::Vllm
    } else {
        UpstreamKind::Other
    }
}

/// `GET url`: the JSON object of a 2xx answer within `timeout`, else `None`.
async fn ask(
    client: &reqwest::Client,
    config: &OpenAiConfig,
    url: String,
    timeout: Duration,
) -> Option<Map<String, Value>> {
    let request = authorized(client.get(url).header("accept", "application/json"), config);
    let answer = async {
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = whole_body(response, timeout, MAX_PROBE_BYTES)
            .await
            .ok()??;
        match serde_json::from_slice(&body).ok()? {
            Value::Object(object) => Some(object),
            Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_) => None,
        }
    };
    tokio::time::timeout(timeout, answer).await.ok()?
}
