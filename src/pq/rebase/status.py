"""What a rebase in progress is doing, for the user: `pq status`, the first line of
`pq series` and `pq log`, the refusal of every rewriting command while a rebase is
stopped, and the fix of each conflicted file by its kind (the conflict markers a
resolution would commit: pq.rebase.markers).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq.errors import ConfigError, OperationFailed
from pq.git.repo import Git
from pq.oplog.lock import lock_holder
from pq.quoting import from_here, list_paths, shell_args, shown
from pq.rebase import state as rs
from pq.rebase import worktree
from pq.rebase.markers import added_conflict_markers

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
# leaves the submodule itself as it was, often not checked out at all).
SUBMODULE_FIX = "point it at the commit it should have: `git update-index --cacheinfo " \
    "160000,COMMIT,{p}`"
NEXT_CONFLICT = ["pq rebase --continue", "pq rebase --skip", "pq rebase --abort"]


@dataclass(frozen=True)
class ConflictFile:
    path: str
    code: str  # the `git status --porcelain` code: DU UD AU UA DD AA UU
    kind: str
    fix: str
    submodule: bool = False  # a stage is a submodule's commit (SUBMODULE_FIX)


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
    asked = [path for path, (code, _) in unmerged.items() if code in BY_AN_EARLIER_PATCH]
    upstream = {p for *_, p in git.ls_tree(onto, asked)} if onto and asked else set()
    for path, (code, submodule) in sorted(unmerged.items()):
        kind, fix = KINDS[code]
        # Deleted although upstream has it, or added although upstream has it not.
        if onto and code in BY_AN_EARLIER_PATCH and (path in upstream) == (code == "DU"):
            kind = BY_AN_EARLIER_PATCH[code]
        if submodule and code in ("UU", "AA"):
            kind, fix = f"{kind}, a submodule", SUBMODULE_FIX
        here = from_here(git.root, [path])
        fix = fix.format(p=shell_args(here), f=shown(here[0]))
        out.append(ConflictFile(path, code, kind, fix, submodule))
    return out


def resolve_hint(files: list[ConflictFile], root: Path) -> str:
    """How to resolve `files`: one clause for plain edits, one per file otherwise."""
    plain = [c.path for c in files if c.code in ("UU", "AA") and not c.submodule]
    parts = [f"edit, `git add {shell_args(from_here(root, plain))}`"] if plain else []
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
    if elsewhere is not None:  # this worktree's index and files are not the rebase's
        st.phase, st.worktree = "elsewhere", elsewhere
        st.next = ["pq rebase --abort" if rs.gone_worktree(git, state) is not None
                   else f"cd {shell_args([elsewhere])}"]
    elif state.phase == "conflict":
        st.phase = "conflict"
        st.conflicted = conflicts(git, state.onto)
        try:
            require_in_place(git, state, "continue")
        except ConfigError as exc:  # HEAD left, the branch moved: the index is not the stop's
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
    elif (holder := lock_holder(git)) is not None and holder.get("pid") != os.getpid():
        # Not interrupted: another pq process replays it right now.
        st.phase, st.next = "running", []
        st.holder = f"`{holder.get('command') or 'pq'}` (process {holder.get('pid', '?')})"
    elif resumable(state):
        # Committed on after the landing (HEAD may have left the branch since): --abort
        # would drop that (it refuses, unforced).
        since = (tip := git.try_resolve(state.branch)) not in (None, state.new_tip) and \
            _on_landed(git, state, tip)
        st.phase, st.landed = "stopped", since or landed(git, state)
        st.next = ["pq rebase --continue", *(["pq rebase --skip"] * (state.phase == "refused")),
                   *(["pq rebase --abort"] * (not since))]
        try:  # the branch moved while it was stopped, or HEAD left it after it landed
            require_in_place(git, state, "continue")
        except ConfigError as exc:
            st.blocked = exc.render()
    else:
        st.next = ["pq rebase --abort"]
    return st


def abort_refusals(git: Git, state: rs.RebaseState, force: bool = False
                   ) -> list[tuple[str, ConfigError]]:
    """Every reason `pq rebase --abort` (`force`: `--abort --force`) refuses now, in the
    order it checks, each with its kind: "in-place" (the branch moved, commits were made
    on the stopped patch: `--force` overrides it), "queue" (queue files came back: `--force`
    writes over them) or "branch" (checked out in another worktree)."""
    checks: list[tuple[str, Callable[[], None]]] = []
    if not force:
        checks.append(("in-place", lambda: require_in_place(git, state, "abort")))
        if state.detached and git.current_branch() is None:  # HEAD on the stack so far,
            checks.append(("queue", lambda: require_queue_aside(git, "abort")))  # queue aside
    checks.append(("branch", lambda: require_branch_free(git, state, "abort")))
    found = []
    for kind, check in checks:
        try:
            check()
        except ConfigError as exc:
            found.append((kind, exc))
    return found


def resumable(state: rs.RebaseState) -> bool:
    """Whether `--continue` goes on from a rebase that stopped outside a conflict: files
    were in the way of showing a conflict or of landing (the replay is saved)."""
    return (state.phase == "replaying" and state.detached) or state.phase in ("landing",
                                                                              "refused")


def landed(git: Git, state: rs.RebaseState) -> bool:
    """Whether a landing got to its end (the branch on the rebased stack, HEAD on it) and only
    the state is left (pq was killed before removing it); commits made on it since stay."""
    tip = git.try_resolve(state.branch) if git.current_branch() == state.branch else None
    return tip is not None and _on_landed(git, state, tip)


def _on_landed(git: Git, state: rs.RebaseState, tip: str) -> bool:
    """Whether the branch's `tip` is the landed stack, or commits made on it."""
    return state.phase == "landing" and state.new_tip is not None and (
        tip == state.new_tip or git.is_ancestor(state.new_tip, tip))


