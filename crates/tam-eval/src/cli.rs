//! The command line: `tam-eval e2e …` and `tam-eval bfcl-score …` (what `cargo xtask e2e`
//! and `cargo xtask bfcl-score` run), parsed and checked into the options of a run.

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};

use crate::bfcl::{BfclOptions, BfclPath};
use crate::root;

/// The evaluation harness of the tam workspace.
#[derive(Parser, Debug)]
#[command(name = "tam-eval", version)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// The workspace against a real model served by llama-server on 127.0.0.1 (both
    /// protocols); with `--bfcl FILE`, a BFCL case file through `tam serve` and the
    /// server's own tool calling instead.
    E2e(E2eArgs),
    /// Scores an existing BFCL results file (no model).
    BfclScore(ScoreArgs),
}

/// The arguments of `tam-eval e2e`.
#[derive(clap::Args, Debug)]
pub(crate) struct E2eArgs {
    /// Where the set-up goes [default: target/e2e-cache]
    #[arg(long, value_name = "DIR", env = "TAM_E2E_CACHE")]
    cache: Option<PathBuf>,
    /// Leave llama-server running at the end (its URL and pid are printed).
    #[arg(long)]
    keep_server: bool,
    /// Leave llama-server's prompt cache on, as it runs by default.
    #[arg(long)]
    prompt_cache: bool,
    /// `tam run` tries per protocol; the run fails unless all pass.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    tries: u32,
    /// Compile jobs of the llama.cpp build.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    jobs: u32,
    /// The model (pinned in e2e/pins.txt); with `--base-url`, the one that server runs.
    #[arg(long, value_enum, default_value_t = ModelChoice::Coder1_5b)]
    model: ModelChoice,
    /// An argument for every `tam serve` the run starts (repeatable; one word each, e.g.
    /// `--serve-arg=--no-strict` or `--serve-arg=--upstream-kind=llama-cpp`).
    #[arg(long = "serve-arg", value_name = "ARG", allow_hyphen_values = true)]
    serve_args: Vec<String>,
    /// A BFCL case file: run its cases instead of the legs.
    #[arg(long, value_name = "FILE")]
    bfcl: Option<PathBuf>,
    /// Only the first N cases of each category (file order).
    #[arg(long, value_name = "N", requires = "bfcl", value_parser = clap::value_parser!(u32).range(1..))]
    per_category: Option<u32>,
    /// The paths, comma-separated [default: tam,action,native]
    #[arg(
        long,
        value_name = "LIST",
        requires = "bfcl",
        value_parser = path_parser(),
        value_delimiter = ','
    )]
    paths: Vec<BfclPath>,
    /// `max_tokens` of every BFCL request.
    #[arg(long, value_name = "N", requires = "bfcl", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: u32,
    /// Where the BFCL result files go [default: CACHE/logs/bfcl/RUN, RUN naming the model
    /// and the `--serve-arg`s]
    #[arg(long, value_name = "DIR", requires = "bfcl")]
    out: Option<PathBuf>,
    /// A running server's OpenAI base URL (`…/v1`): no set-up, no server start.
    #[arg(long, value_name = "URL", requires = "bfcl", value_parser = parse_base_url)]
    base_url: Option<String>,
}

/// A `--paths` value: a protocol by the front door's [`tam::Protocol`] names (`tam`,
/// `action`, read by its `FromStr`), or `native`.
fn path_parser() -> impl TypedValueParser<Value = BfclPath> {
    PossibleValuesParser::new(
        BfclPath::ALL.map(|path| PossibleValue::new(path.name()).help(path.help())),
    )
    .try_map(|name| name.parse::<BfclPath>())
}

/// The arguments of `tam-eval bfcl-score`.
#[derive(clap::Args, Debug)]
pub(crate) struct ScoreArgs {
    /// The case file.
    pub(crate) cases: PathBuf,
    /// The results file (one line per case).
    pub(crate) results: PathBuf,
    /// List every failure with its reason, what came and what was wanted.
    #[arg(long)]
    pub(crate) details: bool,
    /// In irrelevance, any tool call fails the case (even one whose arguments do not decode).
    #[arg(long)]
    pub(crate) strict_irrelevance: bool,
    /// Count the cases without a result line (as failures) instead of skipping them.
    #[arg(long)]
    pub(crate) require_all: bool,
    /// Write one verdict line per scored case to PATH.
    #[arg(long, value_name = "PATH")]
    pub(crate) verdicts: Option<PathBuf>,
}

