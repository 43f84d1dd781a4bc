"""The operation log's format: entries on refs/pq/oplog, read and written (real repos)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, git, write

from pq.git.repo import Git
from pq.oplog import log
from pq.oplog.snapshot import take
from pq.oplog.txn import Transaction, settle_stopped
from pq.oplog.undo import run as undo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "a.txt", "a\n")
    commit_all(root, "base")
    return root


def branch_commit(root: Path, name: str) -> str:
    tree = git(root, "rev-parse", "HEAD^{tree}")
    sha = git(root, "commit-tree", tree, "-p", "HEAD", "-m", name)
    git(root, "update-ref", f"refs/heads/{name}", sha)
    return sha


def parents(root: Path, rev: str) -> list[str]:
    return git(root, "rev-list", "--no-walk", "--parents", rev).split()[1:]


def test_an_entry_holds_its_record_and_both_snapshots_in_its_tree(repo: Path) -> None:
    with Git.open(repo) as g:
        before = take(g)
        with Transaction(g, "pq test") as t:
            write(repo, "series.yaml", "ref: main  # a comment\n")
            write(repo, "patches/one.patch", "x\n")
            g.update_ref("refs/pq/test", g.head())
            t.done()
        after = take(g)
        [record] = log.read(g)
        assert {k: record[k] for k in ("id", "command", "kind", "status", "target")} == {
            "id": 1, "command": "pq test", "kind": "command", "status": "done",
            "target": None}
        assert "before" not in record  # snapshots are read on demand
        log.load(g, record)
        assert record["before"] == before and record["after"] == after
    paths = git(repo, "ls-tree", "-r", "--name-only", "refs/pq/oplog").splitlines()
    assert {"record/id", "record/command", "record/status", "before/refs", "after/refs",
            "after/queue/series.yaml", "after/queue/patches/one.patch"} <= set(paths)
    assert not any(p.startswith("before/queue/") for p in paths)
    assert git(repo, "show", "refs/pq/oplog:after/queue/series.yaml") == \
        "ref: main  # a comment"


def test_first_parent_is_the_previous_entry_and_only_new_tips_are_parents(
        repo: Path) -> None:
    with Git.open(repo) as g:
        with Transaction(g, "pq one") as t:
            branch_commit(repo, "b1")
            t.done()
        first = git(repo, "rev-parse", "refs/pq/oplog")
        with Transaction(g, "pq two") as t:
            tip = branch_commit(repo, "b2")
            t.done()
        second = git(repo, "rev-parse", "refs/pq/oplog")
        assert [r["id"] for r in log.read(g)] == [1, 2]
    assert parents(repo, second) == [first, tip]  # main and b1 are kept through `first`
    main = git(repo, "rev-parse", "main")
    assert parents(repo, first) == sorted([main, git(repo, "rev-parse", "b1")])


def test_an_operation_that_changed_nothing_leaves_no_entry(repo: Path) -> None:
    with Git.open(repo) as g:
        with Transaction(g, "pq one") as t:
            branch_commit(repo, "b1")
            t.done()
        tip = git(repo, "rev-parse", "refs/pq/oplog")
        with Transaction(g, "pq nothing") as t:
            t.done()
        assert git(repo, "rev-parse", "refs/pq/oplog") == tip
        with Transaction(g, "pq first") as t:
            pass
        assert [r["command"] for r in log.read(g)] == ["pq one"]


def test_two_hundred_branches_hang_from_anchors_and_survive_gc(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    blob = git(repo, "rev-parse", "HEAD:a.txt")
    stream = "".join(f"commit refs/heads/b{i:03}\ncommitter C <c@x> 1700000000 +0000\n"
                     f"data 4\nb{i:03}\nfrom {base}\nM 100644 {blob} f{i}.txt\n\n"
                     for i in range(200))
    git(repo, "fast-import", "--quiet", input=stream.encode())
    tips = git(repo, "for-each-ref", "--format=%(objectname)", "refs/heads/b*").split()
    assert len(set(tips)) == 200
    with Git.open(repo) as g, Transaction(g, "pq delete them") as t:
        git(repo, "update-ref", "--stdin",
            input="".join(f"delete refs/heads/b{i:03}\n" for i in range(200)).encode())
        t.done()
    for line in git(repo, "rev-list", "--parents", "refs/pq/oplog", "--not", base
                    ).splitlines():
        assert len(line.split()) - 1 <= log.PARENT_CAP, line
    assert len(parents(repo, "refs/pq/oplog")) <= log.PARENT_CAP
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    assert git(repo, "cat-file", "--batch-check", input="\n".join(tips).encode()
               ).count(" commit ") == 200
    with Git.open(repo) as g:
        result = undo(g)
    assert result.target_id == 1 and len(result.refs) == 200
    assert sorted(git(repo, "for-each-ref", "--format=%(objectname)", "refs/heads/b*"
                      ).split()) == sorted(tips)


def test_a_stop_is_settled_by_the_operation_that_ends_it(repo: Path) -> None:
    with Git.open(repo) as g:
        with Transaction(g, "pq rebase main") as t:
            branch_commit(repo, "b1")
            t.done("stopped")
        with Transaction(g, "pq rebase --continue") as t:
            branch_commit(repo, "b2")
            settle_stopped(g, "done", None)  # a rebase an older pq started: the whole log
        assert [(r["id"], r["status"]) for r in log.read(g)] == [(1, "done"), (2, "done")]
        with Transaction(g, "pq rebase main") as t:
            branch_commit(repo, "b3")
            t.done("stopped")
        with Transaction(g, "pq rebase --abort") as t:
            branch_commit(repo, "b4")
            settle_stopped(g, "aborted", 3)
        assert [r["status"] for r in log.read(g)] == ["done", "done", "aborted", "done"]


def test_settling_reads_the_log_back_to_the_rebase_that_stopped_only(repo: Path) -> None:
    """An abort's cost does not grow with the log: entries before the rebase began are
    neither read nor settled (a stop left by a rebase that ended otherwise stays)."""
    with Git.open(repo) as g:
        with Transaction(g, "pq rebase main") as t:
            branch_commit(repo, "b1")
            t.done("stopped")  # 1: its rebase state was lost
        for n in range(2, 5):
            with Transaction(g, f"pq export {n}"):
                branch_commit(repo, f"c{n}")
        with Transaction(g, "pq rebase main") as t:
            branch_commit(repo, "b5")
            t.done("stopped")  # 5
        with Transaction(g, "pq rebase --continue") as t:
            branch_commit(repo, "b6")
            t.done("stopped")  # 6
        assert [r["id"] for r in log.read(g, 5)] == [5, 6]
        with Transaction(g, "pq rebase --abort"):
            branch_commit(repo, "b7")
            settle_stopped(g, "aborted", 5)
        assert [(r["id"], r["status"]) for r in log.read(g)] == [
            (1, "stopped"), (2, "done"), (3, "done"), (4, "done"), (5, "aborted"),
            (6, "aborted"), (7, "done")]


def test_an_entry_out_of_order_is_refused_with_the_fix(repo: Path) -> None:
    with Git.open(repo) as g:
        for name in ("b1", "b2"):
            with Transaction(g, "pq " + name) as t:
                branch_commit(repo, name)
                t.done()
    env_tree = git(repo, "rev-parse", "refs/pq/oplog^{tree}")
    # A copy of entry 2 whose record says 1: ids must go down along the chain.
    one = git(repo, "hash-object", "-w", "--stdin", input=b"1")
    listing = git(repo, "ls-tree", "refs/pq/oplog:record").replace(
        git(repo, "rev-parse", "refs/pq/oplog:record/id"), one)
    record = git(repo, "mktree", input=(listing + "\n").encode())
    top = git(repo, "ls-tree", env_tree).replace(
        git(repo, "rev-parse", "refs/pq/oplog:record"), record)
    tree = git(repo, "mktree", input=(top + "\n").encode())
    prev = git(repo, "rev-parse", "refs/pq/oplog^")
    bad = git(repo, "commit-tree", tree, "-p", prev, "-m", "x")
    git(repo, "update-ref", "refs/pq/oplog", bad)
    with Git.open(repo) as g, pytest.raises(log.LogCorrupt) as info:
        log.read(g)
    assert "refs/pq/oplog: entry" in info.value.render()
    assert "git update-ref -d refs/pq/oplog" in info.value.render()


def test_a_log_ref_to_a_blob_is_a_damaged_log_not_an_empty_one(repo: Path) -> None:
    with Git.open(repo) as g, Transaction(g, "pq b1") as t:
        branch_commit(repo, "b1")
        t.done()
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"hi\n")
    git(repo, "update-ref", "refs/pq/oplog", blob)
    for reading in (log.read, log.tip):
        with Git.open(repo) as g, pytest.raises(log.LogCorrupt) as info:
            reading(g)
        assert f"refs/pq/oplog: entry {blob[:12]} is not a pq log entry (a blob, not a " \
               "commit)" in info.value.render()
        assert "git update-ref -d refs/pq/oplog" in info.value.render()
    git(repo, "update-ref", "-d", "refs/pq/oplog")
    with Git.open(repo) as g:
        assert log.tip(g) is None and log.read(g) == []


def test_settling_reads_the_whole_log_when_it_was_started_again(repo: Path) -> None:
    """The log dropped after the rebase began (`git update-ref -d refs/pq/oplog`, as a
    corrupt log's fix says): its ids restart at 1, and the stops since are still found."""
    with Git.open(repo) as g:
        for n in range(1, 3):
            with Transaction(g, f"pq export {n}"):
                branch_commit(repo, f"c{n}")
        with Transaction(g, "pq rebase main") as t:
            branch_commit(repo, "b3")
            t.done("stopped")  # 3: the rebase's state says log_id 3
        git(repo, "update-ref", "-d", "refs/pq/oplog")
        with Transaction(g, "pq rebase --continue") as t:
            branch_commit(repo, "b4")
            t.done("stopped")  # 1, in the new log
        with Transaction(g, "pq rebase --abort"):
            branch_commit(repo, "b5")
            settle_stopped(g, "aborted", 3)
        assert [(r["id"], r["status"]) for r in log.read(g)] == [(1, "aborted"), (2, "done")]


def test_a_pq_ref_whose_object_is_gone_is_named_with_a_fix_that_works(tmp_path: Path) -> None:
    """refs/pq/oplog pointing at an object the repository lacks (a pruned or damaged
    repository): `pq log` said "no operations logged yet", `pq undo` gave git's error."""
    from gitrepo import make_fork, migrate, pq

    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "pack-refs", "--all")
    (fork / ".git" / "refs" / "pq").mkdir(parents=True, exist_ok=True)
    (fork / ".git" / "refs" / "pq" / "oplog").write_text("12" * 20 + "\n")
    for args in (["log"], ["undo"]):
        result = pq(fork, *args, ok=False)
        assert result.exit_code == 2, (args, result.output)
        assert "`git update-ref -d refs/pq/oplog`" in result.output, result.output
        assert "no operations logged yet" not in result.output
    git(fork, "update-ref", "-d", "refs/pq/oplog")  # the fix named
    assert pq(fork, "log").exit_code == 0


