//! What the ACTION decoder and the front door make of an ACTION stream, decoded every way
//! ([`decode_all_ways`]), in a form the two can be compared on: text (adjacent pieces
//! joined), blocks, and diagnostics outside blocks, in order, and whether any argument
//! event streamed.

use action_xml::{ActionBlock, Config, Event};
use tam::ProtocolChoice;

use crate::{Action, Front, decode_all_ways};

/// One thing a decoder made of a stream.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// Text; adjacent pieces are joined.
    Text(String),
    /// An ACTION block.
    Block(Box<ActionBlock>),
    /// A diagnostic outside blocks: its code and where it starts.
    Diagnostic(&'static str, usize),
}

/// What a decoder made of a stream.
#[derive(Debug, Default, PartialEq)]
pub struct Decoded {
    /// Text, blocks and diagnostics outside blocks, in order.
    pub seen: Vec<Seen>,
    /// Whether any argument event streamed.
    pub streamed: bool,
}

impl Decoded {
    fn push_text(&mut self, text: &str) {
        if let Some(Seen::Text(last)) = self.seen.last_mut() {
            last.push_str(text);
        } else {
            self.seen.push(Seen::Text(text.to_owned()));
        }
    }

    /// The text (all of it, concatenated), the blocks and the codes of the diagnostics
    /// outside blocks.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        for s in &self.seen {
            match s {
                Seen::Text(text) => summary.text.push_str(text),
                Seen::Block(b) => summary.blocks.push((**b).clone()),
                Seen::Diagnostic(code, _) => summary.outside.push(code),
            }
        }
        summary
    }
}

/// What a decoder made of a stream, each kind on its own: its text, its ACTION blocks, the
/// diagnostic codes outside blocks.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    /// All text, concatenated.
    pub text: String,
    /// The blocks.
    pub blocks: Vec<ActionBlock>,
    /// The codes of the diagnostics outside blocks.
    pub outside: Vec<&'static str>,
}

/// `input` decoded every way by `action_xml::Decoder` with the default config.
pub fn decode_action(input: &str) -> Decoded {
    let mut decoded = Decoded::default();
    for e in decode_all_ways(Action(Config::default()), input.as_bytes()) {
        match e {
            Event::Text { text, .. } => decoded.push_text(&text),
            Event::Block(b) => decoded.seen.push(Seen::Block(Box::new(b))),
            Event::Diagnostic(d) => decoded
                .seen
                .push(Seen::Diagnostic(d.code.as_str(), d.span.start)),
            Event::CallStart { .. }
            | Event::ParamStart { .. }
            | Event::ParamText { .. }
            | Event::ParamEnd { .. }
            | Event::CallEnd { .. } => decoded.streamed = true,
            _ => {}
        }
    }
    decoded
}

/// `input` decoded every way by the front door `tam::Decoder` for `choice`; a TAM block
/// in it panics.
pub fn decode_front(input: &str, choice: ProtocolChoice) -> Decoded {
    let mut decoded = Decoded::default();
    let events = decode_all_ways(Front(tam::Config::for_protocol(choice)), input.as_bytes());
    for e in events {
        match e {
            tam::Event::Text { text, .. } => decoded.push_text(&text),
            tam::Event::ActionBlock(b) => decoded.seen.push(Seen::Block(Box::new(b))),
            tam::Event::TamBlock(b) => panic!("{choice}: a TAM block in {input:?}: {b:?}"),
            tam::Event::Diagnostic(d) => decoded
                .seen
                .push(Seen::Diagnostic(d.code.as_str(), d.span.start)),
            e if e.is_argument_event() => decoded.streamed = true,
            _ => {}
        }
    }
    decoded
}
