#!/usr/bin/env python3
"""Benchmark: replaying recorded resolutions (git rerere), `pq rebase` against `git rebase`.

Generates, in a temporary folder, an upstream with 200 files and a fork carrying N patches
(default 10), each editing one line that one upstream commit also edits: every patch
conflicts. The resolutions are recorded once (pq rebase, resolve, --continue). Then,
alternating, several rounds of the same replay from the old stack:
  * pq:  `python -m pq rebase upstream/main` (resolved from the recorded resolutions);
  * git: `git -c rerere.enabled=true -c rerere.autoupdate=true rebase` of the same commits,
         with `git rebase --continue` after each stop (git rerere resolves, git stops).
Prints each round, the medians side by side, the ratio pq/git, and pq's time per patch.
`upstream/merge` edits the same files far from the patches' lines, `upstream/nearby` three
lines below them (inside each patch's context, which the patch file then carries anew):
bench/speed.py times `pq rebase` onto each (a clean three-way merge per patch; every patch
file stays as it was, or every one is written again, as the replay writes every one)
against the replay of the resolutions.
`--pq-src DIR` runs pq from another source tree (e.g. an older commit's `src`), to compare
before and after.

Usage: python bench/rerere.py [--patches N] [--rounds N] [--pq-src DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rebase as rebase_bench  # the sibling bench/rebase.py (its folder is on sys.path)

FILES = 200
LINES = 40


def cpu() -> float:
    """CPU seconds (user + system) of the child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def env(home: Path, pq_src: str | None) -> dict[str, str]:
    """bench/rebase.py's hermetic environment, with `pq_src` first on PYTHONPATH."""
    e = rebase_bench.env(home)
    if pq_src:
        e["PYTHONPATH"] = os.pathsep.join(p for p in (pq_src, e.get("PYTHONPATH")) if p)
    return e


def run(cwd: Path, argv: list[str], e: dict[str, str], ok: tuple[int, ...] = (0,)) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=e, check=False)
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(argv[:4])} failed ({proc.returncode}):\n"
                 f"{proc.stdout.decode()[-1500:]}{proc.stderr.decode()[-1500:]}")
    return proc.stdout.decode()


def content(i: int, line5: str) -> str:
    return "".join((line5 if n == 5 else f"file {i} line {n}") + "\n"
                   for n in range(1, LINES + 1))


