#!/usr/bin/env bash
# Exit 0: the torch proxy provides torch.testing.assert_close (gap closed).
# Non-zero: AttributeError (gap still present).
set -u
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -R "$HERE"/. "$WORK"/
cd "$WORK" || exit 2
"$PY" -c 'import sys, paddle; print("python", sys.version.split()[0], "paddle", paddle.__version__)' 2>/dev/null
"$PY" repro.py
