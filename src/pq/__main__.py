"""`python -m pq`: the same commands as the `pq` script.

`python -m pq hook run ...`, which the installed pre-push hook calls, takes a short path
that loads only the hook and its checks, so a push whose checks are cached stays fast.
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
    from pq.errors import PqError
    from pq.push import hook

    try:
        stdin = sys.stdin.buffer.read() if remote is not None else b""
        result = hook.pre_push(remote, url, stdin, dict(os.environ), chain)
    except PqError as exc:
        sys.stderr.write(f"pq: error: {exc.render()}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("pq: interrupted\n")
        return 130
    except Exception as exc:  # a bug: one line, as the CLI does
        if os.environ.get("PQ_DEBUG"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        sys.stderr.write(f"pq: internal error: {type(exc).__name__}: {first} "
                         "(set PQ_DEBUG=1 for the traceback, and please report it)\n")
        return 2
    for line in hook.render(result):
        sys.stderr.write(line + "\n")
    return hook.exit_code(result)


def main() -> None:
    argv = sys.argv[1:]
    if argv[:2] == ["hook", "run"]:
        parsed = _hook_run_args(argv[2:])
        if parsed is not None:
            sys.exit(_hook_run(*parsed))
    from pq.cli import main as cli

    cli(prog_name="pq")


if __name__ == "__main__":
    main()
