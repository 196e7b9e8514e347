//! Character classes of XML 1.0 (names, valid characters, whitespace) and the predefined
//! entities.

/// XML whitespace (`S` of XML 1.0): space, tab, line feed, carriage return — not Unicode
/// whitespace (an ideographic space in a value is content). The one statement of the set:
/// text edges are trimmed of these characters and blanks between tags are these bytes.
pub(crate) const XML_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Whether `b` is XML whitespace ([`XML_SPACE`]).
pub(crate) fn is_xml_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `s` without leading XML whitespace.
pub(crate) fn trim_xml_start(s: &str) -> &str {
    s.trim_start_matches(XML_SPACE)
}

/// `s` without trailing XML whitespace.
pub(crate) fn trim_xml_end(s: &str) -> &str {
    s.trim_end_matches(XML_SPACE)
}

/// The first offset at or after `at` in `b` that is no XML whitespace (`b.len()` when the
/// rest is blank): where a tag goes on after blanks.
#[inline]
pub(crate) fn space_end(b: &[u8], mut at: usize) -> usize {
    while b.get(at).is_some_and(|&c| is_xml_space(c)) {
        at += 1;
    }
    at
}

/// `s` without leading and trailing XML whitespace (not Unicode whitespace: an ideographic
/// space in a value is content).
pub(crate) fn trim_xml(s: &str) -> &str {
    s.trim_matches(XML_SPACE)
}

/// True when `s` is only XML whitespace.
pub(crate) fn is_blank(s: &str) -> bool {
    s.bytes().all(is_xml_space)
}

