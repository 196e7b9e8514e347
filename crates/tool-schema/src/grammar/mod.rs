//! Grammars for **strict calls**: what a server that constrains its own sampling needs so
//! that, once a model starts a block, it can only write a block that decodes into calls of
//! the offered tools. Prose outside blocks is never constrained.
//!
//! [`StrictGrammar::new`] takes the offered tools (their JSON Schema parameters) and a
//! [`GrammarOptions`] (the protocol, lazy or required, limits) and gives:
//!
//! - [`StrictGrammar::gbnf`]: a GBNF grammar for llama.cpp's `llama-server` whose `root`
//!   is one whole block, start marker to end marker, and
//!   [`StrictGrammar::llama_server_fields`]: the `/completion` request fields (`grammar`,
//!   `grammar_lazy`, `grammar_triggers`, `preserved_tokens`);
//! - [`StrictGrammar::structural_tag`]: the `response_format` of vLLM and SGLang, an
//!   xgrammar structural tag whose one tag is the block, its content
//!   [`StrictGrammar::body_grammar`] (the same rules, `root` the block's body).
//!
//! It is pure: no I/O, no async. Wiring it into a server request is the caller's.
//!
//! ```
//! use serde_json::json;
//! use tool_schema::grammar::{Activation, GrammarOptions, StrictGrammar};
//! use tool_schema::ToolDefinition;
//!
//! let tool: ToolDefinition = serde_json::from_value(json!({
//!     "id": "get_weather",
//!     "parameters": {"type": "object", "properties": {
//!         "city": {"type": "string"},
//!         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
//!         "days": {"type": "integer"}},
//!         "required": ["city"]},
//!     "implementation": {"type": "service"}
//! })).unwrap();
//! let grammar = StrictGrammar::new([&tool], &GrammarOptions::action()).unwrap();
//! assert!(grammar.gbnf().starts_with("root ::= \"<ACTION>\" "));
//! assert_eq!(grammar.triggers(), ["<ACTION>"]);
//! let fields = grammar.llama_server_fields();
//! assert_eq!(fields["grammar_lazy"], true);
//! assert_eq!(
//!     fields["grammar_triggers"],
//!     json!([
//!         {"type": 1, "value": "<ACTION>"},
//!         // The tool's call element without `<ACTION>`, at a line's start.
//!         {"type": 2, "value": r"(?:^|\n)[ \t]*(<(?:get_weather)>)"}
//!     ])
//! );
//! let tag = grammar.structural_tag();
//! assert_eq!(tag["format"]["type"], "triggered_tags");
//! assert_eq!(tag["format"]["stop_after_first"], true);
//!
//! // `tool_choice: required`: the reply is a block.
//! let options = GrammarOptions::tam().with_activation(Activation::Required);
//! let grammar = StrictGrammar::new([&tool], &options).unwrap();
//! assert_eq!(grammar.llama_server_fields()["grammar_lazy"], false);
//! assert_eq!(grammar.structural_tag()["format"]["at_least_one"], true);
//! ```
//!
//! # The grammar's shape
//!
//! **ACTION**: `<ACTION>`, blanks, one call element or more (up to [`MAX_CALLS`]) with
//! blanks between them, blanks, `</ACTION>`. A call element is `<tool_id>`, its parameter
//! elements, `</tool_id>`; a parameter element is `<name>`, its value, `</name>`, blanks
//! after it. Values by the parameter's schema:
//!
//! - integer: `-?(0|[1-9][0-9]{0,17})`; number: that with an optional fraction and a
//!   two-digit exponent (always a finite `f64`); boolean: `true`/`false`; `null` where the
//!   type allows it;
//! - enum (or `const`): exactly one member, entity-escaped (`&amp;`, `&lt;`, `&gt;`); a
//!   member that is not a string as its JSON text;
//! - array: `<item>` elements (at least one), each an item value, or JSON text of the
//!   items' type (`[1, 2]`), as the prompt teaches both;
//! - object with declared members and no others: member elements (at least one; JSON
//!   only where member elements all named `item` could be read as an array), or JSON
//!   text of those members; an object that takes any key, and a union of types with an
//!   array or object among them but no string: JSON text of those types. JSON text may
//!   stand in a CDATA section, as the prompt shows for objects;
//! - string, untyped, or anything not followed: free text, which holds anything XML
//!   allows, code included (`<`, `&`, `let s = "<b>x</b>";`, `Vec<u8>`, CDATA sections,
//!   comments), but never a close tag that would end the value or an element around it
//!   early: `</name>` of the value, of an enclosing element, or `</ACTION>`, in any ASCII
//!   case and with blanks inside the tag. The value ends at its own close tag, the name in
//!   its own case (blanks inside allowed): the reader takes another case as the close tag
//!   too, but not after an element left open in the value, so the grammar refuses it.
//!
//! A lazy grammar also takes a block that gives no call
//! ([`GrammarOptions::unoffered_blocks`], on by default). In ACTION: an empty block, or one
//! whose first element names a tool not offered, followed by any text up to `</ACTION>`
//! in which no element of an offered tool opens. In TAM: a block whose first call's
//! `command` value names a tool not offered, followed by any text up to `<|[END_TOOL]|>`
//! in which no `「始」` value is an offered name and no `「始ESCAPE」` value opens. "Not
//! offered" is read as the proxy reads a call's tool: not even in another ASCII case, with
//! other `_`, `-`, `.`, or (TAM) blanks around it. The decoder reads such a block as calls
//! of tools not offered (the proxy answers them as text), so no call of an offered tool
//! escapes the grammar.
//!
//! A lazy ACTION grammar also takes one call element of an offered tool written without
//! `<ACTION>` ([`GrammarOptions::bare_calls`], on by default), which the ACTION decoder
//! reads as a call when it knows the offered tools: its `root` is the block or such an
//! element, and a trigger pattern ([`StrictGrammar::trigger_patterns`]) switches it on
//! where `<tool_id>` is the first text of a line. llama-server takes the pattern; the
//! structural tag for vLLM and SGLang has string triggers only, so there such an element
//! stays unconstrained (the decoder still reads it).
//!
//! **TAM**: `<|[REQUEST_TOOL]|>`, calls, blanks, `<|[END_TOOL]|>`. Either calls written one
//! after another, each opened by `command:「始」tool_id「末」` (up to [`MAX_CALLS`]; the
//! compact prompt teaches this form), or chained calls `command1` … `commandN` in order,
//! each with its keys suffixed `key1` … `keyN` (the full prompt teaches this form; up to
//! [`GrammarOptions::max_chained_calls`]). Entries are `key:「始」value「末」`, separated
//! by blanks and `#` comment lines. Values by the schema: numbers, booleans and enum
//! members as above but between the markers (a member that holds `「末」` in the
//! `「始ESCAPE」…「末ESCAPE」` form); arrays, objects and unions with them as JSON text (and a
//! single number, boolean or enum member as a one-item list); strings and anything else
//! free: any text without `「末」`, or any text without `「末ESCAPE」` in the escape form.
//!
//! # Decisions
//!
//! - **Parameters in declaration order.** Required ones must appear, optional ones may be
//!   left out, each at most once, in the order the schema declares them (the order the
//!   prompt lists them in: both read the schema the same way, in key order unless
//!   `serde_json`'s `preserve_order` is on). Any order would need every permutation.
//! - **Closed calls.** Only declared parameters can be written, even where a schema takes
//!   other keys.
//! - **A tool's name as models spell it.** A call may name its tool as declared, in snake
//!   case (`euclidean_distance_calculate` for `EuclideanDistance_calculate`, `get_weather`
//!   for `get.weather`) or in lower case, unless another offered tool's name is the same but
//!   for ASCII case and `_`, `-`, `.`: the proxy resolves such a spelling to the one tool it
//!   loosely names, and a grammar with the declared spelling alone forced a model that had
//!   begun the snake-case name into a name of no tool (recorded from Qwen2.5-Coder-1.5B on
//!   BFCL `multiple_3`: `<euclidean_distance_calculate:…`, no call). Each spelling's call
//!   shares the declared one's parameter rules.
//! - **JSON in JSON text only.** Where a value is JSON text, strings may not hold `「`
//!   (TAM) or `<`/`&` (ACTION): write them as `\u300c`, `\u003c`, `\u0026`. So no string
//!   can end a value or open markup.
//! - **Bounded repetition where a model could loop**: at most 32 blanks in a row, 8 comment
//!   lines of 160 characters between TAM entries, [`MAX_CALLS`] calls (the decoders'
//!   default call limit). Free text is unbounded: the model ends it.
//! - **Names that cannot be written are left out**, never an error: a tool or parameter
//!   name that is not an XML name or is over 128 bytes (ACTION), the name `action` in any
//!   case (its close tag ends the block), a TAM key with blanks, `:`, `：`, `「`, a leading `#`, a marker, over
//!   120 bytes, or whose canonical form is `command`/`command<digits>` (it would start a
//!   call), a second key of one canonical form, a duplicate tool id. Each is reported in
//!   [`StrictGrammar::omitted`]. A tool whose left-out parameter is required and has no
//!   default is left out too: no call of it could be valid (Claude Code's `Bash`, whose
//!   `command` cannot be a TAM key). A tool whose parameters end in a digit (canonically)
//!   is not offered in TAM's chained form, whose suffix would swallow that digit.
//! - **Keywords not followed degrade, never fail**: a value whose schema uses `anyOf`,
//!   `oneOf`, `allOf`, `not`, `$ref`, `if`, tuples, `patternProperties` … is free, as is
//!   nesting deeper than 12 levels. Constraints of the validator (`minimum`, `pattern`,
//!   `maxLength` …) are not enforced: coercion still checks them.
//! - **One structural tag for the block**, not one per tool: a block holds several calls of
//!   different tools, and a tag per tool would fix the first call's tool, and the blanks
//!   before it, into the tag's `begin` string. The one tag's `begin` is the start marker
//!   (the trigger), its content the grammar of the body, its `end` the end marker.
//! - **Lazy by default.** With [`Activation::Lazy`] the grammar applies from the block's
//!   start marker on (the trigger word): prose before it is free. A start marker written
//!   in prose (quoted, in reasoning) triggers it all the same: that is the cost of a lazy
//!   grammar, and the prompts tell the model to write the block right away. After the
//!   end marker the grammar is complete, so the server ends the reply there: a turn ends
//!   at its call.
//!
//! # Safety and size
//!
//! The generator is fed client input. Names and enum members reach the grammar only as
//! escaped literals (`"`, `\`, controls and every character outside printable ASCII as
//! `\uXXXX`), so no name can change its structure; descriptions never reach it. Rule
//! names derived from tool and parameter names keep only `[a-z0-9-]` and end in a counter,
//! so two tools whose names clean up alike still get two rules. The output is bounded by
//! [`GrammarOptions::max_bytes`] and [`GrammarOptions::max_rules`]: the generator stops
//! with [`GrammarError::TooLarge`] as soon as either would be passed, so it never builds
//! more than the limit whatever the input (an enum of a million members stops there).
//!
//! Sizes measured here: Claude Code's 12 tools take about 100 KB in ACTION and 30 KB in
//! TAM, Codex's 12 function tools about 105 KB and 45 KB, 100 tools of five parameters
//! about 430 KB and 35 KB. Most of an ACTION grammar is its free text: each free value in
//! a new place (a parameter of another tool) has three rules of its own, and each group
//! of tool and parameter names that start alike its close-tag rules. A server compiles a
//! grammar once per text (vLLM and SGLang cache xgrammar's compiled grammars by it) and
//! the output is deterministic: the same tools give the same text, so a client's later
//! requests reuse the first one's work. That first compilation grows with the grammar:
//! with a synthetic 26 000-token vocabulary on one core of a shared development machine,
//! xgrammar 0.2.9 took about 3.5 s for Claude Code's tools and 17 s for the 100 tools in
//! ACTION (about 2 s each in TAM).
//!
//! # Format versions
//!
//! The GBNF is llama.cpp's (`grammars/README.md`), restricted to what both llama.cpp and
//! xgrammar read alike: rule names of `[a-z0-9-]`, one rule per line, `\uXXXX` escapes and
//! never `\xHH`, repetition `{m,n}`, no U+0000 (llama.cpp ends its strings there). The
//! structural tag is xgrammar's `format` form, which vLLM and SGLang pass on as a
//! `{"type": "structural_tag", "format": …}` response format: a `triggered_tags` format
//! whose one tag is the block, its content a `grammar` format. The older
//! `structures`/`triggers` form takes JSON Schema contents only and cannot express either
//! protocol's body.
//!
//! Checked outside this crate's tests, with the grammars of the tool sets the tests use
//! (Claude Code's, Codex's, 100 generated, and names full of syntax): llama.cpp's own
//! parser and matcher (its source of 2026-10) read every grammar and agree with the tests'
//! matcher on 200 random blocks of each and on the valid and invalid blocks of the
//! tests; so do xgrammar 0.1.30, 0.2.0, 0.2.4 and 0.2.9, for the GBNF, the body grammar and
//! the structural tag (with prose before the block). xgrammar 0.1.25 to 0.1.29 accept
//! blocks the grammar refuses (a value that runs past its close tag): use 0.1.30 or later.
//! A lazy grammar's trigger itself is the server's and was not run.

