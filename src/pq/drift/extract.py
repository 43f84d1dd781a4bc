"""Which framework names a line of source uses: `#include`s of ATen/c10/torch headers,
qualified C++ names, tensor method calls, TORCH_LIBRARY schemas and macros, `torch.` uses
in Python; and which files count at all (the ones the fork builds or imports).

Pure text: no git, no Paddle. The rules are documented in docs/drift.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pq.model import layers
from pq.model.diff import Line

CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".hh")
VENDORED = frozenset({"third_party", "third-party", "thirdparty", "3rdparty", "vendor",
                      "vendored", "external", "extern", "deps"})

# Tensor methods reported even when the compat surface cannot be asked (torch's at::Tensor
# API, names distinctive enough not to be a std:: container's). Others are reported only
# when the surface knows at::Tensor has them.
TENSOR_METHODS = frozenset({
    "data_ptr", "const_data_ptr", "mutable_data_ptr", "numel", "dim", "ndimension", "sizes",
    "strides", "stride", "scalar_type", "dtype", "options", "device", "is_cuda", "is_cpu",
    "is_contiguous", "contiguous", "reshape", "view", "permute", "transpose", "narrow",
    "index_select", "unsqueeze", "squeeze", "expand", "flatten", "element_size", "nbytes",
    "storage_offset", "item", "sum", "abs", "clamp", "copy_", "fill_", "zero_", "cuda", "cpu",
    "layout", "requires_grad", "is_same_size", "slice", "masked_fill", "index_put_",
    "repeat", "chunk", "split", "view_as", "type_as", "new_empty", "new_zeros", "matmul",
})
_STL_WORDS = frozenset({"size", "data", "empty", "begin", "end", "at", "get", "push_back",
                        "emplace_back", "find", "insert", "erase", "clear", "reset", "count",
                        "front", "back", "c_str", "str", "first", "second", "value", "to"})

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]((?:ATen|c10|torch)/[^>"]+)[>"]')
# `::at::x`, globally qualified, is `at::x`; `ns::at::x` is another namespace's.
_QUALIFIED = re.compile(r"(?<![\w:])(?:::)?((?:at|c10|torch)(?:::\w+)+)")
# `.name(`, `->name<T>(`, `.template name<c10::complex<float>>(` (one nested template).
_METHOD = re.compile(r"(?:\.|->)\s*(?:template\s+)?([A-Za-z_]\w*)\s*"
                     r"(?:<(?:[^<>();]|<[^<>();]*>)*>)?\s*\(")
_MACRO = re.compile(r"\b(TORCH_LIBRARY\w*|AT_DISPATCH\w*|TORCH_CHECK\w*|C10_CUDA_\w+)\s*\(")
_SCHEMA = re.compile(r'\.def\(\s*"([A-Za-z_][\w.]*)(\([^"]*\)[^"]*)"')
_PY_FROM = re.compile(r"^\s*from\s+(torch(?:\.\w+)*)\s+import\s+\(?([\w\s,]+?)\)?\s*(?:#.*)?$")
# `import torch.cuda, torch.testing as tt, os`: the statement's modules, and what follows
# a `;` (read as a line of its own).
_PY_IMPORT = re.compile(r"^\s*import\s+([^;]*)(?:;(.*))?$", re.S)
_PY_MODULE = re.compile(r"torch(?:\.\w+)+")
_PY_ATTR = re.compile(r"(?<![\w.])torch(?:\.[A-Za-z_]\w*)+")
_CXX_COMMENT = re.compile(r"//.*$|/\*.*?\*/")
# Quoted text: Python's strings, C++'s strings and characters.
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
# C++'s: a quote right after a letter, digit or `_` opens no character (`1'024`, a digit
# separator), but for a character's prefix (`u8'a'`, `L'a'`).
_CXX_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|(?:(?<!\w)|(?<=\bu8)|(?<=\b[uUL]))'
                         r'\'(?:[^\'\\]|\\.)*\'')
# Python strings, triple-quoted ones first (those stay: they are what `code_of` looks for).
_PY_LITERAL = re.compile(r'"""|\'\'\'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')


@dataclass(frozen=True)
class Use:
    kind: str  # "header" | "cxx" | "macro" | "method" | "schema" | "python"
    name: str  # as the surface is asked: "c10/cuda/CUDAGuard.h", "at::cuda::CUDAGuard", ...
    detail: str = ""  # the schema's signature, for "schema"


