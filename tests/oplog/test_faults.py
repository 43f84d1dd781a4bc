"""Fault injection: pq is killed (SIGKILL) at each checkpoint of every command that rewrites
history, then recovered with `pq rebase --abort` or `pq undo`; the repository must then be
exactly as it was before the command: refs, HEAD, index, every working tree byte, pq state.

Each command first runs once with PQ_FAULT_LOG to count its checkpoints N; then, for each
chosen k in 1..N, a fresh copy of a template repository runs it with PQ_FAULT_AT=k, using
the real `pq` console script in a subprocess so that the SIGKILL kills just that process.

`export --commit`, `apply` and `apply --branch` are killed at every checkpoint. The three
rebase runs (clean, stopping at a conflict, `--continue`) and `undo` are killed right after
each step that can change what is on disk (a file write, rename or unlink, or a git command
that may move a ref, HEAD, the index or the working tree) and at the first and last
checkpoint: a kill between two such steps, after a read or an object write, finds exactly
the same files and refs as the kill right after the earlier step, so these runs cover every
distinct state a kill can leave with well under half the runs (about 65 instead of 170), and
the file stays around a minute and a half on 2 cores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, write

PQ = str(Path(sys.executable).parent / "pq")
WORKERS = max(1, min(4, os.cpu_count() or 1))

State = dict[str, object]


def repo_state(root: Path) -> State:
    """Everything a user could lose: refs, HEAD, index, working tree files, pq's state.

    The operation log itself (refs/pq/oplog) is left out: it records the killed command and
    its undo, which is the point of it.
    """
    refs = [ln for ln in git(root, "for-each-ref", "--format=%(refname) %(objectname)")
            .splitlines() if not ln.startswith("refs/pq/oplog")]
    head = git(root, "symbolic-ref", "-q", "HEAD", check=False) or \
        "detached " + git(root, "rev-parse", "HEAD")
    files: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                files[rel] = ("link", os.readlink(p))
            else:
                files[rel] = (st.st_mode & 0o111 != 0, p.read_bytes())
    pq_state: dict[str, bytes] = {}
    pq_dir = root / ".git" / "pq"
    if pq_dir.is_dir():
        for p in pq_dir.rglob("*"):
            rel = p.relative_to(pq_dir).as_posix()
            # Caches (hook, export, parsed YAML) are no state: snapshots leave them out too.
            if p.is_file() and not rel.startswith(("oplog", "lock", "sealed", "tmp")) \
                    and "cache" not in rel.split("/")[0]:
                pq_state[rel] = p.read_bytes()
    return {"refs": refs, "HEAD": head, "index": git(root, "ls-files", "-s"),
            "files": files, "pq": pq_state,
            "git-locks": sorted(p.name for p in (root / ".git").glob("*.lock"))}


def run_pq(root: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[bytes]:
    full = dict(os.environ, **env)
    return subprocess.run([PQ, *args], cwd=root, env=full, capture_output=True, timeout=120,
                          check=False)


def oplog_count(root: Path) -> int:
    """How many entries the operation log (refs/pq/oplog, first-parent chain) holds."""
    if not git(root, "for-each-ref", "refs/pq/oplog"):
        return 0
    return int(git(root, "rev-list", "--first-parent", "--count", "refs/pq/oplog"))


def rebase_in_progress(root: Path) -> bool:
    return (root / ".git" / "pq" / "rebase" / "state.json").exists()


def recover(root: Path, logged_before: int) -> str:
    """What a user does after pq died: abort a rebase, or undo the logged operation
    (and when that brings back a rebase stopped at a conflict, abort that too)."""
    how = []
    if not rebase_in_progress(root) and oplog_count(root) > logged_before:
        proc = run_pq(root, ["undo"])
        assert proc.returncode == 0, proc.stderr.decode()
        how.append("undo")
    if rebase_in_progress(root):
        proc = run_pq(root, ["rebase", "--abort"])
        assert proc.returncode == 0, proc.stderr.decode()
        how.append("abort")
    # Neither: killed before the operation was logged, when nothing may have changed yet.
    return "+".join(how) or "nothing"


def copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


def fault_run(template: Path, work: Path, args: list[str], k: int, expected: State,
              logged: int) -> tuple[int, str]:
    root = copy(template, work / f"k{k}")
    proc = run_pq(root, args, PQ_FAULT_AT=str(k))
    assert proc.returncode == -9, (k, proc.returncode, proc.stderr.decode())
    how = recover(root, logged)
    got = repo_state(root)
    for key in expected:
        assert got[key] == expected[key], f"checkpoint {k} ({how}): {key} differs"
    shutil.rmtree(root)
    return k, how


def count_checkpoints(template: Path, work: Path, args: list[str], code: int = 0
                      ) -> list[str]:
    root = copy(template, work / "count")
    log = work / "faults.log"
    proc = run_pq(root, args, PQ_FAULT_LOG=str(log))
    assert proc.returncode == code, proc.stderr.decode()
    labels = log.read_text().splitlines()
    # A second, clean run from the same state must meet the same checkpoints.
    again = copy(template, work / "count2")
    log2 = work / "faults2.log"
    run_pq(again, args, PQ_FAULT_LOG=str(log2))
    assert log2.read_text().splitlines() == labels, "checkpoints are not deterministic"
    return labels


# Steps after which the files and refs on disk may differ (see the module docstring).
_VISIBLE = re.compile(r"^\d+ (?:(?:write|rename) (?!blob$|tree$|commit$|tag$)|unlink |symlink |"
                      r"git (?:update-ref|symbolic-ref|reset|checkout|cherry-pick|add|commit|"
                      r"rm|update-index|read-tree|rerere|apply|stash|merge|am)$)")


def after_visible_steps(labels: list[str]) -> list[int]:
    ks = {1, len(labels)}
    ks |= {i + 2 for i, label in enumerate(labels[:-1]) if _VISIBLE.match(label)}
    return sorted(ks)


def check_all(template: Path, work: Path, args: list[str], *, spread: bool = False,
              code: int = 0, expected: State | None = None) -> dict[str, int]:
    expected = expected or repo_state(template)
    logged = oplog_count(template)
    labels = count_checkpoints(template, work, args, code)
    assert repo_state(work / "count") != expected, "the command changed nothing"
    chosen = after_visible_steps(labels) if spread else list(range(1, len(labels) + 1))
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda k: fault_run(template, work, args, k, expected,
                                                    logged), chosen))
    hows = [h for _, h in results]
    return {"checkpoints": len(labels), "tested": len(chosen),
            **{h: hows.count(h) for h in set(hows)}}


# -- the templates -------------------------------------------------------------------------

template_paths: dict[str, Path] = {}


def template(name: str, build: Callable[[Path], Path],
             factory: pytest.TempPathFactory) -> Path:
    if name not in template_paths:
        template_paths[name] = build(factory.mktemp(name))
    return template_paths[name]


def base_fork(tmp: Path) -> Path:
    """A fork with two patches in a committed series, an untracked note, and an upstream
    that moved on by one commit touching a file the patches do not touch."""
    fork = make_fork(tmp)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", "import torch  # scoped compat\n")
    commit_all(fork, "python-glue: scoped compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream = tmp / "upstream"
    write(upstream, "csrc/extra.cc", "int g() { return 2; }\n")
    commit_all(upstream, "upstream: extra")
    git(fork, "fetch", "-q", "upstream")
    write(fork, "notes.txt", "my untracked notes\n")
    return fork


def export_fork(tmp: Path) -> Path:
    fork = base_fork(tmp)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns 3")
    return fork


def conflict_fork(tmp: Path) -> Path:
    """base_fork, but upstream's new commit edits the line next to the build patch's."""
    fork = base_fork(tmp)
    upstream = tmp / "upstream"
    write(upstream, "setup.py", "from torch.utils import cpp_extension as ext\n\n"
          "setup(name='x')\n")
    commit_all(upstream, "upstream: rename the import")
    git(fork, "fetch", "-q", "upstream")
    return fork


def stopped_fork(tmp: Path) -> Path:
    """conflict_fork stopped in `pq rebase` at the conflict, the resolution staged."""
    fork = copy(template_paths["conflict"], tmp / "fork")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension as ext\n\nsetup(name='x')\n")
    git(fork, "add", "setup.py")
    return fork


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def test_export_commit(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("export", export_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["export", "--commit"])
    assert stats["undo"] > 0


def test_apply(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("base", base_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["apply", "--onto", "upstream/main"])
    assert stats["undo"] > 0


def test_apply_branch(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("base", base_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["apply", "--onto", "upstream/main", "--branch", "rebuilt"])
    assert stats["undo"] > 0


def test_rebase(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("base", base_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["rebase", "upstream/main"], spread=True)
    assert stats["abort"] > 0 and stats["undo"] > 0


def test_rebase_stopping_at_a_conflict(work: Path,
                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("conflict", conflict_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["rebase", "upstream/main"], spread=True, code=1)
    assert stats["abort"] > 0


def test_rebase_continue(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """After `--continue` is killed, `pq rebase --abort` (after `pq undo` when the rebase
    had already finished) must bring back the state from before the whole rebase."""
    before_rebase = repo_state(template("conflict", conflict_fork, tmp_path_factory))
    tpl = template("stopped", stopped_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["rebase", "--continue"], spread=True,
                      expected=before_rebase)
    assert stats["abort"] > 0 and stats["undo+abort"] > 0


def test_a_ctrl_c_as_continue_saves_the_resolution_leaves_both_ways_open(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A Ctrl-C between `--continue` saving the resolved patch as the stack's new tip and
    its reset to that tip (the index and files still hold the resolution, HEAD the tip
    before): the resolution is pq's, not the user's uncommitted work, so `--abort` goes
    back to before the rebase, and `--continue` finishes it, as the message promises."""
    before_rebase = repo_state(template("conflict", conflict_fork, tmp_path_factory))
    tpl = template("stopped", stopped_fork, tmp_path_factory)
    labels = [label.split(" ", 1)[1]  # "47 rename state.json"
              for label in count_checkpoints(tpl, work, ["rebase", "--continue"])]
    saved = labels.index("rename state.json") + 1  # 1-based: the checkpoint after it
    reset = labels.index("git reset", saved) + 1
    for k in range(saved + 1, reset + 1):
        for how in ("--abort", "--continue"):
            root = copy(tpl, work / f"k{k}{how}")
            proc = run_pq(root, ["rebase", "--continue"], PQ_FAULT_AT=str(k),
                          PQ_FAULT_RUN="kill -INT $PPID; sleep 0.3")
            assert proc.returncode == 130 and b"left in progress" in proc.stderr, (k, proc)
            after = run_pq(root, ["rebase", how])
            assert after.returncode == 0, (k, how, after.stderr.decode())
            if how == "--abort":
                assert repo_state(root) == before_rebase, k
            else:
                assert not rebase_in_progress(root)
                assert git(root, "status", "--porcelain") == "?? notes.txt"
                assert run_pq(root, ["check"]).returncode == 0


