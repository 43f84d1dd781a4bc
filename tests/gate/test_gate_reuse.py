"""Stage reuse on real repositories: a build stage whose inputs did not change is restored
from the artifact cache and reported `reused from <commit>`; anything that feeds its
fingerprint (an input file, the command, the env, the toolchain) makes it run again."""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures.gate.gatefork import gate_fork, python_alone, set_gate, stage, stage_lines
from gitrepo import commit_all, git, pq, write

from pq.gate import api, ccache, inputs
from pq.gate.config import Stage
from pq.gate.inputs import matches
from pq.git.repo import Git

# The build writes an artifact from a native source; `use` needs it; both count their runs.
BUILD = 'echo run >> "{runs}"; mkdir -p out; cat csrc/ops.cc > out/ext.so; echo built'


def fork_with_build(tmp: Path, build: str = BUILD, **extra: str) -> tuple[Path, Path]:
    runs = tmp / "runs.txt"
    fork = gate_fork(tmp, stage_lines(
        stage("build", build.format(runs=runs), **extra),
        stage("use", 'cmp out/ext.so csrc/ops.cc && echo "using out/ext.so"')))
    return fork, runs


def count(runs: Path) -> int:
    return runs.read_text().count("run") if runs.exists() else 0


def gate(fork: Path, *args: str) -> dict:
    result = pq(fork, "gate", "--json", *args, ok=False)
    return json.loads(result.stdout)


def stages(report: dict) -> dict[str, dict]:
    return {s["name"]: s for s in report["stages"]}


def change(fork: Path, rel: str, text: str, message: str) -> str:
    path = fork / rel
    write(fork, rel, (path.read_text() if path.exists() else "") + text)
    return commit_all(fork, message)


def test_python_glue_change_reuses_the_build_and_restores_its_artifacts(tmp_path: Path) -> None:
    fork, runs = fork_with_build(tmp_path)
    first_tip = git(fork, "rev-parse", "HEAD")
    first = gate(fork)
    assert first["status"] == "passed" and count(runs) == 1
    assert stages(first)["build"]["inputs"] and stages(first)["use"]["inputs"] is None

    change(fork, "pkg/__init__.py", "\n# python-glue only\n", "python-glue: a comment")
    text = pq(fork, "gate").output
    assert count(runs) == 1, text
    assert f"build  reused from {first_tip[:12]}" in text
    assert "use    passed" in text  # it found out/ext.so: the artifact was restored
    report = json.loads(pq(fork, "gate", "--status", "--json").output)["record"]
    build = stages(report)["build"]
    assert build["status"] == "reused" and build["reused_from"] == first_tip
    assert build["inputs"] == stages(first)["build"]["inputs"]
    assert report["status"] == "passed"
    # A reused stage counts as passed for the pre-push hook's required stages.
    ok, why = api.record_ok(Git.open(fork), "HEAD", ["build", "use"])
    assert ok, why


