//! From a block body to calls: each child element of ACTION is a call, its child elements
//! are parameters, and values follow the rules in the crate docs ("The protocol"). This
//! module reads the roxmltree document; [`direct`] reads the plain subset without it.

mod direct;

pub(crate) use direct::read_direct;

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use roxmltree::Node;
use serde_json::map::Entry;
use serde_json::{Map, Value};
use tam_parse::scan::OffsetMap;
use tam_parse::{ByteString, Diagnostic, Span, preview};

use crate::call::{ActionCall, ActionParam};
use crate::codes;
use crate::prescan::{CdataRef, Prepared};
use crate::value::{assemble, cdata_edges};
use crate::xml_chars::{decode_text, is_blank, name_end, trim_xml, trim_xml_end, trim_xml_start};

/// Converts the tree of one block, collecting warnings.
pub(crate) struct TreeReader<'p> {
    pub prepared: &'p Prepared,
    /// Offset of the body in the block's raw text.
    pub body_start: usize,
    /// The block body as written: a slice of `raw`.
    pub body: &'p str,
    /// The block's raw text.
    pub raw: &'p ByteString,
    pub offsets: &'p OffsetMap,
    pub diagnostics: &'p mut Vec<Diagnostic>,
}

/// Where ignored text was found, for its warning.
#[derive(Debug, Clone, Copy)]
enum Place<'n> {
    /// Between calls.
    Top,
    /// Inside the call of this tool.
    Call(&'n str),
    /// Beside the child elements of this value.
    Value(&'n str),
}

/// At most this many characters of ignored text are quoted in a warning.
const PREVIEW_CHARS: usize = 40;

/// Inserts `key: value` into a call's or an object's map; a name that repeats makes an array
/// of its values in order. `repeated` holds the names already turned into arrays
/// (it allocates only when a name repeats).
fn insert_value<'k>(
    map: &mut Map<String, Value>,
    repeated: &mut HashSet<&'k str>,
    key: &'k str,
    value: Value,
) {
    match map.entry(key) {
        Entry::Vacant(slot) => {
            slot.insert(value);
        }
        Entry::Occupied(mut slot) => match slot.get_mut() {
            Value::Array(items) if repeated.contains(key) => items.push(value),
            first @ (Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_)
            | Value::Object(_)) => {
                let first = first.take();
                *slot.get_mut() = Value::Array(vec![first, value]);
                repeated.insert(key);
            }
        },
    }
}

