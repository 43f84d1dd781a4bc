"""Undefined symbols in freshly built extension modules, found before anything imports them.

On Paddle some compat APIs compile and link but the process dies at load (`symbol lookup
error`, exit 127). `ldd -r` finds those symbols first; this module names each one, demangled,
with the tracked C/C++/CUDA source lines that use it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pq.git import process

SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".cuh", ".h", ".hh", ".hpp",
                   ".hxx", ".inl", ".cuinl", ".tpp")
MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_PLACES = 5
_UNDEFINED_RE = re.compile(r"^undefined symbol: ([^\s,]+)(?:, version \S+)?\s+\((.+)\)\s*$")
_NOT_FOUND_RE = re.compile(r"^\s*(\S+) => not found\s*$")

Stamp = tuple[int, int, int]


@dataclass(frozen=True)
class Undefined:
    library: str  # relative to the worktree
    symbol: str
    demangled: str
    places: tuple[str, ...]  # "path:line" of the sources that use it
    missing_libraries: tuple[str, ...] = ()

    def message(self) -> str:
        text = f"undefined symbol {self.symbol} in {self.library}"
        if self.demangled != self.symbol:
            text += f" ({self.demangled})"
        if self.places:
            text += ", used in " + ", ".join(self.places)
        else:
            text += ", no tracked source names it"
        if self.missing_libraries:
            text += " [not found by ldd: " + ", ".join(self.missing_libraries) + "]"
        return text


# A shared object's name: `x.so`, or a versioned library's (`libx.so.1`, `libx.so.1.2.3`:
# CMake's VERSION/SOVERSION builds make `libx.so` a symbolic link to it).
_SHARED_OBJECT = re.compile(r"\.so(?:\.\d+)*$")


def shared_objects(root: Path) -> dict[str, Stamp]:
    """Every shared object under root (outside .git): regular files named `*.so` or
    `*.so.N...` (a link is its target's; a fifo named so would block its reader), with
    what tells a rebuilt one apart."""
    found: dict[str, Stamp] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if not _SHARED_OBJECT.search(name):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return found


def new_objects(root: Path, before: dict[str, Stamp]) -> list[str]:
    """The `*.so` files that appeared or changed since `before`, sorted."""
    now = shared_objects(root)
    return sorted(rel for rel, stamp in now.items() if before.get(rel) != stamp)


def check(root: Path, libraries: list[str], env: dict[str, str], *,
          provided: set[str], library_dirs: list[str], sources: list[str]) -> list[Undefined]:
    """Undefined symbols of each library (relative to root) that nothing provides.

    `provided`: symbols the interpreter itself exports (the Python C API);
    `library_dirs`: folders added to LD_LIBRARY_PATH so torch's and paddle's libraries
    resolve as they do once the framework is imported.
    """
    if not libraries or shutil.which("ldd", path=env.get("PATH")) is None:
        return []
    ldd_env = dict(env)
    if library_dirs:
        ldd_env["LD_LIBRARY_PATH"] = os.pathsep.join(
            library_dirs + [p for p in [env.get("LD_LIBRARY_PATH", "")] if p])
    raw: list[tuple[str, str, tuple[str, ...]]] = []
    seen_digests: set[str] = set()
    # In-place copies first: `pkg/_C.so` says more than `build/lib.linux-.../pkg/_C.so`.
    for rel in sorted(libraries, key=lambda r: (r.split("/")[0] == "build", r)):
        path = root / rel
        digest = _digest(path)
        if digest in seen_digests:
            continue  # a copy (build/lib.../x.so and pkg/x.so): one report is enough
        seen_digests.add(digest)
        symbols, missing = _ldd_undefined(path, ldd_env)
        for sym in symbols:
            if sym not in provided:
                raw.append((rel, sym, missing))
    if not raw:
        return []
    names = demangle(sorted({sym for _, sym, _ in raw}))
    texts = _read_sources(root, sources)
    return [Undefined(rel, sym, names[sym], tuple(find_uses(texts, sym, names[sym])), missing)
            for rel, sym, missing in raw]


def _ldd_undefined(path: Path, env: dict[str, str]) -> tuple[list[str], tuple[str, ...]]:
    proc = process.output(["ldd", "-r", str(path)], timeout=120, env=env)
    if proc is None or proc.timed_out:
        return [], ()
    text = (proc.stdout + proc.stderr).decode("utf-8", "surrogateescape")  # names as they are
    symbols: list[str] = []
    missing: list[str] = []
    for line in text.splitlines():
        m = _UNDEFINED_RE.match(line.strip())
        if m and os.path.realpath(m.group(2)) == os.path.realpath(path):
            symbols.append(m.group(1))
            continue
        m = _NOT_FOUND_RE.match(line)
        if m:
            missing.append(m.group(1))
    return list(dict.fromkeys(symbols)), tuple(missing)


def exported_symbols(paths: Iterable[str]) -> set[str]:
    """The dynamic symbols these ELF files define (`nm -D --defined-only`)."""
    out: set[str] = set()
    for path in paths:
        proc = process.output(["nm", "-D", "--defined-only", path], timeout=120)
        if proc is None or proc.timed_out:
            continue
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) >= 3:
                out.add(parts[2].split("@", 1)[0])
    return out


def demangle(symbols: list[str]) -> dict[str, str]:
    """symbol -> its C++ name (c++filt), or the symbol itself."""
    names = {s: s for s in symbols}
    mangled = [s for s in symbols if s.startswith("_Z")]
    if not mangled:
        return names
    proc = process.output(["c++filt"], timeout=60, input="\n".join(mangled).encode() + b"\n")
    if proc is None or proc.timed_out:
        return names
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    if proc.code == 0 and len(lines) == len(mangled):
        names.update(zip(mangled, lines))
    return names


def name_parts(demangled: str) -> list[str]:
    """`float const* at::Tensor::const_data_ptr<float, 0>() const` -> [at, Tensor,
    const_data_ptr]; `vtable for a::B` -> [a, B]; a C symbol -> [itself]."""
    text = re.sub(r"^(vtable|typeinfo name|typeinfo|VTT|guard variable|construction vtable)"
                  r" for ", "", demangled)
    out, depth = [], 0
    for ch in text:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    flat = "".join(out)
    flat = flat.split("(", 1)[0].strip()  # parameters and qualifiers
    flat = flat.split()[-1] if flat.split() else flat  # the return type before the name
    flat = flat.lstrip("*&")
    return [p for p in flat.split("::") if p]


def find_uses(texts: dict[str, list[str]], symbol: str, demangled: str) -> list[str]:
    """`path:line` of the source lines that most plausibly use the symbol."""
    parts = name_parts(demangled) or [symbol]
    name = parts[-1]
    if not re.match(r"^[A-Za-z_]\w*$", name):
        return []
    patterns = []
    if len(parts) >= 2:
        patterns.append(re.compile(rf"\b{re.escape(parts[-2])}\s*::\s*{re.escape(name)}\b"))
        patterns.append(re.compile(rf"(?:\.|->)\s*{re.escape(name)}\b"))
    patterns.append(re.compile(rf"\b{re.escape(name)}\b"))
    for pattern in patterns:
        places = [f"{path}:{n}" for path, lines in texts.items()
                  for n, line in enumerate(lines, 1) if pattern.search(line)]
        if places:
            return places[:MAX_PLACES]
    return []


def _read_sources(root: Path, sources: list[str]) -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {}
    for rel in sources:
        if not rel.lower().endswith(SOURCE_SUFFIXES):
            continue
        path = root / rel
        try:
            if path.is_symlink() or path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            texts[rel] = path.read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
    return texts


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return str(path)
    return digest.hexdigest()