def language(path: str) -> str | None:
    """"cxx" or "python" for a file the fork builds or imports; None for any other file
    (documentation, vendored third-party code, data)."""
    parts = path.lower().split("/")
    if VENDORED & set(parts[:-1]) or layers.is_doc(path):
        return None
    name = parts[-1]
    if name.endswith(CXX_SUFFIXES):
        return "cxx"
    if name.endswith(".py"):
        return "python"
    return None


def may_use(lang: str, text: bytes) -> bool:
    """Whether any line of `text` (`lang` source, a file's section of a diff) can use a
    framework name: every Python use names `torch`, or is a line of bare names that may sit
    in a `from torch.x import (` block opened above the hunk; a C++ line can call a tensor
    method by any name."""
    return lang != "python" or b"torch" in text or _PY_NAMES_CHANGED.search(text) is not None


# A line of a parenthesized list of names: `    name,`, `    a as b, c)`.
_PY_NAMES = re.compile(r"^\s*[A-Za-z_]\w*(?:\s+as\s+\w+)?"
                       r"(?:\s*,\s*[A-Za-z_]\w*(?:\s+as\s+\w+)?)*\s*,?\s*\)?\s*$")
_PY_NAMES_CHANGED = re.compile(rb"^[-+][ \t]+[A-Za-z_][\w \t,]*\)?[ \t]*(?:#.*)?\r?$", re.M)
_IMPORT_BLOCK_MAX = 500  # lines looked back for the opening of an import block


def in_a_list(lines: Sequence[Line]) -> bool:
    """Whether a Python hunk's first line of code (blank and comment lines passed over)
    holds only names of a parenthesized list: the hunk may sit inside an import block
    that it does not show."""
    code = next((c for c in (ln.text.split("#", 1)[0] for ln in lines) if c.strip()), "")
    return _PY_NAMES.match(code) is not None


def open_import(above: Sequence[str]) -> list[str]:
    """The last lines of `above` (a Python file's lines before a hunk) from a
    `from torch.x import (` still open at its end, up to that end: what a hunk inside
    that block needs before its lines to be read; [] when the hunk is not inside one."""
    for i in range(len(above) - 1, max(-1, len(above) - 1 - _IMPORT_BLOCK_MAX), -1):
        code = above[i].split("#", 1)[0]
        m = _PY_FROM_OPEN.match(code)
        if m is not None:
            return list(above[i:]) if ")" not in m.group(2) else []
        if code.strip() and not (_PY_NAMES.match(code) and ")" not in code):
            return []
    return []


def uses(lang: str, text: str, tensor_method: Callable[[str], bool] = TENSOR_METHODS.__contains__
         ) -> list[Use]:
    """The framework names one line of `lang` source uses, in order, each once; a call
    `.name(` or `->name<T>(` counts as a tensor method when `tensor_method(name)` says so."""
    found = _cxx(text, tensor_method) if lang == "cxx" else _python(text)
    return list(dict.fromkeys(found))


def code_of(lang: str, lines: Sequence[str]) -> list[str]:
    """Consecutive `lines` of `lang` source (a hunk's) with what multi-line comments
    (`/* ... */`) and docstrings (triple-quoted strings) hold blanked: `uses` reads one
    line at a time and cannot tell that a line sits inside one."""
    out = spans_blanked(lang, lines)
    return _joined_schemas(out) if lang == "cxx" else _spread_imports(_joined_chains(out))


def spans_blanked(lang: str, lines: Sequence[str]) -> list[str]:
    """Each of consecutive `lines` with what a multi-line comment, raw string or
    docstring holds left out (one space where it was), line for line."""
    opener = _CXX_OPENER if lang == "cxx" else _PY_OPENER
    inside: str | None = None  # the closing delimiter awaited
    colon = False  # the last line of code ended in `:` (a docstring may open next)
    out = []
    for line in lines:
        kept, rest = "", line
        while True:
            if inside is not None:
                end = rest.find(inside)
                if end < 0:
                    break
                rest, inside = rest[end + len(inside):], None
                kept += " "
                continue
            if lang == "cxx":  # a `/*` in a string, a character or after `//` opens nothing
                bare = _blanked(_CXX_QUOTED, rest)
                m = opener.search(bare.split("//", 1)[0])
            else:  # nor in a string or after `#`; and a quote that may be a closer (below)
                bare = _blanked(_PY_LITERAL, rest)
                m = next((c for c in opener.finditer(bare.split("#", 1)[0])
                          if _opens(bare, c, colon and kept == "")), None)
            if m is None:
                kept += rest
                break
            kept += rest[:m.start()]
            rest, inside = rest[m.end():], _closer(lang, m)
        out.append(kept)
        if kept.strip():
            colon = kept.split("#", 1)[0].rstrip().endswith(":")
    return out


