"""identity.positional: the series order, known without reading a patch file, exactly when
it is what identity.match would say; in every other case it declines (None)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pq.errors import ConfigError
from pq.git.objects import CommitId, Person
from pq.model import dep3, patchfile
from pq.model.patchfile import PatchFile
from pq.model.series import PatchEntry
from pq.queue import identity
from pq.queue.stack import StackCommit

ALICE = Person("Alice Ünal", "alice@example.com", "1700000000 +0100")


def diff(path: str, line: str) -> bytes:
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1 +1 @@\n-old\n+{line}\n").encode()


def commit(i: int, message: str, body: bytes, trailer: str | None = None) -> StackCommit:
    return StackCommit(CommitId(f"{i:040x}"), CommitId(f"{i + 100:040x}"), body, trailer,
                       message, ALICE)


def entry(name: str) -> PatchEntry:
    return PatchEntry(name=name, layer="python-glue", summary=name)


def render(sc: StackCommit, e: PatchEntry) -> bytes:
    return patchfile.render(PatchFile(sc.author, sc.message, sc.diff,
                                      tuple(dep3.headers(e)), sc.encoding))


def both(stack: list[StackCommit], entries: list[PatchEntry],
         recorded: dict[str, list[bytes]]) -> tuple[list[str] | None, list[str | None]]:
    fast = identity.positional(stack, entries, recorded,
                               lambda i, e: render(stack[i], e))
    return fast, identity.match(stack, entries, recorded)


def queue(n: int) -> tuple[list[StackCommit], list[PatchEntry], dict[str, list[bytes]]]:
    stack = [commit(i, f"glue: step {i}\n", diff(f"m{i}.py", f"new {i}")) for i in range(n)]
    entries = [entry(f"{i + 1:04d}-glue-step-{i}.patch") for i in range(n)]
    return stack, entries, {e.name: [render(sc, e)] for sc, e in zip(stack, entries)}


def test_a_consistent_queue_is_named_in_series_order_as_match_names_it() -> None:
    stack, entries, recorded = queue(4)
    fast, slow = both(stack, entries, recorded)
    assert fast == slow == [e.name for e in entries]


def test_swapped_commits_are_left_to_match() -> None:
    stack, entries, recorded = queue(3)
    stack[0], stack[1] = stack[1], stack[0]
    fast, slow = both(stack, entries, recorded)
    assert fast is None
    assert slow == [entries[1].name, entries[0].name, entries[2].name]


def test_a_trailer_naming_another_entry_is_left_to_match() -> None:
    """The rendered file carries no trailer, so the bytes alone would say "in order"; the
    trailer is stronger evidence, and match follows it."""
    stack, entries, recorded = queue(2)
    stack[0] = replace(stack[0], trailer_name=entries[1].name)
    fast, slow = both(stack, entries, recorded)
    assert fast is None
    assert slow[0] == entries[1].name


def test_two_identical_commits_are_left_to_match() -> None:
    """Files alike too: match takes them in series order; files apart in their header
    lines only (each entry's metadata) too: they are the very same commit, and refusing
    them refused what `pq export --commit` had just written (a commit reverted and picked
    again). A commit that could be two entries of other evidence is still not guessed.
    The fast path declines them all."""
    stack, _, _ = queue(2)
    stack[1] = replace(stack[1], diff=stack[0].diff, message=stack[0].message)
    alike = [replace(entry("0001-a.patch"), summary="same"),
             replace(entry("0002-b.patch"), summary="same")]
    recorded = {e.name: [render(sc, e)] for sc, e in zip(stack, alike)}
    fast, slow = both(stack, alike, recorded)
    assert fast is None
    assert slow == [e.name for e in alike]
    unlike = [entry("0001-a.patch"), entry("0002-b.patch")]
    recorded = {e.name: [render(sc, e)] for sc, e in zip(stack, unlike)}
    assert identity.positional(stack, unlike, recorded,
                               lambda i, e: render(stack[i], e)) is None
    assert identity.match(stack, unlike, recorded) == [e.name for e in unlike]
    reworded = [replace(stack[0], message="a\n"), replace(stack[1], message="b\n")]
    recorded = {e.name: [render(sc, e)] for sc, e in zip(reworded, unlike)}
    with pytest.raises(ConfigError, match="pq will not guess"):  # the same diff, two messages
        identity.match([replace(stack[0], message="c\n")], unlike, recorded)


def test_more_than_one_recorded_file_is_left_to_match() -> None:
    """The file pq last committed (an older version of the commit) differs from the
    series' own: match weighs both, and names the queue in order too."""
    stack, entries, recorded = queue(2)
    older = replace(stack[0], diff=diff("m0.py", "older"))
    recorded[entries[0].name].append(render(older, entries[0]))
    fast, slow = both(stack, entries, recorded)
    assert fast is None
    assert slow == [e.name for e in entries]


def test_a_new_commit_is_left_to_match() -> None:
    stack, entries, recorded = queue(3)
    fast, slow = both(stack, entries[:2], recorded)
    assert fast is None
    assert slow[2] is None


def test_a_squash_of_two_applied_commits_is_refused_as_match_refuses_it() -> None:
    stack, entries, recorded = queue(2)
    stack[0] = replace(stack[0], trailer_name=entries[0].name,
                       message=stack[0].message + f"\nPq-Patch: {entries[1].name}\n")
    recorded[entries[0].name] = [render(stack[0], entries[0])]
    for call in (lambda: identity.positional(stack, entries, recorded,
                                             lambda i, e: render(stack[i], e)),
                 lambda: identity.match(stack, entries, recorded)):
        with pytest.raises(ConfigError, match="carries a `Pq-Patch:` line for each of"):
            call()
