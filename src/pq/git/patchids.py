"""git's patch ids, as `git rebase` compares a commit with upstream's: `git patch-id
--stable` of a diff, and what that text cannot show, a binary file's blob.

git's own ids (diff.c's diff_get_patch_id) hash the blob ids of a file its diff reads as
binary. A diff shows them where the content changed (`--binary`), but a change of mode
alone shows only the modes: `chmod +x` of one content and of another read the same.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from pq.git.gateway import Gateway, stdin_lines, zsplit

_MODE_ONLY = re.compile(rb"(?m)^old mode .*\nnew mode .*\n(?!index )")  # no content change


def patch_ids(git: Gateway, text: bytes) -> dict[str, str]:
    """{commit: stable patch id} of `git log -p`-style text with `commit <id>` headers."""
    ids: dict[str, str] = {}
    for line in git.run_sealed("diff", "patch-id", "--stable", input=text).decode(
            ).splitlines():
        pid, _, commit = line.partition(" ")
        ids[commit] = pid
    return ids


def hash_binary_modes(git: Gateway, ids: dict[str, str], diffs: Mapping[str, bytes],
                      exclude: Sequence[str] = ()) -> None:
    """Make `ids` (of `diffs`, made in the repository) git's own where a commit changes a
    binary file's mode alone: its blob goes into the id, as git's hashes it."""
    modes = [c for c, diff in diffs.items() if _MODE_ONLY.search(diff)]
    for commit, blobs in binary_mode_changes(git, modes, exclude).items():
        ids[commit] = hashlib.sha1("\0".join(
            [ids[commit]] + [f"{path}\0{blob}" for path, blob in blobs]).encode(
            "utf-8", "surrogateescape")).hexdigest()


def binary_mode_changes(git: Gateway, commits: Sequence[str], exclude: Sequence[str] = ()
                        ) -> dict[str, list[tuple[str, str]]]:
    """{commit: [(path, blob)]} of the files whose mode alone each commit changes (against
    its first parent) and that git's diff reads as binary, in the repository, where its
    attributes and core.bigFileThreshold say so (one process; pathspecs `exclude` left
    out). A commit with none is not in it."""
    if not commits:
        return {}
    out = git.run("diff-tree", "--stdin", "-r", "--no-renames", "--raw", "--numstat", "-z",
                  "--no-textconv", "--no-ext-diff", "--ignore-submodules=none", "--",
                  *exclude, input=stdin_lines(commits))
    found: dict[str, list[tuple[str, str]]] = {}
    modes: dict[str, str] = {}  # path: blob, of a mode-only change in the commit read now
    commit, fields = "", iter(zsplit(out))
    for field in fields:
        if field.startswith(":"):  # :old new blob blob status, then the path
            old_mode, new_mode, old, new, status = field[1:].split(" ")
            path = next(fields)
            if status == "M" and old == new and old_mode != new_mode:
                modes[path] = new
        elif field.count("\t") >= 2:  # added, deleted (`-` for binary), path
            added, deleted, path = field.split("\t", 2)
            if added == deleted == "-" and path in modes:
                found.setdefault(commit, []).append((path, modes[path]))
        else:  # the next commit's id
            commit, modes = field, {}
    return found
