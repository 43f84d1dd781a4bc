"""The child side of `pq compare`: run one script under real PyTorch or Paddle compat, traced.

Run by file path (`python .../child.py SCRIPT ARGS...`), so it works in an interpreter
without pq; it imports only the standard library, numpy and the side's torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import runpy
import sys
import traceback
import types
from typing import Any

HERE = os.path.abspath(__file__)
if os.path.splitext(HERE)[1] in (".pyc", ".pyo"):
    HERE = HERE[:-1]
MAX_DEPTH = 4  # nested lists/dicts summarised this deep


class Tracer:
    """Every observation of one run, written as JSON lines to one file."""

    def __init__(self, path: str, max_values: int) -> None:
        self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115 (open for the run)
        self.max_values = max_values
        self.seq = 0
        self.tensor: tuple[type, ...] = ()

    def write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, sort_keys=True, allow_nan=True) + "\n")
        self.out.flush()

    def event(self, kind: str, name: str, site: dict[str, Any], **data: Any) -> None:
        self.write({"kind": kind, "name": name, "seq": self.seq, "site": site, **data})
        self.seq += 1

    def summary(self, value: Any, depth: int = 0) -> dict[str, Any]:
        if self.tensor and isinstance(value, self.tensor):
            return self.array(value)
        if type(value).__module__ == "numpy" and hasattr(value, "dtype"):
            return self.array(value)
        if value is None or isinstance(value, (bool, int, float, str)):
            if isinstance(value, float):
                return {"type": "scalar", "value": float_text(value)}
            return {"type": "scalar", "value": value}
        if isinstance(value, complex):
            return {"type": "scalar", "value": float_text(value.real),
                    "imag": float_text(value.imag)}
        if isinstance(value, (bytes, bytearray)):
            return {"type": "bytes", "length": len(value),
                    "sha256": hashlib.sha256(bytes(value)).hexdigest()[:16]}
        if isinstance(value, (set, frozenset)) and depth < MAX_DEPTH:
            items = sorted(value, key=repr)
            return {"type": "set", "items": [self.summary(v, depth + 1) for v in items[:64]],
                    "length": len(value)}
        if isinstance(value, (list, tuple)) and depth < MAX_DEPTH:
            return {"type": type(value).__name__,
                    "items": [self.summary(v, depth + 1) for v in value[:64]],
                    "length": len(value)}
        if isinstance(value, dict) and depth < MAX_DEPTH:
            return {"type": "dict", "items": {str(k): self.summary(v, depth + 1)
                                              for k, v in list(value.items())[:64]}}
        kind = type(value).__name__.lower()  # torch.dtype; paddle's DataType, VarType
        if "dtype" in kind or kind in ("datatype", "vartype", "device"):
            return {"type": "scalar", "value": normal_dtype(value)}
        return {"type": "object", "class": type(value).__module__ + "." + type(value).__name__}

    def array(self, value: Any) -> dict[str, Any]:
        import numpy as np

        data = to_numpy(value)
        flat = np.ascontiguousarray(data).reshape(-1)
        out: dict[str, Any] = {
            "type": "tensor", "shape": [int(n) for n in data.shape],
            "dtype": normal_dtype(getattr(value, "dtype", data.dtype)),
            "device": normal_device(value), "numel": int(flat.size),
            "checksum": hashlib.sha256(flat.tobytes()).hexdigest()[:16],
        }
        shown = flat[: self.max_values]
        if shown.dtype.kind == "c":  # the real parts, and the imaginary parts beside them
            out["values"] = [float_text(float(v)) for v in shown.real.astype(np.float64)]
            out["imag"] = [float_text(float(v)) for v in shown.imag.astype(np.float64)]
        elif shown.dtype.kind == "f":
            out["values"] = [float_text(float(v)) for v in shown.astype(np.float64)]
        elif shown.dtype.kind == "b":
            out["values"] = [bool(v) for v in shown]
        else:
            out["values"] = [int(v) for v in shown]
        out["truncated"] = bool(flat.size > self.max_values)
        if flat.size and flat.dtype.kind in "fiubc":
            parts = [("", flat.real), ("imag_", flat.imag)] if flat.dtype.kind == "c" else [
                ("", flat)]
            out["stats"] = {}
            for prefix, part in parts:
                wide = part.astype(np.float64)
                out["stats"].update({prefix + "sum": float_text(float(wide.sum())),
                                     prefix + "min": float_text(float(wide.min())),
                                     prefix + "max": float_text(float(wide.max()))})
        return out


def float_text(v: float) -> float | str:
    """JSON has no NaN or infinities: those travel as strings."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def to_numpy(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray) or type(value).__module__ == "numpy":
        return np.asarray(value)
    v = value
    for step in ("detach", "cpu"):
        if hasattr(v, step):
            try:
                v = getattr(v, step)()
            except Exception:
                pass
    # bfloat16 and the float8 kinds, which numpy lacks, through float32: torch's numpy()
    # refuses them, and Paddle's gives their raw bits (bfloat16 1.0 as the uint16 16256).
    kind = str(getattr(v, "dtype", ""))
    if "bfloat16" in kind or "float8" in kind:
        v = v.float() if hasattr(v, "float") else v.astype("float32")
    try:
        return np.asarray(v.numpy())
    except Exception:  # another kind numpy lacks: through float32
        return np.asarray(v.float().numpy()) if hasattr(v, "float") else np.asarray(v)


