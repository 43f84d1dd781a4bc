"""Patch identity: which series entry each commit of the stack is, from evidence only.

A commit is matched to an entry by the first kind of evidence that decides it, in order:

1. its `Pq-Patch:` trailer, when it names an entry (one naming none, a patch renamed
   since, names the commit only when nothing below does; a message with lines naming two
   entries stops);
2. the recorded patch file (the series' own, or the one pq last committed in a
   bookkeeping commit) is this very commit: same author, message and diff;
3. the same diff (a reworded or moved commit);
4. the same diff once hunk line numbers are ignored (an earlier patch moved its lines);
5. the same author and message (an amended commit);
6. the same author, author date and subject (a squash keeps the first commit's).

Only then does a commit get a new name. A subject's slug is never evidence. When a
commit could be two entries, or two commits one entry, nothing is guessed: a ConfigError
names them and says how to tell pq (a `Pq-Patch:` trailer). Entries whose recorded files
are the same commit (byte-identical, or apart in pq's header lines only: their metadata)
are interchangeable and are taken in series order.

`positional` is the common case known cheaply: every commit renders to its entry's one
recorded file, in series order, so `match` would name them so (checked without parsing a
patch file, which is most of `match`'s cost on a large queue).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pq.errors import ConfigError
from pq.git.objects import subject_of
from pq.model import diff as diffs
from pq.model import patchfile
from pq.model.patchfile import TRAILER, PatchFile
from pq.model.series import NAME_RE, PatchEntry

if TYPE_CHECKING:
    from pq.queue.stack import StackCommit



def _tiers() -> tuple[tuple[str, Callable[[StackCommit | PatchFile], object]], ...]:
    """(what it is, the key two records share when it holds), strongest first."""
    return (
        ("the same commit", lambda r: (r.diff, r.message, r.author, r.encoding)),
        ("the same diff", lambda r: r.diff),
        ("the same diff (lines moved)", lambda r: diffs.without_line_numbers(r.diff)),
        ("the same author and message", lambda r: (r.message, r.author.name, r.author.email)),
        ("the same author, date and subject", lambda r: (subject_of(r.message), r.author)),
    )


def match(stack: Sequence[StackCommit], entries: Sequence[PatchEntry],
          recorded: Mapping[str, Sequence[bytes]]) -> list[str | None]:
    """For each commit, the name of the entry it is, or None for a new patch."""
    names: list[str | None] = [None] * len(stack)
    known = {e.name for e in entries}
    claimed: set[str] = set()
    trailers = [sc.trailer_name for sc in stack]
    _refuse_squashed(stack, known)
    parsed: dict[str, list[PatchFile]] = {}
    raw: dict[str, frozenset[bytes]] = {}
    for e in entries:
        files = []
        for data in recorded.get(e.name, ()):
            try:
                files.append(patchfile.parse(data, f"patches/{e.name}"))
            except ConfigError:
                continue  # a broken file is no evidence
        parsed[e.name] = files
        raw[e.name] = frozenset(recorded.get(e.name, ()))
    first = _trailer_owners(stack, parsed)
    for i, name in enumerate(trailers):
        # A trailer naming no entry (the patch was renamed since) is weighed after the
        # evidence below; it names a new patch only when nothing else does.
        if name and name in known and first[name] == i:
            names[i] = name
            claimed.add(name)
    for rank, (what, key) in enumerate(_tiers()):
        open_entries = [e.name for e in entries if e.name not in claimed and e.name in known]
        open_commits = [i for i, n in enumerate(names) if n is None]
        if not open_entries or not open_commits:
            break
        by_key: dict[object, list[str]] = {}
        for n in open_entries:
            for k in dict.fromkeys(key(pf) for pf in parsed[n]):
                by_key.setdefault(k, []).append(n)
        cands = {i: by_key.get(key(stack[i]), []) for i in open_commits}
        wanted: dict[str, list[int]] = {}  # entry name: the open commits it could be
        for i in open_commits:
            for n in cands[i]:
                wanted.setdefault(n, []).append(i)
        for i in open_commits:
            options = [n for n in cands[i] if n not in claimed]
            if not options:
                continue
            # Entries that are the very same commit (their files differ in pq's header
            # lines at most: a commit picked again after a revert, say) are taken in series
            # order, as byte-identical ones are; of other evidence, none is guessed.
            if len(options) > 1 and rank > 0 and len({raw[n] for n in options}) > 1:
                raise _ambiguous(stack[i], options, what)
            name = options[0]
            rivals = [j for j in wanted[name] if j != i and names[j] is None
                      and stack[j].diff != stack[i].diff]
            if rivals:
                raise _two_commits(stack[i], stack[rivals[0]], name, what)
            names[i] = name
            claimed.add(name)
    for i, name in enumerate(trailers):
        if names[i] is None and name and NAME_RE.match(name) and first[name] == i and (
                name not in claimed):
            names[i] = name
            claimed.add(name)
    return names


def _trailer_owners(stack: Sequence[StackCommit], parsed: Mapping[str, Sequence[PatchFile]]
                    ) -> dict[str, int]:
    """{trailer name: the commit it names}: the first commit carrying it, when every commit
    that carries it has the same diff (a commit picked again); else the one of them that is
    the entry's recorded commit. Commits of different diffs and none of them that commit
    (one split in two after `pq apply`, both parts keeping the message) stop: which part
    is the patch, and which one is new, is the user's to say."""
    carriers: dict[str, list[int]] = {}
    for i, sc in enumerate(stack):
        if sc.trailer_name:
            carriers.setdefault(sc.trailer_name, []).append(i)
    owners = {}
    same_commit = _tiers()[0][1]
    for name, found in carriers.items():
        if all(stack[i].diff == stack[found[0]].diff for i in found):
            owners[name] = found[0]
            continue
        recorded = {same_commit(pf) for pf in parsed.get(name, ())}
        exact = [i for i in found if same_commit(stack[i]) in recorded]
        if len(exact) != 1:
            a, b = (stack[i] for i in found[:2])
            raise ConfigError(
                f"commits {a.commit[:12]} ({subject_of(a.message)!r}) and {b.commit[:12]} "
                f"({subject_of(b.message)!r}) both carry `{TRAILER}: {name}`, with different "
                "diffs (a commit split after `pq apply`?); pq will not guess which one it is",
                path="series.yaml",
                hint=f"take the `{TRAILER}:` line out of the message of each commit that is "
                     "not that patch (`reword` in `git rebase -i`), then run it again")
        owners[name] = exact[0]
    return owners