/// The models the run can serve; their pins are `model.<id>.*` in `e2e/pins.txt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModelChoice {
    /// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M.
    #[value(name = "1.5b")]
    Coder1_5b,
    /// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M.
    #[value(name = "0.5b")]
    Coder0_5b,
}

impl ModelChoice {
    /// The `--model` value, also the key of its pins.
    pub(crate) fn id(self) -> &'static str {
        match self {
            ModelChoice::Coder1_5b => "1.5b",
            ModelChoice::Coder0_5b => "0.5b",
        }
    }
}

/// What `tam-eval e2e` was asked to do, checked.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) cache: PathBuf,
    pub(crate) keep_server: bool,
    /// `--prompt-cache`: llama-server's prompt cache left on (its default).
    pub(crate) prompt_cache: bool,
    pub(crate) tries: u32,
    pub(crate) jobs: u32,
    pub(crate) model: ModelChoice,
    /// Given to every `tam serve` after the harness's own arguments.
    pub(crate) serve_args: Vec<String>,
    /// `--bfcl FILE` and its options: run the BFCL cases instead of the legs.
    pub(crate) bfcl: Option<BfclOptions>,
}

/// The `tam serve` options the harness sets itself (per path, per port): a `--serve-arg`
/// may not set them.
const OWN_SERVE_OPTIONS: [&str; 3] = ["--upstream", "--listen", "--protocol"];

fn parse_base_url(value: &str) -> Result<String, String> {
    if !(value.starts_with("http://") || value.starts_with("https://")) {
        return Err(format!(
            "needs an http:// URL such as http://127.0.0.1:8080/v1, not {value:?}"
        ));
    }
    Ok(value.trim_end_matches('/').to_owned())
}

/// `path` made absolute against the current directory.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()
        .map_err(|e| format!("current directory: {e}"))?
        .join(path))
}

/// The name of a run's results directory: the model, then each `--serve-arg` with its
/// leading dashes dropped and anything but letters, digits, `.`, `=` and `-` as `_`
/// (`0.5b`, `1.5b_no-strict_upstream-kind=llama-cpp`).
pub(crate) fn run_label(model: ModelChoice, serve_args: &[String]) -> String {
    let mut label = model.id().to_owned();
    for arg in serve_args {
        label.push('_');
        label.extend(arg.trim_start_matches('-').chars().map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | '-') {
                c
            } else {
                '_'
            }
        }));
    }
    label
}

