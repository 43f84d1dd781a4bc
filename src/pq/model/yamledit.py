"""Comment-keeping rewrites: edit a YAML file's own text so that it loads to new data.

pq rewrites series.yaml on export, rebase, apply and init --force; the user's comments,
quoting, flow lists and blank lines must survive. Instead of dumping the data again, this
module changes only the spans of the text whose values changed: a scalar is replaced in
place in its own quoting style, a block list or mapping is rebuilt from its items' own
text chunks (reordered, dropped, or with a new item rendered like its siblings).

An item's chunk is its text plus the comments that belong to it: the full-line comments
above it up to the item before, blank lines between them included (a section heading
belongs to the item it heads; not for the first item: those head the collection and
stay), its end-of-line comments, the comments indented deeper than it right after its
content, and the blank lines between it and the next item's comments or the next item.
A removed item takes its chunk with it.

`rewrite` checks that the edited text loads to exactly the wanted data (same types, same
key order) and returns None when it does not, or when an edit is not safe; the caller
then writes the plain dump.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from pq.errors import ConfigError
from pq.model import yamldoc

Edit = tuple[int, int, str]
_BREAK = re.compile(r"\r\n|\r|\n|\x85|\u2028|\u2029")


class _Unsafe(Exception):
    """This change cannot be made by editing the text; the caller dumps plainly."""


def same(a: Any, b: Any) -> bool:
    """Strict equality of plain data: types and mapping key order count (1 != True != 1.0)."""
    return json.dumps(a, default=repr) == json.dumps(b, default=repr)


def rewrite(text: str, old: Any, new: Any) -> str | None:
    """`text` (which loads to `old`) edited to load to `new`, or None where that is unsafe."""
    if same(old, new):
        return text
    try:
        root = yaml.compose(text, Loader=yamldoc.loader())
        if not isinstance(root, yaml.MappingNode) or root.flow_style:
            return None
        editor = _Editor(text if text.endswith(("\n", "\r")) else text + "\n")
        edits = editor.collection(root, old, new)
        out = _apply(editor.text, 0, len(editor.text), edits)
        if not same(yamldoc.load(out.encode("utf-8"), "").data, new):
            return None
    except (_Unsafe, yaml.YAMLError, ConfigError, RecursionError):
        return None
    return out


def _apply(text: str, start: int, end: int, edits: list[Edit]) -> str:
    """text[start:end] with the edits inside that range applied."""
    out, pos = [], start
    for s, e, repl in sorted(e for e in edits if start <= e[0] and e[1] <= end):
        if s < pos:
            raise _Unsafe("overlapping edits")
        out += [text[pos:s], repl]
        pos = e
    out.append(text[pos:end])
    return "".join(out)


@dataclass
class _Item:
    key: Any  # identity: a mapping key, a patch name, or a list position/value
    node: yaml.Node  # the value
    key_end: int | None  # where a mapping key's text ends; None in a list
    shared: bool  # the line holds text before the item (`- name: x`)
    head: int  # line of the key or of the `-`
    col: int  # its column
    start: int  # first line of the chunk (leading comments included)
    body_end: int  # last line of its content and trailing deeper comments
    end: int  # first line after the chunk


class _Editor:
    def __init__(self, text: str) -> None:
        self.text = text
        self.nl = "\r\n" if "\r\n" in text else "\n"
        self.starts = [0] + [m.end() for m in _BREAK.finditer(text)]
        if self.starts[-1] != len(text):
            self.starts.append(len(text))

    # -- lines ----------------------------------------------------------------------

    def line(self, n: int) -> str:
        return _BREAK.sub("", self.text[self.starts[n]:self.starts[n + 1]])

    def nlines(self) -> int:
        return len(self.starts) - 1

    def blank(self, n: int) -> bool:
        return not self.line(n).strip()

    def comment(self, n: int) -> bool:
        return self.line(n).lstrip().startswith("#")

    def indent(self, n: int) -> int:
        return len(self.line(n)) - len(self.line(n).lstrip(" "))

    def line_end(self, n: int) -> int:
        return self.starts[n] + len(self.line(n))

    def last_line(self, node: yaml.Node) -> int:
        """The last line holding the node's content (block ends point past comments)."""
        if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
            key, value = node.value[-1]
            return max(self.last_line(key), self.last_line(value))
        if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
            return self.last_line(node.value[-1])
        end = node.end_mark
        n = end.line if end.column > 0 or end.line == node.start_mark.line else end.line - 1
        while n > node.start_mark.line and self.blank(n):
            n -= 1
        return int(n)

    # -- items ----------------------------------------------------------------------

    def items(self, node: yaml.Node, keys: list[Any]) -> list[_Item]:
        heads: list[tuple[Any, yaml.Node, int, int, int | None]] = []
        if isinstance(node, yaml.MappingNode):
            heads = [(k.value, v, k.start_mark.line, k.start_mark.column, k.end_mark.index)
                     for k, v in node.value]
        else:
            col, low = node.start_mark.column, node.start_mark.line
            for key, v in zip(keys, node.value, strict=True):
                dash = v.start_mark.line
                while dash > low and not self.line(dash)[col:].startswith("-"):
                    dash -= 1
                if not self.line(dash)[col:].startswith("-"):
                    raise _Unsafe("no `-` found for a list item")
                heads.append((key, v, dash, col, None))
                low = self.last_line(v)
        items: list[_Item] = []
        for i, (key, value, head, col, key_end) in enumerate(heads):
            start = head
            if items:  # the comments above it, up to the item before, blank lines between
                above = [n for n in range(items[-1].body_end + 1, head) if self.comment(n)]
                start = above[0] if above else head
                items[-1].end = start
            body_end = max(head, self.last_line(value))
            limit = heads[i + 1][2] if i + 1 < len(heads) else self.nlines()
            while (body_end + 1 < limit and self.comment(body_end + 1)
                   and self.indent(body_end + 1) > col):
                body_end += 1
            shared = bool(self.line(head)[:col].strip())
            items.append(_Item(key, value, key_end, shared, head, col, start, body_end,
                               body_end + 1))
        return items

    # -- edits ----------------------------------------------------------------------

    def value(self, node: yaml.Node, old: Any, new: Any, col: int,
              key_end: int | None) -> list[Edit]:
        """Edits turning `node` (loads to `old`) into `new`; col: its parent's column."""
        if same(old, new):
            return []
        block = isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style
        if block and new and type(old) is type(new) and isinstance(new, (dict, list)):
            return self.collection(node, old, new)
        inline = self.inline(new, node)
        if block:
            keys = list(old) if isinstance(old, dict) else _list_keys(old, old)[0]
            last = self.line_end(self.items(node, keys)[-1].body_end)
            if key_end is None:  # a list item: its value follows the `-`
                if inline is None:
                    raise _Unsafe("a block value replaced inside a list")
                return [(node.start_mark.index, last, inline)]
            gap = self.text[key_end:node.start_mark.index]
            if inline is not None and "#" not in gap:
                return [(key_end, last, ": " + inline)]
            body = (" " * (col + 2) + inline if inline is not None
                    else self.block(new, col + 2).rstrip("\n"))
            return [(self.starts[node.start_mark.line], last, body.replace("\n", self.nl))]
        start, end = node.start_mark.index, node.end_mark.index
        if inline is not None:
            lead = " " if start == end and key_end is not None else ""
            return [(start, end, lead + inline)]
        if key_end is None:
            raise _Unsafe("a block value in a list position")
        while start > key_end + 1 and self.text[start - 1] == " ":
            start -= 1
        rest = self.text[end:self.line_end(node.end_mark.line)]
        if rest.lstrip().startswith("#"):  # the key line's comment stays on the key line
            end += len(rest)
        else:
            rest = ""
        body = rest + self.nl + self.block(new, col + 2).rstrip("\n").replace("\n", self.nl)
        return [(start, end, body)]

    def inline(self, value: Any, node: yaml.Node | None) -> str | None:
        """`value` on one line, in the style `node` had; None for a non-empty block value."""
        flow = (isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.flow_style
                and bool(node.value))  # `[]` is how the plain dump writes an empty list
        if isinstance(value, (dict, list)):
            if value and not flow:
                return None
            text = yaml.safe_dump(value, default_flow_style=True, width=10**9,
                                  allow_unicode=True, sort_keys=False).rstrip("\n")
            return None if "\n" in text else text
        style = getattr(node, "style", None) if isinstance(value, str) else None
        return _scalar(value, style if style in ("'", '"') else None)

    def collection(self, node: yaml.Node, old: Any, new: Any) -> list[Edit]:
        """Edits of a block mapping or list: items kept, dropped, added or reordered."""
        if isinstance(new, dict):
            old_keys, new_keys = list(old), list(new)
            old_values, new_values = list(old.values()), list(new.values())
        else:
            old_keys, new_keys = _list_keys(old, new)
            old_values, new_values = list(old), list(new)
        items = self.items(node, old_keys)
        by_key = {it.key: (it, v) for it, v in zip(items, old_values, strict=True)}
        inner: dict[Any, list[Edit]] = {}
        for key, value in zip(new_keys, new_values, strict=True):
            if key in by_key:
                it, was = by_key[key]
                inner[key] = self.value(it.node, was, value, it.col, it.key_end)
        if old_keys == new_keys:
            return [e for key in new_keys for e in inner[key]]
        if items[0].shared and new_keys[:1] != [items[0].key]:
            raise _Unsafe("the first key shares its line with a `-`")
        seps = {self.text[self.starts[it.body_end + 1]:self.starts[it.end]] for it in items[:-1]}
        sep = seps.pop() if len(seps) == 1 and not "".join(seps).strip() else ""
        chunks = []
        for key, value in zip(new_keys, new_values, strict=True):
            if key in by_key:
                it = by_key[key][0]
                text = _apply(self.text, self.starts[it.start], self.starts[it.end], inner[key])
            else:
                text = self.new_item(items, key, value, new).replace("\n", self.nl)
            chunks.append(text)
        for i, text in enumerate(chunks[:-1]):
            if sep and not _ends_blank(text):
                chunks[i] = text + sep
        if chunks:
            while (stripped := _drop_blank_tail(chunks[-1])) != chunks[-1]:
                chunks[-1] = stripped
        region = (self.starts[items[0].start], self.starts[items[-1].end])
        return [(region[0], region[1], "".join(chunks))]

    def new_item(self, items: list[_Item], key: Any, value: Any, new: Any) -> str:
        """A new item in the style of its siblings: their indentation and quoting."""
        col = items[0].col
        if isinstance(new, dict):
            return self.entry(str(key), value, col, None)
        if not isinstance(value, dict) or not value:
            text = self.inline(value, None)
            if text is None:
                raise _Unsafe("a new nested list item")
            return " " * col + "- " + text + "\n"
        offsets = [it.node.start_mark.column - col for it in items
                   if isinstance(it.node, yaml.MappingNode) and not it.node.flow_style
                   and it.node.start_mark.line == it.head]
        inner = offsets[0] if offsets and len(set(offsets)) == 1 else 2
        styles = _sibling_styles(items)
        lines = "".join(self.entry(str(k), v, col + inner, styles.get(k))
                        for k, v in value.items())
        return " " * col + "-" + " " * (inner - 1) + lines[col + inner:]

    def entry(self, key: str, value: Any, col: int, style: str | None) -> str:
        name = _scalar(key, None)
        text = (_scalar(value, style if isinstance(value, str) else None)
                if not isinstance(value, (dict, list)) or not value else None)
        if name is None or text is None or (isinstance(value, (dict, list)) and value):
            return self.block({key: value}, col)
        return " " * col + name + ": " + text + "\n"

    def block(self, value: Any, col: int) -> str:
        dumped = yamldoc.dump(value)
        return "".join(" " * col + line if line.strip() else line
                       for line in dumped.splitlines(keepends=True))


