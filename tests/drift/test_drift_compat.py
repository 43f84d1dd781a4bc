"""`pq drift` against the real compat surface of the installed paddlepaddle 3.3.1: the
acceptance cases of issue 13 (a new CUDAGuard use with its status, `const_data_ptr` that
will fail at load, `torch/script.h` missing), through the command as users run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from driftrepo import GUARD_CC, fork_with_series, plant
from gitrepo import git, pq

from pq.compat.surface import load_surface

pytestmark = pytest.mark.compat


def test_real_surface_statuses_of_planted_uses(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    guard = plant(fork, "csrc/guard.cc", GUARD_CC, "at::cuda::CUDAGuard", "use a guard")
    r = pq(fork, "drift", f"{old}..upstream/main", "--json", ok=False)
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["surface"].startswith("paddle 3.3")
    items = {i["name"]: i for i in data["items"]}
    surface = load_surface()
    cuda_guard = items["at::cuda::CUDAGuard"]
    assert (cuda_guard["file"], cuda_guard["line"], cuda_guard["commit"]) == (
        guard.file, guard.line, guard.commit)
    assert cuda_guard["status"] == surface.cxx("at::cuda::CUDAGuard").status.value != "unknown"
    assert items["const_data_ptr"]["status"] == "declared but not exported"
    assert items["torch/script.h"]["status"] == "header missing"
    text = pq(fork, "drift", f"{old}..upstream/main", ok=False).output
    line = next(ln for ln in text.splitlines() if "const_data_ptr" in ln)
    assert line.strip().startswith("will fail at load") and "csrc/guard.cc:" in line
    # breaking items first
    first = text.splitlines().index(next(ln for ln in text.splitlines() if "API" in ln)) + 1
    assert not text.splitlines()[first].strip().startswith(("covered", "unknown"))


def test_rebase_report_asks_the_measured_surface(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    plant(fork, "csrc/guard.cc", GUARD_CC, "const_data_ptr", "use a guard")
    # not measured yet (a fresh HOME): the report says so and goes on, statuses unknown
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)["drift"]
    assert "is not measured yet (`pq compat-surface` measures it once)" in data["surface"]
    assert {i["status"] for i in data["items"]} == {"unknown"}
    pq(fork, "undo")
    out = pq(fork, "rebase", "upstream/main").output
    assert "compat surface: not measured yet" in out and "unknown: csrc/guard.cc" in out
    pq(fork, "undo")
    pq(fork, "compat-surface", "at::Tensor")
    out = pq(fork, "rebase", "upstream/main").output
    assert "compat surface: paddle 3.3" in out
    section = out[out.index("drift: "):].splitlines()
    assert section[1].strip().startswith("will fail at load")
