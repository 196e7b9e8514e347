//! From a `plugin.yaml` to the tool list in a prompt, the OpenAI `tools` array, and back
//! from the name the model called to the tool and its coerced arguments.
//!
//! ```sh
//! cargo run -p tool-schema --example export_tools
//! cargo run -p tool-schema --example export_tools -- path/to/plugin.yaml
//! ```

use serde_json::{Map, Value};
use tool_schema::load::plugin_from_str;
use tool_schema::{
    CompiledTool, ExportFormat, KeyMatch, PromptStyle, ToolDefinition, export_tools,
    render_tool_list,
};

/// A plugin that declares two tools, as a plugin author writes it.
const PLUGIN: &str = r#"
name: notes
tools:
  - id: notes:search
    displayName: Search notes
    description: Finds notes that mention a phrase.
    parameters:
      type: object
      properties:
        phrase: {type: string, description: The text to look for.}
        limit: {type: integer, minimum: 1, maximum: 50, defaultValue: 10}
      required: [phrase]
    implementation: {type: service}
  - id: notes:archive
    description: Moves a note to the archive.
    parameters:
      type: object
      properties:
        id: {type: integer, description: The note's number.}
        dry_run: {type: boolean}
      required: [id]
    implementation: {type: node, nodeType: ArchiveNote}
"#;

/// Everything the example shows, for `main` to print and the tests to check.
struct Walkthrough {
    prompt: String,
    openai: Vec<Value>,
    /// The name exported for `notes:search` (its id has a `:`, so it gets an alias).
    search_name: String,
    /// The arguments of a TAM-style call to that name, coerced by the schema.
    coerced: Result<Map<String, Value>, String>,
    /// The one-line error of a call with a value out of range.
    out_of_range: String,
}

fn walkthrough(plugin: &str) -> Result<Walkthrough, Box<dyn std::error::Error>> {
    let definitions: Vec<ToolDefinition> = plugin_from_str(plugin, "plugin.yaml")?;
    let prompt = render_tool_list(&definitions, &PromptStyle::Tam);
    let exported = export_tools(&definitions, ExportFormat::OpenAi);

    // The model calls a tool by its exported name; map it back to the definition, then
    // coerce its text arguments (TAM gives every value as a string) against the schema.
    let first = definitions.first().ok_or("the plugin declares no tools")?;
    let search_name = exported
        .aliases
        .alias(&first.id)
        .ok_or("every exported tool has a name")?
        .to_owned();
    let id = exported
        .aliases
        .resolve(&search_name)
        .ok_or("an exported name resolves")?;
    let definition = definitions
        .iter()
        .find(|d| &d.id == id)
        .ok_or("the name maps back to a declared tool")?;
    let tool = CompiledTool::new(definition.clone())?;
    let coerced = tool
        .coerce(
            [
                ("Phrase", Value::from("rust 2024")),
                ("LIMIT", Value::from("5")),
            ],
            KeyMatch::Canonical,
        )
        .map_err(|e| e.to_string());
    let out_of_range = match tool.coerce(
        [("phrase", Value::from("x")), ("limit", Value::from("500"))],
        KeyMatch::Canonical,
    ) {
        Ok(args) => format!("accepted {}", Value::Object(args)),
        Err(errors) => errors.to_string(),
    };
    Ok(Walkthrough {
        prompt,
        openai: exported.tools,
        search_name,
        coerced,
        out_of_range,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = match std::env::args_os().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => PLUGIN.to_owned(),
    };
    let w = walkthrough(&text)?;
    println!("== the tool list for a TAM prompt\n{}", w.prompt);
    println!("== OpenAI `tools`");
    println!("{}", serde_json::to_string_pretty(&Value::Array(w.openai))?);
    println!("== a call to `{}`", w.search_name);
    match w.coerced {
        Ok(args) => println!("coerced arguments: {}", Value::Object(args)),
        Err(e) => println!("refused: {e}"),
    }
    println!("== a value out of range\n{}", w.out_of_range);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_plugin_renders_exports_and_coerces() {
        let w = walkthrough(PLUGIN).unwrap();
        assert!(
            w.prompt.starts_with("- Tool ID: notes:search\n"),
            "{}",
            w.prompt
        );
        assert!(w.prompt.contains("notes:archive"), "{}", w.prompt);

        assert_eq!(w.openai.len(), 2);
        assert_eq!(w.openai[0]["type"], "function");
        assert_eq!(w.openai[0]["function"]["name"], w.search_name.as_str());
        assert!(
            tool_schema::export::is_valid_export_name(&w.search_name),
            "{}",
            w.search_name
        );
        assert_eq!(
            w.openai[0]["function"]["parameters"]["required"],
            json!(["phrase"])
        );

        assert_eq!(
            w.coerced.map(Value::Object),
            Ok(json!({"phrase": "rust 2024", "limit": 5}))
        );
        assert!(
            w.out_of_range
                .starts_with("Invalid parameters for notes:search:"),
            "{}",
            w.out_of_range
        );
    }

    #[test]
    fn a_broken_plugin_names_the_field() {
        let broken = PLUGIN.replace("type: service", "type: servise");
        let error = walkthrough(&broken).err().unwrap().to_string();
        assert!(error.contains("implementation"), "{error}");
    }
}
