"""The migration report's data: the four parts of a migration answer, as plain data.

1. the plan: the patches in order with their layer, grouped by layer, and the first landing
   point (the upstream commit the series applies onto and the patch that lands first);
2. the minimal-modification boundary: the upstream files at the base, which the series
   touches and which it leaves alone, per layer, and the upstream top-level folders no
   patch touches;
3. the verification path: the gate's stages and, when a gate record of HEAD's tree exists,
   each stage's latest result;
4. the compat-gap strategy: every workaround with its kind, scope, removal condition,
   issue and reproducer.

It sits above audit and gate (it reads the gate's configuration and records) and below
cli, which renders it (Markdown or JSON). It changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pq.audit import rules as audit_rules
from pq.gate import api as gate_api
from pq.gate import config as gate_config
from pq.gate import record as gate_record
from pq.gate import result as gate_result
from pq.git.repo import Git
from pq.model import metadata, patchfile
from pq.model.series import LAYERS, PATCHES_DIR, Series
from pq.queue.files import Queue, is_queue_path, read_worktree


@dataclass(frozen=True)
class PlannedPatch:
    index: int
    name: str
    layer: str
    summary: str
    files: tuple[str, ...]  # one per file it changes (a rename: the new name), as git counts
    added: int
    removed: int
    workaround: str | None  # its kind, when the patch is a workaround
    paths: tuple[str, ...] = ()  # every path it touches (a rename: both names)


@dataclass(frozen=True)
class LayerBoundary:
    layer: str
    patches: int
    files: tuple[str, ...]  # the upstream files its patches touch
    added: int
    removed: int


@dataclass(frozen=True)
class StageResult:
    name: str
    requires: tuple[str, ...]
    kind: str | None
    status: str | None  # the latest record's, or None without one


@dataclass(frozen=True)
class Workaround:
    patch: str
    layer: str
    kind: str | None  # None: the block names none (the audit's WA001)
    scope: tuple[str, ...]
    remove_when: tuple[str, ...]
    issue: str | None
    reproducer: str | None
    reason: str | None


@dataclass
class MigrationReport:
    upstream_ref: str
    base: str
    plan: list[PlannedPatch]
    upstream_files: int
    touched: list[str]
    created: list[str]  # files the series adds (not upstream's)
    layers: list[LayerBoundary]
    top_level: list[tuple[str, bool]]  # every upstream top-level entry, and whether touched
    stages: list[StageResult] = field(default_factory=list)
    gate_configured: bool = False
    gate_record: dict[str, Any] | None = None  # tip, tree, status, finished of the latest
    workarounds: list[Workaround] = field(default_factory=list)

    @property
    def untouched(self) -> int:
        return self.upstream_files - len(self.touched_upstream())

    def touched_upstream(self) -> list[str]:
        """The upstream files the series changes (`touched`, less those it adds)."""
        created = set(self.created)
        return [p for p in self.touched if p not in created]

    def layers_in_order(self) -> list[tuple[str, list[PlannedPatch]]]:
        return [(layer, [p for p in self.plan if p.layer == layer]) for layer in LAYERS
                if any(p.layer == layer for p in self.plan)]

    def to_json(self) -> dict[str, Any]:
        touched_upstream = self.touched_upstream()
        return {
            "upstream": self.upstream_ref, "base": self.base,
            "plan": {"patches": [{k: v for k, v in vars(p).items() if k != "paths"}
                                 | {"files": list(p.files)} for p in self.plan],
                     "by_layer": {layer: [p.name for p in self.plan if p.layer == layer]
                                  for layer in LAYERS},  # every layer: one shape
                     "first_landing_point": {"base": self.base,
                                             "patch": self.plan[0].name if self.plan
                                             else None}},
            "boundary": {"upstream_files": self.upstream_files,
                         "touched": touched_upstream, "created": self.created,
                         "untouched": self.untouched,
                         "layers": [{"layer": b.layer, "patches": b.patches,
                                     "files": list(b.files), "added": b.added,
                                     "removed": b.removed} for b in self.layers],
                         "untouched_top_level": [n for n, t in self.top_level if not t],
                         "touched_top_level": [n for n, t in self.top_level if t]},
            "verification": {"configured": self.gate_configured,
                             "stages": [{"name": s.name, "requires": list(s.requires),
                                         "kind": s.kind, "status": s.status}
                                        for s in self.stages],
                             "record": self.gate_record},
            "workarounds": [{"patch": w.patch, "layer": w.layer, "kind": w.kind,
                             "scope": list(w.scope), "remove_when": list(w.remove_when),
                             "issue": w.issue, "reproducer": w.reproducer,
                             "reason": w.reason} for w in self.workarounds],
        }


def build(git: Git, queue: Queue | None = None) -> MigrationReport:
    """The report of `queue` (default: the working tree's series) against its base."""
    queue = queue or read_worktree(git)
    series = queue.series
    # What the audit and lint refuse (a malformed block, an unknown acknowledged rule),
    # the report refuses too: it states the same facts.
    blocks = metadata.read_all(series)
    metadata.read_acknowledgements(series, audit_rules.BY_ID)
    base = git.resolve(series.base, "series base (upstream.base in series.yaml)")
    upstream = [p for _m, _k, _o, p in git.ls_tree(base)
                if not is_queue_path(p, series.queue_paths)]
    known = set(upstream)
    plan: list[PlannedPatch] = []
    per_layer: dict[str, tuple[set[str], int, int, int]] = {}
    present = set(known)  # the files as the patches leave them, one after another
    for i, entry in enumerate(series.patches, start=1):
        pf = patchfile.parse(queue.files[entry.name], f"{PATCHES_DIR}/{entry.name}")
        present -= {f.old for f in pf.files if f.old and f.old != f.new}
        present |= {f.new for f in pf.files if f.new}
        paths = tuple(dict.fromkeys(p for f in pf.files for p in (f.old, f.new) if p))
        files = tuple(dict.fromkeys(f.path for f in pf.files if f.path))
        added = sum(len(f.added()) for f in pf.files)
        removed = sum(len(f.removed()) for f in pf.files)
        block = blocks.get(entry.name)
        plan.append(PlannedPatch(i, entry.name, entry.layer, entry.summary, files, added,
                                 removed, block.kind if block is not None else None, paths))
        seen, n, a, r = per_layer.get(entry.layer, (set(), 0, 0, 0))
        per_layer[entry.layer] = (seen | set(paths), n + 1, a + added, r + removed)
    # Upstream's files the series changes, and the files it adds that are there at its end
    # (one a patch adds and a later one deletes is no part of the boundary).
    lasting = known | present
    touched = sorted({p for pp in plan for p in pp.paths if p in lasting})
    tops = sorted({p.split("/", 1)[0] for p in upstream})
    report = MigrationReport(
        series.upstream_ref, base, plan, len(upstream), touched,
        [p for p in touched if p not in known],
        [LayerBoundary(layer, n, tuple(sorted(f & lasting)), a, r)
         for layer in LAYERS if layer in per_layer
         for f, n, a, r in [per_layer[layer]]],
        [(t, any(p == t or p.startswith(t + "/") for p in touched)) for t in tops],
        workarounds=_workarounds(series, blocks))
    _verification(git, series, report)
    return report


def _workarounds(series: Series, blocks: dict[str, metadata.Workaround]) -> list[Workaround]:
    """Each workaround as the audit reads it (its canonical spellings: `not-needed: why`,
    `manual: ...`, `paddle >= 3.4`), not the YAML's own values."""
    return [Workaround(e.name, e.layer, wa.kind, tuple(str(c) for c in wa.covers or ()),
                       tuple(c.text for c in wa.remove_when or ()),
                       str(wa.issue) if wa.issue is not None else None, wa.mre, wa.reason)
            for e in series.patches if (wa := blocks.get(e.name)) is not None]


_NOT_ASKED = (gate_result.SKIPPED_NO_GPU,)  # a run without a GPU does not say how it went


def _verification(git: Git, series: Series, report: MigrationReport) -> None:
    """The gate's stages (from the working tree's series.yaml) and, from the records of
    HEAD's tree, each stage's latest result: a newer run that skipped it (no GPU there,
    `--stage` another) does not hide an older one that ran it."""
    if series.gate is None:
        return
    config = gate_config.parse(series, "the working tree")
    report.gate_configured = True
    statuses: dict[str, str] = {}
    head = git.try_resolve("HEAD")
    if head is not None:
        status = gate_api.read_status(git)
        if status.record is not None:
            for rec in reversed([status.record, *status.history]):  # oldest first
                # Not run in a full gate: an earlier stage failed, which stands; in a partial
                # one (`--stage`) or without a GPU: not asked, and the older result stands.
                moot = _NOT_ASKED + ((gate_result.NOT_RUN,) if rec.get("partial") else ())
                for name, value in gate_record.stage_statuses(rec).items():
                    if value not in moot or name not in statuses:
                        statuses[name] = value
            # The gate's result is its newest whole run's: a `--stage` run's pass is not.
            latest = status.whole or status.record
            report.gate_record = {"commit": status.found_on, "tree": status.tree,
                                  "status": latest.get("status"),
                                  "finished": latest.get("time"),
                                  "partial": bool(latest.get("partial"))}
    report.stages = [StageResult(s.name, s.requires, s.kind, statuses.get(s.name))
                     for s in config.stages]
