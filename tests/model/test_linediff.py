"""pq.model.linediff: difflib's own hunks for short texts; for long ones, hunks that turn
the old text into the new one, whatever the alignment they choose."""

from __future__ import annotations

import difflib
import random
import re

import pytest

from pq.model.linediff import unified

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def applied(old: list[bytes], hunks: list[bytes]) -> list[bytes]:
    """`old` with the no-context hunks applied, each read by its `@@` line alone."""
    out: list[bytes] = []
    at = 0  # lines of old taken so far
    k = 0
    while k < len(hunks):
        m = _HEADER.match(hunks[k])
        assert m, hunks[k]
        start, count = int(m.group(1)), int(m.group(2) or 1)
        new_count = int(m.group(4) or 1)
        first = start if count == 0 else start - 1  # where the removed lines begin
        assert first >= at, "hunks out of order"
        out += old[at:first]
        removed = hunks[k + 1:k + 1 + count]
        assert removed == [b"-" + line for line in old[first:first + count]]
        added = hunks[k + 1 + count:k + 1 + count + new_count]
        assert all(line[:1] == b"+" for line in added) and len(added) == new_count
        out += [line[1:] for line in added]
        at = first + count
        k += 1 + count + new_count
    return out + old[at:]


def _edited(rng: random.Random, lines: list[bytes], edits: int) -> list[bytes]:
    new = list(lines)
    for _ in range(edits):
        at = rng.randrange(len(new) + 1)
        kind = rng.choice("ird")
        if kind == "i":
            new[at:at] = [b"added %d" % rng.randrange(50)] * rng.randrange(1, 4)
        elif kind == "r" and at < len(new):
            new[at] = b"changed %d" % rng.randrange(50)
        elif at < len(new):
            del new[at:at + rng.randrange(1, 4)]
    return new


@pytest.mark.parametrize("seed", range(40))
def test_short_texts_get_difflib_s_own_hunks(seed: int) -> None:
    rng = random.Random(seed)
    old = [b"line %d" % rng.randrange(30) for _ in range(rng.randrange(0, 200))]
    new = _edited(rng, old, rng.randrange(0, 12))
    expected = list(difflib.diff_bytes(difflib.unified_diff, old, new, lineterm=b"", n=0))[2:]
    assert unified(old, new) == expected
    assert applied(old, unified(old, new)) == new


@pytest.mark.parametrize("seed", range(12))
def test_long_texts_get_hunks_that_make_the_new_text(seed: int) -> None:
    """Lines repeated and lines held once, edits anywhere, stretches with no line held
    once: the hunks always turn the old text into the new one."""
    rng = random.Random(seed)
    old = [b"line %d" % (i if rng.random() < 0.7 else rng.randrange(40))
           for i in range(rng.randrange(2500, 9000))]
    new = _edited(rng, old, rng.randrange(1, 400))
    assert applied(old, unified(old, new)) == new
    assert unified(old, old) == []
    assert applied(old, unified(old, [])) == [] and applied([], unified([], new)) == new


def test_a_patch_whose_every_hunk_changed_is_read_hunk_by_hunk() -> None:
    """A patch of 4,000 hunks whose every context line changed upstream (difflib took 25 s
    over it): one small hunk per change, not one replacing the whole file."""
    old, new = [], []
    for i in range(4000):
        old += [b"@@ -%d,3 +%d,3 @@" % (10 * i, 10 * i), b" v%d = %d" % (i, i),
                b"-v%d = 5" % i, b"+v%d = 5 + 1" % i]
        new += [b"@@ -%d,3 +%d,3 @@" % (10 * i, 10 * i), b" v%d = %d  # up" % (i, i),
                b"-v%d = 5" % i, b"+v%d = 5 + 1" % i]
    hunks = unified(old, new)
    assert applied(old, hunks) == new
    assert sum(h.startswith(b"@@ ") for h in hunks) == 4000 and len(hunks) == 3 * 4000
