#!/usr/bin/env python3
"""Benchmark: every speed ratio of issue 17, pq against git, side by side in one run.

Builds, in a temporary folder (bench/_fixture.py, through `git fast-import`), forks of 10,
100 and 1000 small patches on an upstream of 2,000 files (and of 10 and 100 patches on
20,000 and on 100,000 files) whose upstream then moved by 320 commits far from every hunk.
Then, in alternating order, several rounds of each case, timing the installed `pq` console
script and git doing the same job on the same commits (each case's first round is an
untimed warm-up, after setup's writes were flushed to disk):

  rebase N patches      `pq rebase upstream/main`        `git rebase` of the same commits
  conflict stop         `pq rebase` stopping at patch 50  `git rebase` stopping there
  --abort after it      `pq rebase --abort`              `git rebase --abort`
  its git reset alone   `git reset --hard` after a pq    `git rebase --abort` (for
                        stop: the floor of pq's abort    information)
  apply 1000            `pq apply -b NAME`               `git am` of format-patch's mbox
  export 1000 (same)    `pq export`, nothing changed     `git format-patch` of the commits
  hook, uncached, 1000  `git push` through pq's hook     `git push --no-verify`
                        (neither its cache nor pq's
                        export cache knows the tip)
  hook, pq wrote it     the same, the export cache       the same (for information)
                        knowing the tip
  rerere replay         `pq rebase` reusing resolutions  `pq rebase` merging the same
                        (10 patches)                     patches cleanly (the target: a
                                                         replay costs no more than a merge)
                                                         and, for information, merging them
                                                         where every patch file is rewritten
                                                         (as the replay rewrites them), and
                                                         `git rebase` with rerere

Each round checks that pq's trees are git's (and the same stop, the same conflicted files)
and that no patch file changed a byte. Prints every median ratio beside its target with
ok/NO. `--huge` times a 10,000-patch series instead (rebase, export, audit); `--quick` runs a
smaller set (300 patches instead of 1000, no 20,000- or 100,000-file forks, one round by
default).

Usage: python bench/speed.py [--rounds N] [--quick] [--huge] [--keep] [--rounds-shown]
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
from dataclasses import dataclass, field
from pathlib import Path

import _fixture as fixture
import rebase as rebase_bench  # the sibling bench/rebase.py (its folder is on sys.path)
import rerere as rerere_bench

EXCLUDE = [":(exclude)series.yaml", ":(exclude)patches"]


@dataclass
class Case:
    name: str
    target: float | None  # the largest acceptable pq/git ratio (None: for information)
    pq: list[float] = field(default_factory=list)
    git: list[float] = field(default_factory=list)
    same: list[bool] = field(default_factory=list)
    churned: int = 0

    def drop_warmup(self) -> Case:
        """Forget the first round's times (a warm-up: caches filled, setup's writes flushed);
        its checks still count."""
        del self.pq[0], self.git[0]
        return self

    def ratio(self) -> float:
        return statistics.median(p / g for p, g in zip(self.pq, self.git, strict=True))

    def ok(self) -> bool:
        within = self.target is None or self.ratio() <= self.target
        return within and all(self.same) and self.churned == 0


class Bench:
    def __init__(self, root: Path) -> None:
        home = root / "home"
        home.mkdir()
        self.root = root
        self.run = rebase_bench.Runner(home)
        self.env = self.run.env
        self.pq = rebase_bench.pq_command()

    def git(self, cwd: Path, *args: str) -> str:
        return self.run.git(cwd, *args)

    def timed(self, cwd: Path, argv: list[str], ok: tuple[int, ...] = (0,)
              ) -> tuple[float, str]:
        start = time.perf_counter()
        proc = subprocess.run(argv, check=False, cwd=cwd, capture_output=True, env=self.env)
        elapsed = time.perf_counter() - start
        if proc.returncode not in ok:
            sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                     f"{proc.stdout.decode()[-2000:]}{proc.stderr.decode()[-2000:]}")
        return elapsed, proc.stdout.decode() + proc.stderr.decode()

    def same_tree(self, cwd: Path, a: str, b: str) -> bool:
        return subprocess.run(["git", "diff", "--quiet", a, b, "--", ".", *EXCLUDE],
                              check=False, cwd=cwd, env=self.env).returncode == 0

    def patch_bytes(self, fork: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (fork / "patches").iterdir()}

    def churn(self, fork: Path, before: dict[str, bytes]) -> int:
        now = self.patch_bytes(fork)
        return sum(1 for n, b in before.items() if now.get(n) != b) + len(set(now) - set(before))


def alternate(r: int) -> tuple[str, str]:
    return ("pq", "git") if r % 2 == 0 else ("git", "pq")


def rebase_case(b: Bench, fork: fixture.Fork, rounds: int) -> Case:
    case = Case(f"rebase {fork.patches} patches, {fork.files:,} files", 1.0
                if fork.patches <= 10 else 0.5)
    originals = b.patch_bytes(fork.path)
    onto = b.git(fork.path, "rev-parse", "upstream/main").strip()
    for r in range(rounds):
        for which in alternate(r):
            if which == "pq":
                b.git(fork.path, "checkout", "-q", "-B", f"bench-pq-{r}", fork.tip)
                t, _ = b.timed(fork.path, [b.pq, "rebase", "upstream/main"])
                case.pq.append(t)
                case.churned = max(case.churned, b.churn(fork.path, originals))
            else:
                b.git(fork.path, "checkout", "-q", "-B", f"bench-git-{r}", fork.last_patch)
                t, _ = b.timed(fork.path, ["git", "-c", "rebase.autoSquash=false", "rebase",
                                           "--no-autostash", "-q", onto])
                case.git.append(t)
        case.same.append(b.same_tree(fork.path, f"bench-git-{r}", f"bench-pq-{r}"))
    b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
    return case


def conflicted(b: Bench, fork: Path) -> str:
    return b.git(fork, "diff", "--name-only", "--diff-filter=U")


def conflict_cases(b: Bench, fork: fixture.Fork, rounds: int) -> tuple[Case, Case, Case]:
    """The stop, the abort, and for information the abort's floor: the `git reset --hard`
    that `pq rebase --abort` runs, timed alone after a pq stop (a stopped pq rebase has
    series.yaml and patches/ out of the working tree, so it puts back those files too)
    against git's whole `--abort` of the same round."""
    stop = Case(f"stop at a conflict (patch {fork.conflict_at} of {fork.patches})", 1.0)
    abort = Case("--abort after it", 2.0)
    floor = Case("--abort's own git reset --hard, alone", None)
    onto = b.git(fork.path, "rev-parse", "upstream/conflict").strip()
    originals = b.patch_bytes(fork.path)
    for r in range(rounds):
        seen: dict[str, tuple[str, str]] = {}
        back = True
        for which in alternate(r):
            if which == "pq":
                b.git(fork.path, "checkout", "-q", "-B", f"stop-pq-{r}", fork.tip)
                t, said = b.timed(fork.path, [b.pq, "rebase", "upstream/conflict"], ok=(1,))
                stop.pq.append(t)
                seen["pq"] = (b.git(fork.path, "rev-parse", "HEAD^{tree}"),
                              conflicted(b, fork.path))
                t, _ = b.timed(fork.path, [b.pq, "rebase", "--abort"])
                abort.pq.append(t)
                back &= b.git(fork.path, "rev-parse", "HEAD").strip() == fork.tip
                abort.churned = max(abort.churned, b.churn(fork.path, originals))
            else:
                b.git(fork.path, "checkout", "-q", "-B", f"stop-git-{r}", fork.last_patch)
                t, _ = b.timed(fork.path, ["git", "-c", "rebase.autoSquash=false", "rebase",
                                           "--no-autostash", "-q", onto], ok=(1,))
                stop.git.append(t)
                seen["git"] = (b.git(fork.path, "rev-parse", "HEAD^{tree}"),
                               conflicted(b, fork.path))
                t, _ = b.timed(fork.path, ["git", "rebase", "--abort"])
                abort.git.append(t)
                back &= b.git(fork.path, "rev-parse", "HEAD").strip() == fork.last_patch
            back &= b.git(fork.path, "status", "--porcelain") == ""
        stop.same.append(seen["pq"] == seen["git"] and bool(seen["pq"][1]))
        abort.same.append(back)
        b.git(fork.path, "checkout", "-q", "-B", f"floor-{r}", fork.tip)
        b.timed(fork.path, [b.pq, "rebase", "upstream/conflict"], ok=(1,))
        t, _ = b.timed(fork.path, ["git", "reset", "-q", "--hard", fork.tip])
        floor.pq.append(t)
        floor.git.append(abort.git[-1])
        b.timed(fork.path, [b.pq, "rebase", "--abort", "--force"])  # pq's state goes
        floor.same.append(b.git(fork.path, "rev-parse", "HEAD").strip() == fork.tip
                          and b.git(fork.path, "status", "--porcelain") == "")
    b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
    return stop, abort, floor


