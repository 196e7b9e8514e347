//! The tags of a value, read as the pre-scan reads them, only when the call's close tag
//! comes inside it ([`ValueTags`]): does that tag end the value and the call?

use std::ops::Range;

use super::State;
use crate::prescan::RegionRef;
use crate::tags::{close_tag_at, start_tag_at};

/// The name of the open call or parameter of `state` (empty at the top).
pub(super) fn state_name(state: &State) -> Range<usize> {
    match state {
        State::Top => 0..0,
        State::Call { name, .. } | State::Param { name, .. } => name.clone(),
    }
}

/// The names a value's tags are told by: the parameter's and the call's, in `buf`.
pub(super) struct TagNames<'b> {
    pub(super) buf: &'b str,
    pub(super) param: Range<usize>,
    pub(super) call: Range<usize>,
}

/// What a close tag inside a value does, as the pre-scan's `Prescan::closes` finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closes {
    /// It closes the element open in the value at this index (those after it were text).
    Inner(usize),
    /// It closes the parameter.
    Param,
    /// The call's, the parameter never closed and nothing unmatched in it: the pre-scan's
    /// `missing_close_tag` repair.
    LeftOpen,
    /// The call's, the parameter's only close tag that matched nothing was its own,
    /// misspelt (`mismatched_close_tag`).
    Misspelt,
    /// The call's, with close tags that matched nothing in the parameter or the elements
    /// open in it: `malformed_xml`.
    Unwound,
    /// It matches no open element.
    Nothing,
}

/// A parameter's value read as the pre-scan reads its tags (`Prescan::start_tag`,
/// `close_tag`, `closes`), regions aside: the elements opened in it and still open, and
/// the close tags that matched nothing. Read only when the call's close tag comes inside
/// the value ([`Streamer::call_closes_value`](super::Streamer::call_closes_value)), each time from where the last read
/// stopped: a value that closes properly costs nothing, one that does not is read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ValueTags {
    /// Read up to this buffer offset.
    pub(super) read: usize,
    /// The elements open in the value, innermost last: the name, and whether a close tag
    /// directly in it matched nothing.
    pub(super) open: Vec<(Range<usize>, bool)>,
    /// Close tags directly in the parameter that matched nothing.
    pub(super) unmatched: usize,
    /// The pre-scan's reading and the streamer's parted (it closed the parameter, or the
    /// call's close tag was no repair): the call's close tags in the value stay text.
    pub(super) parted: bool,
}

impl ValueTags {
    /// A value whose content begins at `read`.
    pub(super) fn new(read: usize) -> Self {
        ValueTags {
            read,
            ..ValueTags::default()
        }
    }

    /// Reads the tags from where the last read stopped to `to`, outside `regions`.
    pub(super) fn read_to(&mut self, names: &TagNames<'_>, to: usize, regions: &[RegionRef]) {
        let b = &names.buf.as_bytes()[..to];
        let mut j = self.read.min(to);
        while !self.parted
            && let Some(lt) = memchr::memchr(b'<', &b[j..]).map(|i| j + i)
        {
            let r = regions.partition_point(|r| r.full.end <= lt);
            if let Some(r) = regions.get(r).filter(|r| r.full.start <= lt) {
                j = r.full.end.clamp(lt + 1, to);
                continue;
            }
            j = lt + 1;
            match b.get(lt + 1) {
                Some(b'/') => {
                    if let Some((name, spaced, end)) = close_tag_at(names.buf, lt, to) {
                        self.close(names, name, spaced);
                        j = end;
                    }
                }
                // A processing instruction is dropped whole; `<!` begins no tag here.
                Some(b'?') => {
                    if let Some(end) = memchr::memmem::find(&b[lt + 2..], b"?>") {
                        j = lt + 2 + end + 2;
                    }
                }
                Some(b'!') => {}
                _ => {
                    if let Some((name, empty, end)) = start_tag_at(names.buf, lt, to) {
                        if !empty {
                            self.open.push((name, false));
                        }
                        j = end;
                    }
                }
            }
        }
        self.read = to;
    }

    /// A close tag of `name` (`spaced`: with blanks before it, which the pre-scan takes
    /// only where it closes an element) does what it does in the pre-scan, as far as the
    /// value goes; returns what that is.
    pub(super) fn close(
        &mut self,
        names: &TagNames<'_>,
        name: Range<usize>,
        spaced: bool,
    ) -> Closes {
        let b = names.buf.as_bytes();
        let name = &b[name];
        let param = &b[names.param.clone()];
        let call = &b[names.call.clone()];
        let top = self.open.last().map_or(param, |(n, _)| &b[n.clone()]);
        let clear = || self.unmatched == 0 && self.open.iter().all(|&(_, u)| !u);
        let closes = if top.eq_ignore_ascii_case(name) {
            match self.open.len() {
                0 => Closes::Param,
                n => Closes::Inner(n - 1),
            }
        } else if let Some(k) = self.open.iter().rposition(|(n, _)| &b[n.clone()] == name) {
            Closes::Inner(k)
        } else if param == name {
            Closes::Param
        } else if call == name {
            if self.open.is_empty() && self.unmatched == 1 {
                Closes::Misspelt
            } else if clear() {
                Closes::LeftOpen
            } else {
                Closes::Unwound
            }
        } else if call.eq_ignore_ascii_case(name) && clear() {
            Closes::LeftOpen
        } else {
            Closes::Nothing
        };
        match closes {
            Closes::Inner(k) => self.open.truncate(k),
            // The streamer reads the value on; the pre-scan does not.
            Closes::Param | Closes::LeftOpen | Closes::Misspelt => self.parted = true,
            // Written with blanks, a close tag the pre-scan does not take is text.
            Closes::Unwound | Closes::Nothing if spaced => {}
            Closes::Unwound => self.parted = true,
            Closes::Nothing => match self.open.last_mut() {
                Some((_, unmatched)) => *unmatched = true,
                None => self.unmatched += 1,
            },
        }
        closes
    }
}
