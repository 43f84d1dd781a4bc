"""Units of `pq compare`: per-dtype tolerances, value comparison, finding an op's C++, and
`pq.observe` outside a comparison."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import write

from pq.compare import source
from pq.compare.values import DEFAULT_TOLERANCES, Tolerance, compare, parse_tolerance
from pq.errors import ConfigError

TOLS = DEFAULT_TOLERANCES


def tensor(values: list, dtype: str = "float32", shape: list[int] | None = None,
           **extra: object) -> dict:
    return {"type": "tensor", "dtype": dtype, "shape": shape or [len(values)],
            "values": values, "numel": len(values), **extra}


def test_parse_tolerance() -> None:
    assert parse_tolerance("float32=1e-3,2e-4") == ("float32", Tolerance(1e-3, 2e-4))
    for bad in ("float32", "float32=1", "=1,2", "float32=a,b", "float32=-1,0", "x=inf,0"):
        with pytest.raises(ConfigError, match="DTYPE=RTOL,ATOL"):
            parse_tolerance(bad)
    # A misspelt dtype would never apply: the comparison would go on under the default.
    with pytest.raises(ConfigError, match=r"'flaot32' is no dtype a tensor is recorded with "
                                          r"\(did you mean float32\?\)"):
        parse_tolerance("flaot32=1,1")
    assert parse_tolerance(" int64=0,1") == ("int64", Tolerance(0, 1))


def test_float_tolerance_edges() -> None:
    tol = TOLS["float32"]
    inside = 1.0 + (tol.atol + tol.rtol) * 0.5
    outside = 1.0 + (tol.atol + tol.rtol) * 1.5
    assert compare(tensor([1.0, 2.0]), tensor([inside, 2.0]), "result", TOLS) is None
    found = compare(tensor([1.0, 1.0]), tensor([1.0, outside]), "result", TOLS)
    assert found is not None and found.what == "values" and "flat index 1" in found.detail
    assert found.max_abs == pytest.approx(outside - 1.0)
    loose = {**TOLS, "float32": Tolerance(1e-2, 0.0)}
    assert compare(tensor([1.0]), tensor([outside]), "result", loose) is None


def test_nan_inf_ints_and_kinds() -> None:
    assert compare(tensor(["nan", 1.0]), tensor(["nan", 1.0]), "r", TOLS) is None
    assert compare(tensor(["nan"]), tensor([0.0]), "r", TOLS).what == "values"
    assert compare(tensor(["inf"]), tensor(["inf"]), "r", TOLS) is None
    assert compare(tensor([3], "int32"), tensor([3], "int32"), "r", TOLS) is None
    assert compare(tensor([3], "int32"), tensor([4], "int32"), "r", TOLS) is not None
    assert compare(tensor([3], "int32"), tensor([3], "int64"), "r", TOLS).what == "dtype"
    assert compare(tensor([1.0, 2.0], shape=[2]), tensor([1.0, 2.0], shape=[1, 2]), "r",
                   TOLS).what == "shape"
    scalar = {"type": "scalar", "value": 1.0}
    found = compare(tensor([1.0]), scalar, "args[0]", TOLS)
    assert found is not None and found.what == "type" and found.path == "args[0]"
    pair = {"type": "tuple", "length": 2, "items": [tensor([1.0]), tensor([2.0])]}
    other = {"type": "tuple", "length": 2, "items": [tensor([1.0]), tensor([2.5])]}
    assert compare(pair, other, "result", TOLS).path == "result[1]"


def test_truncated_tensors_compare_their_stats_or_checksums() -> None:
    stats = {"sum": 10.0, "min": 0.0, "max": 4.0}
    a = tensor([0.0, 1.0], numel=5, truncated=True, stats=stats, checksum="aa")
    same_head = tensor([0.0, 1.0], numel=5, truncated=True,
                       stats={**stats, "sum": 11.0}, checksum="bb")
    assert compare(a, same_head, "r", TOLS).what == "values"
    assert compare(a, dict(a, checksum="bb"), "r", TOLS) is None  # floats: stats, not bytes
    ints = tensor([0, 1], "int64", numel=5, truncated=True, stats=stats, checksum="aa")
    assert compare(ints, dict(ints, checksum="bb"), "r", TOLS) is not None


CPP = """#include <torch/extension.h>

namespace mine {

at::Tensor helper(const at::Tensor& x) { return x; }

at::Tensor twice(const at::Tensor& x,
                 double k) {
  auto y = x.contiguous();
  return helper(y);
}

}  // namespace mine

