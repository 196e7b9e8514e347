//! The harnesses of the workspace's decoders, as macros that expand in the test crate: the
//! kit depends on no decoder (so it is packaged before them), while the harnesses are
//! written once. Each macro names its decoder by its crate's name (`tam_parse`,
//! `action_xml`, `tam`), which the test crate has as a dependency. The items they define
//! are `#[allow(dead_code)]`: a test binary uses some of them.

/// The [`Harness`](crate::Harness) methods `run_str` and `run_bytes` for decoder type
/// `$decoder`, built from the harness's config in field 0 (or by `$h => $make`, the harness
/// named `$h`), ended with `$finish`.
#[doc(hidden)]
#[macro_export]
macro_rules! __harness_runs {
    ($($decoder:ident)::+, $finish:ident) => {
        $crate::__harness_runs!(h => $($decoder)::+::new(h.0), $finish);
    };
    ($h:ident => $make:expr, $finish:ident) => {
        fn run_str<'a>(self, deltas: impl IntoIterator<Item = &'a str>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let $h = self;
            let mut decoder = $make;
            for delta in deltas {
                decoder.feed(delta, |e| $crate::push::<Self>(&mut events, e.into_owned()));
            }
            decoder.$finish(|e| $crate::push::<Self>(&mut events, e.into_owned()));
            events
        }

        fn run_bytes<'a>(self, deltas: impl IntoIterator<Item = &'a [u8]>) -> Vec<Self::Event> {
            let mut events = Vec::new();
            let $h = self;
            let mut decoder = $make;
            for delta in deltas {
                decoder.feed_bytes(delta, |e| $crate::push::<Self>(&mut events, e.into_owned()));
            }
            decoder.$finish(|e| $crate::push::<Self>(&mut events, e.into_owned()));
            events
        }
    };
}

/// The [`Harness`](crate::Harness) methods that read and extend the text variant `$text`
/// (fields `text: Cow<str>`, `span` with `start` and `end`).
#[doc(hidden)]
#[macro_export]
macro_rules! __harness_text {
    ($($text:ident)::+) => {
        fn text(e: &Self::Event) -> Option<(&str, ::std::ops::Range<usize>)> {
            match e {
                $($text)::+ { text, span } => Some((text, span.start..span.end)),
                _ => None,
            }
        }

        fn extend_text(last: &mut Self::Event, text: &str, span: ::std::ops::Range<usize>) -> bool {
            match last {
                $($text)::+ { text: prev, span: prev_span } if prev_span.end == span.start => {
                    prev.to_mut().push_str(text);
                    prev_span.end = span.end;
                    true
                }
                _ => false,
            }
        }
    };
}

/// The [`Harness::reasoning`](crate::Harness::reasoning) method for the reasoning variant
/// `$reasoning` (fields `text`, `span`).
#[doc(hidden)]
#[macro_export]
macro_rules! __harness_reasoning {
    ($($reasoning:ident)::+) => {
        fn reasoning(e: &Self::Event) -> Option<(&str, ::std::ops::Range<usize>)> {
            match e {
                $($reasoning)::+ { text, span } => Some((text, span.start..span.end)),
                _ => None,
            }
        }
    };
}

/// The [`Harness`](crate::Harness) methods that read events — `text`, `extend_text`,
/// `tiling_span`, `extend_piece`, `reasoning` — of a harness whose events are those of
/// harness `$of` (a decoder given other settings, or another harness's events filtered):
/// `impl Harness for Mine { type Event = …; fn run_str… fn run_bytes… same_events_as!(Of); }`.
#[macro_export]
macro_rules! same_events_as {
    ($of:ident) => {
        fn text(e: &Self::Event) -> Option<(&str, ::std::ops::Range<usize>)> {
            <$of as $crate::Harness>::text(e)
        }

        fn extend_text(last: &mut Self::Event, text: &str, span: ::std::ops::Range<usize>) -> bool {
            <$of as $crate::Harness>::extend_text(last, text, span)
        }

        fn tiling_span(e: &Self::Event) -> Option<::std::ops::Range<usize>> {
            <$of as $crate::Harness>::tiling_span(e)
        }

        fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
            <$of as $crate::Harness>::extend_piece(last, next)
        }

        fn reasoning(e: &Self::Event) -> Option<(&str, ::std::ops::Range<usize>)> {
            <$of as $crate::Harness>::reasoning(e)
        }
    };
}

