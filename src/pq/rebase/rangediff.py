"""Patches across a rebase, range-diff style: which upstream commit carries a patch (same
`git patch-id`, or every changed line), what became of each patch, and how each patch
file's bytes changed (old and new bytes diffed, cut to hunk headers and changed lines).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from pq.git import patchids
from pq.git.objects import Change, CommitId
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import diff as diffs
from pq.model.diff import Hunk
from pq.model.linediff import unified
from pq.queue import stack as stack_mod
from pq.queue.files import is_queue_path
from pq.rebase import reverts
from pq.rebase import state as rs
from pq.rebase.report import PatchReport, RebaseReport, trim
from pq.rebase.rerere import Resolution
from pq.rebase.state import RebaseState

_COMMIT_LINE = re.compile(rb"(?m)^commit [0-9a-f]{40,64}$")
_RENAMED = re.compile(rb"(?m)^(?:rename|copy) from ")  # a header line git's diff writes
_BINARY = re.compile(rb"(?m)^(?:GIT binary patch|Binary files )")


class UpstreamMatches:
    """Upstream commits (in old_base..onto) that carry a patch's change, or carried it.

    `status` is exact: the upstream commits with the same `git patch-id --stable` (what
    `git rebase` drops a patch for), and which of them a later upstream commit reverted.
    `carrying` names, for a patch whose merge came out empty, the oldest upstream commit
    whose diff holds every line the patch adds or removes, file by file (upstream took it
    with other context, or with more around it).

    Cheap by construction: one `git log --name-only` of the upstream range (which also
    gives its size) says which upstream commits touch exactly a patch's files, the only
    ones whose patch-id can be the patch's; only those are diffed, and only when there are
    any. The lines of other upstream commits are read only for `carrying` and for the
    reverts of a match.
    """

    def __init__(self, git: Git, state: RebaseState, queue_paths: tuple[str, ...],
                 changes: dict[str, list[Change]], diffs: dict[str, bytes] | None = None,
                 log: Callable[[], list[tuple[CommitId, frozenset[str]]]] | None = None
                 ) -> None:
        self.git = git
        # The range's `git log --name-only` (Git.log_files), when the caller read it already.
        self._read_log = log or (lambda: git.log_files(*rs.new_upstream(state.old_base,
                                                                          state.onto)))
        self.state = state
        self.queue_paths = queue_paths
        self.changes = changes
        self.diffs = diffs  # the patch commits' diffs, as stack.read_stack gives them
        self._log: list[tuple[str, frozenset[str]]] | None = None  # oldest first
        self._files_of: dict[str, frozenset[str]] = {}  # upstream commit: the files it changes
        self._by_files: dict[frozenset[str], list[str]] = {}
        self._ids: dict[str, str] = {}  # commit: patch-id
        self._sealed_ids: dict[str, str] = {}  # commit: patch-id of pq's sealed diff
        self._mine: set[str] = set()  # patch commits read so far
        self._binary: set[str] = set()  # commits whose diff has a binary file
        self._as_git: set[str] = set()  # commits whose id is from a diff as git sees it
        self._diffs: dict[str, list[bytes]] = {}  # commit: its diffs as read, not parsed yet
        self._hunks: dict[str, dict[str, list[Hunk]]] = {}  # commit: {path: its hunks}
        self._modes: dict[str, dict[str, tuple[str, str] | None]] = {}  # {path: mode change}
        self._blocks: dict[str, dict[str, list[Block]]] = {}  # commit: {path: its blocks}
        self._read: set[str] = set()  # commits diffed so far
        self._files_cache: dict[str, frozenset[str]] = {}
        self._prefetched = False  # the candidates of every pending patch were read
        self._start_attributes: bytes | None = None  # the branch's, as the rebase began
        self._moves: dict[str, str] | None = None  # upstream's renames, old_base..onto

    def find(self, commit: str) -> str | None:
        return self.status(commit)[0]

    def status(self, commit: str) -> tuple[str | None, tuple[str, str] | None]:
        """(the upstream commit that carries the patch: the oldest with its patch-id that no
        later commit reverted, or None; (applied, reverted) for the last application that
        upstream reverted, or None)."""
        live: str | None = None
        undone: tuple[str, str] | None = None
        for applied in self._matches(commit):
            live = live or applied
            reverted = self._reverted_by(applied)
            if reverted:
                live, undone = None, (applied, reverted)
        return live, undone

    def carrying(self, commit: str) -> str | None:
        found = self.find(commit)
        if found or not self.state.upstream_count:
            return found
        if found := self._carrying(commit, {}):
            return found
        if self._moves is None:  # asked once: a whole tree's rename detection
            self._moves = self.git.renamed_paths((self.state.old_base, self.state.onto))
        moved = {old: new for old, new in self._moves.items() if old in self._files(commit)}
        return self._carrying(commit, moved) if moved else None

    def _carrying(self, commit: str, moved: dict[str, str]) -> str | None:
        files = self._files(commit)
        candidates = [c for c, theirs in self._upstream() if (files | {*moved.values()}) & theirs]
        self._read_diffs(candidates, [commit])
        mine = self._lines_of(commit)
        if not mine:
            return None
        # The oldest that holds each of the patch's changes where the patch made it (the
        # same lines changed between the same neighbours), else the oldest holding every
        # changed line anywhere in the file (upstream took it with other context); in a
        # file upstream moved, at either name; none that a later commit reverted.
        blocks = self._blocks_of(commit)
        for candidate in candidates:
            theirs = self._blocks_of(candidate)
            if all(_holds(theirs.get(path) or theirs.get(moved.get(path, path), []), bs)
                   for path, bs in blocks.items()) and not self._reverted_by(candidate):
                return candidate
        for candidate in candidates:
            there = self._lines_of(candidate)
            if all(lines <= (there.get(path) or there.get(moved.get(path, path), set()))
                   for path, lines in mine.items()) and not self._reverted_by(candidate):
                return candidate
        return None

    # -- what the upstream range holds --------------------------------------------------

    def _upstream(self) -> list[tuple[str, frozenset[str]]]:
        if self._log is None:
            self._log = [(str(c), files) for c, files in self._read_log()]
            self._files_of = dict(self._log)
            for c, files in self._log:
                self._by_files.setdefault(files, []).append(c)
        return self._log

    def _files(self, commit: str) -> frozenset[str]:
        found = self._files_cache.get(commit)
        if found is None:
            found = self._files_cache[commit] = frozenset(
                path for path, _, _ in self.changes.get(commit, [])
                if not is_queue_path(path, self.queue_paths))
        return found

    def _matches(self, commit: str) -> list[str]:
        """Upstream commits with the patch's patch-id, oldest first."""
        if not self.state.upstream_count or not self._files(commit):
            return []
        self._upstream()
        if not self._by_files.get(self._files(commit)):
            return []
        if self._prefetched:
            self._read_diffs(self._by_files[self._files(commit)], [commit])
        else:
            # The first time: the candidates of every patch still to replay, in one go.
            self._prefetched = True
            pending = [s.commit for s in self.state.steps[self.state.index:]]
            if commit not in pending:
                pending.append(commit)
            self._read_diffs([u for c in pending for u in self._by_files.get(self._files(c), [])
                              if self._files(c)], pending)
        pid = self._ids.get(commit)
        return [u for u in self._by_files[self._files(commit)]
                if pid is not None and self._ids.get(u) == pid]

    def _reverted_by(self, applied: str) -> str | None:
        """The first later upstream commit that reverts `applied` (pq.rebase.reverts: each
        run of lines it changed, followed through the commits after it, changed back where
        it sits, and nothing of it changed otherwise before)."""
        order = [c for c, _ in self._upstream()]
        files = self._files_of[applied]
        later = [c for c in order[order.index(applied) + 1:] if files & self._files_of[c]]
        self._read_diffs(later, [])
        adopted = {path: reverts.runs(hunks) for path, hunks in self._hunks_of(applied).items()}
        if not any(adopted.values()):  # no line changed: a mode changed alone
            return _modes_turned_back(self._modes.get(applied, {}),
                                      [(c, self._modes_of(c)) for c in later])
        # Merges' diffs are not read: across one, line numbers tell nothing, text alone does.
        merges = self.git.count(f"{applied}..{self.state.onto}", "--merges")
        follow = reverts.follow_text if merges else reverts.follow
        return follow(adopted, [(c, self._hunks_of(c)) for c in later])

    def _read_diffs(self, upstream: list[str], mine: list[str]) -> None:
        """The diffs and patch-ids of these upstream and patch commits (two processes, and
        one or two more where a diff holds a rename)."""
        upstream = [c for c in dict.fromkeys(upstream) if c not in self._read]
        mine = [c for c in dict.fromkeys(mine) if c not in self._read]
        if not upstream and not mine:
            return
        exclude = stack_mod.exclude_pathspec(self.queue_paths)
        theirs = self.git.commit_patches(upstream) if upstream else {}
        if mine and self.diffs is not None and all(c in self.diffs for c in mine):
            ours = {c: self.diffs[c] for c in mine}
        else:
            ours = self.git.commit_patches(mine, exclude) if mine else {}
        self._read.update(upstream + mine)
        # A patch commit upstream holds too (`--force`) comes twice: both diffs count.
        for commit, diff in [*theirs.items(), *ours.items()]:
            if diff:  # lines parsed when first asked for
                self._diffs.setdefault(commit, []).append(diff)
        # Patch ids are git's: of diffs without rename detection, where a rename is the old
        # file deleted and the new one added, contents and all (the changed lines above
        # keep renames: a rename upstream is no revert of a patch's lines).
        sealed = patchids.patch_ids(self.git, _as_log(_without_renames(self.git, theirs, ()))
                                    + _as_log(_without_renames(self.git, ours, exclude)))
        self._sealed_ids.update(sealed)
        self._ids.update(sealed)
        self._mine.update(mine)
        self._binary.update(c for c, d in [*theirs.items(), *ours.items()] if _BINARY.search(d))
        self._ids_as_git_sees()

    def _ids_as_git_sees(self) -> None:
        """The patch ids that decide something (shared by two commits, or of a diff with a
        binary file) taken again from diffs made as in the repository, where its attributes
        and core.bigFileThreshold say which files are binary, as for git's own ids: a file
        they make binary compares by content, whitespace and line ends included, and one
        `diff` makes text compares by its lines. pq's sealed diffs read every file as its
        bytes say, which differs from git's reading only there. The attributes are the
        branch's as the rebase began, which `git rebase` reads its ids with (its checkout
        then): not a stop's checkout, where a later `--continue` asks."""
        counts = Counter(self._sealed_ids.values())  # the ids of one kind, compared
        again = [c for c, pid in self._sealed_ids.items() if c not in self._as_git and (
            counts[pid] > 1 or c in self._binary)]
        if not again:
            return
        self._as_git.update(again)
        exclude = stack_mod.exclude_pathspec(self.queue_paths)
        groups = (([c for c in again if c not in self._mine], ()),
                  ([c for c in again if c in self._mine], exclude))
        if self._start_attributes is None:
            tree = self.git.commit(self.state.orig_head).tree
            self._start_attributes = Trees(self.git).attributes(
                tree, self.git.attribute_paths(tree))
        diffs = [self.git.commit_patches(commits, ex, renames=False,
                                         as_git_sees=self._start_attributes)
                 for commits, ex in groups]
        ids = patchids.patch_ids(self.git, _as_log(diffs[0]) + _as_log(diffs[1]))
        for (_, ex), diffed in zip(groups, diffs, strict=True):
            patchids.hash_binary_modes(self.git, ids, diffed, ex)
        self._ids.update(ids)

    def _lines_of(self, commit: str) -> dict[str, set[bytes]]:
        """{path: the lines it adds or removes} of a commit diffed so far ({} for one not
        read or with an empty diff)."""
        return {path: {b"-" + ln for _, removed, _, _ in bs for ln in removed}
                | {b"+" + ln for _, _, added, _ in bs for ln in added}
                for path, bs in self._blocks_of(commit).items()}

    def _blocks_of(self, commit: str) -> dict[str, list[Block]]:
        """{path: its blocks of changed lines} of a commit diffed so far."""
        if commit not in self._blocks:
            self._blocks[commit] = {path: blocks(hunks)
                                    for path, hunks in self._hunks_of(commit).items()}
        return self._blocks[commit]

    def _modes_of(self, commit: str) -> dict[str, tuple[str, str] | None]:
        """{path: (old mode, new mode)} of a commit diffed so far; None for a file it adds,
        deletes or renames."""
        self._hunks_of(commit)
        return self._modes.get(commit, {})

    def _hunks_of(self, commit: str) -> dict[str, list[Hunk]]:
        """{path: its hunks} of a commit diffed so far ({} for one not read or with an
        empty diff), parsed on first ask: most rebases never ask."""
        if commit in self._diffs:
            found = self._hunks[commit] = {}
            modes = self._modes[commit] = {}
            for diff in self._diffs.pop(commit):
                for f in diffs.parse(diff):
                    if f.hunks:
                        found.setdefault(f.path, []).extend(f.hunks)
                    if f.status != "modified":  # added, deleted, renamed: None
                        modes[f.path] = None
                    elif f.old_mode and f.new_mode:
                        modes[f.path] = (f.old_mode, f.new_mode)
        return self._hunks.get(commit, {})


