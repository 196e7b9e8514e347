//! Permission scopes: which registered tools one caller may use (an agent's inventory, a
//! workflow's available tools and an LLM node's dynamic tools). A call outside its scope is
//! refused and never runs.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_schema::ToolDefinition;

use crate::{Error, Registry};

/// Default of [`LlmNodeConfig::max_tool_calls`]: 10 calls per LLM node.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 10;

/// A workflow's `availableTools`: the tools every LLM node of the workflow may use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailableTools {
    /// Tools available from the start, each by id or by display name.
    #[serde(default)]
    pub initial: Vec<String>,
}

impl AvailableTools {
    /// Reads `availableTools` from a stored workflow; absent means none.
    ///
    /// # Errors
    /// [`Error::InvalidWorkflow`] when the field is present but not `{"initial": [ids]}`.
    pub fn of_workflow(workflow_id: &str, workflow: &Value) -> Result<Self, Error> {
        match workflow.get("availableTools") {
            None | Some(Value::Null) => Ok(Self::default()),
            Some(v) => Self::deserialize(v).map_err(|e| Error::InvalidWorkflow {
                workflow: workflow_id.to_owned(),
                reason: format!("availableTools: {e}"),
            }),
        }
    }
}

/// An LLM node's `dynamicTools`: tools added for this node only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicTools {
    /// The extra tools, each by id or by display name.
    #[serde(default)]
    pub tool_ids: Vec<String>,
    /// How each tool is described in the prompt, with `{toolName}` and
    /// `{toolDescription}` placeholders; `None` uses the default list style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_template: Option<String>,
}

/// An LLM node's `parameters` (registration seed: "可选的参数覆盖"): the sampling settings
/// the node passes to its model, typed where the common names are known, with the whole
/// map as written kept in [`raw`](Self::raw) (serialising gives it back unchanged).
///
/// Known keys, each in snake_case or camelCase: `temperature`, `top_p`, `max_tokens`,
/// `stop` (a string or an array of strings), `seed`, `presence_penalty`,
/// `frequency_penalty`. They map one to one onto an OpenAI-style request's fields of the
/// same snake_case names; other keys stay in `raw` for the model to pass through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Value>", into = "Map<String, Value>")]
#[non_exhaustive]
pub struct ModelParameters {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    pub top_p: Option<f64>,
    /// Most tokens the model may generate per reply.
    pub max_tokens: Option<u64>,
    /// Stop sequences; empty when none are given.
    pub stop: Vec<String>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// Presence penalty.
    pub presence_penalty: Option<f64>,
    /// Frequency penalty.
    pub frequency_penalty: Option<f64>,
    /// Every key as written, the known ones included.
    pub raw: Map<String, Value>,
}

impl TryFrom<Map<String, Value>> for ModelParameters {
    type Error = String;

    fn try_from(raw: Map<String, Value>) -> Result<Self, String> {
        let find = |snake: &str, camel: &str| {
            raw.get(snake)
                .or_else(|| raw.get(camel))
                .filter(|v| !v.is_null())
                .map(|v| (snake.to_owned(), v))
        };
        let number = |snake: &str, camel: &str| -> Result<Option<f64>, String> {
            find(snake, camel)
                .map(|(key, v)| {
                    v.as_f64()
                        .ok_or(format!("{key}: expected a number, found {v}"))
                })
                .transpose()
        };
        let max_tokens = find("max_tokens", "maxTokens")
            .map(|(key, v)| {
                v.as_u64()
                    .ok_or(format!("{key}: expected a non-negative integer, found {v}"))
            })
            .transpose()?;
        let seed = find("seed", "seed")
            .map(|(key, v)| {
                v.as_i64()
                    .ok_or(format!("{key}: expected an integer, found {v}"))
            })
            .transpose()?;
        let stop = match find("stop", "stop") {
            None => Vec::new(),
            Some((_, Value::String(one))) => vec![one.clone()],
            Some((key, Value::Array(items))) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or(format!("{key}: expected strings, found {item}"))
                })
                .collect::<Result<_, _>>()?,
            Some((key, other)) => {
                return Err(format!(
                    "{key}: expected a string or an array of strings, found {other}"
                ));
            }
        };
        Ok(Self {
            temperature: number("temperature", "temperature")?,
            top_p: number("top_p", "topP")?,
            max_tokens,
            stop,
            seed,
            presence_penalty: number("presence_penalty", "presencePenalty")?,
            frequency_penalty: number("frequency_penalty", "frequencyPenalty")?,
            raw,
        })
    }
}

impl From<ModelParameters> for Map<String, Value> {
    fn from(parameters: ModelParameters) -> Self {
        parameters.raw
    }
}

/// The tool-related part of an LLM node's configuration (`LLMNodeConfig`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LlmNodeConfig {
    /// The LLM profile the node uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_id: Option<String>,
    /// The node's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Sampling settings overriding the profile's (`parameters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<ModelParameters>,
    /// Most tool calls the node may make; `None` means [`DEFAULT_MAX_TOOL_CALLS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<usize>,
    /// Tools added for this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_tools: Option<DynamicTools>,
}

impl LlmNodeConfig {
    /// `maxToolCalls`, or its default of 10.
    pub fn max_tool_calls(&self) -> usize {
        self.max_tool_calls.unwrap_or(DEFAULT_MAX_TOOL_CALLS)
    }
}

/// The tools one caller may use: every registered tool, or a fixed set of ids that all
/// exist in the registry.
///
/// ```
/// use tool_dispatch::{Registry, Scope};
///
/// let registry = Registry::new();
/// assert!(Scope::unrestricted().allows("anything"));
/// let err = Scope::new(&registry, ["kb:Query"]).unwrap_err();
/// assert_eq!(err.to_string(), "Unknown tool ID 'kb:Query'");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// `None`: unrestricted.
    allowed: Option<BTreeSet<String>>,
}

