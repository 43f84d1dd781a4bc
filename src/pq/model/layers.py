"""The layer classifier: a first guess at which of the four layers a new patch belongs to.

The guess looks at paths and at the patch's content: a C++ source is `cpp-compat` when it
uses the torch C++ API, a GPU kernel source (`.cu`, `.cuh`, ...) is `cpp-compat` when every
line the patch adds to it is C++-API plumbing (ATen/c10/torch or Paddle calls, includes,
comments) and `kernel` otherwise. Documentation goes with the layer of the rest of the
patch; a patch that changes only documentation is `python-glue` by the rule `docs-only`.
It is only a default: an entry in series.yaml keeps the layer its user set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

BUILD_NAMES = {"setup.py", "setup.cfg", "pyproject.toml", "cmakelists.txt", "makefile",
               "meson.build", "build.sh", "build.py", "requirements.txt", "manifest.in"}
BUILD_SUFFIXES = (".cmake", ".bzl", ".bazel", ".mk")
KERNEL_SUFFIXES = (".cu", ".cuh", ".hip", ".cl", ".ptx")
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
DOC_SUFFIXES = (".md", ".rst", ".adoc")
DOC_NAMES = ("readme", "changelog", "changes", "license", "notice", "authors", "contributing")
COMPAT_API = re.compile(rb"\b(?:at|c10|torch)::|TORCH_LIBRARY|TORCH_CHECK|PYBIND11_MODULE|"
                        rb"pybind11|torch/extension\.h|ATen/")
# A line of a kernel source that only talks to a C++ API (either framework's), not kernel code.
_API_LINE = re.compile(r"\b(?:at|c10|torch|phi|paddle|common)::|\bATen/|\bc10/|\btorch/|"
                       r"\bpaddle/|\bphi/|TORCH_CHECK|PD_CHECK|PADDLE_ENFORCE|^\s*#\s*include\b")

DOCS = "docs"  # what classify_path says of documentation; never a layer of its own
DOCS_ONLY = "docs-only"  # the named rule for a patch that changes only documentation

# Most specific first: when one patch spans layers, the one a reviewer must look at wins.
PRIORITY = ("kernel", "cpp-compat", "build", "python-glue")


def is_doc(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return (path.startswith(("docs/", "doc/")) or name.endswith(DOC_SUFFIXES)
            or name.split(".", 1)[0] in DOC_NAMES)


def _api_only(added: Sequence[str]) -> bool:
    """Every added line that is code uses a C++ API (or is an include): plumbing, no kernel."""
    code = [t for t in added if t.strip() and not t.strip().startswith(("//", "/*", "*"))]
    return bool(code) and all(_API_LINE.search(t) for t in code)


def classify_path(path: str, content: bytes = b"", added: Sequence[str] | None = None) -> str:
    """The layer of one file, or DOCS. `content` is the post-image (C++ sources); `added`
    the lines the patch adds to it (kernel sources: all API plumbing -> cpp-compat)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES) or path.startswith(
            ("cmake/", "build_tools/", "scripts/build")):
        return "build"
    if name.endswith(KERNEL_SUFFIXES):
        return "cpp-compat" if added is not None and _api_only(added) else "kernel"
    if name.endswith(CPP_SUFFIXES):
        return "cpp-compat" if COMPAT_API.search(content) else "kernel"
    if is_doc(path):
        return DOCS
    return "python-glue"


def explain(files: Iterable[tuple[str, bytes, Sequence[str] | None]]) -> tuple[str, str]:
    """(layer, the rule that chose it) for a patch touching `files` ((path, post-image
    content, added lines) triples). Documentation is left out unless it is all there is."""
    found = {classify_path(p, c, a) for p, c, a in files}
    for layer in PRIORITY:
        if layer in found:
            return layer, "highest-priority file"
    if DOCS in found:
        return "python-glue", DOCS_ONLY
    return "python-glue", "default"


def classify(files: Iterable[tuple[str, bytes]]) -> str:
    """The layer of a patch touching `files` ((path, post-image content) pairs)."""
    return explain((p, c, None) for p, c in files)[0]
