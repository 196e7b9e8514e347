//! The deterministic generator of the committed replies (`gen-corpora`).
//!
//! Each workload is a model reply assembled from hand-written pieces — sentences, code
//! snippets, tool calls — picked by a fixed-seed xorshift generator, so a rerun writes
//! the same bytes. Pieces are added until the next one would pass [`BASE_BYTES`].
//! Tokenising (o200k) is done by the binary; this module only writes text.

use crate::corpus::{BASE_BYTES, Workload};

/// A small deterministic random source (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (0 is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// One element of `items`.
    pub fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.range(0, items.len() - 1)]
    }

    /// True with probability `n / d`.
    pub fn chance(&mut self, n: u64, d: u64) -> bool {
        self.next_u64() % d < n
    }
}

const SENTENCES: &[&str] = &[
    "The request handler reads the configuration once at start-up and keeps it in an `Arc<Config>`.",
    "If the file is missing, the loader falls back to the defaults and logs a warning instead of failing.",
    "This matters because a client that retries on every error can turn a small outage into a large one.",
    "Note that `a < b` holds only when both values were normalised first; otherwise compare the raw bytes.",
    "The test suite covers the happy path, the empty input and the case where the stream ends early.",
    "A simpler option is to cache the parsed result and invalidate it when the source changes.",
    "I checked the logs from last night: the job started at 02:00 and stopped after 37 minutes.",
    "The second approach trades memory for speed, which is usually the right call for a hot path.",
    "You can keep the old endpoint for a release or two and mark it as deprecated in the changelog.",
    "In practice the bottleneck is rarely the parser; it is the network round trip to the model.",
    "The function returns `Result<Vec<String>, Error>`, so the caller decides what to do with a failure.",
    "Each worker takes a batch of 64 items, processes them in order and reports its progress.",
    "Those numbers come from a laptop, so treat them as a rough guide rather than a promise.",
    "The migration is reversible: the down script restores the column and copies the values back.",
    "For the UI, show a spinner while the tool runs and replace it with the result when it returns.",
    "Keep the error message short and specific, and say what the user can do about it.",
    "The HTML template escapes `<`, `>` and `&` before it inserts any value into the page.",
    "We could also stream the response, which lets the user read the first lines while the rest arrives.",
    "That edge case shows up when the input has a trailing newline and the last line is empty.",
    "The benchmark runs each case for three seconds and reports the median of twenty samples.",
    "Here is the short version: the cache was stale, the fix is to key it by version as well.",
    "A `HashMap<String, Vec<u32>>` is enough here; a database would be overkill for a few thousand keys.",
    "The schema requires `path` and treats `encoding` as optional, defaulting to UTF-8.",
    "When the queue is full, the producer waits instead of dropping messages on the floor.",
    "I would rename the flag to `--dry-run` so that it matches the other commands.",
    "The config accepts both `snake_case` and `camelCase` keys, which helps when people copy examples.",
    "Most of the time goes into the first request, which has to warm up the connection pool.",
    "As the docs put it, the timeout is a budget for the whole call, not for each retry.",
    "Make sure the path is absolute; relative paths resolve against the server's working directory.",
    "The old implementation copied the buffer on every chunk, which is why it slowed down on long replies.",
    "Let me know if you want the same change for the staging environment as well.",
    "Then run the formatter and the linter, and commit the result with a short message.",
];

const HEADINGS: &[&str] = &[
    "## What changed",
    "## Why it failed",
    "### Next steps",
    "## Summary",
    "### Details",
    "## How to test it",
];

const LIST_ITEMS: &[&str] = &[
    "- Update the dependency to the latest patch release.",
    "- Add a test for the empty input.",
    "- Remove the unused `legacy` module.",
    "- Document the new `max_retries` option (default: 3).",
    "- Check that `cargo test --workspace` passes.",
    "- Ask the team whether the old endpoint can go.",
    "1. Stop the service.",
    "2. Run the migration.",
    "3. Start the service and watch the logs for errors.",
];

