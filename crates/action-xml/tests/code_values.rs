//! Source code is the most common parameter value (docs/protocol/action-xml.md §5). Code
//! with `<`, `&`, generics, HTML string literals and JSX decodes to exactly the text
//! written, with no CDATA, however it is split; the depth limit guards real nesting only.

mod common;

use action_xml::{Config, Decoder, Event, codes, parse};
use common::Action;
use tam_testkit::{XorShift, random_cuts, str_pieces};

/// A realistic source file of at least `min_len` bytes: Rust with generics, `&&`, `<`,
/// HTML string literals, and JSX. Deterministic. It never writes `</content>`, a CDATA
/// opener, `<!--`, or an entity reference (which a leaf would decode).
fn source_file(min_len: usize) -> String {
    let mut rng = XorShift(0x5eed);
    let mut out = String::from("//! Generated view helpers.\nuse std::collections::HashMap;\n\n");
    let mut n = 0;
    while out.len() < min_len {
        n += 1;
        match rng.next_u64() % 6 {
            0 => out.push_str(&format!(
                "pub fn index_{n}<'a, K: Eq + std::hash::Hash, V>(map: &'a HashMap<K, Vec<V>>, k: &K) -> Option<&'a V> {{\n    map.get(k).and_then(|v| v.first())\n}}\n\n"
            )),
            1 => out.push_str(&format!(
                "fn check_{n}(a: i64, b: i64) -> bool {{\n    if a < b && b > 0 || a <= -1 {{ return a << 2 > b >> 1; }}\n    let v: Vec<Option<Result<String, Box<dyn std::error::Error>>>> = Vec::new();\n    v.is_empty() && !(a<b)\n}}\n\n"
            )),
            2 => out.push_str(&format!(
                "const PAGE_{n}: &str = \"<html><body><p class=\\\"note\\\">Hello & welcome</p><br/><img src='a.png'></body></html>\";\n\n"
            )),
            3 => out.push_str(&format!(
                "export function List{n}({{ items }}) {{\n  return (\n    <ul className=\"list\">\n      {{items.map(i => <li key={{i.id}}>{{i.name}} &rarr; {{i.count > 1 ? <b>many</b> : <i>one</i>}}</li>)}}\n    </ul>\n  );\n}}\n\n"
            )),
            4 => out.push_str(&format!(
                "struct Wrapper{n}<T: Clone>(Vec<T>);\nimpl<T: Clone> Wrapper{n}<T> {{\n    fn get(&self, i: usize) -> Option<&T> {{ self.0.get(i) }}\n}}\n\n"
            )),
            _ => out.push_str(&format!(
                "// Compare: x<y, a&b, <T>, </T>, <>, </> and `if (a<b) {{}}` #{n}\nlet html_{n} = r#\"<div><span>{n}</span></div>\"#;\n\n"
            )),
        }
    }
    out.push_str("fn main() {}");
    out
}

fn block_for(source: &str) -> String {
    format!(
        "I'll write the file.\n<ACTION>\n<write_to_file>\n<path>src/big.rs</path>\n<content>{source}</content>\n</write_to_file>\n</ACTION>\nDone."
    )
}

fn content_of(events: &[Event<'static>]) -> String {
    let blocks: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(blocks.len(), 1);
    assert!(!blocks[0].has_errors(), "{:?}", blocks[0].diagnostics);
    assert_eq!(blocks[0].calls.len(), 1);
    blocks[0].calls[0].get_str("content").unwrap().to_owned()
}

/// Decodes `input` fed as `deltas` (owned events, adjacent text merged).
fn run<'a>(deltas: impl IntoIterator<Item = &'a str>) -> Vec<Event<'static>> {
    use tam_testkit::Harness;
    Action(Config::default()).run_str(deltas)
}

#[test]
fn a_150_kb_source_file_decodes_to_exactly_its_text_however_split() {
    let source = source_file(150 * 1024);
    assert!(source.len() >= 150 * 1024);
    let input = block_for(&source);
    let whole = run([input.as_str()]);
    assert_eq!(content_of(&whole), source);
    let bytes: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    assert_eq!(run(bytes), whole, "1-byte deltas");
    for seed in 1..=4 {
        let cuts = random_cuts(input.len(), seed);
        assert_eq!(run(str_pieces(&input, &cuts)), whole, "random seed {seed}");
    }
    // Every prefix split would be quadratic on 150 KB: a sample of 64 prefixes instead.
    let mut rng = XorShift(7);
    for _ in 0..64 {
        let mut at = (rng.next_u64() as usize) % input.len();
        while !input.is_char_boundary(at) {
            at -= 1;
        }
        assert_eq!(run([&input[..at], &input[at..]]), whole, "prefix {at}");
    }
}

#[test]
fn unclosed_generics_cost_no_depth() {
    let source = format!("type T = {}u8{};", "Vec<".repeat(500), ">".repeat(500));
    let out = parse(&block_for(&source));
    assert_eq!(out.calls[0].get_str("content"), Some(source.as_str()));
    assert!(!out.has_errors());
}