def test_a_log_ref_moved_onto_a_branch_names_a_fix_that_works(tmp_path: Path) -> None:
    """`git update-ref refs/pq/oplog HEAD`: the fix named its parent, no entry either, so
    following it moved the same error one commit down, again and again."""
    from gitrepo import make_fork, migrate, pq

    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "update-ref", "refs/pq/oplog", "HEAD")
    result = pq(fork, "log", ok=False)
    assert result.exit_code == 2 and "is not a pq log entry (it has no record/ folder)" in \
        result.output, result.output
    assert "`git update-ref -d refs/pq/oplog` starts a new log" in result.output
    git(fork, "update-ref", "-d", "refs/pq/oplog")
    assert pq(fork, "log").exit_code == 0


def test_a_damaged_entry_is_named_whatever_lies_beyond_it(repo: Path) -> None:
    """Reading the log ahead in batches never changes what the walk reports: an entry
    without its record/ folder is named as such, although the entry below it has a tree
    that does not parse (the walk never gets there)."""
    with Git.open(repo) as g:
        for name in ("b1", "b2", "b3"):
            with Transaction(g, "pq " + name) as t:
                branch_commit(repo, name)
                t.done()
    e3, e2, e1 = git(repo, "rev-list", "--first-parent", "-n", "3", "refs/pq/oplog").split()

    def raw(kind: str, data: bytes) -> str:
        return git(repo, "hash-object", "--literally", "-w", "-t", kind, "--stdin", input=data)

    def commit(tree: str, parents: list[str], message: str) -> str:
        who = "pq <pq@localhost> 1 +0000"
        head = "".join(f"parent {p}\n" for p in parents)
        return raw("commit", f"tree {tree}\n{head}author {who}\ncommitter {who}\n\n"
                             f"{message}\n".encode())

    def tree_without(tree: str, name: str, extra: str = "") -> str:
        rows = [r for r in git(repo, "ls-tree", tree).splitlines() if not r.endswith("\t" + name)]
        return git(repo, "mktree", input=("\n".join(rows) + "\n" + extra).encode())

    new1 = commit(raw("tree", b"junk"), [], "pq oplog 1: pq b1 (done)")
    new2 = commit(tree_without(f"{e2}^{{tree}}", "record"), [new1], "pq oplog 2: pq b2 (done)")
    previous = git(repo, "hash-object", "-w", "--stdin", input=new2.encode())
    record = tree_without(f"{e3}:record", "previous", f"100644 blob {previous}\tprevious\n")
    top = tree_without(f"{e3}^{{tree}}", "record", f"040000 tree {record}\trecord\n")
    git(repo, "update-ref", "refs/pq/oplog", commit(top, [new2, *parents(repo, e3)[1:]],
                                                     "pq oplog 3: pq b3 (done)"))
    with Git.open(repo) as g, pytest.raises(log.LogCorrupt) as info:
        log.read(g)
    assert f"entry {new2[:12]} is not a pq log entry (it has no record/ folder)" in \
        info.value.render()