mod action;
mod json;
mod node;
mod tam;
mod text;

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::{Map, Value, json};

use crate::ToolDefinition;
use crate::shape::Shape;
use crate::system_prompt::Protocol;
use text::{Budget, Rules};

/// The most calls one block may hold: the decoders' default call limit.
pub const MAX_CALLS: usize = 64;

/// Whether the grammar waits for the block's start marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    /// The reply is free until the model writes the start marker, then a block: for
    /// `tool_choice: auto`.
    Lazy,
    /// The reply is one block and nothing before it: for `tool_choice: required`, and
    /// for a named tool (give [`StrictGrammar::new`] that tool alone).
    Required,
}

/// What [`StrictGrammar::new`] builds: the protocol (chosen by the constructor,
/// [`GrammarOptions::tam`] or [`GrammarOptions::action`]), the activation and the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GrammarOptions {
    /// The protocol the prompt teaches.
    protocol: Protocol,
    /// Lazy (default) or required.
    pub activation: Activation,
    /// TAM only: the longest chain of numbered calls (`command1` … `commandN`) the
    /// grammar offers; 0 leaves the chained form out. Default 8. Each link costs one rule
    /// per tool.
    pub max_chained_calls: usize,
    /// The largest grammar in bytes (the GBNF, which the structural tag's grammar never
    /// exceeds). Default 1 MiB.
    pub max_bytes: usize,
    /// The most rules one grammar may have. Default 16 384.
    pub max_rules: usize,
    /// Lazy grammars: a block may also start with a call of a tool not offered (ACTION:
    /// or be empty) and then hold any text in which no call of an offered tool can start —
    /// a block that gives no call, which the proxy answers as text (see the
    /// [module docs](self)). Default on.
    ///
    /// Without it, a model that starts a block for a tool it was not offered (the usual
    /// way a small model answers a request no offered tool fits) is forced into a call of
    /// an offered one: on BFCL's irrelevance cases that turned right answers into calls
    /// (e2e/README, "Strict calls"). Calls of offered tools are as strict either way.
    pub unoffered_blocks: bool,
    /// Lazy ACTION grammars: a call element of an offered tool written without `<ACTION>`
    /// at the start of a line switches the grammar on too, and must then be one whole
    /// call; the reply ends after it. Default on.
    ///
    /// The ACTION decoder reads such an element as a call when it is given the offered
    /// tools' names (`missing_action_wrapper`); without this, those calls were written
    /// unconstrained: on BFCL with Qwen2.5-Coder-0.5B, 16 of 62 replies with a call were
    /// bare elements, two of them with a parameter the tool lacks or a value outside its
    /// type. [`StrictGrammar::trigger_patterns`] gives the trigger.
    pub bare_calls: bool,
}

