//! Strict-call grammars: their shape, what they accept and refuse, checked against the
//! real decoders and coercion, their escaping, their size bound, and real tool sets.
//!
//! The GBNF is read and matched by `support/gbnf.rs`, a reader and matcher of the GBNF
//! subset the generator writes that follows llama.cpp's (no maintained Rust crate parses
//! and matches GBNF). "Valid" means what a proxy needs: the decoder (the `tam` crate)
//! reads the text as one block whose calls are all of offered tools, with no error, and
//! each call's arguments coerce to its schema (a validator-only keyword such as
//! `maxLength` aside, which the grammar does not enforce).

#[path = "support/gbnf.rs"]
mod gbnf;

use gbnf::{Grammar, Rng};
use serde_json::{Map, Value, json};
use tam::{Config, Event, Protocol};
use tool_schema::grammar::{Activation, GrammarError, GrammarOptions, OmitReason, StrictGrammar};
use tool_schema::{CompiledTool, Error, Implementation, KeyMatch, ToolDefinition, ToolId};

fn tool(id: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition::new(
        ToolId::parse(id).unwrap(),
        "test tool",
        parameters,
        Implementation::Service,
    )
}

fn weather() -> ToolDefinition {
    tool(
        "get_weather",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
                "ratio": {"type": "number"},
                "detailed": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "sizes": {"type": "array", "items": {"type": "integer"}},
                "where": {
                    "type": "object",
                    "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                    "required": ["lat", "lon"]
                },
                "extra": {"type": "object"}
            },
            "required": ["city"]
        }),
    )
}

fn write_file() -> ToolDefinition {
    tool(
        "write_file",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            },
            "required": ["path", "content"]
        }),
    )
}

/// Lazy grammars of `protocol`'s blocks with the default limits.
fn lazy_options(protocol: Protocol) -> GrammarOptions {
    match protocol {
        Protocol::Tam => GrammarOptions::tam(),
        Protocol::Action => GrammarOptions::action(),
    }
}

/// The protocol of `grammar`'s blocks, told by its start marker.
fn protocol_of(grammar: &StrictGrammar) -> Protocol {
    if grammar.start_marker() == "<ACTION>" {
        Protocol::Action
    } else {
        Protocol::Tam
    }
}

/// A decoded call: its tool and its coerced arguments.
type Call = (String, Map<String, Value>);

/// The events of `text`, read as the proxy reads a reply to a request offering `tools`: a
/// call element of one of them without `<ACTION>` is a call too.
fn decode(protocol: Protocol, tools: &[ToolDefinition], text: &str) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let mut decoder = tam::Decoder::new(Config::for_protocol(protocol.into()))
        .with_bare_call_tools(tools.iter().map(|t| t.id.as_str()));
    decoder.feed(text, |e| events.push(e.into_owned()));
    decoder.finish(|e| events.push(e.into_owned()));
    events
}

/// What the decoder and coercion make of `text`: the calls, or why it is not one block of
/// valid calls of `tools`.
fn read(protocol: Protocol, tools: &[ToolDefinition], text: &str) -> Result<Vec<Call>, String> {
    let events = decode(protocol, tools, text);
    let mut calls = Vec::new();
    let mut blocks = 0;
    for event in events {
        match event {
            Event::Text { text, .. } if !text.trim().is_empty() => {
                return Err(format!("prose {text:?}"));
            }
            Event::Diagnostic(d) => return Err(format!("{}: {}", d.code, d.message)),
            Event::TamBlock(block) => {
                blocks += 1;
                if let Some(d) = block.diagnostics.iter().find(|d| d.is_error()) {
                    return Err(format!("{}: {}", d.code, d.message));
                }
                for call in &block.calls {
                    let compiled = compiled(tools, &call.tool)?;
                    let arguments = call
                        .params
                        .iter()
                        .map(|p| (p.key.to_string(), Value::String(p.value.to_string())));
                    let coerced = compiled.coerce(arguments, KeyMatch::Canonical);
                    calls.push((call.tool.to_string(), accept(coerced)?));
                }
            }
            Event::ActionBlock(block) => {
                blocks += 1;
                if let Some(d) = block.diagnostics.iter().find(|d| d.is_error()) {
                    return Err(format!("{}: {}", d.code, d.message));
                }
                for call in &block.calls {
                    let compiled = compiled(tools, &call.tool)?;
                    let coerced =
                        compiled.coerce_with_source(call.args.clone(), KeyMatch::Exact, |key| {
                            call.params
                                .iter()
                                .find(|p| &*p.key == key)
                                .map(|p| &*p.source)
                        });
                    calls.push((call.tool.clone(), accept(coerced)?));
                }
            }
            _ => {}
        }
    }
    if blocks != 1 || calls.is_empty() {
        return Err(format!("{blocks} blocks, {} calls", calls.len()));
    }
    Ok(calls)
}

/// The offered tool a call naming `id` is for, as the proxy resolves it: the one named
/// `id`, else the one tool whose name is `id` loosely.
fn compiled(tools: &[ToolDefinition], id: &str) -> Result<CompiledTool, String> {
    let exact = tools.iter().find(|t| t.id.as_str() == id);
    let mut loosely = tools.iter().filter(|t| loose(t.id.as_str()) == loose(id));
    let definition = match (exact, loosely.next(), loosely.next()) {
        (Some(definition), _, _) | (None, Some(definition), None) => definition,
        _ => return Err(format!("unknown tool {id:?}")),
    };
    CompiledTool::new(definition.clone()).map_err(|e| e.to_string())
}

/// Coercion's result, with findings of validator-only keywords (which the grammar does
/// not follow) not counted.
fn accept(
    coerced: Result<Map<String, Value>, tool_schema::ValidationErrors>,
) -> Result<Map<String, Value>, String> {
    match coerced {
        Ok(arguments) => Ok(arguments),
        Err(errors) => {
            let message = errors.to_string();
            let (arguments, errors) = errors.into_parts();
            if errors
                .iter()
                .all(|e| matches!(e, Error::SchemaViolation { .. }))
            {
                Ok(arguments)
            } else {
                Err(message)
            }
        }
    }
}

struct Built {
    strict: StrictGrammar,
    gbnf: Grammar,
    body: Grammar,
}

fn build_with(tools: &[ToolDefinition], options: &GrammarOptions) -> Built {
    let strict = StrictGrammar::new(tools, options).unwrap();
    let gbnf = Grammar::parse(strict.gbnf())
        .unwrap_or_else(|e| panic!("the GBNF does not parse: {e}\n{}", strict.gbnf()));
    let body = Grammar::parse(strict.body_grammar()).expect("the body grammar parses");
    assert_eq!(gbnf.written_rules(), strict.rule_count());
    Built { strict, gbnf, body }
}

/// The grammar of calls only: no block that gives no call (see
/// `a_block_for_a_tool_not_offered_gives_no_call` for those).
fn build(tools: &[ToolDefinition], protocol: Protocol) -> Built {
    build_with(tools, &lazy_options(protocol).with_unoffered_blocks(false))
}

