//! Where a field of a YAML document was written, for error messages.
//!
//! The loaders check a `serde_json::Value`, which has no positions. When a check fails on
//! a `plugin.yaml`, the text is read once more, into a tree that keeps serde-saphyr's
//! [`Spanned`] location of every node, and the error's field path
//! (`tools[1].implementation.type`) is walked down that tree. Only failing loads pay for
//! the second read.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A YAML node's children, each with its location.
enum Tree {
    Leaf,
    Seq(Vec<Spanned<Tree>>),
    Map(Vec<(String, Spanned<Tree>)>),
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tree, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_none<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Leaf)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tree, D::Error> {
        Tree::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Tree>>()? {
            items.push(item);
        }
        Ok(Tree::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            entries.push((key.0, map.next_value::<Spanned<Tree>>()?));
        }
        Ok(Tree::Map(entries))
    }
}

/// A mapping key as text (a key that is not a scalar reads as empty: no path names it).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key(String::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Key, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Key(String::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Key(String::new()))
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}

/// One step of a field path: `name` or `[index]`.
#[derive(Debug, PartialEq)]
enum Step<'p> {
    Key(&'p str),
    Index(usize),
}

/// The steps of `tools[1].implementation.type`; none for `(document)`, the root; `None`
/// for a path that is not one.
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    if path == "(document)" {
        return Some(out);
    }
    for part in path.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']')?;
            out.push(Step::Index(inner[..close].parse().ok()?));
            rest = &inner[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

/// The 1-based line of the node `field` names in the YAML `text` — or, when the path
/// leaves the document (a missing field), of the deepest node on it. `None` when the text
/// does not parse or the path is not one.
pub(crate) fn line_of(text: &str, field: &str) -> Option<u32> {
    let steps = steps(field)?;
    let root: Spanned<Tree> = serde_saphyr::from_str(text).ok()?;
    let mut node = &root;
    for step in steps {
        let next = match (&node.value, step) {
            (Tree::Map(entries), Step::Key(k)) => {
                entries.iter().find(|(key, _)| key == k).map(|(_, v)| v)
            }
            (Tree::Seq(items), Step::Index(i)) => items.get(i),
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => break,
        }
    }
    u32::try_from(node.referenced.line())
        .ok()
        .filter(|&l| l > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_split_into_steps() {
        assert_eq!(
            steps("tools[1].implementation.type"),
            Some(vec![
                Step::Key("tools"),
                Step::Index(1),
                Step::Key("implementation"),
                Step::Key("type")
            ])
        );
        assert_eq!(steps("[3]"), Some(vec![Step::Index(3)]));
        assert_eq!(steps("(document)"), Some(vec![]));
        assert_eq!(steps("a[x]"), None);
    }

    #[test]
    fn lines_of_present_and_missing_fields() {
        let text =
            "name: p\ntools:\n  - id: p:a\n  - id: p:b\n    implementation:\n      type: rocket\n";
        assert_eq!(line_of(text, "tools[1].implementation.type"), Some(6));
        assert_eq!(line_of(text, "tools[0].id"), Some(3));
        // Missing: the deepest node on the path, here the tool that lacks it.
        assert_eq!(line_of(text, "tools[0].implementation"), Some(3));
        assert_eq!(line_of("a: [", "a"), None);
    }
}
