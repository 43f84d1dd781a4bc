"""`pq split <patch> --by-layer` on real repositories: the parts, their metadata, and the
final tree, which must not change by one byte."""

from __future__ import annotations

import json
from pathlib import Path

from gitrepo import commit_all, git, make_fork, make_upstream, pq, write

from pq.model import series as series_mod

CU = "".join(f"// line {i}\n" for i in range(1, 21))
KERNEL = ("__global__ void k(float* x) {\n  x[0] = 1.0f;\n}\n" + CU
          + "void launch(at::Tensor t) {\n  auto s = at::cuda::getCurrentCUDAStream();\n}\n")
UPSTREAM = {
    "setup.py": "from setuptools import setup\n\nsetup(name='x')\n",
    "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x\n",
    "csrc/k.cu": KERNEL,
    "README.md": "upstream\n",
    "data.bin": "\0\1\2",
}


def _fork(tmp: Path) -> Path:
    fork = make_fork(tmp, make_upstream(tmp / "upstream", dict(UPSTREAM)))
    write(fork, "setup.py", "import paddle\nfrom setuptools import setup\n\nsetup(name='x')\n")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x + 0\n")
    write(fork, "csrc/k.cu", KERNEL.replace("x[0] = 1.0f;", "x[0] = 2.0f;").replace(
        "at::cuda::getCurrentCUDAStream()", "phi::GetCurrentStream()"))
    write(fork, "README.md", "upstream\nruns on paddle\n")
    write(fork, "data.bin", "\0\1\3\r\n")
    commit_all(fork, "mixed: everything at once")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x + 1\n")
    commit_all(fork, "glue: after the mixed one")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork


def _series(fork: Path) -> series_mod.Series:
    return series_mod.loads((fork / "series.yaml").read_bytes())


