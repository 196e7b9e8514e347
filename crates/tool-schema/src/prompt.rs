//! Tool lists as prompt text, in the TAM, ACTION XML and plain styles.
//!
//! Every style shows, for each parameter, its type, whether it is required, its
//! description, its allowed values and its default, read from the tool's JSON Schema;
//! nested object members and array items are listed beneath their parameter.
//!
//! Labels are English (`Description`, `Parameters`) in every style: the TAM seed's example
//! uses Chinese labels (`描述`, `参数`) with the same structure, but a prompt's language is
//! the prompt author's choice and the ACTION seed's labels are English; one language keeps
//! the styles comparable.

use std::fmt::Write as _;

use serde_json::Value;

use crate::ToolDefinition;
use crate::shape::{ObjectShape, Shape, TypeSet};

/// The placeholders a plain template may use.
const TOOL_NAME: &str = "{toolName}";
const TOOL_DESCRIPTION: &str = "{toolDescription}";
const TOOL_PARAMETERS: &str = "{toolParameters}";

/// How [`render_tool_list`] lays a tool list out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptStyle {
    /// The TAM layout:
    /// ```text
    /// - Tool ID: FileOperator.ApplyEdit
    ///   - Description: Replaces lines of a file.
    ///   - Parameters:
    ///     - filePath (string, required): The file's absolute path.
    /// ```
    Tam,
    /// The ACTION XML layout: `**Tools (direct function calls):**` then
    /// `**Skills (workflow executions):**` (tools implemented by workflows), each tool as
    /// ``*   `<tool_id>`: description`` with its parameters as `` `<name>` `` items.
    Xml,
    /// One template per tool (`workflow-tool-registration.md`'s `descriptionTemplate`),
    /// lines joined by `\n`. Placeholders: `{toolName}` (the id), `{toolDescription}` and
    /// `{toolParameters}` (the parameters as indented `\n  - name (type, required): …`
    /// lines, empty for a tool without parameters); each is replaced wherever it occurs.
    Plain {
        /// The template; see [`PromptStyle::DEFAULT_PLAIN_TEMPLATE`].
        template: String,
    },
}

impl PromptStyle {
    /// The seed's default line, `- {toolName}: {toolDescription}`, followed by the
    /// parameters.
    pub const DEFAULT_PLAIN_TEMPLATE: &str = "- {toolName}: {toolDescription}{toolParameters}";

    /// The plain style with [`PromptStyle::DEFAULT_PLAIN_TEMPLATE`].
    pub fn plain() -> PromptStyle {
        PromptStyle::Plain {
            template: PromptStyle::DEFAULT_PLAIN_TEMPLATE.to_owned(),
        }
    }
}

/// The words a rendered tool list uses, in one language.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Labels {
    pub(crate) tool_id: &'static str,
    pub(crate) description: &'static str,
    pub(crate) parameters: &'static str,
    pub(crate) none: &'static str,
    pub(crate) tools_heading: &'static str,
    pub(crate) skills_heading: &'static str,
    pub(crate) example: &'static str,
}

/// The labels of [`render_tool_list`]: English.
pub(crate) const ENGLISH_LABELS: Labels = Labels {
    tool_id: "Tool ID",
    description: "Description",
    parameters: "Parameters",
    none: "none",
    tools_heading: "**Tools (direct function calls):**",
    skills_heading: "**Skills (workflow executions):**",
    example: "Example",
};

/// The Chinese labels (`描述`, `参数`), for Chinese system prompts.
pub(crate) const CHINESE_LABELS: Labels = Labels {
    tool_id: "Tool ID",
    description: "描述",
    parameters: "参数",
    none: "无",
    tools_heading: "**工具（直接函数调用）：**",
    skills_heading: "**技能（工作流执行）：**",
    example: "示例",
};

/// How a style lays out a tool's parameters.
struct ParameterLayout {
    /// What precedes the `Parameters:` line above the parameters, if the style has one.
    heading: Option<&'static str>,
    /// Indent of a top-level parameter, and how much each nesting level adds.
    indent: usize,
    step: usize,
    /// Text before the name, and around it.
    bullet: &'static str,
    open: &'static str,
    close: &'static str,
}

const TAM_LAYOUT: ParameterLayout = ParameterLayout {
    heading: Some("  - "),
    indent: 4,
    step: 2,
    bullet: "- ",
    open: "",
    close: "",
};

/// The XML style's layout, also the compact prompt's list. The
/// backticks around each tag and the `Parameters:` line stay there too although they cost
/// about 16 tokens per request: without them (`- <name>: …`, `  - <name> (…): …`) the e2e
/// model took the list's tags for the format more often and wrote a call element alone,
/// without `<ACTION>` (prose), and the held-out BFCL set lost 4 of its first 87 cases
/// (repository's `e2e/README.md`, "Prompt variants").
const XML_LAYOUT: ParameterLayout = ParameterLayout {
    heading: Some("    *   "),
    indent: 8,
    step: 4,
    bullet: "*   ",
    open: "`<",
    close: ">`",
};