const PATHS: &[&str] = &[
    "/home/user/project/src/main.rs",
    "/home/user/project/src/config.rs",
    "/home/user/project/README.md",
    "/srv/app/settings/production.toml",
    "/home/user/project/tests/integration.rs",
    "/var/log/app/server.log",
];

const QUERIES: &[&str] = &[
    "streaming parser benchmark",
    "tokio graceful shutdown example",
    "rust serde rename_all camelCase",
    "weather in Berlin tomorrow",
    "how to rotate logs with logrotate",
];

const CODE: &[&str] = &[
    r#"use std::collections::HashMap;

/// Counts the words of `text`, case-insensitively.
pub fn word_counts(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if !word.is_empty() {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        let counts = word_counts("a b A, b; c");
        assert_eq!(counts["a"], 2);
        assert_eq!(counts["b"], 2);
        assert_eq!(counts.get("d"), None);
    }
}
"#,
    r#"import asyncio
import json
from pathlib import Path


async def load_all(paths: list[Path]) -> dict[str, dict]:
    """Loads every JSON file concurrently; a file that fails is skipped with a warning."""
    async def one(path: Path):
        try:
            text = await asyncio.to_thread(path.read_text, encoding="utf-8")
            return path.stem, json.loads(text)
        except (OSError, json.JSONDecodeError) as exc:
            print(f"warning: {path}: {exc}")
            return None

    results = await asyncio.gather(*(one(p) for p in paths))
    return {name: data for name, data in filter(None, results)}


if __name__ == "__main__":
    files = sorted(Path("config").glob("*.json"))
    print(asyncio.run(load_all(files)))
"#,
    r#"export async function fetchWithRetry<T>(url: string, retries = 3): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt <= retries; attempt++) {
    try {
      const res = await fetch(url, { headers: { Accept: "application/json" } });
      if (res.status >= 500 && attempt < retries) {
        await new Promise((r) => setTimeout(r, 2 ** attempt * 100));
        continue;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
      return (await res.json()) as T;
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
"#,
    r#"impl<T: Ord> BinaryHeap<T> {
    pub fn push(&mut self, item: T) {
        self.data.push(item);
        let mut i = self.data.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.data[i] <= self.data[parent] {
                break;
            }
            self.data.swap(i, parent);
            i = parent;
        }
    }

    pub fn pop(&mut self) -> Option<T> {
        if self.data.is_empty() {
            return None;
        }
        let last = self.data.len() - 1;
        self.data.swap(0, last);
        let top = self.data.pop();
        self.sift_down(0);
        top
    }
}
"#,
    r#"#!/usr/bin/env bash
set -euo pipefail
for f in logs/*.log; do
  if [[ $(wc -l < "$f") -gt 10000 ]]; then
    gzip -9 "$f" && echo "compressed $f"
  fi
done
grep -E '^(ERROR|WARN)\|' logs/app.log | sort | uniq -c | sort -rn | head -20
"#,
    r#"SELECT u.id, u.name, COUNT(o.id) AS orders
FROM users AS u
LEFT JOIN orders AS o ON o.user_id = u.id AND o.created_at >= NOW() - INTERVAL '30 days'
WHERE u.active AND u.email NOT LIKE '%@example.com'
GROUP BY u.id, u.name
HAVING COUNT(o.id) > 0
ORDER BY orders DESC
LIMIT 50;
"#,
    r#"<template>
  <ul class="todo-list">
    <li v-for="item in items" :key="item.id" :class="{ done: item.done }">
      <input type="checkbox" v-model="item.done" />
      <span>{{ item.title }}</span>
    </li>
  </ul>
</template>
"#,
];

const CJK_SENTENCES: &[&str] = &[
    "这个函数在启动时读取一次配置，然后把它保存在共享的结构里。",
    "如果文件不存在，加载器会使用默认值，并记录一条警告，而不是直接报错。",
    "他说：「先把测试跑通，再考虑性能的问题。」大家都同意这个顺序。",
    "我查看了昨晚的日志：任务在凌晨两点开始，运行了三十七分钟后停止。",
    "第二种方案用内存换速度，对于热点路径来说通常是正确的选择。",
    "在实际使用中，瓶颈很少是解析器本身，而是与模型之间的网络往返。",
    "每个工作线程一次处理六十四个条目，按顺序完成后报告进度。",
    "这些数字来自一台笔记本电脑，所以只能作为粗略的参考。",
    "迁移是可逆的：回滚脚本会恢复这一列，并把数据复制回去。",
    "界面上，在工具运行时显示加载动画，返回结果后再替换掉。",
    "错误信息要简短、具体，并告诉用户可以怎么处理。",
    "书里写道：「流式输出让读者在其余内容到达之前就能开始阅读。」",
    "当输入以换行结尾、最后一行为空时，就会出现这个边界情况。",
    "简单来说：缓存过期了，修复方法是把版本号也加入缓存键。",
    "队列满了的时候，生产者会等待，而不是丢弃消息。",
    "大部分时间都花在第一个请求上，因为它需要预热连接池。",
    "请确认路径是绝对路径；相对路径会以服务器的工作目录为基准。",
    "旧的实现在每个数据块到达时都会复制整个缓冲区，所以长回复越来越慢。",
    "如果你希望在预发布环境中也做同样的修改，请告诉我。",
    "然后运行格式化工具和代码检查，并用一句简短的说明提交。",
    "「世界状态」里的天气字段每小时更新一次，角色会据此改变行为。",
    "酒馆老板放下酒杯，低声说道：「北边的山路昨夜又塌了。」",
];

const CJK_HEADINGS: &[&str] = &["## 修改内容", "## 失败原因", "### 下一步", "## 总结"];

/// Appends a paragraph of 3 to 6 sentences.
fn paragraph(out: &mut String, rng: &mut Rng, sentences: &[&str], joiner: &str) {
    let n = rng.range(3, 6);
    for i in 0..n {
        if i > 0 {
            out.push_str(joiner);
        }
        out.push_str(rng.pick(sentences));
    }
    out.push_str("\n\n");
}

/// Appends prose: a paragraph, sometimes after a heading or followed by a list.
fn english_prose(out: &mut String, rng: &mut Rng) {
    if rng.chance(1, 5) {
        out.push_str(rng.pick(HEADINGS));
        out.push_str("\n\n");
    }
    paragraph(out, rng, SENTENCES, " ");
    if rng.chance(1, 6) {
        for _ in 0..rng.range(2, 4) {
            out.push_str(rng.pick(LIST_ITEMS));
            out.push('\n');
        }
        out.push('\n');
    }
}

fn chinese_prose(out: &mut String, rng: &mut Rng) {
    if rng.chance(1, 5) {
        out.push_str(rng.pick(CJK_HEADINGS));
        out.push_str("\n\n");
    }
    paragraph(out, rng, CJK_SENTENCES, "");
}

/// Appends one TAM entry, `key:「始」value「末」`, on its own line.
fn entry(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push_str(":「始」");
    out.push_str(value);
    out.push_str("「末」\n");
}

/// A block of small calls, as an assistant doing research or file work writes them.
fn small_block(out: &mut String, rng: &mut Rng) {
    out.push_str("<|[REQUEST_TOOL]|>\n");
    match rng.range(0, 3) {
        0 => {
            entry(out, "command", "FileOperator.ReadFile");
            entry(out, "filePath", rng.pick(PATHS));
        }
        1 => {
            entry(out, "command", "WebSearch");
            entry(out, "query", rng.pick(QUERIES));
            entry(out, "max_results", "5");
        }
        2 => {
            out.push_str("# read the config, then the log\n");
            entry(out, "command1", "FileOperator.ReadFile");
            entry(out, "filePath1", rng.pick(PATHS));
            entry(out, "command2", "FileOperator.ReadFile");
            entry(out, "filePath2", rng.pick(PATHS));
        }
        _ => {
            entry(out, "command", "ReadWorldStateTool");
            out.push_str("path：「始」environment.weather.today「末」\n");
        }
    }
    out.push_str("<|[END_TOOL]|>\n\n");
}

/// A block whose values are code: a file write or a search-and-replace edit.
fn code_block(out: &mut String, rng: &mut Rng) {
    let code = rng.pick(CODE);
    out.push_str("<|[REQUEST_TOOL]|>\n");
    if rng.chance(1, 2) {
        entry(out, "command", "FileOperator.WriteFile");
        entry(out, "filePath", rng.pick(PATHS));
        entry(out, "content", code);
    } else {
        let lines: Vec<&str> = code.lines().collect();
        let cut = rng.range(1, lines.len().saturating_sub(1).max(1));
        entry(out, "command", "FileOperator.ApplyEdit");
        entry(out, "filePath", rng.pick(PATHS));
        entry(out, "search_string", &lines[..cut].join("\n"));
        entry(
            out,
            "replace_string",
            &lines[..cut].join("\n").replace("    ", "\t"),
        );
    }
    out.push_str("<|[END_TOOL]|>\n\n");
}

fn chinese_block(out: &mut String, rng: &mut Rng) {
    out.push_str("<|[REQUEST_TOOL]|>\n");
    if rng.chance(1, 2) {
        entry(out, "command", "KnowledgeBase.Search");
        entry(out, "查询", rng.pick(CJK_SENTENCES));
    } else {
        entry(out, "command", "PublishEventTool");
        entry(out, "event_type", "agent.action.completed");
        entry(
            out,
            "payload",
            &format!("{{\"摘要\": \"{}\"}}", rng.pick(CJK_SENTENCES)),
        );
    }
    out.push_str("<|[END_TOOL]|>\n\n");
}

/// Appends one unit (a paragraph or a block) of `workload`.
fn unit(out: &mut String, rng: &mut Rng, workload: Workload) {
    match workload {
        Workload::Prose => english_prose(out, rng),
        Workload::ProseTam => {
            if rng.chance(1, 4) {
                small_block(out, rng);
            } else {
                english_prose(out, rng);
            }
        }
        Workload::Code => {
            if rng.chance(1, 2) {
                code_block(out, rng);
            } else {
                paragraph(out, rng, SENTENCES, " ");
            }
        }
        Workload::Cjk => {
            if rng.chance(1, 5) {
                chinese_block(out, rng);
            } else {
                chinese_prose(out, rng);
            }
        }
    }
}

/// The reply of `workload`: units until the next would pass [`BASE_BYTES`].
pub fn reply(workload: Workload) -> String {
    let mut rng = Rng::new(0x7A11_0000 + workload as u64);
    let mut out = String::with_capacity(BASE_BYTES);
    let mut next = String::new();
    loop {
        next.clear();
        unit(&mut next, &mut rng, workload);
        if out.len() + next.len() > BASE_BYTES {
            return out;
        }
        out.push_str(&next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_deterministic_and_fill_the_base_size() {
        for w in Workload::ALL {
            let a = reply(w);
            assert_eq!(a, reply(w));
            assert!(
                a.len() <= BASE_BYTES && a.len() > BASE_BYTES - 4096,
                "{}: {}",
                w.name(),
                a.len()
            );
        }
    }

    #[test]
    fn tool_workloads_decode_to_blocks_without_errors() {
        for w in [Workload::ProseTam, Workload::Code, Workload::Cjk] {
            let events = tam_parse::decode(&reply(w), tam_parse::Config::default());
            let blocks: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    tam_parse::Event::Block(b) => Some(b),
                    _ => None,
                })
                .collect();
            assert!(blocks.len() > 10, "{}", w.name());
            for b in blocks {
                assert!(
                    b.diagnostics.is_empty(),
                    "{}: {:?}",
                    w.name(),
                    b.diagnostics
                );
                assert!(!b.calls.is_empty());
            }
        }
    }
}