def refuse_while_rebasing(git: Git, command: str) -> None:
    """Every command that rewrites the branch or the queue refuses while a rebase runs."""
    st = status(git)
    if st is None:
        rs.require_no_git_operation(git)
        return
    where = ("running now" if st.phase == "running" else f"stopped at patches/{st.patch}"
             if st.patch else "landed, its state not removed yet" if st.landed else
             "not landed yet")
    raise ConfigError(f"a pq rebase of {st.branch} is in progress ({where}); {command} would "
                      "rewrite the series under it",
                      hint=f"wait for it to finish, then run {command} again"
                      if st.phase == "running" else
                      "finish it with `pq rebase --continue` or end it with "
                      f"`pq rebase --abort`, then run {command} again; `pq status` "
                      "says where it stands")


def require_branch_free(git: Git, state: rs.RebaseState, action: str) -> None:
    """Refuse to put HEAD back on the branch (--continue, --skip, --abort, forced or not)
    while another worktree has it checked out: HEAD is detached while a rebase is stopped,
    so git let `git worktree add` take the branch meanwhile, and both worktrees would then
    share it (a commit in the other one, from its stale index, would undo the rebase)."""
    if not state.detached:
        return
    where = git.branches_elsewhere().get(state.branch)
    if where is not None:
        raise ConfigError(
            f"{state.short_branch} is checked out in the worktree {where} (added while the "
            f"rebase was stopped); pq rebase --{action} would check it out here too",
            hint=f"switch that worktree to another branch (`git -C {shell_args([str(where)])} "
                 f"switch --detach`) or remove it, then `pq rebase --{action}`")


def require_in_place(git: Git, state: rs.RebaseState, action: str) -> None:
    """Refuse --continue/--skip (and, unless forced, --abort) when the user moved what a
    stopped rebase holds: the branch (committed to while the rebase was stopped, on it or
    after switching back to it) would be overwritten, and commits made on the stopped patch
    would be folded into it. One commit on the stopped tip is the resolution committed by
    hand, and is taken as such."""
    name = state.short_branch
    moved = git.try_resolve(state.branch)
    # The branch stays at its old tip until the landing moves it to the new one.
    if moved != state.orig_head and (moved is None or moved != state.new_tip):
        where = f"to {moved[:12]} ({git.commit(moved).title})" if moved else "(deleted)"
        keep = f"`git branch keep-{name} {moved[:12]}` keeps it, " if moved else ""
        if moved and _on_landed(git, state, moved):  # committed on after the landing
            assert state.new_tip is not None
            since = (f"{name} moved {where} since the rebase landed it at "
                     f"{state.new_tip[:12]} (only the rebase's state was left)")
            if action == "abort":
                raise ConfigError(f"{since}, and `pq rebase --abort` would drop what was "
                                  "committed since", hint="`pq rebase --continue` ends the "
                                  f"rebase, keeping it; or {keep}then `pq rebase --abort "
                                  "--force`")
            raise ConfigError(f"{since}, and HEAD is not on {name}",
                              hint=f"`git switch {name}`, then `pq rebase --continue` ends "
                                   "the rebase, keeping what was committed since")
        back = (f"`git update-ref refs/heads/{name} {state.orig_head[:12]}` puts it back; "
                f"then `git switch --detach {state.tip[:12]}` and `pq rebase --{action}`"
                if state.detached else
                f"`git reset --keep {state.orig_head[:12]}` on {name} puts it back; then "
                f"`pq rebase --{action}`")
        raise ConfigError(
            f"{name} moved {where} while the rebase was stopped; it was at "
            f"{state.orig_head[:12]}, and `pq rebase --{action}` would overwrite it",
            hint=f"{keep}then `pq rebase --abort --force`" if action == "abort" else
            f"{keep}{back}")
    if state.phase != "conflict" or not state.detached:
        return
    head = git.try_resolve("HEAD")
    if action == "abort":  # HEAD goes back to the branch; commits on the patch stay behind
        _require_nothing_left_behind(git, state, head)
        return
    if git.current_branch() is not None or head is None or (
            head != state.tip and not git.is_ancestor(state.tip, head)):
        raise ConfigError(
            f"HEAD left the stopped rebase (it was at {state.tip[:12]}, patch "
            f"patches/{state.steps[state.index].name})",
            hint=f"`git switch --detach {state.tip[:12]}`, resolve again, then "
                 f"`pq rebase --{action}`; or `pq rebase --abort`")
    if action == "skip" and head != state.tip:  # git's --skip would keep them: refuse
        count, last = git.count(f"{state.tip}..{head}"), git.commit(head)
        them = "it" if count == 1 else "them"
        raise ConfigError(
            f"{'a commit was' if count == 1 else f'{count} commits were'} made on the "
            f"stopped patch patches/{state.steps[state.index].name} (the last: {head[:12]} "
            f"{last.title}), and `pq rebase --skip` would drop {them} with the patch",
            hint=f"`git branch keep-{state.short_branch} {head[:12]}` keeps {them}, then `git "
                 f"reset --hard {state.tip[:12]}` and `pq rebase --skip`; or `pq rebase "
                 "--continue` takes one commit as the patch's resolution")
    if head != state.tip and (made := _past_the_resolution(git, state, head)):
        raise ConfigError(f"{made}; pq keeps one commit per patch",
                          hint=f"squash them (`git reset --soft {state.tip[:12]}`) then `pq "
                               f"rebase --{action}`; a separate change becomes a patch of its "
                               "own after the rebase")


