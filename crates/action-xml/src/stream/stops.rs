//! Where the streamer stops inside a value: the next `<`, `&` or `\r` that needs a look,
//! the short-delta fast path, and the waits (a `<`, `\r` or reference cut by the delta's
//! end).

use std::borrow::Cow;

use tam_parse::scan::{find3, tail_mask};

use super::Look;
use super::emit::Emit;
use crate::event::Event;
use crate::xml_chars::{is_xml_space, reference_len};

/// The next `&`, `<` or `\r` at or after `from` in `b` (a value's settled bytes) that
/// needs a look (every `\r` does): a `<` whose name (or close tag's name) already differs from the parameter's in its
/// first byte `own` is text like the bytes around it (as [`Streamer::markup`](super::Streamer::markup) would find)
/// — unless it is a close tag whose name's first byte is the call's `call` (lower case)
/// ignoring case ([`Streamer::call_close_in_value`](super::Streamer::call_close_in_value)) —
/// and so is an `&` that begins no reference and cannot become one (as
/// [`Streamer::reference`](super::Streamer::reference) would find) — unless a region starts there (`regions`: where
/// the next ones begin).
/// `find` is the search for the next `<`, `&` or `\r` from an offset on: [`find3`] for a
/// few bytes, a [`Stops`](tam_parse::scan::Stops) for a value's worth.
#[inline]
pub(super) fn next_stop_in_value(
    b: &[u8],
    mut from: usize,
    [own, call]: [u8; 2],
    regions: [usize; 2],
    mut find: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    loop {
        let at = find(from)?;
        if b[at] == b'\r' {
            return Some(at);
        }
        if regions.contains(&at) {
            return Some(at);
        }
        if b[at] == b'&' {
            if reference_len(b, at).is_some() || may_become_reference(&b[at + 1..]) {
                return Some(at);
            }
            from = at + 1;
            continue;
        }
        let first = match b.get(at + 1) {
            Some(b'/') => match b.get(at + 2) {
                // `</ name>`: maybe the parameter's close tag ([`Streamer::spaced_close`](super::Streamer::spaced_close)).
                Some(&c) if is_xml_space(c) => return Some(at),
                // Maybe the call's close tag, which ends a parameter left open.
                Some(&c) if c.to_ascii_lowercase() == call => return Some(at),
                other => other,
            },
            other => other,
        };
        match first {
            Some(&c) if c != own => from = at + 1,
            _ => return Some(at),
        }
    }
}

/// Where the short path of [`Streamer::advance`](super::Streamer::advance) goes from a look at `b[from..]` (`b` is
/// what has settled) inside a value whose parameter and call names begin with `names`.
pub(super) enum Short {
    /// The text up to here goes out as one piece: the end (no stop), or a stop whose look
    /// needs what has not arrived (a `<`, `\r` or an `&` that may begin a reference, cut by
    /// the delta's end), which waits — what the general way does.
    To(usize),
    /// A whole reference begins here (`&amp;` in a comment of code):
    /// [`Streamer::advance_references`](super::Streamer::advance_references).
    Reference(usize),
    /// Any other stop: the general way.
    General,
}

#[inline(always)]
pub(super) fn short_stop(b: &[u8], from: usize, names: [u8; 2]) -> Short {
    short(
        b,
        next_stop_in_value(b, from, names, [usize::MAX; 2], |from| {
            find3(b, from, b'<', b'&', b'\r')
        }),
    )
}

/// [`short_stop`] for a look at [`QUIET_LOOK`](super::QUIET_LOOK) bytes or more: the stops of `b[from..]`
/// from one mask of the last 64 bytes ([`tail_mask`]) — code's stops come every few words,
/// and [`find3`] would start again at each — or, when it does not fit there, as
/// [`short_stop`] finds them.
#[inline(always)]
pub(super) fn short_stop_by_mask(b: &[u8], from: usize, names: [u8; 2]) -> Short {
    let Some(mask) = tail_mask(b, from, [b'<', b'&', b'\r']) else {
        return short_stop(b, from, names);
    };
    // Bit `i` of `mask` is `b[from + i]`; the looks go forward from `from`.
    let stop = next_stop_in_value(b, from, names, [usize::MAX; 2], |at| {
        let ahead = mask.checked_shr((at - from) as u32).unwrap_or(0);
        (ahead != 0).then(|| at + ahead.trailing_zeros() as usize)
    });
    short(b, stop)
}

/// Where the short path goes from the first stop of a look, as [`short_stop`] says.
#[inline(always)]
pub(super) fn short(b: &[u8], stop: Option<usize>) -> Short {
    match stop {
        None => Short::To(b.len()),
        Some(at) if waits_at(b, at) => Short::To(at),
        Some(at) if b[at] == b'&' => Short::Reference(at),
        Some(_) => Short::General,
    }
}

/// True when the look at a stop at `at` in a value (`b`: its settled bytes) waits for more
/// in every state: a `<` or `\r` that is the last byte, or an `&` that begins no
/// reference yet may still become one ([`Streamer::markup`](super::Streamer::markup), [`line_end`],
/// [`Streamer::reference`](super::Streamer::reference)).
#[inline]
pub(super) fn waits_at(b: &[u8], at: usize) -> bool {
    match b[at] {
        b'<' | b'\r' => at + 1 >= b.len(),
        b'&' => reference_len(b, at).is_none() && may_become_reference(&b[at + 1..]),
        _ => false,
    }
}

/// A `\r` at `at` in a value's text: a line end, read as XML reads it (`\r\n` and a lone
/// `\r` are one `\n`, as in the block's value), a piece of its own. Waits while the byte
/// after it has not arrived.
pub(super) fn line_end(b: &[u8], at: usize, settled: usize, em: &mut Emit<'_, '_>) -> Look {
    if at + 1 >= settled.min(b.len()) {
        return Look::Wait;
    }
    let len = if b[at + 1] == b'\n' { 2 } else { 1 };
    em.event(Event::ParamText {
        text: Cow::Borrowed("\n"),
        span: em.span(at..at + len),
        cdata: false,
    });
    Look::Next(at + len)
}

/// True when `rest`, the settled bytes after an `&` that begins no reference, may still
/// become one when more arrives: it begins one of the references [`reference_len`] takes
/// (`lt`, `gt`, `amp`, `apos`, `quot`; `#` and up to eight digits, `#x` and up to eight
/// hex digits), its `;` not there yet. Code's `&mut`, `&str` or `&self` cut by a delta's
/// end is text at once, not a wait for the next delta.
#[inline(always)]
pub(super) fn may_become_reference(rest: &[u8]) -> bool {
    // Most often `rest` is long (the `&` is far from what arrived last): one look at its
    // length tells, but for `#`.
    match rest {
        [] | [b'l' | b'g'] | [b'l' | b'g', b't'] => true,
        [b'a'] | [b'a', b'm'] | [b'a', b'm', b'p'] => true,
        [b'a', b'p'] | [b'a', b'p', b'o'] | [b'a', b'p', b'o', b's'] => true,
        [b'q'] | [b'q', b'u'] | [b'q', b'u', b'o'] | [b'q', b'u', b'o', b't'] => true,
        [b'#', more @ ..] => {
            let (hex, digits) = match more {
                [b'x', digits @ ..] => (true, digits),
                digits => (false, digits),
            };
            digits.len() <= 8
                && digits.iter().all(|c| {
                    if hex {
                        c.is_ascii_hexdigit()
                    } else {
                        c.is_ascii_digit()
                    }
                })
        }
        _ => false,
    }
}
