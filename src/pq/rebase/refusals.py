"""What a stopped rebase's `--continue`, `--skip` and `--abort` refuse, each with the way
out: the branch or HEAD moved meanwhile, commits made on the stopped patch, the branch
checked out in another worktree, queue files back in the index or the working tree.
`pq status` asks the same checks to say what `--continue` would do
(pq.rebase.status).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from pq.errors import ConfigError, OperationFailed
from pq.git.repo import Git
from pq.oplog import log
from pq.queue.files import index_entries, is_queue_path
from pq.queue.reach import shallow_commits
from pq.quoting import from_here, list_paths, shell_args
from pq.rebase import state as rs
from pq.rebase import worktree


def abort_refusals(git: Git, state: rs.RebaseState, force: bool = False
                   ) -> list[tuple[str, ConfigError]]:
    """Every reason `pq rebase --abort` (`force`: `--abort --force`) refuses now, in the
    order it checks, each with its kind: "in-place" (the branch moved, commits were made
    on the stopped patch: `--force` overrides it), "elsewhere" (uncommitted changes where
    HEAD went since the stop: `--force` throws them away), "queue" (queue files came back:
    `--force` writes over them) or "branch" (checked out in another worktree)."""
    checks: list[tuple[str, Callable[[], None]]] = []
    if not force:
        checks.append(("in-place", lambda: require_in_place(git, state, "abort")))
        checks.append(("elsewhere", lambda: _require_no_edits_off_the_stack(git, state)))
        if state.detached and git.current_branch() is None:  # HEAD on the stack so far,
            checks.append(("queue", lambda: require_queue_aside(  # queue aside
                git, "abort", rs.queue_paths_before(git, state))))
    checks.append(("branch", lambda: require_branch_free(git, state, "abort")))
    found = []
    for kind, check in checks:
        try:
            check()
        except ConfigError as exc:
            found.append((kind, exc))
    return found


def on_landed(git: Git, state: rs.RebaseState, tip: str) -> bool:
    """Whether the branch's `tip` is the landed stack, or commits made on it."""
    return state.phase == "landing" and state.new_tip is not None and (
        tip == state.new_tip or git.is_ancestor(state.new_tip, tip))


def require_branch_free(git: Git, state: rs.RebaseState, action: str) -> None:
    """Refuse to put HEAD back on the branch (--continue, --skip, --abort, forced or not)
    while another worktree has it checked out: HEAD is detached while a rebase is stopped,
    so git let `git worktree add` take the branch meanwhile, and both worktrees would then
    share it (a commit in the other one, from its stale index, would undo the rebase)."""
    if not state.detached:
        return
    where = git.branches_elsewhere().get(state.branch)
    if where is not None and git.worktree_key(where) not in state.shared_with:
        raise ConfigError(
            f"{state.short_branch} is checked out in the worktree {where} (added while the "
            f"rebase was stopped); pq rebase --{action} would check it out here too",
            hint=f"switch that worktree to another branch (`git -C {shell_args([str(where)])} "
                 f"switch --detach`) or remove it, then `pq rebase --{action}`")


def _stop_kept(git: Git, state: rs.RebaseState, staged: bool) -> bool:
    """Whether the index (`staged`) or else the files differ from the stopped tip only in
    the stopped patch's own files and its conflicted ones."""
    step = state.steps[state.index]
    own = set(git.changed_paths(step.parent, step.commit)) | set(state.conflict_paths)
    return set(git.diff_names(*(["--cached"] if staged else []), state.tip)) <= own


