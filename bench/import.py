#!/usr/bin/env python3
"""Benchmark: `pq import` of a merge-maintained fork against linearising it with `git rebase`.

Generates, in a temporary folder and with `git fast-import`, an upstream of 2,000 files
(C++ sources using at:: and Python modules) and a `paddle` fork of 2,000 migration commits
merged with upstream 40 times (upstream moves by 8 commits between merges; fork edits sit in
the top of a file, upstream's in the bottom half, so every merge is clean). Then,
alternating, several rounds: `pq import --upstream upstream/main` (the console script next
to sys.executable) and `git rebase` of the same commits onto the base (what users run today
to get a linear history), each on a fresh branch at the fork's tip. Prints every time, both
medians, the ratio pq/git, and whether the trees are identical (pq's against the original
tip's and against git's, the queue files left out).

Exits 2 with a message when this pq has no `import` command yet.

Usage: python bench/import.py [--rounds N] [--commits N] [--merges N] [--keep]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rebase import Runner, pq_command  # bench/rebase.py: the same environment and timing

DIRS = 40
FILES_PER_DIR = 50  # 2,000 files
CPP_DIRS = 10  # the first ten folders hold C++ sources
LINES = 80
SPLIT = 40  # upstream edits lines from this one down
FORK_LINES = 30  # the fork edits lines above this one (a gap, so no merge ever conflicts)
UPSTREAM_PER_MERGE = 8
TOUCHED = 400  # files the fork edits at all (a migration touches a part of the tree)
START = 1_700_000_000


def path_of(i: int) -> str:
    d = i // FILES_PER_DIR
    ext = "cc" if d < CPP_DIRS else "py"
    return f"src/mod{d:02d}/file{i % FILES_PER_DIR:03d}.{ext}"


def line_of(path: str, i: int, k: int) -> str:
    if path.endswith(".cc"):
        return f"int value_{i}_{k} = {k};  // line {k + 1}\n"
    return f"value_{i}_{k} = {k}  # line {k + 1}\n"


def fork_line(path: str, i: int, k: int, n: int) -> str:
    if path.endswith(".cc"):
        return f"at::Tensor value_{i}_{k} = paddle::compat::make({k});  // port {n}\n"
    return f"value_{i}_{k} = paddle_compat({k})  # port {n}\n"


class Stream:
    """A `git fast-import` stream of commits on two branches of one repository."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.when = START

    def commit(self, ref: str, message: str, files: dict[str, bytes],
               parent: str = "", merge: str = "") -> str:
        self.mark += 1
        self.when += 60
        msg = message.encode()
        out = [b"commit %s\nmark :%d\n" % (ref.encode(), self.mark),
               b"author Bench Author <author@example.com> %d +0000\n" % self.when,
               b"committer Bench Committer <committer@example.com> %d +0000\n" % self.when,
               b"data %d\n%s\n" % (len(msg), msg)]
        if parent:
            out.append(b"from %s\n" % parent.encode())
        if merge:
            out.append(b"merge %s\n" % merge.encode())
        for path, data in sorted(files.items()):
            out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        self.parts.append(b"".join(out))
        return f":{self.mark}"


def build(root: Path, run: Runner, n_commits: int, n_merges: int) -> tuple[Path, str]:
    """The fork (branch `paddle` checked out, `upstream/main` a remote-tracking ref) and
    its tip."""
    rng = random.Random(20260115)
    fork = root / "fork"
    fork.mkdir()
    run.git(fork, "init", "-q", "-b", "paddle")
    run.git(fork, "config", "gc.auto", "0")  # measure the imports, not a gc
    run.git(fork, "config", "maintenance.auto", "false")
    paths = [path_of(i) for i in range(DIRS * FILES_PER_DIR)]
    up = {p: [line_of(p, i, k) for k in range(LINES)] for i, p in enumerate(paths)}
    mine = {p: list(lines) for p, lines in up.items()}

    def blob(lines: list[str]) -> bytes:
        return "".join(lines).encode()

    s = Stream()
    upstream_ref = "refs/remotes/upstream/main"
    up_tip = s.commit(upstream_ref, "upstream: initial import", {p: blob(up[p]) for p in paths})
    fork_parent = up_tip  # the fork's first commit starts on upstream's first one
    touched = rng.sample(range(len(paths)), TOUCHED)
    per_segment = n_commits // n_merges
    n = 0
    for seg in range(n_merges):
        for _ in range(per_segment if seg < n_merges - 1 else n_commits - n):
            i = rng.choice(touched)
            p = paths[i]
            k = rng.randrange(FORK_LINES)
            mine[p][k] = fork_line(p, i, k, n)
            n += 1
            kind = "csrc" if p.endswith(".cc") else "pkg"
            s.commit("refs/heads/paddle", f"{kind}: port step {n}\n\nMoves {p} onto "
                     f"Paddle's compat layer.", {p: blob(mine[p])}, parent=fork_parent)
            fork_parent = ""
        changed: set[str] = set()
        for c in range(UPSTREAM_PER_MERGE):
            files = {}
            for p in rng.sample(paths, rng.randint(1, 3)):
                k = rng.randrange(SPLIT, LINES)
                up[p][k] = up[p][k].rstrip("\n") + f"  # upstream {seg}.{c}\n"
                files[p] = blob(up[p])
                changed.add(p)
            up_tip = s.commit(upstream_ref, f"upstream: change {seg}.{c}", files)
        merged = {}
        for p in changed:
            mine[p][SPLIT:] = up[p][SPLIT:]
            merged[p] = blob(mine[p])
        s.commit("refs/heads/paddle", "Merge remote-tracking branch 'upstream/main' into "
                 "paddle", merged, merge=up_tip)
    run.git(fork, "fast-import", "--quiet", input=b"".join(s.parts))
    run.git(fork, "checkout", "-q", "-f", "paddle")
    return fork, run.git(fork, "rev-parse", "paddle").strip()


