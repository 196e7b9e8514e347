//! `cargo xtask <command>`: the project's automation, without dependencies.
//!
//! * `ci` — the quality gates: `cargo fmt --check`, `cargo clippy --workspace --all-targets
//!   -- -D warnings` (and of tool-dispatch without its runtime), `cargo test --workspace`, `cargo doc --no-deps` with warnings denied,
//!   the release checks of [`release_checks`] (packaging, install, MSRV), and (when a
//!   nightly toolchain and cargo-fuzz are present) a short smoke run of every fuzz target:
//!   a fixed number of runs from a fixed seed, so it cannot flake.
//! * `fuzz [TARGET] [--secs N | --runs N] [--seed N]` — run one or every fuzz target for N
//!   seconds (default 60) or N runs, from libFuzzer's random seed unless one is given.
//! * `bench` — run the criterion benchmarks and write the plots (see `benches/README.md`).
//! * `agents` — the real agent CLIs (Claude Code, Codex) through `tam serve`.
//! * `e2e …` and `bfcl-score …` — the evaluation harness, the workspace member `tam-eval`
//!   (unpublished): run as `cargo run --release -p tam-eval -- e2e|bfcl-score …` with the
//!   same arguments (see `e2e/README.md`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("fuzz") => fuzz(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some(command @ ("e2e" | "bfcl-score")) => eval(command, &args[1..]),
        Some("agents") => agents(),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci | fuzz [TARGET] [--secs N | --runs N] [--seed N] | bench [--quick] \
                 | agents | e2e … | bfcl-score …> (`cargo xtask e2e --help` for the last two)"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(step: &str, mut cmd: Command) -> Result<(), String> {
    eprintln!("xtask: == {step}");
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// `cargo xtask e2e|bfcl-score ARGS…`: `tam-eval` (built in release, as the `tam` it
/// measures is) with the command and its arguments unchanged.
fn eval(command: &str, args: &[String]) -> Result<(), String> {
    let mut eval = cargo();
    eval.args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "tam-eval",
        "--",
        command,
    ])
    .args(args);
    run(&format!("tam-eval {command}"), eval)
}

/// The real agent CLIs (Claude Code, Codex) through `tam serve`: tam-cli's opt-in test,
/// which installs the pinned CLIs with npm into a cache outside the repository.
fn agents() -> Result<(), String> {
    let mut test = cargo();
    test.args(["test", "-p", "tam-cli", "--test", "agent_clis"])
        .env("TAM_AGENT_CLIS", "1");
    run("agent CLIs through tam serve", test)
}

