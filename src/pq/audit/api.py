"""`run_audit`: one call that audits a queue's workarounds, for the CLI and the pre-push hook.

It reads the metadata, parses each patch once, gathers the facts the removal conditions
need (Paddle version, upstream files, reproducer runs) and applies the rules.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from functools import cached_property, partial

from pq.audit import mre, rules
from pq.audit.mre import MreRun
from pq.audit.rules import Finding, PatchInput
from pq.errors import EXIT_FINDINGS, EXIT_OK, ConfigError
from pq.git.repo import Git
from pq.model import conditions, metadata, patchfile
from pq.model.conditions import ConditionState, Facts
from pq.model.diff import FileDiff
from pq.model.metadata import Workaround
from pq.model.series import PATCHES_DIR, SERIES_FILE, Series
from pq.queue.files import Queue

DEFAULT_MRE_TIMEOUT = 300.0


@dataclass(frozen=True)
class WorkaroundRow:
    patch: str
    layer: str
    workaround: Workaround
    mre_present: bool
    conditions: tuple[ConditionState, ...]
    removal: str  # met / not met / manual / unknown / not run
    mre_run: MreRun | None
    findings: tuple[str, ...]  # rule ids of this patch's findings

    @property
    def removable(self) -> bool:
        return self.removal == conditions.MET


@dataclass(frozen=True)
class Acknowledged:
    """A finding that series.yaml acknowledges: reported, never counted."""

    finding: Finding
    reason: str
    location: str  # where the acknowledgement is written

    def to_data(self) -> dict[str, str | None]:
        return {**self.finding.to_data(), "reason": self.reason,
                "acknowledged_at": self.location}


@dataclass(frozen=True)
class AuditReport:
    base: str
    upstream_ref: str
    upstream_commit: str | None
    paddle_version: str | None
    paddle_source: str
    source: str  # "worktree", or the commit the queue was read from
    patches: int
    workarounds: tuple[WorkaroundRow, ...]
    findings: tuple[Finding, ...]
    strict: bool
    ran_mre: bool
    acknowledged: tuple[Acknowledged, ...] = ()
    unused_acknowledgements: tuple[metadata.Acknowledgement, ...] = ()
    # Whether the base commit is in the repository (not in a shallow clone, say): without
    # it, lines copied from upstream files cannot be told from the fork's own.
    base_present: bool = True

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == rules.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == rules.WARNING]

    @property
    def removable(self) -> list[WorkaroundRow]:
        return [w for w in self.workarounds if w.removable]

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.findings else EXIT_OK


Progress = Callable[[int, int, str], None]


def run_audit(
    git: Git,
    queue: Queue,
    *,
    upstream_rev: str | None = None,
    paddle_version: str | None = None,
    run_mre: bool = False,
    strict: bool = False,
    python: str | None = None,
    rev: str | None = None,
    mre_timeout: float = DEFAULT_MRE_TIMEOUT,
    progress: Progress | None = None,
) -> AuditReport:
    """Audit `queue`. Reproducers come from the working tree, or from commit `rev` when given
    (pass the commit the queue was read from, e.g. a pushed commit). Raises ConfigError (exit
    2) on a malformed workaround block or an unknown `upstream_rev`."""
    series = queue.series
    workarounds = metadata.read_all(series)
    acks = metadata.read_acknowledgements(series, rules.BY_ID)
    python = interpreter(python)
    source: mre.Source
    if rev is None:
        source = mre.WorktreeSource(git.root, git)
    else:
        source = mre.TreeSource(git, rev, [w.mre for w in workarounds.values() if w.mre])
    inputs = [patch_input(series, i, queue, workarounds.get(e.name), source)
              for i, e in enumerate(series.patches)]
    copies = UpstreamCopies(git, series.base)
    inputs = copies.attach(inputs)
    facts = _facts(git, series, workarounds, upstream_rev=upstream_rev,
                   paddle_version=paddle_version, run_mre=run_mre, python=python)
    runs: dict[str, MreRun] = {}
    if run_mre:
        todo = [w for w in workarounds.values() if w.needs_mre_run()]
        for k, w in enumerate(todo):
            if progress:
                progress(k, len(todo), w.mre or "")
            assert w.mre is not None
            runs[w.patch] = mre.run(source, w.mre, python=python or sys.executable,
                                    timeout=mre_timeout)
    states: dict[str, tuple[ConditionState, ...]] = {}
    removal: dict[str, tuple[str, str]] = {}
    for name, w in workarounds.items():
        run = runs.get(name)
        st = tuple(conditions.evaluate(c, facts, run.outcome() if run else None)
                   for c in w.remove_when or ())
        states[name] = st
        overall = conditions.combine(list(st))
        # Why it can go: the conditions met (any one is enough); else what each says.
        said = [s for s in st if s.state == conditions.MET] or list(st)
        removal[name] = (overall, "; ".join(f"{s.condition.text}: {s.detail or s.state}"
                                            for s in said))
    findings, acknowledged, unused = acknowledge(rules.check_all(inputs, removal, strict),
                                                 acks, rules.AUDIT_IDS if strict else
                                                 rules.AUDIT_IDS - rules.STRICT_IDS)
    by_patch: dict[str, list[str]] = {}
    for f in findings:
        by_patch.setdefault(f.patch, []).append(f.rule_id)
    rows = []
    for p in inputs:
        if p.workaround is None:
            continue
        w = p.workaround
        rows.append(WorkaroundRow(
            patch=w.patch, layer=p.entry.layer, workaround=w,
            mre_present=bool(w.mre) and p.mre_problem is None,
            conditions=states[w.patch], removal=removal[w.patch][0],
            mre_run=runs.get(w.patch), findings=tuple(dict.fromkeys(by_patch.get(w.patch, [])))))
    return AuditReport(
        base=series.base, upstream_ref=facts.upstream_ref, upstream_commit=facts.upstream_commit,
        paddle_version=facts.paddle_version, paddle_source=facts.paddle_source,
        source=rev or "worktree", patches=len(series.patches), workarounds=tuple(rows),
        findings=tuple(findings), strict=strict, ran_mre=run_mre,
        acknowledged=tuple(acknowledged), unused_acknowledgements=tuple(unused),
        base_present=copies.base_present)


def acknowledge(findings: list[Finding], acks: list[metadata.Acknowledgement],
                ran: Collection[str]
                ) -> tuple[list[Finding], list[Acknowledged], list[metadata.Acknowledgement]]:
    """Split off the findings series.yaml acknowledges (same patch, same rule); also the
    acknowledgements of rules in `ran` (the rule ids the caller checked) that match no
    finding any more (reported, so that they get removed). Shared by audit and lint."""
    by_key = {(a.patch, a.rule): a for a in acks}
    used: set[tuple[str, str]] = set()
    kept, acked = [], []
    for f in findings:
        a = by_key.get((f.patch, f.rule_id))
        if a is None:
            kept.append(f)
        else:
            used.add((a.patch, a.rule))
            acked.append(Acknowledged(f, a.reason, a.location))
    return kept, acked, [a for a in acks if (a.patch, a.rule) not in used and a.rule in ran]


def origins(path: str, old_path: str | None, upstream: Collection[str],
            by_tail: dict[str, list[str]]) -> list[str]:
    """The upstream files a patched file's lines may be copied from: the same path, the
    path it was renamed or copied from, and the same path under another top folder
    (`paddle_tests/ops/test_x.py` <- `tests/ops/test_x.py`; `paddle/tests/test_x.py` <-
    `tests/test_x.py`, and the other way round). `by_tail` maps a path without its first
    folder to the upstream paths that have it."""
    tail = path.split("/", 1)[1] if "/" in path else None
    found = [p for p in (path, old_path) if p and p in upstream]
    found += by_tail.get(path, [])  # path is an upstream path minus its top folder
    if tail is not None:
        found += by_tail.get(tail, [])
        if tail in upstream:
            found.append(tail)
    return sorted(set(found))


class UpstreamCopies:
    """Which added lines are verbatim copies of a line of their origin file in the upstream
    base tree (see `origins`). Nothing is read until a rule asks about a line that raised a
    signal: then the base's listing (one `ls-tree`) and that file's origins (one batched
    `cat-file`), each kept for the rest of the run. A run whose patches raise no signal,
    the common case, reads nothing."""

    def __init__(self, git: Git, base: str) -> None:
        self.git, self.base = git, base
        self._upstream: tuple[set[str], dict[str, list[str]]] | None = None
        self._lines: dict[str, frozenset[bytes]] = {}
        self._copied: dict[tuple[int, str], frozenset[int]] = {}
        self._files: dict[str, bytes] = {}

    @cached_property
    def base_present(self) -> bool:
        """Whether the base is a commit of the repository (not in a shallow clone, say)."""
        return self.git.try_resolve(self.base) is not None

    def attach(self, inputs: list[PatchInput]) -> list[PatchInput]:
        """`inputs`, each able to ask whether one of its added lines is upstream's."""
        return [replace(p, is_copied=partial(self.is_copied, i, p.files),
                        base_file=self.base_file) for i, p in enumerate(inputs)]

    def base_file(self, path: str) -> bytes:
        """The base's bytes of `path` (b"" when absent or not a file), read once."""
        if path not in self._files:
            data = read_files(self.git, self.base, [path]).get(path) \
                if self.base_present else None
            self._files[path] = data or b""
        return self._files[path]

    def is_copied(self, index: int, files: tuple[FileDiff, ...], path: str, line: int) -> bool:
        key = (index, path)
        if key not in self._copied:  # every section of that path (a patch can have two)
            self._copied[key] = frozenset().union(*(self._of(f) for f in files
                                                    if f.path == path and not f.deleted))
        return line in self._copied[key]

    def _of(self, f: FileDiff) -> frozenset[int]:
        upstream, by_tail = self._listing()
        if not upstream:
            return frozenset()
        sources = origins(f.path, f.old_path, upstream, by_tail)
        unread = [q for q in sources if q not in self._lines]
        for q, data in read_files(self.git, self.base, unread).items():
            # Lines as the diff has them: cut at LF only, bytes compared (a CR, a form
            # feed or U+2028 is part of a line, as in the patch).
            self._lines[q] = frozenset(data.split(b"\n")) if data is not None else frozenset()
        seen = frozenset().union(*(self._lines[q] for q in sources))
        return frozenset(ln.number for ln in f.added() if ln.raw in seen)

    def _listing(self) -> tuple[set[str], dict[str, list[str]]]:
        if self._upstream is None:
            upstream: set[str] = set()
            if self.base_present:
                upstream = {q for _m, kind, _o, q in self.git.ls_tree(self.base)
                            if kind == "blob"}
            by_tail: dict[str, list[str]] = {}
            for q in upstream:
                if "/" in q:
                    by_tail.setdefault(q.split("/", 1)[1], []).append(q)
            self._upstream = (upstream, by_tail)
        return self._upstream


