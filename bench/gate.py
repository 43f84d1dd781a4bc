#!/usr/bin/env python3
"""Benchmark: `pq gate` on the example library with the real torch and Paddle builds, cold
and after small changes, plus the gate's own overhead around a 0.8 s stage.

Builds, in a temporary folder, the example fork exactly as tests/gate/test_example_gate.py
does (tinyop v1 as upstream, pq's example series applied as branch `paddle`). Its gate
section's `upstream-torch-build` stage declares `inputs: ['base:**']` (it builds the
series' recorded base), so that it is reused like the `build` stage, whose inputs
default to the native and build files. Then, in one run:

- cold: the first `pq gate` (empty artifact cache, empty ccache);
- python-glue: a comment added to tinyop/__init__.py, committed and exported (`pq export
  --commit`: series.yaml gains a patch), `pq gate` (target < 10 s);
- C++ one line, twice: a line added to csrc/kernel/scale_add.cc (plain C++: the other
  translation unit, ops.cc with the framework headers, can come from ccache), then one
  added to csrc/ops.cc (the expensive unit itself recompiles), each committed and gated
  (target: at most half the cold gate); with ccache when it is on PATH (the report says);
- overhead: `run_gate` around a single `sleep 0.8` stage in a tiny repository, minus the
  stage's own time, median of N rounds (target < 0.3 s); the same for the `pq gate` command
  line, which adds the interpreter's start (shown, not a target).

With `--gpu` (a machine with an NVIDIA GPU, torch with CUDA and nvcc; no Paddle needed),
the same questions for the GPU stages alone (`pq gate --stage gpu-build --stage gpu-tests`),
which build and test the series' base with `TINYOP_CUDA=1`: cold; after a python-glue-only
commit (target < 10 s); after upstream moves by one line in `csrc/cuda/scale_add.cu` (the
nvcc unit), then by one line in `csrc/kernel/scale_add.cc`, each fetched and `pq rebase`d
onto (target: at most half the cold gate); and the overhead, where `nvidia-smi` exists.

Prints `case | seconds | target | ok?` rows; exit 1 if a target is missed.
Usage: PYTHONPATH=src python bench/gate.py [--rounds N] [--keep] [--python PATH] [--gpu]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
GLUE_TARGET_S = 10.0
CPP_RATIO_TARGET = 0.5
OVERHEAD_TARGET_S = 0.3
STAGE_S = 0.8
GPU_STAGES = ("gpu-build", "gpu-tests")
GPU_PROBE = ("import shutil, torch; from torch.utils import cpp_extension as c; "
             "print('torch', torch.__version__, '| CUDA', torch.version.cuda, '| GPU', "
             "torch.cuda.is_available() and torch.cuda.get_device_name(0), '| ninja', "
             "c.is_ninja_available(), '| nvcc', shutil.which('nvcc'), '| ccache', "
             "shutil.which('ccache'))")
GPU_EDITS = ("csrc/cuda/scale_add.cu", "csrc/kernel/scale_add.cc")  # upstream's, one line each


def env(home: Path, gpu: bool = False) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PQ_"))}
    e.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C.UTF-8",
              "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "author@example.com",
              "GIT_COMMITTER_NAME": "Bench Committer",
              "GIT_COMMITTER_EMAIL": "committer@example.com", "GIT_EDITOR": "true",
              "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    if not gpu:
        e["PQ_GPU"] = "0"
    return e


def run(cwd: Path, argv: list[str], environ: dict[str, str], check: bool = True) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=environ, check=False)
    if check and proc.returncode != 0:
        sys.exit(f"{' '.join(argv[:5])} failed ({proc.returncode}): "
                 f"{(proc.stdout + proc.stderr).decode()[-3000:]}")
    return proc.stdout.decode()


def commit_all(cwd: Path, message: str, environ: dict[str, str]) -> None:
    run(cwd, ["git", "add", "-A"], environ)
    run(cwd, ["git", "commit", "-q", "--no-verify", "-m", message], environ)


def example_fork(tmp: Path, environ: dict[str, str]) -> Path:
    sys.path.insert(0, str(SRC))
    from pq.demo.build import UPSTREAM_TREE, copy_series, series_source

    up, fork = tmp / "upstream", tmp / "fork"
    shutil.copytree(UPSTREAM_TREE, up, ignore=shutil.ignore_patterns(
        "__pycache__", "*.so", "build", ".pytest_cache", "*.egg-info"))
    run(up, ["git", "init", "-q", "-b", "main"], environ)
    commit_all(up, "tinyop v1", environ)
    v1 = run(up, ["git", "rev-parse", "HEAD"], environ).strip()
    run(tmp, ["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], environ)
    copy_series(series_source(), fork, v1)
    text = (fork / "series.yaml").read_text()
    for name in ("upstream-torch-build", *GPU_STAGES):
        stage = re.search(rf"(?ms)^    - name: {name}\n.*?(?=^    - name: |\Z)", text)
        if stage is None or not re.search(r"(?m)^      inputs:", stage.group()):
            sys.exit(f"the example's {name} stage declares no inputs: update bench/gate.py")
    run(fork, [sys.executable, "-m", "pq", "apply", "--branch", "paddle"], environ)
    return fork


def one_line(path: Path) -> None:
    """A declaration added after the file's first `namespace` line: code, not a comment."""
    text = path.read_text()
    at = text.index("\n", text.index("namespace ")) + 1
    path.write_text(text[:at] + "static const int bench_one_line_edit = 1;\n" + text[at:])


