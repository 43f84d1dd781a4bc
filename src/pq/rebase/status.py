"""What a rebase in progress is doing, for the user: `pq status`, the first line of
`pq series` and `pq log`, the refusal of every rewriting command while a rebase is
stopped, the fix of each conflicted file by its kind, and what `--continue` takes (no
conflict left, no conflict marker: pq.rebase.markers); what it refuses besides is
pq.rebase.refusals.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq.errors import ConfigError, OperationFailed
from pq.git.repo import Git
from pq.oplog.lock import lock_holder
from pq.queue.files import is_queue_path
from pq.quoting import from_here, list_paths, shell_args, shown
from pq.rebase import state as rs
from pq.rebase import worktree
from pq.rebase.markers import added_conflict_markers
from pq.rebase.refusals import (
    abort_refusals,
    on_landed,
    require_branch_free,
    require_in_place,
    require_queue_aside,
)

# `git status --porcelain` codes of unmerged paths, for a patch cherry-picked onto the rebased
# stack: "us" is the stack so far (upstream, the earlier patches), "them" the patch. Each gives
# (what happened, how to resolve it; {f} is the path, {p} the path as a shell argument).
KINDS: dict[str, tuple[str, str]] = {
    "UU": ("both modified", "edit {f}, then `git add {p}`"),
    "AA": ("both added", "edit {f}, then `git add {p}`"),
    "DU": ("deleted upstream, modified by the patch",
           "`git rm {p}` keeps it deleted, or `git add {p}` keeps the patch's version"),
    "UD": ("modified upstream, deleted by the patch",
           "`git rm {p}` deletes it as the patch does, or `git add {p}` keeps upstream's "
           "version"),
    "AU": ("added upstream only", "edit {f}, then `git add {p}` (or `git rm {p}`)"),
    "UA": ("added by the patch only", "edit {f}, then `git add {p}` (or `git rm {p}`)"),
    "DD": ("deleted on both sides", "`git rm {p}`"),
}
# Where the stack so far has (or lacks) the file by an earlier patch, not by upstream.
BY_AN_EARLIER_PATCH = {"DU": "deleted by an earlier patch, modified by this one",
                       "AU": "added by an earlier patch only"}
# A submodule's conflict: the commit it should point at is chosen, not edited (a rebase
# leaves the submodule itself as it was, often not checked out at all: `git add` refuses it).
SUBMODULE_FIX = "point it at the commit it should have: `git update-index --cacheinfo " \
    "160000,COMMIT,{c}`"
SUBMODULE_FIXES = {  # where one side deleted it or has it not: `git rm`, or a commit
    code: f"`git rm {{p}}` {drop}, or {SUBMODULE_FIX} (`git ls-files -s {{p}}` lists each "
          "side's)" for code, drop in (("DU", "keeps it deleted"), ("UD", "deletes it as "
          "the patch does"), ("AU", "drops it"), ("UA", "drops it"))}
# The name git gives a file of the stack so far it moves aside (`x~HEAD`, `x~HEAD_0`, ...).
_ASIDE = re.compile(r"~HEAD(?:_\d+)?$")
# The patch's file git moved aside (`tool~e63349f (subject)`: upstream has a folder there).
_PATCH_ASIDE = re.compile(r"~[0-9a-f]{4,64} \(.*\)(?:_\d+)?$", re.DOTALL)
NEXT_CONFLICT = ["pq rebase --continue", "pq rebase --skip", "pq rebase --abort"]


@dataclass(frozen=True)
class ConflictFile:
    path: str
    code: str  # the `git status --porcelain` code: DU UD AU UA DD AA UU
    kind: str
    fix: str
    submodule: bool = False  # a stage is a submodule's commit (SUBMODULE_FIX)
    sparse: bool = False  # in a sparse checkout: `git add --sparse` (git's stop may leave
    # a file outside its patterns, which a plain `git add` refuses)


@dataclass
class RebaseStatus:
    phase: str  # conflict, stopped (before landing, files in the way), interrupted,
    # elsewhere (it runs in another worktree, `worktree`), running (`holder` runs it now)
    branch: str
    onto_ref: str
    onto: str
    number: int  # the patch pq stopped at, counted from 1 (total + 1: all replayed)
    total: int
    patch: str | None
    layer: str | None
    conflicted: list[ConflictFile] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # RebaseState.conflict_notes
    next: list[str] = field(default_factory=list)
    worktree: str | None = None
    holder: str | None = None  # the running pq command and its process, when running
    landed: bool = False  # the branch is on the rebased stack: only the state is left
    # Why `--continue` would refuse now (the user moved HEAD or the branch meanwhile), with
    # the way back, or None.
    blocked: str | None = None

    def line(self) -> str:
        """One line: what is in progress, where, and what to run next."""
        at = "at" if self.phase == "running" else "stopped at"
        where = (f"{at} patch {self.number} of {self.total}, patches/{self.patch} "
                 f"(layer {self.layer})" if self.patch else
                 f"all {self.total} patches replayed and landed, the rebase's state "
                 "not removed yet" if self.landed else
                 f"all {self.total} patches replayed, not landed yet")
        what = {"conflict": "conflict", "stopped": "stopped", "interrupted": "interrupted",
                "elsewhere": f"in the worktree {self.worktree}",
                "running": f"running: {self.holder}"}
        text = (f"rebase in progress ({what[self.phase]}): {self.branch} onto {self.onto_ref} "
                f"({self.onto[:12]}), {where}")
        if self.phase == "conflict":
            files = "file" if len(self.conflicted) + len(self.resolved) == 1 else "files"
            text += (f"; {len(self.conflicted)} conflicted, {len(self.resolved)} resolved "
                     f"{files}{', and a conflict git reports on no file' * bool(self.notes)}")
        if self.phase == "running":
            return text + "; next: wait for it to finish"
        if self.blocked:
            return text + f"; --continue refuses: {self.blocked}"
        first = "resolve the conflicted files, then " if self.conflicted else ""
        return text + "; next: " + first + " or ".join(f"`{n}`" for n in self.next)

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "branch": self.branch, "upstream": self.onto_ref,
                "onto": self.onto, "patch": None if self.patch is None else {
                    "index": self.number, "of": self.total, "name": self.patch,
                    "file": f"patches/{self.patch}", "layer": self.layer},
                "total": self.total,
                "conflicted": [{"path": c.path, "code": c.code, "kind": c.kind, "fix": c.fix}
                               for c in self.conflicted],
                "resolved": self.resolved, "notes": self.notes, "next": self.next,
                "worktree": self.worktree, "holder": self.holder, "landed": self.landed,
                "blocked": self.blocked}


def conflicts(git: Git, onto: str | None = None) -> list[ConflictFile]:
    """The unmerged paths of the index, each with its kind and fix; with the rebase's new
    base `onto`, a file an earlier patch deleted or added is said to be so."""
    out: list[ConflictFile] = []
    unmerged = git.unmerged_kinds()
    # Upstream's file that git moved aside (`sl~HEAD`: a folder of the patch's is in its way)
    # is upstream's `sl`.
    named = {path: _ASIDE.sub("", path) if code == "AU" else path
             for path, (code, _) in unmerged.items() if code in BY_AN_EARLIER_PATCH}
    upstream = {p for *_, p in git.ls_tree(onto, sorted(set(named.values())))} \
        if onto and named else set()
    # An AU file upstream lacks that the stack so far lacks too: git moved it (a folder the
    # patch renames, where upstream added it), not an earlier patch.
    moved = sorted(named[p] for p, (code, _) in unmerged.items()
                   if code == "AU" and named[p] not in upstream)
    in_stack = {p for *_, p in git.ls_tree("HEAD", moved)} if onto and moved else set()
    # The files the patch adds, where it deletes one upstream changed: a move git's rename
    # detection did not see (edited too much), whose new file should get upstream's change.
    added = git.diff_names("--cached", "HEAD", diff_filter="A") if any(
        code == "UD" for code, _ in unmerged.values()) else []
    sparse = bool(unmerged) and git.sparse_checkout()
    for path, (code, submodule) in sorted(unmerged.items()):
        kind, fix = KINDS[code]
        # Deleted although upstream has it, or added although upstream has it not.
        if onto and code in BY_AN_EARLIER_PATCH and (named[path] in upstream) == (
                code == "DU"):
            kind = BY_AN_EARLIER_PATCH[code]
            if code == "AU" and named[path] not in in_stack:
                kind = ("upstream's file, moved here by git: the patch renames the folder "
                        "upstream added it to")
        if submodule and code != "DD":
            kind, fix = f"{kind}, a submodule", SUBMODULE_FIXES.get(code, SUBMODULE_FIX)
        here = from_here(git.root, [path])
        fix = fix.format(p=shell_args(here, pathspec=True), f=shown(here[0]),
                         c=shell_args(here))
        if code == "UA" and onto and (aside := _PATCH_ASIDE.sub("", path)) != path and any(
                p.startswith(aside + "/") for *_, p in git.ls_tree(onto, [aside])):
            kind = f"the patch's {shown(aside)}, moved aside: upstream has a folder there"
            fix = (f"`mv {shell_args(here)} NEW-NAME && git add NEW-NAME && git rm -q "
                   f"{shell_args(here, True)}` keeps the patch's file under another name; or "
                   f"`git rm {shell_args(here, True)}` drops it")
        if code == "AU" and named[path] != path and named[path] in upstream:
            kind = f"upstream's {shown(named[path])}, moved aside: the patch has a folder there"
            fix = (f"`git rm {shell_args(here, True)}` keeps the patch's folder, upstream's "
                   f"file goes; or move the patch's files out of it, then `git mv "
                   f"{shell_args(here, True)} {shell_args(from_here(git.root, [named[path]]))}`")
        if code == "UD" and not submodule and (to := _moved_to(path, added)):
            fix += (f"; if the patch moved it to {list_paths(from_here(git.root, to))}, "
                    f"upstream's change to it (`git diff {shell_args([f':1:{path}'])} "
                    f"{shell_args([f':2:{path}'])}` shows it) belongs there: make it there "
                    "too")
        if sparse:
            fix = sparse_words(fix)
        out.append(ConflictFile(path, code, kind, fix, submodule, sparse))
    return out


def _moved_to(path: str, added: list[str]) -> list[str]:
    """The files the patch adds that may be `path` moved: those of its name, else (a few
    added files) all."""
    name = path.rsplit("/", 1)[-1]
    same = [p for p in added if p.rsplit("/", 1)[-1] == name]
    return same[:3] or (added if len(added) <= 2 else [])


def sparse_words(text: str) -> str:
    """The `git add`, `git rm` and `git mv` of a fix, as a sparse checkout takes them: with
    `--sparse` (a plain one refuses a path outside its patterns)."""
    return re.sub(r"(`|&& )git (add|rm|mv)\b", r"\1git \2 --sparse", text)


def resolve_hint(files: list[ConflictFile], root: Path) -> str:
    """How to resolve `files`: one clause for plain edits, one per file otherwise."""
    plain = [c.path for c in files if c.code in ("UU", "AA") and not c.submodule]
    add = "git add --sparse" if any(c.sparse for c in files) else "git add"
    parts = [f"edit, `{add} {shell_args(from_here(root, plain), True)}`"] if plain else []
    parts += [f"{shown(c.path)} ({c.kind}): {c.fix}" for c in files if c.path not in plain]
    return "; ".join(parts)


def status(git: Git) -> RebaseStatus | None:
    """The rebase in progress, or None."""
    state = rs.load(git)
    if state is None:
        return None
    total = len(state.steps)
    step = state.steps[state.index] if state.index < total else None
    st = RebaseStatus("interrupted", state.short_branch, state.onto_ref, state.onto,
                      state.index + 1, total, step.name if step else None,
                      step.layer if step else None)
    elsewhere = git.other_worktree(state.worktree)
    # Another pq process holding the lock (a --continue of this stop: it runs now).
    holder = (found if (found := lock_holder(git)) is not None
              and found.get("pid") != os.getpid() else None)
    if elsewhere is not None:  # this worktree's index and files are not the rebase's
        st.phase, st.worktree = "elsewhere", elsewhere
        st.next = ["pq rebase --abort" if rs.gone_worktree(git, state) is not None
                   else f"cd {shell_args([elsewhere])}"]
    elif state.phase == "conflict" and not (
            holder is not None and str(holder.get("command", "")).startswith("pq rebase")):
        st.phase = "conflict"
        queue_paths = rs.queue_paths_before(git, state)  # no patch touches them: an unmerged
        st.conflicted = [c for c in conflicts(git, state.onto)  # one there is the user's
                         if not is_queue_path(c.path, queue_paths)]  # (`git stash pop`)
        try:
            rs.require_no_git_operation(git)  # git's own (a rebase) begun on the stop: first
            require_in_place(git, state, "continue")
        except ConfigError as exc:  # HEAD left, the branch moved: the index is not the stop's
            if git.operation_in_progress() is not None:  # once it is done, as before it
                st.blocked, st.next = exc.render(), list(NEXT_CONFLICT)
                return st
            # `next`: the abort that runs once what `blocked` says is done.
            refusals = abort_refusals(git, state)
            st.blocked = "; ".join([exc.render(), *(
                f"`pq rebase --abort` refuses too: {r.render()}" for k, r in refusals
                if k != "in-place")])
            st.next = ["pq rebase --abort" + " --force" * any(
                k == "in-place" for k, _ in refusals)]
            return st
        unmerged = {c.path for c in st.conflicted}
        st.resolved = [p for p in state.conflict_paths if p not in unmerged]
        st.notes = list(state.conflict_notes)
        st.next = list(NEXT_CONFLICT)
        try:  # a queue file back (that `git stash pop`), another file staged among them;
            rs.require_no_git_operation(git)  # a cherry-pick of git's own begun at the stop
            require_branch_free(git, state, "continue")  # the branch in another worktree
            if state.detached:
                require_queue_aside(git, "continue", queue_paths)
        except ConfigError as exc:
            st.blocked = exc.render()
    elif holder is not None:
        # Not interrupted: another pq process replays it right now.
        st.phase, st.next = "running", []
        st.holder = f"`{holder.get('command') or 'pq'}` (process {holder.get('pid', '?')})"
    elif resumable(state):
        # Committed on after the landing (HEAD may have left the branch since): --abort
        # would drop that (it refuses, unforced).
        since = (tip := git.try_resolve(state.branch)) not in (None, state.new_tip) and \
            on_landed(git, state, tip)
        finished = landed(git, state)  # --continue only removes the state: nothing refuses
        st.phase, st.landed = "stopped", since or finished
        st.next = ["pq rebase --continue", *(["pq rebase --skip"] * (state.phase == "refused")),
                   *(["pq rebase --abort"] * (not since))]
        try:  # the branch moved while it was stopped, or HEAD left it after it landed
            if not finished:
                require_in_place(git, state, "continue")
        except ConfigError as exc:
            st.blocked = exc.render()
    else:  # interrupted: the abort is the way back, forced where it refuses (git stopped
        refused = abort_refusals(git, state)  # half-way through the files of a stop)
        if refused:
            st.blocked = "; ".join(exc.render() for _, exc in refused)
        st.next = ["pq rebase --abort" + " --force" * any(k != "branch" for k, _ in refused)]
    return st


def resumable(state: rs.RebaseState) -> bool:
    """Whether `--continue` goes on from a rebase that stopped outside a conflict: files
    were in the way of showing a conflict or of landing (the replay is saved)."""
    return (state.phase == "replaying" and state.detached) or state.phase in ("landing",
                                                                              "refused")


def landed(git: Git, state: rs.RebaseState) -> bool:
    """Whether a landing got to its end (the branch on the rebased stack, HEAD on it) and only
    the state is left (pq was killed before removing it); commits made on it since stay."""
    tip = git.try_resolve(state.branch) if git.current_branch() == state.branch else None
    return tip is not None and on_landed(git, state, tip)


def ways_out(st: RebaseStatus | None) -> str:
    """What ends the rebase `st` says is in progress, for a hint: its `next` commands (an
    interrupted one has no `--continue`), "`a` or `b`"."""
    found = [n for n in (st.next if st is not None else []) if n.startswith("pq rebase")]
    return " or ".join(f"`{n}`" for n in found or ["pq rebase --continue", "pq rebase --abort"])


def refuse_while_rebasing(git: Git, command: str) -> None:
    """Every command that rewrites the branch or the queue refuses while a rebase runs."""
    st = status(git)
    if st is None:
        rs.require_no_git_operation(git)
        return
    if st.phase == "elsewhere":  # another worktree's (of another branch, maybe)
        raise ConfigError(f"a pq rebase of {st.branch} is in progress in the worktree "
                          f"{st.worktree}; pq keeps one rebase at a time in a repository, "
                          f"and {command} waits for it to end",
                          hint=f"`cd {shell_args([st.worktree or ''])}`, then `pq rebase "
                               f"--continue` or `pq rebase --abort`; then run {command} again")
    where = ("running now" if st.phase == "running" else f"stopped at patches/{st.patch}"
             if st.patch else "landed, its state not removed yet" if st.landed else
             "not landed yet")
    raise ConfigError(f"a pq rebase of {st.branch} is in progress ({where}); {command} would "
                      "rewrite the series under it",
                      hint=f"wait for it to finish, then run {command} again"
                      if st.phase == "running" else
                      f"end it with {ways_out(st)}, then run {command} again; `pq status` "
                      "says where it stands")


def require_resolved(git: Git, state: rs.RebaseState) -> None:
    """--continue takes the index: every conflict resolved and added, and no conflict
    marker in it (as `git diff --cached --check` against the stack's tip finds them, also in
    a file whose diff is binary)."""
    unmerged, changed = worktree.unstaged_paths(git)
    if unmerged:
        files = [c for c in conflicts(git, state.onto) if c.path in unmerged]
        raise OperationFailed(f"{list_paths(unmerged)} still unmerged",  # a conflict: 1
                              hint=f"{resolve_hint(files, git.root)}, then `pq rebase --continue`")
    words = sparse_words if git.sparse_checkout() else str
    if changed:
        raise ConfigError(f"changes in {list_paths(changed)} are not added",
                          hint=words("`git add` what belongs to the patch (or `git checkout "
                                     "-- <file>`), then `pq rebase --continue`"))
    markers = added_conflict_markers(git, state.tip, state.steps[state.index].commit)
    if markers:
        path, line = markers[0]
        marked = list(dict.fromkeys(p for p, _ in markers))
        more = f" (and {len(markers) - 1} more)" if len(markers) > 1 else ""
        raise OperationFailed(
            f"conflict marker added{more}; the resolution of "
            f"patches/{state.steps[state.index].name} would commit it", path=shown(path),
            line=line,
            hint=words(f"edit {list_paths(marked)}, `git add "
                       f"{shell_args(from_here(git.root, marked), True)}`, then `pq rebase "
                       "--continue`; lines that are the file's content (a merge tool's test "
                       "data) want a `conflict-marker-size` attribute above 7 in "
                       ".gitattributes, added with the resolution (the pre-push check reads "
                       "the committed one)"))
