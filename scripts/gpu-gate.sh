#!/usr/bin/env bash
# The GPU part of the example's gate, on a machine with an NVIDIA GPU and PyTorch with CUDA.
#
# Installs pq (from this checkout, its dependencies from wheelhouse/, offline), builds a
# throwaway upstream repository of the example library (src/pq/demo/example/upstream) and a
# fork carrying the top-level series (`pq apply --branch paddle`), then runs
#   pq gate --stage gpu-build --stage gpu-tests --json --python <python with torch+CUDA>
# and prints `pq gate --status`, nvidia-smi, nvcc --version and the git note.
#
# Usage: scripts/gpu-gate.sh   (from anywhere; gate.json, note.json, status.txt, env.txt and
#                               the stage logs go to $OUT, by default a new temporary folder)
# Environment: GPU_GATE_PYTHON=/path/to/python picks the interpreter (default: the first of
# python3, python on PATH whose torch is a CUDA build); GPU_GATE_KEEP=1 keeps the work folder.
# Wheels for an offline machine, prepared where pip works (match the target's Python):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 -d wheelhouse click PyYAML
# Exit status: that of `pq gate` (0 passed, 1 a stage failed, 2 configuration), or 3 when
# this machine cannot run it (no interpreter with CUDA torch, pq does not install).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/pq-gpu-gate-out-XXXXXX")}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pq-gpu-gate-XXXXXX")
[ "${GPU_GATE_KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
say() { printf '== %s\n' "$*"; }

# 1. The interpreter: PyTorch built with CUDA.
cuda_torch() {
  "$1" -c 'import sys, torch; sys.exit(0 if torch.version.cuda else 1)' >/dev/null 2>&1
}
PY=${GPU_GATE_PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3 python; do
    found=$(command -v "$cand" 2>/dev/null) || continue
    if cuda_torch "$found"; then PY=$found; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "gpu-gate: no python with a CUDA build of torch on PATH (set GPU_GATE_PYTHON)" >&2
  exit 3
fi
PY=$(command -v "$PY")
say "interpreter: $PY"
"$PY" -c 'import sys, torch
print("python", sys.version.split()[0], "| torch", torch.__version__, "| torch CUDA",
      torch.version.cuda, "| GPU visible:", torch.cuda.is_available())'

# 2. pq, installed offline into a folder of its own.
say "installing pq"
if ! "$PY" -m pip install -q --no-index --find-links "$ROOT/wheelhouse" --no-build-isolation \
    --no-compile --no-cache-dir --disable-pip-version-check --target "$WORK/site" "$ROOT"; then
  echo "gpu-gate: pq did not install (are its dependencies' wheels in wheelhouse/?)" >&2
  exit 3
fi
pq() { PYTHONPATH="$WORK/site" "$PY" -m pq "$@"; }
pq --version

# 3. A throwaway upstream (tinyop v1) and a fork with the series applied.
say "upstream and fork in $WORK"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="pq gpu gate" GIT_AUTHOR_EMAIL="gpu-gate@pq.invalid"
export GIT_COMMITTER_NAME="pq gpu gate" GIT_COMMITTER_EMAIL="gpu-gate@pq.invalid"
UP=$WORK/upstream FORK=$WORK/fork
cp -r "$ROOT/src/pq/demo/example/upstream" "$UP"
find "$UP" \( -name __pycache__ -o -name build -o -name .pytest_cache -o -name '*.egg-info' \
  -o -name '*.so' \) -prune -exec rm -rf {} +
git -C "$UP" init -q -b main
git -C "$UP" add -A
git -C "$UP" commit -q -m "tinyop v1"
V1=$(git -C "$UP" rev-parse HEAD)
git clone -q -o upstream "$UP" "$FORK"
cp -r "$ROOT/series.yaml" "$ROOT/patches" "$FORK/"
[ -d "$ROOT/mre" ] && cp -r "$ROOT/mre" "$FORK/"
sed -i -E "s/^(  base: )[0-9a-f]{40}\$/\1$V1/" "$FORK/series.yaml"
(cd "$FORK" && pq apply --branch paddle)

# 4. The GPU stages.
say "pq gate --stage gpu-build --stage gpu-tests"
cd "$FORK"
set +e
pq gate --stage gpu-build --stage gpu-tests --json --python "$PY" >"$OUT/gate.json"
rc=$?
set -e
"$PY" - "$OUT/gate.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("status:", r["status"], "|", r.get("summary") or r.get("error"))
for s in r.get("stages", []):
    print(f'  {s["name"]:10} {s["display"]:28} {s["duration_s"]} s')
    if s.get("tail"):
        print(s["tail"])
EOF
say "pq gate --status"
pq gate --status | tee "$OUT/status.txt" || true
say "environment"
{ nvidia-smi; nvcc --version; git --version; } 2>&1 | tee "$OUT/env.txt" || true
say "note (git notes --ref=pq-gate show HEAD)"
git notes --ref=pq-gate show HEAD | tee "$OUT/note.json" || true
for log in .git/pq/gate/logs/*/*.log; do
  [ -f "$log" ] && cp "$log" "$OUT/"
done
say "pq gate exit status: $rc; results in $OUT"
exit "$rc"
