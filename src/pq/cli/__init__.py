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

    def invoke(self, ctx: click.Context) -> Any:
        from pq.txn import set_invocation

        # The operation log records the command as typed, flags and all.
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2; before: public
        typed = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        set_invocation("pq " + shlex.join(typed) if typed else None)
        try:
            return super().invoke(ctx)
        except PqError as exc:
            click.echo(f"pq: error: {exc.render()}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("pq: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except BrokenPipeError:
            sys.exit(1)
        except Exception as exc:  # a bug: one line, and the way to see more
            if os.environ.get("PQ_DEBUG"):
                raise
            first = str(exc).splitlines()[0] if str(exc) else ""
            click.echo(f"pq: internal error: {type(exc).__name__}: {first} "
                       "(set PQ_DEBUG=1 for the traceback, and please report it)", err=True)
            sys.exit(2)
        finally:
            set_invocation(None)


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

