//! Arguments that stream: calls, parameters and pieces of parameter values
//! reported while the block is still being written, driven by the scanner's
//! `block_progress` hook.
//!
//! The streamer reads the block buffer once, left to right, up to what the scanner has
//! settled, and keeps its place between deltas: the work over a block is O(n) however it
//! is split. It is a light reading of the structure, not the parser: the closed block
//! ([`crate::Event::Block`]) stays authoritative.
//!
//! * Nothing streams unless the body begins with an element's start tag, blanks and a
//!   leading code fence line aside ([`Start`]): the rule by which a block the stream ends
//!   in is a prose mention, decided on the body's first bytes whatever the deltas (a
//!   comment or CDATA section first is no exception).
//! * Between calls, an element's start tag is a call: [`Event::CallStart`] once the tag is
//!   complete; its close tag (also in another case, as the pre-scan's case repair reads
//!   it) is [`Event::CallEnd`]. An `<ACTION>` tag there (the block's own `<ACTION>` was
//!   prose) is passed over; its children are calls.
//! * Inside a call, an element's start tag is a parameter: [`Event::ParamStart`]. Its
//!   content streams as [`Event::ParamText`] pieces until its close tag (a start tag of
//!   the same name inside it nests, so `<p><p>x</p></p>` ends at the second `</p>`), then
//!   [`Event::ParamEnd`].
//! * A close tag with blanks between `</` and its name (`</ name>`) whose name is the open
//!   call's or parameter's, also in another case, is its close tag, as the pre-scan's
//!   `noncanonical_tag` repair reads it; any other is what it was before that repair.
//! * The call's close tag inside a parameter's value (as written, in another case or with
//!   blanks) ends the parameter, never closed, and then the call ([`Event::ParamEnd`] with
//!   its span up to the tag, [`Event::CallEnd`]) where the pre-scan's `missing_close_tag`
//!   repair does: the elements opened in the value are closed and no close tag in it
//!   matched nothing (the value's tags are read as the pre-scan reads them, only when such
//!   a tag comes: [`ValueTags`]). Elsewhere it is text, as before that repair.
//! * The pieces are the content **as written, markup included**, with entity and
//!   character references decoded (a decoded reference is a piece of its own, not
//!   borrowed from the block), CDATA
//!   sections' content verbatim without their markers (flagged `cdata`), comments dropped,
//!   line ends in text read as XML reads them (`\r\n` and a lone `\r` are `\n`, a piece
//!   of their own; CDATA content keeps them as written). So for a string value the pieces through
//!   [`crate::ValueEdges`] are the value; for code with tags they are the code; for an
//!   object or array parameter they are its child elements' markup, and its value is in the
//!   block.
//! * Text that needs no decoding is borrowed from the block buffer: no allocation per
//!   delta. A possible reference or close tag cut by the delta's end waits for the next.
//! * A call or parameter still open when the block ends gets no end event: what the model
//!   did not finish never ends.

use std::borrow::Cow;
use std::ops::Range;

use tam_parse::Span;

use crate::event::Event;
use crate::fence::is_fence_line;
use crate::prescan::{RegionKind, RegionRef};
use crate::xml_chars::{is_xml_space, reference_len};

mod emit;
mod read;
mod stops;
mod value_tags;

use emit::Emit;
use stops::{Short, short_stop, short_stop_by_mask};
use value_tags::ValueTags;

/// Where the streamer is in the block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum State {
    /// Between calls.
    #[default]
    Top,
    /// Inside a call: the call's index, name and open tag start.
    Call {
        index: usize,
        name: Range<usize>,
        start: usize,
    },
    /// Inside a parameter value.
    Param {
        call: (usize, Range<usize>, usize),
        name: Range<usize>,
        start: usize,
        /// Where the value begins (its start tag's end).
        body: usize,
        /// Open elements of the parameter's own name (1 for the parameter itself).
        same: usize,
        /// The value's tags as the pre-scan reads them, read when the call's close tag
        /// comes inside the value (none until then: boxed, they keep the state small).
        tags: Option<Box<ValueTags>>,
    },
}

/// The streaming reader of one open block.
#[derive(Debug, Clone, Default)]
pub(crate) struct Streamer {
    /// Buffer offset read up to.
    pos: usize,
    state: State,
    calls: usize,
    /// Index into the block's regions of the next one not yet passed.
    next_region: usize,
    /// What the start of the body says: nothing streams before it is known to be an
    /// element, nor ever when it is not (see [`Start`]).
    start: Start,
}

