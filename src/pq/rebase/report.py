"""What a rebase reports: each patch's outcome, and the whole rebase's status, branch and
bases; the CLI renders it as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

from pq.queue.files import Queue
from pq.rebase.rerere import Resolution

OUTCOMES = ("clean", "merged", "dropped", "conflict", "skipped")


@dataclass
class PatchReport:
    name: str
    layer: str
    outcome: str  # one of OUTCOMES, or `pending` for patches after a conflict stop
    rerere: bool = False  # resolved from a resolution git rerere recorded earlier
    upstream_commit: str | None = None  # for `dropped`: the upstream commit carrying it
    upstream_subject: str | None = None
    applied_in: str | None = None  # kept: upstream applied it (same patch-id) in this commit
    reverted_in: str | None = None  # and reverted it in this one
    subjects: dict[str, str] = field(default_factory=dict)  # of applied_in and reverted_in
    commit: str | None = None  # the rebased commit
    source: str | None = None  # the patch's commit before the rebase (on the old base)
    changed: bool = False  # the patch file's bytes changed
    range_diff: list[str] = field(default_factory=list)  # in full (the CLI cuts its text)
    rerere_files: list[Resolution] = field(default_factory=list)  # each file so resolved


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
    conflict_notes: list[str] = field(default_factory=list)  # RebaseState.conflict_notes
    gate: bool = False  # the rebase was started with --gate
    gone_worktree: str | None = None  # an abort's: the worktree the rebase ran in, gone
    # What a finished rebase has to say beside its outcome: a post-rewrite hook that
    # could not run, or was interrupted (the rebase is done either way).
    notes: list[str] = field(default_factory=list)
    # Hooks git would say it ignored (not executable), as git names them in its hint.
    ignored_hooks: list[str] = field(default_factory=list)
    # The series and patch files a finished rebase wrote (what the working tree now has),
    # for reports that read them next (the drift's files the patches touch); not JSON.
    queue: Queue | None = field(default=None, repr=False, compare=False)


def trim(lines: list[str], max_lines: int) -> list[str]:
    """The first `max_lines` of a summary, and a line saying how many were left out."""
    if len(lines) <= max_lines:
        return lines
    rest = len(lines) - max_lines
    return lines[:max_lines] + [f"... {rest} more line{'s' if rest != 1 else ''}"]
