"""Child processes other than git, started by the one process gateway, pq/git/.

A command runs in its own process group with a timeout, its output captured or streamed
to a file, and is stopped by ONE policy: SIGTERM to the whole group, a grace period for
it to exit, then SIGKILL to the group. After the command ends, however it ends, whatever
it left running in its group is SIGKILLed. Also here: `pid_alive`, `scrubbed_env` and
`usable_cores`. (Python work in a forked child: pq.git.forked.)
"""

from __future__ import annotations

import _thread
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from pq import faults

GRACE_S = 5.0  # between SIGTERM and SIGKILL
TICK_S = 1.0  # how often a streaming run reports progress

# Variables that would point a child's git at the caller's repository instead of its own
# folder (git exports them to hooks and aliases), and pq's own fault injection.
REPO_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR",
             "GIT_NAMESPACE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
             "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "PQ_FAULT_AT")


@dataclass(frozen=True)
class Finished:
    """How a command ended. `code` is None when it timed out (negative: killed by a signal)."""

    code: int | None
    seconds: float
    timed_out: bool
    stdout: bytes = b""  # empty when streamed to a file
    stderr: bytes = b""  # empty when merged into stdout


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without REPO_VARS, then `extra` on top."""
    env = {k: v for k, v in os.environ.items() if k not in REPO_VARS}
    env.update(extra or {})
    return env


def usable_cores() -> int:
    """The cores this process may run on (a container's share, not the host's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def pid_alive(pid: object) -> bool:
    """Whether a process with this id runs on this machine (another user's counts)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run(argv: Sequence[str], *, timeout: float, cwd: str | None = None,
        env: Mapping[str, str] | None = None, log: IO[bytes] | None = None,
        merge_stderr: bool = True, input: bytes | None = None,
        tick: Callable[[float], None] | None = None, grace: float = GRACE_S,
        marker: str | None = None) -> Finished:
    """Run argv in a new process group; stop the group after `timeout` seconds.

    Output goes to `log` (an open binary file: streamed, never held in memory) or is
    captured; stderr joins stdout unless `merge_stderr` is False. `tick(elapsed)` is called
    about every TICK_S seconds while it runs. `marker`: an entry of `env` (`NAME=value`)
    that only this run's processes carry: what left the group (`setsid`, a shell's job
    control) is found by it and killed too when the run ends. OSError when the command
    cannot start."""
    start = time.monotonic()
    deadline = start + timeout
    stdout: IO[bytes] | int = subprocess.PIPE if log is None else log
    stderr = subprocess.PIPE if log is None and not merge_stderr else subprocess.STDOUT
    out: bytes | None = b""
    errs: bytes | None = b""
    timed_out = False
    started: list[subprocess.Popen[bytes]] = []  # the process, the moment it exists
    try:
        proc = _start(started, lambda: subprocess.Popen(
            list(argv), cwd=cwd, env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=stdout, stderr=stderr, start_new_session=True))
        first = None
        if input is not None:
            feed(proc, input)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                stop_group(proc, grace)
                break
            try:
                if log is not None:
                    _wait(proc, min(TICK_S, remaining))  # no pipe read: nothing to read
                else:
                    out, errs = proc.communicate(first, timeout=min(TICK_S, remaining))
                break
            except subprocess.TimeoutExpired:
                first = None  # already written; communicate() keeps what it has read
                if proc.poll() is not None:  # it ended, and left a process holding its output
                    signal_group(proc.pid, signal.SIGKILL)  # (`cmd &`): its exit code counts
                    try:
                        out, errs = proc.communicate(timeout=grace)
                    except subprocess.TimeoutExpired:  # that one left the group too:
                        out, errs = _read_so_far(proc)  # what was written until now
                    break
                if tick is not None:
                    tick(time.monotonic() - start)
        if timed_out and log is None:
            try:
                out, errs = proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:  # a descendant left the group with the pipe
                proc.kill()
                out, errs = _read_so_far(proc)
    except BaseException:
        for proc in started:
            stop_group(proc, grace)
        raise
    finally:
        for proc in started:
            signal_group(proc.pid, signal.SIGKILL)  # whatever it left behind in its group
            proc.wait()
        if marker is not None:
            kill_marked(marker)
    return Finished(None if timed_out else proc.returncode, time.monotonic() - start,
                    timed_out, out or b"", errs or b"")


def _start(started: list[subprocess.Popen[bytes]],
           popen: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """`popen()`, its process appended to `started` as soon as it exists. In the main
    thread it is started by another one: a signal handler that raises (Ctrl-C, the gate's
    SIGTERM) runs only in the main thread, and raised there just after the fork it would
    leave the process running with no Popen to stop it by. An interrupt while it starts
    is raised once the start is over, so that the caller finds it in `started` and stops
    it."""
    if threading.current_thread() is not threading.main_thread():
        started.append(popen())
        return started[-1]
    failed: list[BaseException] = []
    ended = threading.Event()

    def start() -> None:
        try:
            started.append(popen())
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)
        finally:
            ended.set()

    # _thread: Thread.start() waits for the thread to run, a wait an interrupt may end
    # while the process still starts; and after an interrupted Thread.join(), Python
    # 3.11's is_alive() may say False while the thread runs (bpo-45274). The event is
    # the one answer to whether the start is over.
    _thread.start_new_thread(start, ())
    interrupt: BaseException | None = None
    while not ended.is_set():
        try:
            ended.wait()
        except BaseException as exc:  # the first interrupt goes on when the start is over
            interrupt = interrupt or exc
    if interrupt is not None:
        raise interrupt
    if failed:
        raise failed[0]
    return started[-1]


def feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    """Write `data` to `proc`'s stdin in a thread of its own, then close it; the pipe is
    taken off `proc`, so that `communicate` only reads. (Once a `communicate` with a
    timeout timed out, CPython writes no more of its input and never closes stdin: a
    command reading all of it then waits for ever.)"""
    stdin, proc.stdin = proc.stdin, None
    if stdin is not None:
        threading.Thread(target=_write_all, args=(stdin, data), daemon=True).start()


def _write_all(stdin: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError):  # the command ended early (a broken pipe): it says why
        try:
            stdin.write(data)
        finally:
            stdin.close()


def _read_so_far(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """The output `communicate` read before it timed out (CPython keeps it on the Popen
    for the next call); empty where that is not how it keeps it."""
    kept = getattr(proc, "_fileobj2output", None) or {}
    return (b"".join(kept.get(proc.stdout, [])), b"".join(kept.get(proc.stderr, [])))


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """proc.wait(timeout), woken the moment the process exits: Popen.wait polls with sleeps
    of up to 50 ms, which every short stage would pay. TimeoutExpired when it runs on."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: Popen's own polling
        proc.wait(timeout)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait()


