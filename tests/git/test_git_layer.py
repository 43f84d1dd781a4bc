"""The git layer on its own: zsplit, the object layer, in-memory trees and the verbs, on
real temporary repositories (SHA-1 and SHA-256)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, flickering, git, make_fork, one_patch_fork, pq, write

from pq.errors import GitError
from pq.git.gateway import zsplit
from pq.git.objects import CommitId, Person
from pq.git.repo import Git
from pq.git.trees import Trees


def _repo(tmp_path: Path, fmt: str = "sha1") -> Path:
    root = tmp_path / f"repo-{fmt}"
    root.mkdir()
    git(root, "init", "-q", f"--object-format={fmt}", "-b", "main")
    write(root, "a.txt", "one\n")
    write(root, "dir/b.txt", "two\n")
    commit_all(root, "first")
    return root


def test_zsplit_drops_empty_fields_and_keeps_any_bytes() -> None:
    assert zsplit(b"a\0b c\0\0") == ["a", "b c"]
    assert zsplit(b"") == []
    assert zsplit(b"\xff\0") == ["\udcff"]  # surrogateescaped: the bytes round trip
    assert zsplit("x\0y") == ["x", "y"]


def test_revisions_resolve_as_git_resolves_them(tmp_path: Path) -> None:
    """`:/<text>` names the newest commit whose message matches: a `^{commit}` after it
    was searched for as text ("names a commit, not a commit"); `<rev>:<path>` is a blob."""
    root = _repo(tmp_path)
    write(root, "a.txt", "two\n")
    commit_all(root, "second, with words")
    from pq.errors import ConfigError

    with Git.open(root) as g:
        assert g.resolve(":/first") == git(root, "rev-parse", ":/first")
        assert g.resolve(":/second, with") == git(root, "rev-parse", "HEAD")
        assert g.try_resolve(":/no such message") is None
        with pytest.raises(ConfigError, match="names a blob, not a commit"):
            g.resolve("HEAD:a.txt")
        with pytest.raises(ConfigError, match="names a tree, not a commit"):
            g.resolve("HEAD:dir")


@pytest.mark.parametrize("fmt", ["sha1", "sha256"])
def test_odb_reads_writes_and_hashes_as_git_does(tmp_path: Path, fmt: str) -> None:
    root = _repo(tmp_path, fmt)
    with Git.open(root) as g:
        assert g.object_format() == fmt
        data = b"hello\r\nworld\0bytes"
        oid = g.write_blob(data)
        assert len(oid) == (64 if fmt == "sha256" else 40)
        assert oid == g.hash_blob(data)
        assert git(root, "cat-file", "-t", oid) == "blob"  # git sees the written object
        assert git(root, "hash-object", "--stdin", input=data) == oid
        head = g.commit("HEAD")
        assert head.tree == git(root, "rev-parse", "HEAD^{tree}")
        assert g.blob("HEAD:a.txt") == b"one\n"
        commit = g.write_commit(head.tree, [head.id], head.author, head.committer, "again\n",
                                branch=False)
        assert git(root, "log", "-1", "--format=%s", commit) == "again"
        assert git(root, "rev-parse", f"{commit}^") == head.id


def test_odb_writes_loose_objects_git_accepts(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    objects = root / ".git" / "objects"
    with Git.open(root) as g:
        oid = g.write_blob(b"loose\n" * 1000)
        tree = g.write_object("tree", b"100644 x\0" + bytes.fromhex(oid))
    path = objects / oid[:2] / oid[2:]
    assert path.is_file() and not path.stat().st_mode & 0o222  # read-only, as git's
    assert not list(objects.glob("*/tmp_obj_*"))  # nothing left half-written
    assert git(root, "cat-file", "-p", oid) == "loose\n" * 999 + "loose"
    assert git(root, "ls-tree", tree) == f"100644 blob {oid}\tx"
    git(root, "fsck", "--strict", "--no-dangling")
    with Git.open(root) as g:  # a second process writing the same object leaves it be
        before = path.stat().st_mtime_ns
        assert g.write_blob(b"loose\n" * 1000) == oid
    assert path.stat().st_mtime_ns == before


def test_odb_read_many_reports_missing_and_caches(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    with Git.open(root) as g:
        found = g.odb.read_many(["HEAD:a.txt", "HEAD:nope", "HEAD:dir"])
        assert found[0] is not None and found[0][1:] == ("blob", b"one\n")
        assert found[1] is None
        assert found[2] is not None and found[2][1] == "tree"
        blob_id = found[0][0]
        # Objects never change: once read, an id is answered from the cache, even after
        # the object is gone from disk.
        obj_file = root / ".git" / "objects" / blob_id[:2] / blob_id[2:]
        obj_file.chmod(0o644)
        obj_file.unlink()
        assert g.blob(blob_id) == b"one\n"
        assert g.odb.kind("0" * 40) is None
        with pytest.raises(GitError):
            g.blob("HEAD:nope")
        with pytest.raises(GitError):
            g.commit("HEAD:a.txt")


def test_trees_edit_writes_the_tree_git_would(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    with Git.open(root) as g:
        trees = Trees(g)
        head = g.head()
        tree = trees.tree_of(head)
        new_blob = g.write_blob(b"three\n")
        edited = trees.edit(tree, {"dir/c.txt": ("100644", new_blob), "a.txt": None,
                                   "dir/sub/d.txt": ("100755", new_blob)})
        listing = git(root, "ls-tree", "-r", edited).splitlines()
        assert [line.split("\t")[1] for line in listing] == [
            "dir/b.txt", "dir/c.txt", "dir/sub/d.txt"]
        assert listing[2].startswith("100755 blob " + new_blob)
        assert git(root, "fsck", "--no-dangling", "--strict") == ""
        assert trees.lookup(edited, "dir/c.txt") == ("100644", new_blob)
        assert trees.lookup(edited, "a.txt") is None
        assert trees.without(edited, ("dir",)) == g.empty_tree()


def test_commit_changes_and_commit_patches_parse_each_commit(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    first = git(root, "rev-parse", "HEAD")
    write(root, "a.txt", "one\nmore\n")
    write(root, "dir/b.txt", "two\nmore\n")
    second = commit_all(root, "second")
    git(root, "commit", "-q", "--allow-empty", "-m", "empty")
    third = git(root, "rev-parse", "HEAD")
    with Git.open(root) as g:
        changes = g.commit_changes([second, third])
        assert [c[0] for c in changes[second]] == ["a.txt", "dir/b.txt"]
        assert changes[third] == []
        patches = g.commit_patches([second, third, first], exclude=[":(exclude)dir"])
        assert patches[second].startswith(b"diff --git a/a.txt b/a.txt\n")
        assert b"+more\n" in patches[second] and second.encode() not in patches[second]
        assert patches[third] == b""
        assert b"dir/b.txt" not in patches[second]  # excluded
        # a root commit: its diff against no tree (git's patch ids read it so: an upstream
        # history merged in holds one, which a patch may match)
        assert patches[first].startswith(b"diff --git a/a.txt b/a.txt\nnew file mode")


def test_commit_patches_splits_binary_diffs_by_commit(tmp_path: Path) -> None:
    """Each commit's diff is its own, a binary one's base85 lines included, whatever the
    order the commits are asked in."""
    root = _repo(tmp_path)
    (root / "w.bin").write_bytes(bytes(range(256)) * 400 + b"\0")
    big = commit_all(root, "binary")
    write(root, "a.txt", "one\nmore\n")
    text = commit_all(root, "text")
    (root / "w.bin").write_bytes(b"\0" + bytes(range(256)) * 400)
    again = commit_all(root, "binary again")
    with Git.open(root) as g:
        patches = g.commit_patches([again, big, text])
    for commit, patch in patches.items():
        assert patch == subprocess.run(
            ["git", "diff-tree", "-p", "--binary", "--full-index", "--no-color", commit],
            cwd=root, capture_output=True, check=True).stdout.split(b"\n", 1)[1], commit
    assert b"GIT binary patch" in patches[big] and b"a.txt" not in patches[big]


def test_ls_files_of_many_paths_lists_what_git_matches(tmp_path: Path) -> None:
    """Past 128 literal paths pq lists the whole index and keeps those paths itself (git
    matches every entry against every pathspec); the records are git's own, in order,
    under literal pathspec rules: a folder's files, a name with `*`, none of a prefix."""
    root = _repo(tmp_path)
    for i in range(300):
        write(root, f"d{i % 7}/sub dir/f{i}.txt", f"{i}\n")
    write(root, "lit*.txt", "star\n")
    write(root, "d1x/f.txt", "prefix\n")  # `d1` names no file of d1x/
    write(root, "é/ü.txt", "u\n")
    commit_all(root, "many")
    paths = [f"d{i % 7}/sub dir/f{i}.txt" for i in range(0, 300, 2)]
    paths += ["d1", "lit*.txt", "é", "missing/file", "a.txt/nothing"]
    expected_s = zsplit(subprocess.run(["git", "--literal-pathspecs", "ls-files", "-s", "-z",
                                        "--", *paths], cwd=root, capture_output=True,
                                       check=True).stdout)
    expected = zsplit(subprocess.run(["git", "--literal-pathspecs", "ls-files", "-z", "--",
                                      *paths], cwd=root, capture_output=True,
                                     check=True).stdout)
    with Git.open(root) as g:
        assert g.ls_files(paths, stage=True, literal=True) == expected_s
        assert g.ls_files(paths, stage=True, env={"GIT_LITERAL_PATHSPECS": "1"}) == expected_s
        assert g.ls_files(paths, literal=True) == expected
        assert {"lit*.txt", "é/ü.txt", "d1/sub dir/f1.txt"} <= set(expected)
        assert "d1x/f.txt" not in expected and len(expected) > 150
        assert g.flagged(paths) == set()


