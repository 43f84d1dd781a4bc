"""The one rule registry of `pq audit` and `pq lint`, the one finding type, and the audit's
rules.

Every rule has a stable id, a name, a severity and the one-line fix: `WA...` rules are the
audit's (`RULES`), `LN...` rules lint's (`LINT_RULES`, checked in pq.lint); `REGISTRY` and
`BY_ID` hold both, so that one `acknowledged` mechanism in series.yaml serves both. WA010
(global compat) is run by both commands (`Rule.lint`).

Rules are pure: they read a patch's entry, its parsed diff, its workaround metadata and
its patch-file headers, and return findings. No git, no processes, no printing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pq.audit import signals
from pq.model import conditions, dep3
from pq.model.diff import FileDiff
from pq.model.metadata import BUILD_ENTRY, COMPAT_GAP, Workaround, uncovered
from pq.model.series import PatchEntry

ERROR = "error"
WARNING = "warning"
SPREAD_FILES = 3


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: str
    checks: str
    fix: str
    lint: bool = False  # `pq lint` runs it too (the LN rules, and WA010)


RULES = (
    Rule("WA001", "missing-field", ERROR, "a workaround block lacks a required field",
         "add the field to the patch's `workaround` block in series.yaml"),
    Rule("WA002", "compat-gap-without-issue", ERROR,
         "a compat-gap has no Paddle issue (missing, or `not-needed`)",
         "file the Paddle issue (`pq audit workarounds --issue-body PATCH`) and set `issue:`"),
    Rule("WA003", "compat-gap-without-mre", ERROR, "a compat-gap has no reproducer",
         "write mre/<name>/run.sh (+ README.md) and set `mre: mre/<name>`"),
    Rule("WA004", "mre-missing", ERROR,
         "the declared reproducer is not in the queue, or `mre-passes` has none to run",
         "add the reproducer folder with its run.sh, or fix the `mre` path"),
    Rule("WA005", "build-entry-with-issue", ERROR, "a build-entry claims a Paddle issue",
         "set `issue: \"not-needed: <why>\"`, or change `kind` if this is a compat gap"),
    Rule("WA006", "marker-missing", ERROR, "the marker is not in the patch's added lines",
         "add the marker comment next to the workaround, or correct `marker`"),
    Rule("WA007", "outside-covers", ERROR, "the patch changes files its `covers` does not list",
         "add the files to `covers`, or move the unrelated change to its own patch"),
    Rule("WA008", "broad-except", ERROR,
         "the patch adds `except: pass` / `except Exception: pass` (or `catch (...) {}`)",
         "catch the one exception the incompatibility raises, and handle it"),
    Rule("WA009", "unbounded-monkey-patch", ERROR,
         "a monkey patch of torch/paddle without `covers` and `remove_when`",
         "declare `covers` and `remove_when` for it, or replace it with a local shim"),
    Rule("WA010", "global-compat", ERROR,
         "`paddle.enable_compat()` without `scope=` outside a build entry point",
         "use `paddle.enable_compat(scope={\"<package>\"})`; keep global compat in setup.py",
         lint=True),
    Rule("WA011", "pattern-spread", WARNING, "the same added line appears in 3 or more files",
         "stop patching: write the reproducer and fix the gap once (escalation signal)"),
    Rule("WA012", "kernel-edit", WARNING, "a workaround edits kernel files",
         "leave kernels untouched; bridge the gap at the wrapper (escalation signal)"),
    Rule("WA013", "paddle-private-api", WARNING, "the patch uses Paddle-internal private APIs",
         "use the public compat API; if none exists, that is a compat gap to report"),
    Rule("WA014", "undeclared-workaround", ERROR,
         "a patch without a workaround block adds TODO/FIXME/workaround comments, "
         "`hasattr(torch, ...)` / `try: import` guards or monkey patches",
         "add a `workaround` block to the patch's entry in series.yaml"),
    Rule("WA015", "dep3-mismatch", ERROR,
         "the patch file's DEP-3 headers disagree with series.yaml",
         "run `pq export` (series.yaml is the source of truth)"),
    Rule("WA016", "manual-removal-only", WARNING,
         "`remove_when` has only `manual:` conditions, nothing pq can check",
         "add `paddle >= X.Y`, `mre-passes` or `upstream-contains: <file>: <text>`"),
    Rule("WA017", "removable", ERROR, "(--strict) the removal condition is met",
         "drop the patch (or revert the workaround) and rerun the tests"),
)
LINT_RULES = tuple(Rule(*args, lint=True) for args in (
    ("LN001", "layer-mismatch", WARNING,
     "the declared layer differs from the one pq infers from the patch's files",
     "set the patch's `layer` in series.yaml to the inferred one, or move the change"),
    ("LN002", "mixed-layers", WARNING, "the patch changes files of more than one layer",
     "split it: `pq split <patch> --by-layer`"),
    ("LN003", "formatting-only", ERROR,
     "a hunk changes only whitespace or layout (the same tokens)",
     "drop the hunk: keep upstream's formatting"),
    ("LN004", "upstream-file-moved", ERROR, "the patch deletes, renames or moves an upstream file",
     "keep upstream's file where it is; add new code beside it"),
    ("LN005", "public-api-change", ERROR,
     "a public top-level Python def/class of the package is removed or renamed, or an "
     "`m.def(...)` schema string changes",
     "keep upstream's public API and op schemas; add a wrapper instead of changing them"),
    ("LN006", "kernel-layer-edit", WARNING, "the patch edits kernel-layer code",
     "leave kernels as upstream wrote them; bridge at the cpp-compat or python-glue layer"),
    ("LN007", "mass-translation", WARNING, "lines whose only change is `torch` -> `paddle`",
     "keep upstream's `torch` spelling: the compat layer maps it"),
    ("LN008", "patch-too-large", WARNING,
     "the patch changes more lines than `lint: max_patch_lines` (default 300)",
     "split the patch, or raise `lint: {max_patch_lines: N}` in series.yaml"),
    ("LN009", "commented-out-code", WARNING, "added comment lines that are code",
     "delete the dead code (git keeps the history)"),
    ("LN010", "debug-print", WARNING, "added debug output (`print(`, `printf(`, `std::cout`)",
     "remove the debug output"),
    ("LN011", "build-product", ERROR,
     "the patch adds build products (*.egg-info/, PKG-INFO, __pycache__/, *.so, build/)",
     "remove the file from the patch and add it to .gitignore"),
    ("LN012", "deprecated-compat-spelling", WARNING,
     "`paddle.compat.enable_torch_proxy` / `disable_torch_proxy` (older Paddle spelling)",
     "use `paddle.enable_compat(...)` / `paddle.disable_compat()`"),
    ("LN013", "lazy-torch-import", WARNING,
     "`import torch` inside a function of a package under scoped compat",
     "import torch at module level: a lazy import gets the proxy or real torch by import order"),
))
REGISTRY = RULES + LINT_RULES
BY_ID = {r.id: r for r in REGISTRY}
AUDIT_IDS = frozenset(r.id for r in RULES)
STRICT_IDS = frozenset({"WA017"})  # checked with --strict only
LINT_IDS = frozenset(r.id for r in REGISTRY if r.lint)


@dataclass(frozen=True)
class Finding:
    rule_id: str
    rule: str
    patch: str
    severity: str
    message: str
    fix: str
    location: str | None = None

    def to_data(self) -> dict[str, str | None]:
        return {"rule_id": self.rule_id, "rule": self.rule, "patch": self.patch,
                "severity": self.severity, "message": self.message, "fix": self.fix,
                "location": self.location}


Locate = Callable[[tuple[str | int, ...]], str]


@dataclass(frozen=True)
class PatchInput:
    entry: PatchEntry
    index: int
    workaround: Workaround | None
    files: tuple[FileDiff, ...]
    headers: tuple[tuple[str, str], ...]  # as read from the patch file
    mre_problem: str | None  # why the declared reproducer is unusable; None when fine
    locate: Locate  # "series.yaml:LINE:COL" of a YAML path
    # Whether the added line (path, number) is a verbatim copy of an upstream line; asked
    # only about lines that raise a signal (api.UpstreamCopies reads the base on demand).
    is_copied: Callable[[str, int], bool] | None = None
    # The upstream base's bytes of a file (b"" when absent), read on demand: whether a C++
    # file is kernel code is read from the whole file, not only the hunks.
    base_file: Callable[[str], bytes] | None = None

    def own(self, sigs: Sequence[signals.Signal]) -> list[signals.Signal]:
        """The signals on lines the fork wrote: upstream's copied code is not a workaround."""
        if self.is_copied is None:
            return list(sigs)
        return [s for s in sigs if not self.is_copied(s.path, s.line)]


