"""The example library through `pq gate` with real builds: real torch builds the upstream,
Paddle's compat layer builds the fork, the op imports under scoped compat and its tests
pass; without a GPU the GPU stages are owed, never passed."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, pq, write

from pq.demo.build import UPSTREAM_TREE, copy_series, series_source

CPU_STAGES = ["upstream-torch-build", "build", "import", "smoke", "tests"]
GPU_STAGES = ["gpu-build", "gpu-tests"]

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "paddle")),
                       reason="needs torch and paddlepaddle (pip install -e '.[compat]')"),
    pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler"),
]


def example_fork(tmp: Path) -> Path:
    """tinyop v1 as an upstream repository and a clone carrying pq's top-level series,
    applied as branch `paddle` (its committed series.yaml holds the gate section)."""
    up, fork = tmp / "upstream", tmp / "fork"
    shutil.copytree(UPSTREAM_TREE, up, ignore=shutil.ignore_patterns(
        "__pycache__", "*.so", "build", ".pytest_cache", "*.egg-info"))
    git(up, "init", "-q", "-b", "main")
    v1 = commit_all(up, "tinyop v1")
    git(tmp, "clone", "-q", "-o", "upstream", str(up), str(fork))
    copy_series(series_source(), fork, v1)
    pq(fork, "apply", "--branch", "paddle")
    return fork


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU path, also on a machine with a GPU: GPU stages must come out owed."""
    monkeypatch.setenv("PQ_GPU", "0")


def has_line(text: str, pattern: str) -> bool:
    return re.search(pattern, text, re.MULTILINE) is not None


def gate_json(fork: Path, *args: str) -> tuple[int, dict]:
    result = pq(fork, "gate", "--json", "--python", sys.executable, *args, ok=False)
    return result.exit_code, json.loads(result.stdout)


def test_cpu_gate_builds_imports_and_tests_for_real(tmp_path: Path, no_gpu: None) -> None:
    fork = example_fork(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")

    code, report = gate_json(fork)

    statuses = {s["name"]: s["status"] for s in report["stages"]}
    assert code == 0, json.dumps(report, indent=1)
    assert report["status"] == "owed"
    assert report["tip"] == tip and not report["cached"] and not report["partial"]
    assert statuses == {**dict.fromkeys(CPU_STAGES, "passed"),
                        **dict.fromkeys(GPU_STAGES, "skipped-no-gpu"), "compare": "passed"}
    assert report["owed"][:2] == GPU_STAGES
    assert report["fingerprint"]["torch"].startswith("2.13.0")
    assert report["fingerprint"]["paddle"] == "3.3.1"
    assert report["fingerprint"]["gpu_visible"] is False

    # Each stage did the real thing, as its log shows.
    logs = Path(report["log_dir"])
    upstream_log = (logs / "upstream-torch-build.log").read_text()
    assert "/torch/include" in upstream_log and "/paddle/" not in upstream_log
    assert has_line(upstream_log, r"^1 passed, 3 deselected")
    build_log = (logs / "build.log").read_text()
    assert "/paddle/include" in build_log and "_C_pd_.so" in build_log
    assert "tinyop.scale_add -> [1.5, 1.5, 1.5, 1.5]" in (logs / "import.log").read_text()
    assert has_line((logs / "smoke.log").read_text(), r"^1 passed, 3 deselected")
    assert has_line((logs / "tests.log").read_text(), r"^3 passed, 1 skipped")

    # The record: a git note on the tip, shown by `pq gate --status`.
    note = json.loads(git(fork, "notes", "--ref=refs/notes/pq-gate", "show", "HEAD"))
    assert note["tip"] == tip and note["status"] == "owed"
    assert [s["status"] for s in note["stages"]] == [statuses[n] for n in statuses]
    status = pq(fork, "gate", "--status")
    assert status.exit_code == 0
    for name in CPU_STAGES:
        assert has_line(status.output, rf"^  {re.escape(name)} +passed"), status.output
    assert "passed (GPU stages owed: gpu-build, gpu-tests" in status.output


def test_compat_api_that_dies_at_load_fails_the_build_stage(tmp_path: Path,
                                                            no_gpu: None) -> None:
    """`const_data_ptr` compiles and links under Paddle compat, but the library has the
    symbol undefined: the process would die (exit 127) once the op runs. The build stage
    fails first, naming the symbol and the source line."""
    fork = example_fork(tmp_path)
    ops = (fork / "csrc/ops.cc").read_text()
    assert ops.count("xc.data_ptr<float>()") == 1
    ops = ops.replace("xc.data_ptr<float>()", "xc.const_data_ptr<float>()")
    write(fork, "csrc/ops.cc", ops)
    line = next(n for n, text in enumerate(ops.splitlines(), 1) if "const_data_ptr" in text)
    commit_all(fork, "cpp-compat: read the input through const_data_ptr")

    code, report = gate_json(fork, "--stage", "build", "--stage", "import")

    assert code == 1, json.dumps(report, indent=1)
    build, imp = report["stages"]
    assert build["status"] == "failed" and build["exit_code"] == 0
    assert build["display"] == "failed (undefined symbol)"
    symbol = "_ZNK2at6Tensor14const_data_ptrIfLi0EEEPKT_v"
    assert build["detail"] == (
        f"undefined symbol {symbol} in tinyop/_C_pd_.so "
        f"(float const* at::Tensor::const_data_ptr<float, 0>() const), used in csrc/ops.cc:{line}")
    assert imp["status"] == "not-run"
    assert report["summary"] == "failed at stage build: " + build["detail"]
    assert f"undefined symbol {symbol}" in Path(build["log"]).read_text()
