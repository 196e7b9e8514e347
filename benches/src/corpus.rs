//! The decoding workloads as committed in `benches/data/`, and messages of any size made
//! from them.
//!
//! Each workload is two files written by `gen-corpora`: `NAME.txt`, a 64 KiB model reply,
//! and `NAME.deltas`, the byte lengths of its token deltas (o200k tokens regrouped so that
//! every delta ends on a UTF-8 boundary), whitespace-separated. A message of n bytes is
//! the reply repeated and cut at a token boundary; the benchmarks use 1 KiB to 1 MiB.

use std::io;
use std::path::{Path, PathBuf};

use memchr::memmem;
use tam_parse::Dialect;

/// Size of each committed reply (at most; the generator stops at the last unit that fits).
pub const BASE_BYTES: usize = 64 * 1024;

/// Message sizes the benchmarks measure: 1 KiB to 1 MiB, ×4 each step.
pub const SIZES: [usize; 6] = [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20];

/// One kind of model reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// English prose with markdown, inline code and the odd `<`: no tool block.
    Prose,
    /// The same kind of prose with a TAM block every kilobyte or two (reads, searches,
    /// chained calls, comments).
    ProseTam,
    /// Short prose around TAM blocks whose values are source code (writes, edits).
    Code,
    /// Chinese prose (with `「」` quotes, as Chinese writes them) and TAM blocks with
    /// Chinese values.
    Cjk,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 4] = [
        Workload::Prose,
        Workload::ProseTam,
        Workload::Code,
        Workload::Cjk,
    ];

    /// The file stem and benchmark group suffix.
    pub const fn name(self) -> &'static str {
        match self {
            Workload::Prose => "prose",
            Workload::ProseTam => "prose_tam",
            Workload::Code => "code",
            Workload::Cjk => "cjk",
        }
    }

    /// The workload named `name`.
    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// The directory of the committed corpora (`benches/data`).
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// A committed reply and its token deltas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    /// The reply.
    pub text: String,
    /// Byte length of each token delta; they add up to `text.len()` and each ends on a
    /// character boundary.
    pub deltas: Vec<usize>,
}

