//! The compact system prompt: fixed text first (the same for every tool list), the tool
//! list last, in both protocols and both languages; extra lines after the rules.

use tam::Protocol;
use tool_schema::{PromptLanguage, Speaker, SystemPrompt, ToolDefinition};

/// The built-in prompt teaching `protocol` in `language`.
fn prompt_for(protocol: Protocol, language: PromptLanguage) -> SystemPrompt {
    match protocol {
        Protocol::Tam => SystemPrompt::tam(language),
        Protocol::Action => SystemPrompt::action(language),
    }
}

fn tool(id: &str) -> ToolDefinition {
    serde_json::from_value(serde_json::json!({
        "id": id, "description": "Weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "implementation": {"type": "service"}
    }))
    .unwrap()
}

#[test]
fn the_fixed_text_is_a_common_prefix_and_the_tools_come_last() {
    let (a, b) = (tool("weather_of"), tool("get_time"));
    for protocol in [Protocol::Tam, Protocol::Action] {
        for language in [PromptLanguage::English, PromptLanguage::Chinese] {
            let prompt = prompt_for(protocol, language);
            let one = prompt.render_compact([&a], &[]);
            let two = prompt.render_compact([&a, &b], &["Call at most one tool per reply."]);
            let list = prompt.render_compact_tools([&a]);
            assert!(one.ends_with(&list), "{protocol:?} {language:?}: {one}");
            // Everything before the extra lines and the list is the same text.
            let heading = match language {
                PromptLanguage::English => "\n\nTools:",
                PromptLanguage::Chinese => "\n\n工具：",
            };
            let rules_end = one.rfind(heading).unwrap();
            assert!(
                two.starts_with(&one[..rules_end]),
                "{protocol:?} {language:?}"
            );
            assert!(
                two.contains("- Call at most one tool per reply.\n"),
                "{two}"
            );
            let end = match protocol {
                Protocol::Tam => "<|[END_TOOL]|>",
                Protocol::Action => "</ACTION>",
            };
            assert!(one.contains(end));
            // Two calls of one tool in one block are shown; no workflow result rules.
            let example = match protocol {
                Protocol::Tam => "get_weather",
                Protocol::Action => "roll_die",
            };
            assert!(one.matches(example).count() >= 2, "{one}");
            assert!(!one.contains("TOOL_EXECUTION_FAILED"));
        }
    }
}

/// The compact list: each tool on one line with its description, its parameters beneath;
/// no `Tool ID:` / `Description:` labels, no ACTION group headings (the prompt's own
/// `Tools:` heading is the one).
#[test]
fn the_compact_tool_list_has_one_line_per_tool_and_per_parameter() {
    let a = tool("get_weather");
    let tam = SystemPrompt::tam(PromptLanguage::English);
    assert_eq!(
        tam.render_compact_tools([&a]),
        "- get_weather: Weather of a city.\n  - city (string, required)"
    );
    let action = SystemPrompt::action(PromptLanguage::English);
    assert_eq!(
        action.render_compact_tools([&a]),
        "*   `<get_weather>`: Weather of a city.\n    *   Parameters:\n        *   `<city>` (string, required)"
    );
    for prompt in [tam, action] {
        let full = prompt.render_tools([&a]);
        let compact = prompt.render_compact_tools([&a]);
        assert!(compact.len() < full.len(), "{compact}\n{full}");
    }
}

/// A tool with an array of enumerated strings and an object parameter, as BFCL's
/// `park_information` and the seed's `payload`.
fn park_tool() -> ToolDefinition {
    serde_json::from_value(serde_json::json!({
        "id": "park_information", "description": "Facts about a national park.",
        "parameters": {"type": "object", "properties": {
            "park_name": {"type": "string"},
            "information": {"type": "array", "items": {"type": "string", "enum": ["Elevation", "Area"]}},
            "years": {"type": "array", "items": {"type": "integer"}},
            "payload": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
        }, "required": ["park_name", "information"]},
        "implementation": {"type": "service"}
    }))
    .unwrap()
}

/// An array's enumerated items are named on its line (`each one of:`), in every list (the
/// e2e model wrote `field_goal_percentage` for `field goal %` when they were not); ACTION
/// lists keep the `<item>` example under an array and the nested-tag one under an object
/// (without the `<item>` example the model wrote lists of strings as `a, b`).
#[test]
fn enumerated_array_items_are_listed_beside_the_xml_examples() {
    let park = park_tool();
    for protocol in [Protocol::Tam, Protocol::Action] {
        for language in [PromptLanguage::English, PromptLanguage::Chinese] {
            let prompt = prompt_for(protocol, language);
            for list in [
                prompt.render_compact_tools([&park]),
                prompt.render_tools([&park]),
            ] {
                let line = list
                    .lines()
                    .find(|l| l.contains("information") && l.contains("array"))
                    .unwrap_or_else(|| panic!("{list}"));
                assert!(
                    line.contains(
                        "array of string, required, each one of: \"Elevation\", \"Area\")"
                    ),
                    "{protocol:?} {language:?}: {line}"
                );
                let years = list.lines().find(|l| l.contains("years")).unwrap();
                assert!(!years.contains("one of"), "{years}");
                let examples = [
                    "`<information><item>…</item><item>…</item></information>`",
                    "`<payload><a>…</a><b>…</b></payload>`",
                ];
                for example in examples {
                    let shown = list.contains(example);
                    assert_eq!(shown, protocol == Protocol::Action, "{list}");
                }
            }
        }
    }
}

/// The demonstration: a plain answer where no tool fits, then the compact prompt's own
/// example request answered with the very block the prompt shows, in each protocol and
/// language; a required call leaves the plain answer out.
#[test]
fn the_demonstration_shows_a_plain_answer_then_the_prompts_example_block() {
    for protocol in [Protocol::Tam, Protocol::Action] {
        for language in [PromptLanguage::English, PromptLanguage::Chinese] {
            let prompt = prompt_for(protocol, language);
            let turns = prompt.compact_demonstration(false);
            let speakers: Vec<Speaker> = turns.iter().map(|t| t.0).collect();
            assert_eq!(
                speakers,
                [
                    Speaker::User,
                    Speaker::Assistant,
                    Speaker::User,
                    Speaker::Assistant
                ]
            );
            let (start, end) = match protocol {
                Protocol::Tam => ("<|[REQUEST_TOOL]|>", "<|[END_TOOL]|>"),
                Protocol::Action => ("<ACTION>", "</ACTION>"),
            };
            // The plain answer has no block; the call is the prompt's example, verbatim.
            assert!(!turns[1].1.contains(start), "{protocol:?} {language:?}");
            let block = turns[3].1;
            assert!(block.starts_with(start) && block.ends_with(end), "{block}");
            let text = prompt.render_compact([], &[]);
            assert!(text.contains(block), "{protocol:?} {language:?}: {text}");
            assert!(turns[2].1.contains(match (protocol, language) {
                (Protocol::Tam, PromptLanguage::English) => "Paris",
                (Protocol::Tam, PromptLanguage::Chinese) => "巴黎",
                (Protocol::Action, PromptLanguage::English) => "20-sided die",
                (Protocol::Action, PromptLanguage::Chinese) => "20 面骰子",
            }));
            assert_eq!(prompt.compact_demonstration(true), turns[2..]);
        }
    }
}
