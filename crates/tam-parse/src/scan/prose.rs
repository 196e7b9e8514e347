//! The prose context: where in the markdown of the prose the scanner is, so that a start
//! marker the model *quotes* opens no block.
//!
//! The tracker sees every prose byte once, in order, and keeps a few counters:
//!
//! * **inline code**: a run of `n` backticks opens a code span that the next run of exactly
//!   `n` backticks on the same line closes (runs of another length inside it are content);
//!   a line break ends it. A marker inside an open span is quoted.
//! * **`>` lines**: a line whose first non-blank character is `>` is a quotation (an email,
//!   a message the user pasted): a marker on it is quoted.
//! * **fenced code blocks**: a line whose first non-blank text (indented by at most 3
//!   columns, a tab counting 4) is a run of 3 or more backticks or tildes opens a fence; the
//!   rest of that line is its info string. A line of at least as many of the same character
//!   (indented at most 3 columns) followed by blanks only closes it. Inside a fence there is
//!   no inline code and no quotation; a block there is a call, reported as fenced.
//! * whether the current line holds only blanks so far (`<think>` counts only there).
//!
//! Whatever is not prose (a block, reasoning) ends the line's inline code and quotation
//! and leaves the rest of the line as mid-line text; an open fence stays open.

use crate::diagnostic::Span;

/// Why a start marker was read as prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Quote {
    /// Inside inline code: an unclosed run of backticks earlier on its line.
    InlineCode,
    /// On a line whose first non-blank character is `>`.
    QuoteLine,
}

/// What the tracker says about the byte about to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Context {
    /// The byte would be quoted (a start marker there is prose).
    pub(super) quote: Option<Quote>,
    /// Only blanks precede the byte on its line, and no fence is open.
    pub(super) line_start: bool,
    /// Only blanks precede the byte on its line, whether a fence is open or not.
    pub(super) first_on_line: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Only blanks on the line so far; `indent` columns of them (capped).
    Start { indent: u8 },
    /// A run of `ch` at the start of the line, `n` long (capped), after `indent` columns.
    Run { ch: FenceChar, n: u8, indent: u8 },
    /// Inside a fence: a run long enough to close it, then blanks only so far.
    CloserTail,
    /// The rest of the line.
    Rest,
}

/// A fence character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FenceChar {
    Backtick,
    Tilde,
}

impl FenceChar {
    fn of(b: u8) -> Option<FenceChar> {
        match b {
            b'`' => Some(FenceChar::Backtick),
            b'~' => Some(FenceChar::Tilde),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    ch: FenceChar,
    n: u8,
    /// Where its opening line starts, and where that line ends (`usize::MAX` until known).
    line_start: usize,
    line_end: usize,
}

/// The prose context tracker (O(1) state). See the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProseContext {
    phase: Phase,
    /// Stream offset where the current line starts.
    line_at: usize,
    /// The line is a `>` quotation.
    quoted: bool,
    /// Length of the open inline code span's backtick run (0: none).
    code: u8,
    /// Backticks of the run being read mid-line.
    run: u8,
    fence: Option<Fence>,
}

impl Default for ProseContext {
    fn default() -> Self {
        ProseContext {
            phase: Phase::Start { indent: 0 },
            line_at: 0,
            quoted: false,
            code: 0,
            run: 0,
            fence: None,
        }
    }
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

impl ProseContext {
    /// Reads prose `text`, which begins at stream offset `at`.
    pub(super) fn feed(&mut self, text: &[u8], at: usize) {
        let mut i = 0;
        while i < text.len() {
            // Fast path: mid-line, nothing pending, only a few bytes matter.
            if self.phase == Phase::Rest && self.run == 0 {
                let skip = if self.fence.is_some() || self.quoted {
                    memchr::memchr(b'\n', &text[i..])
                } else {
                    memchr::memchr2(b'`', b'\n', &text[i..])
                };
                match skip {
                    Some(k) => i += k,
                    None => return,
                }
            }
            self.byte(text[i], at + i);
            i += 1;
        }
    }

    /// Something that is not prose ended at `end`: mid-line text, no inline code, no
    /// quotation; a fence stays open.
    pub(super) fn interrupt(&mut self) {
        self.phase = Phase::Rest;
        self.quoted = false;
        self.code = 0;
        self.run = 0;
    }

    /// The context of a byte `b` about to be read at stream offset `at` (a marker's or a
    /// tag's first byte, never a backtick, a blank or a line break).
    pub(super) fn before(&self, b: u8, at: usize) -> Context {
        let mut t = *self;
        t.byte(b, at);
        let quote = if t.fence.is_some() {
            None
        } else if t.quoted {
            Some(Quote::QuoteLine)
        } else if t.code > 0 {
            Some(Quote::InlineCode)
        } else {
            None
        };
        let first_on_line = matches!(self.phase, Phase::Start { .. });
        let line_start = self.fence.is_none() && first_on_line;
        Context {
            quote,
            line_start,
            first_on_line,
        }
    }

    /// The open fence's opening line, to `at` when `at` is still on it.
    pub(super) fn fence_span(&self, at: usize) -> Option<Span> {
        self.fence
            .map(|f| Span::new(f.line_start, f.line_end.min(at.max(f.line_start))))
    }

    fn newline(&mut self, at: usize) {
        if let Some(f) = &mut self.fence
            && f.line_end == usize::MAX
        {
            f.line_end = at;
        }
        self.phase = Phase::Start { indent: 0 };
        self.line_at = at + 1;
        self.quoted = false;
        self.code = 0;
        self.run = 0;
    }