/// How the body of the block begins: the rule that makes a block the stream ended in a
/// prose mention (`marker_in_prose`): its body does not begin with an element's
/// start tag, blanks and a leading code fence line aside. The streamer applies the same
/// rule to the same bytes, so a block later read as prose never streamed anything, and the
/// decision is taken on the body's first bytes alone, whatever the deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Skipping XML whitespace from buffer offset `from`; `fenced` once a code fence line
    /// was passed (only the first non-blank line may be one).
    Blanks { from: usize, fenced: bool },
    /// The first non-blank line starts at `line` with a backtick or a tilde: a code fence
    /// line if it is one when its line break comes (none up to `scanned`).
    Fence { line: usize, scanned: usize },
    /// The body begins with an element: it streams.
    Element,
    /// The body begins with anything else (prose, a comment, CDATA, a close tag, …): maybe
    /// a mention of `<ACTION>` in prose; nothing of it streams.
    Prose,
}

impl Default for Start {
    fn default() -> Self {
        Start::Blanks {
            from: 0,
            fenced: false,
        }
    }
}

/// How a look at a `<` or `&` at the read position ended.
enum Look {
    /// Decided: go on at this offset.
    Next(usize),
    /// Cannot be decided before more of the block arrives.
    Wait,
}

/// A `<` with no `>` this far is text: tags are short, and this bounds what is looked at
/// again when a delta ends inside one.
const MAX_TAG: usize = 4096;

/// Up to this many new bytes, [`Streamer::advance`] looks at them one by one for a `<` or
/// `&` before taking the general way.
const SHORT_PIECE: usize = 64;

/// Below this many new bytes, [`Streamer::advance`] looks at each for a `<`, `&` or `\r`
/// before it looks for a stop.
const QUIET_LOOK: usize = 16;

impl Streamer {
    /// True while the streamer has handed out nothing of its block (no call began): read
    /// from the start instead, it would give every event of the block.
    pub(crate) fn untouched(&self) -> bool {
        self.calls == 0 && self.state == State::Top
    }

    /// Starts on a block whose body begins at buffer offset `body_start`.
    pub(crate) fn new(body_start: usize) -> Self {
        Streamer {
            pos: body_start,
            start: Start::Blanks {
                from: body_start,
                fenced: false,
            },
            ..Streamer::default()
        }
    }

    /// Takes [`Start`] as far as `b[..settled]` allows. The work is O(n) over the block:
    /// every byte is looked at once (a fence line's once more, when its line break comes).
    fn decide_start(&mut self, buf: &str, settled: usize) {
        let b = buf.as_bytes();
        loop {
            match self.start {
                Start::Element | Start::Prose => return,
                Start::Blanks { from, fenced } => {
                    let from = from.min(settled);
                    let Some(at) = b[from..settled]
                        .iter()
                        .position(|&c| !is_xml_space(c))
                        .map(|i| from + i)
                    else {
                        self.start = Start::Blanks {
                            from: settled,
                            fenced,
                        };
                        return;
                    };
                    self.start = match b[at] {
                        b'`' | b'~' if !fenced => Start::Fence {
                            line: at,
                            scanned: at,
                        },
                        b'<' => match b.get(at + 1).filter(|_| at + 1 < settled) {
                            None => {
                                // The next byte decides.
                                self.start = Start::Blanks { from: at, fenced };
                                return;
                            }
                            Some(&c) if c >= 0x80 || c == b'_' || c.is_ascii_alphabetic() => {
                                Start::Element
                            }
                            Some(_) => Start::Prose,
                        },
                        _ => Start::Prose,
                    };
                }
                Start::Fence { line, scanned } => {
                    let scanned = scanned.min(settled);
                    let Some(end) =
                        memchr::memchr(b'\n', &b[scanned..settled]).map(|i| scanned + i)
                    else {
                        self.start = Start::Fence {
                            line,
                            scanned: settled,
                        };
                        return;
                    };
                    self.start = if is_fence_line(&buf[line..end]) {
                        Start::Blanks {
                            from: end,
                            fenced: true,
                        }
                    } else {
                        Start::Prose
                    };
                }
            }
        }
    }

