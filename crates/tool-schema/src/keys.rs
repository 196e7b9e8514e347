//! Argument keys: canonical forms, matching modes and suggestions for unknown keys.

/// How argument keys are matched to declared parameter names.
///
/// The two protocols disagree, so the caller chooses:
/// - TAM says keys are case- and underscore-insensitive, so a TAM dispatcher uses
///   [`KeyMatch::Canonical`]: `filePath`, `file_path` and `FILEPATH` all name `file_path`.
/// - ACTION XML says a parameter tag must equal the declared name, and its
///   self-correction example requires `playerId` against a `player_id` schema to be
///   rejected with `Unknown parameter 'playerId', did you mean 'player_id'?`, so an ACTION
///   dispatcher uses [`KeyMatch::Exact`].
///
/// The mode applies at every level: to the members of nested objects as to top-level
/// parameters. In both modes an exact match wins, and an unknown key gets a suggestion:
/// first a declared name with the same canonical key, then the most similar declared name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyMatch {
    /// Keys match when their canonical forms ([`canonical_key`]) are equal.
    Canonical,
    /// Keys match only when they are byte-equal.
    Exact,
}

/// The canonical form of a key: lowercase, with `_` and `-` removed
/// (`filePath`, `file_path`, `FILE-PATH` → `filepath`).
pub fn canonical_key(key: &str) -> String {
    canonical_chars(key).collect()
}

pub(crate) fn canonical_chars(key: &str) -> impl Iterator<Item = char> + '_ {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
}

/// Lowest similarity (normalised Damerau–Levenshtein on canonical keys) for a suggestion.
const SUGGESTION_THRESHOLD: f64 = 0.7;

/// The candidate most likely meant by an unknown `key`: one with the same canonical key,
/// else the most similar one (normalised Damerau–Levenshtein of the canonical keys, at
/// least 0.7; the first on a tie).
/// Runs only on error paths, so it recomputes canonical keys freely.
pub fn suggest<'c>(key: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let canonical = canonical_key(key);
    let candidates: Vec<(&str, String)> = candidates
        .into_iter()
        .map(|c| (c, canonical_key(c)))
        .collect();
    if let Some((same, _)) = candidates.iter().find(|(_, c)| *c == canonical) {
        return Some(same);
    }
    let mut best: Option<(f64, &str)> = None;
    for (candidate, candidate_canonical) in candidates {
        let score = strsim::normalized_damerau_levenshtein(&canonical, &candidate_canonical);
        if score >= SUGGESTION_THRESHOLD && best.is_none_or(|(top, _)| score > top) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_comparison_allocates_nothing_and_agrees_with_canonical_key() {
        for key in ["filePath", "file_path", "FILE-PATH", "Straße_Name"] {
            assert!(canonical_chars(key).eq(canonical_key(key).chars()));
        }
        assert_eq!(canonical_key("FILE-PATH"), "filepath");
    }
}
