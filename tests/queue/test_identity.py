"""Patch identity after history edits, and both directions after a hand edit (issue 12).

Every history edit is made with plain `git rebase -i` (a scripted todo list) on a fork whose
patches have duplicate and near-duplicate subjects; `pq export` must then give each
surviving commit its own entry: its layer, summary, workaround block and custom fields.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gitrepo import commit_all, git, make_fork, pq, write

# key: (subject, file the commit edits, layer set by hand)
PATCHES = {
    "readme1": ("update readme", "README.md", "python-glue"),
    "readme2": ("update README", "docs/a.md", "build"),
    "readme3": ("update readme ", "docs/b.md", "kernel"),
    "glue": ("glue: scoped compat", "pkg/__init__.py", "cpp-compat"),
    "build": ("build: paddle", "setup.py", "python-glue"),
}
KEYS = list(PATCHES)


def _commit_verbatim(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "--cleanup=verbatim", "-m", message)
    return git(root, "rev-parse", "HEAD")


def make_queue(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A fork with the five patches, initialised, and metadata set by hand per entry."""
    fork = make_fork(tmp)
    shas = {}
    for key, (subject, path, _layer) in PATCHES.items():
        old = (fork / path).read_text() if (fork / path).exists() else ""
        write(fork, path, old + f"{key} line\n")
        shas[key] = _commit_verbatim(fork, subject)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    data = yaml.safe_load((fork / "series.yaml").read_text())
    assert len(data["patches"]) == len(KEYS)
    for key, entry in zip(KEYS, data["patches"]):
        entry["layer"] = PATCHES[key][2]
        entry["summary"] = f"summary of {key}"
        entry["tag"] = key  # a field pq does not know: kept, and must stay with its patch
        if key != "build":
            entry["workaround"] = {"kind": "compat-gap", "covers": [PATCHES[key][1]],
                                   "reason": f"because {key}",
                                   "remove_when": ["mre-passes"]}
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    pq(fork, "export", "--commit")  # the DEP-3 headers follow series.yaml
    return fork, shas


