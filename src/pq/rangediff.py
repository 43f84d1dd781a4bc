"""Patches across a rebase, range-diff style: which upstream commit carries a patch (same
`git patch-id`), what became of each patch, and how each patch file's bytes changed (the
unified diff of old and new bytes cut to hunk headers and changed lines): the report.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from pq import stack as stack_mod
from pq.gitio import DIFF_CONFIG, DIFF_OPTIONS, Git
from pq.rebase_state import Change, RebaseState

MAX_LINES = 200
OUTCOMES = ("clean", "merged", "dropped", "conflict", "skipped")
_COMMIT_LINE = re.compile(rb"^commit [0-9a-f]{40,64}$", re.MULTILINE)


@dataclass
class PatchReport:
    name: str
    layer: str
    outcome: str  # one of OUTCOMES, or `pending` for patches after a conflict stop
    rerere: bool = False  # resolved from a resolution git rerere recorded earlier
    upstream_commit: str | None = None  # for `dropped`: the upstream commit carrying it
    upstream_subject: str | None = None
    commit: str | None = None  # the rebased commit
    changed: bool = False  # the patch file's bytes changed
    range_diff: list[str] = field(default_factory=list)


@dataclass
class RebaseReport:
    status: str  # done, up-to-date, conflict, aborted
    branch: str
    upstream_ref: str
    old_base: str
    onto: str
    upstream_count: int
    orig_head: str
    head: str | None = None
    patches: list[PatchReport] = field(default_factory=list)
    conflict: PatchReport | None = None
    conflict_paths: list[str] = field(default_factory=list)
    gate: bool = False  # the rebase was started with --gate


class UpstreamMatches:
    """Upstream commits carrying a patch's change (same `git patch-id --stable`).

    Asked only when a patch's merge comes out empty (to name the commit) or conflicts (a
    patch upstream adopted is dropped, not a conflict); computed once for all patches,
    from `git log -p old_base..onto` limited to the patches' files: three processes.
    """

    def __init__(self, git: Git, state: RebaseState, queue_paths: tuple[str, ...],
                 changes: dict[str, list[Change]], diffs: dict[str, bytes] | None = None
                 ) -> None:
        self.git = git
        self.state = state
        self.queue_paths = queue_paths
        self.changes = changes
        self.diffs = diffs  # the patch commits' diffs, as stack.read_stack gives them
        self._matches: dict[str, str] | None = None

    def find(self, commit: str) -> str | None:
        if self._matches is None:
            self._matches = self._compute() if self.state.upstream_count else {}
        return self._matches.get(commit)

    def _compute(self) -> dict[str, str]:
        commits = [s.commit for s in self.state.steps[self.state.index:]]
        paths = sorted({path for c in commits for path, _, _ in self.changes.get(c, [])})
        # `git log` reads diff.orderFile (empty is an error); --stable ids ignore file order.
        config = [c for c in DIFF_CONFIG if not c.startswith("diff.orderFile")][:-1]
        log = self.git.run(*config, "log", "-p", "--full-diff", "--format=commit %H",
                           "--diff-merges=off", "--no-show-signature", *DIFF_OPTIONS,
                           f"{self.state.old_base}..{self.state.onto}", "--", *paths)
        if not _COMMIT_LINE.search(log):
            return {}
        if self.diffs is not None:
            ours = b"".join(b"commit " + c.encode() + b"\n" + self.diffs[c] for c in commits)
        else:
            ours = self.git.run(*DIFF_CONFIG, "diff-tree", "--stdin", "-p",
                                "--format=commit %H", *DIFF_OPTIONS, "--",
                                *stack_mod.exclude_pathspec(self.queue_paths),
                                input="".join(c + "\n" for c in commits).encode())
        out = self.git.text("patch-id", "--stable", input=log + ours)
        mine = set(commits)
        upstream: dict[str, str] = {}
        patch_ids: dict[str, str] = {}
        for line in out.splitlines():
            pid, _, commit = line.partition(" ")
            if commit in mine:
                patch_ids[commit] = pid
            else:
                upstream[pid] = commit  # log runs newest first: the oldest match wins
        return {c: upstream[pid] for c, pid in patch_ids.items() if pid in upstream}


def report(state: RebaseState, status: str, old: dict[str, bytes],
           new: dict[str, bytes] | None, subjects: dict[str, str]) -> RebaseReport:
    """The report of `state`; `old` and `new` are the patch files' bytes by name."""
    patches = []
    for i, step in enumerate(state.steps):
        outcome = step.outcome or "pending"
        if status == "conflict" and i == state.index:
            outcome = "conflict"
        p = PatchReport(step.name, step.layer, outcome, step.rerere, step.upstream_commit,
                        commit=step.new_commit)
        if step.upstream_commit:
            p.upstream_subject = subjects.get(step.upstream_commit)
        if new is not None and step.name in new:
            p.range_diff = summary(old.get(step.name, b""), new[step.name])
            p.changed = bool(p.range_diff)
        patches.append(p)
    result = RebaseReport(status, state.short_branch, state.onto_ref, state.old_base,
                          state.onto, state.upstream_count, state.orig_head, state.new_tip,
                          patches, gate=state.gate)
    if status == "conflict":
        result.conflict = patches[state.index]
        result.conflict_paths = list(state.conflict_paths)
    return result


def summary(old: bytes, new: bytes, max_lines: int = MAX_LINES) -> list[str]:
    """Changed lines of `old` -> `new` (`@@` headers, `-` and `+` lines); [] when equal."""
    if old == new:
        return []
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=0))[2:]  # drop the ---/+++ pair
    return trim(lines, max_lines)


def trim(lines: list[str], max_lines: int) -> list[str]:
    """The first `max_lines` of a summary, and a line saying how many were left out."""
    if len(lines) <= max_lines:
        return lines
    rest = len(lines) - max_lines
    return lines[:max_lines] + [f"... {rest} more line{'s' if rest != 1 else ''}"]