def apply_case(b: Bench, fork: fixture.Fork, rounds: int) -> Case:
    case = Case(f"pq apply {fork.patches} vs git am", 1.0)
    mbox = b.root / "series.mbox"
    mbox.write_bytes(subprocess.run(
        ["git", "format-patch", "--stdout", f"{fork.base}..{fork.last_patch}"],
        check=True, cwd=fork.path, capture_output=True, env=b.env).stdout)
    for r in range(rounds):
        for which in alternate(r):
            if which == "pq":
                b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
                t, _ = b.timed(fork.path, [b.pq, "apply", "-b", f"apply-pq-{r}"])
                case.pq.append(t)
            else:
                b.git(fork.path, "checkout", "-q", "-B", f"am-git-{r}", fork.base)
                t, _ = b.timed(fork.path, ["git", "am", "-q", str(mbox)])
                case.git.append(t)
        case.same.append(b.same_tree(fork.path, f"am-git-{r}", f"apply-pq-{r}"))
    b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
    return case


def export_case(b: Bench, fork: fixture.Fork, rounds: int) -> Case:
    case = Case(f"pq export {fork.patches}, nothing changed, vs git format-patch", 1.5)
    b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
    originals = b.patch_bytes(fork.path)
    out = b.root / "format-patch"
    for r in range(rounds):
        for which in alternate(r):
            if which == "pq":
                t, said = b.timed(fork.path, [b.pq, "export"])
                case.pq.append(t)
                case.churned = max(case.churned, b.churn(fork.path, originals))
                clean = b.git(fork.path, "status", "--porcelain") == ""
            else:
                shutil.rmtree(out, ignore_errors=True)
                t, _ = b.timed(fork.path, ["git", "format-patch", "-q", "-o", str(out),
                                           f"{fork.base}..{fork.last_patch}"])
                case.git.append(t)
        case.same.append(clean and "already up to date" in said)
    return case


