"""Recorded resolutions (git rerere) in `pq rebase`: what the report shows of them, reuse
in memory agreeing with `git rebase`, `rerere.enabled=false` and `--no-rerere`,
`--forget` and the offer after `pq undo`; the full range-diff in `--json`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, tree_without_queue, write
from test_rebase import GLUE, SETUP, conflict_upstream, make_series, set_line, upstream_commit

from pq.git.repo import Git

BUILD = "0001-build-enable-compat.patch"
RESOLVED = set_line(SETUP, 3, "import other_framework; paddle.enable_compat()")
GLUE_RESOLVED = set_line(GLUE, 5, "glue_5 = 'both'")


def lines(name: str, five: str) -> str:
    """20 lines of file `name`, line 5 being `five`."""
    return "".join((five if n == 5 else f"{name} line {n}") + "\n" for n in range(1, 21))


def rr_entries(fork: Path) -> dict[str, bytes]:
    """Every file under .git/rr-cache, by relative path."""
    cache = fork / ".git" / "rr-cache"
    if not cache.is_dir():
        return {}
    return {p.relative_to(cache).as_posix(): p.read_bytes()
            for p in sorted(cache.rglob("*")) if p.is_file()}


def record_resolution(tmp_path: Path, both: bool = False) -> tuple[Path, Path, str]:
    """A fork whose first rebase stopped on setup.py (and with `both` on pkg/__init__.py),
    was resolved by hand and finished: git rerere recorded the resolutions. Returns (up,
    fork, the fork's tip before that rebase)."""
    up, fork = make_series(tmp_path)
    files = {"setup.py": set_line(SETUP, 3, "import other_framework")}
    if both:
        files["pkg/__init__.py"] = set_line(GLUE, 5, "glue_5 = 'upstream'")
    upstream_commit(up, fork, "upstream: rewrite lines", files)
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "rebase", "upstream/main", ok=False)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    if both:
        assert pq(fork, "rebase", "--continue", ok=False).exit_code == 1
        write(fork, "pkg/__init__.py", GLUE_RESOLVED)
        git(fork, "add", "pkg/__init__.py")
    pq(fork, "rebase", "--continue")
    return up, fork, orig


def test_reused_resolution_lists_each_file_and_its_hunks(tmp_path: Path) -> None:
    from pq.rebase import rerere

    up, fork, orig = record_resolution(tmp_path)
    git(fork, "reset", "-q", "--hard", orig)
    copy = tmp_path / "copy"
    shutil.copytree(fork, copy, symlinks=True)
    result = pq(fork, "rebase", "upstream/main")
    lines = result.output.splitlines()
    at = lines.index(next(ln for ln in lines if BUILD in ln))
    assert "resolved from a recorded resolution" in lines[at]
    assert lines[at + 1].strip().startswith("recorded resolution of setup.py (rr-cache ")
    assert [ln.strip() for ln in lines[at + 2:at + 4]] == [
        "@@ -3,5 +3 @@", "+import other_framework; paddle.enable_compat()"]
    # --json: in full, with the rr-cache id git recorded it under.
    git(fork, "reset", "-q", "--hard", orig)
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    build = data["patches"][0]
    assert build["rerere"] is True and build["outcome"] == "merged"
    [entry] = build["rerere_files"]
    assert entry["path"] == "setup.py"
    assert (fork / ".git/rr-cache" / entry["id"] / "postimage").read_text() == RESOLVED
    pre = (fork / ".git/rr-cache" / entry["id"] / "preimage").read_bytes()
    assert entry["hunks"] == rerere.hunks(pre, RESOLVED.encode())
    assert data["patches"][1]["rerere_files"] == []
    # The same result as git's own rebase with rerere, on a copy of the repository.
    git(copy, "-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true", "rebase", "-q",
        "upstream/main", check=False)
    git(copy, "commit", "-q", "--no-edit")
    git(copy, "rebase", "--continue")
    assert tree_without_queue(fork, "HEAD") == tree_without_queue(copy, "HEAD")


