//! Tool definitions for LLM tool calling: ids, JSON Schema parameters read from workflows,
//! node definitions, `plugin.yaml` files or code, and the validation and coercion of the
//! arguments a model writes as text (TAM) or as loosely typed XML-derived JSON (ACTION XML).
//! Tool lists render as prompt text in the TAM, ACTION XML and plain styles, and export to
//! the OpenAI, Anthropic and MCP tool formats with reversible name aliases.
//!
//! # Example
//!
//! ```
//! use serde_json::{Value, json};
//! use tool_schema::{CompiledTool, KeyMatch, PromptStyle, load, render_tool_list};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A workflow file becomes the tool `workflow:summarize_text`.
//! let workflow = r#"{
//!   "description": "Summarises a long text.",
//!   "interfaceInputs": {
//!     "text_to_summarize": {"dataFlowType": "STRING", "required": true},
//!     "max_words": {"dataFlowType": "INTEGER", "config": {"default": 100}}
//!   }
//! }"#;
//! let definition = load::workflow_from_str(workflow, "summarize_text", "summarize_text.json")?;
//! let tool = CompiledTool::new(definition)?;
//!
//! // TAM gives every value as text, with keys spelt however the model liked.
//! let arguments = [("textToSummarize", Value::from("Once upon a time…")), ("MAX_WORDS", Value::from("40"))];
//! let coerced = tool.coerce(arguments, KeyMatch::Canonical)?;
//! assert_eq!(Value::Object(coerced), json!({"text_to_summarize": "Once upon a time…", "max_words": 40}));
//!
//! // ACTION XML wants the declared names exactly; every problem is reported in one line.
//! let errors = tool.coerce([("textToSummarize", Value::from("…"))], KeyMatch::Exact).unwrap_err();
//! assert_eq!(
//!     errors.to_string(),
//!     "Invalid parameters for workflow:summarize_text: Unknown parameter 'textToSummarize', \
//!      did you mean 'text_to_summarize'?"
//! );
//!
//! let prompt = render_tool_list([tool.definition()], &PromptStyle::Tam);
//! assert!(prompt.starts_with("- Tool ID: workflow:summarize_text\n  - Description: Summarises"));
//! # Ok(())
//! # }
//! ```
//!
//! # Overview
//!
//! - [`ToolId`]: `namespace:name` or a bare name. A `workflow:` id is a file stem and can
//!   never name a file outside the workflow directory: `..`, `/`, `\`, `:` and empty names
//!   are rejected when the id is parsed.
//! - [`ToolDefinition`]: id, display name, description, parameter schema (a JSON Schema
//!   object as a [`serde_json::Value`]), optional output schema, and an
//!   [`Implementation`] (service, node or workflow). Serde reads and writes it.
//! - [`load`]: definitions from workflow JSON, node definitions, `plugin.yaml` and
//!   `agent_profile.json`, from text (with a source name for messages) or from a path.
//!   Every error names the file, the field and the reason.
//! - [`CompiledTool`]: a definition with its schema compiled once, whose
//!   [`coerce`](CompiledTool::coerce) turns one call's arguments into the object the tool
//!   expects, or reports every problem at once in [`ValidationErrors`], together with the
//!   arguments as far as they could be typed (coercion is per argument).
//! - [`render_tool_list`]: the prompt text of a tool list, in a [`PromptStyle`].
//! - [`SystemPrompt`]: a complete system prompt teaching TAM ([`SystemPrompt::tam`]) or
//!   ACTION ([`SystemPrompt::action`]) in a [`PromptLanguage`] — role, tool list, a usage-notes hook, the decision instruction,
//!   few-shot examples and the result rules — each [`PromptPart`] replaceable.
//! - [`export_tools`]: the tool list in an [`ExportFormat`], with an [`AliasMap`].
//! - [`grammar`]: grammars for strict calls — GBNF for llama-server and an xgrammar
//!   structural tag for vLLM and SGLang — that let a model constraining its sampling write
//!   only blocks of calls of the offered tools.
//!
//! # Key matching: canonical for TAM, exact for ACTION XML
//!
//! The seeds disagree on how strictly argument keys must match parameter names, so
//! [`CompiledTool::coerce`] takes a [`KeyMatch`]. The TAM seed says keys are case- and
//! underscore-insensitive: [`KeyMatch::Canonical`] matches keys by their
//! [`canonical_key`] (lowercase, `_` and `-` removed), so `filePath` fills `file_path`. The
//! ACTION XML seed says parameter tags must equal the declared names, and its
//! self-correction example needs `playerId` against a `player_id` schema to be
//! rejected with `Unknown parameter 'playerId', did you mean 'player_id'?`:
//! [`KeyMatch::Exact`] does that. In both modes an unknown key gets a suggestion, first a
//! parameter with the same canonical key, then the most similar name (`strsim`).
//!
//! # Coercion rules
//!
//! Applied recursively through `properties` and `items`, for the schema keywords tools
//! use (`type`, `properties`, `required`, `additionalProperties`, `enum`, `items`,
//! `default`); after them the cached `jsonschema` validator checks the whole schema
//! (`minimum`, `pattern`, …).
//!
//! - A value that already has an allowed type is kept; text for a `string` is never trimmed
//!   or split. Two exceptions. Text an `enum` of strings refuses that names one member is
//!   that member: one quoted literal of it, the way Python and JSON quote strings (`"asc"`
//!   or `'asc'` for `["asc", "desc"]`), or text equal to exactly one member but for ASCII
//!   case and blanks around it (`elevation` for `["Elevation", "Area"]`; two members that
//!   differ only in case leave it as written). And text for a `string` that is one line
//!   wrapped in one pair of the same quotes, with no other quote of that kind inside (`'Apple Inc.'`, `"Monday"`; [`quoted_text`]), is the
//!   text between the quotes. `'rock 'n' roll'`, `"a" and "b"`, `'90s` and quoted lines
//!   followed by more lines stay as written.
//! - Text for an `integer`, `number` or `boolean` is read the same way: `'12'` is 12.
//! - The text `None` or `null` (blanks around it allowed) for an optional parameter with a
//!   declared type that does not take `null` (a string, a number, a boolean, an array, an
//!   object) leaves the parameter out, as if it were not written (its `default` applies):
//!   models write it for "no value". For a required parameter, one that takes `null`, or
//!   one without a `type`, it is read like any other text. A reader that streams string
//!   arguments asks [`CompiledTool::text_may_change`] whether to hold a value back (this
//!   rule and the quoted literal below), so that what it streamed is the coerced value.
//! - Text for an `integer`: an integer (`"12"`, `" 12 "`, `"+7"`, up to `u64::MAX`), or a
//!   float that is whole and fits `i64` (`"12.0"` → 12, `"1e3"` → 1000). `"12.5"`,
//!   `"1,000"`, `"0x10"` and `"1e400"` are refused. A whole float from JSON (`4.0`)
//!   becomes an integer too.
//! - Text for a `number`: an integer as above, else a finite float (`"NaN"`, `"inf"`,
//!   `"1e400"` are refused).
//! - Text for a `boolean`: `true` or `false` in any case; `null` for a nullable type:
//!   `"null"`.
//! - Text for an `object` that starts with `{`: JSON, else a Python or JavaScript literal:
//!   single or double quotes, `True`/`False`/`None` as well as `true`/`false`/`null`, bare
//!   identifier keys (`{a: 1}`), a trailing comma. Nothing is ever evaluated.
//! - Text for an `array`, in this order: starting with `[`, JSON, else a literal as for
//!   objects (`['Sam', 'Alice']`, `[True, False]`, `[None]`, `[3, 5,]`); when the `items`
//!   are numbers or booleans (their `type` allows `integer`, `number` or `boolean` and
//!   none of `string`, `object`, `array`), text with a comma is a comma-separated list
//!   (`3,4,5`, `3, 4, 5`, one trailing comma allowed; `"1,000"` is `[1, 0]`; the full-width
//!   `，` and the ideographic `、` separate items too: `3、5`); when the `items` are
//!   enumerated strings, text that is not itself a member but whose comma-separated parts
//!   each name one (exactly, quoted, or in another ASCII case) is the list of those parts
//!   (`vegan, gluten-free` → `["vegan", "gluten-free"]`; models write lists of allowed
//!   values that way; a part that names no member leaves the text one value); two or
//!   more quoted strings separated by commas without brackets are that list
//!   (`"2018-2019", "2019-2020"` → `["2018-2019", "2019-2020"]`); anything else
//!   is a single value, a one-element array (`"Paris, France"` for an array of strings is
//!   `["Paris, France"]`; `"[draft] notes"` is `["[draft] notes"]`). The items are then
//!   coerced to the `items` schema, text items by these same rules (`['1,2', '3']` for an
//!   array of integer arrays is `[[1, 2], [3]]`).
//! - Text that starts with `[` or `{` and ends with its closing bracket, but is neither
//!   JSON nor a literal (`[Sam, Alice]`), is refused with the reason
//!   ([`Error::UnreadableValue`]: `unquoted word at byte 1`) rather than taken as one
//!   element.
//! - Depth is bounded: JSON text is read by `serde_json`, which stops at 128 levels; the
//!   literal reader stops at 64 levels of arrays and objects. Deeper text (`[[[[…`) is an
//!   [`Error::UnreadableValue`] (`arrays and objects nested deeper than 64 levels`), never
//!   a stack overflow.
//! - A single non-text value becomes a one-element array when an array is expected (ACTION
//!   XML gives one `<file>` as an object, two as an array).
//! - A number or boolean becomes its text for a `string` parameter.
//! - An untyped `enum` of numbers or booleans accepts their text; `enum` is checked on the
//!   coerced value.
//! - Absent parameters take their `default`, even when required; a required parameter
//!   without one is reported missing. A `default` is coerced by these rules when the tool
//!   is compiled (`"default": "True"` for a `boolean` is `true`); one that cannot take its
//!   type is used as written; the text `None` or `null` for a typed schema that does not
//!   take `null` is no default (`"default": "None"` for an array).
//! - An object schema that lists `properties` is closed unless `additionalProperties` is
//!   `true` or a schema; one without `properties` accepts any key.
//!
//! ## Per argument, never all or nothing
//!
//! Each top-level argument is coerced on its own. One whose value cannot take its type, or
//! with a problem anywhere inside it (an item of the wrong type, a nested unknown or
//! missing key, a value outside its enum), is reported and stays exactly as written; every
//! other argument is still typed. [`CompiledTool::coerce`] returns `Ok` only when nothing
//! was reported, so a strict caller (a dispatcher about to run the tool) refuses on `Err`;
//! the `Err`'s [`ValidationErrors::arguments`] is the object as far as it could be typed,
//! for a lenient caller (a proxy passing the call to a client that validates again). In
//! it, unknown keys stay with their values as written, after the declared parameters; of
//! a parameter given twice the first value is kept; a missing required one is absent.
//! Missing, unknown (with did-you-mean) and repeated parameters are reported as before.
//! The validator runs only when the walk found nothing, so its findings never repeat a
//! type error.
//!
//! Parameter errors are worded for the model, as the ACTION seed words them (capitalised,
//! `Unknown parameter 'x', did you mean 'y'?`), because a dispatcher feeds them back as an
//! observation; the other [`Error`] variants follow the usual lowercase style.
//!
//! # Prompt styles and export names
//!
//! [`PromptStyle::Tam`] lists `- Tool ID: …` entries with English labels
//! (`Description`, `Parameters`; the Chinese prompt uses `描述`, `参数`),
//! [`PromptStyle::Xml`] `<tool_id>` entries with their `<parameter>`s, workflow tools
//! listed apart as skills, and [`PromptStyle::Plain`] a `descriptionTemplate` with
//! `{toolName}`, `{toolDescription}` and `{toolParameters}`. Export formats accept only
//! names matching `^[a-zA-Z0-9_-]{1,64}$`; other ids get a stable, collision-checked alias
//! (`workflow:summarize_text` → `workflow__summarize_text`) that [`AliasMap::resolve`] maps
//! back.
//!
//! # Decisions where the seeds are silent
//!
//! - **API rules** (<https://github.com/tam-rs/tam/blob/main/docs/api-rules.md>): choices a
//!   caller matches on ([`Implementation`], [`PromptStyle`],
//!   [`ExportFormat`], the system-prompt enums) are exhaustive;
//!   [`Error`] and the records that grow ([`ToolDefinition`], the loaders' results) are
//!   `#[non_exhaustive]`.
//! - **System prompts.** The parts are role and goal, tool list,
//!   retrieved knowledge and decision, then the ACTION seed's few-shot advice and the
//!   result-format seed's 【工具调用规则】; headings are the TAM seed's bracketed ones
//!   (`[可用工具参考]`, `[你的决策]`), in English `[Available tools]`, `[Your decision]`.
//!   Both protocols share the layout; the tool list, instructions and examples differ.
//!   The Chinese tool list uses the TAM seed's labels (`描述`, `参数`), the ACTION one
//!   translated headings; parameter types stay English (`string, required`) as in the
//!   seed's Chinese example. The ACTION list adds an `Example:` under each object or array
//!   parameter (as the ACTION seed does for `payload`). The result rules keep the seed's
//!   wording and add that results arrive as `Observation: …` lines, since that is how a
//!   dispatcher feeds them back. They tell the model to stop with `TOOL_EXECUTION_FAILED`
//!   on any failure, which rules out the ACTION seed's self-correction: a caller that wants
//!   self-correction leaves [`PromptPart::ResultRules`] out. The usage-notes section
//!   appears only when the caller fills it; an empty tool list renders as `(none)`.
//! - **Skills.** A workflow's inputs may be named `inputInterface` (as skills name them) as
//!   well as `interfaceInputs`, and its outputs `outputInterface`; a file using both
//!   spellings of one interface is refused rather than one silently winning.
//! - **Plugin directories.** [`load::plugin_dir`] takes the namespace from `plugin.yaml`'s
//!   `name`, else from the directory's name; a `workflowId` is resolved one component at a
//!   time and refused at any `..`, absolute path or symbolic link, so a plugin cannot make
//!   the loader read outside its directory. A workflow tool whose manifest gives no
//!   parameters (the seed's example leaves them as a comment) takes its workflow's
//!   interface.
//! - **Raw text for strings.** [`CompiledTool::coerce_with_source`] replaces only
//!   top-level values, only objects and arrays, and only for parameters whose schema
//!   allows a string but neither an object nor an array: a parameter declared
//!   `["string", "object"]` keeps the XML reading.
//!
//! # Input safety
//!
//! No input panics: bad files, ids, schemas and arguments are all reported as errors.
//! Values are never evaluated; JSON text inside a value is parsed by `serde_json` with its
//! recursion limit (128), Python and JavaScript literals by the crate's own reader, which
//! is iterative within a level, recursive one call per level and refuses more than 64
//! levels. `jsonschema` is built without default features, so a `$ref` to a
//! remote or file URL is never fetched (such a schema fails to compile).
//!
//! # Crate features
//!
//! This crate has no optional features.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Enums are matched with explicit arms, never `_` (docs/api-rules.md); tests may.
#![cfg_attr(not(test), deny(clippy::wildcard_enum_match_arm))]
// docs.rs (nightly, `--cfg docsrs`) marks items behind a feature; stable builds ignore it.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod coerce;
mod compiled;
mod definition;
mod error;
pub mod export;
pub mod grammar;
mod id;
mod keys;
mod literal;
pub mod load;
pub mod prompt;
mod quoted;
mod shape;
mod system_prompt;

pub use compiled::CompiledTool;
pub use definition::{Implementation, ToolDefinition, empty_parameters};
pub use error::{Error, ValidationErrors};
pub use export::{AliasMap, ExportFormat, ExportedTools, export_tools};
pub use id::{ToolId, WORKFLOW_NAMESPACE};
pub use keys::{KeyMatch, canonical_key, suggest};
pub use prompt::{PromptStyle, render_tool_list};
pub use quoted::{MAX_QUOTED_LEN, may_be_quoted_text, quoted_text};
pub use system_prompt::{PromptLanguage, PromptPart, Speaker, SystemPrompt};

/// This crate's README example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
