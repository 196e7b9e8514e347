//! tool-schema's strict-call grammars for arbitrary tool sets: tool ids, parameter names
//! and enum members of arbitrary characters, schemas built from the keywords the
//! generator follows and some it does not (`anyOf`, `$ref`, tuples), nesting past its
//! depth, either protocol, lazy or required, and limits from tiny to the defaults.
//!
//! Checks: no panic; an error is `TooLarge` or `NoCallableTool` and prints; a grammar
//! stays within its byte and rule limits; its structure is the generator's whatever the
//! names hold: ASCII, one `name ::= body` rule per line with names of `[a-z0-9-]`, `root`
//! first and exactly the protocol's markers around the body rule, and both grammars (the
//! GBNF and the structural tag's) read by the tests' GBNF reader (every rule parses, every
//! rule used is defined, no `\x` escape); every callable tool is one the input offered.
//!
//! Input layout: `[flags] [rest …]`. Flag bit 0 picks TAM (else ACTION), bit 1 a required
//! grammar, bits 2–3 the limits (defaults, or 4 KiB, 64 KiB, or 40 rules), bits 4–5 the
//! longest TAM chain (0, 1, 3, 8). `rest` drives the tool generator.
#![no_main]

#[path = "../../crates/tool-schema/tests/support/gbnf.rs"]
mod gbnf;

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use tool_schema::grammar::{Activation, GrammarError, GrammarOptions, StrictGrammar};
use tool_schema::{Implementation, ToolDefinition, ToolId};

/// Names with every character that is syntax in GBNF, XML or TAM, and names the
/// protocols reserve.
const NAMES: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "content",
    "command",
    "Command_2",
    "action",
    "ACTION",
    "item",
    "a",
    "A",
    "x-y",
    "ns:tool",
    "x\"y",
    "x]y",
    "x|y",
    "x\\y",
    "x\ny",
    "a b",
    "#tag",
    "「末」",
    "k:v",
    "名前",
    "😀",
    "sha256",
    "",
];
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "object", "array", "null", "unknown",
];

fn name(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 3)? {
        u.arbitrary()
    } else {
        Ok(u.choose(NAMES)?.to_string())
    }
}

fn member(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => Value::from(u.arbitrary::<i64>()?),
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Null,
        3 => Value::from(u.choose(NAMES)?.to_string()),
        _ => Value::String(u.arbitrary()?),
    })
}

fn schema(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let mut s = Map::new();
    match u.int_in_range(0..=3)? {
        0 => {}
        1 | 2 => {
            s.insert("type".into(), Value::from(*u.choose(TYPES)?));
        }
        _ => {
            let n = u.int_in_range(1..=3)?;
            let types: Vec<Value> = (0..n)
                .map(|_| u.choose(TYPES).map(|t| Value::from(*t)))
                .collect::<Result<_>>()?;
            s.insert("type".into(), Value::Array(types));
        }
    }
    if depth > 0 && u.ratio(1, 3)? {
        s.insert("properties".into(), properties(u, depth - 1)?);
        if u.ratio(1, 2)? {
            s.insert("additionalProperties".into(), Value::Bool(u.arbitrary()?));
        }
    }
    if depth > 0 && u.ratio(1, 3)? {
        let items = if u.ratio(1, 8)? {
            Value::Array(vec![schema(u, depth - 1)?])
        } else {
            schema(u, depth - 1)?
        };
        s.insert("items".into(), items);
    }
    if u.ratio(1, 4)? {
        let n = u.int_in_range(0..=6)?;
        let members: Vec<Value> = (0..n).map(|_| member(u)).collect::<Result<_>>()?;
        s.insert("enum".into(), Value::Array(members));
    }
    if u.ratio(1, 16)? {
        s.insert("const".into(), member(u)?);
    }
    if depth > 0 && u.ratio(1, 12)? {
        let keyword = *u.choose(&["anyOf", "oneOf", "allOf"])?;
        s.insert(keyword.into(), Value::Array(vec![schema(u, depth - 1)?]));
    }
    if u.ratio(1, 16)? {
        s.insert("$ref".into(), Value::from("#/$defs/x"));
    }
    Ok(Value::Object(s))
}

fn properties(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let mut properties = Map::new();
    for _ in 0..u.int_in_range(0..=5)? {
        properties.insert(name(u)?, schema(u, depth)?);
    }
    Ok(Value::Object(properties))
}

