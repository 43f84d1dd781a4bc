"""What an export would overwrite: the user's own edits of the queue files since pq last
wrote them (a patch file edited by hand, committed or not; the order of series.yaml's
entries), each refused in one line naming the file and the way to keep it; and what a
rebase would lose where the branch's commits and the queue differ.
"""

from __future__ import annotations

import re

from pq.errors import ConfigError
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.model import patchfile
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.oplog import log
from pq.queue import stack as stack_mod
from pq.queue.files import Queue
from pq.quoting import from_here, shell_args


def refuse_losing_them(git: Git, current: Queue, committed: Queue | None,
                       last: tuple[CommitId, Queue] | None, fresh: Queue) -> None:
    """Refuse an export of `fresh` over `current` (the working tree's queue; `committed`:
    HEAD's; `last`: what pq last wrote, and where) that would lose a hand edit."""
    _uncommitted_patch_edits(git, current, committed, fresh)
    _added(current, fresh)
    if committed is not None:
        _removed(current, committed, fresh, committed=False)
    if committed is not None and last is not None:
        _committed_patch_edits(git, committed, last, fresh)
        _removed(committed, last[1], fresh, committed=True)
    if committed is not None:
        _reordered(current, committed, fresh)


def _reordered(current: Queue, committed: Queue, fresh: Queue) -> None:
    """series.yaml's entries put in another order by hand and not committed, where the
    branch's commits keep the old order: the export would put it back. (A committed order
    may be an export's of commits reordered since: the export takes the commits' order and
    says so; `pq undo` puts it back.)"""
    names = set.intersection(*({e.name for e in q.series.patches}
                               for q in (current, committed, fresh)))

    def order(q: Queue) -> list[str]:
        return [e.name for e in q.series.patches if e.name in names]

    mine, now = order(current), order(fresh)
    if mine == now or mine == order(committed):
        return
    moved = next(n for n, m in zip(mine, now) if n != m)
    raise ConfigError(
        f"{SERIES_FILE} lists the patches in an order of its own ({moved} moved, not "
        "committed) that the branch's commits do not have; export writes the commits' order "
        "and would undo it", path=SERIES_FILE,
        hint="`pq apply` builds the branch in series.yaml's order; or `pq export --force` "
             "writes the commits' order")


def _committed_patch_edits(git: Git, committed: Queue, last: tuple[CommitId, Queue],
                           fresh: Queue) -> None:
    """A committed hand edit of a patch file is the user's: export would overwrite it."""
    if all(fresh.files.get(n) == d for n, d in committed.files.items()):
        return  # nothing committed would change
    edits = list(stack_mod.hand_edits(git, fresh.series.base, git.head(), committed, last))
    for name in edits:
        if patchfile.reads_the_same(fresh.files.get(name, b""), committed.files[name],
                                    f"{PATCHES_DIR}/{name}"):
            continue  # the commits were changed the same way, or only the bytes' form was
        # Commits changed as well since pq wrote their patches (amended, reworded, a new
        # one, the edited patch's own): `pq apply` would drop those.
        amended = sorted(n for n, d in fresh.files.items() if n not in committed.files or (
            last[1].files.get(n) if n in edits else committed.files[n]) != d)
        raise ConfigError(
            f"edited by hand and committed after pq last wrote it (in {last[0][:12]}); "
            "export rewrites patch files from the branch's commits and would overwrite that "
            "edit" + (f", and the commit{'s' * (len(amended) > 1)} of "
                      f"{', '.join(f'{PATCHES_DIR}/{n}' for n in amended[:3])}"
                      f"{' ...' * (len(amended) > 3)} changed too (which `pq apply` would drop)"
                      if amended else ""),
            path=f"{PATCHES_DIR}/{name}",
            hint=("`pq apply --branch NEW` builds the edited patch files on a new branch: make "
                  "the commits' changes again there (amend them), then `pq export`; or "
                  if amended else "`pq apply` takes the edited patch files into the commits; "
                  "or ") + "`pq export --force` discards the edit and writes the commits' patch")


def hand_added(queue: Queue, fresh: Queue) -> list[str]:
    """The patch files of `queue` that no commit on the branch carries (`fresh`, the
    export, has none of that name) and that pq did not write: without its `X-Pq-Layer:`
    header (a `git format-patch` or hand-written patch). One pq wrote, whose commit is gone
    (dropped by `git rebase -i`), the export rightly removes."""
    return [name for name, data in queue.files.items() if name not in fresh.files
            and not re.search(rb"(?m)^X-Pq-Layer: ", data.split(b"\n\n", 1)[0])]


def hand_removed(now: Queue, then: Queue, fresh: Queue) -> list[tuple[str, str]]:
    """(name, the export's name for it) of each patch `then` lists and `now` does not,
    whose very commit is still on the branch: the export (`fresh`) writes it back as one
    `now` does not list. A patch whose commit is gone was taken out with it."""
    names = {e.name for e in now.series.patches}
    back = {n: d for n, d in fresh.files.items() if n not in names}
    return [(e.name, n) for e in then.series.patches if e.name not in names
            and e.name in then.files for n, d in back.items()
            if stack_mod.same_commits({"p": then.files[e.name]}, {"p": d})]


def _added(current: Queue, fresh: Queue) -> None:
    """A patch file added to the series by hand: the export would remove it."""
    if added := hand_added(current, fresh):
        raise ConfigError(
            "added to the series by hand: export writes a patch for each of the branch's "
            "commits, none of which carries it, and would remove it",
            path=f"{PATCHES_DIR}/{added[0]}", hint="`pq apply` makes a commit of it on the "
                                               "branch; or `pq export --force` removes it")


