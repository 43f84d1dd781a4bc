"""`pq compare`: the same script under real PyTorch and under Paddle compat; where the two
runs first differ (observation, call site file:line and layer, errors, values side by side).

Exit 0 the traces agree, 1 a divergence, 2 a set-up error (interpreter, script failing).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from pq.cli.common import emit_json, given, plural, progress_printer

VALUES_SHOWN = 8


def register(main: click.Group) -> None:
    main.add_command(compare)


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("script", type=click.Path(path_type=Path))
@click.argument("args", nargs=-1)
@click.option("--torch-python", callback=given, default=None, metavar="PATH",
              help="Interpreter with real PyTorch (default: the one running pq).")
@click.option("--paddle-python", callback=given, default=None, metavar="PATH",
              help="Interpreter with paddlepaddle >= 3.3 (default: the one running pq).")
@click.option("--torch-path", callback=given, multiple=True, metavar="DIR",
              help="Put DIR first on the torch side's import path (repeatable).")
@click.option("--paddle-path", callback=given, multiple=True, metavar="DIR",
              help="Put DIR first on the Paddle side's import path (repeatable).")
@click.option("--package", callback=given, default=None, metavar="NAME",
              help="Record every call into this package's public functions and its ops.")
@click.option("--namespace", callback=given, default=None, metavar="NS",
              help="The torch.ops namespace of the package's ops (default: the package name).")
@click.option("--tolerance", "tolerance", multiple=True, metavar="DTYPE=RTOL,ATOL",
              help="Tolerance for one dtype, e.g. float32=1.3e-6,1e-5 (repeatable).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Seed for random, numpy, torch.")
@click.option("--timeout", default=600.0, show_default=True,
              type=click.FloatRange(min=0, min_open=True),
              callback=lambda ctx, param, value: _a_number(value), help="Seconds per side.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_context
def compare(ctx: click.Context, script: Path, args: tuple[str, ...], torch_python: str | None,
            paddle_python: str | None, torch_path: tuple[str, ...],
            paddle_path: tuple[str, ...], package: str | None, namespace: str | None,
            tolerance: tuple[str, ...], seed: int, timeout: float, as_json: bool) -> None:
    """Run SCRIPT under real PyTorch and under Paddle compat; report the first divergence.

    Both sides run in their own process with the same seed. Recorded: `pq.observe(name,
    value)` calls in the script and, with --package, every call into the package's public
    functions and its custom ops (torch.ops.NS.*). Exit 0 when the traces agree, 1 at a
    divergence, 2 on a set-up error (with the failing side's traceback).
    """
    from pq.compare import api
    from pq.compare.values import parse_tolerance

    tols = dict(parse_tolerance(t) for t in tolerance)
    sides = (api.Side("torch", api.resolve_python(torch_python or sys.executable, "torch"),
                      torch_path),
             api.Side("paddle", api.resolve_python(paddle_python or sys.executable, "paddle"),
                      paddle_path))
    result = api.run_compare(script, sides, package=package, namespace=namespace, args=args,
                             tolerance=tols, seed=seed, timeout_s=timeout,
                             progress=progress_printer("compare"))
    if as_json:
        emit_json(result.to_json())
    else:
        click.echo(text(result), err=result.status == api.ERROR)
    ctx.exit(result.exit_code)


def _a_number(seconds: float) -> float:
    if seconds != seconds:  # NaN passes every range check
        raise click.BadParameter("nan is not a number of seconds")
    return seconds


def text(result: Any) -> str:
    """What a person reads: agreement, the divergence block, or the failing side's error."""
    if result.error is not None:
        err = result.error
        lines = [f"compare: error: {err.message}"]
        if err.traceback.strip():
            lines.append(f"--- {err.side} side ---")
            lines.extend(err.traceback.rstrip().splitlines())
        return "\n".join(lines)
    total = max(result.observations)
    if result.divergence is None:
        return f"traces agree ({plural(total, 'observation')})"
    d = result.divergence
    lines = [f"first divergence at observation {d.index + 1} of {total}: {d.observation}"
             + (f" ({d.what})" if d.what else ""), f"  {d.message}"]
    if d.site is not None:
        lines.append(f"  call site:      {d.site.text()}")
    if d.torch_site is not None and d.site is not None and \
            (d.torch_site.file, d.torch_site.line) != (d.site.file, d.site.line):
        lines.append(f"  torch call site: {d.torch_site.text()}")
    if d.implementation is not None:
        lines.append(f"  implementation: {d.implementation.text()}, {d.implementation.how}")
    if d.max_abs is not None:
        lines.append(f"  max abs error {d.max_abs:.6g}, max rel error {d.max_rel:.6g}")
    lines.extend(_side_by_side(d.torch_value, d.paddle_value))
    return "\n".join(lines)


def _side_by_side(torch: Any, paddle: Any) -> list[str]:
    rows: list[tuple[str, str, str]] = []
    if any(isinstance(s, dict) and s.get("type") == "tensor" for s in (torch, paddle)):
        # (one side may be an error's text: it raised where the other returned a tensor)
        def field(s: Any, key: str) -> str:
            return str(s.get(key, "-")) if isinstance(s, dict) else "-"

        def values(s: Any) -> str:
            return _values(s) if isinstance(s, dict) else _short(s)

        for key in ("dtype", "shape", "device"):
            rows.append((key, field(torch, key), field(paddle, key)))
        rows.append(("values", values(torch), values(paddle)))
    else:
        rows.append(("value", _short(torch), _short(paddle)))
    width = max(len(r[1]) for r in rows)
    out = [f"  {'':7} {'torch':<{width}}  paddle"]
    out += [f"  {k + ':':7} {t:<{width}}  {p}" for k, t, p in rows]
    return out


def _values(s: dict[str, Any]) -> str:
    vals = s.get("values")
    if not isinstance(vals, list):
        return _short(s)
    more = len(vals) > VALUES_SHOWN or s.get("truncated")
    imag = s.get("imag")
    shown = ([_complex(v, i) for v, i in zip(vals, imag, strict=False)]
             if isinstance(imag, list) else [_number(v) for v in vals])
    return "[" + ", ".join(shown[:VALUES_SHOWN]) + (", ...]" if more else "]")


def _number(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _complex(real: Any, imag: Any) -> str:
    i = _number(imag)
    return f"{_number(real)}{'' if i.startswith('-') else '+'}{i}j"


def _short(v: Any) -> str:
    if isinstance(v, dict) and v.get("type") == "scalar" and "imag" in v:
        v = f"({_complex(v.get('value'), v.get('imag'))})"
    elif isinstance(v, dict) and v.get("type") == "scalar":
        v = v.get("value")
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."
