"""The operation log: a chain of commits on `refs/pq/oplog`, one entry per operation.

StGit's stack log is the model: each entry commit contains the complete state. Its tree:

    record/id, command, kind, status, time, pid   one text file per field; also target
                                                  (undo/redo/restore), note (kind note) and
                                                  settles ("ID STATUS" lines: stopped
                                                  rebases this operation ended)
    before/, after/                               snapshots (after: once the operation ended)
        head, head-commit, refs, index            text (refs: "ID NAME" lines; index: the
                                                  `ls-files -s -z` entries, NUL-separated)
        scope                                     the queue paths it records, one a line
                                                  (missing: series.yaml and patches only)
        queue/..., state/...                      the queue files and .git/pq state files
        worktree/paths, worktree/index, worktree/files/...   (only while a rebase is stopped)
        checkout/id, checkout/root                the worktree it was taken in (its git
                                                  folder under the common one, its path)

The first parent is the previous entry (record/previous names it; the first entry has
none). The commits a snapshot names must stay reachable for `git gc` (a gitlink would not
keep them): those the previous entry's snapshots named are kept through the first-parent
chain, so an entry adds as parents only the commits that are new since it. At most
PARENT_CAP parents per commit: when more are new (the first entry on a fork with 200
branches) they hang from a balanced tree of "anchor" commits of at most PARENT_CAP parents
each. An entry is replaced only while its operation runs (when it ends).
A log of pq's earlier format (JSON records in `.git/pq/oplog/`, pin commits with subjects
"pq oplog: ..." on the ref) is not read and is left alone: the first new entry keeps the
old tip reachable as an extra parent, and its id follows the last JSON record's.
"""

from __future__ import annotations

import time
from typing import Any

from pq.errors import ConfigError, PqError
from pq.git.gateway import zsplit
from pq.git.objects import Person
from pq.git.odb import is_tree_mode
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.oplog.snapshot import LOG_REF, Snapshot, stored_blob

PARENT_CAP = 16
KINDS = ("command", "undo", "redo", "restore", "note")
STATUSES = ("started", "done", "failed", "stopped", "aborted")
ENTRY_SUBJECT = b"pq oplog "  # then the entry's id: "pq oplog 12: pq export (done)"
LEGACY_SUBJECT = "pq oplog: "  # the pin commits of the JSON log that came before
LEGACY_DIR = "oplog"  # in .git/pq: that log's records, never read

Record = dict[str, Any]
Entries = dict[str, tuple[str, str]]  # path in the entry's tree -> (mode, object id)


class LogCorrupt(ConfigError):
    """An entry on refs/pq/oplog that pq did not write, or that lost part of its tree."""


# -- reading ---------------------------------------------------------------------------


def tip(git: Git) -> str | None:
    """The newest entry, or None when nothing is logged (a ref to a blob or a tree is a
    damaged log, not an empty one)."""
    found = git.try_resolve(LOG_REF)
    if found is None:
        other = git.odb.read_many([LOG_REF])[0]  # the running cat-file: no process
        if other is not None:
            raise _corrupt(other[0], None, f"a {other[1]}, not a commit")
        if git.ref_exists(LOG_REF):  # the ref is there, its object is not
            raise LogCorrupt(f"{LOG_REF} points at an object this repository does not have",
                             hint=f"`git update-ref -d {LOG_REF}` starts a new log; undo "
                                  "cannot reach back past what it drops")
    return found


def read(git: Git, since: int | None = None) -> list[Record]:
    """Every entry's record (`since`: those from that id on, when the chain passes through
    the entry with that id; else all: a log dropped and started again numbers from 1),
    oldest first, without its snapshots (`load` adds them)."""
    records: list[Record] = []
    trees = Trees(git)
    sha = tip(git)
    if sha is not None and git.commit(sha).message.startswith(LEGACY_SUBJECT):
        sha = None
    if sha is not None and since is None:
        _read_ahead(git, trees, sha)
    while sha is not None:
        record = _record(git, trees, sha)
        if records and record["id"] >= records[-1]["id"]:
            raise _corrupt(sha, None, "its id is not below the next entry's")
        if since is not None and record["id"] < since and records \
                and records[-1]["id"] == since:
            break
        records.append(record)
        sha = record["previous"]
    records.reverse()
    _settle(records)
    return records


