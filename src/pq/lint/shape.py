"""Lint rules about a patch's shape: its layers (LN001 layer-mismatch, LN002 mixed-layers,
LN006 kernel-layer-edit), formatting-only hunks (LN003), upstream files deleted, renamed or
moved (LN004), its size (LN008) and build products it adds (LN011)."""

from __future__ import annotations

import re

from pq.audit.rules import Finding, finding
from pq.lint.context import LintPatch
from pq.model import layers
from pq.model.diff import FileDiff, Hunk

_TOKEN = re.compile(r"\w+|\S")
PRODUCT_SUFFIXES = (".so", ".pyc", ".pyo", ".o", ".dylib", ".pyd")
PRODUCT_TOP = ("build", "dist")


def check(lp: LintPatch) -> list[Finding]:
    return (layer_rules(lp) + formatting_only(lp) + upstream_moves(lp) + kernel_edit(lp)
            + too_large(lp) + build_products(lp))


def _some(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def layer_rules(lp: LintPatch) -> list[Finding]:
    out = []
    name, declared = lp.name, lp.p.entry.layer
    layer, rule = lp.inferred
    if lp.files and declared != layer:
        out.append(finding("LN001", name, f"{name} is declared `{declared}`, but its files "
                           f"say `{layer}` (rule: {rule})",
                           lp.p.locate(("patches", lp.p.index, "layer"))))
    by_layer: dict[str, list[str]] = {}
    for path, lay in lp.layer_of.items():
        if lay != layers.DOCS:
            by_layer.setdefault(lay, []).append(path)
    if len(by_layer) > 1:
        parts = "; ".join(f"{lay}: {_some(paths)}" for lay, paths in sorted(
            by_layer.items(), key=lambda kv: layers.PRIORITY.index(kv[0])))
        out.append(finding("LN002", name, f"{name} mixes {len(by_layer)} layers ({parts})",
                           f"patches/{name}", fix=f"split it: `pq split {name} --by-layer`"))
    return out


# Files whose indentation is syntax: a changed indent changes what the lines mean.
_INDENTED = (".py", ".pyi", ".yml", ".yaml", ".mk")
_INDENTED_NAMES = ("makefile", "gnumakefile")


def _formatting_only(h: Hunk, indented: bool = False) -> bool:
    removed = [ln.text for ln in h.lines if ln.removed]
    added = [ln.text for ln in h.lines if ln.added]
    if not removed and not added:
        return False
    same = _TOKEN.findall("\n".join(removed)) == _TOKEN.findall("\n".join(added))
    if same and indented and _levels([ln.text for ln in h.lines if not ln.added]) != \
            _levels([ln.text for ln in h.lines if not ln.removed]):
        return False  # a statement moved into or out of a block: not layout
    return same and removed != added


def _levels(lines: list[str]) -> list[int]:
    """The indentation of each line that starts a statement (not blank, not inside open
    brackets or after a `\\`: a call's arguments broken over lines are no block) as its
    rank among the widths present (tabs as 8 columns): the same nesting in tabs or in
    spaces gives the same ranks."""
    from pq.drift.extract import without_literals

    widths, depth, goes_on = [], 0, False
    for t in (x.expandtabs(8) for x in lines):
        if t.strip() and not depth and not goes_on:
            widths.append(len(t) - len(t.lstrip()))
        code = without_literals("python", t).split("#", 1)[0]
        depth = max(0, depth + sum(map(code.count, "([{")) - sum(map(code.count, ")]}")))
        goes_on = code.rstrip().endswith("\\")
    ranks = {w: i for i, w in enumerate(sorted(set(widths)))}
    return [ranks[w] for w in widths]


def _is_indented(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(_INDENTED) or name in _INDENTED_NAMES


def formatting_only(lp: LintPatch) -> list[Finding]:
    where = [f"{f.path}:{next(ln.number for ln in h.lines if ln.kind != ' ')}"
             for f in lp.files if not f.binary for h in f.hunks
             if _formatting_only(h, _is_indented(f.path))]
    if not where:
        return []
    return [finding("LN003", lp.name, f"{lp.name} has hunks that change only whitespace or "
                    f"layout: {_some(where)}", where[0])]


def upstream_moves(lp: LintPatch) -> list[Finding]:
    out = []
    for f in lp.files:
        if f.old is None or f.old not in lp.upstream:
            continue
        if f.deleted:
            what = f"deletes upstream file {f.old}"
        elif f.status == "renamed":
            what = f"moves upstream file {f.old} to {f.new}"
        else:
            continue
        out.append(finding("LN004", lp.name, f"{lp.name} {what}", f.old))
    return out


def kernel_edit(lp: LintPatch) -> list[Finding]:
    kernels = [path for path, lay in lp.layer_of.items() if lay == "kernel"]
    if not kernels:
        return []
    return [finding("LN006", lp.name, f"{lp.name} edits kernel-layer code ({_some(kernels)}): "
                    "usually a sign the change belongs in another layer", kernels[0])]


def changed_lines(files: tuple[FileDiff, ...]) -> int:
    return sum(1 for f in files for h in f.hunks for ln in h.lines if ln.kind != " ")


def too_large(lp: LintPatch) -> list[Finding]:
    n, limit = changed_lines(lp.files), lp.settings.max_patch_lines
    if n <= limit:
        return []
    return [finding("LN008", lp.name, f"{lp.name} changes {n} lines, more than "
                    f"max_patch_lines ({limit})", f"patches/{lp.name}")]


def is_build_product(path: str) -> bool:
    parts = path.split("/")
    return (parts[0] in PRODUCT_TOP and len(parts) > 1
            or any(p.endswith(".egg-info") or p == "__pycache__" for p in parts[:-1])
            or parts[-1] == "PKG-INFO" or parts[-1].endswith(PRODUCT_SUFFIXES))


def build_products(lp: LintPatch) -> list[Finding]:
    found = [f.path for f in lp.files if f.created and is_build_product(f.path)]
    if not found:
        return []
    return [finding("LN011", lp.name, f"{lp.name} adds build products: {_some(found)}",
                    found[0])]