impl GrammarOptions {
    /// Default of [`GrammarOptions::max_chained_calls`].
    pub const DEFAULT_MAX_CHAINED_CALLS: usize = 8;
    /// Default of [`GrammarOptions::max_bytes`].
    pub const DEFAULT_MAX_BYTES: usize = 1 << 20;
    /// Default of [`GrammarOptions::max_rules`].
    pub const DEFAULT_MAX_RULES: usize = 16_384;

    /// Lazy grammars of TAM blocks (`<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`), as
    /// [`SystemPrompt::tam`](crate::SystemPrompt::tam) teaches them, with the default
    /// limits.
    pub fn tam() -> GrammarOptions {
        GrammarOptions::new(Protocol::Tam)
    }

    /// Lazy grammars of ACTION blocks (`<ACTION>` … `</ACTION>`), as
    /// [`SystemPrompt::action`](crate::SystemPrompt::action) teaches them, with the
    /// default limits.
    pub fn action() -> GrammarOptions {
        GrammarOptions::new(Protocol::Action)
    }

    fn new(protocol: Protocol) -> GrammarOptions {
        GrammarOptions {
            protocol,
            activation: Activation::Lazy,
            max_chained_calls: Self::DEFAULT_MAX_CHAINED_CALLS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_rules: Self::DEFAULT_MAX_RULES,
            unoffered_blocks: true,
            bare_calls: true,
        }
    }

