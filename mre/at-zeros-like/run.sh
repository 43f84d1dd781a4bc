#!/usr/bin/env bash
# Exit 0: at::zeros_like(x) returns zeros with x's shape and dtype for float32, float64,
# int32 and int64 (gap closed). Non-zero: build, load or check fails (gap still present).
set -u
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -R "$HERE"/. "$WORK"/
cd "$WORK" || exit 2
"$PY" -c 'import sys, paddle; print("python", sys.version.split()[0], "paddle", paddle.__version__)' 2>/dev/null
if ! "$PY" setup.py build_ext --inplace >build.log 2>&1; then
  echo "FAIL: build failed:"
  grep -m 3 ": error:" build.log
  exit 1
fi
"$PY" check.py
