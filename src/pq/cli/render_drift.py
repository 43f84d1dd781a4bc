"""The text of a drift report: `pq drift` prints all of it, `pq rebase` its head (a count,
the first items and the command that shows the rest)."""

from __future__ import annotations

from pq.cli.common import plural, short
from pq.compat.coverage import Status
from pq.drift.scan import DriftReport, Item
from pq.quoting import shown

DIFF_LINES = 40  # of each stale copy's origin diff, in the text report (--json has all)


def status_label(status: Status) -> str:
    if status is Status.NOT_EXPORTED:
        return "will fail at load (declared but not exported)"
    return status.value


def item_line(i: Item) -> str:
    where = f" [{i.header}]" if i.header else ""
    detail = f" - {i.detail}" if i.detail else ""
    return (f"{status_label(i.status)}: {shown(i.file)}:{i.line} {i.name} ({i.kind}, upstream "
            f"{short(i.commit)}){where}{detail}")


def headline(r: DriftReport, why: bool = True) -> str:
    """The counts, and the surface asked (`why` False: no reason when there was none; the
    rebase report's text then reads the same with or without Paddle)."""
    parts = [f"{plural(len(r.items), 'new API use')} ({r.breaking} will break)"]
    if r.stale:
        parts.append(plural(len(r.stale), "stale copy", "stale copies"))
    if r.touched:
        parts.append(plural(len(r.touched), "file") + " touched on both sides")
    if r.renames:
        parts.append(plural(len(r.renames), "old Paddle spelling"))
    surface = r.surface if r.asked or why else (
        "not measured yet (statuses unknown; `pq drift` measures it)")
    return "drift: " + ", ".join(parts) + f"; compat surface: {surface}"


def full(r: DriftReport) -> list[str]:
    out = [f"upstream {short(r.old)}..{short(r.new)} ({plural(r.commits, 'commit')})",
           headline(r)]
    if r.items:
        out.append("new framework API (what will break first):")
        out += [f"  {item_line(i)}" for i in r.items]
    for s in r.stale:
        out.append(f"stale copy: {shown(s.copy)} (patches/{s.patch}) copies "
                   f"{shown(s.origin)}, changed upstream in "
                   f"{', '.join(short(c) for c in s.commits)}; port this diff:")
        lines = s.diff.splitlines()
        out += [f"    {ln}" for ln in lines[:DIFF_LINES]]
        if len(lines) > DIFF_LINES:
            out.append(f"    ... {len(lines) - DIFF_LINES} more line(s) (`pq drift --json`)")
    if r.touched:
        out.append("touched by upstream and by a patch (merged cleanly or not), by layer:")
        for layer in sorted({t.layer for t in r.touched}):
            out.append(f"  {layer}:")
            out += [f"    {shown(t.file)} (patches: {', '.join(t.patches)}; upstream: "
                    f"{', '.join(short(c) for c in t.commits)})"
                    for t in r.touched if t.layer == layer]
    if r.renames:
        out.append("old Paddle spellings (`pq fix-renames` rewrites them as one new patch):")
        out += [f"  patches/{h.patch}: {shown(h.file)}:{h.line} {h.old} -> {h.new}"
                for h in r.renames]
    if not r.risky:
        out.append("nothing risky")
    return out


def summary(r: DriftReport, top: int = 5) -> list[str]:
    """The rebase report's drift section."""
    out = [headline(r, why=False)]
    out += [f"  {item_line(i)}" for i in r.items[:top]]
    out += [f"  stale copy: {shown(s.copy)} copies {shown(s.origin)}" for s in r.stale[:top]]
    out += [f"  old spelling: {shown(h.file)}:{h.line} {h.old}" for h in r.renames[:top]]
    if r.items or r.stale or r.touched or r.renames:
        out.append(f"  run `pq drift {short(r.old)}..{short(r.new)}` for all")
    return out