    /// Sets [`GrammarOptions::bare_calls`].
    #[must_use]
    pub fn with_bare_calls(mut self, on: bool) -> GrammarOptions {
        self.bare_calls = on;
        self
    }

    /// Sets [`GrammarOptions::unoffered_blocks`].
    #[must_use]
    pub fn with_unoffered_blocks(mut self, on: bool) -> GrammarOptions {
        self.unoffered_blocks = on;
        self
    }

    /// Sets the activation.
    #[must_use]
    pub fn with_activation(mut self, activation: Activation) -> GrammarOptions {
        self.activation = activation;
        self
    }
}

/// Why a grammar could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// The grammar for these tools would pass a limit; it was not built. Offer fewer
    /// tools, no chained form, or raise the limit.
    #[error(
        "the grammar for these tools needs more than its limits allow \
         ({bytes} bytes and {rules} rules so far; at most {max_bytes} bytes and {max_rules} rules)"
    )]
    TooLarge {
        /// Bytes the grammar would have had when it stopped.
        bytes: usize,
        /// Rules it would have had when it stopped.
        rules: usize,
        /// [`GrammarOptions::max_bytes`].
        max_bytes: usize,
        /// [`GrammarOptions::max_rules`].
        max_rules: usize,
    },
    /// No offered tool can be called in the protocol (none was given, or every name
    /// was left out: see [`StrictGrammar::omitted`] of a grammar that could be built).
    #[error("no offered tool can be called in {protocol}{}", .omitted.first().map(|o| format!(": {o}")).unwrap_or_default())]
    NoCallableTool {
        /// `TAM` or `ACTION`.
        protocol: &'static str,
        /// What was left out, and why.
        omitted: Vec<Omission>,
    },
}

/// Why a tool or a parameter is not in a grammar. `#[non_exhaustive]`, as error enums
/// are: a new reason may come with a new rule, and callers display reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OmitReason {
    /// ACTION: not an XML name, so not a tag name.
    NotAnXmlName,
    /// ACTION: the name `action` in any case, whose close tag ends the block. TAM: a key
    /// whose canonical form is `command` or `command<digits>`, which names a call's tool.
    ReservedName,
    /// TAM: a key with blanks, `:`, `：`, `「`, a leading `#`, a marker, or over 120 bytes.
    NotATamKey,
    /// TAM: a tool id that is empty, has blanks around it, or holds `「末」`.
    NotATamValue,
    /// TAM: a key of the same canonical form as an earlier one of the tool.
    DuplicateKey,
    /// A tool id given twice: the first is kept.
    DuplicateTool,
    /// ACTION: a name over 128 bytes (a TAM key over 120 bytes is [`OmitReason::NotATamKey`]).
    NameTooLong,
    /// A tool one of whose required parameters, without a default, is left out: no call
    /// of it could be valid.
    RequiredParameterLeftOut,
}

impl fmt::Display for OmitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OmitReason::NotAnXmlName => "not an XML name",
            OmitReason::ReservedName => "a reserved name",
            OmitReason::NotATamKey => "not a TAM key",
            OmitReason::NotATamValue => "not a TAM command value",
            OmitReason::DuplicateKey => "the same canonical key as an earlier parameter",
            OmitReason::DuplicateTool => "a tool id given twice",
            OmitReason::NameTooLong => "a name over 128 bytes",
            OmitReason::RequiredParameterLeftOut => {
                "a required parameter without a default cannot be written"
            }
        })
    }
}