def finding(rule_id: str, patch: str, message: str, location: str | None = None,
            fix: str | None = None) -> Finding:
    rule = BY_ID[rule_id]
    return Finding(rule.id, rule.name, patch, rule.severity, message, fix or rule.fix, location)


def _listing(sigs: Sequence[signals.Signal], limit: int = 3) -> str:
    shown = ", ".join(f"{s.where} `{s.show(50)}`" for s in sigs[:limit])
    return shown + (f" and {len(sigs) - limit} more" if len(sigs) > limit else "")


def check_patch(p: PatchInput) -> list[Finding]:
    """Every per-patch rule for one patch."""
    out: list[Finding] = []
    name, wa = p.entry.name, p.workaround
    monkeys = p.own([s for f in p.files for s in signals.monkey_patches(f)])
    out += _code_rules(p)
    out += _dep3(p)
    if wa is None:
        sigs = monkeys + p.own([s for f in p.files for s in signals.todo_comments(f)
                                + signals.guards(f)])
        if sigs:
            sigs = sorted({(s.path, s.line): s for s in reversed(sigs)}.values(),
                          key=lambda s: (s.path, s.line))
            out.append(finding("WA014", name, f"{name} has no workaround block but adds "
                               f"workaround code: {_listing(sigs)}", sigs[0].where))
        return out
    block = ("patches", p.index, "workaround")
    at = p.locate(block)
    unbounded = bool(monkeys) and (wa.covers is None or wa.remove_when is None)
    for key in wa.missing:
        if key == "issue" and wa.kind == COMPAT_GAP:
            continue  # WA002 says it better
        if key in ("covers", "remove_when") and unbounded:
            continue  # WA009 says it better
        out.append(finding("WA001", name, f"workaround of {name} has no `{key}`", at,
                           fix=f"add `{key}:` to the workaround block ({_FIELD_HELP[key]})"))
    if wa.kind == COMPAT_GAP and (wa.issue is None or wa.issue.url is None):
        why = "no `issue`" if wa.issue is None else "`issue: not-needed`"
        out.append(finding("WA002", name, f"{name} is a compat-gap with {why}: a compat gap "
                           "needs a Paddle issue", p.locate(block + ("issue",))))
    if wa.kind == COMPAT_GAP and wa.mre is None:
        out.append(finding("WA003", name, f"{name} is a compat-gap without a reproducer "
                           "(`mre`)", at))
    elif wa.mre is not None and p.mre_problem:
        out.append(finding("WA004", name, f"{name}: {p.mre_problem}",
                           p.locate(block + ("mre",))))
    elif wa.mre is None and any(c.kind == conditions.MRE_PASSES for c in wa.remove_when or ()):
        out.append(finding("WA004", name, f"{name}: `mre-passes` is a removal condition but "
                           "no reproducer (`mre`) is declared", p.locate(block + ("remove_when",))))
    if wa.kind == BUILD_ENTRY and wa.issue is not None and wa.issue.url:
        out.append(finding("WA005", name, f"{name} is a build-entry (a deliberate choice, not "
                           f"a gap) but claims Paddle issue {wa.issue.url}",
                           p.locate(block + ("issue",))))
    if wa.marker and not any(wa.marker in ln.text for f in p.files for ln in f.added()):
        out.append(finding("WA006", name, f"marker {wa.marker!r} is not in the lines "
                           f"{name} adds", p.locate(block + ("marker",))))
    if wa.covers is not None:
        outside = uncovered([f.path for f in p.files], wa.covers)
        if outside:
            out.append(finding("WA007", name, f"{name} changes {', '.join(outside)}, not in "
                               f"covers ({', '.join(str(c) for c in wa.covers)})",
                               p.locate(block + ("covers",))))
    if unbounded:
        lacking = " and ".join(f"`{k}`" for k in ("covers", "remove_when")
                               if getattr(wa, k) is None)
        out.append(finding("WA009", name, f"{name} monkey-patches ({_listing(monkeys)}) "
                           f"without {lacking}", monkeys[0].where))
    kernels = [f.path for f in p.files if signals.is_kernel_file(f, p.base_file)]
    if kernels:  # (by its files: a `layer: kernel` they do not bear out is lint's LN001)
        out.append(finding("WA012", name, f"workaround {name} edits kernel code "
                           f"({', '.join(kernels)}): kernels should stay as upstream wrote them",
                           kernels[0]))
    if wa.remove_when and all(c.kind == conditions.MANUAL_KIND for c in wa.remove_when):
        out.append(finding("WA016", name, f"{name} can only be removed by a person's "
                           "judgement: no checkable condition", p.locate(block + ("remove_when",))))
    return out