def _read_ahead(git: Git, trees: Trees, tip_sha: str) -> None:
    """Read the entries' commits, trees, record/ folders and fields in batches into the
    object reader's cache, for the walk that checks each entry (one request each took ten
    round trips an entry): the first-parent chain from the tip, 64 at a time, up to the
    first commit that is no entry. A cache only: what fails here, the walk reports."""
    read = git.odb.read_many
    try:
        count = min(_record(git, trees, tip_sha)["id"], 2**31 - 1)  # rev-list's int
        chain = git.rev_list(tip_sha, max_count=count, first_parent=True)
        tops: list[str] = []
        batch = chain[:64]
        while batch:
            for found in read(batch):
                if found is None or found[1] != "commit" or not found[2].split(
                        b"\n\n", 1)[-1].startswith(ENTRY_SUBJECT):
                    chain = []  # past the entries
                    break
                tops.append(git.commit(found[0]).tree)
            batch = chain[len(tops):len(tops) + 64]
        folders = [entry[1] for t in read(tops) if t is not None and t[1] == "tree"
                   if (entry := trees.entries(t[0]).get(b"record")) is not None
                   and is_tree_mode(entry[0])]
        read([obj for f in read(folders) if f is not None and f[1] == "tree"
              for _, obj in trees.entries(f[0]).values()])
    except (PqError, ValueError):
        return


def _settle(records: list[Record]) -> None:
    """Each rebase logged `stopped` as the entry that ended it says (`done`, `aborted`),
    unless an undo took that entry back (the rebase is stopped again; a redo of the undo
    ends it again)."""
    by_id = {r["id"]: r for r in records}
    settled_by: dict[int, int] = {}  # a stopped entry: the entry that settled it

    def settle(record: Record) -> None:
        for rid, status in record.get("settles", {}).items():
            if rid in by_id and by_id[rid]["status"] == "stopped":
                by_id[rid]["status"] = status
                settled_by[rid] = record["id"]

    for record in records:
        kind, done = record.get("kind", "command"), record.get("status") == "done"
        if done and kind == "undo":
            for rid in [r for r, by in settled_by.items() if by == record.get("target")]:
                by_id[rid]["status"] = "stopped"
                del settled_by[rid]
        elif done and kind == "redo":  # its target: the undo it reverts
            undo = by_id.get(record.get("target"))
            if undo is not None and undo.get("target") in by_id:
                settle(by_id[undo["target"]])
        settle(record)


def load(git: Git, record: Record) -> Record:
    """`record` with its `before` and `after` snapshots (read once)."""
    if "before" not in record:
        trees = Trees(git)
        tree = git.commit(record["commit"]).tree
        top = trees.entries(tree)
        record["before"] = _snapshot(git, trees, record, top, b"before")
        record["after"] = _snapshot(git, trees, record, top, b"after") \
            if b"after" in top else None
    return record


def newest(git: Git) -> tuple[str | None, int, str | None]:
    """(the newest entry, the id the next one gets, what refs/pq/oplog points at now).

    A tip in the legacy format is no entry: the next id follows the legacy records'."""
    ref = tip(git)
    if ref is not None and not git.commit(ref).message.startswith(LEGACY_SUBJECT):
        return ref, int(_record(git, Trees(git), ref)["id"]) + 1, ref
    legacy = git.pq_dir() / LEGACY_DIR
    numbers = [int(p.stem) for p in legacy.glob("*.json")
               if p.stem.isascii() and p.stem.isdigit()] if legacy.is_dir() else []
    return None, max(numbers, default=0) + 1, ref


def _corrupt(sha: str, parent: str | None, why: str, trees: Trees | None = None) -> LogCorrupt:
    """`parent` is named as the log's tip to go back to where it is an entry (`trees` reads
    it): else the ref names a commit of another history (a branch's), whose parents are no
    entries either."""
    try:
        if parent and trees is not None and b"record" not in trees.entries(
                trees.git.commit(parent).tree):
            parent = None
    except (ValueError, PqError):  # a tree that does not parse, an object missing
        parent = None
    fix = (f"`git update-ref {LOG_REF} {parent}` drops it and every later entry"
           if parent else f"`git update-ref -d {LOG_REF}` starts a new log")
    return LogCorrupt(f"{LOG_REF}: entry {sha[:12]} is not a pq log entry ({why})",
                      hint=f"{fix}; undo cannot reach back past what it drops")


