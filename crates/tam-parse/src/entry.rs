//! The entry grammar inside a TAM block, between values: keys, comments, stray text; and
//! the key rules (canonical keys: lowercase, `_` and `-` removed; `commandN` chain suffixes).

use std::ops::Range;

use nom::{
    IResult, Parser,
    bytes::complete::{tag, take_while1},
    character::complete::{digit0, one_of, space0},
    combinator::{all_consuming, eof},
    sequence::terminated,
};

/// A piece of the text between two values (or between a marker and a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SegmentItem {
    /// A comment line, `#` to the end of the line.
    Comment,
    /// A word of text that is neither an entry nor a comment.
    Stray(Range<usize>),
    /// An entry whose value is written between bare corner brackets, `KEY:「VALUE」`:
    /// `key`, `value` (inside the brackets) and `text` (key to the closing
    /// `」`) are ranges of the segment.
    Bare {
        /// The key.
        key: Range<usize>,
        /// The value, without its brackets.
        value: Range<usize>,
        /// The whole entry.
        text: Range<usize>,
    },
}

fn is_key_char(c: char) -> bool {
    !c.is_whitespace() && c != ':' && c != '：' && c != '「'
}

/// `KEY blanks (: | ：) blanks` and nothing after it: the head of an entry, right before its
/// value opens.
fn entry_head(input: &str) -> IResult<&str, &str> {
    terminated(
        take_while1(is_key_char),
        (space0, one_of(":："), space0, eof),
    )
    .parse(input)
}

/// `KEY blanks (: | ：) blanks 「`, not followed by `末」` or `末ESCAPE」`: the head of a
/// bare-bracket entry. Returns the key's length and the length of the head.
fn bare_head(input: &str) -> Option<(usize, usize)> {
    let parsed: IResult<&str, &str> = terminated(
        take_while1(is_key_char),
        (space0, one_of(":："), space0, tag("「")),
    )
    .parse(input);
    let (rest, key) = parsed.ok()?;
    // `KEY:「末」` is a value close marker out of place, not a bare value.
    if rest.starts_with("末」") || rest.starts_with("末ESCAPE」") {
        return None;
    }
    Some((key.len(), input.len() - rest.len()))
}

/// Walks `segment` (text between values), reporting comments and stray words in order.
/// When `expect_key` is set and the segment ends with an entry head, returns the key's
/// range. `line_start` says whether the segment begins a line (the block body does; the
/// text after a value does not).
///
/// A word that begins `KEY:「` (not `「始」`: that opens a value, so it never reaches a
/// segment) with a `」` later on the same line is a bare-bracket entry whose value runs to
/// the last `」` before the end of that line (or of the segment); see [`SegmentItem::Bare`].
///
/// Cost: each byte is looked at a bounded number of times (a word is tried once as an entry
/// head, then skipped; a bare entry's line is searched once for its last `」`).
pub(crate) fn parse_segment(
    segment: &str,
    line_start: bool,
    expect_key: bool,
    mut on_item: impl FnMut(SegmentItem),
) -> Option<Range<usize>> {
    let mut at_line_start = line_start;
    let mut i = 0;
    while let Some(c) = segment[i..].chars().next() {
        if c == '\n' {
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        if at_line_start && c == '#' {
            i += memchr::memchr(b'\n', &segment.as_bytes()[i..]).unwrap_or(segment.len() - i);
            on_item(SegmentItem::Comment);
            continue;
        }
        at_line_start = false;
        if expect_key && let Ok((_, key)) = entry_head(&segment[i..]) {
            return Some(i..i + key.len());
        }
        if let Some((key_len, head_len)) = bare_head(&segment[i..]) {
            let value_start = i + head_len;
            let line_end = memchr::memchr(b'\n', &segment.as_bytes()[value_start..])
                .map_or(segment.len(), |n| value_start + n);
            if let Some(close) =
                memchr::memmem::rfind(&segment.as_bytes()[value_start..line_end], "」".as_bytes())
            {
                let value_end = value_start + close;
                let end = value_end + "」".len();
                on_item(SegmentItem::Bare {
                    key: i..i + key_len,
                    value: value_start..value_end,
                    text: i..end,
                });
                i = end;
                continue;
            }
        }
        let word = segment[i..]
            .find(char::is_whitespace)
            .unwrap_or(segment.len() - i);
        on_item(SegmentItem::Stray(i..i + word));
        i += word;
    }
    None
}

/// The canonical form of a key: lowercase with `_` and `-` removed.
pub fn canonical_key(key: &str) -> String {
    canonical_chars(key).collect()
}

/// The characters of [`canonical_key`]`(key)`, computed as they are read (no allocation).
pub(crate) fn canonical_chars(key: &str) -> impl Iterator<Item = char> + '_ {
    key.chars()
        .filter(|&c| c != '_' && c != '-')
        .flat_map(char::to_lowercase)
}

