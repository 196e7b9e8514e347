//! Complete system prompts: role and goal, the tool list, retrieved usage notes, the
//! decision instruction, few-shot examples and the result rules, for either protocol in
//! either language.

use std::collections::BTreeMap;

use crate::ToolDefinition;
use crate::prompt::{CHINESE_LABELS, ENGLISH_LABELS, PromptStyle, render_with, render_xml_items};

/// The example block of the compact TAM prompts, also the call of the demonstration.
macro_rules! tam_example_block {
    () => {
        "<|[REQUEST_TOOL]|>
command:「始」get_weather「末」
city:「始」Paris「末」

command:「始」get_weather「末」
city:「始」Rome「末」
<|[END_TOOL]|>"
    };
}

/// The example block of the compact ACTION prompts, also the call of the demonstration.
///
/// Not the TAM example's `get_weather`: with a weather tool as its example, the 1.5B model
/// of the e2e runs wrote `get_weather` or a `get_` prefix for tools not offered
/// (`get_movie_details_brief`), the example's `city` for a weather tool's `location`, and
/// the example block itself for requests it did not fit; with `roll_die` it did so less,
/// and answered in plain text more often where no tool fits (BFCL irrelevance 20 → 24 of
/// 30 on the dev set and on a held-out set; in TAM the same change lost 10 of 140 cases:
/// `e2e/README.md`, "Prompt variants").
macro_rules! action_example_block {
    () => {
        "<ACTION>
<roll_die><sides>6</sides></roll_die>
<roll_die><sides>20</sides></roll_die>
</ACTION>"
    };
}

/// The protocol a system prompt or a grammar is for; chosen by their constructors
/// ([`SystemPrompt::tam`], [`SystemPrompt::action`], [`GrammarOptions::tam`],
/// [`GrammarOptions::action`]), never named outside this crate.
///
/// [`GrammarOptions::tam`]: crate::grammar::GrammarOptions::tam
/// [`GrammarOptions::action`]: crate::grammar::GrammarOptions::action
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Protocol {
    /// `<|[REQUEST_TOOL]|>` blocks with `key:「始」value「末」` entries (TAM seed).
    Tam,
    /// One `<ACTION>` XML block after the explanation (ACTION seed).
    Action,
}

/// The language of a system prompt's own words (tool descriptions stay as written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptLanguage {
    /// The seeds' Chinese wording.
    Chinese,
    /// An English wording of the same content.
    English,
}

/// Who says a turn of a [`SystemPrompt::compact_demonstration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Speaker {
    /// The user's turn.
    User,
    /// The model's turn.
    Assistant,
}

/// The sections of a system prompt, in the order they are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PromptPart {
    /// Who the model is and what it is for.
    Role,
    /// The tools the model may call; by default rendered from the definitions given to
    /// [`SystemPrompt::render`] (point 2).
    Tools,
    /// Retrieved usage notes, examples and pitfalls of the tools (point 3, RAG): empty
    /// unless the caller fills it, and left out while empty.
    UsageNotes,
    /// How to decide and what to write.
    Instructions,
    /// Few-shot examples: a call, a chained call, a plain answer.
    Examples,
    /// The 【工具调用规则】 block of the result-format seed: every tool returns JSON with
    /// `success`; on `success: false` the answer is exactly `TOOL_EXECUTION_FAILED`.
    ResultRules,
}

impl PromptPart {
    /// Every part, in rendering order.
    pub const ALL: [PromptPart; 6] = [
        PromptPart::Role,
        PromptPart::Tools,
        PromptPart::UsageNotes,
        PromptPart::Instructions,
        PromptPart::Examples,
        PromptPart::ResultRules,
    ];

    /// The section heading in `language` (`[可用工具参考]`, `[Available tools]`, …).
    pub fn heading(self, language: PromptLanguage) -> &'static str {
        let (zh, en) = match self {
            PromptPart::Role => ("[角色与目标]", "[Role and goal]"),
            PromptPart::Tools => ("[可用工具参考]", "[Available tools]"),
            PromptPart::UsageNotes => ("[工具用法参考]", "[Tool usage notes]"),
            PromptPart::Instructions => ("[你的决策]", "[Your decision]"),
            PromptPart::Examples => ("[示例]", "[Examples]"),
            PromptPart::ResultRules => ("【工具调用规则】", "[Tool result rules]"),
        };
        match language {
            PromptLanguage::Chinese => zh,
            PromptLanguage::English => en,
        }
    }
}