impl E2eArgs {
    /// The options of the run, paths made absolute, `--serve-arg`s checked.
    pub(crate) fn options(self) -> Result<Options, String> {
        for arg in &self.serve_args {
            let key = arg.split_once('=').map_or(arg.as_str(), |(k, _)| k);
            if OWN_SERVE_OPTIONS.contains(&key) {
                return Err(format!(
                    "--serve-arg {arg}: the harness sets {key} itself for every tam serve"
                ));
            }
        }
        let cache = match &self.cache {
            Some(dir) => absolute(dir)?,
            None => root().join("target/e2e-cache"),
        };
        let bfcl = match self.bfcl {
            None => None,
            Some(file) => {
                let mut paths = Vec::new();
                for path in self.paths {
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
                if paths.is_empty() {
                    paths = BfclPath::ALL.to_vec();
                }
                let out = match &self.out {
                    Some(dir) => absolute(dir)?,
                    None => cache
                        .join("logs/bfcl")
                        .join(run_label(self.model, &self.serve_args)),
                };
                let file = absolute(&file)?;
                Some(BfclOptions {
                    file: std::fs::canonicalize(&file).unwrap_or(file),
                    per_category: self.per_category.map(|n| n as usize),
                    paths,
                    max_tokens: self.max_tokens,
                    out,
                    base_url: self.base_url,
                })
            }
        };
        Ok(Options {
            cache,
            keep_server: self.keep_server,
            prompt_cache: self.prompt_cache,
            tries: self.tries,
            jobs: self.jobs,
            model: self.model,
            serve_args: self.serve_args,
            bfcl,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tam::Protocol;

    fn e2e(args: &[&str]) -> Result<Options, String> {
        let argv = ["tam-eval", "e2e"].iter().chain(args);
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::E2e(args) => args.options(),
            Command::BfclScore(_) => unreachable!(),
        }
    }

    #[test]
    fn legs_options_parse_and_bad_values_are_refused() {
        let o = e2e(&["--tries", "3", "--keep-server"]).unwrap();
        assert_eq!(o.tries, 3);
        assert!(o.keep_server);
        assert!(!o.prompt_cache);
        assert!(o.cache.is_absolute());
        assert!(o.bfcl.is_none());
        assert_eq!(o.model, ModelChoice::Coder1_5b);
        assert!(e2e(&["--prompt-cache"]).unwrap().prompt_cache);
        assert_eq!(
            e2e(&["--model", "0.5b"]).unwrap().model,
            ModelChoice::Coder0_5b
        );
        for bad in [
            &["--tries", "0"][..],
            &["--bogus"],
            &["--model", "7b"],
            &["--jobs", "x"],
        ] {
            assert!(e2e(bad).is_err(), "{bad:?}");
        }
        // A BFCL option without --bfcl.
        let err = e2e(&["--paths", "tam"]).unwrap_err();
        assert!(err.contains("--bfcl"), "{err}");
        let o = e2e(&["--cache", "rel/dir"]).unwrap();
        assert!(o.cache.is_absolute() && o.cache.ends_with("rel/dir"));
    }

    #[test]
    fn serve_args_pass_through_but_not_the_harnesss_own() {
        let o = e2e(&[
            "--serve-arg",
            "--no-strict",
            "--serve-arg=--upstream-kind=llama-cpp",
        ])
        .unwrap();
        assert_eq!(o.serve_args, ["--no-strict", "--upstream-kind=llama-cpp"]);
        for own in ["--protocol=tam", "--listen", "--upstream=http://x/v1"] {
            let err = e2e(&["--serve-arg", own]).unwrap_err();
            assert!(err.contains("sets"), "{err}");
        }
        assert_eq!(run_label(ModelChoice::Coder0_5b, &[]), "0.5b");
        assert_eq!(
            run_label(ModelChoice::Coder1_5b, &o.serve_args),
            "1.5b_no-strict_upstream-kind=llama-cpp"
        );
        assert_eq!(
            run_label(ModelChoice::Coder1_5b, &["--x y/z".into()]),
            "1.5b_x_y_z"
        );
    }

    #[test]
    fn bfcl_options_and_their_defaults() {
        let o = e2e(&["--bfcl", "c.jsonl"]).unwrap();
        let b = o.bfcl.unwrap();
        assert_eq!(b.paths, BfclPath::ALL);
        assert_eq!(b.max_tokens, 512);
        assert!(b.file.is_absolute());
        assert!(b.out.ends_with("logs/bfcl/1.5b"), "{}", b.out.display());
        let o = e2e(&[
            "--bfcl",
            "/c.jsonl",
            "--paths",
            "native,tam,native",
            "--per-category",
            "2",
            "--base-url",
            "http://127.0.0.1:8080/v1/",
            "--model",
            "0.5b",
            "--serve-arg=--no-strict",
        ])
        .unwrap();
        let b = o.bfcl.unwrap();
        assert_eq!(b.paths, [BfclPath::Native, BfclPath::Proxy(Protocol::Tam)]);
        assert_eq!(b.per_category, Some(2));
        assert_eq!(b.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        assert!(b.out.ends_with("logs/bfcl/0.5b_no-strict"));
        let o = e2e(&["--bfcl", "c", "--out", "/tmp/x"]).unwrap();
        assert_eq!(o.bfcl.unwrap().out, PathBuf::from("/tmp/x"));
        for bad in [
            ["--paths", "tam,xml"],
            ["--paths", ","],
            ["--max-tokens", "0"],
            ["--base-url", "127.0.0.1:8080"],
        ] {
            let args = ["--bfcl", "c", bad[0], bad[1]];
            assert!(e2e(&args).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_path_reads_back_from_its_name() {
        for path in BfclPath::ALL {
            assert_eq!(path.name().parse::<BfclPath>(), Ok(path));
        }
        assert_eq!(
            BfclPath::ALL.map(BfclPath::protocol),
            [Some(Protocol::Tam), Some(Protocol::Action), None]
        );
        assert!("both".parse::<BfclPath>().is_err());
    }

    #[test]
    fn score_arguments() {
        let cli = Cli::try_parse_from([
            "tam-eval",
            "bfcl-score",
            "c.jsonl",
            "r.jsonl",
            "--details",
            "--verdicts",
            "v.jsonl",
        ])
        .unwrap();
        let Command::BfclScore(args) = cli.command else {
            unreachable!()
        };
        assert_eq!(args.cases, PathBuf::from("c.jsonl"));
        assert!(args.details && !args.require_all && !args.strict_irrelevance);
        assert_eq!(args.verdicts, Some(PathBuf::from("v.jsonl")));
        assert!(Cli::try_parse_from(["tam-eval", "bfcl-score", "c.jsonl"]).is_err());
    }
}