def rebase_i(fork: Path, todo: list[str], editor: str = "false") -> None:
    """`git rebase -i` of base..HEAD with `todo` as the todo list (lines as git reads)."""
    base = yaml.safe_load((fork / "series.yaml").read_text())["upstream"]["base"]
    todo_file = fork.parent / "todo"
    todo_file.write_text("\n".join(todo) + "\n")
    script = fork.parent / "seq.py"
    script.write_text("import shutil, sys\n"
                      f"shutil.copyfile({str(todo_file)!r}, sys.argv[1])\n")
    env = dict(os.environ, GIT_SEQUENCE_EDITOR=f"{sys.executable} {script}",
               GIT_EDITOR=editor)
    proc = subprocess.run(["git", "rebase", "-q", "-i", base], cwd=fork, env=env,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()


def bookkeeping(fork: Path, shas: dict[str, str]) -> list[str]:
    """The todo lines of the bookkeeping commits (init's, and the metadata one)."""
    base = yaml.safe_load((fork / "series.yaml").read_text())["upstream"]["base"]
    ids = git(fork, "rev-list", "--reverse", f"{base}..HEAD").split()
    return [f"pick {c}" for c in ids if c not in shas.values()]


def entries(fork: Path) -> list[dict[str, object]]:
    return list(yaml.safe_load((fork / "series.yaml").read_text())["patches"])


def assert_own_metadata(fork: Path, expected_keys: list[str | None]) -> None:
    """Entry i is the patch `expected_keys[i]` (None: a new patch) with its own metadata,
    and its patch file carries that patch's file."""
    got = entries(fork)
    assert [e.get("tag") for e in got] == expected_keys, got
    for e, key in zip(got, expected_keys):
        if key is None:
            assert "workaround" not in e
            continue
        text = (fork / "patches" / str(e["name"])).read_text()
        assert f"+{key} line" in text, (key, e["name"])
        assert e["layer"] == PATCHES[key][2]
        assert e["summary"] == f"summary of {key}"
        if key == "build":
            assert "workaround" not in e
        else:
            assert isinstance(e["workaround"], dict)
            assert e["workaround"]["reason"] == f"because {key}"


def assert_consistent(fork: Path) -> None:
    """`pq check`: the branch and its series agree (the audit of the sketchy workaround
    blocks these tests write is not the point here)."""
    data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
    status = {c["name"]: c["status"] for c in data["checks"]}
    assert status["export"] == "passed" and status["apply"] == "passed", data


def picks(shas: dict[str, str], keys: list[str]) -> list[str]:
    return [f"pick {shas[k]}" for k in keys]


# -- identity after each history edit ----------------------------------------------


def test_drop_one_of_two_near_duplicate_subjects(tmp_path: Path) -> None:
    # The reported case: "update readme" dropped, "update README" must not take its entry.
    fork, shas = make_queue(tmp_path)
    rebase_i(fork, picks(shas, ["readme2", "readme3", "glue", "build"]) + bookkeeping(fork, shas))
    out = pq(fork, "export", "--commit").output
    assert_own_metadata(fork, ["readme2", "readme3", "glue", "build"])
    name = json.dumps(entries(fork))
    assert "0001-update-readme.patch" not in name
    assert "dropped  its workaround block and its field(s) tag of 0001-update-readme.patch" \
        in out and "`pq undo` brings it back" in out


def test_reword(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    todo.insert(1, "exec git commit -q --amend -m 'docs: reword the readme'")
    rebase_i(fork, todo + bookkeeping(fork, shas))
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, KEYS)
    assert entries(fork)[0]["name"] == "0001-update-readme.patch"


def test_amend_content(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    # amend "update readme " (near-duplicate of the first) and drop the first
    todo = todo[1:3] + ["exec echo more >> docs/b.md && git commit -q -a --amend --no-edit "
                        "--cleanup=verbatim"] + todo[3:]
    rebase_i(fork, todo + bookkeeping(fork, shas))
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, ["readme2", "readme3", "glue", "build"])
    assert "+more" in (fork / "patches" / str(entries(fork)[1]["name"])).read_text()


def test_reorder(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    order = ["build", "readme3", "glue", "readme2", "readme1"]
    rebase_i(fork, picks(shas, order) + bookkeeping(fork, shas))
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, order)


@pytest.mark.parametrize("verb", ["squash", "fixup"])
def test_squash_two_patches(tmp_path: Path, verb: str) -> None:
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    todo[4] = f"{verb} {shas['build']}"
    rebase_i(fork, todo + bookkeeping(fork, shas), editor="true")
    out = pq(fork, "export", "--commit").output
    assert_own_metadata(fork, ["readme1", "readme2", "readme3", "glue"])
    assert "+build line" in (fork / "patches" / str(entries(fork)[3]["name"])).read_text()
    assert "dropped  its field(s) tag of 0005-build-paddle.patch" in out


def _applied(fork: Path) -> dict[str, str]:
    """`pq apply` (each commit then carries its `Pq-Patch:` trailer): {key: new commit}."""
    pq(fork, "apply")
    base = yaml.safe_load((fork / "series.yaml").read_text())["upstream"]["base"]
    ids = git(fork, "rev-list", "--reverse", f"{base}..HEAD").split()
    return dict(zip(KEYS, ids))


def test_squash_after_apply_stops_on_two_trailers_then_keeps_the_one_left(
        tmp_path: Path) -> None:
    """A squash of two commits `pq apply` made carries both `Pq-Patch:` lines: pq filed it
    under the second patch (the last line wins), with that one's metadata. It now stops
    and asks; with one line left, that patch keeps its entry."""
    fork, _ = make_queue(tmp_path)
    shas = _applied(fork)
    todo = picks(shas, KEYS)
    todo[4] = f"squash {shas['build']}"
    rebase_i(fork, todo + bookkeeping(fork, shas), editor="true")
    before = (fork / "series.yaml").read_bytes()
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "0004-glue-scoped-compat.patch and patches/0005-build-paddle.patch" in \
        refused.output and "keep only the `Pq-Patch:` line" in refused.output
    assert (fork / "series.yaml").read_bytes() == before
    message = git(fork, "log", "-1", "--format=%B", "HEAD~1")
    kept = fork.parent / "kept-message"
    kept.write_text("\n".join(ln for ln in message.split("\n") if "0005-build" not in ln))
    rebase_i(fork, picks(shas, KEYS[:3]) + [
        f"pick {git(fork, 'rev-parse', 'HEAD~1')}",
        f"exec git commit -q --amend --cleanup=verbatim -F {kept}",
        f"pick {git(fork, 'rev-parse', 'HEAD')}"])
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, ["readme1", "readme2", "readme3", "glue"])
    assert "Pq-Patch" not in (fork / "patches" / str(entries(fork)[3]["name"])).read_text()


