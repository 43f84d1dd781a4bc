"""Aligning the torch trace with the Paddle trace and finding the FIRST divergence.

Observations are aligned by position with (kind, name) as key: a key mismatch is a call
sequence divergence (a missing or extra call); same key: arguments, then the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq.compare import source
from pq.compare.source import Site
from pq.compare.values import Mismatch, Tolerance, compare

SEQUENCE = "call sequence"
ERROR = "error"


@dataclass(frozen=True)
class Trace:
    """One side's run: its header (framework, package file), observations, and how it ended."""

    side: str
    header: dict[str, Any]
    events: tuple[dict[str, Any], ...]
    end: dict[str, Any] | None  # {"kind": "end"} or {"kind": "error", "traceback": ...}

    @property
    def root(self) -> Path | None:
        return source.package_root(self.header.get("package_file"))


def read_trace(side: str, path: Path) -> Trace:
    header: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if not isinstance(rec, dict):
            continue
        kind = rec.get("kind")
        if kind == "start":
            header = rec
        elif kind in ("end", "error"):
            end = rec
            if kind == "error" and not header:
                header = {k: v for k, v in rec.items() if k != "traceback"}
        else:
            events.append(rec)
    return Trace(side, header, tuple(events), end)


@dataclass(frozen=True)
class Divergence:
    index: int  # position in the aligned traces
    what: str  # call sequence, shape, dtype, values, type, length, keys, error
    observation: str  # `op tinyop.scale_add`, `call tinyop.scale_add`, `observe out`
    where: str  # result, args[2], kwargs.alpha, or "" for a sequence divergence
    message: str
    site: Site | None  # the Paddle side's call site (the torch side's if Paddle lacks it)
    torch_site: Site | None
    implementation: Site | None = None  # the op's C++ / the wrapper's body, when located
    torch_value: Any = None
    paddle_value: Any = None
    max_abs: float | None = None
    max_rel: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index, "what": self.what, "observation": self.observation,
            "where": self.where, "message": self.message,
            "site": self.site.to_json() if self.site else None,
            "torch_site": self.torch_site.to_json() if self.torch_site else None,
            "implementation": self.implementation.to_json() if self.implementation else None,
            "max_abs_error": _finite(self.max_abs), "max_rel_error": _finite(self.max_rel),
            "torch": self.torch_value, "paddle": self.paddle_value,
        }


def _finite(v: float | None) -> float | str | None:
    if v is None or v == v and abs(v) != float("inf"):
        return v
    return str(v)


@dataclass(frozen=True)
class Context:
    """What locating needs: the trees each side imported from, and the caller's folder."""

    torch_roots: list[Path] = field(default_factory=list)
    paddle_roots: list[Path] = field(default_factory=list)
    torch_root: Path | None = None  # the tree the torch side imported the package from
    paddle_root: Path | None = None


def label(ev: Mapping[str, Any]) -> str:
    return f"{ev.get('kind')} {ev.get('name')}"


def _site(ev: Mapping[str, Any] | None, roots: list[Path]) -> Site | None:
    if not ev or not isinstance(ev.get("site"), dict):
        return None
    s = ev["site"]
    return source.site(str(s.get("file", "?")), int(s.get("line", 0)), roots,
                       str(s.get("function", "")))


def first_divergence(torch: Trace, paddle: Trace, tols: Mapping[str, Tolerance],
                     ctx: Context) -> Divergence | None:
    a, b = torch.events, paddle.events
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None or y is None or label(x) != label(y):
            return _sequence(i, a, b, ctx)
        found = _call(x, y, tols)
        if found is not None:
            return _divergence(i, x, y, found, ctx)
    return None


def _sequence(i: int, a: tuple[dict[str, Any], ...], b: tuple[dict[str, Any], ...],
              ctx: Context) -> Divergence:
    x = a[i] if i < len(a) else None
    y = b[i] if i < len(b) else None
    if y is None or (x is not None and i + 1 < len(a) and label(a[i + 1]) == label(y)):
        assert x is not None
        msg = f"{label(x)} is missing on the paddle side (observation {i + 1})"
        obs = label(x)
    elif x is None or (i + 1 < len(b) and label(b[i + 1]) == label(x)):
        msg = f"{label(y)} is an extra call on the paddle side (observation {i + 1})"
        obs = label(y)
    else:
        msg = f"torch records {label(x)} where paddle records {label(y)} (observation {i + 1})"
        obs = label(x)
    tsite, psite = _site(x, ctx.torch_roots), _site(y, ctx.paddle_roots)
    # A missing call is shown where torch made it; an extra or different one where paddle did.
    shown = tsite if "missing" in msg else psite or tsite
    return Divergence(i, SEQUENCE, obs, "", msg, shown, tsite,
                      torch_value=label(x) if x else None, paddle_value=label(y) if y else None)


def _call(x: Mapping[str, Any], y: Mapping[str, Any],
          tols: Mapping[str, Tolerance]) -> Mismatch | None:
    ex, ey = x.get("error"), y.get("error")
    if (ex is None) != (ey is None):
        return Mismatch(ERROR, "result", "raised on the " + ("torch" if ex else "paddle")
                        + f" side only: {ex or ey}",  # and what the other side returned
                        x.get("result") if ex is None else ex,
                        y.get("result") if ey is None else ey)
    xa, ya = x.get("args", []), y.get("args", [])
    if len(xa) != len(ya):
        return Mismatch("length", "args", f"{len(xa)} vs {len(ya)} arguments", xa, ya)
    for j, (u, v) in enumerate(zip(xa, ya, strict=True)):
        found = compare(u, v, f"args[{j}]", tols)
        if found:
            return found
    xk, yk = x.get("kwargs", {}), y.get("kwargs", {})
    if sorted(xk) != sorted(yk):
        return Mismatch("keys", "kwargs", f"keyword arguments {sorted(xk)} vs {sorted(yk)}",
                        xk, yk)
    for key in sorted(xk):
        found = compare(xk[key], yk[key], f"kwargs.{key}", tols)
        if found:
            return found
    if ex is not None:
        return None  # both raised
    return compare(x.get("result"), y.get("result"), "result", tols)


def _divergence(i: int, x: Mapping[str, Any], y: Mapping[str, Any], m: Mismatch,
                ctx: Context) -> Divergence:
    impl = None
    inputs = m.path.startswith(("args", "kwargs"))
    if not inputs and y.get("kind") == "op":
        impl = source.op_implementation(str(y.get("name")), ctx.paddle_root, ctx.torch_root)
    elif not inputs and y.get("kind") == "call" and isinstance(y.get("definition"), dict):
        d = y["definition"]
        impl = source.python_definition(str(d.get("file")), int(d.get("line", 0)),
                                        str(y.get("name", "")).rsplit(".", 1)[-1],
                                        ctx.paddle_roots, ctx.torch_root)
    where = "the arguments already differ when the call is made" if inputs else \
        "the result differs"
    msg = f"{label(y)}: {m.path}: {m.detail} ({where})"
    return Divergence(i, m.what, label(y), m.path, msg, _site(y, ctx.paddle_roots),
                      _site(x, ctx.torch_roots), impl, m.torch, m.paddle, m.max_abs, m.max_rel)