/// A tool name as the proxy resolves it: without ASCII case and `_`, `-`, `.`.
fn loose(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The tools of the calls `text` decodes into, whatever their validity.
fn called_tools(protocol: Protocol, offered: &[ToolDefinition], text: &str) -> Vec<String> {
    let mut tools = Vec::new();
    for event in decode(protocol, offered, text) {
        match event {
            Event::ActionBlock(block) => tools.extend(block.calls.iter().map(|c| c.tool.clone())),
            Event::TamBlock(block) => {
                tools.extend(block.calls.iter().map(|c| c.tool.trim().to_owned()));
            }
            _ => {}
        }
    }
    tools
}

/// No call of `text` names an offered tool, even loosely.
fn calls_no_offered_tool(protocol: Protocol, tools: &[ToolDefinition], text: &str) -> bool {
    let offered: Vec<String> = tools.iter().map(|t| loose(t.id.as_str())).collect();
    called_tools(protocol, tools, text)
        .iter()
        .all(|tool| !offered.contains(&loose(tool)))
}

#[test]
fn a_block_for_a_tool_not_offered_gives_no_call() {
    let tools = [weather(), write_file()];
    let built = build_with(&tools, &GrammarOptions::action());
    for text in [
        "<ACTION></ACTION>",
        "<ACTION>\n</ACTION>",
        "<ACTION><get_wether><city>Paris</city></get_wether></ACTION>",
        "<ACTION>\n<search_web><query>news</query></search_web>\n</ACTION>",
        "<ACTION><get_weather_now/></ACTION>",
        "<ACTION><Get.Weathers>x</Get.Weathers></ACTION>",
        "<ACTION><answer>I cannot: a < b &amp; <b>bold</b> </get_weather> Vec<u8></answer></ACTION>",
        "<ACTION><note>unclosed</ACTION>",
        "<ACTION><_/></ACTION>",
        "<ACTION><x></act</ACTION>",
    ] {
        assert!(built.accepts(text), "grammar refuses {text:?}");
        let called = called_tools(Protocol::Action, &tools, text);
        assert!(
            calls_no_offered_tool(Protocol::Action, &tools, text),
            "{text:?} calls an offered tool: {called:?}"
        );
    }
    for text in [
        // Offered names, loosely: the call must be the offered one, as strict as ever.
        "<ACTION><Get_Weather><city>Paris</city></Get_Weather></ACTION>",
        "<ACTION><GET.WEATHER/></ACTION>",
        "<ACTION><writefile><path>p</path></writefile></ACTION>",
        // An offered tool's element anywhere after it.
        "<ACTION><foo>x</foo><get_weather><city>P</city></get_weather></ACTION>",
        "<ACTION><foo>x <WRITE-FILE></foo></ACTION>",
        "<ACTION><foo><![CDATA[<get_weather>]]></foo></ACTION>",
        // The block's own name, and its close tag in another case.
        "<ACTION><action/></ACTION>",
        "<ACTION><foo></action></ACTION>",
        "<ACTION><foo></ Action ></ACTION>",
        // Not an element: a block must start with a call element or be empty.
        "<ACTION>some prose</ACTION>",
        "<ACTION><5/></ACTION>",
    ] {
        assert!(!built.accepts(text), "grammar accepts {text:?}");
    }
    // A call of an offered tool is as strict as without them.
    assert!(built.accepts("<ACTION><get_weather><city>P</city></get_weather></ACTION>"));
    assert!(!built.accepts("<ACTION><get_weather><town>P</town></get_weather></ACTION>"));
    // Lazy grammars only: a required one has a call.
    let required = build_with(
        &tools,
        &GrammarOptions::action().with_activation(Activation::Required),
    );
    assert!(!required.accepts("<ACTION></ACTION>"));
    assert!(!required.accepts("<ACTION><get_wether/></ACTION>"));
    // Off: none.
    let off = build(&tools, Protocol::Action);
    assert!(!off.accepts("<ACTION><get_wether/></ACTION>"));
}

#[test]
fn a_tam_block_for_a_tool_not_offered_gives_no_call() {
    let tools = [weather(), write_file()];
    let built = build_with(&tools, &GrammarOptions::tam());
    let protocol = Protocol::Tam;
    for text in [
        "<|[REQUEST_TOOL]|>command:「始」get_wether「末」city:「始」Paris「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>\ncommand:「始」search_web「末」\nquery:「始」news「末」\n<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command1:「始」answer「末」text1:「始」no tool fits「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」 x 「末」a:「始」get_weather_now「末」b:「始」<|[END_TO「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」get weather「末」<|[END_TOOL]|>",
    ] {
        assert!(built.accepts(text), "grammar refuses {text:?}");
        let called = called_tools(protocol, &tools, text);
        assert!(!called.is_empty(), "{text:?} has no call");
        assert!(
            calls_no_offered_tool(protocol, &tools, text),
            "{text:?} calls an offered tool: {called:?}"
        );
    }
    for text in [
        // Offered names, loosely or with blanks around: the call must be the offered one.
        "<|[REQUEST_TOOL]|>command:「始」Get.Weather「末」city:「始」P「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」 WRITE-FILE 「末」<|[END_TOOL]|>",
        // An offered tool's call anywhere after it, or an escaped value.
        "<|[REQUEST_TOOL]|>command:「始」foo「末」command:「始」get_weather「末」city:「始」P「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」foo「末」command2:「始」 getweather \n「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」foo「末」x:「始ESCAPE」y「末ESCAPE」<|[END_TOOL]|>",
        // The first call's tool must be written and closed.
        "<|[REQUEST_TOOL]|>command:「始」「末」<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>command:「始」foo<|[END_TOOL]|>",
        "<|[REQUEST_TOOL]|>city:「始」foo「末」<|[END_TOOL]|>",
    ] {
        assert!(!built.accepts(text), "grammar accepts {text:?}");
    }
    let required = build_with(
        &tools,
        &lazy_options(protocol).with_activation(Activation::Required),
    );
    assert!(!required.accepts("<|[REQUEST_TOOL]|>command:「始」foo「末」<|[END_TOOL]|>"));
}

/// Random strings of the grammar with blocks that give no call: each is valid calls of
/// offered tools, or calls none.
fn sampled_blocks_are_valid_calls_or_none(protocol: Protocol) {
    let tools = [weather(), write_file(), nested()];
    let built = build_with(&tools, &lazy_options(protocol));
    let (mut calls, mut none) = (0, 0);
    for seed in 0..600 {
        let mut rng = Rng::new(seed);
        let budget = 20 + rng.below(400);
        let text = built.gbnf.sample(&mut rng, budget);
        assert!(
            built.accepts(&text),
            "the matcher refuses a sample: {text:?}"
        );
        if read(protocol, &tools, &text).is_ok() {
            calls += 1;
        } else {
            assert!(
                calls_no_offered_tool(protocol, &tools, &text),
                "sample {seed} is neither valid calls nor a block without one:\n{text}"
            );
            none += 1;
        }
    }
    assert!(
        calls > 50 && none > 50,
        "{calls} with calls, {none} without"
    );
}

#[test]
fn what_the_action_grammar_allows_is_valid_calls_or_none() {
    sampled_blocks_are_valid_calls_or_none(Protocol::Action);
}

#[test]
fn what_the_tam_grammar_allows_is_valid_calls_or_none() {
    sampled_blocks_are_valid_calls_or_none(Protocol::Tam);
}

impl Built {
    /// The GBNF takes `text` exactly when the body grammar takes it between the markers.
    fn accepts(&self, text: &str) -> bool {
        let whole = self.gbnf.matches(text);
        let start = self.strict.start_marker();
        let end = self.strict.end_marker();
        // A call element without its block is the GBNF's alone (the body grammar is a
        // block's).
        if !text.starts_with(start) && !self.strict.bare_call_tools().is_empty() {
            return whole;
        }
        let body = text
            .strip_prefix(start)
            .and_then(|rest| rest.strip_suffix(end))
            .is_some_and(|body| self.body.matches(body));
        assert_eq!(whole, body, "the two grammars disagree on {text:?}");
        whole
    }
}

/// Each text is accepted by the grammar and read as valid calls.
fn assert_valid(built: &Built, tools: &[ToolDefinition], texts: &[&str]) {
    for text in texts {
        assert!(built.accepts(text), "grammar refuses {text:?}");
        if let Err(reason) = read(protocol_of(&built.strict), tools, text) {
            panic!("the decoder refuses {text:?}: {reason}");
        }
    }
}

/// Each text is refused by the grammar (and, when `invalid`, by the decoder or coercion).
fn assert_refused(built: &Built, tools: &[ToolDefinition], texts: &[(&str, bool)]) {
    for (text, invalid) in texts {
        assert!(!built.accepts(text), "grammar accepts {text:?}");
        if *invalid {
            assert!(
                read(protocol_of(&built.strict), tools, text).is_err(),
                "the decoder reads {text:?} as valid calls"
            );
        }
    }
}

#[test]
fn action_blocks_that_decode_are_accepted() {
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Action);
    assert_valid(
        &built,
        &tools,
        &[
            "<ACTION><get_weather><city>Paris</city></get_weather></ACTION>",
            "<ACTION>\n<get_weather>\n    <city>Paris</city>\n    <unit>celsius</unit>\n    <days>3</days>\n</get_weather>\n</ACTION>",
            "<ACTION><get_weather><city>Rome</city><ratio>-1.5e3</ratio><detailed>true</detailed></get_weather><get_weather><city>Oslo</city><days>0</days></get_weather></ACTION>",
            "<ACTION><get_weather><city>x</city><tags><item>a</item><item>b &amp; c</item></tags><sizes>[3, 5]</sizes></get_weather></ACTION>",
            "<ACTION><get_weather><city>x</city><tags>[\"a\", \"b\"]</tags><sizes>\n<item>1</item>\n<item>-2</item>\n</sizes></get_weather></ACTION>",
            "<ACTION><get_weather><city>x</city><where><lat>1.5</lat><lon>2</lon></where></get_weather></ACTION>",
            "<ACTION><get_weather><city>x</city><where>{\"lat\": 1, \"lon\": 2}</where><extra>{\"k\": [1, {\"v\": null}]}</extra></get_weather></ACTION>",
            "<ACTION><get_weather><city>x</city><extra><![CDATA[{\"key\": \"value\"}]]></extra></get_weather></ACTION>",
            // Code in a string: markup that closes nothing, `<`, `&`, CDATA, comments.
            "<ACTION><write_file><path>a.html</path><content><div class=\"x\">a < b && c</div>\n<p>para</p><!-- note --></content></write_file></ACTION>",
            "<ACTION><write_file><path>a.rs</path><content>let v: Vec<u8> = x.iter().collect::<Vec<_>>(); if a<b {}</content></write_file></ACTION>",
            "<ACTION><write_file><path>a.rs</path><content><![CDATA[\nfn f() { \"</content>\" }\n]]></content></write_file></ACTION>",
            "<ACTION><write_file><path>a.jsx</path><content>return <A b={c}>{d}</A>; // </contents> </con </pat </div></content></write_file></ACTION>",
            "<ACTION><write_file><path>p</path><content></content></write_file></ACTION>",
            // The close tag with blanks inside, which the reader takes as it.
            "<ACTION><write_file><path>p</ path><content>x</content  ></write_file></ACTION>",
        ],
    );
}

