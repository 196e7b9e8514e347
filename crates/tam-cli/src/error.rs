//! What can stop a command, and the exit status each failure gives.

use std::io;
use std::path::PathBuf;

/// A failure of a `tam` command. Problems in a model's output are never one of these: they
/// are diagnostics in the command's output.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Flags that parse but do not fit together; reported the way clap reports usage
    /// errors (exit status 2).
    #[error("{message}")]
    Usage {
        /// The clap error kind, which picks clap's wording and hints.
        kind: clap::error::ErrorKind,
        /// What is wrong.
        message: String,
    },
    /// An input file that cannot be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Output that cannot be written.
    #[error("cannot write the output: {0}")]
    Write(#[source] io::Error),
    /// A definition file that is not what it should be; the message names the file, the
    /// field and the reason.
    #[error("{0}")]
    Definition(String),
    /// An error of the tool-schema crate (its messages name the file and field).
    #[error(transparent)]
    Schema(#[from] tool_schema::Error),
    /// An error of the tool-dispatch crate.
    #[error(transparent)]
    Dispatch(#[from] tool_dispatch::Error),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] io::Error),
    /// An MCP server of `tam run --mcp` cannot be started or its tools registered.
    #[error("{0} [{code}]", code = .0.code())]
    Mcp(#[from] tool_dispatch::mcp::McpError),
    /// The model cannot be set up (`tam run`).
    #[error("cannot set up the model: {0}")]
    Model(String),
    /// `tam run` stopped before the model answered without a call.
    #[error("the run stopped before the model answered: {0}")]
    RunIncomplete(String),
    /// `tam serve` cannot listen or its server failed.
    #[error("{0}")]
    Serve(String),
    /// The demo's agent loop stopped before the model's answer.
    #[error("the demo stopped before the model answered: {0}")]
    DemoIncomplete(String),
}

impl CliError {
    /// The process exit status for this failure: 2 for usage errors, 1 for the rest.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } => 2,
            CliError::Read { .. }
            | CliError::Write(_)
            | CliError::Definition(_)
            | CliError::Schema(_)
            | CliError::Dispatch(_)
            | CliError::Runtime(_)
            | CliError::Mcp(_)
            | CliError::Model(_)
            | CliError::RunIncomplete(_)
            | CliError::Serve(_)
            | CliError::DemoIncomplete(_) => 1,
        }
    }

    /// A usage error of `kind`.
    pub(crate) fn usage(kind: clap::error::ErrorKind, message: impl Into<String>) -> Self {
        CliError::Usage {
            kind,
            message: message.into(),
        }
    }
}