impl TreeReader<'_> {
    /// The stream span of a document range.
    pub(crate) fn span(&self, doc: Range<usize>) -> Span {
        let map = &self.prepared.map;
        let start = self.body_start + map.body(doc.start);
        let end = self.body_start + map.body(doc.end);
        self.offsets.span(start..end.max(start))
    }

    /// The element's name as written, prefix included.
    fn name<'d>(&self, node: Node<'_, 'd>) -> &'d str {
        let tag = node.tag_name();
        if tag.namespace().is_none() {
            // Without a namespace there is no prefix: the local name is the name.
            return tag.name();
        }
        let doc = node.document().input_text();
        let start = node.range().start + 1;
        &doc[start..name_end(doc, start)]
    }

    /// The calls: the child elements of the root. An `<ACTION>` element among them (the
    /// block's own `<ACTION>` was a mention in prose, the real one followed) holds calls
    /// itself.
    pub(crate) fn calls(&mut self, root: Node<'_, '_>) -> Vec<ActionCall> {
        let mut calls = Vec::new();
        self.calls_in(root, &mut calls);
        calls
    }

    fn calls_in(&mut self, parent: Node<'_, '_>, calls: &mut Vec<ActionCall>) {
        for child in parent.children() {
            if child.is_element() {
                let name = self.name(child);
                if name.eq_ignore_ascii_case("ACTION")
                    && parent.parent().is_some_and(|p| p.is_root())
                {
                    self.attributes(child, name);
                    self.diagnostics.push(Diagnostic::warning(
                        codes::NESTED_ACTION_TAG,
                        self.span(child.range().start..child.range().start + name.len() + 1),
                        "<ACTION> inside an ACTION block: its children were read as calls (the first <ACTION> was probably prose)",
                    ));
                    self.calls_in(child, calls);
                } else {
                    calls.push(self.call(child));
                }
            } else if child.is_text() {
                self.stray(child, Place::Top);
            }
        }
    }

    fn call(&mut self, node: Node<'_, '_>) -> ActionCall {
        let tool = self.name(node);
        self.attributes(node, tool);
        let params = node
            .children()
            .filter(Node::is_element)
            .map(|child| self.param_source(child))
            .collect();
        ActionCall {
            params,
            tool: tool.to_owned(),
            args: self.object(
                node,
                Place::Call(tool),
                node.children().filter(Node::is_element).count(),
            ),
            span: self.span(node.range()),
        }
    }

    fn object(
        &mut self,
        node: Node<'_, '_>,
        place: Place<'_>,
        elements: usize,
    ) -> Map<String, Value> {
        let mut map = Map::with_capacity(elements);
        // Keys that repeated, whose value is now the array of their values.
        let mut repeated: HashSet<&str> = HashSet::new();
        for child in node.children() {
            if child.is_text() {
                self.stray(child, place);
                continue;
            }
            if !child.is_element() {
                continue;
            }
            let key = self.name(child);
            let value = self.value(child, key);
            insert_value(&mut map, &mut repeated, key, value);
        }
        map
    }

    fn value(&mut self, node: Node<'_, '_>, name: &str) -> Value {
        self.attributes(node, name);
        let mut elements = 0;
        let mut all_items = true;
        for child in node.children().filter(Node::is_element) {
            elements += 1;
            all_items &= self.name(child) == "item";
        }
        if elements == 0 {
            return Value::String(self.leaf(node));
        }
        if node
            .children()
            .any(|c| c.is_text() && !is_blank(c.text().unwrap_or("")))
        {
            // Text beside child elements: code or markup (`let s = "<b>x</b>";`, JSX,
            // HTML). The value is the inner text as written, read as a leaf is.
            return Value::String(self.inner_text(node));
        }
        let place = Place::Value(name);
        if !all_items {
            return Value::Object(self.object(node, place, elements));
        }
        let mut items = Vec::with_capacity(elements);
        for child in node.children() {
            if child.is_element() {
                items.push(self.value(child, "item"));
            } else if child.is_text() {
                self.stray(child, place);
            }
        }
        Value::Array(items)
    }

    fn stray(&mut self, text_node: Node<'_, '_>, place: Place<'_>) {
        let text = text_node.text().unwrap_or("");
        if is_blank(text) {
            return;
        }
        let what = match place {
            Place::Top => "text between tool calls is not a call and was ignored".to_owned(),
            Place::Call(tool) => format!("text inside <{tool}> is not a parameter and was ignored"),
            Place::Value(name) => format!("text beside the child elements of <{name}> was ignored"),
        };
        // The span covers the written text without the blanks around it.
        let range = text_node.range();
        let written = &self.prepared.doc[range.clone()];
        let start = range.start + (written.len() - trim_xml_start(written).len());
        let end = range.start + trim_xml_end(written).len();
        self.diagnostics.push(Diagnostic::warning(
            codes::STRAY_TEXT,
            self.span(start..end.max(start)),
            format!("{what}: '{}'", preview(trim_xml(text), PREVIEW_CHARS)),
        ));
    }

    fn attributes(&mut self, node: Node<'_, '_>, name: &str) {
        let mut attrs = node.attributes();
        let Some(first) = attrs.next() else {
            return;
        };
        let mut names = vec![first.name()];
        let mut range = first.range();
        for a in attrs {
            names.push(a.name());
            range.end = a.range().end;
        }
        self.diagnostics.push(Diagnostic::warning(
            codes::IGNORED_ATTRIBUTE,
            self.span(range),
            format!(
                "attributes carry no parameters; ignored on <{name}>: {}",
                names.join(", ")
            ),
        ));
    }

    /// The string value of an element without child elements.
    fn leaf(&self, node: Node<'_, '_>) -> String {
        let range = node.range();
        let cdata = &self.prepared.cdata;
        let k = cdata.partition_point(|c| c.full.start < range.start);
        if cdata.get(k).is_some_and(|c| c.full.start < range.end) {
            return self.leaf_with_cdata(node, k);
        }
        trim_xml(node.text().unwrap_or("")).to_owned()
    }

    /// A parameter element's name and the exact source of its content.
    fn param_source(&self, node: Node<'_, '_>) -> ActionParam {
        let doc = self.prepared.doc.as_str();
        let range = node.range();
        let content_start = start_tag_end(doc, range.start).min(range.end);
        let content_end = if doc[..range.end].ends_with("/>") && content_start == range.end {
            range.end
        } else {
            doc[..range.end]
                .rfind("</")
                .filter(|&e| e >= content_start)
                .unwrap_or(range.end)
        };
        let map = &self.prepared.map;
        let start = map.body(content_start);
        let end = map.body(content_end).max(start);
        ActionParam {
            // The name from the document (the fallback path; a copy).
            key: ByteString::from(self.name(node)),
            content_span: self
                .offsets
                .span(self.body_start + start..self.body_start + end),
            source: self
                .body
                .get(start..end)
                .map_or_else(ByteString::new, |s| self.raw.slice_ref(s)),
        }
    }

    /// The inner text of an element with mixed content, as written: markup kept, entity
    /// references decoded, CDATA sections by the rule of [`TreeReader::leaf_with_cdata`].
    fn inner_text(&self, node: Node<'_, '_>) -> String {
        let start = node.range().start;
        let k = self
            .prepared
            .cdata
            .partition_point(|c| c.full.start < start);
        self.leaf_with_cdata(node, k)
    }

    /// A value holding CDATA: the sections verbatim, except a line break right after the
    /// first `<![CDATA[` and the blanks after the last line break before the last `]]>`;
    /// text around the sections is decoded and trimmed at the edges.
    fn leaf_with_cdata(&self, node: Node<'_, '_>, first: usize) -> String {
        let doc = self.prepared.doc.as_str();
        let range = node.range();
        let content_start = start_tag_end(doc, range.start);
        let content_end = doc[..range.end]
            .rfind("</")
            .filter(|&e| e >= content_start)
            .unwrap_or(range.end);
        cdata_value(
            doc,
            &self.prepared.cdata[first..],
            content_start..content_end,
        )
    }
}