#[test]
fn action_blocks_that_do_not_decode_are_refused() {
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Action);
    assert_refused(
        &built,
        &tools,
        &[
            // Unknown tool, unknown parameter, missing required parameter.
            (
                "<ACTION><get_wether><city>Paris</city></get_wether></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><town>Paris</town></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><unit>celsius</unit></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><write_file><path>p</path></write_file></ACTION>",
                true,
            ),
            // Wrong enum member, not an integer, not a boolean, not a number.
            (
                "<ACTION><get_weather><city>x</city><unit>kelvin</unit></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><days>three</days></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><days>2.5</days></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><detailed>maybe</detailed></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><ratio>fast</ratio></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><sizes><item>a</item></sizes></get_weather></ACTION>",
                true,
            ),
            (
                "<ACTION><get_weather><city>x</city><where><lat>1</lat></where></get_weather></ACTION>",
                true,
            ),
            // Mismatched close tags; a value that closes its call or the block early.
            (
                "<ACTION><get_weather><city>Paris</town></get_weather></ACTION>",
                false,
            ),
            (
                "<ACTION><get_weather><city>Paris</city></get_wether></ACTION>",
                true,
            ),
            (
                "<ACTION><write_file><path>p</path><content>a</write_file>b</content></write_file></ACTION>",
                true,
            ),
            (
                "<ACTION><write_file><path>p</path><content>a</ACTION>b</content></write_file></ACTION>",
                true,
            ),
            // A sibling's close tag in a value: the reader takes it as text, but the model
            // that wrote it believes the value closed.
            (
                "<ACTION><write_file><path>p</path><content>a</path>b</content></write_file></ACTION>",
                false,
            ),
            (
                "<ACTION><write_file><path>p</content><content>x</content></write_file></ACTION>",
                false,
            ),
            (
                "<ACTION><write_file><path>p</path><content>a</ action >b</content></write_file></ACTION>",
                true,
            ),
            // An unclosed CDATA section or comment would swallow the close tag.
            (
                "<ACTION><write_file><path>p</path><content>a <![CDATA[ b</content></write_file></ACTION>",
                true,
            ),
            (
                "<ACTION><write_file><path>p</path><content>a <!-- b</content></write_file></ACTION>",
                true,
            ),
            // A control character XML does not allow.
            (
                "<ACTION><write_file><path>p</path><content>a\u{1}</content></write_file></ACTION>",
                true,
            ),
            // Parameters out of declaration order, given twice; an empty block; prose.
            (
                "<ACTION><write_file><content>c</content><path>p</path></write_file></ACTION>",
                false,
            ),
            (
                "<ACTION><get_weather><city>a</city><city>b</city></get_weather></ACTION>",
                false,
            ),
            ("<ACTION></ACTION>", false),
            (
                "<ACTION>hi <get_weather><city>a</city></get_weather></ACTION>",
                false,
            ),
            (
                "Sure. <ACTION><get_weather><city>a</city></get_weather></ACTION>",
                false,
            ),
            // A close tag in another case: the reader takes it as the close tag only
            // where no element was left open in the value.
            (
                "<ACTION><write_file><path>p</PATH><content>x</content></write_file></ACTION>",
                false,
            ),
            (
                "<ACTION><write_file><path><b>p</PATH><content>x</content></write_file></ACTION>",
                true,
            ),
            // Anything after the block.
            (
                "<ACTION><get_weather><city>a</city></get_weather></ACTION> done",
                false,
            ),
        ],
    );
}

#[test]
fn tam_blocks_that_decode_are_accepted() {
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Tam);
    assert_valid(
        &built,
        &tools,
        &[
            "<|[REQUEST_TOOL]|>command:「始」get_weather「末」city:「始」Paris「末」<|[END_TOOL]|>",
            "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\nunit:「始」celsius「末」\ndays:「始」3「末」\n<|[END_TOOL]|>",
            // Several calls as the compact prompt teaches them.
            "<|[REQUEST_TOOL]|>\ncommand:「始」get_weather「末」\ncity:「始」Paris「末」\n\ncommand:「始」get_weather「末」\ncity:「始」Rome「末」\n<|[END_TOOL]|>",
            // Chained calls with comments, as the full prompt teaches them.
            "<|[REQUEST_TOOL]|>\n# Step 1: create\ncommand1:「始」write_file「末」\npath1:「始」/logs/today.log「末」\ncontent1:「始」Task started...「末」\n\n# Step 2: weather\ncommand2:「始」get_weather「末」\ncity2:「始」Oslo「末」\n<|[END_TOOL]|>",
            // Values: JSON lists and objects, one number for a list, free text with markup.
            "<|[REQUEST_TOOL]|>command:「始」get_weather「末」\ncity:「始」x「末」\ntags:「始」[\"a\", \"b\"]「末」\nsizes:「始」7「末」\nwhere:「始」{\"lat\": 1.5, \"lon\": -2}「末」\nextra:「始」{}「末」\n<|[END_TOOL]|>",
            "<|[REQUEST_TOOL]|>command:「始」write_file「末」\npath:「始」a.html「末」\ncontent:「始」<div>「始」 <|[END_TOOL]|> 」「 末」 「ESCAPE」 </div>\n\nend「末」\n<|[END_TOOL]|>",
            "<|[REQUEST_TOOL]|>command:「始」write_file「末」\npath:「始」p「末」\ncontent:「始ESCAPE」a「末」b「末ESCAPE」\n<|[END_TOOL]|>",
            "<|[REQUEST_TOOL]|>command:「始」write_file「末」path:「始」「末」content:「始」「末」<|[END_TOOL]|>",
        ],
    );
}

#[test]
fn a_tam_close_marker_begun_is_finished() {
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Tam);
    let call = "<|[REQUEST_TOOL]|>command:「始」write_file「末」path:「始」p「末」content:";
    for (viable, dead) in [
        // A plain value closed with the escaped form's marker, or `「末` then a break.
        ("「始」abc「末", "「始」abc「末E"),
        ("「始」abc「末", "「始」abc「末\n"),
        // The escaped form: `「末」` is text in it, its own marker must be finished.
        (
            "「始ESCAPE」a「末」b「末ESCAPE",
            "「始ESCAPE」a「末」b「末ESCAPE\n",
        ),
        ("「始ESCAPE」a「末ESCAPE", "「始ESCAPE」a「末ESCAPE「"),
    ] {
        assert!(
            built.gbnf.accepts_prefix(&format!("{call}{viable}")),
            "{viable:?}"
        );
        assert!(
            !built.gbnf.accepts_prefix(&format!("{call}{dead}")),
            "{dead:?}"
        );
    }
}