/// A complete system prompt for a protocol and a language, each part replaceable.
///
/// Each part is rendered as its heading, a line break and its text; parts are separated by
/// a blank line. A part's text is the built-in one ([`SystemPrompt::default_text`]) unless
/// replaced with [`with_part`](Self::with_part) or left out with
/// [`without_part`](Self::without_part); the usage notes are the hook a caller fills with
/// retrieved knowledge ([`with_usage_notes`](Self::with_usage_notes)).
///
/// ```
/// use tool_schema::{PromptLanguage, PromptPart, SystemPrompt};
///
/// let prompt = SystemPrompt::tam(PromptLanguage::English)
///     .with_part(PromptPart::Role, "You are the build assistant of this repository.")
///     .with_usage_notes("- Run tests before committing.");
/// let text = prompt.render([]);
/// assert!(text.starts_with("[Role and goal]\nYou are the build assistant"));
/// assert!(text.contains("[Tool usage notes]\n- Run tests before committing."));
/// assert!(text.contains("<|[REQUEST_TOOL]|>"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    protocol: Protocol,
    language: PromptLanguage,
    /// Replaced texts; `None` leaves the part out.
    replaced: BTreeMap<PromptPart, Option<String>>,
}

impl SystemPrompt {
    /// The built-in prompt that teaches TAM in `language`, without usage notes: calls in
    /// `<|[REQUEST_TOOL]|>` blocks of `key:「始」value「末」` entries (TAM seed).
    pub fn tam(language: PromptLanguage) -> Self {
        Self::new(Protocol::Tam, language)
    }

    /// The built-in prompt that teaches ACTION in `language`, without usage notes: one
    /// `<ACTION>` XML block after the explanation (ACTION seed).
    pub fn action(language: PromptLanguage) -> Self {
        Self::new(Protocol::Action, language)
    }

    fn new(protocol: Protocol, language: PromptLanguage) -> Self {
        Self {
            protocol,
            language,
            replaced: BTreeMap::new(),
        }
    }

    /// The language.
    pub fn language(&self) -> PromptLanguage {
        self.language
    }

    /// Replaces the text of `part` (its heading stays). For [`PromptPart::Tools`] the text
    /// replaces the rendered tool list.
    #[must_use]
    pub fn with_part(mut self, part: PromptPart, text: impl Into<String>) -> Self {
        self.replaced.insert(part, Some(text.into()));
        self
    }

    /// Leaves `part` out, heading and all.
    #[must_use]
    pub fn without_part(mut self, part: PromptPart) -> Self {
        self.replaced.insert(part, None);
        self
    }

    /// Fills the usage-notes hook: the notes a retriever found for
    /// the listed tools. Blank notes leave the section out.
    #[must_use]
    pub fn with_usage_notes(self, notes: impl Into<String>) -> Self {
        self.with_part(PromptPart::UsageNotes, notes)
    }

