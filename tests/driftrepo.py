"""A fork with a series and an upstream that moves on, for the drift tests: real git, the
lines planted here are what the tests expect to find (file, line, commit from git)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitrepo import commit_all, git, make_fork, make_upstream, pq, write

from pq.compat.coverage import Coverage, Status

COPY_ORIGIN = "tests/test_ops.py"
COPY = "paddle_tests/test_ops.py"
ORIGIN_TEXT = "import torch\n\n\ndef test_op():\n    x = torch.ones(3)\n    assert x.sum() == 3\n"
OLD_SPELLING = "paddle.compat.enable_torch_proxy"
# New API upstream starts using: covered, not exported, a missing header, a container call.
GUARD_CC = """#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/script.h>

at::Tensor scale(const at::Tensor& x) {
  at::cuda::CUDAGuard guard(x.device());
  const float* p = x.const_data_ptr<float>();
  std::vector<int> v;
  v.size();
  return x;
}
"""


@dataclass
class Planted:
    file: str
    line: int  # 1-based, in the file as upstream's commit leaves it
    commit: str


class TableSurface:
    """A small, explicit compat surface (a data table), in the shape of the Surface protocol."""

    paddle_version = "table"

    def __init__(self) -> None:
        self.headers = {"torch/extension.h", "c10/cuda/CUDAGuard.h", "ATen/ATen.h"}
        self.names = {"at::cuda::CUDAGuard": (Status.COVERED, "c10/cuda/CUDAGuard.h"),
                      "at::Tensor": (Status.COVERED, "ATen/core/Tensor.h"),
                      "TORCH_LIBRARY": (Status.NOT_DECLARED, None)}
        self.methods = {"const_data_ptr": Status.NOT_EXPORTED, "device": Status.COVERED,
                        "numel": Status.COVERED}
        self.attrs = {"torch.cuda.Stream": Status.COVERED, "torch.testing": Status.MISSING}

    def header(self, include: str) -> Coverage:
        ok = include in self.headers
        return Coverage(include, "header", Status.COVERED if ok else Status.HEADER_MISSING,
                        header=include if ok else None)

    def cxx(self, qualified: str) -> Coverage:
        status, header = self.names.get(qualified, (Status.UNKNOWN, None))
        return Coverage(qualified, "cxx", status, header=header)

    def method(self, name: str) -> Coverage:
        return Coverage(name, "method", self.methods.get(name, Status.UNKNOWN))

    def python(self, dotted: str) -> Coverage:
        status = next((s for a, s in self.attrs.items() if dotted.startswith(a)),
                      Status.UNKNOWN)
        return Coverage(dotted, "python", status)


def fork_with_series(tmp: Path) -> Path:
    """Upstream (setup.py, csrc/ops.cc, pkg/, tests/test_ops.py) and a fork whose series has
    a build patch (a line at the end of setup.py) and a python-glue patch adding a Paddle
    copy of upstream's test that still spells the old compat entry point."""
    up = make_upstream(tmp / "upstream")
    write(up, COPY_ORIGIN, ORIGIN_TEXT)
    write(up, "setup.py", "from torch.utils import cpp_extension\n\n\n\n\nsetup(name='x')\n")
    commit_all(up, "upstream: tests")
    fork = make_fork(tmp, up)
    write(fork, "setup.py", "from torch.utils import cpp_extension\n\n\n\n\nsetup(name='x')\n"
          "import paddle  # build with Paddle's compat layer\n")
    commit_all(fork, "Build with Paddle")
    copy = ORIGIN_TEXT.replace("import torch\n",
                               f"import paddle\n{OLD_SPELLING}(scope={{'pkg'}})\nimport torch\n")
    write(fork, COPY, copy)
    commit_all(fork, "Paddle copy of the op test")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork


def upstream_commit(fork: Path, files: dict[str, str], message: str) -> str:
    up = fork.parent / "upstream"
    for rel, text in files.items():
        write(up, rel, text)
    sha = commit_all(up, message)
    git(fork, "fetch", "-q", "upstream")
    return sha


def plant(fork: Path, rel: str, text: str, marker: str, message: str,
          extra: dict[str, str] | None = None) -> Planted:
    """Commit `text` at `rel` upstream; where the first line containing `marker` is."""
    sha = upstream_commit(fork, {rel: text, **(extra or {})}, message)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if marker in ln)
    return Planted(rel, line, sha)