TORCH_LIBRARY(mine, m) {
  m.def("twice(Tensor x, float k) -> Tensor");
  m.def("thrice(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(mine, CPU, m) {
  m.impl("twice", TORCH_FN(mine::twice));
}
"""


def test_op_implementation_definition_changed_line_and_schema(tmp_path: Path) -> None:
    write(tmp_path, "torch/csrc/ops.cc", CPP)
    changed = CPP.replace("return helper(y);", "return helper(y) * 2;")
    write(tmp_path, "paddle/csrc/ops.cc", changed)
    lines = changed.splitlines()
    site = source.op_implementation("mine.twice", tmp_path / "paddle", tmp_path / "torch")
    assert site is not None and site.file == "csrc/ops.cc" and site.layer == "cpp-compat"
    assert site.line == lines.index("  return helper(y) * 2;") + 1
    same = source.op_implementation("mine.twice", tmp_path / "torch", tmp_path / "torch")
    assert same is not None and "same source" in same.how
    assert same.line == CPP.splitlines().index("at::Tensor twice(const at::Tensor& x,") + 1
    schema = source.op_implementation("mine.thrice", tmp_path / "paddle", None)
    assert schema is not None and schema.how == "schema (m.def)"
    assert schema.line == next(i for i, t in enumerate(lines, 1) if '"thrice(' in t)
    assert source.op_implementation("mine.none", tmp_path / "paddle", None) is None


def test_observe_is_a_lazy_no_op_outside_compare() -> None:
    code = ("import sys, pq\nassert 'pq.compare' not in sys.modules\n"
            "v = object()\nassert pq.observe('x', v) is v\nprint('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_infinities_of_another_sign_or_beside_a_number_differ() -> None:
    assert compare(tensor(["-inf", "inf"]), tensor(["-inf", "inf"]), "r", TOLS) is None
    found = compare(tensor(["-inf", "inf"]), tensor(["inf", 1e38]), "r", TOLS)
    assert found is not None and "flat index 0" in found.detail
    assert compare(tensor([1.0, "inf"]), tensor([1.0, 1e38]), "r", TOLS) is not None
    assert compare({"type": "scalar", "value": "inf"}, {"type": "scalar", "value": "-inf"},
                   "r", TOLS) is not None
    assert compare({"type": "scalar", "value": "nan"}, {"type": "scalar", "value": 1.0},
                   "r", TOLS) is not None


def test_what_the_child_writes_for_complex_dtype_bytes_and_sets() -> None:
    """Values summarised by the child itself (numpy, and stand-ins of paddle's dtype class):
    complex parts, paddle's DataType, bytes and sets are compared, not waved through."""
    import numpy as np

    from pq.compare.child import Tracer

    t = Tracer(os.devnull, max_values=8)
    one, five = t.summary(np.array([1 + 1j], np.complex64)), t.summary(
        np.array([1 + 5j], np.complex64))
    assert compare(one, one, "r", TOLS) is None
    found = compare(one, five, "r", TOLS)
    assert found is not None and found.what == "values"
    assert compare(t.summary(1 + 1j), t.summary(1 + 5j), "r", TOLS) is not None
    assert compare(t.summary(1 + 1j), t.summary(1 + 1j), "r", TOLS) is None
    data_type = type("DataType", (), {"__str__": lambda self: "paddle.float32"})
    assert t.summary(data_type()) == t.summary(np.dtype("float32")) == {
        "type": "scalar", "value": "float32"}
    assert compare(t.summary(b"ab"), t.summary(b"ac"), "r", TOLS) is not None
    assert compare(t.summary(b"ab"), t.summary(b"ab"), "r", TOLS) is None
    assert compare(t.summary({1, 2}), t.summary({1, 3}), "r", TOLS) is not None
    assert compare(t.summary({2, 1}), t.summary(frozenset({1, 2})), "r", TOLS) is None
    long = np.arange(20, dtype=np.complex64)
    shifted = long + np.complex64(1j) * (np.arange(20) == 19)  # beyond the first 8 values
    assert compare(t.summary(long), t.summary(shifted), "r", TOLS) is not None


def test_a_complex_number_against_any_other_value_is_a_type_divergence() -> None:
    one = {"type": "scalar", "value": 1.0, "imag": 0.0}
    for other in (None, "abc", True, 1.0, "inf"):
        found = compare(one, {"type": "scalar", "value": other}, "result", TOLS)
        assert found is not None and found.what == "type", other
        assert "complex(1.0, 0.0)" in found.detail


def test_a_paddle_bfloat16_tensor_is_summarised_by_its_values_not_its_bits() -> None:
    """Paddle's `numpy()` of a bfloat16 tensor gives its raw bits (1.0 as the uint16 16256),
    where torch's refuses and pq went through float32: every bfloat16 value diverged."""
    paddle = pytest.importorskip("paddle")
    torch = pytest.importorskip("torch")
    from pq.compare.child import Tracer

    t = Tracer(os.devnull, max_values=8)
    on_torch = t.array(torch.ones(4, dtype=torch.bfloat16))  # (as the child sees a tensor)
    on_paddle = t.array(paddle.ones([4], dtype="bfloat16"))
    assert on_paddle["values"] == on_torch["values"] == [1.0, 1.0, 1.0, 1.0], on_paddle
    assert compare(on_torch, on_paddle, "r", TOLS) is None