#[test]
fn real_nesting_is_still_limited_without_overflowing_the_stack() {
    for levels in [65, 100_000] {
        let deep = format!(
            "<ACTION><t><p>{}x{}</p></t></ACTION>",
            "<a>".repeat(levels),
            "</a>".repeat(levels)
        );
        let out = parse(&deep);
        assert!(out.calls.is_empty());
        assert_eq!(
            out.diagnostics.iter().find(|d| d.is_error()).unwrap().code,
            codes::NESTING_TOO_DEEP
        );
        // Unclosed at the end of the stream: no call, no overflow either.
        let mut decoder = Decoder::new(Config::default());
        let mut blocks = 0;
        decoder.feed(&deep[..deep.len() / 2], |e| {
            blocks += matches!(e, Event::Block(_)) as usize
        });
        decoder.finish(|e| {
            if let Event::Block(b) = e {
                assert!(b.calls.is_empty());
            }
        });
    }
}

/// Code with entity and character references among bare `&`s and text `<`s (a comment
/// saying how to escape, `&&`, `&x`, a reference cut by the delta's end): in deltas of
/// every size up to 70 bytes, the streamed pieces are the block's value, and the events
/// are those of the whole reply. Token-sized deltas that hold a whole reference take the
/// streamer's short way (the reference handed out there, the look going on after it).
#[test]
fn references_in_code_stream_decoded_in_every_delta_size() {
    let mut source = String::new();
    for n in 0..40 {
        source.push_str(&format!(
            "    // escape & as &amp; and < as &lt;, &#65;&#x42;&gt; #{n}\n    if a<b && &x != &lol; {{ v &= 0x{n}; }} &amp&#x43\n"
        ));
    }
    source.push_str("    &amp;&lt;&gt;&quot;&apos;&#x1F600;&&&amp;end");
    let input = block_for(&source);
    let whole = run([input.as_str()]);
    let value = content_of(&whole);
    let streamed = |events: &[Event<'static>]| -> String {
        events
            .iter()
            .filter_map(|e| match e {
                Event::ParamText { text, .. } => Some(text.to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .concat()
    };
    assert!(
        value.contains("escape & as & and < as <, AB> #0"),
        "{value}"
    );
    assert!(value.ends_with("&<>\"'😀&&&end"), "{value}");
    // The path's text streams too: the content's pieces come after it.
    assert!(streamed(&whole).ends_with(&value), "whole");
    for size in 1..=70 {
        let events = run(deltas_of(&input, size));
        assert_eq!(events, whole, "deltas of {size} bytes");
    }
}

/// Deltas of 16 to 64 bytes (30 code points of code) take their stops from one mask of the
/// buffer's last 64 bytes — the streamer's short path and the block scanner's candidates —
/// shorter ones from a search per stop, longer ones the general way: replies whose values
/// hold every kind of stop (`Vec<u8>`, `HashMap<K, Vec<T>>`, `a && b`, `&amp;`, `&lt;`, a
/// bare `&`, HTML, CDATA, an element kept in the value, a line end `\r\n`, a comment),
/// and a block whose value the stream cuts, decode the same in deltas of every size up to
/// 80 bytes, of 30 code points, and every way the harness feeds them.
#[test]
fn stops_of_token_sized_deltas_are_those_of_the_whole_reply() {
    let mut code = String::new();
    for n in 0..6 {
        code.push_str(&format!(
            "fn f_{n}(v: Vec<u8>, m: &HashMap<String, Vec<T>>) -> bool {{ a && b || c < d }}\r\n\
             // escape & as &amp; and < as &lt; {n}: <div class=\"x\">Hi & bye</div> <br/>\n\
             let s = \"<b>bold</b>\"; if x<y {{ return &v[..n]; }} impl<'a> X<'a> {{}}\n"
        ));
    }
    let replies = [
        // The direct reader's way at the close: code, a kept element, references.
        format!(
            "Writing.\n<ACTION>\n<write_to_file>\n<path>src/a.rs</path>\n<content>{code}</content>\n</write_to_file>\n</ACTION>\nDone."
        ),
        // CDATA and a comment in the value: the other ways at the close.
        format!(
            "<ACTION><write_to_file><path>b.rs</path><content>{code}<![CDATA[x < y && </content>]]>{code}<!-- note -->tail &amp; end</content></write_to_file></ACTION>"
        ),
        // A value the stream cuts: no call, the same events however it is fed.
        format!("<ACTION><write_to_file><path>c.rs</path><content>{code}{code}let v: Vec<u"),
    ];
    for input in &replies {
        let whole = tam_testkit::decode_all_ways(Action(Config::default()), input.as_bytes());
        for size in 1..=80 {
            assert_eq!(run(deltas_of(input, size)), whole, "deltas of {size} bytes");
        }
        let chars: Vec<usize> = input.char_indices().map(|(i, _)| i).collect();
        let mut deltas = Vec::new();
        for (k, start) in chars.iter().enumerate().step_by(30) {
            let end = chars.get(k + 30).copied().unwrap_or(input.len());
            deltas.push(&input[*start..end]);
        }
        assert_eq!(run(deltas), whole, "deltas of 30 code points");
    }
}

/// `input` in deltas of `size` bytes, each widened to the next character boundary.
fn deltas_of(input: &str, size: usize) -> Vec<&str> {
    let mut deltas = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let mut end = (at + size).min(input.len());
        while !input.is_char_boundary(end) {
            end += 1;
        }
        deltas.push(&input[at..end]);
        at = end;
    }
    deltas
}