# What opens text that spans lines: a comment or a raw string (C++), a triple quote.
_CXX_OPENER = re.compile(r'/\*|(?<!\w)(?:u8|[uUL])?R"([^()\\\s"]{0,16})\(')
_PY_OPENER = re.compile(r'"""|\'\'\'')


def _closer(lang: str, m: re.Match[str]) -> str:
    """What closes the text `m` opened: `*/`, a raw string's `)delimiter"`, the quote."""
    if lang != "cxx":
        return m.group(0)
    return "*/" if m.group(0) == "/*" else f'){m.group(1)}"'


# `.def(` with its schema's literals still open at the end of the line; a line that goes
# on with literals; one literal's text.
_DEF_OPEN = re.compile(r'\.def\(\s*((?:"(?:[^"\\]|\\.)*"\s*)*)$')
_LITERALS = re.compile(r'\s*((?:"(?:[^"\\]|\\.)*"\s*)+)(.*)$')
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _joined_schemas(lines: list[str]) -> list[str]:
    """A `m.def(` whose schema starts on a later line, or is split into adjacent literals
    over lines (clang-format's wrapping), given the whole schema as one literal on the
    def's line (`uses` reads one line; the lines that go on keep their own text)."""
    out = list(lines)
    for i, line in enumerate(lines):
        m = _DEF_OPEN.search(line)
        if m is None:
            continue
        parts, j = _LITERAL.findall(m.group(1)), i + 1
        while j < len(lines):
            more = _LITERALS.match(lines[j])
            if more is None:
                break
            parts += _LITERAL.findall(more.group(1))
            j += 1
            if more.group(2).strip():  # the literals end on this line
                break
        if j > i + 1:
            out[i] = line[:m.start()] + '.def("' + "".join(parts) + '")'
    return out


# A `torch` attribute chain that goes on on the next line (inside brackets, or after a
# backslash), and the part of a line that carries one on.
_PY_CHAIN_OPEN = re.compile(r"(?<![\w.])torch(?:\.[A-Za-z_]\w*)*\.?(?=\s*\\?\s*$)")
_PY_CHAIN_MORE = re.compile(r"\s*(\.?)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\.?)(\s*\\?\s*$)?")


def _joined_chains(lines: list[str]) -> list[str]:
    """A `torch.` attribute chain split over lines (`(torch\n .special\n .erfcx(x))`, or
    after a backslash) given whole to the line it starts on (`uses` reads one line; the
    lines that go on keep their own text)."""
    out = list(lines)
    for i, line in enumerate(lines):
        code = _blanked(_PY_LITERAL, line).split("#", 1)[0]
        m = _PY_CHAIN_OPEN.search(code)
        if m is None:
            continue
        chain, j = m.group(0), i + 1
        while j < len(lines):
            more = _PY_CHAIN_MORE.match(_blanked(_PY_LITERAL, lines[j]).split("#", 1)[0])
            if more is None or bool(more.group(1)) == chain.endswith("."):
                break  # no name, or `..`, or two names with no dot between
            chain += more.group(1) + more.group(2) + more.group(3)
            j += 1
            if more.group(4) is None:  # the chain ends on this line
                break
        if j > i + 1:
            out[i] = line[:m.start()] + chain.rstrip(".")
    return out


_PY_FROM_OPEN = re.compile(r"^(\s*from\s+torch(?:\.\w+)*\s+import)\s*\((.*)$")


def _spread_imports(lines: list[str]) -> list[str]:
    """`from torch.x import (` over several lines, each line of names made a one-line
    import of its own (`uses` reads one line, and a hunk may add one name alone)."""
    out, prefix = [], None
    for line in lines:
        code = line.split("#", 1)[0]
        if prefix is None:
            m = _PY_FROM_OPEN.match(code)
            if m is None or ")" in m.group(2):
                out.append(line)
                continue
            prefix, names, closed = m.group(1), m.group(2), False
        else:
            names, closed = code.split(")", 1)[0], ")" in code
        out.append(f"{prefix} {names.strip()}" if names.strip(" ,\t") else "")
        if closed:
            prefix = None
    return out


