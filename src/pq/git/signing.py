"""Signed commits: where the user's configuration asks for them (`commit.gpgSign`), the
commits pq puts on a branch are signed as `git rebase`, `git am` and `git cherry-pick`
sign theirs.

pq writes commit objects in-process (`Gateway.write_commit`); a signed one goes through
`git commit-tree -S` instead, so that git's own signing (gpg, ssh or x509, the key, the
program) applies unchanged. The commit git writes is checked field by field against the
one pq meant to write: git normalizes some identities and messages as it signs (a name
with surrounding punctuation, a message that is not valid UTF-8), and a signed commit
that silently differs from its original is worse than an error. Commits that never reach
a branch (merges' scratch commits, the operation log, the pre-push checks' throwaway
stack) are never signed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pq.errors import ConfigError, GitError
from pq.git.objects import CommitId, Person, commit_object, printable, subject_of

if TYPE_CHECKING:
    from pq.git.gateway import Gateway

# A signature header (`gpgsig`, or `gpgsig-sha256` in a SHA-256 repository) and its
# continuation lines, each starting with a space.
_SIGNATURE = re.compile(rb"^gpgsig(?:-sha256)? [^\n]*\n(?: [^\n]*\n)*", re.MULTILINE)

_RETRY = "run the command again"  # the end of the fix, which a caller may name better
_FIX = ("make `git commit -S` work in this repository (user.signingKey, gpg.format, "
        f"gpg.program), or turn commit.gpgSign off, then {_RETRY}")


def retry_as(exc: ConfigError, step: str) -> ConfigError:
    """`exc`, a signing failure's fix naming `step` as what to run once signing works
    (where running the command again would be refused); any other error as it is."""
    if exc.hint and exc.hint.endswith(_FIX):
        exc.hint = exc.hint.removesuffix(_RETRY) + step
    return exc


def wanted(git: Gateway) -> bool:
    """Whether the configuration asks for signed commits (`commit.gpgSign`)."""
    return bool(git.config_bool("commit.gpgSign"))


def _identity_env(role: str, person: Person) -> dict[str, str]:
    return {f"GIT_{role}_NAME": person.name, f"GIT_{role}_EMAIL": person.email,
            f"GIT_{role}_DATE": "@" + person.date}


def write_signed(git: Gateway, tree: str, parents: Sequence[str], author: Person,
                 committer: Person, message: str, encoding: str | None) -> CommitId:
    """The commit of these fields written signed through `git commit-tree -S`; ConfigError
    when git cannot sign it, GitError when it would sign a different commit. An `encoding`
    header naming UTF-8 goes: git writes none (it says nothing; `git rebase` drops it)."""
    if encoding is not None and encoding.lower() in ("utf-8", "utf8"):
        encoding = None
    body = commit_object(tree, parents, author, committer, message, encoding)
    args = ["-c", f"i18n.commitEncoding={encoding or 'UTF-8'}", "commit-tree", "-S", tree]
    for parent in parents:
        args += ["-p", parent]
    env = {**_identity_env("AUTHOR", author), **_identity_env("COMMITTER", committer)}
    subject = printable(subject_of(message) or "(no subject)")
    proc = git.run_proc(*args, input=message.encode("utf-8", "surrogateescape"), env=env,
                        interruptible=True)  # a signer may ask for a passphrase
    said = [ln.removeprefix("error: ").removeprefix("fatal: ") for ln in
            proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if proc.returncode != 0 and any(_IDENTITY_REFUSED.search(ln) for ln in said):
        raise _changed(subject, f"git refuses its identity or date: {said[-1]}")
    if proc.returncode != 0:
        raise ConfigError(f"git could not sign the commit {subject!r}: "
                          f"{'; '.join(said[:2]) or 'git commit-tree -S failed'}", hint=_FIX)
    commit = proc.stdout.decode().strip()
    _, kind, data = git.odb.read(commit)
    if kind != "commit" or _SIGNATURE.sub(b"", data, count=1) != body:
        raise _changed(subject, "its author, committer or message as git writes them "
                                "differ from the original")
    return CommitId(commit)


# git's words for an identity or a date it will not write (an empty name, a date it
# cannot parse, a name of nothing but disallowed characters).
_IDENTITY_REFUSED = re.compile(r"empty ident|invalid date|disallowed characters|"
                               r"unable to auto-detect email", re.IGNORECASE)


def _changed(subject: str, why: str) -> GitError:
    """The commit git cannot sign as it is: only git's own signing knows the user's key
    and signer, and it reformats an identity it is given (`git rebase` copies the original
    author line as it is; `git commit-tree` cannot)."""
    return GitError(
        f"signing the commit {subject!r}, git changes it ({why}): pq does not sign it",
        hint="turn commit.gpgSign off for this command (`GIT_CONFIG_COUNT=1 "
             "GIT_CONFIG_KEY_0=commit.gpgSign GIT_CONFIG_VALUE_0=false pq ...`), then sign "
             "the branch's commits with git")
