//! The processes the legs talk to: `llama-server` (started, waited for, stopped) and
//! `tam serve` in front of an upstream.

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tam::Protocol;

use crate::http;
use crate::setup::{Cache, ModelPin, mkdir, tam_binary};

/// Most seconds to wait for `llama-server`'s `/health` to answer 200 (it loads the model).
const HEALTH_TIMEOUT: Duration = Duration::from_secs(300);
/// Context size given to `llama-server` (`-c`): the prompts plus a few agent rounds.
const CONTEXT_TOKENS: u32 = 8192;

/// A running `llama-server`; dropping it stops the server unless it is kept.
pub(crate) struct Server {
    child: Child,
    port: u16,
    keep: bool,
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The OpenAI base URL (`…/v1`), as clients and `tam serve --upstream` take it.
    pub(crate) fn openai_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.keep {
            eprintln!(
                "tam-eval e2e: llama-server left running (--keep-server): {} (pid {}); stop it \
                 with `kill {}`; `cargo xtask e2e --bfcl FILE --base-url {}` uses it \
                 (with the same --model)",
                self.base_url(),
                self.child.id(),
                self.child.id(),
                self.openai_url()
            );
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("tam-eval e2e: llama-server stopped");
    }
}

/// A port nobody listens on now (the OS picks it; another process could take it before
/// the server binds it, which makes the server fail to start, loudly).
pub(crate) fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

pub(crate) fn start_server(
    cache: &Cache,
    model: &ModelPin,
    keep: bool,
    prompt_cache: bool,
) -> Result<Server, String> {
    let port = free_port()?;
    mkdir(&cache.logs())?;
    let log_path = cache.logs().join("llama-server.log");
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log2 = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut command = Command::new(cache.server());
    command
        .arg("-m")
        .arg(cache.model(model))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-c", &CONTEXT_TOKENS.to_string(), "-np", "1", "-t", "2"])
        .args(["--alias", super::MODEL_ALIAS, "--no-webui"])
        // The chat template through Jinja: native tool calling (the BFCL runner's native
        // path) needs it. The default of the pinned build, named so a newer pin keeps it.
        .arg("--jinja");
    if !prompt_cache {
        // The prompt cache changes the output of a later request with the same prefix:
        // off, so every request and every try is reproducible at temperature 0
        // (`--prompt-cache` leaves the server's default, on, for times as users see them).
        command.args(["--no-cache-prompt", "--cache-ram", "0"]);
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| format!("{}: cannot start: {e}", cache.server().display()))?;
    let mut server = Server { child, port, keep };
    let client = http::client(Duration::from_secs(5))?;
    let health = format!("{}/health", server.base_url());
    let deadline = Instant::now() + HEALTH_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!(
                "llama-server exited ({status}) before it was healthy; see {}",
                log_path.display()
            ));
        }
        if http::get_status(&client, &health) == Ok(200) {
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

/// Most seconds `tam serve` may take to accept connections.
const SERVE_START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tam serve`; dropping it stops it.
pub(crate) struct Proxy {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tam serve` in front of `upstream` (an OpenAI base URL, `…/v1`) in `protocol`
/// with the `--serve-arg`s `extra` after the harness's own, its log to `log_path`, and
/// waits until it accepts connections.
pub(crate) fn start_proxy(
    upstream: &str,
    protocol: Protocol,
    extra: &[String],
    log_path: &Path,
) -> Result<Proxy, String> {
    let port = free_port()?;
    let log = fs::File::create(log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = Command::new(tam_binary())
        .arg("serve")
        .args(["--upstream", upstream])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--protocol", protocol.as_str()])
        .args(extra)
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
