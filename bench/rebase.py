#!/usr/bin/env python3
"""Benchmark: `pq rebase` against `git rebase` replaying the same 100 commits.

Generates, in a temporary folder, an upstream with 2,000 files, a fork carrying a series of
100 small patches, and 320 upstream commits that never touch a patch's hunks (other files,
and other parts of patched files far below the hunks). Then, alternating, several rounds:
`pq rebase upstream/main` (the console script) and `git rebase` of the same 100 commits
onto the same upstream commit, each on a fresh branch. Prints every time, the median
ratio pq/git (target <= 1.0) and how many patch files changed bytes (must be 0).

Usage: python bench/rebase.py [--rounds N] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DIRS = 40
FILES_PER_DIR = 50  # 2,000 files
LINES = 80
PATCHES = 100
UPSTREAM_COMMITS = 320
FAR_LINE = 40  # upstream edits patched files only from here down; hunks sit near the top


def env(home: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PQ_"))}
    # pq runs as installed: from compiled bytecode (cached under the temporary folder).
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    e.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
              "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "author@example.com",
              "GIT_COMMITTER_NAME": "Bench Committer",
              "GIT_COMMITTER_EMAIL": "committer@example.com", "GIT_EDITOR": "true"})
    return e


class Runner:
    def __init__(self, home: Path) -> None:
        self.env = env(home)
        self.cpu = 0.0  # CPU seconds (user + system) of the last timed command

    def git(self, cwd: Path, *args: str, input: bytes | None = None) -> str:
        proc = subprocess.run(["git", *args], check=False, cwd=cwd, input=input,
                              capture_output=True, env=self.env)
        if proc.returncode != 0:
            sys.exit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode()[-2000:]}")
        return proc.stdout.decode()

    def timed(self, cwd: Path, argv: list[str]) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, check=False, cwd=cwd, capture_output=True, env=self.env)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                     f"{proc.stdout.decode()[-2000:]}{proc.stderr.decode()[-2000:]}")
        return elapsed


def path_of(i: int) -> str:
    return f"src/mod{i // FILES_PER_DIR:02d}/file{i % FILES_PER_DIR:03d}.py"


def upstream_moves(rng: random.Random, content: dict[str, list[str]], patched: set[str],
                   count: int) -> list[tuple[str, str, dict[str, bytes]]]:
    """`count` upstream commits for `fast_import`, each changing 1-3 lines of `content`
    (edited in place; a patched file only from FAR_LINE down, never a patch's hunk) and
    every 20th adding a file."""
    all_paths = list(content)
    moves = []
    for c in range(count):
        files = {}
        for _ in range(rng.randint(1, 3)):
            p = rng.choice(all_paths)
            lo = FAR_LINE if p in patched else 0
            line = rng.randrange(min(lo, len(content[p]) - 1), len(content[p]))
            content[p][line] = content[p][line].rstrip("\n") + f"  # upstream {c}\n"
            files[p] = "".join(content[p]).encode()
        if c % 20 == 0:
            p = f"src/new/added{c:03d}.py"
            content[p] = [f"added = {c}\n"]
            all_paths.append(p)
            files[p] = content[p][0].encode()
        moves.append((f"upstream: change {c + 1}", "refs/heads/main^0" if c == 0 else "",
                      files))
    return moves


def fast_import(commits: list[tuple[str, str, dict[str, bytes]]], branch: str,
                start: int) -> bytes:
    """A fast-import stream: (message, parent mark or ref, changed files) per commit."""
    out = []
    for n, (message, parent, files) in enumerate(commits):
        when = start + n * 60
        msg = message.encode()
        out.append(b"commit %s\nmark :%d\n" % (branch.encode(), n + 1))
        out.append(b"author Bench Author <author@example.com> %d +0000\n" % when)
        out.append(b"committer Bench Committer <committer@example.com> %d +0000\n" % when)
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        if parent:
            out.append(b"from %s\n" % parent.encode())
        for path, data in sorted(files.items()):
            out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    return b"".join(out)


def build(root: Path, run: Runner) -> tuple[Path, str, int]:
    rng = random.Random(20260101)
    up = root / "upstream"
    up.mkdir()
    run.git(up, "init", "-q", "-b", "main")
    content: dict[str, list[str]] = {
        path_of(i): [f"value_{i}_{k} = {k}  # line {k + 1} of {path_of(i)}\n"
                     for k in range(LINES)] for i in range(DIRS * FILES_PER_DIR)}
    first = {p: "".join(lines).encode() for p, lines in content.items()}
    run.git(up, "fast-import", "--quiet",
            input=fast_import([("upstream: initial import", "", first)], "refs/heads/main",
                              1_700_000_000))
    run.git(up, "reset", "-q", "--hard", "main")

    fork = root / "fork"
    run.git(root, "clone", "-q", "-o", "upstream", str(up), str(fork))
    for repo in (up, fork):
        run.git(repo, "config", "gc.auto", "0")  # measure the rebases, not a gc
        run.git(repo, "config", "maintenance.auto", "false")
    # 100 patches, each one or two files, one small hunk near the top of each file.
    patched = rng.sample(range(DIRS * FILES_PER_DIR), 150)
    fork_content = {p: list(v) for p, v in content.items()}
    commits = []
    cursor = 0
    for k in range(PATCHES):
        n_files = 2 if k % 2 == 0 and cursor + 2 <= len(patched) else 1
        files = {}
        for i in patched[cursor:cursor + n_files]:
            p = path_of(i)
            line = 4 + k % 4
            fork_content[p][line] = f"value_{i}_{line} = paddle_compat({line})  # patch {k}\n"
            files[p] = "".join(fork_content[p]).encode()
        cursor += n_files
        layer = ("build", "python-glue", "cpp-compat")[k % 3]
        parent = "refs/heads/main" if k == 0 else ""
        message = (f"{layer}: port step {k + 1}\n\nKeeps module {k} working under "
                   "Paddle's compat layer.")
        commits.append((message, parent, files))
    run.git(fork, "fast-import", "--quiet",
            input=fast_import(commits, "refs/heads/paddle", 1_700_100_000))
    run.git(fork, "checkout", "-q", "paddle")
    run.timed(fork, [pq_command(), "init", "--upstream", "upstream/main", "--commit"])

    # Upstream moves on: 320 commits, never touching a patch's hunks.
    patched_paths = {path_of(i) for i in patched[:cursor]}
    moves = upstream_moves(rng, content, patched_paths, UPSTREAM_COMMITS)
    run.git(up, "fast-import", "--quiet",
            input=fast_import(moves, "refs/heads/main", 1_700_200_000))
    run.git(fork, "fetch", "-q", "upstream")
    tip = run.git(fork, "rev-parse", "paddle").strip()
    return fork, tip, cursor


def pq_command() -> str:
    exe = Path(sys.executable).parent / "pq"
    return str(exe) if exe.exists() else (shutil.which("pq") or "pq")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the generated repositories")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pq-bench-rebase-"))
    home = root / "home"
    home.mkdir()
    run = Runner(home)
    try:
        t0 = time.perf_counter()
        fork, tip, n_files = build(root, run)
        files = int(run.git(fork, "ls-files", "--", "src").count("\n"))
        behind = run.git(fork, "rev-list", "--count", f"{tip}..upstream/main").strip()
        print(f"setup: {files} files, {PATCHES} patches over {n_files} files, upstream moved "
              f"by {behind} commits ({time.perf_counter() - t0:.1f}s)")
        originals = {p.name: p.read_bytes() for p in (fork / "patches").iterdir()}
        onto = run.git(fork, "rev-parse", "upstream/main").strip()
        ratios, pq_times, git_times, cpu_ratios = [], [], [], []
        changed_max = 0
        for r in range(args.rounds):
            order = ("pq", "git") if r % 2 == 0 else ("git", "pq")
            times, cpu = {}, {}
            for which in order:
                if which == "pq":
                    run.git(fork, "checkout", "-q", "-B", f"bench-pq-{r}", tip)
                    times["pq"] = run.timed(fork, [pq_command(), "rebase", "upstream/main"])
                    cpu["pq"] = run.cpu
                    now = {p.name: p.read_bytes() for p in (fork / "patches").iterdir()}
                    changed = sum(1 for n, b in originals.items() if now.get(n) != b)
                    changed_max = max(changed_max, changed)
                else:
                    run.git(fork, "checkout", "-q", "-B", f"bench-git-{r}", f"{tip}~1")
                    times["git"] = run.timed(fork, [
                        "git", "-c", "rebase.autoSquash=false", "rebase", "--no-autostash",
                        "-q", onto])
                    cpu["git"] = run.cpu
            same = subprocess.run(
                ["git", "diff", "--quiet", f"bench-git-{r}", f"bench-pq-{r}", "--", ".",
                 ":(exclude)series.yaml", ":(exclude)patches"], check=False, cwd=fork,
                env=run.env).returncode == 0
            ratio = times["pq"] / times["git"]
            ratios.append(ratio)
            cpu_ratios.append(cpu["pq"] / cpu["git"])
            pq_times.append(times["pq"])
            git_times.append(times["git"])
            print(f"round {r + 1}: pq rebase {times['pq']:.3f}s  git rebase {times['git']:.3f}s"
                  f"  ratio {ratio:.2f}  (CPU {cpu['pq']:.2f}s / {cpu['git']:.2f}s)"
                  f"  same trees: {'yes' if same else 'NO'}")
        print(f"median: pq {statistics.median(pq_times):.3f}s, git "
              f"{statistics.median(git_times):.3f}s, ratio pq/git "
              f"{statistics.median(ratios):.2f} (target <= 1.0, aim 0.5); CPU time ratio "
              f"{statistics.median(cpu_ratios):.2f}")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs")
        print(f"patch files that changed bytes: {changed_max} of {len(originals)} "
              "(expected 0)")
    finally:
        if args.keep:
            print(f"repositories kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
