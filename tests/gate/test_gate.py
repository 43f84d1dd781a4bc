"""`pq gate` on real repositories: stages, logs, notes, cache, GPU stages, exit codes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import select
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from fixtures.gate.gatefork import (
    PY,
    gate_fork,
    note,
    python_alone,
    set_gate,
    stage,
    stage_lines,
)
from gitrepo import commit_all, flickering, git, pq, terminate_pq_once_started, write

from pq.cli import common
from pq.cli.render_gate import report_text
from pq.gate import api, probe
from pq.git.repo import Git


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may never reap orphans)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


THREE = stage_lines(
    stage("build", "echo building; echo built > built.txt"),
    stage("import", "test -f built.txt && echo imported"),
    stage("tests", "echo tests ok"),
)


def test_passing_gate_records_a_note_and_keeps_logs(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, THREE)
    tip = git(fork, "rev-parse", "HEAD")
    result = pq(fork, "gate")
    assert result.exit_code == 0
    assert "result: passed" in result.output
    for name in ("build", "import", "tests"):
        assert f"  {name}" in result.output
    rec = note(fork)
    assert rec["tip"] == tip and rec["tree"] == git(fork, "rev-parse", "HEAD^{tree}")
    assert rec["status"] == "passed" and rec["partial"] is False
    assert [s["name"] for s in rec["stages"]] == ["build", "import", "tests"]
    assert {s["status"] for s in rec["stages"]} == {"passed"}
    assert set(rec["fingerprint"]) >= {"python", "torch", "paddle", "cuda", "gpu", "driver",
                                       "os", "machine"}
    assert rec["pq"] and rec["time"].endswith("Z")
    log = fork / ".git/pq/gate/logs" / tip / "import.log"
    assert "imported" in log.read_text()
    import hashlib
    assert rec["stages"][1]["log_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    # The gate changed no ref but its notes ref, and left no worktree behind.
    assert git(fork, "worktree", "list").count("\n") == 0
    assert not (fork / "built.txt").exists()
    status = pq(fork, "gate", "--status")
    assert "result: passed" in status.output and tip[:12] in status.output
    data = json.loads(pq(fork, "gate", "--status", "--json").output)
    assert data["record"]["status"] == "passed" and data["found_on"] == tip


def test_a_gate_run_from_a_commit_hook_records_its_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `git commit -a` a pre-commit hook has GIT_INDEX_FILE naming another index:
    the gate, which works in a worktree of its own and writes a note, ran every stage and
    then was refused its record."""
    fork = gate_fork(tmp_path, THREE)
    monkeypatch.setenv("GIT_INDEX_FILE", str(fork / ".git/index.lock"))
    result = pq(fork, "gate")
    assert result.exit_code == 0 and "not recorded" not in result.output, result.output
    assert note(fork)["status"] == "passed"


def test_stage_environment_interpreter_and_worktree(tmp_path: Path) -> None:
    check = ('echo "py=$PQ_PYTHON python=$PYTHON first=${PATH%%:*} foo=$FOO '
             'stage=$PQ_GATE_STAGE pwd=$(pwd) head=$(git rev-parse HEAD)"')
    py = python_alone(tmp_path)  # no ccache beside it: its shims would come first on PATH
    fork = gate_fork(tmp_path, stage_lines(stage("build", check, env='{FOO: "bar baz"}'),
                                           python=py))
    tip = git(fork, "rev-parse", "HEAD")
    pq(fork, "gate")
    text = (fork / ".git/pq/gate/logs" / tip / "build.log").read_text()
    assert f"py={py} python={py} first={os.path.dirname(py)} foo=bar baz stage=build" in text
    assert f"head={tip}" in text
    pwd = text.split("pwd=")[-1].split()[0]
    assert "pq-gate-" in pwd and not pwd.startswith(str(fork))
    assert not os.path.exists(pwd)


def test_a_stage_path_without_bash_still_runs_the_stage(tmp_path: Path) -> None:
    """`env: {PATH: ...}` is taken as written (no `$PATH` expansion): pq's own bash runs
    the command all the same, with the stage's PATH."""
    fork = gate_fork(tmp_path, stage_lines(stage("build", 'echo "path=$PATH"',
                                                 env='{PATH: /opt/cuda/bin}')))
    tip = git(fork, "rev-parse", "HEAD")
    assert "result: passed" in pq(fork, "gate").output
    text = (fork / ".git/pq/gate/logs" / tip / "build.log").read_text()
    assert "path=/opt/cuda/bin" in text


def test_failing_build_shows_the_tail_and_stops(tmp_path: Path) -> None:
    failing = stage("build", "echo 'csrc/ops.cc:3:5: error: no member named foo' >&2; "
                    "for i in $(seq 1 100); do echo line $i; done; "
                    "echo 'error: command g++ failed' >&2; exit 3")
    fork = gate_fork(tmp_path, stage_lines(failing, stage("tests", "echo never")))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1
    assert "failed (exit 3)" in result.output
    # The cause, far above the end of the log, comes first; then the log's last lines.
    cause = result.output.index("csrc/ops.cc:3:5: error: no member named foo")
    assert result.output.index("[error lines]") < cause < result.output.index("line 100")
    assert "error: command g++ failed" in result.output
    assert "line 100" in result.output and "line 2\n" not in result.output
    assert "not run" in result.output
    assert "pq gate --stage build" in result.output
    rec = note(fork)
    assert rec["status"] == "failed"
    assert [s["status"] for s in rec["stages"]] == ["failed", "not-run"]
    assert rec["stages"][0]["exit_code"] == 3
    assert pq(fork, "gate", "--status", ok=False).exit_code == 1


