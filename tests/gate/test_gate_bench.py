"""bench/gate.py's set-up, without its builds: the fork it gates is the example's, as
tests/gate/test_example_gate.py builds it, so the benchmark breaks here (in seconds)
rather than two minutes into `make bench` when the example series changes shape."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gitrepo import git, pq

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gate.py"


def test_the_gate_benchmark_sets_up_the_example_fork(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_gate", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    (tmp_path / "home").mkdir()

    fork = bench.example_fork(tmp_path, bench.env(tmp_path / "home"))

    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"
    assert (fork / ".pq" / "compare").is_dir()  # what the compare stage reads
    pq(fork, "series")  # the series loads (exit 0)
    assert "- name: upstream-torch-build" in git(fork, "show", "HEAD:series.yaml")