def _drop_blank_tail(text: str) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) > 1 and not lines[-1].strip():
        return "".join(lines[:-1])
    return text


def _scalar(value: Any, style: str | None) -> str | None:
    """One scalar on one line, plain where YAML allows it unless `style` quotes it."""
    text = yaml.safe_dump(value, default_style=style, width=10**9, allow_unicode=True,
                          explicit_end=False)
    if text.endswith("\n...\n"):
        text = text[:-5]
    text = text.rstrip("\n")
    return None if "\n" in text or "\r" in text else text


def _is_named(items: Any) -> bool:
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return (len(names) == len(items) and all(isinstance(n, str) for n in names)
            and len(set(names)) == len(names))


def _list_keys(old: list[Any], new: list[Any]) -> tuple[list[Any], list[Any]]:
    """Which old item each new one is: by `name` in named lists, else by position when the
    lengths agree, else by equal value (new values get keys no old item has)."""
    if _is_named(old) and _is_named(new):
        return [("name", i["name"]) for i in old], [("name", i["name"]) for i in new]
    old_keys = [("at", i) for i in range(len(old))]
    if len(old) == len(new):
        return old_keys, list(old_keys)
    free = {i: json.dumps(v, default=repr) for i, v in enumerate(old)}
    keys: list[Any] = []
    for j, value in enumerate(new):
        text = json.dumps(value, default=repr)
        match = next((i for i, t in free.items() if t == text), None)
        if match is None:
            keys.append(("new", j))
        else:
            del free[match]
            keys.append(("at", match))
    return old_keys, keys


def _ends_blank(text: str) -> bool:
    lines = text.splitlines()
    return bool(lines) and not lines[-1].strip()


def _sibling_styles(items: list[_Item]) -> dict[str, str | None]:
    """Per key, the quoting every sibling entry uses for it, where they all agree."""
    seen: dict[str, set[str | None]] = {}
    for it in items:
        if isinstance(it.node, yaml.MappingNode):
            for k, v in it.node.value:
                if isinstance(v, yaml.ScalarNode):
                    seen.setdefault(str(k.value), set()).add(
                        v.style if v.style in ("'", '"') else None)
    return {k: s.pop() for k, s in seen.items() if len(s) == 1}
