"""Conflict markers: the leftover ones a resolution would commit (`pq rebase --continue`
refuses them, as `git diff --cached --check` finds them, and in the files whose diff is
binary, which that check skips), and whether a line is one (the pre-push hook's check of
the pushed patches).
"""

from __future__ import annotations

import re
from collections import Counter

from pq.background import Background
from pq.git.repo import Git

_MARKER = re.compile(r"^(.*):(\d+): leftover conflict marker$")


def added_conflict_markers(git: Git, tip: str, pick: str | None = None
                           ) -> list[tuple[str, int]]:
    """(path, line) of each conflict marker the index adds to `tip`, as
    `git diff --cached --check` finds them (conflict-marker-size attributes included), in
    files where at least one is a `<<<<<<<` or `>>>>>>>` line: a lone `=======` or
    `|||||||` line is far more often a heading's underline than a leftover conflict. Lines
    the patch being resolved (commit `pick`) holds in its own version of the file, a merge
    tool's test data say (added by the patch, or carried from its base where upstream
    removed them), are its content, not a leftover: as many of each as that file has are
    not counted (git takes them too)."""
    # git diffs every changed file twice (--check, --numstat): side by side, on two cores
    binary = Background(lambda: git.binary_diff_paths("--cached", tip), "pq git diff --numstat")
    with binary:
        found = _marker_lines(git, tip)
    found.update(_binary_diff_markers(git, tip, binary.result()))
    own: Counter[tuple[str, bytes]] = Counter()
    if pick is not None and found:
        paths = list(found)
        for path, blob in zip(paths, git.odb.read_many([f"{pick}:{p}" for p in paths]),
                              strict=True):
            if blob is not None:
                own.update((path, text) for text in blob[2].split(b"\n"))
    result = []
    for path, marks in found.items():
        left = []
        for number, text in marks:
            if own[(path, text)] > 0:
                own[(path, text)] -= 1
            else:
                left.append((number, text))
        if any(text[:1] in (b"<", b">") for _, text in left):
            result += [(path, number) for number, _ in left]
    return result


def _marker_lines(git: Git, tip: str) -> dict[str, list[tuple[int, bytes]]]:
    """{path: [(line, its bytes in the index)]} of the conflict markers that
    `git diff --cached --check tip` names. The report writes names as they are: one with a
    newline in it spans lines, and is found among the paths the diff changes."""
    numbers: dict[str, list[int]] = {}
    said = git.diff_check(tip).split("\n")
    changed: set[str] | None = None
    for i, line in enumerate(said):
        m = _MARKER.match(line)
        if not m:
            continue
        path, start = m.group(1), i
        if changed is None:
            changed = set(git.diff_names("--cached", tip))
        while path not in changed and start > 0:
            start -= 1
            path = said[start] + "\n" + path
        if path in changed:
            numbers.setdefault(path, []).append(int(m.group(2)))
    found = {}
    for path, wanted in numbers.items():
        lines = git.blob(":" + path).split(b"\n")
        found[path] = [(n, lines[n - 1] if n <= len(lines) else b"") for n in wanted]
    return found


def _binary_diff_markers(git: Git, tip: str, paths: list[str]
                         ) -> dict[str, list[tuple[int, bytes]]]:
    """{path: [(line, its bytes)]} of the conflict markers in `paths`, the files whose diff
    (the index against `tip`) git calls binary, a `-diff` attribute say, where `git diff
    --check` looks at none: a merge writes markers into such a file all the same, unless
    it holds a NUL byte (git merges that as binary). A marker counts as many times as the
    index's blob has that line beyond `tip`'s."""
    sizes = git.marker_sizes(None, paths)
    blobs = git.odb.read_many([f":{p}" for p in paths] + [f"{tip}:{p}" for p in paths])
    found = {}
    for path, after, before in zip(paths, blobs[:len(paths)], blobs[len(paths):], strict=True):
        if after is None or b"\0" in after[2][:8000]:
            continue
        seen = Counter(before[2].split(b"\n") if before is not None else ())
        marks = []
        for number, text in enumerate(after[2].split(b"\n"), 1):
            if is_conflict_marker(text.decode("latin-1"), sizes[path]):
                if seen[text] > 0:
                    seen[text] -= 1
                else:
                    marks.append((number, text))
        if marks:
            found[path] = marks
    return found


def is_conflict_marker(line: str, size: int = 7) -> str | None:
    """The marker character of `line` when git would call it a conflict marker (`size` of
    one of < = > | at the start, then whitespace or the end), else None."""
    head = line[:size]
    if len(head) == size and head[0] in "<=>|" and head == head[0] * size and (
            len(line) == size or line[size].isspace()):
        return head[0]
    return None
