"""`pq drift` and `pq fix-renames` as users run them (real repositories, real git): exit
codes, --json keys, the rebase report's drift section, `copies:` in series.yaml and its
proposal, the rename patch that still applies and undoes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from driftrepo import COPY, COPY_ORIGIN, OLD_SPELLING, fork_with_series, upstream_commit
from gitrepo import commit_all, git, make_fork, pq, snapshot_queue, write

# These tests ask no Paddle (test_drift_compat.py does): an interpreter that is not there.
NO_PADDLE = ("--paddle-python", "/nonexistent/python")
JSON_KEYS = {"old", "new", "commits", "surface", "risky", "breaking", "items", "stale_copies",
             "touched_both", "renames"}


def test_bad_ranges_exit_2_in_one_line(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    for arg in ("upstream/main", "nope..upstream/main", "upstream/main...HEAD", "..HEAD"):
        r = pq(fork, "drift", arg, ok=False)
        assert r.exit_code == 2, (arg, r.output)
        assert len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output
    # NEW..OLD (reversed): it reported 0 commits and "nothing risky", exit 0.
    r = pq(fork, "drift", "upstream/main..upstream/main~1", *NO_PADDLE, ok=False)
    assert r.exit_code == 2 and "upstream/main~1 is older than upstream/main" in r.output \
        and "`pq drift upstream/main~1..upstream/main`" in r.output, r.output


def test_nothing_risky_exits_0_and_json_keys_are_stable(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "pkg/glue.py", "GLUE = 1\n")
    commit_all(fork, "Glue")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"README.md": "upstream moved\n"}, "docs")
    r = pq(fork, "drift", f"{old}..upstream/main", *NO_PADDLE)
    assert r.exit_code == 0 and "nothing risky" in r.output
    data = json.loads(pq(fork, "drift", f"{old}..upstream/main", "--json", *NO_PADDLE).output)
    assert set(data) == JSON_KEYS and data["commits"] == 1 and data["risky"] is False
    assert data["surface"].startswith("unavailable: ")


def test_something_reported_exits_1_with_each_section(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"csrc/guard.cc": "#include <c10/cuda/CUDAGuard.h>\n"
                           "void g(at::Tensor& x) { at::cuda::CUDAGuard guard(x.device()); }\n"},
                    "guard")
    r = pq(fork, "drift", f"{old}..upstream/main", *NO_PADDLE, ok=False)
    assert r.exit_code == 1
    assert "csrc/guard.cc:2 at::cuda::CUDAGuard" in r.output
    assert f"{COPY}:" in r.output and OLD_SPELLING in r.output
    data = json.loads(pq(fork, "drift", f"{old}..upstream/main", "--json", *NO_PADDLE,
                         ok=False).output)
    item = next(i for i in data["items"] if i["name"] == "at::cuda::CUDAGuard")
    assert set(item) == {"kind", "name", "file", "line", "commit", "status", "breaks",
                         "header", "detail"}
    assert item["commit"] == git(fork, "rev-parse", "upstream/main")


def test_a_file_name_with_a_line_break_stays_on_its_report_line(tmp_path: Path) -> None:
    """Quoted as git quotes it (`"csrc/a\\nb.cc"`): written raw, it split the line."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"csrc/a\nb.cc": "#include <c10/cuda/CUDAGuard.h>\n"
                           "void g(at::Tensor& x) { at::cuda::CUDAGuard guard(x.device()); }\n"},
                    "guard")
    r = pq(fork, "drift", f"{old}..upstream/main", *NO_PADDLE, ok=False)
    assert r.exit_code == 1
    assert 'unknown: "csrc/a\\nb.cc":2 at::cuda::CUDAGuard (' in r.output, r.output


def test_rebase_report_has_a_drift_section_after_the_outcomes(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"setup.py": "from torch.utils import cpp_extension  # v2\n"
                           "\n\n\n\nsetup(name='x')\n"}, "touch setup.py")
    r = pq(fork, "rebase", "upstream/main")
    lines = r.output.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("drift: "))
    assert at > next(i for i, ln in enumerate(lines) if ln.strip().startswith("merged"))
    assert "1 file touched on both sides" in lines[at]
    assert f"run `pq drift {old[:12]}..{git(fork, 'rev-parse', 'upstream/main')[:12]}`" \
        in r.output
    pq(fork, "undo")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [t["file"] for t in data["drift"]["touched_both"]] == ["setup.py"]