@pytest.mark.parametrize("swap", ["folder to file", "file to folder"])
def test_a_build_that_swapped_a_file_and_a_folder_is_reused(tmp_path: Path,
                                                            swap: str) -> None:
    """A build that replaced a tracked folder by a file (or a file by a folder): the
    restore wrote the file before taking the folder's files away, failed, and its clean-up
    crashed on the folder (every later gate ended in that error); the other way round, the
    entry was called damaged and the build ran every time."""
    swapping = ('rm -rf gen && echo built > gen' if swap == "folder to file" else
                'rm -f gen && mkdir gen && echo built > gen/out')
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", f'echo run >> "{runs}"; {swapping}', inputs="[csrc/**]"),
        stage("use", "grep -r built gen")),
        files={"gen/old.txt" if swap == "folder to file" else "gen": "tracked\n"})
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    change(fork, "pkg/__init__.py", "\n# python-glue only\n", "python-glue: a comment")
    for _ in range(2):
        report = gate(fork)
        assert report["status"] == "passed", report
        assert stages(report)["build"]["status"] == "reused", report
        assert not any("damaged" in n for n in report.get("warnings", [])), report
    assert count(runs) == 1


@pytest.mark.parametrize("what", ["input file", "command", "env", "toolchain"])
def test_a_changed_fingerprint_runs_the_build_again(tmp_path: Path, what: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    if what == "input file":
        change(fork, "csrc/ops.cc", "// one line\n", "cpp-compat: a comment")
    elif what == "command":
        set_gate(fork, stage_lines(
            stage("build", BUILD.format(runs=runs) + "; echo again"),
            stage("use", "cmp out/ext.so csrc/ops.cc")))
    elif what == "env":
        set_gate(fork, stage_lines(
            stage("build", BUILD.format(runs=runs), env='{OPT: "2"}'),
            stage("use", "cmp out/ext.so csrc/ops.cc")))
    else:  # another CUDA toolkit on PATH: the toolchain fingerprint changes
        bin_dir = tmp_path / "cuda" / "bin"
        write(bin_dir, "nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 11.8, "
              "V11.8.89'\n", mode=0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert report["status"] == "passed", report
    assert count(runs) == 2
    assert stages(report)["build"]["status"] == "passed"
    if what == "toolchain":
        assert report["fingerprint"]["cuda"] == "11.8.89"


def test_what_a_stage_requires_and_checks_is_part_of_its_fingerprint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass reused after `requires: [gpu]` was added stood for a GPU run on a machine
    without one; a build's pass kept through a change of `check_symbols` (true by default
    for `build`; a pass with it off, reused with it on, was never checked)."""
    monkeypatch.setenv("PQ_GPU", "0")
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    set_gate(fork, stage_lines(stage("build", BUILD.format(runs=runs), requires="[gpu]"),
                               stage("use", "true")))
    report = gate(fork)
    assert stages(report)["build"]["status"] == "skipped-no-gpu", report
    assert report["status"] == "owed" and report["owed"] == ["build"] and count(runs) == 1
    set_gate(fork, stage_lines(stage("build", BUILD.format(runs=runs), check_symbols="false"),
                               stage("use", "cmp out/ext.so csrc/ops.cc")))
    assert stages(gate(fork))["build"]["status"] == "passed" and count(runs) == 2


def test_the_callers_build_variables_run_the_gate_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same commit, another CC: the whole passing record was taken from the cache."""
    fork, runs = fork_with_build(tmp_path)
    assert gate(fork)["status"] == "passed"
    assert gate(fork)["cached"] and count(runs) == 1
    monkeypatch.setenv("CC", "/usr/bin/other-cc")
    report = gate(fork)
    assert not report["cached"] and stages(report)["build"]["status"] == "passed"
    digest = report["fingerprint"]["build_env"]  # not the values: teams share records
    assert isinstance(digest, str) and len(digest) == 16 and "other-cc" not in json.dumps(report)
    assert count(runs) == 2


def test_attributes_that_change_the_checkout_run_the_build_again(tmp_path: Path) -> None:
    """Blob ids stay, the checked-out bytes do not: a committed `.gitattributes` (not a
    default input) and `.git/info/attributes` (not in the tree) kept the build reused."""
    fork, runs = fork_with_build(tmp_path)
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    change(fork, ".gitattributes", "csrc/*.cc text eol=crlf\n", "python-glue: attributes")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed", report  # ran: CRLF sources now
    assert report["status"] == "passed" and count(runs) == 2
    git(fork, "rm", "-q", ".gitattributes")
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: no attributes")
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 2
    write(fork / ".git" / "info", "attributes", "csrc/*.cc text eol=crlf\n")
    report = gate(fork)  # the same tree: neither the record nor the build may be reused
    assert not report["cached"] and stages(report)["build"]["status"] == "passed", report
    assert report["status"] == "passed" and count(runs) == 3
    git(fork, "config", "filter.up.smudge", "tr a-z A-Z")  # a filter driver (git lfs's)
    report = gate(fork)
    assert not report["cached"] and stages(report)["build"]["status"] == "passed", report
    assert count(runs) == 4


def test_a_mode_the_build_changed_is_an_artifact(tmp_path: Path) -> None:
    """`chmod +x` changes no mtime, size or inode: a reuse left the tracked script as the
    commit has it (not executable), and the next stage failed only because of the reuse."""
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs) + "; chmod +x tools/run.sh"),
        stage("tests", "tools/run.sh")), files={"tools/run.txt": "#!/bin/sh\necho ran\n"})
    git(fork, "mv", "tools/run.txt", "tools/run.sh")  # committed without the x bit
    commit_all(fork, "python-glue: a test runner")
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "reused" and count(runs) == 1
    assert report["status"] == "passed", report


READ_BY_A_BUILD = ["csrc/table.inc", "csrc/impl.ipp", "csrc/impl.tpp", "csrc/impl.c++",
                   "csrc/k.cuinl", "include/Eigen/Core", "config.h.in", "CMakePresets.json",
                   "GNUmakefile", "meson_options.txt", "csrc/exports.map", "pkg/_fast.pyx",
                   "setup.py", "pyproject.toml", "build.py", "cmake/gen.py", "csrc/ops.cc",
                   ".gitattributes", "tests/data/weights.bin", "csrc/notice.tpp",
                   "csrc/license.inc", "csrc/changes.c++", "LICENSE.BSD"]
NOT_READ_BY_A_BUILD = ["pkg/__init__.py", "pkg/ops.pyi", "tests/test_ops.py", "README.md",
                       "docs/index.rst", "LICENSE", "CHANGES.txt", "series.yaml",
                       "patches/0001-a.patch",
                       "mre/case/repro.py", ".pq/compare/ops.py", "notes/plan.txt"]


def test_the_builds_default_inputs_are_every_file_it_may_read() -> None:
    """They were the kernel, build and cpp-compat layers: `.inc`, `.tpp`, `.c++`, Eigen's
    extensionless headers, `config.h.in`, linker scripts ... changed, the build was reused."""
    entries = [("100644", "blob", f"{i:040x}", p)
               for i, p in enumerate(READ_BY_A_BUILD + NOT_READ_BY_A_BUILD)]
    queue = ("series.yaml", "patches", "mre", ".pq", "notes")
    picked = [p for p, _, _ in inputs.input_files(Stage("build", "true"), entries, (), queue)]
    assert picked == sorted(READ_BY_A_BUILD)


def test_a_header_without_a_suffix_runs_the_build_again(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    both = "cat csrc/ops.cc include/lib/Config"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", f'echo run >> "{runs}"; mkdir -p out; {both} > out/ext.so'),
        stage("use", f"{both} | cmp - out/ext.so")), files={"include/lib/Config": "#define A\n"})
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    for rel in ("pkg/__init__.py", "README.md", "tests/test_ops.py"):  # never read by a build
        change(fork, rel, "\n# glue\n", f"python-glue: {rel}")
        assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 1
    change(fork, "include/lib/Config", "#define B\n", "cpp-compat: a header")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and report["status"] == "passed"
    assert count(runs) == 2


def test_artifacts_over_a_small_cache_size_are_said_in_its_units(tmp_path: Path) -> None:
    """`pq.gate.cacheSize 1k` and a 2 KiB artifact: "artifacts of 0 MiB exceed the gate
    cache size (0 MiB)"."""
    fork, _ = fork_with_build(tmp_path, 'mkdir -p out; head -c 2048 /dev/zero > out/ext.so; '
                                        'cat csrc/ops.cc > out/ext.so; head -c 2048 /dev/zero '
                                        '>> out/ext.so')
    git(fork, "config", "pq.gate.cacheSize", "1k")
    text = pq(fork, "gate", ok=False).output
    assert "exceed the gate cache size (1.0 KiB); not cached" in text, text
    assert "0 MiB" not in text


@pytest.mark.parametrize("key,value", [("pq.gate.cacheSize", "100 kilobytes"),
                                       ("pq.gate.ccacheSize", "two gigs"),
                                       ("pq.gate.ccacheSize", "5GB"),
                                       ("pq.gate.cacheSize", "9" * 400 + "G")])
def test_a_cache_size_that_is_no_size_is_refused(tmp_path: Path, key: str, value: str) -> None:
    """`pq.gate.ccacheSize` reached ccache unchecked (every compile failed inside the
    build); an unparsable `pq.gate.cacheSize` silently became 2 GiB."""
    fork, runs = fork_with_build(tmp_path)
    git(fork, "config", key, value)
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2 and count(runs) == 0, result.output
    line = result.output.strip()
    assert "\n" not in line and f"git config {key}: {value!r} is not a size" in line
    assert f"`git config {key} " in line  # the accepted form, as a command


@pytest.mark.parametrize("what", ["CPATH", "NVCC_APPEND_FLAGS", "g++ on PATH"])
def test_the_compilers_and_their_variables_run_the_gate_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    """CPATH (gcc's include path), NVCC_APPEND_FLAGS, ... were not in the fingerprint, and
    another g++ first on PATH was the same toolchain: a cached or reused pass."""
    fork, runs = fork_with_build(tmp_path)
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    if what == "g++ on PATH":
        write(tmp_path / "bin", "g++", "#!/bin/sh\nexec /usr/bin/g++ -DOTHER \"$@\"\n",
              mode=0o755)
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    else:
        monkeypatch.setenv(what, "/opt/other")
    report = gate(fork)
    assert not report["cached"] and stages(report)["build"]["status"] == "passed", report
    assert count(runs) == 2
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 2


@pytest.mark.parametrize("pattern,path,hit", [
    ("csrc/*.[ch]", "csrc/ops.c", True), ("csrc/*.[ch]", "csrc/ops.h", True),
    ("csrc/*.[ch]", "csrc/ops.cc", False), ("csrc/*.[!c]", "csrc/ops.h", True),
    ("csrc/*.[!c]", "csrc/ops.c", False), ("a[/]b", "a/b", False), ("a[", "a[", True),
    ("v[0-9].h", "v7.h", True)])
def test_character_classes_match_as_fnmatch_does(pattern: str, path: str, hit: bool) -> None:
    assert matches(path, [pattern]) is hit


def test_a_pattern_that_names_no_file_is_not_reused_silently(tmp_path: Path) -> None:
    """`csrc/*.[ch]` was taken literally: it named no file, the stage was reusable on its
    command alone, and a broken source kept the old build."""
    runs = tmp_path / "runs.txt"

    def gate_with(patterns: str) -> None:
        set_gate(fork, stage_lines(
            stage("build", f'echo run >> "{runs}"; mkdir -p out; cp csrc/ops.c out/ext.so',
                  inputs=patterns),
            stage("use", "cmp out/ext.so csrc/ops.c")))

    fork = gate_fork(tmp_path, "", files={"csrc/ops.c": "int f;\n"})
    gate_with('["csrc/*.[ch]", csrc/*.cx]')
    first = gate(fork)
    assert first["status"] == "passed" and count(runs) == 1
    assert any("'csrc/*.cx' names no file" in w for w in first["warnings"]), first
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and count(runs) == 2  # not reused
    assert any("is not reused" in w for w in report["warnings"])
    gate_with('["csrc/*.[ch]"]')
    assert stages(gate(fork))["build"]["status"] == "passed" and count(runs) == 3
    change(fork, "csrc/ops.c", "int g;\n", "kernel: a change the class names")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and report["status"] == "passed"
    assert count(runs) == 4 and not any("no file" in w for w in report["warnings"])


def test_a_symbolic_link_the_build_made_is_restored(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs) + "; ln -s ext.so out/libext.so"),
        stage("use", "cmp out/libext.so csrc/ops.cc && test -L out/libext.so")))
    assert gate(fork)["status"] == "passed"
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "reused" and count(runs) == 1
    assert report["status"] == "passed", report


def test_reuse_never_puts_another_commits_tracked_file_in_place(tmp_path: Path) -> None:
    """A build that touches a tracked file outside its inputs (same bytes: no artifact), and
    one that rewrites one (its run started from those bytes: reused only where the tip has
    the same ones): the next stage always sees the tip's own file."""
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs) + "; touch pkg/__init__.py"),
        stage("use", "grep -q glue pkg/__init__.py && echo ok")))
    write(fork, "pkg/__init__.py", "# glue\n")
    commit_all(fork, "python-glue: glue")
    assert gate(fork)["status"] == "passed"
    write(fork, "pkg/__init__.py", "# broken\n")
    commit_all(fork, "python-glue: break it")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "reused" and count(runs) == 1
    assert report["status"] == "failed", report  # `use` read the tip's pkg/__init__.py
    runs2 = tmp_path / "runs2.txt"
    set_gate(fork, stage_lines(
        stage("build", BUILD.format(runs=runs2) + '; echo "# built" >> pkg/__init__.py'),
        stage("use", "cat pkg/__init__.py")))
    assert gate(fork)["status"] == "passed" and count(runs2) == 1
    change(fork, "README.md", "more\n", "docs: readme")  # pkg/__init__.py as it was
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs2) == 1
    change(fork, "pkg/__init__.py", "# changed\n", "python-glue: other bytes")
    assert stages(gate(fork))["build"]["status"] == "passed" and count(runs2) == 2


def test_reuse_restores_what_the_build_deleted_and_its_empty_folders(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs) + "; rm stale.py; mkdir -p build/tmp"),
        stage("use", "test ! -e stale.py && test -d build/tmp")))
    write(fork, "stale.py", "old = 1\n")
    commit_all(fork, "python-glue: a stale file")
    assert gate(fork)["status"] == "passed"
    change(fork, "README.md", "more\n", "docs: readme")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "reused" and count(runs) == 1
    assert report["status"] == "passed", report


def test_one_stage_run_alone_keys_on_the_stages_before_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("gen", "cp data/in.txt gen.txt", inputs="[data/**]"),
        stage("b", f'echo run >> "{runs}"; echo b > b.txt', inputs="[pkg/**]")),
        files={"data/in.txt": "one\n"})
    assert gate(fork, "--stage", "b")["status"] == "passed" and count(runs) == 1
    change(fork, "data/in.txt", "two\n", "python-glue: data")  # gen's input, not b's
    report = gate(fork, "--stage", "b")
    assert stages(report)["b"]["status"] == "passed" and count(runs) == 2


def test_a_failed_run_is_never_reused(tmp_path: Path) -> None:
    flag = tmp_path / "may-pass"
    fork, runs = fork_with_build(tmp_path, build=f'test -f "{flag}" || exit 3; ' + BUILD)
    assert gate(fork)["status"] == "failed"
    assert not (fork / ".git/pq/gate-cache").exists() or not any(
        p for p in (fork / ".git/pq/gate-cache").iterdir() if not p.name.startswith("."))
    flag.write_text("")
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and count(runs) == 1


def test_a_damaged_cache_entry_is_rebuilt_not_a_crash(tmp_path: Path) -> None:
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    (artifact,) = (fork / ".git/pq/gate-cache").glob("*/files/out/ext.so")
    os.chmod(artifact, stat.S_IRUSR | stat.S_IWUSR)
    artifact.write_text("bit rot\n")
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert report["status"] == "passed" and count(runs) == 2
    assert stages(report)["build"]["status"] == "passed"
    assert any("damaged cache entry" in w for w in report["warnings"]), report["warnings"]
    # The fresh run replaced the entry: the next glue change reuses it again.
    change(fork, "pkg/__init__.py", "\n# more glue\n", "python-glue: another comment")
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 2


def test_an_older_pqs_cache_entry_is_run_again_and_replaced(tmp_path: Path) -> None:
    """An entry of the format before tracked files carried their blob: not restored (it
    may hold another commit's tracked file), no warning; the run replaces it."""
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    (meta,) = (fork / ".git/pq/gate-cache").glob("*/meta.json")
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "format": 1}))
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and count(runs) == 2
    assert not any("damaged" in w for w in report["warnings"]), report["warnings"]
    change(fork, "pkg/__init__.py", "\n# more glue\n", "python-glue: another comment")
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 2