/// `Char` of XML 1.0: what may appear in a document at all.
pub(crate) fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// `NameStartChar` of XML 1.0 (`:` included).
pub(crate) fn is_name_start(c: char) -> bool {
    matches!(c,
        ':' | 'A'..='Z' | '_' | 'a'..='z'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

/// `NameChar` of XML 1.0.
pub(crate) fn is_name_char(c: char) -> bool {
    is_name_start(c)
        || matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

/// True when `s` is an XML `Name`.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

/// ASCII name classes: bit 0 = name start, bit 1 = name character.
const ASCII_NAME: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let start = c.is_ascii_alphabetic() || c == b':' || c == b'_';
        let name = start || c.is_ascii_digit() || c == b'-' || c == b'.';
        t[b] = (start as u8) | ((name as u8) << 1);
        b += 1;
    }
    t
};

/// True when the ASCII byte `c` may begin a name (a letter, `_` or `:`); false for any
/// byte of 0x80 or above (see [`name_end`] for names beyond ASCII).
#[inline(always)]
pub(crate) fn is_name_start_byte(c: u8) -> bool {
    c < 0x80 && ASCII_NAME[usize::from(c)] & 1 != 0
}

/// The end of the name that starts at `at` in `s` (`at` itself when no name starts there).
#[inline]
pub(crate) fn name_end(s: &str, at: usize) -> usize {
    let bytes = s.as_bytes();
    // The common case: an ASCII name ended by an ASCII byte.
    if let Some(&first) = bytes.get(at)
        && first < 0x80
        && ASCII_NAME[usize::from(first)] & 1 != 0
    {
        let rest = &bytes[at + 1..];
        let n = rest
            .iter()
            .position(|&b| b >= 0x80 || ASCII_NAME[usize::from(b)] & 2 == 0)
            .unwrap_or(rest.len());
        if rest.get(n).is_none_or(|&b| b < 0x80) {
            return at + 1 + n;
        }
    }
    // No name at all (code's `a < b`, `<=`, `<<`): an ASCII byte that starts none.
    if bytes
        .get(at)
        .is_none_or(|&first| first < 0x80 && ASCII_NAME[usize::from(first)] & 1 == 0)
    {
        return at;
    }
    name_end_decoding(s, at)
}

/// [`name_end`] for a name with other than ASCII characters in it (or none at `at`): out of
/// line, so that the ASCII case inlines where tags are read.
#[inline(never)]
fn name_end_decoding(s: &str, at: usize) -> usize {
    let bytes = s.as_bytes();
    let mut i = at;
    // ASCII by table; other characters are decoded.
    while let Some(&b) = bytes.get(i) {
        let ok = if b < 0x80 {
            let class = ASCII_NAME[usize::from(b)];
            if i == at {
                class & 1 != 0
            } else {
                class & 2 != 0
            }
        } else {
            let c = s[i..].chars().next().unwrap_or('\0');
            let ok = if i == at {
                is_name_start(c)
            } else {
                is_name_char(c)
            };
            if ok {
                i += c.len_utf8();
                continue;
            }
            false
        };
        if !ok {
            break;
        }
        i += 1;
    }
    i
}

/// True when the character at byte offset `at` of `s` is a `NameChar` (false at the end).
pub(crate) fn is_name_char_at(s: &str, at: usize) -> bool {
    match s.as_bytes().get(at) {
        None => false,
        Some(&b) if b < 0x80 => ASCII_NAME[usize::from(b)] & 2 != 0,
        Some(_) => s
            .get(at..)
            .and_then(|r| r.chars().next())
            .is_some_and(is_name_char),
    }
}

/// The length of the entity or character reference at `s[at]` (an `&`), when it is one
/// that needs no DTD: `&lt;` `&gt;` `&amp;` `&apos;` `&quot;`, `&#N;`, `&#xH;` naming a
/// valid XML character.
#[inline]
pub(crate) fn reference_len(s: &[u8], at: usize) -> Option<usize> {
    // Most `&`s in code are not references (`&&`, `&str`, `&mut`): one look tells.
    if may_begin_reference(s.get(at + 1).copied()) {
        reference_at(s, at)
    } else {
        None
    }
}

/// False when an `&` followed by `next` (`None`: nothing) is no reference
/// ([`reference_len`]) whatever comes after: `next` begins none of the references it
/// reads (`&&`, `& `, `&str`, `&mut` in code).
#[inline(always)]
pub(crate) fn may_begin_reference(next: Option<u8>) -> bool {
    matches!(next, Some(b'#' | b'l' | b'g' | b'a' | b'q'))
}

/// [`reference_len`] past its first look.
fn reference_at(s: &[u8], at: usize) -> Option<usize> {
    let rest = &s[at + 1..];
    if rest.first() == Some(&b'#') {
        let (digits, radix, head) = if rest.get(1) == Some(&b'x') {
            (&rest[2..], 16, 3)
        } else {
            (&rest[1..], 10, 2)
        };
        let n = digits
            .iter()
            .take_while(|b| {
                if radix == 16 {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count();
        if n == 0 || n > 8 || digits.get(n) != Some(&b';') {
            return None;
        }
        let text = std::str::from_utf8(&digits[..n]).ok()?;
        let value = u32::from_str_radix(text, radix).ok()?;
        let c = char::from_u32(value)?;
        return is_xml_char(c).then_some(head + n + 1);
    }
    // The five predefined entities, compared byte by byte: a `starts_with` of a name
    // chosen at run time is a call to `memcmp`, and code's `&len`, `&acc`, `&gt_x` come
    // here too.
    match rest {
        [b'l' | b'g', b't', b';', ..] => Some(4),
        [b'a', b'm', b'p', b';', ..] => Some(5),
        [b'a', b'p', b'o', b's', b';', ..] | [b'q', b'u', b'o', b't', b';', ..] => Some(6),
        _ => None,
    }
}

/// What `reference` (`&…;`, one [`reference_len`] accepts) stands for, as a piece of its
/// own: the five predefined entities without an allocation (code's `&lt;` and `&amp;`).
pub(crate) fn reference_text(reference: &str) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    match reference {
        "&lt;" => Cow::Borrowed("<"),
        "&gt;" => Cow::Borrowed(">"),
        "&amp;" => Cow::Borrowed("&"),
        "&apos;" => Cow::Borrowed("'"),
        "&quot;" => Cow::Borrowed("\""),
        _ => {
            let mut out = String::new();
            push_reference(&mut out, reference);
            Cow::Owned(out)
        }
    }
}

/// Appends what `reference` (`&…;`, one [`reference_len`] accepts) stands for.
pub(crate) fn push_reference(out: &mut String, reference: &str) {
    let name = reference
        .get(1..reference.len().saturating_sub(1))
        .unwrap_or_default();
    match name {
        "lt" => out.push('<'),
        "gt" => out.push('>'),
        "amp" => out.push('&'),
        "apos" => out.push('\''),
        "quot" => out.push('"'),
        _ => {
            let (digits, radix) = match name.strip_prefix("#x") {
                Some(h) => (h, 16),
                None => (name.get(1..).unwrap_or_default(), 10),
            };
            if let Some(c) = u32::from_str_radix(digits, radix)
                .ok()
                .and_then(char::from_u32)
            {
                out.push(c);
            }
        }
    }
}

/// Decodes the predefined entities and character references in `s`, and normalises line
/// ends (`\r\n` and `\r` become `\n`) as an XML parser does in text.
pub(crate) fn decode_text(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    // `s[copied..]` is not in `out` yet; a bare `&` (code's `&&`, `&str`) stays in it.
    let mut copied = 0;
    let mut at = 0;
    let mut stops = tam_parse::scan::Stops::new(bytes, b'&', b'\r', b'\r');
    while let Some(i) = stops.next(at) {
        if bytes[i] == b'\r' {
            out.push_str(&s[copied..i]);
            out.push('\n');
            at = if bytes.get(i + 1) == Some(&b'\n') {
                i + 2
            } else {
                i + 1
            };
            copied = at;
            continue;
        }
        let Some(len) = reference_len(bytes, i) else {
            at = i + 1;
            continue;
        };
        out.push_str(&s[copied..i]);
        push_reference(&mut out, &s[i..i + len]);
        at = i + len;
        copied = at;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(reference_len(b"&amp;x", 0), Some(5));
        assert_eq!(reference_len(b"&#x41;", 0), Some(6));
        assert_eq!(reference_len(b"&#65;", 0), Some(5));
        assert_eq!(reference_len(b"&#0;", 0), None);
        assert_eq!(reference_len(b"&nbsp;", 0), None);
        assert_eq!(reference_len(b"& b", 0), None);
        assert_eq!(reference_len(b"&", 0), None);
        assert_eq!(reference_len(b"&apos;", 0), Some(6));
        assert_eq!(reference_len(b"&quot;x", 0), Some(6));
        assert_eq!(reference_len(b"&lt;", 0), Some(4));
        assert_eq!(reference_len(b"&gt", 0), None);
        assert_eq!(reference_len(b"&am;", 0), None);
        assert_eq!(reference_len(b"&ap", 0), None);
        assert_eq!(decode_text("a&lt;b&#x4E2D;\r\nc&amp;"), "a<b中\nc&");
        for r in [
            "&lt;", "&gt;", "&amp;", "&apos;", "&quot;", "&#x4E2D;", "&#65;",
        ] {
            assert_eq!(reference_text(r), decode_text(r));
        }
        assert_eq!(
            decode_text("a && b &x; &amp;\r&#0;&"),
            "a && b &x; &\n&#0;&"
        );
    }

    proptest::proptest! {
        /// The named references are found as the five names spell them, whatever
        /// follows the `&` (code's `&len`, `&acc`, `&gt_x`, a name cut short).
        #[test]
        fn named_references_are_the_five_names(
            rest in proptest::collection::vec(
                proptest::sample::select(b"lgtampsoqu;&x".to_vec()),
                0..8,
            ),
        ) {
            let mut s = vec![b'&'];
            s.extend(rest);
            let want = ["lt;", "gt;", "amp;", "apos;", "quot;"]
                .iter()
                .find(|n| s[1..].starts_with(n.as_bytes()))
                .map(|n| n.len() + 1);
            proptest::prop_assert_eq!(reference_len(&s, 0), want);
        }
    }

    #[test]
    fn names() {
        assert!(is_name("workflow:summarize_text"));
        assert!(is_name("读取文件"));
        assert!(!is_name("1a"));
        assert!(!is_name("a b"));
        assert!(!is_name(""));
        assert_eq!(name_end("ab-c d", 0), 4);
        assert_eq!(name_end("<文字>", 1), 7);
        assert_eq!(name_end(" x", 0), 0);
        assert_eq!(name_end("-x", 0), 0);
        assert_eq!(name_end("x-1.:_y>", 0), 7);
        assert!(is_name_char_at("a-b", 1));
        assert!(!is_name_char_at("a b", 1));
        assert!(!is_name_char_at("ab", 2));
        assert!(is_name_char_at("a文", 1));
        assert!(!is_name_char_at("a\u{2000}", 1));
        for b in 0u8..128 {
            let c = char::from(b);
            let class = ASCII_NAME[usize::from(b)];
            assert_eq!(class & 1 != 0, is_name_start(c), "{c:?}");
            assert_eq!(class & 2 != 0, is_name_char(c), "{c:?}");
        }
    }
}