_FIELD_HELP = {
    "kind": "compat-gap, upstream-private or build-entry",
    "covers": "the files, or file::symbol, the workaround touches",
    "reason": "why it is needed now",
    "remove_when": "a checkable condition such as `paddle >= 3.4` or `mre-passes`",
    "issue": "a Paddle issue URL, or `not-needed: <why>`",
    "marker": "the TODO text the patched code carries",
}


def _code_rules(p: PatchInput) -> list[Finding]:
    """Rules about the added code that hold for every patch, workaround or not."""
    out = []
    name = p.entry.name
    excepts = p.own([s for f in p.files for s in signals.broad_excepts(f)])
    if excepts:
        out.append(finding("WA008", name, f"{name} adds a handler that swallows every "
                           f"exception: {_listing(excepts)}", excepts[0].where))
    out += global_compat(p)
    private = p.own([s for f in p.files for s in signals.paddle_private(f)])
    if private:
        out.append(finding("WA013", name, f"{name} relies on Paddle internals: "
                           f"{_listing(private)}", private[0].where))
    return out


def global_compat(p: PatchInput) -> list[Finding]:
    """WA010, shared by the audit and lint."""
    name = p.entry.name
    calls = p.own([s for f in p.files if not signals.is_build_entry(f.path)
                   for s in signals.global_compat_calls(f)])
    if not calls:
        return []
    return [finding("WA010", name, f"{name} enables compat globally outside a build "
                    f"entry point: {_listing(calls)}", calls[0].where)]