def patch_input(series: Series, index: int, queue: Queue, wa: Workaround | None = None,
                source: mre.Source | None = None) -> PatchInput:
    """One patch as the rules read it; its patch file is parsed here, once per run."""
    entry = series.patches[index]
    pf = patchfile.parse(queue.files[entry.name], f"{PATCHES_DIR}/{entry.name}")

    def locate(path: tuple[str | int, ...]) -> str:
        line, col = series.locate(path)
        if line is None:
            return SERIES_FILE
        return f"{SERIES_FILE}:{line}" + (f":{col}" if col is not None else "")

    problem = (source.problem(wa.mre) if source is not None and wa is not None and wa.mre
               else None)
    return PatchInput(entry=entry, index=index, workaround=wa,
                      files=pf.files, headers=pf.headers,
                      mre_problem=problem, locate=locate)


def _facts(git: Git, series: Series, workarounds: dict[str, Workaround], *,
           upstream_rev: str | None, paddle_version: str | None, run_mre: bool,
           python: str | None) -> Facts:
    conds = [c for w in workarounds.values() for c in w.remove_when or ()]
    from pq.audit.versions import paddle_version as installed_paddle
    from pq.audit.versions import same_interpreter

    version, where = paddle_version, "--paddle-version"
    if version is None:
        needed = any(c.kind == conditions.PADDLE for c in conds)
        if needed or python is None or same_interpreter(python):
            version, where = installed_paddle(python, thorough=needed)
    ref = upstream_rev or series.upstream_ref
    commit = git.resolve(ref, "upstream ref") if upstream_rev else git.try_resolve(ref)
    files: dict[str, bytes | None] = {}
    wanted = sorted({c.file for c in conds if c.kind == conditions.UPSTREAM_CONTAINS})
    if commit is not None and wanted:
        files = read_files(git, commit, wanted)
    return Facts(paddle_version=version, paddle_source=where if version else "",
                 upstream_ref=ref, upstream_commit=commit, upstream_files=files,
                 run_mre=run_mre)


