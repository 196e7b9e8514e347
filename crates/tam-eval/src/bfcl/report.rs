//! A case file and a results file read, scored and reported: the table by category, the
//! reply facts, `--details`, `--verdicts`; and `tam-eval bfcl-score CASES RESULTS`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::python::truthy;
use super::score::{Verdict, score_case};
use crate::cli::ScoreArgs;

/// The categories, in the order of the table.
pub(crate) const CATEGORIES: [&str; 5] = [
    "simple",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
];

/// One BFCL case of the case file.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) id: String,
    pub(crate) category: String,
    /// The whole line (`messages`, `tools`, `answer`, `bfcl_functions`, …).
    pub(crate) line: Map<String, Value>,
}

/// Reads a case file (JSON lines; blank lines skipped). A line that is not a JSON object
/// with a string `id` and `category`, arrays `messages`, `tools` and `bfcl_functions`
/// and an `answer` (an array, or `null`) is an error naming the file and line.
pub(crate) fn load_cases(path: &Path) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (number, line) in read_json_lines(path)? {
        let at = || format!("{}:{number}", path.display());
        let string = |key: &str| {
            line.get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{}: no string `{key}` in the case", at()))
        };
        let id = string("id")?;
        let category = string("category")?;
        for key in ["messages", "tools", "bfcl_functions"] {
            if !line.get(key).is_some_and(Value::is_array) {
                return Err(format!("{}: case {id}: `{key}` is not an array", at()));
            }
        }
        if !line
            .get("answer")
            .is_some_and(|a| a.is_array() || a.is_null())
        {
            return Err(format!(
                "{}: case {id}: `answer` is neither an array nor null",
                at()
            ));
        }
        cases.push(Case { id, category, line });
    }
    Ok(cases)
}

/// Reads a results file: one JSON object per non-blank line.
pub(crate) fn load_results(path: &Path) -> Result<Vec<Map<String, Value>>, String> {
    Ok(read_json_lines(path)?.into_iter().map(|(_, v)| v).collect())
}

/// The JSON objects of a JSON-lines file, with their line numbers.
fn read_json_lines(path: &Path) -> Result<Vec<(usize, Object)>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => out.push((i + 1, map)),
            Ok(_) => {
                return Err(format!(
                    "{}:{}: not a JSON object: {}",
                    path.display(),
                    i + 1,
                    clip(line, 200)
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{}:{}: not JSON ({e}): {}",
                    path.display(),
                    i + 1,
                    clip(line, 200)
                ));
            }
        }
    }
    Ok(out)
}

/// At most `n` characters of `s`.
pub(crate) fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

// ---- a results file scored --------------------------------------------------------------

/// The key a result's `id` is looked up by (`null` and non-strings kept apart).
fn id_key(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => format!("\0{other}"),
        None => "\0null".to_owned(),
    }
}

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// A scored case: the case, its result line (if any), the verdict.
pub(crate) type Row<'a> = (&'a Case, Option<&'a Object>, Verdict);

/// Every case of a file with its result line (if any) and verdict.
pub(crate) struct Scored<'a> {
    pub(crate) rows: Vec<Row<'a>>,
    /// Cases without a result line, skipped (not with `require_all`).
    pub(crate) skipped: usize,
    /// Duplicate or unknown result ids.
    pub(crate) warnings: Vec<String>,
    strict_irrelevance: bool,
}