/// True when two keys as written have one canonical form.
pub(crate) fn same_canonical(a: &str, b: &str) -> bool {
    canonical_chars(a).eq(canonical_chars(b))
}

/// A key as written, hashed by its canonical form (no allocation).
pub(crate) struct CanonicalKey<'a>(pub &'a str);

impl std::hash::Hash for CanonicalKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for c in canonical_chars(self.0) {
            state.write_u32(u32::from(c));
        }
    }
}

/// [`command_number`] of a key as written (its canonical form, without building it).
pub(crate) fn written_command_number(key: &str) -> Option<Option<u64>> {
    let mut chars = canonical_chars(key);
    for want in "command".chars() {
        if chars.next()? != want {
            return None;
        }
    }
    let mut number: Option<u64> = None;
    for c in chars {
        let digit = c.to_digit(10).filter(|_| c.is_ascii_digit())?;
        number = Some(
            number
                .unwrap_or(0)
                .checked_mul(10)?
                .checked_add(u64::from(digit))?,
        );
    }
    Some(number)
}

/// True when `key` is already canonical (so the canonical key can borrow it).
pub(crate) fn is_canonical(key: &str) -> bool {
    !key.chars()
        .any(|c| c == '_' || c == '-' || c.to_lowercase().ne(std::iter::once(c)))
}

/// For a canonical key: `Some(None)` for `command`, `Some(Some(n))` for `command<n>`
/// (`n` compared as a number; a number too large for `u64` is not a chain suffix), `None`
/// otherwise.
pub(crate) fn command_number(canonical: &str) -> Option<Option<u64>> {
    let (_, digits) = all_consuming(|i| -> IResult<&str, &str> {
        let (i, _) = tag("command")(i)?;
        digit0(i)
    })
    .parse(canonical)
    .ok()?;
    if digits.is_empty() {
        Some(None)
    } else {
        digits.parse().ok().map(Some)
    }
}

/// The trailing ASCII digits of a canonical key, as a number, with the length of the
/// prefix before them. `None` without digits, or when the number exceeds `u64`.
pub(crate) fn digit_suffix(canonical: &str) -> Option<(usize, u64)> {
    let stem_len = canonical
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .len();
    if stem_len == canonical.len() {
        return None;
    }
    canonical[stem_len..].parse().ok().map(|n| (stem_len, n))
}

