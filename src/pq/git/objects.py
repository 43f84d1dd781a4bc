"""Git's commit objects as data: ids, identities, commits, and how git writes a picked one.

Pure: nothing here runs git. gitio reads and writes these objects; everything else sees
them through the types defined here (gitio re-exports them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NewType

from pq.errors import GitError

CommitId = NewType("CommitId", str)
TreeId = NewType("TreeId", str)
BlobId = NewType("BlobId", str)

# A full object id: 40 lower-case hex digits (SHA-1) or 64 (SHA-256). The one pattern pq
# checks ids against (series.yaml's base, the ids git sends a pre-push hook, the names the
# object reader answers without a process). Match it whole (`HEX_ID.fullmatch`): a pattern
# ending in `$` lets a trailing newline through, and an id with one names no object.
FULL_ID = "[0-9a-f]{40}|[0-9a-f]{64}"  # an alternation: wrap it in (?:...) to build on it
HEX_ID = re.compile(FULL_ID)


@dataclass(frozen=True)
class Person:
    name: str
    email: str
    date: str  # git's raw form: "<epoch> <+hhmm>"
    # What stands between the name and the `<`: one space, as git writes it (an empty name
    # too: `author  <e@x>` passes git fsck, `author <e@x>` does not); a parsed identity
    # keeps its own (`A<e@x>`, say), so a picked commit's line stays byte for byte, as
    # `git rebase` keeps it. Not part of equality: the same person, written another way.
    sep: str = field(default=" ", repr=False, compare=False)
    # Likewise what stands between the `>` and the date: git fsck and git log take more
    # than one space there (any whitespace after the first).
    gap: str = field(default=" ", repr=False, compare=False)

    def ident(self) -> str:
        return f"{self.name}{self.sep}<{self.email}>{self.gap}{self.date}"

    @classmethod
    def parse(cls, raw: str) -> Person:
        m = re.match(r"^(.*?)( ?)<(.*)>([ \t\r\v\f]+)([0-9]+ [+-][0-9]{4})$", raw)
        if not m:
            raise GitError(f"cannot parse identity {raw!r}")
        return cls(m.group(1), m.group(3), m.group(5), m.group(2), m.group(4))


# The identity of the synthetic commits merges need; they never reach a branch. Dated 2100:
# git's merge-base search goes newest first, and reached one dated 1970 only after walking
# the whole history below the other side (a 50-patch rebase on 10,000 commits: 3.9 s, 1.0).
MERGER = Person("pq", "pq@localhost", "4102444800 +0000")


@dataclass(frozen=True)
class Commit:
    id: CommitId
    tree: TreeId
    parents: tuple[CommitId, ...]
    author: Person
    committer: Person
    message: str  # the message bytes as UTF-8, surrogateescaped: any bytes round trip
    encoding: str | None = None  # the `encoding` header, when the commit has one

    @property
    def title(self) -> str:
        """The subject as `git log` shows it: in UTF-8, from the commit's encoding."""
        return subject_of(in_utf8(self.message, self.encoding))


def commit_object(tree: str, parents: Sequence[str], author: Person, committer: Person,
                  message: str, encoding: str | None = None) -> bytes:
    """The bytes of a commit object of exactly these fields (text is surrogateescaped)."""
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {author.ident()}",
             f"committer {committer.ident()}"]
    if encoding is not None:
        lines.append(f"encoding {encoding}")
    return ("\n".join(lines) + "\n\n" + message).encode("utf-8", "surrogateescape")


def printable(text: str) -> str:
    """`text` (bytes read as UTF-8 with surrogateescape) with each byte that is not UTF-8
    written as `\\xNN`; `printable(t) == t` says `t` is text as it is."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def subject_of(message: str) -> str:
    """A message's subject line: its first line that is not blank, where git's subject
    starts (git's `%s` then joins the rest of that paragraph; pq names and summarises by
    the line)."""
    return _skip_blank_lines(message).split("\n", 1)[0]


def summary_of(message: str, encoding: str | None = None) -> str:
    """series.yaml's summary of a message: its subject, as text (bytes that are not UTF-8
    read in the commit's declared `encoding`, as `git log` shows them, else U+FFFD;
    whitespace runs one space)."""
    subject = subject_of(message).encode("utf-8", "surrogateescape")
    try:
        text = subject.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = subject.decode(encoding or "utf-8")
        except (LookupError, UnicodeDecodeError):
            text = subject.decode("utf-8", "replace")
    return " ".join(text.split())


def _skip_blank_lines(text: str) -> str:
    """`text` from its first line holding more than spaces, tabs and CRs (git's
    skip_blank_lines); "" when there is none."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        if text[start:end].strip(" \t\r\n"):
            break
        start = end
    return text[start:]