#[test]
fn tam_blocks_that_do_not_decode_are_refused() {
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Tam);
    assert_refused(
        &built,
        &tools,
        &[
            (
                "<|[REQUEST_TOOL]|>command:「始」get_wether「末」city:「始」P「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」town:「始」P「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」unit:「始」celsius「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」city:「始」x「末」unit:「始」kelvin「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」city:「始」x「末」days:「始」3 days「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」city:「始」x「末」sizes:「始」[1, \"a\"]「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」city:「始」x「末」where:「始」{\"lat\": 1}「末」<|[END_TOOL]|>",
                true,
            ),
            // A value never closed; a chain out of order or with a wrong number.
            (
                "<|[REQUEST_TOOL]|>command:「始」write_file「末」path:「始」p<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command2:「始」get_weather「末」city2:「始」x「末」command1:「始」get_weather「末」city1:「始」y「末」<|[END_TOOL]|>",
                false,
            ),
            (
                "<|[REQUEST_TOOL]|>command1:「始」get_weather「末」city2:「始」x「末」<|[END_TOOL]|>",
                true,
            ),
            // A comment that would swallow an entry; stray text.
            (
                "<|[REQUEST_TOOL]|>#x command:「始」get_weather「末」city:「始」x「末」<|[END_TOOL]|>",
                true,
            ),
            (
                "<|[REQUEST_TOOL]|>command:「始」get_weather「末」 note city:「始」x「末」<|[END_TOOL]|>",
                false,
            ),
            ("<|[REQUEST_TOOL]|><|[END_TOOL]|>", true),
        ],
    );
}

/// Random strings of each grammar are valid blocks: everything a grammar allows decodes
/// into valid calls, whatever characters its free text and enum members hold.
fn sampled_blocks_decode(tools: &[ToolDefinition], protocol: Protocol, count: u64) {
    let built = build(tools, protocol);
    let mut lengths = 0;
    for seed in 0..count {
        let mut rng = Rng::new(seed);
        let budget = 20 + rng.below(400);
        let text = built.gbnf.sample(&mut rng, budget);
        assert!(
            built.accepts(&text),
            "the matcher refuses a sample: {text:?}"
        );
        if let Err(reason) = read(protocol, tools, &text) {
            panic!("sample {seed} does not decode: {reason}\n{text}");
        }
        lengths += text.len();
    }
    assert!(
        lengths > count as usize * 20,
        "samples too short to mean much"
    );
}

#[test]
fn what_the_action_grammar_allows_decodes() {
    sampled_blocks_decode(&[weather(), write_file(), nested()], Protocol::Action, 400);
}

#[test]
fn what_the_tam_grammar_allows_decodes() {
    sampled_blocks_decode(&[weather(), write_file(), nested()], Protocol::Tam, 400);
}

/// Deeper structures: arrays of objects, objects in objects, a member named `item`, a
/// parameter that shares its tool's name, enums of odd members.
fn nested() -> ToolDefinition {
    tool(
        "plan",
        json!({
            "type": "object",
            "properties": {
                "plan": {"type": "string"},
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "item": {"type": "string"},
                            "step": {"type": "integer"},
                            "mode": {"enum": ["a<b", "x&y", "q\"r", " padded ", 3, true, null]}
                        },
                        "required": ["item"],
                        "additionalProperties": false
                    }
                },
                "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                "maybe": {"type": ["integer", "null"]},
                "either": {"type": ["array", "null", "boolean"], "items": {"type": "integer"}},
                "opts": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "boolean"}, "z": {"type": "string"}},
                    "required": ["z"],
                    "additionalProperties": false
                },
                "meta": {
                    "type": "object",
                    "properties": {"owner": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "additionalProperties": false
                }
            },
            "required": ["plan"]
        }),
    )
}

#[test]
fn json_members_keep_their_order_with_commas_only_between_them() {
    let tools = [nested()];
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        let block = |opts: &str| match protocol {
            Protocol::Action => {
                format!("<ACTION><plan><plan>p</plan><opts>{opts}</opts></plan></ACTION>")
            }
            Protocol::Tam => format!(
                "<|[REQUEST_TOOL]|>command:「始」plan「末」\nplan:「始」p「末」\nopts:「始」{opts}「末」\n<|[END_TOOL]|>"
            ),
        };
        for opts in [
            r#"{"z": "a"}"#,
            r#"{"x": 1, "z": "a"}"#,
            r#"{"y": true, "z": "a"}"#,
            r#"{ "x": -1, "y": false, "z": "" }"#,
        ] {
            assert_valid(&built, &tools, &[&block(opts)]);
        }
        for opts in [
            r#"{"x": 1}"#,
            r#"{"z": "a", "x": 1}"#,
            r#"{, "z": "a"}"#,
            r#"{"x": 1,, "z": "a"}"#,
            r#"{"x": 1 "z": "a"}"#,
            r#"{"z": "a",}"#,
        ] {
            assert!(!built.accepts(&block(opts)), "{opts}");
        }
    }
}

