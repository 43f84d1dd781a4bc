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
    angle = 0  # inside `<...>` template arguments: `traits<R (*)(Args...)>` is no function
    for k, x in enumerate(items):
        if x in ("<", ">") and not _after_operator(items, k):
            angle += 1 if x == "<" else -1
        if x == "=" and angle == 0 and not _after_operator(items, k):
            break  # an initializer follows: `T x = T();` declares no function
        if not (isinstance(x, Group) and x.open == "(") or k == 0 or angle > 0:
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


def _after_operator(items: list[Item], k: int) -> bool:
    """Whether items[k] is a symbol of an operator name: `operator==`, `operator<=`."""
    j = k - 1
    while j >= 0 and isinstance(items[j], str) and not IDENT.fullmatch(str(items[j])):
        j -= 1
    return j >= 0 and items[j] == "operator"


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


@dataclass(frozen=True)
class Macro:
    """A `#define`: parameters (None: object-like) and body tokens."""

    params: tuple[str, ...] | None
    body: tuple[str, ...]


_DEFINE_LINE = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)", re.DOTALL)


def defines(stripped: str) -> dict[str, Macro]:
    """The macros a (stripped) source defines; a later definition wins."""
    out: dict[str, Macro] = {}
    lines = stripped.split("\n")
    no = 0
    while no < len(lines):
        line = lines[no]
        while line.rstrip().endswith("\\") and no + 1 < len(lines):
            no += 1
            line = line.rstrip()[:-1] + " " + lines[no]
        no += 1
        m = _DEFINE_LINE.match(line)
        if m is None:
            continue
        params = None
        if m.group(2) is not None:
            params = tuple("__VA_ARGS__" if p.strip() == "..." else p.strip()
                           for p in m.group(3).split(",") if p.strip())
        out[m.group(1)] = Macro(params, tuple(_TOKEN.findall(m.group(4))))
    return out


def call_args(toks: list[tuple[str, int]], at: int) -> tuple[list[list[str]], int] | None:
    """The arguments of a macro call whose `(` is at toks[at], and the index after `)`."""
    args: list[list[str]] = [[]]
    depth = 0
    for k in range(at, len(toks)):
        t = toks[k][0]
        if t in CLOSE:
            depth += 1
            if depth == 1:
                continue
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return ([] if args == [[]] else args), k + 1
        elif t == "," and depth == 1:
            args.append([])
            continue
        args[-1].append(t)
    return None


def substitute(macro: Macro, args: list[list[str]]) -> list[str]:
    """The body of a function-like macro with its arguments put in (`#x` becomes an empty
    string, `a ## b` pastes); the result is scanned again by the caller."""
    params = macro.params or ()
    mapping: dict[str, list[str]] = {}
    for n, p in enumerate(params):
        if p == "__VA_ARGS__":
            rest: list[str] = []
            for a in args[n:]:
                rest.extend(([","] if rest else []) + a)
            mapping[p] = rest
        else:
            mapping[p] = args[n] if n < len(args) else []
    body = macro.body
    out: list[str] = []
    k = 0
    while k < len(body):
        t = body[k]
        if t == "#" and k + 1 < len(body) and body[k + 1] == "#":
            nxt = mapping.get(body[k + 2], [body[k + 2]]) if k + 2 < len(body) else []
            if out and nxt:
                out[-1] += nxt[0]
                out.extend(nxt[1:])
            else:
                out.extend(nxt)
            k += 3
            continue
        if t == "#" and k + 1 < len(body) and body[k + 1] in mapping:
            out.append('""')
            k += 2
            continue
        out.extend(mapping.get(t, [t]))
        k += 1
    return out