def gone_within(pid: int, seconds: float) -> bool:
    """Wait for `pid` to exit (an event: its pidfd turns readable), at most `seconds`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], seconds)[0])
    finally:
        os.close(fd)


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    slow = stage("build", f"sleep 60 & echo $! > {pidfile}; echo started; wait", timeout="1")
    fork = gate_fork(tmp_path, stage_lines(slow))
    start = time.monotonic()
    result = pq(fork, "gate", ok=False)
    assert time.monotonic() - start < 15
    assert result.exit_code == 1
    assert "timed out after 1 s" in result.output
    child = int(pidfile.read_text())
    assert gone_within(child, 5) and not running(child)
    assert note(fork)["stages"][0]["status"] == "timed-out"


@pytest.mark.skipif(not Path("/proc/self/environ").exists() or shutil.which("setsid") is None,
                    reason="needs /proc and setsid")
def test_what_left_the_stage_s_process_group_ends_with_the_stage(tmp_path: Path) -> None:
    """`setsid -f` and a shell's job control (`set -m`) give a descendant a group of its
    own: it outlived the stage, its timeout and `pq gate`, working on in a removed
    worktree. It carries the stage's PQ_GATE_WORKTREE, and is killed by it."""
    pids = tmp_path / "pids"
    left = stage("build", f'setsid -f sh -c \'echo $$ >> "{pids}"; exec sleep 41\'; '
                          f'set -m; sleep 42 & echo $! >> "{pids}"; sleep 0.5')
    late = stage("tests", f'setsid -f sh -c \'echo $$ >> "{pids}"; exec sleep 43\'; sleep 30',
                 timeout="1")
    fork = gate_fork(tmp_path, stage_lines(left, late))
    assert pq(fork, "gate", ok=False).exit_code == 1  # (the second stage times out)
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 3 and all(gone_within(p, 5) for p in found), found


def test_a_command_that_exits_leaving_a_process_on_its_output_ends_with_its_code(
        tmp_path: Path) -> None:
    """`cmd &` and exit 0 (a reproducer, a captured stage): the command ended; the process
    it left holds the output pipe, and is stopped, not waited for until the time limit."""
    from pq.git import process

    pidfile = tmp_path / "child.pid"
    start = time.monotonic()
    done = process.run(["sh", "-c", f"(sleep 60) & echo $! > {pidfile}; echo gap closed"],
                       timeout=30)
    assert time.monotonic() - start < 10
    assert (done.code, done.timed_out, done.stdout) == (0, False, b"gap closed\n")
    assert gone_within(int(pidfile.read_text()), 5)


def test_missing_interpreter_is_a_configuration_error(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"), python="/no/such/python3"))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2
    line = (fork / "series.yaml").read_text().splitlines().index(
        "  python: /no/such/python3") + 1
    assert f"series.yaml:{line}:11: python interpreter '/no/such/python3' not found" in \
        result.output
    result = pq(fork, "gate", "--python", "no-such-python-here", ok=False)
    assert result.exit_code == 2 and "'no-such-python-here' not found" in result.output
    write(fork, "notes.txt", "not a program\n")  # there, but no interpreter: not "not found"
    result = pq(fork, "gate", "--python", str(fork / "notes.txt"), ok=False)
    assert result.exit_code == 2 and "notes.txt' is no executable file" in result.output
    # --python overrides a broken gate.python.
    assert pq(fork, "gate", "--python", PY).exit_code == 0


def test_no_gate_section_says_how_to_add_one(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, "")
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2
    assert "no `gate` section" in result.output
    assert "build, import, smoke, tests, compare" in result.output
    assert "add a gate section" in result.output and "stages:" in result.output


BAD = [
    ("unknown stage key", stage("build", "true", colour="red"), "colour: red",
     "unknown key `colour` in gate stage 1"),
    ("run and kind", stage("build", "true", kind="compare"), "kind: compare",
     "needs exactly one of `run`"),
    ("neither run nor kind", "    - name: build\n      timeout: 5\n", "- name: build",
     "needs exactly one of `run`"),
    ("duplicate", stage("build", "true") + stage("build", "false"), None,
     "duplicate gate stage 'build'"),
    ("timeout type", stage("build", "true", timeout='"ten"'), 'timeout: "ten"',
     "`timeout` must be a positive number"),
    ("requires", stage("build", "true", requires="[tpu]"), "requires: [tpu]",
     "unknown requirement 'tpu'"),
    ("env value", stage("build", "true", env="{A: [1]}"), "env: {A: [1]}",
     "env A must be a string"),
    ("env number", stage("build", "true", env="{V: 12.10}"), "env: {V: 12.10}",
     "env V must be a string (write it quoted, `V: \"...\"`"),
    ("env octal", stage("build", "true", env="{UMASK: 022}"), "env: {UMASK: 022}",
     "env UMASK must be a string"),
    ("env NUL", stage("build", "true", env='{V: "a\\0b"}'), "env: {V:",
     "env V holds a NUL character"),
    ("run NUL", stage("build", "true\0"), "run:", "`run` holds a NUL character"),
    ("unknown kind", "    - name: cmp\n      kind: fuzz\n", "kind: fuzz", "unknown kind 'fuzz'"),
    ("bad name", stage("bad/name", "true"), "name: bad/name", "bad gate stage name"),
    ("name ending in a newline", '    - name: "build\\n"\n      run: "true"\n', 'name: "build',
     "bad gate stage name"),
    ("env name ending in a newline", stage("build", "true", env='{"CC\\n": x}'), "env: {",
     "bad environment variable name"),
    # Braces were taken literally (a pattern naming no file: reused for ever); `[]` made a
    # stage reusable on its command alone.
    ("braces", stage("build", "true", inputs='["csrc/*.{c,h}"]'), "inputs:",
     "uses braces, which are no glob syntax here (list the patterns separately"),
    ("no inputs", stage("build", "true", inputs="[]"), "inputs: []",
     "`inputs: []` names no file"),
]


@pytest.mark.parametrize("case,stages,marker,message", BAD, ids=[b[0] for b in BAD])
def test_bad_gate_section_points_at_the_line(tmp_path: Path, case: str, stages: str,
                                             marker: str | None, message: str) -> None:
    fork = gate_fork(tmp_path, stage_lines(stages))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2, result.output
    lines = (fork / "series.yaml").read_text().splitlines()
    if marker is None:  # the duplicate: the second `name: build`
        line = [i for i, t in enumerate(lines, 1) if "name: build" in t][1]
    else:
        line = next(i for i, t in enumerate(lines, 1) if marker in t)
    assert f"series.yaml:{line}:" in result.output, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_top_level_gate_keys(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, "gate:\n  stages: []\n")
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2 and "`gate.stages` must be a non-empty list" in result.output
    set_gate(fork, "gate:\n  stage:\n    - name: build\n      run: 'true'\n")
    result = pq(fork, "gate", ok=False)
    line = (fork / "series.yaml").read_text().splitlines().index("  stage:") + 1
    assert result.exit_code == 2 and f"series.yaml:{line}:" in result.output
    assert "unknown key `gate.stage`" in result.output
    set_gate(fork, stage_lines(stage("build", "true")) + "  required_for_push: [tests]\n")
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2 and "names no stage 'tests'" in result.output


def test_configuration_comes_from_the_committed_tip_and_the_worktree_is_untouched(
        tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "touch made-by-gate; echo ok")))
    # Uncommitted edits: a failing gate in series.yaml, a dirty file, an untracked file.
    set_gate(fork, stage_lines(stage("build", "exit 9")), commit=False)
    write(fork, "setup.py", "dirty\n")
    write(fork, "untracked.txt", "mine\n")
    before = git(fork, "status", "--porcelain")
    files = {p: (fork / p).read_bytes() for p in ("series.yaml", "setup.py", "untracked.txt")}
    result = pq(fork, "gate")
    assert result.exit_code == 0
    assert "warning: uncommitted changes are not part of this result" in result.output
    assert git(fork, "status", "--porcelain") == before
    assert {p: (fork / p).read_bytes() for p in files} == files
    assert not (fork / "made-by-gate").exists()


