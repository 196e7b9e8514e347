//! The tag lexer the readers share: a start tag or a close tag at a `<`, as the pre-scan
//! takes them. The streamer and the block reader use it to tell tags from text, so that
//! every reader draws the line between a tag and text at the same place.

use std::ops::Range;

use crate::xml_chars::{name_end, space_end};

/// The close tag at `lt` in `buf[..to]`, as the pre-scan takes it: `</name>` (blanks
/// before the `>`) or `</ name>` (`spaced`); its name, whether spaced, and its end.
pub(crate) fn close_tag_at(buf: &str, lt: usize, to: usize) -> Option<(Range<usize>, bool, usize)> {
    let b = &buf.as_bytes()[..to];
    let skip_space = |j: usize| space_end(b, j);
    let start = skip_space(lt + 2);
    let end = name_end(buf, start).min(to);
    if end == start {
        return None;
    }
    let gt = skip_space(end);
    (b.get(gt) == Some(&b'>')).then_some((start..end, start > lt + 2, gt + 1))
}

/// The start tag at `lt` in `buf[..to]`, as the pre-scan takes it (`<name>`, `<name/>`,
/// attributes with quoted values without `<`): its name, whether empty, and its end.
pub(crate) fn start_tag_at(buf: &str, lt: usize, to: usize) -> Option<(Range<usize>, bool, usize)> {
    let b = &buf.as_bytes()[..to];
    let skip_space = |j: usize| space_end(b, j);
    let name = lt + 1..name_end(buf, lt + 1).min(to);
    if name.is_empty() {
        return None;
    }
    let mut j = name.end;
    loop {
        let after = skip_space(j);
        let had_space = after > j;
        j = after;
        match b.get(j)? {
            b'>' => return Some((name, false, j + 1)),
            b'/' => return (b.get(j + 1) == Some(&b'>')).then_some((name, true, j + 2)),
            _ if !had_space => return None,
            _ => {}
        }
        // An attribute: name = "value" or 'value'.
        let attribute = name_end(buf, j).min(to);
        if attribute == j {
            return None;
        }
        j = skip_space(attribute);
        if b.get(j) != Some(&b'=') {
            return None;
        }
        j = skip_space(j + 1);
        let quote = *b.get(j).filter(|&&q| q == b'"' || q == b'\'')?;
        let len = memchr::memchr(quote, &b[j + 1..])?;
        if memchr::memchr(b'<', &b[j + 1..j + 1 + len]).is_some() {
            return None;
        }
        j += 1 + len + 1;
    }
}
