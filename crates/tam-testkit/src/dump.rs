//! Pieces of the stable text renderings of events that the decoders' golden files hold.

use std::fmt::Write as _;

use tam_parse::{Diagnostic, Span};

/// `start..end`.
pub fn span(s: Span) -> String {
    format!("{}..{}", s.start, s.end)
}

/// A diagnostic as one line after `indent` (severity, code, span, message), and its raw
/// text, when it has one, on the next line.
pub fn diagnostic(out: &mut String, indent: &str, d: &Diagnostic) {
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

/// An ACTION block: its span and index, each call with its arguments as JSON and the
/// exact source of each parameter whose source is not simply its string value, then the
/// block's diagnostics.
#[cfg(feature = "action")]
pub fn action_block(out: &mut String, b: &action_xml::ActionBlock) {
    writeln!(out, "block {} index={}", span(b.span), b.index).unwrap();
    for c in &b.calls {
        writeln!(out, "  call {:?} {}", c.tool, span(c.span)).unwrap();
        writeln!(
            out,
            "    args {}",
            serde_json::Value::Object(c.args.clone())
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
