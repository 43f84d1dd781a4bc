#!/usr/bin/env python3
"""Benchmark: the pre-push hook on a 100-patch series, cached against a full check.

Generates, in a temporary folder, an upstream with 1,000 files and a fork carrying 100
small patches (series.yaml + patches/ committed), installs the hook with `pq hook install`
and runs the installed `.git/hooks/pre-push` exactly as git does (hook arguments, the
`<local ref> <sha> <remote ref> <sha>` line on stdin, GIT_DIR set, the working tree as
current folder). Alternating rounds: a full check (cache file removed first), a cached
check, and a push of a ref pq does not manage. Prints each round and the medians side by
side; targets: cached < 0.5 s, full < 5 s (the series has no gate). Exit 1 if one is missed.

Usage: python bench/hook.py [--rounds N] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIRS = 20
FILES_PER_DIR = 50  # 1,000 files
LINES = 60
PATCHES = 100
CACHED_TARGET_S = 0.5
FULL_TARGET_S = 5.0


def env(home: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PQ_"))}
    e.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
              "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "author@example.com",
              "GIT_COMMITTER_NAME": "Bench Committer",
              "GIT_COMMITTER_EMAIL": "committer@example.com", "GIT_EDITOR": "true"})
    return e


def run(cwd: Path, argv: list[str], environ: dict[str, str], input: bytes | None = None
        ) -> str:
    proc = subprocess.run(argv, cwd=cwd, input=input, capture_output=True, env=environ,
                          check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} failed ({proc.returncode}): "
                 f"{proc.stderr.decode()[-2000:]}")
    return proc.stdout.decode()


def build(root: Path, environ: dict[str, str]) -> Path:
    """An upstream, and a fork with PATCHES commits exported as a committed series."""
    up = root / "upstream"
    up.mkdir()
    run(up, ["git", "init", "-q", "-b", "main"], environ)
    for d in range(DIRS):
        folder = up / f"pkg{d:02d}"
        folder.mkdir()
        for f in range(FILES_PER_DIR):
            body = "".join(f"value_{d}_{f}_{i} = {i}\n" for i in range(LINES))
            (folder / f"mod{f:02d}.py").write_text(body)
    (up / "setup.py").write_text("from torch.utils import cpp_extension\n")
    run(up, ["git", "add", "-A"], environ)
    run(up, ["git", "commit", "-q", "-m", "upstream"], environ)
    fork = root / "fork"
    run(root, ["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], environ)
    run(fork, ["git", "checkout", "-q", "-b", "paddle"], environ)
    for p in range(PATCHES):
        d, f = p % DIRS, p // DIRS
        path = fork / f"pkg{d:02d}" / f"mod{f:02d}.py"
        lines = path.read_text().splitlines(keepends=True)
        lines[5] = f"value_{d}_{f}_5 = 'paddle {p}'  # compat\n"
        path.write_text("".join(lines))
        run(fork, ["git", "commit", "-q", "-am", f"glue: patch {p} for pkg{d:02d}"], environ)
    pq = [sys.executable, "-m", "pq"]
    run(fork, [*pq, "init", "--upstream", "upstream/main", "--commit"], environ)
    run(fork, [*pq, "hook", "install"], environ)
    return fork


def timed_hook(fork: Path, environ: dict[str, str], line: str) -> tuple[float, str]:
    hook_env = {**environ, "GIT_DIR": str(fork / ".git"), "GIT_PREFIX": ""}
    start = time.perf_counter()
    proc = subprocess.run([str(fork / ".git/hooks/pre-push"), "origin", "/dev/null"],
                          cwd=fork, input=line.encode(), capture_output=True, env=hook_env,
                          check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"the hook refused a consistent push:\n{proc.stderr.decode()}")
    return elapsed, proc.stderr.decode().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="Keep the generated repositories.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pq-bench-hook-"))
    try:
        environ = env(root / "home")
        (root / "home").mkdir()
        started = time.perf_counter()
        fork = build(root, environ)
        print(f"built a {PATCHES}-patch series on {DIRS * FILES_PER_DIR} files in "
              f"{time.perf_counter() - started:.1f}s ({fork})")
        tip = run(fork, ["git", "rev-parse", "HEAD"], environ).strip()
        upstream = run(fork, ["git", "rev-parse", "upstream/main"], environ).strip()
        zero = "0" * 40
        managed = f"refs/heads/paddle {tip} refs/heads/paddle {zero}\n"
        other = f"refs/heads/main {upstream} refs/heads/main {zero}\n"
        cache = fork / ".git/pq/hook-cache.json"
        full, cached, unmanaged = [], [], []
        for r in range(args.rounds):
            cache.unlink(missing_ok=True)
            t_full, said = timed_hook(fork, environ, managed)
            if "series consistent" not in said or "cached" in said:
                sys.exit(f"expected a full check, the hook said: {said}")
            t_cached, said = timed_hook(fork, environ, managed)
            if "cached" not in said:
                sys.exit(f"expected a cached check, the hook said: {said}")
            t_other, said = timed_hook(fork, environ, other)
            full.append(t_full)
            cached.append(t_cached)
            unmanaged.append(t_other)
            print(f"round {r + 1}: full {t_full:.3f}s  cached {t_cached:.3f}s  "
                  f"non-pq ref {t_other:.3f}s")
        m_full, m_cached = statistics.median(full), statistics.median(cached)
        m_other = statistics.median(unmanaged)
        print(f"median: full {m_full:.3f}s (target < {FULL_TARGET_S}s), cached "
              f"{m_cached:.3f}s (target < {CACHED_TARGET_S}s), non-pq ref {m_other:.3f}s; "
              f"full/cached {m_full / m_cached:.1f}x")
        missed = m_full >= FULL_TARGET_S or m_cached >= CACHED_TARGET_S
        if missed:
            print("TARGET MISSED")
        sys.exit(1 if missed else 0)
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
