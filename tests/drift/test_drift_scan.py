"""pq.drift.scan on real repositories with a small explicit compat surface (a data table):
new framework API with file, line, upstream commit and status; what is not new or not built
is left out; stale copies with upstream's diff; files touched on both sides; old spellings."""

from __future__ import annotations

from pathlib import Path

import pytest
from driftrepo import (
    COPY,
    COPY_ORIGIN,
    GUARD_CC,
    OLD_SPELLING,
    ORIGIN_TEXT,
    TableSurface,
    fork_with_series,
    plant,
    upstream_commit,
)
from gitrepo import commit_all, git, write
from hypothesis import given, settings
from hypothesis import strategies as st

from pq.compat.coverage import Status
from pq.drift import ahead, extract, index, scan
from pq.drift.scan import DriftReport, Item
from pq.errors import PqError
from pq.git.repo import Git
from pq.queue.files import read_worktree


def run(fork: Path, old: str, new: str = "upstream/main", table: bool = True) -> DriftReport:
    with Git.open(fork) as g:
        loaded = index.Loaded(TableSurface() if table else None, "table" if table else "none")
        return scan.drift(g, g.resolve(old), g.resolve(new), read_worktree(g), loaded)


def find(report: DriftReport, name: str) -> Item:
    found = [i for i in report.items if i.name == name]
    assert len(found) == 1, [i.name for i in report.items]
    return found[0]


def test_new_cxx_api_is_reported_with_file_line_commit_and_status(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    guard = plant(fork, "csrc/guard.cc", GUARD_CC, "at::cuda::CUDAGuard", "use a guard")
    report = run(fork, old)
    table = TableSurface()
    item = find(report, "at::cuda::CUDAGuard")
    assert (item.file, item.line, item.commit) == (guard.file, guard.line, guard.commit)
    assert item.status == table.cxx("at::cuda::CUDAGuard").status
    ptr = find(report, "const_data_ptr")
    assert ptr.line == GUARD_CC.splitlines().index(
        next(ln for ln in GUARD_CC.splitlines() if "const_data_ptr" in ln)) + 1
    assert ptr.status == Status.NOT_EXPORTED and ptr.status.breaks
    script = find(report, "torch/script.h")
    assert script.kind == "header" and script.status == Status.HEADER_MISSING
    assert find(report, "c10/cuda/CUDAGuard.h").status == Status.COVERED
    # a std::vector's size() is no tensor method
    assert "size" not in {i.name for i in report.items}
    # what will break comes first
    ranks = [i.status.rank for i in report.items]
    assert ranks == sorted(ranks) and report.items[0].status.breaks
    assert report.breaking == sum(1 for i in report.items if i.status.breaks) >= 2
    assert report.risky


def test_only_new_names_in_built_files_count(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    # documentation and vendored code are not built; a line moved within a commit is not new
    upstream_commit(fork, {"third_party/lib/x.cc": "at::Tensor vendored();\n",
                           "docs/api.md": "Call `torch.cuda.Stream()`.\n",
                           "csrc/ops.cc": "#include <torch/extension.h>\n\n"
                                          "int f() { return 1; }\n"}, "vendor, docs")
    moved_from = "int f() { return 1; }\n\n#include <torch/extension.h>\n"
    upstream_commit(fork, {"csrc/ops.cc": moved_from}, "move the include")
    py = plant(fork, "pkg/streams.py",
               "import torch\nimport torch._dynamo\n\n# torch.nope in a comment\n"
               "msg = 'torch.fake in a string'\n"
               "s = torch.cuda.Stream()\nt = torch.testing.assert_close\n",
               "torch.testing", "streams")
    report = run(fork, old)
    files = {i.file for i in report.items}
    assert files == {py.file}
    names = {i.name: i for i in report.items}
    assert set(names) == {"torch._dynamo", "torch.cuda.Stream", "torch.testing.assert_close"}
    assert names["torch.testing.assert_close"].status == Status.MISSING
    assert names["torch.testing.assert_close"].line == py.line
    # the first of two commits adding a name in the same file is the one reported
    second = upstream_commit(fork, {"pkg/streams.py": "import torch\nimport torch._dynamo\n\n"
                                    "s = torch.cuda.Stream()\nu = torch.cuda.Stream()\n"},
                             "again")
    again = find(run(fork, old), "torch.cuda.Stream")
    assert again.commit == py.commit != second


def test_names_in_comments_and_docstrings_over_several_lines_do_not_count(
        tmp_path: Path) -> None:
    """A multi-line docstring or `/* */` comment was read one line at a time: its names
    were reported as new API that will break."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {
        "pkg/doc.py": 'def helper():\n    """Compare like\n    torch.testing.assert_close '
                      'does.\n    """\n    return torch.cuda.Stream()\n',
        "csrc/doc.cc": "/*\n * x.const_data_ptr<float>() and at::cuda::CUDAGuard\n */\n"
                       "int g() { return 0; } /* at::cuda::CUDAGuard\n */ at::Tensor h();\n"},
        "comments")
    names = {i.name for i in run(fork, old).items}
    assert names == {"torch.cuda.Stream", "at::Tensor"}, names
    # A hunk that starts inside a docstring (its opener above, unchanged): the closing
    # quotes, alone on their line, open nothing, and the code after them counts.
    body = "".join(f"    line {n} of a long docstring\n" for n in range(20))
    upstream_commit(fork, {"pkg/long.py": f'def g():\n    """Start.\n{body}    """\n'
                           "    return 1\n"}, "long docstring")
    upstream_commit(fork, {"pkg/long.py": f'def g():\n    """Start.\n{body}'
                           '    and one more line.\n        """\n'
                           "    return torch.special.new_op(1)\n"}, "new op")
    assert "torch.special.new_op" in {i.name for i in run(fork, old).items}