def test_gpu_stage_is_skipped_not_passed_without_a_gpu(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", "true"), stage("gpu-tests", "echo on the gpu", requires="[gpu]")))
    monkeypatch.setenv("PQ_GPU", "0")
    result = pq(fork, "gate")
    assert result.exit_code == 0
    assert "skipped (no GPU)" in result.output
    assert "refs changed while the stages ran" not in result.output  # (no stage runs git)
    assert "passed (GPU stages owed: gpu-tests)" in result.output
    rec = note(fork)
    assert rec["status"] == "owed" and rec["owed"] == ["gpu-tests"]
    assert rec["stages"][1]["status"] == "skipped-no-gpu"
    assert rec["fingerprint"]["gpu_visible"] is False
    with Git.open(fork) as g:
        ok, why = api.record_ok(g, "HEAD", ["build", "gpu-tests"])
        assert not ok and "gpu-tests (skipped (no GPU))" in why and "GPU" in why
        assert api.record_ok(g, "HEAD", ["build"])[0]
    # Where a GPU is visible the stage runs (a new environment: no cache hit).
    monkeypatch.setenv("PQ_GPU", "1")
    result = pq(fork, "gate")
    assert "cached" not in result.output and "result: passed\n" in result.output
    rec = note(fork)
    assert rec["status"] == "passed" and rec["fingerprint"]["gpu_visible"] is True
    # The CPU run is kept as history, and a later CPU run does not erase the GPU pass.
    assert [h["status"] for h in rec["history"]] == ["owed"]
    monkeypatch.setenv("PQ_GPU", "0")
    pq(fork, "gate", "--force")
    with Git.open(fork) as g:
        assert api.record_ok(g, "HEAD", ["build", "gpu-tests"])[0]


def test_a_gpu_cuda_visible_devices_hides_is_no_gpu(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia-smi lists every GPU whatever CUDA_VISIBLE_DEVICES says: with `-1` (or "")
    CUDA sees none, yet the GPU stage ran, its suite skipped its tests, and pq recorded a
    GPU pass the hook then took."""
    from pq import toolchain

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1a2b3c4d-0000)'\n"
                   "echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1a2b9999-0000)'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PQ_GPU", raising=False)
    for hidden in ("-1", "", "NoDevFiles", "2", "GPU-ffff", "GPU-1a2b", "GPU-"):  # (a
        assert not toolchain.gpu_listed(hidden), hidden  # prefix both have names neither)
    for shown in (None, "0", "1,0", "GPU-1a2b3", " 0", "MIG-GPU-1a2b9999-0000/1/0"):
        assert toolchain.gpu_listed(shown), shown
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", "true"), stage("gpu-tests", "echo on the gpu", requires="[gpu]")))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    result = pq(fork, "gate")
    assert "skipped (no GPU)" in result.output and note(fork)["status"] == "owed"


def test_a_stage_that_changes_the_repositorys_refs_is_named(tmp_path: Path) -> None:
    """A stage's worktree shares the user's refs: `git tag`, or a moved branch, passed
    without a word, though the docs said the user's refs are never touched."""
    fork = gate_fork(tmp_path, stage_lines(stage("tests", "git tag made-by-stage")))
    result = pq(fork, "gate")
    assert result.exit_code == 0, result.output
    assert "warning: the repository's refs changed while the stages ran (their worktree " \
           "shares them): refs/tags/made-by-stage - -> " in result.output, result.output


def test_builtin_kind_is_reported_not_available(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"))
                     + "    - name: compare\n      kind: compare\n")
    result = pq(fork, "gate")
    assert result.exit_code == 0 and "not available" in result.output
    assert note(fork)["status"] == "owed"


def test_cache_reuse_and_force(tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    # Named `tests` (no inputs): never reused on its own, only with the whole record.
    fork = gate_fork(tmp_path, stage_lines(stage("tests", f"echo run >> {counter}")))
    pq(fork, "gate")
    second = pq(fork, "gate")
    assert "cached" in second.output and counter.read_text().count("run") == 1
    data = json.loads(pq(fork, "gate", "--json").output)
    assert data["cached"] is True and data["status"] == "passed"
    pq(fork, "gate", "--force")
    assert counter.read_text().count("run") == 2
    # A new tree runs again; the same tree on another commit is reused.
    write(fork, "pkg/new.py", "x = 1\n")
    commit_all(fork, "python-glue: new module")
    pq(fork, "gate")
    assert counter.read_text().count("run") == 3
    git(fork, "commit", "-q", "--amend", "-m", "python-glue: new module, reworded")
    result = pq(fork, "gate")
    assert "cached" in result.output and counter.read_text().count("run") == 3
    assert "same tree" in pq(fork, "gate", "--status").output


def test_a_newer_failure_of_a_stage_outranks_an_older_pass(tmp_path: Path) -> None:
    """After a full pass, `--stage tests --force` failed on the same tree and environment (a
    partial record beside the pass): a plain `pq gate` answered `cached passed`."""
    flag = tmp_path / "flaky"
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"),
                                           stage("tests", f"test ! -e {flag}")))
    assert pq(fork, "gate").exit_code == 0
    flag.touch()
    assert pq(fork, "gate", "--stage", "tests", "--force", ok=False).exit_code == 1
    again = pq(fork, "gate", ok=False)
    assert again.exit_code == 1 and "cached" not in again.output, again.output
    flag.unlink()
    assert pq(fork, "gate").exit_code == 0  # a newer pass wins over the older failure
    assert "cached" in pq(fork, "gate").output


def test_another_interpreter_is_not_answered_from_the_record(tmp_path: Path) -> None:
    """`--python B` answered `cached passed` from `--python A`'s record (the same versions,
    other packages), while stage reuse already keyed on the interpreter."""
    links = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "python").symlink_to(os.path.realpath(sys.executable))
        links.append(str(tmp_path / name / "python"))
    fork = gate_fork(tmp_path, stage_lines(stage("tests", f'test "$PYTHON" = {links[0]}')))
    assert pq(fork, "gate", "--python", links[0]).exit_code == 0
    assert "cached" in pq(fork, "gate", "--python", links[0]).output
    other = pq(fork, "gate", "--python", links[1], ok=False)
    assert other.exit_code == 1 and "cached" not in other.output, other.output


