"""Merges and private indexes: git's three-way merge and `git apply`, run on trees in memory.

`Merging` adds to the gateway what touches no working tree: a temp index under
`.git/pq/tmp/`, trees built or patched there, and `merge-tree` merges in the sealed merge
directory with exactly the attributes of the trees being merged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pq.git.failures import failure
from pq.git.gateway import NO_HOOKS, Gateway, zsplit
from pq.git.objects import MERGER, TreeId

if TYPE_CHECKING:
    import tempfile


@dataclass(frozen=True)
class MergeResult:
    tree: TreeId
    clean: bool
    conflicted_paths: tuple[str, ...]
    # git's messages of the conflicts that leave no file conflicted (a directory renamed
    # to several places, with a file added in it: `git rebase` stops there too).
    notes: tuple[str, ...] = ()


class TempIndex:
    """A private index in `.git/pq/tmp/index-<pid>-*`, removed on exit (also when
    `read-tree` fails); folders left by a pq that was killed are removed by the next
    one. Inside `.git`, none can outlive the repository."""

    def __init__(self, git: Gateway, tree: str) -> None:
        self.git = git
        self.tree = tree
        self.dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> dict[str, str]:
        parent = self.git.pq_dir() / "tmp"
        import tempfile  # ~5 ms, for the commands that merge

        for again in (True, True, False):  # another pq removes the folder when it is empty
            parent.mkdir(parents=True, exist_ok=True)
            try:
                made = tempfile.TemporaryDirectory(prefix=f"index-{os.getpid()}-", dir=parent)
                break
            except FileNotFoundError:
                if not again:
                    raise
        self.dir = made
        env = {"GIT_INDEX_FILE": os.path.join(made.name, "index")}
        try:
            self.git.run(*NO_HOOKS, "read-tree", self.tree, env=env)  # (post-index-change)
        except BaseException:
            made.cleanup()
            raise
        return env

    def __exit__(self, *exc: object) -> None:
        if self.dir is not None:
            self.dir.cleanup()  # not `.git/pq/tmp`, where another thread may be: the next
            # pq to open the repository removes it when empty


class Merging(Gateway):
    """The gateway plus merges, applies and trees built in a private index."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        super().__init__(root, git_dir, common_dir)
        self._attributes: dict[str, bytes] = {}

    def temp_index(self, tree: str) -> TempIndex:
        return TempIndex(self, tree)

    def write_tree(self, env: dict[str, str] | None = None) -> TreeId:
        """The index (or the private one `env` names) as a tree."""
        return TreeId(self.text(*NO_HOOKS * bool(env), "write-tree", env=env).strip())

    def apply_cached(self, patch: bytes, env: dict[str, str] | None = None) -> str | None:
        """`git apply --cached` of `patch` to the index (or the private one `env` names):
        None when it applied, else git's error."""
        proc = self.run_proc(*NO_HOOKS * bool(env), "apply", "--cached", "--binary",
                             "--whitespace=nowarn", "-", input=patch, env=env)
        return None if proc.returncode == 0 else proc.stderr.decode(errors="replace").strip()

    def apply_to_tree(self, tree: str, patch: bytes) -> tuple[TreeId | None, str]:
        """Apply a patch to a tree in a private index; (new tree, '') or (None, git's error)."""
        with self.temp_index(tree) as env:
            error = self.apply_cached(patch, env)
            if error is not None:
                return None, error
            return self.write_tree(env), ""

    def update_index_info(self, records: Sequence[str], env: dict[str, str] | None = None
                          ) -> None:
        """`git update-index --index-info` of `records` ("mode id stage\\tpath" lines)."""
        self.run(*NO_HOOKS * bool(env), "update-index", "-z", "--index-info",
                 input="".join(r + "\0" for r in records).encode("utf-8", "surrogateescape"),
                 env=env)

    def build_tree(
        self,
        base_tree: str,
        remove: Sequence[str] = (),
        add: Sequence[tuple[str, str, str]] = (),
    ) -> TreeId:
        """base_tree with every path under `remove` dropped and (mode, blob, path) added."""
        with self.temp_index(base_tree) as env:
            if remove:
                self.run(*NO_HOOKS, "rm", "-r", "-q", "--cached", "-f", "--ignore-unmatch",
                         "--", *remove, env=env)
            if add:
                self.update_index_info([f"{mode} {obj}\t{path}" for mode, obj, path in add],
                                       env)
            return self.write_tree(env)

    # -- attributes and merges --------------------------------------------------------

    def attribute_paths(self, tree: str) -> frozenset[str]:
        """The paths of the `.gitattributes` files in `tree` (one process)."""
        out = self.run_sealed("diff", "diff-tree", "-r", "-z", "--name-only", "--no-renames",
                              self.empty_tree(), tree, "--", ":(glob)**/.gitattributes")
        return frozenset(zsplit(out))

    def attribute_of(self, tree: str | None, attribute: str, paths: Sequence[str]
                     ) -> dict[str, str]:
        """{path: value} of `attribute` for `paths` as git sees it in a checkout of `tree`
        (its `.gitattributes` files, info/attributes, core.attributesFile), or in the
        working tree (None): `unspecified`, `set`, `unset` or the value."""
        args = ("check-attr", "-z", attribute, "--", *paths)
        if tree is None:
            out = self.run(*args)
        else:
            with self.temp_index(tree) as env:
                out = self.run(args[0], "--cached", *args[1:], env=env)
        items = out.decode("utf-8", "surrogateescape").split("\0")  # a value may be empty
        return {items[i]: items[i + 2] for i in range(0, len(items) - 2, 3)}

    def marker_sizes(self, tree: str | None, paths: Sequence[str]) -> dict[str, int]:
        """{path: the width of its conflict markers}: the `conflict-marker-size` attribute
        as git reads it (a leading number, else 7) in a checkout of `tree`, or in the
        working tree (None: its `.gitattributes` files, then the index's)."""
        if not paths:
            return {}
        values = self.attribute_of(tree, "conflict-marker-size", paths)
        sizes = {}
        for path in paths:
            # as git's atoi reads it: ASCII digits (int() would read any script's too)
            found = re.match(r"[ \t\n\v\f\r]*\+?([0-9]+)", values.get(path, ""))
            sizes[path] = int(found.group(1)) if found and int(found.group(1)) > 0 else 7
        return sizes

    def attributes_from(self, files: dict[str, str]) -> bytes:
        """What git's attribute lookup sees in a checkout whose `.gitattributes` files are
        `files` ({path: blob id}), with this repository's info/attributes, as one file."""
        key = "\0".join(f"{p}\0{b}" for p, b in sorted(files.items()))
        found = self._attributes.get(key)
        if found is None:
            from pq.git import sealed

            info = self.common_dir / "info" / "attributes"
            found = sealed.flatten_attributes({p: self.blob(b) for p, b in files.items()},
                                              info.read_bytes() if info.is_file() else b"")
            self._attributes[key] = found
        return found

    def merge_trees(self, pre: str, ours: str, theirs: str, ours_tree: str | None = None,
                    attributes: bytes = b"") -> MergeResult:
        """Cherry-pick `theirs` (a commit whose parent is `pre`) onto `ours`, in memory, with
        `attributes` (see `attributes_from`) as the only attributes git sees.

        git >= 2.40 takes the merge base directly. Older git gets one synthetic commit:
        `ours`'s tree with `pre` as its only parent, so that `pre` is the merge base.
        """
        if self.version() >= (2, 40):
            return self.merge_commits(ours, theirs, attributes, merge_base=pre)
        tree = ours_tree or self.commit(ours).tree
        ours = self.write_commit(tree, [pre], MERGER, MERGER, "pq merge\n", branch=False)
        return self.merge_commits(ours, theirs, attributes)

    def merge_commits(self, ours: str, theirs: str, attributes: bytes = b"",
                      merge_base: str | None = None) -> MergeResult:
        """git's merge of two commits (their merge base, or `merge_base`), in memory."""
        args = ("merge-tree", "--write-tree", "-z", "--name-only",
                *([f"--merge-base={merge_base}"] if merge_base else []), ours, theirs)
        proc = self.run_sealed_proc("merge", *args, attributes=attributes)
        if proc.returncode not in (0, 1):  # 1: conflicts
            raise failure(args, proc)
        parts = [p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0")]
        end = parts.index("", 1) if "" in parts[1:] else len(parts)
        conflicted = tuple(dict.fromkeys(parts[1:end]))
        return MergeResult(TreeId(parts[0].strip()), proc.returncode == 0, conflicted,
                           _notes(parts[end + 1:], set(conflicted)))


def _notes(messages: list[str], conflicted: set[str]) -> tuple[str, ...]:
    """The messages of conflicts (a `CONFLICT` type) none of whose paths is conflicted, from
    merge-tree's `-z` messages: each is its number of paths, the paths, its type, its text."""
    notes = []
    i = 0
    while i < len(messages) and messages[i].isdigit():
        n = int(messages[i])
        if i + n + 2 >= len(messages):
            break
        paths, kind, text = messages[i + 1:i + 1 + n], messages[i + 1 + n], messages[i + 2 + n]
        if kind.startswith("CONFLICT") and conflicted.isdisjoint(paths):
            notes.append(text.strip())
        i += n + 3
    return tuple(notes)