@pytest.mark.parametrize("field", ["id", "pid", "target"])
def test_a_record_number_of_thousands_of_digits_is_a_damaged_entry(repo: Path,
                                                                  field: str) -> None:
    """Python refuses to read an int of more than 4300 digits (a ValueError): such a
    record/id, pid or target is a damaged entry, named as one, not an internal error."""
    with Git.open(repo) as g, Transaction(g, "pq b1") as t:
        branch_commit(repo, "b1")
        t.done()
    tip = git(repo, "rev-parse", "refs/pq/oplog")
    big = git(repo, "hash-object", "-w", "--stdin", input=b"9" * 5000)
    rows = [r for r in git(repo, "ls-tree", f"{tip}:record").splitlines()
            if not r.endswith("\t" + field)]
    record = git(repo, "mktree", input=("\n".join(rows) + f"\n100644 blob {big}\t{field}\n")
                 .encode())
    rows = [r for r in git(repo, "ls-tree", f"{tip}^{{tree}}").splitlines()
            if not r.endswith("\trecord")]
    top = git(repo, "mktree", input=("\n".join(rows) + f"\n040000 tree {record}\trecord\n")
              .encode())
    message = git(repo, "log", "-1", "--format=%B", tip)
    git(repo, "update-ref", "refs/pq/oplog",
        git(repo, "commit-tree", top, *sum((["-p", p] for p in parents(repo, tip)), []),
            "-m", message))
    with Git.open(repo) as g, pytest.raises(log.LogCorrupt) as info:
        log.read(g)
    assert "is not a pq log entry (record/id, pid, target or settles is malformed)" in \
        info.value.render()