def test_another_pythonpath_is_not_answered_from_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PYTHONPATH decides what the stages import as much as the interpreter does."""
    write(tmp_path / "a", "mymod.py", "")
    (tmp_path / "b").mkdir()
    fork = gate_fork(tmp_path, stage_lines(stage("tests", '"$PYTHON" -c "import mymod"')))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "a"))
    assert pq(fork, "gate").exit_code == 0
    assert "cached" in pq(fork, "gate").output
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "b"))
    other = pq(fork, "gate", ok=False)
    assert other.exit_code == 1 and "cached" not in other.output, other.output


def test_a_launcher_is_asked_which_interpreter_it_runs_in_the_worktree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pyenv shim as the interpreter was probed once in `/` and kept by the shim's mtime:
    PYENV_VERSION, or a committed .python-version, changed the Python the stages ran while
    the fingerprint, the record and the reused stages said the first one."""
    pythons = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "python").symlink_to(os.path.realpath(sys.executable))
        pythons[name] = str(tmp_path / name / "python")
    shim = tmp_path / "shims" / "python"  # where pyenv, asdf and mise keep theirs
    write(shim.parent, "python", "#!/bin/sh\n"  # .pyver in the folder it runs in, or $PYVER
          f'v=$(cat .pyver 2>/dev/null || echo "${{PYVER:-a}}"); exec "{tmp_path}/$v/python" "$@"\n',
          mode=0o755)
    fork = gate_fork(tmp_path, stage_lines(stage("tests", f'test "$PYTHON" = {pythons["a"]}'),
                                           python=str(shim)))
    assert pq(fork, "gate").exit_code == 0
    assert "cached" in pq(fork, "gate").output
    monkeypatch.setenv("PYVER", "b")
    other = pq(fork, "gate", ok=False)  # another Python: no cached record, and it fails
    assert other.exit_code == 1 and "cached" not in other.output, other.output
    monkeypatch.delenv("PYVER")
    write(fork, ".pyver", "b\n")  # the repository pins another Python
    commit_all(fork, "python-glue: pin python b")
    pinned = json.loads(pq(fork, "gate", "--json", ok=False).stdout)
    assert pinned["status"] == "failed", pinned  # it ran with b, as the stages would


def test_a_wrapper_script_as_the_interpreter_is_what_the_stages_run(tmp_path: Path) -> None:
    """A script that sets what the interpreter needs, then execs it (conda, environment
    modules, a CUDA library path), is no version manager's shim: the stages run it."""
    wrapper = tmp_path / "tools" / "python"
    write(wrapper.parent, "python", "#!/bin/sh\nexport NEEDED=1\n"
          f'exec "{os.path.realpath(sys.executable)}" "$@"\n', mode=0o755)
    fork = gate_fork(tmp_path, stage_lines(stage(
        "tests", '"$PYTHON" -c "import os; assert os.environ[\'NEEDED\'] == \'1\'"'),
        python=str(wrapper)))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 0, result.output


def test_stage_subset(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, THREE)
    result = pq(fork, "gate", "--stage", "tests", "--stage", "build")
    assert "  build" in result.output and "  tests" in result.output
    assert "  import" not in result.output
    rec = note(fork)
    assert rec["partial"] is True and [s["name"] for s in rec["stages"]] == ["build", "tests"]
    # A full run is not satisfied by the partial record.
    assert "cached" not in pq(fork, "gate").output
    assert "cached" in pq(fork, "gate", "--stage", "import").output
    bad = pq(fork, "gate", "--stage", "nope", ok=False)
    assert bad.exit_code == 2 and "no gate stage named 'nope'" in bad.output


def test_junit_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PQ_GPU", "0")
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", "true"), stage("gpu", "true", requires="[gpu]"),
        stage("tests", "printf 'bad \\001 byte <&>\\n'; exit 1"), stage("after", "true")))
    out = tmp_path / "reports" / "gate.xml"
    result = pq(fork, "gate", "--junit", str(out), ok=False)
    assert result.exit_code == 1
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "2")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["build", "gpu", "tests", "after"]
    failure = cases["tests"].find("failure")
    assert failure is not None and "bad ? byte <&>" in (failure.text or "")
    assert cases["gpu"].find("skipped") is not None
    assert cases["build"].find("failure") is None and cases["build"].find("skipped") is None