/// The key as written, with its chain suffix (its last `digit_count` ASCII digits, any
/// `_`/`-` among or after them, and one `_` or `-` just before them) removed.
pub(crate) fn strip_chain_suffix(written: &str, digit_count: usize) -> &str {
    let mut left = digit_count;
    let mut cut = written.len();
    for (i, c) in written.char_indices().rev() {
        if left == 0 {
            break;
        }
        match c {
            '_' | '-' => cut = i,
            d if d.is_ascii_digit() => {
                left -= 1;
                cut = i;
            }
            _ => break,
        }
    }
    let stem = &written[..cut];
    stem.strip_suffix(['_', '-']).unwrap_or(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(s: &str, ls: bool) -> (Vec<SegmentItem>, Option<Range<usize>>) {
        let mut v = Vec::new();
        let key = parse_segment(s, ls, true, |it| v.push(it));
        (v, key)
    }

    #[test]
    fn key_at_end_of_segment() {
        assert_eq!(items("\ncommand:", true), (vec![], Some(1..8)));
        assert_eq!(items("  file_path ：\t", true), (vec![], Some(2..11)));
        assert_eq!(items("k", true), (vec![SegmentItem::Stray(0..1)], None));
        assert_eq!(
            items("k: x", true),
            (
                vec![SegmentItem::Stray(0..2), SegmentItem::Stray(3..4)],
                None
            )
        );
    }

    #[test]
    fn comments_and_stray_words() {
        let (v, key) = items("# step 1: x\nhello there\nkey:", true);
        assert_eq!(
            v,
            vec![
                SegmentItem::Comment,
                SegmentItem::Stray(12..17),
                SegmentItem::Stray(18..23)
            ]
        );
        assert_eq!(key, Some(24..27));
        // `#` is a comment only at the start of a line.
        let (v, _) = items(" # no", false);
        assert_eq!(v, vec![SegmentItem::Stray(1..2), SegmentItem::Stray(3..5)]);
    }

    #[test]
    fn bare_bracket_entries() {
        let (v, key) = items("\nunit:「celsius」\nto :「a」b」 x\nk:「no close\nv:", true);
        assert_eq!(
            v,
            vec![
                SegmentItem::Bare {
                    key: 1..5,
                    value: 9..16,
                    text: 1..19
                },
                // The value runs to the last 」 of the line.
                SegmentItem::Bare {
                    key: 20..22,
                    value: 27..32,
                    text: 20..35
                },
                SegmentItem::Stray(36..37),
                // No 」 on the line: not an entry.
                SegmentItem::Stray(38..45),
                SegmentItem::Stray(46..51),
            ]
        );
        assert_eq!(key, Some(52..53));
        // A close marker is not a bare value.
        let (v, _) = items("k:「末」 x」", true);
        assert_eq!(
            v,
            vec![SegmentItem::Stray(0..11), SegmentItem::Stray(12..16)]
        );
        // Never across a line break.
        let (v, _) = items("k:「a\nb」", true);
        assert_eq!(v, vec![SegmentItem::Stray(0..6), SegmentItem::Stray(7..11)]);
    }

    #[test]
    fn canonical_keys_and_suffixes() {
        assert_eq!(canonical_key("File_Path-X"), "filepathx");
        assert!(is_canonical("filepath2"));
        assert!(!is_canonical("filePath"));
        assert_eq!(command_number("command"), Some(None));
        assert_eq!(command_number("command10"), Some(Some(10)));
        assert_eq!(command_number("command007"), Some(Some(7)));
        assert_eq!(command_number("commands"), None);
        assert_eq!(command_number("command99999999999999999999999"), None);
        for written in [
            "command",
            "Command_10",
            "COMMAND-007",
            "commands",
            "command99999999999999999999999",
            "command18446744073709551615",
            "command18446744073709551616",
            "cmd",
            "comm_and",
            "command٣",
            "",
        ] {
            assert_eq!(
                written_command_number(written),
                command_number(&canonical_key(written)),
                "{written}"
            );
        }
        assert!(same_canonical("file_Path", "FILEPATH"));
        assert!(!same_canonical("file_path", "file_path2"));
        assert_eq!(digit_suffix("filepath12"), Some((8, 12)));
        assert_eq!(digit_suffix("sha256"), Some((3, 256)));
        assert_eq!(digit_suffix("path"), None);
        assert_eq!(strip_chain_suffix("filePath1", 1), "filePath");
        assert_eq!(strip_chain_suffix("file_path_1", 1), "file_path");
        assert_eq!(strip_chain_suffix("file-path-12", 2), "file-path");
        assert_eq!(strip_chain_suffix("path1_0", 2), "path");
    }
}
