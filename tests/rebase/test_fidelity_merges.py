"""`pq rebase` against `git rebase` on a copy of the same fork: directory and file renames,
deletions, merges that come out empty, and patches upstream applied (and reverted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, tree_without_queue, write

# path: new content (a str, or bytes and the file's mode), or None to delete it
Files = dict[str, str | tuple[bytes, int] | None]

A = "int a(void) {\n    return 1;\n}\n" + "".join(f"/* a line {i} */\n" for i in range(12))
B = "int b(void) {\n    return 2;\n}\n" + "".join(f"/* b line {i} */\n" for i in range(12))
C = "int c(void) {\n    return 3;\n}\n" + "".join(f"/* c line {i} */\n" for i in range(12))
NEW = "int added(void) { return 42; }\n"
BASE: Files = {"lib/a.c": A, "lib/b.c": B, "util/c.c": C, "README.md": "upstream\n"}


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def apply(root: Path, files: Files) -> None:
    for path, content in files.items():
        if content is None:
            git(root, "rm", "-q", "--", path)
        elif isinstance(content, tuple):
            write(root, path, *content)
        else:
            write(root, path, content)


@dataclass
class Outcome:
    per_patch: list[str]  # kept, dropped, conflict, pending
    index: str  # `git ls-files -s` without the queue files: the tree, or the conflict
    head: dict[str, str]  # HEAD's tree without the queue files
    unmerged: list[str]


@dataclass
class Compared:
    pq: Outcome
    git: Outcome
    data: dict[str, object]  # pq's --json report
    text: str  # pq's text report (from a second fork rebased without --json)
    fork: Path
    up: Path


def _index(root: Path) -> str:
    lines = git(root, "ls-files", "-s").splitlines()
    return "\n".join(x for x in lines
                     if not x.split("\t", 1)[1].startswith(("series.yaml", "patches/")))


def _unmerged(root: Path) -> list[str]:
    return sorted(set(git(root, "diff", "--name-only", "--diff-filter=U").splitlines()))


def compare(tmp: Path, patches: list[tuple[str, Files]], upstream: list[tuple[str, Files]],
            base: Files | None = None) -> Compared:
    """Build upstream + fork, replay the patches with `pq rebase` in the fork and with
    `git rebase` in a copy taken before `pq init`; per-patch outcomes and trees of both."""
    up = make_upstream(tmp / "upstream", {k: v for k, v in (base or BASE).items()
                                          if isinstance(v, str)})
    if with_mode := {k: v for k, v in (base or BASE).items() if isinstance(v, tuple)}:
        apply(up, with_mode)
        commit_all(up, "upstream: files with their modes")
    fork = make_fork(tmp, up)
    for message, files in patches:
        apply(fork, files)
        commit_all(fork, message)
    by_git = tmp / "by-git"
    shutil.copytree(fork, by_git, symlinks=True)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    text_fork = tmp / "text-fork"
    shutil.copytree(fork, text_fork, symlinks=True)
    for message, files in upstream:
        if files == {"revert": None}:
            git(up, "revert", "--no-edit", "HEAD")
            continue
        apply(up, files)
        commit_all(up, message)
    subjects = [m.split("\n", 1)[0] for m, _ in patches]
    for repo in (fork, by_git, text_fork):
        git(repo, "fetch", "-q", "upstream")

    result = pq(fork, "rebase", "upstream/main", "--json", ok=False)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    text = pq(text_fork, "rebase", "upstream/main", ok=False).output
    mine = ["kept" if p["outcome"] in ("clean", "merged") else p["outcome"]
            for p in data["patches"]]
    pq_out = Outcome(mine, _index(fork), tree_without_queue(fork, "HEAD"), _unmerged(fork))
    if data["status"] == "conflict":
        assert pq_out.unmerged == sorted(data["conflict"]["paths"])

    git(by_git, "rebase", "upstream/main", check=False)
    stopped = (by_git / ".git/rebase-merge").exists()
    applied = git(by_git, "log", "--format=%s", "upstream/main..HEAD").splitlines()
    at = git(by_git, "log", "-1", "--format=%s", "REBASE_HEAD") if stopped else None
    theirs: list[str] = []
    for s in subjects:
        if theirs and theirs[-1] in ("conflict", "pending"):
            theirs.append("pending")
        elif s == at:
            theirs.append("conflict")
        else:
            theirs.append("kept" if s in applied else "dropped")
    git_out = Outcome(theirs, _index(by_git), tree_without_queue(by_git, "HEAD"),
                      _unmerged(by_git))
    return Compared(pq_out, git_out, data, text, fork, up)


def assert_agree(c: Compared) -> None:
    assert c.pq.per_patch == c.git.per_patch
    assert c.pq.unmerged == c.git.unmerged
    assert c.pq.head == c.git.head
    assert c.pq.index == c.git.index


RENAME_LIB: Files = {"lib/a.c": None, "lib/b.c": None, "core/a.c": A, "core/b.c": B}


# -- 1. renames: the fast path must not decide what git's rename detection decides --------


def test_dir_renamed_upstream_patch_adds_a_file_in_it(tmp_path: Path) -> None:
    c = compare(tmp_path, [("add lib/new.c", {"lib/new.c": NEW})],
                [("upstream: lib -> core", RENAME_LIB)])
    assert c.git.per_patch == ["conflict"]
    assert_agree(c)
    assert c.pq.unmerged == ["core/new.c"]


def test_dir_renamed_upstream_patch_modifies_a_file_in_it(tmp_path: Path) -> None:
    c = compare(tmp_path, [("edit lib/a.c", {"lib/a.c": edit(A, "return 1", "return 10")})],
                [("upstream: lib -> core", RENAME_LIB)])
    assert c.git.per_patch == ["kept"]
    assert_agree(c)


@pytest.mark.parametrize("added", ["src/lib/x/new.c", "src/lib/new.c", "src/lib/x/y/new.c"])
def test_nested_dir_renamed_upstream(tmp_path: Path, added: str) -> None:
    """src/lib/x -> src/core/x also renames src/lib -> src/core. (git 2.39 moves a path
    only when its own folder was renamed: a new subfolder stays where the patch put it.)"""
    base: Files = {"src/lib/x/a.c": A, "src/lib/x/b.c": B, "src/keep.c": C}
    c = compare(tmp_path, [("add a file", {added: NEW}),
                           ("edit src/keep.c", {"src/keep.c": edit(C, "return 3", "return 4")})],
                [("upstream: src/lib -> src/core", {
                    "src/lib/x/a.c": None, "src/lib/x/b.c": None,
                    "src/core/x/a.c": A, "src/core/x/b.c": B})], base)
    if "/y/" not in added:
        assert c.git.per_patch == ["conflict", "pending"]
    assert_agree(c)


def test_dir_deleted_upstream_patch_adds_a_file_in_it(tmp_path: Path) -> None:
    c = compare(tmp_path, [("add lib/new.c", {"lib/new.c": NEW}),
                           ("edit util", {"util/c.c": edit(C, "return 3", "return 30")})],
                [("upstream: drop lib", {"lib/a.c": None, "lib/b.c": None})])
    assert c.git.per_patch == ["kept", "kept"]
    assert_agree(c)
    assert [p["outcome"] for p in c.data["patches"]] == ["clean", "clean"]  # type: ignore


def test_dir_renamed_upstream_but_still_there(tmp_path: Path) -> None:
    """One file of lib/ moved, one stayed: lib/ is not renamed, the patch applies as is."""
    c = compare(tmp_path, [("add lib/new.c", {"lib/new.c": NEW})],
                [("upstream: move a.c", {"lib/a.c": None, "core/a.c": A})])
    assert c.git.per_patch == ["kept"]
    assert_agree(c)
    assert [p["outcome"] for p in c.data["patches"]] == ["clean"]  # type: ignore


SPLIT_LIB: Files = {"lib/a.c": None, "lib/b.c": None, "core/a.c": A, "b.c": B}


def test_dir_split_upstream_patch_adds_a_file_in_it_stops_as_git_does(tmp_path: Path
                                                                      ) -> None:
    """lib/ went to two places, one file each: git's merge reports a conflict on no file
    (no destination has a majority), leaves lib/new.c where it is, and `git rebase` stops;
    so does pq, saying why, and `--continue` takes the merge as it is."""
    c = compare(tmp_path, [("add lib/new.c", {"lib/new.c": NEW}),
                           ("edit util", {"util/c.c": edit(C, "return 3", "return 30")})],
                [("upstream: lib split", SPLIT_LIB)])
    assert c.git.per_patch == ["conflict", "pending"]
    assert_agree(c)
    assert c.pq.unmerged == []
    conflict = c.data["conflict"]
    assert isinstance(conflict, dict) and conflict["paths"] == []
    assert [n.split(":")[0] for n in conflict["notes"]] == ["CONFLICT (directory rename split)"]
    assert "stops at a conflict that leaves no file unmerged, as git reports: CONFLICT " \
           "(directory rename split): Unclear where to rename lib to" in c.text
    status = pq(c.fork, "status").output
    assert "0 conflicted, 0 resolved files, and a conflict git reports on no file" in status
    assert "  git reports CONFLICT (directory rename split)" in status
    notes = json.loads(pq(c.fork, "status", "--json").stdout)["rebase"]["notes"]
    assert notes == conflict["notes"]
    pq(c.fork, "rebase", "--continue")
    assert git(c.fork, "log", "--format=%s", "-2", "HEAD~").splitlines() == [
        "edit util", "add lib/new.c"]
    assert "lib/new.c" in git(c.fork, "ls-files").splitlines()


def test_dir_split_upstream_stops_even_where_rerere_could_resolve(tmp_path: Path) -> None:
    """A content conflict that a recorded resolution resolves does not carry pq past a
    conflict git reports on no file in the same merge (git rebase stops there too)."""
    patches: list[tuple[str, Files]] = [
        ("add lib/new.c, edit util", {"lib/new.c": NEW,
                                      "util/c.c": edit(C, "return 3", "return 30")})]
    upstream: list[tuple[str, Files]] = [
        ("upstream: lib split, edit util",
         {**SPLIT_LIB, "util/c.c": edit(C, "return 3", "return 31")})]
    first = compare(tmp_path / "first", patches, upstream)
    assert first.pq.unmerged == ["util/c.c"] and first.data["conflict"]["notes"]  # type: ignore
    write(first.fork, "util/c.c", edit(C, "return 3", "return 32"))
    git(first.fork, "add", "util/c.c")
    git(first.fork, "rerere")  # recorded, as pq's --continue records it
    pq(first.fork, "rebase", "--abort")
    again = pq(first.fork, "rebase", "upstream/main", "--json", ok=False)
    assert again.exit_code == 1, again.output
    data = json.loads(again.stdout)
    assert data["status"] == "conflict" and data["conflict"]["notes"]


def test_file_renamed_upstream_patch_modifies_it(tmp_path: Path) -> None:
    c = compare(tmp_path, [("edit util", {"util/c.c": edit(C, "return 3", "return 30")})],
                [("upstream: rename c", {"util/c.c": None, "util/c2.c": C})])
    assert c.git.per_patch == ["kept"]
    assert_agree(c)


def test_patch_renames_a_file_into_a_dir_upstream_renamed(tmp_path: Path) -> None:
    c = compare(tmp_path, [("move c into lib", {"util/c.c": None, "lib/c.c": C})],
                [("upstream: lib -> core", RENAME_LIB)])
    assert c.git.per_patch == ["conflict"]
    assert_agree(c)


def test_patch_renames_a_dir_upstream_added_to(tmp_path: Path) -> None:
    """The directory rename on the patch's side moves upstream's new file along."""
    c = compare(tmp_path, [("lib -> core", RENAME_LIB)],
                [("upstream: add lib/extra.c", {"lib/extra.c": NEW})])
    assert c.git.per_patch == ["conflict"]
    assert_agree(c)


def test_patch_deletes_a_dir_upstream_added_to(tmp_path: Path) -> None:
    c = compare(tmp_path, [("drop lib", {"lib/a.c": None, "lib/b.c": None})],
                [("upstream: add lib/extra.c", {"lib/extra.c": NEW})])
    assert_agree(c)


def test_batched_merges_next_to_a_dir_rename(tmp_path: Path) -> None:
    """Patches that only modify files merge together even while another adds into a
    renamed directory."""
    base: Files = {**BASE, **{f"m/f{i}.c": C.replace("c line", f"m{i} line") for i in range(3)}}
    patches: list[tuple[str, Files]] = [
        (f"edit m/f{i}", {f"m/f{i}.c": edit(str(base[f"m/f{i}.c"]), "return 3", f"return {i}")})
        for i in range(3)]
    patches.insert(1, ("add lib/new.c", {"lib/new.c": NEW}))
    upstream: Files = {f"m/f{i}.c": edit(str(base[f"m/f{i}.c"]), f"m{i} line 10", "tail")
                       for i in range(3)}
    c = compare(tmp_path, patches, [("upstream: edits and lib -> core",
                                     {**upstream, **RENAME_LIB})], base)
    assert c.git.per_patch == ["kept", "conflict", "pending", "pending"]
    assert_agree(c)


def _rounds(files: int, rounds: int) -> tuple[Files, list[tuple[str, Files]], Files]:
    """(base, patches, upstream): `files` files, each edited by one patch per round (round
    r edits line 3r + 2), patches in turn; upstream edits every file's line 11."""
    base: Files = {**BASE, **{f"m/f{i}.c": C.replace("c line", f"m{i} line")
                              for i in range(files)}}
    current = dict(base)
    patches: list[tuple[str, Files]] = []
    for round_ in range(rounds):
        for i in range(files):
            path, line = f"m/f{i}.c", f"m{i} line {3 * round_ + 2} "
            current[path] = edit(str(current[path]), line, line + "edited ")
            patches.append((f"edit {path}, round {round_}", {path: current[path]}))
    upstream: Files = {f"m/f{i}.c": edit(str(base[f"m/f{i}.c"]), f"m{i} line 11", "tail")
                       for i in range(files)}
    return base, patches, upstream