def test_a_commit_split_after_apply_stops_on_its_trailer_in_both_parts(tmp_path: Path) -> None:
    """Split with `git reset HEAD^` and `git commit -C` twice, both parts carry the commit's
    `Pq-Patch:` line: pq gave the entry (its workaround block) to the first part without
    a word. It now stops unless one part is the patch's very commit."""
    fork, _ = make_queue(tmp_path)
    shas = _applied(fork)
    split = ("O=$(git rev-parse HEAD) && git reset -q HEAD^ && echo part > pkg/part.py && "
             "git add pkg/part.py && git commit -q -C $O && {} git commit -q -a -C $O")
    todo = picks(shas, KEYS[:4]) + [f"exec {split.format('echo more >> pkg/__init__.py &&')}",
                                    f"pick {shas['build']}"]
    rebase_i(fork, todo + bookkeeping(fork, shas))
    before = (fork / "series.yaml").read_bytes()
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "both carry `Pq-Patch: 0004-glue-scoped-compat.patch`" in refused.output
    assert "take the `Pq-Patch:` line out of" in refused.output
    assert (fork / "series.yaml").read_bytes() == before
    # The second part is the patch's very commit (the first only adds a file): it is the
    # entry, and the first a new patch.
    fork2, _ = make_queue(tmp_path / "exact")
    shas = _applied(fork2)
    todo = picks(shas, KEYS[:4]) + [f"exec {split.format('')}", f"pick {shas['build']}"]
    rebase_i(fork2, todo + bookkeeping(fork2, shas))
    pq(fork2, "export", "--commit")
    assert_own_metadata(fork2, ["readme1", "readme2", "readme3", None, "glue", "build"])


def test_a_patch_renamed_after_apply_keeps_its_new_name_and_metadata(tmp_path: Path) -> None:
    """The commits carry `Pq-Patch:` lines naming the old file: the rename in series.yaml
    and patches/ is kept (the old name came back, and the metadata was dropped)."""
    fork, _ = make_queue(tmp_path)
    _applied(fork)
    old, new = "0004-glue-scoped-compat.patch", "0004-glue-compat.patch"
    git(fork, "mv", f"patches/{old}", f"patches/{new}")
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text().replace(old, new))
    commit_all(fork, "pq: rename a patch")
    assert "the branch matches its series" in pq(fork, "check", ok=False).output
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, KEYS)
    assert entries(fork)[3]["name"] == new


def test_export_refuses_to_undo_a_reorder_of_series_yaml_made_by_hand(tmp_path: Path) -> None:
    """series.yaml's entries reordered by hand: export put the commits' order back with no
    word. Not committed, it refuses, naming `pq apply`, which builds the branch in the new
    order; committed (it may be an export of commits reordered since), it takes the
    commits' order and says so, and `pq undo` puts the hand order back."""
    fork, _ = make_queue(tmp_path)
    data = yaml.safe_load((fork / "series.yaml").read_text())
    data["patches"][3], data["patches"][4] = data["patches"][4], data["patches"][3]
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    before = (fork / "series.yaml").read_bytes()
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2 and "`pq apply`" in refused.output, refused.output
    assert (fork / "series.yaml").read_bytes() == before
    commit_all(fork, "series: glue after build")
    check = pq(fork, "check", ok=False).output
    assert "different order" in check and "or `pq apply`" in check
    out = pq(fork, "export").output
    assert "reordered series.yaml takes the commits' order (2 moved)" in out, out
    assert_own_metadata(fork, KEYS)
    pq(fork, "undo")
    assert (fork / "series.yaml").read_bytes() == before
    pq(fork, "apply")
    assert_own_metadata(fork, ["readme1", "readme2", "readme3", "build", "glue"])
    # The commits reordered with git (series.yaml as pq wrote it): export takes that order.
    order = ["readme1", "readme2", "readme3", "glue", "build"]
    shas = dict(zip(["readme1", "readme2", "readme3", "build", "glue"], git(
        fork, "rev-list", "--reverse", "-5", "HEAD~1").split()))
    rebase_i(fork, picks(shas, order) + [f"pick {git(fork, 'rev-parse', 'HEAD')}"])
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, order)


