"""`pq import`: a merge-maintained fork becomes a layer-tagged series (issue 15)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from pq.git.repo import Git
from pq.model import diff as diffs
from pq.model import layers
from pq.queue import topics
from tests.gitrepo import commit_all, git, make_fork, make_upstream, pq, write

NON_UTF8 = "café".encode("latin-1") + b"\n"


def merge_upstream(fork: Path, message: str = "Merge upstream") -> None:
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "--no-edit", "-m", message, "upstream/main", check=False)


def built_then_merged(fork: Path,
                      setup: str = "from paddle.utils import cpp_extension\n\nsetup(name='x')\n"
                      ) -> None:
    """The fork's build commit (`setup` as setup.py), then upstream's next commit merged."""
    write(fork, "setup.py", setup)
    commit_all(fork, "Build against Paddle")
    up = fork.parent / "upstream"
    write(up, "README.md", "upstream v2\n")
    commit_all(up, "upstream: v2")
    merge_upstream(fork)


def grown_fork(tmp_path: Path) -> tuple[Path, Path]:
    """A fork grown the way real ones are: migration commits interleaved with merges from
    upstream (one conflict resolved inside the merge), a fork-only file, a deleted upstream
    file, a mode change, a binary file, a rename and non-UTF-8 text."""
    fork = make_fork(tmp_path)
    up = tmp_path / "upstream"
    write(up, "tools/run.sh", "echo run\n")
    write(up, "pkg/old.py", "OLD = 1\n")
    write(up, "pkg/legacy.py", "def legacy():\n    return 0\n")
    commit_all(up, "upstream: tools")
    merge_upstream(fork)
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\nsetup(name='x')\n")
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return at::k(); }\n")
    commit_all(fork, "Build and bind against Paddle")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    # TODO: paddle has no "
          "op yet\n    if hasattr(torch, 'op'):\n        return x\n    return x\n")
    write(fork, "pkg/paddle_only.py", "PADDLE = True\n")
    commit_all(fork, "Glue: route op through paddle")
    write(up, "pkg/util.py", "def helper():\n    return 3\n")
    write(up, "README.md", "upstream v2\n")
    commit_all(up, "upstream: helper 3")
    write(fork, "pkg/util.py", "def helper():\n    return 20\n")
    commit_all(fork, "Fork: helper 20")
    merge_upstream(fork)  # conflicts in pkg/util.py: resolved inside the merge
    write(fork, "pkg/util.py", "def helper():\n    return 30\n")
    git(fork, "add", "pkg/util.py")
    git(fork, "commit", "-q", "--no-edit")
    (fork / "pkg/old.py").unlink()
    (fork / "tools/run.sh").chmod(0o755)
    write(fork, "data/blob.bin", bytes(range(256)) * 4)
    git(fork, "mv", "pkg/legacy.py", "pkg/compat_legacy.py")
    write(fork, "pkg/latin.txt", NON_UTF8)
    commit_all(fork, "Fork-only: delete, chmod, binary, rename, latin-1")
    return fork, up


def tree(fork: Path, rev: str) -> dict[str, str]:
    out = {}
    for line in git(fork, "ls-tree", "-r", "--full-tree", rev).splitlines():
        meta, path = line.split("\t", 1)
        if path != "series.yaml" and not path.startswith("patches/"):
            out[path] = meta
    return out


def test_import_reproduces_the_tree_splits_by_layer_and_rebases(tmp_path: Path) -> None:
    fork, up = grown_fork(tmp_path)
    before = git(fork, "rev-parse", "HEAD")
    result = pq(fork, "import", "--upstream", "upstream/main", "--json")
    data = json.loads(result.output)
    assert data["mode"] == "topics" and data["branch"] == "paddle"
    assert data["base"] == git(fork, "rev-parse", "upstream/main")
    assert tree(fork, "HEAD") == tree(fork, before)  # byte for byte: same blob ids, modes
    assert git(fork, "rev-parse", "refs/pq/orig-head/paddle") == before
    assert git(fork, "status", "--porcelain") == ""
    with Git.open(fork) as g:  # no patch mixes layers
        for p in data["patches"]:
            text = (fork / "patches" / p["name"]).read_bytes()
            files = diffs.parse(text.split(b"\n---\n", 1)[1] if b"\n---\n" in text else text)
            got = {d.layer for d in layers.classify_hunks(
                files, lambda f: g.blob(f"HEAD:{f.path}"))} - {layers.DOCS}
            assert got <= {p["layer"]}, p
    assert {"build", "cpp-compat", "python-glue"} <= set(data["layers"])
    assert any(c["path"] == "pkg/__init__.py" for c in data["workaround_candidates"])
    assert "workaround:" in (fork / "series.yaml").read_text()
    pq(fork, "series")  # the series is valid and matches the branch
    # a later upstream commit: pq rebase works on the imported series right away
    write(up, "pkg/new_upstream.py", "X = 1\n")
    commit_all(up, "upstream: more")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "pkg/new_upstream.py").exists()
    assert (fork / "pkg/latin.txt").read_bytes() == NON_UTF8


def test_undo_restores_the_branch_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    fork, _up = grown_fork(tmp_path)
    before = git(fork, "rev-parse", "HEAD")
    dry = pq(fork, "import", "--upstream", "upstream/main", "--dry-run")
    assert "dry run: nothing written" in dry.output and "mode: topics" in dry.output
    assert git(fork, "rev-parse", "HEAD") == before
    assert not (fork / "series.yaml").exists() and not (fork / "patches").exists()
    pq(fork, "import", "--upstream", "upstream/main")
    assert git(fork, "rev-parse", "HEAD") != before
    pq(fork, "undo")
    assert git(fork, "rev-parse", "HEAD") == before
    assert not (fork / "series.yaml").exists()
    assert git(fork, "status", "--porcelain") == ""


def import_keeping_commits(fork: Path) -> dict[str, Any]:
    """`pq import --keep-commits --json` of the fork onto upstream/main: its report."""
    report: dict[str, Any] = json.loads(pq(fork, "import", "--upstream", "upstream/main",
                                           "--keep-commits", "--json").output)
    return report


def test_keep_commits_on_a_linear_fork_keeps_one_patch_per_commit(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "Build against Paddle")
    write(fork, "pkg/__init__.py", "import paddle\n\n\ndef op(x):\n    return x\n")
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\nsetup(name='y')\n")
    commit_all(fork, "Mixed commit")
    before = git(fork, "rev-parse", "HEAD")
    data = import_keeping_commits(fork)
    assert data["mode"] == "commits" and "replay" in data["reason"]
    assert [p["summary"] for p in data["patches"]] == ["Build against Paddle", "Mixed commit"]
    assert tree(fork, "HEAD") == tree(fork, before)


def test_keep_commits_keeps_empty_commits_and_counts_only_non_merges(tmp_path: Path) -> None:
    """An empty commit is a patch with no diff (as `pq init` keeps it); a merge of a side
    branch and one from upstream are not counted as commits of the fork's own."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "Build against Paddle")
    git(fork, "commit", "-q", "--allow-empty", "-m", "empty: a marker")
    git(fork, "checkout", "-q", "-b", "side")
    write(fork, "pkg/side.py", "x = 1\n")
    commit_all(fork, "side: add")
    git(fork, "checkout", "-q", "paddle")
    git(fork, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    before = git(fork, "rev-parse", "HEAD")
    data = import_keeping_commits(fork)
    assert data["mode"] == "commits", data["reason"]
    assert "kept the 3 non-merge commits" in data["reason"]
    assert [p["summary"] for p in data["patches"]] == ["Build against Paddle",
                                                       "empty: a marker", "side: add"]
    assert tree(fork, "HEAD") == tree(fork, before)
    # each patch names the fork commit whose message it keeps: on the branch, in its order
    own = git(fork, "rev-list", "--reverse", "--topo-order", "--no-merges",
              f"upstream/main..{before}")
    assert [p["kept_from"] for p in data["patches"]] == own.split()


LINES = "".join(f"v{i} = {i}\n" for i in range(20))


def test_keep_commits_replays_three_way_where_upstream_moved_the_context(
        tmp_path: Path) -> None:
    """A fork commit whose context upstream changed later (a nearby line, merged in
    cleanly) no longer applies as it is onto the base; merged three-way, as `git rebase`
    replays it, it does, and every commit is kept."""
    up = make_upstream(tmp_path / "upstream", {"pkg/ops.py": LINES, "README.md": "up\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/ops.py", LINES.replace("v10 = 10", "v10 = paddle_10"))
    commit_all(fork, "Glue: v10 through paddle")
    write(up, "pkg/ops.py", LINES.replace("v12 = 12", "v12 = 120"))
    commit_all(up, "upstream: v12")
    merge_upstream(fork)
    write(fork, "pkg/extra.py", "import paddle\n")
    commit_all(fork, "Glue: extra")
    before = git(fork, "rev-parse", "HEAD")
    data = import_keeping_commits(fork)
    assert data["mode"] == "commits", data["reason"]
    assert [p["summary"] for p in data["patches"]] == ["Glue: v10 through paddle",
                                                       "Glue: extra"]
    assert tree(fork, "HEAD") == tree(fork, before)
    assert "v12 = 120" in git(fork, "show", "HEAD~2:pkg/ops.py")  # on the base
    pq(fork, "series")


def test_keep_commits_leaves_out_a_commit_upstream_took(tmp_path: Path) -> None:
    """A fork commit upstream cherry-picked is in the base already: its replay changes
    nothing, so it is left out (as `git rebase` drops it) and the others are kept, each
    naming its own fork commit."""
    up = make_upstream(tmp_path / "upstream", {"pkg/ops.py": LINES, "README.md": "up\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/ops.py", LINES.replace("v3 = 3", "v3 = fixed"))
    commit_all(fork, "Fix v3")
    write(fork, "pkg/glue.py", "import paddle\n")
    commit_all(fork, "Glue: paddle")
    write(up, "pkg/ops.py", LINES.replace("v3 = 3", "v3 = fixed"))
    commit_all(up, "upstream: take the v3 fix")
    write(up, "README.md", "up 2\n")
    commit_all(up, "upstream: readme")
    merge_upstream(fork)
    before = git(fork, "rev-parse", "HEAD")
    data = import_keeping_commits(fork)
    assert data["mode"] == "commits", data["reason"]
    assert data["reason"].startswith("kept 1 of the 2 non-merge commits: ")
    assert ("; 1 whose change the base and the commits before it carry already is left out"
            in data["reason"])
    assert [p["summary"] for p in data["patches"]] == ["Glue: paddle"]
    glue = git(fork, "rev-list", "--no-merges", "-1", "--grep=Glue: paddle", before)
    assert [p["kept_from"] for p in data["patches"]] == [glue]
    assert tree(fork, "HEAD") == tree(fork, before)


def test_keep_commits_names_each_patch_after_a_commit_of_queue_files_only(
        tmp_path: Path) -> None:
    """A fork commit that changes only queue files (a notes file under patches/, added
    with other work and removed again) is no patch: the other patches still name their own
    fork commits (the import failed with an internal error)."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/f.py", "F = 1\n")
    write(fork, "patches/notes.txt", "notes\n")
    commit_all(fork, "Glue: f and notes")
    git(fork, "rm", "-q", "patches/notes.txt")
    git(fork, "commit", "-q", "-m", "drop the notes")
    write(fork, "pkg/g.py", "G = 1\n")
    commit_all(fork, "Glue: g")
    before = git(fork, "rev-parse", "HEAD")
    data = import_keeping_commits(fork)
    assert data["mode"] == "commits", data["reason"]
    # It said "kept the 3", over 2 patches.
    assert data["reason"].startswith("kept 2 of the 3 non-merge commits: they replay ")
    assert data["reason"].endswith("; 1 that changes only the series' own files "
                                   "(series.yaml, patches/) is no patch")
    own = git(fork, "rev-list", "--reverse", "--no-merges", f"upstream/main..{before}").split()
    assert [(p["summary"], p["kept_from"]) for p in data["patches"]] == [
        ("Glue: f and notes", own[0]), ("Glue: g", own[2])]
    assert tree(fork, "HEAD") == tree(fork, before)


def test_keep_commits_falls_back_when_a_merge_resolved_a_conflict(tmp_path: Path) -> None:
    fork, _up = grown_fork(tmp_path)
    out = pq(fork, "import", "--upstream", "upstream/main", "--keep-commits").output
    assert "mode: topics: --keep-commits:" in out and "regrouped by layer and topic" in out


def test_a_single_commit_topic_keeps_its_message(tmp_path: Path) -> None:
    fork, _up = grown_fork(tmp_path)
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--json").output)
    kept = {p["summary"] for p in data["patches"] if p["kept_from"]}
    assert "Glue: route op through paddle" in kept
    assert "Fork: helper 20" not in kept  # the merge changed pkg/util.py since


def test_a_message_is_not_kept_for_a_part_that_also_undoes_upstream(tmp_path: Path) -> None:
    """A `-s ours` merge kept the fork's file from upstream's change: the part's diff undoes
    that change too, so it does not take the fork commit's message, which says nothing of
    it (it did, hiding the revert under a reviewed-looking message)."""
    up = make_upstream(tmp_path / "upstream", {"pkg/ops.py": "f = 1\n\n\n\n\ng = 2\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/ops.py", "f = 11\n\n\n\n\ng = 2\n")
    commit_all(fork, "python-glue: f is 11")
    write(up, "pkg/ops.py", "f = 1\n\n\n\n\ng = 2222\n")
    commit_all(up, "upstream: g is 2222")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "-s", "ours", "--no-edit", "upstream/main")
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--json").output)
    assert [p["kept_from"] for p in data["patches"]] == [None]
    patch = next((fork / "patches").iterdir()).read_text()
    assert "-g = 2222" in patch and "Subject: [PATCH] python-glue: f is 11" not in patch


def test_a_part_only_merges_made_is_imported_the_same_at_any_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A part no fork commit touched (a `-s ours` merge kept csrc/k.cc from upstream's
    change) has no author of its own: it is the tip's committer, not the clock, so the same
    branch imported at two times gives the same patch files."""
    import shutil

    up = make_upstream(tmp_path / "upstream", {"csrc/k.cc": "int k() { return 1; }\n",
                                               "pkg/ops.py": "f = 1\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/ops.py", "f = 11\n")
    commit_all(fork, "python-glue: f is 11")
    write(up, "csrc/k.cc", "int k() { return 2; }\n")
    commit_all(up, "upstream: k is 2")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "-s", "ours", "--no-edit", "upstream/main")
    other = tmp_path / "other"
    shutil.copytree(fork, other, symlinks=True)
    outputs = []
    for where, when in ((fork, "1800000000 +0000"), (other, "1900000000 +0200")):
        monkeypatch.setenv("GIT_COMMITTER_DATE", when)
        pq(where, "import", "--upstream", "upstream/main")
        outputs.append({p.name: p.read_bytes() for p in (where / "patches").iterdir()})
        outputs[-1]["series.yaml"] = (where / "series.yaml").read_bytes()
    assert outputs[0] == outputs[1]
    assert any(b"return 1" in data for data in outputs[0].values())  # the merge-only part


def test_a_message_is_not_kept_for_a_commit_a_merge_undid_in_part(tmp_path: Path) -> None:
    """A fork commit changed cfg.py and __init__.py; a merge's resolution took upstream's
    __init__.py, so the migration keeps only its cfg.py change: the part does not take the
    commit's message, which tells of both."""
    up = make_upstream(tmp_path / "upstream", {"pkg/cfg.py": "a = 1\n",
                                               "pkg/__init__.py": "import torch\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/cfg.py", "a = 10\n")
    write(fork, "pkg/__init__.py", "import torch\ng = 1\n")
    commit_all(fork, "python-glue: a=10 in cfg and g=1 in __init__")
    write(up, "pkg/__init__.py", "import torch\nh = 2\n")
    commit_all(up, "upstream: h is 2")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "--no-edit", "upstream/main", check=False)
    git(fork, "checkout", "-q", "--theirs", "pkg/__init__.py")
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "--no-edit")
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--json").output)
    assert [p["kept_from"] for p in data["patches"]] == [None]
    patch = next((fork / "patches").iterdir()).read_text()
    assert "+a = 10" in patch and "+g = 1" not in patch
    assert "Subject: [PATCH] python-glue: a=10 in cfg and g=1" not in patch


def test_an_upstream_series_yaml_is_named_as_upstream_s_not_as_a_series(
        tmp_path: Path) -> None:
    """Upstream ships a series.yaml of its own: import says so (as for patches/), not
    "already has a series ... git rm it", advice that only led to the same refusal."""
    up = make_upstream(tmp_path / "upstream", {"series.yaml": "name: ci\n",
                                               "setup.py": "setup()\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\nsetup()\n")
    commit_all(fork, "build: paddle")
    refused = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "has its own files" in refused.output and "series.yaml" in refused.output
    assert "already has a series" not in refused.output


def test_a_kept_message_loses_a_trailer_of_earlier_pq_use(tmp_path: Path) -> None:
    """A commit carrying `Pq-Patch: 0001-glue.patch` (from earlier pq use) kept as a part's
    message named another patch than the part: right after the import the branch did not
    match its series, and the export it asked for renamed the patch."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "def op(x):\n    return x  # glue\n")
    commit_all(fork, "Glue: op\n\nPq-Patch: 0001-glue.patch")
    write(tmp_path / "upstream", "README.md", "upstream v2\n")
    commit_all(tmp_path / "upstream", "upstream: readme")
    merge_upstream(fork)
    pq(fork, "import", "--upstream", "upstream/main")
    assert git(fork, "log", "-1", "--format=%B", "HEAD~1") == "Glue: op"
    assert pq(fork, "check").exit_code == 0
    assert "already up to date" in pq(fork, "export").output


@pytest.mark.parametrize("args, message", [
    (["--upstream", "nope/main"], "nope/main"),
    (["--upstream", "upstream/main", "other"], "git switch other"),
    (["--upstream", "upstream/main", "nosuch"], "no branch nosuch"),  # not "switch to it"
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    fork, _up = grown_fork(tmp_path)
    git(fork, "branch", "other")
    result = pq(fork, "import", *args, ok=False)
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_dirty_tree_and_existing_series_are_refused(tmp_path: Path) -> None:
    fork, _up = grown_fork(tmp_path)
    write(fork, "setup.py", "dirty\n")
    result = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2 and "uncommitted changes in setup.py" in result.output
    git(fork, "checkout", "--", "setup.py")
    pq(fork, "import", "--upstream", "upstream/main")
    again = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert again.exit_code == 2 and "series.yaml: already exists: " in again.output \
        and "series.yaml: series.yaml" not in again.output
    named = re.search(r"`(git rm [^`]*)` and commit first", again.output)
    assert named, again.output  # the command named works as written
    git(fork, *shlex.split(named.group(1))[1:])
    git(fork, "commit", "-q", "-m", "drop the series")
    pq(fork, "import", "--upstream", "upstream/main")


def test_topics_group_co_changed_files_and_never_mix_layers() -> None:
    text = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
            b"diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-x\n+y\n"
            b"diff --git a/setup.py b/setup.py\n--- a/setup.py\n+++ b/setup.py\n"
            b"@@ -1 +1 @@\n-x\n+y\n"
            b"diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-x\n+y\n")
    files = diffs.parse(text)
    decisions = layers.classify_hunks(files, lambda f: b"")
    log = [("1" * 40, frozenset({"a.py", "b.py", "setup.py"})), ("2" * 40, frozenset({"c.py"}))]
    g = topics.group(files, decisions, log)  # type: ignore[arg-type]
    assert [(p.layer, p.files) for p in g.parts] == [
        ("build", ("setup.py",)), ("python-glue", ("a.py", "b.py")),
        ("python-glue", ("c.py",))]
    assert [p.kept_from for p in g.parts] == [None, None, "2" * 40]
    assert g.parts[0].name == "0001-build-setup.patch"


def test_files_under_the_queue_paths_are_refused_and_nothing_written(
        tmp_path: Path) -> None:
    """Files under the queue's own paths (mre/) never go into patches, so a branch that
    changes them cannot be reproduced: pq import says so in one line (the file, the fix)
    and writes nothing."""
    fork, _up = grown_fork(tmp_path)
    write(fork, "mre/x/run.sh", "echo reproducer\n")
    commit_all(fork, "a reproducer tracked in the fork")
    refs = git(fork, "for-each-ref", "--format=%(refname) %(objectname)")
    files = sorted(str(p.relative_to(fork)) for p in fork.rglob("*") if ".git" not in p.parts)
    result = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("pq: error: ")
    assert "mre/x/run.sh" in lines[0] and "git mv" in lines[0]
    assert git(fork, "for-each-ref", "--format=%(refname) %(objectname)") == refs
    assert sorted(str(p.relative_to(fork)) for p in fork.rglob("*")
                  if ".git" not in p.parts) == files
    assert git(fork, "status", "--porcelain") == ""


def test_import_refuses_to_delete_a_draft_patch_file_of_the_users(tmp_path: Path) -> None:
    fork, _up = grown_fork(tmp_path)
    write(fork, "patches/draft.patch", "my draft\n")
    before = git(fork, "rev-parse", "HEAD")
    result = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2 and "patches/draft.patch: not a patch of the series" \
        in result.output
    assert (fork / "patches/draft.patch").read_text() == "my draft\n"
    assert git(fork, "rev-parse", "HEAD") == before


def test_a_folder_replaced_by_a_file_of_its_name_is_imported_in_one_part(
        tmp_path: Path) -> None:
    """One fork commit removes x/t.py, a later one adds a file x: no tree holds both, so
    the regrouped parts keep them together (it was an internal error)."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream", {
        "x/t.py": "t = 1\n", "setup.py": "setup()\n"}))
    git(fork, "rm", "-q", "x/t.py")
    git(fork, "commit", "-q", "-m", "remove x/t.py")
    write(fork, "x", "a file now\n")
    write(fork, "csrc/k.cc", "int k();\n")
    commit_all(fork, "add x and a kernel")
    before = git(fork, "rev-parse", "HEAD")
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--json").output)
    assert data["mode"] == "topics"
    parts = {p["name"]: sorted(p["files"]) for p in data["patches"]}
    assert sorted(["x", "x/t.py"]) in parts.values(), parts
    assert tree(fork, "HEAD") == tree(fork, before)


def test_a_draft_workaround_in_a_file_whose_name_is_not_utf8_leaves_a_readable_series(
        tmp_path: Path) -> None:
    """series.yaml is UTF-8 text: the draft's reason shows the name with escapes, and its
    covers leaves it out; pq reads back the series it wrote."""
    fork = make_fork(tmp_path)
    name = b"glue_\xe9.py".decode("utf-8", "surrogateescape")
    write(fork, name, "import torch\nx = 1  # TODO: paddle has no op yet\n")
    commit_all(fork, "glue")
    pq(fork, "import", "--upstream", "upstream/main")
    series = (fork / "series.yaml").read_text()
    assert "glue_\\xe9.py:2" in series and "\\udc" not in series.lower()
    assert pq(fork, "series").exit_code == 0


def shallow_clone(tmp: Path, fork: Path, depth: int) -> Path:
    """A clone of the fork's paddle branch cut `depth` commits down, with upstream fetched
    in full (upstream's history is there; the fork's is cut)."""
    clone = tmp / "shallow"
    git(tmp, "clone", "-q", "--depth", str(depth), "-b", "paddle", f"file://{fork}", str(clone))
    git(clone, "remote", "add", "upstream", f"file://{tmp / 'upstream'}")
    git(clone, "fetch", "-q", "upstream")
    return clone


@pytest.mark.parametrize("command", ["import", "init"])
def test_a_shallow_clone_cut_before_the_shared_commit_names_the_fix_that_works(
        tmp_path: Path, command: str) -> None:
    """In a shallow clone the fork's history stops before the upstream commit it shares:
    a fetch of upstream brings none of it back, so pq names `git fetch --unshallow`,
    and once that is run the command works."""
    fork, _up = grown_fork(tmp_path)
    write(fork, "pkg/late.py", "LATE = 1\n")
    commit_all(fork, "Glue: late")
    clone = shallow_clone(tmp_path, fork, 1)
    result = pq(clone, command, "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2, result.output
    assert "shallow clone" in result.output and "git fetch --unshallow" in result.output
    assert "`git fetch upstream`" not in result.output  # it does not help here
    git(clone, "fetch", "-q", "--unshallow", "origin")
    after = pq(clone, command, "--upstream", "upstream/main", ok=False)
    assert "share no history" not in after.output, after.output


def test_a_folder_named_series_yaml_is_refused_with_a_fix_that_works(tmp_path: Path) -> None:
    """An untracked folder where series.yaml goes: `rm series.yaml` cannot remove it, so
    pq names the `mv` that does, and once it is run the import goes through."""
    fork, _up = grown_fork(tmp_path)
    write(fork, "series.yaml/notes.txt", "mine\n")
    result = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    named = re.search(r"`(mv [^`]*)`", result.output)
    assert named and "`rm " not in result.output, result.output
    args = shlex.split(named.group(1))
    (fork / args[1]).rename(fork / args[2])
    pq(fork, "import", "--upstream", "upstream/main")
    assert (fork / "series.yaml.d/notes.txt").read_text() == "mine\n"


def test_a_merged_branch_with_no_changes_is_sent_to_a_fix_that_works(tmp_path: Path) -> None:
    """A merge-maintained branch whose edits were all reverted: import has nothing to
    import and names how to start a series; `pq init` refuses merges, so the hint must not
    send the user there straight (and init back to import): following it works."""
    fork = make_fork(tmp_path)
    built_then_merged(fork)
    git(fork, "revert", "--no-edit", "HEAD^1")
    result = pq(fork, "import", "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2 and "nothing to import" in result.output, result.output
    steps = re.findall(r"`((?:git|pq) [^`]*)`", result.output)
    assert steps and steps[-1].startswith("pq init"), result.output
    for step in steps:
        args = shlex.split(step)
        if args[0] == "git":
            git(fork, *args[1:])
        else:
            pq(fork, *args[1:])
    assert (fork / "series.yaml").is_file() and git(fork, "status", "--porcelain") != ""


def test_a_criss_cross_history_is_imported_on_upstream_s_line(tmp_path: Path) -> None:
    """Upstream merged a fork commit while the fork merged upstream: two merge bases, the
    fork's commit and upstream's. On the fork's commit, upstream's change the fork merged
    would become a fork patch (and conflict with upstream's next change to it at the
    first rebase); the base is the one on upstream's first-parent line."""
    fork = make_fork(tmp_path)
    up = tmp_path / "upstream"
    write(fork, "pkg/shared.py", "SHARED = 1\n")
    helper = commit_all(fork, "Fork: a helper upstream adopts")
    write(up, "pkg/u.py", "U = 1\n")
    mainline = commit_all(up, "upstream: u")
    merge_upstream(fork)
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "Build against Paddle")
    git(up, "fetch", "-q", str(fork), helper)
    git(up, "merge", "-q", "--no-edit", "-m", "upstream: adopt the helper", helper)
    write(up, "pkg/u.py", "U = 2\n")
    commit_all(up, "upstream: u 2")
    git(fork, "fetch", "-q", "upstream")
    bases = git(fork, "merge-base", "--all", "HEAD", "upstream/main").split()
    assert sorted(bases) == sorted([helper, mainline])
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--json").output)
    assert data["base"] == mainline
    assert [f for p in data["patches"] for f in p["files"]] == ["setup.py", "pkg/shared.py"]
    rebased = pq(fork, "rebase", "upstream/main", "--json")
    assert [p["outcome"] for p in json.loads(rebased.output)["patches"]] == ["clean", "dropped"]


def test_keep_commits_in_a_shallow_clone_cut_inside_the_fork_falls_back(
        tmp_path: Path) -> None:
    """A shallow clone whose cut falls among the fork's own commits: a commit whose parent
    is cut off has nothing to replay it from. `--keep-commits` regrouped as topics and
    said why, not `object ... not found` (exit 2) with no way forward."""
    fork = make_fork(tmp_path)
    built_then_merged(fork)
    write(fork, "pkg/g1.py", "G1 = 1\n")
    commit_all(fork, "Glue: g1")
    # depth 3: the tip, the merge and the build commit, whose parent is cut off
    clone = shallow_clone(tmp_path, fork, 3)
    tip = git(clone, "rev-parse", "HEAD")
    result = pq(clone, "import", "--upstream", "upstream/main", "--keep-commits", "--json")
    data = json.loads(result.output)
    assert data["mode"] == "topics" and "shallow clone" in data["reason"], data["reason"]
    assert "git fetch --unshallow" in data["reason"]
    assert tree(clone, "HEAD") == tree(clone, tip)


def test_import_in_a_shallow_clone_cut_at_the_only_commit_of_a_part(tmp_path: Path) -> None:
    """The clone cuts off the parent of the one fork commit that changed setup.py: pq can
    not tell whether that commit's diff is the part's, so the part gets pq's message, and
    the import goes through (it failed on git's `not a tree object`, exit 2)."""
    up = tmp_path / "upstream"  # one commit, one file: the fork's commit changes them all
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    write(up, "setup.py", "from torch.utils import x\n")
    commit_all(up, "upstream: initial")
    fork = make_fork(tmp_path, up)
    built_then_merged(fork, "from paddle.utils import x\n")
    write(fork, "pkg/g1.py", "G1 = 1\n")
    commit_all(fork, "Glue: g1")
    clone = shallow_clone(tmp_path, fork, 3)
    tip = git(clone, "rev-parse", "HEAD")
    data = json.loads(pq(clone, "import", "--upstream", "upstream/main", "--json").output)
    assert [p["kept_from"] is None for p in data["patches"]] == [True, False]
    assert tree(clone, "HEAD") == tree(clone, tip)


def test_a_fork_commit_upstream_merged_too_is_kept_in_a_criss_cross(tmp_path: Path) -> None:
    """Upstream merged one of the fork's commits while the fork merged upstream: the
    commits to replay were read from upstream..tip, which leaves that commit out, so
    --keep-commits fell back to topics saying the merges changed the tree."""
    up = make_upstream(tmp_path / "upstream", {f"{n}.txt": "".join(f"{n} {i}\n" for i in
                                                                   range(30)) for n in "abc"})
    fork = make_fork(tmp_path, up)
    for n, line in (("a", 5), ("b", 10)):
        path = fork / f"{n}.txt"
        path.write_text(path.read_text().replace(f"{n} {line}\n", f"{n} {line} fork\n"))
        commit_all(fork, f"python-glue: {n}")
    (up / "c.txt").write_text((up / "c.txt").read_text().replace("c 2\n", "c 2 up\n"))
    commit_all(up, "upstream: c")
    git(up, "fetch", "-q", str(fork), "paddle")
    git(up, "merge", "-q", "--no-edit", "FETCH_HEAD~1", "-m", "upstream takes the fork's a")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "--no-edit", "upstream/main~1", "-m", "fork merges upstream")
    (fork / "c.txt").write_text((fork / "c.txt").read_text().replace("c 20\n", "c 20 fork\n"))
    commit_all(fork, "python-glue: c")
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--keep-commits",
                         "--dry-run", "--json").output)
    assert data["mode"] == "commits", data
    assert [p["name"] for p in data["patches"]] == [
        "0001-python-glue-a.patch", "0002-python-glue-b.patch", "0003-python-glue-c.patch"]