/// The value of `doc[content]` by the rule of [`TreeReader::leaf_with_cdata`]; `cdata` are
/// the CDATA sections from the first one that may lie in `content` on, in order.
fn cdata_value(doc: &str, cdata: &[CdataRef], content: Range<usize>) -> String {
    // Text pieces are decoded unless blank without a `\r` (the usual indentation around a
    // section): a line end in text is `\n` wherever it stands.
    fn text(s: &str) -> Cow<'_, str> {
        if is_blank(s) && !s.contains('\r') {
            Cow::Borrowed(s)
        } else {
            Cow::Owned(decode_text(s))
        }
    }
    let sections = cdata
        .iter()
        .take_while(|c| c.full.start < content.end)
        .count();
    if let [only] = &cdata[..sections]
        && doc
            .get(content.start..only.full.start)
            .is_some_and(is_blank)
        && doc.get(only.full.end..content.end).is_some_and(is_blank)
        && let Some(section) = doc.get(only.content.clone())
    {
        // The common case, one section with blanks around it: no list of pieces.
        return cdata_edges(section, true, true).to_owned();
    }
    let mut pieces: Vec<(bool, Cow<'_, str>)> = Vec::with_capacity(2 * sections + 1);
    let mut at = content.start;
    for c in cdata.iter().take_while(|c| c.full.start < content.end) {
        if c.full.start > at {
            pieces.push((false, text(&doc[at..c.full.start])));
        }
        pieces.push((true, Cow::Borrowed(&doc[c.content.clone()])));
        at = c.full.end;
    }
    if at < content.end {
        pieces.push((false, text(&doc[at..content.end])));
    }
    assemble(pieces)
}

/// The offset after the `>` of the start tag that begins at `start`.
fn start_tag_end(doc: &str, start: usize) -> usize {
    let bytes = doc.as_bytes();
    let mut i = start + 1;
    let mut quote = None;
    while let Some(&b) = bytes.get(i) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}