/// A tool, or one parameter of it, that a grammar leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Omission {
    /// The tool's id.
    pub tool: String,
    /// The parameter, when only it is left out.
    pub parameter: Option<String>,
    /// Why.
    pub reason: OmitReason,
}

impl Omission {
    fn tool(tool: &str, reason: OmitReason) -> Omission {
        Omission {
            tool: tool.to_owned(),
            parameter: None,
            reason,
        }
    }

    fn parameter(tool: &str, parameter: &str, reason: OmitReason) -> Omission {
        Omission {
            tool: tool.to_owned(),
            parameter: Some(parameter.to_owned()),
            reason,
        }
    }
}

impl fmt::Display for Omission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.parameter {
            Some(parameter) => write!(
                f,
                "parameter {parameter:?} of tool {:?} left out: {}",
                self.tool, self.reason
            ),
            None => write!(f, "tool {:?} left out: {}", self.tool, self.reason),
        }
    }
}

/// The grammars that constrain one request's blocks to calls of its tools. See the
/// [module docs](self) for their shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictGrammar {
    protocol: Protocol,
    activation: Activation,
    gbnf: String,
    body: String,
    rules: usize,
    tools: Vec<String>,
    bare: Vec<String>,
    omitted: Vec<Omission>,
}

impl StrictGrammar {
    /// Builds the grammars for `tools` (a [`CompiledTool`](crate::CompiledTool) gives its
    /// [`definition`](crate::CompiledTool::definition)), in the order given.
    ///
    /// # Errors
    /// [`GrammarError::TooLarge`] when the grammar would pass
    /// [`GrammarOptions::max_bytes`] or [`GrammarOptions::max_rules`];
    /// [`GrammarError::NoCallableTool`] when no tool can be written in the protocol.
    pub fn new<'a>(
        tools: impl IntoIterator<Item = &'a ToolDefinition>,
        options: &GrammarOptions,
    ) -> Result<StrictGrammar, GrammarError> {
        let mut rules = Rules::new(Budget {
            max_bytes: options.max_bytes,
            max_rules: options.max_rules,
        });
        let mut omitted = Vec::new();
        let offered = distinct_tools(tools, &mut omitted);
        let mut loose_counts: HashMap<String, usize> = HashMap::new();
        for (tool, _) in &offered {
            *loose_counts
                .entry(loose_name(tool.id.as_str()))
                .or_default() += 1;
        }
        // The spellings of a tool's name a grammar takes: more than the declared one only
        // when no other offered name is the same loosely (the proxy resolves those).
        let spell = |id: &str| -> Vec<String> {
            if loose_counts.get(&loose_name(id)) == Some(&1) {
                spellings(id)
            } else {
                vec![id.to_owned()]
            }
        };
        let (protocol_name, start, end) = match options.protocol {
            Protocol::Action => ("ACTION", action::START, action::END),
            Protocol::Tam => ("TAM", tam::START, tam::END),
        };
        let mut names = Vec::new();
        let input = BodyInput {
            offered: &offered,
            spell: &spell,
            options,
            protocol_name,
        };
        // ACTION, lazy: the rule of any call, and the names whose bare elements trigger it.
        let (body, bare) = match options.protocol {
            Protocol::Action => input.action_body(&mut rules, &mut names, &mut omitted)?,
            Protocol::Tam => (input.tam_body(&mut rules, &mut names, &mut omitted)?, None),
        };
        let block = format!("{} {body} {}", text::lit(start), text::lit(end));
        let gbnf = match &bare {
            Some((any_call, _)) => rules.render(&format!("{block} | {any_call}"))?,
            None => rules.render(&block)?,
        };
        let body_grammar = rules.render(&body)?;
        Ok(StrictGrammar {
            protocol: options.protocol,
            activation: options.activation,
            gbnf,
            body: body_grammar,
            rules: rules.count() + 1,
            tools: names,
            bare: bare.map(|(_, names)| names).unwrap_or_default(),
            omitted,
        })
    }

    /// Lazy or required.
    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// The GBNF grammar (llama.cpp): `root` is one whole block, start marker to end
    /// marker, or (lazy ACTION, [`bare_call_tools`](Self::bare_call_tools)) one call
    /// element of those tools. A lazy grammar is applied from its trigger on, which is
    /// where the block or the element starts; a required one from the reply's first
    /// character.
    pub fn gbnf(&self) -> &str {
        &self.gbnf
    }

    /// The same rules with `root` the block's body, between the markers: the content of
    /// the structural tag's one tag (xgrammar EBNF, which reads this GBNF subset).
    pub fn body_grammar(&self) -> &str {
        &self.body
    }

    /// The block's start marker: `<ACTION>` or `<|[REQUEST_TOOL]|>`.
    pub fn start_marker(&self) -> &'static str {
        match self.protocol {
            Protocol::Action => action::START,
            Protocol::Tam => tam::START,
        }
    }

    /// The block's end marker: `</ACTION>` or `<|[END_TOOL]|>`.
    pub fn end_marker(&self) -> &'static str {
        match self.protocol {
            Protocol::Action => action::END,
            Protocol::Tam => tam::END,
        }
    }

    /// The trigger words of a lazy grammar: the start marker. The same for a required
    /// one, which needs no trigger.
    pub fn triggers(&self) -> [&'static str; 1] {
        [self.start_marker()]
    }

    /// The tools whose call elements written without `<ACTION>` switch the grammar on
    /// ([`GrammarOptions::bare_calls`]): the callable ones whose names the ACTION decoder
    /// takes for such elements (ASCII, at most [`MAX_BARE_NAME_BYTES`] bytes, not a
    /// reasoning tag's name), the first [`MAX_BARE_CALL_TOOLS`]. Empty for TAM and for
    /// required grammars.
    pub fn bare_call_tools(&self) -> &[String] {
        &self.bare
    }

    /// The trigger patterns of a lazy grammar, besides its [`triggers`](Self::triggers):
    /// for [`bare_call_tools`](Self::bare_call_tools), one regular expression (ECMAScript,
    /// as llama-server's `std::regex` reads it) that matches `<name>` of one of them where
    /// it is the first text of a line but for spaces and tabs, the element in its first
    /// capture group: the grammar applies from there (its `root` takes a whole block or
    /// one call element). Empty when there is none.
    pub fn trigger_patterns(&self) -> Vec<String> {
        if self.bare.is_empty() || self.activation == Activation::Required {
            return Vec::new();
        }
        let names: Vec<String> = self.bare.iter().map(|n| n.replace('.', "\\.")).collect();
        vec![format!("(?:^|\\n)[ \\t]*(<(?:{})>)", names.join("|"))]
    }

    /// The fields to add to a llama-server `/completion` request: `grammar`,
    /// `grammar_lazy`, and for a lazy grammar `grammar_triggers` (a word trigger, type 1,
    /// the start marker, and a pattern trigger, type 2, for each of
    /// [`trigger_patterns`](Self::trigger_patterns)) and `preserved_tokens` (the start
    /// marker: the server refuses a trigger word that is a single token unless it is
    /// preserved; for a word of several tokens the field does nothing).
    pub fn llama_server_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("grammar".to_owned(), Value::from(self.gbnf.as_str()));
        let lazy = self.activation == Activation::Lazy;
        fields.insert("grammar_lazy".to_owned(), Value::from(lazy));
        if lazy {
            let start = self.start_marker();
            let mut triggers = vec![json!({"type": 1, "value": start})];
            triggers.extend(
                self.trigger_patterns()
                    .into_iter()
                    .map(|pattern| json!({"type": 2, "value": pattern})),
            );
            fields.insert("grammar_triggers".to_owned(), Value::Array(triggers));
            fields.insert("preserved_tokens".to_owned(), json!([start]));
        }
        fields
    }

    /// The `response_format` for vLLM and SGLang: `{"type": "structural_tag", "format":
    /// {"type": "triggered_tags", …}}` with the start marker as trigger, one tag (begin
    /// the start marker, content [`body_grammar`](Self::body_grammar), end the end
    /// marker), `stop_after_first: true` (the reply ends after the block), and
    /// `at_least_one` true for a required grammar (the block then starts the reply).
    pub fn structural_tag(&self) -> Value {
        let start = self.start_marker();
        json!({
            "type": "structural_tag",
            "format": {
                "type": "triggered_tags",
                "triggers": [start],
                "tags": [{
                    "type": "tag",
                    "begin": start,
                    "content": {"type": "grammar", "grammar": self.body},
                    "end": self.end_marker(),
                }],
                "at_least_one": self.activation == Activation::Required,
                "stop_after_first": true,
            }
        })
    }

    /// The number of rules of [`gbnf`](Self::gbnf).
    pub fn rule_count(&self) -> usize {
        self.rules
    }

    /// The ids of the tools the grammar can call, in the order given.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// The tools and parameters left out, and why.
    pub fn omitted(&self) -> &[Omission] {
        &self.omitted
    }
}