def test_declared_inputs_and_artifacts(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("gen", f'echo run >> "{runs}"; cp data/in.txt gen.txt; echo x > junk.txt',
              inputs="[data/**]", artifacts="[gen.txt]"),
        stage("check", "ls *.txt")),
        files={"data/in.txt": "one\n"})
    assert gate(fork)["status"] == "passed"
    change(fork, "csrc/ops.cc", "// native, but not an input of gen\n", "cpp-compat: comment")
    report = gate(fork)
    assert stages(report)["gen"]["status"] == "reused" and report["status"] == "passed"
    listed = Path(stages(report)["check"]["log"]).read_text().splitlines()
    assert "gen.txt" in listed and "junk.txt" not in listed  # only the declared artifacts
    change(fork, "data/in.txt", "two\n", "python-glue: data")
    assert stages(gate(fork))["gen"]["status"] == "passed" and count(runs) == 2


def test_stages_without_inputs_always_run_and_force_runs_everything(tmp_path: Path) -> None:
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork, "--force")
    assert count(runs) == 2 and stages(report)["build"]["status"] == "passed"
    assert stages(report)["use"]["status"] == "passed"


def test_ccache_is_wired_when_on_path_and_said_off_when_not(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    show = ('echo "dir=$CCACHE_DIR base=$CCACHE_BASEDIR max=$CCACHE_MAXSIZE '
            'gcc=$(readlink "$(command -v gcc)") launcher=$CMAKE_CXX_COMPILER_LAUNCHER"')
    fork = gate_fork(tmp_path, stage_lines(stage("build", show), python=python_alone(tmp_path)))
    for chosen in ("CC", "CXX"):  # a compiler chosen by path gets a wrapper of its own
        monkeypatch.delenv(chosen, raising=False)
    tools = tmp_path / "tools"
    bare = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not os.path.exists(os.path.join(p, "ccache")))
    monkeypatch.setenv("PATH", bare)
    off = pq(fork, "gate").output
    assert off.count("ccache not found on PATH") == 1, off

    write(tools, "ccache", "#!/bin/sh\nexec \"$@\"\n", mode=0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{bare}")
    git(fork, "config", "pq.gate.ccacheSize", "300M")
    report = gate(fork, "--force")
    log = Path(stages(report)["build"]["log"]).read_text()
    assert f"dir={fork / '.git/pq/ccache/cache'} " in log
    assert f"max=300M gcc={tools / 'ccache'} launcher={tools / 'ccache'}" in log
    base = log.split("base=")[-1].split()[0]
    assert "pq-gate-" in base and not os.path.exists(base)
    assert not any("ccache" in w for w in report["warnings"])


def test_a_compiler_the_caller_chose_by_path_goes_through_ccache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CXX=/opt/gcc/bin/g++ (an absolute path, as toolchain images set it) never meets the
    PATH shims: the stage gets a wrapper that runs it through ccache instead, in a folder
    that also links the toolchain's `ar` (where CMake looks for it)."""
    fork = gate_fork(tmp_path, stage_lines(stage(
        "build", '$CXX two.cc && echo "cc=$CC launcher=[$CMAKE_CXX_COMPILER_LAUNCHER] '
        'c=$CMAKE_C_COMPILER_LAUNCHER torch=$TORCH_NO_COMPILER_WRAPPER" && '
        'readlink "$(dirname "$CXX")/ar"'), python=python_alone(tmp_path)))
    calls, tools, chosen = tmp_path / "calls.txt", tmp_path / "tools", tmp_path / "opt gcc"
    write(tools, "ccache", f'#!/bin/sh\necho "ccache $*" >> "{calls}"\nexec "$@"\n',
          mode=0o755)
    write(chosen, "g++", f'#!/bin/sh\necho "g++ $*" >> "{calls}"\n', mode=0o755)
    write(chosen, "ar", "#!/bin/sh\n", mode=0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CXX", str(chosen / "g++"))
    monkeypatch.setenv("CC", "gcc -m64")  # a command with arguments: left as it is
    report = gate(fork)
    log = Path(stages(report)["build"]["log"]).read_text()
    assert report["status"] == "passed", log
    assert calls.read_text().splitlines() == [f"ccache {chosen / 'g++'} two.cc", "g++ two.cc"]
    assert f"cc=gcc -m64 launcher=[] c={tools / 'ccache'} torch=1" in log, log
    assert str(chosen / "ar") in log


def test_which_chosen_compilers_are_wrapped(tmp_path: Path) -> None:
    tools, pq_dir = tmp_path / "tools", tmp_path / "pq"
    write(tools, "ccache", "#!/bin/sh\n", mode=0o755)
    for name in ("g++", "clang++", "g++-12"):
        write(tools / "opt", name, "#!/bin/sh\n", mode=0o755)
    (tools / "lib-ccache").mkdir()
    os.symlink(tools / "ccache", tools / "lib-ccache" / "g++")  # Debian's /usr/lib/ccache
    path_env = f"{tools}{os.pathsep}{tools / 'opt'}"

    def wired(**chosen: str) -> dict[str, str]:
        return ccache.wire(pq_dir, tmp_path, path_env, chosen).env

    gcc, clang = wired(CXX=str(tools / "opt/g++")), wired(CXX=f" {tools / 'opt/clang++'} ")
    assert gcc["CXX"] != clang["CXX"] and clang["CXX"].endswith("/clang++")  # never shared
    assert Path(clang["CXX"]).read_text().endswith(f'{tools / "opt/clang++"} "$@"\n')
    for left in (str(tools / "lib-ccache/g++"), "opt/g++", str(tools / "opt/none"),
                 str(tools / "opt"), "ccache g++", gcc["CXX"], "g++"):
        assert "CXX" not in wired(CXX=left), left
    named = wired(CXX="g++-12")
    assert "CXX" not in named and os.readlink(pq_dir / "ccache/bin/g++-12") == str(
        tools / "ccache")
    stage_own = ccache.for_stage(gcc, {"CXX": "clang++"})
    assert stage_own["CMAKE_CXX_COMPILER_LAUNCHER"] == str(tools / "ccache")
    assert "TORCH_NO_COMPILER_WRAPPER" not in stage_own and gcc["CMAKE_CXX_COMPILER_LAUNCHER"] == ""


def test_glob_patterns() -> None:
    assert matches("csrc/a/b.cc", ["csrc/**"]) and matches("csrc/b.cc", ["csrc"])
    assert matches("x/y/_C.so", ["**/*.so"]) and matches("_C.so", ["**/*.so"])
    assert matches("build/lib/x.o", ["build/"]) and not matches("buildx/a", ["build/"])
    assert matches("setup.py", ["setup.py"]) and not matches("pkg/setup.py", ["setup.py"])
    assert not matches("csrc/a.cc", ["*.cc"]) and matches("a.cc", ["./*.cc"])


def test_the_toolchain_probe_is_remembered_until_the_interpreter_changes(tmp_path: Path
                                                                         ) -> None:
    # A virtualenv's interpreter (a link, not a launcher script: that one is asked which
    # Python it runs at every gate); probe.json is rewritten whenever the probe runs.
    py = tmp_path / "venv" / "bin" / "python3"
    py.parent.mkdir(parents=True)
    py.symlink_to(os.path.realpath(sys.executable))
    home = os.path.dirname(os.path.realpath(sys.executable))
    write(tmp_path / "venv", "pyvenv.cfg", f"home = {home}\ninclude-system-site-packages = "
          "true\n")
    fork = gate_fork(tmp_path, stage_lines(stage("tests", "echo ok"), python=str(py)))
    probe_json = fork / ".git" / "pq" / "gate" / "probe.json"
    stamps = []
    for _ in range(3):
        assert gate(fork, "--force")["status"] == "passed"
        stamps.append(probe_json.stat().st_ino)
    assert len(set(stamps)) == 1  # asked once, then remembered
    os.utime(py.parent.parent / "pyvenv.cfg",
             ns=(time.time_ns(), time.time_ns() + 10**9))  # as a re-created venv would
    report = gate(fork, "--force")
    assert probe_json.stat().st_ino != stamps[0]  # asked again
    assert report["fingerprint"]["python"] == platform.python_version()


def test_base_inputs_follow_the_recorded_base_not_the_forks_own_commits(
        tmp_path: Path) -> None:
    """A stage building the upstream side (`git archive` of the base), `inputs: ['base:**']`:
    reused while the fork adds a patch and rewrites series.yaml, run again once a rebase
    moves the base."""
    runs = tmp_path / "runs.txt"
    build = (f'echo run >> "{runs}"; base=$(sed -n "s/^  base: //p" series.yaml); '
             'rm -rf _up && mkdir _up && git archive "$base" | tar -x -C _up')
    fork = gate_fork(tmp_path, stage_lines(
        stage("upstream-build", build, inputs="['base:**']"),
        stage("use", "ls _up/pkg/util.py")))
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    change(fork, "pkg/glue.py", "x = 1\n", "python-glue: a new patch")
    pq(fork, "export", "--commit")
    report = gate(fork)
    assert stages(report)["upstream-build"]["status"] == "reused", report
    assert stages(report)["use"]["status"] == "passed" and count(runs) == 1
    git(fork, "checkout", "-q", "-b", "moved", "upstream/main")
    change(fork, "pkg/util.py", "# upstream moved\n", "upstream: a comment")
    git(fork, "checkout", "-q", "paddle")
    pq(fork, "rebase", "moved")
    report = gate(fork)
    assert stages(report)["upstream-build"]["status"] == "passed" and count(runs) == 2
    set_gate(fork, stage_lines(stage("upstream-build", "true", inputs="['base:']")))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2 and "`base:` names no files" in result.output
    assert "series.yaml:" in result.output


@pytest.mark.parametrize("damage", [
    lambda data: [1, 2], lambda data: "[" * 100_000 + "]" * 100_000,
    lambda data: {**data, "files": [5]}, lambda data: {**data, "files": [["out"]]}])
def test_a_cache_entry_of_another_shape_is_rebuilt_not_a_crash(
        tmp_path: Path, damage: Callable[[dict[str, Any]], Any]) -> None:
    """A meta.json that is not an object, holds files of another shape or nests deeper
    than the JSON parser recurses: the entry is damaged, the stage runs."""
    fork, runs = fork_with_build(tmp_path)
    gate(fork)
    (meta,) = (fork / ".git/pq/gate-cache").glob("*/meta.json")
    damaged = damage(json.loads(meta.read_text()))
    meta.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    report = gate(fork)
    assert report["status"] == "passed" and count(runs) == 2, report
    assert any("damaged cache entry" in w for w in report["warnings"]), report["warnings"]


# `use` reads the build's artifact where there is one (and passes without it, as a test
# that skips when the extension is not built): it keys on its own folder, tests/.
USE_IF_BUILT = 'test -f out/ext.so || { echo "not built: skipped"; exit 0; }; grep -q good out/ext.so'


def test_a_stage_run_alone_is_not_kept_for_a_whole_gate(tmp_path: Path) -> None:
    """`--stage use` ran without the build's files: its pass was kept under a key that
    says the build came first, and the whole gate reused it over a build that fails it."""
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs)),
        stage("use", USE_IF_BUILT, inputs="[tests/**]")), files={"tests/t.txt": "t\n"})
    assert stages(gate(fork, "--stage", "use"))["use"]["status"] == "passed"
    report = gate(fork)
    assert stages(report)["use"]["status"] == "failed", report  # out/ext.so lacks "good"


