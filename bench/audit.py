#!/usr/bin/env python3
"""Benchmark: `pq audit workarounds` on a 200-patch series with 200 workarounds.

Generates, in a temporary folder, an upstream and a fork with 200 commits (one file each,
Python and C++), exports them with `pq init`, gives every patch a complete workaround block
(all three kinds; `paddle >=`, `mre-passes`, `upstream-contains` and `manual` conditions)
and a reproducer folder, then `pq export`s the DEP-3 headers. Times the installed `pq`
console script (wall clock, no reproducer runs) against `pq --version` (interpreter start
and imports) in alternating rounds and prints the medians; target: audit < 1 s with
Python's bytecode cache (kept in the temporary folder). Also prints the audit without a
bytecode cache, for environments that set PYTHONDONTWRITEBYTECODE. Exit 1 if missed.

Usage: python bench/audit.py [--rounds N] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

PATCHES = 200
TARGET_S = 1.0
ISSUE = "https://github.com/PaddlePaddle/Paddle/issues/{}"


def env(home: Path, bytecode: bool = True) -> dict[str, str]:
    """A hermetic environment; `bytecode` lets Python cache compiled modules (in `home`),
    as it does on a user's machine, even where PYTHONDONTWRITEBYTECODE is set."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PQ_"))}
    if bytecode:
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        e["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    else:
        e["PYTHONDONTWRITEBYTECODE"] = "1"
        e.pop("PYTHONPYCACHEPREFIX", None)
    e.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
              "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "author@example.com",
              "GIT_COMMITTER_NAME": "Bench Committer",
              "GIT_COMMITTER_EMAIL": "committer@example.com", "GIT_EDITOR": "true"})
    return e


def run(cwd: Path, argv: list[str], environ: dict[str, str], ok: tuple[int, ...] = (0,)
        ) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=environ, check=False)
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(argv[:4])} failed ({proc.returncode}): "
                 f"{proc.stderr.decode()[-2000:]}{proc.stdout.decode()[-2000:]}")
    return proc


def source(i: int) -> tuple[str, str, str]:
    """(path, upstream text, patched text) of the file patch i changes."""
    marker = f"TODO(paddle#{70000 + i}): remove after Paddle compat supports api_{i}"
    if i % 3 == 0:
        path = f"csrc/wrap_{i:03d}.cc"
        up = "#include <torch/extension.h>\n\n" + "".join(
            f"at::Tensor op_{i}_{k}(const at::Tensor& x) {{ return x; }}\n" for k in range(40))
        patched = up.replace("#include <torch/extension.h>\n",
                             f"#include <torch/extension.h>\n// {marker}\n"
                             f'#include "compat/api_{i}.h"\n')
    else:
        path = f"pkg/mod_{i:03d}.py"
        up = "import torch\n\n" + "".join(
            f"def f_{i}_{k}(x):\n    return torch.relu(x) + {k}\n\n\n" for k in range(40))
        patched = up.replace(f"def f_{i}_7(x):\n    return torch.relu(x) + 7\n",
                             f"def f_{i}_7(x):\n    # {marker}\n"
                             f"    if not hasattr(torch, 'api_{i}'):\n        return x + 7\n"
                             "    return torch.relu(x) + 7\n")
    return path, up, patched


def workaround(i: int, path: str) -> dict[str, object]:
    marker = f"TODO(paddle#{70000 + i}): remove after Paddle compat supports api_{i}"
    kind = ("compat-gap", "compat-gap", "upstream-private", "build-entry")[i % 4]
    block: dict[str, object] = {
        "kind": kind,
        "covers": [f"{path}::f_{i}_7" if path.endswith(".py") else path],
        "reason": f"api_{i} is missing under Paddle's compat layer",
        "remove_when": [f"paddle >= 3.{4 + i % 3}", "mre-passes",
                        f"upstream-contains: {path}: api_{i}", "manual: check on a GPU"],
        "issue": ISSUE.format(70000 + i) if kind == "compat-gap"
        else "not-needed: not a Paddle gap",
        "marker": marker,
    }
    if kind != "build-entry":
        block["mre"] = f"mre/api-{i:03d}"
    else:
        block["remove_when"] = [f"upstream-contains: {path}: api_{i}"]
    return block