def test_junit_text_of_a_name_that_is_not_utf8_is_well_formed_xml() -> None:
    """A log path in a folder whose name is not UTF-8 (`fork\\xff`: a lone surrogate in
    pq's text) was written into <system-out> as a character XML does not allow."""
    from pq.gate import junit
    from pq.gate import result as R

    stages = [R.StageResult("build", R.PASSED, log="/tmp/fork\udcff/build.log"),
              R.StageResult("tests", R.FAILED, detail="exit 1", tail="bad \udcfe byte")]
    xml = junit.render(stages, tip="0" * 40, tree="1" * 40, status="failed",
                       time="2026-12-06T00:00:00Z", fingerprint={}, cached=False)
    root = ET.fromstring(xml)
    assert "fork\ufffd/build.log" in ET.tostring(root, encoding="unicode")


def test_a_stage_the_system_will_not_start_fails_as_a_stage(tmp_path: Path) -> None:
    """A command past the system's size limit for one (E2BIG): an internal error, with no
    record of the stages that had passed; now that stage fails, and the run is recorded."""
    fork = gate_fork(tmp_path, stage_lines(stage("first", "true"),
                                           stage("huge", "true # " + "x" * 300_000),
                                           stage("after", "true")))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1, result.output
    assert "huge   failed" in result.output and "could not start: Argument list too long" \
        in result.output, result.output
    recorded = note(fork)
    assert [(st["name"], st["status"]) for st in recorded["stages"]][:2] == [
        ("first", "passed"), ("huge", "failed")]


def test_status_shows_the_newest_record_of_the_tree(tmp_path: Path) -> None:
    """The tip passed; the same tree under a reworded commit failed a second later: `pq
    gate` on the tip saw that failure (no cached pass), but --status showed the tip's own
    older pass, exit 0."""
    flag = tmp_path / "broken"
    fork = gate_fork(tmp_path, stage_lines(stage("tests", f"test ! -e {flag}")))
    first = git(fork, "rev-parse", "HEAD")
    assert pq(fork, "gate").exit_code == 0
    git(fork, "commit", "-q", "--amend", "-m", "reworded")
    reworded = git(fork, "rev-parse", "HEAD")
    flag.touch()
    time.sleep(1.1)  # records are timed to the second
    assert pq(fork, "gate", "--force", ok=False).exit_code == 1
    git(fork, "checkout", "-q", first)
    status = pq(fork, "gate", "--status", "--json", ok=False)
    data = json.loads(status.output)
    assert status.exit_code == 1 and data["found_on"] == reworded, data
    assert data["record"]["status"] == "failed"


def test_a_note_whose_gpus_are_not_names_is_left_out_not_a_crash(tmp_path: Path) -> None:
    """`fingerprint.gpu` of another shape (a number, true, a list of numbers) passed the
    record's shape check, and --status crashed rendering it."""
    fork = gate_fork(tmp_path, stage_lines(stage("a", "true")))
    tree = git(fork, "rev-parse", "HEAD^{tree}")
    for gpu in (5, True, [1]):
        git(fork, "notes", "--ref=refs/notes/pq-gate", "add", "-f", "-m", json.dumps(
            {"tree": tree, "status": "passed", "fingerprint": {"gpu": gpu},
             "stages": [{"name": "a", "status": "passed"}]}), "HEAD")
        status = pq(fork, "gate", "--status", ok=False)
        assert status.exit_code == 1 and "no gate record" in status.output, status.output


@pytest.mark.parametrize("as_json", [True, False])
def test_a_junit_file_that_cannot_be_written_keeps_the_report(tmp_path: Path,
                                                              as_json: bool) -> None:
    """The stages ran (and are recorded) when the JUnit file fails to be written (here a
    stage puts a file where its folder was): the report is still printed, the error with
    it (under `error` in --json), exit 2."""
    reports = tmp_path / "reports"
    fork = gate_fork(tmp_path, stage_lines(stage("build", f"rm -rf {reports}; touch {reports}")))
    reports.mkdir()
    args = ["gate", "--junit", str(reports / "gate.xml")] + (["--json"] if as_json else [])
    result = pq(fork, *args, ok=False)
    assert result.exit_code == 2, result.output
    if as_json:
        data = json.loads(result.stdout)
        # The JSON agrees with the exit code (it said status passed, exit_code 0).
        assert data["status"] == "error" and data["exit_code"] == 2, data
        assert [s["name"] for s in data["stages"]] == ["build"]  # the stages, as they ran
        assert "cannot write it" in data["error"]["message"] and "cannot" in data["summary"]
        assert data["error"]["exit_code"] == 2
    else:
        assert "build" in result.stdout and "result: passed" in result.stdout
        assert "cannot write it" in result.output
    assert "result: passed" in pq(fork, "gate", "--status").output


def test_a_junit_path_refused_before_the_stages_keeps_the_json_shape(tmp_path: Path) -> None:
    """`--junit afile/x.xml` (a file where its folder goes), refused before any stage:
    `--json` printed the bare error object, where docs/gate.md promises the report's
    shape with `error` set."""
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true")))
    write(fork, "afile", "x\n")
    result = pq(fork, "gate", "--json", "--junit", "afile/x.xml", ok=False)
    data = json.loads(result.stdout)
    assert result.exit_code == 2 and data["status"] == "error" and data["stages"] == [], data
    assert "afile is not a folder" in data["error"]["message"], data