def hook_case(b: Bench, fork: fixture.Fork, rounds: int, written: bool = False) -> Case:
    """A first push of the tip (no verdict in the hook's cache). Cold: pq's export cache
    does not know the tip either, so the export check exports the 1000 commits again;
    `written`: the tip as pq leaves it after writing it (a rebase's landing, `pq export
    --commit`, here a `pq export` that changed nothing), so the export cache knows it."""
    kind = "after pq wrote the tip (export cache)" if written else "uncached"
    case = Case(f"push through the hook, {kind}, {fork.patches} patches",
                2.0 if not written else None)
    b.git(fork.path, "checkout", "-q", "-B", "paddle", fork.tip)
    b.timed(fork.path, [b.pq, "hook", "install"])
    cache = fork.path / ".git/pq/hook-cache.json"
    exports = fork.path / ".git/pq/export-cache.json"
    exports.unlink(missing_ok=True)
    if written:
        b.timed(fork.path, [b.pq, "export"])
    remembered = exports.read_bytes() if exports.exists() else None
    assert (remembered is not None) == written, "pq export should remember the tip"
    for r in range(rounds):
        for which in alternate(r):
            remote = b.root / f"remote-{which}-{r}.git"
            b.git(b.root, "init", "-q", "--bare", str(remote))
            if which == "pq":
                cache.unlink(missing_ok=True)
                assert (exports.read_bytes() if exports.exists() else None) == remembered
                t, said = b.timed(fork.path, ["git", "push", "-q", str(remote), "paddle"])
                case.pq.append(t)
                case.same.append("consistent" in said and "cached" not in said)
            else:
                t, _ = b.timed(fork.path, ["git", "push", "-q", "--no-verify", str(remote),
                                           "paddle"])
                case.git.append(t)
            shutil.rmtree(remote)
    b.timed(fork.path, [b.pq, "hook", "uninstall"])
    return case