const PLAIN_LAYOUT: ParameterLayout = ParameterLayout {
    heading: None,
    indent: 2,
    step: 2,
    bullet: "- ",
    open: "",
    close: "",
};

/// Renders `tools`, in the order given, in `style`. The text has no trailing line break.
pub fn render_tool_list<'a>(
    tools: impl IntoIterator<Item = &'a ToolDefinition>,
    style: &PromptStyle,
) -> String {
    render_with(tools, style, &ENGLISH_LABELS, false)
}

/// [`render_tool_list`] with `labels`; `xml_examples` adds, under each object or array
/// parameter of the XML style, how to write its value (an `Example:` line).
pub(crate) fn render_with<'a>(
    tools: impl IntoIterator<Item = &'a ToolDefinition>,
    style: &PromptStyle,
    labels: &Labels,
    xml_examples: bool,
) -> String {
    let tools: Vec<&ToolDefinition> = tools.into_iter().collect();
    let mut out = String::new();
    let render = Render {
        labels,
        xml_examples,
    };
    match style {
        PromptStyle::Tam => {
            for tool in tools {
                let _ = writeln!(out, "- {}: {}", labels.tool_id, tool.id);
                write_item(
                    &mut out,
                    2,
                    &format!("- {}: {}", labels.description, tool.description),
                );
                render.parameters(&mut out, tool, &TAM_LAYOUT);
            }
        }
        PromptStyle::Xml => {
            let (skills, functions): (Vec<_>, Vec<_>) =
                tools.into_iter().partition(|tool| tool.is_skill());
            for (heading, group) in [
                (labels.tools_heading, functions),
                (labels.skills_heading, skills),
            ] {
                if group.is_empty() {
                    continue;
                }
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(heading);
                out.push_str("\n\n");
                render.xml_items(&mut out, group);
            }
        }
        PromptStyle::Plain { template } => {
            for tool in tools {
                let mut parameters = String::new();
                render.parameters(&mut parameters, tool, &PLAIN_LAYOUT);
                if !parameters.is_empty() {
                    // `{toolParameters}` starts each line with its break and ends with none.
                    parameters.insert(0, '\n');
                    parameters.pop();
                }
                let entry = template
                    .replace(TOOL_NAME, tool.id.as_str())
                    .replace(TOOL_DESCRIPTION, &tool.description)
                    .replace(TOOL_PARAMETERS, &parameters);
                out.push_str(&entry);
                out.push('\n');
            }
        }
    }
    let trimmed = out.trim_end_matches('\n').len();
    out.truncate(trimmed);
    out
}

/// The XML style's tool entries without its group headings: for a prompt that has a
/// heading of its own and treats every tool alike (the compact prompt).
pub(crate) fn render_xml_items<'a>(
    tools: impl IntoIterator<Item = &'a ToolDefinition>,
    labels: &Labels,
) -> String {
    let mut out = String::new();
    // The `<item>` example under an array stays although the compact rules say "lists as
    // [1, 2]": without it the e2e model wrote lists of strings as `a, b`, which cannot be
    // told from one value (e2e/README.md, "Prompt variants": 26 of 38 BFCL cases right
    // without the example, 29 with it).
    let render = Render {
        labels,
        xml_examples: true,
    };
    render.xml_items(&mut out, tools.into_iter().collect());
    let trimmed = out.trim_end_matches('\n').len();
    out.truncate(trimmed);
    out
}

/// The options of one rendering.
struct Render<'l> {
    labels: &'l Labels,
    xml_examples: bool,
}

impl Render<'_> {
    /// Each tool as ``*   `<tool_id>`: description`` and its parameters, XML layout.
    fn xml_items(&self, out: &mut String, tools: Vec<&ToolDefinition>) {
        for tool in tools {
            let mut head = format!("*   `<{}>`", tool.id);
            if !tool.description.is_empty() {
                head.push_str(": ");
                head.push_str(&tool.description);
            }
            write_item(out, 0, &head);
            self.parameters(out, tool, &XML_LAYOUT);
        }
    }

    /// Writes the heading and one line per parameter, depth first; with a heading, a tool
    /// without parameters gets `Parameters: none`.
    fn parameters(&self, out: &mut String, tool: &ToolDefinition, layout: &ParameterLayout) {
        let shape = crate::coerce::read_shape(&tool.parameters);
        let lines = parameter_lines(&shape);
        if let Some(heading) = layout.heading {
            let label = self.labels.parameters;
            if lines.is_empty() {
                let _ = writeln!(out, "{heading}{label}: {}", self.labels.none);
            } else {
                let _ = writeln!(out, "{heading}{label}:");
            }
        }
        let with_examples = self.xml_examples && layout.open == XML_LAYOUT.open;
        for line in lines {
            line.write_to(out, layout);
            if with_examples
                && line.depth == 0
                && let Some(example) = xml_example(line.name, line.shape)
            {
                let indent = layout.indent + layout.step;
                let text = format!("{}{}: {example}", layout.bullet, self.labels.example);
                write_item(out, indent, &text);
            }
        }
    }
}

