"""Comparing two recorded values (tensor summaries, scalars, lists) under per-dtype tolerances.

A value is the summary the child writes (compare/child.py); the torch side is the
reference: |paddle - torch| <= atol + rtol * |torch|, integers and booleans exactly.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pq.errors import ConfigError


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(1.3e-6, 1e-5),
    "float64": Tolerance(1e-7, 1e-7),
    "float16": Tolerance(1e-3, 1e-5),
    "bfloat16": Tolerance(1.6e-2, 1e-5),
    "complex64": Tolerance(1.3e-6, 1e-5),
    "complex128": Tolerance(1e-7, 1e-7),
}
EXACT = Tolerance(0.0, 0.0)
# The dtype names a recorded tensor carries (compare/child.py's normal_dtype): a tolerance
# for any other name would never apply.
DTYPES = (*DEFAULT_TOLERANCES, "complex32", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
          "float8_e5m2fnuz", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "bool")


def parse_tolerance(text: str, where: str = "--tolerance") -> tuple[str, Tolerance]:
    """`float32=1e-5,1e-6` (dtype=rtol,atol) -> ("float32", Tolerance(1e-5, 1e-6))."""
    dtype, eq, rest = text.partition("=")
    parts = rest.split(",")
    try:
        if not eq or not dtype.strip() or len(parts) != 2:
            raise ValueError
        rtol, atol = float(parts[0]), float(parts[1])
        if not (rtol >= 0 and atol >= 0) or math.isinf(rtol) or math.isinf(atol):
            raise ValueError
    except ValueError:
        raise ConfigError(f"{where} {text!r} is not DTYPE=RTOL,ATOL",
                          hint="e.g. float32=1.3e-6,1e-5 (non-negative numbers)") from None
    if (why := unknown_dtype(name := dtype.strip())) is not None:
        raise ConfigError(f"{where} {text!r}: {name!r} is {why}",
                          hint=f"name one of {', '.join(DTYPES)}")
    return name, Tolerance(rtol, atol)


def unknown_dtype(name: str) -> str | None:
    """Why a tolerance for `name` would never apply (no tensor is recorded with that dtype,
    and the name it likely meant); None for a dtype of DTYPES."""
    if name in DTYPES:
        return None
    near = difflib.get_close_matches(name, DTYPES, n=1)
    return "no dtype a tensor is recorded with" + (
        f" (did you mean {near[0]}?)" if near else "")


def tolerances(overrides: Mapping[str, Tolerance] | None = None) -> dict[str, Tolerance]:
    return {**DEFAULT_TOLERANCES, **(overrides or {})}


@dataclass(frozen=True)
class Mismatch:
    """How two values differ: `what` is shape, dtype, values, type, length or keys."""

    what: str
    path: str  # where inside the call: result, args[2], result[0], kwargs.alpha
    detail: str
    torch: Any = None
    paddle: Any = None
    max_abs: float | None = None
    max_rel: float | None = None


def number(v: Any) -> float:
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return float(v)


def compare(a: Any, b: Any, path: str, tols: Mapping[str, Tolerance]) -> Mismatch | None:
    """The first difference between torch's summary `a` and paddle's `b`, or None."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None if a == b else Mismatch("values", path, "values differ", a, b)
    ta, tb = a.get("type"), b.get("type")
    if ta != tb:
        return Mismatch("type", path, f"torch gives {_kind(a)}, paddle gives {_kind(b)}", a, b)
    if ta == "tensor":
        return _tensors(a, b, path, tols)
    if ta in ("list", "tuple", "set"):
        if a.get("length") != b.get("length"):
            return Mismatch("length", path, f"length {a.get('length')} vs {b.get('length')}",
                            a, b)
        for i, (x, y) in enumerate(zip(a.get("items", []), b.get("items", []), strict=False)):
            found = compare(x, y, f"{path}[{i}]", tols)
            if found:
                return found
        return None
    if ta == "dict":
        ia, ib = a.get("items", {}), b.get("items", {})
        if sorted(ia) != sorted(ib):
            return Mismatch("keys", path, f"keys {sorted(ia)} vs {sorted(ib)}", a, b)
        for key in sorted(ia):
            found = compare(ia[key], ib[key], f"{path}.{key}", tols)
            if found:
                return found
        return None
    if ta == "scalar":
        return _scalars(a, b, path, tols)
    return None if a == b else Mismatch("values", path, "objects differ", a, b)


def _kind(s: dict[str, Any]) -> str:
    if s.get("type") == "tensor":
        return f"a tensor {s.get('dtype')}{s.get('shape')}"
    if s.get("type") == "scalar" and "imag" in s:
        return _complex(s)
    if s.get("type") == "scalar":
        return f"{type(s.get('value')).__name__} {s.get('value')!r}"
    return f"a {s.get('class') or s.get('type')}"


