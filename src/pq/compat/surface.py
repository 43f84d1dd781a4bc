"""Building the compat surface index of an installed Paddle and caching it per version:
headers and declarations (scan), exported symbols (exports), the proxy (probe).

The cache is one JSON file per key (Paddle version + sha256 of the wheel's RECORD) under
`$XDG_CACHE_HOME/pq/compat-surface/`, deterministic; an unreadable or old one is rebuilt.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pq.atomic import write_atomic
from pq.background import Background
from pq.compat import cache_dir
from pq.compat.exports import libraries, read_exports
from pq.compat.index import SurfaceIndex
from pq.compat.lexer import Macro, defines, strip_source
from pq.compat.probe import Installed, find_paddle, probe_proxy
from pq.compat.scan import Decl, Scanned, ScopeInfo, macros_of, scan_header
from pq.errors import ConfigError

SCHEMA = 6  # bump whenever pq measures differently: an older cache is rebuilt
_DECL_FIELDS = ("qname", "kind", "header", "line", "text", "inline", "target", "context",
                "out_of_class")


def load_surface(paddle_python: str | None = None, *, rebuild: bool = False,
                 progress: Callable[[str], None] | None = None,
                 installed: Installed | None = None) -> SurfaceIndex:
    """The surface of the Paddle that `paddle_python` (None: this interpreter) imports,
    `installed` when the caller found it already: from the cache when it holds this
    version and wheel, else built (`progress` is told first) and cached."""
    inst = installed or find_paddle(paddle_python)
    path = cache_dir() / f"{inst.key}.json"
    if not rebuild:
        cached = _read(path, inst)
        if cached is not None:
            return cached
    if progress is not None:
        progress(f"measuring the compat surface of Paddle {inst.version} ...")
    start = time.monotonic()
    data = build_data(inst)
    if "error" in data["proxy"]:  # a failed probe (a timeout on a busy machine) is not kept
        return index_of(data, inst, None, time.monotonic() - start, rebuilt=True)
    write_atomic(path, (json.dumps(data, sort_keys=True, indent=1) + "\n").encode())
    return index_of(data, inst, str(path), time.monotonic() - start, rebuilt=True)


def build_data(inst: Installed) -> dict[str, Any]:
    """Measure one installation (the proxy probe runs while the headers and libraries are
    read); the cache file's content."""
    compat = inst.compat_root
    if not compat.is_dir():
        raise ConfigError(f"{compat}: Paddle {inst.version} ships no compat headers",
                          hint="the torch compat layer needs paddlepaddle >= 3.3")
    with Background(lambda: probe_proxy(inst.python), "pq proxy probe") as proxy:
        headers, scanned, macros = scan_tree(compat)
        exports, where, libs = read_exports(libraries(inst.root))
    proxy_data = proxy.result()
    return {"schema": SCHEMA, "key": inst.key, "paddle_version": inst.version,
            "headers": headers, "decls": _unique([_decl_row(d) for d in scanned.decls]),
            "scopes": {k: [v.kind, list(v.bases), list(v.usings), v.context]
                       for k, v in sorted(scanned.scopes.items())},
            "macros": [_decl_row(d) for d in macros],
            "exports": exports, "export_libs": where, "libraries": libs,
            "proxy": proxy_data}


def scan_tree(compat: Path) -> tuple[list[str], Scanned, list[Decl]]:
    """(header include paths, their declarations, their macros) of a compat tree."""
    headers: list[str] = []
    for folder, dirs, files in os.walk(compat):
        dirs.sort()
        for f in files:
            if f.endswith((".h", ".hpp", ".cuh")):
                headers.append(os.path.relpath(os.path.join(folder, f), compat)
                               .replace(os.sep, "/"))
    headers.sort()
    texts = {rel: (compat / rel).read_text(encoding="utf-8", errors="replace")
             for rel in headers}
    table: dict[str, Macro] = {}
    for text in texts.values():
        table.update(defines(strip_source(text)))
    scanned = Scanned()
    macros: list[Decl] = []
    for rel, text in texts.items():
        scan_header(rel, text, scanned, table)
        macros.extend(macros_of(rel, text))
    return headers, scanned, macros


def _unique(rows: list[list[Any]]) -> list[list[Any]]:
    """Rows in order, each once (a macro expansion repeats identical declarations)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        key = json.dumps(row)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def _decl_row(d: Decl) -> list[Any]:
    return [getattr(d, f) for f in _DECL_FIELDS]


def _read(path: Path, inst: Installed) -> SurfaceIndex | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA or data.get("key") != inst.key:
            return None
        return index_of(data, inst, str(path), None, rebuilt=False)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None


def index_of(data: dict[str, Any], inst: Installed, path: str | None, seconds: float | None,
           rebuilt: bool) -> SurfaceIndex:
    decls: dict[str, list[Decl]] = {}
    for row in data["decls"]:
        d = Decl(**dict(zip(_DECL_FIELDS, row)))
        decls.setdefault(d.qname, []).append(d)
    macros = {}
    for row in data["macros"]:
        d = Decl(**dict(zip(_DECL_FIELDS, row)))
        macros[d.qname] = d  # the last #define wins, as in the preprocessor
    scopes = {k: ScopeInfo(v[0], tuple(v[1]), tuple(v[2]), v[3])
              for k, v in data["scopes"].items()}
    return SurfaceIndex(
        paddle_version=str(data["paddle_version"]), key=inst.key, root=str(inst.root),
        interpreter=inst.python, headers=tuple(data["headers"]),
        decls={k: tuple(v) for k, v in decls.items()}, scopes=scopes, macros=macros,
        exports={k: tuple(v) for k, v in data["exports"].items()},
        libraries=dict(data["libraries"]),
        export_libs={k: tuple(v) for k, v in data["export_libs"].items()},
        proxy=dict(data["proxy"]), cache_path=path,
        build_seconds=seconds, rebuilt=rebuilt)
