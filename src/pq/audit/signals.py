"""Code patterns in a patch's added lines that the workaround policy cares about.

Each detector takes one file's diff and returns `Signal`s (file, line, the code); the
rules decide what a signal means for a patch. Pure text matching: nothing is imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pq.model import layers
from pq.model.diff import FileDiff, Line

PY_SUFFIXES = (".py", ".pyi")
C_SUFFIXES = layers.CPP_SUFFIXES + layers.KERNEL_SUFFIXES
HASH_COMMENT_SUFFIXES = PY_SUFFIXES + (".sh", ".cmake", ".txt", ".toml", ".cfg", ".ini",
                                       ".yaml", ".yml", ".bzl", ".mk")


@dataclass(frozen=True)
class Signal:
    path: str
    line: int
    code: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def show(self, width: int = 70) -> str:
        code = " ".join(self.code.split())
        return code if len(code) <= width else code[: width - 3] + "..."


def is_python(path: str) -> bool:
    return path.endswith(PY_SUFFIXES)


def _signals(f: FileDiff, pattern: re.Pattern[str]) -> list[Signal]:
    return [Signal(f.path, ln.number, ln.text) for ln in f.added() if pattern.search(ln.text)]


# -- monkey patches: assignments to attributes of torch/paddle modules --------------

_ALIAS = re.compile(r"^\s*import\s+(?:torch|paddle)\s+as\s+([A-Za-z_]\w*)\s*(?:#.*)?$")


@cache
def _monkey(names: frozenset[str]) -> re.Pattern[str]:
    """Assignments to attributes of the modules `names` name (torch, paddle, aliases)."""
    module = "(?:" + "|".join(sorted(map(re.escape, names))) + ")"
    return re.compile(
        rf"^\s*(?:{module}(?:\.\w+)+\s*(?:[-+*/|&]?=)(?!=)"
        rf"|setattr\(\s*{module}\b"
        r"|sys\.modules\[\s*['\"](?:torch|paddle)\b[^\]]*\]\s*=(?!=))")


def monkey_patches(f: FileDiff) -> list[Signal]:
    """Assignments to attributes of torch or paddle, also through an alias the diff shows
    (`import torch as th`: `th.Tensor.x = ...`)."""
    if not is_python(f.path):
        return []
    aliases = {m.group(1) for h in f.hunks for ln in h.post()
               if (m := _ALIAS.match(ln.text))}
    return _signals(f, _monkey(frozenset({"torch", "paddle"} | aliases)))


# -- broad exception handlers that swallow everything -------------------------------

# `except:`, `except Exception:`, and a tuple naming Exception or BaseException among others.
_CAUGHT = r"(?:[\w.]+\s*,\s*)*(?:Exception|BaseException)(?:\s*,\s*[\w.]+)*\s*,?"
_EXCEPT = re.compile(r"^(\s*)except\s*(?:(?:\(\s*" + _CAUGHT + r"\s*\)|Exception|BaseException)"
                     r"(?:\s+as\s+\w+)?\s*)?:\s*(.*)$")
_SWALLOW = {"pass", "...", "continue"}
_CATCH_ALL = re.compile(r"\bcatch\s*\(\s*\.\.\.\s*\)")
_CXX_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def _statement(text: str) -> str:
    return text.split("#", 1)[0].strip()


def broad_excepts(f: FileDiff) -> list[Signal]:
    if f.path.endswith(C_SUFFIXES):
        return _empty_catch_alls(f)
    if not is_python(f.path):
        return []
    out = []
    for hunk in (h.post() for h in f.hunks):
        for i, ln in enumerate(hunk):
            m = _EXCEPT.match(ln.text) if ln.added else None
            if not m:
                continue
            inline = _statement(m.group(2))
            if inline:
                body = [inline]
            else:
                body = _block(hunk[i + 1:], len(m.group(1).expandtabs()))
            if body and all(stmt in _SWALLOW for stmt in body):
                out.append(Signal(f.path, ln.number, ln.text))
    return out


def _empty_catch_alls(f: FileDiff) -> list[Signal]:
    """Added `catch (...)` whose block holds nothing but comments, on one line or on the
    lines after it."""
    out = []
    for hunk in (h.post() for h in f.hunks):
        for i, ln in enumerate(hunk):
            m = _CATCH_ALL.search(ln.text) if ln.added else None
            if not m:
                continue
            after = "\n".join([ln.text[m.end():], *(x.text for x in hunk[i + 1:i + 12])])
            rest = _CXX_COMMENTS.sub(" ", after).lstrip()
            if rest.startswith("{") and rest[1:].lstrip().startswith("}"):
                out.append(Signal(f.path, ln.number, ln.text))
    return out


def _block(rest: tuple[Line, ...], indent: int) -> list[str]:
    """The statements of the block that follows a line indented by `indent`."""
    body = []
    for ln in rest:
        stmt = _statement(ln.text)
        if not stmt:
            continue
        if len(ln.text[:len(ln.text) - len(ln.text.lstrip())].expandtabs()) <= indent:
            break  # (indents compared as Python does, tabs to multiples of 8)
        body.append(stmt)
    return body


# -- global compat: enable_compat() without a scope ----------------------------------

# `paddle.enable_compat(`, or through an alias (`import paddle as pd`: `pd.enable_compat(`).
_COMPAT_CALL = re.compile(r"(?<![\w.])(?:(?!self\.|cls\.)[A-Za-z_]\w*\.)?(?:compat\.)?"
                          r"(?:enable_compat|enable_torch_proxy)\s*\(")


_COMPAT_NAME = re.compile(r"enable_(?:compat|torch_proxy)").search


def global_compat_calls(f: FileDiff) -> list[Signal]:
    """`paddle.enable_compat()` (or the older `enable_torch_proxy`) with no scope."""
    if not is_python(f.path):
        return []
    from pq.drift.extract import python_code

    out = []
    for hunk in (h.post() for h in f.hunks):
        if not any(_COMPAT_NAME(x.text) for x in hunk):
            continue  # no line names it (reading the code only blanks and joins lines)
        code = python_code([x.text for x in hunk])  # a call named in a string is no call
        for i, ln in enumerate(hunk):
            if not ln.added:
                continue
            m = _COMPAT_CALL.search(code[i])
            if not m or "#" in code[i][: m.start()] or ln.text.lstrip().startswith("def "):
                continue
            call = _balanced(ln.text[m.start():], [x.text for x in hunk[i + 1:i + 20]])
            if not _has_scope(call):
                out.append(Signal(f.path, ln.number, ln.text))
    return out


def _balanced(first: str, following: list[str]) -> str:
    text, depth = "", 0
    for chunk in [first] + following:
        for j, c in enumerate(chunk):
            depth += {"(": 1, ")": -1}.get(c, 0)
            if depth == 0 and c == ")":
                return text + chunk[: j + 1]
        text += chunk + "\n"
    return text


def _has_scope(call: str) -> bool:
    import ast  # only a patch that calls enable_compat pays for it

    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        return bool(re.search(r"\bscope\s*=\s*(?!None\b)", call))
    if not isinstance(node, ast.Call):
        return True
    for kw in node.keywords:
        if kw.arg is None:
            return True  # **kwargs: cannot tell, give it the benefit of the doubt
        if kw.arg == "scope":
            return not (isinstance(kw.value, ast.Constant) and kw.value.value is None)
    if node.args:
        first = node.args[0]
        return not (isinstance(first, ast.Constant) and first.value is None)
    return False


def is_build_entry(path: str) -> bool:
    return layers.classify_path(path) == "build"


# -- what an undeclared workaround looks like -----------------------------------------

_TODO_CASE = re.compile(r"\b(?:TODO|FIXME|XXX|HACK)\b|\b(?:[Ww]ork[- ]?[Aa]round|WORK[- ]?AROUND)")
_GUARD = re.compile(r"\b(?:hasattr|getattr)\(\s*(?:torch|paddle)\b")
_IMPORT = re.compile(r"^\s*(?:import\s+\w|from\s+[\w.]+\s+import\s)")


def _comment(path: str, text: str) -> str:
    """The comment on one line of source: what follows its `//`, `/*` or `#` outside a
    string (a URL or an issue number in a string is no comment)."""
    from pq.drift.extract import without_literals

    if path.endswith(C_SUFFIXES):
        code = without_literals("cxx", text)
        opened = [i for i in (code.find("//"), code.find("/*")) if i >= 0]
        if opened:
            return text[min(opened) + 2:]
        return text.strip()[1:] if text.strip().startswith("*") else ""
    name = path.rsplit("/", 1)[-1]
    if path.endswith(HASH_COMMENT_SUFFIXES) or name in ("CMakeLists.txt", "Makefile"):
        hashed = without_literals("python", text).find("#")
        return text[hashed + 1:] if hashed >= 0 else ""
    return ""


def _in_docstrings(f: FileDiff) -> dict[int, str]:
    """{new line number: its text as code} for the lines of a Python file's hunks that show
    a triple quote: what a docstring holds is left out, as a string's (other lines, and
    other files, are as they are)."""
    if not is_python(f.path):
        return {}
    out: dict[int, str] = {}
    for h in f.hunks:
        post = h.post()
        if any('"""' in ln.text or "'''" in ln.text for ln in post):
            from pq.drift.extract import spans_blanked

            out.update(zip((ln.number for ln in post),
                           spans_blanked("python", [ln.text for ln in post]), strict=True))
    return out