def rerere_cases(b: Bench, rounds: int, patches: int = 10) -> tuple[Case, Case, Case]:
    """The issue's target: replaying a recorded resolution costs no more than a merge, so
    `pq rebase` resolving every patch from its recorded resolution against `pq rebase` of
    the same stack onto an upstream where every patch merges cleanly (the "git" column is
    pq's merge there); for information, against clean merges that rewrite every patch
    file (as the replay does: upstream's edit sits in each patch's context), and against
    `git rebase` with rerere."""
    merge = Case(f"replaying {patches} recorded resolutions vs {patches} clean merges (pq)",
                 1.0)
    nearby = Case(f"the same vs {patches} clean merges that rewrite every patch file (pq)",
                  None)
    versus_git = Case(f"rebase replaying recorded resolutions ({patches} patches)", None)
    tmp = b.root / "rerere"
    tmp.mkdir()
    fork, orig, last_patch = rerere_bench.setup(tmp, patches, b.env, [b.pq])
    for r in range(rounds):
        order = ("merge", *alternate(r), "nearby")
        for which in (order[::-1] if r % 2 else order):
            if which == "pq":
                t = rerere_bench.time_pq(fork, orig, b.env, [b.pq])[0]
                merge.pq.append(t)
                nearby.pq.append(t)
                versus_git.pq.append(t)
                replayed = b.git(fork, "rev-parse", "paddle").strip()
            elif which == "git":
                versus_git.git.append(rerere_bench.time_git(fork, last_patch, b.env)[0])
            else:
                case = merge if which == "merge" else nearby
                case.git.append(rerere_bench.time_pq_merge(
                    fork, orig, b.env, [b.pq], patches,
                    "upstream/merge" if which == "merge" else "upstream/nearby")[0])
        b.git(fork, "checkout", "-q", "-B", "replayed", replayed)
        versus_git.same.append(b.same_tree(fork, "gitside", "replayed"))
        merge.same.append(versus_git.same[-1])
        nearby.same.append(versus_git.same[-1])
    return merge, nearby, versus_git


def report(case: Case, rounds: bool = False) -> str:
    p, g = statistics.median(case.pq), statistics.median(case.git)
    checks = "same" if all(case.same) else "DIFFERENT"
    target = f"<= {case.target:<4}" if case.target is not None else "info   "
    verdict = ("ok" if case.ok() else "NO") if case.target is not None else "-"
    line = (f"{case.name:<58} {p:7.3f}s {g:7.3f}s {case.ratio():6.2f}  {target} "
            f"{verdict:<3} {checks}, churned {case.churned}")
    if rounds:  # each timed round, pq/git
        line += "\n    rounds: " + "  ".join(f"{a:.3f}/{b:.3f}"
                                            for a, b in zip(case.pq, case.git, strict=True))
    return line