/// How to write a structured top-level parameter in ACTION XML, as the seed's example shows
/// for `payload`: an object as nested tags, an array as `<item>` tags.
fn xml_example(name: &str, shape: &Shape) -> Option<String> {
    if shape.types == TypeSet::ARRAY {
        return Some(format!("`<{name}><item>…</item><item>…</item></{name}>`"));
    }
    if shape.types == TypeSet::OBJECT {
        let members: String = shape
            .object
            .iter()
            .flat_map(|object| object.properties.iter().take(2))
            .map(|p| format!("<{0}>…</{0}>", p.name))
            .collect();
        return Some(if members.is_empty() {
            format!("`<{name}><![CDATA[{{\"key\": \"value\"}}]]></{name}>`")
        } else {
            format!("`<{name}>{members}</{name}>`")
        });
    }
    None
}

/// Writes `text` at `indent` and a line break; its own line breaks are indented to match,
/// so a multi-line description stays inside its list item.
fn write_item(out: &mut String, indent: usize, text: &str) {
    for (index, line) in text.lines().enumerate() {
        let extra = if index == 0 { 0 } else { 2 };
        let _ = writeln!(out, "{:width$}{line}", "", width = indent + extra);
    }
}

/// One parameter as a prompt lists it.
struct ParameterLine<'s> {
    /// 0 for a top-level parameter, one more per nesting level.
    depth: usize,
    /// The parameter's name, or `item` for the elements of an array.
    name: &'s str,
    shape: &'s Shape,
    /// `None` for array items, which are neither required nor optional.
    required: Option<bool>,
}

impl ParameterLine<'_> {
    /// `{bullet}{open}name{close} (type, required, one of: …, default: …): description`
    /// at the layout's indent for this depth, and a line break; an array of scalars whose
    /// items are enumerated says `each one of: …` instead of `one of: …`.
    fn write_to(&self, out: &mut String, layout: &ParameterLayout) {
        let shape = self.shape;
        let mut text = format!(
            "{}{}{}{} ({}",
            layout.bullet,
            layout.open,
            self.name,
            layout.close,
            type_label(shape)
        );
        text.push_str(match self.required {
            Some(true) => ", required",
            Some(false) => ", optional",
            None => ", each item",
        });
        if let Some(allowed) = &shape.enumeration {
            let values: Vec<String> = allowed.iter().map(Value::to_string).collect();
            let _ = write!(text, ", one of: {}", values.join(", "));
        } else if let Some(items) = &shape.items
            && items.object.is_none()
            && items.items.is_none()
            && let Some(allowed) = &items.enumeration
        {
            // Scalar items get no line of their own (`push_nested`): their allowed values
            // go on the array's line, or the model never sees them.
            let values: Vec<String> = allowed.iter().map(Value::to_string).collect();
            let _ = write!(text, ", each one of: {}", values.join(", "));
        }
        if let Some(default) = &shape.default {
            let _ = write!(text, ", default: {default}");
        }
        text.push(')');
        if let Some(description) = &shape.description {
            text.push_str(": ");
            text.push_str(description);
        }
        write_item(out, layout.indent + layout.step * self.depth, &text);
    }
}

/// `string`, `string | null`, `array of integer`, `any`.
fn type_label(shape: &Shape) -> String {
    match &shape.items {
        Some(items) if shape.types == TypeSet::ARRAY && !items.types.is_any() => {
            format!("array of {}", items.types.label())
        }
        _ => shape.types.label(),
    }
}

/// The parameters of a tool's schema, depth first in declaration order.
fn parameter_lines(shape: &Shape) -> Vec<ParameterLine<'_>> {
    let mut lines = Vec::new();
    if let Some(object) = &shape.object {
        push_members(&mut lines, object, 0);
    }
    lines
}

fn push_members<'s>(lines: &mut Vec<ParameterLine<'s>>, object: &'s ObjectShape, depth: usize) {
    for property in &object.properties {
        lines.push(ParameterLine {
            depth,
            name: &property.name,
            shape: &property.shape,
            required: Some(property.required),
        });
        push_nested(lines, &property.shape, depth + 1);
    }
}

fn push_nested<'s>(lines: &mut Vec<ParameterLine<'s>>, shape: &'s Shape, depth: usize) {
    if let Some(object) = &shape.object {
        push_members(lines, object, depth);
    }
    if let Some(items) = &shape.items
        && (items.object.is_some() || items.items.is_some())
    {
        lines.push(ParameterLine {
            depth,
            name: "item",
            shape: items,
            required: None,
        });
        push_nested(lines, items, depth + 1);
    }
}
