"""Queue states known to be what `pq export` gives for their branch: a small cache.

Exporting base..HEAD again is the costly half of `pq export`, of `pq rebase`'s check
that the branch matches its series, and of the pre-push hook's export check (which looks
up the pushed commit with the queue committed in it). Its result depends only on
HEAD's commit (which pins every commit, HEAD's committed queue and pq's last bookkeeping
commit) and on the queue's exact bytes in the working tree; so a state where the export
changed nothing (`pq export`, `pq rebase`'s pre-flight check), or that pq just wrote
and committed (a rebase's landing, `pq export --commit`, `pq init --commit`), is
remembered by a digest of exactly those, pq's version and code included, in
`.git/pq/export-cache.json` (not part of snapshots). Any other commit or byte gives
another key: a stale entry can only go unused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pq import __version__, installed
from pq.errors import ConfigError
from pq.git import odb
from pq.git.repo import Git
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.queue.files import Queue

if TYPE_CHECKING:
    from pq.queue.stack import StackCommit

CACHE_FILE = "export-cache.json"
CACHE_ENTRIES = 32
FORMAT = 1


def key(head: str, queue: Queue) -> str | None:
    """The digest of pq's code, HEAD's commit and the queue's bytes (None without series
    bytes)."""
    if queue.series_bytes is None:
        return None
    h = hashlib.sha256(f"pq {__version__} export-cache {FORMAT}\0{head}\0".encode())
    h.update(installed.code_digest())
    h.update(b"%d\0" % len(queue.series_bytes) + queue.series_bytes)
    for name in sorted(queue.files):
        data = queue.files[name]
        h.update(name.encode("utf-8", "surrogateescape") + b"\0%d\0" % len(data) + data)
    return h.hexdigest()


def _load(git: Git) -> list[str]:
    try:
        data = json.loads((git.pq_dir() / CACHE_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return []
    keys = data.get("verified") if isinstance(data, dict) else None
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def known(git: Git, head: str, queue: Queue) -> bool:
    """Whether exporting `head` is known to give `queue`, byte for byte."""
    entries = _load(git)  # none at all (a fresh clone): nothing to hash the queue for
    return bool(entries) and key(head, queue) in entries


def remember(git: Git, head: str, queue: Queue) -> None:
    """Record that exporting `head` gives `queue` (call it only when it does)."""
    from pq.atomic import write_atomic

    k = key(head, queue)
    if k is None or _overlaid(git):
        return
    keys = [e for e in _load(git) if e != k] + [k]
    data = {"version": FORMAT, "verified": keys[-CACHE_ENTRIES:]}
    try:
        git.pq_dir().mkdir(exist_ok=True)
        write_atomic(git.pq_dir() / CACHE_FILE, (json.dumps(data, indent=1) + "\n").encode(),
                     durable=False)
    except OSError:
        pass  # a cache that cannot be written only costs time


def _overlaid(git: Git) -> bool:
    """Whether git shows some commits otherwise than stored (`git replace`, a graft): an
    export then read them so, and remembering it would vouch for what a push, which sends
    the commits as stored, does not carry (the hook reads them as stored)."""
    found = odb.overlaid(git.common_dir, git.env)
    return found if found is not None else git.has_refs_under("refs/replace/")


def remember_written(git: Git, head: str, queue: Queue, stack: Sequence[StackCommit]) -> None:
    """Remember `queue`, the export of `stack` that pq just wrote and committed at `head` (a
    rebase's landing, `export --commit`, `init --commit`), where the next export is sure to
    read the same stack and name it the same, with these files as its only evidence: no
    commit changes only queue files (an export takes it for pq's bookkeeping and leaves it
    out), and the naming finds each commit's entry by position (no two commits alike, no
    trailer naming another entry or two of them)."""
    from pq.queue import identity
    from pq.queue.bookkeeping import only_queue_files
    from pq.queue.stack import recorded_files

    if any(only_queue_files(git, sc.commit, sc.parent, sc.diff) for sc in stack):
        return
    names = [e.name for e in queue.series.patches]
    try:
        found = identity.positional(stack, queue.series.patches, recorded_files(queue),
                                    lambda i, entry: queue.files[entry.name])
    except ConfigError:  # a commit naming two entries: the next export refuses it
        return
    if found == names:
        remember(git, head, queue)


def as_last_written(git: Git, head: str, queue: Queue) -> bool:
    """Whether `queue` is byte for byte what pq's bookkeeping commit `head` holds: then the
    evidence a full `pq export` weighs (the working tree's files, HEAD's, the last ones pq
    wrote) is these files alone, as in a check that exported them with only those."""
    from pq.git.trees import Trees
    from pq.queue.bookkeeping import queue_blobs, written_by_pq

    if queue.series_bytes is None or not written_by_pq(git, head):
        return False
    mine = {f"{PATCHES_DIR}/{name}": git.hash_blob(data) for name, data in queue.files.items()}
    mine[SERIES_FILE] = git.hash_blob(queue.series_bytes)
    return queue_blobs(Trees(git), head) == mine
