//! Plug the decoder into a chat-completion stream shaped like async-openai's
//! (`Stream<Item = Result<CreateChatCompletionStreamResponse, OpenAIError>>`), with the
//! `stream` feature's [`EventStream`].
//!
//! ```sh
//! cargo run -p tam-parse --example stream_chunks --features stream
//! ```
//!
//! The chunk types below copy the fields of async-openai's that matter here, so the example
//! needs no network and no API key; with async-openai itself, `client.chat()
//! .create_stream(request).await?` gives a stream of the same shape. Map each chunk to its
//! text, stop at a transport error, wrap the deltas in an `EventStream`: each block's calls
//! come out as soon as the chunk carrying its end marker arrives. A transport error in the
//! middle of a block ends the deltas there, and a block that never closed yields no call.

use std::cell::RefCell;

use futures_util::{StreamExt, stream};
use tam_parse::stream::EventStream;
use tam_parse::{Config, Event};

/// async-openai's `ChatCompletionStreamResponseDelta`, the fields used here.
#[derive(Debug, Clone, Default)]
struct ChatCompletionStreamResponseDelta {
    content: Option<String>,
}

/// async-openai's `ChatChoiceStream`, the fields used here.
#[derive(Debug, Clone)]
struct ChatChoiceStream {
    index: u32,
    delta: ChatCompletionStreamResponseDelta,
    finish_reason: Option<&'static str>,
}

/// async-openai's `CreateChatCompletionStreamResponse`, the fields used here.
#[derive(Debug, Clone)]
struct CreateChatCompletionStreamResponse {
    id: String,
    model: String,
    choices: Vec<ChatChoiceStream>,
}

/// Stands in for async-openai's `OpenAIError`.
#[derive(Debug, Clone)]
struct OpenAIError(String);

/// One chunk carrying `content` (or, with `None`, the final chunk with a finish reason).
fn chunk(content: Option<&str>) -> Result<CreateChatCompletionStreamResponse, OpenAIError> {
    Ok(CreateChatCompletionStreamResponse {
        id: "chatcmpl-example".into(),
        model: "gpt-example".into(),
        choices: vec![ChatChoiceStream {
            index: 0,
            delta: ChatCompletionStreamResponseDelta {
                content: content.map(str::to_owned),
            },
            finish_reason: if content.is_none() {
                Some("stop")
            } else {
                None
            },
        }],
    })
}

/// The fake model's chunks; with `fail_after`, the transport fails after that many chunks.
fn chunks(
    fail_after: Option<usize>,
) -> Vec<Result<CreateChatCompletionStreamResponse, OpenAIError>> {
    let mut all = vec![
        chunk(Some("Checking the weather first.\n<|[REQUEST_")),
        chunk(Some(
            "TOOL]|>\ncommand:「始」Weather.Get「末」\ncity:「始」Zürich「末」\n<|[END_TOOL]|>",
        )),
        chunk(Some(
            "\nNow the calendar:\n<|[REQUEST_TOOL]|>\ncommand:「始」Calendar.Add「末」\n",
        )),
        chunk(Some("title:「始」Hike「末」\n<|[END_TOOL]|>\n")),
        chunk(None),
    ];
    if let Some(n) = fail_after {
        all.truncate(n);
        all.push(Err(OpenAIError("connection reset by peer".into())));
    }
    all
}

/// Runs one completion through the decoder; returns the calls that came out (tool and
/// first parameter), the transport error if any, and prints every event as it arrives.
async fn run(
    chunks: Vec<Result<CreateChatCompletionStreamResponse, OpenAIError>>,
) -> (Vec<String>, Option<String>) {
    let error = RefCell::new(None);
    // The text deltas of choice 0, up to the first transport error (kept in `error`).
    let deltas = stream::iter(chunks)
        .inspect(|chunk| {
            if let Err(e) = chunk {
                *error.borrow_mut() = Some(e.0.clone());
            }
        })
        .take_while(|chunk| std::future::ready(chunk.is_ok()))
        .filter_map(|chunk| {
            let content = chunk.ok().and_then(|response| {
                let choice = response.choices.into_iter().find(|c| c.index == 0)?;
                if let Some(reason) = choice.finish_reason {
                    println!(
                        "  ({} from {}: finish_reason {reason})",
                        response.id, response.model
                    );
                }
                choice.delta.content
            });
            std::future::ready(content)
        });
    let mut events = EventStream::new(Box::pin(deltas), Config::default());
    let mut calls = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Event::Text { text, .. } => println!("  text {text:?}"),
            Event::Block(block) => {
                for call in block.calls {
                    let first = call
                        .params
                        .first()
                        .map(|p| format!("{}={}", p.key, p.value))
                        .unwrap_or_default();
                    println!("  call {} {first}", call.tool);
                    calls.push(format!("{} {first}", call.tool));
                }
            }
            Event::Diagnostic(d) => println!("  {} {}: {}", d.severity, d.code, d.message),
            _ => {}
        }
    }
    drop(events);
    let error = error.into_inner();
    if let Some(e) = &error {
        // An application would report it, and may retry the completion.
        println!("  transport error: {e}");
    }
    (calls, error)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("== a complete stream");
    let (calls, _) = run(chunks(None)).await;
    println!("{} calls decoded", calls.len());

    println!("== the transport fails in the middle of the second block");
    let (calls, error) = run(chunks(Some(3))).await;
    println!(
        "{} call decoded; the unfinished one did not ({})",
        calls.len(),
        error.unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_closed_block_gives_its_call() {
        let (calls, error) = run(chunks(None)).await;
        assert_eq!(
            calls,
            ["Weather.Get city=Zürich", "Calendar.Add title=Hike"]
        );
        assert_eq!(error, None);
    }

    #[tokio::test]
    async fn a_transport_error_mid_block_runs_nothing_of_that_block() {
        let (calls, error) = run(chunks(Some(3))).await;
        assert_eq!(calls, ["Weather.Get city=Zürich"]);
        assert_eq!(error.as_deref(), Some("connection reset by peer"));
    }
}