def gate(fork: Path, environ: dict[str, str], python: str, *args: str
         ) -> tuple[float, dict]:
    start = time.perf_counter()
    out = run(fork, [sys.executable, "-m", "pq", "gate", "--json", "--python", python, *args],
              environ, check=False)
    seconds = time.perf_counter() - start
    report = json.loads(out)
    if report["status"] not in (("passed",) if "--stage" in args else ("passed", "owed")):
        sys.exit(f"gate {report['status']}: {report['summary']}")
    return seconds, report


def stage_line(report: dict) -> str:
    return ", ".join(f"{s['name']} {s['display']}"
                     + (f" {s['duration_s']:.1f}s" if s["duration_s"] is not None else "")
                     for s in report["stages"] if s["status"] in ("passed", "reused"))


def ccache_counts(fork: Path, environ: dict[str, str]) -> str:
    """The example's compiler cache so far: hits and misses (`ccache --print-stats`)."""
    proc = subprocess.run(["ccache", "--print-stats"], capture_output=True, check=False,
                          env={**environ, "CCACHE_DIR": str(fork / ".git/pq/ccache/cache")})
    stats = dict(line.split("\t", 1) for line in proc.stdout.decode().splitlines()
                 if "\t" in line)
    hits = sum(int(stats.get(k, 0)) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    return f"ccache so far: {hits} hits, {stats.get('cache_miss', '?')} misses"


def ran_names(report: dict) -> list[str]:
    return [s["name"] for s in report["stages"] if s["status"] == "passed"]


def ran_time(report: dict) -> float:
    return float(sum(s["duration_s"] or 0 for s in report["stages"] if s["status"] == "passed"))


def overhead(tmp: Path, environ: dict[str, str], python: str, rounds: int
             ) -> tuple[float, float]:
    """(median run_gate overhead, median command-line overhead) around a 0.8 s stage."""
    repo = tmp / "tiny"
    repo.mkdir()
    run(repo, ["git", "init", "-q", "-b", "main"], environ)
    (repo / "a.py").write_text("x = 1\n")
    commit_all(repo, "upstream", environ)
    run(repo, ["git", "branch", "upstream"], environ)
    run(repo, ["git", "checkout", "-q", "-b", "paddle"], environ)
    (repo / "b.py").write_text("y = 2\n")
    commit_all(repo, "python-glue: b", environ)
    run(repo, [sys.executable, "-m", "pq", "init", "--upstream", "upstream", "--commit"],
        environ)
    with open(repo / "series.yaml", "a") as f:
        f.write(f"gate:\n  python: {python}\n  stages:\n    - name: s\n"
                f"      run: sleep {STAGE_S}\n")
    commit_all(repo, "gate", environ)
    script = ("import json, sys, time\nfrom pq.gate import api\nfrom pq.git.repo import Git\n"
              "g = Git.open('.')\nout = []\n"
              f"for _ in range({rounds + 1}):\n"
              "    t = time.perf_counter(); r = api.run_gate(g, force=True)\n"
              "    out.append(time.perf_counter() - t - r.stages[0].duration_s)\n"
              "print(json.dumps(out[1:]))\n")
    inproc = json.loads(run(repo, [sys.executable, "-c", script], environ))
    cli = []
    for _ in range(rounds):
        seconds, report = gate(repo, environ, python, "--force")
        cli.append(seconds - report["stages"][0]["duration_s"])
    return statistics.median(inproc), statistics.median(cli)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="overhead rounds (median)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--python", default=sys.executable,
                        help="the gate interpreter (needs torch and paddlepaddle; with --gpu, "
                             "torch with CUDA)")
    parser.add_argument("--gpu", action="store_true",
                        help="the GPU stages instead (an NVIDIA GPU, CUDA torch, nvcc)")
    args = parser.parse_args()
    stages = [a for name in GPU_STAGES for a in ("--stage", name)] if args.gpu else []
    root = Path(tempfile.mkdtemp(prefix="pq-bench-gate-"))
    environ = env(root / "home", args.gpu)
    (root / "home").mkdir()
    ccache = shutil.which("ccache", path=environ.get("PATH"))
    rows: list[tuple[str, float, str, bool | None]] = []
    try:
        if args.gpu:
            print(run(root, [args.python, "-c", GPU_PROBE], environ).strip())
        fork = example_fork(root, environ)
        cold, report = gate(fork, environ, args.python, *stages)
        print(f"cold:        {cold:6.1f} s  {stage_line(report)}")
        ran = sum(s["duration_s"] or 0 for s in report["stages"])
        rows.append(("cold gate (reference)", cold, "-", None))
        rows.append(("  of which pq itself (cold - stages)", cold - ran, "-", None))

        init = fork / "tinyop" / "__init__.py"
        init.write_text(init.read_text() + "\n# python-glue only: a comment\n")
        commit_all(fork, "python-glue: a comment", environ)
        run(fork, [sys.executable, "-m", "pq", "export", "--commit"], environ)  # as users do
        glue, report = gate(fork, environ, args.python, *stages)
        print(f"python-glue: {glue:6.1f} s  {stage_line(report)}")
        rows.append(("after a python-glue-only change", glue, f"< {GLUE_TARGET_S:g} s",
                     glue < GLUE_TARGET_S))
        rows.append(("  of which stages that must run (" + ", ".join(ran_names(report)) + ")",
                     ran_time(report), "-", None))

        limit = CPP_RATIO_TARGET * cold
        for rel in (GPU_EDITS if args.gpu else ("csrc/kernel/scale_add.cc", "csrc/ops.cc")):
            if args.gpu:  # the GPU stages build the base: upstream moves, the fork rebases
                one_line(root / "upstream" / rel)
                commit_all(root / "upstream", f"one line in {rel}", environ)
                run(fork, ["git", "fetch", "-q", "upstream"], environ)
                run(fork, [sys.executable, "-m", "pq", "rebase", "upstream/main"], environ)
            else:
                one_line(fork / rel)
                commit_all(fork, f"one line in {rel}", environ)
            cpp, report = gate(fork, environ, args.python, *stages)
            print(f"C++ line:    {cpp:6.1f} s  {stage_line(report)}"
                  + (f"  ({ccache_counts(fork, environ)})" if ccache else ""))
            rows.append((f"after {'upstream moved by ' if args.gpu else ''}a one-line change "
                         f"in {rel}{', pq rebase' if args.gpu else ''} (ccache "
                         f"{'on' if ccache else 'off'})", cpp, f"< {limit:.1f} s (cold/2)",
                         cpp < limit))
            rows.append(("  of which stages that ran (" + ", ".join(ran_names(report)) + ")",
                         ran_time(report), "-", None))

        inproc, cli = overhead(root, environ, args.python, args.rounds)
        rows.append((f"gate overhead around a {STAGE_S} s stage (run_gate)", inproc,
                     f"< {OVERHEAD_TARGET_S} s", inproc < OVERHEAD_TARGET_S))
        rows.append(("  the same through `pq gate` (+ interpreter start)", cli, "-", None))
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if not ccache:
        print("note: ccache is not on PATH: the C++ case rebuilt without a compiler cache")
    width = max(len(r[0]) for r in rows)
    print(f"{'case'.ljust(width)} | seconds | target             | ok?")
    for name, seconds, target, ok in rows:
        mark = "-" if ok is None else ("ok" if ok else "MISSED")
        print(f"{name.ljust(width)} | {seconds:7.2f} | {target.ljust(18)} | {mark}")
    if any(ok is False for *_, ok in rows):
        print("TARGET MISSED")
        sys.exit(1)


if __name__ == "__main__":
    main()
