#!/usr/bin/env python3
"""Benchmark: a series that carries a big binary file, pq against git, side by side.

Builds, in a temporary folder, an upstream of 50 small files and a fork carrying three
patches: one adds a binary file of random bytes (20 MiB unless `--mib`), one edits a text
file, one changes ten bytes of the binary file (a `GIT binary patch` delta). The fork is
`pq init --commit`-ed; upstream then moves by one commit. Then, alternating, several
rounds (the first an untimed warm-up) of:

  rebase            `pq rebase upstream/main`      `git rebase` of the same commits
  export (same)     `pq export`, nothing changed   `git format-patch` of the commits

Each rebase round checks that pq's tree is git's and that no patch file changed a byte.
There is no target: binary patches are rare in an operator library's series, and the
ratios are printed for information.

Usage: python bench/binary.py [--rounds N] [--mib M] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import speed  # the sibling bench/speed.py (its folder is on sys.path)


def build(b: speed.Bench, mib: int) -> tuple[Path, str]:
    """The fork (checked out, series committed) and its tip."""
    up, fork = b.root / "upstream", b.root / "fork"
    up.mkdir()
    b.git(up, "init", "-q", "-b", "main")
    for i in range(50):
        (up / f"f{i}.txt").write_text(f"line {i}\n")
    b.git(up, "add", ".")
    b.git(up, "commit", "-q", "-m", "upstream: initial import")
    b.git(b.root, "clone", "-q", "-o", "upstream", str(up), str(fork))
    for repo in (up, fork):
        b.git(repo, "config", "gc.auto", "0")
    b.git(fork, "checkout", "-q", "-b", "paddle")
    data = bytearray(os.urandom(mib << 20))
    (fork / "weights.bin").write_bytes(data)
    b.git(fork, "add", "weights.bin")
    b.git(fork, "commit", "-q", "-m", "build: add the weights")
    (fork / "f1.txt").write_text("line 1\npaddle\n")
    b.git(fork, "commit", "-q", "-am", "python-glue: a text edit")
    data[1000:1010] = b"0123456789"
    (fork / "weights.bin").write_bytes(data)
    b.git(fork, "commit", "-q", "-am", "kernel: patch the weights")
    b.timed(fork, [b.pq, "init", "--upstream", "upstream/main", "--commit"])
    (up / "f2.txt").write_text("line 2\nupstream\n")
    b.git(up, "commit", "-q", "-am", "upstream: moves on")
    b.git(fork, "fetch", "-q", "upstream")
    return fork, b.git(fork, "rev-parse", "HEAD").strip()


def cases(b: speed.Bench, fork: Path, tip: str, rounds: int) -> list[speed.Case]:
    rebase = speed.Case("rebase 3 patches, one a binary file", None)
    export = speed.Case("export (nothing changed) vs format-patch", None)
    originals = b.patch_bytes(fork)
    for r in range(rounds):
        for which in speed.alternate(r):
            if which == "pq":
                b.git(fork, "checkout", "-q", "-B", f"bench-pq-{r}", tip)
                rebase.pq.append(b.timed(fork, [b.pq, "rebase", "upstream/main"])[0])
                rebase.churned += b.churn(fork, originals)
            else:
                b.git(fork, "checkout", "-q", "-B", f"bench-git-{r}", f"{tip}~1")
                rebase.git.append(b.timed(fork, ["git", "rebase", "-q", "upstream/main"])[0])
        rebase.same.append(b.same_tree(fork, f"bench-pq-{r}", f"bench-git-{r}"))
        b.git(fork, "checkout", "-q", "-B", "exported", tip)
        out = b.root / "format-patch"
        for which in speed.alternate(r):
            if which == "pq":
                export.pq.append(b.timed(fork, [b.pq, "export"])[0])
            else:
                shutil.rmtree(out, ignore_errors=True)
                export.git.append(b.timed(fork, ["git", "format-patch", "-q", "--binary",
                                                 "-o", str(out), f"{tip}~4..{tip}~1"]
                                          )[0])
        export.churned += b.churn(fork, originals)
        export.same.append(True)
    return [rebase.drop_warmup(), export.drop_warmup()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per case (default 5)")
    ap.add_argument("--mib", type=int, default=20, help="the binary file's size (default 20)")
    ap.add_argument("--keep", action="store_true", help="keep the generated repositories")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pq-bench-binary-"))
    b = speed.Bench(root)
    try:
        fork, tip = build(b, args.mib)
        os.sync()
        print(f"a {args.mib} MiB binary file in a 3-patch series; {args.rounds} rounds, medians")
        print(f"{'case':<58} {'pq':>8} {'git':>8} {'pq/git':>6}  target  ok  checks")
        for case in cases(b, fork, tip, args.rounds + 1):
            print(speed.report(case, rounds=True), flush=True)
    finally:
        if args.keep:
            print(f"repositories kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