#[test]
fn the_same_tools_give_the_same_grammar() {
    // Servers cache compiled grammars by their text: one client's requests, which offer
    // the same tools each time, must give the same text.
    let tools = claude_code();
    for protocol in [Protocol::Action, Protocol::Tam] {
        let a = StrictGrammar::new(&tools, &lazy_options(protocol)).unwrap();
        let b = StrictGrammar::new(&tools, &lazy_options(protocol)).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn escaped_names_and_members_match_exactly_and_change_no_structure() {
    // Names and members with every character that is syntax somewhere.
    let nasty = "ns:we\"ird]|\\[#(x)*{1}?-é😀";
    let member = "a\"b]c|d\\e\n\tf\u{1}「末」g";
    let tools = [tool(
        nasty,
        json!({
            "type": "object",
            "properties": {
                "k\"]|\\": {"type": "string", "enum": [member, "plain"]},
                "n": {"type": "integer"}
            },
            "required": ["k\"]|\\"]
        }),
    )];
    let tam = build(&tools, Protocol::Tam);
    assert_eq!(tam.strict.tools(), [nasty]);
    // The member that holds 「末」 takes the escape form.
    let text = format!(
        "<|[REQUEST_TOOL]|>command:「始」{nasty}「末」\nk\"]|\\:「始ESCAPE」{member}「末ESCAPE」\n<|[END_TOOL]|>"
    );
    assert!(tam.accepts(&text));
    let calls = read(Protocol::Tam, &tools, &text).unwrap();
    assert_eq!(calls[0].1["k\"]|\\"], json!(member));
    assert!(!tam.accepts(&text.replace("「始ESCAPE」a", "「始ESCAPE」b")));
    let plain = format!(
        "<|[REQUEST_TOOL]|>command:「始」{nasty}「末」\nk\"]|\\:「始」plain「末」\n<|[END_TOOL]|>"
    );
    assert!(tam.accepts(&plain));
    assert!(!tam.accepts(&plain.replace("plain", "plaiN")));
    assert!(!tam.accepts(&plain.replace(nasty, "ns:we\"ird]|\\[#(x)*{1}?-e😀")));

    // ACTION cannot name such a tool; an XML-safe tool with such members can.
    let action = StrictGrammar::new(&tools, &GrammarOptions::action());
    assert!(matches!(action, Err(GrammarError::NoCallableTool { .. })));
    let tools = [tool(
        "ns:odd.name-é",
        json!({
            "type": "object",
            "properties": {"k": {"enum": ["a<b>&c\"d]|\\", "é😀", "x\ty"]}},
            "required": ["k"]
        }),
    )];
    let action = build(&tools, Protocol::Action);
    let text = "<ACTION><ns:odd.name-é><k>a&lt;b&gt;&amp;c\"d]|\\</k></ns:odd.name-é></ACTION>";
    assert!(action.accepts(text));
    assert_eq!(
        read(Protocol::Action, &tools, text).unwrap()[0].1["k"],
        json!("a<b>&c\"d]|\\")
    );
    assert!(!action.accepts(&text.replace("&amp;", "&")));
    // The grammar text is ASCII, one rule per line.
    for grammar in [tam.strict.gbnf(), action.strict.gbnf()] {
        assert!(grammar.is_ascii());
        for line in grammar.lines() {
            let (name, _) = line.split_once(" ::= ").expect("a rule per line");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
        }
    }
}

#[test]
fn names_that_clean_up_alike_get_rules_of_their_own() {
    let schema = |p: &str| json!({"type": "object", "properties": {p: {"type": "integer"}}, "required": [p]});
    let tools = [
        tool("get.weather", schema("a")),
        tool("get_weather", schema("b")),
        tool("get-weather", schema("c")),
        tool("GET_WEATHER", schema("d")),
    ];
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        assert_eq!(built.strict.tools().len(), 4);
        for (id, p) in [
            ("get.weather", "a"),
            ("get_weather", "b"),
            ("get-weather", "c"),
            ("GET_WEATHER", "d"),
        ] {
            let text = match protocol {
                Protocol::Action => format!("<ACTION><{id}><{p}>1</{p}></{id}></ACTION>"),
                Protocol::Tam => format!(
                    "<|[REQUEST_TOOL]|>command:「始」{id}「末」\n{p}:「始」1「末」\n<|[END_TOOL]|>"
                ),
            };
            assert_valid(&built, &tools, &[&text]);
            // Each tool takes only its own parameter.
            let other = if p == "a" { "b" } else { "a" };
            assert!(
                !built.accepts(
                    &text
                        .replace(&format!("<{p}>1</{p}>"), &format!("<{other}>1</{other}>"))
                        .replace(&format!("\n{p}:"), &format!("\n{other}:"))
                )
            );
        }
    }
}

#[test]
fn a_tools_name_in_snake_or_lower_case_is_a_call_of_it() {
    let schema = |p: &str| json!({"type": "object", "properties": {p: {"type": "integer"}}, "required": [p]});
    let tools = [
        tool("EuclideanDistance.calculate", schema("a")),
        tool("fetch_DNA_sequence", schema("b")),
        // Loosely the same names: each takes its declared spelling only.
        tool("getWeather", schema("c")),
        tool("get_weather", schema("d")),
    ];
    let text = |protocol: Protocol, open: &str, close: &str, p: &str| match protocol {
        Protocol::Action => format!("<ACTION><{open}><{p}>1</{p}></{close}></ACTION>"),
        Protocol::Tam => format!(
            "<|[REQUEST_TOOL]|>command:「始」{open}「末」\n{p}:「始」1「末」\n<|[END_TOOL]|>"
        ),
    };
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        for (name, p) in [
            ("EuclideanDistance.calculate", "a"),
            ("euclidean_distance_calculate", "a"),
            ("euclideandistance.calculate", "a"),
            ("fetch_DNA_sequence", "b"),
            ("fetch_dna_sequence", "b"),
            ("getWeather", "c"),
            ("get_weather", "d"),
        ] {
            assert_valid(&built, &tools, &[&text(protocol, name, name, p)]);
        }
        for (name, p) in [
            ("Euclidean_Distance_Calculate", "a"),
            ("getweather", "c"),
            ("get_weather", "c"),
            ("getWeather", "d"),
        ] {
            assert_refused(&built, &tools, &[(&text(protocol, name, name, p), false)]);
        }
        let lazy = build_with(&tools, &lazy_options(protocol));
        assert!(lazy.accepts(&text(
            protocol,
            "euclidean_distance_calculate",
            "euclidean_distance_calculate",
            "a"
        )));
        assert!(!lazy.accepts(&text(protocol, "getweather", "getweather", "c")));
    }
    // A call element closes with the spelling it opened with.
    let built = build(&tools, Protocol::Action);
    assert!(!built.accepts(&text(
        Protocol::Action,
        "euclidean_distance_calculate",
        "EuclideanDistance.calculate",
        "a"
    )));
}

#[test]
fn names_that_cannot_be_written_are_left_out_and_reported() {
    let tools = [
        tool("1bad", json!({"type": "object", "properties": {}})),
        tool(
            "ok",
            json!({
                "type": "object",
                "properties": {
                    "a b": {"type": "string"},
                    "action": {"type": "string"},
                    "command": {"type": "string"},
                    "Command_2": {"type": "string"},
                    "filePath": {"type": "string"},
                    "file_path": {"type": "string"},
                    "#tag": {"type": "string"},
                    "x:y": {"type": "string"},
                    "keep": {"type": "string"},
                    "long_name_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789": {"type": "string"}
                }
            }),
        ),
        tool("ok", json!({"type": "object"})),
    ];
    let reasons = |protocol| {
        let built = build(&tools, protocol);
        built
            .strict
            .omitted()
            .iter()
            .map(|o| {
                (
                    o.parameter.clone().unwrap_or_else(|| o.tool.clone()),
                    o.reason,
                )
            })
            .collect::<Vec<_>>()
    };
    let action = reasons(Protocol::Action);
    assert!(action.contains(&("ok".to_owned(), OmitReason::DuplicateTool)));
    assert!(action.contains(&("1bad".to_owned(), OmitReason::NotAnXmlName)));
    assert!(action.contains(&("a b".to_owned(), OmitReason::NotAnXmlName)));
    assert!(action.contains(&("action".to_owned(), OmitReason::ReservedName)));
    assert!(action.contains(&("#tag".to_owned(), OmitReason::NotAnXmlName)));
    assert!(
        !action
            .iter()
            .any(|(name, _)| name == "command" || name == "x:y")
    );
    let long = |(name, reason): &(String, OmitReason), want: OmitReason| {
        name.starts_with("long_name") && *reason == want
    };
    assert!(action.iter().any(|o| long(o, OmitReason::NameTooLong)));
    let tam = reasons(Protocol::Tam);
    assert!(tam.iter().any(|o| long(o, OmitReason::NotATamKey)));
    assert!(tam.contains(&("a b".to_owned(), OmitReason::NotATamKey)));
    assert!(tam.contains(&("command".to_owned(), OmitReason::ReservedName)));
    assert!(tam.contains(&("Command_2".to_owned(), OmitReason::ReservedName)));
    assert!(tam.contains(&("file_path".to_owned(), OmitReason::DuplicateKey)));
    assert!(tam.contains(&("#tag".to_owned(), OmitReason::NotATamKey)));
    assert!(tam.contains(&("x:y".to_owned(), OmitReason::NotATamKey)));
    assert!(
        !tam.iter()
            .any(|(name, _)| name == "action" || name == "keep")
    );
    assert_eq!(
        build(&tools, Protocol::Tam).strict.omitted()[0].to_string(),
        "tool \"ok\" left out: a tool id given twice"
    );

    // A required parameter that cannot be written leaves its tool out, unless it has a
    // default to fill it.
    let required = [
        tool(
            "run",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
        tool(
            "run_default",
            json!({"type": "object", "properties": {"command": {"type": "string", "default": "ls"}}, "required": ["command"]}),
        ),
    ];
    let built = build(&required, Protocol::Tam);
    assert_eq!(built.strict.tools(), ["run_default"]);
    assert!(built.strict.omitted().iter().any(|o| o.tool == "run"
        && o.parameter.is_none()
        && o.reason == OmitReason::RequiredParameterLeftOut));
    assert_valid(
        &built,
        &required,
        &["<|[REQUEST_TOOL]|>command:「始」run_default「末」<|[END_TOOL]|>"],
    );

    let error = StrictGrammar::new(std::iter::empty(), &GrammarOptions::tam()).unwrap_err();
    assert_eq!(error.to_string(), "no offered tool can be called in TAM");
    let error = StrictGrammar::new(&tools[..1], &GrammarOptions::action()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no offered tool can be called in ACTION: tool \"1bad\" left out: not an XML name"
    );
}

#[test]
fn schemas_the_grammar_does_not_follow_degrade_to_free_values() {
    // Arrays nested past the depth the grammar follows.
    let mut deep = json!({"type": "integer"});
    for _ in 0..20 {
        deep = json!({"type": "array", "items": deep});
    }
    let tools = [tool(
        "t",
        json!({
            "type": "object",
            "properties": {
                "any": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "ref": {"$ref": "#/$defs/x"},
                "pattern": {"type": "string", "pattern": "^a+$", "maxLength": 3},
                "tuple": {"type": "array", "items": [{"type": "integer"}]},
                "all": {"type": "integer", "allOf": [{"minimum": 1}]},
                "deep": deep
            },
            "$defs": {"x": {"type": "integer"}}
        }),
    )];
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        let texts: Vec<String> = ["any", "ref", "pattern", "all"]
            .iter()
            .map(|key| match protocol {
                Protocol::Action => format!("<ACTION><t><{key}>free text</{key}></t></ACTION>"),
                Protocol::Tam => format!(
                    "<|[REQUEST_TOOL]|>command:「始」t「末」{key}:「始」free text「末」<|[END_TOOL]|>"
                ),
            })
            .collect();
        for text in &texts {
            assert!(built.accepts(text), "{text}");
        }
    }
}

