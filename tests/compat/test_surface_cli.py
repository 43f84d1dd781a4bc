"""`pq compat-surface`: the summary, one line per name, --json's shape and the exit codes
(0 covered, 1 a name breaks, 2 bad input), on a planted installation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitrepo import pq
from surface_tree import plant


@pytest.fixture
def python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return str(plant(tmp_path)[0])


def test_summary_then_cached(tmp_path: Path, python: str) -> None:
    first = pq(tmp_path, "compat-surface", "--paddle-python", python)
    assert "Paddle 9.9.0" in first.output and "built in" in first.output
    assert "headers: 6" in first.output
    second = pq(tmp_path, "compat-surface", "--paddle-python", python)
    assert "from the cache" in second.output


def test_names_and_exit_codes(tmp_path: Path, python: str) -> None:
    ok = pq(tmp_path, "compat-surface", "--paddle-python", python, "at::cuda::CUDAGuard",
            "c10/cuda/CUDAGuard.h", "TORCH_LIBRARY", "torch.zeros", "Tensor.numel")
    lines = [ln for ln in ok.output.splitlines() if not ln.startswith(" ")]
    assert [ln.split()[0] for ln in lines] == ["COVERED"] * 5
    assert "header c10/cuda/CUDAGuard.h" in ok.output
    bad = pq(tmp_path, "compat-surface", "--paddle-python", python, "at::cuda::CUDAGuard",
             "torch/script.h", ok=False)
    assert bad.exit_code == 1
    assert "HEADER_MISSING torch/script.h" in bad.output
    unknown = pq(tmp_path, "compat-surface", "--paddle-python", python, "cuda_runtime.h")
    assert unknown.output.startswith("UNKNOWN")
    usage = pq(tmp_path, "compat-surface", "--paddle-python", python, "foo", ok=False)
    assert usage.exit_code == 2 and "cannot tell what this name is" in usage.output
    missing = pq(tmp_path, "compat-surface", "--paddle-python", str(tmp_path / "nope"), ok=False)
    assert missing.exit_code == 2
    assert len(missing.output.strip().splitlines()) == 1 and "Traceback" not in missing.output


def test_json_shape(tmp_path: Path, python: str) -> None:
    out = pq(tmp_path, "compat-surface", "--json", "--paddle-python", python,
             "at::cuda::CUDAGuard", "torch.testing", ok=False)
    assert out.exit_code == 1
    data = json.loads(out.output)
    assert set(data) == {"paddle_version", "key", "paddle_root", "python", "cache", "rebuilt",
                         "build_seconds", "counts", "libraries", "names"}
    assert set(data["counts"]) == {"headers", "declarations", "macros", "exports",
                                   "python_modules", "python_attrs"}
    assert data["paddle_version"] == "9.9.0" and data["python"] == python
    guard, testing = data["names"]
    assert set(guard) == {"name", "kind", "status", "breaks", "header", "declaration",
                          "exported", "detail"}
    assert (guard["status"], guard["breaks"], guard["header"]) == \
        ("covered", False, "c10/cuda/CUDAGuard.h")
    assert (testing["kind"], testing["status"], testing["breaks"]) == ("python", "missing", True)


def test_a_name_with_an_empty_part_is_bad_input() -> None:
    from pq.compat.query import kind_of

    for name in ("torch.", "torch..cuda", "at::", "::", "at::Tensor::", "Tensor.", "."):
        assert kind_of(name) is None, name
    for name, kind in (("::at::Tensor", "cxx"), ("at::Tensor::numel", "cxx"),
                       ("torch.cuda.Stream", "python"), (".numel", "method")):
        assert kind_of(name) == kind, name
