//! Values from the flat list: strings, arrays and objects by the rules of the tree, with
//! large objects built sorted in one go.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use tam_parse::scan::OffsetMap;
use tam_parse::{ByteString, Span};

use super::Elem;
use crate::call::{ActionCall, ActionParam};
use crate::prescan::CdataRef;
use crate::tree::{cdata_value, insert_value};
use crate::xml_chars::{
    decode_text, is_xml_space, push_reference, reference_len, trim_xml, trim_xml_end,
    trim_xml_start,
};

/// Objects with more members than this are built by [`DirectReader::sorted_object`]
/// (when the map sorts its keys): up to here a B-tree insert stays within one node.
pub(super) const SMALL_OBJECT: usize = 11;

/// True when `serde_json::Map` keeps its keys sorted (a `BTreeMap`), false when it keeps
/// them in insertion order (serde_json's `preserve_order` feature, which any crate in the
/// build may turn on). Found out once, by building a map.
pub(super) fn map_sorts_keys() -> bool {
    static SORTS: OnceLock<bool> = OnceLock::new();
    *SORTS.get_or_init(|| {
        let map: Map<String, Value> = [("b", Value::Null), ("a", Value::Null)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        map.keys().next().is_some_and(|k| k == "a")
    })
}

/// Reads values from the list [`flat_tree`](super::flat::flat_tree) made, by the rules of [`TreeReader`](crate::tree::TreeReader).
pub(super) struct DirectReader<'r> {
    /// The block's raw text; `body` is a slice of it.
    pub(super) raw: &'r ByteString,
    pub(super) body: &'r str,
    pub(super) body_start: usize,
    pub(super) offsets: &'r OffsetMap,
    pub(super) elems: &'r [Elem],
    pub(super) cdata: &'r [CdataRef],
    /// Where the references outside CDATA begin, in order; `None` when the body holds a
    /// carriage return (text is then decoded by [`decode_text`], which normalises it).
    pub(super) refs: Option<&'r [usize]>,
}

