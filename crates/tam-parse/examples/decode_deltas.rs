//! Decode a model's reply while it streams in, and see each call the moment its block
//! closes.
//!
//! ```sh
//! cargo run -p tam-parse --example decode_deltas            # a built-in reply
//! cargo run -p tam-parse --example decode_deltas -- reply.txt
//! ```
//!
//! A file is fed in 7-byte pieces (cut anywhere, even inside a UTF-8 character), as a
//! network would deliver it. The built-in reply has prose with code holding `<` and `&` and
//! the start of a marker, two chained calls, and then a second reply cut at the token limit in the
//! middle of a block: that call was never finished, so it never comes out.

use tam_parse::{Config, Decoder, Event};

/// A reply as a model streams it: the deltas are cut wherever the tokens fell.
const REPLY: &[&str] = &[
    "In `if a < b && c { Vec::<u8>::new() }` the `<` and `&` are only prose. <|[ is too, ",
    "until a whole marker arrives.\nI'll read the file, then list its directory.\n<|[REQUEST_TO",
    "OL]|>\ncommand1:「始」File.Read「末」\nfilePath1:「始」src/ma",
    "in.rs「末」\ncommand2:「始」Dir.List「末」\npath2:「始」src/「末」\n<|[END_TOOL]|>\nDone.",
];

/// The same kind of reply, cut at the token limit before its end marker arrived.
const CUT_REPLY: &[&str] = &[
    "Deleting the build directory:\n<|[REQUEST_TOOL]|>\ncommand:「始」File.Delete「末」\n",
    "path:「始」target/「末」\n",
];

/// Decodes byte deltas and returns one line per event, in stream order. `cut` says the
/// stream stopped early (token limit, transport error): a block still open yields no call.
fn decode<'a>(deltas: impl IntoIterator<Item = &'a [u8]>, cut: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut log = |event: Event<'_>| match event {
        Event::Text { text, .. } => lines.push(format!("text  {text:?}")),
        Event::BlockStart { span } => lines.push(format!("block started at byte {}", span.start)),
        Event::Block(block) => {
            for call in &block.calls {
                let params: Vec<String> = call
                    .params
                    .iter()
                    .map(|p| format!("{}={:?}", p.key, &*p.value))
                    .collect();
                lines.push(format!("call  {} {}", call.tool, params.join(" ")));
            }
        }
        Event::Diagnostic(d) => lines.push(format!("{} {}: {}", d.severity, d.code, d.message)),
        _ => {}
    };
    let mut decoder = Decoder::new(Config::default());
    for delta in deltas {
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
        let bytes = std::fs::read(path)?;
        for line in decode(bytes.chunks(7), false) {
            println!("{line}");
        }
        return Ok(());
    }
    println!("== a complete reply");
    for line in decode(REPLY.iter().map(|d| d.as_bytes()), false) {
        println!("{line}");
    }
    println!("== a reply cut at the token limit inside a block");
    for line in decode(CUT_REPLY.iter().map(|d| d.as_bytes()), true) {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(lines: &[String]) -> Vec<&String> {
        lines.iter().filter(|l| l.starts_with("call")).collect()
    }

    #[test]
    fn the_complete_reply_gives_both_chained_calls_and_keeps_the_prose() {
        let lines = decode(REPLY.iter().map(|d| d.as_bytes()), false);
        assert_eq!(
            calls(&lines),
            [
                "call  File.Read filePath=\"src/main.rs\"",
                "call  Dir.List path=\"src/\""
            ]
        );
        let prose: String = lines
            .iter()
            .filter_map(|l| l.strip_prefix("text  "))
            .map(|t| t.trim_matches('"').to_owned())
            .collect();
        assert!(
            prose.contains("`if a < b && c { Vec::<u8>::new() }`"),
            "{prose}"
        );
        assert!(prose.contains("<|[ is too"), "{prose}");
        assert!(prose.ends_with("Done."), "{prose}");
    }

    #[test]
    fn cutting_the_reply_anywhere_gives_the_same_calls() {
        let whole = REPLY.concat();
        let expected = decode([whole.as_bytes()], false);
        for piece in [1, 2, 3, 7, 64] {
            let lines = decode(whole.as_bytes().chunks(piece), false);
            assert_eq!(calls(&lines), calls(&expected), "pieces of {piece} bytes");
        }
    }

    #[test]
    fn a_block_cut_at_the_token_limit_never_yields_its_call() {
        let lines = decode(CUT_REPLY.iter().map(|d| d.as_bytes()), true);
        assert!(calls(&lines).is_empty(), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("unterminated_block")),
            "{lines:?}"
        );
    }
}