/// Defines `Tam` and `TamCut`, the harnesses of the TAM decoder (`tam_parse::Decoder`)
/// with a config; `TamCut` ends the stream with `finish_cut` (a stream cut at the token
/// limit or by a transport error).
///
/// A `marker_in_prose` warning annotates text events that cover its bytes: it does not
/// tile. Adjacent `ParamText` pieces merge, and so do adjacent `Reasoning` pieces.
#[macro_export]
macro_rules! tam_harness {
    () => {
        /// The TAM decoder with a config.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct Tam(pub ::tam_parse::Config);

        /// The TAM decoder with a config, ended with `finish_cut`.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct TamCut(pub ::tam_parse::Config);

        impl $crate::Harness for Tam {
            type Event = ::tam_parse::Event<'static>;

            $crate::__harness_runs!(tam_parse::Decoder, finish);

            $crate::__harness_text!(tam_parse::Event::Text);

            fn tiling_span(e: &Self::Event) -> Option<::std::ops::Range<usize>> {
                use ::tam_parse::Event;
                let span = match e {
                    Event::Text { span, .. }
                    | Event::ReasoningStart { span }
                    | Event::Reasoning { span, .. }
                    | Event::ReasoningEnd { span } => *span,
                    Event::Block(b) => b.span,
                    Event::Diagnostic(d) if d.code != ::tam_parse::Code::MARKER_IN_PROSE => d.span,
                    _ => return None,
                };
                Some(span.start..span.end)
            }

            fn extend_piece(last: &mut Self::Event, next: &Self::Event) -> bool {
                use ::tam_parse::Event::{ParamText, Reasoning};
                match (last, next) {
                    (
                        ParamText {
                            text: prev,
                            span: prev_span,
                        },
                        ParamText { text, span },
                    )
                    | (
                        Reasoning {
                            text: prev,
                            span: prev_span,
                        },
                        Reasoning { text, span },
                    ) if prev_span.end == span.start => {
                        prev.to_mut().push_str(text);
                        prev_span.end = span.end;
                        true
                    }
                    _ => false,
                }
            }

            $crate::__harness_reasoning!(tam_parse::Event::Reasoning);
        }

        impl $crate::Harness for TamCut {
            type Event = ::tam_parse::Event<'static>;

            $crate::__harness_runs!(tam_parse::Decoder, finish_cut);

            $crate::same_events_as!(Tam);
        }
    };
}

