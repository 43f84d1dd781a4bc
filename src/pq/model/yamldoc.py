"""Safe, located YAML: parse a document into plain data plus the position of every value.

pq's files are small and written by people, so errors must point at a line and column.
Anchors and aliases, over-deep nesting and oversized files are refused before any value
is built, which keeps alias bombs and pathological inputs from ever costing time.
PyYAML is imported by the functions that use it: its ~20 ms are not paid by the commands
that read no YAML, nor where a parse of the same bytes was kept (pq.model.yamlcache).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from pq.errors import ConfigError
from pq.git.objects import HEX_ID
from pq.model import yamlcache

if TYPE_CHECKING:
    import pathlib

    import yaml

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 200_000

Path = tuple[str | int, ...]


@dataclass
class Located:
    """Plain data (dicts, lists, str, int, float, bool, None) and where each value starts."""

    data: Any
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    filename: str = ""
    text: str = ""  # the decoded source, for rewrites that keep its comments (yamledit)
    kept: bool = False  # read back from pq.model.yamlcache, not parsed
    odd: bool = False  # the text holds a line break of YAML's that editors do not count

    def where(self, path: Path) -> tuple[int | None, int | None]:
        while path and path not in self.marks:
            path = path[:-1]
        mark = self.marks.get(path)
        return mark if mark else (None, None)

    def error(self, path: Path, message: str, hint: str | None = None,
              key: bool = False) -> ConfigError:
        """An error at the value `path` names (`key`: at its key, `key_where`)."""
        line, col = self.key_where(path) if key else self.where(path)
        return ConfigError(message, path=self.filename, line=line, column=col, hint=hint)

    def key_where(self, path: Path) -> tuple[int | None, int | None]:
        """Where the key `path` ends in is, not its value (a block value starts a line
        later): found in the text, before its value, on its line or above."""
        line, col = self.where(path)
        lines = self.text.splitlines()
        if line is not None and col is not None and path in self.marks and lines:
            key = re.compile(rf"(?:^|[\s{{,-])([\"']?{re.escape(str(path[-1]))}[\"']?)\s*:")
            for n in range(min(line, len(lines)), max(0, line - 50), -1):
                found = list(key.finditer(lines[n - 1][:col - 1] if n == line else lines[n - 1]))
                if found:
                    return n, found[-1].start(1) + 1
        return line, col


def load(text: bytes, filename: str, kept_in: pathlib.Path | None = None) -> Located:
    """Parse one YAML document safely; raise ConfigError with file:line:column on any problem.
    `kept_in` (a repository's .git/pq): a parse kept there for these very bytes
    (pq.model.yamlcache) is read back instead (`kept`); keeping one is the caller's."""
    if len(text) > MAX_BYTES:
        raise ConfigError(f"file is {len(text)} bytes, more than pq reads ({MAX_BYTES})",
                          path=filename, hint="is this really a series file?")
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = text[: exc.start].count(b"\n") + 1
        start = text.rfind(b"\n", 0, exc.start) + 1
        column = len(text[start: exc.start].decode("utf-8", "replace")) + 1
        file = filename.split(" (in ", 1)[0]  # "series.yaml (in <commit>)": the file's name
        raise ConfigError(f"not valid UTF-8 (byte 0x{text[exc.start]:02x})", path=filename,
                          line=line, column=column,
                          hint="save the file as UTF-8 (for example `iconv -f latin1 -t "
                               f"utf-8 {file}`), or retype that character") from None
    if kept_in is not None:
        kept = yamlcache.get(kept_in, text)
        if kept is not None:
            return Located(kept[0], kept[1], filename, decoded, kept=True)
    import yaml
    odd = bool(_ODD.search(decoded))
    try:
        node = _compose(decoded)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        where = _at(decoded, odd, mark) if mark else (None, None)
        if odd and (found := _ODD.search(decoded)):  # where it broke a line no editor shows
            line, column = _line_column(decoded, found.start())
            problem += (f" (the file holds U+{ord(found.group()):04X} at line {line}, column "
                        f"{column}: a line break to YAML, which no editor shows)")
        raise ConfigError(f"invalid YAML: {problem}", path=filename, line=where[0],
                          column=where[1],
                          hint="remove the line break characters YAML reads (U+0085, U+2028, "
                               "U+2029)" if odd else
                               "fix the syntax at that position") from None
    except _TooMany as exc:
        line, column = _at(decoded, odd, exc.args[0])
        raise ConfigError(f"more than {MAX_NODES} YAML nodes, more than pq reads",
                          path=filename, line=line, column=column,
                          hint="is this really a series file? a list this long is none") \
            from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, ...)
        before = decoded[: exc.position]
        raise ConfigError(f"invalid YAML: character U+{exc.character:04X} is not allowed"
                          if isinstance(exc.character, int) else
                          f"invalid YAML: {str(exc).splitlines()[0]}", path=filename,
                          line=before.count("\n") + 1,
                          column=exc.position - (before.rfind("\n") + 1) + 1,
                          hint="remove that character") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {str(exc).splitlines()[0]}", path=filename) from None
    except RecursionError:
        raise ConfigError("YAML nested too deeply", path=filename) from None
    doc = Located(None, {}, filename, decoded, odd=odd)
    if node is not None:
        doc.data = _build(node, (), doc, 0, [0])
    return doc


