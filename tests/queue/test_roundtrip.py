"""The three invariants of the queue, on real repositories: apply reproduces the fork,
export is idempotent (also after apply), and nothing is ever lost."""

from __future__ import annotations

import base64
import json
import quopri
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from gitrepo import (
    commit_all,
    git,
    make_fork,
    migrate,
    pq,
    series_fork,
    snapshot_queue,
    tree_without_queue,
    write,
)


def compat_fork(tmp: Path) -> Path:
    """A fork whose one migration commit enables compat in setup.py, its series committed."""
    return series_fork(tmp, ("enable compat", {"setup.py": "import paddle\n"}))


def test_init_export_apply_round_trip(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    tip = migrate(fork)
    result = pq(fork, "init", "--upstream", "upstream/main")
    assert "5 patches" in result.output
    names = sorted(p.name for p in (fork / "patches").iterdir())
    assert names[0] == "0001-build-enable-compat-in-setup-py.patch"
    assert len(names) == 5
    first = snapshot_queue(fork)
    for name, data in first.items():
        if name.startswith("patches/"):
            assert b"files changed" not in data and not data.rstrip().endswith(b"2.39.5")
    # Invariant 2: export twice changes nothing.
    pq(fork, "export")
    assert snapshot_queue(fork) == first
    pq(fork, "export", "--commit")
    assert snapshot_queue(fork) == first
    committed = git(fork, "rev-parse", "HEAD")
    assert committed != tip
    # Invariant 1: apply onto base reproduces the fork's tree byte for byte.
    pq(fork, "apply")
    applied = git(fork, "rev-parse", "HEAD")
    assert applied != committed
    assert tree_without_queue(fork, applied) == tree_without_queue(fork, tip)
    assert snapshot_queue(fork) == first  # apply then export: byte-identical
    pq(fork, "export")
    assert snapshot_queue(fork) == first
    assert git(fork, "status", "--porcelain") == ""
    # Each materialised commit names its patch in a trailer.
    log = git(fork, "log", "--format=%(trailers:key=Pq-Patch,valueonly)", "-6")
    assert [x for x in log.split("\n") if x] == list(reversed(names))
    # The author, date and message survive exactly.
    orig = git(fork, "log", "--format=%an|%ae|%ad|%B", "-1", tip)
    new = git(fork, "log", "--format=%an|%ae|%ad|%B", "-1", "HEAD~1")
    assert new.replace(f"\nPq-Patch: {names[-1]}", "") == orig


def test_a_corrupt_patch_names_its_line_in_the_patch_file(tmp_path: Path) -> None:
    """A patch file whose final newline an editor dropped: `pq apply` named git's line
    in the diff (`at line 11`), not the file's, and suggested `pq rebase`, which refuses
    a hand-edited file. Now the line is the file's, as `git apply --check` of the file
    says, and the fix is to edit it or write the commit's patch again. The diff reader
    refuses it as it reads the file (git's corrupt patch, a file's fault: exit 2)."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import torch  # scoped compat\n")
    commit_all(fork, "glue: scoped compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    patch = next((fork / "patches").iterdir())
    patch.write_bytes(patch.read_bytes().rstrip(b"\n"))
    commit_all(fork, "an editor dropped the final newline")
    refused = pq(fork, "apply", ok=False)
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=fork,
                           capture_output=True, text=True).stderr
    line = re.search(r"at line (\d+)", check)
    assert line is not None, check
    assert refused.exit_code == 2 and f"{patch.relative_to(fork)}:{line.group(1)}: the diff of " \
        "pkg/__init__.py ends in a line cut off without its newline" in refused.output, \
        refused.output
    assert "pq export --force" in refused.output and "pq rebase" not in refused.output


def test_a_patch_git_refuses_before_its_end_names_gits_reason_and_its_line(
        tmp_path: Path) -> None:
    """An invalid mode line: pq's diff reader refuses it at the line `git apply` names
    (it gave the patch's last line as the reason and `pq rebase` as the fix)."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import torch  # scoped compat\n")
    commit_all(fork, "glue: scoped compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    patch = next((fork / "patches").iterdir())
    patch.write_bytes(patch.read_bytes().replace(
        b"\n--- a/", b"\nold mode 100644\nnew mode 999999\n--- a/", 1))
    commit_all(fork, "a mode edited by hand")
    refused = pq(fork, "apply", ok=False)
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=fork,
                           capture_output=True, text=True).stderr.splitlines()[0]
    assert check.startswith("error: invalid mode on line ")  # (git counts one line short)
    line = patch.read_bytes().split(b"\n").index(b"new mode 999999") + 1
    assert refused.exit_code == 2 and (
        f"patches/{patch.name}:{line}: invalid mode line `new mode 999999`") in refused.output
    assert "pq export --force" in refused.output and "pq rebase" not in refused.output


def test_git_applys_line_in_parentheses_is_the_patch_files_line_too(tmp_path: Path) -> None:
    """git says some errors `(line N)`, counted in the diff: pq named that N as the
    file's line, which `git apply --check` of the file numbers otherwise."""
    fork = series_fork(tmp_path, ("python-glue: change a", {"a.txt": "a\n"}))
    patch = next((fork / "patches").iterdir())
    patch.write_bytes(patch.read_bytes().replace(b" a/a.txt", b" a.txt").replace(
        b" b/a.txt", b" a.txt"))  # as `git format-patch --no-prefix` writes it
    commit_all(fork, "a patch file without a/ and b/")
    refused = pq(fork, "apply", "--branch", "applied", ok=False)
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=fork,
                           capture_output=True, text=True).stderr
    line = re.search(r"\(line \d+\)", check)
    assert line is not None, check
    assert refused.exit_code == 1 and line.group(0) in refused.output, refused.output


def test_patch_files_apply_with_git_am(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    tip = migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main")
    base = git(fork, "merge-base", "HEAD", "upstream/main")
    other = tmp_path / "am"
    git(tmp_path, "clone", "-q", str(tmp_path / "upstream"), str(other))
    git(other, "checkout", "-q", base)
    patches = sorted(str(p) for p in (fork / "patches").iterdir())
    git(other, "am", "-q", "--keep-non-patch", *patches)
    assert tree_without_queue(other, "HEAD") == tree_without_queue(fork, tip)
    subject = git(other, "log", "-1", "--format=%s")
    assert subject == "[cpp-compat] include torch/library.h"
    assert git(other, "log", "-1", "--format=%an") == "Jörg Ümlaut"


def test_a_bare_encoded_word_opener_in_a_subject_or_name_still_applies_with_git_am(
        tmp_path: Path) -> None:
    """git's mailinfo refuses a header holding `=?` that starts no encoded word: pq
    encodes such a subject or name, as git format-patch does."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/q.py", "x = 1\n")
    commit_all(fork, "parse x=?y in query strings")
    write(fork, "pkg/r.py", "y = 2\n")
    git(fork, "add", "-A")
    git(fork, "-c", "user.name=Bob =?", "commit", "-q", "--author", "Bob =? <bob@example.com>",
        "-m", "python-glue: r")
    tip = git(fork, "rev-parse", "HEAD")
    pq(fork, "init", "--upstream", "upstream/main")
    other = tmp_path / "am"
    git(tmp_path, "clone", "-q", str(tmp_path / "upstream"), str(other))
    patches = sorted(str(p) for p in (fork / "patches").iterdir())
    git(other, "am", "-q", *patches)
    assert git(other, "log", "-2", "--format=%an|%s") == (
        "Bob =?|python-glue: r\nA U Thor|parse x=?y in query strings")
    assert tree_without_queue(other, "HEAD") == tree_without_queue(fork, tip)


def test_patch_file_has_no_churn(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main")
    text = (fork / "patches/0001-build-enable-compat-in-setup-py.patch").read_bytes()
    assert text.startswith(b"From 0000000000000000000000000000000000000000 ")
    assert b"\nindex " not in text
    assert b"files changed" not in text
    assert not text.rstrip().endswith(b"2.39.5")
    binary = next(p for p in (fork / "patches").iterdir() if b"GIT binary patch" in p.read_bytes())
    assert b"\nindex " in binary.read_bytes()  # git apply needs it for binary diffs


def test_bookkeeping_commits_are_not_patches(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import torch  # scoped\n")
    commit_all(fork, "glue")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(fork, "mre/gap/run.sh", "exit 1\n")
    commit_all(fork, "add a reproducer")
    write(fork, "pkg/__init__.py", "import torch  # scoped, again\n")
    write(fork, "series.yaml", (fork / "series.yaml").read_text())  # mixed commit
    commit_all(fork, "glue two")
    result = pq(fork, "export", "--json")
    import json
    data = json.loads(result.output)
    assert [p["name"] for p in data["patches"]] == ["0001-glue.patch", "0002-glue-two.patch"]
    for p in (fork / "patches").iterdir():
        assert b"mre/" not in p.read_bytes() and b"series.yaml" not in p.read_bytes()


def test_existing_entry_keeps_user_layer_and_fields(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "enable compat")
    pq(fork, "init", "--upstream", "upstream/main")
    text = (fork / "series.yaml").read_text()
    assert "layer: build" in text
    text = text.replace("layer: build", "layer: python-glue\n    owner: team-a")
    text += "custom_top:\n  keep: [1, 2]\n"
    (fork / "series.yaml").write_text(text)
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\nTORCH_LIBRARY(x, m) {}\n")
    commit_all(fork, "register op")
    pq(fork, "export")
    out = (fork / "series.yaml").read_text()
    assert "layer: python-glue\n    owner: team-a" in out
    assert "custom_top:\n  keep: [1, 2]\n" in out
    assert "layer: cpp-compat" in out


def test_dirty_tree_is_refused_and_kept(tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    write(fork, "pkg/__init__.py", "my uncommitted work\n")
    before = git(fork, "rev-parse", "HEAD")
    result = pq(fork, "apply", ok=False)
    assert result.exit_code == 2
    assert "uncommitted changes in pkg/__init__.py" in result.output
    assert (fork / "pkg/__init__.py").read_text() == "my uncommitted work\n"
    assert git(fork, "rev-parse", "HEAD") == before


def test_hand_edited_patch_is_not_overwritten(tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    p = fork / "patches/0001-enable-compat.patch"
    p.write_bytes(p.read_bytes().replace(b"+import paddle", b"+import paddle  # edited"))
    result = pq(fork, "export", ok=False)
    assert result.exit_code == 2 and "uncommitted edits" in result.output
    assert b"# edited" in p.read_bytes()


def test_a_hand_edit_of_a_patch_file_not_committed_yet_is_not_overwritten(
        tmp_path: Path) -> None:
    """`pq export` wrote a new patch file (not committed); an edit of it is the user's,
    refused as one of a committed file is; what pq wrote itself is rewritten freely."""
    fork = compat_fork(tmp_path)
    write(fork, "csrc/new.cc", "int n() { return 1; }\n")
    commit_all(fork, "kernel: new op")
    pq(fork, "export")
    new = next((fork / "patches").glob("*-kernel-new-op.patch"))
    assert "new.cc" in new.read_text()
    git(fork, "commit", "-q", "--amend", "-m", "kernel: new op, amended")
    pq(fork, "export")  # pq's own bytes: rewritten from the amended commit
    assert "amended" in new.read_text()
    new.write_text(new.read_text() + "# my hand edit\n")
    result = pq(fork, "export", ok=False)
    assert result.exit_code == 2 and "uncommitted edits" in result.output, result.output
    assert "# my hand edit" in new.read_text()
    pq(fork, "export", "--force")
    assert "# my hand edit" not in new.read_text()


def test_export_writes_a_listed_patch_file_that_is_gone_again(tmp_path: Path) -> None:
    """A patch file deleted from the working tree: export refused ("listed but ... does not
    exist"), naming `git checkout` (it was never committed) and `pq apply` (which refuses
    a branch with commits the series lacks). Export writes it again from its commit: by its
    name where a committed file is evidence of it, under a new one where none is."""
    fork = compat_fork(tmp_path)
    first = fork / "patches/0001-enable-compat.patch"
    before = first.read_bytes()
    first.unlink()
    assert "1 file written" in pq(fork, "export").output
    assert first.read_bytes() == before and git(fork, "status", "--porcelain") == ""
    write(fork, "csrc/new.cc", "int n() { return 1; }\n")
    commit_all(fork, "kernel: new op")
    pq(fork, "export")
    new = next((fork / "patches").glob("*-kernel-new-op.patch"))
    new.unlink()
    refused = pq(fork, "series", ok=False)
    assert refused.exit_code == 2 and "`pq export` writes it again" in refused.output
    again = pq(fork, "export")
    [written] = (fork / "patches").glob("*-kernel-new-op.patch")
    assert f"new      {written.name}" in again.output and f"removed  {new.name}" in again.output
    assert "csrc/new.cc" in written.read_text()


def test_export_leaves_patch_files_out_of_a_sparse_checkout_alone(tmp_path: Path) -> None:
    """Out of the sparse checkout, a patch file is not gone: export refuses, naming
    `git sparse-checkout add patches`, rather than write every one outside the cone."""
    fork = compat_fork(tmp_path)
    git(fork, "sparse-checkout", "set", "--no-cone", "/setup.py", "/series.yaml")
    assert not (fork / "patches").exists()
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2 and "`git sparse-checkout add patches`" in refused.output
    assert not (fork / "patches").exists()


def test_export_twice_after_a_summary_edit_changes_nothing_the_second_time(
        tmp_path: Path) -> None:
    """The first export rewrites the patch's Description header from series.yaml; the
    second finds the file as it would write it: no uncommitted edit is at risk."""
    fork = compat_fork(tmp_path)
    series = (fork / "series.yaml").read_text()
    summary = next(ln for ln in series.splitlines() if ln.strip().startswith("summary:"))
    (fork / "series.yaml").write_text(series.replace(summary, "    summary: Scoped compat"))
    patch = fork / "patches/0001-enable-compat.patch"
    before = patch.read_bytes()
    pq(fork, "export")
    written = patch.read_bytes()
    assert written != before and b"Scoped compat" in written
    second = pq(fork, "export")
    assert "already up to date" in second.output
    assert patch.read_bytes() == written


def test_apply_refuses_to_drop_unexported_commits(tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    write(fork, "pkg/__init__.py", "new edit\n")
    commit_all(fork, "unexported")
    tip = git(fork, "rev-parse", "HEAD")
    result = pq(fork, "apply", ok=False)
    assert result.exit_code == 2 and "pq export" in result.output
    assert git(fork, "rev-parse", "HEAD") == tip
    built = pq(fork, "apply", "--branch", "rebuilt").output
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "rebuilt"
    assert git(fork, "rev-parse", "paddle") == tip
    # A new branch has no previous tip (it said one was kept as orig-head/rebuilt).
    assert "rebuilt is checked out; paddle is unchanged (`git switch paddle`, or `pq undo`, " \
        "goes back to it)" in built, built
    assert "previous tip" not in built
    pq(fork, "undo")
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"


def test_apply_onto_other_commit_and_conflict_message(tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    up = tmp_path / "upstream"
    write(up, "setup.py", "completely different\n")
    commit_all(up, "upstream rewrites setup.py")
    git(fork, "fetch", "-q", "upstream")
    result = pq(fork, "apply", "--onto", "upstream/main", "--branch", "x", ok=False)
    assert result.exit_code == 1
    assert "patches/0001-enable-compat.patch: patch 1 does not apply" in result.output
    assert "pq rebase" in result.output
    # --json names the file as `path` (it was null, the file only in the message).
    error = json.loads(pq(fork, "apply", "--onto", "upstream/main", "--branch", "x", "--json",
                          ok=False).stdout)["error"]
    assert error["path"] == "patches/0001-enable-compat.patch", error


def test_a_reordered_series_that_does_not_apply_names_a_fix_that_works(
        tmp_path: Path) -> None:
    """On the series base, `pq rebase <base>` would refuse (the branch differs from the
    series): the hint is to make the patch fit or reorder the commits instead."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "one\n")
    commit_all(fork, "build: one")
    write(fork, "setup.py", "two\n")
    commit_all(fork, "build: two")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    text = (fork / "series.yaml").read_text()
    first, second = text.index("  - name: 0001"), text.index("  - name: 0002")
    (fork / "series.yaml").write_text(text[:first] + text[second:] + text[first:second])
    result = pq(fork, "apply", ok=False)
    assert result.exit_code == 1, result.output
    assert "patches/0002-build-two.patch: patch 1 does not apply" in result.output
    assert "reorder the commits (`git rebase -i`), then `pq export --commit`" in result.output
    assert "pq rebase" not in result.output


def test_a_refused_apply_keeps_the_uncommitted_series_it_was_given(tmp_path: Path) -> None:
    """A teammate's series.yaml and new patch file copied in, uncommitted; an untracked file
    of the user's stands where the new patch adds one, so the checkout is refused: the
    series and patch file stay as the user left them, staged or not, in both modes; no
    ref of pq's moves (refs/pq/orig-head/<branch> included) and nothing is logged."""
    fork = compat_fork(tmp_path)
    git(fork, "checkout", "-q", "-b", "teammate")
    write(fork, "pkg/new.py", "theirs\n")
    commit_all(fork, "python-glue: add new.py")
    pq(fork, "export", "--commit")
    git(fork, "checkout", "-q", "paddle")
    name = "patches/0002-python-glue-add-new-py.patch"
    write(fork, "series.yaml", git(fork, "show", "teammate:series.yaml") + "\n")
    write(fork, name, git(fork, "show", f"teammate:{name}") + "\n")
    git(fork, "add", name)  # one staged, one not
    write(fork, "pkg/new.py", "my own scratch\n")
    given, status = snapshot_queue(fork), git(fork, "status", "--porcelain")
    head = git(fork, "rev-parse", "HEAD")
    refs = git(fork, "for-each-ref", "refs/pq")
    for args in ((), ("--branch", "rebuilt")):
        result = pq(fork, "apply", *args, ok=False)
        assert result.exit_code == 2, result.output
        assert "pkg/new.py" in result.output and "would be overwritten" in result.output
        assert snapshot_queue(fork) == given
        assert git(fork, "status", "--porcelain") == status
        assert (fork / "pkg/new.py").read_text() == "my own scratch\n"
        assert git(fork, "rev-parse", "HEAD") == head
        assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"
        assert git(fork, "branch", "--list", "rebuilt") == ""
        assert git(fork, "for-each-ref", "refs/pq") == refs


@pytest.mark.parametrize(("given", "kept"), [
    ("@{upstream}", "upstream/main"),  # relative to the branch: the ref it means
    ("refs/remotes/upstream/main", "refs/remotes/upstream/main"),  # a ref, as typed
    ("HEAD~1", None),  # moves with HEAD (the bookkeeping commit): refused
    ("HEAD@{0}", None),  # moves with the reflog: refused
])
def test_init_keeps_a_name_that_names_the_same_commit_later(
        tmp_path: Path, given: str, kept: str | None) -> None:
    """series.yaml's `upstream.ref` is read again by every later rebase, check and push:
    `HEAD~2` written as it was typed named another commit right after `pq init --commit`
    moved HEAD (`pq check` then failed, and its `pq init --force` fix lost a patch)."""
    fork = make_fork(tmp_path)
    git(fork, "branch", "-q", "--set-upstream-to", "upstream/main")
    git(fork, "commit", "-q", "--allow-empty", "-m", "upstream-side")  # so HEAD~1 is a commit
    migrate(fork)
    got = pq(fork, "init", "--upstream", given, "--commit", ok=False)
    if kept is None:
        assert got.exit_code == 2 and "names a commit, not a branch" in got.output
        assert not (fork / "series.yaml").exists()
        return
    assert got.exit_code == 0, got.output
    assert f"ref: {kept}\n" in (fork / "series.yaml").read_text()
    assert pq(fork, "check").exit_code == 0


def test_init_keeps_a_patch_file_of_the_users_and_names_a_tracked_one_it_removes(
        tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "enable compat")
    write(fork, "patches/draft.patch", "my draft, never committed\n")
    result = pq(fork, "init", "--upstream", "upstream/main", ok=False)
    assert result.exit_code == 2, result.output
    assert "patches/draft.patch: not a patch of the series" in result.output
    assert (fork / "patches/draft.patch").read_text() == "my draft, never committed\n"
    assert not (fork / "series.yaml").exists()
    commit_all(fork, "a patch file of another tool, committed")
    result = pq(fork, "init", "--upstream", "upstream/main", "--json")
    assert "draft.patch" in json.loads(result.output)["removed"]


def test_commit_takes_queue_files_a_gitignore_names_and_stages_nothing_else(
        tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, ".gitignore", "*.patch\nseries.yaml\n")
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "enable compat")
    write(fork, "pkg/__init__.py", "my unstaged work\n")
    result = pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert "committed as" in result.output
    files = git(fork, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert "series.yaml" in files and "patches/0001-enable-compat.patch" in files
    assert git(fork, "status", "--porcelain") == "M pkg/__init__.py"  # still unstaged


def test_commit_works_where_a_gitignore_names_the_reproducer_folder(tmp_path: Path) -> None:
    """`mre/` ignored (its reproducers committed before): the commit takes what git tracks
    there and nothing the ignore rule hides; it used to fail after writing the queue."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    write(fork, "mre/repro.py", "print('repro')\n")
    commit_all(fork, "enable compat")
    write(fork, ".gitignore", "mre/\n.pq/\n")
    commit_all(fork, "ignore the reproducers' folder")
    write(fork, "mre/repro.py", "print('repro, edited')\n")
    write(fork, "mre/scratch.log", "ignored and untracked\n")
    result = pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert "committed as" in result.output
    assert git(fork, "show", "HEAD:mre/repro.py") == "print('repro, edited')"
    assert "mre/scratch.log" not in git(fork, "ls-tree", "-r", "--name-only", "HEAD")
    assert git(fork, "status", "--porcelain") == ""


def test_apply_calls_a_malformed_patch_file_malformed(tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    p = fork / "patches/0001-enable-compat.patch"
    p.write_bytes(re.sub(rb"(?m)^@@ .*", b"@@ -99,1 +99,2 @@", p.read_bytes()))
    commit_all(fork, "pq: a hand-broken patch file")
    result = pq(fork, "apply", "--branch", "t", ok=False)
    assert result.exit_code == 2, result.output
    at = p.read_bytes().split(b"\n").index(b"@@ -99,1 +99,2 @@") + 1  # named: its line
    assert f"patches/0001-enable-compat.patch:{at}: the diff of setup.py is not what its " \
           "`@@` lines say" in result.output and "pq rebase" not in result.output


def test_the_next_step_init_names_works_with_no_patch(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    result = pq(fork, "init", "--upstream", "upstream/main")
    line = next(ln for ln in result.output.splitlines() if "next: git add" in ln)
    add = line.split("next: ", 1)[1].split(" && ")[0].split()
    assert add == ["git", "add", "series.yaml"]
    git(fork, *add[1:])  # what the user is told to run works
    # ... and so does the other way it names (not `pq init --commit` again: refused).
    assert line.endswith("(or `pq export --commit`)")
    assert "committed as" in pq(fork, "export", "--commit").output


@pytest.mark.parametrize("commit", [False, True])
def test_an_export_that_writes_back_what_head_has_names_no_commit(tmp_path: Path,
                                                                  commit: bool) -> None:
    """A committed patch file deleted by accident, written back by export: it is HEAD's
    again, so the `git commit` export named failed ("nothing to commit")."""
    fork = compat_fork(tmp_path)
    (fork / "patches/0001-enable-compat.patch").unlink()
    result = pq(fork, "export", *(["--commit"] if commit else []))
    assert "1 file written" in result.output and "next:" not in result.output, result.output
    assert "the files written are HEAD's: nothing to commit" in result.output
    assert git(fork, "status", "--porcelain") == ""
    (fork / "patches/0001-enable-compat.patch").unlink()
    data = json.loads(pq(fork, "export", "--json").output)
    assert data["changed"] == ["patches/0001-enable-compat.patch"], data
    assert data["uncommitted"] is False and data["commit"] is None
    # A hand edit, staged, thrown away by --force: the index still holds it, and a commit
    # would take it ("nothing to commit" said otherwise).
    patch = fork / "patches/0001-enable-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Subject: [PATCH] ", b"Subject: [PATCH] x "))
    git(fork, "add", "patches")
    forced = pq(fork, "export", "--force").output
    assert "the index holds other versions of them: `git add patches` stages HEAD's" in forced
    git(fork, "add", "patches")  # as named
    assert git(fork, "status", "--porcelain") == ""
    write(fork, "setup.py", "import paddle  # changed\n")
    commit_all(fork, "enable compat, amended")
    data = json.loads(pq(fork, "export", "--json").output)
    assert data["uncommitted"] is True and data["staged_other"] is False


def test_apply_carries_an_edit_beside_the_patches_and_a_staged_draft_is_the_users(
        tmp_path: Path) -> None:
    fork = compat_fork(tmp_path)
    write(fork, "patches/notes.txt", "notes v1\n")
    commit_all(fork, "pq: notes beside the patches")
    write(fork, "patches/notes.txt", "notes v2, not committed\n")
    pq(fork, "apply", "--onto", "upstream/main")
    assert (fork / "patches/notes.txt").read_text() == "notes v2, not committed\n"
    write(fork, "patches/draft.patch", "staged, never committed\n")
    git(fork, "add", "patches/draft.patch")
    result = pq(fork, "init", "--upstream", "upstream/main", "--force", ok=False)
    assert result.exit_code == 2 and "patches/draft.patch: not a patch" in result.output
    assert git(fork, "status", "--porcelain", "patches/draft.patch") == "A  patches/draft.patch"


def test_patch_bytes_do_not_follow_the_callers_git_environment(tmp_path: Path,
                                                               monkeypatch) -> None:
    """GIT_DIFF_OPTS (git's context setting, read by plumbing too), GIT_EXTERNAL_DIFF, the
    user's attributes file and configuration in the environment are the caller's: the
    patch files one user writes are those another user writes."""
    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    plain = snapshot_queue(fork)
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=1")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    # The user's attributes file (read when core.attributesFile is unset) and settings
    # given through the environment, as `git -c` hands them on.
    write(tmp_path, "xdg/git/attributes", "* -diff\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "diff.context")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.interhunkcontext'='9'")
    result = pq(fork, "export")
    assert "already up to date" in result.output
    assert snapshot_queue(fork) == plain
    pq(fork, "init", "--upstream", "upstream/main", "--force")
    assert snapshot_queue(fork) == plain


@pytest.mark.parametrize("variable", ["GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS",
                                      "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS"])
def test_the_callers_pathspec_mode_changes_nothing(tmp_path: Path, monkeypatch,
                                                   variable: str) -> None:
    """git's pathspec modes in the environment are the caller's: pq spells its own
    pathspecs' magic out. With GIT_LITERAL_PATHSPECS its `:(top,exclude)patches` was a
    file name (no patch found, a patch file with no diff); with the glob and icase modes
    git refused pq's `--literal-pathspecs`."""
    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    plain = snapshot_queue(fork)
    monkeypatch.setenv(variable, "1")
    pq(fork, "init", "--upstream", "upstream/main", "--force")
    assert snapshot_queue(fork) == plain
    assert "series consistent" in pq(fork, "check", "--no-cache").output


def test_an_export_git_stops_half_way_says_so_and_undo_puts_it_back(tmp_path: Path) -> None:
    """A crashed git's index.lock stops `pq export --commit` after the files are written:
    the error says the operation is logged as failed and `pq undo` puts it back."""
    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(fork, "pkg/extra.py", "X = 1\n")
    commit_all(fork, "glue: extra")
    before = snapshot_queue(fork)
    (fork / ".git" / "index.lock").write_text("")
    result = pq(fork, "export", "--commit", ok=False)
    assert result.exit_code == 2
    assert "half-way: operation" in result.output and "`pq undo` puts back" in result.output
    assert len(result.output.strip().splitlines()) == 1
    # The file in the way, then what was left, then the fix: clauses apart, one line.
    lock = fork / ".git" / "index.lock"
    assert f"could not run: {lock} exists" in result.output
    assert "left it); stopped half-way: operation" in result.output
    assert result.output.rstrip().endswith(
        f"(once no git process runs here, `rm {lock}`, then run the pq command again)")
    (fork / ".git" / "index.lock").unlink()
    pq(fork, "undo")
    assert snapshot_queue(fork) == before


def _two_patch_fork(tmp: Path) -> Path:
    return series_fork(tmp, ("enable compat", {"setup.py": "import paddle\n"}),
                       ("scoped compat", {"pkg/__init__.py": "import torch  # scoped\n"}))


def test_a_patch_added_by_hand_and_committed_is_not_removed_by_export(tmp_path: Path) -> None:
    """quilt-style: a patch file written by hand, listed and committed. Export removed it
    (no commit carries it), and `pq check` named `pq export --commit` as the fix."""
    fork = _two_patch_fork(tmp_path)
    write(fork, "README.md", "upstream\npaddle\n")
    commit_all(fork, "python-glue: readme")
    mail = git(fork, "format-patch", "-1", "--stdout")
    git(fork, "reset", "-q", "--hard", "HEAD~1")
    write(fork, "patches/0003-readme.patch", mail + "\n")
    write(fork, "series.yaml", (fork / "series.yaml").read_text()
          + "  - name: 0003-readme.patch\n    layer: python-glue\n")
    commit_all(fork, "add a patch by hand")
    before = snapshot_queue(fork)
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2 and "patches/0003-readme.patch: added to the series by " \
        "hand" in refused.output and "`pq apply`" in refused.output, refused.output
    assert snapshot_queue(fork) == before
    check = pq(fork, "check", ok=False)
    assert "0003-readme.patch is in series.yaml but no commit on the branch carries it: it " \
        "was added by hand" in check.output and "fix: pq apply" in check.output, check.output
    assert "pq apply" in pq(fork, "rebase", "upstream/main", ok=False).output
    pq(fork, "apply")  # the fix named: the patch becomes a commit, and the series stays
    assert snapshot_queue(fork).keys() == before.keys()
    assert (fork / "README.md").read_text() == "upstream\npaddle\n"


@pytest.mark.parametrize("committed", [False, True])
def test_a_patch_taken_out_by_hand_is_not_put_back_by_export(tmp_path: Path,
                                                              committed: bool) -> None:
    """quilt-style: an entry and its file taken out of the series. Export wrote the
    branch's commit back under a new name."""
    fork = _two_patch_fork(tmp_path)
    series = fork / "series.yaml"
    text = series.read_text()
    series.write_text(text[:text.index("  - name: 0002")])
    git(fork, "rm", "-q", "patches/0002-scoped-compat.patch")
    if committed:
        commit_all(fork, "drop the scoped patch")
    before = snapshot_queue(fork)
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2 and "patches/0002-scoped-compat.patch: taken out of " \
        "series.yaml by hand" in refused.output and "`pq apply`" in refused.output, \
        refused.output
    assert snapshot_queue(fork) == before
    if committed:
        check = pq(fork, "check", ok=False)
        assert "its patch was taken out of series.yaml by hand" in check.output, check.output
        pq(fork, "apply")
        assert git(fork, "log", "--format=%s", "upstream/main..HEAD~1").splitlines() == [
            "enable compat"]
        assert (fork / "pkg/__init__.py").read_text() != "import torch  # scoped\n"


def test_a_queue_folder_file_keeps_its_mode_under_core_filemode_false(tmp_path: Path) -> None:
    """core.fileMode=false (a FAT or 9p mount shows every file executable): `git status` is
    clean, yet apply's bookkeeping commit took the executable bit from the disk."""
    fork = compat_fork(tmp_path)
    write(fork, "mre/case1/repro.py", "print(1)\n")
    commit_all(fork, "a reproducer")
    git(fork, "config", "core.fileMode", "false")
    (fork / "mre/case1/repro.py").chmod(0o755)
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "apply", "--branch", "rebuilt")
    assert git(fork, "ls-tree", "rebuilt", "mre/case1/repro.py").split()[0] == "100644"


def _four_patch_fork(tmp: Path) -> Path:
    return series_fork(tmp, *((f"python-glue: feat {i}", {f"pkg/f{i}.py": f"F = {i}\n"})
                              for i in range(1, 5)))


def test_an_export_after_a_commit_dropped_and_one_added_is_no_hand_edit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit dropped (`git rebase -i`), exported (not committed), then a new commit: the
    second export called the dropped patch "taken out of series.yaml by hand" and sent the
    user round between `pq apply` and `pq export`."""
    fork = _four_patch_fork(tmp_path)
    monkeypatch.setenv("GIT_SEQUENCE_EDITOR", "sed -i '/feat 2/s/^pick/drop/'")
    git(fork, "rebase", "-q", "-i", "upstream/main")
    pq(fork, "export")
    write(fork, "pkg/f5.py", "F = 5\n")
    commit_all(fork, "python-glue: feat 5")
    pq(fork, "export", "--commit")
    assert sorted(p.name for p in (fork / "patches").iterdir()) == [
        "0001-python-glue-feat-1.patch", "0003-python-glue-feat-3.patch",
        "0004-python-glue-feat-4.patch", "0005-python-glue-feat-5.patch"]
    assert pq(fork, "check").exit_code == 0


def test_a_new_patch_amended_after_its_export_was_committed_is_no_hand_edit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new commit exported and committed with plain `git commit`, then the commit
    amended below it (fixup, autosquash): export called the patch "added by hand"."""
    fork = _four_patch_fork(tmp_path)
    write(fork, "pkg/f5.py", "F = 5\n")
    commit_all(fork, "python-glue: feat 5")
    pq(fork, "export")
    commit_all(fork, "update the series")
    write(fork, "pkg/f5.py", "F = 55\n")
    git(fork, "add", "pkg/f5.py")
    git(fork, "commit", "-q", "--fixup", "HEAD~1")
    monkeypatch.setenv("GIT_SEQUENCE_EDITOR", "true")
    git(fork, "rebase", "-q", "-i", "--autosquash", "upstream/main")
    pq(fork, "export", "--commit")
    assert "F = 55" in (fork / "patches/0005-python-glue-feat-5.patch").read_text()
    assert pq(fork, "check").exit_code == 0


# Patch mails pq did not write, each with what `git am` reads otherwise than the mail's
# own headers say: the author in the body (`git format-patch --from`), a reply's subject,
# in-body Subject:/Date: lines after an empty line, a `[PATCH]` line, untidy white space.
FOREIGN = {
    "format-patch --from": (
        b"From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
        b"From: Sender Person <sender@example.com>\n"
        b"Date: Tue, 1 Dec 2026 10:00:00 +0000\nSubject: [PATCH] python-glue: change a\n\n"
        b"From: Original Author <original@example.com>\n\nBody line one.\n"),
    "a reply's subject": (
        b"From: Maintainer <m@example.com>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n"
        b"Subject: Re: [PATCH v2 1/3] [RFC]  python-glue:\tchange  a\n\n\n"
        b"The body,   \ntrailing spaces and\n\n\n\ntoo many empty lines.\n\n\n"),
    "in-body subject and date": (
        b"From: Maintainer <m@example.com>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n"
        b"Subject: [PATCH] placeholder\n\n\n"
        b"subject: python-glue: the real\n subject, folded\nDATE:Wed, 2 Dec 2026 11:30:00 +0100\n"
        b"\nFrom: after an empty line, the message\n"),
    "a sender git finds no address in, and the author in the body": (
        b"From: the list robot\nDate: Tue, 1 Dec 2026 10:00:00 +0000\nSubject: [PATCH] x\n\n"
        b"From: Original Author <original@example.com>\n\nBody.\n"),
    "a [PATCH] line": (
        b"From: Maintainer <m@example.com>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n"
        b"Subject: ignored\n\n[PATCH] python-glue: from the body\nSubject: not a header now\n\n"
        b"Body.\n"),
}


def _encoded(head: bytes, body: bytes, how: str) -> Callable[[bytes], bytes]:
    """A mail whose body and diff are sent quoted-printable or base64, as mail clients
    and list archives save them."""
    def mail(diff: bytes) -> bytes:
        data = body + diff
        coded = quopri.encodestring(data) if how == "quoted-printable" else \
            base64.encodebytes(data)
        return (head + b"MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
                b"Content-Transfer-Encoding: " + how.encode() + b"\n\n" + coded)
    return mail


MAIL_HEAD = (b"From: Maintainer <m@example.com>\nDate: Tue, 1 Dec 2026 10:00:00 +0000\n"
             b"Subject: [PATCH] python-glue: change a\n")
FOREIGN.update({
    "quoted-printable": _encoded(MAIL_HEAD, "B\u00f6dy = line.\n".encode(), "quoted-printable"),
    "base64": _encoded(MAIL_HEAD, "B\u00f6dy line.\n".encode(), "base64"),
    "a Latin-1 body": MAIL_HEAD + b"Content-Type: text/plain; charset=ISO-8859-1\n\n"
                      b"B\xf6dy line.\n",
    "raw Latin-1 headers": (b"From: J\xf6rg \xdcmlaut <j@example.com>\n"
                            b"Date: Tue, 1 Dec 2026 10:00:00 +0000\n"
                            b"Subject: [PATCH] python-glue: caf\xe9\nMIME-Version: 1.0\n"
                            b"Content-Type: text/plain; charset=ISO-8859-1\n\nBody.\n"),
    "form feeds, which git's cleanups keep": MAIL_HEAD.replace(b"[PATCH] ", b"[PATCH]\x0c ")
    + b"\nPara one.\n\x0c\nPara\x0c two.\x0b\nThree.\n",
    "notes below the dashes": MAIL_HEAD + b"\nBody.\n---\n\nNotes:\n    v2: reworded\n\n",
    "a --- line in the message": MAIL_HEAD + b"\nAbove.\n---   \nBelow the dashes.\n",
    "CRLF under an LF mbox line": (
        b"From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
        + MAIL_HEAD.replace(b"\n", b"\r\n") + b"\r\nBody.\r\n"),
})


@pytest.mark.parametrize("case", FOREIGN)
def test_a_patch_mail_pq_did_not_write_makes_the_commit_git_am_makes(tmp_path: Path,
                                                                     case: str) -> None:
    """`pq apply` of a patch file from elsewhere reads it as `git am` does: the author a
    `git format-patch --from` file names in its body (pq took the sender, and kept the
    `From:` line in the message), the subject without `Re:` and bracketed prefixes, the
    in-body Subject: and Date:, the message's white space cleaned."""
    fork = series_fork(tmp_path, ("python-glue: change a", {"a.txt": 'x = "caf\u00e9"\n'}))
    patch = next((fork / "patches").iterdir())
    diff = patch.read_bytes()[patch.read_bytes().index(b"\n---\n"):].lstrip(b"\n")
    mail = tmp_path / "mail.patch"
    made = FOREIGN[case]
    mail.write_bytes(made(diff) if callable(made) else made + diff.replace(
        b"\n", b"\r\n" if b"\r\n" in made else b"\n"))
    patch.write_bytes(mail.read_bytes())
    commit_all(fork, "a patch file from elsewhere")
    pq(fork, "apply", "--branch", "applied")
    other = tmp_path / "am"
    git(tmp_path, "clone", "-q", str(tmp_path / "upstream"), str(other))
    git(other, "am", "-q", str(mail))
    shown = "--format=%an <%ae> %ad%n%B"
    ours = git(fork, "log", "-1", shown, "--date=raw", "applied~1")
    ours = re.sub(rf"\n\n?Pq-Patch: {re.escape(patch.name)}$", "", ours)  # pq's own trailer
    assert ours == git(other, "log", "-1", shown, "--date=raw")
    assert tree_without_queue(fork, "applied~1") == tree_without_queue(other, "HEAD")


@pytest.mark.parametrize("mail,refused", [
    (MAIL_HEAD + b"\nOne.\n---\n" + b"DIFF" + b"\nFrom 2222222222222222222222222222222222222222 "
     b"Mon Sep 17 00:00:00 2001\n" + MAIL_HEAD + b"\nTwo.\n---\nDIFF", "more than one mail"),
    (MAIL_HEAD + b'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b"\n\n'
     b"--b\nContent-Type: text/plain\n\nBody.\n--b\nContent-Type: text/x-patch\n\nDIFF\n--b--\n",
     "a MIME multipart mail"),
    (MAIL_HEAD + b"Content-Type: text/plain; charset=utf-8; format=flowed\n\nBody.\n---\n"
     b"DIFF", "a `format=flowed` mail"),
])
def test_a_patch_mail_that_is_not_one_plain_commit_is_refused_with_the_way_in(
        tmp_path: Path, mail: bytes, refused: str) -> None:
    """`git am` makes two commits of a file of two mails, takes a multipart mail apart and
    undoes a flowed mail's stuffing: pq, whose patch file is one commit, said neither; it
    folded the second mail's diff into the first commit (its author and message lost),
    took the MIME parts for message, and blamed a flowed mail's context on a hand edit."""
    fork = series_fork(tmp_path, ("python-glue: change a", {"a.txt": "a\n"}))
    patch = next((fork / "patches").iterdir())
    diff = patch.read_bytes()[patch.read_bytes().index(b"diff --git"):].rstrip(b"\n")
    patch.write_bytes(mail.replace(b"DIFF", diff))
    commit_all(fork, "a patch file from elsewhere")
    said = pq(fork, "apply", "--branch", "applied", ok=False)
    assert said.exit_code == 2 and refused in said.output and "`git am` it" in said.output
    assert said.output.count("\n") == 1, said.output


def test_pq_reads_its_own_files_as_written_whatever_git_am_would_make_of_them(
        tmp_path: Path) -> None:
    """A commit whose subject starts with a bracketed tag and whose message starts with a
    `From:` line: git am would take both (pq's files are not mails from elsewhere), pq's
    own file keeps them, and the round trip is exact."""
    fork = series_fork(tmp_path, ("[ROCm] python-glue: keep  the tag\n\nFrom: the docs, "
                                  "not an author\n", {"a.txt": "a\n"}))
    tip = git(fork, "rev-parse", "HEAD~1")
    pq(fork, "apply", "--branch", "applied")
    assert git(fork, "log", "-1", "--format=%B", "applied~1").startswith(
        git(fork, "log", "-1", "--format=%B", tip))
