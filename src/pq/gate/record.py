"""Gate records: a JSON git note on the tip commit in `refs/notes/pq-gate`.

The note holds the latest run at its top level and earlier runs from other environments
(a GPU machine's pass is not erased by a later CPU run) under `history`. Notes travel with
`git push/fetch origin refs/notes/pq-gate` (and merge with `-s union`); lookups also find
records of an equal tree.
"""

from __future__ import annotations

import json
from typing import Any

from pq.gate import NOTES_REF
from pq.gate import result as R
from pq.git.repo import Git
from pq.oplog.txn import Transaction, in_transaction
from pq.quoting import json_text

FORMAT = 1
HISTORY_MAX = 10
_OK_STAGE = (*R.STAGE_OK, R.SKIPPED_NO_GPU, R.NOT_AVAILABLE)

Record = dict[str, Any]


def read_records(git: Git, commit: str) -> list[Record]:
    """The records in the gate note on `commit`, newest first (none without a note)."""
    notes = git.notes(NOTES_REF, commit)
    return _parse(git, notes[0][0]) if notes else []


def _parse(git: Git, blob: str) -> list[Record]:
    """Every record in a note. A note is one JSON object (the latest run, earlier ones under
    `history`); after `git notes merge -s union` it is several, one after the other."""
    try:
        text = git.blob(blob).decode("utf-8")
    except UnicodeDecodeError:
        return []
    decoder = json.JSONDecoder()
    records: list[Record] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            data, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # nested deeper than the parser goes, too
            break  # not pq's JSON past this point
        if isinstance(data, dict):
            records += _records_of(data)
    unique: dict[str, Record] = {}
    for rec in records:
        unique.setdefault(json.dumps(rec, sort_keys=True), rec)
    return sorted(unique.values(), key=lambda r: str(r.get("time", "")), reverse=True)


def _records_of(note: Record) -> list[Record]:
    """The record at the top of a note object, then those under its `history`; a record of
    another shape (a note written by hand, or by something else) is left out."""
    top = {k: v for k, v in note.items() if k != "history"}
    history = note.get("history")
    older = [r for r in history if isinstance(r, dict)] if isinstance(history, list) else []
    return [r for r in (top, *older) if _well_formed(r)]


def _well_formed(record: Record) -> bool:
    """Whether `record` has the shape pq writes: text where pq reads text, a mapping for
    the fingerprint (its GPUs a list of names), a list of stages each with a name, a
    status and a list of needs."""
    stages, fingerprint = record.get("stages"), record.get("fingerprint") or {}
    gpus = fingerprint.get("gpu") or [] if isinstance(fingerprint, dict) else None
    return (isinstance(stages, list)
            and all(isinstance(record.get(k, ""), str) for k in ("tree", "status", "time"))
            and isinstance(gpus, list) and all(isinstance(g, str) for g in gpus)
            and all(isinstance(st, dict) and isinstance(st.get("name"), str)
                    and isinstance(st.get("status"), str)
                    and isinstance(st.get("requires") or [], list) for st in stages))


def records_for_tree(git: Git, commit: str, tree: str) -> list[tuple[str, Record]]:
    """(annotated commit, record) for every record of `tree`: `commit`'s own note first,
    then notes on other commits with the same tree (an amended message, a re-created tip)."""
    found = [(commit, r) for r in read_records(git, commit) if r.get("tree") == tree]
    for blob, annotated in git.notes(NOTES_REF):
        if annotated == commit or not blob:
            continue
        found += [(annotated, r) for r in _parse(git, blob) if r.get("tree") == tree]
    return found


def stage_statuses(record: Record) -> dict[str, str]:
    return {str(s.get("name")): str(s.get("status")) for s in record.get("stages", [])
            if isinstance(s, dict)}


