"""The in-memory apply of `pq apply`/`pq push` against `git apply`: on a patch file with any
one byte replaced or deleted, whenever pq applies it without git, git applies it to the
same tree; whatever git might read otherwise (a broken header, a stray line) is left to git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitrepo import commit_all, git, write

from pq.errors import PqError
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import hunkapply, patchfile
from pq.queue.stack import _apply_in_memory  # the unit under test: no public door of its own

ALPHABET = b"\xff\n\r -+@/a"


def _repo(tmp: Path) -> tuple[Path, bytes]:
    """A repository at its base commit, and pq's kind of patch file (`---`, no stat) for
    the commit after it: two files modified, one added."""
    repo = tmp / "r"
    git(tmp, "init", "-q", str(repo))
    write(repo, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x\n")
    write(repo, "m.txt", "".join(f"{c}\n" for c in "abcdefghijk"))
    commit_all(repo, "base")
    write(repo, "pkg/__init__.py", "import torch  # scoped compat\n")
    write(repo, "m.txt", "".join(f"{c}\n" for c in "aBcdefghIjk"))
    write(repo, "n.txt", "new\nfile\n")
    commit_all(repo, "change")
    patch = subprocess.run(["git", "format-patch", "-1", "--stdout", "--no-stat",
                            "--no-signature"], cwd=repo, capture_output=True,
                           check=True).stdout
    git(repo, "checkout", "-q", "HEAD~1")
    return repo, patch.replace(b"\n\n\ndiff --git", b"\n\n---\ndiff --git", 1)


def _git_tree(repo: Path, base: str, diff: bytes) -> str | None:
    env = dict(os.environ, GIT_INDEX_FILE=str(repo.parent / "index"))
    subprocess.run(["git", "read-tree", base], cwd=repo, env=env, check=True)
    if subprocess.run(["git", "apply", "--cached", "-"], cwd=repo, env=env, input=diff,
                      capture_output=True).returncode:
        return None
    return subprocess.run(["git", "write-tree"], cwd=repo, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_one_changed_byte_never_makes_pq_apply_what_git_would_not(tmp_path: Path) -> None:
    repo, patch = _repo(tmp_path)
    g = Git.open(str(repo))
    base = git(repo, "rev-parse", "HEAD^{tree}")
    start = patch.index(b"\ndiff --git") + 1
    assert _apply_in_memory(g, Trees(g), base, patchfile.parse(patch, "p")) == \
        _git_tree(repo, base, patch[start:]) is not None  # the unchanged patch: both apply
    applied = 0
    for i in range(start, len(patch)):
        for mutant in [patch[:i] + bytes([b]) + patch[i + 1:] for b in ALPHABET
                       if b != patch[i]] + [patch[:i] + patch[i + 1:]]:
            try:
                pf = patchfile.parse(mutant, "p")
            except PqError:
                continue
            if not pf.diff:
                continue
            tree = _apply_in_memory(g, Trees(g), base, pf)
            if tree is not None:
                applied += 1
                assert tree == _git_tree(repo, base, pf.diff), mutant
    assert applied > 50  # the fast path still takes the harmless edits (an added line's text)


def test_a_broken_diff_git_line_is_not_plain() -> None:
    good = (b"diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/p.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert hunkapply.plain(good)
    # the newline that ends the `diff --git` line became another byte: git refuses the
    # header ("lacks filename information"), while the `---`/`+++` lines alone name a file
    assert not hunkapply.plain(good.replace(b"p.py\n---", b"p.py\xff---", 1))
    assert not hunkapply.plain(good.replace(b"+++ b/p.py", b"+++ b/q.py"))
    assert not hunkapply.plain(good + b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-c\n+d\n")
    assert hunkapply.plain(good + b"-- \n2.39.5\n\n")


NAMES = ["pkg//x", "pkg/./x", "./x", "x/", "pkg", "m.txt/y", "pkg/__init__.py/z", "a b",
         "x\ty", " x", "x ", "PKG/x", "~x", "-x", "..x", "x.", "é", ".gitmodules", "pkg/.git",
         "pkg/.Git.", "GIT~1/x", "x\r", "back\\slash", "x\x7f"]


def test_an_added_file_by_any_name_is_applied_as_git_would(tmp_path: Path) -> None:
    """A name git refuses (`invalid path`, an empty part) must not become a tree entry."""
    repo, _ = _repo(tmp_path)
    g = Git.open(str(repo))
    base = git(repo, "rev-parse", "HEAD^{tree}")
    head = (b"From 0 Mon Sep 17 00:00:00 2001\nFrom: x <x@y>\n"
            b"Date: Wed, 2 Dec 2026 04:47:38 +0000\nSubject: [PATCH] c\n\n---\n")
    for name in NAMES:
        n = name.encode()
        diff = (b"diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n"
                b"@@ -0,0 +1 @@\n+hi\n" % (n, n, n))
        try:
            pf = patchfile.parse(head + diff, "p")
        except PqError:
            continue  # refused before any apply
        tree = _apply_in_memory(g, Trees(g), base, pf)
        assert tree is None or tree == _git_tree(repo, base, pf.diff), name
