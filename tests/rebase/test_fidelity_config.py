"""Patch bytes and merges independent of local state: configuration, checkouts, attributes.

Each scenario runs pq and plain git on copies of the same repository and compares.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, tree_without_queue, write

from pq.git.sealed import flatten_attributes

CFG = "[section]\n" + "".join(f"key{i} = {i}\n" for i in range(20))


def _fork_with_cfg_patch(tmp_path: Path) -> Path:
    up = make_upstream(tmp_path / "upstream", {".gitattributes": "*.cfg diff=cfg\n",
                                               "conf/app.cfg": CFG, "README.md": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "conf/app.cfg", CFG.replace("key15 = 15", "key15 = paddle"))
    commit_all(fork, "build: configure for paddle")
    return fork


def test_local_diff_driver_settings_do_not_change_patch_bytes(tmp_path: Path) -> None:
    fork = _fork_with_cfg_patch(tmp_path)
    other = tmp_path / "teammate"
    shutil.copytree(fork, other, symlinks=True)
    git(fork, "config", "diff.cfg.xfuncname", r"^\[.*\]$")
    git(other, "config", "diff.cfg.binary", "false")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    pq(other, "init", "--upstream", "upstream/main", "--commit")
    name = "0001-build-configure-for-paddle.patch"
    mine = (fork / "patches" / name).read_bytes()
    assert mine == (other / "patches" / name).read_bytes()
    assert b"@@ -14,7 +14,7 @@ key11 = 11\n" in mine  # git's own default function line
    # and a teammate's `pq check` accepts the series written with the other setting
    git(other, "fetch", "-q", str(fork), "paddle:from-fork")
    git(other, "checkout", "-q", "from-fork")
    assert pq(other, "check").exit_code == 0


def test_global_diff_config_does_not_change_patch_bytes(tmp_path: Path) -> None:
    fork = _fork_with_cfg_patch(tmp_path)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    before = (fork / "patches/0001-build-configure-for-paddle.patch").read_bytes()
    home = Path(git(fork, "config", "--global", "--list", "--show-origin").split("\t")[0]
                .removeprefix("file:")).parent
    with open(home / ".gitconfig", "a") as f:
        f.write("[diff]\n\tcontext = 1\n\tinterHunkContext = 9\n"
                "[diff \"cfg\"]\n\txfuncname = ^key1.*$\n")
    assert pq(fork, "export").exit_code == 0
    assert (fork / "patches/0001-build-configure-for-paddle.patch").read_bytes() == before


# -- merges read attributes from the trees being merged ---------------------------------


def _git_rebase_outcome(repo: Path) -> tuple[int, dict[str, str]]:
    proc = subprocess.run(["git", "rebase", "-q", "upstream/main"], cwd=repo,
                          capture_output=True)
    tree = {} if proc.returncode else tree_without_queue(repo, "HEAD")
    if proc.returncode:
        subprocess.run(["git", "rebase", "--abort"], cwd=repo, capture_output=True)
    return proc.returncode, tree


def _compare_with_git(tmp_path: Path, fork: Path) -> tuple[int, str]:
    """Rebase a copy with git and the fork with pq; both must stop, or both succeed with
    the same tree. Returns pq's exit code and output."""
    copy = tmp_path / "git-copy"
    shutil.copytree(fork, copy, symlinks=True)
    git_code, git_tree = _git_rebase_outcome(copy)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert (result.exit_code == 0) == (git_code == 0), result.output
    if result.exit_code == 0:
        assert tree_without_queue(fork, "HEAD") == git_tree
    return result.exit_code, result.output


NOTES = "one\ntwo\nthree\n"


def test_upstream_removes_a_union_merge_attribute(tmp_path: Path) -> None:
    up = make_upstream(tmp_path / "upstream", {".gitattributes": "notes.txt merge=union\n",
                                               "notes.txt": NOTES})
    fork = make_fork(tmp_path, up)
    write(fork, "notes.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: note")
    git(up, "rm", "-q", ".gitattributes")
    write(up, "notes.txt", NOTES.replace("two", "two (upstream)"))
    commit_all(up, "upstream: drop union merges, edit notes")
    git(fork, "fetch", "-q", "upstream")
    code, output = _compare_with_git(tmp_path, fork)
    assert code == 1 and "notes.txt" in output  # git conflicts; so does pq


