"""What is being pushed: git's pre-push input (or the pre-commit framework's variables) as
`RefUpdate`s, and PQ_SKIP's check names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pq.errors import ConfigError
from pq.git.objects import HEX_ID

SKIP_ENV = "PQ_SKIP"


@dataclass(frozen=True)
class RefUpdate:
    """One line of git's pre-push input."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @property
    def is_deletion(self) -> bool:
        return set(self.local_sha) == {"0"}

    @property
    def label(self) -> str:
        local = self.local_ref.removeprefix("refs/heads/")
        remote = self.remote_ref.removeprefix("refs/heads/")
        return local if remote in ("", local) else f"{local} -> {remote}"


def parse_push_lines(data: bytes) -> list[RefUpdate]:
    updates = []
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        if not raw.strip():
            continue
        parts = raw.split()
        if len(parts) != 4 or not all(HEX_ID.fullmatch(p) for p in parts[1::2]):
            raise ConfigError(f"cannot read git's pre-push input line {raw!r}",
                              hint="expected `<local ref> <local sha> <remote ref> <remote sha>`")
        updates.append(RefUpdate(*parts))
    return updates


def updates_from_env(environ: Mapping[str, str]) -> list[RefUpdate]:
    """The one ref the pre-commit framework hands its pre-push hooks, or HEAD. Its
    PRE_COMMIT_FROM_REF is where the pushed range starts (for a new branch, the parent of
    its first new commit), not the remote ref's tip: the remote tip is left unknown here
    (all zeros), for `tracked_tip` to fill in."""
    to_ref = environ.get("PRE_COMMIT_TO_REF", "")
    local = environ.get("PRE_COMMIT_LOCAL_BRANCH", "")
    remote = environ.get("PRE_COMMIT_REMOTE_BRANCH", "")
    unknown = "0" * 40
    if to_ref:
        return [RefUpdate(local or to_ref, to_ref, remote, unknown)]
    if local:  # a new branch with its root commit: pre-commit passes no range
        return [RefUpdate(local, local, remote, unknown)]
    return [RefUpdate("HEAD", "HEAD", remote, unknown)]


def tracked_ref(environ: Mapping[str, str], update: RefUpdate) -> str | None:
    """The remote-tracking ref that says where the pre-commit framework's pushed remote ref
    is, as far as this repository knows (`refs/remotes/<remote>/<branch>`), or None."""
    name, ref = environ.get("PRE_COMMIT_REMOTE_NAME", ""), update.remote_ref
    if not name or not ref or (ref.startswith("refs/") and not ref.startswith("refs/heads/")):
        return None  # a tag, say: no remote-tracking ref follows it
    return f"refs/remotes/{name}/{ref.removeprefix('refs/heads/')}"


def parse_skip(value: str | None) -> tuple[frozenset[str], list[str]]:
    """PQ_SKIP's check names, and apart the names in it that are no check (skipping
    nothing)."""
    from pq.push import registry

    names = frozenset(n.strip() for n in (value or "").split(",") if n.strip())
    unknown = sorted(n for n in names if n != "all" and n not in registry.names())
    return names - frozenset(unknown), unknown