def test_a_stage_after_one_that_ran_is_not_reused(tmp_path: Path) -> None:
    """The build's cache entry gone (pruned, say): the build runs, and the stage after it
    runs too, whatever its own key says (the build may have made other files)."""
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs)),
        stage("use", f'echo use >> "{runs}"; test -f out/ext.so', inputs="[tests/**]")),
        files={"tests/t.txt": "t\n"})
    assert gate(fork)["status"] == "passed"
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    assert {n: s["status"] for n, s in stages(gate(fork)).items()} == {
        "build": "reused", "use": "reused"}
    build_key = stages(gate(fork, "--stage", "build"))["build"]["inputs"]
    shutil.rmtree(fork / ".git/pq/gate-cache" / build_key)
    change(fork, "pkg/__init__.py", "# more glue\n", "python-glue: another comment")
    assert {n: s["status"] for n, s in stages(gate(fork)).items()} == {
        "build": "passed", "use": "passed"}


def test_a_stage_after_one_without_a_key_has_none() -> None:
    """A `base:` stage where the base cannot be read runs; a later reusable stage, keyed
    as if no build came before it, was reused over a build that ran on other sources."""
    build = Stage("build", "make", inputs=("base:**",))
    use = Stage("use", "test", inputs=("tests/**",))
    entries = [("100644", "blob", "1" * 40, "tests/t.txt")]
    assert inputs.stage_keys([build, use], entries, {}, "python") == {}
    assert set(inputs.stage_keys([build, use], entries, {}, "python", entries)) == {
        "build", "use"}


