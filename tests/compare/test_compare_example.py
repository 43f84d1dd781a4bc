"""`pq compare` on the example library with real PyTorch and real Paddle (CPU): the shipped
series agrees with upstream; planted changes in the Python wrapper and in the C++ wrapper
are found at their line and layer; the at::sum int32 divergence between the frameworks,
a shape mismatch and a missing call are reported as such.

Built once per module, side by side: upstream against torch (plus an op `total` =
at::sum), the shipped series against Paddle compat, and two Paddle variants (a planted
C++ change; the op `total`). A planted Python change copies the built Paddle tree."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from fixtures.compare.stubs import line_of, script

from pq.cli.compare import text as render
from pq.compare import api
from pq.demo.build import UPSTREAM_TREE, series_source

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "paddle")),
                       reason="needs torch and paddlepaddle (pip install -e '.[compat]')"),
    pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler"),
]

IGNORE = shutil.ignore_patterns("__pycache__", "*.so", "build", "_C.py", "*.egg-info",
                                ".pytest_cache")
OP_CALL = "torch.ops.tinyop.scale_add(x, y, alpha)"
# An op whose result dtype differs between the frameworks (int32 in: int64 under torch,
# float32 under Paddle 3.3.1), added the same way to both trees.
TOTAL_FN = "at::Tensor total(const at::Tensor& x) {\n  return at::sum(x);\n}\n\n"
AGREE = """
    import torch
    import pq
    import tinyop

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = torch.ones(2, 3)
    out = tinyop.scale_add(x, y, 0.5)
    pq.observe("out", out)
