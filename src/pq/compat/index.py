"""The measured compat surface of one Paddle installation and its answers: `SurfaceIndex`
implements `coverage.Surface` (header, cxx, method, python) over the scanned headers,
the exported symbols and the proxy's attributes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pq.compat.coverage import Coverage, Status
from pq.compat.exports import NAMESPACES
from pq.compat.scan import Decl, ScopeInfo

INCLUDE_ROOTS = ("", "torch/csrc/api/include/")  # the two -I roots Paddle's build adds
_COMPAT_DIRS = ("ATen", "c10", "torch", "caffe2")
_MACRO = re.compile(r"[A-Z][A-Z0-9_]*")
_OPERATOR = re.compile(r"(?<![\w])operator(?![\w])")
_MACRO_PREFIXES = ("TORCH_", "AT_", "C10_", "CAFFE2_")
_DYNAMIC = ("torch.ops",)  # attributes made by __getattr__: dir() cannot list them


def _plain(name: str) -> str:
    """`::at::Tensor::const_data_ptr<float>()` -> "at::Tensor::const_data_ptr";
    operator names keep their symbols (`c10::operator<<`)."""
    s = name.strip()
    if s.endswith("()") and not s.endswith("operator()"):
        s = s[:-2]
    m = _OPERATOR.search(s)
    if m:
        head, tail = s[:m.start()], s[m.start():].replace(" ", "")
        return _plain(head).rstrip(":") + "::" + tail if head else tail
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and not ch.isspace():
            out.append(ch)
    return "".join(out).lstrip(":").replace("typename", "")


@dataclass(frozen=True)
class SurfaceIndex:
    """Everything measured about one installation; `rebuilt` and `build_seconds` say how
    this copy was obtained (None seconds: read from the cache)."""

    paddle_version: str
    key: str
    root: str
    interpreter: str  # the Python that imports this Paddle
    headers: tuple[str, ...]
    decls: dict[str, tuple[Decl, ...]]
    scopes: dict[str, ScopeInfo]
    macros: dict[str, Decl]
    exports: dict[str, tuple[str, ...]]
    libraries: dict[str, int]
    export_libs: dict[str, tuple[str, ...]]  # qualified name -> the libraries defining it
    proxy: dict[str, Any]
    cache_path: str | None = None
    build_seconds: float | None = None
    rebuilt: bool = False
    _header_set: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_header_set", frozenset(self.headers))

    # -- counts for the summary --------------------------------------------------------
    def counts(self) -> dict[str, int]:
        modules = self.proxy.get("modules", {})
        return {"headers": len(self.headers),
                "declarations": sum(len(v) for v in self.decls.values()),
                "macros": len(self.macros),
                "exports": sum(len(v) for v in self.exports.values()),
                "python_modules": sum(1 for m in modules.values() if "attrs" in m),
                "python_attrs": sum(len(m.get("attrs", ())) for m in modules.values())}

    # -- headers -----------------------------------------------------------------------
    def header(self, include: str) -> Coverage:
        inc = include.strip().strip("<>\"").removeprefix("./")
        if inc.split("/")[0] not in _COMPAT_DIRS:
            return Coverage(include, "header", Status.UNKNOWN,
                            detail="not a compat-layer header (outside ATen/, c10/, torch/)")
        for root in INCLUDE_ROOTS:
            if root + inc in self._header_set:
                return Coverage(include, "header", Status.COVERED, header=root + inc,
                                detail=f"in Paddle {self.paddle_version}'s compat tree")
        return Coverage(include, "header", Status.HEADER_MISSING,
                        detail=f"Paddle {self.paddle_version}'s compat tree has no {inc} "
                               f"({len(self.headers)} headers): the #include fails")

    # -- C++ names ---------------------------------------------------------------------
    def cxx(self, qualified: str) -> Coverage:
        q = _plain(qualified)
        if "::" not in q:
            return self._macro(qualified, q)
        if q.split("::")[0] not in NAMESPACES:
            return Coverage(qualified, "cxx", Status.UNKNOWN,
                            detail="outside at::, c10::, torch::")
        return self._coverage(qualified, "cxx", q)

    def method(self, name: str) -> Coverage:
        call = name.strip().split("(")[0].split("<")[0]  # `x.const_data_ptr<float>()`
        short = _plain(call.rsplit(".", 1)[-1]).split("::")[-1]
        return self._coverage(name, "method", "at::Tensor::" + short)

    def _macro(self, asked: str, name: str) -> Coverage:
        d = self.macros.get(name)
        if d is not None:
            return Coverage(asked, "macro", Status.COVERED, d.header, d.text,
                            detail=f"defined in {d.header}:{d.line}")
        if _MACRO.fullmatch(name) and name.startswith(_MACRO_PREFIXES):
            return Coverage(asked, "macro", Status.NOT_DECLARED,
                            detail=f"no compat header of Paddle {self.paddle_version} "
                                   f"defines {name}")
        return Coverage(asked, "macro" if _MACRO.fullmatch(name) else "cxx", Status.UNKNOWN,
                        detail="not a qualified at::/c10::/torch:: name")

    def _exists(self, q: str) -> bool:
        return q in self.decls or q in self.scopes

    def _resolve(self, target: str, context: str) -> str | None:
        """A name as written inside `context`, looked up outward as C++ does."""
        t = _plain(target)
        if not t:
            return None
        ctx = context
        while True:
            cand = f"{ctx}::{t}" if ctx else t
            if self._exists(cand):
                return cand
            if not ctx:
                return None
            ctx = ctx.rpartition("::")[0]

    def lookup(self, q: str, depth: int = 0) -> tuple[list[Decl], list[Decl]]:
        """(aliases followed, the declarations finally reached) for a qualified name."""
        if depth > 16:
            return [], []
        ds = self.decls.get(q, ())
        real = [d for d in ds if d.kind != "alias"]
        if real:  # a forward declaration `class X;` last
            return [], sorted(real, key=lambda d: d.kind == "class" and d.inline is False)
        for d in ds:
            target = self._resolve(d.target or "", d.context)
            if target is None or target == q:
                return [], [d]  # an alias of something outside the compat tree
            hops, final = self.lookup(target, depth + 1)
            if final:
                return [d] + hops, final
        if "::" not in q:
            return [], []
        prefix, _, last = q.rpartition("::")
        for scope in self._scopes_of(prefix, depth):
            info = self.scopes.get(scope, ScopeInfo("namespace"))
            if scope != prefix and self._exists(f"{scope}::{last}"):
                return self.lookup(f"{scope}::{last}", depth + 1)
            inherited = [self._resolve(u, scope) for u in info.usings]
            inherited += [self._resolve(b, info.context) for b in info.bases]
            for other in inherited:
                if other is not None and other != scope:
                    hops, final = self.lookup(f"{other}::{last}", depth + 1)
                    if final:
                        return hops, final
        return [], []

    def _scopes_of(self, prefix: str, depth: int) -> list[str]:
        if prefix in self.scopes:
            return [prefix]
        _, final = self.lookup(prefix, depth + 1)
        return [d.qname for d in final if d.qname in self.scopes]

    def _coverage(self, asked: str, kind: str, q: str) -> Coverage:
        hops, final = self.lookup(q)
        if not final:
            return self._absent(asked, kind, q)
        first = hops[0] if hops else final[0]
        via = f"alias of {final[0].qname}; " if hops else ""
        funcs = [d for d in final if d.kind == "function"]
        # a body outside the class (`T X::f() const {...}`) defines what X declares
        bodyless = [] if any(d.out_of_class for d in funcs) else \
            [d for d in funcs if not d.inline]
        if not funcs:
            what = final[0].kind if final[0].kind != "alias" else \
                f"alias of {final[0].target}"
            return Coverage(asked, kind, Status.COVERED, first.header, first.text,
                            detail=f"{via}{what} declared in {final[0].header}:{final[0].line}")
        if not bodyless:
            return Coverage(asked, kind, Status.COVERED, first.header, first.text,
                            detail=f"{via}defined in the header (inline), no export needed")
        exported = [d.qname for d in bodyless if d.qname in self.exports]
        owner = bodyless[0].qname
        if exported:
            n = len(self.exports[exported[0]])
            libs = ", ".join(self.export_libs.get(exported[0], ()))
            return Coverage(asked, kind, Status.COVERED, first.header, first.text, True,
                            detail=f"{via}declared in the header; {libs} exports {n} "
                                   f"symbol(s) of {owner}")
        d = bodyless[0]
        inline = len(funcs) - len(bodyless)
        more = f"; {inline} overload(s) with a body are fine" if inline else ""
        return Coverage(asked, kind, Status.NOT_EXPORTED, d.header if not hops else first.header,
                        d.text, False,
                        detail=f"{via}{owner} is declared without a body "
                               f"({d.header}:{d.line}) and no Paddle library exports it: "
                               f"compiles and links, will fail at load{more}")

    def _absent(self, asked: str, kind: str, q: str) -> Coverage:
        prefix, _, last = q.rpartition("::")
        scopes = self._scopes_of(prefix, 0) if prefix else []
        if scopes:
            owner = self.decls.get(scopes[0], ())
            where = f" ({owner[0].header})" if owner and owner[0].kind != "namespace" else ""
            return Coverage(asked, kind, Status.NOT_DECLARED,
                            owner[0].header if where else None,
                            detail=f"{scopes[0]}{where} has no {last} in Paddle "
                                   f"{self.paddle_version}'s compat headers")
        return Coverage(asked, kind, Status.NOT_DECLARED,
                        detail=f"no compat header of Paddle {self.paddle_version} declares "
                               f"{prefix}")

    # -- Python proxy ------------------------------------------------------------------
    def python(self, dotted: str) -> Coverage:
        modules: dict[str, dict[str, Any]] = self.proxy.get("modules", {})
        if "error" in self.proxy:
            return Coverage(dotted, "python", Status.UNKNOWN,
                            detail=f"the proxy probe failed: {self.proxy['error']}")
        parts = dotted.strip().split(".")
        for k in range(len(parts), 0, -1):
            mod = ".".join(parts[:k])
            info = modules.get(mod)
            if info is None:
                continue
            if "attrs" not in info:
                return Coverage(dotted, "python", Status.MISSING,
                                detail=f"import {mod} fails under the proxy: {info['error']}")
            rest = parts[k:]
            if not rest:
                how = (f"the proxy provides {mod} (an attribute; import {mod} fails)"
                       if "error" in info else f"module {mod} imports under the proxy")
                return Coverage(dotted, "python", Status.COVERED, detail=how)
            if mod in _DYNAMIC:
                return Coverage(dotted, "python", Status.UNKNOWN,
                                detail=f"{mod} makes its attributes on demand (op "
                                       "registration); the probe cannot list them")
            if rest[0] not in info.get("attrs", ()):
                return Coverage(dotted, "python", Status.MISSING,
                                detail=f"the proxy's {mod} has no attribute {rest[0]}")
            if len(rest) == 1:
                return Coverage(dotted, "python", Status.COVERED,
                                detail=f"{mod}.{rest[0]} is provided by the proxy")
            return Coverage(dotted, "python", Status.UNKNOWN,
                            detail=f"{mod}.{rest[0]} exists; its attributes were not walked")
        return Coverage(dotted, "python", Status.UNKNOWN,
                        detail="outside the walked torch modules")