def test_reuse_in_memory_leaves_head_and_files_alone(tmp_path: Path) -> None:
    up, fork, orig = record_resolution(tmp_path)
    git(fork, "reset", "-q", "--hard", orig)
    before = git(fork, "reflog", "--format=%gs", "HEAD")
    pq(fork, "rebase", "upstream/main")
    moves = git(fork, "reflog", "--format=%gs", "HEAD").splitlines()
    new = moves[:len(moves) - len(before.splitlines())]
    # One move: the landing. No detached checkout to replay the resolution.
    assert len(new) == 1 and "pq rebase onto" in new[0], new
    assert (fork / "setup.py").read_text() == RESOLVED


def test_reuse_through_the_working_tree_lists_files_too(tmp_path: Path) -> None:
    up, fork, orig = record_resolution(tmp_path)
    git(fork, "reset", "-q", "--hard", orig)
    git(fork, "config", "core.eol", "lf")  # checkout could convert: git rerere decides
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    [entry] = data["patches"][0]["rerere_files"]
    assert entry["path"] == "setup.py"
    assert "+import other_framework; paddle.enable_compat()" in entry["hunks"]
    assert (fork / "setup.py").read_text() == RESOLVED


def test_conflict_id_is_the_one_git_computes(tmp_path: Path) -> None:
    from pq.rebase import rerere

    root = make_upstream(tmp_path / "r", {"f.txt": "".join(f"l{i}\n" for i in range(20))})
    base = git(root, "rev-parse", "HEAD")
    for style in ("merge", "diff3"):
        git(root, "checkout", "-q", "-B", "a", base)
        write(root, "f.txt", "".join(f"l{i}{'a' if i in (3, 12) else ''}\n" for i in range(20)))
        commit_all(root, "a")
        git(root, "checkout", "-q", "-B", "b", base)
        write(root, "f.txt", "".join(f"l{i}{'b' if i in (3, 12) else ''}\n" for i in range(20)))
        commit_all(root, "b")
        proc = git(root, "-c", "rerere.enabled=true", "-c", f"merge.conflictStyle={style}",
                   "cherry-pick", "--no-commit", "a", check=False)
        assert "Recorded preimage for 'f.txt'" in proc or (root / ".git/MERGE_RR").exists()
        data = (root / "f.txt").read_bytes()
        with Git.open(root) as g:
            [(path, rid)] = rerere.merge_rr(g).items()
            normal = rerere.normalize(data, g.object_format())
        assert normal is not None and path == "f.txt"
        assert normal[1] == rid
        assert (root / ".git/rr-cache" / rid / "preimage").read_bytes() == normal[0]
        git(root, "reset", "-q", "--hard")
        shutil.rmtree(root / ".git/rr-cache")


def test_rerere_enabled_false_is_honoured(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    git(fork, "config", "rerere.enabled", "false")
    conflict_upstream(up, fork)
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "rebase", "upstream/main", ok=False)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert rr_entries(fork) == {}
    git(fork, "reset", "-q", "--hard", orig)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    assert "<<<<<<<" in (fork / "setup.py").read_text()


