"""`pq report`: the migration report (pq.report.migration) as Markdown or JSON.

The Markdown reads as a pull-request description: a heading, then the four parts of a
migration answer, each a short section with a table.
"""

from __future__ import annotations

import click

from pq.cli import markdown as md
from pq.cli.common import emit_json, open_repo, plural, short
from pq.report.migration import MigrationReport


def register(main: click.Group) -> None:
    main.add_command(report)


def _cell(text: str | None) -> str:
    return md.cell(text or "—")


def _code(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(md.code(i) for i in items) if items else "—"


def render(r: MigrationReport) -> str:
    out = [f"# Migration: {plural(len(r.plan), 'patch', 'patches')} on {r.upstream_ref}", ""]
    out += [f"The fork is upstream `{r.upstream_ref}` at `{short(r.base)}` plus the series "
            "below, one commit per patch, in this order.", ""]
    out += ["## 1. Migration plan", ""]
    if r.plan:
        first = r.plan[0]
        out += [f"First landing point: `{first.name}` ({first.layer}) onto "
                f"`{short(r.base)}` ({r.upstream_ref}).", ""]
    out += ["| # | Patch | Layer | Files | +/- | Workaround |", "|---|---|---|---|---|---|"]
    for p in r.plan:
        out.append(f"| {p.index} | `{p.name}` — {_cell(p.summary)} | {p.layer} | "
                   f"{len(p.files)} | +{p.added} -{p.removed} | {_cell(p.workaround)} |")
    out.append("")
    out.append("By layer: " + ("; ".join(f"{layer}: " + ", ".join(str(p.index) for p in ps)
                                          for layer, ps in r.layers_in_order()) or "none")
               + ".")
    out += ["", "## 2. Minimal modification boundary", ""]
    upstream_touched = len(r.touched_upstream())
    out += [f"{upstream_touched} of {plural(r.upstream_files, 'upstream file')} touched, "
            f"{r.untouched} untouched; {plural(len(r.created), 'new file')}.", ""]
    out += ["| Layer | Patches | Files | +/- | Touched files |", "|---|---|---|---|---|"]
    for b in r.layers:
        out.append(f"| {b.layer} | {b.patches} | {len(b.files)} | +{b.added} -{b.removed} | "
                   f"{_code(b.files)} |")
    untouched = [n for n, t in r.top_level if not t]
    touched = [n for n, t in r.top_level if t]
    out += ["", f"Upstream top-level entries untouched: {_code(untouched)}.",
            f"Touched: {_code(touched)}.", ""]
    out += ["## 3. Verification path", ""]
    if not r.gate_configured:
        out += ["No gate is configured (`gate:` in series.yaml); see docs/gate.md.", ""]
    else:
        rec = r.gate_record
        if rec is None:
            out += ["`pq gate` runs these stages in a clean worktree; no gate record of this "
                    "tree yet (run `pq gate`).", ""]
        else:
            what = ("Latest gate run of this tree (`--stage`, no whole run yet)"
                    if rec.get("partial") else "Latest whole gate run of this tree")
            out += [f"{what}: {rec.get('status')} on "
                    f"`{short(str(rec.get('commit')))}` ({rec.get('finished') or '—'}).", ""]
        out += ["| Stage | Needs | Latest result |", "|---|---|---|"]
        for s in r.stages:
            needs = ", ".join(s.requires) or (s.kind or "—")
            out.append(f"| {s.name} | {needs} | {s.status or 'not run'} |")
        out.append("")
    out += ["## 4. Compat-gap strategy", ""]
    if not r.workarounds:
        out += ["No patch is a workaround.", ""]
    else:
        out += ["| Patch | Kind | Scope | Remove when | Issue | Reproducer |",
                "|---|---|---|---|---|---|"]
        for w in r.workarounds:
            out.append(f"| `{w.patch}` | {w.kind or '—'} | {_code(w.scope)} | "
                       f"{_cell('; '.join(w.remove_when))} | {_cell(w.issue)} | "
                       f"{_code([w.reproducer] if w.reproducer else [])} |")
        out.append("")
    return "\n".join(out)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def report(as_json: bool) -> None:
    """The migration report: plan, modification boundary, verification, compat gaps.

    Markdown by default, readable as a pull-request description.
    """
    from pq.report import migration

    with open_repo() as git:
        data = migration.build(git)
    if as_json:
        emit_json(data.to_json())
        return
    click.echo(render(data), nl=False)