impl Corpus {
    /// Reads `NAME.txt` and `NAME.deltas` of `workload` from `dir`.
    ///
    /// # Errors
    /// The files cannot be read, or the deltas do not cut the text at character boundaries.
    pub fn load_from(dir: &Path, workload: Workload) -> io::Result<Corpus> {
        let text = std::fs::read_to_string(dir.join(format!("{}.txt", workload.name())))?;
        let lengths = std::fs::read_to_string(dir.join(format!("{}.deltas", workload.name())))?;
        let deltas = lengths
            .split_ascii_whitespace()
            .map(|n| {
                n.parse::<usize>()
                    .map_err(|e| invalid(format!("delta length {n:?}: {e}")))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let corpus = Corpus { text, deltas };
        corpus.check().map_err(invalid)?;
        Ok(corpus)
    }

    /// Reads `workload` from [`data_dir`].
    ///
    /// # Errors
    /// As [`Corpus::load_from`].
    pub fn load(workload: Workload) -> io::Result<Corpus> {
        Corpus::load_from(&data_dir(), workload)
    }

    /// Writes `NAME.txt` and `NAME.deltas` to `dir`.
    ///
    /// # Errors
    /// The files cannot be written.
    pub fn save_to(&self, dir: &Path, workload: Workload) -> io::Result<()> {
        std::fs::write(dir.join(format!("{}.txt", workload.name())), &self.text)?;
        let mut lengths = String::new();
        for (i, n) in self.deltas.iter().enumerate() {
            lengths.push_str(&n.to_string());
            lengths.push(if i % 32 == 31 { '\n' } else { ' ' });
        }
        if !lengths.ends_with('\n') {
            lengths.push('\n');
        }
        std::fs::write(dir.join(format!("{}.deltas", workload.name())), lengths)
    }

    /// Checks that the deltas cover the text and end on character boundaries.
    ///
    /// # Errors
    /// What is wrong, in words.
    pub fn check(&self) -> Result<(), String> {
        let mut at = 0;
        for &n in &self.deltas {
            if n == 0 {
                return Err("empty delta".into());
            }
            at += n;
            if !self.text.is_char_boundary(at) {
                return Err(format!("delta ending at byte {at} splits a character"));
            }
        }
        if at != self.text.len() {
            return Err(format!("deltas cover {at} bytes of {}", self.text.len()));
        }
        Ok(())
    }

    /// A message of about `size` bytes: the reply repeated and cut at the last token
    /// boundary at or below `size` that lies outside a TAM block, or, if there is none in
    /// the upper half, at the last token boundary at or below `size`.
    pub fn message(&self, size: usize) -> Message {
        let copies = size.div_ceil(self.text.len().max(1)).max(1);
        let text = self.text.repeat(copies);
        let mut cuts = Vec::with_capacity(self.deltas.len() * copies + 1);
        cuts.push(0);
        let mut at = 0;
        for _ in 0..copies {
            for &n in &self.deltas {
                at += n;
                cuts.push(at);
            }
        }
        let blocks = block_ranges(&text);
        let outside = |p: usize| !blocks.iter().any(|b| b.0 < p && p < b.1);
        let below = cuts.partition_point(|&c| c <= size);
        let end = (1..below)
            .rev()
            .take_while(|&i| cuts[i] >= size / 2)
            .find(|&i| outside(cuts[i]))
            .unwrap_or(below.max(2) - 1);
        cuts.truncate(end + 1);
        let mut text = text;
        text.truncate(cuts[end]);
        Message { text, cuts }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The byte ranges of TAM blocks (start marker to end of end marker, or to the end of the
/// text for an open one).
fn block_ranges(text: &str) -> Vec<(usize, usize)> {
    let (start, end) = (Dialect::Tam.start_marker(), Dialect::Tam.end_marker());
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(s) = memmem::find(&bytes[at..], start.as_bytes()) {
        let s = at + s;
        let body = s + start.len();
        match memmem::find(&bytes[body..], end.as_bytes()) {
            Some(e) => {
                out.push((s, body + e + end.len()));
                at = body + e + end.len();
            }
            None => {
                out.push((s, bytes.len()));
                break;
            }
        }
    }
    out
}

/// A reply of a given size and its token deltas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The reply.
    pub text: String,
    /// Delta boundaries, from 0 to `text.len()`.
    cuts: Vec<usize>,
}

impl Message {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The token deltas, in order.
    pub fn token_deltas(&self) -> impl Iterator<Item = &str> + '_ {
        self.cuts.windows(2).map(|w| &self.text[w[0]..w[1]])
    }

    /// How many token deltas it has.
    pub fn delta_count(&self) -> usize {
        self.cuts.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Corpus {
        let text = "ab <|[REQUEST_TOOL]|>command:「始」X「末」<|[END_TOOL]|> cd 文字".to_owned();
        let mut deltas = Vec::new();
        let mut prev = 0;
        for (i, _) in text.char_indices().skip(1).step_by(3) {
            deltas.push(i - prev);
            prev = i;
        }
        deltas.push(text.len() - prev);
        Corpus { text, deltas }
    }

    #[test]
    fn messages_are_cut_at_token_boundaries_outside_blocks() {
        let corpus = toy();
        corpus.check().unwrap();
        let n = corpus.text.len();
        for size in [5, 30, n, n + 7, 3 * n] {
            let m = corpus.message(size);
            assert!(m.len() <= size, "{} > {size}", m.len());
            assert_eq!(m.token_deltas().collect::<String>(), m.text);
            let open = m.text.matches("<|[REQUEST_TOOL]|>").count();
            let closed = m.text.matches("<|[END_TOOL]|>").count();
            if m.len() >= size / 2 && size >= n {
                assert_eq!(open, closed, "cut inside a block at size {size}");
            }
        }
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = std::env::temp_dir().join(format!("tam-benches-corpus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let corpus = toy();
        corpus.save_to(&dir, Workload::Cjk).unwrap();
        assert_eq!(Corpus::load_from(&dir, Workload::Cjk).unwrap(), corpus);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn committed_corpora_are_valid() {
        for w in Workload::ALL {
            let corpus = Corpus::load(w).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
            let n = corpus.text.len();
            assert!(
                (BASE_BYTES - 4096..=BASE_BYTES).contains(&n),
                "{}: {n} bytes",
                w.name()
            );
        }
    }
}