#[test]
fn a_required_grammar_and_a_lazy_one_differ_only_in_how_they_start() {
    let tools = [weather()];
    // But for the blocks that give no call, which only a lazy grammar has.
    // And for the call elements without `<ACTION>` (`a_bare_call_element_triggers_the_grammar`).
    let lazy = StrictGrammar::new(
        &tools,
        &GrammarOptions::action()
            .with_unoffered_blocks(false)
            .with_bare_calls(false),
    )
    .unwrap();
    let with_unoffered =
        StrictGrammar::new(&tools, &GrammarOptions::action().with_bare_calls(false)).unwrap();
    assert_ne!(lazy.gbnf(), with_unoffered.gbnf());
    let required = StrictGrammar::new(
        &tools,
        &GrammarOptions::action().with_activation(Activation::Required),
    )
    .unwrap();
    assert_eq!(lazy.gbnf(), required.gbnf());
    assert_eq!(lazy.activation(), Activation::Lazy);
    let fields = Value::Object(lazy.llama_server_fields());
    assert_eq!(
        fields,
        json!({
            "grammar": lazy.gbnf(),
            "grammar_lazy": true,
            "grammar_triggers": [{"type": 1, "value": "<ACTION>"}],
            "preserved_tokens": ["<ACTION>"]
        })
    );
    assert_eq!(
        Value::Object(required.llama_server_fields()),
        json!({"grammar": required.gbnf(), "grammar_lazy": false})
    );
    for (grammar, at_least_one) in [(&lazy, false), (&required, true)] {
        assert_eq!(
            grammar.structural_tag(),
            json!({
                "type": "structural_tag",
                "format": {
                    "type": "triggered_tags",
                    "triggers": ["<ACTION>"],
                    "tags": [{
                        "type": "tag",
                        "begin": "<ACTION>",
                        "content": {"type": "grammar", "grammar": grammar.body_grammar()},
                        "end": "</ACTION>"
                    }],
                    "at_least_one": at_least_one,
                    "stop_after_first": true
                }
            })
        );
    }
    let tam = StrictGrammar::new(&tools, &GrammarOptions::tam()).unwrap();
    assert_eq!(tam.triggers(), ["<|[REQUEST_TOOL]|>"]);
    assert_eq!(tam.end_marker(), "<|[END_TOOL]|>");
    assert!(tam.gbnf().starts_with("root ::= \"<|[REQUEST_TOOL]|>\" "));
}

#[test]
fn a_bare_call_element_triggers_the_grammar() {
    let tools = [
        weather(),
        write_file(),
        tool(
            "math.hypot",
            json!({"type": "object", "properties": {"x": {"type": "number"}}}),
        ),
        tool("Thinking", json!({"type": "object", "properties": {}})),
        tool("météo", json!({"type": "object", "properties": {}})),
        // Its element would end at its parameter's close tag.
        tool(
            "plan",
            json!({"type": "object", "properties": {"steps": {"type": "array",
            "items": {"type": "object", "properties": {"plan": {"type": "string"}}}}}}),
        ),
    ];
    let built = build_with(&tools, &GrammarOptions::action());
    let grammar = &built.strict;
    // The names the ACTION decoder takes for bare call elements, that a pattern can name.
    assert_eq!(
        grammar.bare_call_tools(),
        ["get_weather", "write_file", "math.hypot"]
    );
    let patterns = grammar.trigger_patterns();
    assert_eq!(
        patterns,
        [r"(?:^|\n)[ \t]*(<(?:get_weather|write_file|math\.hypot)>)"]
    );
    // Where the pattern switches the grammar on: at a line's start only, from the `<`.
    let pattern = regex::Regex::new(&patterns[0]).unwrap();
    let from = |reply: &str| pattern.captures(reply).map(|c| c.get(1).unwrap().start());
    assert_eq!(from("<get_weather>"), Some(0));
    assert_eq!(from("Sure.\n  <get_weather><city>"), Some(8));
    assert_eq!(from("\tx\n\t<math.hypot>"), Some(4));
    assert_eq!(from("Call <get_weather> with a city."), None);
    assert_eq!(from("<math_hypot> <mathXhypot>\n<get_weather_now>"), None);
    assert_eq!(
        Value::Object(grammar.llama_server_fields())["grammar_triggers"],
        json!([{"type": 1, "value": "<ACTION>"}, {"type": 2, "value": patterns[0]}])
    );
    // From there, one whole call of that tool, valid, and the reply ends.
    for text in [
        "<get_weather><city>Paris</city></get_weather>",
        "<math.hypot><x>3.5</x></math.hypot>",
        "<ACTION><get_weather><city>Paris</city></get_weather></ACTION>",
    ] {
        assert!(built.accepts(text), "grammar refuses {text:?}");
    }
    for text in [
        "<get_weather><town>Paris</town></get_weather>",
        "<get_weather><city>Paris</city><days>two</days></get_weather>",
        "<math.hypot><x>3.5</x></math.hypot>\n<math.hypot><x>1</x></math.hypot>",
        "<get_weather><city>Paris</city></get_weather></ACTION>",
        // Bare, only as declared (the decoder matches the name exactly).
        "<math_hypot><x>3.5</x></math_hypot>",
        "<plan><steps><item><plan>x</plan></item></steps></plan>",
    ] {
        assert!(!built.accepts(text), "grammar accepts {text:?}");
    }
    // Off, TAM, or required: no pattern, and no call without its block.
    let off = build_with(&tools, &GrammarOptions::action().with_bare_calls(false));
    let required = build_with(
        &tools,
        &GrammarOptions::action().with_activation(Activation::Required),
    );
    for built in [&off, &required] {
        assert!(built.strict.trigger_patterns().is_empty());
        assert!(!built.accepts("<get_weather><city>Paris</city></get_weather>"));
    }
    let tam = StrictGrammar::new(&tools, &GrammarOptions::tam()).unwrap();
    assert!(tam.trigger_patterns().is_empty() && tam.bare_call_tools().is_empty());
}

#[test]
fn the_chained_form_follows_its_option() {
    let tools = [weather()];
    let chained = |n: usize| {
        let mut options = GrammarOptions::tam();
        options.max_chained_calls = n;
        build_with(&tools, &options)
    };
    let link = |k: usize| format!("command{k}:「始」get_weather「末」city{k}:「始」x「末」");
    let block = |n: usize| {
        format!(
            "<|[REQUEST_TOOL]|>{}<|[END_TOOL]|>",
            (1..=n).map(link).collect::<Vec<_>>().join("\n")
        )
    };
    let none = chained(0);
    assert!(!none.accepts(&block(1)));
    let three = chained(3);
    assert!(three.accepts(&block(3)));
    assert!(!three.accepts(&block(4)));
    assert_valid(&three, &tools, &[&block(2)]);
    // A tool whose keys end in a digit stays out of the chained form only.
    let tools = [tool(
        "hash",
        json!({"type": "object", "properties": {"sha256": {"type": "string"}}}),
    )];
    let built = build(&tools, Protocol::Tam);
    assert!(
        !built.accepts(
            "<|[REQUEST_TOOL]|>command1:「始」hash「末」sha2561:「始」x「末」<|[END_TOOL]|>"
        )
    );
    assert_valid(
        &built,
        &tools,
        &["<|[REQUEST_TOOL]|>command:「始」hash「末」sha256:「始」x「末」<|[END_TOOL]|>"],
    );
}

