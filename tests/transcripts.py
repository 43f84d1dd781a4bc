"""The manual's example sessions, run for real: parser, scenarios, runner and `--update`.

A session is a code block of README.md or docs/*.md whose lines starting with `$ ` are
shell commands and whose other lines are what they print. The line before the block (a
blank line may sit between) names its set-up:

    <!-- session: NAME -->                  run in scenario NAME, compare the output
    <!-- session: NAME needs: compat -->    the same, skipped unless torch and paddle import
    <!-- session: NAME manual: WHY -->      parsed, never run (timings of a benchmark, ...)

Each scenario is Python below: real repositories in a temporary folder, built from
tests/gitrepo.py and the example library (`pq demo DIR`). The commands of one block run in
one `bash` process (so `echo $?` and `&&` work as typed), stdout and stderr together.

Why a runner of our own and not prysk (cram's kept fork): prysk's `.t` format wants
two-space indented commands with its own `  $ ` prefix and `[N]` exit lines, which would
change how the manual reads; its set-up is shell, where ours needs the Python factories;
and it has no notion of the Markdown blocks these sessions live in. The runner is ~300
lines with cram's semantics where they matter: output compared line by line after
normalisation, a line `...` matching any number of lines, and an update mode.

Normalised on both sides before comparing: commit ids (7 to 64 hex digits with a digit),
ISO times, durations (`1.2 s`), and the session's temporary folder (any `/tmp/NAME` in
the doc). `python -m tests.transcripts --update` (`make docs`) rewrites every block whose
output differs with what pq prints now, the temporary folder written as `/tmp/doc`;
blocks that match are left byte for byte, so running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from gitrepo import commit_all, git, make_fork, make_upstream, write  # noqa: E402

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^\s*<!-- session: (?P<name>[\w-]+)(?P<opts>.*?)-->\s*$")
DOC_TMP = "/tmp/doc"


# -- parsing -------------------------------------------------------------------------------


@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    line: int              # 1-based line of the block's first command
    scenario: str
    needs: str = ""
    manual: str = ""
    indent: str = ""
    start: int = 0         # 0-based index of the first content line in the file
    end: int = 0           # 0-based index after the last content line
    commands: list[Command] = field(default_factory=list)

    @property
    def id(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}:{self.scenario}"


def parse(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        opts = m.group("opts").strip()
        needs = manual = ""
        if opts.startswith("needs:"):
            needs = opts.split(":", 1)[1].strip()
        elif opts.startswith("manual:"):
            manual = opts.split(":", 1)[1].strip()
        elif opts:
            raise ValueError(f"{path}:{i + 1}: unknown session option {opts!r}")
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines):
            raise ValueError(f"{path}:{i + 1}: a session marker with no block after it")
        if lines[j].startswith("```"):
            start, indent = j + 1, ""
            end = start
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
        elif lines[j].startswith("    "):
            start, indent = j, "    "
            end = start
            while end < len(lines) and (lines[end].startswith("    ") or
                                        (not lines[end].strip() and end + 1 < len(lines)
                                         and lines[end + 1].startswith("    "))):
                end += 1
        else:
            raise ValueError(f"{path}:{i + 1}: a session marker must precede a code block")
        block = Block(path, start + 1, m.group("name"), needs, manual, indent, start, end)
        for raw in lines[start:end]:
            text = raw[len(indent):] if raw.startswith(indent) else raw.strip()
            if text.startswith("$ "):
                block.commands.append(Command(text[2:]))
            elif not block.commands:
                raise ValueError(f"{path}:{start + 1}: a session block starts with `$ `")
            else:
                block.commands[-1].expected.append(text)
        if not block.commands:
            raise ValueError(f"{path}:{start + 1}: a session block without a `$ ` command")
        blocks.append(block)
        i = end
    return blocks


def all_blocks() -> list[Block]:
    return [b for p in DOCS for b in parse(p)]


# -- normalisation and comparison ----------------------------------------------------------

_RULES = [
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d{4}|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"), "<id>"),
    # a right-aligned duration column widens when a stage takes 100 s or more
    (re.compile(r" *\b\d+(?:\.\d+)? ?s\b"), " <dur>"),
]


def normalise(line: str) -> str:
    line = re.sub(r"/tmp/[\w.-]+", "<tmp>", line)
    for rx, rep in _RULES:
        line = rx.sub(rep, line)
    return line.rstrip()


def matches(expected: list[str], actual: list[str]) -> bool:
    parts = []
    for e in expected:
        if e.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(normalise(e)) + r"\n")
    text = "".join(normalise(a) + "\n" for a in actual)
    return re.fullmatch("".join(parts), text) is not None


# -- scenarios -------------------------------------------------------------------------------

Scenario = Callable[[Path, dict[str, str]], Path]
SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        SCENARIOS[name] = fn
        return fn
    return register


def sh(cwd: Path, command: str, env: dict[str, str]) -> str:
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise AssertionError(f"set-up `{command}` failed in {cwd}:\n{proc.stdout}"
                             f"{proc.stderr}")
    return proc.stdout


def set_line(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new + "\n"
    return "".join(lines)


SETUP = "".join(f"# setup line {i}\n" for i in range(1, 11))
GLUE = "".join(f"glue_{i} = {i}\n" for i in range(1, 11))
SMALL_UPSTREAM = {
    "setup.py": SETUP,
    "pkg/__init__.py": GLUE,
    "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\n",
    "README.md": "upstream\n",
}


def small_series(tmp: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """An upstream and a fork with two patches (build, python-glue), initialised."""
    up = make_upstream(tmp / "upstream", dict(SMALL_UPSTREAM))
    fork = make_fork(tmp, up)
    write(fork, "setup.py", set_line(SETUP, 3, "import paddle; paddle.enable_compat()"))
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'scoped'"))
    commit_all(fork, "python-glue: scoped compat")
    sh(fork, "pq init --upstream upstream/main --commit", env)
    return up, fork


@scenario("demo")
def _demo(tmp: Path, env: dict[str, str]) -> Path:
    """`pq demo`: the example fork after its weekly sync (log: apply, export, rebase)."""
    sh(tmp, "pq demo demo >/dev/null", env)
    return tmp / "demo" / "fork"


@scenario("demo-before-rebase")
def _demo_before_rebase(tmp: Path, env: dict[str, str]) -> Path:
    """The demo's fork as it was before `pq rebase upstream/main` (undone)."""
    fork = _demo(tmp, env)
    sh(fork, "pq undo >/dev/null", env)
    return fork