fn tools(u: &mut Unstructured<'_>) -> Result<Vec<ToolDefinition>> {
    let mut tools = Vec::new();
    for _ in 0..u.int_in_range(0..=6)? {
        let id = name(u)?;
        let Ok(id) = ToolId::parse(&id) else {
            continue;
        };
        let mut parameters = Map::new();
        parameters.insert("type".into(), Value::from("object"));
        let properties = properties(u, 4)?;
        let names: Vec<String> = properties
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        parameters.insert("properties".into(), properties);
        let required: Vec<Value> = names
            .into_iter()
            .filter(|_| u.ratio(1, 2).unwrap_or(false))
            .map(Value::from)
            .collect();
        parameters.insert("required".into(), Value::Array(required));
        tools.push(ToolDefinition::new(
            id,
            "fuzzed",
            Value::Object(parameters),
            Implementation::Service,
        ));
    }
    // Deep nesting: arrays of arrays past the depth the generator follows.
    if u.ratio(1, 8)? {
        let mut deep = Value::from(serde_json::json!({"type": "integer"}));
        for _ in 0..u.int_in_range(0..=40)? {
            deep = serde_json::json!({"type": "array", "items": deep});
        }
        tools.push(ToolDefinition::new(
            ToolId::parse("deep").expect("a valid id"),
            "fuzzed",
            serde_json::json!({"type": "object", "properties": {"d": deep}}),
            Implementation::Service,
        ));
    }
    Ok(tools)
}

/// The structure the generator writes, whatever the names held.
fn check_structure(grammar: &str, root_body: impl Fn(&str) -> bool) {
    assert!(grammar.is_ascii(), "a grammar that is not ASCII");
    let mut lines = grammar.lines();
    let root = lines.next().expect("a root rule");
    let body = root.strip_prefix("root ::= ").expect("root first");
    assert!(root_body(body), "root: {root}");
    for line in lines {
        let (name, _) = line.split_once(" ::= ").expect("one rule per line");
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "rule name {name:?}"
        );
    }
    if let Err(e) = gbnf::Grammar::parse(grammar) {
        panic!("the grammar does not parse: {e}\n{grammar}");
    }
}

fn is_rule_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fuzz_target!(|raw: &[u8]| {
    let (flags, rest) = raw.split_first().map_or((0, raw), |(f, r)| (*f, r));
    let mut u = Unstructured::new(rest);
    let Ok(tools) = tools(&mut u) else {
        return;
    };
    let options = if flags & 1 == 0 {
        GrammarOptions::action()
    } else {
        GrammarOptions::tam()
    };
    let activation = if flags & 2 == 0 {
        Activation::Lazy
    } else {
        Activation::Required
    };
    let mut options = options.with_activation(activation);
    match (flags >> 2) & 3 {
        1 => options.max_bytes = 4 << 10,
        2 => options.max_bytes = 64 << 10,
        3 => options.max_rules = 40,
        _ => {}
    }
    options.max_chained_calls = [0, 1, 3, 8][usize::from((flags >> 4) & 3)];

    let grammar = match StrictGrammar::new(&tools, &options) {
        Ok(grammar) => grammar,
        Err(error) => {
            let _ = error.to_string();
            match error {
                GrammarError::TooLarge {
                    max_bytes,
                    max_rules,
                    ..
                } => assert_eq!((max_bytes, max_rules), (options.max_bytes, options.max_rules)),
                GrammarError::NoCallableTool { .. } => {}
                other => panic!("unexpected error {other:?}"),
            }
            return;
        }
    };
    assert!(grammar.gbnf().len() <= options.max_bytes);
    assert!(grammar.body_grammar().len() <= options.max_bytes);
    assert!(grammar.rule_count() <= options.max_rules);
    assert_eq!(grammar.gbnf().lines().count(), grammar.rule_count());
    for omission in grammar.omitted() {
        let _ = omission.to_string();
    }
    for id in grammar.tools() {
        assert!(tools.iter().any(|t| t.id.as_str() == id), "tool {id:?} not offered");
    }
    for name in grammar.bare_call_tools() {
        assert!(grammar.tools().contains(name), "bare call of {name:?} not callable");
    }
    let patterns = grammar.trigger_patterns();
    assert_eq!(patterns.len(), usize::from(!grammar.bare_call_tools().is_empty()));
    let (start, end) = (grammar.start_marker(), grammar.end_marker());
    let quoted = |marker: &str| format!("{marker:?}");
    // The block, or (lazy ACTION) the block or one bare call element.
    let bare = !grammar.bare_call_tools().is_empty();
    check_structure(grammar.gbnf(), |body| {
        let (block, call) = match body.rsplit_once(" | ") {
            Some((block, call)) if bare => (block, Some(call)),
            _ => (body, None),
        };
        call.is_none_or(is_rule_name)
            && block
                .strip_prefix(&quoted(start))
                .and_then(|rest| rest.strip_suffix(&quoted(end)))
                .is_some_and(|name| is_rule_name(name.trim()))
    });
    check_structure(grammar.body_grammar(), is_rule_name);
    let tag = grammar.structural_tag();
    assert_eq!(tag["format"]["tags"][0]["content"]["grammar"], grammar.body_grammar());
    let _ = grammar.llama_server_fields();
});
