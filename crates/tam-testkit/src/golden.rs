//! Golden files: each case is an input file beside the file of what it must give. A test
//! names the folder, the inputs' extensions and the expected files' extension, and says
//! what a case gives; [`Golden::run`] compares every case and fails once, listing every
//! mismatch. With the environment variable [`BLESS`] (`UPDATE_GOLDEN`) set, it writes what
//! each case gives as its expected file instead; review the diff before committing.
//!
//! ```no_run
//! use tam_testkit::golden::Golden;
//!
//! Golden::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"), &["txt", "bin"], "events")
//!     .at_least(5)
//!     .run(|case| format!("{} bytes\n", case.input.len()));
//! ```

use std::path::{Path, PathBuf};

/// The environment variable that makes [`Golden::run`] rewrite the expected files.
pub const BLESS: &str = "UPDATE_GOLDEN";

/// Whether [`BLESS`] is set.
pub fn blessing() -> bool {
    std::env::var_os(BLESS).is_some()
}

/// One case: its input file, read.
#[derive(Debug)]
pub struct Case {
    /// The input file's name without its extension.
    pub name: String,
    /// The input file.
    pub path: PathBuf,
    /// The input file's bytes.
    pub input: Vec<u8>,
}

/// A folder of golden cases.
#[derive(Debug)]
pub struct Golden {
    dir: PathBuf,
    inputs: Vec<String>,
    expected: String,
    at_least: usize,
    normalize: Option<fn(&str) -> String>,
}

impl Golden {
    /// The cases in `dir`: every file whose extension is one of `inputs`, expected in the
    /// file of the same name with extension `expected`.
    pub fn new(dir: impl AsRef<Path>, inputs: &[&str], expected: &str) -> Self {
        Golden {
            dir: dir.as_ref().to_owned(),
            inputs: inputs.iter().map(|&e| e.to_owned()).collect(),
            expected: expected.to_owned(),
            at_least: 1,
            normalize: None,
        }
    }

    /// Fails unless the folder holds at least `n` cases (none went missing).
    pub fn at_least(mut self, n: usize) -> Self {
        self.at_least = n;
        self
    }

    /// Compares what a case gives with `normalize` of the expected file, not the file
    /// itself (for expected files written by hand in a looser form).
    pub fn normalize(mut self, normalize: fn(&str) -> String) -> Self {
        self.normalize = Some(normalize);
        self
    }

    /// The cases, sorted by file name.
    pub fn cases(&self) -> Vec<Case> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap_or_else(|e| panic!("{}: {e}", self.dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| self.inputs.iter().any(|i| i == e))
            })
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|path| Case {
                name: path.file_stem().unwrap().to_string_lossy().into_owned(),
                input: std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
                path,
            })
            .collect()
    }

    /// Runs every case through `give` and compares what it gives with the case's expected
    /// file (or, with [`BLESS`] set, writes it there); panics listing every mismatch.
    pub fn run(&self, mut give: impl FnMut(&Case) -> String) {
        let cases = self.cases();
        assert!(
            cases.len() >= self.at_least,
            "golden cases are missing: {} in {}, at least {} expected",
            cases.len(),
            self.dir.display(),
            self.at_least
        );
        let bless = blessing();
        let mut failures = Vec::new();
        for case in &cases {
            let got = give(case);
            let expected_path = case.path.with_extension(&self.expected);
            if bless {
                std::fs::write(&expected_path, &got)
                    .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
                continue;
            }
            let Ok(expected) = std::fs::read_to_string(&expected_path) else {
                failures.push(format!(
                    "== {}: no .{} file ({BLESS}=1 writes it)",
                    case.name, self.expected
                ));
                continue;
            };
            let expected = match self.normalize {
                Some(normalize) => normalize(&expected),
                None => expected,
            };
            if got != expected {
                failures.push(format!(
                    "== {}\n-- expected\n{expected}-- got\n{got}",
                    case.name
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} golden cases differ ({BLESS}=1 rewrites them; review the diff):\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mismatch_is_reported() {
        let dir = std::env::temp_dir().join(format!("tam-testkit-golden-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, input, expected) in [("a", "x", "X"), ("b", "y", "nope"), ("c", "z", "nah")] {
            std::fs::write(dir.join(format!("{name}.in")), input).unwrap();
            std::fs::write(dir.join(format!("{name}.out")), expected).unwrap();
        }
        let golden = Golden::new(&dir, &["in"], "out").at_least(3);
        let upper = |case: &Case| {
            String::from_utf8(case.input.clone())
                .unwrap()
                .to_uppercase()
        };
        let result = std::panic::catch_unwind(|| golden.run(upper));
        let message = *result.unwrap_err().downcast::<String>().unwrap();
        assert!(
            message.starts_with("2 of 3 golden cases differ"),
            "{message}"
        );
        assert!(
            message.contains("== b\n") && message.contains("== c\n"),
            "{message}"
        );
        assert!(!message.contains("== a\n"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
