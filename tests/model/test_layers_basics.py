"""pq.model.layers: the layer guess for paths and contents, and its priority order."""

from __future__ import annotations

import pytest

from pq.model import layers


@pytest.mark.parametrize("path,content,added,layer", [
    ("setup.py", b"", None, "build"),
    ("CMakeLists.txt", b"", None, "build"),
    ("cmake/FindTorch.cmake", b"", None, "build"),
    ("tools/x.bzl", b"", None, "build"),
    ("csrc/op.cu", b"", None, "kernel"),
    ("csrc/op.cu", b"", ["  out[i] = a[i] * 2;"], "kernel"),
    ("csrc/op.cu", b"", ['#include <ATen/ATen.h>', "  auto t = at::empty({1});",
                         "// plumbing"], "cpp-compat"),
    ("csrc/op.cu", b"", ["", "// only a comment"], "kernel"),
    ("csrc/op.cc", b"int f() { return 1; }\n", None, "kernel"),
    ("csrc/op.cc", b"torch::Tensor f();\n", None, "cpp-compat"),
    ("csrc/op.h", b"TORCH_CHECK(x);\n", None, "cpp-compat"),
    ("docs/guide.txt", b"", None, layers.DOCS),
    ("README", b"", None, layers.DOCS),
    ("pkg/notes.rst", b"", None, layers.DOCS),
    ("pkg/__init__.py", b"", None, "python-glue"),
    # code named like a document is code; a document named so is one
    ("tinyop/changes.py", b"", None, "python-glue"),
    ("csrc/license.cc", b"int f() { return 1; }\n", None, "kernel"),
    ("CHANGES.txt", b"", None, layers.DOCS),
    ("LICENSE", b"", None, layers.DOCS),
    ("LICENSE.BSD", b"", None, layers.DOCS),
    ("third_party/README.zh-CN.txt", b"", None, layers.DOCS),
    ("NOTICE.third-party", b"", None, layers.DOCS),
    # a pointer's target written is device code, a block comment's line is not
    ("csrc/op.cu", b"", ["#include <ATen/ATen.h>", "  *out = 1.f;"], "kernel"),
    ("csrc/op.cu", b"", ["#include <ATen/ATen.h>", " * the output, in place", " */"],
     "cpp-compat"),
])
def test_classify_path(path: str, content: bytes, added: list[str] | None, layer: str) -> None:
    assert layers.classify_path(path, content, added) == layer


def test_priority_kernel_over_cpp_over_build_over_glue() -> None:
    glue = ("pkg/a.py", b"")
    build = ("setup.py", b"")
    cpp = ("csrc/a.cc", b"at::Tensor t;")
    kernel = ("csrc/a.cu", b"")
    assert layers.classify([glue, build, cpp, kernel]) == "kernel"
    assert layers.classify([glue, build, cpp]) == "cpp-compat"
    assert layers.classify([glue, build]) == "build"
    assert layers.classify([glue]) == "python-glue"


def test_documentation_follows_the_rest_or_is_docs_only() -> None:
    assert layers.explain([("README.md", b"", None), ("setup.py", b"", None)]) == (
        "build", "build-file")
    assert layers.explain([("README.md", b"", None), ("docs/x.md", b"", None)]) == (
        "python-glue", layers.DOCS_ONLY)
    assert layers.explain([]) == ("python-glue", "python-glue")