def _scalars(a: dict[str, Any], b: dict[str, Any], path: str,
             tols: Mapping[str, Tolerance]) -> Mismatch | None:
    x, y = a.get("value"), b.get("value")
    if ("imag" in a) != ("imag" in b):
        return Mismatch("type", path, f"torch gives {_kind(a)}, paddle gives {_kind(b)}", a, b)
    if "imag" in a:  # complex: both parts, under complex128's tolerance
        found = _close([x, a["imag"]], [y, b["imag"]], tols.get("complex128", EXACT))
        if found is None:
            return None
        return Mismatch("values", path, f"{_complex(a)} vs {_complex(b)}", a, b, found[0],
                        found[1])
    floats = isinstance(x, (float, str)) or isinstance(y, (float, str))
    if floats and _numeric(x) and _numeric(y):
        found = _close([x], [y], tols.get("float64", EXACT))
        if found is None:
            return None
        return Mismatch("values", path, f"{x!r} vs {y!r}", a, b, found[0], found[1])
    if x == y:
        return None
    return Mismatch("values", path, f"{x!r} vs {y!r}", a, b)


def _numeric(v: Any) -> bool:
    """A number as the child writes one: an int or float, or a float JSON cannot hold."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in (
        "nan", "inf", "-inf")


def _complex(s: dict[str, Any]) -> str:
    return f"complex({s.get('value')!r}, {s.get('imag', 0.0)!r})"


def _tensors(a: dict[str, Any], b: dict[str, Any], path: str,
             tols: Mapping[str, Tolerance]) -> Mismatch | None:
    if a.get("shape") != b.get("shape"):
        return Mismatch("shape", path, f"shape {a.get('shape')} vs {b.get('shape')}", a, b)
    if a.get("dtype") != b.get("dtype"):
        return Mismatch("dtype", path, f"dtype {a.get('dtype')} vs {b.get('dtype')}", a, b)
    dtype = str(a.get("dtype"))
    tol = tols.get(dtype, EXACT)
    va, vb = a.get("values", []), b.get("values", [])
    found = _close(va, vb, tol) or _close(a.get("imag", []), b.get("imag", []), tol)
    if found is None and (a.get("truncated") or b.get("truncated")):
        if tol == EXACT:
            if a.get("checksum") != b.get("checksum"):
                return Mismatch("values", path, f"{dtype} values differ beyond the first "
                                f"{len(va)} (checksums differ)", a, b)
            return None
        stats_a, stats_b = a.get("stats", {}), b.get("stats", {})
        keys = sorted(set(stats_a) & set(stats_b))
        found = _close([stats_a[k] for k in keys], [stats_b[k] for k in keys],
                       Tolerance(tol.rtol * 100, tol.atol * max(1, int(a.get("numel", 1)))))
        if found is not None:
            return Mismatch("values", path, f"{dtype} values beyond the first {len(va)} differ "
                            f"(sum/min/max: {found[0]:.3g} apart)", a, b, found[0], found[1])
        return None
    if found is None:
        return None
    abs_err, rel_err, index = found
    how = "exactly" if tol == EXACT else f"rtol {tol.rtol:g}, atol {tol.atol:g}"
    return Mismatch("values", path, f"{dtype} values differ at flat index {index} ({how})",
                    a, b, abs_err, rel_err)


def _close(xs: list[Any], ys: list[Any], tol: Tolerance) -> tuple[float, float, int] | None:
    """(max abs error, max rel error, first bad index) when some pair is not close."""
    first = -1
    max_abs = max_rel = 0.0
    for i, (x, y) in enumerate(zip(xs, ys, strict=False)):
        if isinstance(x, bool) or isinstance(y, bool):
            bad, err, rel = x != y, float(x != y), float(x != y)
        else:
            fx, fy = number(x), number(y)
            if math.isnan(fx) or math.isnan(fy):
                bad = math.isnan(fx) != math.isnan(fy)
                err = rel = math.inf if bad else 0.0
            elif fx == fy:
                bad, err, rel = False, 0.0, 0.0
            elif math.isinf(fx) or math.isinf(fy):  # no tolerance reaches an infinity
                bad, err, rel = True, math.inf, math.inf
            else:
                err = abs(fy - fx)
                rel = err / abs(fx) if fx else math.inf
                bad = not err <= tol.atol + tol.rtol * abs(fx)
        max_abs, max_rel = max(max_abs, err), max(max_rel, rel)
        if bad and first < 0:
            first = i
    if len(xs) != len(ys):
        first = min(len(xs), len(ys)) if first < 0 else first
    return None if first < 0 else (max_abs, max_rel, first)
