"""Patches across a rebase, range-diff style: which upstream commit carries a patch (same
`git patch-id`, or every changed line), what became of each patch, and how each patch
file's bytes changed (old and new bytes diffed, cut to hunk headers and changed lines).
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
    """Upstream commits (in old_base..onto) that carry a patch's change.

    `find` is exact: the same `git patch-id --stable`; a patch upstream has that way is
    dropped even where its merge conflicts. `carrying` names, for a patch whose merge came
    out empty, the oldest upstream commit whose diff holds every line the patch adds or
    removes, file by file (upstream took it with other context, or with more around it).
    Computed only when first asked, once, from `git log -p` limited to the patches' files.
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
        self._lines: dict[str, dict[str, set[bytes]]] = {}  # commit: {path: changed lines}
        self._upstream: list[str] = []  # oldest first

    def find(self, commit: str) -> str | None:
        if self._matches is None:
            self._matches = self._compute() if self.state.upstream_count else {}
        return self._matches.get(commit)

    def carrying(self, commit: str) -> str | None:
        found = self.find(commit)
        mine = self._lines.get(commit)
        if found or not mine:
            return found
        for candidate in self._upstream:
            theirs = self._lines[candidate]
            if all(lines <= theirs.get(path, set()) for path, lines in mine.items()):
                return candidate
        return None

    def _compute(self) -> dict[str, str]:
        commits = [s.commit for s in self.state.steps[self.state.index:]]
        paths = sorted({path for c in commits for path, _, _ in self.changes.get(c, [])})
        # `git log` reads diff.orderFile (empty is an error); --stable ids ignore file order.
        config = [c for c in DIFF_CONFIG if not c.startswith("diff.orderFile")][:-1]
        log = self.git.run_sealed("diff", *config, "log", "-p", "--full-diff", "--format=commit %H",
                           "--diff-merges=off", "--no-show-signature", *DIFF_OPTIONS,
                           f"{self.state.old_base}..{self.state.onto}", "--", *paths)
        if not _COMMIT_LINE.search(log):
            return {}
        if self.diffs is not None:
            ours = b"".join(b"commit " + c.encode() + b"\n" + self.diffs[c] for c in commits)
        else:
            ours = self.git.run_sealed("diff", *DIFF_CONFIG, "diff-tree", "--stdin", "-p",
                                "--format=commit %H", *DIFF_OPTIONS, "--",
                                *stack_mod.exclude_pathspec(self.queue_paths),
                                input="".join(c + "\n" for c in commits).encode())
        self._lines = changed_lines(log + ours)
        mine = set(commits)
        self._upstream = [c for c in reversed(self._lines) if c not in mine]
        out = self.git.run_sealed("diff", "patch-id", "--stable", input=log + ours).decode()
        upstream: dict[str, str] = {}
        patch_ids: dict[str, str] = {}
        for line in out.splitlines():
            pid, _, commit = line.partition(" ")
            if commit in mine:
                patch_ids[commit] = pid
            else:
                upstream[pid] = commit  # log runs newest first: the oldest match wins
        return {c: upstream[pid] for c, pid in patch_ids.items() if pid in upstream}


def changed_lines(log: bytes) -> dict[str, dict[str, set[bytes]]]:
    """{commit: {path: the lines its diff adds or removes, with their sign}} of `git log -p`
    output with `commit <id>` headers."""
    result: dict[str, dict[str, set[bytes]]] = {}
    files: dict[str, set[bytes]] = {}
    current: set[bytes] | None = None
    in_hunk = False
    for line in log.split(b"\n"):
        if _COMMIT_LINE.match(line):
            files = result.setdefault(line[7:].decode(), {})
            current, in_hunk = None, False
        elif line.startswith(b"diff --git "):
            current, in_hunk = None, False
        elif not in_hunk and line.startswith((b"+++ b/", b"--- a/")):
            path = line[6:].decode("utf-8", "surrogateescape")
            current = files.setdefault(path, set()) if line[0:1] == b"+" or current is None \
                else current
        elif line.startswith(b"@@ "):
            in_hunk = True
        elif in_hunk and current is not None and line[:1] in (b"+", b"-"):
            current.add(line.rstrip())
    return result


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
