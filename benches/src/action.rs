//! The ACTION blocks the `action_xml` benchmark parses (and `profile-decode action …`
//! profiles): one call whose parameters — text with an entity, a list, an object and a
//! CDATA diff — are repeated `repeat` times; and the replies of its `deltas` groups: one
//! `write_to_file` call whose value is code with `<` and `&` in almost every line, or the
//! same size of code without them, cut into deltas of 1, 4 and 30 code points.

/// The body of one call (`<ApplyProjectDiff>…</ApplyProjectDiff>`) with `repeat` rounds of
/// parameters: 568 bytes of block for 1 round, 66 KiB for 128.
pub fn body(repeat: usize) -> String {
    let mut out = String::from("<ApplyProjectDiff>\n");
    for i in 0..repeat {
        out.push_str(&format!(
            "  <target_file_{i}>config/settings_{i}.json</target_file_{i}>\n\
             \x20 <reason_{i}>Enable the feature &amp; keep the old key; see ticket #{i}.</reason_{i}>\n\
             \x20 <files_{i}>\n    <item>src/app.ts</item>\n    <item>src/utils.ts</item>\n  </files_{i}>\n\
             \x20 <options_{i}>\n    <mode>replace</mode>\n    <dry_run>false</dry_run>\n  </options_{i}>\n\
             \x20 <diff_{i}>\n    <![CDATA[\n--- a/config/settings.json\n+++ b/config/settings.json\n\
             @@ -1,5 +1,5 @@\n {{\n-  \"feature_enabled\": false,\n+  \"feature_enabled\": true,\n\
             \x20  \"api_key\": \"old_key_value\"\n }}\n    ]]>\n  </diff_{i}>\n"
        ));
    }
    out.push_str("</ApplyProjectDiff>");
    out
}

/// The whole block: [`body`] inside `<ACTION>` … `</ACTION>`.
pub fn block(repeat: usize) -> String {
    format!("<ACTION>\n{}\n</ACTION>", body(repeat))
}

/// The lines of a code-heavy value: Rust-like code with `<` and `&` in almost every line
/// (`Vec<T>`, `a < b`, `&str`, `&&`, `HashMap<K, V>`, a comment with `&amp;` and `&lt;`),
/// after the code templates of the peer benchmark's workload generator
/// (`../shared/perf/make_workloads.py`).
const CODE_LINES: &[&str] = &[
    "fn {a}_{n}({b}: &str, {c}: usize) -> bool { {b}.len() < {c} && {c} > 0 }",
    "    let {a}: Vec<{t}> = Vec::with_capacity({n});",
    "    if {a} < {b} && {b} <= {c} { return Some(&{a}); }",
    "    let {a} = &mut {b}[..{c}.min({n})];",
    "    for {a} in 0..{n} { if {b}[{a}] < b'<' { {c} += 1; } }",
    "    // compare {a}<{b} && {b}>{c}; escape & as &amp; and < as &lt;",
    "    let {a}: HashMap<String, {t}> = HashMap::new();",
    "    {a} <<= 2; {b} &= 0x{n}; {c} |= {a} & {b};",
    "    match {a}.get({n}) { Some(v) if *v < {n} => v, _ => &0 };",
    "    let s = format!(\"{} < {} && ok\", {a}, {b});",
    "    // 注释：当 {a} < {b} 时跳过 🚀",
    "}",
    "impl<'a> Iterator for Scan<'a> { type Item = &'a {t}; }",
    "    assert!({a}.len() <= {n}, \"{b} too long: {}\", {a}.len());",
    "    let {a} = if {b} < {n} { &{c}[..] } else { &{c}[1..] };",
];
const IDENTS: &[&str] = &[
    "buf", "len", "idx", "acc", "node", "item", "key", "val", "pos", "tail", "head", "count",
];
const TYPES: &[&str] = &["usize", "u8", "u32", "i64", "String", "bool"];

/// A value of at least `bytes` bytes of code, one line per `\n`: with `<` and `&` in
/// almost every line when `markup`, else lines of the same kind without them
/// (`line N: const value_N = compute(N);`, the peer benchmark's plain shape).
pub fn code_value(bytes: usize, markup: bool) -> String {
    let mut rng = crate::synth::Rng::new(0xC0FF_EE00 ^ bytes as u64);
    let mut out = String::with_capacity(bytes + 128);
    let mut line = 0;
    while out.len() < bytes {
        if markup {
            let n = rng.range(1, 4096).to_string();
            let template = rng.pick(CODE_LINES);
            let text = template
                .replace("{a}", rng.pick(IDENTS))
                .replace("{b}", rng.pick(IDENTS))
                .replace("{c}", rng.pick(IDENTS))
                .replace("{t}", rng.pick(TYPES))
                .replace("{n}", &n);
            out.push_str(&text);
        } else {
            out.push_str(&format!(
                "line {line}: const value_{line} = compute({line});"
            ));
        }
        out.push('\n');
        line += 1;
    }
    out
}

/// A reply of one `write_to_file` call in an ACTION block whose `content` is `value`, as
/// a Cline-style model writes it (the value as is: code's `<` and `&` unescaped).
pub fn write_call(value: &str) -> String {
    format!(
        "I'll write the file now.\n\n<ACTION>\n<write_to_file>\n<path>src/big_generated.rs</path>\n\
         <content>\n{value}</content>\n</write_to_file>\n</ACTION>\n\nDone ✅ the file has been written."
    )
}

/// The block body of [`write_call`] as well-formed XML (`<`, `&` and `>` of the value
/// escaped): what roxmltree parses as the baseline of the same content.
pub fn write_call_body_escaped(value: &str) -> String {
    let escaped = value
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<write_to_file>\n<path>src/big_generated.rs</path>\n<content>\n{escaped}</content>\n</write_to_file>"
    )
}

/// `text` cut into deltas of `n` code points (the last one shorter), as the peer
/// benchmark cuts its workloads.
pub fn code_point_deltas(text: &str, n: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / n + 1);
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            out.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}