def test_patches_sharing_files_merge_in_a_batch_per_round(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three files, each edited by three patches in turn, all moved by upstream: every
    patch needs a merge, and the ones a file's earlier patch waits for share a batch (one
    `git merge-tree` per round of three, not one per patch), with git's result."""
    base, patches, upstream = _rounds(3, 3)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    c = compare(tmp_path, patches, [("upstream: edits every file", upstream)], base)
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert c.git.per_patch == ["kept"] * 9
    assert_agree(c)
    assert [p["outcome"] for p in c.data["patches"]] == ["merged"] * 9  # type: ignore[index]
    merges = [e for e in map(json.loads, trace.read_text().splitlines())
              if e["event"] == "start" and "merge-tree" in e["argv"]]
    assert len(merges) == 2 * 3  # two pq rebases (--json and text), three rounds each


def test_a_conflict_found_by_a_later_round_stops_there_as_git_does(tmp_path: Path) -> None:
    """The second patch of a file conflicts with upstream: the batch of its round finds
    it; pq stops at it with git's conflict, the patches before it kept."""
    base, patches, upstream = _rounds(2, 2)
    upstream["m/f0.c"] = edit(str(upstream["m/f0.c"]), "m0 line 5 ", "m0 line 5 upstream ")
    c = compare(tmp_path, patches, [("upstream: edits both files", upstream)], base)
    assert c.git.per_patch == ["kept", "kept", "conflict", "pending"]
    assert_agree(c)