_BREAK = re.compile(r"\r\n|\r|\n")  # (a text with YAML's other breaks is not swapped in)
_ODD = re.compile("[\x85\u2028\u2029]")  # line breaks to YAML 1.1, not to editors or git


def _place(doc: Located, mark: Any) -> dict[str, int]:
    line, column = _at(doc.text, doc.odd, mark)
    return {"line": line, "column": column}


def _at(text: str, odd: bool, mark: Any) -> tuple[int, int]:
    """(line, column) of a PyYAML mark, as editors and git count lines: YAML also breaks a
    line at U+0085, U+2028 and U+2029 (`odd`: the text holds one)."""
    return _line_column(text, mark.index) if odd else (mark.line + 1, mark.column + 1)


def _line_column(text: str, index: int) -> tuple[int, int]:
    starts = _line_starts(text)
    line = bisect_right(starts, index)
    return line, index - starts[line - 1] + 1


@lru_cache(maxsize=1)
def _line_starts(text: str) -> list[int]:
    """Where each line of `text` starts: found once for all of a document's marks (one
    search per mark would make reading a long series quadratic)."""
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def with_id(doc: Located, path: Path, new: str) -> str | None:
    """`doc`'s text with the object id at `path` (a string value) written as `new`, an id of
    the same length, character for character in place; None where that is not certain to
    read back as `new` (the caller then edits through a parser: pq.model.yamledit).

    A rebase writes series.yaml with only `upstream.base` changed: this keeps that write
    from importing PyYAML (~20 ms). The swap needs no parser because the old value is
    known (the parse put it at `path`) and is written as exactly its characters, plain or
    in quotes, after its key on a line of its own: the new ones take their place, in that
    style, as the editor would write them. A plain id made only of digits would read as
    an int, and `0b` and binary digits as a binary int (YAML 1.1): those keep to the
    parser, which quotes them."""
    old, mark = _value_at(doc.data, path), doc.marks.get(path)
    text = doc.text
    if not (isinstance(old, str) and HEX_ID.fullmatch(old) and HEX_ID.fullmatch(new)
            and len(old) == len(new) and mark is not None) or any(
            c in text for c in "\x85\u2028\u2029"):
        return None
    line, column = mark
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    if line > len(starts):
        return None
    at = starts[line - 1] + column - 1
    # Only a block mapping's `key: value` line, as the editor changes one in place (a flow
    # mapping, a tag, a non-ASCII line where columns could count otherwise: the editor's).
    if not re.fullmatch(rf" *{re.escape(str(path[-1]))}: +", text[starts[line - 1]:at]):
        return None
    for quote in ("'", '"', ""):
        if text.startswith(quote + old + quote, at):
            if not quote and (new.isdigit() or re.fullmatch(r"0b[01]+", new)):
                return None
            at += len(quote)
            return text[:at] + new + text[at + len(new):]
    return None