def test_split_by_layer_keeps_the_tree_and_the_metadata(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    before = git(fork, "rev-parse", "HEAD~1^{tree}")  # the last patch commit's
    text = (fork / "series.yaml").read_text().replace(
        "summary: 'mixed: everything at once'",
        "summary: 'mixed: everything at once'\n    reviewer: kim")
    write(fork, "series.yaml", text)
    commit_all(fork, "pq: reviewer")
    name = "0001-mixed-everything-at-once.patch"
    assert _series(fork).entry(name).layer == "kernel"  # type: ignore[union-attr]

    out = pq(fork, "split", f"patches/{name}", "--by-layer", "--json").output
    parts = json.loads(out)["parts"]
    assert json.loads(out)["notes"] == []  # no workaround block to speak of
    # Parts in the order of their first hunk (git orders files by path); the declared
    # layer's part keeps the name.
    assert [(p["name"], p["layer"], p["files"]) for p in parts] == [
        (name, "kernel", ["README.md", "csrc/k.cu"]),
        ("0001-mixed-everything-at-once-cpp-compat.patch", "cpp-compat", ["csrc/k.cu"]),
        ("0001-mixed-everything-at-once-python-glue.patch", "python-glue",
         ["data.bin", "pkg/__init__.py"]),
        ("0001-mixed-everything-at-once-build.patch", "build", ["setup.py"])]
    # The CUDA file is split per hunk: the kernel edit and the stream swap, one hunk each;
    # the documentation hunk goes with the part that keeps the name.
    assert [p["hunks"] for p in parts] == [2, 1, 2, 1]
    # The last patch commit's tree is byte for byte what it was; one bookkeeping commit on it.
    assert git(fork, "rev-parse", "HEAD~1^{tree}") == before
    s = _series(fork)
    assert [e.name for e in s.patches][-1] == "0002-glue-after-the-mixed-one.patch"
    assert s.entry(name).raw.get("reviewer") == "kim"  # type: ignore[union-attr]
    build = s.entry(parts[3]["name"])
    assert build is not None and build.summary == "mixed: everything at once (build part)"
    cpp = (fork / "patches" / parts[1]["name"]).read_text()
    assert "+  auto s = phi::GetCurrentStream();" in cpp and "2.0f" not in cpp
    assert "Subject: [PATCH] mixed: everything at once (cpp-compat part)" in cpp
    assert git(fork, "status", "--porcelain") == ""
    # The new series applies and reproduces the same tree.
    pq(fork, "apply", "--branch", "again")
    assert git(fork, "rev-parse", "HEAD~1^{tree}") == before
    assert git(fork, "rev-list", "--count", "upstream/main..HEAD") == "6"


def test_split_is_undone_by_pq_undo(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    head = git(fork, "rev-parse", "HEAD")
    queue = (fork / "series.yaml").read_bytes()
    pq(fork, "split", "0001-mixed-everything-at-once.patch", "--by-layer")
    assert git(fork, "rev-parse", "HEAD") != head
    pq(fork, "undo")
    assert git(fork, "rev-parse", "HEAD") == head
    assert (fork / "series.yaml").read_bytes() == queue
    assert not list((fork / "patches").glob("*-build.patch"))


def test_split_refuses_a_patch_of_one_layer(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    head = git(fork, "rev-parse", "HEAD")
    r = pq(fork, "split", "0002-glue-after-the-mixed-one.patch", "--by-layer", ok=False)
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "pq: error: patches/0002-glue-after-the-mixed-one.patch has one layer (python-glue); "
        "there is nothing to split (`pq classify` shows each hunk's layer)"]
    assert git(fork, "rev-parse", "HEAD") == head
    r = pq(fork, "split", "nope.patch", "--by-layer", ok=False)
    assert r.exit_code == 2 and "nope.patch is not a patch of the series" in r.output
    r = pq(fork, "split", "0002-glue-after-the-mixed-one.patch", ok=False)
    assert r.exit_code == 2 and "--by-layer" in r.output


def test_split_refuses_a_branch_that_differs_from_the_series(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    write(fork, "pkg/extra.py", "x = 1\n")
    commit_all(fork, "glue: not exported")
    head = git(fork, "rev-parse", "HEAD")
    r = pq(fork, "split", "0001-mixed-everything-at-once.patch", "--by-layer", ok=False)
    assert r.exit_code == 2 and "run `pq export` first" in r.output
    assert git(fork, "rev-parse", "HEAD") == head


def test_a_file_become_a_link_goes_whole_into_one_part(tmp_path: Path) -> None:
    """A type change is two diff sections of one path: they were keyed alike, so the split
    left an empty part and put the other layer's deletion into the kernel part."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream", {
        "csrc/ops.cc": "#include <torch/extension.h>\nint f() { return 1; }\n",
        "csrc/k.cc": "int k() { return 2; }\n", "pkg/__init__.py": "X = 1\n"}))
    (fork / "csrc/ops.cc").unlink()
    (fork / "csrc/ops.cc").symlink_to("k.cc")
    write(fork, "pkg/__init__.py", "X = 2\n")
    commit_all(fork, "mixed: ops.cc becomes a link")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    tree = git(fork, "rev-parse", "HEAD~1^{tree}")
    out = pq(fork, "split", "patches/0001-mixed-ops-cc-becomes-a-link.patch", "--by-layer",
             "--json").output
    parts = json.loads(out)["parts"]
    assert [(p["layer"], p["files"]) for p in parts] == [
        ("kernel", ["csrc/ops.cc"]), ("python-glue", ["pkg/__init__.py"])], parts
    assert git(fork, "rev-parse", "HEAD~1^{tree}") == tree
    for rev in ("HEAD~1", "HEAD~2"):  # no part is an empty commit
        assert git(fork, "diff-tree", "--no-commit-id", "--name-only", "-r", rev) != ""


def test_a_folder_become_a_link_goes_into_one_part_with_its_files_removal(
        tmp_path: Path) -> None:
    """A vendored folder replaced by a symlink of its name: the link (python-glue by its
    path) and the removal of the folder's kernel files cannot be parts apart, as no tree
    holds both; the kernel part keeps the patch's other kernel change."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream", {
        "third_party/cutlass/gemm.h": "int gemm();\n", "csrc/k.cc": "int k() { return 2; }\n",
        "pkg/__init__.py": "X = 1\n"}))
    git(fork, "rm", "-rq", "third_party/cutlass")
    (fork / "third_party").mkdir()
    (fork / "third_party/cutlass").symlink_to("/opt/cutlass")
    write(fork, "csrc/k.cc", "int k() { return 3; }\n")
    commit_all(fork, "mixed: system cutlass")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    tree = git(fork, "rev-parse", "HEAD~1^{tree}")
    parts = json.loads(pq(fork, "split", "patches/0001-mixed-system-cutlass.patch",
                          "--by-layer", "--json").output)["parts"]
    assert [(p["layer"], p["files"]) for p in parts] == [
        ("kernel", ["csrc/k.cc"]),
        ("python-glue", ["third_party/cutlass", "third_party/cutlass/gemm.h"])], parts
    assert git(fork, "rev-parse", "HEAD~1^{tree}") == tree