# -- 3. merges that come out empty ------------------------------------------------------


@pytest.mark.parametrize("shape", ["same-change-more-context", "same-file-added",
                                   "same-file-deleted", "part-of-a-bigger-commit"])
def test_empty_merges_are_dropped_like_git(tmp_path: Path, shape: str) -> None:
    a10 = edit(A, "return 1", "return 10")
    patch, up = {
        "same-change-more-context": ({"lib/a.c": a10},
                                     {"lib/a.c": edit(a10, "a line 11", "a line eleven")}),
        "same-file-added": ({"lib/new.c": NEW}, {"lib/new.c": NEW}),
        "same-file-deleted": ({"lib/b.c": None}, {"lib/b.c": None}),
        "part-of-a-bigger-commit": ({"lib/a.c": a10}, {"lib/a.c": a10, "util/c.c": C + "x\n"}),
    }[shape]
    c = compare(tmp_path, [("the patch", patch), ("edit util", {"README.md": "fork\n"})],
                [("upstream: took it", up)])
    assert c.git.per_patch == ["dropped", "kept"]
    assert_agree(c)


def test_merge_equal_to_the_tip_only_after_an_earlier_patch(tmp_path: Path) -> None:
    """The second patch undoes the first one's upstream-side twin: empty only on the new tip."""
    a10 = edit(A, "return 1", "return 10")
    c = compare(tmp_path, [("first", {"util/c.c": edit(C, "return 3", "return 30")}),
                           ("second", {"lib/a.c": a10})],
                [("upstream: has the second", {"lib/a.c": a10, "README.md": "x\n"})])
    assert c.git.per_patch == ["kept", "dropped"]
    assert_agree(c)