def normal_dtype(dtype: Any) -> str:
    """torch.float32, paddle.float32, numpy float32 -> "float32"."""
    text = str(dtype)
    for prefix in ("torch.", "paddle.", "VarType.", "DataType."):
        text = text.replace(prefix, "")
    return {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "fp32": "float32", "fp64": "float64", "int32": "int32",
            "bool_": "bool"}.get(text.lower(), text.lower())


def normal_device(value: Any) -> str:
    text = str(getattr(value, "device", None) or getattr(value, "place", None) or "cpu")
    text = text.lower().replace("place(", "").rstrip(")")
    return "cpu" if text.startswith("cpu") else text.replace("gpu", "cuda")


def call_site() -> dict[str, Any]:
    """The first frame outside this module: who made the call being recorded."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == HERE:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return {"file": "?", "line": 0, "function": "?"}
    return {"file": os.path.abspath(frame.f_code.co_filename), "line": frame.f_lineno,
            "function": frame.f_code.co_name}


def recorded(tracer: Tracer, kind: str, name: str, fn: Any,
             definition: dict[str, Any] | None = None) -> Any:
    """`fn`, recording each call: its arguments (as they are when the call is made), its
    result (or exception), its call site."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        site = call_site()
        record = {"args": [tracer.summary(a) for a in args],
                  "kwargs": {k: tracer.summary(v) for k, v in kwargs.items()},
                  "definition": definition}
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            tracer.event(kind, name, site, error=f"{type(exc).__name__}: {exc}", **record)
            raise
        tracer.event(kind, name, site, result=tracer.summary(result), **record)
        return result

    return wrapper


class RecordedOp:
    """An op of `torch.ops.<ns>`, recorded when called; its overloads (`.default`) too."""

    def __init__(self, tracer: Tracer, name: str, real: Any) -> None:
        self._call = recorded(tracer, "op", name, real)
        self._tracer, self._name, self._real = tracer, name, real

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._real, attr)
        if attr.startswith("_") or not callable(value):
            return value
        return recorded(self._tracer, "op", self._name, value)


class Namespace(types.ModuleType):
    """Stands in for `torch.ops.<ns>`: each op fetched from it comes back recorded."""

    def __init__(self, real: Any, ns: str, tracer: Tracer) -> None:
        super().__init__(f"torch.ops.{ns}")
        self._real, self._ns, self._tracer = real, ns, tracer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            return getattr(self._real, name)
        op = RecordedOp(self._tracer, f"{self._ns}.{name}", getattr(self._real, name))
        setattr(self, name, op)
        return op


def observer(tracer: Tracer) -> Any:
    def observe(name: str, value: Any) -> Any:
        tracer.event("observe", str(name), call_site(), result=tracer.summary(value))
        return value

    return observe