def test_json_shape(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "echo hi; exit 1")))
    result = pq(fork, "gate", "--json", ok=False)
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["status"] == "failed" and data["exit_code"] == 1
    assert set(data) >= {"tip", "tree", "summary", "cached", "stages", "fingerprint", "owed"}
    (st,) = data["stages"]
    assert st["status"] == "failed" and "hi" in st["tail"] and os.path.isfile(st["log"])
    fork2 = gate_fork(tmp_path / "two", "")
    bad = pq(fork2, "gate", "--json", ok=False)
    assert bad.exit_code == 2 and json.loads(bad.stdout)["status"] == "error"
    nowhere = tmp_path / "not a repository"
    nowhere.mkdir()
    outside = pq(nowhere, "gate", "--json", ok=False)
    data = json.loads(outside.stdout)
    assert outside.exit_code == 2 and (data["status"], data["stages"]) == ("error", [])
    assert "not a git repository" in data["error"]["message"]


def test_run_gate_api(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, THREE)
    seen: list[str] = []
    with Git.open(fork) as g:
        report = api.run_gate(g, progress=lambda i, n, label: seen.append(label))
        assert report.status == "passed" and report.exit_code == 0
        assert "result: passed" in report_text(report)
        assert report.to_json()["stages"][0]["name"] == "build"
        assert any(label.startswith("build") for label in seen)
        again = api.run_gate(g, stages=["tests"])
        assert again.cached and [s.name for s in again.stages] == ["tests"]
        cfg = api.load_config(g, "HEAD")
        assert cfg is not None and cfg.names == ("build", "import", "tests")


def test_the_probe_key_is_the_same_in_every_process(tmp_path: Path) -> None:
    """It iterated a set of the interpreter's two prefixes (a virtualenv's and its base's):
    the key changed with hash randomisation and the remembered probe missed half the runs."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    src = str(Path(probe.__file__).parents[2])
    python = str(venv / "bin" / "python")
    script = f"from pq.gate import probe; print(probe._probe_key({python!r}, '/usr/bin'))"
    keys = {subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                           text=True, env={**os.environ, "PYTHONHASHSEED": str(seed),
                                           "PYTHONPATH": src}).stdout
            for seed in range(1, 9)}
    assert len(keys) == 1, keys


def test_the_last_stage_shows_its_progress_on_a_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line was cleared whenever the last stage ticked: while the final stage (often the
    long test suite) ran, the terminal showed nothing."""
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"), stage("tests", "sleep 1.6")))
    monkeypatch.setattr(common, "sys", SimpleNamespace(stderr=terminal, stdout=sys.stdout))
    assert pq(fork, "gate").exit_code == 0
    states = terminal.getvalue().split("\r")
    shown = [a.strip() for a, b in zip(states, states[1:]) if a.strip() and b.strip()]
    assert "gate 2/2: tests (0 s)" in shown, repr(terminal.getvalue())  # stays shown
    assert terminal.getvalue().endswith("\r" + " " * 80 + "\r")  # cleared when done