def _past_the_resolution(git: Git, state: rs.RebaseState, head: str) -> str | None:
    """What was committed on the stopped patch (HEAD `head`, a descendant of its tip)
    past the one commit that is its resolution committed by hand, or None."""
    count, last = git.count(f"{state.tip}..{head}"), git.commit(head)
    if count > 1 or len(last.parents) != 1:
        return (f"{count} commits were made on the stopped patch "
                f"patches/{state.steps[state.index].name} (the last: {head[:12]} "
                f"{last.title})")
    return None


def _require_nothing_left_behind(git: Git, state: rs.RebaseState, head: str | None) -> None:
    """Refuse --abort (unless forced) when commits past the resolution were made on the stopped
    patch: they would be on no branch (a resolution committed by hand goes, as a staged one)."""
    if (head is None or head == state.tip or git.current_branch() is not None
            or not git.is_ancestor(state.tip, head)):
        return
    if made := _past_the_resolution(git, state, head):
        raise ConfigError(f"{made}; `pq rebase --abort` would leave them on no branch",
                          hint=f"`git branch keep-{state.short_branch} {head[:12]}` keeps "
                               "them, then `pq rebase --abort --force`")


def require_queue_aside(git: Git, action: str) -> None:
    """Refuse --continue/--skip/--abort while a queue file is back in the index or the working
    tree (`git checkout <branch> -- series.yaml`) with HEAD detached on the stack so far: a
    stopped rebase keeps the queue in its state and writes it again when it ends, over it."""
    staged, untracked = worktree.queue_files_back(git)
    found = sorted(staged + untracked)
    if found:
        them = "it" if len(found) == 1 else "them"
        remove = ([f"`git rm -q -f {shell_args(from_here(git.root, staged))}`"] if staged
                  else []) + ([f"`rm {shell_args(from_here(git.root, untracked))}`"]
                              if untracked else [])
        raise ConfigError(
            f"{list_paths(found)} came back while the rebase is stopped; pq keeps the "
            f"queue aside and writes it again when the rebase ends, over {them}",
            hint=f"copy what you want to keep elsewhere, {' and '.join(remove)}, then "
                 f"`pq rebase --{action}`" + ("" if action == "abort" else
                                              "; edit the new series once it is done"))


def require_resolved(git: Git, state: rs.RebaseState) -> None:
    """--continue takes the index: every conflict resolved and added, and no conflict
    marker in it (as `git diff --cached --check` against the stack's tip finds them)."""
    unmerged, changed = worktree.unstaged_paths(git)
    if unmerged:
        files = [c for c in conflicts(git, state.onto) if c.path in unmerged]
        raise OperationFailed(f"{list_paths(unmerged)} still unmerged",  # a conflict: 1
                              hint=f"{resolve_hint(files, git.root)}, then `pq rebase --continue`")
    if changed:
        raise ConfigError(f"changes in {list_paths(changed)} are not added",
                          hint="`git add` what belongs to the patch (or `git checkout -- "
                               "<file>`), then `pq rebase --continue`")
    markers = added_conflict_markers(git, state.tip, state.steps[state.index].commit)
    if markers:
        path, line = markers[0]
        more = f" (and {len(markers) - 1} more)" if len(markers) > 1 else ""
        raise OperationFailed(
            f"{shown(path)}:{line}: conflict marker added{more}; the resolution of "
            f"patches/{state.steps[state.index].name} would commit it",
            hint=f"edit {shown(path)} (and any other file `git diff --cached --check` names), "
                 f"`git add {shell_args(from_here(git.root, [path]))}`, then "
                 "`pq rebase --continue`")
