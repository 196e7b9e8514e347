//! The prompt-size goal of the BFCL runs measured in the project: how many tokens the
//! upstream's own chat template makes of each case's messages and tools, against the
//! `usage.prompt_tokens` each proxied reply reports.
//!
//! The count asks the upstream itself, so it is exact for the model being measured:
//! llama-server's `POST /apply-template` (the prompt its `--jinja` template renders for
//! `messages` and `tools`, the generation prompt included) and then `POST /tokenize` of
//! that prompt (special tokens parsed, none added). Both are llama-server's own endpoints,
//! beside `/v1`; another upstream has neither, and the runs go on without the ratio.
//!
//! `OUT/native-prompt.jsonl` holds one line per case, `{"id": …, "native_prompt_tokens":
//! N}`; `bfcl-score` reads it from beside the results file it scores.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::report::{Case, clip};
use super::stream::READ_TIMEOUT;
use crate::http;

/// The file name of the counts, beside the results files.
pub(crate) const FILE: &str = "native-prompt.jsonl";

/// The goal the ratio is held against: the proxy's prompt ≤ 1.5× native.
const GOAL: f64 = 1.5;

/// `POST url` with the JSON `body`; the reply's JSON. HTTP errors and replies that are not
/// JSON are errors naming the URL.
fn post_json(url: &str, body: &Value) -> Result<Value, String> {
    let client = http::client(READ_TIMEOUT)?;
    let (status, text) = http::post_json(&client, url, &body.to_string())?;
    if status >= 400 {
        return Err(format!("{url}: HTTP {status}: {}", clip(&text, 300)));
    }
    serde_json::from_str(&text).map_err(|e| format!("{url}: not JSON ({e}): {}", clip(&text, 300)))
}

/// The server's root for its own endpoints: the OpenAI base URL without its `/v1`.
pub(crate) fn server_root(openai_base: &str) -> &str {
    let base = openai_base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// The tokens the upstream's template makes of one case's request.
fn count_one(root: &str, case: &Case) -> Result<usize, String> {
    let templated = post_json(
        &format!("{root}/apply-template"),
        &json!({ "messages": case.line["messages"], "tools": case.line["tools"] }),
    )?;
    let prompt = templated
        .get("prompt")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{root}/apply-template: no string `prompt` in the reply"))?;
    let tokens = post_json(
        &format!("{root}/tokenize"),
        &json!({ "content": prompt, "add_special": false, "parse_special": true }),
    )?;
    tokens
        .get("tokens")
        .and_then(Value::as_array)
        .map(Vec::len)
        .ok_or_else(|| format!("{root}/tokenize: no array `tokens` in the reply"))
}

/// Counts every case's native prompt at `openai_base` and writes `out` (one line per
/// case). An upstream without the endpoints fails on the first case, with the reason.
pub(crate) fn count(cases: &[Case], openai_base: &str, out: &Path) -> Result<usize, String> {
    let root = server_root(openai_base);
    let mut lines = String::new();
    for case in cases {
        let n = count_one(root, case).map_err(|e| format!("case {}: {e}", case.id))?;
        lines.push_str(&json!({ "id": case.id, "native_prompt_tokens": n }).to_string());
        lines.push('\n');
    }
    fs::write(out, lines).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(cases.len())
}

/// The counts of a [`FILE`], by case id.
pub(crate) fn load(path: &Path) -> Result<HashMap<String, f64>, String> {
    let mut counts = HashMap::new();
    for result in super::report::load_results(path)? {
        if let (Some(id), Some(n)) = (
            result.get("id").and_then(Value::as_str),
            result.get("native_prompt_tokens").and_then(Value::as_f64),
        ) {
            counts.insert(id.to_owned(), n);
        }
    }
    Ok(counts)
}

/// One line on the prompt's size against the native template's: mean and largest ratio
/// of `usage.prompt_tokens` to the case's native count, and how many cases are over the
/// goal. Empty when no reply has both.
pub(crate) fn ratio_line(results: &[Map<String, Value>], native: &HashMap<String, f64>) -> String {
    let ratios: Vec<f64> = results
        .iter()
        .filter_map(|r| {
            let id = r.get("id")?.as_str()?;
            let ours = r.get("usage")?.get("prompt_tokens")?.as_f64()?;
            let theirs = *native.get(id)?;
            (theirs > 0.0).then(|| ours / theirs)
        })
        .collect();
    let mut out = String::new();
    if ratios.is_empty() {
        return out;
    }
    let n = ratios.len();
    let mean = ratios.iter().sum::<f64>() / n as f64;
    let max = ratios.iter().copied().fold(f64::MIN, f64::max);
    let over = ratios.iter().filter(|&&r| r > GOAL).count();
    let native_mean = native.values().sum::<f64>() / native.len().max(1) as f64;
    let _ = writeln!(
        out,
        "prompt tokens ÷ the upstream's own template ({FILE}, native mean {native_mean:.1}): \
         mean {mean:.2}×, max {max:.2}×, {over} of {n} cases over {GOAL}×"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_counts_cases_with_both_figures() {
        let native: HashMap<String, f64> =
            [("a".to_owned(), 100.0), ("b".to_owned(), 200.0)].into();
        let result = |id: &str, prompt: Option<u32>| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("id".into(), json!(id));
            if let Some(p) = prompt {
                m.insert("usage".into(), json!({ "prompt_tokens": p }));
            }
            m
        };
        let line = ratio_line(
            &[
                result("a", Some(160)),
                result("b", Some(200)),
                result("c", Some(10)),
                result("a", None),
            ],
            &native,
        );
        assert!(line.contains("mean 1.30×"), "{line}");
        assert!(line.contains("max 1.60×"), "{line}");
        assert!(line.contains("1 of 2 cases over 1.5×"), "{line}");
        assert!(ratio_line(&[result("c", Some(1))], &native).is_empty());
    }

    /// A one-request-per-connection HTTP server on loopback answering each POST by its
    /// path, as llama-server's two endpoints do.
    fn fake_server() -> String {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4) {
                let mut stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let (mut line, mut length) = (String::new(), 0usize);
                reader.read_line(&mut line).unwrap();
                let path = line.split_whitespace().nth(1).unwrap().to_owned();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let (status, reply) = match path.as_str() {
                    "/apply-template" => ("200 OK", r#"{"prompt":"<|im_start|>user\nhi"}"#),
                    "/tokenize" => ("200 OK", r#"{"tokens":[1,2,3,4,5]}"#),
                    _ => ("404 Not Found", r#"{"error":"no such endpoint"}"#),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        format!("http://{addr}")
    }

    #[test]
    fn a_case_is_counted_through_the_servers_endpoints() {
        let root = fake_server();
        let case = Case {
            id: "a".into(),
            category: "simple".into(),
            line: json!({"messages": [{"role": "user", "content": "hi"}], "tools": []})
                .as_object()
                .unwrap()
                .clone(),
        };
        assert_eq!(count_one(&root, &case), Ok(5));
        let err = post_json(&format!("{root}/props"), &json!({})).unwrap_err();
        assert!(err.contains("HTTP 404"), "{err}");
    }

    #[test]
    fn the_server_root_drops_v1() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://h/x"), "http://h/x");
    }
}
