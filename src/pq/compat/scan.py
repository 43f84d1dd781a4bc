"""A lightweight C++ header scanner: the namespaces, classes, functions, methods, aliases
and macros a header declares, and whether each function's body is in the header.

Not a compiler: comments and strings are blanked, `#if` branches all count, bodies are
skipped by brace matching. Enough for the compat headers' real shapes (nested and
`a::b` namespaces, classes with bases, templates, inline bodies, init lists, `using`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pq.compat.lexer import (
    CLOSE,
    IDENT,
    Group,
    Item,
    Macro,
    call_args,
    defines,
    drop_macro_calls,
    function_name,
    spell,
    split_bases,
    strip_source,
    substitute,
    tokens,
    untemplate,
)

_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)(\()?")
_MAX_EXPANSIONS = 20000  # per header: a guard against self-referencing macros
_SPECIFIERS = frozenset({"inline", "static", "extern", "constexpr", "virtual", "explicit",
                         "friend", "typename", "consteval", "constinit", "mutable"})
_CLASS_KEYS = ("class", "struct", "union", "enum")


@dataclass(frozen=True)
class Decl:
    """One declaration: `qname` fully qualified ("at::Tensor::const_data_ptr"), `kind`
    namespace|class|struct|union|enum|enumerator|function|alias|variable|macro, the
    declaring line; for functions `inline` (a body or `= default/delete` in the header:
    no export needed); for aliases `target` as written, resolved from `context`."""

    qname: str
    kind: str
    header: str
    line: int
    text: str
    inline: bool | None = None
    target: str | None = None
    context: str = ""
    # a body apart from the declaration: `T X::f() {...}` after class X, or an explicit
    # specialization `template <> T f<int>(...) {...}` of a template declared without one
    out_of_class: bool = False


@dataclass(frozen=True)
class ScopeInfo:
    """A namespace or class: its bases (as written) and `using namespace` directives."""

    kind: str
    bases: tuple[str, ...] = ()
    usings: tuple[str, ...] = ()
    context: str = ""


@dataclass
class Scanned:
    """What the headers of one tree declare (filled in by `scan_header`)."""

    decls: list[Decl] = field(default_factory=list)
    scopes: dict[str, ScopeInfo] = field(default_factory=dict)


@dataclass
class _Scope:
    kind: str  # "ns" | "class" | "enum"
    qname: str
    name: str


def macros_of(header: str, text: str) -> list[Decl]:
    """Every `#define NAME` of a header (the raw text, before stripping)."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        m = _DEFINE.match(line.strip())
        if m:
            out.append(Decl(m.group(1), "macro", header, no, line.strip().rstrip("\\").strip()))
    return out


def scan_header(header: str, text: str, into: Scanned,
                macros: Mapping[str, Macro] | None = None) -> None:
    """Add the declarations of one header (`header`: its include path) to `into`;
    statement-level calls of `macros` (default: the header's own) are expanded."""
    stripped = strip_source(text)
    _Parser(header, text, stripped, into,
            defines(stripped) if macros is None else macros).run()