def require_in_place(git: Git, state: rs.RebaseState, action: str) -> None:
    """Refuse --continue/--skip (and, unless forced, --abort) when the user moved what a
    stopped rebase holds: the branch (committed to while the rebase was stopped, on it or
    after switching back to it) would be overwritten, and commits made on the stopped patch
    would be folded into it. One commit on the stopped tip is the resolution committed by
    hand, and is taken as such."""
    name = state.short_branch
    moved = git.try_resolve(state.branch)
    # The branch stays at its old tip until the landing moves it to the new one. One deleted
    # meanwhile holds nothing to lose: the abort makes it again where it was.
    if moved != state.orig_head and (moved is None or moved != state.new_tip) and not (
            moved is None and action == "abort"):
        where = f"to {moved[:12]} ({git.commit(moved).title})" if moved else ""
        keep = f"`git branch keep-{name} {moved[:12]}` keeps it, " if moved else ""
        if moved and on_landed(git, state, moved):  # committed on after the landing
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
            f"{state.orig_head[:12]}, and `pq rebase --{action}` would overwrite it" if moved
            else f"{name} was deleted while the rebase was stopped (it was at "
            f"{state.orig_head[:12]})",
            hint=f"{keep}then `pq rebase --abort --force`" if action == "abort" else
            f"{keep}{back}")
    if state.detached and git.current_branch() is None and (
            state.phase in ("landing", "refused", "replaying")):
        _require_stop_untouched(git, state, action)
    if state.phase != "conflict" or not state.detached:
        return
    head = git.try_resolve("HEAD")
    if action == "abort":  # HEAD goes back to the branch; commits on the patch stay behind
        _require_nothing_left_behind(git, state, head)
        return
    on_stack = head is not None and (head == state.tip or git.is_ancestor(state.tip, head))
    attached = git.current_branch()
    if attached is not None and on_stack:
        # `git checkout -b NEW` at the stop: the commit is right, HEAD only got attached. The
        # index may still be unmerged, where `git switch --detach <tip>` refuses; `git
        # switch --detach` with no commit keeps the index and the files as they are.
        raise ConfigError(
            f"HEAD is on the branch {attached.removeprefix('refs/heads/')} (checked out while "
            f"the rebase was stopped at patches/{state.steps[state.index].name}), not "
            "detached on the stopped rebase",
            hint="`git switch --detach` detaches it where it is, keeping the conflict and what "
                 f"you resolved; then `pq rebase --{action}`")
    # `git reset --soft/--mixed HEAD~` at the stop: HEAD went back, the index (--soft) or
    # the files (--mixed) are the stop's still (they differ from the tip in the patch's
    # files alone: a checkout of an older commit carries its own), and HEAD goes back.
    if attached is None and head is not None and not on_stack and action == "continue" and \
            git.is_ancestor(head, state.tip) and git.changed_from(head) and \
            _stop_kept(git, state, staged := not git.index_is(head)):
        raise ConfigError(
            f"HEAD was moved back from the stopped rebase to {head[:12]} (it was at "
            f"{state.tip[:12]}, patch patches/{state.steps[state.index].name})",
            hint=(f"`git reset --soft {state.tip[:12]}` puts HEAD back, keeping the index and "
                  "files as they are" if staged else f"`git reset {state.tip[:12]}` puts HEAD "
                  "and the index back, keeping the files; `git add` what you resolved")
            + "; then `pq rebase --continue` (or `pq rebase --abort`)")
    if attached is not None or head is None or not on_stack:
        raise ConfigError(
            f"HEAD left the stopped rebase (it was at {state.tip[:12]}, patch "
            f"patches/{state.steps[state.index].name})",
            hint=(f"`git switch --detach {state.tip[:12]}` and `git cherry-pick --no-commit "
                  f"{state.steps[state.index].commit[:12]}` show the patch's conflict again: "
                  "resolve it, then `pq rebase --continue`" if action == "continue" else
                  f"`git switch --detach {state.tip[:12]}`, then `pq rebase --{action}`")
            + "; or `pq rebase --abort`")
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