def positional(stack: Sequence[StackCommit], entries: Sequence[PatchEntry],
               recorded: Mapping[str, Sequence[bytes]],
               render: Callable[[int, PatchEntry], bytes]) -> list[str] | None:
    """The entries' names in series order, when that is what `match` gives, known without
    reading a patch file: each commit is its entry's recorded file byte for byte (`render`:
    the file pq writes for commit i as that entry), which is that entry's only recorded
    file, no two commits are the same commit and no trailer names another entry. None when
    any of it does not hold (then `match` weighs the evidence)."""
    if len(stack) != len(entries):
        return None
    _refuse_squashed(stack, {e.name for e in entries})
    keys = {(sc.diff, sc.message, sc.author, sc.encoding) for sc in stack}
    if len(keys) != len(stack):
        return None
    for i, (sc, e) in enumerate(zip(stack, entries)):
        files = recorded.get(e.name, ())
        if sc.trailer_name not in (None, e.name) or len(files) != 1 or (
                render(i, e) != files[0]):
            return None
    return [e.name for e in entries]


def _refuse_squashed(stack: Sequence[StackCommit], known: set[str]) -> None:
    """A message with lines naming two entries: commits squashed after `pq apply`."""
    for sc in stack:
        # (`-` binds before `&`: `known - {...}` would copy every name once per commit.)
        others = ({ln[len(TRAILER) + 2:].strip() for ln in sc.message.split("\n")
                   if ln.startswith(TRAILER + ": ")} & known) - {sc.trailer_name}
        named = sorted(others) + ([sc.trailer_name] if sc.trailer_name else [])
        if len(named) > 1:  # commits squashed after `pq apply`, each with its trailer
            raise _two_trailers(sc, named)


def _ambiguous(sc: StackCommit, options: list[str], what: str) -> ConfigError:
    both = " and ".join(f"patches/{n}" for n in options[:2])
    more = f" (and {len(options) - 2} more)" if len(options) > 2 else ""
    return ConfigError(
        f"commit {sc.commit[:12]} ({subject_of(sc.message)!r}) could be {both}{more} "
        f"({what}); pq will not guess which patch it is",
        path="series.yaml",
        hint=f"add the line `{TRAILER}: <name>` (e.g. `{TRAILER}: {options[0]}`) to the end "
             "of the commit's message (`git commit --amend`, or `reword` in `git rebase -i`), "
             "then run it again")


def _two_trailers(sc: StackCommit, names: list[str]) -> ConfigError:
    both = " and ".join(f"patches/{n}" for n in names[:2])
    return ConfigError(
        f"commit {sc.commit[:12]} ({subject_of(sc.message)!r}) carries a `{TRAILER}:` line "
        f"for each of {both} (commits squashed after `pq apply`?); pq will not guess which "
        "patch it is", path="series.yaml",
        hint=f"keep only the `{TRAILER}:` line of the patch it is in the commit's message "
             "(`git commit --amend`, or `reword` in `git rebase -i`), then run it again")


def _two_commits(a: StackCommit, b: StackCommit, name: str, what: str) -> ConfigError:
    return ConfigError(
        f"commits {a.commit[:12]} ({subject_of(a.message)!r}) and {b.commit[:12]} "
        f"({subject_of(b.message)!r}) could both be patches/{name} ({what}); pq will not "
        "guess which one it is",
        path="series.yaml",
        hint=f"add the line `{TRAILER}: {name}` to the end of that commit's message "
             "(`git commit --amend`, or `reword` in `git rebase -i`), then run it again")