def python_code(lines: Sequence[str]) -> list[str]:
    """Consecutive Python `lines` with what docstrings and string literals hold turned to
    spaces (positions kept): a name mentioned there is not code."""
    return [_blanked(_PY_LITERAL, line) for line in code_of("python", lines)]


def without_literals(lang: str, text: str) -> str:
    """One line of `lang` source ("python": any `#`-comment language; else C/C++) with
    what its string literals (and C++ character literals) hold turned to spaces, positions
    kept: a `#` or `//` in a string opens no comment."""
    return _blanked(_PY_LITERAL if lang == "python" else _CXX_QUOTED, text)


def _blanked(quoted: re.Pattern[str], text: str) -> str:
    """`text` with the quoted text `quoted` finds turned to spaces (positions kept); triple
    quotes, which `code_of` looks for, stay."""
    return quoted.sub(lambda q: q.group(0) if q.group(0) in ('"""', "'''")
                      else " " * len(q.group(0)), text)


# The letters before a string's opening quote that make it a raw, f-, bytes or u string.
_STRING_PREFIX = re.compile(r"(?<!\w)(?:[rRbBuUfF]|[rR][bBfF]|[bBfF][rR])$")


def _opens(line: str, m: re.Match[str], after_colon: bool = False) -> bool:
    """Whether the triple quote `m` can only open a string: after `=`, `(`, `,`, `[`, `{`,
    `:` or `return`, or first on its line with text after it, or alone on its line right
    under a line ending in `:` (a `def`'s or a `class`'s docstring: `after_colon`). Else a
    line that is a triple quote alone may as well close a docstring that the hunk starts
    inside of: not taken."""
    before = _STRING_PREFIX.sub("", line[:m.start()]).rstrip()
    after = line[m.end():].strip()
    if not before:
        return bool(after) or after_colon
    return before.endswith(("=", "(", ",", "[", "{", ":", "return"))


def _cxx(text: str, tensor_method: Callable[[str], bool]) -> list[Use]:
    m = _INCLUDE.match(text)
    if m:
        return [Use("header", m.group(1))]
    # Comments found where strings and characters are blanked (a `//` in a URL is text),
    # then taken out of the line as it is (a schema is a string) and of the blanked one.
    masked = _CXX_COMMENT.sub(lambda c: "\0" * len(c.group(0)), _blanked(_CXX_QUOTED, text))
    uncommented = "".join(t for t, m in zip(text, masked, strict=True) if m != "\0")
    found = [Use("schema", s.group(1), s.group(1) + s.group(2))
             for s in _SCHEMA.finditer(uncommented)]
    code = masked.replace("\0", "")
    found += [Use("macro", m.group(1)) for m in _MACRO.finditer(code)]
    found += [Use("cxx", m.group(1)) for m in _QUALIFIED.finditer(code)]
    found += [Use("method", m.group(1)) for m in _METHOD.finditer(code)
              if m.group(1) not in _STL_WORDS and tensor_method(m.group(1))]
    return found


def _python(text: str) -> list[Use]:
    hash_at = _blanked(_PY_LITERAL, text).find("#")  # a `#` in a string opens no comment
    code = text[:hash_at] if hash_at >= 0 else text
    semi = _blanked(_PY_LITERAL, code).find(";")
    if semi >= 0:  # `from torch.x import y; stmt`, `x = 1; from torch.x import y`
        return _python(code[:semi]) + _python(code[semi + 1:])
    m = _PY_FROM.match(code)
    if m:
        names = [n.split()[0] for n in m.group(2).split(",") if n.strip()]
        return [Use("python", f"{m.group(1)}.{n}") for n in names if n != "*"]
    m = _PY_IMPORT.match(code)
    if m:
        modules = [item.split()[0] for item in m.group(1).split(",") if item.split()]
        return [Use("python", n) for n in modules if _PY_MODULE.fullmatch(n)] + (
            _python(m.group(2)) if m.group(2) else [])
    return [Use("python", m.group(0)) for m in _PY_ATTR.finditer(_QUOTED.sub("''", code))]