/// `tools` in the order given, each with the shape of its parameters; a tool whose id
/// came before is recorded in `omitted` instead.
fn distinct_tools<'a>(
    tools: impl IntoIterator<Item = &'a ToolDefinition>,
    omitted: &mut Vec<Omission>,
) -> Vec<(&'a ToolDefinition, Shape)> {
    let mut seen = HashSet::new();
    let mut offered: Vec<(&ToolDefinition, Shape)> = Vec::new();
    for tool in tools {
        if !seen.insert(tool.id.as_str()) {
            omitted.push(Omission::tool(tool.id.as_str(), OmitReason::DuplicateTool));
            continue;
        }
        offered.push((tool, crate::coerce::read_shape(&tool.parameters)));
    }
    offered
}

/// The rule of any bare call element of a lazy ACTION grammar, and the names of the tools
/// whose bare elements trigger it.
type BareCalls = (String, Vec<String>);

/// What a block's body rule is built from: the offered tools (duplicates left out) with
/// their parameters' shapes, the spellings of a name, the options.
struct BodyInput<'s, 'a, F> {
    offered: &'s [(&'a ToolDefinition, Shape)],
    spell: &'s F,
    options: &'s GrammarOptions,
    protocol_name: &'static str,
}

impl<F: Fn(&str) -> Vec<String>> BodyInput<'_, '_, F> {
    /// No offered tool can be called: the error, with what was left out and why.
    fn none_callable(&self, omitted: &mut Vec<Omission>) -> GrammarError {
        GrammarError::NoCallableTool {
            protocol: self.protocol_name,
            omitted: std::mem::take(omitted),
        }
    }

