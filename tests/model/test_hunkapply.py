"""pq.model.hunkapply against `git apply`: the same bytes where it applies, None where git
would have to search, and every odd case left to git."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from gitrepo import git

from pq.model import diff as diffs
from pq.model.hunkapply import apply_hunks


def _diff(tmp: Path, old: bytes, new: bytes, context: int = 3) -> bytes:
    """git's diff of file `f` from `old` to `new` (in the repository at `tmp`)."""
    (tmp / "f").write_bytes(old)
    git(tmp, "add", "f")
    (tmp / "f").write_bytes(new)
    proc = subprocess.run(["git", "diff", f"-U{context}", "--no-color", "--", "f"], cwd=tmp,
                          capture_output=True, check=True)
    return proc.stdout


def _git_apply(tmp: Path, base: bytes, patch: bytes) -> bytes | None:
    (tmp / "f").write_bytes(base)
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=tmp, input=patch,
                          capture_output=True, check=False)
    return (tmp / "f").read_bytes() if proc.returncode == 0 else None


def _hunks(patch: bytes) -> tuple[diffs.Hunk, ...]:
    (f,) = diffs.parse(patch)
    return f.hunks


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_give_git_applys_bytes(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    old = [b"line %d%s" % (i, b"\r" if rng.random() < 0.1 else b"")
           for i in range(rng.randint(0, 40))]
    new = list(old)
    for _ in range(rng.randint(1, 5)):
        at = rng.randint(0, len(new))
        if new and rng.random() < 0.4:
            del new[min(at, len(new) - 1)]
        else:
            new.insert(at, b"new %d" % rng.randint(0, 999))
    old_b = b"".join(x + b"\n" for x in old)
    new_b = b"".join(x + b"\n" for x in new)
    git(tmp_path, "init", "-q")
    patch = _diff(tmp_path, old_b, new_b, context=rng.choice((1, 3)))
    if not patch:
        return
    assert apply_hunks(old_b, _hunks(patch)) == new_b == _git_apply(tmp_path, old_b, patch)


def test_a_moved_hunk_is_left_to_git(tmp_path: Path) -> None:
    old = b"".join(b"l%d\n" % i for i in range(30))
    new = old.replace(b"l20\n", b"changed\n")
    git(tmp_path, "init", "-q")
    patch = _diff(tmp_path, old, new)
    shifted = b"extra\n" * 2 + old  # git finds the hunk two lines down; pq does not search
    assert apply_hunks(shifted, _hunks(patch)) is None
    assert _git_apply(tmp_path, shifted, patch) == b"extra\n" * 2 + new


def test_end_and_beginning_anchors_follow_git(tmp_path: Path) -> None:
    old = b"a\nb\nc\n"
    git(tmp_path, "init", "-q")
    patch = _diff(tmp_path, old, old + b"d\n")  # no trailing context: must match at the end
    longer = old + b"more\n"
    assert apply_hunks(longer, _hunks(patch)) is None
    assert apply_hunks(old, _hunks(patch)) == old + b"d\n"
    assert apply_hunks(b"a\nb\nc", _hunks(patch)) is None  # no final newline: git decides
