"""The subjects pq gives its bookkeeping commits: how a commit is known as pq's own.

init and export --commit, rebase, apply, import and split write them, and the one pq names
for committing an export by hand (`git commit -m 'pq: update series'`) is one too. Any
other `pq: ...` subject is the user's own (the README's `pq: acknowledge ...`), and a patch
file edited by hand may be in it.
"""

from __future__ import annotations

import re

_PQ_SUBJECT = re.compile(r"pq: (?:(?:init|export|update) series|(?:rebase|apply) series onto "
                         r"[0-9a-f]{12}|import .+ as a series on [0-9a-f]{12}|split .+ by "
                         r"layer)")


def is_bookkeeping(message: str) -> bool:
    """Whether a commit `message` (its first line) is one of pq's bookkeeping subjects."""
    return _PQ_SUBJECT.fullmatch(message.partition("\n")[0]) is not None


def is_written_by_pq(message: str) -> bool:
    """Whether a commit `message` is one a pq command wrote itself: a bookkeeping subject,
    not the `pq: update series` pq names for a commit made by hand."""
    return is_bookkeeping(message) and not message.startswith("pq: update series")
