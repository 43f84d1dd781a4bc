"""`pq init`, `pq import`, `pq export`, `pq apply`, `pq series`: the queue and its round
trip."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pq.cli.common import base_label, emit_json, given, open_repo, plural, progress_printer, short
from pq.queue import cleanform
from pq.queue import ops as queueops
from pq.quoting import list_paths, shell_args, shown
from pq.rebase import state as rs
from pq.rebase import status as rebase_status

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pq.model.diff import FileDiff
    from pq.queue.copies import CopyProposal
    from pq.queue.importer import ImportResult


def register(main: click.Group) -> None:
    for command in (init, import_, export, apply, series):
        main.add_command(command)


def _render_export(result: queueops.ExportResult, as_json: bool, verb: str,
                   had_series: bool = True, converted: Sequence[str] = ()) -> None:
    s = result.queue.series
    if as_json:
        emit_json({
            "base": s.base,
            "upstream": s.upstream_ref,
            "patches": [{"name": e.name, "layer": e.layer, "summary": e.summary}
                        for e in s.patches],
            "added": result.added,
            "removed": result.removed,
            "dropped": [{"name": n, "what": w} for n, w in result.dropped],
            "reordered": result.reordered,
            "changed": result.changed,
            "commit": result.commit,
            "uncommitted": result.uncommitted,
            "staged_other": result.staged_other,
            "copies_proposed": [c.to_json() for c in result.copies],
        })
        return
    click.echo(f"{verb}: {plural(len(s.patches), 'patch', 'patches')} on "
               f"{base_label(s.base, s.upstream_ref)}")
    for name in result.added:
        click.echo(f"  new      {name}")
    for name in result.removed:
        click.echo(f"  removed  {name}")
    for name, what in result.dropped:
        click.echo(f"  dropped  {what} of {name} (no commit carries it any more; "
                   "`pq undo` brings it back)")
    if result.reordered:
        click.echo(f"  reordered series.yaml takes the commits' order ({len(result.reordered)} "
                   "moved); `pq undo` puts the old one back, and `pq apply` then builds the "
                   "branch in it")
    if not result.changed:
        click.echo("  series.yaml and patches/ already up to date")
    else:
        click.echo(f"  {plural(len(result.changed), 'file')} written")
    if result.changed and had_series:
        click.echo("  `pq undo` restores the previous series.yaml and patches/")
    elif result.changed:
        click.echo("  `pq undo` removes the new series.yaml and patches/ again")
    _render_copies(result.copies)
    if result.commit:
        click.echo(f"  committed as {short(result.commit)}")
    elif converted:  # `git add` would convert them: pq commits them as they are
        click.echo(f"  next: pq export --commit (`git add` would convert the line ends of "
                   f"{list_paths(list(converted))}: core.autocrlf or a `text` attribute; "
                   "`patches/*.patch -text` in .gitattributes stops that)")
    elif result.changed:
        # `patches` only where a patch file changed: git refuses a path that matches nothing
        paths = " ".join(p for p in ("series.yaml", "patches")
                         if any(c == p or c.startswith(p + "/") for c in result.changed))
        if result.staged_other:
            click.echo(f"  the files written are HEAD's, but the index holds other versions of "
                       f"them: `git add {paths}` stages HEAD's back (nothing to commit then)")
            return
        if not result.uncommitted:
            click.echo("  the files written are HEAD's: nothing to commit")
            return
        click.echo(f"  next: git add {paths} && git commit -m 'pq: update series' "
                   "(or `pq export --commit`)")


def _render_copies(copies: Sequence[CopyProposal]) -> None:
    for c in copies:
        click.echo(f"  copy?    {shown(c.copy)} is {round(c.similarity * 100)}% upstream's "
                   f"{shown(c.origin)}: "
                   f"add `{c.declaration()}` to {c.patch} in series.yaml (docs/drift.md)")


@click.command()
@click.option("--upstream", "upstream", callback=given, required=True, metavar="REF",
              help="The upstream ref the fork follows, e.g. upstream/main.")
@click.option("--force", is_flag=True, help="Start over even if series.yaml exists.")
@click.option("--commit", "do_commit", is_flag=True, help="Commit the queue files.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def init(upstream: str, force: bool, do_commit: bool, as_json: bool) -> None:
    """Start a series: base = merge-base(HEAD, REF); one patch per commit since."""
    from pq.model.series import SERIES_FILE

    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq init")
        had_series = (git.root / SERIES_FILE).exists()
        result = queueops.init(git, upstream, force=force, commit=do_commit)
    _render_export(result, as_json, "initialised", had_series)


@click.command("import")
@click.option("--upstream", "upstream", callback=given, required=True, metavar="REF",
              help="The upstream ref the fork merges, e.g. upstream/main.")
@click.argument("branch", required=False, metavar="[BRANCH]")
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing.")
@click.option("--keep-commits", is_flag=True,
              help="One patch per fork commit, when they replay cleanly linearised.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def import_(upstream: str, branch: str | None, dry_run: bool, keep_commits: bool,
            as_json: bool) -> None:
    """Turn a merge-maintained fork branch into a layer-tagged series (base = the newest
    upstream commit merged into BRANCH, default the current branch)."""
    from pq.audit import signals
    from pq.queue import importer

    def detect(f: FileDiff) -> list[tuple[str, int, str]]:
        found = signals.todo_comments(f) + signals.guards(f) + signals.monkey_patches(f)
        return [(s.path, s.line, s.code) for s in found]

    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq import")
        result = importer.import_fork(git, upstream, branch, dry_run=dry_run,
                                      keep_commits=keep_commits, detect=detect)
    _render_import(result, as_json)


def _render_import(r: ImportResult, as_json: bool) -> None:
    totals = r.layer_totals()
    if as_json:
        emit_json({
            "upstream": r.upstream, "base": r.base, "branch": r.branch,
            "original": r.original, "mode": r.mode, "reason": r.reason,
            "dry_run": r.tip is None, "tip": r.tip,
            "layers": {k: {"files": f, "added": a, "removed": d}
                       for k, (f, a, d) in totals.items()},
            "patches": [{"name": p.name, "layer": p.layer, "summary": p.summary,
                         "files": list(p.files), "added": p.added, "removed": p.removed,
                         "kept_from": p.kept_from} for p in r.patches],
            "workaround_candidates": [{"patch": c.patch, "path": c.path, "line": c.line,
                                       "code": c.code} for c in r.candidates],
            "copies_proposed": [c.to_json() for c in r.copies],
        })
        return
    verb = "would import" if r.tip is None else "imported"
    click.echo(f"{verb} {r.branch} ({short(r.original)}): "
               f"{plural(len(r.patches), 'patch', 'patches')} on "
               f"{base_label(r.base, r.upstream)}")
    click.echo(f"  mode: {r.mode}: {r.reason}")
    for layer, (files, added, removed) in totals.items():
        click.echo(f"  {layer:<11}  {plural(files, 'file'):>9}  +{added} -{removed}")
    width = max((len(p.name) for p in r.patches), default=10)
    for p in r.patches:
        kept = f"  (message of {short(p.kept_from)})" if p.kept_from else ""
        click.echo(f"  {p.name:<{width}}  {p.layer:<11}  {plural(len(p.files), 'file')} "
                   f"+{p.added} -{p.removed}{kept}")
    if r.candidates:
        click.echo(f"  {plural(len(r.candidates), 'workaround candidate')} "
                   f"(draft `workaround` blocks {'to write' if r.tip is None else 'written'}, "
                   "marked for review):")
        for c in r.candidates:
            code = " ".join(c.code.split())
            click.echo(f"    {c.patch}  {shown(c.path)}:{c.line}  {code[:60]}")
    _render_copies(r.copies)
    if r.tip is None:
        click.echo("  dry run: nothing written")
    else:
        click.echo(f"  committed as {short(r.tip)}; the previous tip is kept as "
                   f"refs/pq/orig-head/{r.branch}; `pq undo` goes back")


@click.command()
@click.option("--commit", "do_commit", is_flag=True, help="Commit the queue files.")
@click.option("--force", is_flag=True, help="Overwrite hand-edited patch files.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def export(do_commit: bool, force: bool, as_json: bool) -> None:
    """Rewrite series.yaml and patches/ from the branch's commits."""
    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq export")
        result = queueops.export(git, commit=do_commit, force=force)
        converted = [] if result.commit else cleanform.stored_otherwise(git, result.changed)
    _render_export(result, as_json, "exported", converted=converted)