impl Scope {
    /// Every registered tool: for callers that are not agents (UI panels, scripts).
    pub fn unrestricted() -> Self {
        Self { allowed: None }
    }

    /// Exactly `ids`, each of which must be registered.
    ///
    /// # Errors
    /// [`Error::UnknownTool`] for the first id the registry lacks, with a suggestion.
    pub fn new<I>(registry: &Registry, ids: I) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let allowed = ids
            .into_iter()
            .map(|id| registry.entry(id.as_ref()).map(|_| id.as_ref().to_owned()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            allowed: Some(allowed),
        })
    }

    /// An agent's scope: its profile's `tool_ids_inventory`.
    ///
    /// # Errors
    /// As [`Scope::new`].
    pub fn for_agent<I>(registry: &Registry, tool_ids_inventory: I) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        Self::new(registry, tool_ids_inventory)
    }

    /// An LLM node's scope: the workflow's `availableTools.initial` plus the node's
    /// `dynamicTools.toolIds`. Each entry is a tool id or a tool's display name (the
    /// registration seed's "工具ID或名称"), resolved to the id here, once
    /// ([`Registry::resolve`]).
    ///
    /// # Errors
    /// [`Error::UnknownTool`] for an entry that names no registered tool;
    /// [`Error::AmbiguousTool`] naming the candidates for a display name several tools
    /// share.
    pub fn for_llm_node(
        registry: &Registry,
        workflow: &AvailableTools,
        node: &LlmNodeConfig,
    ) -> Result<Self, Error> {
        let dynamic = node.dynamic_tools.iter().flat_map(|d| d.tool_ids.iter());
        let allowed = workflow
            .initial
            .iter()
            .chain(dynamic)
            .map(|entry| registry.resolve(entry).map(|id| id.as_str().to_owned()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            allowed: Some(allowed),
        })
    }

    /// Whether a call to `id` may run.
    pub fn allows(&self, id: &str) -> bool {
        self.allowed.as_ref().is_none_or(|ids| ids.contains(id))
    }

    /// Whether every registered tool is allowed.
    pub fn is_unrestricted(&self) -> bool {
        self.allowed.is_none()
    }

    /// The allowed ids in order, or `None` when unrestricted.
    pub fn ids(&self) -> Option<impl Iterator<Item = &str>> {
        self.allowed
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str))
    }

    /// The definitions of the allowed tools, ordered by id.
    pub fn definitions<'r>(&self, registry: &'r Registry) -> Vec<&'r ToolDefinition> {
        registry
            .definitions()
            .filter(|d| self.allows(d.id.as_str()))
            .collect()
    }
}

/// An LLM node's `parameters` as request options: `temperature`, `max_tokens`, `stop` and
/// `seed` carry over; what [`ModelOptions`](crate::ModelOptions) has no field for is not sent.
///
/// Mapping decisions:
/// * `temperature` is narrowed to `f32` (the nearest value).
/// * `max_tokens` above `u32::MAX` becomes `u32::MAX` (no server accepts more).
/// * a negative `seed` is not mapped (servers that take one read it as "random", which is
///   what leaving it out asks for).
/// * `top_p`, `presence_penalty`, `frequency_penalty` and the other keys of
///   [`raw`](ModelParameters::raw) are not mapped: the request carries only
///   temperature, max tokens, stop sequences and seed.
///
/// ```
/// use tool_dispatch::{LlmNodeConfig, ModelOptions};
///
/// let node: LlmNodeConfig = serde_json::from_value(serde_json::json!({
///     "parameters": {"temperature": 0.5, "maxTokens": 64, "stop": "END", "seed": 7, "topP": 0.9}
/// })).unwrap();
/// let options = ModelOptions::from(node.parameters.as_ref().unwrap());
/// assert_eq!(options, ModelOptions::new()
///     .with_temperature(0.5).with_max_tokens(64).with_stop(["END"]).with_seed(7));
/// ```
impl From<&ModelParameters> for crate::ModelOptions {
    fn from(parameters: &ModelParameters) -> Self {
        let mut options = crate::ModelOptions::new();
        // Narrowing is the documented mapping.
        #[allow(clippy::cast_possible_truncation)]
        {
            options.temperature = parameters.temperature.map(|t| t as f32);
        }
        options.max_tokens = parameters
            .max_tokens
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        options.stop = parameters.stop.clone();
        options.seed = parameters.seed.and_then(|s| u64::try_from(s).ok());
        options
    }
}

#[cfg(test)]
mod model_option_tests {
    use super::ModelParameters;
    use crate::ModelOptions;

    fn parameters(value: serde_json::Value) -> ModelParameters {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn node_parameters_map_onto_options_and_the_rest_is_left_out() {
        let options = ModelOptions::from(&parameters(serde_json::json!({
            "temperature": 0.25, "max_tokens": 100, "stop": ["a", "b"], "seed": 42,
            "top_p": 0.5, "presencePenalty": 1.0, "logit_bias": {"1": 2}
        })));
        assert_eq!(
            options,
            ModelOptions::new()
                .with_temperature(0.25)
                .with_max_tokens(100)
                .with_stop(["a", "b"])
                .with_seed(42)
        );
        assert_eq!(
            ModelOptions::from(&parameters(serde_json::json!({}))),
            ModelOptions::new()
        );
    }

    #[test]
    fn out_of_range_parameters_saturate_or_are_left_out() {
        let options = ModelOptions::from(&parameters(serde_json::json!({
            "maxTokens": 10_000_000_000_u64, "seed": -1
        })));
        assert_eq!(options.max_tokens, Some(u32::MAX));
        assert_eq!(options.seed, None);
    }
}
