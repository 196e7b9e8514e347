//! Text a model wrote as one quoted literal: `'Apple Inc.'`, `"Monday"`.
//!
//! Models that think in Python or JSON quote their strings even where the protocol gives the
//! value as text (`<company>'Apple Inc.'</company>`, `day:「始」"Monday"「末」`). Coercion
//! reads such a value as the text between the quotes ([`quoted_text`]); a reader that
//! streams string values as they are written asks [`may_be_quoted_text`] whether to hold
//! what it has until the value ends, so that what it streamed is the coerced value.
//!
//! The rule is narrow on purpose, so that text which merely starts or ends with a quote is
//! kept as written: the value, blanks around it aside, is one line that starts and ends
//! with the same quote character (`'` or `"`) and holds no other quote of that kind. The
//! text between the quotes is taken as it is, no escapes read (`'C:\temp'` is `C:\temp`).
//! `'rock 'n' roll'`, `"a" and "b"`, `'90s` and a quoted line followed by more lines stay
//! as written, as does text longer than [`MAX_QUOTED_LEN`] bytes: a streaming reader holds
//! a value back at most that long, and each look at it is bounded by it.

/// Longest text, in bytes (blanks around it included), read as one quoted literal.
pub const MAX_QUOTED_LEN: usize = 1024;

/// The text between the quotes when `text` is one quoted literal by the module's rule,
/// else `None`.
///
/// ```
/// use tool_schema::quoted_text;
/// assert_eq!(quoted_text(" 'Apple Inc.' "), Some("Apple Inc."));
/// assert_eq!(quoted_text("\"Monday\""), Some("Monday"));
/// assert_eq!(quoted_text("'rock 'n' roll'"), None);
/// assert_eq!(quoted_text("'90s"), None);
/// ```
pub fn quoted_text(text: &str) -> Option<&str> {
    if text.len() > MAX_QUOTED_LEN {
        return None;
    }
    let trimmed = text.trim();
    let quote = opening_quote(trimmed)?;
    let inner = trimmed.get(1..trimmed.len().checked_sub(1)?)?;
    (trimmed.len() >= 2
        && trimmed.ends_with(quote)
        && !inner.contains(quote)
        && !inner.contains(['\n', '\r']))
    .then_some(inner)
}

/// Whether some continuation of `prefix` is one quoted literal ([`quoted_text`]): a value
/// streaming this far must be held back until it ends. Exact both ways: when it says
/// `false`, no text that starts with `prefix` is a quoted literal; when `prefix` is one,
/// it says `true` for each of its prefixes.
///
/// ```
/// use tool_schema::may_be_quoted_text;
/// assert!(may_be_quoted_text(""));
/// assert!(may_be_quoted_text("  'Apple"));
/// assert!(may_be_quoted_text("'Apple Inc.' "));
/// assert!(!may_be_quoted_text("Apple"));
/// assert!(!may_be_quoted_text("'Apple' Inc"));
/// assert!(!may_be_quoted_text("'Apple\n"));
/// ```
pub fn may_be_quoted_text(prefix: &str) -> bool {
    if prefix.len() > MAX_QUOTED_LEN {
        return false;
    }
    let started = prefix.trim_start();
    if started.is_empty() {
        return true;
    }
    let Some(quote) = opening_quote(started) else {
        return false;
    };
    let rest = &started[1..];
    match rest.find(quote) {
        None => !rest.contains(['\n', '\r']),
        Some(close) => {
            !rest[..close].contains(['\n', '\r']) && rest[close + 1..].trim_start().is_empty()
        }
    }
}

fn opening_quote(text: &str) -> Option<char> {
    match text.as_bytes().first()? {
        b'\'' => Some('\''),
        b'"' => Some('"'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn narrow_rule() {
        assert_eq!(quoted_text("''"), Some(""));
        assert_eq!(quoted_text("'"), None);
        assert_eq!(quoted_text("\""), None);
        assert_eq!(quoted_text("'a\""), None);
        assert_eq!(quoted_text("'C:\\temp'"), Some("C:\\temp"));
        assert_eq!(quoted_text("\"a\" and \"b\""), None);
        assert_eq!(quoted_text("'line\nline'"), None);
        assert_eq!(quoted_text("\n'Monday'\n"), Some("Monday"));
        assert_eq!(quoted_text("'Don\"t'"), Some("Don\"t"));
        assert_eq!(quoted_text("plain"), None);
        assert_eq!(quoted_text("「Apple」"), None);
        assert!(!may_be_quoted_text("x'"));
        assert!(may_be_quoted_text("'a'\n "));
        assert!(!may_be_quoted_text("'a'\n b"));
        // Bounded: a value held back while it streams is never longer than the limit.
        let long = format!("'{}'", "a".repeat(MAX_QUOTED_LEN - 2));
        assert_eq!(quoted_text(&long).map(str::len), Some(MAX_QUOTED_LEN - 2));
        let longer = format!("'{}'", "a".repeat(MAX_QUOTED_LEN - 1));
        assert_eq!(quoted_text(&longer), None);
        assert!(!may_be_quoted_text(&longer[..MAX_QUOTED_LEN + 1]));
        assert!(may_be_quoted_text(&longer[..MAX_QUOTED_LEN]));
    }

    fn texts() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just('\''),
                Just('"'),
                Just(' '),
                Just('\n'),
                Just('a'),
                Just('\\'),
                Just('é'),
            ],
            0..10,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        /// The streaming question agrees with the answer at the end: every prefix of a
        /// quoted literal may be one, and a prefix that may not be has no extension that is.
        #[test]
        fn prefixes_agree_with_the_whole(text in texts(), tail in texts()) {
            let whole = format!("{text}{tail}");
            if quoted_text(&whole).is_some() {
                for (at, _) in whole.char_indices() {
                    prop_assert!(may_be_quoted_text(&whole[..at]), "{:?} of {:?}", &whole[..at], whole);
                }
            }
            if !may_be_quoted_text(&text) {
                prop_assert_eq!(quoted_text(&whole), None);
            }
        }

        /// `true` is exact: some extension of the prefix is a quoted literal.
        #[test]
        fn may_be_is_exact(text in texts()) {
            if may_be_quoted_text(&text) {
                let ends = ["", "'", "\"", "''"];
                let any = ends.iter().any(|end| quoted_text(&format!("{text}{end}")).is_some());
                prop_assert!(any, "{:?}", text);
            }
        }
    }
}