def output(argv: Sequence[str], *, timeout: float = 30.0, cwd: str | None = None,
           env: Mapping[str, str] | None = None, input: bytes | None = None
           ) -> Finished | None:
    """run() with stdout and stderr captured apart; None when it cannot start."""
    try:
        return run(argv, timeout=timeout, cwd=cwd, env=env, merge_stderr=False, input=input)
    except OSError:
        return None


def passthrough(argv: Sequence[str], *, input: bytes | None = None,
                stdout_to_stderr: bool = False, cwd: str | None = None,
                env: Mapping[str, str] | None = None) -> int:
    """Run argv on the caller's terminal (its stdout and stderr are the caller's; its
    stdout goes to stderr with `stdout_to_stderr`), feeding it `input`; its exit code. No
    timeout: what it waits for is the user. OSError when it cannot start."""
    stdout = None
    if stdout_to_stderr:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            stdout = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):  # a stream in memory (a test's)
            stdout = 2
    return subprocess.run(list(argv), input=input, stdout=stdout, cwd=cwd,
                          env=None if env is None else dict(env), check=False).returncode


def restart_with(options: Sequence[str]) -> None:
    """Replace this process by its own command line run again with the interpreter
    `options` (`-X utf8`); nothing where the command line is not known."""
    argv = getattr(sys, "orig_argv", None)
    if argv and sys.executable:
        os.execv(sys.executable, [sys.executable, *options, *argv[1:]])


def stop_group(proc: subprocess.Popen[bytes], grace: float = GRACE_S) -> None:
    """The stop policy: SIGTERM to the group, up to `grace` seconds, SIGKILL to the group."""
    signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def kill_marked(marker: str) -> None:
    """SIGKILL every process of this user whose environment holds the entry `marker`
    (`NAME=value`): a run's descendants that left its process group. Linux's /proc; none
    elsewhere."""
    needle = b"\0" + marker.encode("utf-8", "surrogateescape") + b"\0"
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                marked = needle in b"\0" + f.read() + b"\0"
        except OSError:  # gone, or another user's
            continue
        if marked and pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def exit_detail(code: int | None) -> str:
    """`exit N` or `killed by SIGNAME` for a return code."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def _fault_shell(command: str) -> bytes:
    """PQ_FAULT_RUN's command (pq.faults), run at its checkpoint: its output."""
    return run(["/bin/sh", "-c", command], timeout=600).stdout


faults.set_shell(_fault_shell)
