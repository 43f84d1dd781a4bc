"""`pq compat-surface`: the measured compat surface of the installed Paddle (pq.compat):
a summary, or one line per asked name with its status, header, declaration and export.
Exit 0: every name covered (or unknown); 1: a name breaks; 2: bad input or no Paddle.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from pq.cli.common import emit_json, given, note_printer


def register(main: click.Group) -> None:
    main.add_command(compat_surface)


def _progress(as_json: bool) -> Any:
    return None if as_json else note_printer()


@click.command("compat-surface")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("--paddle-python", callback=given, metavar="PYTHON",
              help="Measure the Paddle of this interpreter (default: pq's own).")
@click.option("--rebuild", is_flag=True, help="Measure again even if the cache holds it.")
@click.argument("names", nargs=-1)
def compat_surface(as_json: bool, paddle_python: str | None, rebuild: bool,
                   names: tuple[str, ...]) -> None:
    """What Paddle's torch compat layer provides: headers, C++ declarations, exported
    symbols and the Python proxy's attributes, measured once per Paddle version.

    NAMES are headers (c10/cuda/CUDAGuard.h), C++ names (at::cuda::CUDAGuard), macros
    (TORCH_LIBRARY), tensor methods (Tensor.const_data_ptr) or Python paths
    (torch.cuda.Stream). Exit 0 when all are covered, 1 when one breaks.
    """
    from pq.compat.query import ask
    from pq.compat.surface import load_surface

    surface = load_surface(paddle_python, rebuild=rebuild, progress=_progress(as_json))
    answers = [ask(surface, n) for n in names]
    summary = {"paddle_version": surface.paddle_version, "key": surface.key,
               "paddle_root": surface.root, "python": surface.interpreter,
               "cache": surface.cache_path, "rebuilt": surface.rebuilt,
               "build_seconds": None if surface.build_seconds is None
               else round(surface.build_seconds, 3),
               "counts": surface.counts(), "libraries": surface.libraries}
    if as_json:
        emit_json({**summary, "names": [
            {"name": c.name, "kind": c.kind, "status": c.status.name.lower(),
             "breaks": c.status.breaks, "header": c.header, "declaration": c.declaration,
             "exported": c.exported, "detail": c.detail} for c in answers]})
    elif not names:
        click.echo(_summary_text(summary))
    else:
        width = max(len(c.name) for c in answers)
        for c in answers:
            click.echo(f"{c.status.name:<14} {c.name:<{width}}  {c.detail}")
            extra = [f"header {c.header}"] if c.header else []
            if c.declaration:
                extra.append(f"declared `{c.declaration}`")
            if c.exported is not None:
                extra.append("exported" if c.exported else "NOT exported")
            if extra:
                click.echo(" " * 15 + "; ".join(extra))
    sys.exit(1 if any(c.status.breaks for c in answers) else 0)


def _summary_text(s: dict[str, Any]) -> str:
    c = s["counts"]
    how = f"built in {s['build_seconds']:.2f} s" if s["rebuilt"] else "from the cache"
    libs = ", ".join(f"{k} ({v})" for k, v in sorted(s["libraries"].items())) or "none"
    return "\n".join([
        f"Paddle {s['paddle_version']} ({s['paddle_root']}), key {s['key']}",
        f"headers: {c['headers']}  declarations: {c['declarations']}  macros: {c['macros']}",
        f"exported at::/c10::/torch:: symbols: {c['exports']} in {libs}",
        f"python proxy: {c['python_modules']} modules, {c['python_attrs']} attributes",
        f"cache: {s['cache'] or 'not written: the proxy probe failed'} ({how})",
    ])