def test_fix_renames_adds_one_patch_that_applies_and_undoes(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    before = snapshot_queue(fork)
    tip = git(fork, "rev-parse", "HEAD")
    r = pq(fork, "fix-renames")
    assert "new patch patches/" in r.output
    assert OLD_SPELLING not in (fork / COPY).read_text()
    assert "paddle.enable_compat(scope=" in (fork / COPY).read_text()
    series = (fork / "series.yaml").read_text()
    assert "summary: Follow Paddle's renamed compat entry points" in series
    assert pq(fork, "fix-renames").output.startswith("nothing to rewrite")
    old = git(fork, "rev-parse", "upstream/main")
    assert "old Paddle spellings" not in pq(fork, "drift", f"{old}..upstream/main",
                                            *NO_PADDLE).output
    # the series still applies: onto its base, and rebased onto a new upstream
    pq(fork, "apply")
    assert OLD_SPELLING not in (fork / COPY).read_text()
    upstream_commit(fork, {"pkg/new.py": "y = 2\n"}, "upstream moves")
    assert "rebased paddle" in pq(fork, "rebase", "upstream/main").output
    assert OLD_SPELLING not in (fork / COPY).read_text()
    for _ in range(3):  # the rebase, the apply, the fix
        pq(fork, "undo")
    assert git(fork, "rev-parse", "HEAD") == tip
    assert snapshot_queue(fork) == before


def test_fix_renames_leaves_documentation_alone(tmp_path: Path) -> None:
    """A migration note in README.md names the old spelling: drift listed it as one to
    port, and fix-renames rewrote the note into "renamed X to X" (drift reads no docs)."""
    fork = fork_with_series(tmp_path)
    note = f"Migration note: Paddle 3.3 renamed `{OLD_SPELLING}` to `paddle.enable_compat`.\n"
    write(fork, "docs/migration.md", note)
    write(fork, "README.md", note)
    write(fork, "draft.md", f"import paddle\n{OLD_SPELLING}()\n")  # code, once moved
    commit_all(fork, "docs: the migration")
    git(fork, "mv", "draft.md", "tool.py")
    commit_all(fork, "glue: the draft is a tool")
    pq(fork, "export", "--commit")
    r = pq(fork, "fix-renames")
    assert "new patch patches/" in r.output  # the copy of the test, still
    assert (fork / "README.md").read_text() == (fork / "docs/migration.md").read_text() == note
    assert OLD_SPELLING not in (fork / COPY).read_text()
    assert OLD_SPELLING not in (fork / "tool.py").read_text()


def test_fix_renames_follows_the_patches_lines_and_only_those(tmp_path: Path) -> None:
    """Three misses: a line whose file a later patch renamed ("nothing to rewrite"), an
    upstream line of the same file that spells the old name too (rewritten along), and a
    commit not exported yet ("nothing to rewrite", exit 0)."""
    fork = fork_with_series(tmp_path)
    pq(fork, "fix-renames")  # the copy's line: no old spelling left in the patches
    up = tmp_path / "upstream"
    write(up, "pkg/glue.py", f"# upstream's note: {OLD_SPELLING}() was the old way\n")
    commit_all(up, "upstream: a note")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    write(fork, "pkg/glue.py", (fork / "pkg/glue.py").read_text() + f"{OLD_SPELLING}()\n")
    commit_all(fork, "glue: enable compat")
    refused = pq(fork, "fix-renames", ok=False)
    assert refused.exit_code == 2 and "run `pq export` first" in refused.output
    pq(fork, "export", "--commit")
    git(fork, "mv", "pkg/glue.py", "pkg/compat_glue.py")
    commit_all(fork, "glue: rename")
    pq(fork, "export", "--commit")
    out = pq(fork, "fix-renames").output
    assert "1 old spelling in pkg/compat_glue.py" in out, out
    text = (fork / "pkg/compat_glue.py").read_text()
    assert text == f"# upstream's note: {OLD_SPELLING}() was the old way\n" \
                   "paddle.enable_compat()\n"


def test_fix_renames_leaves_an_upstream_line_of_the_same_text_alone(tmp_path: Path) -> None:
    """Upstream's `if` branch calls the old spelling; a patch adds the same call, same
    text, in its `else`: only the patch's line is rewritten (by its place, not its text)."""
    fork = fork_with_series(tmp_path)
    pq(fork, "fix-renames")
    up = tmp_path / "upstream"
    call = f'    {OLD_SPELLING}(scope={{"tinyop"}})\n'
    write(up, "pkg/shim.py", "import paddle\nif OLD_PADDLE:\n" + call)
    commit_all(up, "upstream: a shim")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    write(fork, "pkg/shim.py", (fork / "pkg/shim.py").read_text() + "else:\n" + call)
    commit_all(fork, "glue: the fallback")
    pq(fork, "export", "--commit")
    assert "1 old spelling in pkg/shim.py" in pq(fork, "fix-renames").output
    assert (fork / "pkg/shim.py").read_text() == "import paddle\nif OLD_PADDLE:\n" + call + \
        'else:\n    paddle.enable_compat(scope={"tinyop"})\n'


def test_fix_renames_rewrites_a_crlf_file(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    pq(fork, "fix-renames")
    write(fork, "pkg/crlf.py", f"import paddle\r\n{OLD_SPELLING}()\r\n".encode())
    commit_all(fork, "glue: crlf")
    pq(fork, "export", "--commit")
    assert "1 old spelling in pkg/crlf.py" in pq(fork, "fix-renames").output
    assert (fork / "pkg/crlf.py").read_bytes() == b"import paddle\r\npaddle.enable_compat()\r\n"


def test_copies_in_series_yaml_are_kept_and_checked(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    series = fork / "series.yaml"
    text = series.read_text().replace(
        "summary: Paddle copy of the op test\n",
        f"summary: Paddle copy of the op test\n    copies: {{{COPY}: {COPY_ORIGIN}}}\n")
    series.write_text(text)
    pq(fork, "export")
    assert series.read_text() == text
    bad = text.replace(f"{{{COPY}: {COPY_ORIGIN}}}", f"{{{COPY}: ../outside.py}}")
    series.write_text(bad)
    r = pq(fork, "export", ok=False)
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "copies:" in ln)
    assert r.exit_code == 2 and f"series.yaml:{line}:" in r.output
    series.write_text(text.replace(f"{{{COPY}: {COPY_ORIGIN}}}", "[a, b]"))
    r = pq(fork, "series", ok=False)
    assert r.exit_code == 2 and "`copies` must be a mapping" in r.output


def test_export_proposes_a_copies_declaration(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    r = pq(fork, "export")
    assert f"copies: {{{COPY}: {COPY_ORIGIN}}}" in r.output
    data = json.loads(pq(fork, "export", "--json").output)
    [proposal] = data["copies_proposed"]
    assert (proposal["copy"], proposal["origin"]) == (COPY, COPY_ORIGIN)


def test_init_and_import_propose_a_copies_declaration(tmp_path: Path) -> None:
    from driftrepo import ORIGIN_TEXT

    up = tmp_path / "upstream"
    fork = make_fork(tmp_path)
    write(up, COPY_ORIGIN, ORIGIN_TEXT)
    commit_all(up, "upstream: tests")
    git(fork, "pull", "-q", "upstream", "main")
    write(fork, COPY, ORIGIN_TEXT.replace("torch.ones(3)", "torch.ones([3])"))
    commit_all(fork, "Paddle copy of the test")
    data = json.loads(pq(fork, "import", "--upstream", "upstream/main", "--dry-run",
                         "--json").output)
    assert [(c["copy"], c["origin"]) for c in data["copies_proposed"]] == [(COPY, COPY_ORIGIN)]
    assert f"copies: {{{COPY}: {COPY_ORIGIN}}}" in pq(fork, "init", "--upstream",
                                                      "upstream/main").output


def test_the_rebase_reports_the_drift_pq_drift_reports(tmp_path: Path) -> None:
    """The rebase scans the range in a thread while it lands: the same report."""
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    upstream_commit(fork, {"csrc/guard.cc": "#include <c10/cuda/CUDAGuard.h>\n"
                           "void g(at::Tensor& x) { at::cuda::CUDAGuard guard(x.device()); }\n",
                           "setup.py": "from torch.utils import cpp_extension  # v2\n"
                                       "\n\n\n\nsetup(name='x')\n"},
                    "guard, setup")
    new = git(fork, "rev-parse", "upstream/main")
    alone = json.loads(pq(fork, "drift", f"{old}..{new}", "--json", *NO_PADDLE,
                          ok=False).output)
    during = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)["drift"]
    assert during["items"] and during["touched_both"]
    assert {k: v for k, v in during.items() if k != "surface"} == {
        k: v for k, v in alone.items() if k != "surface"}


def test_a_continued_rebase_reports_the_same_drift(tmp_path: Path) -> None:
    fork = fork_with_series(tmp_path)
    old = git(fork, "rev-parse", "upstream/main")
    setup = "from torch.utils import cpp_extension\n\n\n\n\nsetup(name='x')\n"
    upstream_commit(fork, {"setup.py": setup + "import other  # upstream's own line\n",
                           "csrc/guard.cc": "#include <c10/cuda/CUDAGuard.h>\n"}, "collide")
    new = git(fork, "rev-parse", "upstream/main")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", setup + "import other  # upstream's own line\n"
                                    "import paddle  # build with Paddle's compat layer\n")
    git(fork, "add", "setup.py")
    during = json.loads(pq(fork, "rebase", "--continue", "--json").output)["drift"]
    alone = json.loads(pq(fork, "drift", f"{old}..{new}", "--json", *NO_PADDLE,
                          ok=False).output)
    assert during["items"] and [t["file"] for t in during["touched_both"]] == ["setup.py"]
    assert {k: v for k, v in during.items() if k != "surface"} == {
        k: v for k, v in alone.items() if k != "surface"}


def test_a_landing_git_refuses_waits_for_the_scan_and_leaves_git_clean(tmp_path: Path
                                                                         ) -> None:
    """The scan starts before the landing; when git refuses to land (an untracked file in
    the way), pq still waits for the scan's `git log`, so no git process dies half way
    (git 2.39's remerge-diff then leaves a tmp_objdir folder in .git/objects)."""
    fork = fork_with_series(tmp_path)
    up = fork.parent / "upstream"
    tip = git(up, "rev-parse", "HEAD")
    stream = []
    for i in range(300):  # a long range, so that the scan outlives the refused landing
        body = f"value = {i}\n" * 40
        stream += [f"commit refs/heads/main\ncommitter U <u@example.com> {1700000000 + i} "
                   f"+0000\ndata 8\nchange {i % 10}\n",
                   *([f"from {tip}\n"] if i == 0 else []),
                   f"M 100644 inline pkg/gen{i % 10}.py\ndata {len(body)}\n{body}\n"]
    git(up, "fast-import", "--quiet", input="".join(stream).encode())
    upstream_commit(fork, {"new.txt": "upstream's\n"}, "add new.txt")
    write(fork, "new.txt", "mine, untracked\n")
    r = subprocess.run([sys.executable, "-m", "pq", "rebase", "upstream/main"], cwd=fork,
                       env=dict(os.environ), capture_output=True)
    assert r.returncode == 2 and b"new.txt" in r.stdout + r.stderr, r.stdout + r.stderr
    assert not [p.name for p in (fork / ".git/objects").iterdir()
                if p.name.startswith("tmp_objdir")]
    assert (fork / "new.txt").read_text() == "mine, untracked\n"


def test_an_upstream_history_rewritten_is_compared_as_trees(tmp_path: Path) -> None:
    """Upstream squashed (a new root commit) or fetched shallow: the root's own diff counted
    every line as new, so API the old base had was "new", and a file only the fork changed
    was "touched on both sides"."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/glue.py", "GLUE = 1\n")
    commit_all(fork, "Glue")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    old = git(fork, "rev-parse", "upstream/main")
    up = tmp_path / "upstream"
    write(up, "csrc/guard.cc", "#include <c10/cuda/CUDAGuard.h>\n"
          "void g(at::Tensor& x) { at::cuda::CUDAGuard guard(x.device()); }\n")
    commit_all(up, "upstream: guard")
    git(up, "checkout", "-q", "--orphan", "squashed")
    write(up, "README.md", "squashed\n")
    commit_all(up, "one commit")
    write(up, "NEWS.md", "news\n")
    commit_all(up, "a second")
    git(up, "branch", "-q", "-M", "squashed", "main")
    git(fork, "fetch", "-q", "-f", "upstream")
    data = json.loads(pq(fork, "drift", f"{old}..upstream/main", "--json", *NO_PADDLE,
                         ok=False).output)
    # The range's commits are counted as `git rev-list --count` counts them (it said 1).
    assert data["commits"] == int(git(fork, "rev-list", "--count", f"{old}..upstream/main")) == 2
    assert {i["file"] for i in data["items"]} == {"csrc/guard.cc"}  # none of old's files
    assert "at::cuda::CUDAGuard" in [i["name"] for i in data["items"]]
    assert data["touched_both"] == []  # pkg/glue.py is the fork's alone
