"""Removal conditions, both ways: `paddle >=` (given and installed), `upstream-contains`
(series upstream and --upstream), `mre-passes` with reproducers run for real, `manual`."""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from fixtures.audit.auditfork import (
    COMPILE,
    Spec,
    audit,
    audit_json,
    build_fork,
    clean_specs,
    commit_all,
    git,
    head,
    patch_names,
    write,
)

from pq.model import conditions

P_LIBRARY, P_TESTING, P_COMPILE = 1, 2, 5


def library_only(remove_when: list[Any]) -> list[Spec]:
    specs = clean_specs()[:2]
    assert specs[1].workaround
    specs[1].workaround["remove_when"] = remove_when
    return specs


def states(data: dict[str, Any], row: int = 0) -> list[tuple[str, str]]:
    return [(c["condition"], c["state"]) for c in data["workarounds"][row]["conditions"]]


# -- paddle >= --------------------------------------------------------------------------


@pytest.mark.parametrize("given,state", [("3.4.0", "met"), ("3.4", "met"), ("3.10.2", "met"),
                                         ("3.3.1", "not met"), ("3.4.0rc1", "not met"),
                                         ("0.0.0", "unknown")])
def test_paddle_version_given(tmp_path: Path, given: str, state: str) -> None:
    fork = build_fork(tmp_path, library_only(["paddle >= 3.4"]))
    data = audit_json(fork, "--paddle-version", given)
    assert states(data) == [("paddle >= 3.4", state)]
    assert data["workarounds"][0]["removal"] == state
    assert data["paddle"] == {"version": given, "source": "--paddle-version"}


def test_removable_names_only_the_conditions_met(tmp_path: Path) -> None:
    """`--strict`'s WA017 says why the workaround can go: the condition met, not the one
    that is not."""
    fork = build_fork(tmp_path, library_only(["paddle >= 9.0", "paddle >= 3.4"]))
    data = audit_json(fork, "--strict", "--paddle-version", "3.4.0")
    (finding,) = [f for f in data["findings"] if f["rule_id"] == "WA017"]
    assert finding["message"].endswith("can go: paddle >= 3.4: --paddle-version 3.4.0"), \
        finding["message"]


def test_paddle_version_installed_both_ways(tmp_path: Path) -> None:
    installed = metadata.version("paddlepaddle")
    assert installed == "3.3.1"
    fork = build_fork(tmp_path, library_only(["paddle >= 3.3", "paddle >= 3.4"]))
    data = audit_json(fork)
    assert states(data) == [("paddle >= 3.3", "met"), ("paddle >= 3.4", "not met")]
    assert data["workarounds"][0]["removal"] == "met"  # each condition suffices on its own
    assert data["paddle"] == {"version": "3.3.1", "source": "installed paddlepaddle"}


def test_paddle_not_installed_is_unknown(tmp_path: Path) -> None:
    bare = Path(sys.base_prefix) / "bin" / "python3"  # the interpreter under the venv
    fork = build_fork(tmp_path, library_only(["paddle >= 3.3"]))
    data = audit_json(fork, "--python", str(bare))
    assert states(data) == [("paddle >= 3.3", "unknown")]
    assert "--paddle-version" in data["workarounds"][0]["conditions"][0]["detail"]
    assert data["exit_code"] == 0


def test_version_comparison() -> None:
    assert conditions.version_at_least("3.3.1", (3, 3))
    assert not conditions.version_at_least("3.3.1", (3, 3, 2))
    assert conditions.version_at_least("3.3.1.post2", (3, 3, 1))
    assert not conditions.version_at_least("3.4.0.dev20260101", (3, 4))
    assert conditions.version_at_least("4.0", (3, 4, 9))
    # PEP 440's other spellings of a pre-release are pre-releases too; a suffix it does
    # not know is no version (it was read as the release before it).
    for pre in ("3.4.0_rc1", "3.4.0-rc.1", "3.4.0RC1", "3.4.0.dev1", "3.4.0a"):
        assert conditions.version_at_least(pre, (3, 4)) is False, pre
    for release in ("3.4.0+cu118", "3.4.0.post1", "3.4.0-1"):
        assert conditions.version_at_least(release, (3, 4)) is True, release
    assert conditions.version_at_least("3.4.0foo", (3, 4)) is None