/// Scores `results` against `cases`: the last line of a repeated id
/// counts; cases without a result are skipped unless `require_all`.
pub(crate) fn score<'a>(
    cases: &'a [Case],
    results: &'a [Map<String, Value>],
    strict_irrelevance: bool,
    require_all: bool,
) -> Scored<'a> {
    let mut by_id: HashMap<String, &Map<String, Value>> = HashMap::new();
    let mut warnings = Vec::new();
    for r in results {
        let key = id_key(r.get("id"));
        if by_id.insert(key.clone(), r).is_some() {
            warnings.push(format!(
                "warning: duplicate result for {}; the last one is used",
                key.trim_start_matches('\0')
            ));
        }
    }
    let known: std::collections::HashSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    let mut unknown: Vec<&str> = by_id
        .keys()
        .filter(|k| !known.contains(k.as_str()))
        .map(|k| k.trim_start_matches('\0'))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        warnings.push(format!(
            "warning: {} result ids are not in the case file: {:?}",
            unknown.len(),
            &unknown[..unknown.len().min(5)]
        ));
    }
    let mut rows = Vec::new();
    let mut skipped = 0;
    for case in cases {
        let result = by_id.get(&case.id).copied();
        if result.is_none() && !require_all {
            skipped += 1;
            continue;
        }
        rows.push((case, result, score_case(case, result, strict_irrelevance)));
    }
    Scored {
        rows,
        skipped,
        warnings,
        strict_irrelevance,
    }
}

impl Scored<'_> {
    /// `(cases, correct)` of `category`.
    pub(crate) fn count(&self, category: &str) -> (usize, usize) {
        let mine = self.rows.iter().filter(|(c, _, _)| c.category == category);
        mine.fold((0, 0), |(n, k), (_, _, v)| {
            (n + 1, k + usize::from(v.valid))
        })
    }

    /// The table: one row per category, overall, the unweighted mean of the categories,
    /// and its notes.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<18} {:>4} {:>8} {:>9}",
            "category", "n", "correct", "accuracy"
        );
        let mut accs = Vec::new();
        for cat in CATEGORIES {
            let (n, k) = self.count(cat);
            if n == 0 {
                continue;
            }
            accs.push(k as f64 / n as f64);
            let _ = writeln!(
                out,
                "{cat:<18} {n:>4} {k:>8} {:>8.1}%",
                (100 * k) as f64 / n as f64
            );
        }
        let n = self.rows.len();
        let k = self.rows.iter().filter(|r| r.2.valid).count();
        if n > 0 {
            let _ = writeln!(
                out,
                "{:<18} {n:>4} {k:>8} {:>8.1}%",
                "overall (cases)",
                (100 * k) as f64 / n as f64
            );
            if !accs.is_empty() {
                let sum: f64 = accs.iter().sum();
                let _ = writeln!(
                    out,
                    "{:<18} {:>4} {:>8} {:>8.1}%",
                    "mean of categories",
                    "",
                    "",
                    100.0 * sum / accs.len() as f64
                );
            }
        }
        let irr: Vec<_> = self
            .rows
            .iter()
            .filter(|(c, r, _)| {
                c.category == "irrelevance" && r.is_some_and(|r| !truthy(r.get("error")))
            })
            .collect();
        if !irr.is_empty() && !self.strict_irrelevance {
            let strict = irr
                .iter()
                .filter(|(_, r, _)| !truthy(r.and_then(|r| r.get("tool_calls"))))
                .count();
            let loose = irr.iter().filter(|(_, _, v)| v.valid).count();
            if strict != loose {
                let _ = writeln!(
                    out,
                    "note: irrelevance with any tool call counted as a failure \
                     (--strict-irrelevance): {strict}/{}",
                    irr.len()
                );
            }
        }
        let errors = self
            .rows
            .iter()
            .filter(|r| r.2.error_type == "transport_error")
            .count();
        if errors > 0 {
            let _ = writeln!(out, "note: {errors} case(s) failed with a transport error");
        }
        if self.skipped > 0 {
            let _ = writeln!(
                out,
                "note: {} case(s) without a result were skipped (--require-all counts them)",
                self.skipped
            );
        }
        out
    }

    /// Every failure with its reason, what came and what was wanted (`--details`).
    pub(crate) fn details(&self) -> String {
        let mut out = String::new();
        for (case, result, v) in &self.rows {
            if v.valid {
                continue;
            }
            let _ = writeln!(
                out,
                "FAIL {} [{}] {}: {}",
                case.id, case.category, v.error_type, v.error
            );
            let Some(result) = result else { continue };
            let got: Vec<Value> = match result.get("tool_calls") {
                Some(Value::Array(calls)) => calls
                    .iter()
                    .map(|tc| json!([tc.get("name"), tc.get("arguments")]))
                    .collect(),
                _ => Vec::new(),
            };
            let _ = writeln!(out, "     got:  {}", clip(&json!(got).to_string(), 600));
            if let Some(answer) = case.line.get("answer").filter(|a| !a.is_null()) {
                let _ = writeln!(out, "     want: {}", clip(&answer.to_string(), 600));
            }
        }
        out
    }

    /// One `{"id", "category", "valid", "error_type", "error"}` line per scored case.
    pub(crate) fn verdict_lines(&self) -> String {
        let mut out = String::new();
        for (case, _, v) in &self.rows {
            let line = json!({
                "id": case.id,
                "category": case.category,
                "valid": v.valid,
                "error_type": v.error_type,
                "error": v.error,
            });
            let _ = writeln!(out, "{line}");
        }
        out
    }
}

