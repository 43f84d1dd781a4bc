"""Git diffs: the one reader of `git diff` / `git format-patch` output in pq, strict and
byte-exact: it reads as `git apply` does (hunks delimited by their `@@` line counts,
C-quoted and spaced names, modes, binary sections) and refuses paths that leave the
repository. `parse` gives each file's paths, status, modes and hunks (every line with its
old and new numbers; `paths`: the file headers alone)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import accumulate

from pq.errors import ConfigError
from pq.model.diffmodel import STATUSES as STATUSES  # (what it reads into: `diffs.FileDiff`)
from pq.model.diffmodel import FileDiff as FileDiff
from pq.model.diffmodel import Hunk as Hunk
from pq.model.diffmodel import Line as Line

_SECTION_START = re.compile(rb"\ndiff --git ")  # not `(?m)^`: it tries every byte of a diff
_NAME_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[^ "]\S*')  # a C-quoted name, or a word
_BINARY_DATA = re.compile(rb"\n(?:literal|delta) [0-9]+\n")  # a binary patch's data next
_HEADER_END = re.compile(rb"\n(?:@@ |GIT binary patch|Binary files ).*")  # see _header
_HUNK_LINE = re.compile(rb"(?m)^@@ [^\n]*$")
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BLANK = re.compile(rb"[ \t]")
_HUGE = 10 ** 18  # past any file: a hunk that counts more lines is short of them


def _number(digits: bytes | None) -> int:
    """A hunk header's number (1 where a count is left out). One of thousands of digits
    is no count a file holds, and int() refuses it (a ValueError past 4300 digits)."""
    if digits is None:
        return 1
    return int(digits) if len(digits) <= 18 else _HUGE
_PATH_LINE = re.compile(
    rb"^(?:--- (?:a/)?|\+\+\+ (?:b/)?|rename from |rename to |copy from |copy to )(.*)$")
# A mode line `git apply` refuses ("invalid mode"): its value must start with octal digits.
_BAD_MODE = re.compile(rb"(?m)^(?:new file|deleted file|old|new) mode (?![ \t]*[-+]?[0-7]+(?:\s|$))"
                       rb".*$")
_ESCAPES = {ord(k): v for k, v in zip('nt\\"abfrv', (10, 9, 92, 34, 7, 8, 12, 13, 11))}
# -- the strict reader -------------------------------------------------------------------


def split_sections(diff: bytes) -> list[bytes]:
    """The per-file sections of a git diff, each starting at its `diff --git` line (and
    whatever precedes the first one, as a section of its own)."""
    starts = [0] if diff.startswith(b"diff --git ") else []
    starts += [m.start() + 1 for m in _SECTION_START.finditer(diff)]
    if not starts:
        return [diff] if diff else []
    sections = [diff[: starts[0]]] if starts[0] > 0 else []
    for i, s in enumerate(starts):
        sections.append(diff[s: starts[i + 1] if i + 1 < len(starts) else len(diff)])
    return sections


def unquote_path(raw: bytes) -> str:
    """A path as git prints it, C-quoted when core.quotePath asks for it."""
    if len(raw) >= 2 and raw.startswith(b'"') and raw.endswith(b'"'):
        body, out, i = raw[1:-1], bytearray(), 0
        while i < len(body):
            c = body[i]
            if c == 0x5C and i + 1 < len(body):
                n = body[i + 1]
                if 0x30 <= n <= 0x37:
                    out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                    i += 4
                    continue
                out.append(_ESCAPES.get(n, n))
                i += 2
                continue
            out.append(c)
            i += 1
        raw = bytes(out)
    return raw.decode("utf-8", "surrogateescape")


def _git_line_candidates(rest: bytes) -> list[str]:
    """Every path pq or git apply could read a `diff --git` line as: with a quote, each word
    and it less its first folder; else the names pq reads (`_git_line_names`), and at any
    space or tab the halves' equal rest after their first folder, as git apply reads it (a
    word alone is none; `a/d/.. b/y b/d/.. b/y` names `d/.. b/y`, and no `d/..`)."""
    if b'"' in rest:
        words = [unquote_path(t) for t in _NAME_TOKEN.findall(rest)]
        return words + [w.split("/", 1)[1] for w in words if "/" in w]
    paths = [p for p in _git_line_names(rest) if p is not None]
    for m in _BLANK.finditer(rest):
        a, b = rest[:m.start()], rest[m.end():]
        if b"/" in a and b"/" in b and a.split(b"/", 1)[1] == b.split(b"/", 1)[1]:
            paths.append(unquote_path(a.split(b"/", 1)[1]))  # `docs/x .git`: a file
    return paths


def _git_line_names(rest: bytes) -> tuple[str | None, str | None]:
    """(old, new) of a `diff --git` line, as git reads it: quoted names, or the split at
    ` b/` whose two halves name the same file, or the only such split."""
    if rest.startswith(b'"') or rest.endswith(b'"'):
        tokens = _NAME_TOKEN.findall(rest)
        if len(tokens) == 2:
            return _strip(unquote_path(tokens[0])), _strip(unquote_path(tokens[1]))
        return None, None
    splits = [m.start() for m in re.finditer(rb" (?=b/)", rest)]
    for s in splits:
        a, b = unquote_path(rest[:s]), unquote_path(rest[s + 1:])
        if _strip(a) == _strip(b):
            return _strip(a), _strip(b)
    if len(splits) == 1:
        return _strip(unquote_path(rest[:splits[0]])), _strip(unquote_path(rest[splits[0] + 1:]))
    return None, None


def _strip(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def without_line_numbers(diff: bytes) -> bytes:
    """`diff` with every hunk header cut to `@@`: the same change elsewhere, the same bytes."""
    return _HUNK_LINE.sub(b"@@", diff)


def check_paths(diff: bytes, filename: str, first_line: int) -> None:
    """Refuse diffs whose paths leave the repository or reach into .git (ConfigError naming
    `filename` and the line; `first_line` is the diff's first line in that file). Hunk
    bodies are skipped by their line counts, as `git apply` reads them; every other line
    that names a path is checked, also a traditional `---`/`+++` header after a hunk."""
    lineno = first_line
    old = new = 0  # lines still to come in the current hunk
    for piece, skipped in _without_binary_data(diff):
        for raw in piece.split(b"\n"):
            if old > 0 or new > 0:
                kind = raw[:1]
                if kind in (b" ", b""):
                    old, new = old - 1, new - 1
                elif kind == b"-":
                    old -= 1
                elif kind == b"+":
                    new -= 1
                elif kind != b"\\":
                    old = new = 0  # not a hunk line: the hunk was short; read it as a header
                if old > 0 or new > 0 or kind in (b" ", b"", b"-", b"+", b"\\"):
                    lineno += 1
                    continue
            if hunk := _HUNK.match(raw):
                old = _number(hunk.group(2))
                new = _number(hunk.group(4))
            elif raw.startswith(b"diff --git "):
                for p in _git_line_candidates(raw[len(b"diff --git "):]):
                    _check_path(p, filename, lineno)
            else:
                m = _PATH_LINE.match(raw)
                if m and not raw.startswith((b"--- /dev/null", b"+++ /dev/null")):
                    _check_path(unquote_path(m.group(1).rstrip(b"\t")), filename, lineno)
            lineno += 1
        lineno += skipped


def _without_binary_data(diff: bytes) -> Iterator[tuple[bytes, int]]:
    """`diff` in pieces of whole lines (each without its last newline), each with how many
    lines after it are a binary patch's data: the base85 lines after `literal N` or `delta
    N`, up to a blank line. They hold no space, so no header line, and come between hunks:
    they name no path, and a reader need not split their thousands of lines."""
    at = start = 0
    binary = b"GIT binary patch\n" in diff
    while binary and (m := _BINARY_DATA.search(diff, start)):
        end = diff.find(b"\n\n", m.end() - 1) + 1  # the blank line's start
        if end > at and diff.find(b" ", m.end(), end) < 0:
            yield diff[at:m.end() - 1], diff.count(b"\n", m.end(), end)
            at = end
        start = max(m.end(), at)
    yield diff[at:], 0


def _check_path(path: str, filename: str, lineno: int) -> None:
    path = _strip(path)
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or (parts and parts[0].lower() == ".git"):
        raise ConfigError(f"patch touches {path!r}, outside the repository's tracked files",
                          path=filename, line=lineno,
                          hint="a patch may only change files inside the repository")


# -- one parsed form -----------------------------------------------------------------------


def parse(diff: bytes, source: str | None = None,
          read_hunks: Callable[[str, bytes], bool] | None = None,
          first_line: int = 1) -> tuple[FileDiff, ...]:
    """Every `diff --git` file section of `diff` (anything else is ignored); ConfigError
    naming `source` (the patch file; the diff starts at its line `first_line`) when a
    hunk is not what its `@@` header says. `read_hunks(path, section bytes)`, when given,
    says which sections' hunks a caller needs: the others come with no hunks, unread."""
    sections = split_sections(diff)
    at = accumulate((s.count(b"\n") for s in sections), initial=first_line)
    return tuple(_section(s, source, read_hunks, line) for s, line in zip(sections, at)
                 if s.startswith(b"diff --git "))


def paths(diff: bytes) -> list[tuple[str | None, str | None]]:
    """(old path, new path) of every `diff --git` file section, read from its header lines
    alone: for a caller that needs which files a patch touches, not its hunks."""
    return [_header(_head(s))[:2] for s in split_sections(diff)
            if s.startswith(b"diff --git ")]


def _section(section: bytes, source: str | None,
             read_hunks: Callable[[str, bytes], bool] | None = None, line: int = 1) -> FileDiff:
    lines = _head(section)
    old, new, status, binary, old_mode, new_mode, i = _header(lines)
    skip = binary or i == len(lines) or (
        read_hunks is not None and not read_hunks(new or old or "", section))
    lines = lines if skip else section.split(b"\n")
    if (bad := _BAD_MODE.search(head := b"\n".join(lines[:i]))) is not None:
        raise ConfigError(f"invalid mode line `{bad.group().decode('utf-8', 'replace')}` "
                          f"for {new or old}", path=source,
                          line=line + head.count(b"\n", 0, bad.start()) if source else None,
                          hint="git reads octal modes only (100644, 100755, 120000): fix "
                          "that line, or `pq export --force` writes the commit's patch again")
    hunks = () if skip else section_hunks(lines, i, new or old, source, line + i)[0]
    return FileDiff(old, new, status, binary, old_mode, new_mode, hunks)


def _head(section: bytes) -> list[bytes]:
    """A file section's lines up to the one that ends its header (its first `@@` line, or
    binary data's start), or all: what `_header` reads, not a big file's megabytes."""
    return section[:found.end() if (found := _HEADER_END.search(section)) else None].split(b"\n")


def _header(lines: list[bytes]) -> tuple[str | None, str | None, str, bool, str | None,
                                         str | None, int]:
    """(old, new, status, binary, old mode, new mode, index of the first `@@` line) of a
    file section's lines."""
    old, new = _git_line_names(lines[0][len(b"diff --git "):])
    status, binary = "modified", False
    old_mode = new_mode = None
    i = 1
    while i < len(lines) and not lines[i].startswith(b"@@ "):
        ln = lines[i]
        key, _, value = ln.partition(b" ")
        if ln.startswith((b"--- ", b"+++ ")):
            name = value.rstrip(b"\t")
            if name == b"/dev/null":
                status = "added" if key == b"---" else "deleted"
            elif key == b"---":
                old = _strip(unquote_path(name))
            else:
                new = _strip(unquote_path(name))
        elif ln.startswith((b"rename from ", b"copy from ")):
            old = unquote_path(ln.split(b" ", 2)[2])
            status = "renamed" if key == b"rename" else "copied"
        elif ln.startswith((b"rename to ", b"copy to ")):
            new = unquote_path(ln.split(b" ", 2)[2])
        elif ln.startswith(b"new file mode "):
            status, new_mode = "added", ln[14:].decode()
        elif ln.startswith(b"deleted file mode "):
            status, old_mode = "deleted", ln[18:].decode()
        elif ln.startswith(b"old mode "):
            old_mode = ln[9:].decode()
        elif ln.startswith(b"new mode "):
            new_mode = ln[9:].decode()
        elif ln.startswith((b"GIT binary patch", b"Binary files ")):
            binary = True  # the rest is its data (base85 lines), no header line
            i += 1
            break
        i += 1
    if status == "added":
        old = None
    elif status == "deleted":
        new = None
    return old, new, status, binary, old_mode, new_mode, i


_KINDS = {b" ": " ", b"": " ", b"-": "-", b"+": "+"}  # a hunk line's kind (empty: context)


def _one_kind(lines: list[bytes], i: int, end: int, old: int, new: int) -> list[bytes]:
    r"""The `old` removed or `new` added lines from `lines[i]` (one of the counts 0), when
    they are that and nothing else (no `\ No newline` among them); else []."""
    count, mark = (new, b"+") if new else (old, b"-")
    block = lines[i:i + count]
    if len(block) != count or i + count > end or any(r[:1] != mark for r in block):
        return []
    return block


def section_hunks(lines: list[bytes], i: int, path: str | None, source: str | None,
                  line: int = 1) -> tuple[tuple[Hunk, ...], int]:
    """A file section's hunks, from its first `@@` line (`lines[i]`) on, counted as `git
    apply` does, and how many lines they span (what follows is not theirs: a trailing `-- `
    signature, say)."""
    # What follows the last newline is no line (an empty one before it is context); one
    # cut off without its newline is no line either (git apply: a corrupt patch).
    end, first, hunks = len(lines) - 1, i, []

    def corrupt(what: str, fix: str, at: int) -> ConfigError:
        return ConfigError(f"the diff of {path} {what}", path=source, line=at if source else
                           None, hint=f"{fix}, or `pq export --force` writes the commit's "
                                      "patch again, dropping the edit")

    while i < end and lines[i].startswith(b"@@ -"):
        if (m := _HUNK.match(lines[i])) is None:
            said = lines[i][:60].decode("utf-8", "replace")
            raise corrupt(f"has a malformed `@@` line: {said!r}", "write it as `@@ -START,COUNT "
                          "+START,COUNT @@`", line + i - first)
        starts = old, new = _number(m.group(1)), _number(m.group(3))
        counts = left_old, left_new = _number(m.group(2)), _number(m.group(4))
        out: list[Line] = []
        i += 1
        if not (left_old and left_new) and (block := _one_kind(lines, i, end, *counts)):
            # A hunk of added (or removed) lines only, as a new file's: read in one go.
            kind, count = ("+", left_new) if left_new else ("-", left_old)
            at = new if left_new else old
            out = [Line(kind, r[1:].decode("utf-8", "replace"), r[1:],
                        None if left_new else at + k, at + k if left_new else None)
                   for k, r in enumerate(block)]
            i, old, new = i + count, old + left_old, new + left_new
            left_old = left_new = 0
        while i < end:
            if (raw := lines[i])[:1] == b"\\":  # `\ No newline at end of file`
                i += 1
                continue
            if (left_old <= 0 and left_new <= 0) or (mark := _KINDS.get(raw[:1])) is None:
                break  # all counted, or the next `@@` line: this hunk is shorter than it says
            i += 1
            text = raw[1:]
            out.append(Line(mark, text.decode("utf-8", "replace"), text,
                            None if mark == "+" else old, None if mark == "-" else new))
            if mark != "+":
                old, left_old = old + 1, left_old - 1
            if mark != "-":
                new, left_new = new + 1, left_new - 1
            if left_old < 0 or left_new < 0:
                break
        if (left_old or left_new) and i == end and lines[-1]:
            raise corrupt("ends in a line cut off without its newline", "end the file with a "
                          "newline", line + i - first)
        if left_old or left_new:
            raise corrupt(f"is not what its `@@` lines say: a hunk is "
                          f"{'longer' if min(left_old, left_new) < 0 else 'shorter'} than they "
                          "count", "fix the hunk's line counts", line)
        hunks.append(Hunk(starts[0], counts[0], starts[1], counts[1], tuple(out)))
    return tuple(hunks), i - first
