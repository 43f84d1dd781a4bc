"""What `git am` makes of a patch mail pq did not write (git's mailinfo, then am's cleanup).

A file `git format-patch --from` wrote carries its author in the body (`From: Original
Author <...>` above the message); a patch taken from a mailing list has `Subject: Re:
[PATCH v2 3/5] ...`, maybe a quoted-printable body in Latin-1, and notes below its `---`.
`git am` undoes the transfer encoding, takes such in-body headers as the commit's, strips
the subject's `Re:` and bracketed prefixes, ends the message at its patch break, converts
it to UTF-8 and cleans its white space; so does pq, for files that are not its own (see
pq.model.patchfile: pq's own files are read exactly as it wrote them). What pq cannot
make one commit of plainly (several mails, MIME parts, a flowed mail) it refuses.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import itertools
import quopri
import re

from pq.errors import ConfigError

# The headers a body may start with (git's mailinfo: `header[]`), as `name:` in any case.
_NAMED = re.compile(r"(?i)(from|subject|date):[ \t]*(.*)")
# `git format-patch`'s mbox separator, quoted by a mailer (">From <id> Mon Sep 17 ...").
_SEPARATOR = re.compile(r">From [0-9a-f]{40} Mon Sep 17 00:00:00 2001")  # (git 2.39: 40)
_ASCII_SPACE = " \t\n\r"  # git's own isspace() (sane_ctype), which its cleanups use
_SPACES = re.compile(f"[{_ASCII_SPACE}]+")
# Where git's mailinfo ends a message (`patchbreak`): `diff -`, `Index: `, `---` followed by
# white space only, or by a space and a file name.
_BREAK = re.compile(rb"(?m)^(?:diff -|Index: |---(?: [^ \t\n\r]|[ \t\r]*\n))")
_GIT_DIFF = re.compile(rb"(?m)^diff --git ")
# A second mail in the file: `git format-patch --stdout` of several commits.
_NEXT_MAIL = re.compile(rb"\nFrom [0-9a-f]{40,64} Mon Sep 17 00:00:00 2001\n")
_CHARSET = re.compile(r"""(?i);\s*charset\s*=\s*"?([^";\s]+)""")


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
                found[name] = (named.group(2).strip(_ASCII_SPACE), i)
                current = name
            elif line.startswith("[PATCH]") and line[7:8] in ("", " ", "\t", "\r"):
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
        elif subject[0] in " \t:":
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
    if (charset := _charset(keys)) != "utf-8":  # raw 8-bit From:/Subject: bytes, as git
        for name in ("from", "subject"):  # converts them: in the body's charset
            if not keys[name].isascii():
                keys[name] = keys[name].encode("utf-8", "surrogateescape").decode(
                    charset, "replace")
    rest = after.encode("utf-8", "surrogateescape")
    return rest, first + body.count(b"\n", 0, len(body) - len(rest))


def decoded_body(keys: dict[str, str], body: bytes, filename: str) -> bytes:
    """The body of a mail whose headers are `keys`, as git's mailinfo reads it: its
    transfer encoding (quoted-printable, base64) undone. A file of several mails, or a
    MIME multipart mail (`git format-patch --attach`), is refused: one patch file is one
    commit, and pq reads the plain form."""
    if _NEXT_MAIL.search(body):
        raise ConfigError("holds more than one mail (`git format-patch --stdout` of several "
                          "commits): a patch file is one commit", path=filename,
                          hint="split it into one file per mail (`git mailsplit`), each "
                               "listed in series.yaml; or `git am` it and `pq export --commit`")
    if keys.get("content-type", "").strip().lower().startswith("multipart/"):
        raise ConfigError("is a MIME multipart mail (`git format-patch --attach` or "
                          "`--inline`), which pq does not take apart", path=filename,
                          hint="`git am` it, then `pq export --commit`; or write it again "
                               "with plain `git format-patch`")
    if re.search(r"(?i);\s*format\s*=\s*\"?flowed", keys.get("content-type", "")):
        raise ConfigError("is a `format=flowed` mail, whose lines a mail client rewrapped "
                          "and space-stuffed: pq does not undo that", path=filename,
                          hint="`git am` it, then `pq export --commit`; or save the mail "
                               "again without format=flowed")
    encoding = keys.get("content-transfer-encoding", "").strip().lower()
    if encoding == "quoted-printable":
        return quopri.decodestring(body)
    if encoding == "base64":
        try:
            return base64.b64decode(body)  # (what is not base64, line ends say, is left out)
        except binascii.Error as exc:
            raise ConfigError(f"its base64 body does not decode: {exc}", path=filename,
                              hint="save the mail again, or `git am` it and `pq export "
                                   "--commit`") from None
    return body


def split(body: bytes) -> tuple[bytes, bytes] | None:
    """(the message, the diff) of a body, as git's mailinfo and apply divide it: the
    message ends at the first patch-break line, the diff starts at the first `diff --git`
    from there (what lies between, notes or a diffstat, is neither); None: no diff."""
    cut = _BREAK.search(body)
    start = cut.start() if cut else len(body)
    diff = _GIT_DIFF.search(body, start)
    return None if diff is None else (body[:start], body[diff.start():])


def text(keys: dict[str, str], message: bytes) -> str:
    """A message's bytes as text: in the charset its mail declares (git converts it to
    UTF-8), else UTF-8 with any other bytes kept (surrogateescape)."""
    if (charset := _charset(keys)) == "utf-8":
        return message.decode("utf-8", "surrogateescape")
    return message.decode(charset, "replace")


def _charset(keys: dict[str, str]) -> str:
    """The charset a mail's Content-Type: names (Python's name for it); "utf-8" for UTF-8,
    ASCII, none, or one Python does not know."""
    found = _CHARSET.search(keys.get("content-type", ""))
    try:
        charset = codecs.lookup(found.group(1)).name if found else "utf-8"
    except LookupError:
        return "utf-8"
    return "utf-8" if charset == "ascii" else charset