/// Facts about the replies beside their scores: mean time per case, mean prompt and
/// completion tokens (over the replies that report `usage`), replies with text beside
/// their tool calls, replies cut by `max_tokens` (`finish_reason` `length`), errors.
pub(crate) fn reply_stats(results: &[Map<String, Value>]) -> String {
    let n = results.len();
    let mut out = String::new();
    if n == 0 {
        return out;
    }
    let times: Vec<f64> = results
        .iter()
        .filter_map(|r| r.get("time_s").and_then(Value::as_f64))
        .collect();
    if !times.is_empty() {
        let _ = writeln!(
            out,
            "time per case: mean {:.2} s over {} replies (total {:.1} s)",
            times.iter().sum::<f64>() / times.len() as f64,
            times.len(),
            times.iter().sum::<f64>()
        );
    }
    let usage: Vec<(f64, f64)> = results
        .iter()
        .filter_map(|r| {
            let u = r.get("usage")?;
            Some((
                u.get("prompt_tokens")?.as_f64()?,
                u.get("completion_tokens")?.as_f64()?,
            ))
        })
        .collect();
    if !usage.is_empty() {
        let m = usage.len() as f64;
        let _ = writeln!(
            out,
            "tokens per case: mean prompt {:.1}, mean completion {:.1} (over {} replies with usage)",
            usage.iter().map(|u| u.0).sum::<f64>() / m,
            usage.iter().map(|u| u.1).sum::<f64>() / m,
            usage.len()
        );
    } else {
        let _ = writeln!(out, "tokens per case: no reply reported usage");
    }
    let beside = results
        .iter()
        .filter(|r| {
            truthy(r.get("tool_calls"))
                && r.get("content")
                    .and_then(Value::as_str)
                    .is_some_and(|c| !c.trim().is_empty())
        })
        .count();
    let cut = results
        .iter()
        .filter(|r| r.get("finish_reason").and_then(Value::as_str) == Some("length"))
        .count();
    let errors = results.iter().filter(|r| truthy(r.get("error"))).count();
    // A call whose streamed arguments do not join to a JSON object is a broken reply the
    // transport did not flag: a client cannot run it. (A `length` cut may leave one, as
    // OpenAI's own do; the finish reason says so, and it is counted with the cuts.)
    let not_json = results
        .iter()
        .filter(|r| {
            r.get("finish_reason").and_then(Value::as_str) != Some("length")
                && r.get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|calls| {
                        calls.iter().any(|c| match c.get("arguments") {
                            Some(Value::String(text)) => {
                                !matches!(serde_json::from_str(text), Ok(Value::Object(_)))
                            }
                            Some(Value::Object(_)) => false,
                            _ => true,
                        })
                    })
        })
        .count();
    let _ = writeln!(
        out,
        "replies: {n}; with text content beside tool calls: {beside}; finish_reason \
         \"length\": {cut}; errors: {errors}; replies (not cut) with a call whose arguments are not \
         a JSON object: {not_json}"
    );
    out
}