    /// Reads `buf[..settled]` on from where it stopped. `regions` are the block's closed
    /// regions so far and `open_region` the one open (kind, opener start); `span` turns
    /// buffer ranges into stream spans.
    #[inline(always)]
    pub(crate) fn advance(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        // A token-sized delta inside a value, the common case: no region open or waiting,
        // and nothing in what arrived that needs a look — no `<`, `&` or `\r`, or only
        // ones that are text as they stand (code's `a < b`, `&self`, `Vec<u8>`: what
        // [`next_stop_in_value`] passes over). It is one piece, borrowed — what the loop
        // of [`Streamer::read`] would hand out, for a look at a few bytes.
        if self.start == Start::Element
            && let State::Param {
                name: own, call, ..
            } = &self.state
            && self.next_region == regions.len()
            && open_region.is_none()
        {
            let settled = settled.min(buf.len());
            if self.pos >= settled {
                return;
            }
            let b = buf.as_bytes();
            let new = &b[self.pos..settled];
            // A few bytes are looked at one by one first; past that, most pieces of code
            // hold a `<` or `&`, and the look for a stop is the one to make.
            let quiet = |new: &[u8]| !new.iter().any(|&c| matches!(c, b'<' | b'&' | b'\r'));
            // [`QUIET_LOOK`] to [`SHORT_PIECE`] new bytes: [`Streamer::advance_on`]'s
            // short path, out of line.
            if new.len() < QUIET_LOOK {
                let to = if quiet(new) {
                    settled
                } else {
                    let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
                    match short_stop(&b[..settled], self.pos, names) {
                        Short::To(to) => to,
                        Short::Reference(at) => {
                            return self.advance_references(
                                at,
                                buf,
                                settled,
                                regions,
                                open_region,
                                span,
                                out,
                            );
                        }
                        Short::General => {
                            return self.advance_general(
                                buf,
                                settled,
                                regions,
                                open_region,
                                span,
                                out,
                            );
                        }
                    }
                };
                return self.text_to(buf, to, span, out);
            }
        }
        self.advance_on(buf, settled, regions, open_region, span, out);
    }

    /// The value's text from `self.pos` up to `to` as one borrowed [`Event::ParamText`]
    /// (none when it is empty), and `self.pos` moved there: the short paths' one emit.
    #[inline(always)]
    fn text_to(
        &mut self,
        buf: &str,
        to: usize,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if to > self.pos {
            out(Event::ParamText {
                text: Cow::Borrowed(&buf[self.pos..to]),
                span: span(self.pos..to),
                cdata: false,
            });
        }
        self.pos = to;
    }

    /// The short path of [`Streamer::advance`] for [`QUIET_LOOK`] to [`SHORT_PIECE`] new
    /// bytes inside a value (`settled` is within `buf`), its stops from one mask
    /// ([`short_stop_by_mask`]): what the short path did with [`short_stop`].
    fn advance_by_mask(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let b = buf.as_bytes();
        let State::Param {
            name: own, call, ..
        } = &self.state
        else {
            return self.advance_general(buf, settled, regions, open_region, span, out);
        };
        let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
        let to = match short_stop_by_mask(&b[..settled], self.pos, names) {
            Short::To(to) => to,
            Short::Reference(at) => {
                return self.advance_references(at, buf, settled, regions, open_region, span, out);
            }
            Short::General => {
                return self.advance_general(buf, settled, regions, open_region, span, out);
            }
        };
        self.text_to(buf, to, span, out);
    }