def test_a_file_become_a_folder_of_two_layers_splits_without_losing_the_tree(
        tmp_path: Path) -> None:
    """The file `vend` becomes a folder with a kernel and a python-glue file: whichever part
    first adds under vend/ removes the file too (it was an internal error)."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream", {
        "vend": "vendored\n", "csrc/k.cc": "int k() { return 2; }\n",
        "csrc/ops.cc": "#include <torch/extension.h>\nint f() { return 1; }\n"}))
    git(fork, "rm", "-q", "vend")
    write(fork, "vend/a.cc", "int g() { return 2; }\n")
    write(fork, "vend/z.py", "import paddle\n")
    write(fork, "csrc/k.cc", "int k() { return 3; }\n")
    write(fork, "csrc/ops.cc", "#include <paddle/extension.h>\nint f() { return 1; }\n")
    commit_all(fork, "mixed: vendor it")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    tree = git(fork, "rev-parse", "HEAD~1^{tree}")
    parts = json.loads(pq(fork, "split", "patches/0001-mixed-vendor-it.patch", "--by-layer",
                          "--json").output)["parts"]
    assert len(parts) >= 2
    assert git(fork, "rev-parse", "HEAD~1^{tree}") == tree
    assert pq(fork, "check").exit_code == 0


def test_a_part_of_a_patch_with_a_long_name_is_named_within_the_limit() -> None:
    """`<stem>-<layer>.patch` longer than 200 characters: the stem is cut (the `-2`, `-3`
    suffixes never shortened it, and the naming loop did not end)."""
    from pq.queue.split import part_name

    name = part_name("a" * 190, "python-glue", set())
    assert len(name) == 200 and name.endswith("-python-glue-2.patch")
    assert series_mod.NAME_RE.match(name)
    assert part_name("a" * 190, "python-glue", {name}).endswith("-python-glue-3.patch")


def test_a_split_of_a_workaround_says_where_its_block_stays(tmp_path: Path) -> None:
    """The block stays with the part that keeps the name (docs/layers.md); a part that
    carries the workaround's code then fails the audit (WA014) with no word from split."""
    fork = _fork(tmp_path)
    name = "0001-mixed-everything-at-once.patch"
    text = (fork / "series.yaml").read_text().replace(
        "summary: 'mixed: everything at once'", "summary: 'mixed: everything at once'\n"
        "    workaround:\n      kind: compat-gap\n      covers: [pkg/__init__.py]\n"
        "      reason: r\n      remove_when: paddle >= 9.9")
    write(fork, "series.yaml", text)
    commit_all(fork, "pq: a workaround")
    pq(fork, "export", "--commit")  # the patch file's headers say it too
    data = json.loads(pq(fork, "split", name, "--by-layer", "--json").output)
    [note] = data["notes"]
    assert note.startswith(f"the workaround block stays with {name}; ") and \
        "0001-mixed-everything-at-once-python-glue.patch" in note, note
    pq(fork, "undo")
    assert "  note: the workaround block stays with" in pq(fork, "split", name,
                                                           "--by-layer").output
