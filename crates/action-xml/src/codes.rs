//! The stable diagnostic codes this crate reports, next to the tam-parse ones it shares.
//!
//! Warnings mean the block was understood, possibly after a repair; errors mean part of it
//! could not be used. Clients and tests match on these constants (or on
//! [`Code::as_str`]).

use tam_parse::Code;

/// The body is not well-formed XML even after the repairs, or holds a DTD (error). The
/// message ends with the line and column in the model's output; the diagnostic carries
/// the block's raw text. The block has no calls.
pub const MALFORMED_XML: Code = Code::new("malformed_xml");
/// An `&` that begins no entity or character reference was read as `&amp;` (warning).
pub const BARE_AMPERSAND: Code = Code::new("bare_ampersand");
/// A `<` inside an element that begins no well-formed tag — or a tag left unclosed when
/// its parent closed, or a close tag that matches no open element — was read as text
/// (warning). This is how `<code>if a < b</code>` and `Vec<String>` in values survive.
pub const UNESCAPED_LT: Code = Code::new("unescaped_lt");
/// `]]>` in text outside CDATA: its `>` was read as `&gt;` (warning).
pub const UNESCAPED_GT: Code = Code::new("unescaped_gt");
/// A namespace prefix (`workflow:` in `<workflow:summarize_text>`) is used without an
/// `xmlns:` declaration; names keep the prefix as written (warning).
pub const UNDECLARED_PREFIX: Code = Code::new("undeclared_prefix");
/// The stream ended before `</ACTION>`, or elements were still open at the end of the
/// block; what arrived was parsed and the open elements closed (warning). Also: a
/// parameter's close tag never came before its call's close tag, and no close tag inside
/// the parameter matched nothing (else [`MISMATCHED_CLOSE_TAG`] or `malformed_xml`): the
/// parameter ends at the call's close tag (`<days>100</get_effect>`: `days` is `100`), the
/// elements opened in it and never closed being text (`Vec<T>`); the message names it
/// (`<days> not closed before </get_effect>; closed there`).
pub const MISSING_CLOSE_TAG: Code = Code::new("missing_close_tag");
/// A markdown code fence line inside the block (its body's first or last line) was
/// ignored (warning).
pub const CODE_FENCE: Code = Code::new("code_fence");
/// The block was written inside a fenced code block (```` ```xml ```` … ```` ``` ````): it
/// was read as a call all the same (warning; the span is the fence's opening line). The
/// same code as tam-parse's.
pub const FENCED_BLOCK: Code = Code::FENCED_BLOCK;
/// `<action>`, `< ACTION >` and the like, a close tag that matches its element only
/// ignoring case, or a close tag with blanks between `</` and its name (`</ get_weather>`,
/// `</  get_weather >`), read as `</get_weather>` where that closes an open element; where
/// it would close none it stays what it was (text in a value of code: `if a </ b {}`)
/// (warning).
pub const NONCANONICAL_TAG: Code = Code::new("noncanonical_tag");
/// A parameter's close tag never came before its call's close tag, and the parameter held
/// one close tag that matched no open element: that tag, misspelt, was read as the
/// parameter's (`<date>March 10</room>…</call>`: `date` is `March 10`, and what followed
/// the tag belongs to the call) (warning).
pub const MISMATCHED_CLOSE_TAG: Code = Code::new("mismatched_close_tag");
/// Attributes carry no parameters; they were ignored (warning).
pub const IGNORED_ATTRIBUTE: Code = Code::new("ignored_attribute");
/// Non-blank text between calls, or beside the child elements of a call or of an
/// object value, was ignored (warning). The same code as tam-parse's.
pub const STRAY_TEXT: Code = Code::STRAY_TEXT;
/// The second or a later ACTION block of the stream (warning). Only the first block runs
/// by default; the dispatcher's policy may run the others.
pub const EXTRA_ACTION_BLOCK: Code = Code::new("extra_action_block");
/// An `<ACTION>` element inside an ACTION block (warning): the block's own `<ACTION>` was
/// most likely a mention in prose and the real block followed; the inner element's
/// children were read as the calls.
pub const NESTED_ACTION_TAG: Code = Code::new("nested_action_tag");
/// An `<ACTION>` tag that never closed and holds no tool call (`I write an <ACTION>
/// block with a tag such as <X>`), or that closed with no element between the tags
/// (`Write <ACTION> to start a block and </ACTION> to end it.`), or that is quoted (inline
/// code, a `>` line) (warning): a mention in prose. Its bytes come out as text; nothing of
/// it runs. The diagnostic's span is empty, at the tag.
pub const MARKER_IN_PROSE: Code = Code::new("marker_in_prose");
/// A call element of an offered tool written without `<ACTION>` around it, complete and
/// well-formed, opening a line (warning): read as a one-call block. Only decoders given
/// tool names apply this ([`Decoder::with_bare_call_tools`](crate::Decoder::with_bare_call_tools)).
pub const MISSING_ACTION_WRAPPER: Code = Code::new("missing_action_wrapper");
/// The stream ended, or was cut, before `</ACTION>` in a block holding a tool call the
/// model did not finish — a call element still open, or a tag cut off at the end
/// (`…</write_file><delete_all`) — or (after `finish_cut`) in any block holding calls
/// (error): the block yields no call. The diagnostic carries the block's raw text. The
/// same code as tam-parse's.
pub const UNTERMINATED_BLOCK: Code = Code::UNTERMINATED_BLOCK;
/// An ACTION block whose elements are no calls (`<ACTION><ACTION/></ACTION>`) (warning).
/// A closed block with no element at all is a prose mention instead
/// ([`MARKER_IN_PROSE`]).
pub const EMPTY_BLOCK: Code = Code::new("empty_block");
/// Elements nested deeper than [`Config::max_depth`](crate::Config::max_depth) (error);
/// the block has no calls.
pub const NESTING_TOO_DEEP: Code = Code::new("nesting_too_deep");
/// More XML nodes than [`Config::max_nodes`](crate::Config::max_nodes) (error); the block
/// has no calls.
pub const TOO_MANY_NODES: Code = Code::new("too_many_nodes");
/// A block larger than [`Config::max_block_bytes`](crate::Config::max_block_bytes)
/// (error); its bytes were dropped. The same code as tam-parse's.
pub const BLOCK_TOO_LARGE: Code = Code::BLOCK_TOO_LARGE;
/// Bytes that are not UTF-8 (error), from [`Decoder::feed_bytes`](crate::Decoder::feed_bytes).
/// The same code as tam-parse's.
pub const INVALID_UTF8: Code = Code::INVALID_UTF8;