def parse_commit(sha: CommitId, data: bytes) -> Commit:
    """A commit object's fields; text keeps its bytes (surrogateescaped), whatever encoding
    the commit declares, so that `write_commit` writes the same object again."""
    header, _, message = data.partition(b"\n\n")
    tree = ""
    parents: list[CommitId] = []
    author = committer = ""
    encoding: str | None = None
    for line in header.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"tree":
            tree = value.decode()
        elif key == b"parent":
            parents.append(CommitId(value.decode()))
        elif key == b"author" and not author:  # git reads a header's first line
            author = value.decode("utf-8", "surrogateescape")
        elif key == b"committer" and not committer:
            committer = value.decode("utf-8", "surrogateescape")
        elif key == b"encoding" and encoding is None:
            encoding = value.decode("utf-8", "surrogateescape")
    try:
        people = Person.parse(author), Person.parse(committer)
    except GitError as exc:
        raise GitError(f"commit {sha[:12]} ({subject_of(message.decode('utf-8', 'replace'))!r})"
                       f": {exc.message} (its author or committer line is not `Name "
                       "<e-mail> SECONDS +HHMM`: git fsck calls it malformed)",
                       hint="write that commit again (`git commit --amend --reset-author` "
                            "at it, through `git rebase -i`), then run it again") from None
    return Commit(sha, TreeId(tree), tuple(parents), *people,
                  message.decode("utf-8", "surrogateescape"), encoding)


def as_git_commits(author: Person, message: str, encoding: str | None) -> tuple[Person, str]:
    """(author, message) as `git rebase`/`git cherry-pick` write a picked commit's: in UTF-8.

    git re-encodes a commit that declares another encoding into UTF-8 (and writes no
    `encoding` header), keeping the bytes where the conversion fails; then every byte that
    is not part of a valid UTF-8 sequence is taken as Latin-1 (commit.c's verify_utf8).
    The message starts at its first line that is not blank (spaces, tabs, CRs), as git's
    pick takes it from the subject on."""
    ident, text = _in_utf8([author.ident(), _skip_blank_lines(message)], encoding)
    return Person.parse(ident), text


def in_utf8(text: str, encoding: str | None) -> str:
    """A commit's `text` (surrogateescaped bytes in `encoding`) in UTF-8, as git shows it
    and as a picked commit holds it (the conversion of `as_git_commits`)."""
    return _in_utf8([text], encoding)[0]


def _in_utf8(texts: list[str], encoding: str | None) -> list[str]:
    """`texts` of one commit converted together: all of them, or none where one fails."""
    data = [t.encode("utf-8", "surrogateescape") for t in texts]
    if encoding is not None and encoding.lower() not in ("utf-8", "utf8"):
        try:
            # git converts the whole commit, its ASCII header lines too: in an encoding
            # that does not write ASCII as ASCII (UTF-16, UTF-32) that fails, or reads
            # the header as garbage, so no pick ever holds such a conversion.
            if "tree \n".encode(encoding) == b"tree \n":
                data = [d.decode(encoding).encode("utf-8") for d in data]
        except (LookupError, UnicodeError, ValueError):
            pass
    return [_verify_utf8(d).decode("utf-8", "surrogateescape") for d in data]


def _verify_utf8(data: bytes) -> bytes:
    """git's verify_utf8: each byte that starts no valid sequence becomes Latin-1's."""
    if data.isascii():  # nearly every ident and message: nothing to check
        return data
    out = bytearray()
    i = 0
    while i < len(data):
        c = data[i]
        size = 1 if c < 0x80 else 2 if 0xC0 <= c < 0xE0 else 3 if 0xE0 <= c < 0xF0 \
            else 4 if 0xF0 <= c < 0xF8 else 0
        if size and _utf8_ok(data[i:i + size], size):
            out += data[i:i + size]
            i += size
            continue
        out += bytes((0xC0 + (c >> 6), 0x80 + (c & 0x3F)))
        i += 1
    return bytes(out)


def _utf8_ok(seq: bytes, size: int) -> bool:
    if len(seq) != size:
        return False
    try:
        code = ord(seq.decode("utf-8"))
    except UnicodeDecodeError:  # overlong, surrogate, beyond U+10FFFF, bad continuation
        return False
    return (code & 0xFFFE) != 0xFFFE and not 0xFDD0 <= code <= 0xFDEF


Entry = tuple[str, str]  # (mode, object id) of a path in a tree
Change = tuple[str, "Entry | None", "Entry | None"]  # path, before, after (None: absent)