def _modes_turned_back(adopted: dict[str, tuple[str, str] | None],
                       later: Sequence[tuple[str, dict[str, tuple[str, str] | None]]]
                       ) -> str | None:
    """The commit of `later` ((commit, {path: its mode change}), oldest first) that turns
    every mode the adopted commit changed (and nothing else) back, before any other change
    of those files' modes; None where there is none (the adopted change holds none)."""
    changed = {path: change for path, change in adopted.items() if change is not None}
    if not changed or len(changed) < len(adopted):
        return None
    for commit, modes in later:
        touched = [path for path in changed if path in modes]
        if not touched:
            continue
        back = [p for p in touched if (m := modes[p]) is not None and m == changed[p][::-1]]
        return commit if len(back) == len(changed) else None  # else: changed otherwise
    return None


def _as_log(patches: dict[str, bytes]) -> bytes:
    """`git log -p`-style text (`commit <id>` headers) of {commit: diff}; empty ones left
    out, as `diff-tree --stdin` without `--always` leaves them."""
    return b"".join(b"commit " + c.encode() + b"\n" + d for c, d in patches.items() if d)


def _without_renames(git: Git, patches: dict[str, bytes], exclude: Sequence[str]
                     ) -> dict[str, bytes]:
    """`patches` with each diff that holds a rename diffed again without rename detection
    (one process, only when there is one)."""
    renamed = [c for c, d in patches.items() if _RENAMED.search(d)]
    if not renamed:
        return patches
    return {**patches, **git.commit_patches(renamed, exclude, renames=False)}


