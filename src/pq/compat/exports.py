"""What Paddle's shared libraries really export in the at::/c10::/torch:: namespaces: the
dynamic symbols (`nm -D --defined-only`), demangled by `c++filt`, keyed by qualified name.

A name the compat headers declare without a body and no library exports compiles and
links, then dies at load (`symbol lookup error`): this table is how pq sees that first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pq.errors import ConfigError
from pq.git import process

NAMESPACES = ("at", "c10", "torch", "caffe2")
# a mangled nested name whose outermost scope is one of NAMESPACES (`_ZNK2at10TensorBase...`)
_MANGLED = re.compile(rb"^_ZN[KVRO]*(?:2at|3c10|5torch|6caffe2)")
_ABI = re.compile(r"\[abi:[^\]]*\]")
_OPERATORS = ("operator<<=", "operator>>=", "operator<<", "operator>>", "operator<=>",
              "operator<=", "operator>=", "operator->*", "operator->", "operator<",
              "operator>", "operator()")


def libraries(paddle_root: Path) -> list[Path]:
    """The shared libraries of a Paddle package: paddle/libs/*.so* and paddle/base/*.so."""
    found: list[Path] = []
    for folder in ("libs", "base"):
        d = paddle_root / folder
        if d.is_dir():
            found.extend(p for p in sorted(d.iterdir())
                         if ".so" in p.name and p.is_file() and not p.is_symlink())
    return found


def read_exports(libs: Sequence[Path], timeout: float = 60.0
                 ) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]]:
    """({qualified name: sorted demangled signatures}, {qualified name: libraries},
    {library file name: symbol count}) for the at::/c10::/torch:: symbols defined."""
    # Imported here: reading a cached surface never needs a thread pool.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        mangled = list(pool.map(lambda p: _mangled(p, timeout), libs))
    table: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for lib, names in zip(libs, mangled):
        if not names:
            continue
        counts[lib.name] = 0
        for sig in _demangle(names, timeout):
            qname = qualified_name(sig)
            if qname and qname.split("::")[0] in NAMESPACES:
                table.setdefault(qname, set()).add(sig)
                where.setdefault(qname, set()).add(lib.name)
                counts[lib.name] += 1
    return ({k: sorted(v) for k, v in sorted(table.items())},
            {k: sorted(v) for k, v in sorted(where.items())}, counts)


def _mangled(lib: Path, timeout: float) -> list[bytes]:
    done = process.output(["nm", "-D", "--defined-only", str(lib)], timeout=timeout)
    if done is None:
        raise ConfigError("cannot run nm: the compat surface reads Paddle's exported "
                          "symbols with it", hint="install binutils")
    if done.code != 0:
        return []  # not an ELF shared object nm can read
    out = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and _MANGLED.match(parts[2]):
            out.append(parts[2])
    return sorted(set(out))


def _demangle(names: Iterable[bytes], timeout: float) -> list[str]:
    data = b"\n".join(names) + b"\n"
    done = process.output(["c++filt"], timeout=timeout, input=data)
    if done is None or done.code != 0:
        raise ConfigError("cannot run c++filt: the compat surface demangles Paddle's "
                          "exported symbols with it", hint="install binutils")
    return [line for line in done.stdout.decode("utf-8", "replace").splitlines() if line]


def qualified_name(signature: str) -> str:
    """`float const* at::TensorBase::const_data_ptr<float, 0>() const` ->
    "at::TensorBase::const_data_ptr": no return type, template arguments or parameters."""
    s = _ABI.sub("", signature).strip()
    marks: dict[str, str] = {}
    for n, op in enumerate(_OPERATORS):
        key = f"operator@{n}@"
        s, found = re.subn(r"(?<!\w)" + re.escape(op), key, s)
        if found:
            marks[key] = op
    s = re.sub(r"\s*(?:const|volatile|&&|&)\s*$", "", s)
    while True:  # trailing cv/ref qualifiers, repeatedly: `() const &`
        t = re.sub(r"\s*(?:const|volatile|&&|&)\s*$", "", s)
        if t == s:
            break
        s = t
    if s.endswith(")"):
        depth = 0
        for k in range(len(s) - 1, -1, -1):
            if s[k] == ")":
                depth += 1
            elif s[k] == "(":
                depth -= 1
                if depth == 0:
                    s = s[:k]
                    break
    out, depth = [], 0
    for ch in s:  # drop template arguments; split off a return type at depth 0
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    words = "".join(out).strip().split(" ")
    name = words[-1]
    if len(words) > 1 and words[-2].endswith("operator"):  # `X::operator bool`
        name = f"{words[-2]} {name}"
    for key, op in marks.items():
        name = name.replace(key, op)
    if "{" in name or "(" in name.replace("operator()", ""):
        return ""
    return name
