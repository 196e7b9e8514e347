#!/usr/bin/env bash
# Rebuilds fuzz/seeds/ from the golden inputs of the crates (the seeds are committed; rerun
# after adding golden cases). Each seed is the golden input behind the two header bytes of
# the fuzz input layout (`tam_fuzz` crate docs): flags, then 0 split points. Flags: bit 0
# VCP dialect, bit 1 tiny limits (as the golden tests use for `vcp_*` and `limit_*`).
# schema_coerce seeds are hand-written JSON (flag bit 1) and are kept as they are.
set -euo pipefail
cd "$(dirname "$0")"
root=..

seed() { # seed TARGET FILE FLAGS
    local out="seeds/$1/$(basename "$2")"
    { printf "\\x$3\\x00"; cat "$2"; } > "$out"
}

flags_for() { # by golden file name
    case "$(basename "$1")" in
        vcp_*) echo 01 ;;
        limit_*) echo 0e ;;
        *) echo 00 ;;
    esac
}

for t in tam_decode action_decode mixed_decode; do
    rm -rf "seeds/$t"
    mkdir -p "seeds/$t"
done
for f in "$root"/crates/tam-parse/tests/golden/*.{tam,bin}; do
    seed tam_decode "$f" "$(flags_for "$f")"
    seed mixed_decode "$f" "$(flags_for "$f")"
done
# The golden inputs of both protocols in one stream (crates/tam) seed the ACTION target too.
for f in "$root"/crates/action-xml/tests/golden/*.{txt,bin} "$root"/crates/tam/tests/golden/*.{txt,bin}; do
    seed action_decode "$f" "$(flags_for "$f")"
    seed mixed_decode "$f" "$(flags_for "$f")"
done
# Regression inputs found by fuzzing, when the crates keep them (tests/fuzz/).
for f in "$root"/crates/tam-parse/tests/fuzz/* "$root"/crates/action-xml/tests/fuzz/*; do
    [ -f "$f" ] || continue
    case "$f" in
        *tam-parse*) cp "$f" seeds/tam_decode/ ;;
        *) cp "$f" seeds/action_decode/; cp "$f" seeds/mixed_decode/ ;;
    esac
done
# Hand-written inputs for the prose context (inline code, `>` lines, code fences) and
# reasoning sections: extra-seeds/FLAGS_NAME.txt, FLAGS the flags byte in hex (0x20 turns
# reasoning on in tam_decode and action_decode; mixed_decode reads it by default).
for f in extra-seeds/*.txt; do
    flags="$(basename "$f" | cut -d_ -f1)"
    for t in tam_decode action_decode mixed_decode; do
        seed "$t" "$f" "$flags"
    done
done
for t in tam_decode action_decode mixed_decode; do
    echo "$t: $(ls "seeds/$t" | wc -l) seeds"
done