def _require_stop_untouched(git: Git, state: rs.RebaseState, action: str) -> None:
    """A rebase stopped outside a conflict (files in the way of showing one, or of landing)
    left HEAD detached on the stack so far, index and files as it has them: `--continue`
    and `--skip` reset them to the stack's tip (`git reset --hard`), `--abort` to the
    branch's, so a commit made there since (the file in the way, committed) or an edit of a
    tracked file would go with no word. HEAD checked out back along the stack loses
    nothing, nor HEAD on the landed stack (a landing killed after its checkout). The files
    are asked about only where pq stopped by itself (its last entry in the log `failed`,
    a refusal); a rebase killed while it replayed left the last stop's resolution there."""
    head = git.try_resolve("HEAD")
    if head is None:
        return
    name, again = state.short_branch, f"`pq rebase --{action}`"
    top = state.new_tip if state.phase == "landing" and state.new_tip else state.tip
    if head != top and not git.is_ancestor(head, top) and not git.has_refs_under(
            "refs/heads/", "refs/tags/", "refs/remotes/", contains=head):  # on no branch
        raise ConfigError(
            f"HEAD moved to {head[:12]} ({git.commit(head).title}) while the rebase was "
            f"stopped, and {again} would leave it on no branch",
            hint=f"`git branch keep-{name} {head[:12]}` keeps it, then " + (
                "`pq rebase --abort --force`" if action == "abort" else
                f"`git switch --detach {state.tip[:12]}` and {again} (`git cherry-pick` onto "
                f"{name} what belongs there once it is done)"))
    if state.phase == "replaying" and not _stopped_by_pq(git, state):
        return
    queue = rs.queue_paths_before(git, state)  # back there: require_queue_aside says so
    changed = sorted({path for _, path in git.status_porcelain()
                      if not is_queue_path(path, queue)})
    if changed and head != state.tip:  # a file as the stack's tip has it is not lost by
        # a reset to it (--continue cut short once it saved the resolution as the new tip)
        mine = git.changed_from(state.tip, changed)  # nor by an abort: the stop's
        changed = [path for path in changed if path in mine]
    if changed:
        raise ConfigError(
            f"uncommitted changes in {list_paths(changed)} while the rebase was stopped "
            f"would be thrown away by {again}, which puts the files of "
            f"{'the branch' if action == 'abort' else 'the rebased stack'} back",
            hint=f"`git stash` them, then {again}, and `git stash pop` once it is done" + (
                "; or `pq rebase --abort --force`" if action == "abort" else ""))


def _on_the_stack(git: Git, state: rs.RebaseState, head: str) -> bool:
    """Whether `head` is where the stop left HEAD: at a conflict, the stack so far or a
    commit on it; else the stack so far (the landed stack at a landing) or back along it."""
    if state.phase == "conflict":
        return head == state.tip or git.is_ancestor(state.tip, head)
    top = state.new_tip if state.phase == "landing" and state.new_tip else state.tip
    return head == top or git.is_ancestor(head, top)


def _stopped_by_pq(git: Git, state: rs.RebaseState) -> bool:
    """Whether the rebase's newest `pq rebase` log entry (other commands may log between:
    `pq hook install`) refused to go on (files in the way): it left the files clean, where
    a killed one (`started`) may not have."""
    records = log.read(git, state.log_id) if state.log_id is not None else []
    ours = [r for r in records if str(r.get("command", "")).startswith("pq rebase")]
    return bool(ours) and ours[-1].get("status") == "failed"


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