def todo_comments(f: FileDiff) -> list[Signal]:
    code = _in_docstrings(f)
    return [Signal(f.path, ln.number, ln.text) for ln in f.added()
            if _TODO_CASE.search(_comment(f.path, code.get(ln.number, ln.text)))]


def _feature_test(text: str, following: tuple[Line, ...]) -> bool:
    """Whether the `hasattr(`/`getattr(` on a line asks whether torch or paddle has a
    name: any `hasattr`, a `getattr` with a default; a two-argument `getattr` is a lookup
    that fails without the name (`getattr(torch.ops.mylib, name)`), no test."""
    m = _GUARD.search(text)
    if m is None or m.group(0).startswith("hasattr"):
        return True
    import ast  # only a patch that calls getattr on torch or paddle pays for it

    call = _balanced(text[m.start():], [x.text for x in following])
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        return True
    return not isinstance(node, ast.Call) or len(node.args) + len(node.keywords) != 2


def guards(f: FileDiff) -> list[Signal]:
    """`hasattr(torch, ...)`-style feature tests and `try: import` guards."""
    if not is_python(f.path):
        return []
    out = []
    code = _in_docstrings(f)
    for hunk in (h.post() for h in f.hunks):
        for i, ln in enumerate(hunk):
            if not ln.added:
                continue
            stmt = _statement(code.get(ln.number, ln.text))
            if _GUARD.search(stmt) and _feature_test(ln.text, hunk[i + 1:i + 20]):
                out.append(Signal(f.path, ln.number, ln.text))
            elif stmt == "try:":
                nxt = next((x for x in hunk[i + 1:] if _statement(x.text)), None)
                if nxt is not None and _IMPORT.match(nxt.text):
                    out.append(Signal(f.path, nxt.number, "try: " + _statement(nxt.text)))
            elif stmt.startswith("try:") and _IMPORT.match(stmt[4:]):  # `try: import x`
                out.append(Signal(f.path, ln.number, stmt))
    return out