def read_files(git: Git, commit: str, paths: list[str]) -> dict[str, bytes | None]:
    """The blobs at `paths` in `commit` (None: absent, or not a file), with one batched
    `git cat-file` rather than a round trip per file."""
    found = git.odb.read_many([f"{commit}:{p}" for p in paths])
    return {path: obj[2] if obj is not None and obj[1] == "blob" else None
            for path, obj in zip(paths, found, strict=True)}


def issue_body(git: Git, queue: Queue, patch: str, *, run_mre: bool = False,
               python: str | None = None, rev: str | None = None,
               mre_timeout: float = DEFAULT_MRE_TIMEOUT) -> str:
    """The Paddle issue text for the workaround in `patch` (see pq.audit.issuebody)."""
    from pq.audit import issuebody, versions

    series = queue.series
    entry = series.entry(patch)
    if entry is None:
        names = ", ".join(e.name for e in series.patches) or "none: the series is empty"
        with_wa = ", ".join(e.name for e in series.patches if e.workaround is not None)
        raise ConfigError(f"no patch named {patch!r} in {SERIES_FILE}",
                          hint=f"its patches: {names}"
                               + (f"; with a workaround block: {with_wa}" if with_wa else ""))
    index = series.index_of(patch)
    wa = metadata.read(series, index, entry)
    if wa is None:
        raise series.error(("patches", index), f"patch {patch} declares no workaround",
                           hint="add a `workaround` block first")
    if wa.kind == metadata.BUILD_ENTRY:
        raise series.error(("patches", index, "workaround", "kind"),
                           f"patch {patch} is a build-entry: not a gap, no Paddle issue",
                           hint="issues are for compat-gap (and upstream-private) workarounds")
    source: mre.Source = (mre.WorktreeSource(git.root, git) if rev is None
                          else mre.TreeSource(git, rev, [wa.mre] if wa.mre else []))
    files: dict[str, bytes] = {}
    if wa.mre and source.problem(wa.mre) is None:
        files = source.files(wa.mre)
    paddle_run = torch_run = None
    python = interpreter(python)
    py = python or sys.executable
    if run_mre and wa.mre and files:
        paddle_run = mre.run(source, wa.mre, python=py, timeout=mre_timeout)
        if issuebody.supports_torch_backend(files):
            torch_run = mre.run(source, wa.mre, python=py, timeout=mre_timeout,
                                extra_env={issuebody.BACKEND_VAR: "torch"})
    v = versions.probe(python)
    cuda, driver = versions.gpu()
    v = replace(v, cuda=cuda, driver=driver)
    pf = patchfile.parse(queue.files[patch], f"{PATCHES_DIR}/{patch}")
    return issuebody.render(issuebody.IssueInput(
        workaround=wa, summary=entry.summary, layer=entry.layer,
        diff=pf.diff.decode("utf-8", "replace"), mre_files=files, versions=v,
        paddle_run=paddle_run, torch_run=torch_run))


def interpreter(python: str | None) -> str | None:
    """`python` as an absolute path (reproducers run in another folder), None if None."""
    if python is None:
        return None
    found = shutil.which(python)
    if found is None:
        raise ConfigError(f"--python {python}: no such program (not a file you can run)",
                          hint="name an interpreter, e.g. `--python .venv/bin/python`")
    return os.path.abspath(found)


def valid_version(text: str) -> bool:
    parsed = conditions.parse_version(text)
    return parsed is not None and text.strip()[:1].isdigit()
