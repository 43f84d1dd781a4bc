"""Line diffs for people to read: what changed between two versions of a patch file (a
rebase's report), or of a conflicted file (a recorded resolution), as unified-diff hunks
with no context.

Short texts go through difflib. Its matcher's time grows with the product of the lengths
where changes are spread through a text (a patch of 4,000 hunks, each with a changed
context line: 25 s), so longer ones are first cut at the lines each text holds once, in
the same order in both (a patience diff), and difflib reads the stretches between.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter

_SHORT = 2000  # lines of both texts together that difflib reads at once
Block = tuple[int, int, int]  # (start in old, start in new, lines alike)


def unified(old: list[bytes], new: list[bytes]) -> list[bytes]:
    """The `@@` lines and the `-`/`+` lines of `old` -> `new`, no context (difflib's
    `unified_diff` with n=0, less its `---`/`+++` pair)."""
    if len(old) + len(new) <= _SHORT:
        return list(difflib.diff_bytes(difflib.unified_diff, old, new, lineterm=b"", n=0))[2:]
    out: list[bytes] = []
    i = j = 0
    for a, b, size in [*_blocks(old, new, 0, len(old), 0, len(new), 0),
                       (len(old), len(new), 0)]:
        if i < a or j < b:
            out.append(b"@@ -%s +%s @@" % (_range(i, a), _range(j, b)))
            out += [b"-" + line for line in old[i:a]] + [b"+" + line for line in new[j:b]]
        i, j = a + size, b + size
    return out


def _range(start: int, stop: int) -> bytes:
    """A hunk's range as unified diffs write it (difflib's and git's rule)."""
    if stop - start == 1:
        return b"%d" % (start + 1)
    return b"%d,%d" % (start + 1 if stop > start else start, stop - start)


def _blocks(old: list[bytes], new: list[bytes], lo: int, hi: int, blo: int, bhi: int,
            depth: int) -> list[Block]:
    """The runs of lines alike in old[lo:hi] and new[blo:bhi], in order (`depth`: how
    many stretches this one is inside; past 64, one is read as replaced whole)."""
    head = 0  # the lines alike at the start, and at the end
    while lo + head < hi and blo + head < bhi and old[lo + head] == new[blo + head]:
        head += 1
    tail = 0
    while hi - tail > lo + head and bhi - tail > blo + head and \
            old[hi - tail - 1] == new[bhi - tail - 1]:
        tail += 1
    found = [(lo, blo, head)] if head else []
    lo, blo, hi, bhi = lo + head, blo + head, hi - tail, bhi - tail
    if (hi - lo) + (bhi - blo) <= _SHORT:
        matcher = difflib.SequenceMatcher(None, old[lo:hi], new[blo:bhi])
        found += [(lo + a, blo + b, n) for a, b, n in matcher.get_matching_blocks() if n]
    elif depth < 64:
        anchors = _unique_in_order(old, new, lo, hi, blo, bhi)
        start, bstart = lo, blo
        for a, b in anchors:
            if a > start and b > bstart:
                found += _blocks(old, new, start, a, bstart, b, depth + 1)
            found.append((a, b, 1))
            start, bstart = a + 1, b + 1
        if anchors and start < hi and bstart < bhi:
            found += _blocks(old, new, start, hi, bstart, bhi, depth + 1)
    return found + ([(hi, bhi, tail)] if tail else [])


def _unique_in_order(old: list[bytes], new: list[bytes], lo: int, hi: int, blo: int, bhi: int
                     ) -> list[tuple[int, int]]:
    """(line in old, line in new) of the lines each range holds once, the longest run of
    them in the same order in both (none: the stretch is read as replaced whole)."""
    counts, bcounts = Counter(old[lo:hi]), Counter(new[blo:bhi])
    where = {new[b]: b for b in range(blo, bhi) if bcounts[new[b]] == 1}
    pairs = [(a, where[old[a]]) for a in range(lo, hi)
             if counts[old[a]] == 1 and old[a] in where]
    # The longest increasing run of new-side numbers (patience sorting).
    tops: list[int] = []
    tails: list[int] = []  # index into pairs of each pile's top
    before: list[int] = [-1] * len(pairs)
    for k, (_, b) in enumerate(pairs):
        pile = bisect_left(tops, b)
        before[k] = tails[pile - 1] if pile else -1
        if pile == len(tops):
            tops.append(b)
            tails.append(k)
        else:
            tops[pile], tails[pile] = b, k
    run, k = [], tails[-1] if tails else -1
    while k >= 0:
        run.append(pairs[k])
        k = before[k]
    return run[::-1]