# -- 2. patches upstream applied, and reverted ------------------------------------------

A10 = edit(A, "return 1", "return 10")


def test_applied_upstream_is_dropped_naming_the_commit(tmp_path: Path) -> None:
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10})],
                [("upstream: a returns 10", {"lib/a.c": A10}),
                 ("upstream: later", {"lib/a.c": edit(A10, "a line 11", "eleven")})])
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["upstream_commit"] == git(c.up, "rev-parse", "HEAD~1")
    assert p["upstream_reverted"] is None


def test_applied_and_reverted_upstream_is_kept_and_reported(tmp_path: Path) -> None:
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10}),
                           ("edit util", {"util/c.c": edit(C, "return 3", "return 30")})],
                [("upstream: a returns 10", {"lib/a.c": A10}), ("", {"revert": None}),
                 ("upstream: more", {"README.md": "more\n"})])
    # git rebase drops it by patch-id; pq keeps it: the fork still needs the change.
    assert c.git.per_patch == ["dropped", "kept"]
    assert c.pq.per_patch == ["kept", "kept"]
    assert c.pq.head == {**c.git.head, "lib/a.c": c.pq.head["lib/a.c"]}
    assert git(c.fork, "show", "HEAD:lib/a.c") + "\n" == A10
    applied, reverted = git(c.up, "rev-parse", "HEAD~2", "HEAD~1").split()
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["outcome"] == "clean" and p["upstream_commit"] is None
    assert p["upstream_reverted"] == {
        "applied": applied, "applied_subject": "upstream: a returns 10",
        "reverted": reverted, "reverted_subject": 'Revert "upstream: a returns 10"'}
    assert c.data["patches"][1]["upstream_reverted"] is None  # type: ignore[index]
    line = next(x for x in c.text.splitlines() if "0001-" in x)
    assert f"upstream applied this in {applied[:12]} and reverted it in {reverted[:12]}; " \
           "kept" in line


def test_upstream_subjects_in_another_encoding_are_reported_as_git_log_shows_them(
        tmp_path: Path) -> None:
    """Upstream commits written with i18n.commitEncoding=ISO-8859-1: the report names them
    in UTF-8 (it printed the raw Latin-1 byte, and lone surrogates in --json)."""
    up = make_upstream(tmp_path / "upstream", BASE)
    fork = make_fork(tmp_path, up)
    write(fork, "lib/a.c", A10)
    commit_all(fork, "a returns 10")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "config", "i18n.commitEncoding", "ISO-8859-1")
    for message in ("Caf\u00e9 takes it\n", "R\u00e9vert it\n"):
        write(up, "lib/a.c", A10 if "takes" in message else A)
        git(up, "add", "-A")
        git(up, "commit", "-q", "-F", "-", input=message.encode("latin-1"))
    git(fork, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    reverted = data["patches"][0]["upstream_reverted"]
    assert (reverted["applied_subject"], reverted["reverted_subject"]) == (
        "Caf\u00e9 takes it", "R\u00e9vert it")
    shown = git(up, "-c", "i18n.logOutputEncoding=UTF-8", "log", "-2", "--format=%s")
    assert shown.splitlines() == ["R\u00e9vert it", "Caf\u00e9 takes it"]


def test_applied_reverted_and_merged_with_upstream_edits(tmp_path: Path) -> None:
    """Reverted, then upstream edited next to it: kept, merged, still reported."""
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10})],
                [("upstream: a returns 10", {"lib/a.c": A10}), ("", {"revert": None}),
                 ("upstream: near", {"lib/a.c": edit(A, "a line 1 ", "a line one ")})])
    assert c.pq.per_patch == ["kept"]
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["outcome"] == "merged" and p["upstream_reverted"] is not None


ADDED = edit(A, "/* a line 11 */\n", "/* a line 11 */\nint added(void);\n")


@pytest.mark.parametrize("later", [
    edit(ADDED, "int added(void);", "int added(int scope);"),  # the adopted line edited
    "int added(void);\n" + A,  # the adopted line moved
    edit(ADDED, "int added(void);", "int added(void); "),  # trailing whitespace added
])
def test_an_adopted_line_that_upstream_edits_later_is_no_revert(tmp_path: Path,
                                                                 later: str) -> None:
    """Upstream took the patch (same patch-id), then refined its line: the patch is
    dropped, as git drops it, not kept as reverted (which conflicted, or added the line a
    second time)."""
    c = compare(tmp_path, [("add a declaration", {"lib/a.c": ADDED})],
                [("upstream: took it", {"lib/a.c": ADDED}),
                 ("upstream: refined it", {"lib/a.c": later})])
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["upstream_reverted"] is None
    assert (c.fork / "lib/a.c").read_text() == later


def test_a_revert_made_together_with_another_change_to_the_file_is_a_revert(
        tmp_path: Path) -> None:
    """One upstream commit takes back the adopted change and another edit of the same
    file: the patch is still kept as reverted (the fork still needs its change)."""
    a10_tweaked = edit(A10, "/* a line 8 */", "/* a line 8 tweaked */")
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10})],
                [("upstream: a returns 10", {"lib/a.c": A10}),
                 ("upstream: tweak line 8", {"lib/a.c": a10_tweaked}),
                 ("upstream: take both back", {"lib/a.c": A})])
    assert c.pq.per_patch == ["kept"]
    assert c.data["patches"][0]["upstream_reverted"] is not None  # type: ignore[index]
    assert "return 10;" in (c.fork / "lib/a.c").read_text()


K = "".join(f"// k line {i}\n" if i not in (9, 29) else "    foo();\n" for i in range(40))
K_BAR = K.replace("foo();", "bar();")