    /// A mid-line backtick run ends (outside a fence).
    fn end_run(&mut self) {
        if self.run > 0 {
            if self.code == 0 {
                self.code = self.run;
            } else if self.code == self.run {
                self.code = 0;
            }
            self.run = 0;
        }
    }

    fn byte(&mut self, b: u8, at: usize) {
        match self.phase {
            Phase::Start { indent } => match b {
                b'\n' => self.newline(at),
                b' ' | b'\r' => {
                    self.phase = Phase::Start {
                        indent: indent.saturating_add(1),
                    }
                }
                b'\t' => {
                    self.phase = Phase::Start {
                        indent: indent.saturating_add(4),
                    }
                }
                b'`' | b'~' => {
                    self.phase = Phase::Run {
                        ch: FenceChar::of(b).unwrap_or(FenceChar::Tilde),
                        n: 1,
                        indent,
                    }
                }
                b'>' if self.fence.is_none() => {
                    self.quoted = true;
                    self.phase = Phase::Rest;
                }
                _ => self.phase = Phase::Rest,
            },
            Phase::Run { ch, n, indent } => {
                if FenceChar::of(b) == Some(ch) {
                    self.phase = Phase::Run {
                        ch,
                        n: n.saturating_add(1),
                        indent,
                    };
                    return;
                }
                let fence_run = n >= 3 && indent <= 3;
                match self.fence {
                    Some(f) => {
                        if fence_run && ch == f.ch && n >= f.n {
                            // A closing fence line if only blanks follow.
                            self.phase = Phase::CloserTail;
                            self.byte(b, at);
                        } else {
                            self.phase = Phase::Rest;
                            if b == b'\n' {
                                self.newline(at);
                            }
                        }
                    }
                    None if fence_run => {
                        self.fence = Some(Fence {
                            ch,
                            n,
                            line_start: self.line_at,
                            line_end: usize::MAX,
                        });
                        self.phase = Phase::Rest;
                        if b == b'\n' {
                            self.newline(at);
                        }
                    }
                    None => {
                        // Not a fence: a backtick run is inline code; tildes are text.
                        self.phase = Phase::Rest;
                        if ch == FenceChar::Backtick {
                            self.run = n;
                        }
                        self.byte(b, at);
                    }
                }
            }
            Phase::CloserTail => match b {
                b'\n' => {
                    self.fence = None;
                    self.newline(at);
                }
                b if is_blank(b) => {}
                _ => self.phase = Phase::Rest,
            },
            Phase::Rest => {
                if b == b'\n' {
                    self.newline(at);
                } else if self.fence.is_none() && !self.quoted {
                    if b == b'`' {
                        self.run = self.run.saturating_add(1);
                    } else {
                        self.end_run();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct At {
        quote: Option<Quote>,
        fence: Option<Span>,
        line_start: bool,
    }

    fn at_end(text: &str) -> At {
        let mut t = ProseContext::default();
        t.feed(text.as_bytes(), 0);
        // Byte by byte: the same.
        let mut b = ProseContext::default();
        for (i, c) in text.bytes().enumerate() {
            b.feed(&[c], i);
        }
        assert_eq!(b, t, "{text:?}");
        let ctx = t.before(b'<', text.len());
        // The marker's first byte read, as when a block opens.
        t.feed(b"<", text.len());
        At {
            quote: ctx.quote,
            fence: t.fence_span(text.len()),
            line_start: ctx.line_start,
        }
    }

    #[test]
    fn inline_code_runs() {
        assert_eq!(at_end("Never write `").quote, Some(Quote::InlineCode));
        assert_eq!(at_end("a `x` ").quote, None);
        assert_eq!(at_end("a ``x ` y ").quote, Some(Quote::InlineCode));
        assert_eq!(at_end("a ``x ` y `` ").quote, None);
        assert_eq!(
            at_end("a `x\n").quote,
            None,
            "a line break ends inline code"
        );
        assert_eq!(at_end("``").quote, Some(Quote::InlineCode));
    }

    #[test]
    fn quote_lines() {
        assert_eq!(at_end("> Please run ").quote, Some(Quote::QuoteLine));
        assert_eq!(at_end("  >").quote, Some(Quote::QuoteLine));
        assert_eq!(at_end("a > b ").quote, None);
        assert_eq!(at_end("> a\nb ").quote, None);
    }

    #[test]
    fn fences() {
        let c = at_end("```xml\n");
        assert_eq!(c.fence, Some(Span::new(0, 6)));
        assert_eq!(c.quote, None);
        assert!(!c.line_start);
        assert_eq!(at_end("x\n  ~~~~\n> `").fence, Some(Span::new(2, 8)));
        assert_eq!(at_end("```\na\n```\n").fence, None);
        assert_eq!(at_end("```\na\n`````  \n").fence, None);
        assert!(at_end("```\na\n``` x\n").fence.is_some());
        assert!(at_end("~~~\na\n```\n").fence.is_some());
        assert!(at_end("````\na\n```\n").fence.is_some());
        assert_eq!(at_end("    ```\n").fence, None, "indented 4: not a fence");
        assert_eq!(at_end("```").fence, Some(Span::new(0, 3)));
        assert_eq!(at_end("a ```").quote, Some(Quote::InlineCode));
    }

    #[test]
    fn line_start() {
        assert!(at_end("").line_start);
        assert!(at_end("a\n  \t").line_start);
        assert!(!at_end("a ").line_start);
        assert!(!at_end("```\n").line_start);
    }
}