def setup(tmp: Path, patches: int, e: dict[str, str], pq: list[str]) -> tuple[Path, str, str]:
    up, fork = tmp / "upstream", tmp / "fork"
    up.mkdir()
    run(up, ["git", "init", "-q", "-b", "main"], e)
    for i in range(FILES):
        (up / f"f{i:03d}.txt").write_text(content(i, f"file {i} line 5"))
    run(up, ["git", "add", "-A"], e)
    run(up, ["git", "commit", "-q", "-m", "upstream: initial"], e)
    run(tmp, ["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], e)
    run(fork, ["git", "checkout", "-q", "-b", "paddle"], e)
    for i in range(patches):
        (fork / f"f{i:03d}.txt").write_text(content(i, f"patch {i}"))
        run(fork, ["git", "commit", "-q", "-am", f"patch {i}"], e)
    last_patch = run(fork, ["git", "rev-parse", "HEAD"], e).strip()
    run(fork, pq + ["init", "--upstream", "upstream/main", "--commit"], e)
    orig = run(fork, ["git", "rev-parse", "HEAD"], e).strip()
    for i in range(patches):
        (up / f"f{i:03d}.txt").write_text(content(i, f"upstream {i}"))
    run(up, ["git", "commit", "-q", "-am", "upstream: edit line 5 everywhere"], e)
    # upstream/merge: the same files edited far from line 5, so every patch merges cleanly.
    run(up, ["git", "checkout", "-q", "-b", "merge", "main~1"], e)
    for i in range(patches):
        (up / f"f{i:03d}.txt").write_text(content(i, f"file {i} line 5").replace(
            f"file {i} line {LINES - 5}\n", f"upstream {i} line {LINES - 5}\n"))
    run(up, ["git", "commit", "-q", "-am", "upstream: edit far from line 5"], e)
    # upstream/nearby: line 8, in each patch's context: merged cleanly, patch files rewritten.
    run(up, ["git", "checkout", "-q", "-b", "nearby", "main~1"], e)
    for i in range(patches):
        (up / f"f{i:03d}.txt").write_text(content(i, f"file {i} line 5").replace(
            f"file {i} line 8\n", f"upstream {i} line 8\n"))
    run(up, ["git", "commit", "-q", "-am", "upstream: edit line 8, near line 5"], e)
    run(up, ["git", "checkout", "-q", "main"], e)
    run(fork, ["git", "fetch", "-q", "upstream"], e)
    # Record every resolution once, through pq's conflict loop.
    out = subprocess.run(pq + ["rebase", "upstream/main"], cwd=fork, env=e, check=False,
                         capture_output=True)
    for i in range(patches):
        if out.returncode == 0:
            break
        (fork / f"f{i:03d}.txt").write_text(content(i, f"upstream {i}; patch {i}"))
        run(fork, ["git", "add", f"f{i:03d}.txt"], e)
        out = subprocess.run(pq + ["rebase", "--continue"], cwd=fork, env=e, check=False,
                             capture_output=True)
    if out.returncode != 0:
        sys.exit("recording the resolutions failed:\n" + out.stdout.decode()[-1500:])
    return fork, orig, last_patch


def time_pq(fork: Path, orig: str, e: dict[str, str], pq: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one `pq rebase` reusing every resolution."""
    run(fork, ["git", "checkout", "-q", "paddle"], e)
    run(fork, ["git", "reset", "-q", "--hard", orig], e)
    start, used = time.perf_counter(), cpu()
    out = run(fork, pq + ["rebase", "upstream/main"], e)
    elapsed, used = time.perf_counter() - start, cpu() - used
    if out.count("resolved from a recorded resolution") == 0:
        sys.exit("pq did not reuse the recorded resolutions:\n" + out)
    return elapsed, used


def time_pq_merge(fork: Path, orig: str, e: dict[str, str], pq: list[str], patches: int,
                  onto: str = "upstream/merge") -> tuple[float, float]:
    """(wall, CPU) seconds of one `pq rebase` of the same stack onto `onto` (upstream/merge
    or upstream/nearby), where every patch needs a three-way merge and none conflicts:
    what a merge costs pq."""
    run(fork, ["git", "checkout", "-q", "paddle"], e)
    run(fork, ["git", "reset", "-q", "--hard", orig], e)
    start, used = time.perf_counter(), cpu()
    out = run(fork, pq + ["rebase", onto], e)
    elapsed, used = time.perf_counter() - start, cpu() - used
    if sum(1 for ln in out.splitlines() if ln.split()[:1] == ["merged"]) != patches:
        sys.exit(f"pq did not merge every patch onto {onto}:\n" + out)
    changed = f"{patches} of {patches} patches kept, {patches if 'nearby' in onto else 0} "
    if changed not in out:
        sys.exit(f"pq onto {onto} did not rewrite the patch files as expected:\n" + out)
    return elapsed, used


def time_git(fork: Path, last_patch: str, e: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of `git rebase` and its `--continue`s."""
    run(fork, ["git", "checkout", "-q", "-B", "gitside", last_patch], e)
    base = run(fork, ["git", "merge-base", "gitside", "upstream/main"], e).strip()
    rr = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
    start, used = time.perf_counter(), cpu()
    code = subprocess.run(["git", *rr, "rebase", "-q", "--onto", "upstream/main", base],
                          cwd=fork, env=e, capture_output=True, check=False).returncode
    while code != 0:  # stopped: rerere resolved and staged it; take it
        code = subprocess.run(["git", *rr, "rebase", "--continue"], cwd=fork, env=e,
                              capture_output=True, check=False).returncode
        if code != 0 and run(fork, ["git", "diff", "--name-only", "--diff-filter=U"], e):
            sys.exit("git rerere left a conflict unresolved")
    return time.perf_counter() - start, cpu() - used


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patches", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pq-src", default=None, help="run pq from this source folder")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pq-bench-rerere-"))
    try:
        home = tmp / "home"
        home.mkdir()
        e = env(home, args.pq_src)
        pq = [sys.executable, "-m", "pq"]
        fork, orig, last_patch = setup(tmp, args.patches, e, pq)
        pq_times, git_times = [], []
        print(f"{args.patches} patches, each resolved from a recorded resolution; "
              "seconds, wall (CPU of all processes)")
        print(f"{'round':>6}  {'pq':>15}  {'git rebase':>15}  {'pq/git':>6}")
        for r in range(args.rounds):
            p = time_pq(fork, orig, e, pq)
            g = time_git(fork, last_patch, e)
            pq_times.append(p)
            git_times.append(g)
            print(f"{r + 1:>6}  {p[0]:6.3f} ({p[1]:6.3f})  {g[0]:6.3f} ({g[1]:6.3f})  "
                  f"{p[0] / g[0]:6.2f}")
        mp = [statistics.median(t[i] for t in pq_times) for i in (0, 1)]
        mg = [statistics.median(t[i] for t in git_times) for i in (0, 1)]
        print(f"{'median':>6}  {mp[0]:6.3f} ({mp[1]:6.3f})  {mg[0]:6.3f} ({mg[1]:6.3f})  "
              f"{mp[0] / mg[0]:6.2f}   CPU ratio {mp[1] / mg[1]:.2f}; per patch: pq "
              f"{1000 * mp[0] / args.patches:.0f} ms, git {1000 * mg[0] / args.patches:.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