/// `tam-eval bfcl-score CASES RESULTS [--details] [--strict-irrelevance] [--require-all]
/// [--verdicts PATH]`: scores an existing results file (no model), printing what the run
/// was (from its `run.json`, when the results directory has one), the table and then the
/// reply facts of [`reply_stats`].
pub(crate) fn main(args: &ScoreArgs) -> Result<(), String> {
    let cases = load_cases(&args.cases)?;
    let results = load_results(&args.results)?;
    let scored = score(&cases, &results, args.strict_irrelevance, args.require_all);
    for w in &scored.warnings {
        eprintln!("{w}");
    }
    let mut out = String::new();
    if args.details {
        let _ = writeln!(out, "{}", scored.details());
    }
    if let Some(path) = &args.verdicts {
        fs::write(path, scored.verdict_lines()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(heading) = run_heading(&args.results)? {
        let _ = writeln!(out, "{heading}");
    }
    out.push_str(&scored.table());
    out.push_str(&reply_stats(&results));
    out.push_str(&beside_native(&args.results)?);
    // A reader that stops early (`| head`) is no error.
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

/// The heading of the run that wrote `results_path` (the model and the `tam serve`
/// arguments), from the `run.json` beside it; `None` when there is none.
pub(crate) fn run_heading(results_path: &Path) -> Result<Option<String>, String> {
    let path = results_path
        .parent()
        .unwrap_or(Path::new("."))
        .join(super::RUN_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let record: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", path.display()))?;
    Ok(record
        .get("heading")
        .and_then(Value::as_str)
        .map(str::to_owned))
}

/// What a results file's directory holds about the native path, against the file: the
/// prompt's size against the upstream's own template (`native-prompt.jsonl`, written by
/// `e2e --bfcl`) and the time per case against `native.jsonl`'s, when they are there.
pub(crate) fn beside_native(results_path: &Path) -> Result<String, String> {
    let mut out = String::new();
    let dir = results_path.parent().unwrap_or(Path::new("."));
    let results = load_results(results_path)?;
    let counts = dir.join(super::native_prompt::FILE);
    if counts.is_file() {
        let native = super::native_prompt::load(&counts)?;
        out.push_str(&super::native_prompt::ratio_line(&results, &native));
    }
    let native_path = dir.join("native.jsonl");
    let is_native = results_path.file_name() == native_path.file_name();
    if !is_native && native_path.is_file() {
        let mean_time = |rs: &[Map<String, Value>]| {
            let t: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.get("time_s").and_then(Value::as_f64))
                .collect();
            (!t.is_empty()).then(|| t.iter().sum::<f64>() / t.len() as f64)
        };
        let native = load_results(&native_path)?;
        if let (Some(ours), Some(theirs)) = (mean_time(&results), mean_time(&native)) {
            let _ = writeln!(
                out,
                "time per case ÷ native ({}): {:.2}× ({ours:.2} s against {theirs:.2} s)",
                native_path.display(),
                ours / theirs
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_clear_errors() {
        let dir = std::env::temp_dir().join(format!("tam-eval-bfcl-score-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cases.jsonl");
        fs::write(&path, "\n{\"id\": \"a\"\n").unwrap();
        let err = load_cases(&path).unwrap_err();
        assert!(err.contains("cases.jsonl:2: not JSON"), "{err}");
        fs::write(&path, "[1]\n").unwrap();
        assert!(load_cases(&path).unwrap_err().contains("not a JSON object"));
        fs::write(&path, "{\"id\":\"a\",\"category\":\"simple\"}\n").unwrap();
        assert!(load_cases(&path).unwrap_err().contains("`messages`"));
        let _ = fs::remove_dir_all(&dir);
    }
}