#[test]
fn the_size_is_bounded_with_a_clear_error() {
    let tools = [weather(), write_file(), nested()];
    let mut options = GrammarOptions::action();
    options.max_bytes = 2_000;
    let error = StrictGrammar::new(&tools, &options).unwrap_err();
    let GrammarError::TooLarge {
        bytes, max_bytes, ..
    } = &error
    else {
        panic!("{error}")
    };
    assert!(*bytes > 2_000 && *max_bytes == 2_000);
    assert!(
        error
            .to_string()
            .starts_with("the grammar for these tools needs more than its limits allow")
    );
    let mut options = GrammarOptions::tam();
    options.max_rules = 10;
    assert!(matches!(
        StrictGrammar::new(&tools, &options),
        Err(GrammarError::TooLarge {
            rules: 11,
            max_rules: 10,
            ..
        })
    ));
    // Names and members of 200 000 characters: left out, or written as one literal.
    let long = "n".repeat(200_000);
    let tools = [
        tool(
            &long,
            json!({"type": "object", "properties": {"p": {"type": "string"}}}),
        ),
        tool(
            "t",
            json!({"type": "object", "properties": {&long: {"type": "string"}, "e": {"enum": [&long]}, "p": {"type": "string"}}}),
        ),
    ];
    // ACTION leaves the long names out; TAM writes the tool id as a literal, once per
    // form of call, which passes the limit.
    let built = build(&tools, Protocol::Action);
    assert_eq!(built.strict.tools(), ["t"]);
    assert!(matches!(
        StrictGrammar::new(&tools, &GrammarOptions::tam()),
        Err(GrammarError::TooLarge { .. })
    ));
    let built = build(&tools[1..], Protocol::Tam);
    assert_eq!(built.strict.tools(), ["t"]);
    // An enum of a million members stops at the limit, long before it is written out.
    let huge: Vec<Value> = (0..1_000_000)
        .map(|i| Value::from(format!("member-{i}")))
        .collect();
    let tools = [tool(
        "t",
        json!({"type": "object", "properties": {"e": {"enum": huge}}}),
    )];
    for protocol in [Protocol::Action, Protocol::Tam] {
        let error = StrictGrammar::new(&tools, &lazy_options(protocol)).unwrap_err();
        assert!(
            matches!(error, GrammarError::TooLarge { bytes, .. } if bytes <= GrammarOptions::DEFAULT_MAX_BYTES + 64)
        );
    }
}

/// Tools as agent clients send them: `{"name", "parameters"}`.
fn agent_tools(json: &str) -> Vec<ToolDefinition> {
    let list: Vec<Value> = serde_json::from_str(json).unwrap();
    list.into_iter()
        .map(|t| tool(t["name"].as_str().unwrap(), t["parameters"].clone()))
        .collect()
}

fn claude_code() -> Vec<ToolDefinition> {
    agent_tools(include_str!("fixtures/claude-code-2.1.328-tools.json"))
}

fn codex() -> Vec<ToolDefinition> {
    agent_tools(include_str!("fixtures/codex-0.169.0-tools.json"))
}

#[test]
fn claude_code_tools() {
    let tools = claude_code();
    assert_eq!(tools.len(), 12);
    let action = build(&tools, Protocol::Action);
    assert_eq!(action.strict.tools().len(), 12);
    assert!(
        action.strict.omitted().is_empty(),
        "{:?}",
        action.strict.omitted()
    );
    eprintln!(
        "Claude Code, ACTION: {} bytes, {} rules",
        action.strict.gbnf().len(),
        action.strict.rule_count()
    );
    assert_valid(
        &action,
        &tools,
        &[
            "<ACTION>\n<Bash>\n<command>ls -la | grep \"</x>\" && echo '<b>'</command>\n<description>List files</description>\n</Bash>\n</ACTION>",
            "<ACTION><Edit><file_path>/a/b.tsx</file_path><old_string>return <div>{x}</div>;</old_string><new_string><![CDATA[return <span>{x}</span>;]]></new_string><replace_all>false</replace_all></Edit></ACTION>",
            "<ACTION><Read><file_path>/etc/hosts</file_path><offset>10</offset><limit>20</limit></Read><Write><file_path>/tmp/x</file_path><content>a\n</content></Write></ACTION>",
            "<ACTION><ToolSearch><query>select:Read</query><max_results>5</max_results></ToolSearch></ACTION>",
        ],
    );
    assert_refused(
        &action,
        &tools,
        &[
            (
                "<ACTION><Bash><description>x</description></Bash></ACTION>",
                true,
            ),
            (
                "<ACTION><Read><file_path>x</file_path><limit>ten</limit></Read></ACTION>",
                true,
            ),
            (
                "<ACTION><Agent><description>d</description><prompt>p</prompt><model>gpt</model></Agent></ACTION>",
                true,
            ),
        ],
    );
    sampled_blocks_decode(&tools, Protocol::Action, 150);

    let tam = build(&tools, Protocol::Tam);
    eprintln!(
        "Claude Code, TAM: {} bytes, {} rules",
        tam.strict.gbnf().len(),
        tam.strict.rule_count()
    );
    // Bash's `command` cannot be a TAM key (it would name the call's tool), and Bash
    // cannot be called without it.
    let omitted: Vec<String> = tam
        .strict
        .omitted()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        omitted,
        [
            "parameter \"command\" of tool \"Bash\" left out: a reserved name",
            "tool \"Bash\" left out: a required parameter without a default cannot be written"
        ]
    );
    assert_eq!(tam.strict.tools().len(), 11);
    assert_valid(
        &tam,
        &tools,
        &[
            "<|[REQUEST_TOOL]|>\ncommand:「始」Read「末」\nfile_path:「始」/etc/hosts「末」\n\ncommand:「始」Edit「末」\nfile_path:「始」a.rs「末」\nold_string:「始」fn a() {}「末」\nnew_string:「始」fn b() {}「末」\n<|[END_TOOL]|>",
        ],
    );
    assert!(!tam.accepts("<|[REQUEST_TOOL]|>command:「始」Bash「末」<|[END_TOOL]|>"));
    sampled_blocks_decode(&tools, Protocol::Tam, 150);
}

#[test]
fn codex_tools() {
    let tools = codex();
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        assert_eq!(
            built.strict.tools().len(),
            12,
            "{:?}",
            built.strict.omitted()
        );
        eprintln!(
            "Codex, {protocol:?}: {} bytes, {} rules",
            built.strict.gbnf().len(),
            built.strict.rule_count()
        );
        sampled_blocks_decode(&tools, protocol, 150);
    }
    let action = build(&tools, Protocol::Action);
    assert_valid(
        &action,
        &tools,
        &[
            "<ACTION><exec_command><cmd>ls</cmd><yield_time_ms>1000</yield_time_ms></exec_command><multi_agent_v1:wait_agent><targets><item>a</item></targets></multi_agent_v1:wait_agent></ACTION>",
        ],
    );
}

/// `n` tools of varied schemas, with names that clean up alike.
fn generated(n: usize) -> Vec<ToolDefinition> {
    (0..n)
        .map(|i| {
            let mut properties = Map::new();
            properties.insert(format!("path_{i}"), json!({"type": "string"}));
            properties.insert("content".into(), json!({"type": "string"}));
            properties.insert("count".into(), json!({"type": "integer"}));
            properties.insert(
                "mode".into(),
                json!({"enum": [format!("m{i}"), "fast", "slow"]}),
            );
            properties.insert("tags".into(), json!({"type": "array", "items": {"type": "string"}}));
            if i % 3 == 0 {
                properties.insert(
                    "options".into(),
                    json!({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "number"}}, "additionalProperties": false}),
                );
            }
            let id = if i % 2 == 0 { format!("tool_{i}") } else { format!("tool.{i}") };
            tool(
                &id,
                json!({"type": "object", "properties": properties, "required": [format!("path_{i}")]}),
            )
        })
        .collect()
}