    /// The built-in text of `part` for the prompt's protocol and language, whether or not
    /// the part was replaced; for [`PromptPart::Tools`], the framing line above the
    /// rendered list; empty for [`PromptPart::UsageNotes`].
    pub fn default_text(&self, part: PromptPart) -> &'static str {
        use PromptLanguage::{Chinese, English};
        use Protocol::{Action, Tam};
        match (part, self.protocol, self.language) {
            (PromptPart::Role, _, Chinese) => ROLE_ZH,
            (PromptPart::Role, _, English) => ROLE_EN,
            (PromptPart::Tools, Tam, Chinese) => TOOLS_TAM_ZH,
            (PromptPart::Tools, Tam, English) => TOOLS_TAM_EN,
            (PromptPart::Tools, Action, Chinese) => TOOLS_ACTION_ZH,
            (PromptPart::Tools, Action, English) => TOOLS_ACTION_EN,
            (PromptPart::UsageNotes, _, _) => "",
            (PromptPart::Instructions, Tam, Chinese) => INSTRUCTIONS_TAM_ZH,
            (PromptPart::Instructions, Tam, English) => INSTRUCTIONS_TAM_EN,
            (PromptPart::Instructions, Action, Chinese) => INSTRUCTIONS_ACTION_ZH,
            (PromptPart::Instructions, Action, English) => INSTRUCTIONS_ACTION_EN,
            (PromptPart::Examples, Tam, Chinese) => EXAMPLES_TAM_ZH,
            (PromptPart::Examples, Tam, English) => EXAMPLES_TAM_EN,
            (PromptPart::Examples, Action, Chinese) => EXAMPLES_ACTION_ZH,
            (PromptPart::Examples, Action, English) => EXAMPLES_ACTION_EN,
            (PromptPart::ResultRules, _, Chinese) => RESULT_RULES_ZH,
            (PromptPart::ResultRules, _, English) => RESULT_RULES_EN,
        }
    }

    /// Only the tool list of the prompt: `tools` in the protocol's style (TAM, or
    /// ACTION with an example under each object or array parameter), labelled in
    /// the prompt's language. No trailing line break.
    pub fn render_tools<'a>(&self, tools: impl IntoIterator<Item = &'a ToolDefinition>) -> String {
        let labels = match self.language {
            PromptLanguage::Chinese => &CHINESE_LABELS,
            PromptLanguage::English => &ENGLISH_LABELS,
        };
        match self.protocol {
            Protocol::Tam => render_with(tools, &PromptStyle::Tam, labels, false),
            Protocol::Action => render_with(tools, &PromptStyle::Xml, labels, true),
        }
    }

    /// The whole prompt with `tools` listed, in the order given. An empty tool list
    /// renders as the language's "none". No trailing line break.
    pub fn render<'a>(&self, tools: impl IntoIterator<Item = &'a ToolDefinition>) -> String {
        let mut sections = Vec::with_capacity(PromptPart::ALL.len());
        let mut tools = Some(tools);
        for part in PromptPart::ALL {
            let text = match self.replaced.get(&part) {
                Some(None) => continue,
                Some(Some(text)) => text.clone(),
                None if part == PromptPart::Tools => {
                    let list = tools
                        .take()
                        .map(|t| self.render_tools(t))
                        .unwrap_or_default();
                    let list = if list.is_empty() {
                        match self.language {
                            PromptLanguage::Chinese => "（无）".to_owned(),
                            PromptLanguage::English => "(none)".to_owned(),
                        }
                    } else {
                        list
                    };
                    let framing = self.default_text(part);
                    format!("{framing}\n\n{list}")
                }
                None => self.default_text(part).to_owned(),
            };
            let text = text.trim_end();
            if text.trim().is_empty() {
                continue;
            }
            sections.push(format!("{}\n{text}", part.heading(self.language)));
        }
        sections.join("\n\n")
    }
}

