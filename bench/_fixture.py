"""Shared fixture for bench/speed.py: a fork carrying N patches on an upstream of F files.

The shape is bench/rebase.py's (files of 80 lines, one or two small hunks near the top per
patch, an upstream that moves by many commits far below every hunk), built through
`git fast-import` so that 20,000 files or 10,000 patches take seconds, not minutes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import rebase as rebase_bench  # the sibling bench/rebase.py (its folder is on sys.path)

LINES = 80
FAR_LINE = rebase_bench.FAR_LINE  # upstream edits patched files from here down only
FILES_PER_DIR = 50


@dataclass
class Fork:
    path: Path
    base: str          # the upstream commit the series sits on
    tip: str           # the fork's tip: the patches plus pq's bookkeeping commit
    last_patch: str    # the last patch's commit (what git rebases: tip~1)
    files: int
    patches: int
    conflict_at: int   # 1-based patch number `upstream/conflict` collides with (0: none)


def path_of(i: int) -> str:
    return f"src/mod{i // FILES_PER_DIR:03d}/file{i % FILES_PER_DIR:03d}.py"


def build(root: Path, run: rebase_bench.Runner, files: int, patches: int,
          upstream_commits: int = 320, conflict_at: int = 0, seed: int = 20260101) -> Fork:
    """An upstream of `files` files, and a clone carrying `patches` patches, `pq init`-ed.

    `upstream/main` then moves by `upstream_commits` commits that never touch a hunk;
    with `conflict_at`, `upstream/conflict` is `upstream/main` plus one commit that edits
    the line patch number `conflict_at` edits, so a rebase onto it stops there.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    up = root / "upstream"
    up.mkdir()
    run.git(up, "init", "-q", "-b", "main")
    content: dict[str, list[str]] = {
        path_of(i): [f"value_{i}_{k} = {k}  # line {k + 1} of {path_of(i)}\n"
                     for k in range(LINES)] for i in range(files)}
    first = {p: "".join(lines).encode() for p, lines in content.items()}
    run.git(up, "fast-import", "--quiet",
            input=rebase_bench.fast_import([("upstream: initial import", "", first)],
                                           "refs/heads/main", 1_700_000_000))
    run.git(up, "reset", "-q", "--hard", "main")
    base = run.git(up, "rev-parse", "main").strip()

    fork = root / "fork"
    run.git(root, "clone", "-q", "-o", "upstream", str(up), str(fork))
    for repo in (up, fork):
        run.git(repo, "config", "gc.auto", "0")  # measure the commands, not a gc
        run.git(repo, "config", "maintenance.auto", "false")
    # Each patch edits one file (two for every other patch while files last), one line
    # near the top; a file edited again gets its next free line, two lines further down.
    order = rng.sample(range(files), files)
    uses: dict[str, int] = {}
    fork_content = {p: list(v) for p, v in content.items()}
    commits = []
    cursor = 0
    edited: list[tuple[str, int]] = []  # (path, line) each patch edits first
    for k in range(patches):
        n_files = 2 if k % 2 == 0 else 1
        changed = {}
        for _ in range(n_files):
            p = path_of(order[cursor % files])
            cursor += 1
            line = 2 + 2 * uses.get(p, 0)
            if line >= FAR_LINE - 2:
                continue
            uses[p] = uses.get(p, 0) + 1
            fork_content[p][line] = f"value = paddle_compat({line})  # patch {k + 1}\n"
            changed[p] = "".join(fork_content[p]).encode()
            if len(edited) == k:
                edited.append((p, line))
        layer = ("build", "python-glue", "cpp-compat")[k % 3]
        message = (f"{layer}: port step {k + 1}\n\nKeeps module {k} working under "
                   "Paddle's compat layer.")
        commits.append((message, "refs/heads/main" if k == 0 else "", changed))
    run.git(fork, "fast-import", "--quiet",
            input=rebase_bench.fast_import(commits, "refs/heads/paddle", 1_700_100_000))
    run.git(fork, "checkout", "-q", "paddle")
    last_patch = run.git(fork, "rev-parse", "HEAD").strip()
    run.timed(fork, [rebase_bench.pq_command(), "init", "--upstream", "upstream/main",
                     "--commit"])
    tip = run.git(fork, "rev-parse", "HEAD").strip()

    # Upstream moves on, never touching a patch's hunks.
    moves = rebase_bench.upstream_moves(rng, content, set(uses), upstream_commits)
    if moves:
        run.git(up, "fast-import", "--quiet",
                input=rebase_bench.fast_import(moves, "refs/heads/main", 1_700_200_000))
    if conflict_at:
        p, line = edited[conflict_at - 1]
        content[p][line] = "value = upstream_changed_this_too\n"
        clash = [("upstream: a change where a patch sits", "refs/heads/main^0",
                  {p: "".join(content[p]).encode()})]
        run.git(up, "fast-import", "--quiet",
                input=rebase_bench.fast_import(clash, "refs/heads/conflict", 1_700_300_000))
    run.git(fork, "fetch", "-q", "upstream")
    return Fork(fork, base, tip, last_patch, files, patches, conflict_at)
