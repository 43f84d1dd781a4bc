"""The demo: a real upstream, a real fork carrying pq's example series, and a weekly sync.

It builds the example operator library's upstream repository with history, a fork whose
branch is that upstream plus the migration series, moves upstream forward (an unrelated
change, a change next to a patched line, a change that adopts a patch), then runs the
main job with the real `pq` command, as a user would (a child process through pq.git.process,
never pq.cli in-process): `pq rebase upstream/main` and `pq audit workarounds`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pq.errors import ConfigError
from pq.git import process
from pq.git.gateway import run_in

PQ_TIMEOUT_S = 600
EXAMPLE = Path(__file__).parent / "example"
UPSTREAM_TREE = EXAMPLE / "upstream"
UPSTREAM_MOVES = EXAMPLE / "upstream-moves"

# The commit the demo adds to the fork on purpose, so the audit has something to flag.
PLANTED_FILE = "tinyop/_compat.py"
PLANTED_TEXT = '''"""Runtime helpers for running tinyop under Paddle."""

try:
    import torch._dynamo  # TODO: remove once Paddle's proxy has torch._dynamo
except Exception:
    pass
'''
PLANTED_SUBJECT = "glue: silence a missing torch._dynamo at import"

Say = Callable[[str], None]
SERIES_FILES = ("series.yaml", "patches", "mre", ".pq")  # the example's queue, as shipped


def copy_series(source: Path, fork: Path, base: str) -> None:
    """The example's queue (series.yaml, patches/, mre/, .pq/) from `source` into `fork`,
    its `upstream.base` set to `base` (the upstream commit the fork was cloned at)."""
    import re

    for name in SERIES_FILES:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, fork / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, fork / name)
    path = fork / "series.yaml"
    text, count = re.subn(r"(?m)^(\s*base:\s*)[0-9a-f]{40,64}\s*$",
                          lambda m: m.group(1) + base, path.read_text())
    if count != 1:
        raise ConfigError(f"{path}: no `base:` line to point at the upstream commit",
                          hint="restore series.yaml from pq's checkout")
    path.write_text(text)


@dataclass
class DemoResult:
    directory: Path
    rebase_exit: int | None = None
    audit_exit: int | None = None
    planted_rules: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.unexpected and self.rebase_exit in (0, None)


def series_source() -> Path:
    """The folder holding the example's series.yaml, patches/, mre/ and .pq/ (pq's own
    checkout)."""
    root = Path(__file__).resolve().parents[3]  # src/pq/demo/build.py -> the checkout
    if (root / "series.yaml").is_file() and (root / "patches").is_dir():
        return root
    raise ConfigError("the example series (series.yaml, patches/) was not found next to pq",
                      hint="run the demo from a checkout of pq (`make demo`)")


def _env(who: str, when: int) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": "dev@tinyop.example",
        "GIT_COMMITTER_NAME": who, "GIT_COMMITTER_EMAIL": "dev@tinyop.example",
        "GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    }


def _pq_command() -> list[str]:
    """pq as a user runs it: the installed script next to this interpreter, else `pq` on
    PATH, else `python -m pq`."""
    exe = Path(sys.executable).parent / "pq"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("pq")
    if found:
        return [found]
    return [sys.executable, "-m", "pq"]


def _pq(cwd: Path, args: list[str], env: dict[str, str]) -> process.Finished:
    return process.run(_pq_command() + args, timeout=PQ_TIMEOUT_S, cwd=str(cwd),
                       env={**os.environ, **env}, merge_stderr=False)


def _run_pq(cwd: Path, args: list[str], say: Say, env: dict[str, str]) -> int | None:
    say(f"$ pq {' '.join(args)}")
    done = _pq(cwd, args, env)
    out = (done.stdout + done.stderr).decode("utf-8", "replace").rstrip()
    if out:
        say("\n".join("  " + line for line in out.splitlines()))
    if done.timed_out:
        say(f"  (stopped after {PQ_TIMEOUT_S} s)")
    return done.code


def run(directory: Path | None, say: Say) -> DemoResult:
    source = series_source()
    if directory is None:
        import tempfile

        directory = Path(tempfile.mkdtemp(prefix="pq-demo-"))
    elif directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory} is not a folder", hint="give a new or empty folder")
    elif directory.exists() and any(directory.iterdir()):
        raise ConfigError(f"{directory} is not empty", hint="give a new or empty folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the folder {directory}: {exc.strerror or exc}",
                          hint="give a new or empty folder where you can write") from None
    directory = directory.resolve()
    result = DemoResult(directory)
    up, fork = directory / "upstream", directory / "fork"

    say(f"pq demo in {directory}")
    # 1. The upstream repository: tinyop v1.
    shutil.copytree(UPSTREAM_TREE, up, ignore=shutil.ignore_patterns("__pycache__", "*.so",
                                                                      "build"))
    env = _env("tinyop maintainers", 1_767_225_600)
    run_in(up, "init", "-q", "-b", "main", env=env)
    run_in(up, "add", "-A", env=env)
    run_in(up, "commit", "-q", "-m", "tinyop v1", env=env)
    v1 = run_in(up, "rev-parse", "HEAD").decode().strip()
    say(f"[1/5] upstream: tinyop v1 at {v1[:12]} ({up})")

    # 2. The fork: a clone with the migration series applied as commits on branch `paddle`.
    fenv = _env("tinyop paddle port", 1_767_312_000)
    run_in(directory, "clone", "-q", "-o", "upstream", str(up), str(fork), env=fenv)
    copy_series(source, fork, v1)
    code = _run_pq(fork, ["apply", "--branch", "paddle"], say, fenv)
    if code != 0:
        raise ConfigError("the example series did not apply onto tinyop v1",
                          hint="run `pq series` in the fork to see which patch")
    count = run_in(fork, "rev-list", "--count", f"{v1}..HEAD").decode().strip()
    say(f"[2/5] fork: branch paddle = v1 + the migration series ({count} commits) ({fork})")

    # The fork also carries one undeclared workaround, planted so the audit has a finding.
    (fork / PLANTED_FILE).write_text(PLANTED_TEXT)
    run_in(fork, "add", PLANTED_FILE, env=fenv)
    run_in(fork, "commit", "-q", "-m", PLANTED_SUBJECT, env=fenv)
    _run_pq(fork, ["export", "--commit"], say, fenv)

    # 3. Upstream moves forward.
    moves = sorted(UPSTREAM_MOVES.glob("*.patch"))
    for i, patch in enumerate(moves):
        menv = _env("tinyop maintainers", 1_767_398_400 + 86_400 * i)
        run_in(up, "am", "-q", "--committer-date-is-author-date", str(patch), env=menv)
    log = run_in(up, "log", "--format=  %h %s", f"{v1}..HEAD").decode().rstrip()
    say(f"[3/5] upstream moved by {len(moves)} commits:\n{log}")
    run_in(fork, "fetch", "-q", "upstream", env=fenv)

    # 4. The main job.
    say("[4/5] the weekly sync:")
    result.rebase_exit = _run_pq(fork, ["rebase", "upstream/main"], say, fenv)
    if result.rebase_exit != 0:
        result.unexpected.append(f"pq rebase exited {result.rebase_exit}")
        return result

    say("[5/5] which workarounds are still needed:")
    result.audit_exit = _run_pq(fork, ["audit", "workarounds"], say, fenv)
    proc = _pq(fork, ["audit", "workarounds", "--json"], fenv)
    try:
        findings = json.loads(proc.stdout.decode("utf-8", "replace")).get("findings", [])
    except ValueError:
        findings = []
        result.unexpected.append("pq audit workarounds --json printed no JSON")
    for f in findings:
        patch_name = str(f.get("patch", ""))
        rule = f"{f.get('rule_id', '')} {f.get('rule', '')}".strip()
        if "silence-a-missing-torch-dynamo" in patch_name:
            result.planted_rules.append(rule)
        else:
            result.unexpected.append(f"{rule} on {patch_name}: {f.get('message', '')}")
    if result.planted_rules:
        say("The audit's findings are the ones the demo planted on purpose (commit "
            f"\"{PLANTED_SUBJECT}\"): " + ", ".join(sorted(set(result.planted_rules))) + ".")
    if result.unexpected:
        say("Unexpected: " + "; ".join(result.unexpected))
    else:
        say("Everything else in the example series audits clean.")
    return result
