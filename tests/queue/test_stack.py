"""pq.queue.stack.assign_names without a repository: which name each commit keeps, from the
evidence (trailer, recorded file, diff, author and message), and how new names are made."""

from __future__ import annotations

import pytest

from pq.errors import ConfigError
from pq.git.objects import CommitId, Person
from pq.model import patchfile
from pq.model.patchfile import PatchFile
from pq.model.series import PatchEntry, Series
from pq.queue.stack import StackCommit, assign_names, slugify

AUTHOR = Person("A U Thor", "author@example.com", "1700000000 +0100")


def diff(path: str, line: int = 1) -> bytes:
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{line} +{line} @@\n-old\n+new\n").encode()


def commit(n: int, message: str, d: bytes, trailer: str | None = None,
           author: Person = AUTHOR) -> StackCommit:
    return StackCommit(CommitId(f"{n:040x}"), CommitId("0" * 40), d, trailer, message, author)


def series(*names: str) -> Series:
    return Series("upstream/main", "a" * 40,
                  tuple(PatchEntry(n, "build", "s") for n in names))


def recorded(*pairs: tuple[str, StackCommit]) -> dict[str, list[bytes]]:
    return {name: [patchfile.render(PatchFile(sc.author, sc.message, sc.diff))]
            for name, sc in pairs}


def test_new_names_are_numbered_slugs() -> None:
    stack = [commit(1, "Build: enable compat!\n\nbody", diff("setup.py")),
             commit(2, "???\n", diff("x"))]
    assert assign_names(stack, None) == ["0001-build-enable-compat.patch", "0002-patch.patch"]


def test_slug_is_bounded() -> None:
    assert slugify("A" * 80 + " tail") == "a" * 52
    assert slugify("--x--") == "x"


def test_trailer_wins_and_new_names_come_after_every_name_in_use() -> None:
    stack = [commit(1, "first\n", diff("a"), trailer="0007-kept.patch"),
             commit(2, "second\n", diff("b"))]
    assert assign_names(stack, series("0003-old.patch")) == [
        "0007-kept.patch", "0008-second.patch"]


def test_recorded_file_names_a_reworded_and_reordered_stack() -> None:
    a = commit(1, "build: a\n", diff("setup.py"))
    b = commit(2, "glue: b\n", diff("pkg/x.py"))
    old = series("0001-build-a.patch", "0002-glue-b.patch")
    rec = recorded(("0001-build-a.patch", a), ("0002-glue-b.patch", b))
    reworded_b = commit(3, "glue: b, reworded\n", b.diff)  # same diff
    moved_a = commit(4, "build: a\n", diff("setup.py", line=5))  # lines moved
    assert assign_names([reworded_b, moved_a], old, rec) == [
        "0002-glue-b.patch", "0001-build-a.patch"]


def test_amended_commit_keeps_its_name_by_author_and_message() -> None:
    a = commit(1, "build: a\n", diff("setup.py"))
    old = series("0001-build-a.patch")
    amended = commit(2, "build: a\n", diff("other.py"))
    assert assign_names([amended], old, recorded(("0001-build-a.patch", a))) == [
        "0001-build-a.patch"]


def test_subject_slug_alone_is_no_evidence() -> None:
    a = commit(1, "build: a\n", diff("setup.py"))
    old = series("0001-build-a.patch")
    other = commit(2, "build: a\n\nnew body", diff("elsewhere.py"),
                   author=Person("B", "b@example.com", "1700000001 +0000"))
    assert assign_names([other], old, recorded(("0001-build-a.patch", a))) == [
        "0002-build-a.patch"]


def test_two_commits_for_one_entry_are_not_guessed() -> None:
    a = commit(1, "build: a\n", diff("setup.py"))
    old = series("0001-build-a.patch")
    rec = recorded(("0001-build-a.patch", a))
    twin1 = commit(2, "build: a\n", diff("one.py"))
    twin2 = commit(3, "build: a\n", diff("two.py"))
    with pytest.raises(ConfigError, match="could both be patches/0001-build-a.patch"):
        assign_names([twin1, twin2], old, rec)


def test_one_commit_for_two_different_entries_is_not_guessed() -> None:
    x = commit(1, "same subject\n", diff("a.py"))
    y = commit(2, "same subject\n", diff("b.py"))
    old = series("0001-x.patch", "0002-y.patch")
    rec = recorded(("0001-x.patch", x), ("0002-y.patch", y))
    amended = commit(3, "same subject\n", diff("c.py"))
    with pytest.raises(ConfigError, match="could be patches/0001-x.patch and patches/0002-y"):
        assign_names([amended], old, rec)


def test_broken_recorded_file_is_no_evidence() -> None:
    a = commit(1, "build: a\n", diff("setup.py"))
    assert assign_names([a], series("0001-build-a.patch"),
                        {"0001-build-a.patch": [b"garbage"]}) == ["0002-build-a.patch"]