@pytest.mark.parametrize("digits", ["\u0663.\u0664", "\uff13.\uff14", "3.\U0001d7dc"])
def test_a_version_is_written_in_ascii_digits(digits: str) -> None:
    """Digits of other scripts (Arabic-Indic, fullwidth, mathematical) are digits to
    Python's `\\d` and int(), not to pip or Paddle: `paddle >= 3.4` in them is unreadable,
    and so is an installed version that has them."""
    with pytest.raises(conditions.ConditionSyntaxError, match="cannot read"):
        conditions.parse(f"paddle >= {digits}")
    assert conditions.parse_version(digits) is None or conditions.parse_version(
        digits)[0] != (3, 4)
    assert conditions.parse("paddle >= 3.4").kind == conditions.PADDLE


def test_any_met_condition_makes_a_workaround_removable() -> None:
    def st(*names: str) -> str:
        cond = conditions.parse("mre-passes")
        return conditions.combine([conditions.ConditionState(cond, n) for n in names])

    assert st("not met", "met") == "met"
    assert st("not met", "not run") == "not run"
    assert st("not met", "unknown", "manual") == "unknown"
    assert st("manual", "not met") == "manual"
    assert st("not met", "not met") == "not met"


# -- upstream-contains ----------------------------------------------------------------


def test_upstream_contains_both_ways(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    cond = 'upstream-contains: tinyop/compile.py: hasattr(torch, "compile")'
    before = audit_json(fork)
    row = next(w for w in before["workarounds"] if w["patch"] == patch_names(fork)[P_COMPILE])
    assert [(c["condition"], c["state"]) for c in row["conditions"]] == [(cond, "not met")]
    # Upstream learns to check for torch.compile itself; the fork fetches it.
    upstream = tmp_path / "upstream"
    write(upstream, "tinyop/compile.py", COMPILE.replace(
        "    return torch.compile(fn)\n",
        '    if not hasattr(torch, "compile"):\n        return fn\n    return torch.compile(fn)\n'))
    commit_all(upstream, "upstream: tolerate a torch without compile")
    git(fork, "fetch", "-q", "upstream")
    after = audit_json(fork, "--strict")
    row = next(w for w in after["workarounds"] if w["patch"] == patch_names(fork)[P_COMPILE])
    assert row["removal"] == "met"
    assert [(f["rule_id"], f["patch"]) for f in after["findings"]] == [
        ("WA017", patch_names(fork)[P_COMPILE])]


def test_upstream_contains_reads_files_not_folders(tmp_path: Path) -> None:
    conds = ["upstream-contains: no such file.py: torch", "upstream-contains: tinyop: torch",
             "upstream-contains: tinyop/compile.py: torch.compile(fn)",
             "upstream-contains: README.md: torch"]
    fork = build_fork(tmp_path, library_only(conds))
    data = audit_json(fork)
    assert [s for _, s in states(data)] == ["not met", "not met", "met", "not met"]
    # a folder is said to be no file (it was said not to exist, though upstream has it)
    assert "tinyop is no file in" in json.dumps(data)


def test_upstream_option_overrides_the_series_ref(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    upstream = tmp_path / "upstream"
    git(upstream, "checkout", "-q", "-b", "next")
    write(upstream, "setup.py", "import paddle\n" + (upstream / "setup.py").read_text())
    commit_all(upstream, "upstream: build with paddle")
    git(upstream, "checkout", "-q", "main")
    git(fork, "fetch", "-q", "upstream")
    name = patch_names(fork)[6]

    def build_entry_state(*args: str) -> str:
        data = audit_json(fork, *args)
        return str(next(w for w in data["workarounds"] if w["patch"] == name)["removal"])

    assert build_entry_state() == "not met"
    assert build_entry_state("--upstream", "upstream/next") == "met"
    code, out = audit(fork, "--upstream", "upstream/nowhere")
    assert code == 2 and "unknown upstream ref 'upstream/nowhere'" in out


def test_upstream_ref_missing_is_unknown(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    git(fork, "update-ref", "-d", "refs/remotes/upstream/main")
    data = audit_json(fork)
    row = next(w for w in data["workarounds"] if w["patch"] == patch_names(fork)[P_COMPILE])
    assert row["removal"] == "unknown"
    assert data["upstream"]["commit"] is None


# -- manual ---------------------------------------------------------------------------


def test_manual_is_reported_never_evaluated(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, library_only(["paddle >= 3.4", "manual: check on a GPU"]))
    data = audit_json(fork, "--strict")
    assert states(data) == [("paddle >= 3.4", "not met"), ("manual: check on a GPU", "manual")]
    assert data["workarounds"][0]["removal"] == "manual"
    assert data["findings"] == []


# -- mre-passes, with fake reproducers (fast; the real ones are in test_audit_mre.py) -----


def one_gap(tmp_path: Path, run_sh: str) -> Path:
    specs = library_only(["mre-passes"])
    specs[1].mre = "none"
    fork = build_fork(tmp_path, specs)
    write(fork, "mre/torch-library-include/run.sh", run_sh)
    return fork


def test_mre_passes_not_run_without_the_flag(tmp_path: Path) -> None:
    fork = one_gap(tmp_path, "exit 0\n")
    data = audit_json(fork)
    assert states(data) == [("mre-passes", "not run")]
    assert data["workarounds"][0]["mre_run"] is None


@pytest.mark.parametrize("script,state", [("exit 0\n", "met"), ("exit 3\n", "not met"),
                                          ('test "$PYTHON" = "$1" || exit 9\n', "met")])
def test_mre_passes_exit_code_decides(tmp_path: Path, script: str, state: str) -> None:
    fork = one_gap(tmp_path, script.replace('"$1"', f'"{sys.executable}"'))
    data = audit_json(fork, "--run-mre")
    assert states(data) == [("mre-passes", state)]
    run = data["workarounds"][0]["mre_run"]
    assert run["command"] == "bash run.sh" and run["timed_out"] is False


def test_mre_gets_python_as_an_absolute_path(tmp_path: Path) -> None:
    fork = one_gap(tmp_path, f'echo "$PYTHON"\ntest "$PYTHON" = "{sys.executable}"\n')
    relative = os.path.relpath(sys.executable, fork)
    data = audit_json(fork, "--run-mre", "--python", relative)
    assert states(data) == [("mre-passes", "met")], data["workarounds"][0]["mre_run"]


def test_mre_runs_in_a_copy(tmp_path: Path) -> None:
    fork = one_gap(tmp_path, "touch made-by-run && pwd && exit 1\n")
    data = audit_json(fork, "--run-mre")
    assert not (fork / "mre/torch-library-include/made-by-run").exists()
    assert str(fork) not in data["workarounds"][0]["mre_run"]["output"]


def test_mre_timeout_is_unknown(tmp_path: Path) -> None:
    fork = one_gap(tmp_path, "echo started\nsleep 30\n")
    data = audit_json(fork, "--run-mre", "--mre-timeout", "1")
    run = data["workarounds"][0]["mre_run"]
    assert run["timed_out"] is True and run["exit_code"] is None
    assert run["seconds"] < 10 and "started" in run["output"]
    assert states(data) == [("mre-passes", "unknown")]


def test_mre_from_the_commit_with_rev(tmp_path: Path) -> None:
    fork = one_gap(tmp_path, "exit 1\n")
    git(fork, "add", "series.yaml", "patches", "mre")
    git(fork, "commit", "-q", "-m", "pq: queue and reproducers")
    write(fork, "mre/torch-library-include/run.sh", "exit 0\n")  # uncommitted edit
    assert states(audit_json(fork, "--run-mre")) == [("mre-passes", "met")]
    committed = audit_json(fork, "--run-mre", "--rev", "HEAD")
    assert states(committed) == [("mre-passes", "not met")]
    assert committed["source"] == head(fork)


def test_a_committed_link_out_of_the_repository_is_refused_with_rev_too(
        tmp_path: Path) -> None:
    """`run.sh` committed as a link to a script elsewhere: the working tree's run refused
    it, and `--rev HEAD` ran the script out there (its exit 0 made the gap closed)."""
    fork = one_gap(tmp_path, "exit 1\n")
    (tmp_path / "elsewhere.sh").write_text("exit 0\n")
    run = fork / "mre/torch-library-include/run.sh"
    run.unlink()
    run.symlink_to(tmp_path / "elsewhere.sh")
    git(fork, "add", "series.yaml", "patches", "mre")
    git(fork, "commit", "-q", "-m", "pq: queue and reproducers")
    for args in ((), ("--rev", "HEAD")):
        data = audit_json(fork, "--run-mre", *args)
        assert states(data) == [("mre-passes", "unknown")], args
        assert "leads outside the repository" in data["workarounds"][0]["mre_run"]["error"]


def test_a_reproducers_committed_build_folder_runs_in_both_modes(tmp_path: Path) -> None:
    """A build's leftovers in the working tree stay behind (`build/`, `__pycache__`), but
    not what git tracks there: `build/helper.sh` committed ran under `--rev` and was left
    out of the working tree's copy, two verdicts for one reproducer."""
    fork = one_gap(tmp_path, "test ! -e build/stale.o && bash build/helper.sh\n")
    write(fork, "mre/torch-library-include/build/helper.sh", "exit 0\n")
    git(fork, "add", "series.yaml", "patches", "mre")
    git(fork, "commit", "-q", "-m", "pq: queue and reproducers")
    write(fork, "mre/torch-library-include/build/stale.o", "a leftover\n")  # untracked
    for args in ((), ("--rev", "HEAD")):
        assert states(audit_json(fork, "--run-mre", *args)) == [("mre-passes", "met")], args


_GLOB_CASES = [
    ("tinyop/*.py", "tinyop/a.py", True),
    ("tinyop/*.py", "tinyop/sub/deep/other.py", False),  # `*` stays in its folder
    ("tinyop/**/*.py", "tinyop/a.py", True),
    ("tinyop/**/*.py", "tinyop/sub/deep/other.py", True),
    ("**/conftest.py", "conftest.py", True),
    ("**/conftest.py", "a/b/conftest.py", True),
    ("tests/test_[!x]?.py", "tests/test_a/.py", False),  # nor does `?`
    ("tests/test_[!x]?.py", "tests/test_ab.py", True),
    ("tests/test_[!x]?.py", "tests/test_xb.py", False),
    ("csrc/", "csrc/k/ops.cc", True),
    ("solo/**", "solo", False),  # what is inside, not the folder itself
    ("solo/**", "solo/a/b.py", True),
    ("t_[!x]?.py", "t_/a.py", False),
    ("tests/test_op[!].py", "tests/test_op[!].py", True),  # no set: the name itself
    ("lib/[id].py", "lib/[id].py", True),
    ("**a.py", "x/ya.py", False),  # `**` within a name is a `*`
    ("csrc/ops.cc", "csrc/ops.cc", True),
]


@pytest.mark.parametrize(("pattern", "path", "covered"), _GLOB_CASES)
def test_a_covers_glob_matches_as_a_git_glob_pathspec(pattern: str, path: str,
                                                      covered: bool) -> None:
    from pq.model.metadata import Cover

    assert Cover(pattern).matches(path) is covered


def test_uncovered_is_every_cover_tried_on_every_path() -> None:
    """`uncovered` looks plain paths and folders up in sets: the same answer as trying
    each cover on each path, for any mix of covers (folders with glob characters, a
    folder and a file of the same name, a path that is a prefix of another's)."""
    from pq.model.metadata import Cover, uncovered

    patterns = sorted({p for p, _, _ in _GLOB_CASES} | {"csrc", "csrc/k/", "a*/", "tinyop",
                                                         "tinyop/a.py/", "csrc/ops.c",
                                                         "a/b/*.py", "a/b/c/**"})
    paths = sorted({p for _, p, _ in _GLOB_CASES} | {"csrc", "csrc/ops.c", "csrc/ops.cc.bak",
                                                     "a*/x.py", "ab/x.py", "tinyop",
                                                     "csrc/k", "x/csrc/k/y", "a/b/c.py",
                                                     "a/bb/c.py", "a/b/c/d/e.py", "a/b/c"})
    for n in range(len(patterns) + 1):
        covers = [Cover(p) for p in patterns[:n]] + [Cover(p) for p in patterns[n::3]]
        brute = [p for p in paths if not any(c.matches(p) for c in covers)]
        assert uncovered(paths, covers) == brute, covers
