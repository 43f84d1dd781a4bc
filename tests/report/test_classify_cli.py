"""`pq classify` on real files and patch files."""

from __future__ import annotations

import json
from pathlib import Path

from gitrepo import pq, write

PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A U Thor <author@example.com>
Date: Tue, 14 Nov 2023 22:13:20 +0000
Subject: [PATCH] mixed

---
diff --git a/csrc/k.cu b/csrc/k.cu
--- a/csrc/k.cu
+++ b/csrc/k.cu
@@ -1,2 +1,2 @@
-  x = a + b;
+  x = a * b;
 ctx
@@ -10,2 +10,2 @@
 ctx
-  auto s = at::cuda::getCurrentCUDAStream();
+  auto s = phi::GetCurrentStream();
diff --git a/setup.py b/setup.py
--- a/setup.py
+++ b/setup.py
@@ -1 +1 @@
-a
+b
"""


def test_classify_files_and_a_patch_per_hunk(tmp_path: Path) -> None:
    write(tmp_path, "setup.py", "setup()\n")
    write(tmp_path, "csrc/ops.cc", "#include <torch/extension.h>\n")
    write(tmp_path, "docs/index.md", "# docs\n")
    write(tmp_path, "x.patch", PATCH)
    out = pq(tmp_path, "classify", "setup.py", "./csrc/ops.cc", "docs/index.md",
             "x.patch").output
    assert out.splitlines() == [
        "setup.py: build (build-file)",
        "csrc/ops.cc: cpp-compat (cpp-api-file)",
        "docs/index.md: python-glue (docs-only)",
        "x.patch: kernel (cuda-kernel-hunk)",
        "  csrc/k.cu @@ -1,2 +1,2 @@: kernel (cuda-kernel-hunk)",
        "  csrc/k.cu @@ -10,2 +10,2 @@: cpp-compat (cuda-api-hunk)",
        "  setup.py @@ -1,1 +1,1 @@: build (build-file)"]
    data = json.loads(pq(tmp_path, "classify", "x.patch", "--json").output)
    assert [h["layer"] for h in data["files"][0]["hunks"]] == ["kernel", "cpp-compat", "build"]
    assert "cuda-api-hunk" in data["rules"]


def test_classify_a_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "setup.py", "setup()\n")
    r = pq(tmp_path, "classify", "setup.py", "gone.py", ok=False)
    assert r.exit_code == 2
    assert r.output.splitlines() == [
        "pq: error: gone.py: no such file (give files of the working tree or patch files)"]
    (tmp_path / "pkg").mkdir()
    r = pq(tmp_path, "classify", "pkg/", ok=False)
    assert r.exit_code == 2
    assert r.output.splitlines() == [
        "pq: error: pkg/: a folder, not a file (name its files: `pq classify pkg/*`)"]
    r = pq(tmp_path, "classify", "", ok=False)  # an empty variable: not `pq classify /*`
    assert (r.exit_code, r.output.splitlines()) == (2, [
        "pq: error: an empty path names no file (give files of the working tree or patch "
        "files (an empty shell variable?))"])


def test_classify_names_files_as_the_repository_does_wherever_it_runs(tmp_path: Path) -> None:
    """From a subfolder: the same paths and layers as from the top (a docs/ file is no
    glue code, a patch's C++ file is read from the working tree's top)."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "docs/notes.txt", "notes\n")
    write(tmp_path, "csrc/k.cu", "__global__ void k() {}\n")
    write(tmp_path, "x.patch", PATCH)
    top = pq(tmp_path, "classify", "docs/notes.txt", "x.patch").output
    assert top.splitlines()[0] == "docs/notes.txt: python-glue (docs-only)"
    assert pq(tmp_path / "docs", "classify", "notes.txt", "../x.patch").output == top
    assert pq(tmp_path / "csrc", "classify", "../docs/notes.txt", "../x.patch").output == top