@scenario("example-commits")
def _example_commits(tmp: Path, env: dict[str, str]) -> Path:
    """A fork of tinyop v1 carrying the example migration as plain commits, no series."""
    _demo(tmp, env)
    up = tmp / "demo" / "upstream"
    fork = tmp / "fork"
    v1 = git(up, "rev-list", "--max-parents=0", "HEAD")
    git(tmp, "clone", "-q", "-o", "upstream", str(up), str(fork))
    git(fork, "checkout", "-q", "-b", "paddle", v1)
    patches = sorted((ROOT / "patches").glob("*.patch"))
    sh(fork, "git am -q " + " ".join(str(p) for p in patches), env)
    return fork


@scenario("example-initialised")
def _example_initialised(tmp: Path, env: dict[str, str]) -> Path:
    fork = _example_commits(tmp, env)
    sh(fork, "pq init --upstream upstream/main --commit >/dev/null", env)
    return fork


UPSTREAM_TEST = ("import torch\n\n\n"
                 "def test_op():\n"
                 "    if not hasattr(torch, 'compile'):  # TODO: drop with torch 1.x\n"
                 "        return\n"
                 "    assert torch.ones(1)\n")


@scenario("adopt")
def _adopt(tmp: Path, env: dict[str, str]) -> Path:
    """A fork with published history: a copied upstream test, a TODO, two `fix` commits."""
    files = dict(SMALL_UPSTREAM, **{"pkg/__init__.py": "import torch\n\n\ndef op(x):\n"
                                    "    return x\n", "tests/test_op.py": UPSTREAM_TEST})
    fork = make_fork(tmp, make_upstream(tmp / "upstream", files))
    write(fork, "paddle_tests/test_op.py", UPSTREAM_TEST)
    commit_all(fork, "tests: run upstream's tests on paddle")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n"
          "    # TODO: paddle has no op yet, go through numpy\n    return x\n")
    commit_all(fork, "fix")
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "fix")
    git(tmp, "init", "-q", "--bare", "origin.git")
    git(fork, "remote", "add", "origin", "../origin.git")
    return fork


