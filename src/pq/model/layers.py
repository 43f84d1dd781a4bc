"""The layer classifier: which of the four layers a file, a hunk or a patch belongs to, and
the named rule that decided.

Rules (ids are stable; `RULES` holds their one-line descriptions):

- `build-file`: setup.py, setup.cfg, pyproject.toml, CMake, Makefiles, build scripts -> build;
- `cuda-api-hunk` / `cuda-kernel-hunk`: a GPU kernel source (`.cu`, `.cuh`, ...) is decided
  per hunk, by content: a hunk whose changed code lines all talk to a C++ framework API
  (ATen/c10/torch or Paddle/phi calls, `#include`s; comments ignored, at least one such
  line) is plumbing -> cpp-compat, any other hunk (comments alone included) -> kernel;
- `cpp-api-hunk` / `cpp-api-file` / `cpp-compute`: a C/C++ source is cpp-compat when the
  hunk's changed lines, or the file itself, use at::/c10::/torch::, TORCH_LIBRARY or
  pybind11; C++ that only computes is kernel;
- `docs-only`: documentation (`*.md`, `*.rst`, `docs/`, README/LICENSE/CHANGELOG) has no
  layer of its own: it goes with the layer of the rest of its patch, and a patch that
  changes only documentation is python-glue;
- `python-glue`: Python wrappers, runtime glue, tests, examples and anything else.

A patch takes the most specific layer among its hunks (kernel, cpp-compat, build,
python-glue). It is only a default: an entry in series.yaml keeps the layer its user set.
This module never runs git: callers hand it file contents.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from pq.model.diff import FileDiff, Hunk

BUILD_NAMES = {"setup.py", "setup.cfg", "pyproject.toml", "cmakelists.txt", "makefile",
               "meson.build", "build.sh", "build.py", "requirements.txt", "manifest.in"}
BUILD_SUFFIXES = (".cmake", ".bzl", ".bazel", ".mk")
KERNEL_SUFFIXES = (".cu", ".cuh", ".hip", ".cl", ".ptx")
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
_CODE_SUFFIXES = (*CPP_SUFFIXES, *KERNEL_SUFFIXES, *BUILD_SUFFIXES, ".py", ".pyi", ".pyx",
                  ".sh")
DOC_SUFFIXES = (".md", ".rst", ".adoc")
DOC_NAMES = ("readme", "changelog", "changes", "license", "notice", "authors", "contributing")
COMPAT_API = re.compile(rb"\b(?:at|c10|torch)::|TORCH_LIBRARY|TORCH_CHECK|PYBIND11_MODULE|"
                        rb"pybind11|<torch/|ATen/")
# A line of a kernel source that only talks to a C++ API (either framework's), not kernel code.
_API_LINE = re.compile(r"\b(?:at|c10|torch|phi|paddle|common)::|\bATen/|\bc10/|\btorch/|"
                       r"\bpaddle/|\bphi/|TORCH_CHECK|PD_CHECK|PADDLE_ENFORCE|^\s*#\s*include\b")

DOCS = "docs"  # what classify_path says of documentation; never a layer of its own
DOCS_ONLY = "docs-only"  # the named rule for documentation

# Most specific first: when one patch spans layers, the one a reviewer must look at wins.
PRIORITY = ("kernel", "cpp-compat", "build", "python-glue")

RULES = {
    "build-file": "setup.py, setup.cfg, pyproject.toml, CMake, Makefiles and build scripts "
                  "are build",
    "cuda-api-hunk": "a GPU kernel source hunk whose changed code lines all call a C++ "
                     "framework API (ATen/c10/torch, Paddle/phi) or are #includes is "
                     "cpp-compat",
    "cuda-kernel-hunk": "a GPU kernel source hunk that changes device code is kernel",
    "cpp-api-hunk": "C/C++ whose changed lines use at::/c10::/torch::, TORCH_LIBRARY or "
                    "pybind11 is cpp-compat",
    "cpp-api-file": "a hunk of a C/C++ file that uses at::/c10::/torch::, TORCH_LIBRARY or "
                    "pybind11 is cpp-compat",
    "cpp-compute": "C/C++ that uses no framework API (code that only computes) is kernel",
    DOCS_ONLY: "documentation goes with the layer of the rest of its patch; a patch that "
               "changes only documentation is python-glue",
    "python-glue": "Python wrappers, runtime glue, tests, examples and other files are "
                   "python-glue",
}


@dataclass(frozen=True)
class Decision:
    layer: str  # one of PRIORITY, or DOCS for documentation
    rule: str  # a key of RULES


@dataclass(frozen=True)
class HunkDecision:
    path: str
    hunk: int | None  # the hunk's index in its file (None: a file without hunks)
    header: str  # `@@ -a,b +c,d @@`, or '' for a file without hunks
    layer: str
    rule: str


def is_doc(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    # README, LICENSE.BSD, CHANGES.txt: a doc by its name; changes.py, license.cc are code.
    return (path.startswith(("docs/", "doc/")) or name.endswith(DOC_SUFFIXES)
            or (name.partition(".")[0] in DOC_NAMES and not name.endswith(_CODE_SUFFIXES)))


# A C/C++ comment (a string or character literal is matched first, and kept: `"http://"`).
_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?(?:\*/|$)',
                      re.S)


def _uncommented(text: str) -> str:
    return _COMMENT.sub(lambda m: m[0] if m[0][0] in "\"'" else " ", text)


def _code(lines: Iterable[str]) -> list[str]:
    """The lines that are code, without their comments: not blank, not a comment or a
    block comment's ` * ` line (`*out = 1.f;`, a pointer's target written, is code)."""
    return [_uncommented(t) for t in lines if (x := t.strip())
            and not x.startswith(("//", "/*", "*/"))
            and not (x == "*" or x.startswith(("* ", "*\t", "**")))]


_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
# A line with no code of its own: braces and parentheses closing a block or a call, or
# the `return out;` of a host wrapper.
_NEUTRAL = re.compile(r"^\s*(?:[{}();,]\s*)+$|^\s*return\s+[A-Za-z_]\w*\s*;\s*$")


def _api_only(changed: Sequence[str]) -> bool:
    """Every changed line that is code uses a C++ API (or is an include), continues a
    call such a line opened (`TORCH_CHECK(x.is_cuda(),` then its message), or only closes
    a block; at least one uses the API: plumbing."""
    api, depth = False, 0
    for line in _code(changed):
        bare = _LITERAL.sub("", line)
        after = max(depth, 0) + bare.count("(") - bare.count(")")
        if _API_LINE.search(line):
            api = True
        elif depth <= 0 and not _NEUTRAL.match(line):
            return False
        elif depth > 0 and (after > 0 and ";" in bare or "{" in bare):
            return False  # a statement or a block of its own inside the call: code
        depth = after
    return api


def decide(path: str, content: bytes = b"", changed: Sequence[str] | None = None) -> Decision:
    """The layer of one file (or of one hunk of it, `changed` being the hunk's added and
    removed lines) and the rule that decided. `content` is the file's post-image (C/C++)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES) or path.startswith(
            ("cmake/", "build_tools/", "scripts/build")):
        return Decision("build", "build-file")
    if name.endswith(KERNEL_SUFFIXES):
        if changed is not None and _api_only(changed):
            return Decision("cpp-compat", "cuda-api-hunk")
        return Decision("kernel", "cuda-kernel-hunk")
    if name.endswith(CPP_SUFFIXES):
        if changed is not None and any(COMPAT_API.search(t.encode("utf-8", "replace"))
                                       for t in _code(changed)):
            return Decision("cpp-compat", "cpp-api-hunk")
        if COMPAT_API.search(content) and COMPAT_API.search(_uncommented(
                content.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")):
            return Decision("cpp-compat", "cpp-api-file")
        return Decision("kernel", "cpp-compute")
    if is_doc(path):
        return Decision(DOCS, DOCS_ONLY)
    return Decision("python-glue", "python-glue")


def classify_path(path: str, content: bytes = b"", added: Sequence[str] | None = None) -> str:
    """The layer of one file, or DOCS. `content` is the post-image (C++ sources); `added`
    the lines the patch adds to it (kernel sources: all API plumbing -> cpp-compat)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(CPP_SUFFIXES) and not name.endswith(KERNEL_SUFFIXES):
        added = None  # C/C++ by its post-image alone, as this function always did
    return decide(path, content, added).layer


def patch_layer(decisions: Iterable[Decision | HunkDecision]) -> Decision:
    """A patch's layer: the most specific of its hunks' (documentation only when it is
    all there is, by `docs-only`), with the rule of the hunk that decided."""
    found = list(decisions)
    for layer in PRIORITY:
        for d in found:
            if d.layer == layer:
                return Decision(d.layer, d.rule)
    if any(d.layer == DOCS for d in found):
        return Decision("python-glue", DOCS_ONLY)
    return Decision("python-glue", "python-glue")


def file_layer(decisions: Iterable[HunkDecision]) -> str:
    """One file's layer from its hunks' decisions: the most specific, or DOCS when it is
    documentation only."""
    found = {d.layer for d in decisions}
    return next((layer for layer in PRIORITY if layer in found),
                DOCS if DOCS in found else "python-glue")


def explain(files: Iterable[tuple[str, bytes, Sequence[str] | None]]) -> tuple[str, str]:
    """(layer, the rule that chose it) for a patch touching `files` ((path, post-image
    content, added lines) triples). Documentation is left out unless it is all there is."""
    d = patch_layer(decide(p, c, a) for p, c, a in files)
    return d.layer, d.rule


def classify(files: Iterable[tuple[str, bytes]]) -> str:
    """The layer of a patch touching `files` ((path, post-image content) pairs)."""
    return explain((p, c, None) for p, c in files)[0]


def hunk_header(h: Hunk) -> str:
    return f"@@ -{h.old_start},{h.old_count} +{h.new_start},{h.new_count} @@"


def classify_hunks(files: Sequence[FileDiff], content: Callable[[FileDiff], bytes]
                   ) -> list[HunkDecision]:
    """Every hunk of a parsed diff with its layer and rule (a file without hunks, binary or
    a pure rename or mode change, is decided by its path). `content(f)` gives a C/C++
    file's post-image (its pre-image when deleted); it is asked for those files only."""
    out = []
    for f in files:
        name = f.path.lower()
        cpp = name.endswith(CPP_SUFFIXES) and not name.endswith(KERNEL_SUFFIXES)
        body = content(f) if cpp else b""
        if not f.hunks:
            d = decide(f.path, body, [])
            out.append(HunkDecision(f.path, None, "", d.layer, d.rule))
        for i, h in enumerate(f.hunks):
            d = decide(f.path, body, [ln.text for ln in h.lines if ln.kind != " "])
            out.append(HunkDecision(f.path, i, hunk_header(h), d.layer, d.rule))
    # A type change (a file become a link) is two sections of one path that go together:
    # one layer for both, the most specific, as the hunks of one file get when split.
    sections = Counter(f.path for f in files)
    for path in (p for p, n in sections.items() if n > 1):
        mine = [d for d in out if d.path == path]
        if len({d.layer for d in mine}) == 1:
            continue
        one = patch_layer(mine)
        out = [replace(d, layer=one.layer, rule=one.rule) if d.path == path else d
               for d in out]
    return out


def classify_file(f: FileDiff, content: bytes) -> list[HunkDecision]:
    """`classify_hunks` of one file whose (C/C++) post-image is `content`."""
    return classify_hunks([f], lambda _f: content)


def replacements(files: Sequence[FileDiff]) -> list[tuple[str, str]]:
    """(path, path) of each two files of a diff (by `FileDiff.path`) that no tree holds one
    without the other: a file added where a folder's file goes away, or a folder's file
    added where a file goes away (a vendored folder that becomes a symlink, say)."""
    pairs = []
    for g in files:
        if g.new is None:
            continue
        for f in files:
            if f is not g and f.old is not None and f.new != f.old and (
                    f.old.startswith(g.new + "/") or g.new.startswith(f.old + "/")):
                pairs.append((g.path, f.path))
    return pairs


def together(files: Sequence[FileDiff], decisions: Sequence[HunkDecision]
             ) -> list[HunkDecision]:
    """`decisions`, where a file replaces another (`replacements`) the one going away
    given the layer of the one that comes: a patch split by layer keeps the two in one
    part, as no tree in between could hold both."""
    layer_of: dict[str, str] = {}
    for d in decisions:
        layer_of.setdefault(d.path, d.layer)
    moved = {gone: layer_of[come] for come, gone in replacements(files) if come in layer_of}
    return [replace(d, layer=moved[d.path], rule=f"{d.rule}; replaced with its new file")
            if d.path in moved and d.layer != moved[d.path] else d for d in decisions]
