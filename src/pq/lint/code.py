"""Lint rules about the code a patch changes: public API changes (LN005), mass translation
(LN007), commented-out code (LN009), debug output (LN010), deprecated compat spellings
(LN012) and lazy `import torch` under scoped compat (LN013). Pure text matching."""

from __future__ import annotations

import re

from pq.audit import signals
from pq.audit.rules import Finding, finding
from pq.lint.context import LintPatch
from pq.model.diff import FileDiff, Line

_TOP_DEF = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z]\w*)")
_SCHEMA = re.compile(r"""\.def\(\s*"([^"]*\([^"]*)\"""")
_MARKER = re.compile(r"\b(?:TODO|FIXME|XXX|HACK|NOTE)\b")
_PY_CODE = re.compile(r"^\s*#\s*(?:import\s+\w|from\s+[\w.]+\s+import\s|(?:async\s+)?def\s+\w+\(|"
                      r"class\s+\w+.*:\s*$|print\(|[\w.\[\]'\"]+\s*=\s*[^=\s]|[\w.]+\(.*\)\s*$)")
_C_CODE = re.compile(r"^\s*//\s*(?:#\s*include\b|.*;\s*$|.*[{}]\s*$)")
_PY_PRINT = re.compile(r"(?<![\w.])(?<!def )print\(")  # a call of the builtin, anywhere
_C_PRINT = re.compile(r"(?<![\w:])(?:printf\(|std::cout\b|std::cerr\b|fprintf\(\s*stderr)")
_DEPRECATED = re.compile(r"\bpaddle\.compat\.(enable|disable)_torch_proxy\b")
_LAZY = re.compile(r"^(\s+)(?:import\s+torch\b|from\s+torch(?:\.[\w.]+)?\s+import\s)")
_NOT_PACKAGE = ("tests/", "test/", "examples/", "example/", "docs/", "scripts/", "benchmarks/")


def check(lp: LintPatch) -> list[Finding]:
    return (api_changes(lp) + mass_translation(lp) + commented_out(lp) + debug_prints(lp)
            + deprecated(lp) + lazy_imports(lp))


def _where(f: FileDiff, ln: Line) -> str:
    return f"{f.path}:{ln.number}"


def _some(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def is_package_module(path: str) -> bool:
    """A Python module of the package: not a test, example, script or build file."""
    name = path.rsplit("/", 1)[-1]
    folders = path.split("/")[:-1]
    return (signals.is_python(path) and not path.startswith(_NOT_PACKAGE)
            and not name.startswith(("test_", "conftest")) and not name.endswith("_test.py")
            and name != "setup.py" and not {"tests", "test"} & set(folders))


def api_changes(lp: LintPatch) -> list[Finding]:
    out: list[str] = []
    first = ""
    for f in lp.files:
        if f.deleted or f.status == "renamed":
            continue  # LN004 says it
        if is_package_module(f.path):
            defined = {m.group(1) for ln in f.added() if (m := _TOP_DEF.match(ln.text))}
            for ln in f.removed():
                m = _TOP_DEF.match(ln.text)
                if m and m.group(1) not in defined:
                    out.append(f"`{m.group(1)}` removed or renamed ({_where(f, ln)})")
                    first = first or _where(f, ln)
        elif f.path.endswith(signals.C_SUFFIXES):
            added = {m.group(1) for ln in f.added() if (m := _SCHEMA.search(ln.text))}
            for ln in f.removed():
                m = _SCHEMA.search(ln.text)
                if m and m.group(1) not in added:
                    out.append(f"schema \"{m.group(1)}\" changed ({_where(f, ln)})")
                    first = first or _where(f, ln)
    if not out:
        return []
    return [finding("LN005", lp.name, f"{lp.name} changes the public API: {_some(out)}", first)]


def mass_translation(lp: LintPatch) -> list[Finding]:
    where = []
    for f in lp.files:
        for h in f.hunks:
            removed = {ln.text for ln in h.lines if ln.removed}
            where += [_where(f, ln) for ln in h.lines if ln.added and "paddle" in ln.text
                      and ln.text.replace("paddle", "torch") in removed]
    if not where:
        return []
    return [finding("LN007", lp.name, f"{lp.name} translates `torch` into `paddle` on "
                    f"{len(where)} line(s): {_some(where)}", where[0])]


def commented_out(lp: LintPatch) -> list[Finding]:
    where = []
    for f in lp.files:
        if signals.is_python(f.path):
            pattern = _PY_CODE
        elif f.path.endswith(signals.C_SUFFIXES):
            pattern = _C_CODE
        else:
            continue
        where += [_where(f, ln) for ln in f.added()
                  if pattern.match(ln.text) and not _MARKER.search(ln.text)]
    if not where:
        return []
    return [finding("LN009", lp.name, f"{lp.name} adds commented-out code: {_some(where)}",
                    where[0])]


def debug_prints(lp: LintPatch) -> list[Finding]:
    """`print(` in a package module's code (`if x: print(y)` too), `std::cout` and kin in
    C/C++ code: not in a string or a comment."""
    from pq.drift.extract import without_literals

    where = []
    for f in lp.files:
        if is_package_module(f.path):
            where += [_where(f, ln) for ln in f.added() if _PY_PRINT.search(
                without_literals("python", ln.text).split("#", 1)[0])]
        elif f.path.endswith(signals.C_SUFFIXES):
            where += [_where(f, ln) for ln in f.added() if _C_PRINT.search(
                without_literals("cxx", ln.text).split("//", 1)[0])]
    if not where:
        return []
    return [finding("LN010", lp.name, f"{lp.name} adds debug output: {_some(where)}",
                    where[0])]


def deprecated(lp: LintPatch) -> list[Finding]:
    hits = [(f, ln, m) for f in lp.files for ln in f.added()
            if (m := _DEPRECATED.search(ln.text.split("#", 1)[0]))]
    if not hits:
        return []
    f, ln, m = hits[0]
    now = "paddle.enable_compat" if m.group(1) == "enable" else "paddle.disable_compat"
    return [finding("LN012", lp.name, f"{lp.name} uses the older spelling "
                    f"`{m.group(0)}` at {_some([_where(g, x) for g, x, _m in hits])}; "
                    f"current Paddle spells it `{now}`", _where(f, ln))]


def _module(path: str) -> set[str]:
    """The names under which `path` may sit in a compat scope: its top folder, its module."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    return {parts[0], parts[-1]}


def _in_function(post: tuple[Line, ...], i: int, indent: int) -> bool:
    for ln in reversed(post[:i]):
        text = ln.text
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        own = len(text) - len(text.lstrip())
        if own < indent:
            if re.match(r"\s*(?:async\s+)?def\s", text):
                return True
            if own == 0:
                return False
            indent = own
    return False


def lazy_imports(lp: LintPatch) -> list[Finding]:
    scoped = lp.settings.scoped
    where = []
    for f in lp.files:
        if not signals.is_python(f.path) or not (_module(f.path) & scoped):
            continue
        for h in f.hunks:
            post = h.post()
            for i, ln in enumerate(post):
                m = _LAZY.match(ln.text) if ln.added else None
                if m and _in_function(post, i, len(m.group(1).expandtabs())):
                    where.append(_where(f, ln))
    if not where:
        return []
    return [finding("LN013", lp.name, f"{lp.name} imports torch inside a function of a "
                    f"package under scoped compat: {_some(where)}", where[0])]