def test_insert_a_commit_with_a_duplicate_subject(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    todo.insert(2, "exec echo new > NEW.md && git add NEW.md && "
                   "git commit -q -m 'update readme'")
    rebase_i(fork, todo + bookkeeping(fork, shas))
    pq(fork, "export", "--commit")
    assert_own_metadata(fork, ["readme1", "readme2", None, "readme3", "glue", "build"])
    assert entries(fork)[2]["name"] == "0006-update-readme.patch"


def test_two_candidates_stop_and_ask(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    for path in ("README.md", "docs/a.md"):
        write(fork, path, f"{path} line\n")
        commit_all(fork, "update readme")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    data = yaml.safe_load((fork / "series.yaml").read_text())
    for i, entry in enumerate(data["patches"]):
        entry["tag"] = f"t{i}"
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    commit_all(fork, "series: tags")
    before = (fork / "series.yaml").read_bytes()
    ids = git(fork, "rev-list", "--reverse", "upstream/main..HEAD").split()
    # drop the first, amend the second's content: same message, same author: which is it?
    rebase_i(fork, [f"pick {ids[1]}", "exec echo more >> docs/a.md && git commit -q -a "
                    "--amend --no-edit"] + [f"pick {c}" for c in ids[2:]])
    result = pq(fork, "export", ok=False)
    assert result.exit_code == 2
    assert "0001-update-readme.patch and patches/0002-update-readme.patch" in result.output
    assert "Pq-Patch: " in result.output and "git commit --amend" in result.output
    assert (fork / "series.yaml").read_bytes() == before  # nothing written
    # The fix the message names: the trailer decides.
    msg = git(fork, "log", "-1", "--format=%B", "HEAD~2")
    rebase_i(fork, [f"pick {c}" for c in git(fork, "rev-list", "--reverse",
                                               "upstream/main..HEAD").split()][:1] +
             [f"exec git commit -q --amend -m '{msg}' -m 'Pq-Patch: 0002-update-readme.patch'"]
             + [f"pick {c}" for c in git(fork, "rev-list", "--reverse",
                                          "upstream/main..HEAD").split()][1:])
    pq(fork, "export", "--commit")
    got = entries(fork)
    assert [(e["name"], e["tag"]) for e in got] == [("0002-update-readme.patch", "t1")]


def test_identical_patches_keep_their_order(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    for _ in range(2):
        git(fork, "commit", "-q", "--allow-empty", "-m", "wip")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    out = pq(fork, "export").output
    assert "already up to date" in out


# -- both directions after a hand edit ----------------------------------------------


def _hand_edit(fork: Path) -> Path:
    patch = fork / "patches" / str(entries(fork)[3]["name"])
    patch.write_bytes(patch.read_bytes().replace(b"+glue line", b"+glue line, by hand"))
    commit_all(fork, "tweak the glue patch by hand")
    return patch


def test_committed_patch_edit_goes_into_the_commits(tmp_path: Path) -> None:
    fork, _shas = make_queue(tmp_path)
    patch = _hand_edit(fork)
    edited = patch.read_bytes()
    check = pq(fork, "check", ok=False)
    assert check.exit_code == 1
    assert f"patches/{patch.name}" in check.output and "edited by hand" in check.output
    assert "fix: pq apply" in check.output and "fix: pq export" not in check.output
    # export refuses to overwrite the edit, naming the file and both ways out
    result = pq(fork, "export", "--commit", ok=False)
    assert result.exit_code == 2
    assert f"patches/{patch.name}" in result.output
    assert "`pq apply`" in result.output and "--force" in result.output
    assert patch.read_bytes() == edited
    pq(fork, "apply")
    assert "glue line, by hand" in (fork / "pkg/__init__.py").read_text()
    assert patch.read_bytes() == edited
    assert_consistent(fork)
    assert_own_metadata(fork, KEYS)


def test_export_force_overwrites_the_patch_edit(tmp_path: Path) -> None:
    fork, _shas = make_queue(tmp_path)
    patch = _hand_edit(fork)
    pq(fork, "export", "--commit", "--force")
    assert b"by hand" not in patch.read_bytes()
    assert_consistent(fork)


def test_amended_commit_goes_into_the_patch_files(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    todo.insert(4, "exec echo more >> pkg/__init__.py && git commit -q -a --amend --no-edit")
    rebase_i(fork, todo + bookkeeping(fork, shas))
    check = pq(fork, "check", ok=False)
    assert check.exit_code == 1 and "fix: pq export --commit" in check.output
    assert "fix: pq apply" not in check.output
    pq(fork, "export", "--commit")
    assert_consistent(fork)
    assert_own_metadata(fork, KEYS)


def test_both_sides_changed_name_both_ways(tmp_path: Path) -> None:
    fork, shas = make_queue(tmp_path)
    _hand_edit(fork)
    ids = git(fork, "rev-list", "--reverse", "upstream/main..HEAD").split()
    todo = [f"pick {c}" for c in ids]
    todo.insert(4, "exec echo more >> pkg/__init__.py && git commit -q -a --amend --no-edit")
    rebase_i(fork, todo)
    check = pq(fork, "check", ok=False)
    assert "both patches/" in check.output
    assert "pq apply --branch NEW" in check.output and "--force" in check.output
    assert pq(fork, "export", ok=False).exit_code == 2


def test_an_export_committed_by_hand_is_not_a_hand_edit(tmp_path: Path) -> None:
    # `pq export` then a plain `git commit` (any message): the patch files are pq's.
    fork, shas = make_queue(tmp_path)
    todo = picks(shas, KEYS)
    todo.insert(4, "exec echo more >> pkg/__init__.py && git commit -q -a --amend --no-edit")
    rebase_i(fork, todo + bookkeeping(fork, shas))
    pq(fork, "export")
    commit_all(fork, "sync the series")
    ids = git(fork, "rev-list", "--reverse", "upstream/main..HEAD").split()
    todo = [f"pick {c}" for c in ids]
    todo.insert(2, "exec echo again >> docs/a.md && git commit -q -a --amend --no-edit")
    rebase_i(fork, todo)
    check = pq(fork, "check", ok=False)
    assert "fix: pq export --commit" in check.output and "pq apply" not in check.output
    pq(fork, "export", "--commit")
    assert_consistent(fork)
    assert_own_metadata(fork, KEYS)


def test_a_trailer_naming_a_file_too_long_for_the_disk_is_no_name(tmp_path: Path) -> None:
    """A `Pq-Patch:` name longer than a file name may be is ignored like any other name
    pq would not write (it was an internal error: the file system refused the name)."""
    fork = make_fork(tmp_path)
    write(fork, "x.txt", "x\n")
    git(fork, "add", "x.txt")
    git(fork, "commit", "-q", "-m", "one", "-m", f"Pq-Patch: {'L' * 300}.patch")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert sorted(p.name for p in (fork / "patches").iterdir()) == ["0001-one.patch"]


def test_a_patch_reverted_and_picked_again_exports_once_and_stays_exported(
        tmp_path: Path) -> None:
    """`git revert X` then `git cherry-pick X`: the picked commit is X's very commit again,
    a new entry beside X's. `pq export --commit` wrote that, and the next export (and `pq
    check`, and the push) refused it: X could be either entry, their files apart only in
    the summary. They are taken in series order: X keeps its summary."""
    fork = make_fork(tmp_path)
    write(fork, "README.md", "fix\n")
    x = commit_all(fork, "fix")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace("summary: fix", "summary: my own words"))
    pq(fork, "export", "--commit")
    git(fork, "revert", "--no-edit", x)
    git(fork, "cherry-pick", x)
    pq(fork, "export", "--commit")
    written = (fork / "series.yaml").read_bytes()
    again = pq(fork, "export")
    assert "already up to date" in again.output
    assert (fork / "series.yaml").read_bytes() == written
    assert pq(fork, "check").exit_code == 0
    summaries = [e["summary"] for e in entries(fork)]
    assert summaries[0] == "my own words" and len(summaries) == 3
