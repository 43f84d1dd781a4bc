"""Patch files: `patches/NNNN-slug.patch`, written from commits and read back exactly.

The format is what `git format-patch` writes, minus everything that churns: no commit
ids, no diffstat, no version signature, and no `index` lines on text diffs (binary diffs
keep theirs, which `git apply` needs). `git am` applies these files as they are. What the
plain mail form cannot carry exactly (see `render`) is written so that `parse` inverts it;
an empty commit is a patch with no diff. The Pq-Patch trailer round trips the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from pq.errors import ConfigError, OperationFailed
from pq.git.objects import Person, subject_of
from pq.model import diff as diffs
from pq.model import mailheader, mailinfo

MBOX_FROM = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
TRAILER = "Pq-Patch"
MAX_PATCH_BYTES = 64 * 1024 * 1024
TOO_LARGE = ("keep files that large out of the fork's patches (commit them upstream, or "
             "store them with Git LFS, whose pointer is small)")


@dataclass(frozen=True)
class PatchFile:
    author: Person
    message: str  # the commit message, without pq's trailer
    diff: bytes
    headers: tuple[tuple[str, str], ...] = field(default=())
    encoding: str | None = None  # the commit's `encoding` header, when it has one
    source: str | None = field(default=None, compare=False)  # the file it was read from
    diff_line: int = field(default=1, compare=False)  # the diff's first line in `source`

    @property
    def subject(self) -> str:
        return subject_of(self.message)

    @cached_property
    def files(self) -> tuple[diffs.FileDiff, ...]:
        """The diff, parsed once (pq.model.diff)."""
        return diffs.parse(self.diff, self.source, first_line=self.diff_line)


# How a patch file reads, for one written by hand (`pq export` rewrites one pq wrote).
MAIL_FORM = ("write it as `git format-patch` does: From:, Date: and Subject: headers, a blank "
             "line, the message, a `---` line, the diff (`pq export` writes a patch pq wrote "
             "again from its commit)")
# Text is the commit's bytes read as UTF-8 with surrogateescape: any bytes round trip.
_ENC = ("utf-8", "surrogateescape")
# Where the plain mail form cannot carry the message exactly, the byte count of the message
# after its subject line (from the subject's newline on) is written in this header.
MESSAGE_HEADER = "X-Pq-Message"
ENCODING_HEADER = "X-Pq-Encoding"
_OWN_HEADERS = ("from", "date", "subject", "mime-version", "content-type",
                "content-transfer-encoding", MESSAGE_HEADER.lower(), ENCODING_HEADER.lower())
# The line between message and diff; a diff may be empty (a commit that started empty).
_SEPARATOR = re.compile(rb"(?m)^---\n(?=diff --git |\Z)")
# `git format-patch`'s forms, in a file that starts as pq's: a `---` line, the diffstat
# (lines that start with a space, a blank line) and the diff; or the diff (--no-stat).
_FORMAT_PATCH = re.compile(rb"(?m)^(?:---[ \t]*\n(?:(?: [^\n]*)?\n)*?)?(?=diff --git )")
_IN_BODY = re.compile(rb"(?m)^---\n(?=diff --git )")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]+")  # a mail header's name


# -- writing -----------------------------------------------------------------


def render(patch: PatchFile) -> bytes:
    """The patch file; `parse` reads back exactly `patch` (author, message, diff, headers).

    Ordinary messages and authors are written as plain mail; what plain mail would change
    (trailing spaces, CR, a second subject line, bytes that are not UTF-8, a `---` line
    before `diff --git`, ...) is written in a form `parse` inverts exactly."""
    subject, nl, rest = patch.message.partition("\n")
    body = rest[1:] if rest.startswith("\n") else rest
    subject_value = mailheader.encode("[PATCH] " + subject)
    body_bytes = body.encode(*_ENC)
    if body and not body.endswith("\n"):
        body_bytes += b"\n"
    plain = (_plain_message(mailheader.decode(subject_value), body_bytes) == patch.message
             and not _IN_BODY.search(body_bytes))
    lines = [
        "From: " + mailheader.address(patch.author.name, patch.author.email),
        "Date: " + mailheader.date(patch.author.date),
        "Subject: " + subject_value,
    ]
    if not plain:
        body_bytes = (nl + rest).encode(*_ENC)
        lines.append(f"{MESSAGE_HEADER}: {len(body_bytes)}")
        if not body_bytes.endswith(b"\n"):
            body_bytes += b"\n"
    if patch.encoding is not None:
        lines.append(f"{ENCODING_HEADER}: {mailheader.encode(patch.encoding)}")
    for key, value in patch.headers:
        lines.append(f"{key}: {mailheader.encode(value)}")
    if not (mailheader.is_ascii(patch.message) and mailheader.is_ascii(patch.author.name)):
        lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=UTF-8",
                  "Content-Transfer-Encoding: 8bit"]
    head = ("\n".join(lines) + "\n\n").encode(*_ENC)
    return MBOX_FROM + head + body_bytes + b"---\n" + patch.diff


def _plain_message(subject_value: str, body: bytes) -> str:
    """The message a plain patch file (no X-Pq-Message header) stands for."""
    subject = re.sub(r"^\[PATCH[^\]]*\] ?", "", subject_value)
    text = body.decode(*_ENC)
    if not subject and not text:  # an empty message (`git commit --allow-empty-message`)
        return ""
    return subject + "\n" + (("\n" + text) if text else "")


def strip_index_lines(diff: bytes) -> bytes:
    """Drop `index` lines of text diffs: they name blobs and churn with unrelated edits."""
    out: list[bytes] = []
    for section in diffs.split_sections(diff):
        if b"\nGIT binary patch\n" in section or b"\nBinary files " in section:
            out.append(section)
            continue
        head_end = section.find(b"\n@@ ")
        head = section if head_end < 0 else section[:head_end + 1]
        tail = b"" if head_end < 0 else section[head_end + 1:]
        kept = [ln for ln in head.split(b"\n") if not ln.startswith(b"index ")]
        out.append(b"\n".join(kept) + tail)
    return b"".join(out)


# -- trailers ----------------------------------------------------------------

_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*: ")


def add_trailer(message: str, name: str) -> str:
    """`message` with pq's trailer as its last line; `strip_trailer` gives `message` back.

    The trailer joins a closing trailer paragraph, else it gets a paragraph of its own; a
    message without a final newline gets a trailer without one, so that both read back."""
    line = f"{TRAILER}: {name}"
    if not message.endswith("\n"):
        return message + "\n\n" + line
    paragraphs = message.rstrip("\n").split("\n\n")
    last = paragraphs[-1].split("\n")
    if not message.endswith("\n\n") and len(paragraphs) > 1 and all(
            _TRAILER_LINE.match(x) for x in last):
        return message + line + "\n"
    return message + "\n" + line + "\n"


def strip_trailer(message: str) -> tuple[str, str | None]:
    """(message without pq's trailer, the patch name it named or None)."""
    body = message[:-1] if message.endswith("\n") else message
    start = body.rfind("\n") + 1
    if body.startswith(TRAILER + ": ", start):
        name = body[start + len(TRAILER) + 2:].strip()
        before = body[:start]
        if not message.endswith("\n"):  # add_trailer of a message without a final newline
            return (before[:-2] if before.endswith("\n\n") else before), name
        return (before[:-1] if before.endswith("\n\n") else before), name
    # The trailer is not the last line (more trailers were added after it, or `git
    # cherry-pick -x`'s line, which git reads as one): take it out.
    lines = message.split("\n")
    found = None
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(TRAILER + ": "):
            found = lines[i][len(TRAILER) + 2:].strip()
            del lines[i]
            break
        if lines[i] and not (_TRAILER_LINE.match(lines[i])
                             or lines[i].startswith("(cherry picked from commit ")):
            break
    if found is None:
        return message, None
    text = "\n".join(lines)
    if text.endswith("\n\n"):
        text = text[:-1]
    return text, found


# -- reading -----------------------------------------------------------------


def parse(data: bytes, filename: str) -> PatchFile:
    """Read a patch file pq (or `git format-patch`) wrote; ConfigError naming the line if not.

    A PatchFile is immutable, so the same bytes read again (the worktree's queue, HEAD's,
    the last export's: mostly the same files) give the same object, parsed once."""
    return _parse_cached(data, filename)


@lru_cache(maxsize=16384)
def _parse_cached(data: bytes, filename: str) -> PatchFile:
    if len(data) > MAX_PATCH_BYTES:
        raise ConfigError(f"patch is {len(data)} bytes, more than the "
                          f"{MAX_PATCH_BYTES >> 20} MiB pq reads", path=filename, hint=TOO_LARGE)
    if data.startswith(b"\xef\xbb\xbf"):
        raise ConfigError("starts with a byte-order mark (an editor's), which is no mail "
                          "header", path=filename, line=1, hint="save it without one (UTF-8 "
                                                                "without BOM)")
    if b"\r\n" in data[:data.find(b"\n", data.find(b"\n") + 1) + 1]:  # its first 2 lines:
        # saved with CRLF line ends (an editor, a mail client; under an LF mbox line): every
        # CR is the conversion's (pq writes LF headers); `git am` strips them all, so does pq.
        data = data.replace(b"\r\n", b"\n")
    text = data
    if text.startswith(b"From "):
        text = text.split(b"\n", 1)[1] if b"\n" in text else b""
    head_end = text.find(b"\n\n")
    if head_end < 0:
        raise ConfigError("no mail header (From:, Date:, Subject:) followed by a blank line",
                          path=filename, line=1, hint=MAIL_FORM)
    header_block = text[:head_end].decode("utf-8", "surrogateescape")
    rest = text[head_end + 2:]
    first = 2 if text is not data else 1  # the header block's first line in the file
    headers, lines = _parse_headers(header_block, filename, first)
    keys = {k.lower(): v for k, v in headers}
    for required in ("from", "date", "subject"):
        if required not in keys:
            raise ConfigError(f"missing `{required.title()}:` header", path=filename, line=1,
                              hint=MAIL_FORM)
    body_line = text[: head_end].count(b"\n") + 3 + (data.startswith(b"From ") and 1 or 0)
    # pq's own file (its zero-id `From ` line, its exact message's header) reads as written;
    # any other as `git am` reads it (pq.model.mailinfo; its diff lines then approximate).
    if not (ours := data.startswith(MBOX_FROM) or MESSAGE_HEADER.lower() in keys):
        rest = mailinfo.decoded_body(keys, rest, filename)
        rest, body_line = mailinfo.take_in_body(keys, lines, rest, body_line)
    author = _author(keys, lines, filename)
    subject_value = mailheader.decode(keys["subject"])
    subject = re.sub(r"^\[PATCH[^\]]*\] ?", "", subject_value)
    if MESSAGE_HEADER.lower() in keys:
        size = keys[MESSAGE_HEADER.lower()]
        # int() refuses other digits (²), and more than 4300 of them: no file is that long
        counted = size.isascii() and size.isdigit() and len(size) <= 18
        region = rest[: int(size)] if counted else b""
        sep = b"---\n" if region.endswith(b"\n") else b"\n---\n"
        if not counted or len(region) != int(size) or \
                not rest.startswith(sep, len(region)):
            found = _SEPARATOR.search(rest)
            shown = size if len(size) <= 20 else f"{size[:12]}... ({len(size)} digits)"
            raise ConfigError(f"the message is not {shown} bytes followed by a `---` line, as "
                              f"its {MESSAGE_HEADER}: header says", path=filename,
                              line=body_line,
                              hint=f"a message edited by hand: `{MESSAGE_HEADER}: "
                                   f"{found.start()}` counts its bytes up to the first `---` "
                                   "line now" if found else "regenerate it with `pq export`")
        message = subject + region.decode(*_ENC)
        diff = rest[len(region) + len(sep):]
    else:
        if (parts := _split(rest) if ours else mailinfo.split(rest)) is None:
            raise ConfigError("no diff found (expected a `---` line followed by `diff --git`)",
                              path=filename, line=body_line, hint=MAIL_FORM)
        body, diff = parts
        message = (_plain_message(subject_value, body) if ours
                   else mailinfo.message(subject_value, mailinfo.text(keys, body)))
    diffs.check_paths(diff, filename, diff_line := data.count(b"\n", 0, len(data) - len(diff)) + 1)
    enc = keys.get(ENCODING_HEADER.lower())
    encoding = None if enc is None else mailheader.decode(enc)
    if encoding is not None and "\n" in encoding:
        # it is written as the commit's `encoding` header line: a line break would add
        # header lines of its own (a second author, say)
        raise ConfigError(f"bad {ENCODING_HEADER}: header {enc!r}: a line break in it",
                          path=filename, line=lines[ENCODING_HEADER.lower()],
                          hint=f"write the encoding's name alone (`{ENCODING_HEADER}: "
                               "ISO-8859-1`), or regenerate it with `pq export`")
    extra = tuple((k, mailheader.decode(v)) for k, v in headers
                  if k.lower() not in _OWN_HEADERS)
    return PatchFile(author, message, diff, extra, encoding, filename, diff_line
                     if data.endswith(diff) else data.count(b"\n") - diff.count(b"\n") + 1)


def _split(rest: bytes) -> tuple[bytes, bytes] | None:  # (message, diff) of pq's plain form
    if found := _SEPARATOR.search(rest):
        return rest[: found.start()], rest[found.end():]
    if (found := _FORMAT_PATCH.search(rest)) is None:
        return None
    body = rest[: found.start()].rstrip(b"\n")
    return body + (b"\n" if body else b""), rest[found.end():]


def _author(keys: dict[str, str], lines: dict[str, int], filename: str) -> Person:
    """The author the From: and Date: values in `keys` name (ConfigError at `lines`')."""
    if (address := mailheader.read_address(keys["from"])) is None:
        raise ConfigError(f"bad From: header {keys['from']!r}", path=filename, line=lines["from"],
                          hint="write it as `Name <e-mail>`, or regenerate it with `pq export`")
    name, mail = address
    if "\n" in name + mail:  # it would end the commit's author line (git fsck: missingEmail)
        raise ConfigError(f"bad From: header {keys['from']!r}: its name or e-mail holds a "
                          "line break, which a commit's author line cannot", path=filename,
                          line=lines["from"], hint="take it out of the From: header")
    if (date := mailheader.read_date(keys["date"])) is None:
        raise ConfigError(f"bad Date: header {keys['date']!r}", path=filename, line=lines["date"],
                          hint="use an RFC 2822 date from 1970 on, such as 'Tue, 01 Dec 2026 "
                               "10:00:00 +0100'")
    return Person(name, mail, date)


def apply_failure(pf: PatchFile, data: bytes, index: int, onto: str, error: str,
                  on_base: bool = True) -> OperationFailed:
    """Why `git apply` refused the diff of patch file `pf` (bytes `data`, patch `index` of
    the series, counted from 0) onto `onto`: git's last line where the patch does not fit
    the files (the fix: a three-way rebase), else its first `error:` line (git may go on
    printing the rest of the patch; the fix: the patch file's), its line numbers counted in
    the patch file (git counts from the diff)."""
    lines = [ln for ln in error.splitlines() if ln.strip()] or ["git apply failed"]
    corrupt = not any(why in error for why in (
        "patch does not apply", "already exists", "does not exist", "does not match index",
        "wrong type"))
    reason = next((ln for ln in lines if ln.startswith(("error: ", "fatal: "))),
                  lines[-1]) if corrupt else lines[-1]
    header = data.count(b"\n") - pf.diff.count(b"\n")  # the lines before the diff
    reason = re.sub(r"((?:at|on) line |\(line )(\d+)",  # every form git counts lines in
                    lambda m: f"{m.group(1)}{int(m.group(2)) + header}", reason)
    return OperationFailed(
        f"patch {index + 1} does not apply onto {onto[:12]}: {reason}", path=pf.source,
        hint="fix the patch file there (`git apply --check` names the same line), or `pq "
             "export --force` writes its commit's patch again, dropping the edit" if corrupt
        else "the patch does not fit the files before it (a hand edit of its context, or "
             "series.yaml reordered): edit it so that it does, or put series.yaml's order "
             "back and reorder the commits (`git rebase -i`), then `pq export --commit`"
        if on_base else f"`pq rebase {onto[:12]}` replays the series with three-way merges")


def unreadable(message: str, author: Person, data: bytes) -> tuple[str, str] | None:
    """What makes `data`, the patch file of a commit with this message and author, one
    that `pq apply` cannot take back, and the fix; None when nothing does."""
    if where := _nul_in(message, author):
        return (f"a NUL byte in its {where}, which git refuses in a commit", "take it out "
                "(`reword` in `git rebase -i`, or `git commit --amend --author` for the "
                "author), then run it again")
    if len(data) > MAX_PATCH_BYTES:
        return (f"a patch of {len(data)} bytes, more than the {MAX_PATCH_BYTES >> 20} MiB pq "
                "reads", TOO_LARGE)
    if mailheader.read_date(author.date) is None:  # (git's form: what the header reads as)
        return (f"an author date git fsck refuses ({author.date!r})", "give the commit "
                "another date (`git commit --amend --no-edit --date=...`; for an older "
                "commit, an `exec` line of `git rebase -i`), then run it again")
    return None


def _nul_in(message: str, author: Person) -> str | None:
    """Where a commit holds a NUL byte, which git refuses in one: "message", "author"."""
    return ("message" if "\0" in message else
            "author" if "\0" in author.name + author.email else None)


def parse_committable(data: bytes, filename: str) -> PatchFile:
    """`parse`, refusing a patch file whose commit git refuses to make (`git am` does): a
    NUL byte in its message or its author's name or e-mail."""
    pf = parse(data, filename)
    if _nul_in(pf.message, pf.author):
        raise ConfigError("a NUL byte in the author or the message, which git refuses in a "
                          "commit", path=filename, line=data.count(b"\n", 0, data.find(b"\0")) + 1,
                          hint="take it out of the patch file")
    return pf


def _parse_headers(block: str, filename: str, first: int
                   ) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The headers of `block` (starting at line `first` of the file), folded lines joined;
    and the line each header (by its lower-case name; the last of a name) starts at."""
    parts: list[tuple[str, list[str]]] = []  # folded lines joined once, not one by one
    starts: dict[str, int] = {}
    for lineno, line in enumerate(block.split("\n"), start=first):
        if line[:1] in (" ", "\t") and parts:
            parts[-1][1].append(line)
            continue
        key, sep, value = line.partition(":")
        if not sep or not _HEADER_NAME.fullmatch(key):
            raise ConfigError(f"bad header line {line[:60]!r}", path=filename, line=lineno,
                              hint="a patch starts with From:, Date:, Subject: headers")
        parts.append((key, [value]))
        starts[key.lower()] = lineno
    return [(key, "".join(values).strip()) for key, values in parts], starts


def same_parts(a: bytes, b: bytes, path: str) -> str | None:
    """What two patch files share: "all" (they read the same, header lines and all: one
    differs from the other only in its bytes' form, CRLF line ends or a folded header),
    "commit" (the same author, message, encoding and diff: only header lines differ), or
    None (they stand for other commits, or one does not parse)."""
    try:
        x, y = parse(a, path), parse(b, path)
    except ConfigError:
        return None
    if (x.author, x.message, x.diff, x.encoding) != (y.author, y.message, y.diff, y.encoding):
        return None
    return "all" if x.headers == y.headers else "commit"


def headers_apart(a: bytes, b: bytes, path: str) -> list[str]:
    """The names of the header lines two patch files (that parse) differ in; `path` as
    `same_parts` was given it, which parsed them already."""
    x, y = dict(parse(a, path).headers), dict(parse(b, path).headers)
    return sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))


def reads_the_same(a: bytes, b: bytes, path: str) -> bool:
    """Whether rewriting one patch file as the other loses nothing of it."""
    return a == b or same_parts(a, b, path) == "all"