def find_cached(git: Git, commit: str, tree: str, fingerprint: dict[str, Any],
                names: tuple[str, ...]) -> tuple[str, Record] | None:
    """A passing record of the same tree and environment that ran all of `names`, where no
    run of one of `names` at least as new (same tree and environment) did not pass: the
    newest result of each stage wins, so a pass is never answered over a later failure."""
    same = [(annotated, r) for annotated, r in records_for_tree(git, commit, tree)
            if r.get("fingerprint") == fingerprint]
    for i, (annotated, record) in enumerate(same):
        if record.get("status") not in R.PASSING:
            continue
        statuses = stage_statuses(record)
        if not all(statuses.get(n) in _OK_STAGE for n in names):
            continue
        when = str(record.get("time", ""))
        # Newer: a later time, or the same second and listed before (a note's top record).
        if any((str(other.get("time", "")) > when or (j < i and other.get("time") == when))
               and any(stage_statuses(other).get(n, R.PASSED) not in _OK_STAGE for n in names)
               for j, (_, other) in enumerate(same) if j != i):
            continue  # a newer run of one of these stages did not pass
        return annotated, record
    return None


def covers(git: Git, commit: str, tree: str, required: tuple[str, ...]) -> tuple[bool, str]:
    """Whether records of `tree` show every required stage passed (GPU skips do not count)."""
    records = records_for_tree(git, commit, tree)
    where = f"{commit[:12]} (tree {tree[:12]})"
    fetch = f"git fetch origin {NOTES_REF}:{NOTES_REF}"
    if not records:
        return False, (f"no gate record for {where}: run `pq gate`, or fetch the team's "
                       f"records with `{fetch}`")
    if not required:
        for _, record in records:
            if record.get("status") in R.PASSING and not record.get("partial"):
                return True, f"gate {record.get('status')} for {where} at {record.get('time')}"
        latest = records[0][1]
        return False, (f"no passing full gate record for {where} (latest: "
                       f"{latest.get('summary') or latest.get('status')}): run `pq gate`")
    missing: list[str] = []
    # The newest run of each stage decides (a pass is not taken over a later failure, as
    # for the cached result): newest first by time, a note's own order kept among equals.
    newest = sorted(records, key=lambda found: str(found[1].get("time", "")), reverse=True)
    for name in required:
        seen = [stage_statuses(r).get(name) for _, r in newest]
        ran = next((s for s in seen if s in (*R.STAGE_OK, R.FAILED, R.TIMED_OUT)), None)
        if ran not in R.STAGE_OK:
            last = ran or next((s for s in seen if s), None)
            missing.append(f"{name} ({R.StageResult(name, last).display()})" if last
                           else f"{name} (never run)")
    if missing:
        gpu_hint = " on a machine with a GPU" if any("no GPU" in m for m in missing) else ""
        return False, (f"gate stages not passed for {where}: " + ", ".join(missing)
                       + f"; run `pq gate`{gpu_hint} and `git push origin {NOTES_REF}`")
    return True, f"gate stages passed for {where}: " + ", ".join(required)


def save(git: Git, commit: str, record: Record) -> None:
    """Write `record` as the note on `commit`, keeping other environments' runs as history
    (the note is read under the same lock it is written under: two gates run at once both
    keep their record)."""
    if in_transaction(git):
        _write(git, commit, record)  # inside the caller's transaction (pq rebase --gate)
        return
    with Transaction(git, "pq gate", index=False) as txn:
        _write(git, commit, record)
        txn.done()


def _write(git: Git, commit: str, record: Record) -> None:
    history = [r for r in read_records(git, commit) if not _superseded(r, record)]
    note = dict(record)
    note["history"] = history[:HISTORY_MAX]
    data = (json_text(note, indent=1) + "\n").encode("utf-8")
    blob = git.write_blob(data)
    # -C takes the blob as it is: no whitespace clean-up of the JSON.
    git.add_note(NOTES_REF, commit, blob)


def _superseded(old: Record, new: Record) -> bool:
    """The new run replaces an old one of the same tree and environment that ran no more."""
    if old.get("tree") != new.get("tree") or old.get("fingerprint") != new.get("fingerprint"):
        return False
    return set(stage_statuses(old)) <= set(stage_statuses(new))