def build(root: Path, environ: dict[str, str], pq: str) -> Path:
    up = root / "upstream"
    up.mkdir()
    run(up, ["git", "init", "-q", "-b", "main"], environ)
    for i in range(PATCHES):
        path, text, _ = source(i)
        (up / path).parent.mkdir(parents=True, exist_ok=True)
        (up / path).write_text(text)
    (up / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    run(up, ["git", "add", "-A"], environ)
    run(up, ["git", "commit", "-q", "-m", "upstream"], environ)
    fork = root / "fork"
    run(root, ["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], environ)
    run(fork, ["git", "checkout", "-q", "-b", "paddle"], environ)
    for i in range(PATCHES):
        path, _, patched = source(i)
        (fork / path).write_text(patched)
        run(fork, ["git", "commit", "-q", "-a", "-m", f"workaround {i}: bridge api_{i}"],
            environ)
    run(fork, [pq, "init", "--upstream", "upstream/main"], environ)
    data = yaml.safe_load((fork / "series.yaml").read_text())
    for i, entry in enumerate(data["patches"]):
        path, _, _ = source(i)
        entry["workaround"] = workaround(i, path)
        mre = fork / "mre" / f"api-{i:03d}"
        mre.mkdir(parents=True)
        (mre / "run.sh").write_text("#!/usr/bin/env bash\nexit 1\n")
        (mre / "README.md").write_text(f"# api_{i}\n")
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    run(fork, [pq, "export"], environ)
    return fork


def timed(cwd: Path, argv: list[str], environ: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run(cwd, argv, environ, ok=(0, 1))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the generated repositories")
    args = parser.parse_args()
    pq = shutil.which("pq", path=str(Path(sys.executable).parent)) or shutil.which("pq")
    if pq is None:
        sys.exit("the `pq` console script is not installed next to this Python")
    root = Path(tempfile.mkdtemp(prefix="pq-bench-audit-"))
    try:
        environ = env(root)
        t0 = time.perf_counter()
        fork = build(root, environ, pq)  # also fills the bytecode cache
        print(f"generated {PATCHES} patches, {PATCHES} workarounds in "
              f"{time.perf_counter() - t0:.1f} s ({fork})")
        check = run(fork, [pq, "audit", "workarounds", "--json"], environ, ok=(0, 1))
        report = json.loads(check.stdout)
        print(f"audit: {report['summary']}")
        if report["summary"]["workarounds"] != PATCHES or report["findings"]:
            print(f"unexpected audit result: {report['findings'][:3]}")
            return 1
        audit_s, start_s, cold_s = [], [], []
        cold = env(root, bytecode=False)
        for _ in range(args.rounds):
            audit_s.append(timed(fork, [pq, "audit", "workarounds"], environ))
            start_s.append(timed(fork, [pq, "--version"], environ))
            cold_s.append(timed(fork, [pq, "audit", "workarounds"], cold))
        med_audit = statistics.median(t for t, _ in audit_s)
        med_start = statistics.median(t for t, _ in start_s)
        cpu_audit = statistics.median(c for _, c in audit_s)
        cpu_start = statistics.median(c for _, c in start_s)
        print("rounds, wall s: audit " + " ".join(f"{t:.3f}" for t, _ in audit_s))
        print("                start " + " ".join(f"{t:.3f}" for t, _ in start_s))
        print("                cold  " + " ".join(f"{t:.3f}" for t, _ in cold_s))
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print(f"median wall: pq audit workarounds {med_audit:.3f} s | pq --version "
              f"{med_start:.3f} s | audit/start {med_audit / med_start:.1f}x")
        print(f"median CPU:  pq audit workarounds {cpu_audit:.3f} s | pq --version "
              f"{cpu_start:.3f} s")
        print(f"fastest:     pq audit workarounds {min(t for t, _ in audit_s):.3f} s | "
              f"pq --version {min(t for t, _ in start_s):.3f} s (wall; closest to an idle "
              "machine when others share it)")
        print(f"without a bytecode cache (PYTHONDONTWRITEBYTECODE=1): pq audit workarounds "
              f"{statistics.median(t for t, _ in cold_s):.3f} s wall")
        print(f"target: audit < {TARGET_S:.1f} s wall: "
              f"{'ok' if med_audit < TARGET_S else 'MISSED'}")
        return 0 if med_audit < TARGET_S else 1
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