    /// [`Streamer::advance`] from a whole reference at `at` in a token-sized delta inside
    /// a value: the text before it, then its decoded piece, as [`Streamer::reference`]
    /// gives them, and on to the next stop the same way — the general way's set-up only
    /// for a stop that is not a reference. Out of line, so that the common case in
    /// [`Streamer::advance`] stays small.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn advance_references(
        &mut self,
        mut at: usize,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let b = &buf.as_bytes()[..settled];
        let State::Param {
            name: own, call, ..
        } = &self.state
        else {
            return self.advance_general(buf, settled, regions, open_region, span, out);
        };
        let names = [b[own.start], b[call.1.start].to_ascii_lowercase()];
        loop {
            // `b[at]` is an `&`.
            let Some(len) = reference_len(b, at) else {
                return self.advance_general(buf, settled, regions, open_region, span, out);
            };
            self.text_to(buf, at, span, out);
            out(Event::ParamText {
                text: crate::xml_chars::reference_text(&buf[at..at + len]),
                span: span(at..at + len),
                cdata: false,
            });
            self.pos = at + len;
            let to = match short_stop(b, self.pos, names) {
                Short::To(to) => to,
                Short::Reference(next) => {
                    at = next;
                    continue;
                }
                Short::General => {
                    return self.advance_general(buf, settled, regions, open_region, span, out);
                }
            };
            return self.text_to(buf, to, span, out);
        }
    }

    /// [`Streamer::advance`] past its common case: the short path for a token-sized delta
    /// of [`QUIET_LOOK`] to [`SHORT_PIECE`] new bytes inside a value
    /// ([`Streamer::advance_by_mask`]), else the general way.
    #[inline(never)]
    fn advance_on(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        if self.start == Start::Element
            && matches!(self.state, State::Param { .. })
            && self.next_region == regions.len()
            && open_region.is_none()
        {
            let settled = settled.min(buf.len());
            if (QUIET_LOOK..=SHORT_PIECE).contains(&settled.saturating_sub(self.pos)) {
                return self.advance_by_mask(buf, settled, regions, open_region, span, out);
            }
        }
        self.advance_general(buf, settled, regions, open_region, span, out);
    }

    /// [`Streamer::advance`] in general.
    #[inline(never)]
    fn advance_general(
        &mut self,
        buf: &str,
        settled: usize,
        regions: &[RegionRef],
        open_region: Option<(RegionKind, usize)>,
        span: &dyn Fn(Range<usize>) -> Span,
        out: &mut dyn FnMut(Event<'_>),
    ) {
        let mut em = Emit {
            buf,
            span,
            out,
            pending: None,
        };
        self.read(buf, settled, regions, open_region, &mut em);
        em.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::stops::may_become_reference;
    use super::*;

    /// Every reference [`reference_len`] takes, cut anywhere before its `;`, may still
    /// become one: a wait, never text that the block reads as a reference.
    #[test]
    fn every_cut_reference_may_become_one() {
        let mut references: Vec<String> = ["&lt;", "&gt;", "&amp;", "&apos;", "&quot;"]
            .map(String::from)
            .to_vec();
        for c in [
            '\t',
            '\n',
            ' ',
            'A',
            'é',
            '中',
            '🚀',
            '\u{FFFD}',
            '\u{10FFFF}',
        ] {
            let n = u32::from(c);
            references.push(format!("&#{n};"));
            references.push(format!("&#{n:08};"));
            references.push(format!("&#x{n:x};"));
            references.push(format!("&#x{n:X};"));
            references.push(format!("&#x{n:08x};"));
        }
        for reference in &references {
            let b = reference.as_bytes();
            assert_eq!(reference_len(b, 0), Some(b.len()), "{reference}");
            for cut in 1..b.len() {
                assert!(
                    may_become_reference(&b[1..cut]),
                    "{reference} cut at {cut}: {:?}",
                    &reference[..cut]
                );
            }
        }
    }

    /// The text of a value streamed after each delta: what can no longer change goes at
    /// once; a `<`, or an `&` that may begin a reference, cut by the delta's end waits.
    #[test]
    fn a_value_streams_up_to_what_may_still_change() {
        let steps = [
            ("<ACTION><write><content>let x = &mu", "let x = &mu"),
            ("t y; if a <", "let x = &mut y; if a "),
            (" b { s.push(&", "let x = &mut y; if a < b { s.push("),
            ("a", "let x = &mut y; if a < b { s.push("),
            ("mp;str) }", "let x = &mut y; if a < b { s.push(&str) }"),
            (" Vec<", "let x = &mut y; if a < b { s.push(&str) } Vec"),
            (
                "u8> &#x4",
                "let x = &mut y; if a < b { s.push(&str) } Vec<u8> ",
            ),
            (
                "E; ok",
                "let x = &mut y; if a < b { s.push(&str) } Vec<u8> N ok",
            ),
        ];
        let mut decoder = crate::Decoder::default();
        let mut streamed = String::new();
        for (delta, want) in steps {
            decoder.feed(delta, |e| {
                if let Event::ParamText { text, .. } = e {
                    streamed.push_str(&text);
                }
            });
            assert_eq!(streamed, want, "after {delta:?}");
        }
    }

    /// What begins none of them is text at once: code's `&` cut by a delta's end.
    #[test]
    fn code_ampersands_are_text_at_once() {
        for rest in [
            "m",
            "mu",
            "mut",
            "s",
            "self",
            "str",
            "&",
            " ",
            "ltx",
            "ampx",
            "a1",
            "#a",
            "#x1G",
            "#123456789",
            "#x123456789",
            "q2",
            "=",
            "'",
        ] {
            assert!(!may_become_reference(rest.as_bytes()), "&{rest}");
        }
        for rest in [
            "",
            "l",
            "lt",
            "g",
            "a",
            "am",
            "amp",
            "ap",
            "apo",
            "apos",
            "q",
            "quo",
            "#",
            "#1",
            "#x",
            "#xA",
            "#12345678",
        ] {
            assert!(may_become_reference(rest.as_bytes()), "&{rest}");
        }
    }
}