def _norm(value: str) -> str:
    return " ".join(value.split())


def _dep3(p: PatchInput) -> list[Finding]:
    keys = {k.lower(): k for k in dep3.KEYS}
    want = {k.lower(): _norm(v) for k, v in dep3.headers(p.entry)}
    have = {k.lower(): _norm(v) for k, v in p.headers if k.lower() in keys}
    diffs = []
    for key in sorted(set(want) | set(have), key=lambda k: list(keys).index(k)):
        if want.get(key) != have.get(key):
            w = f"{want[key]!r}" if key in want else "nothing"
            h = f"{have[key]!r}" if key in have else "nothing"
            diffs.append(f"{keys[key]}: series.yaml says {w}, the patch file {h}")
    if not diffs:
        return []
    name = p.entry.name
    return [finding("WA015", name, f"patches/{name} disagrees with series.yaml: "
                    + "; ".join(diffs), f"patches/{name}")]


def check_spread(inputs: Sequence[PatchInput]) -> list[Finding]:
    """The same added line in SPREAD_FILES or more files across the series' workarounds."""
    files_of: dict[str, dict[str, None]] = defaultdict(dict)
    patches_of: dict[str, dict[str, set[str]]] = defaultdict(dict)  # key: patch: its files
    for p in inputs:
        if p.workaround is None:
            continue
        for f in p.files:
            for ln in f.added():
                key = signals.spread_key(ln.text)
                if key is not None:
                    files_of[key][f.path] = None
                    patches_of[key].setdefault(p.entry.name, set()).add(f.path)
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for key, files in files_of.items():
        if len(files) >= SPREAD_FILES:
            groups[tuple(sorted(files))].append(key)
    order = {p.entry.name: i for i, p in enumerate(inputs)}
    out = []
    for files_t, keys in groups.items():
        patches = sorted({n for k in keys for n in patches_of[k]}, key=order.__getitem__)
        more = f" (and {len(keys) - 1} more lines)" if len(keys) > 1 else ""
        # Located in a file of the patch it is reported on (the first one's first file).
        where = min(f for k in keys for f in patches_of[k].get(patches[0], ()))
        out.append(finding("WA011", patches[0], f"`{keys[0][:60]}`{more} is added to "
                           f"{len(files_t)} files ({_some(files_t, 4)}) by "
                           f"{_some(patches, 3)}", where))
    return out


def _some(items: Sequence[str], limit: int) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def check_removable(p: PatchInput, removal: str, detail: str) -> list[Finding]:
    if p.workaround is None or removal != conditions.MET:
        return []
    return [finding("WA017", p.entry.name, f"{p.entry.name} can go: {detail}",
                    p.locate(("patches", p.index, "workaround", "remove_when")))]


def check_all(inputs: Sequence[PatchInput], removal: dict[str, tuple[str, str]],
              strict: bool) -> list[Finding]:
    """All findings, in series order, each patch's by rule id."""
    order = {p.entry.name: i for i, p in enumerate(inputs)}
    out = [f for p in inputs for f in check_patch(p)] + check_spread(inputs)
    if strict:
        for p in inputs:
            state, detail = removal.get(p.entry.name, (conditions.UNKNOWN, ""))
            out += check_removable(p, state, detail)
    return sorted(out, key=lambda f: (order.get(f.patch, len(order)), f.rule_id))
