"""The one exception family pq raises for expected failures.

Every user-facing failure is a `PqError` carrying a one-line message and an exit code;
the CLI catches it once and prints it. Anything else that escapes is a bug.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class PqError(Exception):
    """An expected failure: one line for the user, and the exit code to leave with; where
    it is about a place in a file, the message starts with it (`path:line:column: `)."""

    exit_code = EXIT_USAGE

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = ""
        if path is not None:
            where = path
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        super().__init__(where + message)
        self.message = where + message
        self.hint = hint
        self.path = path
        self.line = line
        self.column = column

    def render(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class ConfigError(PqError):
    """Bad input: a malformed series, patch file, argument or repository state (exit 2)."""

    exit_code = EXIT_USAGE


class GitError(PqError):
    """A git command failed where pq did not expect it to (exit 2)."""

    exit_code = EXIT_USAGE


class OperationFailed(PqError):
    """The operation ran and reports a failure: a conflict, a failed check (exit 1)."""

    exit_code = EXIT_FINDINGS