def test_a_ctrl_c_as_a_stop_is_logged_names_the_rebase_left_in_progress(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Ctrl-C while a rebase that stops at a conflict writes its last log record: the
    message named `pq undo`, which refuses while the rebase is stopped."""
    tpl = template("conflict", conflict_fork, tmp_path_factory)
    labels = [label.split(" ", 1)[1]
              for label in count_checkpoints(tpl, work, ["rebase", "upstream/main"], code=1)]
    last_write = len(labels) - labels[::-1].index("git update-ref")  # 1-based
    root = copy(tpl, work / "ctrl-c")
    proc = run_pq(root, ["rebase", "upstream/main"], PQ_FAULT_AT=str(last_write),
                  PQ_FAULT_RUN="kill -INT $PPID; sleep 0.3")
    err = proc.stderr.decode()
    assert proc.returncode == 130 and "the rebase is left in progress" in err, err
    assert "pq undo" not in err
    assert rebase_in_progress(root)


@pytest.mark.parametrize("meanwhile", ["checkout", "commit"])
def test_a_landing_moves_no_branch_that_moved_under_it(
        work: Path, tmp_path_factory: pytest.TempPathFactory, meanwhile: str) -> None:
    """Another terminal's `git checkout other` (or `git commit` on the branch) just before
    the landing's `reset --keep`, which moves whichever branch HEAD is on from wherever it
    is: the stack landed on `other`, or the commit was dropped. Now the landing refuses,
    the rebase stays in progress, and its way out keeps everything."""
    tpl = template("base", base_fork, tmp_path_factory)
    labels = [label.split(" ", 1)[1]
              for label in count_checkpoints(tpl, work, ["rebase", "upstream/main"])]
    before_reset = len(labels) - labels[::-1].index("git reset") - 1  # 1-based: the step
    root = copy(tpl, work / meanwhile)  # before the landing's reset
    git(root, "branch", "other", "upstream/main")
    act = ("git checkout -q other" if meanwhile == "checkout" else
           "echo hotfix >> notes.txt && git add notes.txt && git commit -qm HOTFIX")
    proc = run_pq(root, ["rebase", "upstream/main"], PQ_FAULT_AT=str(before_reset),
                  PQ_FAULT_RUN=act)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "while pq rebase was landing; the rebase is left in " \
        "progress" in err, err
    assert git(root, "rev-parse", "other") == git(root, "rev-parse", "upstream/main")
    if meanwhile == "checkout":
        git(root, "switch", "-q", "paddle")
        assert run_pq(root, ["rebase", "--continue"]).returncode == 0
        assert git(root, "rev-parse", "paddle~3") == git(root, "rev-parse", "upstream/main")
    else:
        hotfix = git(root, "rev-parse", "paddle")
        assert git(root, "log", "-1", "--format=%s", "paddle") == "HOTFIX"
        git(root, "branch", "keep-paddle", hotfix)
        assert run_pq(root, ["rebase", "--abort", "--force"]).returncode == 0
        assert git(root, "rev-parse", "keep-paddle") == hotfix


def applied_fork(tmp: Path) -> Path:
    """base_fork after `pq apply --onto upstream/main`: something for `pq undo` to undo."""
    fork = base_fork(tmp)
    pq(fork, "apply", "--onto", "upstream/main")
    return fork


def test_undo(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A killed `pq undo` is itself undone by the next `pq undo`: back to where it began."""
    tpl = template("applied", applied_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["undo"], spread=True)
    assert stats["undo"] > 0


def continued_fork(tmp: Path) -> Path:
    """stopped_fork after `pq rebase --continue`: its undo brings the stopped conflict back.
    A file of the user's beside the conflict's, named as pq names its temporary files, is
    no leftover of pq's: the sweep after a kill keeps it."""
    fork = copy(template_paths["stopped"], tmp / "fork")
    pq(fork, "rebase", "--continue")
    write(fork, ".notes.0123abcd.tmp", "mine\n")
    return fork


def test_undo_of_a_rebase_that_stopped(work: Path, tmp_path_factory: pytest.TempPathFactory
                                       ) -> None:
    """A killed `pq undo` of a rebase finished after a stop puts the stop back (its state)
    only once the conflict's index and files are in place: the way on is then `pq undo`
    (nothing back yet) or `pq rebase --continue` (the stop is whole, the resolution
    staged), and either gives the finished rebase's files back. Written the other way
    round, a kill between the two left a stop whose file was upstream's side while the
    index held the resolution: `--continue` refused, and `git add` dropped the patch."""
    template("conflict", conflict_fork, tmp_path_factory)
    template("stopped", stopped_fork, tmp_path_factory)
    tpl = template("continued", continued_fork, tmp_path_factory)
    expected = repo_state(tpl)
    labels = count_checkpoints(tpl, work, ["undo"])

    logged = oplog_count(tpl)

    def run(k: int) -> str:
        root = copy(tpl, work / f"k{k}")
        assert run_pq(root, ["undo"], PQ_FAULT_AT=str(k)).returncode == -9
        how = (["rebase", "--continue"] if rebase_in_progress(root) else ["undo"]
               if oplog_count(root) > logged else [])
        if how == ["undo"]:  # `pq status` names the way back (not only series.yaml's state)
            said = json.loads(run_pq(root, ["status", "--json"]).stdout)["interrupted"]
            assert said is not None and said["command"] == "pq undo", (k, said)
        proc = run_pq(root, how or ["status"])
        assert proc.returncode == 0, (k, labels[k - 1], how, proc.stderr.decode())
        got = repo_state(root)
        for key in ("HEAD", "index", "files", "git-locks"):
            assert got[key] == expected[key], (k, labels[k - 1], how, key)
        shutil.rmtree(root)
        return how[-1] if how else "nothing"

    with ThreadPoolExecutor(WORKERS) as pool:
        hows = list(pool.map(run, after_visible_steps(labels)))
    assert "--continue" in hows and "undo" in hows


def rebase_with_reset_doing(tmp_path: Path, fork: Path, script: str
                            ) -> subprocess.CompletedProcess[bytes]:
    """`pq rebase upstream/main`, through a `git` on PATH that runs the shell `script` (as
    pq's child: $PPID is pq) before the landing's `git reset` goes on to the real git."""
    shim = tmp_path / "bin"
    shim.mkdir()
    write(shim, "git", f"#!/bin/sh\ncase \" $* \" in *\" reset \"*) {script};; esac\n"
                       f"exec {shutil.which('git')} \"$@\"\n", mode=0o755)
    return run_pq(fork, ["rebase", "upstream/main"],
                  PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")


def test_git_gc_takes_nothing_of_a_rebase_whose_landing_git_refused(tmp_path: Path) -> None:
    """A landing git refused (here its index was locked) leaves replayed commits that no
    ref names, only the rebase's state: `git gc --prune=now` took them, and `--continue`
    then failed on a missing object. The operation log names them, which keeps them."""
    fork = base_fork(tmp_path)
    proc = rebase_with_reset_doing(tmp_path, fork, "touch .git/index.lock")
    assert proc.returncode == 2 and b"index.lock" in proc.stderr, proc.stderr
    (fork / ".git/index.lock").unlink()
    new_tip = json.loads((fork / ".git/pq/rebase/state.json").read_text())["new_tip"]
    git(fork, "-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc",
        "-q", "--prune=now")
    done = run_pq(fork, ["rebase", "--continue"], PATH=os.environ["PATH"])
    assert done.returncode == 0, done.stderr.decode()
    assert git(fork, "rev-parse", "HEAD") == new_tip
    assert run_pq(fork, ["check"]).returncode == 0


def test_ctrl_c_while_git_moves_the_working_tree_waits_for_git(tmp_path: Path) -> None:
    """A Ctrl-C that comes while git checks out the rebased branch (here: sent to pq by the
    `git reset` of the landing itself) stops pq once git is done, never git half way: the
    branch, index and files are the new tip's, and --continue finishes the rebase."""
    fork = base_fork(tmp_path)
    proc = rebase_with_reset_doing(tmp_path, fork, "kill -INT $PPID; sleep 0.5")
    assert proc.returncode == 130, proc.stderr
    assert b"pq: interrupted; the rebase is left in progress" in proc.stderr
    assert b"git was stopped" not in proc.stderr
    head = git(fork, "rev-parse", "HEAD")
    assert git(fork, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(fork, "rev-parse", "HEAD^{tree}") == git(fork, "write-tree")
    assert git(fork, "show", "HEAD:csrc/extra.cc") == "int g() { return 2; }"
    assert run_pq(fork, ["rebase", "--continue"]).returncode == 0
    assert git(fork, "rev-parse", "HEAD") == head
    assert run_pq(fork, ["check"]).returncode == 0
    assert git(fork, "status", "--porcelain") == "?? notes.txt"


def ctrl_c_at_each_checkpoint(template: Path, tmp: Path, args: list[str]
                              ) -> Iterator[tuple[int, Path, subprocess.CompletedProcess[bytes]]]:
    """`pq ARGS` on a fresh copy of `template` for checkpoints k (the first and last few,
    every third between), with a Ctrl-C sent to pq there: (k, the copy, how pq ended)."""
    log = tmp / "points"
    assert run_pq(copy(template, tmp / "count"), args, PQ_FAULT_LOG=str(log)).returncode == 0
    n = len(log.read_text().splitlines())
    for k in sorted({*range(1, 4), *range(1, n + 1, 3), *range(max(1, n - 7), n + 1)}):
        root = copy(template, tmp / f"k{k}")
        yield k, root, run_pq(root, args, PQ_FAULT_AT=str(k), PQ_FAULT_RUN="kill -INT $PPID")


def test_a_ctrl_c_message_offers_continue_only_through_pq_status(tmp_path: Path) -> None:
    """A Ctrl-C at each checkpoint of a rebase: where it leaves the rebase in progress, the
    message names --abort and sends to `pq status` for --continue, which says "--continue"
    exactly where --continue goes on (during the replay it cannot: it was interrupted)."""
    seen = set()
    for k, root, proc in ctrl_c_at_each_checkpoint(base_fork(tmp_path / "t"), tmp_path,
                                                   ["rebase", "upstream/main"]):
        if b"left in progress" not in proc.stderr:
            continue
        assert proc.returncode == 130 and b"--continue` goes on" not in proc.stderr
        assert b"`pq rebase --abort` goes back" in proc.stderr, proc.stderr
        status = run_pq(root, ["status"]).stdout.decode()
        goes_on = run_pq(root, ["rebase", "--continue"]).returncode == 0
        assert ("pq rebase --continue" in status) == goes_on, (k, status)
        seen.add(goes_on)
    assert seen == {True, False}


def test_a_ctrl_c_while_a_rebase_logs_its_end_says_it_finished(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A Ctrl-C after the landing, while the rebase's last record (the state after it) is
    taken and written: the rebase is over, so the record is finished, `pq log` says done,
    the message says "as it finished", and `pq undo` goes back to before the rebase."""
    tpl = template("base", base_fork, tmp_path_factory)
    labels = [label.split(" ", 1)[1]
              for label in count_checkpoints(tpl, work, ["rebase", "upstream/main"])]
    landed = labels.index("unlink state.json") + 1  # 1-based
    for k in sorted({landed + 1, *range(landed + 2, len(labels) + 1, 5), len(labels)}):
        root = copy(tpl, work / f"k{k}")
        proc = run_pq(root, ["rebase", "upstream/main"], PQ_FAULT_AT=str(k),
                      PQ_FAULT_RUN="kill -INT $PPID; sleep 0.3")
        err = proc.stderr.decode()
        assert proc.returncode == 130 and err.startswith("pq: interrupted as it finished: "
                                                         "operation "), (k, err)
        newest = json.loads(run_pq(root, ["log", "--json", "-n", "1"]).stdout)["operations"]
        assert newest[0]["status"] == "done", (k, newest[0]["status"])
        assert run_pq(root, ["undo"]).returncode == 0
        assert repo_state(root) == repo_state(tpl), k


def test_a_ctrl_c_says_whether_the_operation_changed_anything(tmp_path: Path) -> None:
    """`pq export --commit`, a Ctrl-C at each checkpoint: "before it changed anything"
    leaves the repository as it was and the log as it was (so `pq undo` rightly goes to the
    operation before); "half-way" logs it as failed; "as it finished" (the Ctrl-C came while
    its last record was written) logs it as done, the commit made."""
    template = export_fork(tmp_path / "t")
    kinds = set()
    for k, root, proc in ctrl_c_at_each_checkpoint(template, tmp_path, ["export", "--commit"]):
        err = proc.stderr.decode()
        if proc.returncode == 0:
            continue  # the Ctrl-C came after pq's last checkpoint that waits for it
        assert proc.returncode == 130 and err.startswith("pq: interrupted"), (k, err)
        newest = json.loads(run_pq(root, ["log", "--json", "-n", "1"]).stdout)["operations"]
        if "before it changed anything" in err:
            kinds.add("before")
            assert repo_state(root) == repo_state(template), k
            assert oplog_count(root) == oplog_count(template), k
        elif "as it finished" in err:
            kinds.add("finished")
            assert newest[0]["status"] == "done" and "export" in newest[0]["command"], k
            assert git(root, "log", "-1", "--format=%s") == "pq: export series", k
        else:
            assert "half-way" in err and newest[0]["status"] == "failed", (k, err)
            kinds.add("half-way")
    assert {"before", "finished"} <= kinds, kinds


def test_a_second_ctrl_c_stops_the_git_command_pq_waits_for(tmp_path: Path) -> None:
    """git that will not end (a hook waiting on the terminal, say): the first Ctrl-C waits
    for it, the second stops it, pq ends at once, and --abort goes back."""
    import time

    fork = base_fork(tmp_path)
    start = time.monotonic()
    proc = rebase_with_reset_doing(tmp_path, fork,
                                   "kill -INT $PPID; sleep 1; kill -INT $PPID; sleep 60")
    assert time.monotonic() - start < 30
    assert proc.returncode == 130, proc.stderr
    assert b"pq: interrupted" in proc.stderr
    # It was the landing's checkout: the message says files may be half written.
    assert b"git was stopped while it wrote the working tree" in proc.stderr, proc.stderr
    assert run_pq(fork, ["rebase", "--abort"]).returncode == 0
    assert git(fork, "status", "--porcelain") == "?? notes.txt"


def test_continue_after_a_kill_at_the_end_of_a_landing_finishes_it(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Killed after the landing moved the branch and HEAD but before the state went: `pq
    status` says it landed, and `--continue` (what it suggests) removes the state, leaving
    the branch, HEAD and files as the uninterrupted `--continue` left them."""
    template("conflict", conflict_fork, tmp_path_factory)
    tpl = template("stopped", stopped_fork, tmp_path_factory)
    labels = count_checkpoints(tpl, work, ["rebase", "--continue"])
    done = repo_state(work / "count")
    landed = labels.index(next(lb for lb in labels if lb.endswith(" git symbolic-ref")))
    k = next(i + 1 for i, lb in enumerate(labels) if i > landed and "unlink" in lb)
    root = copy(tpl, work / "killed")
    assert run_pq(root, ["rebase", "--continue"], PQ_FAULT_AT=str(k)).returncode == -9
    assert rebase_in_progress(root)
    status = run_pq(root, ["status"]).stdout.decode()
    assert "all 2 patches replayed and landed" in status, status
    refused = run_pq(root, ["export"])  # it refuses, saying where the rebase stands
    assert refused.returncode == 2 and b"in progress (landed, its state not removed yet)" \
        in refused.stderr, refused.stderr
    proc = run_pq(root, ["rebase", "--continue"])
    assert proc.returncode == 0, proc.stderr.decode()
    assert not rebase_in_progress(root)
    got = repo_state(root)
    for key in ("refs", "HEAD", "index", "files", "git-locks"):
        assert got[key] == done[key], key


def test_a_commit_made_on_a_landed_rebase_stays_with_continue(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Killed as above, then a commit made on the branch (git shows nothing in progress):
    the rebase still reads as landed, `--abort` refuses to drop the commit (naming the
    tip the landing left, not the one before the rebase), `--continue` keeps it."""
    template("conflict", conflict_fork, tmp_path_factory)
    tpl = template("stopped", stopped_fork, tmp_path_factory)
    labels = count_checkpoints(tpl, work, ["rebase", "--continue"])
    landed = labels.index(next(lb for lb in labels if lb.endswith(" git symbolic-ref")))
    k = next(i + 1 for i, lb in enumerate(labels) if i > landed and "unlink" in lb)
    root = copy(tpl, work / "killed")
    assert run_pq(root, ["rebase", "--continue"], PQ_FAULT_AT=str(k)).returncode == -9
    tip = git(root, "rev-parse", "HEAD")
    (root / "mine.txt").write_text("mine\n")
    git(root, "add", "mine.txt")
    git(root, "commit", "-q", "-m", "my work")
    mine = git(root, "rev-parse", "HEAD")
    status = run_pq(root, ["status"]).stdout.decode()
    assert "all 2 patches replayed and landed" in status and "--abort" not in status, status
    assert "--continue refuses" not in status, status  # it goes on: HEAD is on the branch
    refused = run_pq(root, ["rebase", "--abort"])
    assert refused.returncode == 2 and (
        f"since the rebase landed it at {tip[:12]}".encode() in refused.stderr), refused.stderr
    git(root, "switch", "-q", "--detach")  # HEAD off the branch: switch back, then go on
    status = run_pq(root, ["status"]).stdout.decode()  # it says so, as --continue does
    assert "`git switch paddle`, then `pq rebase --continue`" in status, status
    assert "move aside" not in status and "replayed and landed" in status, status
    refused = run_pq(root, ["rebase", "--continue"])
    assert refused.returncode == 2 and b"`git switch paddle`, then `pq rebase --continue`" \
        in refused.stderr, refused.stderr
    git(root, "switch", "-q", "paddle")
    assert run_pq(root, ["rebase", "--continue"]).returncode == 0
    assert not rebase_in_progress(root) and git(root, "rev-parse", "HEAD") == mine


def noted_stop_fork(tmp: Path) -> Path:
    """conflict_fork with a note added to series.yaml, uncommitted, then stopped at the
    conflict (a rebase keeps such an edit and puts it back)."""
    fork = copy(template_paths["conflict"], tmp / "fork")
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text() + "# my note\n")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    return fork


def test_abort_after_a_kill_that_put_head_back_on_the_branch(
        work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Killed once HEAD is back on the branch: the queue files there are the branch's (and
    the user's uncommitted note), no queue file "came back"; a second `--abort` finishes,
    and everything is as before the rebase, the note included."""
    before = repo_state(template("conflict", conflict_fork, tmp_path_factory))
    before_files = dict(before["files"])  # type: ignore[call-overload]
    tpl = template("noted-stop", noted_stop_fork, tmp_path_factory)
    labels = count_checkpoints(tpl, work, ["rebase", "--abort"])
    back = labels.index(next(lb for lb in labels if lb.endswith(" git symbolic-ref")))
    for k in range(back + 2, min(back + 6, len(labels)) + 1):  # to just after the reset
        root = copy(tpl, work / f"k{k}")
        assert run_pq(root, ["rebase", "--abort"], PQ_FAULT_AT=str(k)).returncode == -9
        proc = run_pq(root, ["rebase", "--abort"])
        assert proc.returncode == 0, (k, labels[k - 1], proc.stderr.decode())
        got = repo_state(root)
        assert got["refs"] == before["refs"] and got["HEAD"] == before["HEAD"], k
        files = dict(got["files"])  # type: ignore[call-overload]
        assert files.pop("series.yaml")[1].endswith(b"# my note\n"), k
        assert files == {p: v for p, v in before_files.items() if p != "series.yaml"}, k


_INTERRUPTING_GIT = """#!/bin/sh
# git, but the Nth write of pq's operation log gets a Ctrl-C (to pq) while git runs it.
case " $* " in *" update-ref -m pq oplog refs/pq/oplog "*)
  n=$(( $(cat "$INT_COUNT" 2>/dev/null || echo 0) + 1 )); echo $n > "$INT_COUNT"
  if [ "$n" = "$INT_AT" ]; then kill -INT $PPID; sleep 0.3; fi;;
esac
exec "$REAL_GIT" "$@"
"""


@pytest.mark.parametrize("at", [1, 2])
def test_a_ctrl_c_while_git_writes_the_log_says_what_the_log_holds(tmp_path: Path,
                                                                   at: int) -> None:
    """A Ctrl-C that comes while git moves the log's ref: pq waits for git, and the write
    is done. At the last record (2), pq wrote it again expecting the ref where it was, and
    printed git's refusal ("is at X but expected Y", exit 2) for an export that was logged
    done; at the first (1), it said "before it changed anything" and left a "started" entry
    that the next `pq undo` took back instead of the operation before."""
    fork = export_fork(tmp_path / "t")
    before = oplog_count(fork)
    shim = tmp_path / "shim"
    write(shim, "git", _INTERRUPTING_GIT)
    (shim / "git").chmod(0o755)
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True,
                          check=True).stdout.strip()
    proc = run_pq(fork, ["export", "--commit"], PATH=f"{shim}:{os.environ['PATH']}",
                  REAL_GIT=real, INT_COUNT=str(tmp_path / "count"), INT_AT=str(at))
    err = proc.stderr.decode()
    assert proc.returncode == 130 and "error" not in err, err
    newest = json.loads(run_pq(fork, ["log", "--json", "-n", "1"]).stdout)["operations"][0]
    if at == 2:
        assert "as it finished: operation" in err and newest["status"] == "done", err
        assert oplog_count(fork) == before + 1
    else:
        assert "before it changed anything" in err, err
        assert oplog_count(fork) == before and newest["status"] == "done"


@pytest.mark.parametrize("command", [["rebase", "upstream/main"], ["export", "--commit"]])
def test_a_commit_made_while_a_command_ran_is_not_undone_without_force(
        work: Path, tmp_path_factory: pytest.TempPathFactory, command: list[str]) -> None:
    """Another terminal's `git commit` while `pq rebase` computes (it changed nothing: it
    logged a failed operation all the same, whose `after` was that commit), or while `pq
    export --commit` moves the branch: the `pq undo` the error named then threw the commit
    away, without `--force`."""
    tpl = template("export" if command[0] == "export" else "base",
                   export_fork if command[0] == "export" else base_fork, tmp_path_factory)
    labels = [label.split(" ", 1)[1] for label in count_checkpoints(tpl, work, command)]
    moves = [i + 1 for i, label in enumerate(labels) if label == "git update-ref"]
    # 1-based: while the rebase computes (its state written), or the export's branch move
    # (the log's own update-ref comes last).
    at = labels.index("write state.json") + 1 if command[0] == "rebase" else moves[-2]
    root = copy(tpl, work / command[0])
    logged = oplog_count(root)
    act = "echo mine > user.txt && git add user.txt && git commit -qm 'user commit'"
    proc = run_pq(root, command, PQ_FAULT_AT=str(at), PQ_FAULT_RUN=act)
    assert proc.returncode == 2 and "moved" in proc.stderr.decode(), proc.stderr.decode()
    if command[0] == "rebase":  # it changed nothing: nothing is logged
        assert oplog_count(root) == logged
    else:  # the undo it names is the one that works, and says what it drops
        assert "`pq undo` puts back" not in proc.stderr.decode(), proc.stderr.decode()
        assert "`pq undo --force` would" in proc.stderr.decode()
    undo = run_pq(root, ["undo"])
    assert undo.returncode == 2 and "--force" in undo.stderr.decode(), undo.stderr.decode()
    assert git(root, "log", "-1", "--format=%s") == "user commit"
    assert (root / "user.txt").read_text() == "mine\n"
