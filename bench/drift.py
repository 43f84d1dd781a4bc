#!/usr/bin/env python3
"""Benchmark: `pq drift OLD..NEW` over a 300-commit upstream range, against its target (2 s).

Generates, in a temporary folder and with `git fast-import`, an upstream of 1,000 files
(C++ sources using at::/c10::/torch:: and Python modules using torch.) and a fork carrying a
series of 10 patches (one declares a copy of an upstream file), then 300 upstream commits
that each add a few lines of new framework API to 1-3 files. Then several rounds of
`pq drift BASE..upstream/main --json` (this checkout's pq, `python -m pq`), each beside
`git log -p` of the same range (the floor: reading the range at all). Prints every time,
the medians, pq's median beside the target, and the ratio pq/git.

Usage: python bench/drift.py [--rounds N] [--commits N] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rebase import Runner, fast_import  # bench/rebase.py: the same environment and streams

TARGET_S = 2.0
FILES = 1_000
LINES = 60
PATCHES = 10
SRC = Path(__file__).resolve().parents[1] / "src"

API_LINES = (
    "  at::cuda::CUDAGuard guard_{n}(x.device());\n",
    "  const float* p_{n} = x.const_data_ptr<float>();\n",
    "  auto y_{n} = at::empty_like(x);\n",
    "  c10::cuda::CUDAStream s_{n} = c10::cuda::getCurrentCUDAStream();\n",
    "  TORCH_CHECK(x.numel() > {n});\n",
)
PY_LINES = (
    "s_{n} = torch.cuda.Stream()\n",
    "torch.testing.assert_close(a_{n}, b_{n})\n",
    "f_{n} = torch.library.custom_op('x::f{n}', mutates_args=())\n",
)


def path_of(i: int) -> str:
    return f"csrc/mod{i // 50:02d}/f{i:04d}.cc" if i % 2 == 0 else \
        f"pkg/mod{i // 50:02d}/m{i:04d}.py"


def body(path: str, lines: list[str]) -> bytes:
    head = "#include <torch/extension.h>\n" if path.endswith(".cc") else "import torch\n"
    return (head + "".join(lines)).encode()


def build(root: Path, run: Runner, commits: int) -> tuple[Path, str]:
    rng = random.Random(20261201)
    up = root / "upstream"
    up.mkdir()
    run.git(up, "init", "-q", "-b", "main")
    content = {path_of(i): [f"int v_{i}_{k} = {k};\n" if path_of(i).endswith(".cc")
                            else f"v_{i}_{k} = {k}\n" for k in range(LINES)]
               for i in range(FILES)}
    stream = [("upstream: initial import", "", {p: body(p, ls) for p, ls in content.items()})]
    run.git(up, "fast-import", "--quiet", input=fast_import(stream, "refs/heads/main",
                                                            1_700_000_000))
    run.git(up, "reset", "-q", "--hard", "main")
    base = run.git(up, "rev-parse", "HEAD").strip()
    fork = root / "fork"
    run.git(root, "clone", "-q", "-o", "upstream", str(up), str(fork))
    run.git(fork, "checkout", "-q", "-b", "paddle")
    paths = sorted(content)
    for n in range(PATCHES):
        p = paths[n * 7]
        lines = content[p][:]
        lines[2] = lines[2].rstrip("\n") + "  // paddle\n" if p.endswith(".cc") else \
            lines[2].rstrip("\n") + "  # paddle\n"
        (fork / p).write_bytes(body(p, lines))
        run.git(fork, "commit", "-qam", f"port step {n}")
    copy = fork / "paddle_tests" / "m0001.py"
    copy.parent.mkdir()
    copy.write_bytes(body(paths[1], content[paths[1]]))
    run.git(fork, "add", "-A")
    run.git(fork, "commit", "-qm", "Paddle copy of a module")
    run.timed(fork, [sys.executable, "-m", "pq", "init", "--upstream", "upstream/main",
                     "--commit"])
    series = (fork / "series.yaml").read_text()
    series = series.replace("summary: Paddle copy of a module\n",
                            "summary: Paddle copy of a module\n"
                            f"    copies: {{paddle_tests/m0001.py: {paths[1]}}}\n")
    (fork / "series.yaml").write_text(series)
    history = []
    for n in range(commits):
        files = {}
        for p in rng.sample(paths, rng.randint(1, 3)):
            k = rng.randrange(LINES)
            pool = API_LINES if p.endswith(".cc") else PY_LINES
            content[p].insert(k, rng.choice(pool).format(n=n))
            files[p] = body(p, content[p])
        history.append((f"upstream: change {n}", base if n == 0 else "", files))
    run.git(up, "fast-import", "--quiet", input=fast_import(history, "refs/heads/main",
                                                            1_700_100_000))
    run.git(fork, "fetch", "-q", "upstream")
    return fork, base


def timed(run: Runner, cwd: Path, argv: list[str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    proc = subprocess.run(argv, check=False, cwd=cwd, capture_output=True, env=run.env)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                 f"{proc.stdout.decode()[-2000:]}{proc.stderr.decode()[-2000:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--keep", action="store_true", help="keep the generated repositories")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pq-bench-drift-"))
    home = root / "home"
    home.mkdir()
    run = Runner(home)
    run.env["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    try:
        t0 = time.perf_counter()
        fork, base = build(root, run, args.commits)
        n = run.git(fork, "rev-list", "--count", f"{base}..upstream/main").strip()
        print(f"setup: {FILES} files, {PATCHES + 1} patches, upstream range of {n} commits "
              f"({time.perf_counter() - t0:.1f}s)")
        drift = [sys.executable, "-m", "pq", "drift", f"{base}..upstream/main", "--json"]
        timed(run, fork, drift)  # the surface index's first load is cached; time it warm
        pq_times, git_times = [], []
        report: dict[str, object] = {}
        for r in range(args.rounds):
            t_pq, out = timed(run, fork, drift)
            t_git, _ = timed(run, fork, ["git", "log", "-p", "--no-merges",
                                         f"{base}..upstream/main"])
            pq_times.append(t_pq)
            git_times.append(t_git)
            report = json.loads(out)
            print(f"round {r + 1}: pq drift {t_pq:.3f}s   git log -p {t_git:.3f}s")
        items, stale = report.get("items"), report.get("stale_copies")
        pq_med, git_med = statistics.median(pq_times), statistics.median(git_times)
        print(f"report: {len(items) if isinstance(items, list) else 0} items, "
              f"{report.get('breaking')} will break, "
              f"{len(stale) if isinstance(stale, list) else 0} stale copy, surface: "
              f"{report.get('surface')}")
        print(f"median: pq drift {pq_med:.3f}s (target {TARGET_S:.1f}s: "
              f"{'met' if pq_med <= TARGET_S else 'MISSED'}), git log -p {git_med:.3f}s, "
              f"ratio pq/git {pq_med / git_med:.1f}")
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