def _record(git: Git, trees: Trees, sha: str) -> Record:
    commit = git.commit(sha)
    parent = commit.parents[0] if commit.parents else None
    top = trees.entries(commit.tree)
    if b"record" not in top or not is_tree_mode(top[b"record"][0]):
        raise _corrupt(sha, parent, "it has no record/ folder", trees)
    fields = {name.decode(): git.blob(obj).decode("utf-8", "surrogateescape")
              for name, (_, obj) in trees.entries(top[b"record"][1]).items()}
    for key in ("id", "command", "kind", "status", "time", "pid"):
        if key not in fields:
            raise _corrupt(sha, parent, f"record/{key} is missing", trees)
    if not (fields["id"].isascii() and fields["id"].isdigit()) or fields["kind"] not in KINDS \
            or fields["status"] not in STATUSES or b"before" not in top:
        raise _corrupt(sha, parent, "its record or snapshot is malformed", trees)
    try:  # a number of thousands of digits is a ValueError too (int's digit limit)
        settles = {int(rid): status for rid, status in
                   (line.split(" ", 1) for line in fields.get("settles", "").splitlines())}
        target = int(fields["target"]) if fields.get("target") else None
        number = int(fields["id"])
        pid = int(fields["pid"]) if fields["pid"].isascii() and fields["pid"].isdigit() \
            else None
    except ValueError:
        raise _corrupt(sha, parent, "record/id, pid, target or settles is malformed") from None
    previous = fields.get("previous")
    if previous is not None and previous != parent:
        raise _corrupt(sha, parent, "its first parent is not the previous entry")
    record: Record = {"previous": previous, "id": number, "command": fields["command"],
                      "kind": fields["kind"], "status": fields["status"],
                      "time": fields["time"], "target": target, "commit": sha, "pid": pid}
    if "note" in fields:
        record["note"] = fields["note"]
    if settles:
        record["settles"] = settles
    return record


def _snapshot(git: Git, trees: Trees, record: Record, top: dict[bytes, tuple[bytes, str]],
              side: bytes) -> Snapshot:
    flat = _flatten(trees, top[side][1], "")
    sha = record["commit"]

    def text(name: str, required: bool = True) -> str | None:
        entry = flat.get(name)
        if entry is None:
            if required:
                raise _corrupt(sha, None, f"{side.decode()}/{name} is missing")
            return None
        return git.blob(entry[1]).decode("utf-8", "surrogateescape")

    def files(prefix: str) -> dict[str, str]:
        return {path[len(prefix):]: f"{mode} {obj}" for path, (mode, obj) in flat.items()
                if path.startswith(prefix)}

    refs: dict[str, str] = {}
    for line in (text("refs") or "").splitlines():
        ref_sha, _, name = line.partition(" ")
        refs[name] = ref_sha
    worktree: dict[str, Any] = {}
    paths = text("worktree/paths", required=False)
    if paths is not None:
        worktree = {"paths": zsplit(paths),
                    "index": zsplit(text("worktree/index") or ""),
                    "files": files("worktree/files/")}
    checkout = {"id": text("checkout/id", required=False),
                "root": text("checkout/root", required=False)}
    scope = text("scope", required=False)  # older versions: series.yaml and patches/ only
    return {"head": text("head"), "head_commit": text("head-commit", required=False),
            "scope": scope.splitlines() if scope is not None else ["series.yaml", "patches"],
            "refs": refs, "files": files("queue/"),
            "index": zsplit(text("index") or ""),
            "state": files("state/"), "worktree": worktree,
            "checkout": checkout if checkout["id"] is not None else None}


def _flatten(trees: Trees, tree: str, prefix: str) -> Entries:
    out: Entries = {}
    for name, (mode, obj) in trees.entries(tree).items():
        path = prefix + name.decode("utf-8", "surrogateescape")
        if mode in (b"40000", b"040000"):
            out.update(_flatten(trees, obj, path + "/"))
        else:
            out[path] = (mode.decode(), obj)
    return out


# -- writing ---------------------------------------------------------------------------