def log_sections(log: bytes) -> list[tuple[str, bytes]]:
    """(commit, its diff) of each section of `git log -p` output with `commit <id>` headers."""
    marks = list(_COMMIT_LINE.finditer(log))
    return [(m.group(0)[7:].decode(), log[m.end():marks[i + 1].start() if i + 1 < len(marks)
                                         else len(log)]) for i, m in enumerate(marks)]


# One block of changed lines: (the context line above it, the lines it removes, the lines
# it adds, the context line below it); None where the hunk shows no line there. Lines are
# compared without trailing white space.
Block = tuple[bytes | None, tuple[bytes, ...], tuple[bytes, ...], bytes | None]


def diff_blocks(diff: bytes) -> dict[str, list[Block]]:
    """{path: the blocks of changed lines of a diff, in order}."""
    return {f.path: blocks(f.hunks) for f in diffs.parse(diff) if f.hunks}


def blocks(hunks: Sequence[Hunk]) -> list[Block]:
    """The blocks of changed lines of one file's hunks, in order (pq.rebase.reverts' runs,
    with the lines around them)."""
    return [(r.above, r.removed, r.added, r.below) for r in reverts.runs(hunks)]


def _beside(a: bytes | None, b: bytes | None) -> bool:
    """Whether two blocks' neighbours on one side agree (a side a hunk does not show, at
    the file's start or end, agrees with any)."""
    return a is None or b is None or a == b


