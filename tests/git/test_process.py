"""pq.git.process: the runner's stop policy (TERM, grace, KILL, the whole group) with real
processes, and pq.toolchain: one probe and one CUDA spelling for audit and gate."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from procs import gone, read_pid, until

from pq import toolchain
from pq.audit import versions
from pq.gate import probe
from pq.git import process


def test_a_group_ignoring_term_is_killed_after_the_grace(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    # bash and its background child both ignore SIGTERM (an ignored signal is inherited).
    script = f"trap '' TERM; sleep 300 & echo $! > {pidfile}; wait; wait"
    done = process.run(["bash", "-c", script], timeout=0.5, grace=1.5)
    assert done.timed_out and done.code is None
    assert done.seconds >= 0.5 + 1.5  # TERM did not end it: the grace was waited in full
    assert done.seconds < 30
    assert until(lambda: gone(read_pid(pidfile)))  # KILL reached the whole group


def test_term_comes_first_and_the_output_so_far_is_kept(tmp_path: Path) -> None:
    script = "trap 'echo got TERM; exit 7' TERM; echo started; sleep 300 & wait"
    done = process.run(["bash", "-c", script], timeout=0.5, grace=20)
    assert done.timed_out and done.code is None
    assert done.seconds < 20  # it obeyed TERM; no need to wait out the grace
    assert done.stdout.decode().splitlines() == ["started", "got TERM"]


def test_what_a_finished_command_leaves_in_its_group_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    log = tmp_path / "out.log"
    with open(log, "wb") as f:
        done = process.run(["bash", "-c", f"sleep 300 & echo $! > {pidfile}; echo bye >&2"],
                           timeout=30, log=f)
    assert done.code == 0 and not done.timed_out
    assert log.read_bytes() == b"bye\n" and done.stdout == b""
    assert until(lambda: gone(read_pid(pidfile)))


def test_streaming_run_ticks_and_reports_exit_and_signal(tmp_path: Path) -> None:
    ticks: list[float] = []
    marker = tmp_path / "ticked"
    # The command ends once the runner has ticked at least once.
    script = f"while [ ! -e {marker} ]; do sleep 0.05; done; exit 3"

    def tick(elapsed: float) -> None:
        ticks.append(elapsed)
        marker.touch()

    with open(tmp_path / "log", "wb") as f:
        done = process.run(["bash", "-c", script], timeout=30, log=f, tick=tick)
    assert done.code == 3 and ticks and ticks == sorted(ticks)
    assert process.exit_detail(3) == "exit 3"
    killed = process.run(["bash", "-c", "kill -KILL $$"], timeout=30)
    assert killed.code == -9 and process.exit_detail(killed.code) == "killed by SIGKILL"


def test_stderr_apart_input_and_env() -> None:
    done = process.run(["bash", "-c", 'read x; echo "$x $PQ_T"; echo err >&2'], timeout=30,
                       input=b"hello\n", env={**os.environ, "PQ_T": "there"},
                       merge_stderr=False)
    assert (done.code, done.stdout, done.stderr) == (0, b"hello there\n", b"err\n")


def test_a_command_that_cannot_start_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        process.run([str(tmp_path / "no-such-program")], timeout=5)
    assert process.output([str(tmp_path / "no-such-program")]) is None


def test_pid_alive_and_scrubbed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert process.pid_alive(os.getpid())
    assert not any(process.pid_alive(p) for p in (0, -1, None, "1"))
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    assert not process.pid_alive(child.pid)
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("PQ_FAULT_AT", "3")
    env = process.scrubbed_env({"PYTHON": "py"})
    assert "GIT_DIR" not in env and "PQ_FAULT_AT" not in env and env["PYTHON"] == "py"


# -- toolchain ----------------------------------------------------------------------------


def fake_tool(folder: Path, name: str, output: str) -> None:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n/bin/cat <<'EOF'\n{output}\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


NVCC = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
        "Cuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4.r12.4/compiler.0")


def test_audit_and_gate_spell_cuda_and_the_driver_alike(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "nvcc", NVCC)
    fake_tool(bin_dir, "nvidia-smi", "NVIDIA H200, 580.159.04\nNVIDIA H200, 580.159.04")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("PQ_GPU", raising=False)
    assert versions.gpu() == ("12.4.131", "580.159.04")
    interp = probe.Interpreter(sys.executable, toolchain.collect())
    fp = probe.fingerprint(interp, os.environ["PATH"], gpu=True)
    assert (fp["cuda"], fp["driver"], fp["gpu"]) == ("12.4.131", "580.159.04",
                                                     ["NVIDIA H200", "NVIDIA H200"])
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))  # $CUDA_HOME/bin/nvcc, without PATH
    assert toolchain.cuda_version() == "12.4.131"
    assert toolchain.gpus() == ([], None)


def test_another_interpreter_answers_like_the_running_one(tmp_path: Path) -> None:
    asked = toolchain.ask(sys.executable)
    here = toolchain.collect()
    assert asked.facts is not None and not asked.problem
    for key in ("python", "torch", "paddle", "paddle_dist", "executable", "libpython"):
        assert asked.facts[key] == here[key], key
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\necho 'SyntaxError: too old' >&2\nexit 1\n")
    broken.chmod(0o755)
    bad = toolchain.ask(str(broken))
    assert (bad.facts, bad.problem, bad.failed) == (None, "SyntaxError: too old", True)
    missing = toolchain.ask(str(tmp_path / "none"))
    assert missing.facts is None and not missing.failed and missing.problem


def test_a_held_command_gets_all_its_input_however_long_it_runs() -> None:
    """A command that changes the repository waits in quarter seconds (for Ctrl-C): once a
    wait timed out, CPython wrote no more of a large input and never closed stdin, and git
    (`diff-tree --stdin` of a long upstream range) waited for the rest for ever."""
    import subprocess
    import threading

    from pq.git import hold

    reader = "import sys, time; time.sleep(0.6); print(len(sys.stdin.buffer.read()))"
    with hold.held(True) as h:
        proc = subprocess.Popen([sys.executable, "-c", reader], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        guard = threading.Timer(20, proc.kill)  # the bug: a hang, made a failure here
        guard.start()
        try:
            out, _ = h.communicate(proc, b"x" * 300_000)
        finally:
            guard.cancel()
            guard.join()
    assert out.strip() == b"300000"


def test_a_command_run_with_a_timeout_gets_all_its_input() -> None:
    """The same for `process.run` (the gate's `c++filt`, fed the symbols on stdin): its
    waits time out every TICK_S, and the input stopped after the first."""
    reader = (f"import sys, time; time.sleep({process.TICK_S * 3}); "
              "print(len(sys.stdin.buffer.read()))")
    done = process.run([sys.executable, "-c", reader], timeout=20, input=b"x" * 300_000,
                       merge_stderr=False)
    assert not done.timed_out and done.stdout.strip() == b"300000", done


def test_an_interrupt_as_the_command_starts_still_stops_its_group(tmp_path: Path) -> None:
    """A SIGTERM under `terminate_as_interrupt` (the gate's) that comes while the command
    is being started, just after the fork: the group is stopped as at any later moment,
    never left running with no Popen to stop it by (8 starts of 100 were, when Popen ran
    in the main thread, where the handler raised past it)."""
    from pq.git.hold import terminate_as_interrupt

    pidfiles = [tmp_path / f"{n}.pid" for n in range(100)]
    for pidfile in pidfiles:  # the command interrupts pq at once, as a CI job cancelled
        with pytest.raises(KeyboardInterrupt), terminate_as_interrupt(), \
                open(os.devnull, "wb") as log:
            process.run(["sh", "-c", f'echo $$ > "{pidfile}"; kill -TERM $PPID; sleep 30'],
                        timeout=60, log=log, grace=1)
    left = [int(p.read_text()) for p in pidfiles if p.exists() and p.read_text().strip()]
    running = [pid for pid in left if not gone(pid)]
    for pid in running:
        process.signal_group(pid, 9)
    assert len(left) == len(pidfiles) and not running

