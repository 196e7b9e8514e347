//! A call with many parameters (more than 11 members: the object is built from its
//! members sorted by name), shaped like real output: names longer than 16 bytes that share
//! a long prefix, a repeated name whose values must stay in document order, list and object
//! parameters, and code values with `<`, `&&`, generics and HTML — fed whole, char by char,
//! byte by byte, in random splits and as every prefix + rest (`common::decode`).

mod common;

use serde_json::{Value, json};

fn call_body() -> (String, serde_json::Map<String, Value>) {
    let mut body = String::new();
    let mut expected = serde_json::Map::new();
    for i in 0..8 {
        // 27 bytes of shared prefix: the 16-byte sort number of every such name is equal.
        let name = format!("configuration_parameter_of_{i}");
        let code =
            format!("fn f{i}<T: Clone>(v: &Vec<T>) -> bool {{ v.len() < {i} && !v.is_empty() }}");
        body.push_str(&format!(
            "<{name}>{}</{name}>\n",
            code.replace('&', "&amp;").replace('<', "&lt;")
        ));
        expected.insert(name, Value::String(code));
    }
    // A repeated name, interleaved with others: an array in document order.
    for (i, v) in ["first <b>bold</b>", "second", "third & last"]
        .iter()
        .enumerate()
    {
        body.push_str(&format!(
            "<note>{}</note>\n<short_{i}>{i}</short_{i}>\n",
            v.replace('&', "&amp;").replace('<', "&lt;")
        ));
        expected.insert(format!("short_{i}"), Value::String(i.to_string()));
    }
    expected.insert(
        "note".into(),
        json!(["first <b>bold</b>", "second", "third & last"]),
    );
    body.push_str("<files><item>src/a.rs</item><item>src/b.rs</item></files>\n");
    expected.insert("files".into(), json!(["src/a.rs", "src/b.rs"]));
    body.push_str("<options><mode>replace</mode><dry_run>false</dry_run></options>\n");
    expected.insert(
        "options".into(),
        json!({"mode": "replace", "dry_run": "false"}),
    );
    body.push_str("<diff><![CDATA[if a < b && c > d { <div>x</div> }]]></diff>\n");
    expected.insert("diff".into(), json!("if a < b && c > d { <div>x</div> }"));
    (body, expected)
}

#[test]
fn many_members_decode_the_same_however_split() {
    let (body, expected) = call_body();
    assert!(expected.len() > 11);
    let input = format!(
        "I'll apply the settings now.\n<ACTION>\n<ApplySettings>\n{body}</ApplySettings>\n</ACTION>"
    );
    let events = common::decode(&input);
    let blocks = common::blocks(&events);
    assert_eq!(blocks.len(), 1);
    let block = blocks[0];
    assert!(block.diagnostics.is_empty(), "{:?}", block.diagnostics);
    assert_eq!(block.calls.len(), 1);
    assert_eq!(block.calls[0].tool, "ApplySettings");
    assert_eq!(block.calls[0].args, expected);
    // Every parameter element is kept as written, in document order.
    let keys: Vec<&str> = block.calls[0].params.iter().map(|p| &*p.key).collect();
    assert_eq!(keys.len(), 8 + 6 + 3);
    assert_eq!(keys[8..10], ["note", "short_0"]);
    assert_eq!(common::text(&events), "I'll apply the settings now.\n");
}

#[test]
fn many_members_cut_before_the_close_never_make_a_call() {
    let (body, _) = call_body();
    // The model stopped inside the last parameter: nothing runs.
    let cut = format!("<ACTION>\n<ApplySettings>\n{body}<extra>fn main() {{ let x = 1;");
    let events = common::decode(&cut);
    assert!(
        common::blocks(&events).iter().all(|b| b.calls.is_empty()),
        "{events:?}"
    );
    assert!(
        common::codes(&events).contains(&"unterminated_block"),
        "{:?}",
        common::codes(&events)
    );
}