def _value_at(data: Any, path: Path) -> Any:
    for key in path:
        if isinstance(data, dict) and isinstance(key, str):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return None
    return data


def _compose(text: str) -> yaml.Node | None:
    """Compose after checking events: no anchors, no aliases, bounded depth and size."""
    import yaml
    depth = 0
    for events, event in enumerate(yaml.parse(text, Loader=loader()), start=1):
        mark: Any = event.start_mark  # libyaml's Mark has the same line and column
        if events > MAX_NODES:
            raise _TooMany(mark)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.MarkedYAMLError(problem="anchors and aliases are not allowed in pq files",
                                       problem_mark=mark)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested deeper than {MAX_DEPTH} levels",
                                           problem_mark=mark)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return yaml.compose(text, Loader=loader())


class _TooMany(Exception):
    """More YAML nodes than pq reads (args: the mark of the first one past)."""


@cache
def loader() -> type:
    """libyaml's safe loader when present: the pure-Python parser needs seconds for a few
    MiB of hostile input."""
    import yaml
    found: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return found


@cache
def _constructor() -> Any:
    import yaml
    constructor = yaml.SafeLoader.__new__(yaml.SafeLoader)
    yaml.constructor.SafeConstructor.__init__(constructor)
    return constructor


def _build(node: yaml.Node, path: Path, doc: Located, depth: int, counter: list[int]) -> Any:
    import yaml
    counter[0] += 1
    doc.marks[path] = _at(doc.text, doc.odd, node.start_mark)
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError("mapping keys must be plain strings", path=doc.filename,
                                  **_place(doc, key_node.start_mark),
                                  hint="write the key as a plain name (`notes:`)")
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConfigError("YAML merge keys (<<) are not allowed in pq files",
                                  path=doc.filename, **_place(doc, key_node.start_mark),
                                  hint="write the keys out in the mapping")
            key = str(key_node.value)
            if key in result:
                raise ConfigError(f"duplicate key {key!r}", path=doc.filename,
                                  **_place(doc, key_node.start_mark),
                                  hint="keep only one")
            result[key] = _build(value_node, path + (key,), doc, depth + 1, counter)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_build(v, path + (i,), doc, depth + 1, counter) for i, v in enumerate(node.value)]
    assert isinstance(node, yaml.ScalarNode)
    if node.tag == "tag:yaml.org,2002:int" and len(node.value) > 100:  # (Python reads
        # 4300 digits at most, and its refusal names a Python setting)
        raise ConfigError(f"a number of {len(node.value)} characters, more than any value "
                          "pq reads", path=doc.filename, **_place(doc, node.start_mark),
                          hint="quote it to keep it as text, or write a smaller number")
    try:
        value = _constructor().construct_object(node, deep=True)
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors raise ValueError,
        # KeyError, ... for a tagged scalar (`!!int x`, `!!bool maybe`): all the file's fault
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"bad value: {first}", path=doc.filename,
                          **_place(doc, node.start_mark),
                          hint=f"write a plain value there (no `{node.tag.rsplit(':', 1)[-1]}` "
                               "tag), or quote it") from None
    # Dates and binary scalars become strings: pq files hold only plain data.
    if not isinstance(value, (str, int, float, bool, type(None))):
        value = str(node.value)
    return value


def merge_ordered(raw: dict[str, Any], known: dict[str, Any],
                   known_keys: tuple[str, ...]) -> dict[str, Any]:
    """raw's keys in raw's order with known values replacing them; new known keys appended."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in known:
            out[key] = known[key]
        elif key not in known_keys:
            out[key] = value
    for key in known_keys:
        if key in known and key not in out:
            out[key] = known[key]
    return out


def dump(data: Any) -> str:
    """Deterministic YAML: block style, keys in the order given, no anchors, wide lines."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)  # indent lists under their key

    def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        if "\x85" in value:  # NEL, a line break to YAML: only double quotes escape it (\N)
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
        if "\n" in value:
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
        return dumper.represent_scalar("tag:yaml.org,2002:str", value)

    _Dumper.add_representer(str, _str)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100_000, indent=2)