def test_a_revert_of_some_of_an_adopted_change_is_no_revert(tmp_path: Path) -> None:
    """The patch changes two identical lines; upstream took it, then took one line back.
    Only a revert of every change keeps the patch: it is dropped, as git drops it (the
    same line text counted once made it "reverted", and its line came back silently)."""
    c = compare(tmp_path, [("foo becomes bar", {"lib/k.c": K_BAR})],
                [("upstream: took it", {"lib/k.c": K_BAR}),
                 ("upstream: line 10 back to foo", {"lib/k.c": edit(K_BAR, "bar();",
                                                                     "foo();")})],
                base={**BASE, "lib/k.c": K})
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    assert c.data["patches"][0]["upstream_reverted"] is None  # type: ignore[index]


R = "".join(f"// r line {i}\n" if i not in (9, 29) else f"    return {i // 20};\n"
            for i in range(40))  # `return 0;` at line 10, `return 1;` at line 30


def test_the_same_change_undone_elsewhere_in_the_file_is_no_revert(tmp_path: Path) -> None:
    """Upstream took the patch (line 10: return 0 -> 1), refined it, and in another
    commit changed line 30 from `return 1;` to `return 0;`: the same text, flipped, but
    not the patch's change. The patch is dropped, as git drops it (it was kept as
    reverted, and stopped at a conflict)."""
    took = edit(R, "return 0;", "return 1;")
    refined = edit(took, "return 1;", "return 2;")
    c = compare(tmp_path, [("return 1 at line 10", {"lib/r.c": took})],
                [("upstream: took it", {"lib/r.c": took}),
                 ("upstream: refined it", {"lib/r.c": refined}),
                 ("upstream: line 30 returns 0", {"lib/r.c": refined.replace(
                     "    return 1;\n", "    return 0;\n")})],
                base={**BASE, "lib/r.c": R})
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    assert c.data["patches"][0]["upstream_reverted"] is None  # type: ignore[index]


def test_a_dropped_patch_names_the_commit_that_made_its_change_where_it_made_it(
        tmp_path: Path) -> None:
    """An earlier upstream commit made the same change to another line: the report names
    the commit that made the patch's change at the patch's place (it named the other)."""
    t = R.replace("return 1;", "return 0;")  # `return 0;` at lines 10 and 30
    mine = edit(t, "return 0;", "return 1;")
    line30 = t.replace("    return 0;\n// r line 30", "    return 1;\n// r line 30")
    adopt = edit(edit(line30, "return 0;", "return 1;"), "// r line 19", "// r 19 too")
    c = compare(tmp_path, [("return 1 at line 10", {"lib/r.c": mine})],
                [("upstream: line 30 returns 1", {"lib/r.c": line30}),
                 ("upstream: took it with more", {"lib/r.c": adopt})],
                base={**BASE, "lib/r.c": t})
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    assert c.data["patches"][0]["upstream_commit"] == git(  # type: ignore[index]
        c.up, "rev-parse", "HEAD")


def test_a_revert_after_its_neighbour_line_changed_is_a_revert(tmp_path: Path) -> None:
    """Upstream took the patch, changed the line above it, then reverted the patch (a
    resolved `git revert`): its diff shows the new neighbour, and it is still the revert.
    The patch is kept (and conflicts with the new neighbour, as the revert did)."""
    nine = edit(A10, "int a(void) {", "int a(int x) {")
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10})],
                [("upstream: a returns 10", {"lib/a.c": A10}),
                 ("upstream: a takes x", {"lib/a.c": nine}),
                 ("upstream: back to 1", {"lib/a.c": edit(nine, "return 10", "return 1")})])
    assert c.pq.per_patch == ["kept"] or c.data["status"] == "conflict"
    assert c.data["patches"][0]["upstream_reverted"] is not None  # type: ignore[index]


@pytest.mark.parametrize(("later", "kept"), [
    (("upstream: chmod -x", (b"echo run\n", 0o644)), True),  # the mode back: a revert
    (("upstream: edit it", (b"echo run; echo more\n", 0o755)), False),  # still adopted
])
def test_a_mode_change_upstream_adopted_then_turned_back_is_kept(
        tmp_path: Path, later: tuple[str, tuple[bytes, int]], kept: bool) -> None:
    """A patch that changes a file's mode alone (no line to follow), which upstream
    applied and later turned back: kept (upstream_reverted names both), as a patch of lines
    is, where it was dropped as already upstream; a later edit of the file is no revert."""
    c = compare(tmp_path, [("chmod +x run.sh", {"run.sh": (b"echo run\n", 0o755)})],
                [("upstream: chmod +x", {"run.sh": (b"echo run\n", 0o755)}),
                 (later[0], {"run.sh": later[1]})],
                base={**BASE, "run.sh": (b"echo run\n", 0o644)})
    assert c.pq.per_patch == (["kept"] if kept else ["dropped"])
    assert (c.data["patches"][0]["upstream_reverted"] is not None) == kept  # type: ignore[index]
    assert os.access(c.fork / "run.sh", os.X_OK)


def test_a_revert_git_draws_with_other_lines_is_a_revert(tmp_path: Path) -> None:
    """Where lines repeat, `git revert`'s diff need not mirror the adopted commit's line for
    line: the hunk's text before and after says it is the revert, and the patch is kept."""
    base = "}\n\n}\nx\n{\n\n"
    mine = "\n}\n\ny\nx\n{\n\n"
    c = compare(tmp_path, [("patch: y", {"lib/f.c": mine})],
                [("upstream: took it", {"lib/f.c": mine}), ("", {"revert": None})],
                base={**BASE, "lib/f.c": base})
    assert c.pq.per_patch == ["kept"]
    assert c.data["patches"][0]["upstream_reverted"] is not None  # type: ignore[index]
    assert (c.fork / "lib/f.c").read_text() == mine


