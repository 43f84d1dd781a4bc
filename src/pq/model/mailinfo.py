"""What `git am` makes of a patch mail pq did not write (git's mailinfo, then am's cleanup).

A file `git format-patch --from` wrote carries its author in the body (`From: Original
Author <...>` above the message); a patch taken from a mailing list has `Subject: Re:
[PATCH v2 3/5] ...`. `git am` takes such in-body headers as the commit's, strips the
subject's `Re:` and bracketed prefixes, and cleans the message's white space; so does pq,
for files that are not its own (see pq.model.patchfile: pq's own files are read exactly as
it wrote them).
"""

from __future__ import annotations

import itertools
import re

# The headers a body may start with (git's mailinfo: `header[]`), as `name:` in any case.
_NAMED = re.compile(r"(?i)(from|subject|date):[ \t]*(.*)")
# `git format-patch`'s mbox separator, quoted by a mailer (">From <id> Mon Sep 17 ...").
_SEPARATOR = re.compile(r">From [0-9a-f]{40,64} Mon Sep 17 00:00:00 2001")
_ASCII_SPACE = " \t\n\v\f\r"  # C's isspace(), which git's cleanups use (not Unicode's)
_SPACES = re.compile(f"[{_ASCII_SPACE}]+")


def in_body(body: str) -> tuple[dict[str, tuple[str, int]], str]:
    """({header: (value, the line it starts on, 0-based in `body`)}, the body after them):
    the header lines `git am` takes from the top of a body (empty lines before them
    skipped), each name once, with folded lines joined, and a `[PATCH] ...` line taken as
    the subject; an empty line after a header, or a line that is none of these, starts
    the message."""
    found: dict[str, tuple[str, int]] = {}
    current: str | None = None
    start = 0
    for i in itertools.count():
        end = body.find("\n", start)
        line = body[start:] if end < 0 else body[start:end]
        if current is not None and line[:1] in (" ", "\t"):  # a folded header line
            value, at = found[current]
            found[current] = (value + line, at)
        elif line or end < 0:
            current = None
            named = _NAMED.fullmatch(line)
            if named and (name := named.group(1).lower()) not in found:
                found[name] = (named.group(2).strip(), i)
                current = name
            elif line.startswith("[PATCH]") and line[7:8] in ("", " ", "\t", "\v", "\f", "\r"):
                found["subject"] = (line, i)
            elif not _SEPARATOR.fullmatch(line):
                return found, body[start:]
        elif current is not None:  # an empty line after a header ends them
            return found, body[start:]
        if end < 0:
            return found, ""
        start = end + 1
    raise AssertionError("unreachable")


def clean_subject(subject: str) -> str:
    """The subject as `git am` keeps it: leading `Re:`, bracketed groups (`[PATCH v2 1/3]`,
    `[RFC]`), colons and white space taken off, repeatedly; white space runs as one space."""
    while subject:
        if subject[:3].lower() == "re:" and len(subject) > 3:
            subject = subject[3:]
        elif subject[0] in _ASCII_SPACE + ":":
            subject = subject[1:]
        elif subject[0] == "[" and "]" in subject:
            subject = subject[subject.index("]") + 1:]
        else:
            break
    return _SPACES.sub(" ", subject).strip(_ASCII_SPACE)


def stripspace(text: str) -> str:
    """git's `stripspace`: trailing white space off every line, runs of empty lines as one,
    none at the start or the end, and a final newline when anything is left."""
    out: list[str] = []
    for line in text.split("\n"):
        line = line.rstrip(_ASCII_SPACE)
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def message(subject: str, body: str) -> str:
    """The commit message `git am` writes from a mail's subject and body."""
    return stripspace(clean_subject(subject) + "\n\n" + body)


def take_in_body(keys: dict[str, str], lines: dict[str, int], body: bytes, first: int
                 ) -> tuple[bytes, int]:
    """(the body after its in-body headers, the line it starts on) of a mail whose headers
    are `keys` (lower-case names) on `lines`, and whose body starts on line `first`: the
    in-body headers' values and lines take the place of the mail's own in `keys` and
    `lines`, as `git am` takes them."""
    said, after = in_body(body.decode("utf-8", "surrogateescape"))
    for name, (value, at) in said.items():
        keys[name], lines[name] = value, first + at
    rest = after.encode("utf-8", "surrogateescape")
    return rest, first + body.count(b"\n", 0, len(body) - len(rest))