def test_upstream_adds_a_union_merge_attribute_in_a_subfolder(tmp_path: Path) -> None:
    up = make_upstream(tmp_path / "upstream", {"docs/notes.txt": NOTES, "README.md": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "docs/notes.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: note")
    write(up, "docs/.gitattributes", "*.txt merge=union\n")
    write(up, "docs/notes.txt", NOTES.replace("two", "two (upstream)"))
    commit_all(up, "upstream: union merges for notes")
    git(fork, "fetch", "-q", "upstream")
    code, _ = _compare_with_git(tmp_path, fork)
    assert code == 0  # both merge the union, in the same order
    text = (fork / "docs/notes.txt").read_text()
    assert "two (upstream)" in text and "two (paddle)" in text


def test_a_custom_merge_driver_merges_as_under_git_rebase_in_an_empty_folder(
        tmp_path: Path) -> None:
    """A driver from the repository's configuration merges from what git hands it (%O %A
    %B %P), as `git rebase` has it merge; its current folder is an empty one of pq's own
    (git's temporary files of the three versions aside), not the git directory
    (docs/rebase.md says so)."""
    up = make_upstream(tmp_path / "upstream", {".gitattributes": "notes.txt merge=keepboth\n",
                                               "notes.txt": NOTES})
    fork = make_fork(tmp_path, up)
    seen = tmp_path / "seen"
    git(fork, "config", "merge.keepboth.driver",
        f"ls -A > {seen}; echo %P >> {seen}; git merge-file --union %A %O %B")
    write(fork, "notes.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: note")
    write(up, "notes.txt", NOTES.replace("two", "two (upstream)"))
    commit_all(up, "upstream: edit notes")
    git(fork, "fetch", "-q", "upstream")
    code, _ = _compare_with_git(tmp_path, fork)
    assert code == 0
    *listed, path = seen.read_text().splitlines()  # pq's run came last
    assert path == "notes.txt" and listed  # only git's temporary files of %O %A %B there
    assert all(name.startswith(".merge_file_") for name in listed), listed
    text = (fork / "notes.txt").read_text()
    assert "two (upstream)" in text and "two (paddle)" in text


@pytest.mark.parametrize("renormalize", ["true", "false"])
def test_merge_renormalize_as_git_rebase_does(tmp_path: Path, renormalize: str) -> None:
    """Upstream normalized a CRLF file to LF (`text=auto`) and edited it; the fork edited
    another line of the CRLF version. With merge.renormalize git merges the two cleanly,
    without it both conflict (the whole file changed): pq does the same, either way."""
    crlf = "".join(f"line {i}\r\n" for i in range(8))
    up = make_upstream(tmp_path / "upstream", {"u.txt": crlf, "README.md": "x\n"})
    fork = make_fork(tmp_path, up)
    git(fork, "config", "merge.renormalize", renormalize)
    write(fork, "u.txt", crlf.replace("line 1\r", "line 1 (paddle)\r"))
    commit_all(fork, "glue: u")
    write(up, ".gitattributes", "* text=auto\n")
    write(up, "u.txt", crlf.replace("\r\n", "\n").replace("line 6", "line 6 (upstream)"))
    commit_all(up, "upstream: normalize line endings, edit u")
    git(fork, "fetch", "-q", "upstream")
    code, _ = _compare_with_git(tmp_path, fork)
    assert code == (0 if renormalize == "true" else 1)


def test_the_repositorys_info_attributes_are_honoured(tmp_path: Path) -> None:
    """info/attributes belongs to the repository: git rebase honours it, and so does pq."""
    up = make_upstream(tmp_path / "upstream", {"notes.txt": NOTES, "README.md": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "notes.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: note")
    write(up, "notes.txt", NOTES.replace("two", "two (upstream)"))
    commit_all(up, "upstream: notes")
    git(fork, "fetch", "-q", "upstream")
    (fork / ".git" / "info").mkdir(exist_ok=True)
    # info/attributes is the repository's own: git honours it, and so must pq
    (fork / ".git" / "info" / "attributes").write_text("notes.txt merge=union\n")
    code, _ = _compare_with_git(tmp_path, fork)
    assert code == 0


# -- the attributes file a tree's .gitattributes files make -------------------------------


@pytest.mark.parametrize(("files", "path", "expected"), [
    ({".gitattributes": b"*.txt merge=union\n"}, "a/b/c.txt", "union"),
    ({"a/.gitattributes": b"*.txt merge=union\n"}, "a/b/c.txt", "union"),
    ({"a/.gitattributes": b"*.txt merge=union\n"}, "b/c.txt", "unspecified"),
    ({"a/.gitattributes": b"/c.txt merge=union\n"}, "a/c.txt", "union"),
    ({"a/.gitattributes": b"/c.txt merge=union\n"}, "a/b/c.txt", "unspecified"),
    ({"a/.gitattributes": b"b/c.txt merge=union\n"}, "a/b/c.txt", "union"),
    ({".gitattributes": b"*.txt merge=union\n", "a/.gitattributes": b"*.txt -merge\n"},
     "a/c.txt", "unset"),
    ({".gitattributes": b"*.txt merge=union\n", "a/.gitattributes": b"*.txt -merge\n"},
     "c.txt", "union"),
    ({"we[i]rd*/.gitattributes": b"x merge=union\n"}, "we[i]rd*/x", "union"),
    ({"we[i]rd*/.gitattributes": b"x merge=union\n"}, "weirdo/x", "unspecified"),
    ({"sp ace/.gitattributes": b'"a b.txt" merge=union\n'}, "sp ace/a b.txt", "union"),
    ({".gitattributes": b"[attr]u merge=union\n*.c u\n", "a/.gitattributes": b"[attr]v -merge\n"},
     "a/x.c", "union"),
    # A byte-order mark at the start of a file is skipped, as git skips it.
    ({"sub/.gitattributes": b"\xef\xbb\xbf*.txt -merge\n"}, "sub/f.txt", "unset"),
    # Quoting as git's unquote_c_style reads it: an escape it refuses leaves the pattern
    # unquoted (`"f\` here); octal and the C escapes it knows.
    ({".gitattributes": b'"f\\ g" merge=union\n'}, "f g", "unspecified"),
    ({".gitattributes": b'"a\\040b" merge=union\n'}, "a b", "union"),
    # A line git reads (under 2048 bytes) that the relocated pattern makes longer; and one
    # git ignores already.
    ({"some/deeper/folder/.gitattributes": b"f -merge note=" + b"y" * 2020 + b"\n"},
     "some/deeper/folder/f", "unset"),
    ({".gitattributes": b"f merge=union note=" + b"y" * 2040 + b"\n"}, "f", "unspecified"),
])
def test_flattened_attributes_match_git(tmp_path: Path, files: dict[str, bytes], path: str,
                                        expected: str) -> None:
    """What `git check-attr` says in a checkout with those files, it says with the one
    flattened file as info/attributes."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    for rel, data in files.items():
        write(repo, rel, data)
    want = git(repo, "check-attr", "merge", "--", path).rsplit(": ", 1)[1]
    assert want == expected
    flat = tmp_path / "flat"
    flat.mkdir()
    git(flat, "init", "-q")
    write(flat, ".git/info/attributes", flatten_attributes(files))
    assert git(flat, "check-attr", "merge", "--", path).rsplit(": ", 1)[1] == expected


def _merging_fork(tmp_path: Path, init_args: tuple[str, ...] = ()) -> Path:
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "main", *init_args)
    write(up, "notes.txt", NOTES)
    commit_all(up, "upstream: notes")
    for i in range(3):
        write(up, f"f{i}.txt", f"{i}\n")
        commit_all(up, f"upstream: f{i}")
    fork = make_fork(tmp_path, up)
    write(fork, "notes.txt", NOTES.replace("one", "one (paddle)"))
    commit_all(fork, "glue: note")
    write(up, "notes.txt", NOTES.replace("three", "three (upstream)"))
    commit_all(up, "upstream: notes again")
    git(fork, "fetch", "-q", "upstream")
    return fork


def test_sha256_repository_merges_and_diffs(tmp_path: Path) -> None:
    fork = _merging_fork(tmp_path, ("--object-format=sha256",))
    code, output = _compare_with_git(tmp_path, fork)
    assert code == 0 and "merged" in output


def test_shallow_clone_rebases(tmp_path: Path) -> None:
    full = _merging_fork(tmp_path)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--no-local", "--depth", "3", "-b", "paddle", "-o",
        "upstream", str(full), str(shallow))
    git(shallow, "fetch", "-q", "--depth", "3", "upstream",
        "+refs/remotes/upstream/main:refs/remotes/upstream/main")
    assert (shallow / ".git" / "shallow").is_file()
    pq(shallow, "init", "--upstream", "upstream/main", "--commit")
    result = pq(shallow, "rebase", "upstream/main")
    assert "merged" in result.output
    assert "one (paddle)" in (shallow / "notes.txt").read_text()


def test_a_partial_clone_fetches_the_blobs_its_diffs_need(tmp_path: Path) -> None:
    """A `--filter=blob:none` clone: upstream edited a patched file twice, once touching
    exactly the patch's files, so pq diffs upstream blobs the clone never fetched. git
    fetches them on demand; pq's sealed diff did not, and the rebase failed (exit 2)."""
    up = make_upstream(tmp_path / "upstream", {"f.txt": "a\nb\nc\nd\ne\nf\ng\n",
                                               "g.txt": "x\n"})
    git(up, "config", "uploadpack.allowFilter", "true")
    git(up, "config", "uploadpack.allowAnySHA1InWant", "true")
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "-o", "upstream",
        (up.resolve()).as_uri(), str(fork))
    git(fork, "switch", "-q", "-c", "paddle")
    # A setting the sealed directory is handed (the remote's), whose value spans lines.
    git(fork, "config", "remote.upstream.note", "two\nlines")
    write(fork, "f.txt", "a\nB\nc\nd\ne\nf\ng\n")
    commit_all(fork, "patch b")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    for old, new in (("f\n", "F\n"), ("g\n", "G\n")):
        write(up, "f.txt", (up / "f.txt").read_text().replace(old, new))
        commit_all(up, f"upstream: {new.strip()}")
    git(fork, "fetch", "-q", "upstream")
    by_git = tmp_path / "by-git"
    shutil.copytree(fork, by_git, symlinks=True)
    pq(fork, "rebase", "upstream/main")
    git(by_git, "rebase", "-q", "upstream/main")
    assert (fork / "f.txt").read_text() == (by_git / "f.txt").read_text() == \
        "a\nB\nc\nd\ne\nF\nG\n"
    assert tree_without_queue(fork, "HEAD") == tree_without_queue(by_git, "HEAD")
    # The remote's settings are handed to git, not written down (a token stays where it was).
    assert "remote" not in (fork / ".git/pq/sealed/diff/config").read_text()


def test_a_partial_clone_whose_remote_is_gone_says_why(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A `--filter=blob:none` clone whose promisor remote cannot be reached (moved, no
    network): pq said only "git cat-file ended early", or spelt out a whole internal git
    command; git's reason and the remote to check are what the user needs."""
    up = make_upstream(tmp_path / "upstream", {"f.txt": "a\nb\nc\n", "g.txt": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "f.txt", "a\nB\nc\n")
    commit_all(fork, "patch b")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "-b", "paddle",
        fork.resolve().as_uri(), str(partial))
    git(partial, "remote", "set-url", "origin", (tmp_path / "gone").as_uri())
    monkeypatch.setenv("TMPDIR", str(tmp_path / "no-such-folder"))  # (cat-file's stderr)
    for args in (["apply", "-b", "t"], ["export"]):
        refused = pq(partial, *args, ok=False)
        assert refused.exit_code == 2, refused.output
        assert "from promisor remote" in refused.output, refused.output
        assert "check that the remote can be reached (`git remote -v`)" in refused.output
        assert "diff.noprefix" not in refused.output and "Traceback" not in refused.output


def test_a_shallow_clone_cut_below_the_branch_names_the_fetch_that_fixes_it(
        tmp_path: Path) -> None:
    """A `--depth 2` clone of the fork whose base arrived with upstream: the branch's
    history stops short of it. pq blamed a rebase outside pq and suggested `pq rebase`
    (the command refused) or `pq init --force` (which fails); the fix is a deeper fetch."""
    up = make_upstream(tmp_path / "upstream", {"f.txt": "a\nb\nc\nd\ne\nf\n"})
    fork = make_fork(tmp_path, up)
    for old, new in (("b\n", "B\n"), ("e\n", "E\n")):
        write(fork, "f.txt", (fork / "f.txt").read_text().replace(old, new))
        commit_all(fork, f"patch {new.strip()}")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", "-b", "paddle", fork.resolve().as_uri(),
        str(shallow))
    git(shallow, "remote", "add", "upstream", up.resolve().as_uri())
    git(shallow, "fetch", "-q", "upstream")
    for args in (["rebase", "upstream/main"], ["export"], ["check"]):
        refused = pq(shallow, *args, ok=False)
        assert refused.exit_code in (1, 2), refused.output
        assert "stops before the series base" in refused.output, refused.output
        assert "git fetch --deepen=<commits> (or --unshallow)" in refused.output
        assert "pq init --force" not in refused.output
    git(shallow, "fetch", "-q", "--deepen=2", "origin")
    pq(shallow, "export")


def test_upstream_fetched_shallow_is_named_not_called_another_line(tmp_path: Path) -> None:
    """`git fetch --depth 1 upstream` (as CI fetches): upstream/main's history is cut off
    above the series base, and pq called it another line of upstream that lacks the
    base's commits, naming `--force`; the fix is a deeper fetch of upstream."""
    up = make_upstream(tmp_path / "upstream", {"f.txt": "a\nb\nc\nd\ne\nf\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "f.txt", "a\nB\nc\nd\ne\nf\n")
    commit_all(fork, "patch B")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    for n in (1, 2):
        write(up, f"new{n}.txt", f"{n}\n")
        commit_all(up, f"upstream: new {n}")
    git(fork, "fetch", "-q", "--depth", "1", up.resolve().as_uri(),
        "+main:refs/remotes/upstream/main")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "a shallow fetch cut its history off" in refused.output, refused.output
    assert "git fetch --unshallow upstream" in refused.output and "--force" not in \
        refused.output
    typo = pq(fork, "rebase", "upstream/mian", ok=False)  # a typo: no fetch brings it
    assert "unknown upstream ref 'upstream/mian' (check the name" in typo.output, typo.output
    git(fork, "fetch", "-q", "--unshallow", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "new2.txt").is_file() and (fork / "f.txt").read_text().startswith("a\nB\n")


def test_a_shallow_fetch_of_a_remote_whose_name_has_a_slash_names_that_remote(
        tmp_path: Path) -> None:
    """A remote named `gh/up` (git takes it): the fetch named was `git fetch --unshallow
    gh`, a remote that does not exist."""
    up = make_upstream(tmp_path / "upstream", {"f.txt": "a\nb\nc\n"})
    fork = make_fork(tmp_path, up)
    git(fork, "remote", "rename", "upstream", "gh/up")
    write(fork, "f.txt", "a\nB\nc\n")
    commit_all(fork, "patch B")
    pq(fork, "init", "--upstream", "gh/up/main", "--commit")
    for n in (1, 2):
        write(up, f"new{n}.txt", f"{n}\n")
        commit_all(up, f"upstream: new {n}")
    git(fork, "fetch", "-q", "--depth", "1", "gh/up")
    refused = pq(fork, "rebase", "gh/up/main", ok=False)
    assert "`git fetch --unshallow gh/up`" in refused.output, refused.output
    git(fork, "fetch", "-q", "--unshallow", "gh/up")
    pq(fork, "rebase", "gh/up/main")


def test_an_earlier_patch_sets_the_attribute_a_later_merge_uses(tmp_path: Path) -> None:
    up = make_upstream(tmp_path / "upstream", {"notes.txt": NOTES, "other.txt": NOTES,
                                               "README.md": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, ".gitattributes", "*.txt merge=union\n")
    commit_all(fork, "build: union merges for notes")
    write(fork, "notes.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: note")
    write(fork, "other.txt", NOTES.replace("two", "two (paddle)"))
    commit_all(fork, "glue: other")
    write(up, "notes.txt", NOTES.replace("two", "two (upstream)"))
    write(up, "other.txt", NOTES.replace("two", "two (upstream)"))
    commit_all(up, "upstream: notes")
    git(fork, "fetch", "-q", "upstream")
    code, _ = _compare_with_git(tmp_path, fork)
    assert code == 0  # git merges both with union, as the first patch asks; so does pq


@pytest.mark.parametrize("attribute", ["-merge", "merge=binary"])
def test_attributes_an_earlier_patch_put_in_a_folder_upstream_renamed_are_used(
        tmp_path: Path, attribute: str) -> None:
    """Patch 1 adds lib/.gitattributes; upstream renamed lib/ to src/ and, with
    merge.directoryRenames=true, git's merge puts that file at src/.gitattributes. The
    later patches' merges read it there, as git's do: src/f.txt conflicts, not merged."""
    lines = "".join(f"{c}\n" for c in "abcdefg")
    up = make_upstream(tmp_path / "upstream", {"lib/f.txt": lines, "lib/keep.txt": "x\n"})
    fork = make_fork(tmp_path, up)
    git(fork, "config", "merge.directoryRenames", "true")
    write(fork, "lib/.gitattributes", f"*.txt {attribute}\n")
    commit_all(fork, "build: no text merges of *.txt")
    write(fork, "lib/f.txt", lines.replace("a\n", "A-fork\n"))
    commit_all(fork, "glue: edit line 1")
    git(up, "mv", "lib", "src")
    write(up, "src/f.txt", lines.replace("g\n", "G-up\n"))
    commit_all(up, "upstream: rename lib to src, edit line 7")
    git(fork, "fetch", "-q", "upstream")
    code, output = _compare_with_git(tmp_path, fork)
    assert code == 1 and "src/f.txt" in output, output  # git conflicts; so does pq


# -- submodules: a bump is a change whatever `submodule.<name>.ignore` says --------------


@pytest.mark.parametrize("where", ["gitmodules", "config", "unset"])
def test_a_submodule_bump_survives_a_rebase_whatever_its_ignore_setting(
        tmp_path: Path, where: str) -> None:
    """`ignore = all` (in .gitmodules or the configuration) hides a submodule's bump from
    git's plumbing diffs unless told otherwise; pq's rebase still replays the bump, as
    `git rebase` does (a clean patch whose change pq could not see came out empty)."""
    old, new = "1" * 40, "2" * 40
    modules = '[submodule "sub"]\n\tpath = sub\n\turl = ../sub\n'
    if where == "gitmodules":
        modules += "\tignore = all\n"
    up = make_upstream(tmp_path / "upstream", {".gitmodules": modules, "README.md": "x\n"})
    git(up, "update-index", "--add", "--cacheinfo", f"160000,{old},sub")
    git(up, "commit", "-q", "-m", "upstream: sub")
    fork = make_fork(tmp_path, up)
    if where == "config":
        git(fork, "config", "submodule.sub.ignore", "all")
    git(fork, "update-index", "--cacheinfo", f"160000,{new},sub")
    git(fork, "commit", "-q", "-m", "build: bump sub")
    write(fork, "README.md", "x\npaddle\n")
    git(fork, "commit", "-q", "-m", "python-glue: readme", "README.md")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert f"+Subproject commit {new}" in (
        fork / "patches/0001-build-bump-sub.patch").read_text()
    write(up, "LICENSE", "MIT\n")
    git(up, "add", "LICENSE")  # not `add -A`: upstream's checkout has no sub/ folder
    git(up, "commit", "-q", "-m", "upstream: license")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "branch", "-q", "by-git", "HEAD~1")
    pq(fork, "rebase", "upstream/main")
    git(fork, "rebase", "-q", "upstream/main", "by-git")
    assert git(fork, "rev-parse", "paddle:sub").strip() == new
    assert git(fork, "rev-parse", "paddle~2:sub").strip() == new  # in the bump's own commit
    assert tree_without_queue(fork, "paddle") == tree_without_queue(fork, "by-git")
    git(fork, "checkout", "-q", "paddle")
    assert pq(fork, "check").exit_code == 0


def pinned_submodule(tmp: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """An upstream whose submodule `sub` points at 111..., and a fork whose one patch
    points it at 222... (no submodule checked out on either side)."""
    up = make_upstream(tmp / "upstream", {**files, "README.md": "x\n"})
    git(up, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    git(up, "commit", "-q", "-m", "upstream: sub")
    fork = make_fork(tmp, up)
    git(fork, "update-index", "--cacheinfo", f"160000,{'2' * 40},sub")
    git(fork, "commit", "-q", "-m", "build: pin sub")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return up, fork


def test_a_submodule_bumped_on_both_sides_stops_with_a_fix_for_a_submodule(
        tmp_path: Path) -> None:
    """Both sides moved the submodule: git stops with it unmerged, and so does pq; the fix
    is to choose the commit it points at (there is no file to edit), in the stop's error,
    `pq status` and its `--json`."""
    modules = '[submodule "sub"]\n\tpath = sub\n\turl = ../sub\n'
    up, fork = pinned_submodule(tmp_path, {".gitmodules": modules})
    git(up, "update-index", "--cacheinfo", f"160000,{'3' * 40},sub")
    git(up, "commit", "-q", "-m", "upstream: bump sub")
    git(fork, "fetch", "-q", "upstream")
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1
    fix = "point it at the commit it should have: `git update-index --cacheinfo " \
          "160000,COMMIT,sub`"
    assert f"sub (both modified, a submodule): {fix}" in stop.output
    assert "edit, `git add" not in stop.output
    assert f"conflicted  sub  (both modified, a submodule: {fix})" in pq(fork, "status").output
    conflicted = json.loads(pq(fork, "status", "--json").stdout)["rebase"]["conflicted"]
    assert conflicted == [{"path": "sub", "code": "UU", "kind": "both modified, a submodule",
                           "fix": fix}]
    # The fix works with the submodule not checked out (as here: `git add sub` would not).
    git(fork, "update-index", "--cacheinfo", f"160000,{'4' * 40},sub")
    pq(fork, "rebase", "--continue")
    assert git(fork, "rev-parse", "paddle~1:sub") == "4" * 40


@pytest.mark.parametrize("resolve", ["rm", "update-index"])
def test_a_submodule_deleted_upstream_and_bumped_by_the_patch_names_fixes_that_work(
        tmp_path: Path, resolve: str) -> None:
    """Modified on one side, deleted on the other: the fix named `git add sub`, which git
    refuses for a submodule not checked out ("does not have a commit checked out"). It
    names `git rm` and the commit to point at; each works."""
    up, fork = pinned_submodule(tmp_path, {})
    git(up, "rm", "-q", "--cached", "sub")
    git(up, "commit", "-q", "-m", "upstream: no sub")
    git(fork, "fetch", "-q", "upstream")
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1 and "git add sub" not in stop.output, stop.output
    [c] = json.loads(pq(fork, "status", "--json").stdout)["rebase"]["conflicted"]
    assert (c["kind"], c["fix"]) == (
        "deleted upstream, modified by the patch, a submodule",
        "`git rm sub` keeps it deleted, or point it at the commit it should have: `git "
        "update-index --cacheinfo 160000,COMMIT,sub` (`git ls-files -s sub` lists each side's)")
    if resolve == "rm":
        git(fork, "rm", "-q", "sub")
    else:
        git(fork, "update-index", "--cacheinfo", f"160000,{'2' * 40},sub")
    pq(fork, "rebase", "--continue")
    assert git(fork, "ls-tree", "paddle~1", "sub") == (
        "" if resolve == "rm" else f"160000 commit {'2' * 40}\tsub")


def test_a_submodule_checked_out_elsewhere_is_not_an_uncommitted_change(
        tmp_path: Path) -> None:
    """A populated submodule at another commit than the index's (` M lib`) is the
    submodule's own checkout: `git rebase` starts and continues over it. pq refused both
    ("uncommitted changes in lib"; "changes in lib are not added"), and its fix, `git add
    lib`, folded the next patch's bump of lib into the stopped patch."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    for n in "123":
        write(lib, "f", n + "\n")
        commit_all(lib, f"lib {n}")
    first, second, third = git(lib, "rev-list", "--reverse", "main").split()
    up = make_upstream(tmp_path / "upstream", {"a.txt": "1\n2\n3\n", "t.py": "x\n"})
    git(up, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(up, "-C", "lib", "checkout", "-q", first)
    commit_all(up, "upstream: lib")
    fork = make_fork(tmp_path, up)
    git(fork, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    write(fork, "a.txt", "1\n2 paddle\n3\n")
    commit_all(fork, "python-glue: a")
    git(fork, "-C", "lib", "checkout", "-q", second)
    commit_all(fork, "build: bump lib")
    write(fork, "t.py", "y\n")
    commit_all(fork, "python-glue: t")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "a.txt", "1\n2 upstream\n3\n")
    commit_all(up, "upstream: a")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "-C", "lib", "checkout", "-q", third)  # ` M lib`
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1  # a.txt, not lib
    write(fork, "a.txt", "1\n2 upstream paddle\n3\n")
    git(fork, "add", "a.txt")
    done = json.loads(pq(fork, "rebase", "--continue", "--json").stdout)
    assert [p["outcome"] for p in done["patches"]] == ["conflict", "clean", "clean"]
    assert git(fork, "log", "--format=%s", "upstream/main..paddle~1").splitlines() == [
        "python-glue: t", "build: bump lib", "python-glue: a"]
    assert git(fork, "rev-parse", "paddle:lib") == second
    assert git(fork, "rev-parse", "paddle~3:lib") == first  # the bump stayed in its patch
    assert git(fork, "-C", "lib", "rev-parse", "HEAD") == third  # left as it was


def test_pqs_own_commits_have_the_author_git_commit_would_give(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_AUTHOR_NAME and GIT_COMMITTER_NAME set apart (or author.name): the rebase's and
    apply's bookkeeping commits took the committer as their author, where `git commit`
    and `pq export --commit` take the author."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
    commit_all(fork, "build: an edit")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann Author")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Carl Committer")
    write(tmp_path / "upstream", "LICENSE", "MIT\n")
    commit_all(tmp_path / "upstream", "upstream: license")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    pq(fork, "apply", "--branch", "applied")
    for rev in ("paddle", "applied"):
        assert git(fork, "log", "-1", "--format=%s|%an|%cn", rev).split("|")[1:] == [
            "Ann Author", "Carl Committer"], rev


def test_a_reference_transaction_hook_refusing_the_landing_is_named(tmp_path: Path) -> None:
    """A reference-transaction hook that refuses the branch's update at the landing: the
    hint said to move files aside. It names the hook; once it lets the update pass,
    `--continue` lands the rebase."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
    commit_all(fork, "build: an edit")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(tmp_path / "upstream", "LICENSE", "MIT\n")
    commit_all(tmp_path / "upstream", "upstream: license")
    git(fork, "fetch", "-q", "upstream")
    hook = fork / ".git/hooks/reference-transaction"
    write(fork, ".git/hooks/reference-transaction",
          '#!/bin/sh\n[ "$1" = prepared ] && grep -q " refs/heads/paddle$" && exit 1\nexit 0\n',
          mode=0o755)
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "let the hook pass the update" in refused.output, \
        refused.output
    hook.unlink()
    pq(fork, "rebase", "--continue")
    assert git(fork, "rev-parse", "paddle~2") == git(fork, "rev-parse", "upstream/main")


def test_a_submodules_files_where_upstream_now_has_a_folder_are_in_the_way(
        tmp_path: Path) -> None:
    """Upstream replaced the submodule lib with a folder lib/ holding lib/f; the fork has
    the submodule checked out, its lib/f there: `git rebase` refuses before it starts (its
    checkout would overwrite lib/f). pq lists no untracked file inside a submodule's
    checkout: it replayed, then failed to land (exit 2, the rebase left waiting)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write(lib, "f", "1\n")
    commit_all(lib, "lib 1")
    up = make_upstream(tmp_path / "upstream", {"a.txt": "1\n2\n3\n"})
    git(up, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    commit_all(up, "upstream: lib")
    fork = make_fork(tmp_path, up)
    git(fork, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
    write(fork, "a.txt", "1\n2 paddle\n3\n")
    commit_all(fork, "python-glue: a")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "rm", "-q", "lib", ".gitmodules")
    write(up, "lib/f", "vendored\n")
    commit_all(up, "upstream: vendor lib")
    git(fork, "fetch", "-q", "upstream")
    tip = git(fork, "rev-parse", "HEAD")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "untracked lib/f would be overwritten" in refused.output
    assert not (fork / ".git/pq/rebase/state.json").exists()
    assert git(fork, "rev-parse", "HEAD") == tip
    assert (fork / "lib/f").read_text() == "1\n"
