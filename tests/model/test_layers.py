"""The layer classifier: each rule decides what it says, per hunk where content matters."""

from __future__ import annotations

from pq.model import diff, layers


def test_each_rule_by_path_and_content() -> None:
    d = layers.decide
    assert d("setup.py") == layers.Decision("build", "build-file")
    assert d("cmake/FindCUDA.cmake") == layers.Decision("build", "build-file")
    assert d("pyproject.toml") == layers.Decision("build", "build-file")
    assert d("csrc/ops.cc", b"#include <torch/extension.h>\nat::Tensor t;\n") == \
        layers.Decision("cpp-compat", "cpp-api-file")
    assert d("csrc/kernel/add.cc", b"float f(float x) { return x; }\n") == \
        layers.Decision("kernel", "cpp-compute")
    assert d("csrc/kernel/add.cc", b"", ["  at::Tensor y = x;"]) == \
        layers.Decision("cpp-compat", "cpp-api-hunk")
    assert d("csrc/bind.cpp", b"PYBIND11_MODULE(m, x) {}\n") == \
        layers.Decision("cpp-compat", "cpp-api-file")
    assert d("README.md") == layers.Decision(layers.DOCS, layers.DOCS_ONLY)
    assert d("docs/usage.txt") == layers.Decision(layers.DOCS, layers.DOCS_ONLY)
    assert d("pkg/runtime/stream.py") == layers.Decision("python-glue", "python-glue")
    assert d("tests/test_op.py") == layers.Decision("python-glue", "python-glue")
    assert set(layers.RULES) >= {"build-file", "cuda-api-hunk", "cuda-kernel-hunk",
                                 "cpp-api-hunk", "cpp-api-file", "cpp-compute",
                                 layers.DOCS_ONLY, "python-glue"}


def test_an_api_name_in_a_comment_is_no_api_use() -> None:
    """A comment naming at::ones (at the end of a line of kernel code, or above a function
    that only computes) uses no framework: the hunk and the file stay kernel; a string
    holding `//` does not hide the API call after it."""
    d = layers.decide
    assert d("csrc/cuda/k.cu", b"", ["  x[1] = 3;  // the value at::ones would give"]) == \
        layers.Decision("kernel", "cuda-kernel-hunk")
    assert d("csrc/cuda/k.cu", b"", ["  x[1] = 3;  /* at::ones */"]).layer == "kernel"
    assert d("csrc/add2.cc", b"// Same semantics as at::add, without any framework.\n"
             b"/* torch::add, also */\nint add2(int a, int b) {\n  return a + b + 1;\n}\n",
             ["  return a + b + 1;"]) == layers.Decision("kernel", "cpp-compute")
    assert d("csrc/add2.cc", b"", ['  log("http://x"); at::Tensor t;']) == \
        layers.Decision("cpp-compat", "cpp-api-hunk")
    assert d("csrc/x.cc", b'#include "ATen/ATen.h"\nint f();\n', ["  return 1;"]) == \
        layers.Decision("cpp-compat", "cpp-api-file")


def test_a_cuda_hunk_is_decided_by_its_changed_lines() -> None:
    # `changed`: the hunk's removed and added lines, without their `-`/`+`.
    swap = ["  auto s = at::cuda::getCurrentCUDAStream();",
            "  auto s = phi::GetCurrentStream();", "  // the compat stream"]
    compute = ["  x[i] = a[i] + b[i];", "  x[i] = a[i] * b[i];"]
    assert layers.decide("csrc/k.cu", b"", swap) == layers.Decision("cpp-compat",
                                                                    "cuda-api-hunk")
    assert layers.decide("csrc/k.cuh", b"", compute) == layers.Decision("kernel",
                                                                        "cuda-kernel-hunk")
    assert layers.decide("csrc/k.cu", b"", swap + compute).layer == "kernel"
    assert layers.decide("csrc/k.cu").layer == "kernel"  # no hunk: a kernel source
    # A call over two lines (its message apart), or a block's closing lines, is still one
    # API call: plumbing, as on one line; a `(` in the message counts for nothing.
    check = ["  TORCH_CHECK(x.is_contiguous(),", '              "x must be contiguous (");']
    assert layers.decide("csrc/k.cu", b"", check).rule == "cuda-api-hunk"
    assert layers.decide("csrc/k.cu", b"", [*check, "  return out;", "}"]).rule == \
        "cuda-api-hunk"
    assert layers.decide("csrc/k.cu", b"", [*check, *compute]).layer == "kernel"
    assert layers.decide("csrc/k.cu", b"", ["}", "  return out;"]).layer == "kernel"
    assert layers.decide("csrc/k.cu", b"", ["  launch(x,", "         y);"]).layer == "kernel"
    # ... but device code inside or after an unclosed call is code: a statement, a block.
    for hunk in (["  TORCH_CHECK(x.is_cuda(),", "  PD_CHECK(x.is_gpu(),", *compute],
                 ["  TORCH_CHECK(x.numel() > 0,", "  float v = a[i] * 2.f;"],
                 ["  at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {",
                  "    y[i] = __expf(x[i]);"]):
        assert layers.decide("csrc/k.cu", b"", hunk).layer == "kernel", hunk
    assert layers.decide("csrc/k.cu", b"", ["  TORCH_CHECK(c == '(',", '      "bad");']
                         ).rule == "cuda-api-hunk"  # a `(` in a character is no call


def test_classify_hunks_and_the_patch_layer() -> None:
    text = (b"diff --git a/csrc/k.cu b/csrc/k.cu\n--- a/csrc/k.cu\n+++ b/csrc/k.cu\n"
            b"@@ -1,2 +1,2 @@\n-  x = a + b;\n+  x = a * b;\n ctx\n"
            b"@@ -10,2 +10,2 @@\n ctx\n-  at::Tensor t;\n+  paddle::Tensor t;\n"
            b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
            b"@@ -1 +1 @@\n-a\n+b\n")
    asked: list[str] = []

    def content(f: diff.FileDiff) -> bytes:
        asked.append(f.path)
        return b""

    hunks = layers.classify_hunks(diff.parse(text), content)
    assert [(h.path, h.hunk, h.header, h.layer, h.rule) for h in hunks] == [
        ("csrc/k.cu", 0, "@@ -1,2 +1,2 @@", "kernel", "cuda-kernel-hunk"),
        ("csrc/k.cu", 1, "@@ -10,2 +10,2 @@", "cpp-compat", "cuda-api-hunk"),
        ("README.md", 0, "@@ -1,1 +1,1 @@", layers.DOCS, layers.DOCS_ONLY)]
    assert asked == []  # only C/C++ sources' content is read
    assert layers.patch_layer(hunks) == layers.Decision("kernel", "cuda-kernel-hunk")
    assert layers.patch_layer(hunks[1:]) == layers.Decision("cpp-compat", "cuda-api-hunk")
    assert layers.patch_layer(hunks[2:]) == layers.Decision("python-glue", layers.DOCS_ONLY)


def test_the_signatures_lint_uses_keep_their_answers() -> None:
    assert layers.classify_path("csrc/k.cu", b"", ["  at::Tensor t;"]) == "cpp-compat"
    assert layers.classify_path("csrc/k.cu", b"", ["  x = 1;"]) == "kernel"
    assert layers.classify_path("README.md") == layers.DOCS
    assert layers.explain([("README.md", b"", None)]) == ("python-glue", layers.DOCS_ONLY)
    assert layers.explain([("README.md", b"", None), ("setup.py", b"", None)]) == (
        "build", "build-file")