def install_observe(tracer: Tracer) -> None:
    """`import pq; pq.observe(name, value)` works in the script, pq installed or not."""
    import importlib

    module = sys.modules.get("pq")
    if module is None:
        try:
            module = importlib.import_module("pq")
        except ImportError:
            module = types.ModuleType("pq", "pq.observe for scripts run by `pq compare`")
            sys.modules["pq"] = module
    setattr(module, "observe", observer(tracer))  # noqa: B010 (a module attribute)


def public_functions(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return [n for n in names if isinstance(getattr(module, n, None), types.FunctionType)
            and getattr(module, n).__module__.startswith(module.__name__)]


def wrap_package(tracer: Tracer, package: str, ns: str, torch: Any) -> dict[str, Any]:
    import importlib

    module = importlib.import_module(package)
    for name in public_functions(module):
        fn = getattr(module, name)
        code = fn.__code__
        definition = {"file": os.path.abspath(code.co_filename), "line": code.co_firstlineno}
        setattr(module, name, recorded(tracer, "call", f"{package}.{name}", fn, definition))
    real = getattr(getattr(torch, "ops", None), ns, None)
    if real is not None:  # a package without custom ops has no namespace (stand-ins)
        setattr(torch.ops, ns, Namespace(real, ns, tracer))
    return {"package_file": os.path.abspath(getattr(module, "__file__", "") or "")}


def start(side: str, seed: int) -> Any:
    """The side's torch, seeded; on the paddle side the compat proxy is on first."""
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    if side == "paddle":
        import paddle

        enable = getattr(paddle, "enable_compat", None)
        if enable is None:  # before Paddle 3.3 the proxy was spelled differently
            enable = getattr(paddle.compat, "enable_torch_proxy")  # noqa: B009
        enable()
        paddle.seed(seed)
    import torch

    torch.manual_seed(seed)
    return torch


def script_error(exc: BaseException) -> str:
    """The traceback as the script's author reads it: without this bootstrap's frames."""
    te = traceback.TracebackException.from_exception(exc)
    skip = {HERE, os.path.abspath(runpy.__file__)}
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if os.path.abspath(f.filename) not in skip
         and f.filename != "<frozen runpy>"])
    return "".join(te.format())


def main(argv: list[str]) -> int:
    side = os.environ.get("PQ_COMPARE_SIDE", "torch")
    tracer = Tracer(os.environ["PQ_COMPARE_TRACE"],
                    int(os.environ.get("PQ_COMPARE_MAX_VALUES", "4096")))
    script = os.path.abspath(argv[0])
    # As `python SCRIPT` would: the script's folder first, not this one; the side's own
    # import path (PQ_COMPARE_PATH) before everything.
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(HERE):
        sys.path.pop(0)
    extra = [p for p in os.environ.get("PQ_COMPARE_PATH", "").split(os.pathsep) if p]
    sys.path[:0] = [os.path.abspath(p) for p in extra] + [os.path.dirname(script)]
    header: dict[str, Any] = {"kind": "start", "side": side, "script": script}
    try:
        torch = start(side, int(os.environ.get("PQ_COMPARE_SEED", "0")))
        header["framework"] = str(getattr(torch, "__version__", "?"))
        tracer.tensor = (torch.Tensor,)
        install_observe(tracer)
        package = os.environ.get("PQ_COMPARE_PACKAGE")
        if package:
            header.update(wrap_package(tracer, package,
                                       os.environ.get("PQ_COMPARE_NS") or package, torch))
    except BaseException:
        tracer.write({**header, "kind": "error", "stage": "setup",
                      "traceback": traceback.format_exc()})
        return 3
    tracer.write(header)
    sys.argv = [script, *argv[1:]]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            tracer.write({"kind": "error", "stage": "script", "traceback": script_error(exc)})
            return 3
    except BaseException as exc:
        tracer.write({"kind": "error", "stage": "script", "traceback": script_error(exc)})
        return 3
    tracer.write({"kind": "end"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
