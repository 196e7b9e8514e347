#!/usr/bin/env bash
# Tool round trips through `tam serve` with the official SDKs, in both protocols.
#
#   e2e/sdk/run.sh [round_trip.py options...]     e.g. --upstream http://127.0.0.1:8081/v1
#
# The SDKs go into a venv under ${TAM_SDK_CACHE:-$HOME/.cache/tam-sdk} (reinstalled when
# requirements.txt changes). The proxy is $TAM when set, else the workspace's release
# `tam`, built first with cargo. Needs Python 3.11+ (PYTHON picks the interpreter).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${TAM_SDK_CACHE:-$HOME/.cache/tam-sdk}
venv=$cache/venv

if [ -n "${PYTHON:-}" ]; then
    python=$PYTHON
elif command -v python3.11 >/dev/null 2>&1; then
    python=python3.11
else
    python=python3
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "run.sh: $python is $("$python" --version 2>&1); Python 3.11 or newer is needed" >&2
    exit 2
fi

mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
if ! cmp -s "$here/requirements.txt" "$venv/installed-requirements.txt"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/installed-requirements.txt"
fi

if [ -n "${TAM:-}" ]; then
    tam=$TAM
else
    (cd "$repo" && cargo build --release -p tam-cli)
    target=${CARGO_TARGET_DIR:-target}
    case $target in /*) ;; *) target=$repo/$target ;; esac
    tam=$target/release/tam
fi

status=0
for protocol in action tam; do
    "$venv/bin/python" "$here/round_trip.py" --tam "$tam" --protocol "$protocol" "$@" \
        || status=1
done
exit $status
