//! Markdown code fences (```` ```xml ```` … ```` ``` ````) that models put inside ACTION
//! blocks. (A fence around a block is the scanner's: tam-parse tracks fences in the prose
//! and reports the block as fenced, warning `fenced_block`.)
//!
//! A fence line is optional blanks, three or more backticks or tildes, an optional info
//! word (`xml`, `html`, …) and optional blanks.

use std::ops::Range;

/// Classifies one line as it streams in, stopping early once it cannot be a fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum LineState {
    /// Only blanks so far.
    #[default]
    Blank,
    /// Fence characters so far (`ch`, `n` of them) after blanks.
    Ticks { ch: u8, n: u8 },
    /// A complete fence run, then blanks.
    AfterTicks,
    /// The info word.
    Info,
    /// Blanks after the info word.
    AfterInfo,
    /// Anything else.
    Other,
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

fn is_info(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'.' | b'#')
}

impl LineState {
    fn feed(mut self, bytes: &[u8]) -> LineState {
        for &b in bytes {
            self = match self {
                LineState::Other => return LineState::Other,
                LineState::Blank if is_blank(b) => LineState::Blank,
                LineState::Blank if b == b'`' || b == b'~' => LineState::Ticks { ch: b, n: 1 },
                LineState::Ticks { ch, n } if b == ch => LineState::Ticks {
                    ch,
                    n: n.saturating_add(1),
                },
                LineState::Ticks { n, .. } if n >= 3 && is_blank(b) => LineState::AfterTicks,
                LineState::Ticks { n, .. } if n >= 3 && is_info(b) => LineState::Info,
                LineState::AfterTicks if is_blank(b) => LineState::AfterTicks,
                LineState::AfterTicks | LineState::Info if is_info(b) => LineState::Info,
                LineState::Info | LineState::AfterInfo if is_blank(b) => LineState::AfterInfo,
                LineState::Blank
                | LineState::Ticks { .. }
                | LineState::AfterTicks
                | LineState::Info
                | LineState::AfterInfo => LineState::Other,
            };
        }
        self
    }

    fn is_fence(self) -> bool {
        match self {
            LineState::Ticks { n, .. } => n >= 3,
            LineState::AfterTicks | LineState::Info | LineState::AfterInfo => true,
            LineState::Blank | LineState::Other => false,
        }
    }
}

/// True when `line` (without its line break) is a fence line.
pub(crate) fn is_fence_line(line: &str) -> bool {
    LineState::Blank.feed(line.as_bytes()).is_fence()
}

/// Fence lines at the very start and end of a block body (the only places a model puts
/// them): their ranges in `body`, without line breaks.
pub(crate) fn fences_in_body(body: &str) -> (Option<Range<usize>>, Option<Range<usize>>) {
    let bytes = body.as_bytes();
    // First non-blank line.
    let mut start = 0;
    let mut first = None;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let state = LineState::Blank.feed(&bytes[start..end]);
        if state != LineState::Blank {
            if state.is_fence() {
                first = Some(start..end);
            }
            break;
        }
        start = end + 1;
    }
    // Last non-blank line, not the same as the first.
    let mut end = bytes.len();
    let mut last = None;
    loop {
        let start = memchr::memrchr(b'\n', &bytes[..end]).map_or(0, |i| i + 1);
        let state = LineState::Blank.feed(&bytes[start..end]);
        if state != LineState::Blank {
            let after = first.as_ref().is_none_or(|f| start >= f.end);
            if state.is_fence() && after {
                last = Some(start..end);
            }
            break;
        }
        if start == 0 {
            break;
        }
        end = start - 1;
    }
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_lines() {
        for yes in ["```", "```xml", "  ~~~ html ", "````", "```xml\r"] {
            assert!(is_fence_line(yes), "{yes:?}");
        }
        for no in ["``", "", "   ", "```x y", "text ```", "``x"] {
            assert!(!is_fence_line(no), "{no:?}");
        }
    }

    #[test]
    fn body_fences() {
        let body = "\n```xml\n<a/>\n```\n";
        let (first, last) = fences_in_body(body);
        assert_eq!(&body[first.unwrap()], "```xml");
        assert_eq!(&body[last.unwrap()], "```");
        assert_eq!(fences_in_body("\n<a/>\n"), (None, None));
        let (first, last) = fences_in_body("```");
        assert_eq!((first, last), (Some(0..3), None));
    }
}