impl SystemPrompt {
    /// The tool list [`SystemPrompt::render_compact`] ends with: TAM as
    /// `- tool_id: description` with its parameters indented beneath
    /// ([`PromptStyle::plain`]); ACTION as ``*   `<tool_id>`: description`` with its
    /// parameters as `` `<name>` `` items and an example under each object or array
    /// parameter (the XML style's entries, without its group headings). Fewer tokens
    /// than [`SystemPrompt::render_tools`] for the same facts: a one-tool request costs
    /// little more than the server's own template. No trailing line break.
    pub fn render_compact_tools<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolDefinition>,
    ) -> String {
        let labels = match self.language {
            PromptLanguage::Chinese => &CHINESE_LABELS,
            PromptLanguage::English => &ENGLISH_LABELS,
        };
        match self.protocol {
            Protocol::Tam => render_with(tools, &PromptStyle::plain(), labels, false),
            Protocol::Action => render_xml_items(tools, labels),
        }
    }

    /// The compact prompt for `tools`: the protocol's format, its rules and one example of
    /// two calls in one block, then the tool list last — for a proxy in front of any
    /// client, whose tools return anything at all (no role section, no result rules).
    ///
    /// The fixed text comes first and is the same for every request of a protocol and
    /// language, so a server's prefix cache can reuse it; `extra` lines (what the request
    /// asks: a tool it must call, one call per reply) follow the rules. The rules say
    /// what small models get wrong: they write every call in one block (two calls of one
    /// tool included), they stop after the block instead of inventing its result, and
    /// they answer in plain text when no tool fits. No trailing line break.
    pub fn render_compact<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a ToolDefinition>,
        extra: &[&str],
    ) -> String {
        use PromptLanguage::{Chinese, English};
        use Protocol::{Action, Tam};
        let (format, heading) = match (self.protocol, self.language) {
            (Tam, English) => (COMPACT_TAM_EN, "Tools:"),
            (Action, English) => (COMPACT_ACTION_EN, "Tools:"),
            (Tam, Chinese) => (COMPACT_TAM_ZH, "工具："),
            (Action, Chinese) => (COMPACT_ACTION_ZH, "工具："),
        };
        let mut out = String::from(format);
        for line in extra {
            out.push_str("\n- ");
            out.push_str(line);
        }
        let list = self.render_compact_tools(tools);
        out.push_str("\n\n");
        out.push_str(heading);
        out.push('\n');
        out.push_str(if list.is_empty() {
            match self.language {
                Chinese => "（无）",
                English => "(none)",
            }
        } else {
            &list
        });
        out
    }

    /// Earlier turns to put in the conversation after the compact system prompt
    /// ([`render_compact`](Self::render_compact)) and before the conversation's first
    /// message, in this order: a question no tool fits answered in plain text, then the
    /// request of the prompt's example answered with its block (two calls of one tool:
    /// `get_weather` in TAM, `roll_die` in ACTION). With `must_call` (the request requires
    /// a call) only the second exchange. The turns are the same for every request of a
    /// protocol and language, so a server's prefix cache still reuses everything before the
    /// conversation whenever the tools are the same.
    ///
    /// Why turns and not one more rule: on a 1.5B model the rules did not stop calls where
    /// no tool fits (it opens a block as its first token whatever they say), while a plain
    /// answer shown as an earlier turn did; shown alone it also made the model answer in
    /// text where a tool fits, hence the second exchange. The measurements are in the
    /// repository's `e2e/README.md`.
    ///
    /// They are for a conversation that holds no call yet. After a call and its results the
    /// conversation's own turns show the form, and the same model, given its results,
    /// sometimes answered the demonstration's questions too (`tam serve` leaves the turns
    /// out then).
    ///
    /// ```
    /// use tool_schema::{PromptLanguage, Speaker, SystemPrompt};
    ///
    /// let prompt = SystemPrompt::action(PromptLanguage::English);
    /// let turns = prompt.compact_demonstration(false);
    /// assert_eq!(turns.len(), 4);
    /// assert_eq!(turns[0], (Speaker::User, "What is the capital of France?"));
    /// assert!(turns[3].1.starts_with("<ACTION>"));
    /// assert_eq!(prompt.compact_demonstration(true).len(), 2);
    /// ```
    pub fn compact_demonstration(&self, must_call: bool) -> Vec<(Speaker, &'static str)> {
        let no_tool = match self.language {
            PromptLanguage::English => NO_TOOL_EN,
            PromptLanguage::Chinese => NO_TOOL_ZH,
        };
        let request = match (self.protocol, self.language) {
            (Protocol::Tam, PromptLanguage::English) => CALL_REQUEST_EN,
            (Protocol::Tam, PromptLanguage::Chinese) => CALL_REQUEST_ZH,
            (Protocol::Action, PromptLanguage::English) => ACTION_CALL_REQUEST_EN,
            (Protocol::Action, PromptLanguage::Chinese) => ACTION_CALL_REQUEST_ZH,
        };
        let block = match self.protocol {
            Protocol::Tam => tam_example_block!(),
            Protocol::Action => action_example_block!(),
        };
        let mut turns = Vec::with_capacity(4);
        if !must_call {
            turns.push((Speaker::User, no_tool[0]));
            turns.push((Speaker::Assistant, no_tool[1]));
        }
        turns.push((Speaker::User, request));
        turns.push((Speaker::Assistant, block));
        turns
    }

    /// The line that closes a message of tool results (observations) in a conversation
    /// under the compact prompt ([`render_compact`](Self::render_compact)): what the model
    /// does next — answer the request with the results. The same for both protocols.
    ///
    /// Why: under the compact prompt, a 1.5B model given only the observations answered
    /// nothing at all in TAM (its next token was the block's end marker, the stop
    /// sequence: an empty reply) and, in either protocol, sometimes wrote the same calls
    /// again; with this line after the observations it answers. The measurements are in the
    /// repository's `e2e/README.md` ("Prompt variants"). Its second sentence is gone,
    /// "Call another tool only if you still need one.": with it the model called the tool
    /// whose result it had been given again (an agent through the proxy looped on one
    /// call; 2 of 20 BFCL conversations in TAM), without it 20 of 20 answer. The cost: a
    /// request that needs a second tool after the first one's result (a city, then its
    /// weather) is answered from the first result alone — with the sentence this model
    /// chained 1 of 12 such requests, without it 0; wordings that name the next call first
    /// chained them but called tools where the answer was there.
    ///
    /// ```
    /// use tool_schema::{PromptLanguage, SystemPrompt};
    ///
    /// let prompt = SystemPrompt::tam(PromptLanguage::English);
    /// assert!(prompt.after_observations().starts_with("Now answer the request"));
    /// ```
    pub fn after_observations(&self) -> &'static str {
        match self.language {
            PromptLanguage::English => AFTER_OBSERVATIONS_EN,
            PromptLanguage::Chinese => AFTER_OBSERVATIONS_ZH,
        }
    }
}