def test_verbs_index_refs_and_notes(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    with Git.open(root) as g:
        head = g.head()
        write(root, "new file.txt", "x\n")
        write(root, "a.txt", "changed\n")
        assert g.ls_files(others=True) == ["new file.txt"]
        assert g.diff_names() == ["a.txt"]
        assert ("??", "new file.txt") in g.status_porcelain(untracked=True)
        g.add(["new file.txt"])
        assert "new file.txt" in g.diff_names("HEAD", paths=["new file.txt"]) or \
            g.ls_files(["new file.txt"], stage=True)[0].endswith("\tnew file.txt")
        tree = g.write_tree()
        assert [e[3] for e in g.ls_tree(tree)] == ["a.txt", "dir/b.txt", "new file.txt"]
        assert g.changed_paths(g.tree_of(head), tree, diff_filter="A") == ["new file.txt"]
        assert g.rev_list("HEAD", ["a.txt"], max_count=1) == [head]
        assert not g.has_refs_under("refs/pq/")
        g.update_ref("refs/pq/x", head)
        assert g.has_refs_under("refs/pq/") and g.ref_exists("refs/pq/x")
        assert g.notes("refs/notes/t") == []
        blob = g.write_blob(b"{}")
        g.add_note("refs/notes/t", head, blob)
        assert g.notes("refs/notes/t") == [(blob, head)]
        assert g.notes("refs/notes/t", head) == [(blob, head)]
        assert g.notes("refs/notes/t", g.tree_of(head)) == []
        git(root, "config", "pq.one", "1")
        assert g.config_matching(r"^pq\.") == {"pq.one": "1"}
        assert g.log_files("HEAD") == [(CommitId(head), frozenset({"a.txt", "dir/b.txt"}))]


def test_unmerged_codes_are_git_status_codes_for_every_kind(tmp_path: Path) -> None:
    """Read from the index's stages alone, each unmerged path gets the code `git status`
    gives it: both modified, both added, deleted by either side, and a rename/rename
    conflict's both deleted, added by us and added by them."""
    repo = _repo(tmp_path)
    for name in ("uu", "du", "ud", "ren"):
        write(repo, name, "".join(f"{name} line {i}\n" for i in range(20)))
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "theirs")
    write(repo, "uu", "theirs\n")
    write(repo, "aa", "theirs\n")
    write(repo, "du", "theirs\n")
    (repo / "ud").unlink()
    git(repo, "mv", "ren", "ren-theirs")
    commit_all(repo, "theirs")
    git(repo, "checkout", "-q", "-")
    write(repo, "uu", "ours\n")
    write(repo, "aa", "ours\n")
    (repo / "du").unlink()
    write(repo, "ud", "ours\n")
    git(repo, "mv", "ren", "ren-ours")
    commit_all(repo, "ours")
    git(repo, "merge", "-q", "theirs", check=False)
    status = {f[3:]: f[:2] for f in zsplit(
        git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=no"))}
    with Git.open(repo) as g:
        found = g.unmerged()
    assert found == status
    assert found == {"uu": "UU", "aa": "AA", "du": "DU", "ud": "UD", "ren": "DD",
                     "ren-ours": "AU", "ren-theirs": "UA"}


@pytest.mark.parametrize("batch", [1, 2000])
def test_an_interrupted_read_neither_hangs_nor_desynchronises_the_reader(
        tmp_path: Path, batch: int) -> None:
    """Ctrl-C in the middle of reading cat-file's answers (a batch whose requests and
    answers both fill their pipes, or a single read): the interrupt goes through at once,
    and the next read gets the right objects from a new cat-file."""
    import threading

    repo = Git.open(_repo(tmp_path))
    blobs = [repo.write_blob(b"blob %d\n" % i * 40) for i in range(2000)]
    odb = repo.odb
    odb._cache.clear()  # written here, the blobs are remembered: read them from git
    real = odb._read_one
    answers = [0]

    def interrupted(stream: object, rev: str) -> object:
        answers[0] += 1
        if answers[0] == min(5, batch):
            raise KeyboardInterrupt
        return real(stream, rev)  # type: ignore[arg-type]

    odb._read_one = interrupted  # type: ignore[method-assign]
    raised: list[BaseException] = []

    def read() -> None:
        try:
            odb.read_many(blobs[:batch])
        except BaseException as exc:
            raised.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "the interrupted read hangs"
    assert [type(e) for e in raised] == [KeyboardInterrupt]
    odb._read_one = real  # type: ignore[method-assign]
    odb._cache.clear()
    assert [o[2] for o in odb.read_many(blobs[1990:]) if o] == [
        b"blob %d\n" % i * 40 for i in range(1990, 2000)]
    odb.close()


def test_a_repository_in_a_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """git prints the folder's bytes as they are; pq opens the repository all the same
    (its paths keep the byte as a surrogate escape) and runs a whole cycle there."""
    fork = make_fork(tmp_path / os.fsdecode(b"fork-\xff"))
    glue = (fork / "pkg/__init__.py").read_text()
    write(fork, "pkg/__init__.py", glue.replace("return x", "return x  # paddle"))
    commit_all(fork, "python-glue: op")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream = tmp_path / os.fsdecode(b"fork-\xff") / "upstream"
    write(upstream, "pkg/__init__.py", glue.replace("import torch", "import torch  # up"))
    commit_all(upstream, "upstream: moved")
    git(fork, "fetch", "-q", "upstream")
    rebased = pq(fork, "rebase", "upstream/main").output  # with git's merge
    assert "merged    0001-" in rebased and "1 of 1 patches kept" in rebased
    assert "series consistent" in pq(fork, "check").output
    assert Git.open(fork).root == fork


def test_an_object_git_cannot_take_is_a_one_line_error(tmp_path: Path) -> None:
    """A read-only or full disk under .git/objects: pq's error, not an internal one."""
    root = _repo(tmp_path)
    repo = Git.open(root)
    data = next(d for d in (b"blob %d\n" % i for i in range(99))
                if not (root / ".git/objects" / repo.hash_blob(d)[:2]).exists())
    (root / ".git/objects" / repo.hash_blob(data)[:2]).write_bytes(b"")  # no folder there
    with pytest.raises(GitError, match=r"^cannot write to .*objects: ") as caught:
        repo.write_blob(data)
    assert "writable" in (caught.value.hint or "")


def test_a_lock_file_in_the_way_is_named_with_the_way_to_clear_it(tmp_path: Path) -> None:
    """git's paragraph about an existing index.lock becomes the file and the fix: which
    file is in the way, and `rm` it once no git process runs."""
    root = _repo(tmp_path)
    lock = root / ".git" / "index.lock"
    lock.write_text("")
    with Git.open(root) as g, pytest.raises(GitError) as caught:
        g.run("reset", "--hard", "-q", "HEAD")
    error = caught.value
    assert error.message == (f"`git reset --hard -q HEAD` could not run: {lock} exists "
                             "(another git process is working in this repository, or one "
                             "was killed and left it)")
    assert error.hint == (f"once no git process runs here, `rm {lock}`, then run the pq "
                          "command again")
    lock.unlink()
    # Anything else git says is passed on as it was.
    with Git.open(root) as g, pytest.raises(GitError, match=r"^`git rev-parse --verify "
                                            r"nowhere` failed with exit 128: fatal: Needed "
                                            r"a single revision$"):
        g.run("rev-parse", "--verify", "nowhere")


def test_a_lock_file_is_named_by_a_git_that_says_nothing_and_in_a_quoted_folder(
        tmp_path: Path) -> None:
    """`git update-index -q --refresh` fails without a word when index.lock is there: the
    lock is named all the same; and a folder holding a quote is found whole."""
    root = tmp_path / "it's"
    root.mkdir()
    root = _repo(root)
    lock = root / ".git" / "index.lock"
    lock.write_text("")
    (root / "a.txt").touch()  # a stat change, so that the refresh must write the index
    with Git.open(root) as g:
        for args in (("update-index", "-q", "--refresh"), ("reset", "-q", "--hard")):
            with pytest.raises(GitError, match=rf"could not run: {re.escape(str(lock))} "
                                               r"exists \(another git"):
                g.run(*args)


def test_a_silent_failure_whose_lock_is_gone_says_what_git_did_not(tmp_path: Path) -> None:
    """A lock another git process held for a moment is gone by the time pq looks for it:
    `update-index -q` failed without a word, and pq said "(no message)"."""
    from pq.git.failures import failure

    root = _repo(tmp_path)
    lock = root / ".git" / "index.lock"
    lock.write_text("")
    (root / "a.txt").touch()
    args = ("update-index", "-q", "--refresh")
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True)
    assert proc.returncode == 128 and proc.stderr == b""
    lock.unlink()  # the other process let it go
    error = failure(args, proc, lock)
    assert error.message == (f"`git update-index -q --refresh` failed with exit 128 and said "
                             f"nothing, as it does when another git process holds {lock}")
    assert error.hint == ("once no other git command runs in this repository, run the pq "
                          "command again")


@pytest.mark.parametrize("case", ["apply", "undo"])
def test_commands_with_messages_of_their_own_name_a_lock_in_the_way(tmp_path: Path,
                                                                      case: str) -> None:
    """The moves that word git's refusal themselves (pq apply's checkout, undo's move of
    the branch) name a lock file too, with the fix for it, not "commit or stash"."""
    fork = one_patch_fork(tmp_path, {"pkg/extra.py": "X = 1\n"}, {"README": "moved\n"})
    if case == "apply":
        lock = fork / ".git" / "index.lock"
        lock.write_text("")
        said = pq(fork, "apply", "-b", "rebuilt", ok=False)
        start = "pq apply cannot update the working tree: "
    else:
        write(fork, "pkg/extra.py", "X = 2\n")
        commit_all(fork, "python-glue: more")
        pq(fork, "export", "--commit")
        lock = fork / ".git" / "refs" / "heads" / "paddle.lock"
        lock.write_text("")
        said = pq(fork, "undo", ok=False)
        start = "undoing operation"
    assert said.exit_code == 2 and len(said.output.strip().splitlines()) == 1
    line = said.output.strip()
    assert line.startswith("pq: error: " + start), line
    assert f": {lock} exists (another git process is working" in line
    assert line.endswith(f"(once no git process runs here, `rm {lock}`, then run the pq "
                         "command again)")
    lock.unlink()
    pq(fork, "apply" if case == "apply" else "undo", *(["-b", "rebuilt"] if case == "apply"
                                                        else []))


@pytest.mark.parametrize("raw", ["A U Thor <a@x> 1700000000 +0000",
                                 "<noname@x> 1700000000 +0000",  # git fsck's missingName
                                 "Trailing  <a@x> 1 -0000"])
def test_an_identity_is_written_back_as_it_was_read(raw: str) -> None:
    assert Person.parse(raw).ident() == raw


def test_a_commit_header_given_twice_is_read_as_git_reads_it_the_first() -> None:
    """git reads a commit's first `encoding` (and author, committer) line; so does pq."""
    from pq.git.objects import CommitId, parse_commit

    data = (b"tree " + b"4" * 40 + b"\nauthor A <a@x> 1 +0000\nauthor B <b@x> 2 +0000\n"
            b"committer C <c@x>  3 +0000\nencoding UTF-8\nencoding ISO-8859-1\n\ncaf\xc3\xa9\n")
    commit = parse_commit(CommitId("1" * 40), data)
    assert commit.encoding == "UTF-8" and commit.author.name == "A"
    assert commit.committer.ident() == "C <c@x>  3 +0000"  # two spaces, kept


def test_ls_tree_reads_paths_as_they_are(tmp_path: Path) -> None:
    """A file named like pathspec magic is that file, not the pattern."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    write(root, ":(top)q", "a\n")
    write(root, "q", "b\n")
    commit_all(root, "two files")
    with Git.open(root) as repo:
        assert [p for *_, p in repo.ls_tree("HEAD", [":(top)q"])] == [":(top)q"]


def test_removing_a_worktree_while_another_takes_the_emptied_folder(tmp_path: Path) -> None:
    """Two gates ending together: one's `git worktree remove` deletes `.git/worktrees`
    once it is empty, while the other looks through it for its own record. That was a
    FileNotFoundError out of `pq gate` (a --json report with no status)."""
    import time

    fork = make_fork(tmp_path)
    with flickering(fork / ".git/worktrees"), Git.open(fork) as repo:  # another gate's git
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            repo.remove_worktree(tmp_path / "gone")
