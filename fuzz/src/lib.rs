//! What the streaming fuzz targets share: the input layout (flags, split points, stream)
//! and the checks every decoder must pass whatever the input.
//!
//! # Input layout
//!
//! `[flags] [k] [k × u16 LE split points] [stream bytes …]`. `flags` picks the decoder's
//! settings (each target says how); the split points (each taken modulo the stream length
//! + 1) cut the stream into deltas. A short input falls back to no flags and no splits, so
//! any byte string is a valid input. Seeds (`fuzz/seeds/<target>/`) are golden inputs with
//! the two header bytes `00 00` in front.
//!
//! # Checks
//!
//! `tam_testkit::check_cuts`, the workspace's streaming test kit (the same decoders and
//! checks tam-parse's, action-xml's and tam's tests use). For every input, the events of the
//! stream fed whole (as bytes) are the reference:
//! - their spans — of text, block and top-level diagnostic events — tile `[0, n)` exactly;
//! - when the stream is UTF-8, each text event is exactly the input under its span;
//! - fed in the chosen byte deltas, fed as `&str` (whole, and cut at the split points moved
//!   back to character boundaries) and, when flag bit 7 is set, byte by byte, the events
//!   are the same once adjacent text events are merged (as they are collected).

pub use harnesses::{Action, ActionTools, Front, FrontTools, Tam, TamCut};
pub use tam_testkit::Harness;

/// The decoders' harnesses (the same the crates' tests use), in a module of their own so
/// their helper items do not meet this crate's.
mod harnesses {
    tam_testkit::tam_harness!();
    tam_testkit::action_harness!();
    tam_testkit::front_harness!();
}

/// Most split points read from an input.
const MAX_SPLITS: usize = 32;

/// Flag bit: also feed the stream one byte at a time.
pub const FLAG_BYTE_BY_BYTE: u8 = 0x80;

/// Flag bit (ACTION and mixed targets): the decoder is given [`BARE_TOOLS`], so a call
/// element of one of them written without `<ACTION>` is a call.
pub const FLAG_BARE_TOOLS: u8 = 0x40;

/// The offered tools' names under [`FLAG_BARE_TOOLS`]: names the seeds and the dictionary
/// use, and one-letter ones the fuzzer writes by chance.
pub const BARE_TOOLS: &[&str] = &[
    "get_weather",
    "read_file",
    "write_to_file",
    "estimate_population",
    "workflow:summarize_text",
    "a",
    "t",
    "x",
];

/// A fuzz input taken apart.
#[derive(Debug)]
pub struct Input<'a> {
    /// Settings bits (meaning per target; bit 7 is [`FLAG_BYTE_BY_BYTE`]).
    pub flags: u8,
    /// Delta boundaries: strictly increasing, from 0 to `stream.len()`.
    pub cuts: Vec<usize>,
    /// The model output.
    pub stream: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads the layout described in the crate documentation.
    pub fn parse(raw: &'a [u8]) -> Input<'a> {
        let (flags, rest) = match raw.split_first() {
            Some((&f, rest)) => (f, rest),
            None => (0, raw),
        };
        let (k, rest) = match rest.split_first() {
            Some((&k, rest)) => (usize::from(k) % (MAX_SPLITS + 1), rest),
            None => (0, rest),
        };
        let k = k.min(rest.len() / 2);
        let (points, stream) = rest.split_at(2 * k);
        let n = stream.len();
        let mut cuts: Vec<usize> = points
            .chunks_exact(2)
            .map(|p| usize::from(u16::from_le_bytes([p[0], p[1]])) % (n + 1))
            .collect();
        cuts.push(0);
        cuts.push(n);
        cuts.sort_unstable();
        cuts.dedup();
        if n == 0 {
            cuts = vec![0, 0];
        }
        Input {
            flags,
            cuts,
            stream,
        }
    }
}

/// Runs every check of the crate documentation on one input.
pub fn check<H: Harness>(harness: H, input: &Input<'_>) {
    tam_testkit::check_cuts(
        harness,
        input.stream,
        &input.cuts,
        input.flags & FLAG_BYTE_BY_BYTE != 0,
    );
}

/// The TAM decoder with settings from flag bits: bit 0 VCP dialect, bit 1 tiny limits.
pub fn tam(flags: u8) -> Tam {
    Tam(tam_config(flags))
}

/// The ACTION decoder with settings from flag bits: bit 1 tiny limits.
pub fn action(flags: u8) -> Action {
    Action(action_config(flags))
}

/// The decoder of both protocols (`tam::Decoder`) with settings from flag bits: bit 0 VCP
/// dialect, bit 1 tiny limits.
pub fn mixed(flags: u8) -> Front {
    let mut c = tam::Config::default();
    c.tam = tam_config(flags);
    c.action = action_config(flags);
    Front(c)
}

fn tam_config(flags: u8) -> tam_parse::Config {
    let dialect = if flags & 1 != 0 {
        tam_parse::Dialect::Vcp
    } else {
        tam_parse::Dialect::Tam
    };
    let mut c = tam_parse::Config::with_dialect(dialect);
    if flags & 2 != 0 {
        c.max_block_bytes = 24 + usize::from(flags & 0x3c) * 4;
        c.max_calls = 2;
        c.max_key_len = 6;
    }
    c
}

fn action_config(flags: u8) -> action_xml::Config {
    let mut c = action_xml::Config::default();
    if flags & 2 != 0 {
        c.max_block_bytes = 24 + usize::from(flags & 0x3c) * 4;
        c.max_depth = 3;
        c.max_nodes = 12;
    }
    c
}