def test_no_rerere_neither_reuses_nor_records_also_after_continue(tmp_path: Path) -> None:
    up, fork, orig = record_resolution(tmp_path, both=True)
    recorded = rr_entries(fork)
    assert len([p for p in recorded if p.endswith("/postimage")]) == 2
    git(fork, "reset", "-q", "--hard", orig)
    result = pq(fork, "rebase", "--no-rerere", "upstream/main", ok=False)
    assert result.exit_code == 1 and "conflicts in setup.py" in result.output
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework  # other"))
    git(fork, "add", "setup.py")
    # The second recorded resolution is not reused after --continue either.
    result = pq(fork, "rebase", "--continue", ok=False)
    assert result.exit_code == 1 and "conflicts in pkg/__init__.py" in result.output
    write(fork, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'other'"))
    git(fork, "add", "pkg/__init__.py")
    pq(fork, "rebase", "--continue")
    assert rr_entries(fork) == recorded
    bad = pq(fork, "rebase", "--continue", "--no-rerere", ok=False)
    assert bad.exit_code == 2 and "--no-rerere" in bad.output


def test_forget_removes_the_recorded_resolution(tmp_path: Path) -> None:
    up, fork, orig = record_resolution(tmp_path)
    assert rr_entries(fork)
    result = pq(fork, "rebase", "--forget", "setup.py")
    assert result.output.startswith("forgot 1 recorded resolution(s) of setup.py: ")
    assert not [p for p in rr_entries(fork) if p.endswith("image")]
    git(fork, "reset", "-q", "--hard", orig)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    assert "<<<<<<<" in (fork / "setup.py").read_text()
    pq(fork, "rebase", "--abort")
    again = pq(fork, "rebase", "--forget", "setup.py", ok=False)
    assert again.exit_code == 2
    assert "no recorded resolution of setup.py" in again.output
    assert "git rerere forget setup.py" in again.output


def test_forget_refuses_every_path_before_forgetting_any(tmp_path: Path) -> None:
    """`--forget KNOWN --forget UNKNOWN` is refused as a whole: KNOWN's resolution stays
    (a refusal that had already forgotten one could not be run again to fix the other)."""
    up, fork, orig = record_resolution(tmp_path)
    recorded = rr_entries(fork)
    bad = pq(fork, "rebase", "--forget", "setup.py", "--forget", "README.md", ok=False)
    assert bad.exit_code == 2 and "no recorded resolution of README.md" in bad.output
    assert rr_entries(fork) == recorded
    assert "nothing was forgotten" in bad.output
    assert pq(fork, "rebase", "--forget", "setup.py").output.startswith("forgot 1 ")


def test_forget_reads_a_path_from_the_current_folder(tmp_path: Path) -> None:
    """`pq rebase --forget PATH` takes PATH from where it runs, as `git rerere forget`
    does (and as pq's own `git add` advice names it): from pkg/, `__init__.py`."""
    up, fork, orig = record_resolution(tmp_path, both=True)
    command = [sys.executable, "-m", "pq", "rebase", "--forget"]
    here = subprocess.run([*command, "__init__.py"], cwd=fork / "pkg", capture_output=True,
                          text=True, check=False)
    assert here.returncode == 0, here.stderr
    assert here.stdout.startswith("forgot 1 recorded resolution(s) of pkg/__init__.py: ")
    top = subprocess.run([*command, "pkg/__init__.py"], cwd=fork / "pkg", capture_output=True,
                         text=True, check=False)
    assert top.returncode == 2 and "no recorded resolution of pkg/pkg/__init__.py" in top.stderr
    assert "`git rerere forget pkg/__init__.py`" in top.stderr  # as run in pkg/
    # At the top too, `./setup.py` and an absolute path name setup.py (they named nothing).
    for i, absolute in enumerate((False, True)):
        _, top_fork, _ = record_resolution(tmp_path / str(i))
        path = str(top_fork / "setup.py") if absolute else "./setup.py"
        said = subprocess.run([*command, path], cwd=top_fork, capture_output=True, text=True,
                              check=False)
        assert said.returncode == 0 and said.stdout.startswith(
            "forgot 1 recorded resolution(s) of setup.py: "), said.stderr


def test_a_damaged_notes_file_names_nothing_to_delete(tmp_path: Path) -> None:
    """pq-paths.json is no state of pq's: a key that is no conflict id (a path, `.`, a
    name with `..`) or a value of another shape is no note. `--forget` then deletes
    nothing (not the folder a key names, not rr-cache itself) and `pq undo` works."""
    up, fork, orig = record_resolution(tmp_path)
    notes = fork / ".git/rr-cache/pq-paths.json"
    good = notes.read_text()
    (rid,) = json.loads(good)
    victim = tmp_path / "victim"
    write(victim, "keep/file.txt", "precious\n")
    recorded = rr_entries(fork)
    for damaged in ({str(victim / "keep"): {"ops": [1], "paths": ["setup.py"]}},
                    {".": {"ops": [1], "paths": ["setup.py"]}},
                    {f"{rid}/../..": {"ops": [1], "paths": ["setup.py"]}},
                    {rid: 5}, {rid: {"ops": "x", "paths": ["setup.py"]}},
                    {rid: {"ops": [1], "paths": "setup.py"}}, [rid]):
        notes.write_text(json.dumps(damaged))
        result = pq(fork, "rebase", "--forget", "setup.py", ok=False)
        assert result.exit_code == 2, (damaged, result.output)
        assert "no recorded resolution of setup.py" in result.output
        assert (victim / "keep/file.txt").read_text() == "precious\n"
        assert {p: b for p, b in rr_entries(fork).items() if p != "pq-paths.json"} == {
            p: b for p, b in recorded.items() if p != "pq-paths.json"}
    notes.write_text(json.dumps({rid: 5}))
    assert "internal error" not in pq(fork, "undo").output
    notes.write_text(good)
    assert pq(fork, "rebase", "--forget", "setup.py").exit_code == 0


def test_undo_says_how_to_forget_a_recorded_or_reused_resolution(tmp_path: Path) -> None:
    up, fork, orig = record_resolution(tmp_path)
    result = pq(fork, "undo")  # undoes the --continue that recorded it
    assert "`pq rebase --forget setup.py` forgets them" in result.output
    pq(fork, "rebase", "--abort")
    git(fork, "reset", "-q", "--hard", orig)
    pq(fork, "rebase", "upstream/main")  # reuses it
    result = pq(fork, "undo", "--json")
    assert json.loads(result.output)["rerere_forget"] == "pq rebase --forget setup.py"
    pq(fork, "rebase", "--forget", "setup.py")
    assert not [p for p in rr_entries(fork) if p.endswith("image")]
    # An undo of an operation without resolutions offers nothing.
    write(fork, "README.md", "x\n")
    commit_all(fork, "readme")
    pq(fork, "export", "--commit")
    assert "--forget" not in pq(fork, "undo").output


def test_range_diff_in_full_in_json_cut_in_text(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 1301))
    up = make_upstream(tmp_path / "upstream", {"big.txt": text})
    fork = make_fork(tmp_path, up)
    mine = text.splitlines(keepends=True)
    for i in range(10, 1300, 10):
        mine[i - 1] = f"line {i} paddle\n"
    write(fork, "big.txt", "".join(mine))
    commit_all(fork, "big: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    theirs = text.splitlines(keepends=True)
    for i in range(13, 1300, 10):
        theirs[i - 1] = f"line {i} upstream\n"
    upstream_commit(up, fork, "upstream: context", {"big.txt": "".join(theirs)})
    orig = git(fork, "rev-parse", "HEAD")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    full = data["patches"][0]["range_diff"]
    assert len(full) > 200 and not any(ln.startswith("... ") for ln in full)
    git(fork, "reset", "-q", "--hard", orig)
    out = pq(fork, "rebase", "upstream/main").output.splitlines()
    at = out.index("range-diff (patch files whose content changed):")
    assert out[at + 2:at + 14] == [f"    {ln}" for ln in full[:12]]
    assert out[at + 14] == f"    ... {len(full) - 12} more lines"


def test_two_conflicting_patches_are_both_resolved_in_memory_as_git_does(tmp_path: Path
                                                                         ) -> None:
    """Both patches conflict (each in its own file): their merges are found in one batch,
    and both recorded resolutions are reused from it, in memory; git's rebase agrees."""
    up, fork, orig = record_resolution(tmp_path, both=True)
    git(fork, "reset", "-q", "--hard", orig)
    copy = tmp_path / "copy"
    shutil.copytree(fork, copy, symlinks=True)
    before = len(git(fork, "reflog", "--format=%gs", "HEAD").splitlines())
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [(p["outcome"], p["rerere"], [f["path"] for f in p["rerere_files"]])
            for p in data["patches"]] == [("merged", True, ["setup.py"]),
                                          ("merged", True, ["pkg/__init__.py"])]
    assert len(git(fork, "reflog", "--format=%gs", "HEAD").splitlines()) == before + 1
    assert (fork / "setup.py").read_text() == RESOLVED
    assert (fork / "pkg/__init__.py").read_text() == GLUE_RESOLVED
    rr = ["-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
    git(copy, *rr, "rebase", "-q", "upstream/main", check=False)
    for _ in range(2):
        git(copy, "commit", "-q", "--no-edit", check=False)
        git(copy, *rr, "rebase", "--continue", check=False)
    assert not (copy / ".git/rebase-merge").exists()
    assert tree_without_queue(fork, "HEAD") == tree_without_queue(copy, "HEAD")


def test_a_reuse_is_noted_before_a_later_save_that_a_kill_resumes_from(tmp_path: Path
                                                                        ) -> None:
    """Patch 1's resolution is reused in memory; patch 2 adds .gitattributes, so patch 3's
    goes through the working tree and the state is saved past patch 1. pq killed right
    after that save, then `--continue`: the rebase's reuse of patch 1's resolution is still
    noted (`pq rebase --forget` and `pq undo` read that note)."""
    up = make_upstream(tmp_path / "upstream")
    for name in "abc":
        write(up, f"{name}.txt", lines(name, f"{name} line 5"))
    commit_all(up, "upstream: files")
    fork = make_fork(tmp_path, up)
    git(fork, "config", "rerere.enabled", "true")
    write(fork, "a.txt", lines("a", "a fork"))
    commit_all(fork, "P1 a")
    write(fork, ".gitattributes", "*.md text\n")
    commit_all(fork, "P2 attributes")
    write(fork, "b.txt", lines("b", "b fork"))
    commit_all(fork, "P3 b")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    write(up, "a.txt", lines("a", "a upstream"))
    write(up, "b.txt", lines("b", "b upstream"))
    commit_all(up, "upstream: both")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1  # records a.txt's
    write(fork, "a.txt", lines("a", "a both"))
    git(fork, "add", "a.txt")
    assert pq(fork, "rebase", "--continue", ok=False).exit_code == 1  # records b.txt's
    write(fork, "b.txt", lines("b", "b both"))
    git(fork, "add", "b.txt")
    pq(fork, "rebase", "--continue")
    git(fork, "reset", "-q", "--hard", orig)

    command = [sys.executable, "-m", "pq", "rebase", "upstream/main"]
    log = tmp_path / "checkpoints"
    env = {**os.environ, "PQ_FAULT_LOG": str(log)}
    assert subprocess.run(command, cwd=fork, env=env, capture_output=True).returncode == 0
    labels = log.read_text().splitlines()
    cache = fork / ".git/rr-cache/pq-paths.json"
    ops_of_a = json.loads(cache.read_text())
    op = max(max(e["ops"]) for e in ops_of_a.values())  # this rebase's log entry
    assert any(op in e["ops"] and "a.txt" in e["paths"] for e in ops_of_a.values())
    pq(fork, "undo")
    git(fork, "reset", "-q", "--hard", orig)
    # The save after b.txt was resolved in the working tree, then its `git reset`.
    saves = [i for i, ln in enumerate(labels, 1) if ln.endswith("rename state.json")]
    at = next(i for i in range(saves[1], len(labels) + 1) if " git reset" in labels[i - 1])
    env = {**os.environ, "PQ_FAULT_AT": str(at)}
    assert subprocess.run(command, cwd=fork, env=env, capture_output=True).returncode != 0
    pq(fork, "rebase", "--continue")
    noted = json.loads(cache.read_text())
    killed = max(max(e["ops"]) for e in noted.values())
    assert sorted(p for e in noted.values() if killed in e["ops"] for p in e["paths"]) == [
        "a.txt", "b.txt"]


def test_a_resolution_reused_under_a_conflict_marker_size_is_reported(tmp_path: Path) -> None:
    """Markers of another width (`conflict-marker-size=10`, from info/attributes or from the
    tree's .gitattributes): the reused resolution is found and reported as reused."""
    for where in ("info", "tree"):
        root = tmp_path / where
        # The file holds lines like 7-wide markers: the reason for a larger size.
        sample = "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"
        up = make_upstream(root / "upstream", {"f.py": "a\nb\nc\n" + sample})
        if where == "tree":
            write(up, ".gitattributes", "*.py conflict-marker-size=10\n")
            commit_all(up, "upstream: attributes")
        fork = make_fork(root, up)
        if where == "info":
            write(fork, ".git/info/attributes", "*.py conflict-marker-size=10\n")
        write(fork, "f.py", "a\nFORK\nc\n" + sample)
        commit_all(fork, "fork line")
        pq(fork, "init", "--upstream", "upstream/main", "--commit")
        upstream_commit(up, fork, "upstream: line", {"f.py": "a\nUP\nc\n" + sample})
        orig = git(fork, "rev-parse", "HEAD")
        assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
        assert "<" * 10 + " " in (fork / "f.py").read_text()
        write(fork, "f.py", "a\nRESOLVED\nc\n" + sample)
        git(fork, "add", "f.py")
        pq(fork, "rebase", "--continue")
        git(fork, "reset", "-q", "--hard", orig)
        data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
        [patch] = data["patches"]
        assert (fork / "f.py").read_text() == "a\nRESOLVED\nc\n" + sample
        assert patch["rerere"] is True, (where, patch)
        assert [f["path"] for f in patch["rerere_files"]] == ["f.py"]
        assert "+RESOLVED" in patch["rerere_files"][0]["hunks"]


def test_a_reuse_is_noted_when_the_next_conflict_cannot_be_shown(tmp_path: Path) -> None:
    """Patch 1's recorded resolution is reused in memory; git then refuses to show patch
    2's conflict (a stale index.lock), and the rebase stops past patch 1: its reuse is
    noted all the same (`pq rebase --forget` and `pq undo` read that note)."""
    up = make_upstream(tmp_path / "upstream", {f"{n}.txt": lines(n, f"{n} line 5")
                                               for n in "ab"})
    fork = make_fork(tmp_path, up)
    write(fork, "a.txt", lines("a", "a fork"))
    commit_all(fork, "P1 a")
    write(fork, "b.txt", lines("b", "b fork"))
    commit_all(fork, "P2 b")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    write(up, "a.txt", lines("a", "a upstream"))
    commit_all(up, "upstream: a")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1  # records a.txt's
    write(fork, "a.txt", lines("a", "a both"))
    git(fork, "add", "a.txt")
    pq(fork, "rebase", "--continue")
    git(fork, "reset", "-q", "--hard", orig)
    write(up, "b.txt", lines("b", "b upstream"))
    commit_all(up, "upstream: b")
    git(fork, "fetch", "-q", "upstream")
    cache = fork / ".git/rr-cache/pq-paths.json"
    before = max(op for e in json.loads(cache.read_text()).values() for op in e["ops"])
    (fork / ".git" / "index.lock").touch()
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 1 and "cannot show the conflict" in refused.output
    assert sorted(p for e in json.loads(cache.read_text()).values()
                  if max(e["ops"]) > before for p in e["paths"]) == ["a.txt"]


def test_a_resolution_reused_in_the_working_tree_of_a_file_named_with_a_newline(
        tmp_path: Path) -> None:
    """git rerere names the path unquoted, so a newline in it spans two lines of its
    message: pq read "" for the path, then the repository's folder as that file ("Is a
    directory"), and the rebase was left interrupted. As `git rebase` with rerere does, the
    file's conflict is resolved from the record; the binary one stops the rebase."""
    name = "new\nline.txt"
    up = make_upstream(tmp_path / "upstream", {name: lines("n", "n line 5")})
    (up / "b.bin").write_bytes(b"b\0")
    commit_all(up, "upstream: a binary file")
    fork = make_fork(tmp_path, up)
    write(fork, name, lines("n", "n fork"))
    (fork / "b.bin").write_bytes(b"p\0")
    commit_all(fork, "P1 both")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    write(up, name, lines("n", "n upstream"))
    (up / "b.bin").write_bytes(b"u\0")
    commit_all(up, "upstream: both")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, name, lines("n", "n resolved"))
    (fork / "b.bin").write_bytes(b"r\0")
    git(fork, "add", "--", name, "b.bin")
    pq(fork, "rebase", "--continue")
    git(fork, "reset", "-q", "--hard", orig)
    stop = pq(fork, "rebase", "upstream/main", "--json", ok=False)
    assert stop.exit_code == 1, stop.output
    [entry] = json.loads(stop.stdout)["patches"][0]["rerere_files"]
    assert entry["path"] == name
    assert (fork / name).read_text() == lines("n", "n resolved")
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert [c["path"] for c in status["conflicted"]] == ["b.bin"], status


def test_a_resolution_reused_in_the_working_tree_of_a_file_not_named_in_utf8(
        tmp_path: Path) -> None:
    """git rerere names the file as its bytes: read as UTF-8 with replacement, the name
    was no file ("internal error: FileNotFoundError"), on every run of the rebase. A
    `.gitattributes` sends the replay through the working tree."""
    name = os.fsdecode(b"caf\xe9.txt")
    up = make_upstream(tmp_path / "upstream", {name: lines("n", "n line 5"),
                                               ".gitattributes": "*.bin binary\n"})
    fork = make_fork(tmp_path, up)
    write(fork, name, lines("n", "n fork"))
    commit_all(fork, "P1")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    write(up, name, lines("n", "n upstream"))
    commit_all(up, "upstream: the same line")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, name, lines("n", "n resolved"))
    git(fork, "add", "--", name)
    pq(fork, "rebase", "--continue")
    git(fork, "reset", "-q", "--hard", orig)
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    [entry] = data["patches"][0]["rerere_files"]
    assert entry["path"] == name
    assert (fork / name).read_text() == lines("n", "n resolved")


