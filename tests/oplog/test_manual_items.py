"""Issue 18's mismatches between the manual and pq, on real repositories: undo and redo
across a rebase brought back, gate logs outside snapshots, the lock taken before pq
computes (a commit made meanwhile survives), an undo that would reach past a command killed
before it logged anything, error messages with their place and fix, `pq check` with
PQ_SKIP, a foreign hook replaced with `--force`, and the options the docs must name."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, pq, write
from test_faults import PQ, base_fork, conflict_fork, repo_state, run_pq

RESOLVED = ("import paddle\npaddle.enable_compat()\n"
            "from torch.utils import cpp_extension as ext\n\nsetup(name='x')\n")


def error_line(result: object, code: int) -> str:
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == code, out  # type: ignore[attr-defined]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pq: error: "), out
    return lines[0]


def continued(tmp: Path) -> Path:
    """conflict_fork rebased, stopped, resolved and continued to the end."""
    fork = conflict_fork(tmp)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    return fork


# -- item 2: the redo that undo offers works -------------------------------------------------


def test_redo_after_undoing_a_finished_continue(tmp_path: Path) -> None:
    fork = continued(tmp_path)
    finished = repo_state(fork)
    out = pq(fork, "undo").output
    assert "a pq rebase is in progress again" in out and "`pq redo`" in out
    stopped = repo_state(fork)
    data = json.loads(pq(fork, "log", "--json").output)
    assert data["undo"] is None and data["redo"] is not None
    text = pq(fork, "log").output  # item 12: no undo offered while the rebase is stopped
    assert "`pq redo` reverts operation" in text and "`pq undo` restores" not in text
    pq(fork, "redo")
    assert repo_state(fork) == finished
    # And `pq undo --op N` of that undo, as offered, works the same way.
    rid = int(pq(fork, "undo", "--json").output and json.loads(
        pq(fork, "log", "--json").output)["operations"][0]["id"])
    assert repo_state(fork) == stopped
    pq(fork, "undo", "--op", str(rid))
    assert repo_state(fork) == finished


def test_redo_over_a_resolution_edited_after_the_undo(tmp_path: Path) -> None:
    """The resolution brought back by `pq undo` edited again, unstaged: `pq redo` names
    the file (not "pq's state changed"); `--force` redoes it (it failed in git's words),
    and `pq undo --op` of the forced redo brings the edit back."""
    fork = continued(tmp_path)
    finished = repo_state(fork)
    pq(fork, "undo")
    with open(fork / "setup.py", "a") as f:
        f.write("# more, unstaged\n")
    edited = repo_state(fork)
    refused = error_line(pq(fork, "redo", ok=False), 2)
    assert "the stopped rebase's setup.py changed (staged or not)" in refused, refused
    pq(fork, "redo", "--force")
    assert repo_state(fork) == finished
    rid = json.loads(pq(fork, "log", "--json").output)["operations"][0]["id"]
    pq(fork, "undo", "--op", str(rid))
    assert repo_state(fork) == edited


def test_a_stop_reads_stopped_again_once_the_continue_that_ended_it_is_undone(
        tmp_path: Path) -> None:
    """The log's status of a stopped rebase follows undo and redo of the `--continue` that
    ended it: stopped again after the undo, done after a redo, aborted after an abort."""
    def status_of(fork: Path, command: str) -> str:
        ops = json.loads(pq(fork, "log", "--json").output)["operations"]
        return str(next(o["status"] for o in ops if o["command"] == command))

    fork = continued(tmp_path / "a")
    start = "pq rebase upstream/main"
    assert status_of(fork, start) == "done"
    pq(fork, "undo")
    assert status_of(fork, start) == "stopped"
    pq(fork, "redo")
    assert status_of(fork, start) == "done"
    fork = continued(tmp_path / "b")
    pq(fork, "undo")
    pq(fork, "rebase", "--abort")
    assert status_of(fork, start) == "aborted"


def test_redo_of_an_abort_whose_conflict_was_resolved_and_staged(tmp_path: Path) -> None:
    """The abort of a rebase whose conflict was resolved and staged (not continued),
    undone and redone: the staged resolution is the logged stop's, not work in the way."""
    fork = conflict_fork(tmp_path)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    resolved = repo_state(fork)
    pq(fork, "rebase", "--abort")
    aborted = repo_state(fork)
    pq(fork, "undo")
    assert repo_state(fork) == resolved
    pq(fork, "redo")
    assert repo_state(fork) == aborted
    pq(fork, "undo")
    assert repo_state(fork) == resolved
    pq(fork, "rebase", "--continue")
    assert (fork / "setup.py").read_text() == RESOLVED


# -- item 3: the gate's logs are not state ---------------------------------------------------


def test_gate_logs_written_after_an_operation_do_not_block_undo(tmp_path: Path) -> None:
    fork = continued(tmp_path)
    logs = fork / ".git" / "pq" / "gate" / "logs" / ("a" * 40)
    write(logs, "build.log", "$ make\nok\n")
    out = pq(fork, "undo").output
    assert out.startswith("undid operation")
    assert (logs / "build.log").read_text() == "$ make\nok\n"  # undo leaves them alone
    pq(fork, "redo")
    assert (logs / "build.log").is_file()


# -- item 4: the lock first, and a compare-and-swap on the branch -----------------------------


def checkpoints(fork: Path, args: list[str]) -> list[str]:
    import shutil

    trial = fork.parent / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = fork.parent / "cp.log"
    assert run_pq(trial, args, PQ_FAULT_LOG=str(log)).returncode == 0
    labels = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    shutil.rmtree(trial)
    log.unlink()
    return labels


def commit_meanwhile(fork: Path, args: list[str], at: int) -> tuple[int, str, str]:
    """Run pq with a `git commit` made at checkpoint `at`; (exit, output, the commit)."""
    script = (f"cd {shlex.quote(str(fork))} && echo meanwhile >> notes2.txt && "
              "git add notes2.txt && git commit -q --no-verify -m meanwhile && "
              "git rev-parse HEAD > .git/meanwhile")
    proc = run_pq(fork, args, PQ_FAULT_AT=str(at), PQ_FAULT_RUN=script)
    made = (fork / ".git" / "meanwhile").read_text().strip()
    return proc.returncode, (proc.stdout + proc.stderr).decode(), made


def test_a_commit_made_while_apply_computes_is_kept(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    labels = checkpoints(fork, ["apply", "--onto", "upstream/main"])
    at = labels.index("write commit") + 1  # materialising the first patch
    code, out, made = commit_meanwhile(fork, ["apply", "--onto", "upstream/main"], at)
    assert code == 2, out
    assert "paddle moved while pq apply was computing" in out and "changed nothing" in out
    assert git(fork, "rev-parse", "paddle") == made
    assert not json.loads(pq(fork, "log", "--json").output)["operations"][0][
        "command"].startswith("pq apply")


def test_a_commit_made_while_export_computes_is_kept(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns 3")
    labels = checkpoints(fork, ["export", "--commit"])
    at = labels.index("git diff-tree") + 1  # reading the stack, after HEAD was read
    code, out, made = commit_meanwhile(fork, ["export", "--commit"], at)
    assert code == 2, out
    assert "moved while pq export was computing" in out
    assert git(fork, "rev-parse", "paddle") == made


def test_a_commit_made_while_rebase_computes_is_kept(tmp_path: Path) -> None:
    """HEAD on the branch, the rebase lands with `reset --keep`: a commit made on the branch
    while the rebase computed must stop it, not be reset away."""
    fork = base_fork(tmp_path)
    labels = checkpoints(fork, ["rebase", "upstream/main"])
    at = labels.index("write commit") + 1  # the rebased commits, before landing
    code, out, made = commit_meanwhile(fork, ["rebase", "upstream/main"], at)
    assert code == 2, out
    assert f"paddle moved to {made[:12]} (meanwhile) while pq rebase was computing" in out
    assert git(fork, "rev-parse", "paddle") == made
    assert (fork / "notes2.txt").read_text() == "meanwhile\n"
    assert pq(fork, "status").output.startswith("no rebase in progress"), pq(fork, "status").output


def test_a_commit_made_while_undo_moves_the_branch_is_kept(tmp_path: Path) -> None:
    """`pq undo` moved HEAD's branch with `git checkout -B`, over a commit made after it
    read the branch: the commit was on no branch, and the refused undo's log entry (the
    commit taken for its change) let the next `pq undo` drop it too. The branch moves by
    compare-and-swap: the undo refuses, changes nothing, logs nothing."""
    fork = base_fork(tmp_path)
    pq(fork, "apply", "--onto", "upstream/main")
    ops = json.loads(pq(fork, "log", "--json").output)["operations"]
    labels = checkpoints(fork, ["undo"])
    at = labels.index("git update-ref")  # just before the branch moves
    code, out, made = commit_meanwhile(fork, ["undo"], at)
    assert code == 2, out
    assert "paddle moved while pq undo was computing" in out and "changed nothing" in out
    assert git(fork, "rev-parse", "paddle") == made
    assert (fork / "notes2.txt").read_text() == "meanwhile\n"
    assert json.loads(pq(fork, "log", "--json").output)["operations"] == ops
    refused = pq(fork, "undo", ok=False)  # the commit on top: `--force` or keep it
    assert refused.exit_code == 2 and "refs/heads/paddle has moved" in refused.output
    assert git(fork, "rev-parse", "paddle") == made


def test_undo_waits_for_an_apply_that_computes(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    labels = checkpoints(fork, ["apply", "--onto", "upstream/main"])
    at = labels.index("write commit") + 1
    out = tmp_path / "undo.out"
    script = f"cd {shlex.quote(str(fork))} && PQ_LOCK_WAIT=0 {shlex.quote(sys.executable)} " \
             f"-m pq undo > {shlex.quote(str(out))} 2>&1; echo $? >> {shlex.quote(str(out))}"
    proc = run_pq(fork, ["apply", "--onto", "upstream/main"], PQ_FAULT_AT=str(at),
                  PQ_FAULT_RUN=script)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "another pq command is running" in text and "pq apply" in text
    assert text.strip().endswith("2")


# -- item 5: undo never reaches past a command killed before it logged ----------------------


def test_undo_after_a_kill_before_logging_says_so(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns 3")
    pq(fork, "export", "--commit")
    before = repo_state(fork)
    proc = run_pq(fork, ["apply", "--onto", "upstream/main"], PQ_FAULT_AT="3")
    assert proc.returncode == -9
    assert repo_state(fork) == before
    assert json.loads(pq(fork, "log", "--json").output)["operations"][0]["command"] == \
        "pq export --commit"
    line = error_line(pq(fork, "undo", ok=False), 2)
    assert "`pq apply --onto upstream/main`" in line and "killed before it logged" in line
    assert "operation 2 (`pq export --commit`)" in line
    assert repo_state(fork) == before
    # Asked again, undo does what it says.
    assert pq(fork, "undo").output.startswith("undid operation 2 (`pq export --commit`)")


# -- item 11: `pq check` with PQ_SKIP ---------------------------------------------------------


def test_check_with_skip_says_what_was_skipped_like_the_hook(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    proc = run_pq(fork, ["check", "--json"], PQ_SKIP="export")
    assert proc.returncode == 0, proc.stderr
    statuses = {c["name"]: c["status"] for c in json.loads(proc.stdout)["checks"]}
    assert statuses["export"] == "skipped" and statuses["apply"] == "skipped"
    assert "not-run" not in statuses.values()
    proc = run_pq(fork, ["check", "--no-cache"], PQ_SKIP="export")
    err, out = proc.stderr.decode(), proc.stdout.decode()
    assert "pq: WARNING: PQ_SKIP=export: skipping the check export; HEAD is NOT fully " \
           "verified" in err
    passed = sum(1 for s in statuses.values() if s == "passed")
    assert out.splitlines()[-1] == f"series consistent ({passed} checks passed, 2 skipped)"


# -- also: `hook install --force` keeps and logs the hook it replaces -------------------------


def test_hook_install_force_keeps_and_logs_the_foreign_hook(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    hooks = fork / ".git" / "hooks"
    write(hooks, "pre-push", "#!/bin/sh\necho mine\n", 0o755)
    out = pq(fork, "hook", "install", "--force").output
    assert "kept as pre-push.replaced-by-pq" in out
    assert (hooks / "pre-push.replaced-by-pq").read_text() == "#!/bin/sh\necho mine\n"
    data = json.loads(pq(fork, "log", "--json").output)
    first = data["operations"][0]
    assert first["kind"] == "note" and first["command"] == "pq hook install --force"
    assert "pre-push.replaced-by-pq" in first["note"]
    assert data["undo"] == 1  # undo steps over the note (operation 1 is the init)
    assert "pre-push.replaced-by-pq" in pq(fork, "log").output
    pq(fork, "hook", "uninstall")
    assert (hooks / "pre-push").read_text() == "#!/bin/sh\necho mine\n"


def test_hook_install_force_again_never_deletes_the_hook_set_aside_before(
        tmp_path: Path) -> None:
    """A second `--force` over another foreign hook unlinked the first one set aside."""
    fork = base_fork(tmp_path)
    hooks = fork / ".git" / "hooks"
    first, second = "#!/bin/sh\necho first\n", "#!/bin/sh\necho second\n"
    write(hooks, "pre-push", first, 0o755)
    pq(fork, "hook", "install", "--force")
    write(hooks, "pre-push", second, 0o755)
    out = pq(fork, "hook", "install", "--force").output
    assert "the hook set aside there before is kept as pre-push.replaced-by-pq.1" in out
    assert (hooks / "pre-push.replaced-by-pq").read_text() == second
    assert (hooks / "pre-push.replaced-by-pq.1").read_text() == first
    assert "is now pre-push.replaced-by-pq.1" in pq(fork, "log").output
    write(hooks, "pre-push", second, 0o755)  # the same hook again: no third copy
    pq(fork, "hook", "install", "--force")
    assert sorted(p.name for p in hooks.glob("pre-push.replaced-by-pq*")) == [
        "pre-push.replaced-by-pq", "pre-push.replaced-by-pq.1"]
    pq(fork, "hook", "uninstall")  # the hook that was in place last comes back
    assert (hooks / "pre-push").read_text() == second


# -- item 9: errors name file:line:column and the fix ----------------------------------------


def test_errors_name_the_place_and_the_fix(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    series = (fork / "series.yaml").read_bytes()
    write(fork, "patches/0009-stray.patch", (fork / "patches").joinpath(
        sorted(p.name for p in (fork / "patches").iterdir())[0]).read_bytes())
    line = error_line(pq(fork, "series", ok=False), 2)
    assert line.startswith("pq: error: series.yaml:") and line.split(":")[3].strip().isdigit()
    assert "patches/0009-stray.patch" in line and "- name: 0009-stray.patch" in line
    assert "git rm -f patches/0009-stray.patch" in line
    (fork / "patches" / "0009-stray.patch").unlink()
    write(fork, "series.yaml", series.replace(b"version: 1", b"version: \"1\""))
    line = error_line(pq(fork, "series", ok=False), 2)
    assert "series.yaml:" in line and "must be an integer, not '1'" in line
    assert "write `version: 1`" in line
    write(fork, "series.yaml", series.replace(b"upstream:", b"# caf\xe9\nupstream:"))
    line = error_line(pq(fork, "series", ok=False), 2)
    n = series[:series.index(b"upstream:")].count(b"\n") + 1
    assert f"series.yaml:{n}:6: not valid UTF-8 (byte 0xe9)" in line and "iconv" in line


# -- item 10: docs/gate.md's note agrees with its session and with pq ------------------------


def test_gate_docs_note_example_matches_what_pq_writes() -> None:
    import re

    from pq.gate import result as R

    doc = (Path(__file__).parents[2] / "docs" / "gate.md").read_text()
    session = re.search(r"### An example session\n\n(?:<!--.*?-->\n)?```\n\$ pq gate\n(.*?)\n\$ echo", doc, re.S)
    assert session is not None
    summary_line = next(ln for ln in session.group(1).splitlines()
                        if ln.startswith("result: "))
    block = re.search(r"```json\n(\{\n \"format\": 1,.*?)\n```", doc, re.S)
    assert block is not None
    note = json.loads(block.group(1).replace("…", ""))
    stages = [R.StageResult.from_record(s) for s in note["stages"]]
    shown = [ln.split()[0] for ln in session.group(1).splitlines()[1:]
             if ln.startswith("  ") and not ln.startswith("  cached")]
    assert [s.name for s in stages] == shown  # the session's run, stage by stage
    assert note["status"] == R.overall(stages)
    assert note["owed"] == R.owed_names(stages)
    assert note["summary"] == R.describe(note["status"], stages)
    assert summary_line == f"result: {note['summary']}"


# -- also: every environment variable and `pq log --max-count` are documented -----------------


def test_environment_variables_and_log_options_are_documented() -> None:
    import re

    root = Path(__file__).parents[2]
    docs = (root / "README.md").read_text() + "".join(
        p.read_text() for p in sorted((root / "docs").glob("*.md")))
    used = {m for p in (root / "src" / "pq").rglob("*.py")
            for m in re.findall(r"\"(PQ_[A-Z_]+)\"", p.read_text())}
    assert {"PQ_DEBUG", "PQ_MRE", "PQ_SKIP"} <= used
    assert sorted(v for v in used if v not in docs) == []
    assert "--max-count" in docs


# -- item 1 (fixed before): a reworded commit keeps, or says it drops, its entry's metadata ----


def test_reworded_commit_never_drops_metadata_silently(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    series = (fork / "series.yaml").read_text()
    write(fork, "series.yaml", series + "    owner: alice\n")
    commit_all(fork, "pq: owner of the glue patch")
    # Reword the glue commit as the README suggests: `git rebase -i`, reword.
    env = "GIT_SEQUENCE_EDITOR=\"sed -i '1s/^pick/reword/'\" GIT_EDITOR=\"sed -i " \
          "'1s/.*/python-glue: scoped compat, reworded/'\""
    import subprocess

    subprocess.run(f"{env} git rebase -q -i HEAD~3", shell=True, cwd=fork, check=True,
                   capture_output=True)
    assert git(fork, "log", "-1", "--format=%s", "HEAD~2") == \
        "python-glue: scoped compat, reworded"
    out = pq(fork, "export").output
    text = (fork / "series.yaml").read_text()
    assert "owner: alice" in text or ("dropped" in out and "owner" in out), out


# -- also (fixed before): `pq log` records a command with all its options ----------------------


def test_log_records_every_option(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    pq(fork, "apply", "--onto", "upstream/main", "--branch", "rebuilt", "--json")
    ops = json.loads(pq(fork, "log", "--json").output)["operations"]
    assert ops[0]["command"] == "pq apply --onto upstream/main --branch rebuilt --json"


# -- also: workaround paths follow a file that upstream renamed --------------------------------

WORKAROUND = """    workaround:
      kind: build-entry
      covers:
        - setup.py
      reason: the fork builds against Paddle's torch compat
      remove_when:
        - 'upstream-contains: setup.py: enable_compat'
      issue: 'not-needed: a build choice'
      marker: paddle.enable_compat
"""


def workaround_fork(tmp: Path) -> Path:
    """base_fork whose build patch carries WORKAROUND, committed and exported."""
    fork = base_fork(tmp)
    text = (fork / "series.yaml").read_text()
    anchor = "    summary: 'build: enable compat'\n"
    write(fork, "series.yaml", text.replace(anchor, anchor + WORKAROUND))
    git(fork, "commit", "-q", "-m", "pq: the build patch is a workaround", "series.yaml")
    pq(fork, "export", "--commit")
    return fork


def test_workaround_paths_follow_an_upstream_rename(tmp_path: Path) -> None:
    fork = workaround_fork(tmp_path)

    def wa007() -> list[str]:
        data = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
        return [f["message"] for f in data["findings"] if f["rule_id"] == "WA007"]

    assert wa007() == []
    upstream = tmp_path / "upstream"
    git(upstream, "mv", "setup.py", "tools_setup.py")
    commit_all(upstream, "upstream: move setup.py")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "tools_setup.py").read_text().startswith("import paddle")
    assert wa007() == []
    series = (fork / "series.yaml").read_text()
    assert "- tools_setup.py" in series and "upstream-contains: tools_setup.py:" in series
    assert "setup.py" not in series.replace("tools_setup.py", "")
    assert wa007() == []


def test_a_rename_to_a_name_that_is_not_utf8_keeps_the_old_path_readable(
        tmp_path: Path) -> None:
    """series.yaml is UTF-8 text: the block keeps the old name (the audit then says the
    patch is outside `covers`), and pq reads the series it wrote."""
    fork = workaround_fork(tmp_path)
    upstream = tmp_path / "upstream"
    git(upstream, "mv", "setup.py", b"s\xe9tup.py".decode("utf-8", "surrogateescape"))
    commit_all(upstream, "upstream: move setup.py to a Latin-1 name")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    series = (fork / "series.yaml").read_text()
    assert "        - setup.py\n" in series and "\\udc" not in series.lower()
    assert pq(fork, "series").exit_code == 0


def test_item_13_plain_cpp_is_kernel_and_the_readme_says_so() -> None:
    from pq.model import layers

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert layers.classify_path("csrc/kernel/scale_add.cc", b"float f(float x) { return x; }\n") \
        == "kernel"
    assert layers.classify_path("csrc/ops.cc", b"#include <torch/extension.h>\nat::Tensor t;\n") \
        == "cpp-compat"
    assert "other C/C++" in readme and "that uses no framework API" in readme


def test_undo_and_redo_name_an_untracked_file_in_the_way(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)  # upstream added csrc/extra.cc
    pq(fork, "rebase", "upstream/main")
    pq(fork, "undo")
    write(fork, "csrc/extra.cc", "my own, untracked\n")
    before = repo_state(fork)
    line = error_line(pq(fork, "redo", ok=False), 2)
    assert "untracked csrc/extra.cc would be overwritten by redoing operation" in line
    assert "move it aside, then run `pq redo` again" in line
    assert repo_state(fork) == before
    assert (fork / "csrc/extra.cc").read_text() == "my own, untracked\n"
    # `pq undo --op N` is named as typed: a plain `pq undo` would take back another one.
    undo_op = next(o["id"] for o in json.loads(pq(fork, "log", "--json").output)[
        "operations"] if o["command"] == "pq undo")  # the state before it: rebased
    line = error_line(pq(fork, "undo", "--op", str(undo_op), ok=False), 2)
    assert f"move it aside, then run `pq undo --op {undo_op}` again" in line, line


def test_undo_and_redo_keep_an_ignored_file_in_the_way_too(tmp_path: Path) -> None:
    """git's checkout overwrites an ignored file where the commit it goes to has one; undo
    keeps every file of the user's: it refuses, names the file, and changes nothing."""
    fork = base_fork(tmp_path)  # upstream added csrc/extra.cc
    pq(fork, "rebase", "upstream/main")
    pq(fork, "undo")
    write(fork, ".git/info/exclude", "csrc/extra.cc\n")
    write(fork, "csrc/extra.cc", "my local settings, ignored\n")
    before = repo_state(fork)
    line = error_line(pq(fork, "redo", ok=False), 2)
    assert "untracked csrc/extra.cc (ignored, but yours) would be overwritten by redoing" \
        in line, line
    assert repo_state(fork) == before
    (fork / "csrc/extra.cc").unlink()
    pq(fork, "redo")
    assert (fork / "csrc/extra.cc").read_text() == "int g() { return 2; }\n"


def test_undo_of_an_operation_whose_worktree_is_gone_says_so(tmp_path: Path) -> None:
    """The newest operation ran in a linked worktree removed since: undo cannot put its
    files back anywhere; it says the worktree is gone (not `cd` there) and how to go back
    to before an operation of this worktree, which works."""
    fork = base_fork(tmp_path)
    linked = tmp_path / "linked"
    git(fork, "worktree", "add", "-q", "-b", "side", str(linked), "paddle")
    write(linked, "pkg/side.py", "x = 1\n")
    commit_all(linked, "python-glue: side")
    pq(linked, "export", "--commit")
    git(fork, "worktree", "remove", "--force", str(linked))
    line = error_line(pq(fork, "undo", ok=False), 2)
    assert f"ran in the worktree {linked}, which is gone" in line, line
    assert "`pq undo --op <id> --force`" in line and "cd " not in line
    first = json.loads(pq(fork, "log", "--json").output)["operations"][-1]
    refused = error_line(pq(fork, "undo", "--op", str(first["id"]), ok=False), 2)
    assert "in the worktree" in refused and " first; or" not in refused, refused
    pq(fork, "undo", "--op", str(first["id"]), "--force")
    assert not (fork / "series.yaml").exists()  # before `pq init`, which ran here


def test_status_says_a_rebase_another_pq_runs_now_is_running(tmp_path: Path) -> None:
    """`pq status` while `pq rebase` replays (its state saved, the lock held): running, and
    no advice to abort it (the state alone would read as an interrupted rebase)."""
    fork = base_fork(tmp_path)
    args = ["rebase", "upstream/main", "--force"]
    at = checkpoints(fork, args).index("rename state.json") + 2  # replaying
    seen = fork.parent / "status.json"
    script = (f"cd {shlex.quote(str(fork))} && {shlex.quote(sys.executable)} -m pq status "
              f"--json > {shlex.quote(str(seen))}")
    proc = run_pq(fork, args, PQ_FAULT_AT=str(at), PQ_FAULT_RUN=script)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(seen.read_text())["rebase"]
    assert status["phase"] == "running" and status["next"] == []
    assert "`pq rebase upstream/main --force` (process " in status["holder"]


@pytest.mark.parametrize("first,second", [("--continue", "--abort"),
                                          ("--abort", "--continue"),
                                          ("--continue", "--continue")])
def test_a_second_rebase_command_on_the_same_stop_waits_for_the_first(
        tmp_path: Path, first: str, second: str) -> None:
    """Each read the stopped rebase before it took the lock: a `--continue` that waited
    for an `--abort` then finished the rebase the abort had ended, from its old state (one
    patch made of the whole old branch, upstream's changes reverted, exit 0), and a second
    `--continue` brought a finished rebase back. The second now finds the lock held from
    the first one's start, and refuses."""
    conflict = conflict_fork(tmp_path / "c")
    fork = conflict.parent / "fork"
    conflict.rename(fork)
    before = git(fork, "rev-parse", "HEAD")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension as ext\n\nsetup(name='x')\n")
    git(fork, "add", "setup.py")
    out = fork.parent / "second.out"
    script = (f"cd {shlex.quote(str(fork))} && env -u PQ_FAULT_AT -u PQ_FAULT_RUN "
              f"PQ_LOCK_WAIT=0.2 {shlex.quote(PQ)} rebase {second} > {out} 2>&1; "
              f"echo $? >> {out}")
    proc = run_pq(fork, ["rebase", first], PQ_FAULT_AT="1", PQ_FAULT_RUN=script)
    said = out.read_text()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "another pq command is running in this repository" in said and \
        said.rstrip().endswith("2"), said
    assert not (fork / ".git/pq/rebase/state.json").exists()
    if first == "--abort":
        assert git(fork, "rev-parse", "HEAD") == before
    else:  # the resolution is the first patch, upstream's rename kept
        assert "cpp_extension as ext" in git(fork, "show", "HEAD:setup.py")
        assert json.loads(pq(fork, "series", "--json").output)["patches"][0][
            "name"].startswith("0001-")


def test_a_command_run_while_a_rebase_reads_its_series_waits_for_it(tmp_path: Path) -> None:
    """`pq rebase` read series.yaml and the branch before it took the lock: a `pq undo`
    (of the init that wrote the series) ran meanwhile, and the rebase then landed the
    series the undo had removed, both logged done. The undo now finds the lock held."""
    fork = base_fork(tmp_path)
    out = tmp_path / "second.out"
    script = (f"cd {shlex.quote(str(fork))} && env -u PQ_FAULT_AT -u PQ_FAULT_RUN "
              f"PQ_LOCK_WAIT=0.2 {shlex.quote(PQ)} undo > {out} 2>&1; echo $? >> {out}")
    proc = run_pq(fork, ["rebase", "upstream/main"], PQ_FAULT_AT="1", PQ_FAULT_RUN=script)
    said = out.read_text()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "another pq command is running in this repository" in said and \
        said.rstrip().endswith("2"), said
    ops = json.loads(pq(fork, "log", "--json").output)["operations"]
    assert [o["command"] for o in ops[:1]] == ["pq rebase upstream/main"], ops[:2]


def test_status_says_running_while_a_continue_holds_the_stop(tmp_path: Path) -> None:
    """While `--continue` holds the lock (its state still says "conflict"), `pq status`
    said "conflict ... next: resolve the conflicted files"; it says the rebase is running."""
    conflict = conflict_fork(tmp_path / "c")
    fork = conflict.parent / "fork"
    conflict.rename(fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    out = fork.parent / "status.json"
    script = (f"cd {shlex.quote(str(fork))} && env -u PQ_FAULT_AT -u PQ_FAULT_RUN "
              f"{shlex.quote(PQ)} status --json > {out}")
    assert run_pq(fork, ["rebase", "--continue"], PQ_FAULT_AT="1",
                  PQ_FAULT_RUN=script).returncode == 0
    status = json.loads(out.read_text())["rebase"]
    assert status["phase"] == "running" and "pq rebase --continue" in status["holder"], status