@click.command()
@click.option("--onto", callback=given, default=None, metavar="REV",
              help="Commit to apply onto (default: the series base).")
@click.option("-b", "--branch", default=None, metavar="NAME",
              help="Create NAME for the result and check it out, instead of moving the "
                   "current branch.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def apply(onto: str | None, branch: str | None, as_json: bool) -> None:
    """Materialise the series as commits on a base, without three-way merges."""
    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq apply")
        result = queueops.apply(git, onto, branch=branch, progress=progress_printer("applying"))
    if as_json:
        emit_json({"onto": result.onto, "branch": result.branch, "tip": result.tip,
                   "commits": [{"patch": n, "commit": c} for n, c in result.commits]})
        return
    click.echo(f"applied {plural(len(result.commits), 'patch', 'patches')} onto "
               f"{short(result.onto)}; "
               f"{result.branch} is now {short(result.tip)}")
    if result.left is not None:  # a new branch has no previous tip: HEAD's branch is kept
        click.echo(f"  {result.branch} is checked out; {result.left} is unchanged (`git "
                   f"switch {shell_args([result.left])}`, or `pq undo`, goes back to it)")
    else:
        click.echo(f"  the previous tip is kept as refs/pq/orig-head/{result.branch}; "
                   "`pq undo` goes back")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the series as JSON.")
def series(as_json: bool) -> None:
    """List the patches, in order, with layer and size.

    While a rebase is stopped, the first line says so and the list is the series as it
    was when the rebase started (series.yaml is out of the working tree until it ends); in
    another worktree, the list is that worktree's own series.
    """
    with open_repo() as git:
        st = rebase_status.status(git)
        state = rs.load(git) if st else None
        if state is not None and git.other_worktree(state.worktree) is not None:
            state = None  # stopped in another worktree: this one's series.yaml is in place
        s, infos = queueops.list_series(git, rs.queue_before(git, state) if state else None)
    if as_json:
        emit_json({"upstream": s.upstream_ref, "base": s.base, "patches": [
            {"index": p.index, "name": p.name, "layer": p.layer, "summary": p.summary,
             "files": p.files, "added": p.added, "removed": p.removed,
             "workaround": p.workaround} for p in infos],
            "rebase": st.to_json() if st else None})
        return
    if st:
        click.echo(st.line())
    click.echo(f"{base_label(s.base, s.upstream_ref)}: {plural(len(infos), 'patch', 'patches')}")
    width = max((len(p.name) for p in infos), default=10)
    for p in infos:
        wa = f"  [workaround: {p.workaround}]" if p.workaround else ""
        click.echo(f"{p.index:4d}  {p.name:<{width}}  {p.layer:<11}  {plural(p.files, 'file')} "
                   f"+{p.added} -{p.removed}{wa}")
