"""`pq classify` and `pq split --by-layer`: the layer classifier, per file and per hunk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from pq.cli.common import emit_json, open_repo, plural
from pq.errors import ConfigError
from pq.model import layers, patchfile


def register(main: click.Group) -> None:
    for command in (classify, split):
        main.add_command(command)


def _top() -> Path | None:
    """The working tree's top folder, or None outside a repository (files are then
    classified by the paths as given)."""
    try:
        return open_repo().root
    except ConfigError:
        return None


def _rel(arg: str, top: Path | None) -> str:
    """`arg` as the repository names it (from its top folder, wherever pq runs), else as
    given."""
    if top is not None:
        try:
            where = Path(os.path.abspath(arg))  # its folder's real path, not a link's
            return (where.parent.resolve() / where.name).relative_to(top.resolve()).as_posix()
        except ValueError:  # outside the working tree: as given
            pass
    return Path(arg).as_posix().removeprefix("./")


def _classify_one(arg: str, top: Path | None) -> dict[str, Any]:
    """A path's decision; a patch file (`*.patch`) is decided per hunk, a C/C++ source of
    it read from the working tree when there (the post-image the branch holds)."""
    if not arg:  # (Path("") is the folder pq runs in)
        raise ConfigError("an empty path names no file", hint="give files of the working "
                          "tree or patch files (an empty shell variable?)")
    path = Path(arg)
    if path.is_dir():
        raise ConfigError("a folder, not a file", path=arg,
                          hint=f"name its files: `pq classify {arg.rstrip('/')}/*`")
    if not path.is_file():
        raise ConfigError("no such file", path=arg,
                          hint="give files of the working tree or patch files")
    rel = _rel(arg, top)
    try:
        data = path.read_bytes()
    except OSError as exc:  # a device, /proc: it names no file of its own
        raise ConfigError(f"unreadable ({exc.strerror or exc})", path=arg,
                          hint="give files of the working tree or patch files") from None
    if rel.endswith(".patch"):
        pf = patchfile.parse(data, rel)

        def content(f: Any) -> bytes:
            p = (top or Path()) / f.path
            return p.read_bytes() if p.is_file() else b""

        hunks = layers.classify_hunks(pf.files, content)
        d = layers.patch_layer(hunks)
        return {"path": rel, "layer": d.layer, "rule": d.rule,
                "hunks": [{"path": h.path, "hunk": h.hunk, "header": h.header,
                           "layer": h.layer, "rule": h.rule} for h in hunks]}
    lines = data.decode("utf-8", "replace").split("\n")
    name = rel.lower()
    whole = lines if name.endswith(layers.KERNEL_SUFFIXES) else None
    d = layers.patch_layer([layers.decide(rel, data, whole)])
    return {"path": rel, "layer": d.layer, "rule": d.rule, "hunks": None}


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the decisions as JSON.")
def classify(paths: tuple[str, ...], as_json: bool) -> None:
    """Say which layer each file (or each hunk of a patch file) belongs to, and the rule.

    A patch file (`*.patch`) is decided hunk by hunk and takes the most specific layer of
    its hunks; any other file is decided as a patch that adds it whole.
    """
    top = _top()
    results = [_classify_one(p, top) for p in paths]
    if as_json:
        emit_json({"files": results, "rules": layers.RULES})
        return
    for r in results:
        click.echo(f"{r['path']}: {r['layer']} ({r['rule']})")
        for h in r["hunks"] or ():
            where = f"{h['path']} {h['header']}".rstrip()
            click.echo(f"  {where}: {h['layer']} ({h['rule']})")


@click.command()
@click.argument("patch")
@click.option("--by-layer", is_flag=True, help="One patch per layer (the only way so far).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def split(patch: str, by_layer: bool, as_json: bool) -> None:
    """Split a series patch into one patch per layer; the branch keeps its final tree."""
    from pq.queue import split as split_mod
    from pq.rebase import status as rebase_status

    if not by_layer:
        raise click.UsageError("say how to split: `pq split PATCH --by-layer`")
    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq split")
        result = split_mod.split(git, patch)
    if as_json:
        emit_json({"patch": result.patch, "branch": result.branch, "tip": result.tip,
                   "parts": [{"name": p.name, "layer": p.layer, "hunks": p.hunks,
                              "files": list(p.files)} for p in result.parts],
                   "notes": list(result.notes)})
        return
    click.echo(f"split {result.patch} into {plural(len(result.parts), 'patch', 'patches')} "
               "by layer:")
    width = max(len(p.name) for p in result.parts)
    for p in result.parts:
        click.echo(f"  {p.name:<{width}}  {p.layer:<11}  {plural(p.hunks, 'hunk')}: "
                   + ", ".join(p.files))
    click.echo(f"  {result.branch} has the same final tree; `pq undo` puts the patch back")
    for note in result.notes:
        click.echo(f"  note: {note}")
