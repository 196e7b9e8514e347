//! `tam decode`: a model's output in, one JSON object per event out, as the input arrives.
//!
//! The input is read with plain blocking reads, each handing over whatever bytes the pipe
//! or file has (never read to the end first); each read's bytes go through the input
//! framing ([`lines`], [`framing`]) into action-xml's front door ([`tam::Decoder`]), and each event
//! is written and flushed the moment the decoder reports it ([`ndjson`]). So a tool call
//! appears on standard output while the model is still writing what follows it.

mod framing;
mod lines;
mod ndjson;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use clap::error::ErrorKind;
use tam::{Code, Diagnostic, Dialect, ProtocolChoice, Severity, Span};

use crate::choices::protocol_choice_parser;

use self::framing::SseEvents;
use self::lines::{Flow, Line, LineSplitter};
use self::ndjson::{Extras, NdjsonWriter};
use crate::error::CliError;

const LONG_ABOUT: &str = "\
Decode a model's output stream into tool calls: one JSON object per line on standard
output, written and flushed as soon as each event is decided, while the input is still
arriving (FILE or standard input).

Output lines:
  {\"type\":\"text\",\"text\":S}
      prose outside blocks; adjacent text lines may be split anywhere
  {\"type\":\"reasoning\",\"text\":S}
      the content of a <think>…</think> (or <thinking>…</thinking>) section, tags left
      out: reasoning, never decoded into calls; the open tag counts as the first non-blank
      text of a prose line outside a code fence, and a section the input ends in is
      reasoning to its end; adjacent reasoning lines may be split anywhere
  {\"type\":\"tool_calls\",\"protocol\":\"tam\"|\"action\",\"span\":[a,b],\"calls\":[{\"tool\":S,\"args\":{K:V}}],\"diagnostics\":[D…]}
      one closed block; TAM values are strings under the key as written (chain suffix
      stripped), ACTION values are JSON strings, arrays or objects
  {\"type\":\"diagnostic\",\"severity\":\"error\"|\"warning\",\"code\":S,\"message\":S,\"span\":[a,b]}
      a problem outside any block; D inside tool_calls has the same fields
A start marker the model quotes opens no block: inside inline code (an unclosed run of
backticks earlier on its line) or on a line whose first non-blank character is `>`, it
is text, with a marker_in_prose warning. A block inside a fenced code block (```) is a
call, with warning fenced_block among its diagnostics.
Spans are byte offsets [start, end) in the decoded content (for --input deltas and sse:
the concatenated deltas, not the input file).

Block starts, TAM command names and arguments as they stream are not reported by
default: the tool_calls line is authoritative. --progress adds
  {\"type\":\"call_start\",\"protocol\":\"action\",\"index\":N,\"tool\":S,\"span\":[a,b]}
      when an ACTION call's start tag is complete
  {\"type\":\"param_start\",\"protocol\":P,\"key\":S,\"span\":[a,b]}
      when a parameter's value begins (TAM: `command` too, key as written)
  {\"type\":\"param_text\",\"protocol\":P,\"text\":S,\"span\":[a,b]}
      a piece of the value; pieces may be split anywhere; an ACTION piece of CDATA
      content has \"cdata\":true
  {\"type\":\"param_end\",\"protocol\":P,\"span\":[a,b]}
      when the value closes
  {\"type\":\"call_end\",\"protocol\":\"action\",\"index\":N,\"span\":[a,b]}
      when an ACTION call element closes
The param_text pieces of one parameter joined are its value (TAM: exactly; ACTION: the
content as written, references decoded, line ends in text as XML reads them, edges not
yet trimmed: the block trims them, as tam::ValueEdges does while they stream). They are for UIs: a call runs only
from its tool_calls line, and a block the stream ends inside never gets one. Also:
  {\"type\":\"block_start\",\"protocol\":P,\"span\":[a,b]}     when a start marker or <ACTION> is seen
  {\"type\":\"reasoning_start\",\"span\":[a,b]}, {\"type\":\"reasoning_end\",\"span\":[a,b]}
                                                          the <think> and </think> tags
  {\"type\":\"command_seen\",\"protocol\":\"tam\",\"call\":N,\"tool\":S,\"span\":[a,b]}
                                                          when a TAM command value closes
--with-raw adds \"raw\" (the model's text) to diagnostics that carry it, such as
unterminated_block.

Touching text is one line per delta. At most 16 diagnostics of one code are written per
stream (on their own lines or inside tool_calls lines); at the end, one warning
diagnostics_suppressed per code says how many more there were (a model repeating a
marker thousands of times would otherwise get a line for each).

Input framing problems are diagnostic lines with an empty span at the offset reached, and
reading goes on: malformed_delta (a deltas line that is not a JSON string), malformed_sse
(SSE data that is not JSON, a content that is not a string), stream_error (an SSE event
with an \"error\" object), invalid_utf8 (a line or SSE event that is not UTF-8; read with
U+FFFD), line_too_long (a deltas line over 8 MiB; skipped), sse_event_too_large (an SSE
event over 8 MiB; skipped to its blank line). SSE lines that are neither fields nor
comments are ignored, as the SSE standard says. In raw mode, bytes that are not UTF-8 get the decoders' invalid_utf8.

Exit status: 0 whatever the model wrote; 1 when the input cannot be read or the output
cannot be written (a closed pipe just ends the run); 2 for a usage error.";

/// How the input is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InputFraming {
    /// The model's text itself, bytes as they come.
    Raw,
    /// One delta per line, each a JSON string ("Hel", "lo\n"); blank lines are ignored.
    Deltas,
    /// An OpenAI-style chat.completions SSE stream: `data: {…}` events whose
    /// `choices[0].delta.content` is fed to the decoder, up to `data: [DONE]`.
    Sse,
}

/// TAM marker dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DialectChoice {
    /// `<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`, tools named by `command`, `command1`, ….
    Tam,
    /// VCPToolBox: `<<<[TOOL_REQUEST]>>>` … `<<<[END_TOOL_REQUEST]>>>`, tool named by `tool_name`.
    Vcp,
}

/// Decode a model's output stream into tool calls, one JSON object per line.
#[derive(Debug, clap::Args)]
#[command(long_about = LONG_ABOUT)]
pub(crate) struct DecodeArgs {
    /// Which tool-call blocks to look for: tam (TAM or VCP markers), action (`<ACTION>`
    /// XML) or auto (both, in one stream).
    #[arg(long, default_value = "auto", value_parser = protocol_choice_parser())]
    protocol: ProtocolChoice,
    /// TAM marker dialect [default: tam]; not for --protocol action.
    #[arg(long, value_enum)]
    dialect: Option<DialectChoice>,
    /// How the input is framed.
    #[arg(long, value_enum, default_value_t = InputFraming::Raw)]
    input: InputFraming,
    /// Also write block_start, command_seen and the argument lines (call_start,
    /// param_start, param_text, param_end, call_end).
    #[arg(long)]
    progress: bool,
    /// Add the model's text to diagnostics that carry it, as "raw".
    #[arg(long)]
    with_raw: bool,
    /// The file to read; standard input when absent or `-`.
    file: Option<PathBuf>,
}

/// Runs `tam decode`.
pub(crate) fn run(args: &DecodeArgs) -> Result<(), CliError> {
    if args.protocol == ProtocolChoice::Action && args.dialect.is_some() {
        return Err(CliError::usage(
            ErrorKind::ArgumentConflict,
            "--dialect chooses TAM markers, and --protocol action reads no TAM block; drop one of them",
        ));
    }
    let dialect = match args.dialect {
        Some(DialectChoice::Vcp) => Dialect::Vcp,
        Some(DialectChoice::Tam) | None => Dialect::Tam,
    };
    let extras = Extras {
        progress: args.progress,
        raw: args.with_raw,
    };
    let stdout = io::stdout();
    let writer = NdjsonWriter::new(BufWriter::new(stdout.lock()), extras);
    let pipeline = Pipeline {
        decoder: tam::Decoder::new(decoder_config(args.protocol, dialect, args.progress)),
        writer,
        cut: false,
    };
    let (source, path): (Box<dyn Read>, &Path) = match args.file.as_deref() {
        // Named for messages only: `cannot read standard input: …`.
        None => (Box::new(io::stdin().lock()), Path::new("standard input")),
        Some(path) if path == Path::new("-") => {
            (Box::new(io::stdin().lock()), Path::new("standard input"))
        }
        Some(path) => {
            let file = File::open(path).map_err(|source| CliError::Read {
                path: path.to_owned(),
                source,
            })?;
            (Box::new(file), path)
        }
    };
    match decode_stream(source, args.input, pipeline) {
        Ok(()) => Ok(()),
        Err(Failure::Read(source)) => Err(CliError::Read {
            path: path.to_owned(),
            source,
        }),
        Err(Failure::Write(error)) => Err(CliError::Write(error)),
    }
}

/// Why decoding stopped early.
#[derive(Debug)]
enum Failure {
    Read(io::Error),
    Write(io::Error),
}

/// Size of one read: a read returns as soon as some bytes are there, so this only bounds
/// how much one read can take when the input is ahead of the decoder.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Reads `source` to its end (or to `data: [DONE]`) through `framing` into `pipeline`.
fn decode_stream<W: Write>(
    mut source: impl Read,
    framing: InputFraming,
    mut pipeline: Pipeline<W>,
) -> Result<(), Failure> {
    let mut framer = Framer::new(framing);
    let mut buffer = vec![0; READ_BUFFER_BYTES];
    let mut complete = false;
    loop {
        let read = match source.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(Failure::Read(error)),
        };
        if framer
            .push(&buffer[..read], &mut pipeline)
            .map_err(Failure::Write)?
            == Flow::Stop
        {
            complete = true;
            break;
        }
    }
    if !complete {
        framer.finish(&mut pipeline).map_err(Failure::Write)?;
    }
    pipeline.finish().map_err(Failure::Write)
}

/// The front door's settings: every limit at its default; arguments stream only when
/// `--progress` writes them.
fn decoder_config(protocol: ProtocolChoice, dialect: Dialect, progress: bool) -> tam::Config {
    let mut config = tam::Config::for_protocol(protocol).with_param_events(progress);
    config.tam = tam::tam_parse::Config::with_dialect(dialect);
    config
}

/// The decoder and the output, for one stream.
#[derive(Debug)]
pub(crate) struct Pipeline<W: Write> {
    decoder: tam::Decoder,
    writer: NdjsonWriter<W>,
    /// The stream says it was cut (`--input sse`: `finish_reason: "length"`, an error
    /// event): a block open at its end yields no call, whatever repair could apply.
    cut: bool,
}

impl<W: Write> Pipeline<W> {
    /// Feeds a text delta and writes the events it decides.
    pub(crate) fn feed_text(&mut self, delta: &str) -> io::Result<()> {
        let mut written = Ok(());
        self.decoder
            .feed(delta, event_writer(&mut self.writer, &mut written));
        written?;
        self.writer.flush_text()
    }

    /// Feeds a byte delta and writes the events it decides.
    pub(crate) fn feed_bytes(&mut self, delta: &[u8]) -> io::Result<()> {
        let mut written = Ok(());
        self.decoder
            .feed_bytes(delta, event_writer(&mut self.writer, &mut written));
        written?;
        self.writer.flush_text()
    }

    /// Writes a diagnostic about the input framing, at the decoded offset reached.
    pub(crate) fn report(
        &mut self,
        severity: Severity,
        code: Code,
        message: String,
    ) -> io::Result<()> {
        let at = self.decoder.position();
        let span = Span::new(at, at);
        let diagnostic = match severity {
            Severity::Warning => Diagnostic::warning(code, span, message),
            Severity::Error => Diagnostic::error(code, span, message),
        };
        self.writer.write_diagnostic(&diagnostic)
    }

    /// The stream was cut (no repair applies to the block open at the cut).
    pub(crate) fn mark_cut(&mut self) {
        self.cut = true;
    }

    /// Ends the stream: writes held-back prose and a block left open (as its text and a
    /// diagnostic, never a call, when the stream was cut).
    fn finish(mut self) -> io::Result<()> {
        let mut written = Ok(());
        if self.cut {
            self.decoder
                .finish_cut(event_writer(&mut self.writer, &mut written));
        } else {
            self.decoder
                .finish(event_writer(&mut self.writer, &mut written));
        }
        written?;
        self.writer.finish()
    }
}

/// An event callback that writes each event to `writer` until a write fails, keeping the
/// first error in `written` (a decoder callback cannot return one).
fn event_writer<'w, W: Write>(
    writer: &'w mut NdjsonWriter<W>,
    written: &'w mut io::Result<()>,
) -> impl FnMut(tam::Event<'_>) + 'w {
    move |event| {
        if written.is_ok() {
            *written = writer.write_event(&event);
        }
    }
}

/// The framing state of the chosen input mode.
#[derive(Debug)]
enum Framer {
    Raw,
    Deltas(LineSplitter),
    Sse(SseEvents),
}

impl Framer {
    fn new(framing: InputFraming) -> Self {
        match framing {
            InputFraming::Raw => Framer::Raw,
            InputFraming::Deltas => Framer::Deltas(LineSplitter::default()),
            InputFraming::Sse => Framer::Sse(SseEvents::default()),
        }
    }

    /// Frames one read's bytes.
    fn push<W: Write>(&mut self, chunk: &[u8], pipeline: &mut Pipeline<W>) -> io::Result<Flow> {
        match self {
            Framer::Raw => pipeline.feed_bytes(chunk).map(|()| Flow::Continue),
            Framer::Deltas(splitter) => each_line(
                pipeline,
                |on_line| splitter.push(chunk, on_line),
                framing::delta_line,
            ),
            Framer::Sse(events) => events.push(pipeline, chunk),
        }
    }

    /// Frames what is left at the end of the input.
    fn finish<W: Write>(&mut self, pipeline: &mut Pipeline<W>) -> io::Result<()> {
        match self {
            Framer::Raw => {}
            Framer::Deltas(splitter) => {
                each_line(
                    pipeline,
                    |on_line| splitter.finish(on_line),
                    framing::delta_line,
                )?;
            }
            Framer::Sse(events) => {
                std::mem::take(events).finish(pipeline)?;
            }
        }
        Ok(())
    }
}

/// Runs `split` with a line callback that hands each line to `handle`, carrying the first
/// write error out of the callback (which can only say stop).
fn each_line<W: Write>(
    pipeline: &mut Pipeline<W>,
    split: impl FnOnce(&mut dyn FnMut(Line<'_>) -> Flow) -> Flow,
    mut handle: impl FnMut(&mut Pipeline<W>, Line<'_>) -> io::Result<Flow>,
) -> io::Result<Flow> {
    let mut failure = None;
    let flow = split(&mut |line| match handle(pipeline, line) {
        Ok(flow) => flow,
        Err(error) => {
            failure = Some(error);
            Flow::Stop
        }
    });
    failure.map_or(Ok(flow), Err)
}