def _require_no_edits_off_the_stack(git: Git, state: rs.RebaseState) -> None:
    """Refuse --abort (unless forced) while HEAD left the stopped rebase for another commit
    or branch (`git switch main` for a hotfix, `git switch` to the rebased branch itself)
    and tracked files there have uncommitted changes: the abort's `git reset --hard` would
    throw them away. On the stack they are the stop's (a conflict and its resolution, a
    refused landing's files), which the abort is there to throw away, as an abort killed
    half-way (`aborting`) left them; at a conflict, also under a branch made there (`git
    switch -c tmp` keeps the conflict, unmerged: neither a commit nor a stash takes it).
    A branch made at a stop outside a conflict holds the user's own edits."""
    if not state.detached or not state.touched or state.aborting:
        return
    head = git.try_resolve("HEAD")
    if head is None or ((git.current_branch() is None or state.phase == "conflict")
                        and _on_the_stack(git, state, head)):
        return
    changed = sorted({path for _, path in git.status_porcelain()})
    if state.phase == "stopping" and head == state.orig_head:
        # The queue's uncommitted edits as the rebase carried them the abort puts back; a
        # queue file that differs from that is an edit made since, or git's, as the rest.
        carried = _queue_as_carried(git, state)
        if not (changed := [p for p in changed if p not in carried]):
            return
        raise ConfigError(  # git stopped mid-way through the checkout that shows a conflict
            f"{list_paths(changed)} differ from {state.short_branch}: git was stopped while it "
            "wrote the files of the rebase's conflict (the rebase was interrupted then), "
            "and these are its half-written files, or edits made since",
            hint=f"`pq rebase --abort --force` puts {state.short_branch}'s files back, "
                 "throwing them away (copy any edit of yours elsewhere first)")
    if changed:
        branch = git.current_branch()
        where = (branch.removeprefix("refs/heads/") if branch is not None
                 else f"the detached HEAD {head[:12]}")
        raise ConfigError(
            f"uncommitted changes in {list_paths(changed)} on {where} (checked out while the "
            f"rebase was stopped) would be thrown away by `pq rebase --abort`, which puts "
            f"{state.short_branch}'s files back",
            hint="commit them or `git stash` them, then `pq rebase --abort`; or `pq rebase "
                 "--abort --force` throws them away")


def _queue_as_carried(git: Git, state: rs.RebaseState) -> set[str]:
    """The queue files whose bytes on disk and index entries are still those the rebase
    saved when it started (its `queue_before` and `index_before`)."""
    if state.index_before is None:  # (a state of an older version: nothing known)
        return set()
    on_disk = {p: git.hash_blob(data) for p, data in worktree.worktree_queue_files(git).items()}
    staged = {e.split("\t", 1)[1]: e for e in index_entries(git)}
    before = {e.split("\t", 1)[1]: e for e in state.index_before}
    return {p for p in {*on_disk, *state.queue_before}
            if on_disk.get(p) == state.queue_before.get(p) and staged.get(p) == before.get(p)}


def require_queue_aside(git: Git, action: str, queue_paths: tuple[str, ...]) -> None:
    """Refuse --continue/--skip/--abort while a queue file is back in the index or the working
    tree (`git checkout <branch> -- series.yaml`) with HEAD detached on the stack so far: a
    stopped rebase keeps the queue in its state and writes it again when it ends, over it."""
    staged, untracked = worktree.queue_files_back(git)
    if not (found := sorted(staged + untracked)):
        _require_nothing_staged_in_queue_dirs(git, queue_paths, action)
    else:
        them = "it" if len(found) == 1 else "them"
        remove = ([f"`git rm -q -f {shell_args(from_here(git.root, staged), True)}`"] if staged
                  else []) + ([f"`rm {shell_args(from_here(git.root, untracked))}`"]
                              if untracked else [])
        raise ConfigError(
            f"{list_paths(found)} came back while the rebase is stopped; pq keeps the "
            f"queue aside and writes it again when the rebase ends, over {them}",
            hint=f"copy what you want to keep elsewhere, {' and '.join(remove)}, then "
                 f"`pq rebase --{action}`" + ("" if action == "abort" else
                                              "; edit the new series once it is done"))


