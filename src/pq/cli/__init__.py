"""The command line: parse arguments, call the library, render the result.

Each command lives in its own module under `pq.cli` and is imported only when it runs, so
that `pq` starts fast. Expected failures (`PqError`) are caught once here and become one
line and an exit code.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

import click

from pq import __version__
from pq.errors import PqError

# Command name -> the module under pq.cli that defines it (its `register` adds it).
COMMANDS = {
    "init": "queue", "export": "queue", "apply": "queue", "series": "queue",
    "rebase": "rebase", "audit": "audit", "gate": "gate", "hook": "hook", "check": "hook",
    "log": "oplog", "undo": "oplog", "redo": "oplog", "demo": "demo", "status": "rebase",
}


class PqGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import importlib

            module = importlib.import_module(f"pq.cli.{COMMANDS[cmd_name]}")
            module.register(self)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `--json` anywhere before `--`: errors, too, come out as JSON on stdout.
        ctx.meta["pq.json"] = "--json" in args[:args.index("--")] if "--" in args \
            else "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from pq.oplog.txn import set_invocation

        # The operation log records the command as typed, flags and all.
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2; before: public
        typed = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        set_invocation("pq " + shlex.join(typed) if typed else None)
        as_json = bool(ctx.meta.get("pq.json"))
        try:
            return super().invoke(ctx)
        except PqError as exc:  # after a JSON report (rebase's conflict): a stderr line
            fail(exc.render(), exc.exit_code,
                 as_json and not ctx.meta.get("pq.json_emitted"), exc)
        except KeyboardInterrupt:
            fail("interrupted", 130, as_json)
        except click.ClickException as exc:
            if not as_json:
                raise
            fail(exc.format_message(), exc.exit_code, as_json)
        except (click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except BrokenPipeError:
            sys.exit(1)
        except Exception as exc:  # a bug: one line, and the way to see more
            if os.environ.get("PQ_DEBUG"):
                raise
            first = str(exc).splitlines()[0] if str(exc) else ""
            fail(f"internal error: {type(exc).__name__}: {first} (set PQ_DEBUG=1 for the "
                 "traceback, and please report it)", 2, as_json)
        finally:
            set_invocation(None)


def error_data(message: str, exit_code: int, exc: PqError | None = None) -> dict[str, Any]:
    """The JSON shape of an error (README: "Errors as JSON")."""
    return {"error": {"message": exc.message if exc is not None else message,
                      "path": getattr(exc, "path", None), "line": getattr(exc, "line", None),
                      "column": getattr(exc, "column", None),
                      "hint": exc.hint if exc is not None else None,
                      "exit_code": exit_code}}


def fail(message: str, exit_code: int, as_json: bool, exc: PqError | None = None) -> None:
    """Leave with `exit_code`: one `pq: error:` line on stderr, or, under --json, the error
    as JSON on stdout."""
    if as_json:
        import json

        click.echo(json.dumps(error_data(message, exit_code, exc), indent=2,
                              ensure_ascii=False))
    elif exit_code == 130:
        click.echo("pq: interrupted", err=True)
    else:
        click.echo(f"pq: error: {message}", err=True)
    sys.exit(exit_code)


@click.group(cls=PqGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pq")
@click.option("-C", "directory", default=None, metavar="DIR",
              help="Run as if pq was started in DIR.")
@click.pass_context
def main(ctx: click.Context, directory: str | None) -> None:
    """pq keeps a fork's migration edits as an ordered series of patches.

    The series lives in series.yaml and patches/ at the top of the fork; the fork's
    branch is the upstream base plus one commit per patch.
    """
    if directory:
        try:
            os.chdir(directory)
        except OSError as exc:
            raise click.UsageError(f"cannot change to {directory}: {exc.strerror}") from None

