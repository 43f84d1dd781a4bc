"""The `pq` command group: it loads each command's module when that command runs (so that
`pq` starts fast), records the command line for the operation log, and hands every
exception that escapes a command to the one error handler, `pq.cli.failure`.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, NoReturn

import click

from pq import __version__
from pq.cli.common import reset_json_emitted
from pq.cli.failure import Failure, fail, leave

# Command name -> the module under pq.cli that defines it (its `register` adds it).
COMMANDS = {
    "init": "queue", "export": "queue", "apply": "queue", "series": "queue",
    "rebase": "rebase", "audit": "audit", "gate": "gate", "hook": "hook", "check": "hook",
    "log": "oplog", "undo": "oplog", "redo": "oplog", "demo": "demo", "status": "rebase",
    "lint": "lint",
    "classify": "classify", "split": "classify",
    "report": "report",
    "import": "queue",
    "drift": "drift", "fix-renames": "drift",
    "compat-surface": "compat",
    "compare": "compare",
}


class PqGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        from pq.cli import raw_bytes_out, skip_teardown

        skip_teardown()
        raw_bytes_out()
        return super().main(*args, **kwargs)

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
        try:  # pq's own options (`pq --bogus`, `pq -C`): one line, as a command's
            return super().parse_args(ctx, args)
        except click.ClickException as exc:
            usage_failure(exc, bool(ctx.meta["pq.json"]), ctx)

    def _typed_command(self, ctx: click.Context, typed: list[str]) -> str | None:
        """The (sub)command the words typed name, as far as they name one: `audit
        workarounds`."""
        names: list[str] = []
        command: click.Command | None = self
        for word in typed:
            if not isinstance(command, click.Group):
                break
            command = command.get_command(ctx, word)
            if command is None:
                break
            names.append(word)
        return " ".join(names) or None

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:  # a Ctrl-C while pq's own options are read: pq's line, not click's "Aborted!"
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as exc:
            leave(exc, as_json=False)

    def invoke(self, ctx: click.Context) -> Any:
        # The operation log records the command as typed, flags and all.
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2; before: public
        typed = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        as_json = bool(ctx.meta.get("pq.json"))
        reset_json_emitted()
        try:
            from pq.oplog.txn import set_invocation
        except KeyboardInterrupt as exc:  # pq's line, not click's "Aborted!" (exit 1)
            leave(exc, as_json)
        set_invocation("pq " + shlex.join(typed) if typed else None)
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except click.ClickException as exc:  # usage errors: one line too, with the help
            # (of the command typed: click's parser names no context for some errors)
            usage_failure(exc, as_json, command=self._typed_command(ctx, typed))
        except BaseException as exc:
            leave(exc, as_json)
        finally:
            set_invocation(None)


def usage_failure(exc: click.ClickException, as_json: bool,
                  ctx: click.Context | None = None, command: str | None = None) -> NoReturn:
    """Leave on a usage error: one line naming the help to read, or the error as JSON;
    a bare group (click >= 8.2's NoArgsIsHelpError) prints its help, as a bare `pq` does."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    message = exc.format_message().rstrip(".")
    where = getattr(exc, "ctx", None) or ctx
    if isinstance(exc, click.UsageError) and not as_json and (
            where is not None or command is not None):
        sub = where.command_path.partition(" ")[2] if where else command  # `pq`, always
        message += f" (see `pq{' ' + sub if sub else ''} --help`)"
    fail(Failure(message, exc.exit_code), as_json)


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

