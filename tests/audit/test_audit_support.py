"""A realistic migration series for the audit tests, built as real commits in a real fork.

`build_fork` turns a list of `Spec`s (one commit each, optionally with a workaround block)
into a fork with series.yaml and patches/ exported by pq; each test changes one thing in
`clean_specs()` to plant exactly one violation.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from gitrepo import commit_all, git, make_fork, make_upstream, pq, write

ROOT = Path(__file__).resolve().parents[2]
REAL_MRE = ROOT / "mre"
ISSUE = "https://github.com/PaddlePaddle/Paddle/issues/{}"

SETUP = '''from setuptools import setup
from torch.utils import cpp_extension

setup(
    name="tinyop",
    ext_modules=[
        cpp_extension.CppExtension(
            "tinyop._C",
            ["csrc/ops.cc", "csrc/kernel/scale_add.cc"],
        )
    ],
    cmdclass={"build_ext": cpp_extension.BuildExtension},
)
'''
OPS = '''#include <torch/extension.h>

#include "kernel/scale_add.h"

at::Tensor scale_add(const at::Tensor& x, const at::Tensor& y, double alpha) {
  at::Tensor out = torch::empty_like(x);
  kernel::scale_add(out.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(),
                    static_cast<float>(alpha), x.numel());
  return out;
}

TORCH_LIBRARY(tinyop, m) {
  m.def("scale_add(Tensor x, Tensor y, float alpha=1.0) -> Tensor");
}
'''
KERNEL = '''#include "scale_add.h"

namespace kernel {
void scale_add(float* out, const float* x, const float* y, float alpha, long n) {
  for (long i = 0; i < n; ++i) out[i] = x[i] + alpha * y[i];
}
}  // namespace kernel
'''
INIT = '''import torch

from . import _C  # noqa: F401


def scale_add(x, y, alpha=1.0):
    return torch.ops.tinyop.scale_add(x, y, alpha)
'''
COMPILE = '''import torch


def maybe_compile(fn):
    return torch.compile(fn)
'''
TEST = '''import torch

import tinyop


def test_smoke():
    x = torch.ones(4)
    torch.testing.assert_close(tinyop.scale_add(x, x), torch.full((4,), 2.0))
'''
UPSTREAM = {"setup.py": SETUP, "csrc/ops.cc": OPS, "csrc/kernel/scale_add.cc": KERNEL,
            "csrc/kernel/scale_add.h": "void scale_add(float*, const float*, const float*, "
            "float, long);\n", "tinyop/__init__.py": INIT, "tinyop/compile.py": COMPILE,
            "tests/test_tinyop.py": TEST, "README.md": "tinyop\n"}

M_LIBRARY = "TODO(paddle#77012): remove after Paddle compat supports TORCH_LIBRARY in " \
            "torch/extension.h"
M_TESTING = "TODO(paddle#77013): remove after Paddle compat supports torch.testing"
M_CPPEXT = "TODO(paddle#77014): remove after Paddle compat supports a positional " \
           "CppExtension name"
M_COMPILE = "TODO(tinyop-port): remove once upstream checks for torch.compile itself"
M_BUILD = "TODO(tinyop-port): remove when upstream's setup.py builds with Paddle"


@dataclass
class Spec:
    """One commit of the migration and the workaround block of its patch (None: none).

    `mre` says what build_fork writes at the block's `mre` path: a fake reproducer, the
    real one from the repository's mre/ folder, "none", or "no-run-sh" (README only)."""

    message: str
    files: dict[str, str | None]
    workaround: dict[str, Any] | None = None
    mre: str | None = None


def clean_specs() -> list[Spec]:
    """A migration that follows the policy to the letter: the audit finds nothing."""
    return [
        Spec("build: enable compat in setup.py",
             {"setup.py": "import paddle\n\npaddle.enable_compat()  # build entry point\n\n"
              + SETUP}),
        Spec("cpp-compat: include torch/library.h for TORCH_LIBRARY",
             {"csrc/ops.cc": OPS.replace(
                 "#include <torch/extension.h>\n",
                 f"#include <torch/extension.h>\n// {M_LIBRARY}\n#include <torch/library.h>\n")},
             {"kind": "compat-gap", "covers": ["csrc/ops.cc"],
              "reason": "TORCH_LIBRARY is undefined under the compat <torch/extension.h>",
              "remove_when": ["paddle >= 3.4", "mre-passes"], "issue": ISSUE.format(77012),
              "mre": "mre/torch-library-include", "marker": M_LIBRARY}),
        Spec("python-glue: compare through numpy without torch.testing",
             {"tests/test_tinyop.py": TEST.replace(
                 "import torch\n", "import numpy as np\nimport torch\n").replace(
                 "    torch.testing.assert_close(tinyop.scale_add(x, x), torch.full((4,), 2.0))\n",
                 f"    # {M_TESTING}\n    np.testing.assert_allclose(tinyop.scale_add(x, x)"
                 ".numpy(), np.full((4,), 2.0))\n")},
             {"kind": "compat-gap", "covers": ["tests/test_tinyop.py::test_smoke"],
              "reason": "the torch proxy has no torch.testing",
              "remove_when": ["mre-passes"], "issue": ISSUE.format(77013),
              "mre": "mre/torch-testing", "marker": M_TESTING}),
        Spec("build: pass CppExtension name and sources as keywords",
             {"setup.py": "import paddle\n\npaddle.enable_compat()  # build entry point\n\n"
              + SETUP.replace('            "tinyop._C",\n',
                              f'            # {M_CPPEXT}\n            name="tinyop._C",\n')
              .replace('            ["csrc/ops.cc"', '            sources=["csrc/ops.cc"')},
             {"kind": "compat-gap", "covers": ["setup.py"],
              "reason": "Paddle's CppExtension takes sources first",
              "remove_when": ["mre-passes"], "issue": ISSUE.format(77014),
              "mre": "mre/cppextension-positional-name", "marker": M_CPPEXT}),
        Spec("python-glue: scoped compat for the package",
             {"tinyop/__init__.py": 'import paddle\n\npaddle.enable_compat(scope={"tinyop"})\n\n'
              + INIT}),
        Spec("python-glue: skip torch.compile where the proxy lacks it",
             {"tinyop/compile.py": COMPILE.replace(
                 "    return torch.compile(fn)\n",
                 f"    # {M_COMPILE}\n    if not hasattr(torch, \"compile\"):\n        return fn\n"
                 "    return torch.compile(fn)\n")},
             {"kind": "upstream-private", "covers": ["tinyop/compile.py::maybe_compile"],
              "reason": "torch.compile is PyTorch compiler machinery the proxy does not have",
              "remove_when": ['upstream-contains: tinyop/compile.py: hasattr(torch, "compile")'],
              "issue": "not-needed: torch.compile is PyTorch-internal, not a compat API",
              "marker": M_COMPILE}),
        Spec("build: a Paddle-only build entry",
             {"scripts/build_paddle.py": f"# {M_BUILD}\nfrom paddle.utils import cpp_extension\n"
              "\ncpp_extension.setup(name='tinyop', ext_modules=[cpp_extension.CppExtension("
              "sources=['csrc/ops.cc'])])\n"},
             {"kind": "build-entry", "covers": ["scripts/build_paddle.py"],
              "reason": "CI images without torch build through paddle.utils.cpp_extension",
              "remove_when": ["upstream-contains: setup.py: import paddle"],
              "issue": "not-needed: a chosen build entry, not a gap", "marker": M_BUILD}),
    ]