def _removed(now: Queue, then: Queue, fresh: Queue, committed: bool) -> None:
    """A patch taken out of the series by hand (`then` lists it, `now` does not; committed
    or not) while the branch still has its commit: the export would put it back."""
    if removed := hand_removed(now, then, fresh):
        raise ConfigError(
            f"taken out of {SERIES_FILE} by hand" + (" and committed" if committed else
                                                     ", not committed") +
            "; its commit is still on the branch, and export, which writes a patch for each "
            "of the branch's commits, would put it back", path=f"{PATCHES_DIR}/{removed[0][0]}",
            hint="`pq apply` rebuilds the branch without it; or `pq export --force` writes "
                 "it back")


def _uncommitted_patch_edits(git: Git, current: Queue, committed: Queue | None,
                             fresh: Queue) -> None:
    """Uncommitted edits to patch files would be lost by an export: say so instead. A file
    that already holds what the export writes (an earlier export wrote it, or the same in
    other bytes: CRLF line ends, say) loses nothing."""
    if committed is None:
        return
    left: dict[str, str] | None = None
    for name, data in current.files.items():
        then = committed.files.get(name)
        path = f"{PATCHES_DIR}/{name}"
        if then == data or patchfile.reads_the_same(fresh.files.get(name, b""), data, path):
            continue
        if then is None:  # not committed: an edit only if pq did not leave these bytes
            left = _left_by_pq(git) if left is None else left
            if not left or left.get(path, "").endswith(" " + git.hash_blob(data)):
                continue
        raise ConfigError(
            "uncommitted edits; export rewrites patch files from the branch's commits and "
            "would lose them", path=path,
            hint="make the change as a commit on the branch, or "
                 + (f"`git checkout -- {shell_args(from_here(git.root, [path]), True)}`"
                    if then is not None else "move the file aside")
                 + ", or pass --force to discard it")


def _left_by_pq(git: Git) -> dict[str, str]:
    """The queue files ({path: "mode blob"}) as pq's newest logged operation left them in
    the working tree; {} when the log has none to tell (no log, an entry cut short)."""
    newest, next_id, _ = log.newest(git)
    if newest is None:
        return {}
    records = log.read(git, since=next_id - 1)
    after = log.load(git, records[-1]).get("after") if records else None
    return dict(after.get("files") or {}) if after else {}


def stack_differs(branch: str, fresh: Queue, queue: Queue) -> ConfigError:
    """`pq rebase`'s refusal when the branch's commits and the queue differ: where only patch files
    differ (the same patches, in the same order), it names them; either side may be the
    newer (a patch file edited by hand, or a commit amended since the export). A patch
    file that no longer parses (cut short by a crash, say) is named with its own error,
    as `pq series` names it, not as a patch the commits lack."""
    for n, data in queue.files.items():
        if fresh.files.get(n) != data:
            try:
                patchfile.parse(data, f"{PATCHES_DIR}/{n}")
            except ConfigError as exc:  # each patch has a commit, or this one has none
                whole = n in fresh.files or len(fresh.files) >= len(queue.files)
                exc.hint = (f"`pq export --force` writes it again from its commit (or `git "
                            f"checkout -- {PATCHES_DIR}/{n}` restores the committed file, "
                            "where that one is whole); then `pq rebase`" if whole else
                            "fix the file (a patch no commit of the branch carries yet), "
                            "then `pq apply` builds its commit; then `pq rebase`")
                raise
    name = branch.removeprefix("refs/heads/")
    if sorted(fresh.files) == sorted(queue.files) and list(fresh.files) != list(queue.files):
        return ConfigError(f"{SERIES_FILE} lists the patches in another order than {name}'s "
                           "commits (reordered by hand?); rebasing would take one order",
                           hint="`pq apply` rebuilds the branch in the series' order (it may "
                                f"not apply: then reorder the commits, `git rebase -i`); `pq "
                                f"export` writes the commits' order into {SERIES_FILE}")
    if list(fresh.files) != list(queue.files):
        only = [f"{n} (commits only)" for n in fresh.files if n not in queue.files] + [
            f"{n} ({SERIES_FILE} only)" for n in queue.files if n not in fresh.files]
        return ConfigError(f"{name} has commits that differ from {SERIES_FILE} ("
                           f"{', '.join(only[:3])}{' ...' if len(only) > 3 else ''}); "
                           "rebasing would lose them",
                           hint="run `pq export` first" if all(n in fresh.files
                                                               for n in queue.files) else
                           "`pq apply` builds the branch from series.yaml, where a patch was "
                           "added by hand; `pq export` writes the commits' patches, where a "
                           "commit was dropped")
    edited = [f"{PATCHES_DIR}/{n}" for n in queue.files
              if not stack_mod.same_commits({n: fresh.files[n]}, {n: queue.files[n]})]
    one = len(edited) == 1
    return ConfigError(
        f"{'the patch file' if one else ', '.join(edited)} {'differs' if one else 'differ'} "
        f"from {name}'s {'commit for it' if one else 'commits'} (a patch file edited by "
        "hand, or a commit changed since the last export); rebasing would lose one of them",
        path=edited[0] if one else None,
        hint="to keep the patch files, `pq apply` rebuilds the branch from them; to keep "
             "the commits, `pq export --force` writes the patch files again; then `pq "
             "rebase`")