def _holds(theirs: list[Block], mine: list[Block]) -> bool:
    """Whether each block of `mine` is a block of `theirs`, between the same neighbours
    (each of theirs taken once)."""
    free = list(theirs)
    for above, removed, added, below in mine:
        match = next((t for t in free if (t[1], t[2]) == (removed, added)
                      and _beside(t[0], above) and _beside(t[3], below)), None)
        if match is None:
            return False
        free.remove(match)
    return True


def report(state: RebaseState, status: str, old: dict[str, bytes],
           new: dict[str, bytes] | None, subjects: dict[str, str]) -> RebaseReport:
    """The report of `state`; `old` and `new` are the patch files' bytes by name."""
    patches = []
    for i, step in enumerate(state.steps):
        outcome = step.outcome or "pending"
        if status == "conflict" and i == state.index:
            outcome = "conflict"
        p = PatchReport(step.name, step.layer, outcome, step.rerere, step.upstream_commit,
                        commit=step.new_commit,
                        rerere_files=[Resolution.from_dict(r) for r in step.rerere_files])
        if step.upstream_commit:
            p.upstream_subject = subjects.get(step.upstream_commit)
        if step.applied_in and step.reverted_in:
            p.applied_in, p.reverted_in = step.applied_in, step.reverted_in
            p.subjects = {c: subjects.get(c, "") for c in (step.applied_in, step.reverted_in)}
        if new is not None and step.name in new:
            before = old.get(step.name, b"")
            p.range_diff = summary(before, new[step.name])
            p.changed = before != new[step.name]
        patches.append(p)
    result = RebaseReport(status, state.short_branch, state.onto_ref, state.old_base,
                          state.onto, state.upstream_count, state.orig_head, state.new_tip,
                          patches, gate=state.gate)
    if status == "conflict":
        result.conflict = patches[state.index]
        result.conflict_paths = list(state.conflict_paths)
        result.conflict_notes = list(state.conflict_notes)
    return result


def summary(old: bytes, new: bytes, max_lines: int | None = None) -> list[str]:
    """Changed lines of `old` -> `new` (`@@` headers, `-` and `+` lines); [] when equal;
    all of them, or the first `max_lines` and a line saying how many were left out.
    Lines are split at LF alone, a CR shown as `\\r` and a byte that is not UTF-8 as
    `\\xNN`, so that a change of those alone shows as one."""
    if old == new:
        return []
    lines = [line.decode("utf-8", "backslashreplace").replace("\r", "\\r")  # compared
             for line in unified(old.split(b"\n"), new.split(b"\n"))]  # as bytes, shown as text
    return lines if max_lines is None else trim(lines, max_lines)