# -- escalation ------------------------------------------------------------------------

_PRIVATE_NAME = r"(?:_[A-Za-z]\w*|fluid\b|base\.(?:core|framework|libpaddle)\b|framework\.core\b)"
# `paddle._C_ops`, and the same imported by name: `from paddle import _C_ops`, `from
# paddle.base import core`, `from paddle.framework import core` (names listed after it too).
_PADDLE_PRIVATE = re.compile(
    r"\bpaddle\." + _PRIVATE_NAME
    + r"|\bfrom\s+paddle\s+import\s+(?:[\w\s,(]*[\s,(])?(?:_[A-Za-z]\w*|fluid\b)"
    + r"|\bfrom\s+paddle\.base\s+import\s+(?:[\w\s,(]*[\s,(])?(?:core|framework|libpaddle)\b"
    + r"|\bfrom\s+paddle\.framework\s+import\s+(?:[\w\s,(]*[\s,(])?core\b")


def paddle_private(f: FileDiff) -> list[Signal]:
    if not is_python(f.path):
        return []
    return [Signal(f.path, ln.number, ln.text) for ln in f.added()
            if (m := _PADDLE_PRIVATE.search(ln.text)) and "#" not in ln.text[:m.start()]]


def is_kernel_file(f: FileDiff, base_file: Callable[[str], bytes] | None = None) -> bool:
    """Whether the patch's edit of `f` is kernel code, hunk by hunk as `pq classify` reads
    it; a C++ file's framework API use is read from the whole file (`base_file` gives the
    upstream base's bytes) when the hunks alone show none."""
    post = "\n".join(ln.text for h in f.hunks for ln in h.post()).encode("utf-8", "replace")
    if layers.file_layer(layers.classify_file(f, post)) != "kernel":
        return False
    if base_file is None or f.path.endswith(layers.KERNEL_SUFFIXES):
        return True
    whole = base_file(f.old or f.path) + b"\n" + post
    return layers.file_layer(layers.classify_file(f, whole)) == "kernel"


def spread_key(text: str) -> str | None:
    """The normalised form of an added line worth tracking across files, or None."""
    norm = " ".join(text.split())
    if len(norm.replace(" ", "")) < 12 or _IMPORT.match(norm):
        return None
    if not any(c.isalnum() for c in norm):
        return None
    return norm