def _dist(folder: Path, name: str, version: str, files: dict[str, str] | None = None) -> None:
    """A package as importlib.metadata finds it in a PYTHONPATH folder."""
    shutil.rmtree(folder, ignore_errors=True)
    write(folder / f"{name}-{version}.dist-info", "METADATA",
          f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for rel, text in (files or {}).items():
        write(folder, rel, text)


def test_the_fingerprint_follows_the_paddle_build_and_what_pythonpath_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Develop builds of Paddle all say 0.0.0: the commit the probe read was left out of
    the fingerprint. And probe.json was keyed on PYTHONPATH's value: a torch replaced in
    one of its folders (`pip install --upgrade --target`) kept the old fingerprint."""
    fork = gate_fork(tmp_path, stage_lines(stage("tests", "true")))
    paddle, torch = tmp_path / "pp" / "paddle", tmp_path / "pp" / "torch"
    monkeypatch.setenv("PYTHONPATH", f"{paddle}{os.pathsep}{torch}")
    version = "paddle/version/__init__.py"
    _dist(paddle, "paddlepaddle", "0.0.0", {version: "commit = 'aaaaaaaa'\n"})
    _dist(torch, "torch", "9.0.0")
    first = json.loads(pq(fork, "gate", "--json").output)
    assert first["fingerprint"]["paddle_commit"] == "aaaaaaaa"
    assert first["fingerprint"]["torch"] == "9.0.0"
    _dist(paddle, "paddlepaddle", "0.0.0", {version: "commit = 'bbbbbbbb'\n"})
    _dist(torch, "torch", "9.1.0")
    second = json.loads(pq(fork, "gate", "--json").output)
    assert not second["cached"], second
    assert second["fingerprint"]["paddle_commit"] == "bbbbbbbb"
    assert second["fingerprint"]["torch"] == "9.1.0"


def test_stale_worktree_of_a_killed_run_is_removed(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true")))
    stale = tmp_path / "pq-gate-4194999-x" / "fork"
    git(fork, "worktree", "add", "--detach", str(stale), "HEAD")
    pq(fork, "gate")
    assert str(stale) not in git(fork, "worktree", "list")
    assert not stale.exists()


def test_notes_round_trip_through_a_bare_remote(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, THREE)
    pq(fork, "gate")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(fork, "remote", "add", "origin", str(remote))
    git(fork, "push", "-q", "origin", "paddle")
    git(fork, "push", "-q", "origin", "refs/notes/pq-gate")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "paddle", str(remote), str(other))
    assert pq(other, "gate", "--status", ok=False).exit_code == 1
    git(other, "fetch", "-q", "origin", "refs/notes/pq-gate:refs/notes/pq-gate")
    status = pq(other, "gate", "--status")
    assert status.exit_code == 0 and "result: passed" in status.output
    with Git.open(other) as g:
        assert api.record_ok(g, "HEAD", ["build", "tests"]) [0]
        assert api.record_ok(g, "HEAD", [])[0]
        ok, why = api.record_ok(g, "HEAD~1", ["build"])
        assert not ok and "no gate record" in why and "pq gate" in why


def test_records_from_two_machines_merge_with_union(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", "true"), stage("gpu-tests", "true", requires="[gpu]")))
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(fork, "remote", "add", "origin", str(remote))
    git(fork, "push", "-q", "origin", "paddle")
    gpu_box = tmp_path / "gpu-box"
    git(tmp_path, "clone", "-q", "-b", "paddle", str(remote), str(gpu_box))
    monkeypatch.setenv("PQ_GPU", "1")
    pq(gpu_box, "gate")
    git(gpu_box, "push", "-q", "origin", "refs/notes/pq-gate")
    monkeypatch.setenv("PQ_GPU", "0")
    pq(fork, "gate")  # meanwhile, a CPU record of the same commit
    git(fork, "fetch", "-q", "origin", "refs/notes/pq-gate:refs/notes/pq-gate-origin")
    git(fork, "notes", "--ref=refs/notes/pq-gate", "merge", "-q", "-s", "union",
        "refs/notes/pq-gate-origin")
    with Git.open(fork) as g:
        assert api.record_ok(g, "HEAD", ["build", "gpu-tests"])[0]
    status = pq(fork, "gate", "--status").output
    assert "earlier:" in status
    # The next run folds the concatenated note back into one JSON object.
    pq(fork, "gate", "--force")
    rec = note(fork)
    assert rec["status"] == "owed" and [h["status"] for h in rec["history"]] == ["passed"]


def test_a_large_log_is_streamed_to_disk_and_only_its_tail_shown(tmp_path: Path) -> None:
    noisy = stage("build", "yes 'a long line of compiler output, again and again' "
                  "| head -n 250000; echo LAST LINE; exit 1")
    fork = gate_fork(tmp_path, stage_lines(noisy))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1 and "LAST LINE" in result.output
    assert len(result.output) < 10_000
    rec = note(fork)
    assert (fork / ".git/pq/gate/logs" / rec["tip"] / "build.log").stat().st_size > 10_000_000


def test_output_written_before_a_process_left_the_group_with_the_pipe_is_kept(
        tmp_path: Path) -> None:
    from pq.git import process

    done = process.run(["sh", "-c", "echo important result; setsid sleep 4 & exit 3"],
                       timeout=30, grace=1)
    assert (done.code, done.stdout) == (3, b"important result\n")


def test_a_note_of_another_shape_is_left_out_not_a_crash(tmp_path: Path) -> None:
    """Notes written by hand or by something else in refs/notes/pq-gate (a `history` that
    is a number, a fingerprint that is a list): pq gate, --status and pq check skip them."""
    fork = gate_fork(tmp_path, stage_lines(stage("a", "true")))
    git(fork, "notes", "--ref=refs/notes/pq-gate", "add", "-f", "-m",
        json.dumps({"tree": "x", "status": "passed", "stages": [], "history": 5}), "main")
    tree = git(fork, "rev-parse", "HEAD^{tree}")
    git(fork, "notes", "--ref=refs/notes/pq-gate", "add", "-f", "-m", json.dumps(
        {"tree": tree, "status": "passed", "fingerprint": [1],
         "stages": [{"name": "a", "status": "passed", "requires": 5}]}), "HEAD")
    status = pq(fork, "gate", "--status", ok=False)
    assert status.exit_code == 1 and "no gate record" in status.output, status.output
    assert pq(fork, "gate").exit_code == 0
    assert pq(fork, "gate", "--status").exit_code == 0
    assert pq(fork, "check", "--no-cache").exit_code == 0


def test_a_note_nested_deeper_than_json_reads_is_left_out_not_a_crash(tmp_path: Path) -> None:
    """A teammate's note (fetched from refs/notes/pq-gate) nested deeper than Python's JSON
    parser recurses: --status, pq report and pq check leave it out, as any note of another
    shape, where they ended in an internal error (RecursionError)."""
    fork = gate_fork(tmp_path, stage_lines(stage("a", "true")))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    git(fork, "notes", "--ref=refs/notes/pq-gate", "add", "-f", "-F", str(deep), "HEAD")
    status = pq(fork, "gate", "--status", ok=False)
    assert status.exit_code == 1 and "no gate record" in status.output, status.output
    assert pq(fork, "report", "--json").exit_code == 0
    assert pq(fork, "check", "--no-cache", ok=False).exit_code in (0, 1)
    assert pq(fork, "gate").exit_code == 0
    assert pq(fork, "gate", "--status").exit_code == 0


def test_the_gate_leaves_the_users_other_worktrees_alone(tmp_path: Path) -> None:
    """A linked worktree of the user's whose folder is away just now (moved, a disk not
    mounted): after `pq gate`, git still knows it, and it works once the folder is back."""
    fork = gate_fork(tmp_path, stage_lines(stage("a", "true")))
    wt, away = tmp_path / "wt", tmp_path / "wt-away"
    git(fork, "worktree", "add", "-q", "-b", "feature", str(wt))
    write(wt, "wip.txt", "wip\n")
    git(wt, "add", "wip.txt")
    wt.rename(away)
    assert pq(fork, "gate").exit_code == 0
    away.rename(wt)
    assert str(wt) in git(fork, "worktree", "list")
    assert git(wt, "status", "--porcelain") == "A  wip.txt"


def test_status_after_a_partial_pass_says_what_the_whole_gate_says(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("one", "true"), stage("two", "exit 3")))
    assert pq(fork, "gate", ok=False).exit_code == 1
    assert pq(fork, "gate", "--stage", "one").exit_code == 0
    status = pq(fork, "gate", "--status", ok=False)
    assert status.exit_code == 1, status.output
    assert "a partial run (--stage)" in status.output
    assert "the whole gate: failed at stage two" in status.output


def test_two_gates_at_once_keep_both_records(tmp_path: Path) -> None:
    """Two `pq gate` runs of the same tip in different environments, ending together: the
    note keeps both records (the second read the note before the first wrote it)."""
    import subprocess
    import sys

    fork = gate_fork(tmp_path, stage_lines(stage("a", "sleep 1")))
    pq_script = str(Path(sys.executable).parent / "pq")
    runs = [subprocess.Popen([pq_script, "gate"], cwd=fork, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             env={**os.environ, "PQ_LOCK_WAIT": "30", **extra})
            for extra in ({}, {"CC": "gcc"})]  # both save under the lock: one may wait
    assert [r.wait(timeout=60) for r in runs] == [0, 0]
    data = note(fork)
    assert 1 + len(data["history"]) == 2, data


def test_two_gates_at_once_write_a_log_each(tmp_path: Path) -> None:
    """They opened one `.git/pq/gate/logs/<tip>/<stage>.log`: the failing run's report
    showed, and its log_sha256 disagreed with, the other run's output."""
    fork = gate_fork(tmp_path, stage_lines(stage(
        "tests", 'echo "this is run ${WHO}"; sleep 1.5; test "$WHO" = b')))
    pq_script = str(Path(sys.executable).parent / "pq")
    runs = [subprocess.Popen([pq_script, "gate", "--json"], cwd=fork, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,  # both save under the lock:
                             env={**os.environ, "PQ_LOCK_WAIT": "30", "WHO": who})
            for who in ("a", "b")]
    reports = [json.loads(r.communicate(timeout=60)[0]) for r in runs]
    assert [r.get("status") for r in reports] == ["failed", "passed"], reports
    logs = [r["stages"][0]["log"] for r in reports]
    assert logs[0] != logs[1]
    for who, report, log in zip("ab", reports, logs):
        text = Path(log).read_bytes()
        assert f"this is run {who}".encode() in text, (who, text)
        assert hashlib.sha256(text).hexdigest() == report["stages"][0]["log_sha256"]
    assert "this is run a" in reports[0]["stages"][0]["tail"]
    alone = json.loads(pq(fork, "gate", "--force", "--json", ok=False).stdout)
    assert alone["stages"][0]["log"] == str(fork / ".git/pq/gate/logs" / alone["tip"]
                                            / "tests.log")  # alone: the tip's own folder


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_sigterm_stops_the_stage_and_removes_the_worktree(tmp_path: Path,
                                                          signame: str) -> None:
    """A cancelled CI job (SIGTERM to pq), a closed terminal or ssh session (SIGHUP, which
    the stage's own session never gets): the stage's process group is stopped and the
    throwaway worktree goes, as after a Ctrl-C (the stage ran on, the worktree stayed)."""
    import signal

    pidfile = tmp_path / "stage.pid"
    fork = gate_fork(tmp_path, stage_lines(stage("slow", f'echo $$ > "{pidfile}"; sleep 60')))
    assert terminate_pq_once_started(fork, ["gate"], pidfile,
                                     getattr(signal, signame)) != 0
    assert gone_within(int(pidfile.read_text()), 10)
    assert git(fork, "worktree", "list").count("\n") == 0  # the fork's own, alone