"""


def build(*trees: Path) -> None:
    """Build the trees' extensions in place, side by side."""
    procs = [subprocess.Popen([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree,
                              env={**os.environ, "CFLAGS": "-g0"}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) for tree in trees]
    for proc in procs:
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out.decode(errors="replace")[-4000:]


def add_total_op(tree: Path) -> None:
    ops = tree / "csrc/ops.cc"
    text = ops.read_text()
    edits = [('#include "kernel/scale_add.h"',
              '#include <ATen/ops/sum.h>\n\n#include "kernel/scale_add.h"'),
             ("}  // namespace tinyop", TOTAL_FN + "}  // namespace tinyop"),
             ('-> Tensor");\n', '-> Tensor");\n  m.def("total(Tensor x) -> Tensor");\n'),
             ('&tinyop::scale_add);\n', '&tinyop::scale_add);\n  m.impl("total", &tinyop::total);\n')]
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    ops.write_text(text)


@dataclass(frozen=True)
class Trees:
    torch: Path  # upstream (+ the op `total`), built against torch
    paddle: Path  # upstream + the shipped series, built against Paddle compat
    cc_planted: Path  # the shipped series with a planted change in csrc/ops.cc
    cc_line: int  # the planted line
    total: Path  # the shipped series plus the op `total`
    tmp: Path


CC_OLD, CC_NEW = "static_cast<float>(alpha),", "static_cast<float>(alpha) * 2.0f,"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Trees:
    tmp = tmp_path_factory.mktemp("compare-example")
    torch_tree, paddle_tree = tmp / "torch", tmp / "paddle"
    shutil.copytree(UPSTREAM_TREE, torch_tree, ignore=IGNORE)
    add_total_op(torch_tree)
    shutil.copytree(UPSTREAM_TREE, paddle_tree, ignore=IGNORE)
    source = series_source()
    series = yaml.safe_load((source / "series.yaml").read_text())
    for entry in series["patches"]:
        subprocess.run(["git", "apply", str(source / "patches" / entry["name"])],
                       cwd=paddle_tree, check=True)
    cc, total = tmp / "cc-planted", tmp / "with-total"
    shutil.copytree(paddle_tree, cc)
    cc_line = plant(cc, "csrc/ops.cc", CC_OLD, CC_NEW)
    shutil.copytree(paddle_tree, total)
    add_total_op(total)
    build(torch_tree, paddle_tree, cc, total)
    return Trees(torch_tree, paddle_tree, cc, cc_line, total, tmp)


def plant(tree: Path, rel: str, old: str, new: str) -> int:
    """Replace `old` by `new` in tree/rel; the changed line."""
    text = (tree / rel).read_text()
    assert text.count(old) == 1
    (tree / rel).write_text(text.replace(old, new))
    return line_of((tree / rel).read_text().splitlines(), new)


def variant(trees: Trees, name: str, rel: str, old: str, new: str) -> tuple[Path, int]:
    """A copy of the built Paddle tree with a planted Python change; the changed line."""
    tree = trees.tmp / name
    shutil.copytree(trees.paddle, tree)
    return tree, plant(tree, rel, old, new)


def run(trees: Trees, paddle_tree: Path, body: str) -> tuple[int, dict, list[str], str]:
    """One comparison: its exit code, its --json data, the script's lines, its text."""
    path, lines = script(trees.tmp / f"s-{paddle_tree.name}", "check.py", body)
    sides = (api.Side("torch", sys.executable, (str(trees.torch),)),
             api.Side("paddle", sys.executable, (str(paddle_tree),)))
    result = api.run_compare(path, sides, package="tinyop", cwd=path.parent)
    return result.exit_code, result.to_json(), lines, render(result)


def op_line(tree: Path) -> int:
    return line_of((tree / "tinyop/__init__.py").read_text().splitlines(), OP_CALL)


def test_shipped_series_agrees_with_upstream(trees: Trees) -> None:
    code, data, _, _ = run(trees, trees.paddle, AGREE)
    assert code == 0, json.dumps(data, indent=1)
    assert data["status"] == "agree" and data["divergence"] is None
    # tinyop.scale_add, the op it calls, and the observation, on both sides.
    assert data["observations"] == {"torch": 3, "paddle": 3}
    assert data["frameworks"]["torch"].startswith("2.") and data["frameworks"]["paddle"]


def test_planted_python_wrapper_change_is_found_at_its_line(trees: Trees) -> None:
    tree, planted = variant(trees, "py-planted", "tinyop/__init__.py", OP_CALL,
                            "torch.ops.tinyop.scale_add(x, y, alpha * 2)")
    code, data, _, text = run(trees, tree, AGREE)
    assert code == 1
    d = data["divergence"]
    assert d["observation"] == "op tinyop.scale_add" and d["where"] == "args[2]"
    assert d["site"] == {"file": "tinyop/__init__.py", "line": planted,
                         "layer": "python-glue", "function": "scale_add", "how": ""}
    assert (d["torch"]["value"], d["paddle"]["value"]) == (0.5, 1.0)
    assert f"call site:      tinyop/__init__.py:{planted} (python-glue)" in text


def test_planted_cpp_wrapper_change_is_found_at_its_line(trees: Trees) -> None:
    tree, planted = trees.cc_planted, trees.cc_line
    code, data, _, text = run(trees, tree, AGREE)
    assert code == 1
    d = data["divergence"]
    assert d["observation"] == "op tinyop.scale_add" and d["where"] == "result"
    assert d["what"] == "values"
    assert (d["site"]["file"], d["site"]["line"]) == ("tinyop/__init__.py", op_line(tree))
    impl = d["implementation"]
    assert (impl["file"], impl["line"], impl["layer"]) == ("csrc/ops.cc", planted, "cpp-compat")
    # alpha doubled: every element moves by alpha * y = 0.5 * 1.
    assert d["max_abs_error"] == pytest.approx(0.5)
    assert f"implementation: csrc/ops.cc:{planted} (cpp-compat)" in text


def test_at_sum_of_int32_is_pinpointed_as_a_framework_dtype_difference(trees: Trees) -> None:
    tree = trees.total
    code, data, lines, text = run(trees, tree, """
        import torch
        import tinyop

        x = torch.arange(6, dtype=torch.int32)
        total = torch.ops.tinyop.total(x)
    """)
    assert code == 1, json.dumps(data, indent=1)
    d = data["divergence"]
    assert d["what"] == "dtype" and d["observation"] == "op tinyop.total"
    assert (d["site"]["file"], d["site"]["line"]) == ("check.py", line_of(lines, ".total(x)"))
    assert (d["torch"]["dtype"], d["paddle"]["dtype"]) == ("int64", "float32")
    ops = (tree / "csrc/ops.cc").read_text().splitlines()
    impl = d["implementation"]
    assert (impl["file"], impl["line"]) == ("csrc/ops.cc", line_of(ops, "at::Tensor total("))
    assert "same source in both trees" in impl["how"]
    assert "dtype:  int64" in text and "float32" in text


def test_shape_mismatch_and_missing_call(trees: Trees) -> None:
    tree, planted = variant(trees, "reshaped", "tinyop/__init__.py", OP_CALL,
                            OP_CALL + ".reshape([-1])")
    code, data, lines, _ = run(trees, tree, AGREE)
    d = data["divergence"]
    assert code == 1 and d["what"] == "shape" and d["observation"] == "call tinyop.scale_add"
    assert (d["torch"]["shape"], d["paddle"]["shape"]) == ([2, 3], [6])
    assert d["site"]["line"] == line_of(lines, "tinyop.scale_add(x, y, 0.5)")
    assert (d["implementation"]["file"], d["implementation"]["line"]) == (
        "tinyop/__init__.py", planted)

    tree, _ = variant(trees, "no-op-call", "tinyop/__init__.py", OP_CALL, "(x + alpha * y)")
    code, data, _, _ = run(trees, tree, AGREE)
    d = data["divergence"]
    assert code == 1 and d["what"] == "call sequence"
    assert d["message"].startswith("op tinyop.scale_add is missing on the paddle side")
    assert (d["site"]["file"], d["site"]["line"]) == ("tinyop/__init__.py",
                                                      op_line(trees.torch))