def _require_nothing_staged_in_queue_dirs(git: Git, queue_paths: tuple[str, ...],
                                          action: str) -> None:
    """Refuse to go on while the user's files are staged in the queue's folders (new, or
    unmerged by a `git stash pop`): a patch's commit carries nothing there, and the rebase
    ends with those folders as the branch has them, so they would be dropped (`git rebase`
    commits them with the resolution; pq cannot)."""
    found = worktree.staged_in_queue_dirs(git, queue_paths)
    if found:
        args = shell_args(from_here(git.root, found), True).removeprefix("-- ")
        them = "it" if len(found) == 1 else "them"
        raise ConfigError(
            f"{list_paths(found)} {'is' if len(found) == 1 else 'are'} staged in the series' "
            f"folders while the rebase is stopped: a patch's commit carries nothing there, and "
            f"pq rebase --{action} would drop {them}",
            hint=f"`git rm --cached -q -- {args}` keeps {them} in the working tree only; then "
                 f"`pq rebase --{action}`, and commit {them} once the rebase is done")


def require_pre_rebase_hook(git: Git, upstream: str) -> str | None:
    """Refuse the rebase the repository's pre-rebase hook refuses, as `git rebase` does
    (with the ref as given: the hook's first argument; the branch is the one checked out).
    The hook as git names it when git would say it ignored it (not executable), else None."""
    from pq.git.hooks import run_hook

    code, ignored = run_hook(git, "pre-rebase", [upstream])
    if code:
        raise OperationFailed(f"the pre-rebase hook refused to rebase (exit {code}); nothing "
                              "changed", hint="see what the hook says above; `pq rebase "
                              f"--no-verify {shell_args([upstream])}` rebases without asking "
                              "it, as `git rebase --no-verify` does")
    return ignored


def require_forward(git: Git, ref: str, onto: str, old_base: str, crossed: Collection[str]
                    ) -> None:
    """Refuse (unless forced) an `onto` that moves the series back: an ancestor of the
    base (`crossed`, old_base..onto, is empty)."""
    if onto != old_base and not crossed:
        raise ConfigError(f"{ref} ({onto[:12]}) is an ancestor of the series base "
                          f"{old_base[:12]}: rebasing onto it moves the series back to an "
                          "older upstream (a stale or mistyped ref?)",
                          hint=f"check the ref (`git fetch` it?); `pq rebase --force {ref}` "
                               "rebases onto it anyway")


def require_on_the_base_line(git: Git, ref: str, onto: str, old_base: str,
                             crossed: Collection[str]) -> None:
    """Refuse (unless forced) an `onto` off the base's line (a release branch, an upstream
    rewritten): the commits of the base it lacks would be left out, where `git rebase`
    replays them as the fork's."""
    if crossed and not git.is_ancestor(old_base, onto):  # (the range listed: no process)
        if cut := sorted(shallow_commits(git) & set(crossed)):  # git cannot see they meet
            full = git.ref_name(ref) or ""
            remotes = {key[len("remote."):-len(".url")]
                       for key in git.config_matching(r"^remote\..*\.url$")}
            remote = max((r for r in remotes if full.startswith(f"refs/remotes/{r}/")),
                         key=len, default="")  # a remote's name may hold a slash
            raise ConfigError(
                f"{ref} ({onto[:12]}) does not reach the series base {old_base[:12]} as far "
                f"as this repository sees: a shallow fetch cut its history off at "
                f"{cut[0][:12]}", hint=f"`{f'git fetch --unshallow {remote}'.strip()}` (or "
                f"`--deepen=<commits>` in its place), then `pq rebase {ref}` again")
        raise ConfigError(
            f"{ref} ({onto[:12]}) lacks {git.count(f'{onto}..{old_base}')} commit(s) of the "
            f"series base {old_base[:12]}: another line of upstream (a release branch?), or "
            "upstream rewritten; rebasing onto it leaves them out, where `git rebase` would "
            "replay them as the fork's", hint=f"check the ref; `pq rebase --force {ref}` "
            f"rebases the patches alone onto it (as `git rebase --onto {ref} {old_base[:12]}`)")
