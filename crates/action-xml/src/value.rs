//! The edge rules of a string value, in one place: for a value read whole (the closed
//! block) and for its pieces as they stream ([`ValueEdges`]).
//!
//! A value is a run of pieces: text (references decoded) and CDATA sections' content.
//! Blank text at either end is dropped; the first piece, when text, loses its leading
//! XML whitespace and, when CDATA, one line break right at its start; the last piece,
//! when text, loses its trailing XML whitespace and, when CDATA, the blanks (spaces and
//! tabs) after its last line break. Everything between is kept as written.

use std::borrow::Cow;

use tam_parse::Span;

use crate::xml_chars::{XML_SPACE, is_blank};

/// Joins text and CDATA pieces (`true`: CDATA) by the rule of this module.
pub(crate) fn assemble(mut pieces: Vec<(bool, Cow<'_, str>)>) -> String {
    let blank_text = |p: &(bool, Cow<'_, str>)| !p.0 && is_blank(&p.1);
    let skip = pieces.iter().take_while(|p| blank_text(p)).count();
    pieces.drain(..skip);
    while pieces.last().is_some_and(blank_text) {
        pieces.pop();
    }
    let last = pieces.len().saturating_sub(1);
    let mut out = String::with_capacity(pieces.iter().map(|p| p.1.len()).sum());
    for (i, (is_cdata, text)) in pieces.iter().enumerate() {
        let (first, end) = (i == 0, i == last);
        let t: &str = if *is_cdata {
            cdata_edges(text, first, end)
        } else {
            let mut t: &str = text;
            if first {
                t = t.trim_start_matches(XML_SPACE);
            }
            if end {
                t = t.trim_end_matches(XML_SPACE);
            }
            t
        };
        out.push_str(t);
    }
    out
}

/// A CDATA section's content as a value keeps it: when `first`, without a line break
/// right at its start; when `last`, without the blanks after its last line break.
pub(crate) fn cdata_edges(mut t: &str, first: bool, last: bool) -> &str {
    if first {
        t = t
            .strip_prefix("\r\n")
            .or_else(|| t.strip_prefix('\n'))
            .unwrap_or(t);
    }
    if last {
        let kept = t.trim_end_matches([' ', '\t']);
        if kept.ends_with('\n') {
            t = kept;
        }
    }
    t
}

/// The edge rules of an ACTION string value, applied to its pieces as they stream.
///
/// Feed it the [`Event::ParamText`](crate::Event::ParamText) pieces of one parameter, in
/// order, with their `span` and `cdata` flag; it appends to `out` what is certain to be
/// part of the value and holds back what the value's end may still trim (trailing
/// whitespace, a CDATA section's trailing blanks, a lone `\r` that may begin a line break
/// to drop). [`ValueEdges::finish`] at the parameter's end appends the rest. Everything
/// appended, joined, is the value the closed block gives the parameter when it holds a
/// string: text trimmed of XML whitespace at its edges, a CDATA section's content verbatim
/// but for a line break right after the first `<![CDATA[` and the blanks after the last
/// line break before the last `]]>`. For code with tags the pieces carry the markup, and
/// the same rules apply at the edges.
///
/// ```
/// use action_xml::{Decoder, Event, ValueEdges};
///
/// let mut decoder = Decoder::default();
/// let (mut edges, mut value) = (ValueEdges::new(), String::new());
/// let text = "<ACTION><Note><body><![CDATA[\nfn f<T>() {}\n  ]]>\n</body></Note></ACTION>";
/// for piece in text.split_inclusive(['[', '\n', '<']) {
///     decoder.feed(piece, |e| match e {
///         Event::ParamText { text, span, cdata } => edges.push(&text, span, cdata, &mut value),
///         Event::ParamEnd { .. } => edges.finish(&mut value),
///         _ => {}
///     });
/// }
/// assert_eq!(value, "fn f<T>() {}\n");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ValueEdges {
    /// A piece other than blank text has come: blank text from here on is kept when
    /// something follows it.
    begun: bool,
    /// The last piece: whether it was CDATA, and where it ended (a CDATA piece that
    /// begins there continues the same section).
    last: Option<(bool, usize)>,
    /// The value began with a CDATA section whose first line break is still to come.
    strip_newline: bool,
    /// That section's content so far is one `\r`: held until it is known whether a `\n`
    /// follows (a line break to drop) or not (content).
    pending_cr: bool,
    /// Blanks at the end of the current CDATA section, held.
    cdata_blanks: String,
    /// Whether the section's content before [`Self::cdata_blanks`] ends with a line break
    /// (then they are dropped when the section ends the value).
    blanks_after_newline: bool,
    /// Whitespace at the end of text (and blank text after it), held.
    text_space: String,
}

impl ValueEdges {
    /// The rules for a new value.
    pub fn new() -> Self {
        Self::default()
    }

    /// One piece of the value: `span` and `cdata` as the event gave them. Appends to `out`
    /// what is now certain.
    pub fn push(&mut self, piece: &str, span: Span, cdata: bool, out: &mut String) {
        let continues = self.last == Some((true, span.start)) && cdata;
        if !piece.is_empty() {
            self.last = Some((cdata, span.end));
        }
        if cdata {
            self.push_cdata(piece, continues, out);
        } else {
            self.push_text(piece, out);
        }
    }

    /// The value ended: appends what was held and belongs to it.
    pub fn finish(&mut self, out: &mut String) {
        if self.pending_cr {
            out.push('\r');
        }
        if !self.blanks_after_newline {
            out.push_str(&self.cdata_blanks);
        }
        *self = Self::default();
    }

    fn push_text(&mut self, piece: &str, out: &mut String) {
        if piece.is_empty() {
            return;
        }
        if is_blank(piece) {
            if self.begun {
                self.text_space.push_str(piece);
            }
            return;
        }
        let piece = if self.begun {
            self.release(out);
            piece
        } else {
            self.begun = true;
            piece.trim_start_matches(XML_SPACE)
        };
        let body = piece.trim_end_matches(XML_SPACE);
        out.push_str(body);
        self.text_space.push_str(&piece[body.len()..]);
    }

    fn push_cdata(&mut self, piece: &str, continues: bool, out: &mut String) {
        if !self.begun {
            self.begun = true;
            self.strip_newline = true;
        } else if !continues {
            // A new section: what the last one held is inside the value now.
            self.release(out);
            self.strip_newline = false;
            self.blanks_after_newline = false;
        }
        if piece.is_empty() {
            return;
        }
        let mut joined = String::new();
        let mut piece = piece;
        if self.strip_newline {
            if self.pending_cr {
                self.pending_cr = false;
                if let Some(rest) = piece.strip_prefix('\n') {
                    piece = rest;
                } else {
                    joined.push('\r');
                    joined.push_str(piece);
                    piece = &joined;
                }
            } else if piece == "\r" {
                self.pending_cr = true;
                return;
            } else if let Some(rest) = piece
                .strip_prefix("\r\n")
                .or_else(|| piece.strip_prefix('\n'))
            {
                piece = rest;
            }
            self.strip_newline = false;
        }
        let body = piece.trim_end_matches([' ', '\t']);
        if !body.is_empty() {
            self.release(out);
            out.push_str(body);
            self.blanks_after_newline = body.ends_with('\n');
        }
        self.cdata_blanks.push_str(&piece[body.len()..]);
    }

    /// What was held is followed by more of the value: it is part of it.
    fn release(&mut self, out: &mut String) {
        if self.pending_cr {
            self.pending_cr = false;
            out.push('\r');
        }
        self.strip_newline = false;
        out.push_str(&self.cdata_blanks);
        self.cdata_blanks.clear();
        out.push_str(&self.text_space);
        self.text_space.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The pieces of one value as the streamer may hand them out: each section or text run
    /// cut anywhere, sections and text runs apart in the stream.
    fn streamed(runs: &[(bool, String)], cuts: &[usize]) -> String {
        let mut edges = ValueEdges::new();
        let mut out = String::new();
        let mut at = 0;
        let mut cut = cuts.iter().cycle();
        for (cdata, run) in runs {
            at += if *cdata { 9 } else { 4 };
            let mut rest = run.as_str();
            while !rest.is_empty() {
                let mut n = (cut.next().copied().unwrap_or(1) % rest.len()).max(1);
                while !rest.is_char_boundary(n) {
                    n += 1;
                }
                let span = Span::new(at, at + n);
                edges.push(&rest[..n], span, *cdata, &mut out);
                at += n;
                rest = &rest[n..];
            }
            at += 3;
        }
        edges.finish(&mut out);
        out
    }

    fn whole(runs: &[(bool, String)]) -> String {
        assemble(
            runs.iter()
                .map(|(c, t)| (*c, Cow::Borrowed(t.as_str())))
                .collect(),
        )
    }

    #[test]
    fn examples() {
        let cases: &[(&[(bool, &str)], &str)] = &[
            (&[(false, "\n  hello world \n")], "hello world"),
            (
                &[(false, "  "), (true, "\ncode\n  "), (false, "\n")],
                "code\n",
            ),
            (&[(true, "\r\n  x  ")], "  x  "),
            (&[(true, "\n  ")], "  "),
            (&[(true, "a\n"), (true, "  ")], "a\n  "),
            (&[(false, "a "), (true, " b "), (false, " c ")], "a  b  c"),
            (&[(true, "\r")], "\r"),
            (&[(false, "  \n ")], ""),
        ];
        for (runs, want) in cases {
            let runs: Vec<(bool, String)> = runs.iter().map(|(c, t)| (*c, t.to_string())).collect();
            assert_eq!(whole(&runs), *want, "{runs:?}");
            for cuts in [&[1usize][..], &[2, 3], &[100]] {
                assert_eq!(streamed(&runs, cuts), *want, "{runs:?} cut {cuts:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn streamed_pieces_give_the_whole_value(
            runs in prop::collection::vec(
                (any::<bool>(), "[ \\t\\r\\na-cé<]{1,8}"),
                0..6,
            ),
            cuts in prop::collection::vec(1usize..9, 1..6),
        ) {
            // Text runs that touch are one run in a document: join them as the streamer
            // would hand them out (pieces of one text run).
            let mut joined: Vec<(bool, String)> = Vec::new();
            for (cdata, t) in runs {
                match joined.last_mut() {
                    Some((false, prev)) if !cdata => prev.push_str(&t),
                    _ => joined.push((cdata, t)),
                }
            }
            prop_assert_eq!(streamed(&joined, &cuts), whole(&joined));
        }
    }
}
