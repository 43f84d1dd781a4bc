"""The layer classifier: a first guess at which of the four layers a new patch belongs to.

The guess looks at paths and, for C++ sources, at whether the added lines use the
torch C++ API. It is only a default: an entry in series.yaml keeps the layer its user set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

BUILD_NAMES = {"setup.py", "setup.cfg", "pyproject.toml", "cmakelists.txt", "makefile",
               "meson.build", "build.sh", "build.py", "requirements.txt", "manifest.in"}
BUILD_SUFFIXES = (".cmake", ".bzl", ".bazel", ".mk")
KERNEL_SUFFIXES = (".cu", ".cuh", ".hip", ".cl", ".ptx")
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
COMPAT_API = re.compile(rb"\b(?:at|c10|torch)::|TORCH_LIBRARY|TORCH_CHECK|PYBIND11_MODULE|"
                        rb"pybind11|torch/extension\.h|ATen/")

# Most specific first: when one patch spans layers, the one a reviewer must look at wins.
PRIORITY = ("kernel", "cpp-compat", "build", "python-glue")


def classify_path(path: str, content: bytes = b"") -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES) or path.startswith(
            ("cmake/", "build_tools/", "scripts/build")):
        return "build"
    if name.endswith(KERNEL_SUFFIXES):
        return "kernel"
    if name.endswith(CPP_SUFFIXES):
        return "cpp-compat" if COMPAT_API.search(content) else "kernel"
    return "python-glue"


def classify(files: Iterable[tuple[str, bytes]]) -> str:
    """The layer of a patch touching `files` ((path, post-image content) pairs)."""
    found = {classify_path(p, c) for p, c in files}
    for layer in PRIORITY:
        if layer in found:
            return layer
    return "python-glue"
