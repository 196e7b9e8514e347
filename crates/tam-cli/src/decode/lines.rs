//! Splits an input that arrives in chunks of any size into lines, for `--input deltas`
//! (`--input sse` is read by tool-dispatch's SSE reader).
//!
//! Each byte is looked at once: a line that lies within one chunk is handed over as a
//! slice of that chunk; only the unfinished tail of a chunk is copied, into one buffer.
//! A line ends at `\n`; a `\r` before it is removed (SSE allows `\r\n`).

/// The longest line kept, in bytes: a longer one is skipped (reported once) up to its
/// line break, so memory stays bounded whatever the input. Default of
/// [`LineSplitter::new`]: 8 MiB, far above any real delta or SSE event.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;

/// A piece of framed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A complete line, without its line break.
    Complete {
        /// 1-based line number.
        number: usize,
        /// The line's bytes (not necessarily UTF-8).
        bytes: &'a [u8],
    },
    /// A line longer than the limit; its bytes are dropped.
    TooLong {
        /// 1-based line number.
        number: usize,
        /// The limit it exceeded.
        limit: usize,
    },
}

/// Whether the reader of lines wants more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on.
    Continue,
    /// Stop reading: the input is complete (`data: [DONE]`) or the output failed.
    Stop,
}

/// The line state carried from one chunk to the next.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    /// The unfinished line from earlier chunks.
    partial: Vec<u8>,
    /// Number of the line being read.
    number: usize,
    /// The line being read is over the limit and is being skipped.
    skipping: bool,
    max_line_bytes: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        LineSplitter::new(MAX_LINE_BYTES)
    }
}

impl LineSplitter {
    /// A splitter that skips lines longer than `max_line_bytes`.
    pub(crate) fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            partial: Vec::new(),
            number: 1,
            skipping: false,
            max_line_bytes,
        }
    }

    /// Hands every line `chunk` completes to `on_line`, in order, until it says
    /// [`Flow::Stop`]; keeps the unfinished tail.
    pub(crate) fn push(&mut self, chunk: &[u8], mut on_line: impl FnMut(Line<'_>) -> Flow) -> Flow {
        let mut rest = chunk;
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = (&rest[..newline], &rest[newline + 1..]);
            rest = tail;
            let flow = if self.skipping {
                self.skipping = false;
                Flow::Continue
            } else if self.partial.is_empty() {
                self.hand_over(head, &mut on_line)
            } else if self.partial.len() + head.len() > self.max_line_bytes {
                self.partial.clear();
                on_line(self.too_long())
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                let flow = self.hand_over(&line, &mut on_line);
                // Keep the allocation for the next unfinished line.
                line.clear();
                self.partial = line;
                flow
            };
            self.number += 1;
            if flow == Flow::Stop {
                return Flow::Stop;
            }
        }
        if self.skipping {
            return Flow::Continue;
        }
        if self.partial.len() + rest.len() > self.max_line_bytes {
            self.partial.clear();
            self.skipping = true;
            return on_line(self.too_long());
        }
        self.partial.extend_from_slice(rest);
        Flow::Continue
    }

    /// Ends the input: hands over a last line that has no line break.
    pub(crate) fn finish(&mut self, mut on_line: impl FnMut(Line<'_>) -> Flow) -> Flow {
        if self.partial.is_empty() {
            return Flow::Continue;
        }
        let line = std::mem::take(&mut self.partial);
        self.hand_over(&line, &mut on_line)
    }

    fn hand_over(&self, line: &[u8], on_line: &mut impl FnMut(Line<'_>) -> Flow) -> Flow {
        if line.len() > self.max_line_bytes {
            return on_line(self.too_long());
        }
        let bytes = line.strip_suffix(b"\r").unwrap_or(line);
        on_line(Line::Complete {
            number: self.number,
            bytes,
        })
    }

    fn too_long(&self) -> Line<'static> {
        Line::TooLong {
            number: self.number,
            limit: self.max_line_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `chunks`, as text (`!N` for a line skipped as too long).
    fn split(max: usize, chunks: &[&str]) -> Vec<String> {
        let mut splitter = LineSplitter::new(max);
        let mut seen = Vec::new();
        let mut record = |line: Line<'_>| {
            seen.push(match line {
                Line::Complete { number, bytes } => {
                    format!("{number}:{}", String::from_utf8_lossy(bytes))
                }
                Line::TooLong { number, .. } => format!("!{number}"),
            });
            Flow::Continue
        };
        for chunk in chunks {
            splitter.push(chunk.as_bytes(), &mut record);
        }
        splitter.finish(&mut record);
        seen
    }

    #[test]
    fn every_split_of_the_input_gives_the_same_lines() {
        let input = "data: a\r\n\nsecond line\nlast";
        let whole = split(64, &[input]);
        assert_eq!(whole, ["1:data: a", "2:", "3:second line", "4:last"]);
        for cut in 0..=input.len() {
            assert_eq!(
                split(64, &[&input[..cut], &input[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
        let bytewise: Vec<&str> = (0..input.len()).map(|i| &input[i..=i]).collect();
        assert_eq!(split(64, &bytewise), whole);
    }

    #[test]
    fn a_line_over_the_limit_is_reported_once_and_skipped() {
        assert_eq!(split(4, &["ok\ntoo long\nok2\n"]), ["1:ok", "!2", "3:ok2"]);
        assert_eq!(
            split(4, &["ok\ntoo", " long", " still\nok2"]),
            ["1:ok", "!2", "3:ok2"]
        );
        assert_eq!(split(4, &["abc", "de\nf"]), ["!1", "2:f"]);
        assert_eq!(
            split(4, &["abcd\n"]),
            ["1:abcd"],
            "the limit itself is allowed"
        );
    }

    #[test]
    fn stop_ends_the_push_at_once() {
        let mut splitter = LineSplitter::default();
        let mut seen = 0;
        let flow = splitter.push(b"a\nb\nc\n", |_| {
            seen += 1;
            if seen == 2 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        });
        assert_eq!((flow, seen), (Flow::Stop, 2));
    }
}