impl DirectReader<'_> {
    pub(super) fn span(&self, r: Range<usize>) -> Span {
        self.offsets
            .span(self.body_start + r.start..self.body_start + r.end)
    }

    pub(super) fn name(&self, i: usize) -> &str {
        &self.body[self.elems[i].name.clone()]
    }

    /// The indices of the child elements of element `i`.
    pub(super) fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.elems[i].next;
        std::iter::successors(Some(i + 1).filter(|&c| c < end), move |&c| {
            Some(self.elems[c].next).filter(|&n| n < end)
        })
    }

    pub(super) fn call(&self, i: usize) -> ActionCall {
        let e = &self.elems[i];
        let mut params = Vec::with_capacity(e.elements);
        params.extend(self.children(i).map(|c| {
            let content = self.elems[c].content.clone();
            ActionParam {
                key: self.raw.slice_ref(self.name(c)),
                content_span: self.span(content.clone()),
                source: self.raw.slice_ref(&self.body[content]),
            }
        }));
        ActionCall {
            params,
            tool: self.name(i).to_owned(),
            args: self.object(i),
            span: self.span(e.start..e.end),
        }
    }

    /// As [`TreeReader::object`](crate::tree::TreeReader::object): a repeated name makes an array.
    pub(super) fn object(&self, i: usize) -> Map<String, Value> {
        if self.elems[i].elements > SMALL_OBJECT && map_sorts_keys() {
            return self.sorted_object(i);
        }
        self.inserted_object(i)
    }

    /// [`DirectReader::object`] by inserting the members one by one.
    pub(super) fn inserted_object(&self, i: usize) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.elems[i].elements);
        // Keys that repeated, whose value is now the array of their values (rare: a list).
        let mut repeated: HashSet<&str> = HashSet::new();
        for child in self.children(i) {
            let key = self.name(child);
            let value = self.value(child);
            insert_value(&mut map, &mut repeated, key, value);
        }
        map
    }

    /// [`DirectReader::object`] for many members in a map that sorts its keys: the members
    /// sorted by name (stably: a repeated name's values stay in document order, and make
    /// an array), then built in one pass. The same map as inserting them one by one, for
    /// O(n log n) name comparisons and no node splits (a B-tree insert compares with
    /// several keys per level, each a `memcmp` of names that often share a long prefix).
    ///
    /// Each member is sorted as (its name's first 16 bytes read as one big-endian number,
    /// its name, its index): the number orders names as their bytes do and settles most
    /// comparisons without a `memcmp`, and the index — which grows in document order —
    /// makes every key distinct, so an unstable sort keeps a repeated name's elements in
    /// document order.
    pub(super) fn sorted_object(&self, i: usize) -> Map<String, Value> {
        let mut order: Vec<(u128, &str, usize)> = self
            .children(i)
            .map(|c| {
                let name = self.name(c);
                (name_prefix(name), name, c)
            })
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)).then(a.2.cmp(&b.2)));
        let mut members: Vec<(String, Value)> = Vec::with_capacity(order.len());
        let mut k = 0;
        while k < order.len() {
            let (prefix, name, _) = order[k];
            let run = order[k..]
                .iter()
                .take_while(|o| o.0 == prefix && o.1 == name)
                .count();
            let value = match &order[k..k + run] {
                [one] => self.value(one.2),
                many => Value::Array(many.iter().map(|o| self.value(o.2)).collect()),
            };
            members.push((name.to_owned(), value));
            k += run;
        }
        // Already sorted with unique keys: `BTreeMap::from_iter` sorts in one pass and
        // builds the tree bottom-up.
        members.into_iter().collect()
    }

    /// As [`TreeReader::value`](crate::tree::TreeReader::value).
    pub(super) fn value(&self, i: usize) -> Value {
        let e = &self.elems[i];
        if e.elements == 0 || e.text {
            // A leaf, or code with markup: its content as written, read as a leaf.
            return Value::String(self.leaf(e));
        }
        if !e.all_items {
            return Value::Object(self.object(i));
        }
        let mut items = Vec::with_capacity(e.elements);
        items.extend(self.children(i).map(|c| self.value(c)));
        Value::Array(items)
    }

    /// As [`TreeReader::leaf`](crate::tree::TreeReader::leaf) and [`TreeReader::inner_text`](crate::tree::TreeReader::inner_text).
    pub(super) fn leaf(&self, e: &Elem) -> String {
        let k = self.cdata.partition_point(|c| c.full.start < e.start);
        if e.elements > 0 || self.cdata.get(k).is_some_and(|c| c.full.start < e.end) {
            return cdata_value(self.body, &self.cdata[k..], e.content.clone());
        }
        let text = &self.body[e.content.clone()];
        let mut decoded = match self.refs {
            // No carriage return to normalise: the text as written between the references
            // the reader found (code's bare `&`s are text as written).
            Some(refs) => {
                let from = refs.partition_point(|&r| r < e.content.start);
                let to = refs.partition_point(|&r| r < e.content.end);
                if from == to {
                    return trim_xml(text).to_owned();
                }
                // Blanks before the first reference are trimmed whatever it stands for:
                // passed over here, so that trimming the decoded text seldom moves it.
                let first = refs[from];
                let lead = self.body.as_bytes()[e.content.start..first]
                    .iter()
                    .take_while(|&&c| is_xml_space(c))
                    .count();
                let mut at = e.content.start + lead;
                let mut out = String::with_capacity(e.content.end - at);
                for &r in &refs[from..to] {
                    out.push_str(&self.body[at..r]);
                    let len = reference_len(self.body.as_bytes(), r).unwrap_or(1);
                    push_reference(&mut out, &self.body[r..r + len]);
                    at = r + len;
                }
                out.push_str(&self.body[at..e.content.end]);
                out
            }
            None if memchr::memchr2(b'&', b'\r', text.as_bytes()).is_none() => {
                return trim_xml(text).to_owned();
            }
            None => decode_text(text),
        };
        // Decoded before trimming, as roxmltree's text is: `&#32;` at an edge goes too.
        let start = decoded.len() - trim_xml_start(&decoded).len();
        let end = trim_xml_end(&decoded).len().max(start);
        decoded.truncate(end);
        decoded.drain(..start);
        decoded
    }
}

/// The first 16 bytes of `name` as a big-endian number, zeros after a shorter name: two
/// names whose numbers differ compare as the numbers do (a name that is a prefix of the
/// other is the smaller either way); equal numbers say nothing, and the names are compared.
pub(super) fn name_prefix(name: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    u128::from_be_bytes(bytes)
}
