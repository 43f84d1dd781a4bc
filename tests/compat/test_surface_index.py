"""The compat surface index on a planted installation (no Paddle needed): the scanner
reads the planted headers' real shapes, the exports come from a real g++-built library,
the proxy from a fake interpreter; the cache is hit, and a corrupt one is rebuilt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from surface_tree import COMPAT, HEADERS, PROXY, plant

from pq.compat.coverage import Status
from pq.compat.index import SurfaceIndex
from pq.compat.surface import cache_dir, load_surface

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None,
                               reason="needs g++ and nm to build the planted library")


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return plant(tmp_path)


def surface(planted: tuple[Path, Path]) -> SurfaceIndex:
    return load_surface(str(planted[0]))


def test_headers_present_and_missing(planted: tuple[Path, Path]) -> None:
    s = surface(planted)
    assert s.headers == tuple(sorted(HEADERS))
    assert s.header("c10/cuda/CUDAGuard.h").status is Status.COVERED
    assert s.header("<ATen/core/TensorBody.h>").header == "ATen/core/TensorBody.h"
    # the second include root Paddle's build adds: torch/csrc/api/include
    assert s.header("torch/all.h").header == "torch/csrc/api/include/torch/all.h"
    for missing in ("torch/script.h", "ATen/Parallel.h"):
        assert not (planted[1] / COMPAT / missing).exists()
        assert s.header(missing).status is Status.HEADER_MISSING
    assert s.header("cuda_runtime.h").status is Status.UNKNOWN


def test_namespaces_classes_aliases(planted: tuple[Path, Path]) -> None:
    s = surface(planted)
    guard = s.cxx("at::cuda::CUDAGuard")  # `using c10::cuda::CUDAGuard;` in at::cuda
    assert guard.status is Status.COVERED
    assert guard.header == "c10/cuda/CUDAGuard.h"
    assert guard.declaration == "using c10::cuda::CUDAGuard;"
    assert "c10::cuda::CUDAGuard" in guard.detail
    assert s.cxx("c10::cuda::CUDAGuard::Inner::depth").status is Status.COVERED
    assert s.cxx("c10::cuda::CUDAGuard::CUDAGuard").exported is None  # inline constructor
    assert s.cxx("torch::Tensor").status is Status.COVERED
    assert s.cxx("at::Tensor::numel").status is Status.COVERED  # `using TensorBase::numel`
    assert s.cxx("at::Tensor::raw").status is Status.COVERED  # from the base class
    assert s.cxx("at::Tensor::operator=").status is Status.COVERED
    assert s.cxx("at::Tensor::sum").status is Status.NOT_DECLARED
    assert s.cxx("at::kEmpty").exported is None  # a variable, `= Tensor()` no function
    assert s.cxx("at::traits").status is Status.COVERED
    assert s.cxx("at::R").status is Status.NOT_DECLARED  # inside template arguments
    assert s.cxx("at::convert").status is Status.COVERED  # `template <>` with a body
    assert s.cxx("at::DeviceGuard").status is Status.NOT_DECLARED
    assert s.cxx("std::vector").status is Status.UNKNOWN


def test_macros_and_x_macros(planted: tuple[Path, Path]) -> None:
    s = surface(planted)
    lib = s.cxx("TORCH_LIBRARY")
    assert (lib.status, lib.kind, lib.header) == (Status.COVERED, "macro", "torch/library.h")
    assert s.cxx("AT_DISPATCH_FLOATING_TYPES").status is Status.NOT_DECLARED
    assert s.cxx("CUDA_VERSION").status is Status.UNKNOWN
    # FORALL_TYPES(DEFINE_CONSTANT) declares kFloat and kDouble; at:: sees them through
    # `using namespace c10;`, and the enum's enumerators come from FORALL_TYPES(ENUM_VAL)
    for name in ("c10::kFloat", "c10::kDouble", "at::kFloat", "c10::ScalarType::Double",
                 "c10::ScalarType::Undefined", "at::toString"):
        assert s.cxx(name).status is Status.COVERED, name
    assert s.cxx("c10::kHalf").status is Status.NOT_DECLARED


@needs_gxx
def test_declared_but_not_exported(planted: tuple[Path, Path]) -> None:
    s = surface(planted)
    assert "at::TensorBase::const_data_ptr" in s.exports
    assert "other::helper" not in s.exports  # only at::/c10::/torch:: are kept
    assert {"c10::Device::operator bool", "c10::Device::~Device", "c10::operator<<",
            "torch::Library::def"} <= set(s.exports)
    assert s.export_libs["torch::Library::def"] == ("libphi_core.so",)
    base = s.cxx("at::TensorBase::const_data_ptr")
    assert (base.status, base.exported) == (Status.COVERED, True)
    # at::Tensor declares its own const_data_ptr<T> without a body: the library's
    # TensorBase symbol does not satisfy it
    t = s.cxx("at::Tensor::const_data_ptr<float>")
    assert (t.status, t.exported) == (Status.NOT_EXPORTED, False)
    assert t.header == "ATen/core/TensorBody.h"
    assert "const_data_ptr() const;" in (t.declaration or "")
    assert "will fail at load" in t.detail
    assert s.method("Tensor.const_data_ptr").status is Status.NOT_EXPORTED
    assert s.method("out.const_data_ptr<float>()").status is Status.NOT_EXPORTED
    assert s.method("mutable_data_ptr").status is Status.NOT_EXPORTED  # base, no export
    assert s.method(".numel").status is Status.COVERED
    assert s.method(".data_ptr").status is Status.COVERED  # its body is after the class
    assert s.cxx("c10::cuda::CUDAGuard::set_index").status is Status.NOT_EXPORTED
    assert s.cxx("at::Tensor::operator==").status is Status.NOT_EXPORTED
    assert s.cxx("at::operator<<").status is Status.NOT_EXPORTED
    assert s.cxx("c10::operator<<").status is Status.NOT_DECLARED  # the library's, no header
    assert s.cxx("torch::Library::def").exported is True
    assert s.cxx("torch::Library::find_operator").exported is True  # no operator()


def test_python_proxy(planted: tuple[Path, Path]) -> None:
    s = surface(planted)
    assert s.python("torch.zeros").status is Status.COVERED
    assert s.python("torch.cuda.Stream").status is Status.COVERED
    assert s.python("torch.cuda.Event").status is Status.MISSING
    testing = s.python("torch.testing.assert_close")
    assert testing.status is Status.MISSING
    assert PROXY["modules"]["torch.testing"]["error"] in testing.detail  # type: ignore[index]
    assert s.python("torch.ops").status is Status.COVERED  # an attribute, not a module
    assert s.python("torch.ops.mylib.op").status is Status.UNKNOWN
    assert s.python("torch.nn.Linear").status is Status.MISSING  # torch has no nn here
    assert s.python("numpy.zeros").status is Status.UNKNOWN


def test_cache_hit_then_corrupt_cache_rebuilt(planted: tuple[Path, Path]) -> None:
    first = surface(planted)
    assert first.rebuilt and first.build_seconds is not None
    path = Path(first.cache_path or "")
    assert path.parent == cache_dir() and path.name == f"{first.key}.json"
    assert first.key.startswith("9.9.0-")
    stamp = path.stat().st_mtime_ns
    data = path.read_bytes()
    second = surface(planted)
    assert not second.rebuilt and second.build_seconds is None
    assert path.stat().st_mtime_ns == stamp
    assert second.counts() == first.counts()
    assert second.cxx("at::cuda::CUDAGuard") == first.cxx("at::cuda::CUDAGuard")
    path.write_text("{not json")
    third = surface(planted)
    assert third.rebuilt
    assert path.read_bytes() == data  # deterministic: the same bytes again
    old = json.loads(data)
    old["schema"] = 0
    path.write_text(json.dumps(old))
    assert surface(planted).rebuilt
    assert load_surface(str(planted[0]), rebuild=True).rebuilt


def test_no_compat_tree_is_one_line_error(planted: tuple[Path, Path]) -> None:
    from pq.errors import ConfigError

    shutil.rmtree(planted[1] / "include")
    with pytest.raises(ConfigError, match="ships no compat headers"):
        surface(planted)


def test_failed_probe_is_not_cached(planted: tuple[Path, Path]) -> None:
    python = planted[0]
    script = python.read_text()
    python.write_text(script.replace("*enable_compat*) cat", "*enable_compat*) exit 3; cat"))
    s = surface(planted)
    assert s.rebuilt and s.cache_path is None
    assert "error" in s.proxy
    assert s.python("torch.zeros").status is Status.UNKNOWN
    assert s.cxx("at::cuda::CUDAGuard").status is Status.COVERED  # the rest is measured
    assert not cache_dir().exists() or not any(cache_dir().iterdir())
    python.write_text(script)
    assert surface(planted).cache_path is not None
