"""The compat surface of the real installed paddlepaddle (3.3.1 in pq's dev env): the
issue's cases, each expectation derived from the installed files themselves."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

import pytest

from pq.compat.coverage import Status
from pq.compat.index import SurfaceIndex
from pq.compat.probe import COMPAT_DIR
from pq.compat.surface import load_surface

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("surface-cache")


@pytest.fixture
def surface(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> SurfaceIndex:
    try:
        md.distribution("paddlepaddle")
    except md.PackageNotFoundError:
        pytest.skip("paddlepaddle is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))
    return load_surface()


def compat_root() -> Path:
    return Path(str(md.distribution("paddlepaddle").locate_file("paddle"))) / COMPAT_DIR


def test_cuda_guard_found_with_its_header(surface: SurfaceIndex) -> None:
    declaring = sorted(str(p.relative_to(compat_root())) for p in compat_root().rglob("*.h")
                       if "struct CUDAGuard {" in p.read_text(errors="replace"))
    assert declaring, "the installed Paddle declares no CUDAGuard"
    c = surface.cxx("at::cuda::CUDAGuard")
    assert c.status is Status.COVERED
    assert c.header in declaring
    assert surface.header(declaring[0]).status is Status.COVERED
    assert surface.cxx("c10::cuda::CUDAGuard").header == declaring[0]


def test_const_data_ptr_declared_but_not_exported(surface: SurfaceIndex) -> None:
    base = surface.exports["at::TensorBase::const_data_ptr"]
    assert any("at::TensorBase::const_data_ptr<float const, 0>() const" in s for s in base)
    assert "at::Tensor::const_data_ptr" not in surface.exports
    body = (compat_root() / "ATen/core/TensorBody.h").read_text()
    assert "const T* const_data_ptr() const;" in body  # declared, no body
    c = surface.cxx("at::Tensor::const_data_ptr")
    assert (c.status, c.exported) == (Status.NOT_EXPORTED, False)
    assert c.header == "ATen/core/TensorBody.h"
    assert "will fail at load" in c.detail
    assert surface.method("const_data_ptr").status is Status.NOT_EXPORTED
    assert surface.cxx("at::TensorBase::const_data_ptr").exported is True


def test_missing_headers(surface: SurfaceIndex) -> None:
    for name in ("torch/script.h", "ATen/Parallel.h"):
        assert not (compat_root() / name).exists()
        assert surface.header(name).status is Status.HEADER_MISSING
    assert surface.header("torch/extension.h").status is Status.COVERED
    assert len(surface.headers) == sum(1 for _ in compat_root().rglob("*.h"))


def test_macros_and_python_proxy(surface: SurfaceIndex) -> None:
    assert surface.cxx("TORCH_LIBRARY").header == "torch/library.h"
    assert surface.cxx("TORCH_CHECK").status is Status.COVERED
    assert surface.cxx("AT_DISPATCH_FLOATING_TYPES").status is Status.NOT_DECLARED
    assert surface.python("torch.testing").status is Status.MISSING
    assert surface.python("torch.utils.cpp_extension.CppExtension").status is Status.COVERED
    assert surface.paddle_version == md.version("paddlepaddle")


def test_names_the_proxy_serves_from_its_overrides_are_covered(surface: SurfaceIndex
                                                                ) -> None:
    """paddle.compat's public names (`torch.nn.Linear`, `torch.relu`, ...) reach `torch.*`
    through the proxy module's __getattr__, which dir() does not list, and a dunder such
    as `torch.__version__` was left out: all were MISSING, though each resolves under
    `paddle.enable_compat()` (as asked here, in a child interpreter)."""
    import subprocess
    import sys

    names = ["torch.nn.Linear", "torch.nn.functional.softmax", "torch.relu",
             "torch.__version__", "torch.__dict__"]
    code = ("import importlib, paddle\npaddle.enable_compat()\n"
            f"for name in {names!r}:\n"
            "    mod, _, attr = name.rpartition('.')\n"
            "    assert hasattr(importlib.import_module(mod), attr), name\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    for name in names:
        assert surface.python(name).status is Status.COVERED, (name, surface.python(name))
    assert surface.python("torch.nn.NoSuchLayer").status is Status.MISSING


def test_second_load_is_cached(surface: SurfaceIndex) -> None:
    again = load_surface()
    assert not again.rebuilt
    assert again.cache_path == surface.cache_path
    assert again.counts() == surface.counts()