/// Defines `Action` (the ACTION decoder, `action_xml::Decoder`, with a config),
/// `ActionTools` (with the offered tools' names too, whose call elements count without
/// `<ACTION>`: `Decoder::with_bare_call_tools`), `action_config` (the default config with
/// [`SmallLimits`](crate::SmallLimits)), and what the ACTION decoder makes of a
/// stream decoded every way — `decode_action` — as `Seen` items (`Decoded`, `Summary`), in
/// the form [`front_harness!`](crate::front_harness)'s `decode_front` gives too.
#[macro_export]
macro_rules! action_harness {
    () => {
        /// The ACTION decoder with a config.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct Action(pub ::action_xml::Config);

        /// The ACTION decoder with a config and the names of the offered tools.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct ActionTools(pub ::action_xml::Config, pub &'static [&'static str]);

        impl $crate::Harness for Action {
            type Event = ::action_xml::Event<'static>;

            $crate::__harness_runs!(action_xml::Decoder, finish);

            $crate::__harness_text!(action_xml::Event::Text);

            fn tiling_span(e: &Self::Event) -> Option<::std::ops::Range<usize>> {
                use ::action_xml::Event;
                let span = match e {
                    Event::Text { span, .. }
                    | Event::ReasoningStart { span }
                    | Event::Reasoning { span, .. }
                    | Event::ReasoningEnd { span } => *span,
                    Event::Block(b) => b.span,
                    Event::Diagnostic(d) => d.span,
                    _ => return None,
                };
                Some(span.start..span.end)
            }

            fn extend_piece(last: &mut Self::Event, e: &Self::Event) -> bool {
                use ::action_xml::Event::{ParamText, Reasoning};
                match (last, e) {
                    (ParamText { text, span, cdata }, ParamText { text: more, span: s, cdata: c })
                        if cdata == c && span.end == s.start =>
                    {
                        text.to_mut().push_str(more);
                        span.end = s.end;
                        true
                    }
                    (Reasoning { text, span }, Reasoning { text: more, span: s }) if span.end == s.start => {
                        text.to_mut().push_str(more);
                        span.end = s.end;
                        true
                    }
                    _ => false,
                }
            }

            $crate::__harness_reasoning!(action_xml::Event::Reasoning);
        }

        impl $crate::Harness for ActionTools {
            type Event = ::action_xml::Event<'static>;

            $crate::__harness_runs!(h => ::action_xml::Decoder::new(h.0).with_bare_call_tools(h.1), finish);

            $crate::same_events_as!(Action);
        }

        /// The default ACTION config with `limits`.
        #[allow(dead_code)]
        pub fn action_config(limits: $crate::SmallLimits) -> ::action_xml::Config {
            let mut c = ::action_xml::Config::default();
            c.max_block_bytes = limits.block_bytes;
            c.max_depth = limits.depth;
            c.max_nodes = limits.nodes;
            c
        }

        /// One thing a decoder made of a stream.
        #[allow(dead_code)]
        #[derive(Debug, PartialEq)]
        pub enum Seen {
            /// Text; adjacent pieces are joined.
            Text(String),
            /// An ACTION block.
            Block(Box<::action_xml::ActionBlock>),
            /// A diagnostic outside blocks: its code and where it starts.
            Diagnostic(&'static str, usize),
        }

        /// What a decoder made of a stream: text, blocks and diagnostics outside blocks, in
        /// order, and whether any argument event streamed.
        #[allow(dead_code)]
        #[derive(Debug, Default, PartialEq)]
        pub struct Decoded {
            /// Text, blocks and diagnostics outside blocks, in order.
            pub seen: Vec<Seen>,
            /// Whether any argument event streamed.
            pub streamed: bool,
        }

        #[allow(dead_code)]
        impl Decoded {
            fn push_text(&mut self, text: &str) {
                if let Some(Seen::Text(last)) = self.seen.last_mut() {
                    last.push_str(text);
                } else {
                    self.seen.push(Seen::Text(text.to_owned()));
                }
            }

            /// The text (all of it, concatenated), the blocks and the codes of the
            /// diagnostics outside blocks.
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

        /// What a decoder made of a stream, each kind on its own.
        #[allow(dead_code)]
        #[derive(Debug, Default, PartialEq)]
        pub struct Summary {
            /// All text, concatenated.
            pub text: String,
            /// The blocks.
            pub blocks: Vec<::action_xml::ActionBlock>,
            /// The codes of the diagnostics outside blocks.
            pub outside: Vec<&'static str>,
        }

        /// `input` decoded every way by `action_xml::Decoder` with the default config.
        #[allow(dead_code)]
        pub fn decode_action(input: &str) -> Decoded {
            use ::action_xml::Event;
            let mut decoded = Decoded::default();
            let events = $crate::decode_all_ways(Action(::action_xml::Config::default()), input.as_bytes());
            for e in events {
                match e {
                    Event::Text { text, .. } => decoded.push_text(&text),
                    Event::Block(b) => decoded.seen.push(Seen::Block(Box::new(b))),
                    Event::Diagnostic(d) => decoded.seen.push(Seen::Diagnostic(d.code.as_str(), d.span.start)),
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
    };
}

/// Defines `Front` (the front door, `tam::Decoder`, with a config: TAM and ACTION blocks in
/// one stream with the default `tam::Config::protocol`, or one protocol), `FrontTools`
/// (with the offered tools' names too) and `decode_front`: what the front door makes of an
/// ACTION stream decoded every way, in the form of `decode_action` (use
/// [`action_harness!`](crate::action_harness) in the same module first).
#[macro_export]
macro_rules! front_harness {
    () => {
        /// The front door with a config.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct Front(pub ::tam::Config);

        /// The front door with a config and the names of the offered tools.
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug)]
        pub struct FrontTools(pub ::tam::Config, pub &'static [&'static str]);

        impl $crate::Harness for Front {
            type Event = ::tam::Event<'static>;

            $crate::__harness_runs!(tam::Decoder, finish);

            $crate::__harness_text!(tam::Event::Text);

            fn tiling_span(e: &Self::Event) -> Option<::std::ops::Range<usize>> {
                use ::tam::Event;
                let span = match e {
                    Event::Text { span, .. }
                    | Event::ReasoningStart { span }
                    | Event::Reasoning { span, .. }
                    | Event::ReasoningEnd { span } => *span,
                    Event::TamBlock(b) => b.span,
                    Event::ActionBlock(b) => b.span,
                    Event::Diagnostic(d) if d.code != ::tam::Code::MARKER_IN_PROSE => d.span,
                    _ => return None,
                };
                Some(span.start..span.end)
            }

            fn extend_piece(last: &mut Self::Event, e: &Self::Event) -> bool {
                use ::tam::Event::{ParamText, Reasoning};
                match (last, e) {
                    (
                        ParamText { protocol, text, span, cdata },
                        ParamText { protocol: p, text: more, span: s, cdata: c },
                    ) if protocol == p && cdata == c && span.end == s.start => {
                        text.to_mut().push_str(more);
                        span.end = s.end;
                        true
                    }
                    (Reasoning { text, span }, Reasoning { text: more, span: s }) if span.end == s.start => {
                        text.to_mut().push_str(more);
                        span.end = s.end;
                        true
                    }
                    _ => false,
                }
            }

            $crate::__harness_reasoning!(tam::Event::Reasoning);
        }

        impl $crate::Harness for FrontTools {
            type Event = ::tam::Event<'static>;

            $crate::__harness_runs!(h => ::tam::Decoder::new(h.0).with_bare_call_tools(h.1), finish);

            $crate::same_events_as!(Front);
        }

        /// `input` decoded every way by the front door for `choice`; a TAM block in it
        /// panics.
        #[allow(dead_code)]
        pub fn decode_front(input: &str, choice: ::tam::ProtocolChoice) -> Decoded {
            use ::tam::Event;
            let mut decoded = Decoded::default();
            let events = $crate::decode_all_ways(Front(::tam::Config::for_protocol(choice)), input.as_bytes());
            for e in events {
                match e {
                    Event::Text { text, .. } => decoded.push_text(&text),
                    Event::ActionBlock(b) => decoded.seen.push(Seen::Block(Box::new(b))),
                    Event::TamBlock(b) => panic!("{choice}: a TAM block in {input:?}: {b:?}"),
                    Event::Diagnostic(d) => decoded.seen.push(Seen::Diagnostic(d.code.as_str(), d.span.start)),
                    e if e.is_argument_event() => decoded.streamed = true,
                    _ => {}
                }
            }
            decoded
        }
    };
}

/// Defines the pieces of the events' stable text renderings that the decoders' golden
/// files hold: `span` (`start..end`) and `diagnostic` (severity, code, span and message on
/// one line after an indent, and the raw text, when there is one, on the next); given
/// `action`, also `action_block`: an ACTION block's span and index, each call with its
/// arguments as JSON and the exact source of each parameter whose source is not simply its
/// string value, then the block's diagnostics.
#[macro_export]
macro_rules! dump_fns {
    () => {
        /// `start..end`.
        #[allow(dead_code)]
        pub fn span(s: ::tam_parse::Span) -> String {
            format!("{}..{}", s.start, s.end)
        }

        /// A diagnostic as one line after `indent`, and its raw text on the next.
        #[allow(dead_code)]
        pub fn diagnostic(out: &mut String, indent: &str, d: &::tam_parse::Diagnostic) {
            use ::std::fmt::Write as _;
            writeln!(
                out,
                "{indent}{} {} {}: {}",
                d.severity,
                d.code,
                span(d.span),
                d.message
            )
            .unwrap();
            if let Some(raw) = &d.raw {
                writeln!(out, "{indent}  raw {:?}", &**raw).unwrap();
            }
        }
    };
    (action) => {
        $crate::dump_fns!();

        /// An ACTION block, its calls and its diagnostics.
        #[allow(dead_code)]
        pub fn action_block(out: &mut String, b: &::action_xml::ActionBlock) {
            use ::std::fmt::Write as _;
            writeln!(out, "block {} index={}", span(b.span), b.index).unwrap();
            for c in &b.calls {
                writeln!(out, "  call {:?} {}", c.tool, span(c.span)).unwrap();
                writeln!(
                    out,
                    "    args {}",
                    ::serde_json::Value::Object(c.args.clone())
                )
                .unwrap();
                for p in &c.params {
                    if c.get_str(&p.key) != Some(&*p.source) {
                        writeln!(
                            out,
                            "    source {:?} {} {:?}",
                            p.key,
                            span(p.content_span),
                            p.source
                        )
                        .unwrap();
                    }
                }
            }
            for d in &b.diagnostics {
                diagnostic(out, "  ", d);
            }
        }
    };
}
