"""Where a divergence lives in the source: call sites as file:line with their layer, and
the implementation behind a call (a custom op's C++ function, a wrapper's Python body),
narrowed to its first line that differs between the torch tree and the Paddle tree.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pq.model.layers import CPP_SUFFIXES, KERNEL_SUFFIXES, decide

MAX_SOURCES = 2000  # C/C++ files searched for an op's registration
_SKIP_DIRS = {"build", ".git", "__pycache__", "dist", ".eggs", "node_modules"}


@dataclass(frozen=True)
class Site:
    file: str  # relative to the tree it was found in (or as recorded when outside it)
    line: int
    layer: str
    function: str = ""
    how: str = ""  # for an implementation: how the line was found

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "layer": self.layer,
                "function": self.function, "how": self.how}

    def text(self) -> str:
        return f"{self.file}:{self.line} ({self.layer})"


def relative(path: str, roots: list[Path]) -> tuple[str, Path | None]:
    """`path` relative to the first root holding it (and that root)."""
    p = Path(path)
    for root in roots:
        try:
            return p.resolve().relative_to(root.resolve()).as_posix(), root
        except (ValueError, OSError):
            continue
    return path, None


def layer_of(rel: str, absolute: Path | None) -> str:
    content = b""
    if absolute is not None and rel.lower().endswith(CPP_SUFFIXES + KERNEL_SUFFIXES):
        try:
            content = absolute.read_bytes()
        except OSError:
            content = b""
    layer = decide(rel, content).layer
    return "python-glue" if layer == "docs" else layer


def site(path: str, line: int, roots: list[Path], function: str = "", how: str = "") -> Site:
    rel, root = relative(path, roots)
    return Site(rel, line, layer_of(rel, root / rel if root else Path(path)), function, how)


def package_root(package_file: str | None) -> Path | None:
    """The tree a package was imported from: the folder holding `pkg/` (or `pkg.py`)."""
    if not package_file:
        return None
    p = Path(package_file)
    return p.parent.parent if p.name == "__init__.py" else p.parent


# -- spans: a function's lines ---------------------------------------------------------------


def brace_span(lines: list[str], start: int) -> int:
    """The index of the line closing the brace block opened at or after `start`."""
    depth, opened = 0, False
    for i in range(start, len(lines)):
        code = re.sub(r'"(?:\\.|[^"\\])*"|//.*$', "", lines[i])
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return i
    return len(lines) - 1


def indent_span(lines: list[str], start: int) -> int:
    """The last line of the Python block (def) starting at `start`."""
    base = len(lines[start]) - len(lines[start].lstrip())
    end = start
    for i in range(start + 1, len(lines)):
        text = lines[i]
        if text.strip() and len(text) - len(text.lstrip()) <= base:
            break
        if text.strip():
            end = i
    return end


def first_difference(mine: list[str], start: int, end: int, theirs: list[str] | None,
                     their_start: int | None, span: Callable[[list[str], int], int]
                     ) -> int | None:
    """The first line (0-based, in `mine`) of mine[start:end+1] that differs from the same
    block in `theirs`; None when the blocks are equal or there is nothing to compare."""
    if theirs is None or their_start is None:
        return None
    their_end = span(theirs, their_start)
    a, b = theirs[their_start:their_end + 1], mine[start:end + 1]
    for tag, _i1, _i2, j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False
                                                            ).get_opcodes():
        if tag != "equal":
            return start + min(j1, len(b) - 1)
    return None


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def python_definition(file: str, line: int, name: str, roots: list[Path],
                      torch_root: Path | None) -> Site:
    """A Python function's body: its first line that differs from the torch tree's copy,
    else its `def` line."""
    rel, root = relative(file, roots)
    mine = _read_lines(Path(file))
    if mine is None or not 0 < line <= len(mine):
        return site(file, line, roots, name, "definition")
    start = line - 1
    end = indent_span(mine, start)
    theirs = _read_lines(torch_root / rel) if torch_root is not None and root else None
    their_start = _find_def(theirs, rf"^\s*def\s+{re.escape(name)}\s*\(") if theirs else None
    diff = first_difference(mine, start, end, theirs, their_start, indent_span)
    if diff is not None:
        return site(file, diff + 1, roots, name, "first line that differs from the torch tree")
    return site(file, line, roots, name, "definition (same source in both trees)"
                if theirs is not None else "definition")


def _find_def(lines: list[str] | None, pattern: str) -> int | None:
    if not lines:
        return None
    rx = re.compile(pattern)
    for i, text in enumerate(lines):
        if rx.search(text) and not text.rstrip().endswith(";"):
            return i
    return None


def _sources(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.lower().endswith(CPP_SUFFIXES + KERNEL_SUFFIXES):
                found.append(Path(folder) / name)
                if len(found) >= MAX_SOURCES:
                    return found
    return found


def op_implementation(op: str, paddle_root: Path | None,
                      torch_root: Path | None) -> Site | None:
    """The C++ behind `torch.ops.<ns>.<name>`: the function `m.impl("name", &fn)` binds
    (its first line that differs from the torch tree, else its definition line), else the
    schema line `m.def("name(...`."""
    if paddle_root is None or "." not in op:
        return None
    name = op.split(".", 1)[1]
    impl_rx = re.compile(rf'\.impl\(\s*"(?:\w+::)?{re.escape(name)}"\s*,\s*'
                         r"(?:TORCH_FN\(\s*)?&?\s*([A-Za-z_][\w:]*)")
    def_rx = re.compile(rf'\.def\(\s*"(?:\w+::)?{re.escape(name)}\s*\(')
    sources = _sources(paddle_root)
    schema: Site | None = None
    roots = [paddle_root]
    for path in sources:
        lines = _read_lines(path) or []
        for i, text in enumerate(lines):
            m = impl_rx.search(text)
            if m:
                found = _cpp_function(m.group(1), path, sources, paddle_root, torch_root)
                if found is not None:
                    return found
            if schema is None and def_rx.search(text):
                schema = site(str(path), i + 1, roots, name, "schema (m.def)")
    return schema


def _cpp_function(qualified: str, near: Path, sources: list[Path], paddle_root: Path,
                  torch_root: Path | None) -> Site | None:
    fn = qualified.split("::")[-1]
    pattern = rf"^[A-Za-z_].*[\s&*:]{re.escape(fn)}\s*\([^;]*$"
    for path in [near, *(p for p in sources if p != near)]:
        lines = _read_lines(path) or []
        start = _find_def(lines, pattern)
        if start is None or ".impl(" in lines[start]:
            continue
        end = brace_span(lines, start)
        rel = path.relative_to(paddle_root).as_posix()
        theirs = _read_lines(torch_root / rel) if torch_root is not None else None
        their_start = _find_def(theirs, pattern) if theirs else None
        diff = first_difference(lines, start, end, theirs, their_start, brace_span)
        if diff is not None:
            return site(str(path), diff + 1, [paddle_root], qualified,
                        "first line of the C++ implementation that differs from the torch tree")
        how = ("C++ implementation (same source in both trees)" if theirs is not None
               else "C++ implementation")
        return site(str(path), start + 1, [paddle_root], qualified, how)
    return None