@pytest.mark.parametrize("attributes", [False, True])
def test_two_files_with_one_conflict_id_get_their_own_resolutions(tmp_path: Path,
                                                                 attributes: bool) -> None:
    """a.txt and b.txt conflict alike (one rerere id, two variants) and were resolved
    apart. Through the working tree (a `.gitattributes` sends it there) git rerere took
    a.txt's variant for b.txt too, and pq committed that while its report named b.txt's:
    each file gets the variant whose preimage is its conflict, as in memory."""
    files = {"a.txt": "".join(f"{n}\n" for n in range(1, 21)),
             "b.txt": "header-b\n" + "".join(f"{n}\n" for n in range(2, 21))}
    if attributes:
        files[".gitattributes"] = "*.bin binary\n"
    up = make_upstream(tmp_path / "upstream", files)
    fork = make_fork(tmp_path, up)
    for name in ("a.txt", "b.txt"):
        write(fork, name, files[name].replace("\n10\n", "\n10fork\n"))
    commit_all(fork, "fork edit a b")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    for name in ("a.txt", "b.txt"):
        write(up, name, files[name].replace("\n10\n", "\n10up\n"))
    commit_all(up, "up edit a b")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    for name, line in (("a.txt", "10A"), ("b.txt", "10B")):
        write(fork, name, files[name].replace("\n10\n", f"\n{line}\n"))
    git(fork, "add", "a.txt", "b.txt")
    pq(fork, "rebase", "--continue")
    git(fork, "reset", "-q", "--hard", orig)
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    by_path = {f["path"]: f["hunks"] for f in data["patches"][0]["rerere_files"]}
    assert "+10B" in by_path["b.txt"] and "+10A" in by_path["a.txt"]
    for name, line in (("a.txt", "10A"), ("b.txt", "10B")):
        assert git(fork, "show", f"HEAD~1:{name}").splitlines()[9] == line