    /// The names a block of a tool not offered may not take, when the grammar keeps such
    /// blocks apart (lazy, [`GrammarOptions::unoffered_blocks`]).
    fn unoffered<'n>(&self, offered: &'n [&'n str]) -> Option<&'n [&'n str]> {
        (self.options.unoffered_blocks && self.options.activation == Activation::Lazy)
            .then_some(offered)
    }

    /// The ACTION block's body rule, the names of the tools it calls pushed to `names`,
    /// and (lazy, with bare calls) the rule of any bare call with the names that trigger
    /// it.
    fn action_body(
        &self,
        rules: &mut Rules,
        names: &mut Vec<String>,
        omitted: &mut Vec<Omission>,
    ) -> Result<(String, Option<BareCalls>), GrammarError> {
        let mut generator = action::Action::new(rules);
        let mut calls = Vec::new();
        let mut exact_calls = Vec::new();
        let mut callable: Vec<&ToolDefinition> = Vec::new();
        for (tool, shape) in self.offered {
            let spelt = (self.spell)(tool.id.as_str());
            if let Some(call) = generator.call(tool, shape, &spelt, omitted)? {
                calls.push(call.any);
                exact_calls.push(call.exact);
                callable.push(tool);
                names.push(tool.id.as_str().to_owned());
            }
        }
        if calls.is_empty() {
            return Err(self.none_callable(omitted));
        }
        let offered: Vec<&str> = names.iter().map(String::as_str).collect();
        let body = generator.body(&calls, self.unoffered(&offered))?;
        let bare = if self.options.bare_calls && self.options.activation == Activation::Lazy {
            bare_calls(rules, &callable, &exact_calls)?
        } else {
            None
        };
        Ok((body, bare))
    }

    /// The TAM block's body rule (with chained calls of the tools that can be chained),
    /// the names of the tools it calls pushed to `names`.
    fn tam_body(
        &self,
        rules: &mut Rules,
        names: &mut Vec<String>,
        omitted: &mut Vec<Omission>,
    ) -> Result<String, GrammarError> {
        let usable: Vec<tam::TamTool<'_>> = self
            .offered
            .iter()
            .filter_map(|(tool, shape)| tam::Tam::tool(tool, shape, omitted))
            .collect();
        if usable.is_empty() {
            return Err(self.none_callable(omitted));
        }
        let mut generator = tam::Tam::new(rules);
        let mut calls = Vec::new();
        let spelt: Vec<Vec<String>> = usable.iter().map(|tool| (self.spell)(tool.id)).collect();
        for (tool, spellings) in usable.iter().zip(&spelt) {
            calls.push(generator.call(tool, spellings, None)?);
            names.push(tool.id.to_owned());
        }
        let mut chained = Vec::new();
        let chainable: Vec<(&tam::TamTool<'_>, &Vec<String>)> = usable
            .iter()
            .zip(&spelt)
            .filter(|(tool, _)| tool.chainable)
            .collect();
        if !chainable.is_empty() {
            for link in 1..=self.options.max_chained_calls.min(MAX_CALLS) {
                let mut link_calls = Vec::new();
                for (tool, spellings) in &chainable {
                    link_calls.push(generator.call(tool, spellings, Some(link))?);
                }
                chained.push(link_calls);
            }
        }
        let offered: Vec<&str> = names.iter().map(String::as_str).collect();
        generator.body(&calls, &chained, self.unoffered(&offered))
    }
}

/// The rule of any bare call element of the tools of `callable` (their exact calls in
/// `exact_calls`) that may trigger a grammar, and their names; `None` when there are none.
fn bare_calls(
    rules: &mut Rules,
    callable: &[&ToolDefinition],
    exact_calls: &[String],
) -> Result<Option<BareCalls>, GrammarError> {
    let triggers = bare_call_names(callable);
    // The calls of those tools only: the grammar applies from their tag.
    let bare_calls: Vec<String> = callable
        .iter()
        .zip(exact_calls)
        .filter(|(tool, _)| triggers.iter().any(|t| t == tool.id.as_str()))
        .map(|(_, call)| call.clone())
        .collect();
    if !bare_calls.is_empty() {
        return Ok(Some((
            alternatives(rules, "bare-call", &bare_calls)?,
            triggers,
        )));
    }
    Ok(None)
}

/// Most tools whose bare call elements trigger a grammar: the ACTION decoder's limit
/// (`action_xml::MAX_BARE_CALL_TOOLS`).
pub const MAX_BARE_CALL_TOOLS: usize = 256;

/// Longest tool name whose bare call element triggers a grammar: the ACTION decoder's
/// limit (`action_xml::MAX_BARE_CALL_NAME_BYTES`).
pub const MAX_BARE_NAME_BYTES: usize = 61;

/// The names of `callable` whose call elements written without `<ACTION>` the ACTION
/// decoder reads as calls and a trigger pattern can name: ASCII (a pattern is matched
/// byte by byte), at most [`MAX_BARE_NAME_BYTES`], not `think` or `thinking` in any case
/// (reasoning tags), the first [`MAX_BARE_CALL_TOOLS`]. Left out too: a tool whose
/// parameters (at any depth) include an element of its own name, or named `item` (array
/// items): the decoder ends a bare element at the first close tag of its name, so such a
/// call would end early.
fn bare_call_names(callable: &[&ToolDefinition]) -> Vec<String> {
    callable
        .iter()
        .map(|tool| tool.id.as_str())
        .zip(callable.iter().map(|tool| &tool.parameters))
        .filter(|(name, parameters)| {
            name.is_ascii()
                && name.len() <= MAX_BARE_NAME_BYTES
                && !name.eq_ignore_ascii_case("think")
                && !name.eq_ignore_ascii_case("thinking")
                && *name != "item"
                && !names_a_member(parameters, name, 0)
        })
        .take(MAX_BARE_CALL_TOOLS)
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Whether `schema` declares a property named `name` at any depth (`properties`, and the
/// schemas under any keyword), or nests past the depth a grammar follows (then: yes).
fn names_a_member(schema: &Value, name: &str, depth: usize) -> bool {
    if depth > 64 {
        return true;
    }
    match schema {
        Value::Object(map) => map.iter().any(|(key, value)| {
            (key == "properties" && value.as_object().is_some_and(|p| p.contains_key(name)))
                || names_a_member(value, name, depth + 1)
        }),
        Value::Array(items) => items.iter().any(|v| names_a_member(v, name, depth + 1)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

/// A tool name as the proxy matches it: ASCII case folded, `_`, `-` and `.` left out.
fn loose_name(name: &str) -> String {
    name.chars()
        .filter(|c| !action::LOOSE_SEPARATORS.contains(c))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The spellings of tool name `id` a call may use: `id`, its snake case (a `_` between a
/// lower-case letter or digit and an upper-case letter, and before the last upper-case
/// letter of a run followed by a lower-case one; `.` and `-` written `_`; ASCII lower
/// case) and its ASCII lower case, each once, `id` first.
fn spellings(id: &str) -> Vec<String> {
    let chars: Vec<char> = id.chars().collect();
    let mut snake = String::with_capacity(id.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let before = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if before.is_ascii_lowercase()
                || before.is_ascii_digit()
                || (before.is_ascii_uppercase() && next_lower)
            {
                snake.push('_');
            }
        }
        match c {
            '.' | '-' => snake.push('_'),
            c => snake.push(c.to_ascii_lowercase()),
        }
    }
    let mut out = vec![id.to_owned()];
    for spelling in [snake, id.to_ascii_lowercase()] {
        if !out.contains(&spelling) {
            out.push(spelling);
        }
    }
    out
}

/// An expression for one of `names` (a rule when there are several).
fn alternatives(rules: &mut Rules, kind: &str, names: &[String]) -> Result<String, GrammarError> {
    if let [one] = names {
        return Ok(one.clone());
    }
    let mut body = String::new();
    for name in names {
        rules.check_room(body.len() + name.len() + 3)?;
        if !body.is_empty() {
            body.push_str(" | ");
        }
        body.push_str(name);
    }
    rules.add(kind, "", body)
}

/// Members in declaration order, each `(expression, required)`: required ones once,
/// optional ones at most once, `separator` between two written ones (and not before the
/// first). With `at_least_one`, some member must be written even when none is required.
/// The empty string when there is nothing to write.
///
/// With a separator, where the first written member may be any optional one before the
/// first required, the rest after member `i` is a rule `rest-i ::= (sep m_i+1)? rest-i+1`,
/// so the text grows with the members, not with their square.
fn ordered(
    rules: &mut Rules,
    members: Vec<(String, bool)>,
    separator: &str,
    at_least_one: bool,
) -> Result<String, GrammarError> {
    if members.is_empty() {
        return Ok(String::new());
    }
    let first_required = members.iter().position(|(_, required)| *required);
    let linear = separator.is_empty() && (!at_least_one || first_required.is_some());
    let step = |expression: &str, required: bool, first: bool| {
        let piece = if first || separator.is_empty() {
            expression.to_owned()
        } else {
            format!("{separator} {expression}")
        };
        if required {
            piece
        } else {
            format!("( {piece} )?")
        }
    };
    if linear || first_required == Some(0) {
        let parts: Vec<String> = members
            .iter()
            .enumerate()
            .map(|(i, (expression, required))| step(expression, *required, i == 0))
            .collect();
        return Ok(parts.join(" "));
    }
    // The first member written is one of those up to the first required one; after it
    // come the others in order.
    let last_start = first_required.unwrap_or(members.len() - 1);
    let mut rests: Vec<Option<String>> = vec![None; members.len() + 1];
    for i in (1..members.len()).rev() {
        let (expression, required) = &members[i];
        let mut body = step(expression, *required, false);
        if let Some(next) = &rests[i + 1] {
            body.push(' ');
            body.push_str(next);
        }
        let name = rules.fresh("rest", "");
        rules.define(name.clone(), body)?;
        rests[i] = Some(name);
    }
    let mut starts = Vec::new();
    for (i, (expression, _)) in members.iter().enumerate().take(last_start + 1) {
        let start = match &rests[i + 1] {
            Some(rest) => format!("{expression} {rest}"),
            None => expression.clone(),
        };
        rules.check_room(start.len())?;
        starts.push(start);
    }
    let choice = format!("( {} )", starts.join(" | "));
    Ok(if first_required.is_none() && !at_least_one {
        format!("{choice}?")
    } else {
        choice
    })
}
