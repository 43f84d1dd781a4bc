#!/usr/bin/env python3
"""Benchmark: the compat surface index of the installed Paddle, built cold and loaded from
its cache, side by side with the targets (cold build under 10 s, cached load tens of ms).

Each round builds the index into a fresh cache folder (`load_surface(rebuild=True)`: header
scan, nm + c++filt of Paddle's libraries, the proxy probe in a child interpreter), then
loads it from that cache several times. Prints every time, both medians, the targets, the
ratio cold/cached, and the parts of a cold build measured alone.

Usage: python bench/surface.py [--rounds N] [--paddle-python PYTHON]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pq.compat.exports import libraries, read_exports  # noqa: E402
from pq.compat.probe import find_paddle, probe_proxy  # noqa: E402
from pq.compat.surface import load_surface, scan_tree  # noqa: E402

COLD_TARGET_S = 10.0
CACHED_TARGET_S = 0.050


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--paddle-python", default=None)
    args = ap.parse_args()
    cold: list[float] = []
    cached: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pq-surface-bench-") as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        for _ in range(args.rounds):
            cold.append(timed(lambda: load_surface(args.paddle_python, rebuild=True)))
            for _ in range(5):
                cached.append(timed(lambda: load_surface(args.paddle_python)))
        surface = load_surface(args.paddle_python)
    inst = find_paddle(args.paddle_python)
    parts = {"find paddle": timed(lambda: find_paddle(args.paddle_python)),
             "scan headers": timed(lambda: scan_tree(inst.compat_root)),
             "nm + c++filt": timed(lambda: read_exports(libraries(inst.root))),
             "proxy probe": timed(lambda: probe_proxy(inst.python))}
    c = surface.counts()
    print(f"Paddle {surface.paddle_version} ({surface.root}): {c['headers']} headers, "
          f"{c['declarations']} declarations, {c['exports']} exports, "
          f"{c['python_attrs']} proxy attributes")
    print("cold build  (s): " + ", ".join(f"{t:.3f}" for t in cold))
    print("cached load (s): " + ", ".join(f"{t:.4f}" for t in cached))
    cold_m, cached_m = statistics.median(cold), statistics.median(cached)
    print(f"median cold build  {cold_m:8.3f} s   target < {COLD_TARGET_S:.0f} s   "
          f"{'ok' if cold_m < COLD_TARGET_S else 'OVER'}")
    print(f"median cached load {cached_m * 1000:8.1f} ms  target ~{CACHED_TARGET_S * 1000:.0f} ms "
          f"{'ok' if cached_m < CACHED_TARGET_S else 'OVER'}")
    print(f"cold / cached: {cold_m / cached_m:.0f}x")
    print("cold build parts, measured alone (the probe runs beside the rest): "
          + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))
    return 0 if cold_m < COLD_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