def write(git: Git, record: Record, commits: set[str], previous: str | None,
          old: str | None) -> str:
    """Write `record` (its `before` and, once set, `after` snapshot) as the newest entry,
    after the entry `previous`, where refs/pq/oplog is `old` now (this operation's entry
    while it runs, which the new one replaces). `commits`: those its snapshots name (and a
    legacy log's tip). Returns the entry commit."""
    record["previous"] = previous
    kept = _named(git, previous) if previous is not None else set()
    who = Person("pq", "pq@localhost", f"{int(time.time())} +0000")
    trees = Trees(git)
    written = record.setdefault("_trees", {})  # (snapshot, its tree) written already
    files: dict[str, tuple[str, str] | None] = {
        f"record/{name}": entry for name, entry in _record_entries(git, record).items()}
    for side in ("before", "after"):
        snap = record.get(side)
        if snap is None:
            continue
        if side not in written or written[side][0] is not snap:
            side_files: dict[str, tuple[str, str] | None] = dict(_snapshot_entries(git, snap))
            written[side] = (snap, trees.edit_new(side_files))
        files[side] = ("40000", written[side][1])
    tree = trees.edit_new(files)
    room = PARENT_CAP - (1 if previous is not None else 0)
    extra = _hang(git, sorted(commits - kept), room, who)
    entry = git.write_commit(tree, ([previous] if previous else []) + extra, who, who,
                             f"{ENTRY_SUBJECT.decode()}{record['id']}: {record['command']} "
                             f"({record['status']})\n", branch=False)
    git.update_ref(LOG_REF, entry, old or git.null_id(), message="pq oplog")
    return entry


def drop(git: Git, entry: str, previous: str | None, back: str | None) -> None:
    """Take back the newest entry `entry` (its operation changed nothing): the log's ref
    points `back` where it was before it (the `previous` entry, a legacy tip, nowhere)."""
    if back is not None:
        git.update_ref(LOG_REF, back, entry, message="pq oplog")
    else:
        git.delete_ref(LOG_REF)


def _hang(git: Git, tips: list[str], room: int, who: Person) -> list[str]:
    """`tips` as at most `room` parents: directly, or through levels of anchor commits
    (empty tree, at most PARENT_CAP parents each) until few enough are left."""
    level = tips
    while len(level) > room:
        empty = git.empty_tree()
        level = [git.write_commit(empty, level[i:i + PARENT_CAP], who, who,
                                  "pq oplog anchor\n", branch=False)
                 for i in range(0, len(level), PARENT_CAP)]
    return level


def _named(git: Git, entry: str) -> set[str]:
    """Every id the snapshots of `entry` name (refs and a detached HEAD): the chain keeps
    the commits among them reachable."""
    commit = git.commit(entry)
    trees = Trees(git)
    top = trees.entries(commit.tree)
    named: set[str] = set()
    for side in (b"before", b"after"):
        if side not in top:
            continue
        sub = trees.entries(top[side][1])
        if b"refs" in sub:
            named.update(line.split(b" ", 1)[0].decode() for line in  # ids: ASCII
                         git.blob(sub[b"refs"][1]).splitlines())
        if b"head-commit" in sub:
            named.add(git.blob(sub[b"head-commit"][1]).decode())
    return named


def _text(git: Git, value: str) -> tuple[str, str]:
    return ("100644", stored_blob(git, value.encode("utf-8", "surrogateescape")))


def _record_entries(git: Git, record: Record) -> Entries:
    fields = {key: str(record[key]) for key in ("id", "command", "kind", "status", "time")}
    fields["pid"] = str(record.get("pid") or "")
    if record.get("previous"):
        fields["previous"] = str(record["previous"])
    if record.get("target") is not None:
        fields["target"] = str(record["target"])
    if record.get("note") is not None:
        fields["note"] = str(record["note"])
    if record.get("settles"):
        fields["settles"] = "".join(f"{rid} {status}\n"
                                    for rid, status in sorted(record["settles"].items()))
    return {key: _text(git, value) for key, value in fields.items()}


def _snapshot_entries(git: Git, snap: Snapshot) -> Entries:
    out = {"head": _text(git, snap["head"]),
           "refs": _text(git, "".join(f"{sha} {name}\n"
                                      for name, sha in sorted(snap["refs"].items()))),
           "index": _text(git, "\0".join(snap["index"]))}
    if snap.get("scope"):
        out["scope"] = _text(git, "".join(f"{qp}\n" for qp in snap["scope"]))
    if snap.get("head_commit"):
        out["head-commit"] = _text(git, snap["head_commit"])

    def files(prefix: str, specs: dict[str, str]) -> None:
        for path, spec in specs.items():
            mode, obj = spec.split()
            out[f"{prefix}/{path}"] = (mode, obj)

    files("queue", snap["files"])
    files("state", snap["state"])
    worktree = snap.get("worktree") or {}
    if worktree:
        out["worktree/paths"] = _text(git, "\0".join(worktree["paths"]))
        out["worktree/index"] = _text(git, "\0".join(worktree["index"]))
        files("worktree/files", worktree["files"])
    for key, value in (snap.get("checkout") or {}).items():
        out[f"checkout/{key}"] = _text(git, value)
    return out