def test_a_hangup_the_caller_ignores_does_not_stop_the_gate(tmp_path: Path) -> None:
    """`nohup pq gate &` (SIGHUP ignored) runs on after a logout: pq took the hangup for
    an interrupt all the same, and stopped the gate."""
    import signal

    pidfile = tmp_path / "stage.pid"
    fork = gate_fork(tmp_path, stage_lines(stage("slow", f'echo $$ > "{pidfile}"; sleep 2')))
    assert terminate_pq_once_started(fork, ["gate"], pidfile, signal.SIGHUP, ignored=True) == 0
    assert note(fork)["status"] == "passed"


def test_pruning_logs_while_another_gate_prunes_them(tmp_path: Path) -> None:
    """Two gates ending together prune `.git/pq/gate/logs/` at once: a folder the one
    listed may be gone by the time it reads its age (that was a FileNotFoundError out of
    `pq gate`). The newest folders stay."""
    from pq.gate import runner

    fork = gate_fork(tmp_path, stage_lines(stage("a", "true")))
    logs = fork / ".git/pq/gate/logs"
    for n, name in enumerate(("old", "new")):
        (logs / name).mkdir(parents=True)
        os.utime(logs / name, (1_000_000 + n, 1_000_000 + n))
    with flickering(logs / "gone"), Git.open(fork) as g:  # another gate's prune
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            runner.prune_logs(g, keep=3)
    with Git.open(fork) as g:
        runner.prune_logs(g, keep=1)
    assert sorted(p.name for p in logs.iterdir()) == ["new"]


def test_a_push_asks_for_the_newest_run_of_a_required_stage(tmp_path: Path) -> None:
    """A whole gate passed, then `pq gate --stage unit --force` failed on the same tree: the
    hook's gate check still took the older pass (the cache and `--status` let the newest
    result win)."""
    flag = tmp_path / "may-pass"
    flag.write_text("")
    fork = gate_fork(tmp_path, stage_lines(stage("lint", "true"),
                                           stage("unit", f'test -f "{flag}" || exit 4'))
                     + "  required_for_push: [unit]\n")
    assert pq(fork, "gate").exit_code == 0
    assert pq(fork, "check", "--no-cache").exit_code == 0
    flag.unlink()
    assert pq(fork, "gate", "--stage", "unit", "--force", ok=False).exit_code == 1
    refused = pq(fork, "check", "--no-cache", ok=False)
    assert refused.exit_code == 1 and "unit (failed" in refused.output, refused.output
    flag.write_text("")
    assert pq(fork, "gate", "--stage", "unit", "--force").exit_code == 0
    assert pq(fork, "check", "--no-cache").exit_code == 0


def test_the_hint_to_run_one_stage_names_the_stages_before_it(tmp_path: Path) -> None:
    """`pq gate --stage tests` runs tests without what the stages before it make (it failed
    where `pq gate` passes): the hint runs those too (reused where nothing changed)."""
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"), stage("tests", "exit 3")))
    said = pq(fork, "gate", ok=False).output
    assert "next: fix stage tests and run `pq gate` again (up to this stage: `pq gate " \
           "--stage build --stage tests`)" in said, said
    set_gate(fork, stage_lines(stage("build", "exit 3"), stage("tests", "true")))
    said = pq(fork, "gate", ok=False).output
    assert "(just this stage: `pq gate --stage build`)" in said, said