def test_a_resolution_committed_by_hand_is_noted_as_recorded(tmp_path: Path) -> None:
    """`git commit` at the stop records the resolution (git's own rerere) and empties
    MERGE_RR before `--continue` reads it: pq noted nothing, so `pq undo` did not say the
    resolution stays and `--forget` refused it, while the next rebase reused it."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: rewrite lines",
                    {"setup.py": set_line(SETUP, 3, "import other_framework")})
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "commit", "-q", "--no-edit")
    pq(fork, "rebase", "--continue")
    assert "`pq rebase --forget setup.py` forgets them" in pq(fork, "undo").output
    pq(fork, "rebase", "--abort")
    assert pq(fork, "rebase", "--forget", "setup.py").output.startswith("forgot 1 ")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1  # not reused


@pytest.mark.parametrize("attributes", [False, True])
def test_a_reused_resolution_names_what_else_it_changed_when_recorded(tmp_path: Path,
                                                                     attributes: bool
                                                                     ) -> None:
    """The resolution also edited another file and added one: a recorded resolution
    replays the conflicted file's text alone (git's too, and git stops), and pq went on
    without a word; it now names those files where it reuses it, each time (a reuse
    through the working tree, where a `.gitattributes` sends it, records it again)."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: rewrite lines",
                    {"setup.py": set_line(SETUP, 3, "import other_framework"),
                     **({".gitattributes": "*.bin binary\n"} if attributes else {})})
    orig = git(fork, "rev-parse", "HEAD")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    write(fork, "README.md", "needed by the resolution\n")
    write(fork, "helper.py", "HELPER = 1\n")
    git(fork, "add", "setup.py", "README.md", "helper.py")
    pq(fork, "rebase", "--continue")
    for _ in range(2):
        git(fork, "reset", "-q", "--hard", orig)
        result = pq(fork, "rebase", "upstream/main")
        assert "(recorded with changes to README.md, helper.py, which a recorded resolution "\
               "does not replay: check the patch)" in result.output, result.output
    git(fork, "reset", "-q", "--hard", orig)
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    assert data["patches"][0]["rerere_files"][0]["also"] == ["README.md", "helper.py"]


def test_a_failed_pick_naming_a_file_not_named_in_utf8_is_said(tmp_path: Path) -> None:
    """git's cherry-pick, refused by an untracked file where the patch adds one whose name
    is not UTF-8, names it as its bytes: pq died reading that message ("internal error:
    UnicodeEncodeError") and left the rebase interrupted."""
    name = os.fsdecode(b"caf\xe9.txt")
    up = make_upstream(tmp_path / "upstream", {"c.txt": "c\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "c.txt", "c-fork\n")
    write(fork, name, "new\n")
    commit_all(fork, "P1 adds a file, edits c")
    git(fork, "rm", "-q", "--", name)
    git(fork, "commit", "-q", "-m", "P2 removes it")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "c.txt", "c-up\n")
    commit_all(up, "upstream: c")
    git(fork, "fetch", "-q", "upstream")
    write(fork, name, "mine\n")  # untracked, where patch 1 adds the file
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1 and "internal error" not in stop.output, stop.output
    assert "untracked working tree files would be overwritten" in stop.output