def fake_mre(root: Path, name: str, exit_code: int = 1) -> None:
    write(root, f"mre/{name}/run.sh", f"#!/usr/bin/env bash\n# Exit 0: works.\n"
          f"# Non-zero: the gap.\necho fake {name}\nexit {exit_code}\n")
    write(root, f"mre/{name}/README.md", f"# {name}\n")


def real_mre(root: Path, name: str) -> None:
    src = REAL_MRE / name
    assert (src / "run.sh").is_file(), f"missing real reproducer {src}"
    shutil.copytree(src, root / "mre" / name, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.so", "*.egg-info"))


_INITIALISED: dict[str, Path] = {}


def _initialised(tmp: Path, specs: list[Spec], upstream_files: dict[str, str]) -> Path:
    """tmp/upstream and tmp/fork with the specs committed and `pq init` run; repositories
    with the same commits are built once per test session and copied."""
    key = hashlib.sha256(json.dumps([upstream_files, [(s.message, s.files) for s in specs]],
                                    sort_keys=True).encode()).hexdigest()[:16]
    if key not in _INITIALISED:
        root = Path(tempfile.mkdtemp(prefix="pq-audit-repos-"))
        atexit.register(shutil.rmtree, root, True)
        upstream = make_upstream(root / "upstream", dict(upstream_files))
        fork = make_fork(root, upstream)
        for spec in specs:
            for path, text in spec.files.items():
                if text is None:
                    (fork / path).unlink()
                else:
                    write(fork, path, text)
            commit_all(fork, spec.message)
        pq(fork, "init", "--upstream", "upstream/main")
        _INITIALISED[key] = root
    shutil.copytree(_INITIALISED[key], tmp, symlinks=True, dirs_exist_ok=True)
    git(tmp / "fork", "remote", "set-url", "upstream", str(tmp / "upstream"))
    return tmp / "fork"


def build_fork(tmp: Path, specs: list[Spec], *, mre: str = "fake",
               upstream_files: dict[str, str] | None = None) -> Path:
    """Commit each spec, `pq init`, add the workaround blocks, write reproducers, export."""
    fork = _initialised(tmp, specs, dict(upstream_files or UPSTREAM))
    names = patch_names(fork)
    edit_series(fork, {names[i]: s.workaround for i, s in enumerate(specs) if s.workaround})
    for spec in specs:
        path = (spec.workaround or {}).get("mre")
        how = spec.mre or mre
        if not isinstance(path, str) or not path.startswith("mre/") or (fork / path).exists():
            continue
        if how == "real":
            real_mre(fork, path[4:])
        elif how == "fake":
            fake_mre(fork, path[4:])
        elif how == "no-run-sh":
            write(fork, f"{path}/README.md", "# no run.sh here\n")
    pq(fork, "export")
    return fork


def patch_names(fork: Path) -> list[str]:
    data = yaml.safe_load((fork / "series.yaml").read_text())
    return [p["name"] for p in data["patches"]]


def edit_series(fork: Path, blocks: dict[str, dict[str, Any] | None]) -> None:
    """Set (or, with None, drop) the workaround block of the named patches."""
    data = yaml.safe_load((fork / "series.yaml").read_text())
    for entry in data["patches"]:
        if entry["name"] in blocks:
            block = blocks[entry["name"]]
            if block is None:
                entry.pop("workaround", None)
            else:
                entry["workaround"] = copy.deepcopy(block)
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))


def audit(fork: Path, *args: str) -> tuple[int, str]:
    result = pq(fork, "audit", "workarounds", *args, ok=False)
    return result.exit_code, result.output


def audit_json(fork: Path, *args: str) -> dict[str, Any]:
    code, out = audit(fork, "--json", *args)
    data: dict[str, Any] = json.loads(out)
    assert data["exit_code"] == code
    return data


def rule_ids(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["rule_id"], f["patch"]) for f in data["findings"]]


def head(fork: Path) -> str:
    return git(fork, "rev-parse", "HEAD")
