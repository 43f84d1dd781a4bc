"""C++ source as tokens for the compat header scanner: comments and strings blanked,
directives dropped, balanced groups, and the declarator helpers (a function's name, a
leading `template <...>`, a class's bases) the scanner reads declarations with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                    re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|->|\.\.\.|\d[\w.]*|\S")
IDENT = re.compile(r"[A-Za-z_]\w*")
CLOSE = {"(": ")", "[": "]", "{": "}"}
# identifiers directly before a parenthesis that are not a declared name
_NOT_NAMES = frozenset({"decltype", "alignas", "__attribute__", "sizeof", "noexcept",
                        "throw", "static_assert", "requires", "__declspec", "alignof",
                        "if", "for", "while", "switch", "return"})


@dataclass
class Group:
    """A balanced (), [] or {} group, kept as one item of a statement."""

    open: str
    tokens: list[str]


Item = str | Group


def strip_source(text: str) -> str:
    """Comments and string contents blanked; line count kept."""
    def blank(m: re.Match[str]) -> str:
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] * 2
        return "\n" * s.count("\n") or " "
    return _STRIP.sub(blank, text)


def tokens(stripped: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    lines = stripped.split("\n")
    no = 0
    while no < len(lines):
        line = lines[no]
        if line.lstrip().startswith("#"):  # a directive, with its continuation lines
            while line.rstrip().endswith("\\") and no + 1 < len(lines):
                no += 1
                line = lines[no]
            no += 1
            continue
        out.extend((m.group(0), no + 1) for m in _TOKEN.finditer(line))
        no += 1
    return out


def spell(tokens: list[str]) -> str:
    text = " ".join(tokens)
    return re.sub(r" ?:: ?", "::", re.sub(r" ?([<>*&,]) ?", r"\1", text)).replace(",", ", ")


def macro_like(name: str) -> bool:
    return name.isupper() and len(name) > 1


def untemplate(items: list[Item]) -> tuple[list[Item], int]:
    """Drop leading `template <...>` clauses (nested angle brackets counted); how many
    items were dropped."""
    out = list(items)
    while out[:1] == ["template"] and out[1:2] == ["<"]:
        depth, k = 0, 1
        while k < len(out):
            if out[k] == "<":
                depth += 1
            elif out[k] == ">":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        out = out[k + 1:]
    return out, len(items) - len(out)


def drop_macro_calls(items: list[Item]) -> list[Item]:
    """A leading `MACRO(args)` expansion glued to the next declaration is not part of it."""
    while (len(items) > 2 and isinstance(items[0], str) and macro_like(items[0])
           and isinstance(items[1], Group) and items[1].open == "("):
        items = items[2:]
    return items


def function_name(items: list[Item]) -> tuple[int, str] | None:
    """(index of the parameter group, the possibly qualified name) of a function
    declarator, or None."""
    found: list[tuple[int, str]] = []
    for k, x in enumerate(items):
        if not (isinstance(x, Group) and x.open == "(") or k == 0:
            continue
        prev = items[k - 1]
        if isinstance(prev, Group):
            if prev.open in "([" and k >= 2 and items[k - 2] == "operator":
                found.append((k, "operator" + ("()" if prev.open == "(" else "[]")))
            continue
        if prev == "operator":
            continue  # `operator()`: the next group holds the parameters
        if not IDENT.fullmatch(prev) or prev in _NOT_NAMES:
            j = k - 1  # `operator<<`, `operator==`: symbols after the keyword
            while j > 0 and isinstance(items[j], str) and not IDENT.fullmatch(str(items[j])):
                j -= 1
            if items[j] == "operator" and j < k - 1:
                found.append((k, "operator" + "".join(str(t) for t in items[j + 1:k])))
            continue
        if k >= 2 and items[k - 2] == "operator":
            found.append((k, "operator " + prev))
            continue
        found.append((k, _qualified_back(items, k - 1)))
    real = [f for f in found if not macro_like(f[1].split("::")[-1])]
    if real:
        return real[0]
    return None


def _qualified_back(items: list[Item], k: int) -> str:
    parts = [str(items[k])]
    j = k - 1
    if j >= 0 and items[j] == "~":
        parts[0] = "~" + parts[0]
        j -= 1
    while j >= 1 and items[j] == "::":
        j -= 1
        if items[j] == ">":  # `Foo<T>::bar`: skip the template arguments
            depth = 0
            while j >= 0:
                if items[j] == ">":
                    depth += 1
                elif items[j] == "<":
                    depth -= 1
                    if depth == 0:
                        j -= 1
                        break
                j -= 1
        if j >= 0 and isinstance(items[j], str) and IDENT.fullmatch(str(items[j])):
            parts.insert(0, str(items[j]))
            j -= 1
        else:
            break
    return "::".join(parts)


def split_bases(tokens: list[str]) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for t in tokens + [","]:
        if t == "<":
            depth += 1
        elif t == ">":
            depth -= 1
        if t == "," and depth == 0:
            name = "".join(x for x in cur if x not in ("public", "private", "protected",
                                                       "virtual", ""))
            if name:
                out.append(re.sub(r"<.*", "", name))
            cur = []
        else:
            cur.append(t)
    return out