#[test]
fn a_hundred_tools_fit_the_default_limits() {
    let tools = generated(100);
    for protocol in [Protocol::Action, Protocol::Tam] {
        let built = build(&tools, protocol);
        assert_eq!(built.strict.tools().len(), 100);
        eprintln!(
            "100 tools, {protocol:?}: {} bytes, {} rules",
            built.strict.gbnf().len(),
            built.strict.rule_count()
        );
        let text = match protocol {
            Protocol::Action => "<ACTION><tool.99><path_99>a</path_99><mode>m99</mode></tool.99><tool_98><path_98>b</path_98><count>3</count></tool_98></ACTION>".to_owned(),
            Protocol::Tam => "<|[REQUEST_TOOL]|>command:「始」tool.99「末」\npath_99:「始」a「末」\nmode:「始」m99「末」\n<|[END_TOOL]|>".to_owned(),
        };
        assert_valid(&built, &tools, &[&text]);
        assert!(!built.accepts(&text.replace("m99", "m98")));
        sampled_blocks_decode(&tools, protocol, 60);
    }
}

#[test]
fn prefixes_of_valid_blocks_stay_open() {
    // A lazy grammar is applied token by token: every prefix of a valid block must be a
    // prefix the grammar can still complete.
    let tools = [weather(), write_file()];
    let built = build(&tools, Protocol::Action);
    let text = "<ACTION>\n<write_file><path>a</path><content>x </con <![CDATA[ ]]> y</content></write_file>\n</ACTION>";
    for (i, _) in text.char_indices() {
        assert!(built.gbnf.accepts_prefix(&text[..i]), "{:?}", &text[..i]);
    }
    // A value cannot go on past its call's close tag: once its name is written whole
    // after `</`, nothing can follow (`</write_fil` may still be text).
    assert!(
        built
            .gbnf
            .accepts_prefix("<ACTION><write_file><path>a</path><content>x</write_fil")
    );
    assert!(
        !built
            .gbnf
            .accepts_prefix("<ACTION><write_file><path>a</path><content>x</write_file")
    );
}

/// The tools of three calls a small model wrote under the grammar with a sibling's close
/// tag for its own.
fn mistyped_tools() -> Vec<ToolDefinition> {
    vec![
        tool(
            "genetics_calculate_similarity",
            json!({
                "type": "object",
                "properties": {
                    "species1": {"type": "string"},
                    "species2": {"type": "string"},
                    "format": {"type": "string"}
                },
                "required": ["species1", "species2"]
            }),
        ),
        tool(
            "get_dominant_trait",
            json!({
                "type": "object",
                "properties": {
                    "allele1": {"type": "string"},
                    "allele2": {"type": "string"},
                    "inheritance_pattern": {"type": "string"}
                },
                "required": ["allele1", "allele2"]
            }),
        ),
        tool(
            "run_linear_regression",
            json!({
                "type": "object",
                "properties": {
                    "predictors": {"type": "array", "items": {"type": "string"}},
                    "target": {"type": "string"},
                    "standardize": {"type": "boolean"},
                    "options": {
                        "type": "object",
                        "properties": {
                            "method": {"type": "string"},
                            "Tolerance": {"type": "string"}
                        }
                    }
                },
                "required": ["predictors", "target"]
            }),
        ),
    ]
}

#[test]
fn a_siblings_close_tag_cannot_end_a_value() {
    let tools = mistyped_tools();
    let built = build(&tools, Protocol::Action);
    // Real outputs (each ran on to the token limit under the old grammar), and where the
    // mistyped close tag's name is whole.
    let outputs = [
        (
            "<ACTION>\n<genetics_calculate_similarity><species1>human</species1><species2>chimpanzee</species2><format>percentage</format></genetics_calculate_similarity>\n<genetics_calculate_similarity><species1>human</species2>gorilla</species2><format>percentage</format></genetics_calculate_similarity\n<genetics",
            "<species1>human</species2",
        ),
        (
            "<ACTION>\n<get_dominant_trait><allele1>AA</allele2>AA</allele2><inheritance_pattern>dominant</inheritance_pattern></get_dominant_trait\n</ACTION/>\n\n\n",
            "<allele1>AA</allele2",
        ),
        (
            "<ACTION>\n<run_linear_regression><predictors><item>Age</item><item>Income</item></predictors><target>Spending Score</standardize>false</run_linear_regression",
            "<target>Spending Score</standardize",
        ),
    ];
    for (output, mistyped) in outputs {
        let at = output.find(mistyped).unwrap() + mistyped.len();
        assert!(
            built.gbnf.accepts_prefix(&output[..at - 1]),
            "{:?}",
            &output[..at - 1]
        );
        assert!(
            !built.gbnf.accepts_prefix(&output[..at]),
            "{:?}",
            &output[..at]
        );
    }
    // What the model meant, and code with markup in values, are accepted.
    assert_valid(
        &built,
        &tools,
        &[
            "<ACTION>\n<genetics_calculate_similarity><species1>human</species1><species2>gorilla</species2><format>percentage</format></genetics_calculate_similarity>\n</ACTION>",
            "<ACTION><get_dominant_trait><allele1>AA</allele1><allele2>Aa</allele2><inheritance_pattern>dominant</inheritance_pattern></get_dominant_trait></ACTION>",
            "<ACTION><run_linear_regression><predictors><item>Age</item></predictors><target>Spending Score</target><standardize>false</standardize></run_linear_regression></ACTION>",
            // `</species` is no name of the element's; `</species12>`, `</alleles>`,
            // `</formats>` are other names; `</Species1` would not close `species1`
            // after an element left open in it, but is not written whole here.
            "<ACTION><genetics_calculate_similarity><species1>a < b, Vec<u8>, <b>x</b> </species> </species12> <![CDATA[</species2>]]> <!-- </format> --> </other></species1><species2>x</species2></genetics_calculate_similarity></ACTION>",
            "<ACTION><get_dominant_trait><allele1>Aa</alleles> </allele </inheritance</allele1  ><allele2>a</allele2></get_dominant_trait></ACTION>",
            // A nested object's members are siblings of each other, not of the call's
            // parameters.
            "<ACTION><run_linear_regression><predictors><item>a</target></item></predictors><target>t</target><options><method>ols</target></method><Tolerance>1e-3</Tolerance></options></run_linear_regression></ACTION>",
        ],
    );
    let refused = [
        // Siblings' close tags, in any case and with the blanks the reader allows.
        "<ACTION><genetics_calculate_similarity><species1>human</SPECIES2>gorilla</species1><species2>x</species2></genetics_calculate_similarity></ACTION>",
        "<ACTION><genetics_calculate_similarity><species1>human</ format >x</species1><species2>x</species2></genetics_calculate_similarity></ACTION>",
        "<ACTION><genetics_calculate_similarity><species1>human</species2x>x</species1><species2>x</species2></genetics_calculate_similarity></ACTION>",
        "<ACTION><run_linear_regression><predictors><item>a</item></predictors><target>t</target><options><method>ols</tolerance></method></options></run_linear_regression></ACTION>",
    ];
    for text in refused {
        assert!(!built.accepts(text), "grammar accepts {text:?}");
    }
}

#[test]
fn a_close_tags_name_is_followed_by_its_gt_only() {
    let tools = mistyped_tools();
    let built = build(&tools, Protocol::Action);
    let value = "<ACTION><get_dominant_trait><allele1>AA";
    // The own close tag: blanks, then `>`; a longer name is text.
    for viable in ["</allele1", "</allele1 \n", "</allele1 >", "</allele1x"] {
        let text = format!("{value}{viable}");
        assert!(built.gbnf.accepts_prefix(&text), "{text:?}");
    }
    for dead in [
        "</allele1\n<",
        "</allele1/",
        "</allele1 x",
        "</allele1 \n/",
        "</ALLELE1",
        // The call's and the block's close tags: no name of them is written whole.
        "</get_dominant_trait",
        "</ get_dominant_trait",
        "</ACTION",
        "</action",
    ] {
        let text = format!("{value}{dead}");
        assert!(!built.gbnf.accepts_prefix(&text), "{text:?}");
    }
    // After the call's last value, its close tag is written as it is.
    let after = "<ACTION><get_dominant_trait><allele1>AA</allele1><allele2>Aa</allele2>";
    assert!(
        built
            .gbnf
            .accepts_prefix(&format!("{after}</get_dominant_trait"))
    );
    for dead in [
        "</get_dominant_trait\n",
        "</get_dominant_trait/",
        "</get_dominant_trait </ACTION/>",
    ] {
        let text = format!("{after}{dead}");
        assert!(!built.gbnf.accepts_prefix(&text), "{text:?}");
    }
}