def test_a_run_made_where_the_tip_now_tracks_a_file_is_not_restored(tmp_path: Path) -> None:
    """The build wrote pkg/_version.py where the tree had none; a later commit tracks its
    own: the reuse wrote the old run's over it (`use` saw another commit's file)."""
    runs = tmp_path / "runs.txt"
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD.format(runs=runs) + '; test -e pkg/_version.py || '
                       'echo "version = 0" > pkg/_version.py'),
        stage("use", "cat pkg/_version.py")))
    assert gate(fork)["status"] == "passed" and count(runs) == 1
    change(fork, "pkg/_version.py", "version = 1\n", "python-glue: a version")
    report = gate(fork)
    assert stages(report)["build"]["status"] == "passed" and count(runs) == 2, report
    assert (fork / "pkg/_version.py").read_text() == "version = 1\n"


def test_an_entry_that_cannot_be_put_in_place_is_kept(tmp_path: Path) -> None:
    """A commit that tracks a file `out` where the cached run has the folder out/: the
    stage runs (and fails, as it would), and the entry, which other commits need, stays."""
    fork, runs = fork_with_build(tmp_path, inputs="[csrc/**]")  # `out` is no input
    first = gate(fork)
    key = stages(first)["build"]["inputs"]
    git(fork, "checkout", "-q", "-b", "other")
    change(fork, "out", "a file\n", "python-glue: a file named out")
    text = pq(fork, "gate", ok=False).output
    assert "damaged" not in text and count(runs) == 2, text
    assert (fork / ".git/pq/gate-cache" / key / "meta.json").is_file()
    git(fork, "checkout", "-q", "-")
    change(fork, "pkg/__init__.py", "\n# glue\n", "python-glue: a comment")
    assert stages(gate(fork))["build"]["status"] == "reused" and count(runs) == 2


def test_a_cached_result_warns_of_uncommitted_changes(tmp_path: Path) -> None:
    fork, _ = fork_with_build(tmp_path)
    assert gate(fork)["status"] == "passed"
    write(fork, "csrc/ops.cc", "// not committed\n")
    report = gate(fork)
    assert report["cached"] and any("uncommitted changes" in w for w in report["warnings"])