def test_a_parenthesised_import_and_global_qualification_are_read(tmp_path: Path) -> None:
    """`from torch.cuda import (` over several lines, and `::at::x`: their names were
    not seen (one line at a time; `::` before `at` read as another namespace's)."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {
        "pkg/graphs.py": "from torch.cuda import (\n    CUDAGraph,\n    memory_stats,  # ok\n"
                         ")\n",
        "csrc/ev.cc": "void f() { auto e = ::at::cuda::CUDAEvent(); ns::at::Other o; }\n"},
        "graphs")
    names = {i.name for i in run(fork, old).items}
    assert {"torch.cuda.CUDAGraph", "torch.cuda.memory_stats", "at::cuda::CUDAEvent"} <= names
    assert "at::Other" not in names


def test_a_name_added_inside_an_import_block_the_hunk_does_not_show_is_read(
        tmp_path: Path) -> None:
    """The range is read with -U0: a hunk adding `    load_inline,` inside an existing
    `from torch.utils.cpp_extension import (` block never shows the `from` line, and the
    name was missed. Names moved inside a block, and lists that are no torch import, are
    not new API."""
    fork = fork_with_series(tmp_path)
    block = ("import os\nfrom torch.utils.cpp_extension import (  # build helpers\n"
             "    BuildExtension,\n\n    CUDAExtension as CE,\n)\n"
             "from other.lib import (\n    thing,\n)\nNAMES = [\n    'a',\n    b,\n]\n")
    upstream_commit(fork, {"pkg/ext.py": block}, "ext")
    old = git(fork, "rev-parse", "upstream/main")
    grown = (block.replace("    CUDAExtension as CE,\n", "    CUDAExtension as CE,\n"
                           "    load_inline, include_paths\n")
             .replace("    thing,\n", "    thing,\n    other_thing,\n")
             .replace("    b,\n", "    b,\n    torchlike,\n"))
    sha = upstream_commit(fork, {"pkg/ext.py": grown}, "more build helpers")
    items = {i.name: i for i in run(fork, old).items}
    assert set(items) == {"torch.utils.cpp_extension.load_inline",
                          "torch.utils.cpp_extension.include_paths"}
    assert (items["torch.utils.cpp_extension.load_inline"].line, items[
        "torch.utils.cpp_extension.load_inline"].commit) == (6, sha)
    # The same names moved inside the block (one hunk takes them out, another puts them
    # back) are no new API; a name taken out alone is none either.
    old = git(fork, "rev-parse", "upstream/main")
    moved = grown.replace("    BuildExtension,\n", "    load_inline, include_paths\n"
                          "    BuildExtension,\n", 1).replace(
        "    CUDAExtension as CE,\n    load_inline, include_paths\n",
        "    CUDAExtension as CE,\n")
    upstream_commit(fork, {"pkg/ext.py": moved}, "sort the names")
    assert run(fork, old).items == ()


@pytest.mark.parametrize(("before", "added"), [
    ("    BuildExtension,\n", "    # jit\n    load_inline,\n"),  # a comment first
    ("    BuildExtension,\n", "\n    load_inline,\n"),  # a blank line first
])
@pytest.mark.parametrize("above", ["import os\n", "import os\n\x0c\n"])  # a form feed
def test_a_name_added_to_an_import_block_after_a_comment_or_a_blank_line_is_read(
        tmp_path: Path, before: str, added: str, above: str) -> None:
    """The hunk's first line is a comment or a blank line, or a form feed above the block
    (which str.splitlines, not git, reads as a line break) shifted the lines read."""
    fork = fork_with_series(tmp_path)
    block = above + "from torch.utils.cpp_extension import (\n" + before + ")\n"
    upstream_commit(fork, {"pkg/ext.py": block}, "ext")
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"pkg/ext.py": block.replace(before, before + added)}, "more")
    assert [i.name for i in run(fork, old).items] == ["torch.utils.cpp_extension.load_inline"]


def test_without_a_surface_every_status_is_unknown(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    plant(fork, "csrc/guard.cc", GUARD_CC, "CUDAGuard", "use a guard")
    report = run(fork, old, table=False)
    assert report.items and {i.status for i in report.items} == {Status.UNKNOWN}
    assert report.breaking == 0 and report.surface == "none"
    # methods only from torch's Tensor API list without a surface
    assert "const_data_ptr" in {i.name for i in report.items}


def test_stale_copy_comes_with_upstreams_diff_of_the_origin(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    text = (fork / "series.yaml").read_text().replace(
        "summary: Paddle copy of the op test\n",
        f"summary: Paddle copy of the op test\n    copies: {{{COPY}: {COPY_ORIGIN}}}\n")
    (fork / "series.yaml").write_text(text)
    old = git(fork, "rev-parse", "upstream/main")
    assert run(fork, old).stale == ()
    changed = upstream_commit(fork, {COPY_ORIGIN: ORIGIN_TEXT + "\n\ndef test_two():\n"
                                     "    assert True\n"}, "another test")
    report = run(fork, old)
    [stale] = report.stale
    assert (stale.copy, stale.origin, stale.commits) == (COPY, COPY_ORIGIN, (changed,))
    assert stale.patch == next(p.name for p in (fork / "patches").iterdir()
                               if "paddle-copy" in p.name)
    expected = git(fork, "diff", "--full-index", old, "upstream/main", "--", COPY_ORIGIN)
    assert stale.diff.strip() == expected.strip()
    assert report.risky
    # The origin moved since (and changed again): the diff to port is the move and the
    # change, as git shows it, not the whole file deleted.
    up = fork.parent / "upstream"
    git(up, "mv", COPY_ORIGIN, "tests/test_common.py")
    commit_all(up, "move the op test")
    moved = upstream_commit(fork, {"tests/test_common.py": ORIGIN_TEXT + "\n\ndef test_two():\n"
                                   "    assert True\n\n\ndef test_three():\n    pass\n"},
                            "a third test")
    [stale] = run(fork, old).stale
    assert "rename to tests/test_common.py" in stale.diff and "+def test_three():" in stale.diff
    assert "deleted file" not in stale.diff and "-import torch" not in stale.diff, stale.diff
    assert moved != changed


@pytest.mark.parametrize("move", ["file", "folder", "folder twice"])
def test_a_use_added_where_the_other_side_of_a_merge_moved_the_file_is_new(
        tmp_path: Path, move: str) -> None:
    """main moves pkg/a.py (or the whole folder), a merged branch adds a use in pkg/a.py
    (or a new pkg/b.py beside it, which git's directory rename moves along): the use is in
    NEW and in `git diff OLD NEW`, but the check at NEW looked for it under the old name
    and dropped it."""
    fork = fork_with_series(tmp_path)
    up = fork.parent / "upstream"
    upstream_commit(fork, {"pkg/a.py": "import torch\n\n\ndef f(x):\n    return x\n"},
                    "a module")
    old = git(fork, "rev-parse", "upstream/main")
    git(up, "checkout", "-q", "-b", "feature")
    use = "    return torch.special.brand_new_op(x)\n"
    if move == "file":
        write(up, "pkg/a.py", "import torch\n\n\ndef f(x):\n" + use)
    else:
        write(up, "pkg/b.py", "import torch\n\n\ndef g(x):\n" + use)
    commit_all(up, "feature: a new op")
    git(up, "checkout", "-q", "main")
    git(up, "mv", "pkg/a.py" if move == "file" else "pkg", "pkg/core.py" if move == "file"
        else "lib")
    commit_all(up, "move")
    if move == "folder twice":  # followed from one rename to the next
        git(up, "mv", "lib", "src")
        commit_all(up, "move again")
    git(up, "-c", "merge.directoryRenames=true", "merge", "-q", "--no-edit", "feature")
    git(fork, "fetch", "-q", "upstream")
    assert "+" + use in git(fork, "diff", old, "upstream/main") + "\n"
    assert "torch.special.brand_new_op" in {i.name for i in run(fork, old).items}


def test_a_use_in_a_file_deleted_again_is_not_new_where_its_folder_moved(
        tmp_path: Path) -> None:
    """A file added with a use, deleted again, while its folder's other file moved: it was
    taken for one moved along (a directory rename git makes only at a merge), and the use
    of a file already using it there was reported as new."""
    fork = fork_with_series(tmp_path)
    up = fork.parent / "upstream"
    upstream_commit(fork, {"x/a.py": "import torch\n\n\ndef f():\n    return 1\n",
                           "w/c.py": "import torch\n\n\ndef g():\n"
                                     "    return torch.special.brand_new_op(2)\n"}, "base")
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"x/c.py": "import torch\n\n\ndef h():\n"
                                     "    return torch.special.brand_new_op(1)\n"}, "add")
    git(up, "rm", "-q", "x/c.py")
    commit_all(up, "delete it again")
    (up / "y").mkdir()
    git(up, "mv", "x/a.py", "y/a.py")
    git(up, "mv", "w/c.py", "y/c.py")
    commit_all(up, "move into y")
    git(fork, "fetch", "-q", "upstream")
    assert "torch.special.brand_new_op" not in {i.name for i in run(fork, old).items}


def test_files_touched_by_upstream_and_a_patch_are_listed_by_layer(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    sha = upstream_commit(fork, {"setup.py": "from torch.utils import cpp_extension  # v2\n"
                                 "\n\n\n\nsetup(name='x')\n", "pkg/other.py": "x = 1\n"},
                          "touch setup.py")
    report = run(fork, old)
    [touched] = report.touched
    assert touched.file == "setup.py" and touched.commits == (sha,)
    with Git.open(fork) as g:
        queue = read_worktree(g)
    [entry] = [e for e in queue.series.patches if "setup.py" in queue.files[e.name].decode()]
    assert touched.patches == (entry.name,) and touched.layer == entry.layer


def test_old_spellings_in_patches_are_reported(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    report = run(fork, old)
    [hit] = report.renames
    copy = (fork / COPY).read_text().splitlines()
    assert hit.file == COPY and OLD_SPELLING in copy[hit.line - 1]
    assert hit.new == "paddle.enable_compat"
    assert report.items == () and report.commits == 0 and report.risky


def test_a_merge_counts_and_its_own_lines_are_scanned(tmp_path: Path) -> None:
    """A clean merge adds nothing of its own; a conflict's resolution that brings in new API
    is reported at the merge (git log --remerge-diff); the range counts every commit as
    `git rev-list --count` does."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    up = fork.parent / "upstream"
    base = "int a = 1;\nint b = 2;\n"
    upstream_commit(fork, {"csrc/merged.cc": base}, "a file both sides edit")
    git(up, "switch", "-q", "-c", "side")
    upstream_commit(fork, {"csrc/merged.cc": base.replace("1", "10"),
                           "csrc/side.cc": "#include <c10/cuda/CUDAGuard.h>\n"}, "side edit")
    git(up, "switch", "-q", "main")
    upstream_commit(fork, {"csrc/merged.cc": base.replace("1", "100")}, "main edit")
    git(up, "merge", "-q", "side", check=False)  # conflicts in csrc/merged.cc
    (up / "csrc/merged.cc").write_text("#include <torch/script.h>\nint a = 1000;\nint b = 2;\n")
    git(up, "add", "csrc/merged.cc")
    git(up, "commit", "-q", "--no-edit")
    merge = git(up, "rev-parse", "HEAD")
    git(fork, "fetch", "-q", "upstream")
    report = run(fork, old)
    assert report.commits == int(git(fork, "rev-list", "--count", f"{old}..upstream/main")) == 4
    script = find(report, "torch/script.h")
    assert (script.file, script.line, script.commit) == ("csrc/merged.cc", 1, merge)
    assert find(report, "c10/cuda/CUDAGuard.h").commit != merge  # the side commit's, not the merge's


def test_a_clean_merge_is_not_named_for_what_its_sides_changed(tmp_path: Path) -> None:
    """Main edits setup.py (which a patch touches), a side branch only the README; their
    clean merge changes nothing of its own, so setup.py names main's commit alone."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    up = fork.parent / "upstream"
    git(up, "switch", "-q", "-c", "side")
    upstream_commit(fork, {"README.md": "more\n"}, "side: readme")
    git(up, "switch", "-q", "main")
    edit = upstream_commit(fork, {"setup.py": "from torch.utils import cpp_extension\n\n\n"
                                              "\n\nsetup(name='y')\n"}, "main: setup")
    git(up, "merge", "-q", "--no-ff", "--no-edit", "side")
    git(fork, "fetch", "-q", "upstream")
    report = run(fork, old)
    assert [(t.file, t.commits) for t in report.touched] == [("setup.py", (edit,))]


def test_a_use_the_range_adds_and_takes_back_is_not_new(tmp_path: Path) -> None:
    """A file deleted and added back as it was, a use added and reverted: NEW has OLD's
    files, and each was reported as new (breaking) API. A use added in one commit and kept
    is still named at that commit."""
    fork = fork_with_series(tmp_path)
    up = fork.parent / "upstream"
    text = "import torch\nfrom torch.testing import assert_close\n"
    upstream_commit(fork, {"pkg/m.py": text}, "m")
    old = git(fork, "rev-parse", "upstream/main")
    git(up, "rm", "-q", "pkg/m.py")
    git(up, "commit", "-q", "-m", "delete m")
    upstream_commit(fork, {"pkg/m.py": text}, "add m back")
    assert run(fork, old).items == ()
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"pkg/m.py": text + "y = torch.testing.make_tensor\n"}, "a use")
    git(up, "revert", "--no-edit", "HEAD")
    git(fork, "fetch", "-q", "upstream")
    assert run(fork, old).items == ()
    kept = upstream_commit(fork, {"pkg/m.py": text + "z = torch.special.erfcx\n"}, "kept")
    upstream_commit(fork, {"README.md": "later\n"}, "later")
    item = find(run(fork, old), "torch.special.erfcx")
    assert (item.file, item.line, item.commit) == ("pkg/m.py", 3, kept)


def test_a_use_in_a_file_a_later_commit_renames_is_new(tmp_path: Path) -> None:
    """The use is added to src/a.py, which a later commit of the range renames: NEW's
    src/a.py is gone, and the range's own check dropped the use; it is looked for in the
    file the rename made."""
    fork = fork_with_series(tmp_path)
    up = fork.parent / "upstream"
    text = "import torch\n\n\ndef f():\n    return 1\n\n"
    upstream_commit(fork, {"pkg/a.py": text}, "a")
    old = git(fork, "rev-parse", "upstream/main")
    added = upstream_commit(fork, {"pkg/a.py": text + "y = torch.special.erfcx\n"}, "a use")
    git(up, "mv", "pkg/a.py", "pkg/b.py")
    git(up, "commit", "-q", "-m", "rename")
    git(fork, "fetch", "-q", "upstream")
    item = find(run(fork, old), "torch.special.erfcx")
    assert (item.file, item.commit) == ("pkg/a.py", added)


def test_a_name_added_to_a_crlf_import_block_inside_a_function_is_read(
        tmp_path: Path) -> None:
    """With CRLF line ends the hunk's section (its header a `def` line, no `torch` in it)
    was never read: a line of bare names ended in `\\r`."""
    fork = fork_with_series(tmp_path)
    block = ("def load_ext():\r\n    from torch.utils.cpp_extension import (\r\n"
             "        load,\r\n    )\r\n    return load\r\n")
    upstream_commit(fork, {"pkg/ext.py": block}, "ext")
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"pkg/ext.py": block.replace("load,\r\n", "load,\r\n"
                                                       "        load_inline,\r\n")}, "more")
    assert [i.name for i in run(fork, old).items] == ["torch.utils.cpp_extension.load_inline"]


def test_a_scan_ahead_in_a_thread_is_the_scan_and_hands_back_its_error(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    plant(fork, "csrc/guard.cc", GUARD_CC, "CUDAGuard guard", "guard")
    loaded = index.Loaded(TableSurface(), "table")
    with Git.open(fork) as g:
        new = g.resolve("upstream/main")
        started = ahead.scan_ahead(g, old, new, lambda: loaded)
        direct = scan.scan_range(g, old, new, loaded)
        assert started.result() == direct and direct.items  # the planted uses, found twice
        assert scan.report(g, started.result(), read_worktree(g)) == run(fork, old)
        failing = ahead.scan_ahead(g, "0" * 40, new, lambda: loaded)
        with pytest.raises(PqError):
            failing.result()


def test_a_report_without_measuring_looks_paddle_up_only_when_a_surface_is_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pq.compat.probe as probe
    from pq import compat

    looked: list[str | None] = []

    def find_paddle(python: str | None = None, timeout: float = 60.0) -> probe.Installed:
        looked.append(python)
        return probe.Installed("9.9.9", tmp_path, "9.9.9-0123456789abcdef", "python")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(probe, "find_paddle", find_paddle)
    # no cache folder, then an empty one: nothing measured, Paddle is not looked up
    assert "is not measured yet" in index.load(measure=False).note
    compat.cache_dir().mkdir(parents=True)
    assert "is not measured yet" in index.load(measure=False).note and looked == []
    # another build's surface is cached: this one's is looked up, and named
    (compat.cache_dir() / "1.0.0-fedcba9876543210.json").write_text("{}")
    note = index.load(measure=False).note
    assert looked == [None] and "Paddle 9.9.9 is not measured yet" in note


@pytest.mark.parametrize("line", [
    "import torch", "import torch.nn as nn", "from torch.utils import cpp_extension",
    "from torch import (nn, cuda)", "y = torch.ops.tinyop.scale_add(x)",
    "x = F(torch.cuda.is_available())", "z = x.view(3)", "import torchvision",
    "s = 'torch.cuda'  # torch.foo", "w = mytorch.cuda()", "TORCH = 1",
])
def test_a_python_line_without_torch_uses_nothing(line: str) -> None:
    """The drift scan skips the hunks of Python sections that never name torch: sound
    only while every Python use names it."""
    from pq.drift import extract

    found = extract.uses("python", line)
    assert not found or "torch" in line
    assert extract.may_use("python", line.encode()) == ("torch" in line)
    assert extract.may_use("cxx", b"x.view(3);")  # a C++ method call can be any name


_TOKENS = ["torch", "import", "from", " ", ".", "(", ")", ",", "#", "'", '"', "nn", "cuda",
           "as", "ops", "x", "=", "TORCH", "_", "\\", "*"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=14).map("".join))
def test_every_python_use_names_torch(line: str) -> None:
    from pq.drift import extract

    assert not extract.uses("python", line) or "torch" in line


def test_a_docstring_whose_quotes_stand_alone_under_a_def_is_no_code() -> None:
    """PEP 257's layout: the opening quotes alone on the line under `def ...:` open the
    docstring (elsewhere a lone triple quote may close one the hunk starts inside of)."""
    from pq.drift import extract

    lines = ["def setup():", '    """', "    Never call torch.cuda.sync() here;", '    """',
             "    return torch.cuda.Stream()"]
    code = extract.code_of("python", lines)
    assert "torch.cuda.sync" not in "".join(code) and "torch.cuda.Stream" in code[4]
    # a lone triple quote under plain code still closes what the hunk starts inside of
    inside = ["    more docstring text torch.x.y", '    """', "    return torch.cuda.Event()"]
    assert "torch.cuda.Event" in extract.code_of("python", inside)[2]


@pytest.mark.parametrize(("lang", "line", "names"), [
    # A method call with a nested template argument, or spelled with `template`.
    ("cxx", "auto p = x.const_data_ptr<c10::complex<float>>();",
     ["c10::complex", "const_data_ptr"]),
    ("cxx", "auto p = x.template mutable_data_ptr<T>();", ["mutable_data_ptr"]),
    ("cxx", "auto p = x->template const_data_ptr<T>();", ["const_data_ptr"]),
    # A `//` or a `"` inside a string or a character is no comment and no string's end.
    ("cxx", 'TORCH_CHECK(ok, "see https://x.org/a"); auto y = at::special_erfcx(x);',
     ["TORCH_CHECK", "at::special_erfcx"]),
    ("cxx", "if (q == '\"') { auto z = at::special_erfcx(x); puts(\"q\"); }",
     ["at::special_erfcx"]),
    ("cxx", 'm.def("scale(Tensor x) -> Tensor"); // see http://x', ["scale"]),
    # A digit separator opens no character (`1'024 ... 65'536` hid the call between).
    ("cxx", "int a = 1'024; auto p = t.const_data_ptr<float>(); int b = 65'536;",
     ["const_data_ptr"]),
    ("cxx", "auto m = 0xFF'FF; char c = u8'x'; wchar_t w = L'y'; at::z(); char d = ')';",
     ["at::z"]),
    # Every module of an `import` statement (only the first was read).
    ("python", "import torch.cuda, torch.testing", ["torch.cuda", "torch.testing"]),
    ("python", "import torch.xpu as X, os, torch.mtia  # two", ["torch.xpu", "torch.mtia"]),
    ("python", "import torch; y = 1", []),
    # What follows the `;` is read too (`import os; y = torch.x()` named nothing).
    ("python", "import os; y = torch.cuda.foo_new()", ["torch.cuda.foo_new"]),
    ("python", "import torch.fft; z = torch.linalg.bar_new()  # c",
     ["torch.fft", "torch.linalg.bar_new"]),
    # ... after a `from` import too: the line read as an attribute chain gave the module.
    ("python", "from torch.utils.cpp_extension import load_inline; EXT = None",
     ["torch.utils.cpp_extension.load_inline"]),
    ("python", "from torch import a as b, c; d = torch.e.f()", ["torch.a", "torch.c",
                                                               "torch.e.f"]),
    ("python", 'from x import y; s = "torch.z; q"', []),
    ("python", "x = 1; from torch.linalg import nosuch2", ["torch.linalg.nosuch2"]),
    # Python: a ` #` in a string opens no comment; a `#` without a space before it does.
    ("python", 'print("step #1", torch.special.erfcx(x))', ["torch.special.erfcx"]),
    ("python", "y = torch.ones(1)# torch.b", ["torch.ones"]),
    ("python", "x = 1\t# torch.a", []),
])
def test_a_line_names_what_its_code_uses(lang: str, line: str, names: list[str]) -> None:
    assert [u.name for u in extract.uses(lang, line)] == names


@pytest.mark.parametrize("prefix", ["r", "f", "b", "rb", "Rb", "fR", "u"])
def test_a_prefixed_triple_quoted_string_is_no_code(prefix: str) -> None:
    """`HELP = r\"\"\"` opens a string as `HELP = \"\"\"` does: its lines were read as code."""
    lines = [f'HELP = {prefix}"""', "Compare with torch.testing.assert_close(a, b).", '"""',
             "y = torch.special.erfcx(x)"]
    assert [[u.name for u in extract.uses("python", code)]
            for code in extract.code_of("python", lines)] == [[], [], [], ["torch.special.erfcx"]]


@pytest.mark.parametrize(("lines", "names"), [
    # A raw string over several lines (a pybind11 docstring) is text, not code.
    (['m.def("f", &f, R"pbdoc(', "    Like at::rawdoc_name, see c10::rawdoc_other.",
      ')pbdoc"); auto y = at::after_doc(x);'], [[], [], ["at::after_doc"]]),
    (['auto d = u8R"(at::inside', ')"; auto z = at::x();'], [[], ["at::x"]]),
    # A schema wrapped onto the next line, or split into literals over lines.
    (["m.def(", '    "wrapped(Tensor x, int y=1) -> Tensor");'],
     [["wrapped(Tensor x, int y=1) -> Tensor"], []]),
    (['m.def("concat(Tensor x, "', '      "int y=1) -> Tensor",', "      &impl);"],
     [["concat(Tensor x, int y=1) -> Tensor"], [], []]),
    # A pybind11 def wrapped the same way names no schema.
    (["m.def(", '    "add_one", &add_one, "doc");'], [[], []]),
])
def test_lines_name_what_their_code_uses(lines: list[str], names: list[list[str]]) -> None:
    """Text that spans lines in C++: raw strings (whose names were read as code) and
    wrapped op schemas (which were missed)."""
    assert [[u.detail or u.name for u in extract.uses("cxx", code)]
            for code in extract.code_of("cxx", lines)] == names


@pytest.mark.parametrize(("lines", "names"), [
    # An attribute chain split over lines inside brackets, or after a backslash.
    (["y = (torch", "     .special", "     .erfcx(1.0))"],
     [["torch.special.erfcx"], [], []]),
    (["g = torch.cuda.\\", "    nvtx", "h = 1"], [["torch.cuda.nvtx"], [], []]),
    # A module named on its own, then other code: no chain.
    (["x = torch", "foo.bar()"], [[], []]),
    (["import torch", "import os"], [[], []]),
    (["s = 'torch'", "    .cuda"], [[], []]),
])
def test_python_lines_name_what_their_code_uses(lines: list[str],
                                                names: list[list[str]]) -> None:
    assert [[u.name for u in extract.uses("python", code)]
            for code in extract.code_of("python", lines)] == names
