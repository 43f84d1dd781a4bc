"""The commit graph: ancestry, merge bases and the commits of a range, as `Git` asks them.

Answers about commits named by their full ids never change (a commit's parents are part
of it), so they are kept for the life of the `Git` object: the pre-push checks, run side
by side, ask whether the base is the tip's ancestor and list the same range more than
once. A range a..b listed with its parents answers whether `a` is below `b` too. An
answer about a name (a branch, `HEAD`) is asked of git every time: refs move.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pq.git.objects import HEX_ID, CommitId
from pq.git.worktree import WorkingTree

# What a commit changes includes its submodule bumps, whatever `submodule.<name>.ignore`
# says (in the configuration or in .gitmodules, where `all` hides them from plumbing too).
EVERY_SUBMODULE = "--ignore-submodules=none"


class History(WorkingTree):
    """The commit-graph verbs of `Git`, and the answers kept about commit ids."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        super().__init__(root, git_dir, common_dir)
        self._ancestry: dict[tuple[str, str], bool] = {}
        self._ranges: dict[str, list[tuple[CommitId, tuple[CommitId, ...]]]] = {}

    def log_files(self, *range_: str) -> list[tuple[CommitId, frozenset[str]]]:
        """(commit, the paths it changes) for each non-merge commit of `range_` (`git log`'s
        arguments), oldest first."""
        out = self.run("log", "-z", "--topo-order", "--format=%x01%H", "--name-only",
                       "--no-renames", "--no-merges", "--no-show-signature", EVERY_SUBMODULE,
                       *range_, "--")
        log: list[tuple[CommitId, set[str]]] = []
        for field in out.split(b"\0"):
            field = field.lstrip(b"\n")
            if field.startswith(b"\x01"):
                log.append((CommitId(field[1:].decode()), set()))
            elif field and log:
                log[-1][1].add(field.decode("utf-8", "surrogateescape"))
        return [(c, frozenset(files)) for c, files in reversed(log)]

    def merge_base(self, a: str, b: str) -> CommitId | None:
        proc = self.run_proc("merge-base", a, b)
        return CommitId(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def is_ancestor(self, a: str, b: str) -> bool:
        known = (a, b) if HEX_ID.fullmatch(a) and HEX_ID.fullmatch(b) else None
        if known is not None and known in self._ancestry:
            return self._ancestry[known]
        if known is not None and self._below_listed(a, b):
            self._ancestry[known] = True
            return True
        found = self.run_proc("merge-base", "--is-ancestor", a, b).returncode == 0
        if known is not None:
            self._ancestry[known] = found
        return found

    def _below_listed(self, a: str, b: str) -> bool:
        """Whether a range a..b listed already has a commit whose parent is `a`: that
        commit is reachable from `b`, so `a` is too."""
        return any(a in parents for _, parents in self._ranges.get(f"{a}..{b}", ()))

    def rev_list_with_parents(self, range_: str) -> list[tuple[CommitId, tuple[CommitId, ...]]]:
        """The commits of `range_`, oldest first, each with its parents."""
        old, dots, new = range_.partition("..")
        fixed = bool(dots) and bool(HEX_ID.fullmatch(old)) and bool(HEX_ID.fullmatch(new))
        if fixed and range_ in self._ranges:
            return list(self._ranges[range_])
        out = self.text("rev-list", "--reverse", "--topo-order", "--parents", range_, "--")
        result = []
        for line in out.splitlines():
            ids = [CommitId(x) for x in line.split()]
            result.append((ids[0], tuple(ids[1:])))
        if fixed:
            self._ranges[range_] = list(result)
        return result

    def rev_list(self, range_: str, paths: Sequence[str] = (),
                 max_count: int | None = None, first_parent: bool = False) -> list[CommitId]:
        """The commits of `range_` (newest first) that touch `paths` (all when none);
        `first_parent`: along first parents only."""
        limit = [f"--max-count={max_count}"] if max_count is not None else []
        out = self.text("rev-list", *limit, *["--first-parent"] * first_parent, range_, "--",
                        *paths)
        return [CommitId(x) for x in out.split()]

    def count(self, range_: str, *options: str) -> int:
        """How many commits `range_` holds (`options`: rev-list's, such as --merges)."""
        return int(self.text("rev-list", "--count", *options, range_, "--").strip())

    def ref_name(self, rev: str, short: bool = False) -> str | None:
        """The ref `rev` names, as git reads it (`@{u}`: refs/remotes/upstream/main; `short`:
        upstream/main), or None where it names a commit otherwise (`HEAD~2`, an id)."""
        proc = self.run_proc("rev-parse", "--verify", "--quiet",
                             "--abbrev-ref" if short else "--symbolic-full-name", rev)
        name = proc.stdout.decode("utf-8", "surrogateescape").strip()
        return name if proc.returncode == 0 and name and "\n" not in name else None

    def copy_notes(self, rewritten: bytes) -> None:
        """Copy each commit's notes to its copy (`rewritten`: "<old> <new>" lines) as `git
        rebase` does, where notes.rewriteRef (or GIT_NOTES_REWRITE_REF) names the notes to
        copy; no process where the repository holds no notes at all."""
        packed = self.common_dir / "packed-refs"
        try:
            if not (any((self.common_dir / "refs" / "notes").glob("*")) or (
                    packed.is_file() and b" refs/notes/" in packed.read_bytes())):
                return
        except OSError:
            pass  # git says whether it can
        self.run("notes", "copy", "--for-rewrite=rebase", input=rewritten)
