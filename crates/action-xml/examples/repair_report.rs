//! Decode `<ACTION>` blocks the way models really write them, and report each repair.
//!
//! ```sh
//! cargo run -p action-xml --example repair_report            # built-in replies
//! cargo run -p action-xml --example repair_report -- reply.txt
//! ```
//!
//! Models write code with `<` and `&` straight into parameters, wrap blocks in markdown
//! fences, forget `</ACTION>` at the end of a reply. Each repair is a warning with a stable
//! code; what cannot be repaired is error `malformed_xml` with a line and column, ready to
//! be fed back to the model. A reply cut at the token limit (`finish_cut`) inside a block
//! yields no call at all.

use action_xml::{Config, Decoder, Event};

/// Replies as models write them.
const REPLIES: &[(&str, &str)] = &[
    (
        "code with < and & in a value, inside a markdown fence",
        "I'll fix the comparison.\n```xml\n<ACTION>\n  <write_file>\n    <path>src/cmp.rs</path>\n    <content>fn lt(a: &[u8], b: &[u8]) -> bool { a < b && !b.is_empty() }</content>\n  </write_file>\n</ACTION>\n```\n",
    ),
    (
        "a list, a nested object and CDATA, </ACTION> missing at the end",
        "<ACTION>\n<plan_trip>\n<stops><item>Bern</item><item>Thun</item></stops>\n<options><train>true</train><max_hours>3</max_hours></options>\n<note><![CDATA[<b>bring</b> a coat & hat]]></note>\n</plan_trip>\n",
    ),
    (
        "broken structure between calls",
        "<ACTION>\n<a><x>1</x></a>\n<b><y>2</y></c>\n</ACTION>",
    ),
];

/// A reply cut at the token limit while the model was still writing the block.
const CUT_REPLY: &str = "<ACTION>\n<delete_dir>\n<path>target/</path>\n";

/// Decodes `reply` fed in `piece`-byte deltas; returns one line per call and diagnostic.
fn report(reply: &str, piece: usize, cut: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut log = |event: Event<'_>| match event {
        Event::Block(block) => {
            for call in &block.calls {
                let args = serde_json::Value::Object(call.args.clone());
                lines.push(format!("call {} {args}", call.tool));
            }
            for d in &block.diagnostics {
                lines.push(format!("{} {}: {}", d.severity, d.code, d.message));
            }
        }
        Event::Diagnostic(d) => lines.push(format!("{} {}: {}", d.severity, d.code, d.message)),
        _ => {}
    };
    let mut decoder = Decoder::new(Config::default());
    for delta in reply.as_bytes().chunks(piece.max(1)) {
        decoder.feed_bytes(delta, &mut log);
    }
    if cut {
        decoder.finish_cut(&mut log);
    } else {
        decoder.finish(&mut log);
    }
    lines
}

fn main() -> std::io::Result<()> {
    if let Some(path) = std::env::args_os().nth(1) {
        let text = std::fs::read_to_string(path)?;
        for line in report(&text, 16, false) {
            println!("{line}");
        }
        return Ok(());
    }
    for (title, reply) in REPLIES {
        println!("== {title}");
        for line in report(reply, 5, false) {
            println!("  {line}");
        }
    }
    println!("== a reply cut at the token limit inside a block");
    for line in report(CUT_REPLY, 5, true) {
        println!("  {line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(lines: &[String]) -> Vec<&str> {
        lines
            .iter()
            .filter(|l| !l.starts_with("call "))
            .filter_map(|l| l.split(' ').nth(1)?.strip_suffix(':'))
            .collect()
    }

    #[test]
    fn code_in_a_value_is_kept_verbatim_and_the_repairs_are_named() {
        let lines = report(REPLIES[0].1, 5, false);
        let expected = serde_json::json!({
            "path": "src/cmp.rs",
            "content": "fn lt(a: &[u8], b: &[u8]) -> bool { a < b && !b.is_empty() }"
        });
        assert_eq!(lines[0], format!("call write_file {expected}"));
        let codes = codes(&lines);
        assert!(codes.contains(&"unescaped_lt"), "{lines:?}");
        assert!(codes.contains(&"bare_ampersand"), "{lines:?}");
        assert!(codes.contains(&"fenced_block"), "{lines:?}");
    }

    #[test]
    fn lists_objects_and_cdata_decode_and_a_missing_close_tag_is_repaired() {
        let lines = report(REPLIES[1].1, 1, false);
        let expected = serde_json::json!({
            "stops": ["Bern", "Thun"],
            "options": {"train": "true", "max_hours": "3"},
            "note": "<b>bring</b> a coat & hat"
        });
        assert_eq!(lines[0], format!("call plan_trip {expected}"));
        assert!(codes(&lines).contains(&"missing_close_tag"), "{lines:?}");
    }

    #[test]
    fn broken_structure_is_an_error_with_a_position_and_no_call() {
        let lines = report(REPLIES[2].1, 3, false);
        assert!(!lines.iter().any(|l| l.starts_with("call ")), "{lines:?}");
        let error = lines
            .iter()
            .find(|l| l.starts_with("error malformed_xml"))
            .expect("a malformed_xml error");
        assert!(error.contains("line 3"), "{error}");
    }

    #[test]
    fn a_block_cut_at_the_token_limit_never_yields_its_call() {
        let lines = report(CUT_REPLY, 5, true);
        assert!(!lines.iter().any(|l| l.starts_with("call ")), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("error ")), "{lines:?}");
    }

    #[test]
    fn every_cut_of_the_deltas_gives_the_same_report() {
        for (_, reply) in REPLIES {
            let whole = report(reply, reply.len(), false);
            for piece in [1, 2, 7] {
                assert_eq!(report(reply, piece, false), whole);
            }
        }
    }
}