def has_import(run: Runner, cwd: Path) -> bool:
    proc = subprocess.run([pq_command(), "import", "--help"], check=False, cwd=cwd,
                          capture_output=True, env=run.env)
    return proc.returncode == 0


def same_trees(run: Runner, fork: Path, a: str, b: str) -> bool:
    return subprocess.run(["git", "diff", "--quiet", a, b, "--", ".", ":(exclude)series.yaml",
                           ":(exclude)patches"], check=False, cwd=fork,
                          env=run.env).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--commits", type=int, default=2000, help="migration commits")
    ap.add_argument("--merges", type=int, default=40, help="merges of upstream")
    ap.add_argument("--keep", action="store_true", help="keep the generated repository")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pq-bench-import-"))
    home = root / "home"
    home.mkdir()
    run = Runner(home)
    try:
        if not has_import(run, root):
            print(f"{pq_command()} has no `import` command yet (issue 15): nothing to measure",
                  file=sys.stderr)
            sys.exit(2)
        t0 = time.perf_counter()
        fork, tip = build(root, run, args.commits, args.merges)
        base = run.git(fork, "merge-base", "paddle", "upstream/main").strip()
        count = run.git(fork, "rev-list", "--count", "--no-merges", f"{base}..{tip}").strip()
        merges = run.git(fork, "rev-list", "--count", "--merges", tip).strip()
        files = run.git(fork, "ls-files").count("\n")
        print(f"setup: {files} files, {count} fork commits, {merges} merges of upstream "
              f"({time.perf_counter() - t0:.1f}s)")
        pq_times, git_times, ratios = [], [], []
        all_same = True
        for r in range(args.rounds):
            order = ("pq", "git") if r % 2 == 0 else ("git", "pq")
            times, cpu = {}, {}
            for which in order:
                run.git(fork, "checkout", "-q", "-f", "-B", f"bench-{which}-{r}", tip)
                if which == "pq":
                    times["pq"] = run.timed(fork, [pq_command(), "import", "--upstream",
                                                   "upstream/main"])
                else:
                    times["git"] = run.timed(fork, [
                        "git", "-c", "rebase.autoSquash=false", "rebase", "--no-autostash",
                        "-q", base])
                cpu[which] = run.cpu
            vs_tip = same_trees(run, fork, tip, f"bench-pq-{r}")
            vs_git = same_trees(run, fork, f"bench-git-{r}", f"bench-pq-{r}")
            all_same = all_same and vs_tip and vs_git
            ratio = times["pq"] / times["git"]
            pq_times.append(times["pq"])
            git_times.append(times["git"])
            ratios.append(ratio)
            print(f"round {r + 1}: pq import {times['pq']:.3f}s  git rebase {times['git']:.3f}s"
                  f"  ratio {ratio:.2f}  (CPU {cpu['pq']:.2f}s / {cpu['git']:.2f}s)  same "
                  f"trees: tip {'yes' if vs_tip else 'NO'}, git {'yes' if vs_git else 'NO'}")
        print(f"median: pq import {statistics.median(pq_times):.3f}s, git rebase "
              f"{statistics.median(git_times):.3f}s, ratio pq/git "
              f"{statistics.median(ratios):.2f}")
        print(f"trees identical in every round: {'yes' if all_same else 'NO'}")
        if not all_same:
            sys.exit(1)
    finally:
        if args.keep:
            print(f"repository kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