fn ci() -> Result<(), String> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run("cargo fmt --check", fmt)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]);
    run("cargo clippy", clippy)?;
    // tool-dispatch without its runtime, as tam-proxy takes it (in the workspace the
    // features of all members are unified, so only this build sees that form); its tests
    // and examples, which need the runtime, must say so and drop out.
    let mut lean = cargo();
    lean.args([
        "clippy",
        "-p",
        "tool-dispatch",
        "--no-default-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run("cargo clippy -p tool-dispatch --no-default-features", lean)?;
    let mut lean = cargo();
    lean.args([
        "test",
        "-p",
        "tool-dispatch",
        "--no-default-features",
        "--lib",
        "--tests",
    ]);
    run("cargo test -p tool-dispatch --no-default-features", lean)?;

    let mut test = cargo();
    test.args(["test", "--workspace", "--all-features"]);
    run("cargo test", test)?;

    let mut doc = cargo();
    // The command line's binary is called `tam`, as is the front-door library: its docs
    // would overwrite the library's (cargo#6313), and a binary has no API to document.
    doc.args([
        "doc",
        "--workspace",
        "--no-deps",
        "--all-features",
        "--exclude",
        "tam-cli",
    ]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run("cargo doc", doc)?;

    release_checks()?;

    if fuzz_available() {
        // A fixed number of runs from a fixed seed: the same inputs on every machine, so
        // the gate cannot flake on what a random run happens to find (a time-bounded run
        // with libFuzzer's random seed did). Open-ended fuzzing is
        // `cargo xtask fuzz`.
        fuzz(&[
            "--runs".into(),
            SMOKE_RUNS.to_string(),
            "--seed".into(),
            "1".into(),
        ])?;
    } else {
        eprintln!("xtask: (fuzz smoke run skipped: nightly toolchain or cargo-fuzz not installed)");
    }
    Ok(())
}

/// The published crates, in dependency order: the test kit (the others' tests need it, it
/// needs none of them), the libraries and the command line. Each one's packaged tests run
/// from its unpacked .crate.
const PUBLISHED: [&str; 9] = [
    "tam-testkit",
    "tam-parse",
    "action-xml",
    "tam-rs",
    "tool-schema",
    "tam-model",
    "tool-dispatch",
    "tam-proxy",
    "tam-cli",
];

/// Removes the build fingerprints of the published crates under `dir`, so cargo rebuilds
/// them from their sources.
fn forget_fingerprints(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        if PUBLISHED.iter().any(|name| {
            f.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| hash.bytes().all(|b| b.is_ascii_hexdigit()))
        }) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// What a stranger depending on the crates gets:
///
/// 1. `cargo package` of the published crates together. Cargo (≥ 1.90) packages
///    them in dependency order and verifies each one — unpacks its .crate and builds it with
///    default features — against the already packaged siblings (a local registry overlay),
///    since none is on crates.io yet. So each .crate is complete and its manifest's
///    versions resolve; `cargo publish` would upload exactly these files.
/// 2. Every published crate is unpacked from its .crate outside the workspace and `cargo
///    test --all-features` runs in each, its siblings patched to their unpacked copies:
///    the tests, examples and doctests a crates.io user gets compile and pass (a test
///    file whose module or data the .crate lacks fails here).
/// 3. `cargo install --path crates/tam-cli --locked --debug` into a temporary root, and the
///    installed `tam --version` runs.
/// 4. MSRV: when the toolchain named by `rust-version` in the root Cargo.toml is installed
///    (`rustup toolchain install <version> --profile minimal`), `cargo +<version> check
///    --locked --all-features` of each published crate on its own (so each crate's own
///    feature list must be complete); otherwise a note says the step was skipped.
fn release_checks() -> Result<(), String> {
    // The verification resolves the packages against a local registry under
    // target/package; one left by an earlier run holds stale sources of the same version.
    let _ = std::fs::remove_dir_all(root().join("target/package"));
    // Cargo also unpacks those local-registry packages under $CARGO_HOME/registry/src/-<hash>
    // and keeps them across runs of the same checkout: a second run would verify against
    // the first run's sources (same name and version). Only local registries' folders start
    // with '-'; crates.io's are left alone.
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(src) = cargo_home.map(|h| h.join("registry/src"))
        && let Ok(dirs) = std::fs::read_dir(&src)
    {
        for dir in dirs.flatten() {
            if dir.file_name().to_string_lossy().starts_with('-') {
                for name in PUBLISHED {
                    if let Ok(entries) = std::fs::read_dir(dir.path()) {
                        for e in entries.flatten() {
                            let f = e.file_name().to_string_lossy().into_owned();
                            if f.starts_with(&format!("{name}-")) {
                                let _ = std::fs::remove_dir_all(e.path());
                            }
                        }
                    }
                }
            }
        }
    }
    // The verification builds in target/debug, where a registry package's artifacts are
    // trusted as immutable: ones left by an earlier run of the same version would be
    // reused although the sources changed. Forget our crates' fingerprints (cheap: only
    // only these rebuild). The same holds for the unpacked crates' tests in
    // target/unpacked: each unpacked crate is a workspace root of its own, so its
    // artifacts' names do not change from run to run, and the files of a .crate keep
    // their modification times.
    forget_fingerprints(&root().join("target/debug/.fingerprint"));
    forget_fingerprints(&root().join("target/unpacked/debug/.fingerprint"));
    let mut package = cargo();
    // `--allow-dirty`: check the working tree as it is (CI's is clean anyway).
    package.args(["package", "--locked", "--allow-dirty"]);
    for name in PUBLISHED {
        package.args(["-p", name]);
    }
    run("cargo package (and verify)", package)?;

    let manifest = std::fs::read_to_string(root().join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let field = |key: &str| {
        manifest.lines().find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
        })
    };
    let version = field("version").ok_or("no version in [workspace.package]")?;
    let scratch = env::temp_dir().join(format!("tam-release-checks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let target = root().join("target");

    // Every library unpacked side by side; a cargo config in the scratch folder patches
    // each sibling dependency to its unpacked copy (none is on crates.io yet).
    let mut patch = String::from("[patch.crates-io]\n");
    for name in PUBLISHED {
        let krate = target.join(format!("package/{name}-{version}.crate"));
        let mut untar = Command::new("tar");
        untar.arg("xzf").arg(&krate).arg("-C").arg(&scratch);
        run(&format!("unpack {name}.crate"), untar)?;
        patch.push_str(&format!("{name} = {{ path = \"{name}-{version}\" }}\n"));
    }
    let config = scratch.join(".cargo");
    std::fs::create_dir_all(&config).map_err(|e| format!("{}: {e}", config.display()))?;
    std::fs::write(config.join("config.toml"), patch)
        .map_err(|e| format!("{}: {e}", config.display()))?;
    for name in PUBLISHED {
        let mut test = cargo();
        test.current_dir(scratch.join(format!("{name}-{version}")))
            .args(["test", "--all-features"])
            .env("CARGO_TARGET_DIR", target.join("unpacked"))
            // An unpacked crate is a workspace root of its own: the workspace's profile
            // does not reach it, so the same debug setting comes by environment.
            .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
        run(&format!("cargo test in the unpacked {name}"), test)?;
    }
    // The packaged builds are checked; their artifacts (a second copy of every dependency)
    // and the verification builds under target/package only take disk from the steps after.
    let _ = std::fs::remove_dir_all(target.join("unpacked"));
    let _ = std::fs::remove_dir_all(target.join("package"));

    let mut install = cargo();
    install
        .args([
            "install",
            "--locked",
            "--debug",
            "--path",
            "crates/tam-cli",
            "--root",
        ])
        .arg(scratch.join("root"))
        .env("CARGO_TARGET_DIR", &target);
    run("cargo install --path crates/tam-cli", install)?;
    let mut tam = Command::new(scratch.join("root/bin/tam"));
    tam.arg("--version");
    run("installed tam --version", tam)?;
    let _ = std::fs::remove_dir_all(&scratch);

    let msrv = field("rust-version").ok_or("no rust-version in [workspace.package]")?;
    let installed = Command::new("rustup")
        .args(["run", &msrv, "cargo", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !installed {
        eprintln!(
            "xtask: (MSRV check skipped: toolchain {msrv} not installed; \
             rustup toolchain install {msrv} --profile minimal)"
        );
        return Ok(());
    }
    for name in &PUBLISHED {
        let mut check = Command::new("rustup");
        check
            .current_dir(root())
            .args([
                "run",
                &msrv,
                "cargo",
                "check",
                "--locked",
                "--all-features",
                "-p",
            ])
            .arg(name)
            .env("CARGO_TARGET_DIR", target.join("msrv"))
            // Whatever cargo runs xtask must not leak into the MSRV toolchain's build.
            .env_remove("RUSTC")
            .env_remove("CARGO");
        run(&format!("cargo +{msrv} check -p {name}"), check)?;
    }
    let _ = std::fs::remove_dir_all(target.join("msrv"));
    Ok(())
}

fn fuzz_available() -> bool {
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let cargo_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    nightly && cargo_fuzz && root().join("fuzz/Cargo.toml").exists()
}

fn fuzz_targets() -> Vec<String> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    if p.extension()? != "rs" {
                        return None;
                    }
                    Some(p.file_stem()?.to_string_lossy().into_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Runs of each fuzz target in `cargo xtask ci`'s smoke run (about 5 to 10 s each on a
/// 2-core machine).
const SMOKE_RUNS: u64 = 20_000;

fn fuzz(args: &[String]) -> Result<(), String> {
    let mut secs = 60u64;
    let mut runs = None;
    let mut seed = None;
    let mut target = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--secs" => {
                secs = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--secs needs a number")?
            }
            "--runs" => {
                runs = Some(
                    it.next()
                        .and_then(|s| s.parse::<u64>().ok())
                        .ok_or("--runs needs a number")?,
                )
            }
            "--seed" => {
                seed = Some(
                    it.next()
                        .and_then(|s| s.parse::<u64>().ok())
                        .ok_or("--seed needs a number")?,
                )
            }
            t => target = Some(t.to_string()),
        }
    }
    let targets = match target {
        Some(t) => vec![t],
        None => fuzz_targets(),
    };
    if targets.is_empty() {
        return Err("no fuzz targets found under fuzz/fuzz_targets".into());
    }
    for t in targets {
        // New inputs go to the working corpus (not committed); the seeds are read only.
        let corpus = root().join("fuzz/corpus").join(&t);
        let seeds = root().join("fuzz/seeds").join(&t);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut cmd = Command::new("cargo");
        cmd.current_dir(root().join("fuzz"));
        // The crates forbid `unsafe`: no sanitizer, for speed; debug assertions (and so
        // overflow checks) on, to catch offset arithmetic going wrong.
        cmd.args([
            "+nightly",
            "fuzz",
            "run",
            "--sanitizer",
            "none",
            "--debug-assertions",
            &t,
        ]);
        cmd.arg(&corpus);
        if seeds.exists() {
            cmd.arg(&seeds);
        }
        cmd.args([
            "--",
            "-timeout=10",
            "-rss_limit_mb=4096",
            "-print_final_stats=1",
        ]);
        if let Some(seed) = seed {
            cmd.arg(format!("-seed={seed}"));
        }
        let what = match runs {
            Some(n) => {
                cmd.arg(format!("-runs={n}"));
                format!("{n} runs")
            }
            None => {
                cmd.arg(format!("-max_total_time={secs}"));
                format!("{secs}s")
            }
        };
        run(&format!("fuzz {t} for {what}"), cmd)?;
    }
    Ok(())
}

fn bench(args: &[String]) -> Result<(), String> {
    // `--quick` and anything after `--` go to criterion; `--bench NAME` picks bench files.
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "tam-benches"]);
    let mut criterion_args = Vec::new();
    let mut picked = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => criterion_args.push(a.clone()),
            "--bench" => {
                let name = it.next().ok_or("--bench needs a name")?;
                cmd.args(["--bench", name]);
                picked = true;
            }
            "--" => criterion_args.extend(it.by_ref().cloned()),
            other => return Err(format!("bench: unknown argument {other}")),
        }
    }
    if !picked {
        // Every file of benches/benches/, named: with no `--bench`, cargo would also run
        // the library's and binaries' test harnesses, which reject criterion's options.
        let dir = root().join("benches/benches");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".rs").map(str::to_owned)
            })
            .collect();
        names.sort();
        for name in names {
            cmd.args(["--bench", &name]);
        }
    }
    if !criterion_args.is_empty() {
        cmd.arg("--").args(criterion_args);
    }
    run("cargo bench", cmd)?;
    let mut plot = cargo();
    plot.args([
        "run",
        "--release",
        "-p",
        "tam-benches",
        "--bin",
        "bench-report",
    ]);
    run("bench report", plot)
}