@scenario("adopt-acknowledged")
def _adopt_acknowledged(tmp: Path, env: dict[str, str]) -> Path:
    """`adopt` after the README's first block, with the acknowledgement it shows added."""
    fork = _adopt(tmp, env)
    sh(fork, "pq init --upstream upstream/main --commit && pq hook install", env)
    text = (fork / "series.yaml").read_text()
    anchor = "  - name: 0002-fix.patch\n"
    ack = ('    acknowledged:\n      - {rule: WA014, reason: "numpy fallback until Paddle '
           'has op; tracked in #12"}\n')
    write(fork, "series.yaml", text.replace(anchor, anchor + ack))
    return fork


@scenario("merge-fork")
def _merge_fork(tmp: Path, env: dict[str, str]) -> Path:
    """A fork kept alive by merging upstream: build and glue commits between two merges,
    a TODO guard, a fork-only file (docs/import.md)."""
    up = make_upstream(tmp / "upstream", dict(SMALL_UPSTREAM))
    fork = make_fork(tmp, up)
    write(fork, "setup.py", set_line(SETUP, 3, "import paddle; paddle.enable_compat()"))
    commit_all(fork, "build: enable compat")
    write(up, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(up, "upstream: helper 3")
    sh(fork, "git fetch -q upstream && git merge -q --no-edit upstream/main", env)
    write(fork, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'scoped'  # TODO: paddle op"))
    write(fork, "pkg/paddle_only.py", "PADDLE = True\n")
    commit_all(fork, "glue: scoped compat")
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return 2; }\n")
    commit_all(fork, "kernel: f returns 2")
    return fork


@scenario("unexported-edit")
def _unexported_edit(tmp: Path, env: dict[str, str]) -> Path:
    """A fork with its series committed, the hook, a remote, and one unexported commit."""
    _up, fork = small_series(tmp, env)
    git(tmp, "init", "-q", "--bare", "remote.git")
    git(fork, "remote", "add", "origin", "../remote.git")
    sh(fork, "pq hook install >/dev/null", env)
    write(fork, "a.txt", "a\n")
    commit_all(fork, "glue: touch a.txt")
    return fork


@scenario("fork-with-conflict")
def _fork_with_conflict(tmp: Path, env: dict[str, str]) -> Path:
    """Three patches; upstream edits near patch 1, against patch 2, and adopts patch 3.
    $EDITOR resolves the conflict as docs/rebase.md shows."""
    up, fork = small_series(tmp, env)
    ops = "#include <torch/extension.h>\n#include <torch/library.h>\n\nint f() { return 1; }\n"
    write(fork, "csrc/ops.cc", ops)
    commit_all(fork, "cpp-compat: include torch/library.h")
    sh(fork, "pq export --commit >/dev/null", env)
    write(up, "setup.py", set_line(SETUP, 5, "# setup line 5, edited upstream"))
    commit_all(up, "upstream: edit setup line 5")
    write(up, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'global'"))
    commit_all(up, "upstream: glue_5 is global")
    write(up, "csrc/ops.cc", ops)
    commit_all(up, "Include torch/library.h for TORCH_LIBRARY")
    git(fork, "fetch", "-q", "upstream")
    editor = tmp / "resolve.sh"
    write(editor, "", "#!/bin/sh\nsed -i -e '/^<<<<<<< /d' -e '/^=======/,/^>>>>>>> /d' "
          "-e \"s/^glue_5 = 'global'$/glue_5 = 'global'  # scoped under paddle/\" \"$1\"\n",
          mode=0o755)
    env["EDITOR"] = str(editor)
    return fork


@scenario("three-patches")
def _three_patches(tmp: Path, env: dict[str, str]) -> Path:
    """docs/safety.md: two patches initialised, a third committed but not exported."""
    _up, fork = small_series(tmp, env)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns 3")
    return fork


@scenario("gate-bad-key")
def _gate_bad_key(tmp: Path, env: dict[str, str]) -> Path:
    """A committed gate section whose first stage has a key pq does not know."""
    _up, fork = small_series(tmp, env)
    text = (fork / "series.yaml").read_text()
    text += ("gate:\n  stages:\n    - name: build\n      run: python setup.py build\n"
             "      retries: 2\n")
    write(fork, "series.yaml", text)
    commit_all(fork, "pq: a gate")
    return fork


# -- running ----------------------------------------------------------------------------------


def compat_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "paddle"))


