"""Which refs the operations of the log changed: what `pq undo` may put back.

An operation's refs are those that differ between its `before` and what it left: its
`after`, or, where it was cut off half-way, the `before` of the operation logged after it
(the present, where none was). A cut-off operation left no record of what it did: only the
refs its command can move count then, and a branch whose tip is no commit a pq command
wrote was moved by the user's hand since; so was one that a failed operation left there
(a commit made while it ran).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from typing import Any

from pq.errors import PqError
from pq.git.repo import Git
from pq.model.subjects import is_written_by_pq
from pq.oplog import log
from pq.oplog.snapshot import REBASE_STATE, Snapshot

Record = dict[str, Any]


def refs_moved(git: Git, records: list[Record], only: int | None, first: int,
               current: Snapshot) -> tuple[set[str], set[str]]:
    """(The refs that operation `only` (None: each from `first` on) changed: between its
    `before` and what it left, its `after`, or, cut off half-way, the next operation's
    `before` (where none came after, the present), and then only the refs the command can
    move (its branch, a `-b` branch, pq's own) — and of those, the branches whose tip there
    is no commit of pq's: the user's, made since.)"""
    moved: set[str] = set()
    doubted: set[str] = set()
    for i, record in enumerate(records):
        rid = int(record["id"])
        if rid < first or (only is not None and rid != only):
            continue
        record = log.load(git, record)
        before = record.get("before")
        if not isinstance(before, dict):
            continue
        after = record.get("after")
        later = None if isinstance(after, dict) else _next_before(git, records, i)
        left = after if isinstance(after, dict) else later or current
        differ = {n for n in {*before["refs"], *left["refs"]}
                  if before["refs"].get(n) != left["refs"].get(n)}
        if not isinstance(after, dict) and record.get("kind", "command") == "command":
            differ = {n for n in differ if n.startswith("refs/pq/") or n in _can_move(git,
                                                                                    record)}
        if record.get("kind", "command") == "command" and (
                not isinstance(after, dict) or record.get("status") == "failed"):
            # Cut off, or failed half-way (a commit made while it ran, say): a branch whose
            # tip it left is no commit of pq's was moved by another hand.
            doubted |= {n for n in differ if not n.startswith("refs/pq/") and (
                tip := left["refs"].get(n)) and not is_written_by_pq(git.commit(tip).message)}
        moved |= differ
    return moved, doubted


def left_by(git: Git, records: list[Record], rid: int) -> Snapshot | None:
    """The state operation `rid` left: its `after`, or, cut off half-way, the `before` of
    the operation logged next (None: none was)."""
    i = next(i for i, r in enumerate(records) if int(r["id"]) == rid)
    after = log.load(git, records[i]).get("after")
    return after if isinstance(after, dict) else _next_before(git, records, i)


def _next_before(git: Git, records: list[Record], i: int) -> Snapshot | None:
    return next((n["before"] for n in (log.load(git, r) for r in records[i + 1:])
                 if isinstance(n.get("before"), dict)), None)


def _can_move(git: Git, record: Record) -> set[str]:
    """The branches a command can move: HEAD's as it started, a stopped rebase's, and one
    `-b NAME` makes."""
    names = {record["before"].get("head", "")}
    stored = record["before"]["state"].get(REBASE_STATE)
    with contextlib.suppress(ValueError, AttributeError, TypeError, PqError):
        names.add(str(json.loads(git.blob(stored.split()[-1])).get("branch")))
    try:
        words = shlex.split(str(record.get("command", "")))
    except ValueError:
        words = []
    for i, word in enumerate(words):
        if word in ("-b", "--branch") and i + 1 < len(words):
            names.add(f"refs/heads/{words[i + 1]}")
        elif word.startswith("--branch="):
            names.add(f"refs/heads/{word.split('=', 1)[1]}")
        elif word.startswith("-b") and not word.startswith("--"):  # `-bNEW`, as click reads it
            names.add(f"refs/heads/{word[2:]}")
    return names