def test_a_revert_after_the_adoption_came_through_a_merge_is_a_revert(
        tmp_path: Path) -> None:
    """Upstream adopted the patch on a branch, moved the file's lines on main, merged, and
    reverted the adoption: merges' diffs are not read, so line numbers are not followed
    across one; by text, it is the revert, and the patch is kept."""
    up = make_upstream(tmp_path / "upstream", BASE)
    fork = make_fork(tmp_path, up)
    write(fork, "lib/a.c", A10)
    commit_all(fork, "a returns 10")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "switch", "-q", "-c", "pr")
    write(up, "lib/a.c", A10)
    adopt = commit_all(up, "upstream: a returns 10")
    git(up, "switch", "-q", "main")
    write(up, "lib/a.c", "/* new */\n/* top */\n/* lines */\n" + A)
    commit_all(up, "upstream: lines on top")
    git(up, "merge", "-q", "--no-edit", "pr")
    git(up, "revert", "--no-edit", adopt)
    git(fork, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    p = data["patches"][0]
    assert p["outcome"] in ("clean", "merged") and p["upstream_reverted"] is not None, p
    assert "return 10;" in (fork / "lib/a.c").read_text()


@pytest.mark.parametrize(("attributes", "base", "mine", "theirs", "by_git"), [
    # binary to git by its attributes: compared by content, a CR or a space is a change
    ("*.cfg -diff", "a\nb\nc\n", "a\nb\nX\r\nc\n", "a\nb\nX\nc\n", "conflict"),
    ("*.cfg binary", "a\nb c\n", "a\nb  c  X\n", "a\nb c X\n", "conflict"),
    # text to git by its attributes although it holds a NUL: whitespace is no change
    ("*.cfg diff", "a\0\nb\nc\n", "a\0\nb  X\nc\n", "a\0\nb X\nc\n", "dropped"),
])
def test_patch_ids_see_files_as_git_does(tmp_path: Path, attributes: str, base: str,
                                         mine: str, theirs: str, by_git: str) -> None:
    """Whether upstream applied a patch is git's patch id of each side's diff, with the
    files that the fork's attributes make binary (or text) read as git reads them."""
    c = compare(tmp_path, [("mine", {"f.cfg": mine})], [("theirs", {"f.cfg": theirs})],
                base={".gitattributes": attributes + "\n", "f.cfg": base})
    assert c.git.per_patch == [by_git]
    assert_agree(c)


def series_beside_gits(tmp: Path, base: dict[str, str], patch: dict[str, str]
                       ) -> tuple[Path, Path, Path]:
    """(upstream, a fork whose one patch writes `patch`, its series committed, and a copy
    of the fork taken before `pq init`, for `git rebase`)."""
    up = make_upstream(tmp / "upstream", base)
    fork = make_fork(tmp, up)
    for path, text in patch.items():
        write(fork, path, text)
    commit_all(fork, "python-glue: the patch")
    by_git = tmp / "by-git"
    shutil.copytree(fork, by_git, symlinks=True)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return up, fork, by_git


def test_a_patch_an_upstream_root_commit_holds_is_dropped_naming_it(tmp_path: Path) -> None:
    """Upstream merged an unrelated history (a vendored tree) whose root commit adds the
    very file a patch adds: git's patch ids match, and `git rebase` drops the patch. pq
    diffed no root commit (its diff came back empty) and stopped on an add/add conflict."""
    up, fork, by_git = series_beside_gits(tmp_path, BASE, {"vendor/y.txt": "y1\ny2\n"})
    git(up, "switch", "-q", "--orphan", "vendor")
    write(up, "vendor/y.txt", "y1\ny2\n")
    root = commit_all(up, "vendor: add y.txt")
    write(up, "vendor/y.txt", "y1\ny2 vendored\n")
    commit_all(up, "vendor: edit y.txt")
    git(up, "switch", "-q", "main")
    git(up, "merge", "-q", "--allow-unrelated-histories", "--no-edit", "vendor")
    for repo in (fork, by_git):
        git(repo, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    [patch] = data["patches"]
    assert (patch["outcome"], patch["upstream_commit"]) == ("dropped", root), patch
    git(by_git, "rebase", "upstream/main")
    assert git(by_git, "log", "--format=%s", "upstream/main..HEAD") == ""
    assert tree_without_queue(fork, "HEAD") == tree_without_queue(by_git, "HEAD")


def test_a_ref_off_the_bases_line_is_refused_unless_forced(tmp_path: Path) -> None:
    """A release branch that split off before the series base lacks upstream commits the
    base has: the rebase left them out without a word (`git rebase` replays them as the
    fork's). Refused as a ref that moves the series back is; `--force` rebases the
    patches alone, as `git rebase --onto REF OLD_BASE`."""
    up = make_upstream(tmp_path / "upstream", BASE)
    git(up, "branch", "release")
    for n in (1, 2):
        write(up, f"main{n}.txt", f"{n}\n")
        commit_all(up, f"upstream: main work {n}")
    git(up, "switch", "-q", "release")
    write(up, "backport.txt", "b\n")
    commit_all(up, "upstream: backport")
    git(up, "switch", "-q", "main")
    fork = make_fork(tmp_path, up)
    write(fork, "lib/a.c", A10)
    commit_all(fork, "a returns 10")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    refused = pq(fork, "rebase", "upstream/release", ok=False)
    assert refused.exit_code == 2 and "lacks 2 commit(s) of the series base" in refused.output
    assert not (fork / ".git/pq/rebase/state.json").exists()
    pq(fork, "rebase", "--force", "upstream/release")
    assert git(fork, "log", "--format=%s", "upstream/release..HEAD~1") == "a returns 10"
    assert not (fork / "main1.txt").exists() and (fork / "backport.txt").exists()


def test_a_rewritten_copy_of_a_base_commit_does_not_drop_a_patch(tmp_path: Path) -> None:
    """Upstream rewrote its history (the same changes, new commits): a patch with the
    patch id of a commit the series base already had (and a later base commit undid) is
    no change of upstream's. `--force` dropped it as "already upstream", naming the
    rewritten copy, where `git rebase --onto REF OLD_BASE` keeps it."""
    lines = "".join(f"line {i}\n" for i in range(1, 41))
    up = make_upstream(tmp_path / "upstream", {"f.txt": lines})
    write(up, "f.txt", lines.replace("line 5\n", "line 5 B\n"))
    commit_all(up, "U: line 5 B")
    write(up, "f.txt", lines.replace("line 30\n", "line 5 B\n"))
    commit_all(up, "V: move B down to line 30")
    fork = make_fork(tmp_path, up)
    write(fork, "f.txt", lines.replace("line 5\n", "line 5 B\n").replace(
        "line 30\n", "line 5 B\n"))
    commit_all(fork, "P: fork wants line 5 B")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    old_base = git(fork, "rev-parse", "upstream/main")
    # The same trees, new commits: every commit rewritten with another committer.
    subprocess.run(["git", "filter-branch", "-f", "--env-filter",
                    "export GIT_COMMITTER_EMAIL=rewritten@example.com", "main"], cwd=up,
                   check=True, capture_output=True,
                   env={**os.environ, "FILTER_BRANCH_SQUELCH_WARNING": "1"})
    git(fork, "fetch", "-q", "upstream")
    by_git = tmp_path / "by-git"
    shutil.copytree(fork, by_git, symlinks=True)
    data = json.loads(pq(fork, "rebase", "--force", "upstream/main", "--json").stdout)
    assert [p["outcome"] for p in data["patches"]] == ["clean"], data["patches"]
    git(by_git, "checkout", "-q", "-B", "g", "HEAD~1")
    git(by_git, "rebase", "-q", "--onto", "upstream/main", old_base)
    assert git(by_git, "log", "--format=%s", "upstream/main..HEAD") == "P: fork wants line 5 B"
    assert tree_without_queue(fork, "HEAD") == tree_without_queue(by_git, "HEAD")


@pytest.mark.parametrize("condition", ["gitdir:{git_dir}", "onbranch:paddle"])
def test_a_merge_reads_settings_a_conditional_include_gives_the_repository(
        tmp_path: Path, condition: str) -> None:
    """A merge driver defined behind `includeIf` (a path's own settings, a branch's) is the
    repository's as git reads it: pq's merges ran in a git directory of their own, where
    `gitdir:` named that one and `onbranch:` no branch, and merged the file as text (a
    conflict where `git rebase` drops the patch)."""
    outcomes = {}
    up, fork, by_git = series_beside_gits(
        tmp_path, {**BASE, ".gitattributes": "gen.txt merge=keep\n", "gen.txt": "one\ntwo\n"},
        {"gen.txt": "one\ntwo fork\n"})
    write(up, "gen.txt", "one\ntwo upstream\n")
    commit_all(up, "upstream: gen")
    for repo in (fork, by_git):
        write(tmp_path, f"{repo.name}.cfg", "[merge \"keep\"]\n\tdriver = true\n")
        git(repo, "config", f"includeIf.{condition.format(git_dir=repo / '.git')}.path",
            str(tmp_path / f"{repo.name}.cfg"))
        git(repo, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").stdout)
    outcomes["pq"] = data["patches"][0]["outcome"]
    git(by_git, "rebase", "upstream/main")
    outcomes["git"] = "dropped" if not git(by_git, "log", "--format=%s",
                                            "upstream/main..HEAD") else "kept"
    assert outcomes == {"pq": "dropped", "git": "dropped"}
    assert (fork / "gen.txt").read_text() == "one\ntwo upstream\n"


@pytest.mark.parametrize(("before", "after", "by_git"), [
    ("*.bin -diff\n", None, "conflict"),  # binary as the rebase began: a space is a change
    (None, "*.bin -diff\n", "dropped"),  # text then: whitespace is no change
])
def test_patch_ids_read_the_attributes_the_rebase_began_with(
        tmp_path: Path, before: str | None, after: str | None, by_git: str) -> None:
    """git takes every patch id once, with the branch checked out as the rebase began:
    after a stop whose checkout holds upstream's new `.gitattributes`, `--continue` still
    reads the branch's, and drops (or keeps) the next patch as git does."""
    base: Files = {"c.txt": "l1\nl2\nl3\n", "y.bin": "l1\nl2\nl3\n", ".gitattributes": before}
    c = compare(tmp_path, [("edit c", {"c.txt": "l1\nPQ\nl3\n"}),
                           ("edit y", {"y.bin": "l1\nhello world\nl3\n"})],
                [("upstream: attributes, c", {".gitattributes": after, "c.txt": "l1\nUP\nl3\n"}),
                 ("upstream: y", {"y.bin": "l1\nhelloworld\nl3\n"})], base=base)
    assert c.pq.per_patch == c.git.per_patch == ["conflict", "pending"]
    outcomes = {}
    for repo, cont in ((c.fork, ["pq", "rebase"]), (tmp_path / "by-git", ["git", "rebase"])):
        write(repo, "c.txt", "l1\nRES\nl3\n")
        git(repo, "add", "c.txt")
        if cont[0] == "pq":
            done = pq(repo, "rebase", "--continue", "--json", ok=False)
            outcomes["pq"] = json.loads(done.stdout)["patches"][1]["outcome"]
        else:
            subprocess.run(["git", "rebase", "--continue"], cwd=repo, capture_output=True,
                           env={**os.environ, "GIT_EDITOR": "true"}, check=False)
            outcomes["git"] = ("conflict" if _unmerged(repo) else "kept" if "edit y" in
                               git(repo, "log", "--format=%s", "upstream/main..HEAD")
                               else "dropped")
    assert outcomes == {"pq": by_git, "git": by_git}


@pytest.mark.parametrize(("attributes", "nul", "by_git"), [
    ("", "\0", "kept"),  # binary by its bytes
    ("*.bin binary\n", "", "kept"),  # binary by its attributes
    ("", "", "dropped"),  # text: the modes are the whole change
    ("*.bin diff\n", "\0", "dropped"),  # text by its attributes, a NUL and all
])
def test_a_binary_files_mode_change_is_upstreams_only_with_its_content(
        tmp_path: Path, attributes: str, nul: str, by_git: str) -> None:
    """git's patch ids hash a binary file's blobs: upstream's `chmod +x` of other content
    is another change, though its diff reads the same (old mode, new mode); kept, it
    makes the newer content executable. A text file's ids hash the modes alone: upstream
    adopted the patch, and git drops it; its newer tool turned the mode back, which pq
    takes for a revert of what it adopted: kept (the fork still needs the change)."""
    one, two, three = ((f"{n}{nul}\n").encode() for n in ("one", "two", "three"))
    c = compare(tmp_path, [("chmod +x", {"tool.bin": (one, 0o755)})],
                [("upstream: new tool", {"tool.bin": (two, 0o644)}),
                 ("upstream: chmod +x", {"tool.bin": (two, 0o755)}),
                 ("upstream: newer tool", {"tool.bin": (three, 0o644)})],
                base={**BASE, ".gitattributes": attributes or None,
                      "tool.bin": (one, 0o644)})
    assert c.git.per_patch == [by_git]
    if by_git == "kept":
        assert_agree(c)
        return
    assert c.pq.per_patch == ["kept"]
    assert c.data["patches"][0]["upstream_reverted"] is not None  # type: ignore[index]
    assert c.pq.head["tool.bin"].startswith("100755")


def test_a_binary_files_mode_change_upstream_made_too_is_dropped(tmp_path: Path) -> None:
    """(A newer tool that keeps the mode: turned back, the mode change is kept, above.)"""
    c = compare(tmp_path, [("chmod +x", {"tool.bin": (b"one\0", 0o755)})],
                [("upstream: chmod +x", {"tool.bin": (b"one\0", 0o755)}),
                 ("upstream: newer tool", {"tool.bin": (b"three\0", 0o755)})],
                base={**BASE, "tool.bin": (b"one\0", 0o644)})
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)


def test_applied_reverted_reapplied_is_dropped(tmp_path: Path) -> None:
    c = compare(tmp_path, [("a returns 10", {"lib/a.c": A10})],
                [("upstream: a returns 10", {"lib/a.c": A10}), ("", {"revert": None}),
                 ("upstream: a returns 10 again", {"lib/a.c": A10})])
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["upstream_commit"] == git(c.up, "rev-parse", "HEAD")
    assert p["upstream_reverted"] is None
    assert "already upstream: " + git(c.up, "rev-parse", "--short=12", "HEAD") in c.text


# -- 3. renames and patch ids: git's patch ids see a rename as a deletion and an addition --

A3 = edit(A, "return 1", "return 3")


def test_a_rename_of_an_edited_file_is_not_upstreams_rename(tmp_path: Path) -> None:
    """Upstream renamed a.c as the fork did, then renamed it back; the fork's a.c holds
    its edit, so its rename is another change: kept, as git keeps it."""
    c = compare(tmp_path, [("edit a", {"lib/a.c": A3}),
                           ("rename a", {"lib/a.c": None, "lib/z.c": A3})],
                [("upstream: rename a", {"lib/a.c": None, "lib/z.c": A}),
                 ("upstream: rename it back", {"lib/z.c": None, "lib/a.c": A})])
    assert c.git.per_patch == ["kept", "kept"]
    assert_agree(c)
    assert c.data["patches"][1]["upstream_commit"] is None  # type: ignore[index]


def test_a_rename_upstream_made_too_is_dropped(tmp_path: Path) -> None:
    c = compare(tmp_path, [("rename b", {"lib/b.c": None, "lib/y.c": B})],
                [("upstream: rename b", {"lib/b.c": None, "lib/y.c": B})])
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)


def test_a_rename_upstream_renamed_on_elsewhere(tmp_path: Path) -> None:
    c = compare(tmp_path, [("edit a", {"lib/a.c": A3}),
                           ("rename a", {"lib/a.c": None, "lib/z.c": A3})],
                [("upstream: rename a", {"lib/a.c": None, "lib/z.c": A}),
                 ("upstream: rename z", {"lib/z.c": None, "lib/w.c": A})])
    assert_agree(c)


def test_an_added_file_upstream_added_then_renamed_is_dropped(tmp_path: Path) -> None:
    """The rename upstream is no revert of the patch's lines (the changed lines keep
    rename detection; only the patch ids go without)."""
    c = compare(tmp_path, [("add n", {"lib/n.c": NEW})],
                [("upstream: add n", {"lib/n.c": NEW}),
                 ("upstream: rename n", {"lib/n.c": None, "lib/m.c": NEW})])
    assert c.git.per_patch == ["dropped"]
    assert_agree(c)
    p = c.data["patches"][0]  # type: ignore[index]
    assert p["upstream_commit"] == git(c.up, "rev-parse", "HEAD~1")
    assert p["upstream_reverted"] is None


def test_a_rename_upstream_took_with_more_names_the_commit(tmp_path: Path) -> None:
    c = compare(tmp_path, [("rename a", {"lib/a.c": None, "lib/z.c": A3})],
                [("upstream: rename a, and more", {
                    "lib/a.c": None, "lib/z.c": edit(A3, "a line 11", "eleven")})])
    assert c.pq.per_patch == ["dropped"]
    assert c.data["patches"][0]["upstream_commit"] == git(  # type: ignore[index]
        c.up, "rev-parse", "HEAD")