def hermetic_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        "[core]\n\tautocrlf = false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PQ_"))}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "C O Mitter", "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_AUTHOR_DATE": "1700000000 +0100", "GIT_COMMITTER_DATE": "1700000000 +0100",
        "GIT_EDITOR": "false", "PQ_LOCK_WAIT": "0.5", "PQ_GPU": "0", "TERM": "dumb",
        "LC_ALL": "C.UTF-8", "TZ": "UTC",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    return env


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """gitrepo's helpers read os.environ: give them the session's for the set-up."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_block(block: Block) -> list[list[str]]:
    """Each command's output lines, the temporary folder written as /tmp/doc."""
    tmp = Path(tempfile.mkdtemp(prefix="pq-doc-")).resolve()
    try:
        env = hermetic_env(tmp / "home")
        with environment(env):
            cwd = SCENARIOS[block.scenario](tmp, env)
        script = ["exec 2>&1"]
        for n, cmd in enumerate(block.commands):
            script += [cmd.text, f"__rc=$?; printf '\\n@@pq-doc {n}@@\\n'; (exit $__rc)"]
        proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        out = proc.stdout.replace(str(tmp), DOC_TMP)
        pieces = re.split(r"\n@@pq-doc \d+@@\n", out)
        return [p.splitlines() for p in pieces[:len(block.commands)]]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_block(block: Block) -> str:
    """'' when every command printed what the block shows, else a unified diff."""
    actual = run_block(block)
    if all(matches(c.expected, a) for c, a in zip(block.commands, actual, strict=True)):
        return ""
    old = render(block, [c.expected for c in block.commands])
    new = render(block, actual)
    return "".join(difflib.unified_diff(old, new, f"{block.id} (the doc)", "pq prints now"))


def render(block: Block, outputs: list[list[str]]) -> list[str]:
    lines = []
    for cmd, out in zip(block.commands, outputs, strict=True):
        lines.append(f"{block.indent}$ {cmd.text}\n")
        lines += [(block.indent + o if o else "").rstrip() + "\n" for o in out]
    return lines


def update(path: Path) -> int:
    """Rewrite the outputs of `path`'s runnable blocks that differ; the number rewritten."""
    lines = path.read_text(encoding="utf-8").split("\n")
    changed = 0
    for block in reversed(parse(path)):
        if block.manual or (block.needs and not compat_available()):
            continue
        actual = run_block(block)
        outs = [c.expected if matches(c.expected, a) else a
                for c, a in zip(block.commands, actual, strict=True)]
        new = [ln.rstrip("\n") for ln in render(block, outs)]
        if new != lines[block.start:block.end]:
            lines[block.start:block.end] = new
            changed += 1
    if changed:
        path.write_text("\n".join(lines), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.transcripts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true",
                    help="rewrite the blocks whose output differs (else: check them)")
    ap.add_argument("files", nargs="*", type=Path, help="default: README.md and docs/*.md")
    args = ap.parse_args(argv)
    paths = [p.resolve() for p in args.files] or DOCS
    failed = 0
    for path in paths:
        if args.update:
            n = update(path)
            print(f"{path.relative_to(ROOT)}: {n} block(s) rewritten")
            continue
        for block in parse(path):
            if block.manual or (block.needs and not compat_available()):
                print(f"skipped  {block.id}")
                continue
            diff = check_block(block)
            print(("FAILED   " if diff else "ok       ") + block.id)
            if diff:
                print(diff)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