const AFTER_OBSERVATIONS_EN: &str = "Now answer the request in plain text with these results.";
const AFTER_OBSERVATIONS_ZH: &str = "现在用这些结果以自然语言回答请求。";

/// The demonstration's exchanges, per language: a question no tool fits, its plain answer,
/// and the request the compact prompts' example answers (per protocol: TAM's example is
/// `get_weather`, ACTION's `roll_die`).
const NO_TOOL_EN: [&str; 2] = [
    "What is the capital of France?",
    "The capital of France is Paris.",
];
const NO_TOOL_ZH: [&str; 2] = ["法国的首都是哪里？", "法国的首都是巴黎。"];
const CALL_REQUEST_EN: &str = "What is the weather in Paris and in Rome?";
const CALL_REQUEST_ZH: &str = "巴黎和罗马的天气怎么样？";
const ACTION_CALL_REQUEST_EN: &str = "Roll a 6-sided die and a 20-sided die.";
const ACTION_CALL_REQUEST_ZH: &str = "掷一个 6 面骰子和一个 20 面骰子。";

const COMPACT_TAM_EN: &str = concat!("\
You can call the tools listed below. To call tools, write one block in exactly this format, then stop:
<|[REQUEST_TOOL]|>
command:「始」tool_name「末」
parameter_name:「始」value「末」
<|[END_TOOL]|>
Rules:
- Write the block right away; at most one short sentence before it.
- One line per parameter, name:「始」value「末」. Write values as they are: numbers as numbers, lists as [1, 2] or [\"a\", \"b\"]. Leave out optional parameters the request does not mention.
- When the request asks for several things (several values, items, places or tasks), write one call for each of them, all in the one block: after a call's last parameter, leave a blank line and write the next command line. Write <|[END_TOOL]|> only once, after the last call.
- After <|[END_TOOL]|> stop writing. The results come in the next message: never write results or an Observation yourself.
- If no tool fits the request, answer in plain text and write no block.
Example: asked for the weather in Paris and in Rome, with a get_weather tool (not yours: call only the tools listed below), write:
",
    tam_example_block!()
);

const COMPACT_ACTION_EN: &str = concat!("\
To call tools, write one block as in the example below, then stop.
Rules:
- Write the block right away, at most one short sentence before it.
- Tag names are the tool and parameter names exactly as listed. Write values as they are: numbers as numbers, lists as [1, 2] or [\"a\", \"b\"]. Leave out optional parameters the request does not mention.
- When the request asks for several things (values, items, places or tasks), write one call for each, all in the one <ACTION> block, and </ACTION> once at the end.
- After </ACTION> stop: the results come in the next message. Never write results yourself.
- If no tool fits the request, answer in plain text without a block.
Example, for rolling a 6-sided die and a 20-sided die with a roll_die tool (not yours):
",
    action_example_block!()
);

const COMPACT_TAM_ZH: &str = concat!("\
你可以调用下面列出的工具。调用工具时，按下面的格式写一个块，然后停止：
<|[REQUEST_TOOL]|>
command:「始」工具名「末」
参数名:「始」值「末」
<|[END_TOOL]|>
规则：
- 直接写块，块前最多一句简短说明。
- 每个参数一行，参数名:「始」值「末」。值按原样写：数字写数字，列表写成 [1, 2] 或 [\"a\", \"b\"]。请求没有提到的可选参数不要写。
- 请求要做几件事（几个值、几个对象、几个地点或几项任务）时，每件事写一个调用，全部写在同一个块里：一个调用的最后一个参数之后空一行，再写下一个 command 行。<|[END_TOOL]|> 只在最后一个调用之后写一次。
- 写完 <|[END_TOOL]|> 后停止输出。结果会在下一条消息给出：不要自己编写结果或 Observation。
- 没有合适的工具时，直接用自然语言回答，不要写块。
示例：请求查询巴黎和罗马的天气，有一个 get_weather 工具（示例中的工具不是你的工具，只能调用下面列出的工具），写成：
",
    tam_example_block!()
);

const COMPACT_ACTION_ZH: &str = concat!("\
调用工具时，照下面的示例写一个块，然后停止。
规则：
- 直接写块，块前最多一句简短说明。
- 标签名与列出的工具名、参数名完全一致。值按原样写：数字写数字，列表写成 [1, 2] 或 [\"a\", \"b\"]。请求没有提到的可选参数不要写。
- 请求要做几件事（几个值、几个对象、几个地点或几项任务）时，每件事写一个调用，全部写在同一个 <ACTION> 块里，</ACTION> 只在最后写一次。
- 写完 </ACTION> 后停止：结果会在下一条消息给出。不要自己编写结果。
- 没有合适的工具时，直接用自然语言回答，不要写块。
示例：掷一个 6 面骰子和一个 20 面骰子，有一个 roll_die 工具（不是你的工具）：
",
    action_example_block!()
);

const ROLE_ZH: &str = "\
你是一个能够调用工具来完成任务的智能助手。你的目标是准确理解用户的请求，在需要时调用下面列出的工具获取信息或执行操作，并根据工具返回的结果给出最终回答。";

const ROLE_EN: &str = "\
You are an assistant that can call tools to get tasks done. Your goal is to understand the user's request, call the tools listed below when they are needed to get information or act, and give a final answer based on what the tools return.";

const TOOLS_TAM_ZH: &str = "你只能调用以下工具：";
const TOOLS_TAM_EN: &str = "You can call only the following tools:";
const TOOLS_ACTION_ZH: &str = "你可以使用以下工具和技能：";
const TOOLS_ACTION_EN: &str = "You have access to the following tools and skills:";

const INSTRUCTIONS_TAM_ZH: &str = "\
请基于上述信息做出决策。需要调用工具时，先用一两句自然语言说明你的意图，然后输出一个符合 TAM 规范的工具调用块：
- 块以 <|[REQUEST_TOOL]|> 开始，以 <|[END_TOOL]|> 结束，每个块只写一次结束标记。
- command 的值必须是上面列出的工具 ID 之一，不要编造工具。
- 每个参数写成一行开头的 参数名:「始」值「末」。值原样写在「始」和「末」之间，可以跨多行，代码、JSON、XML 等都不需要任何转义。
- 需要按顺序执行多个步骤时，使用数字后缀串联：command1 和 filePath1 属于第 1 步，command2 和 filePath2 属于第 2 步，依此类推；各步骤按编号顺序执行，某一步失败时后面的步骤不会执行。
- 只有当值本身包含「末」时，才改用 参数名:「始ESCAPE」值「末ESCAPE」 的形式，此时值里的「末」按原样保留。
- 写完 <|[END_TOOL]|> 后停止输出，等待工具结果。
- 不需要调用工具时，直接用自然语言回答，不要输出 <|[REQUEST_TOOL]|>。";

const INSTRUCTIONS_TAM_EN: &str = "\
Decide based on the information above. When you need a tool, first say in a sentence or two what you are going to do, then write one tool call block in the TAM format:
- The block starts with <|[REQUEST_TOOL]|> and ends with <|[END_TOOL]|>.
- The value of command must be one of the tool IDs listed above; never invent a tool.
- Write each parameter at the start of a line as name:「始」value「末」. The value goes verbatim between 「始」 and 「末」: it may span several lines, and code, JSON or XML need no escaping at all.
- For several steps in order, chain them with number suffixes: command1 and filePath1 belong to step 1, command2 and filePath2 to step 2, and so on; the steps run in number order, and a failed step stops the ones after it.
- Only when a value itself contains 「末」, write it as name:「始ESCAPE」value「末ESCAPE」 instead; 「末」 inside it is then kept as written.
- Stop writing after <|[END_TOOL]|> and wait for the tool results.
- When no tool is needed, answer in plain language and write no <|[REQUEST_TOOL]|> block.";

const INSTRUCTIONS_ACTION_ZH: &str = "\
需要调用工具或技能时，先用自然语言解释你的思考和选择该工具的理由，然后在回复的最后输出一个 <ACTION> 块：
- <ACTION> 内的第一层标签是工具或技能的 ID（与上面列出的完全一致），它的子标签是参数，参数标签名与列出的参数名完全一致。
- 列表写成多个 <item> 子标签；对象写成嵌套的子标签。
- 参数值包含代码、<、>、& 等 XML 特殊字符，或是需要保留格式的多行文本时，用 <![CDATA[ ... ]]> 包裹。
- 每次回复至多一个 <ACTION> 块，</ACTION> 之后不要再写任何内容。
- 不需要调用工具时，直接用自然语言回答，不要包含 <ACTION> 标签。";

const INSTRUCTIONS_ACTION_EN: &str = "\
When you decide to use a tool or skill, first explain your reasoning, then output the <ACTION> block last in your reply, with the chosen tool/skill ID as the main tag and its parameters as child tags:
- The tag directly inside <ACTION> is the tool or skill ID exactly as listed above; each parameter is a child tag named exactly as listed.
- Write a list as repeated <item> tags and an object as nested tags.
- Wrap a value that contains code, XML special characters such as <, > or &, or multi-line text whose layout matters in <![CDATA[ ... ]]>.
- Write at most one <ACTION> block per reply, and nothing after </ACTION>.
- If no action is needed, just provide your textual response, without any <ACTION> tag.";

const EXAMPLES_TAM_ZH: &str = "\
示例 1（调用一个工具）：
好的，我将使用 FileOperator.ApplyEdit 工具来修改文件。
<|[REQUEST_TOOL]|>
command:「始」FileOperator.ApplyEdit「末」
filePath:「始」/path/to/your/project/main.js「末」
search_string:「始」console.log(\"old message\");「末」
replace_string:「始」console.log(\"new message\");「末」
<|[END_TOOL]|>

示例 2（按顺序执行两个步骤）：
我先创建日志文件，再追加一条记录。
<|[REQUEST_TOOL]|>
# 步骤 1: 创建文件
command1:「始」FileOperator.WriteFile「末」
filePath1:「始」/logs/today.log「末」
content1:「始」任务开始...「末」

# 步骤 2: 追加日志
command2:「始」FileOperator.AppendFile「末」
filePath2:「始」/logs/today.log「末」
content2:「始」添加新记录。「末」
<|[END_TOOL]|>

示例 3（不需要工具）：
今天天气晴朗，很适合出门。";

const EXAMPLES_TAM_EN: &str = "\
Example 1 (one tool call):
I will use FileOperator.ApplyEdit to change the file.
<|[REQUEST_TOOL]|>
command:「始」FileOperator.ApplyEdit「末」
filePath:「始」/path/to/your/project/main.js「末」
search_string:「始」console.log(\"old message\");「末」
replace_string:「始」console.log(\"new message\");「末」
<|[END_TOOL]|>

Example 2 (two steps in order):
I will create the log file first, then append a line to it.
<|[REQUEST_TOOL]|>
# Step 1: create the file
command1:「始」FileOperator.WriteFile「末」
filePath1:「始」/logs/today.log「末」
content1:「始」Task started...「末」

# Step 2: append to the log
command2:「始」FileOperator.AppendFile「末」
filePath2:「始」/logs/today.log「末」
content2:「始」A new entry.「末」
<|[END_TOOL]|>

Example 3 (no tool needed):
The weather is sunny and pleasant today. It's a great day to go out.";

const EXAMPLES_ACTION_ZH: &str = "\
示例 1（调用一个工具）：
我需要先查看当前的天气，才能回答玩家的问题。
<ACTION>
    <ReadWorldStateTool>
        <path>environment.weather.current_conditions</path>
        <default_value>unknown</default_value>
    </ReadWorldStateTool>
</ACTION>

示例 2（含特殊字符的值，用 CDATA 包裹）：
我将应用下面的 diff 来更新配置。
<ACTION>
    <ApplyProjectDiff>
        <target_file>config/settings.json</target_file>
        <diff_patch><![CDATA[
-  \"feature_enabled\": false,
+  \"feature_enabled\": true,
]]></diff_patch>
    </ApplyProjectDiff>
</ACTION>

示例 3（不需要工具）：
现在天气晴朗宜人，非常适合去冒险！";

const EXAMPLES_ACTION_EN: &str = "\
Example 1 (a tool call):
Okay, I need to check the current weather to answer the player's question.
<ACTION>
    <ReadWorldStateTool>
        <path>environment.weather.current_conditions</path>
        <default_value>unknown</default_value>
    </ReadWorldStateTool>
</ACTION>

Example 2 (a value with special characters, in CDATA):
I will apply the following diff to update the configuration.
<ACTION>
    <ApplyProjectDiff>
        <target_file>config/settings.json</target_file>
        <diff_patch><![CDATA[
-  \"feature_enabled\": false,
+  \"feature_enabled\": true,
]]></diff_patch>
    </ApplyProjectDiff>
</ACTION>

Example 3 (no tool needed):
The weather is currently sunny and pleasant. It's a great day for an adventure!";

const RESULT_RULES_ZH: &str = "\
所有工具都会返回JSON格式的结果，包含以下结构：
{
  \"success\": true/false,   // true表示成功，false表示失败或空数据
  \"operationType\": \"query/operation/save\",  // 操作类型
  \"data\": {...},           // 实际数据内容
  \"message\": \"...\"         // 操作说明或错误信息
}
工具结果会以 \"Observation: Tool X executed successfully. Result: …\"（success 为 true）或 \"Observation: Error - …\"（success 为 false）的形式返回给你。

【重要规则】
1. 如果工具返回的success字段为false，说明操作失败或没有查询到数据
2. 当success为false时，请直接回复 \"TOOL_EXECUTION_FAILED\" (不包含引号)，不要尝试重新解释或生成其他内容
3. 这样做可以让系统知道数据获取失败，需要停止整个工作流
4. 只有当success为true时，才能使用返回的data数据继续你的任务";

const RESULT_RULES_EN: &str = "\
Every tool returns a JSON result with this structure:
{
  \"success\": true/false,   // true: it worked; false: it failed or found no data
  \"operationType\": \"query/operation/save\",  // the kind of operation
  \"data\": {...},           // the actual data
  \"message\": \"...\"         // what was done, or the error
}
Results reach you as \"Observation: Tool X executed successfully. Result: …\" (success true) or \"Observation: Error - …\" (success false).

Important rules:
1. A result whose success field is false means the operation failed or found no data.
2. When success is false, reply exactly TOOL_EXECUTION_FAILED (without quotes) and nothing else; do not try to explain or produce anything more.
3. This tells the system that getting the data failed and the whole workflow must stop.
4. Use the returned data to continue your task only when success is true.";