class _Parser:
    def __init__(self, header: str, text: str, stripped: str, into: Scanned,
                 macros: Mapping[str, Macro]) -> None:
        self.header = header
        self.lines = text.splitlines()
        self.toks = tokens(stripped)
        self.into = into
        self.macros = macros
        self.expansions = 0
        self.stack: list[_Scope] = [_Scope("ns", "", "")]
        self.i = 0

    def qual(self, name: str) -> str:
        base = self.stack[-1].qname
        return f"{base}::{name}" if base else name

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def add(self, qname: str, kind: str, line: int, **kw: object) -> None:
        self.into.decls.append(Decl(qname.lstrip(":"), kind, self.header, line,
                                    self.line_text(line), **kw))  # type: ignore[arg-type]

    def group(self) -> Group:
        """The balanced group opening at self.i; self.i moves past it."""
        open_ = self.toks[self.i][0]
        depth, body = 0, []
        while self.i < len(self.toks):
            t = self.toks[self.i][0]
            self.i += 1
            if t in CLOSE:
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    break
            body.append(t)
        return Group(open_, body[1:])

    def expand(self) -> bool:
        """Replace a function-like macro call at self.i by its expansion (X-macros such
        as `AT_FORALL_SCALAR_TYPES(DEFINE_CONSTANT)` declare real names)."""
        tok, line = self.toks[self.i]
        macro = self.macros.get(tok)
        if (macro is None or macro.params is None or self.expansions > _MAX_EXPANSIONS
                or self.i + 1 >= len(self.toks) or self.toks[self.i + 1][0] != "("):
            return False
        call = call_args(self.toks, self.i + 1)
        if call is None:
            return False
        args, end = call
        self.toks[self.i:end] = [(t, line) for t in substitute(macro, args)]
        self.expansions += 1
        return True

    def run(self) -> None:
        pending: list[Item] = []
        lines: list[int] = []
        while self.i < len(self.toks):
            if self.expand():
                continue
            tok, line = self.toks[self.i]
            if tok in ("(", "["):
                lines.append(line)
                pending.append(self.group())
            elif tok == "{":
                pending, lines = self.brace(pending, lines)
            elif tok == "}":
                self.i += 1
                if len(self.stack) > 1:
                    self.stack.pop()
                pending, lines = [], []
            elif tok == ";":
                self.i += 1
                self.statement(pending, lines)
                pending, lines = [], []
            elif (tok == ":" and self.stack[-1].kind == "class" and len(pending) == 1
                  and pending[0] in ("public", "private", "protected")):
                self.i += 1
                pending, lines = [], []
            else:
                self.i += 1
                pending.append(tok)
                lines.append(line)

    # -- a `{`: what it opens ------------------------------------------------------------
    def brace(self, pending: list[Item], lines: list[int]) -> tuple[list[Item], list[int]]:
        unmacroed = drop_macro_calls(pending)
        specialization = unmacroed[:3] == ["template", "<", ">"]
        items, _dropped = untemplate(unmacroed)
        lines = lines[len(pending) - len(items):]
        head = [x for x in items if isinstance(x, str)]
        fn = None if head[:1] and head[0] in _CLASS_KEYS else function_name(items)
        if head[:1] == ["namespace"] or head[:2] == ["inline", "namespace"]:
            self.i += 1
            names = head[head.index("namespace") + 1:]
            name = "".join(names)
            qname = self.qual(name) if name and head[0] != "inline" else self.stack[-1].qname
            for k in range(len(name.split("::"))):
                part = "::".join(name.split("::")[:k + 1])
                if part:
                    q = self.qual(part)
                    self.into.scopes.setdefault(q, ScopeInfo("namespace"))
                    self.add(q, "namespace", lines[0] if lines else self.toks[self.i - 1][1])
            self.stack.append(_Scope("ns", qname, name))
            return [], []
        if head[:1] == ["extern"] and fn is None:
            self.i += 1
            self.stack.append(_Scope("ns", self.stack[-1].qname, ""))
            return [], []
        if "=" in head and not (fn and "operator" in head):
            lines.append(self.toks[self.i][1])
            pending.append(self.group())  # an initializer: `x = {...}`, a lambda
            return pending, lines
        if fn is not None:
            idx, _name = fn
            tail = items[idx + 1:]
            last = items[-1] if items else None
            if ":" in tail and isinstance(last, str) and (IDENT.fullmatch(last) or last == ">"):
                lines.append(self.toks[self.i][1])
                pending.append(self.group())  # a braced member initializer `b_{1}`
                return pending, lines
            self.function(items, lines, fn, inline=True, apart=specialization)
            self.group()
            return [], []
        key = "enum" if "enum" in head else next((k for k in _CLASS_KEYS if k in head), None)
        if key is not None:
            self.open_class(items, lines, key)
            return [], []
        self.group()  # a block we do not look into
        return [], []

    def open_class(self, items: list[Item], lines: list[int], key: str) -> None:
        self.i += 1
        strs = [x if isinstance(x, str) else "" for x in items]
        after = strs[strs.index(key) + 1:]
        if key == "enum" and after[:1] in (["class"], ["struct"]):
            after = after[1:]
        bases: list[str] = []
        if ":" in after:
            cut = after.index(":")
            bases = split_bases(after[cut + 1:])
            after = after[:cut]
        if "<" in after:
            after = after[:after.index("<")]
        name: list[str] = []  # the trailing `a::b::C` of the head, after any macros
        for t in reversed([t for t in after if t and t != "final"]):
            if t == "::" or (IDENT.fullmatch(t) and (not name or name[0] == "::")):
                name.insert(0, t)
            else:
                break
        name = [p for p in name if p != "::"]
        simple = name[-1] if name else ""
        if len(name) > 1:
            qname = self.qual("::".join(name))
        elif simple:
            qname = self.qual(simple)
        else:
            qname = self.stack[-1].qname  # anonymous: its members belong to the outer scope
        kind = "enum" if key == "enum" else "class"
        if qname != self.stack[-1].qname:
            line = next((ln for x, ln in zip(items, lines) if x == simple), None)
            self.add(qname, key, line or (lines[0] if lines else self.toks[self.i - 1][1]))
            self.into.scopes[qname] = ScopeInfo("class", tuple(bases), (),
                                                self.stack[-1].qname)
        if kind == "enum":
            self.enumerators(qname, scoped="class" in strs or "struct" in strs)
            return
        self.stack.append(_Scope("class", qname, simple))

    def enumerators(self, qname: str, scoped: bool) -> None:
        expect = True
        depth = 0
        while self.i < len(self.toks):
            if self.expand():
                continue
            tok, line = self.toks[self.i]
            self.i += 1
            if tok in CLOSE:
                depth += 1
            elif tok in (")", "]"):
                depth -= 1
            elif tok == "}":
                if depth == 0:
                    return
                depth -= 1
            elif tok == "," and depth == 0:
                expect = True
            elif expect and IDENT.fullmatch(tok):
                expect = False
                if self.i < len(self.toks) and self.toks[self.i][0] == "(":
                    continue  # an X-macro expanding to enumerators we cannot see
                self.add(f"{qname}::{tok}", "enumerator", line)
                if not scoped:
                    self.add(self.qual(tok), "enumerator", line)

    # -- a `;`: a declaration ----------------------------------------------------------
    def statement(self, pending: list[Item], lines: list[int]) -> None:
        items, dropped = untemplate(drop_macro_calls(pending))
        lines = lines[len(pending) - len(items):]
        head = [x for x in items if isinstance(x, str)]
        if not head or head[0] == "friend" or "friend" in head[:3]:
            return
        line = lines[0] if lines else 0
        if head[0] == "using":
            self.using(head[1:], line)
            return
        if head[0] == "typedef":
            names = [t for t in head if IDENT.fullmatch(t)]
            if names:
                self.add(self.qual(names[-1]), "alias", line, target=spell(head[1:-1]),
                         context=self.stack[-1].qname)
            return
        if head[0] == "namespace" and "=" in head:
            k = head.index("=")
            self.add(self.qual("".join(head[1:k])), "alias", line,
                     target="".join(head[k + 1:]), context=self.stack[-1].qname)
            return
        fn = function_name(items)
        if fn is not None:
            self.function(items, lines, fn, inline=False)
            return
        key = next((k for k in _CLASS_KEYS if head[:1] == [k] or head[:2] == ["enum", k]), None)
        if key is not None and len(head) <= 4:  # a forward declaration `class X;`
            name = head[-1]
            if IDENT.fullmatch(name) and name not in _CLASS_KEYS:
                self.add(self.qual(name), "class", line, inline=False)
            return
        self.variable(items, lines)

    def using(self, rest: list[str], line: int) -> None:
        ctx = self.stack[-1].qname
        if rest[:1] == ["namespace"]:
            target = "".join(rest[1:])
            info = self.into.scopes.get(ctx, ScopeInfo("namespace"))
            self.into.scopes[ctx] = ScopeInfo(info.kind, info.bases,
                                              info.usings + (target,), info.context)
            return
        if "=" in rest:
            k = rest.index("=")
            self.add(self.qual("".join(rest[:k])), "alias", line,
                     target=spell(rest[k + 1:]), context=ctx)
            return
        target = "".join(t for t in rest if t != "typename")
        name = target.split("::")[-1]
        if name:
            self.add(self.qual(name), "alias", line, target=target, context=ctx)

    def function(self, items: list[Item], lines: list[int], fn: tuple[int, str],
                 inline: bool, apart: bool = False) -> None:
        idx, name = fn
        tail = [x for x in items[idx + 1:] if isinstance(x, str)]
        if "=" in tail:
            after = tail[tail.index("=") + 1:]
            inline = inline or after[:1] in (["default"], ["delete"], ["0"])
        before = [x for x in items[:idx] if isinstance(x, str)]
        scope = self.stack[-1]
        short = name.split("::")[-1]
        returns = [t for t in before if t not in _SPECIFIERS and t not in ("::", "~")
                   and t not in name.lstrip("~").split("::")]
        ctor = short in (scope.name, "~" + scope.name) or short.startswith(("~", "operator"))
        if not returns and not ctor and "::" not in name:
            return  # `MACRO(args);`: a macro call at statement level, not a declaration
        line = lines[min(idx, len(lines) - 1)] if lines else 0
        self.add(self.qual(name), "function", line, inline=inline or "constexpr" in before,
                 out_of_class=inline and ("::" in name or apart))

    def variable(self, items: list[Item], lines: list[int]) -> None:
        names: list[tuple[str, int]] = []
        for n, x in enumerate(items):
            if x == "=" or isinstance(x, Group) and x.open == "{":
                break
            if isinstance(x, str) and IDENT.fullmatch(x):
                names.append((x, n))
        if len(names) >= 2 and names[-1][0] not in _SPECIFIERS:
            name, n = names[-1]
            line = lines[min(n, len(lines) - 1)] if lines else 0
            self.add(self.qual(name), "variable", line)
