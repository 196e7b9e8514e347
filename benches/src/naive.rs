//! The baseline: re-parse the accumulated reply after every delta.
//!
//! This is what most LLM clients do today: append each delta to a `String`, then search
//! the whole buffer from the start for start and end markers and extract every complete
//! block (and its `key:「始」value「末」` entries) again. The searches are `memchr::memmem`
//! finders built once, so the baseline is as fast as that approach gets; its cost is the
//! re-reading, O(n) per delta and O(n² / delta size) per reply.

use memchr::memmem::Finder;
use tam_parse::{Dialect, VALUE_CLOSE, VALUE_OPEN};

/// What one extraction found in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extracted {
    /// Bytes of prose before, between and after complete blocks (up to an open block).
    pub prose_bytes: usize,
    /// Complete blocks.
    pub blocks: usize,
    /// Entries in those blocks.
    pub entries: usize,
    /// Whether a block is open at the end of the buffer.
    pub open_block: bool,
}

/// The marker searches, built once.
#[derive(Debug)]
pub struct Markers {
    start: Finder<'static>,
    end: Finder<'static>,
    open: Finder<'static>,
    close: Finder<'static>,
}

impl Markers {
    /// The finders of a dialect's markers.
    pub fn new(dialect: Dialect) -> Markers {
        Markers {
            start: Finder::new(dialect.start_marker()).into_owned(),
            end: Finder::new(dialect.end_marker()).into_owned(),
            open: Finder::new(VALUE_OPEN).into_owned(),
            close: Finder::new(VALUE_CLOSE).into_owned(),
        }
    }

    /// Extracts every complete block of `text`, from the start.
    pub fn extract(&self, text: &str) -> Extracted {
        let bytes = text.as_bytes();
        let (start_len, end_len) = (self.start.needle().len(), self.end.needle().len());
        let mut found = Extracted::default();
        let mut at = 0;
        while let Some(s) = self.start.find(&bytes[at..]) {
            let body = at + s + start_len;
            let Some(e) = self.end.find(&bytes[body..]) else {
                found.prose_bytes += s;
                found.open_block = true;
                return found;
            };
            found.prose_bytes += s;
            found.blocks += 1;
            found.entries += self.entries(&text[body..body + e]);
            at = body + e + end_len;
        }
        found.prose_bytes += bytes.len() - at;
        found
    }

    /// Counts the `key:「始」value「末」` entries of a block body with non-empty keys.
    fn entries(&self, body: &str) -> usize {
        let bytes = body.as_bytes();
        let mut n = 0;
        let mut at = 0;
        while let Some(o) = self.open.find(&bytes[at..]) {
            let key = body[at..at + o].trim().trim_end_matches([':', '：']).trim();
            let key = key.rsplit('\n').next().unwrap_or(key);
            let value = at + o + VALUE_OPEN.len();
            let Some(c) = self.close.find(&bytes[value..]) else {
                break;
            };
            if !key.is_empty() {
                n += 1;
            }
            at = value + c + VALUE_CLOSE.len();
        }
        n
    }
}

/// The accumulate-and-re-parse client.
#[derive(Debug)]
pub struct Reparser {
    markers: Markers,
    text: String,
}

impl Reparser {
    /// An empty reply.
    pub fn new(dialect: Dialect) -> Reparser {
        Reparser {
            markers: Markers::new(dialect),
            text: String::new(),
        }
    }

    /// Appends a delta and extracts everything again.
    pub fn push(&mut self, delta: &str) -> Extracted {
        self.text.push_str(delta);
        self.markers.extract(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_complete_blocks_and_entries() {
        let m = Markers::new(Dialect::Tam);
        let text = "hi <|[REQUEST_TOOL]|>\ncommand:「始」A「末」\npath：「始」x「末」\n<|[END_TOOL]|> bye <|[REQUEST_TOOL]|>";
        let found = m.extract(text);
        assert_eq!(found.blocks, 1);
        assert_eq!(found.entries, 2);
        assert!(found.open_block);
        assert_eq!(found.prose_bytes, "hi ".len() + " bye ".len());
    }

    #[test]
    fn reparser_sees_a_block_once_its_end_arrives() {
        let mut r = Reparser::new(Dialect::Tam);
        assert_eq!(
            r.push("a <|[REQUEST_TOOL]|>command:「始」A「末」<|[END")
                .blocks,
            0
        );
        assert_eq!(r.push("_TOOL]|> b").blocks, 1);
    }
}