def huge(b: Bench, patches: int) -> None:
    """One round of a `patches`-patch series: rebase, export and audit, pq alone (git's
    rebase of 10,000 commits takes minutes more; bench/rebase.py compares per patch)."""
    t0 = time.perf_counter()
    fork = fixture.build(b.root / f"huge{patches}", b.run, 2000, patches)
    print(f"\n{patches:,}-patch series on 2,000 files built in "
          f"{time.perf_counter() - t0:.1f}s")
    originals = b.patch_bytes(fork.path)
    b.git(fork.path, "checkout", "-q", "-B", "huge", fork.tip)
    t, _ = b.timed(fork.path, [b.pq, "rebase", "upstream/main"])
    print(f"  pq rebase          {t:7.2f}s  (patch files churned: "
          f"{b.churn(fork.path, originals)})")
    t, _ = b.timed(fork.path, [b.pq, "export"])
    print(f"  pq export (same)   {t:7.2f}s")
    t, _ = b.timed(fork.path, [b.pq, "audit", "workarounds"], ok=(0, 1))
    print(f"  pq audit           {t:7.2f}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds per case (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="300 patches instead of 1000, no 20,000- or 100,000-file forks, "
                         "one round")
    ap.add_argument("--huge", action="store_true",
                    help="instead, a 10,000-patch series: pq rebase, export, audit (one round)")
    ap.add_argument("--keep", action="store_true", help="keep the generated repositories")
    ap.add_argument("--rounds-shown", action="store_true", dest="shown",
                    help="print each timed round's pq and git seconds under its case")
    args = ap.parse_args()
    rounds = args.rounds or (1 if args.quick else 5)
    big = 300 if args.quick else 1000
    root = Path(tempfile.mkdtemp(prefix="pq-bench-speed-"))
    b = Bench(root)
    try:
        if args.huge:
            huge(b, 10_000)
            return
        t0 = time.perf_counter()
        forks = {(2000, 10): fixture.build(root / "f10", b.run, 2000, 10),
                 (2000, 100): fixture.build(root / "f100", b.run, 2000, 100, conflict_at=50),
                 (2000, big): fixture.build(root / "fbig", b.run, 2000, big)}
        if not args.quick:
            for files in (20_000, 100_000):
                for n in (10, 100):
                    forks[(files, n)] = fixture.build(root / f"g{files}-{n}", b.run, files, n)
        print(f"setup: {len(forks)} forks ({time.perf_counter() - t0:.1f}s); git "
              f"{b.git(root, 'version').split()[-1]}, {os.cpu_count()} CPUs, {rounds} "
              "rounds, medians; each fork's upstream moved by 320 commits")
        print(f"{'case':<58} {'pq':>8} {'git':>8} {'pq/git':>6}  target  ok  checks")
        os.sync()  # setup's writes reach the disk now, not during the first timed case
        warm = rounds + 1  # each case's first round is a warm-up (Case.drop_warmup)
        cases = [rebase_case(b, fork, warm).drop_warmup() for fork in forks.values()]
        for case in cases:
            print(report(case, args.shown), flush=True)
        more = [c.drop_warmup() for c in (*conflict_cases(b, forks[(2000, 100)], warm),
                                          apply_case(b, forks[(2000, big)], warm),
                                          export_case(b, forks[(2000, big)], warm),
                                          hook_case(b, forks[(2000, big)], warm),
                                          hook_case(b, forks[(2000, big)], warm, True),
                                          *rerere_cases(b, warm))]
        for case in more:
            print(report(case, args.shown), flush=True)
        cases += more
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
              f"{sum(not c.ok() for c in cases)} of {len(cases)} cases miss their target")
    finally:
        if args.keep:
            print(f"repositories kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
