"""The `pq` script and `python -m pq`: every command, through click (`pq.cli.app`).

Two command lines take a short path that never imports click, the most frequent and the
ones whose time is mostly pq's start: `python -m pq hook run ...`, which the installed
pre-push hook calls (it loads only the hook and its checks, so a push whose checks are
cached stays fast), and a plain `pq rebase` (`pq.cli.rebase.plain_args`: an upstream ref,
`--continue`, `--skip`, `--abort` and the flags that go with them). Both report errors
through the CLI's own handler (`pq.cli.failure`); any other command line goes to click.
"""

from __future__ import annotations

import os
import sys


def _hook_run_args(argv: list[str]) -> tuple[str | None, str | None, str | None] | None:
    """(remote, url, chain) when argv is a plain `hook run` call, else None (use the CLI)."""
    chain: str | None = None
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--chain" and i + 1 < len(argv):
            chain = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--chain="):
            chain = arg.split("=", 1)[1]
        elif arg == "--":
            positional.extend(argv[i + 1:])
            break
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
        i += 1
    if len(positional) == 2:
        return positional[0], positional[1], chain
    if not positional:
        return None, None, chain
    return None


def _hook_run(remote: str | None, url: str | None, chain: str | None) -> int:
    from pq.cli import raw_bytes_out, skip_teardown
    from pq.cli.failure import leave
    from pq.cli.render_hook import hook_lines
    from pq.push.hook import pre_push

    skip_teardown()
    raw_bytes_out()
    try:
        stdin = sys.stdin.buffer.read() if remote is not None else b""
        result = pre_push(remote, url, stdin, dict(os.environ), chain)
    except BaseException as exc:
        leave(exc, as_json=False)
    for line in hook_lines(result):
        sys.stderr.write(line + "\n")
    return result.exit_code


def _plain_rebase(argv: list[str]) -> bool:
    """Run `pq rebase ...` as click would, when `argv` is a plain rebase command line;
    False (nothing done) for any other."""
    as_json = "--json" in argv
    try:
        from pq.cli import rebase as command

        kwargs = command.plain_args(argv[1:])
        if kwargs is None:
            return False
        import shlex

        from pq.cli import raw_bytes_out, skip_teardown
        from pq.oplog.txn import set_invocation

        skip_teardown()
        raw_bytes_out()
        set_invocation("pq " + shlex.join(argv))  # the operation log's command, as typed
        command.run(**kwargs)
    except SystemExit:
        raise
    except BaseException as exc:
        from pq.cli.failure import leave

        leave(exc, as_json)
    return True


def main() -> None:
    _standard_streams()
    _in_utf8_mode()
    try:
        _main(sys.argv[1:])
    except KeyboardInterrupt as exc:  # before a command's own handler: importing click, say
        from pq.cli.failure import leave

        leave(exc, as_json="--json" in sys.argv)


def _standard_streams() -> None:
    """A standard stream the caller closed (`2>&-`, `<&-`) is /dev/null, as git makes it:
    the file pq opens next would otherwise take its descriptor (and a git process's error
    lines would be written into it), and pq writes its lines, or reads its input, as with
    the stream open (Python leaves `sys.stderr` None there)."""
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: `fd`
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
        if getattr(sys, name) is None:  # the stream lives as long as pq does
            stream = open(fd, "r" if fd == 0 else "w", encoding="utf-8",  # noqa: SIM115
                          errors="surrogateescape", closefd=False)
            setattr(sys, name, stream)


def _in_utf8_mode() -> None:
    """Start again in Python's UTF-8 mode where the locale's encoding is another (`C` with
    its coercion off, ISO-8859-1, ...): git's paths are bytes, which pq holds as UTF-8 text
    (surrogateescaped where they are not UTF-8); under an ASCII or Latin-1 file system
    encoding opening `数据.txt` failed. `-X utf8` reaches this interpreter alone: the
    commands pq runs (gate stages) keep the caller's settings."""
    if sys.flags.utf8_mode or sys.getfilesystemencoding().lower().replace("-", "") == "utf8":
        return
    # Only pq's own command lines (the console script, `python -m pq`) start again: not a
    # frozen build (its executable reads no `-X`), a program read from stdin, one that
    # asked for UTF-8 mode already, or a caller that runs `main()` in its own process.
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if getattr(sys, "frozen", False) or "utf8" in getattr(sys, "_xoptions", {}) or \
            script not in ("pq", "__main__.py") or sys.argv[0] == "-":
        return
    from pq.git.process import restart_with

    try:
        restart_with(["-X", "utf8"])
    except OSError:
        pass  # pq goes on: its output is still UTF-8 (`raw_bytes_out`)


def _main(argv: list[str]) -> None:
    from pq.cli import tune_collector

    tune_collector()
    if argv[:2] == ["hook", "run"]:
        parsed = _hook_run_args(argv[2:])
        if parsed is not None:
            sys.exit(_hook_run(*parsed))
    if argv[:1] == ["rebase"] and _plain_rebase(argv):
        sys.exit(0)
    from pq.cli import main as cli

    cli(prog_name="pq")


if __name__ == "__main__":
    main()
