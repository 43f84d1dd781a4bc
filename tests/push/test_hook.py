"""The pre-push hook, driven by real `git push` to a local bare remote: a consistent branch
goes out, an inconsistent one is refused with the fix and nothing reaches the remote."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, origin_with_hook, pq, write

from pq.push import install

ROOT = Path(__file__).resolve().parents[2]


# -- scenario helpers --------------------------------------------------------------------


def make_pushable(tmp_path: Path) -> tuple[Path, Path]:
    """A fork with a two-patch series committed, a bare `origin` and pq's hook installed."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "build: enable compat in setup.py")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x  # glue\n")
    commit_all(fork, "glue: scoped compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork, origin_with_hook(tmp_path, fork)


def push(repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", *args], check=False, cwd=repo, capture_output=True,
                          text=True, env={**os.environ, **env})


def remote_refs(remote: Path) -> dict[str, str]:
    out = git(remote, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def assert_refused(result: subprocess.CompletedProcess[str], remote: Path,
                   before: dict[str, str], *expected: str) -> None:
    assert result.returncode != 0, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    assert "push refused" in result.stderr
    assert remote_refs(remote) == before  # nothing was pushed


def short(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", rev)[:12]


# -- what gets through and what does not -------------------------------------------------


def test_consistent_branch_pushes_and_a_repeat_is_cached(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    assert remote_refs(remote) == {"refs/heads/paddle": git(fork, "rev-parse", "HEAD")}
    assert "series consistent (7 checks passed" in result.stderr
    assert (fork / ".git/pq/hook-cache.json").is_file()
    again = push(fork, "origin", "paddle:copy", "paddle:copy2")
    assert again.returncode == 0 and "cached" in again.stderr
    assert "paddle -> copy " in again.stderr and "paddle -> copy2 " in again.stderr
    # A cache entry of another shape is a miss: the checks run again (no internal error,
    # no push let through on a verdict that is not one).
    cache = fork / ".git/pq/hook-cache.json"
    good = json.loads(cache.read_bytes())
    for n, (field, value) in enumerate((("statuses", 5), ("notices", 5),
                                        ("statuses", {"export": {}}))):
        entries = [{**e, field: value} for e in good["passed"]]
        cache.write_text(json.dumps({**good, "passed": entries}))
        result = push(fork, "origin", f"paddle:damaged{n}")
        assert result.returncode == 0, result.stderr
        assert "7 checks passed" in result.stderr and "cached" not in result.stderr, \
            result.stderr


def test_an_uncached_push_asks_git_each_question_about_the_commits_once(tmp_path: Path
                                                                         ) -> None:
    """The checks run side by side and read the same commits: whether the base is the
    tip's ancestor, the range's commits, the tip's queue. Those answers never change, so
    each is asked of git once (a 1000-patch push spent ~100 ms asking twice)."""
    fork, remote = make_pushable(tmp_path)
    (fork / ".git/pq/export-cache.json").unlink()  # the export check exports every commit
    trace = tmp_path / "trace.txt"
    result = push(fork, "origin", "paddle", GIT_TRACE=str(trace))
    assert result.returncode == 0 and "7 checks passed" in result.stderr, result.stderr
    asked = [line.split("trace: built-in: ", 1)[1] for line in
             trace.read_text("utf-8", "replace").splitlines() if "trace: built-in: " in line]
    # (A ref is another question: it can move while a push runs, so whoever reads the
    # upstream ref resolves it then.)
    about_commits = [a for a in asked if a.startswith(
        ("git merge-base", "git rev-list --reverse", "git ls-tree"))]
    # (The export check needs the base check's verdict: the base's ancestry is asked of git
    # there, before the export lists base..tip, and that listing finds it kept.)
    assert any(a.startswith("git merge-base --is-ancestor") for a in about_commits), asked
    assert any(a.startswith("git rev-list --reverse") for a in about_commits), asked
    assert any(a.startswith("git ls-tree") for a in about_commits), asked
    assert {a: n for a in about_commits if (n := about_commits.count(a)) > 1} == {}


def test_unexported_commit_is_refused_until_exported(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    assert push(fork, "origin", "paddle").returncode == 0
    before = remote_refs(remote)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "glue: helper returns 3")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, before,
                   f"[export] commit {short(fork)} ('glue: helper returns 3') is not in the "
                   "series: an unexported edit", "fix: pq export --commit")
    pq(fork, "export", "--commit")  # the fix the message names
    assert push(fork, "origin", "paddle").returncode == 0
    assert remote_refs(remote)["refs/heads/paddle"] == git(fork, "rev-parse", "HEAD")


def test_reworded_commit_is_refused_although_the_tree_is_the_same(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    assert push(fork, "origin", "paddle").returncode == 0  # cached as passing
    before = remote_refs(remote)
    glue = git(fork, "commit-tree", "HEAD~1^{tree}", "-p", "HEAD~2", "-m", "glue: reworded")
    tip = git(fork, "commit-tree", "HEAD^{tree}", "-p", glue, "-m", "pq: init series")
    git(fork, "reset", "-q", "--hard", tip)  # same tree, same series.yaml, new history
    result = push(fork, "origin", "+paddle")
    assert_refused(result, remote, before, f"[export] commit {glue[:12]} ('glue: reworded') "
                   "does not match patches/0002-glue-scoped-compat.patch", "reworded")


@pytest.mark.parametrize("subject", ["tweak the patch by hand", "pq: tweak the patch"])
def test_hand_edited_patch_file_is_refused(tmp_path: Path, subject: str) -> None:
    """Committed under a `pq: ` subject too (as pq's own bookkeeping commits are, and as the
    README commits an acknowledgement): it was taken for what pq last wrote, the commit was
    blamed ("reworded or amended") and the fix named, `pq export --commit`, overwrote the
    edit."""
    fork, remote = make_pushable(tmp_path)
    patch = fork / "patches/0002-glue-scoped-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"return x  # glue", b"return x  # hand"))
    commit_all(fork, subject)
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {},
                   "[export] patches/0002-glue-scoped-compat.patch does not match its commit",
                   "edited by hand", "fix: pq apply")
    assert "[apply]" not in result.stderr  # it needs a consistent export; one message
    refused = pq(fork, "export", "--commit", ok=False)
    assert refused.exit_code == 2 and "edited by hand and committed after pq last wrote it" \
        in refused.output, refused.output
    assert b"# hand" in patch.read_bytes()


@pytest.mark.parametrize("changed", ["another", "its own", "a new one"])
def test_a_hand_edited_patch_file_and_an_amended_commit_name_a_way_out(
        tmp_path: Path, changed: str) -> None:
    """A patch file edited by hand and committed, and another patch's commit amended (or
    the edited patch's own, or a commit added): `pq apply` said to run `pq export` first,
    and export named `pq apply`, each refusing the other's way. The export names both
    sides and a way that keeps them."""
    fork, _ = make_pushable(tmp_path)
    patch = fork / "patches/0002-glue-scoped-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"return x  # glue", b"return x  # hand"))
    commit_all(fork, "tweak the patch by hand")
    name = "patches/0001-build-enable-compat-in-setup-py.patch"
    if changed == "a new one":
        write(fork, "pkg/more.py", "MORE = 1\n")
        commit_all(fork, "glue: more")
        name = "patches/0003-glue-more.patch"
    else:
        line = "1s" if changed == "another" else "2s"
        subprocess.run(["git", "rebase", "-q", "-i", "upstream/main"], cwd=fork, check=True,
                       env={**os.environ, "GIT_SEQUENCE_EDITOR": f"sed -i {line}/^pick/edit/"})
        edited = "setup.py" if changed == "another" else "pkg/__init__.py"
        write(fork, edited, (fork / edited).read_text() + "# amended\n")
        git(fork, "commit", "-q", "--amend", "--no-edit", "-a")
        git(fork, "rebase", "--continue")
        name = name if changed == "another" else "patches/0002-glue-scoped-compat.patch"
    assert pq(fork, "apply", ok=False).exit_code == 2  # it would drop the changed commit
    refused = pq(fork, "export", ok=False)
    assert refused.exit_code == 2, refused.output
    assert f"and the commit of {name} changed too" in refused.output, refused.output
    assert "`pq apply --branch NEW`" in refused.output, refused.output


def test_patch_that_no_longer_applies_is_refused(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    patch = fork / "patches/0002-glue-scoped-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"-    return x\n", b"-    return y\n"))
    commit_all(fork, "break the patch")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {},
                   "[export] patches/0002-glue-scoped-compat.patch does not match its commit")
    data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
    assert {c["name"]: c["status"] for c in data["checks"]}["apply"] == "not-run"


def test_apply_compares_the_rebuilt_tree_without_the_queue_files(tmp_path: Path) -> None:
    """The apply check's tree comparison, queue files left out: the pushed tree passes, and
    a tree with one file more than the patches rebuild is named, file by file."""
    from pq.git.repo import Git
    from pq.git.trees import Trees
    from pq.push import checks, registry

    fork, _ = make_pushable(tmp_path)
    repo = Git.open(fork)
    ctx = registry.load_context(repo, repo.resolve("HEAD"), "refs/heads/paddle")
    ctx.decide("export", registry.PASSED)
    assert checks.check_apply(repo, ctx) == []
    extra = Trees(repo).edit(ctx.tree, {"pkg/extra.py": ("100644", repo.write_blob(b"x\n"))})
    ctx.tree = extra
    failures = checks.check_apply(repo, ctx)
    assert [f.check for f in failures] == ["apply"]
    assert "pkg/extra.py" in failures[0].message and "differ" in failures[0].message


def test_the_apply_check_refuses_a_patch_file_git_would_not_commit(tmp_path: Path) -> None:
    """A NUL byte in a patch file's message: `pq apply` refuses it (git refuses such a
    commit), and so does the apply check, whose one-go `git apply` read only the diffs
    and said "passed"."""
    from pq.git.repo import Git
    from pq.push import checks, registry

    fork, _ = make_pushable(tmp_path)
    name = sorted(p.name for p in (fork / "patches").iterdir())[0]
    data = (fork / "patches" / name).read_bytes()
    head, sep, rest = data.partition(b"\n\n")
    (fork / "patches" / name).write_bytes(head + sep + b"a NUL \0 here\n\n" + rest)
    commit_all(fork, "pq: a hand edit")
    repo = Git.open(fork)
    ctx = registry.load_context(repo, repo.resolve("HEAD"), "refs/heads/paddle")
    ctx.decide("export", registry.PASSED)
    failures = checks.check_apply(repo, ctx)
    assert [f.check for f in failures] == ["apply"]
    assert f"patches/{name}:" in failures[0].message and "NUL byte" in failures[0].message


def in_first_entry(fork: Path, lines: str) -> None:
    """series.yaml with `lines` added to its first patch entry (after its layer)."""
    text = (fork / "series.yaml").read_text()
    end = text.index("\n", text.index("layer:", text.index("  - name: ")))
    (fork / "series.yaml").write_text(text[:end] + lines + text[end:])


def test_a_workaround_block_no_command_can_read_fails_the_series_check(
        tmp_path: Path) -> None:
    """An unknown key in a workaround block: every command refuses the series (exit 2 for
    `pq export`, `pq audit`, `pq series`), and the check names it as the series' failure."""
    fork, _ = make_pushable(tmp_path)
    in_first_entry(fork, "\n    workaround:\n      kind: compat-gap\n      owner: team-x")
    for command in (("export", "--commit"), ("series",), ("audit", "workarounds"), ("report",),
                    ("apply", "-b", "applied")):
        refused = pq(fork, *command, ok=False)
        assert refused.exit_code == 2 and "unknown key `owner`" in refused.output, command
    commit_all(fork, "a workaround block by hand")
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 1, result.output
    assert "failed      series" in result.output and "unknown key `owner`" in result.output
    assert "series.yaml has errors pq refuses:" in result.output
    assert "does not match its series" not in result.output
    data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
    assert data["consistent"] is False and data["audit_unreadable"] == 0


def test_an_acknowledgement_the_audit_cannot_read_is_no_branch_mismatch(
        tmp_path: Path) -> None:
    """An `acknowledged:` entry naming no rule stops the audit (exit 2 for `pq audit`), while
    every consistency check passes: its own group, not "the branch does not match"."""
    fork, _ = make_pushable(tmp_path)
    in_first_entry(fork, "\n    acknowledged:\n      - {rule: WA999, reason: reviewed}")
    pq(fork, "export", "--commit")
    assert pq(fork, "audit", "workarounds", ok=False).exit_code == 2
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 1, result.output
    assert "the workaround audit cannot read the series:" in result.output
    assert "does not match its series" not in result.output and "WA999" in result.output
    data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
    assert (data["consistent"], data["policy_findings"], data["audit_unreadable"]) == (
        True, 0, 1)


def test_a_queue_path_that_is_a_pattern_is_matched_as_git_matches_it(tmp_path: Path) -> None:
    """`queue_paths: ["notes/*.md"]`: the export leaves the matching files out as pathspecs,
    and so does the apply check's comparison (a literal lookup found no `notes/*.md`)."""
    fork, _ = make_pushable(tmp_path)
    with open(fork / "series.yaml", "a") as f:
        f.write('queue_paths:\n  - "notes/*.md"\n')
    write(fork, "notes/a.md", "n\n")
    commit_all(fork, "pq: notes")
    pq(fork, "export")
    data = json.loads(pq(fork, "check", "--json").stdout)
    assert data["failures"] == [], data
    assert {c["name"]: c["status"] for c in data["checks"]}["apply"] == "passed"


def test_skipping_export_skips_apply_which_would_fail(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fork, _ = make_pushable(tmp_path)
    patch = fork / "patches/0002-glue-scoped-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"-    return x\n", b"-    return y\n"))
    commit_all(fork, "break the patch")
    monkeypatch.setenv("PQ_SKIP", "export")
    data = json.loads(pq(fork, "check", "--json").stdout)
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert statuses["export"] == statuses["apply"] == "skipped"
    assert data["failures"] == [] and statuses["series"] == "passed"


def test_plain_git_rebase_leaves_a_stale_base(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream moved\n")
    commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "rebase", "-q", "upstream/main")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "[base] stale base: series.yaml records base",
                   "newer upstream/main commit(s)",
                   "fix: pq init --force --upstream upstream/main --commit")
    assert "[export]" not in result.stderr  # one clear message, not a cascade
    pq(fork, "init", "--force", "--upstream", "upstream/main", "--commit")
    ok = push(fork, "origin", "paddle")
    assert ok.returncode == 0, ok.stderr


def test_a_cached_verdict_is_not_reused_once_the_upstream_ref_moved(tmp_path: Path) -> None:
    """The base check finds upstream commits past the recorded base through the upstream
    ref: a verdict cached before `git fetch` moved it is not reused after."""
    fork, remote = make_pushable(tmp_path)
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream moved\n")
    moved = commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", str(up), "main")  # FETCH_HEAD only: upstream/main stays
    git(fork, "rebase", "-q", "FETCH_HEAD")
    pq(fork, "export", "--commit")
    ok = push(fork, "origin", "paddle")
    assert ok.returncode == 0, ok.stderr
    assert "cached" in pq(fork, "check").output
    git(fork, "fetch", "-q", "upstream")
    assert git(fork, "rev-parse", "upstream/main") == moved
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 1 and "stale base" in result.output
    assert "cached" not in result.output


# -- the export check and pq's export cache: a commit pq just wrote (a rebase's landing,
# `pq export --commit`) passes without the branch being exported again, with the verdict
# the full check gives; anything else is exported and compared in full.


def _fork_rebased(tmp_path: Path) -> Path:
    """The pushable fork, rebased by pq onto an upstream that moved."""
    fork, _ = make_pushable(tmp_path)
    upstream = tmp_path / "upstream"
    write(upstream, "README.md", "upstream, moved on\n")
    commit_all(upstream, "upstream: touch the readme")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    return fork


def _check(fork: Path, monkeypatch: pytest.MonkeyPatch, *args: str,
           ok: bool = True) -> tuple[dict[str, object], list[str]]:
    """`pq check --json ARGS`, and the git commands it ran that export the branch again
    (a `git diff-tree --stdin -p` of every commit)."""
    trace = fork.parent / "git-trace.txt"
    trace.unlink(missing_ok=True)
    monkeypatch.setenv("GIT_TRACE", str(trace))
    try:
        result = pq(fork, "check", "--json", *args, ok=ok)
    finally:
        monkeypatch.delenv("GIT_TRACE")
    ran = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    return json.loads(result.stdout), [line for line in ran
                                       if "diff-tree --stdin" in line and " -p " in line]


def _statuses(report: dict[str, object]) -> dict[str, str]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return {c["name"]: c["status"] for c in checks}


def test_the_commit_a_rebase_landed_passes_without_exporting_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fork = _fork_rebased(tmp_path)
    cached, exported = _check(fork, monkeypatch)
    assert cached["ok"] is True and not cached["cached"]
    assert exported == []  # the landing remembered what exporting its commit gives
    # --no-cache trusts neither cache: the branch is exported again, same verdict.
    full, exported = _check(fork, monkeypatch, "--no-cache")
    assert full["ok"] is True and len(exported) == 1
    assert _statuses(full) == _statuses(cached)
    assert all(s == "passed" for s in _statuses(full).values())


def test_a_commit_pq_did_not_write_is_exported_and_compared(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fork = _fork_rebased(tmp_path)
    assert (fork / Path(".git/pq/export-cache.json")).is_file()
    # A patch file edited by hand and committed: another commit, other bytes; the cache
    # vouches for neither, and the full check names the edit.
    patch = fork / "patches/0002-glue-scoped-compat.patch"
    patch.write_bytes(patch.read_bytes().replace(b"return x  # glue", b"return x  # hand"))
    commit_all(fork, "tweak the patch by hand")
    report, exported = _check(fork, monkeypatch, ok=False)
    assert exported  # (and again at the commit that last changed the file, to say which)
    assert _statuses(report)["export"] == "failed"
    assert "edited by hand" in json.dumps(report["failures"])
    # A source commit amended without `pq export`: the queue's bytes are the ones pq wrote,
    # the commit is not.
    git(fork, "reset", "-q", "--hard", "HEAD~1")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x  # amended\n")
    git(fork, "add", "pkg/__init__.py")
    git(fork, "commit", "-q", "--amend", "--no-edit", "--no-verify")
    report, exported = _check(fork, monkeypatch, ok=False)
    assert len(exported) == 1 and _statuses(report)["export"] == "failed"
    # Exported and committed by pq again: remembered, and passing without a re-export.
    pq(fork, "export", "--commit")
    report, exported = _check(fork, monkeypatch)
    assert report["ok"] is True and exported == []



def test_an_export_cache_of_other_pq_code_vouches_for_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key holds pq's code (its modules' sizes and times), not only its version number:
    an upgraded or edited pq exports again what an older one remembered."""
    from pq import installed

    fork = _fork_rebased(tmp_path)
    assert _check(fork, monkeypatch, "--no-cache")[1]  # (the hook's own cache stays empty)
    assert _check(fork, monkeypatch)[1] == []
    assert _check(fork, monkeypatch)[1] == []  # the hook's cache: no check ran
    monkeypatch.setattr(installed, "code_digest", lambda: b"another build of the same version")
    # Neither the pass just remembered (the hook's cache) nor the export vouches for it.
    report, exported = _check(fork, monkeypatch)
    assert report["ok"] is True and exported


@pytest.mark.parametrize("overlay", ["replace", "graft"])
def test_replace_refs_and_grafts_do_not_change_what_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlay: str) -> None:
    """`git replace` shows another commit in place of a patch commit, a graft hides one,
    but a push sends the commits themselves: the checks judge those, with or without pq's
    caches."""
    fork, remote = make_pushable(tmp_path)
    first = git(fork, "rev-parse", "HEAD~2")
    if overlay == "replace":
        other = git(fork, "commit-tree", f"{first}^{{tree}}", "-p", f"{first}^", "-m",
                    "build: reworded by replace")
        git(fork, "replace", first, other)
        assert git(fork, "log", "-1", "--format=%s", first) == "build: reworded by replace"
    else:  # the second patch commit grafted straight onto the base
        base = git(fork, "rev-parse", f"{first}^")
        (fork / ".git/info").mkdir(exist_ok=True)
        (fork / ".git/info/grafts").write_text(f"{git(fork, 'rev-parse', 'HEAD~1')} {base}\n")
        assert first not in git(fork, "rev-list", "HEAD")
    for args in ((), ("--no-cache",)):
        report, _ = _check(fork, monkeypatch, *args)
        assert report["ok"] is True, report
    if overlay == "graft":  # git's own push leaves the hidden commit out of the pack
        return
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    assert git(remote, "log", "-1", "--format=%s", "paddle~2") == \
        "build: enable compat in setup.py"  # the remote has no replace ref


@pytest.mark.parametrize("overlay", ["replace", "replace-packed", "graft"])
def test_an_export_made_through_a_replace_ref_or_graft_vouches_for_nothing(
        tmp_path: Path, overlay: str) -> None:
    """`pq export --commit` reads commits as git shows them: through `git replace` (or a
    graft) it wrote a patch from the replaced message, or left a hidden commit out, and
    remembered that as the export of the branch; the hook, which reads the commits as a
    push sends them, then took the export check as passed from that memory."""
    fork, remote = make_pushable(tmp_path)
    first = git(fork, "rev-parse", "HEAD~2")
    if overlay.startswith("replace"):
        other = git(fork, "commit-tree", f"{first}^{{tree}}", "-p", f"{first}^", "-m",
                    "build: reworded by replace")
        git(fork, "replace", first, other)
        if overlay == "replace-packed":
            git(fork, "pack-refs", "--all")
            assert not list((fork / ".git/refs/replace").iterdir())
    else:  # a commit hidden: the one after it grafted onto the tip before it
        before = git(fork, "rev-parse", "HEAD")
        write(fork, "pkg/hidden.py", "import paddle  # hidden\n")
        commit_all(fork, "python-glue: hidden edit")
        write(fork, "pkg/seen.py", "import paddle  # seen\n")
        seen = commit_all(fork, "python-glue: seen edit")
        (fork / ".git/info").mkdir(exist_ok=True)
        (fork / ".git/info/grafts").write_text(f"{seen} {before}\n")
    pq(fork, "export", "--commit")
    git(fork, "replace", "-d", first) if overlay.startswith("replace") else (
        fork / ".git/info/grafts").unlink()
    result = push(fork, "origin", "paddle")
    assert result.returncode != 0 and "[export]" in result.stderr, result.stderr


def test_a_push_with_a_work_tree_elsewhere_is_checked_from_its_git_dir(
        tmp_path: Path) -> None:
    """`git --git-dir=.git --work-tree=<another folder> push` (a dotfiles-style checkout):
    the hook tried to open the work tree as the repository and refused every push, saying
    "not a git repository"; the checks read commits only."""
    fork, remote = make_pushable(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(["git", f"--git-dir={fork / '.git'}", f"--work-tree={elsewhere}",
                             "push", "-q", "origin", "paddle:x"], cwd=elsewhere,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "series consistent" in result.stderr
    assert remote_refs(remote)["refs/heads/x"] == git(fork, "rev-parse", "paddle")


def test_a_merge_of_upstream_names_a_fix_that_works(tmp_path: Path) -> None:
    """A branch that merged upstream by plain git was told `pq init --force`, which refuses
    merged history."""
    fork, remote = make_pushable(tmp_path)
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream moved\n")
    commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", "upstream")
    before = git(fork, "rev-parse", "HEAD")
    git(fork, "merge", "-q", "--no-edit", "upstream/main")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "the branch merged 1 newer upstream/main commit(s)",
                   "fix: undo the merge (`git reset --keep` to the commit before it), then "
                   "`pq rebase upstream/main`")
    git(fork, "reset", "-q", "--keep", before)
    pq(fork, "rebase", "upstream/main")
    ok = push(fork, "origin", "paddle")
    assert ok.returncode == 0, ok.stderr


def test_a_merge_of_a_topic_names_the_series_fix_not_import(tmp_path: Path) -> None:
    """A topic branch merged with `--no-ff` into a branch with a series: the hook named
    `pq import`, the fix for a branch with no series yet, which then refuses ("already
    has a series"); `pq export` on the same commit names the merge's undo."""
    fork, remote = make_pushable(tmp_path)
    before = git(fork, "rev-parse", "HEAD")
    git(fork, "switch", "-q", "-c", "topic")
    write(fork, "notes.txt", "topic\n")
    commit_all(fork, "glue: notes")
    git(fork, "switch", "-q", "paddle")
    git(fork, "merge", "-q", "--no-ff", "--no-edit", "topic")
    result = push(fork, "origin", "paddle")
    assert result.returncode != 0 and "is a merge" in result.stderr, result.stderr
    assert "pq import" not in result.stderr, result.stderr
    assert f"fix: undo the merge (`git reset --keep {before[:12]}`" in result.stderr
    git(fork, "reset", "-q", "--keep", before)
    assert push(fork, "origin", "paddle").returncode == 0


def test_a_shallow_clone_is_told_to_unshallow(tmp_path: Path) -> None:
    fork, _ = make_pushable(tmp_path)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "-o", "src", "-b", "paddle", f"file://{fork}",
        str(shallow))
    (tmp_path / "s").mkdir()
    remote = origin_with_hook(tmp_path / "s", shallow)
    result = push(shallow, "origin", "paddle")
    assert_refused(result, remote, {}, "is not in this shallow clone",
                   "fix: git fetch --unshallow, then push (or `pq check`) again")
    # pq export there says the same, not "rebased outside pq: `pq init --force`" (which
    # would record a wrong base).
    export = pq(shallow, "export", ok=False)
    assert export.exit_code == 2
    assert "is not in this shallow clone (git fetch --unshallow, then run it again)" in \
        export.output and "init --force" not in export.output, export.output
    git(shallow, "fetch", "-q", "--unshallow")
    ok = push(shallow, "origin", "paddle")
    assert ok.returncode == 0, ok.stderr


def test_base_that_is_not_an_ancestor_is_refused(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream moved\n")
    elsewhere = commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", "upstream")
    text = (fork / "series.yaml").read_text()
    old = git(fork, "merge-base", "HEAD", "upstream/main")
    (fork / "series.yaml").write_text(text.replace(old, elsewhere))
    commit_all(fork, "point the base elsewhere")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, f"records base {elsewhere[:12]}, which is not an "
                   "ancestor of the pushed tip")


def test_series_that_does_not_load_is_refused(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace("layer: build", "layer: nonsense"))
    commit_all(fork, "bad layer")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "[series] series.yaml does not load",
                   "unknown layer 'nonsense'")


def test_series_metadata_committed_without_export_is_named_as_such(tmp_path: Path) -> None:
    """A workaround block added to series.yaml and committed without `pq export`: only the
    patch file's header lines are stale, and the check says so (not "amended")."""
    fork, remote = make_pushable(tmp_path)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace(
        "layer: build", "layer: build\n    workaround:\n      kind: compat-gap", 1))
    commit_all(fork, "series: a workaround block")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "header lines `Forwarded:`, `X-Pq-Workaround:` do not "
                   "match its entry in series.yaml", "fix: pq export --commit")
    assert "reworded or amended" not in result.stderr
    # A summary edited so: named as the summary, not as a layer or a workaround block.
    pq(fork, "export", "--commit")
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(re.sub(r"(?m)^( +summary: ).*$", r"\1a summary of mine",
                                             text, count=1))
    commit_all(fork, "series: a summary")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "header lines `Description:` (the summary) do not match")


def test_audit_error_is_refused(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    text = (fork / "series.yaml").read_text()
    (fork / "series.yaml").write_text(text.replace(
        "layer: build", "layer: build\n    workaround:\n      kind: compat-gap", 1))
    pq(fork, "export", "--commit")  # the patch's DEP-3 headers follow the new block
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "[audit]", "WA001", "fix: add `covers:`",
                   "policy findings of the workaround audit",
                   "`acknowledged: [{rule: WA001, reason: \"...\"}]`")  # a rule it found
    skipped = push(fork, "origin", "paddle", PQ_SKIP="audit")
    assert skipped.returncode == 0, skipped.stderr
    assert "WARNING: PQ_SKIP=audit: skipping the check audit" in skipped.stderr
    assert "NOT fully verified" in skipped.stderr


def test_a_patch_file_saved_with_crlf_is_named_with_a_fix_that_works(tmp_path: Path
                                                                    ) -> None:
    """The same patch in other bytes (an editor saved it with CRLF, committed): not "the
    header lines do not match series.yaml"; `pq export --commit`, which it names, writes
    it back (nothing of it is lost, so export does not refuse it as a hand edit)."""
    fork, _ = make_pushable(tmp_path)
    patch = next((fork / "patches").glob("0001-*.patch"))
    lf = patch.read_bytes()
    patch.write_bytes(lf.replace(b"\n", b"\r\n"))
    commit_all(fork, "an editor saved the patch with CRLF")
    check = pq(fork, "check", ok=False)
    assert f"[export] patches/{patch.name} says what pq writes for its commit, in other " \
           "bytes" in check.output, check.output
    assert "fix: pq export --commit" in check.output and "header lines" not in check.output
    pq(fork, "export", "--commit")
    assert patch.read_bytes() == lf
    pq(fork, "check")


def test_a_push_from_a_bare_repository_is_checked_by_its_commits(tmp_path: Path) -> None:
    """A mirror (`git clone --mirror`) pushing through pq's hook: a ref without series.yaml
    passes, a consistent series passes, an unexported commit is refused, as from a clone
    with a working tree (the checks read commits; it was refused, exit 2, for any ref)."""
    fork, _ = make_pushable(tmp_path)
    mirror, dest = tmp_path / "mirror.git", tmp_path / "dest.git"
    git(tmp_path, "clone", "-q", "--mirror", str(fork), str(mirror))
    git(tmp_path, "init", "-q", "--bare", str(dest))
    git(mirror, "config", "core.hooksPath", str(Path(__file__).resolve().parents[2] / "hooks"))
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for ref in ("main", "paddle"):
        ok = push(mirror, str(dest), ref, **env)
        assert ok.returncode == 0, ok.stderr
    write(fork, "pkg/extra.py", "x = 1\n")
    commit_all(fork, "glue: unexported")
    git(mirror, "fetch", "-q", str(fork), "+paddle:paddle")
    refused = push(mirror, str(dest), "paddle", **env)
    assert refused.returncode != 0
    assert "is not in the series: an unexported edit" in refused.stderr, refused.stderr


def test_a_markers_verdict_that_read_local_attributes_is_not_kept(tmp_path: Path) -> None:
    """Marker-like lines let through by a `conflict-marker-size` in .git/info/attributes
    (this clone's own setting, not the commit's): once it is gone, the next check reads
    them again and refuses, instead of reusing the cached pass."""
    fork, _ = make_pushable(tmp_path)
    write(fork, "data.txt", "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    commit_all(fork, "glue: merge tool test data")
    pq(fork, "export", "--commit")
    assert pq(fork, "check", ok=False).exit_code == 1  # markers, as git diff --check says
    write(fork / ".git" / "info", "attributes", "data.txt conflict-marker-size=10\n")
    pq(fork, "check")
    (fork / ".git" / "info" / "attributes").unlink()
    again = pq(fork, "check", ok=False)
    assert again.exit_code == 1 and "adds a conflict marker at data.txt:1" in again.output, \
        again.output


def test_markers_narrower_than_seven_are_found_where_the_attribute_says_so(
        tmp_path: Path) -> None:
    """With `conflict-marker-size=3`, git writes (and `git diff --check` finds) `<<<`
    markers; the check read only files with a 7-wide one, and let them through."""
    fork, _ = make_pushable(tmp_path)
    write(fork, ".gitattributes", "narrow.txt conflict-marker-size=3\n")
    write(fork, "narrow.txt", "<<< ours\nx\n===\ny\n>>> theirs\n")
    commit_all(fork, "glue: a conflict committed")
    pq(fork, "export", "--commit")
    refused = pq(fork, "check", ok=False)
    assert refused.exit_code == 1 and "adds a conflict marker at narrow.txt:1" in \
        refused.output, refused.output


def test_a_path_and_a_subject_in_a_refusal_stay_on_one_line(tmp_path: Path) -> None:
    """A file name with a newline (and an escape sequence) reached the message raw, over
    two lines, one of which could read "series consistent"; a 200,000-character subject
    was printed whole. Paths are quoted as git quotes them, subjects cut."""
    fork, _ = make_pushable(tmp_path)
    name = "x\npq: paddle: series consistent\x1b[8m.txt"
    write(fork, name, "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    commit_all(fork, "glue: a conflict committed")
    pq(fork, "export", "--commit")
    write(fork, "other.txt", "unexported\n")
    write(tmp_path, "message", "glue: " + "long " * 40_000 + "\n")
    git(fork, "add", "other.txt")
    git(fork, "commit", "-q", "-F", str(tmp_path / "message"))
    refused = pq(fork, "check", ok=False)
    lines = refused.output.splitlines()
    marker = next(ln for ln in lines if "[markers]" in ln)
    assert 'at "x\\npq: paddle: series consistent\\033[8m.txt":1' in marker, marker
    assert "\x1b" not in refused.output
    export = next(ln for ln in lines if "[export]" in ln)
    assert len(export) < 300 and "long lon...')" in export, export[:400]


def test_an_audit_that_cannot_read_a_patch_file_is_no_policy_finding(tmp_path: Path
                                                                    ) -> None:
    """A patch file that does not parse stops the audit: listed with the branch's
    problems, and no "acknowledge it" line (there is no rule to acknowledge)."""
    fork, _ = make_pushable(tmp_path)
    patch = next((fork / "patches").glob("0001-*.patch"))
    text = patch.read_text()
    date = next(ln for ln in text.splitlines() if ln.startswith("Date: "))
    patch.write_text(text.replace(date, "Date: yesterday"))
    commit_all(fork, "a patch file with a bad date")
    check = pq(fork, "check", ok=False)
    assert check.exit_code != 0
    out = check.output
    line = text.splitlines().index(date) + 1  # the Date: line's own number
    assert f"[audit] patches/{patch.name}:{line}: bad Date: header 'yesterday'" in out, out
    assert out.index("[audit]") > out.index("the branch does not match its series:")
    assert "policy findings" not in out and "acknowledged:" not in out, out


@pytest.mark.skipif(importlib.util.find_spec("pq.gate.api") is None,
                    reason="pq.gate.api (record_ok) is not in this checkout yet")
def test_missing_gate_record_is_refused(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    with open(fork / "series.yaml", "a") as f:
        f.write("gate:\n  stages:\n    - name: unit\n      run: 'true'\n"
                "  required_for_push: [unit]\n")
    commit_all(fork, "require the unit stage before a push")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "[gate] the stages required for a push (unit) have "
                   "not passed", "fix: pq gate", "the branch matches its series\n",
                   "no gate record shows the stages series.yaml requires for a push passed:")
    assert "does not match" not in result.stderr, result.stderr  # it does: no record, is all
    check = pq(fork, "check", "--json", ok=False)
    report = json.loads(check.stdout)
    assert check.exit_code == 1 and report["consistent"] and report["gate_missing"] == 1, \
        check.stdout
    text = pq(fork, "check", ok=False).stdout
    assert "the push is refused for the missing gate record above" in text, text
    skipped = push(fork, "origin", "paddle", PQ_SKIP="gate")
    assert skipped.returncode == 0 and "PQ_SKIP=gate" in skipped.stderr


def test_a_pass_cached_on_a_gate_record_is_not_reused_once_the_record_is_gone(
        tmp_path: Path) -> None:
    """The gate check reads the records (git notes) this repository has: a pass remembered
    while a record covered the commit let a push through after the record was removed (a
    forced fetch of the team's notes does the same), which `pq check --no-cache` refused."""
    fork, _ = make_pushable(tmp_path)
    with open(fork / "series.yaml", "a") as f:
        f.write("gate:\n  stages:\n    - name: unit\n      run: 'true'\n"
                "  required_for_push: [unit]\n")
    commit_all(fork, "require the unit stage before a push")
    pq(fork, "gate")
    assert push(fork, "origin", "paddle").returncode == 0
    assert "cached" in push(fork, "origin", "paddle:copy").stderr
    git(fork, "notes", "--ref", "pq-gate", "remove", "paddle")
    refused = push(fork, "origin", "paddle:copy2")
    assert refused.returncode != 0 and "checks passed" not in refused.stderr, refused.stderr
    assert "[gate] the stages required for a push (unit) have not passed" in refused.stderr


@pytest.mark.parametrize("block,needle", [
    ("gate: 5\n", "`gate` must be a mapping with `stages`"),
    ("gate:\n  stages:\n    - name: unit\n      run: 'true'\n  required_for_push: [x]\n",
     "`required_for_push` names no stage 'x'"),
])
def test_a_gate_block_pq_gate_refuses_is_refused_as_an_error_of_the_file(
        tmp_path: Path, block: str, needle: str) -> None:
    """A `gate` block `pq gate` calls a configuration error, required for a push or not:
    the push is refused, and the error is the file's, not a mismatch with the branch."""
    fork, remote = make_pushable(tmp_path)
    with open(fork / "series.yaml", "a") as f:
        f.write(block)
    commit_all(fork, "a gate block")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {}, "series.yaml has errors pq refuses:", needle,
                   "fix: fix it as the message says")
    assert "does not match its series" not in result.stderr
    check = pq(fork, "check", ok=False)
    assert check.exit_code == 1 and "failed      gate" in check.output
    assert "series.yaml has errors pq refuses:" in check.output and needle in check.output
    assert "does not match its series" not in check.output


def test_skip_all_is_loud_and_unknown_names_are_named(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    result = push(fork, "origin", "paddle", PQ_SKIP="all,gates")
    assert result.returncode == 0, result.stderr
    assert "WARNING: PQ_SKIP=all,gates: skipping every pq check" in result.stderr
    assert "PQ_SKIP names no check called gates" in result.stderr
    assert "refs/heads/paddle" in remote_refs(remote)
    # Nothing checked: not "series consistent (0 checks passed, 7 skipped)".
    assert ": not checked (7 skipped, " in result.stderr and "consistent" not in result.stderr
    # A name that is no check skips nothing (it warned "skipping the check ALL").
    write(fork, "pkg/util.py", "changed again\n")
    commit_all(fork, "unexported again")
    result = push(fork, "origin", "paddle", PQ_SKIP="ALL")
    assert_refused(result, remote, remote_refs(remote), "unexported again")
    assert "skipping" not in result.stderr
    assert "PQ_SKIP names no check called ALL, and skips nothing for it (the checks: series, " \
           "base, export" in result.stderr


def test_no_verify_skips_the_hook(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    result = push(fork, "--no-verify", "origin", "paddle")
    assert result.returncode == 0 and "pq:" not in result.stderr
    assert remote_refs(remote) == {"refs/heads/paddle": git(fork, "rev-parse", "HEAD")}


def test_non_pq_branch_and_tag_push_untouched(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    git(fork, "tag", "-a", "-m", "upstream release", "v1", "upstream/main")
    result = push(fork, "origin", "upstream/main:refs/heads/main", "v1")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert set(remote_refs(remote)) == {"refs/heads/main", "refs/tags/v1"}


def test_a_tag_on_an_unexported_commit_is_called_a_tag(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    git(fork, "tag", "v2")
    result = push(fork, "origin", "v2")
    assert_refused(result, remote, {}, "the tagged commit does not match its series",
                   "unexported edit")
    assert "the branch does not match" not in result.stderr


def test_a_tip_without_series_pushed_over_a_pq_branch_is_refused(tmp_path: Path) -> None:
    """A stopped rebase's commit (no series.yaml until it ends) force-pushed over the pq
    branch went through as "not pq's", taking the series off the remote branch."""
    fork, remote = make_pushable(tmp_path)
    assert push(fork, "origin", "paddle").returncode == 0
    before = remote_refs(remote)
    up = tmp_path / "upstream"
    write(up, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x + 0\n")
    commit_all(up, "upstream: touch op")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1  # stopped
    result = push(fork, "-f", "origin", "HEAD:paddle")
    assert_refused(result, remote, before, "the push takes a series off the remote",
                   "the pushed commit has no series.yaml, but paddle on the remote "
                   f"({before['refs/heads/paddle'][:12]}) has one", "git push --no-verify")
    pq(fork, "rebase", "--abort")
    # Without a series on the remote ref, or to a new one, such a tip is not pq's business.
    result = push(fork, "origin", "upstream/main:refs/heads/main", "HEAD~3:refs/heads/old")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert push(fork, "origin", "upstream/main~1:refs/heads/main", "-f").returncode == 0


def test_deletion_passes_even_when_the_local_branch_is_broken(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    assert push(fork, "origin", "paddle").returncode == 0
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    result = push(fork, "origin", ":paddle")
    assert result.returncode == 0, result.stderr
    assert remote_refs(remote) == {}


def test_a_mirror_push_lets_pqs_own_refs_through(tmp_path: Path) -> None:
    """`git push --mirror` sends refs/pq/* too: the tip a `pq apply` replaced (whose patch
    file was hand-edited, so its series does not match) is pq's bookkeeping, not a branch."""
    fork, _ = make_pushable(tmp_path)
    patch = sorted((fork / "patches").iterdir())[0]
    patch.write_bytes(patch.read_bytes().replace(b"paddle.enable_compat()",
                                                  b"paddle.enable_compat()  # edited"))
    commit_all(fork, "a hand edit of a patch file")
    pq(fork, "apply")
    assert git(fork, "for-each-ref", "refs/pq/orig-head/")  # the replaced tip is kept
    backup = tmp_path / "backup.git"
    git(tmp_path, "init", "-q", "--bare", str(backup))
    result = push(fork, "--mirror", str(backup))
    assert result.returncode == 0, result.stderr
    assert git(backup, "rev-parse", "refs/pq/orig-head/paddle") == git(
        fork, "rev-parse", "refs/pq/orig-head/paddle")
    # That tip pushed to a branch is checked as any branch: its patch file was edited.
    result = push(fork, "origin", "refs/pq/orig-head/paddle:refs/heads/old")
    assert result.returncode != 0 and "push refused" in result.stderr, result.stderr


def test_a_clone_without_the_upstream_ref_says_what_it_could_not_check(
        tmp_path: Path) -> None:
    """A clone with no `upstream/main` (CI's, a colleague's): the base check says it could
    not look, and an extra commit's fix does not send upstream commits into the series."""
    fork, remote = make_pushable(tmp_path)
    git(fork, "remote", "rename", "upstream", "up")
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    assert "pq: notice: base: upstream/main (upstream.ref in series.yaml) is not in this " \
           "clone" in result.stderr
    cache = json.loads((fork / ".git" / "pq" / "hook-cache.json").read_text())
    assert cache["passed"][-1]["upstream"] == ["upstream/main", None]  # kept, and dropped
    # once that ref is there (a fetch): its verdict rests on the ref
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "upstream: or is it?")
    result = push(fork, "origin", "paddle")
    assert_refused(result, remote, {"refs/heads/paddle": git(fork, "rev-parse", "paddle~1")},
                   "unexported edit", "pq export --commit, if it is the fork's own; if it "
                   "is an upstream/main commit (the branch was rebased outside pq), fetch "
                   "upstream/main first")


def test_one_bad_ref_refuses_the_whole_push(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    git(fork, "branch", "good")
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    result = push(fork, "origin", "good", "paddle", "upstream/main:refs/heads/main")
    assert_refused(result, remote, {}, "paddle", "unexported edit")
    assert "good " in result.stderr and "series consistent" in result.stderr


def test_hook_checks_the_pushing_worktree_repository(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    git(fork, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"), "paddle")
    wt = tmp_path / "wt"
    write(wt, "pkg/util.py", "changed in a worktree\n")
    commit_all(wt, "unexported, in a worktree")
    (wt / "pkg").joinpath("deep").mkdir()
    result = subprocess.run(["git", "push", "-q", "origin", "other"], check=False,
                            cwd=wt / "pkg/deep",
                            capture_output=True, text=True)
    assert_refused(result, remote, {}, "unexported, in a worktree")


def test_hook_checks_a_push_typed_outside_the_working_tree(tmp_path: Path) -> None:
    """`git --git-dir=fork/.git push` (or GIT_DIR=) runs the hook where it was typed: pq
    opened that folder, "not a git repository", and refused a consistent push."""
    fork, remote = make_pushable(tmp_path)
    git(fork, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"), "paddle")
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def push_from(git_dir: Path, ref: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", f"--git-dir={os.path.relpath(git_dir, outside)}", "push",
                               "-q", str(remote), ref], check=False, cwd=outside,
                              capture_output=True, text=True)

    result = push_from(fork / ".git", "paddle")
    assert result.returncode == 0 and "series consistent" in result.stderr, result.stderr
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    assert_refused(push_from(fork / ".git", "paddle:refs/heads/x"), remote,
                   remote_refs(remote), "unexported")
    wt = tmp_path / "wt"  # a linked worktree's git dir is .git/worktrees/wt
    write(wt, "pkg/util.py", "changed in a worktree\n")
    commit_all(wt, "unexported, in a worktree")
    assert_refused(push_from(fork / ".git" / "worktrees" / "wt", "other"), remote,
                   remote_refs(remote), "unexported, in a worktree")
    # A submodule's git dir (.git/modules/sub) names its working tree in core.worktree.
    superproject = tmp_path / "super"
    git(tmp_path, "init", "-q", str(superproject))
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(fork), "sub")
    sub = superproject / "sub"
    git(sub, "checkout", "-q", "paddle")
    pq(sub, "hook", "install")
    result = push_from(superproject / ".git" / "modules" / "sub", "paddle:refs/heads/sub")
    assert result.returncode != 0 and "unexported" in result.stderr, result.stderr


# -- installing ------------------------------------------------------------------------


def test_install_refuses_a_foreign_hook_unless_forced(tmp_path: Path) -> None:
    fork, _ = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    hook_path = fork / ".git/hooks/pre-push"
    write(hook_path.parent, "pre-push", "#!/bin/sh\nexit 0\n", mode=0o755)
    result = pq(fork, "hook", "install", ok=False)
    assert result.exit_code == 2
    assert "exists and was not written by pq" in result.output and "--chain" in result.output
    assert hook_path.read_text() == "#!/bin/sh\nexit 0\n"
    pq(fork, "hook", "install", "--force")
    assert install.is_ours(hook_path) and hook_path.stat().st_mode & stat.S_IXUSR
    again = pq(fork, "hook", "install")  # its own hook: updated in place
    assert "updated" in again.output
    assert not (fork / ".git/hooks/pre-push.pre-pq").exists()


def test_chain_runs_the_old_hook_first_and_uninstall_restores_it(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    seen = tmp_path / "seen"
    old = f"#!/bin/sh\necho \"$1 $2\" > {seen}\ncat >> {seen}\nexit ${{OLD_EXIT:-0}}\n"
    write(fork / ".git/hooks", "pre-push", old, mode=0o755)
    out = pq(fork, "hook", "install", "--chain").output
    assert "pre-push.pre-pq runs first" in out
    assert (fork / ".git/hooks/pre-push.pre-pq").read_text() == old
    refused = push(fork, "origin", "paddle", OLD_EXIT="3")
    assert refused.returncode != 0 and "the chained hook" in refused.stderr
    assert remote_refs(remote) == {}
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    tip = git(fork, "rev-parse", "HEAD")
    assert seen.read_text().splitlines() == [
        f"origin {tmp_path / 'remote.git'}", f"refs/heads/paddle {tip} refs/heads/paddle "
        + "0" * 40]
    assert "series consistent" in result.stderr
    out = pq(fork, "hook", "uninstall").output
    assert "restored" in out
    assert (fork / ".git/hooks/pre-push").read_text() == old
    assert not (fork / ".git/hooks/pre-push.pre-pq").exists()


def test_a_hook_manager_that_runs_pqs_hook_in_turn_is_no_loop(tmp_path: Path) -> None:
    """A hook manager set aside by `--chain` that runs pq's hook from its own (pre-commit in
    its migration mode runs `pre-push.legacy`, pq's): pq's hook, run so, chains no hook. It
    ran the manager again, round and round (here cut at 4 rounds: the push was refused)."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    rounds = tmp_path / "rounds"
    manager = (f"#!/bin/sh\necho x >> {rounds}\n"
               f"[ $(wc -l < {rounds}) -gt 4 ] && exit 9\n"
               'exec "$(dirname "$0")/pre-push" "$@"\n')
    write(fork / ".git/hooks", "pre-push", manager, mode=0o755)
    pq(fork, "hook", "install", "--chain")
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    assert rounds.read_text() == "x\n"
    assert "series consistent" in result.stderr


def test_a_chained_hook_killed_by_a_signal_is_named_so(tmp_path: Path) -> None:
    """Its exit code is the shell's 128 + N, not -N cut to a byte (241 for SIGTERM)."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    write(fork / ".git/hooks", "pre-push", "#!/bin/sh\nkill -TERM $$\n", mode=0o755)
    pq(fork, "hook", "install", "--chain")
    hook = fork / ".git/hooks/pre-push"
    ran = subprocess.run([str(hook), "origin", str(remote)], cwd=fork, input="",
                         capture_output=True, text=True, check=False)
    assert ran.returncode == 143
    assert "failed (killed by signal 15); push refused" in ran.stderr


def test_the_checks_run_no_hook_of_the_users_on_their_private_index(tmp_path: Path) -> None:
    """The checks build trees in an index of their own: git ran the user's
    post-index-change hook for each of its writes (three per push)."""
    fork, remote = make_pushable(tmp_path)
    ran = tmp_path / "ran"
    write(fork / ".git/hooks", "post-index-change", f"#!/bin/sh\necho x >> {ran}\n",
          mode=0o755)
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr
    assert not ran.exists()


def test_a_hook_the_fork_tracks_is_left_alone_and_its_fix_works(tmp_path: Path) -> None:
    """core.hooksPath names a folder of the fork's (husky's `.husky/`): pq's hook written
    there (or `--chain`'s move) was an uncommitted change, which `pq rebase` refused and
    whose `git stash` took pq's hook away. Install refuses now; calling pq from the
    tracked hook, its fix, checks the push."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    write(fork, ".githooks/pre-push", "#!/bin/sh\necho mine >&2\n", mode=0o755)
    git(fork, "config", "core.hooksPath", ".githooks")
    commit_all(fork, "build: the fork's own hooks")
    pq(fork, "export", "--commit")
    for how in ([], ["--chain"], ["--force"]):
        refused = pq(fork, "hook", "install", *how, ok=False)
        assert refused.exit_code == 2 and "is a file of the fork's" in refused.output
    assert git(fork, "status", "--porcelain") == ""
    with (fork / ".githooks/pre-push").open("a") as f:
        f.write(f'exec {sys.executable} -m pq hook run "$@"\n')
    commit_all(fork, "build: pq checks pushes")
    git(fork, "commit", "-q", "--amend", "-m", "build: pq checks pushes, unexported")
    refused = push(fork, "origin", "paddle")
    assert refused.returncode != 0 and "mine" in refused.stderr, refused.stderr
    assert "push refused" in refused.stderr
    pq(fork, "export", "--commit")
    done = push(fork, "origin", "paddle")
    assert done.returncode == 0 and "series consistent" in done.stderr, done.stderr


def test_a_chained_hook_that_is_not_executable_is_ignored_with_gits_hint(tmp_path: Path
                                                                         ) -> None:
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    write(fork / ".git/hooks", "pre-push", "#!/bin/sh\nexit 3\n", mode=0o644)
    pq(fork, "hook", "install", "--chain")
    result = push(fork, "origin", "paddle")
    assert result.returncode == 0, result.stderr  # git would not run it either
    assert "hint: The '.git/hooks/pre-push.pre-pq' hook was ignored because it's not set " \
        "as executable." in result.stderr
    assert "series consistent" in result.stderr
    git(fork, "config", "advice.ignoredHook", "false")
    git(fork, "push", "-q", "origin", ":paddle")
    again = push(fork, "origin", "paddle")
    assert again.returncode == 0 and "hint:" not in again.stderr, again.stderr


def test_install_refuses_a_core_hooks_path_that_turns_hooks_off(tmp_path: Path) -> None:
    """core.hooksPath empty or /dev/null (the usual ways to turn hooks off): pq wrote the
    hook into the working tree (git looks for `/pre-push`), where no push ran it, or told
    the user to move /dev/null aside."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    for value in ("", "/dev/null"):
        git(fork, "config", "core.hooksPath", value)
        refused = pq(fork, "hook", "install", ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"core.hooksPath is {value!r}, which turns git's hooks off" in refused.output
        assert not (fork / "pre-push").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_install_names_a_hooks_folder_that_cannot_be_made(tmp_path: Path) -> None:
    """core.hooksPath under /proc: no folder can be made there, and that was pq's internal
    error (FileNotFoundError)."""
    fork, _ = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    git(fork, "config", "core.hooksPath", "/proc/self/pq-hooks")
    refused = pq(fork, "hook", "install", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "the hooks folder /proc/self/pq-hooks cannot be made" in refused.output
    assert "internal error" not in refused.output


def test_install_honours_core_hooks_path(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    git(fork, "config", "core.hooksPath", ".githooks")
    out = pq(fork, "hook", "install").output
    assert str(fork / ".githooks/pre-push") in out
    assert install.is_ours(fork / ".githooks/pre-push")
    # In the working tree: another worktree looks in its own .githooks (said, not silent).
    assert "(.githooks/pre-push): another worktree of this repository looks in its own " \
           "folder; run `pq hook install` there too" in out
    for shared in (tmp_path / "shared-hooks", fork / ".githooks"):  # absolute: one folder
        git(fork, "config", "core.hooksPath", str(shared))
        assert "note:" not in pq(fork, "hook", "install").output  # every worktree looks there
        assert install.is_ours(shared / "pre-push")
    git(fork, "config", "core.hooksPath", ".githooks")
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    assert_refused(push(fork, "origin", "paddle"), remote, {}, "unexported edit")


def test_uninstall_leaves_a_foreign_hook_alone(tmp_path: Path) -> None:
    fork, _ = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    write(fork / ".git/hooks", "pre-push", "#!/bin/sh\nexit 0\n", mode=0o755)
    assert "not written by pq" in pq(fork, "hook", "uninstall").output
    assert (fork / ".git/hooks/pre-push").exists()


def test_shipped_hook_script_is_the_installed_one_without_an_interpreter() -> None:
    shipped = ROOT / "hooks/pre-push"
    assert shipped.read_text() == install.script(None)
    assert shipped.stat().st_mode & stat.S_IXUSR


def test_shipped_hook_finds_pq_on_path(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    git(fork, "config", "core.hooksPath", str(ROOT / "hooks"))
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    assert_refused(push(fork, "origin", "paddle", **env), remote, {}, "unexported edit")


# -- pq check and the pre-commit framework ----------------------------------------------


def test_check_command_reports_json(tmp_path: Path) -> None:
    fork, _ = make_pushable(tmp_path)
    data = json.loads(pq(fork, "check", "--json").stdout)
    assert data["ok"] is True and [c["name"] for c in data["checks"]] == [
        "series", "base", "export", "apply", "markers", "audit", "gate"]
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    result = pq(fork, "check", "--json", ok=False)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["cached"] is False
    assert data["failures"] == [{
        "check": "export", "fix": "pq export --commit",
        "message": f"commit {short(fork)} ('unexported') is not in the series: an unexported edit"}]
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert statuses["export"] == "failed" and statuses["series"] == "passed"
    assert statuses["apply"] == "not-run"
    assert pq(fork, "check", "upstream/main", ok=False).exit_code == 2


def pre_commit_env(fork: Path, tip: str, remote: Path) -> dict[str, str]:
    """What pre-commit exports to a pre-push hook (pre_commit/commands/run.py)."""
    return {"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": "0" * 40, "PRE_COMMIT_TO_REF": tip,
            "PRE_COMMIT_ORIGIN": "0" * 40, "PRE_COMMIT_SOURCE": tip,
            "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/paddle",
            "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/paddle", "PRE_COMMIT_REMOTE_NAME": "origin",
            "PRE_COMMIT_REMOTE_URL": str(remote)}


def test_a_projects_own_pq_module_does_not_stand_in_for_pq(tmp_path: Path) -> None:
    """git runs the hook in the top folder, and `python -m pq` looks there first: a
    project's `pq.py` (a priority queue, say) ran instead of pq and let every push
    through; a `pq/` package refused every one. The hook and the pre-commit entry run pq."""
    import yaml

    fork, remote = make_pushable(tmp_path)
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    before = remote_refs(remote)
    write(fork, "pq.py", "print('not pq')\n")
    assert_refused(push(fork, "origin", "paddle"), remote, before, "unexported edit")
    (fork / "pq.py").unlink()
    write(fork, "pq/__init__.py", "")
    write(fork, "pq/__main__.py", "raise SystemExit(0)\n")
    assert_refused(push(fork, "origin", "paddle"), remote, before, "unexported edit")
    (entry,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    proc = subprocess.run([sys.executable, *entry["entry"].split()[1:]], check=False, cwd=fork,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env={**os.environ, **pre_commit_env(fork, git(fork, "rev-parse",
                                                                        "HEAD"), remote)})
    assert proc.returncode == 1 and "unexported edit" in proc.stderr, proc.stderr


def test_a_patch_file_whose_crs_git_add_took_out_is_named_so(tmp_path: Path) -> None:
    """A patch of a CRLF file under core.autocrlf=true: `git add` takes out the CRs of its
    diff lines. `pq export` says to commit with `pq export --commit` instead; a patch file
    committed with `git add` all the same is named as converted (it said the commit was
    amended without `pq export`), and `pq export --commit` is the fix that works."""
    fork, _ = make_pushable(tmp_path)
    git(fork, "config", "core.autocrlf", "true")
    (fork / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    git(fork, "-c", "core.autocrlf=false", "add", "win.txt")
    git(fork, "-c", "core.autocrlf=false", "commit", "-qm", "glue: a CRLF file")
    said = pq(fork, "export").output
    assert "next: pq export --commit (`git add` would convert the line ends of patches/" \
        in said, said
    git(fork, "add", "series.yaml", "patches")
    git(fork, "commit", "-qm", "pq: update series")
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 1 and "was committed without the CR bytes of its CRLF lines" \
        in result.output, result.output
    pq(fork, "export", "--commit")
    assert pq(fork, "check").exit_code == 0


def test_pq_check_runs_in_a_bare_repository_as_the_hook_does(tmp_path: Path) -> None:
    """The hook checks a push from a bare mirror (the checks read commits only), but `pq
    check` there said a bare repository has no working tree for pq."""
    fork, _ = make_pushable(tmp_path)
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(fork), str(bare))
    assert pq(bare, "check", "paddle~1").exit_code == 0
    result = pq(bare, "check", "paddle", "--json", ok=False)
    assert result.exit_code == 1 and "unexported edit" in result.output, result.output


def test_pre_commit_entry_reads_the_framework_variables(tmp_path: Path) -> None:
    """The entry of .pre-commit-hooks.yaml, run as pre-commit runs it: in the repository's
    root, no arguments, no standard input, the PRE_COMMIT_* variables set."""
    import yaml

    fork, remote = make_pushable(tmp_path)
    (entry,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert entry["stages"] == ["pre-push"] and entry["pass_filenames"] is False
    argv = entry["entry"].split()
    assert argv[0] == "python"
    cmd = [sys.executable, *argv[1:]]
    good = git(fork, "rev-parse", "HEAD")
    write(fork, "pkg/util.py", "changed\n")
    bad = commit_all(fork, "unexported")
    for tip, code in ((good, 0), (bad, 1)):
        proc = subprocess.run(cmd, check=False, cwd=fork, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, env={**os.environ, **pre_commit_env(fork, tip, remote)})
        assert proc.returncode == code, proc.stderr
    assert "unexported edit" in proc.stderr


def test_pre_commit_mode_knows_the_remote_tip_from_the_tracking_ref(tmp_path: Path) -> None:
    """PRE_COMMIT_FROM_REF is where the pushed range starts, not the remote tip: a new
    branch without the series passes, as under pq's own hook, and a tip without it over a
    remote branch that has one (its remote-tracking ref says so) is refused."""
    fork, remote = make_pushable(tmp_path)
    assert push(fork, "origin", "paddle").returncode == 0
    git(fork, "fetch", "-q", "origin")
    base = git(fork, "rev-parse", "paddle")
    git(fork, "checkout", "-q", "-b", "experiment")
    git(fork, "rm", "-rq", "series.yaml", "patches")
    bare = commit_all(fork, "experiment without the series")
    cmd = [sys.executable, "-m", "pq", "hook", "run"]
    for branch, code in (("experiment", 0), ("paddle", 1)):
        env = {**pre_commit_env(fork, bare, remote), "PRE_COMMIT_FROM_REF": base,
               "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/experiment",
               "PRE_COMMIT_REMOTE_BRANCH": f"refs/heads/{branch}"}
        proc = subprocess.run(cmd, check=False, cwd=fork, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, env={**os.environ, **env})
        assert proc.returncode == code, proc.stderr
    assert "this push would take the series off it" in proc.stderr
    # pushed to a path, no remote-tracking refs: pre-commit's FROM_REF is the remote tip
    env = {**pre_commit_env(fork, bare, remote), "PRE_COMMIT_FROM_REF": base,
           "PRE_COMMIT_REMOTE_NAME": str(remote)}
    proc = subprocess.run(cmd, check=False, cwd=fork, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 1 and "take the series off it" in proc.stderr


def test_a_series_yaml_that_is_a_folder_is_no_series(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    git(fork, "checkout", "-q", "-b", "other", "upstream/main")
    write(fork, "series.yaml/x", "hi\n")
    commit_all(fork, "a folder named series.yaml")
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 2 and "has no series.yaml: pq does not manage it" in \
        result.output
    assert push(fork, "origin", "other").returncode == 0


@pytest.mark.parametrize("gone", ["PQ_PACKAGE", "PQ_MODULE"])
def test_the_hook_falls_back_when_its_interpreter_lost_pq(tmp_path: Path, gone: str) -> None:
    """The interpreter that installed the hook no longer has pq (uninstalled: its metadata
    gone; an editable install's source moved away: its modules gone, the metadata left):
    the hook runs pq from PATH, else says pq is not installed (not `No module named pq`)."""
    fork, remote = make_pushable(tmp_path)
    hook = fork / ".git/hooks/pre-push"
    text = hook.read_text()
    assert f"{gone}=/" in text
    hook.write_text("\n".join(f"{gone}=/nowhere" if ln.startswith(f"{gone}=") else ln
                              for ln in text.splitlines()) + "\n")
    with_pq = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert push(fork, "origin", "paddle", **with_pq).returncode == 0
    empty = tmp_path / "bin"
    empty.mkdir()
    (empty / "git").symlink_to(subprocess.run(["sh", "-c", "command -v git"], check=True,
                                              capture_output=True, text=True).stdout.strip())
    for name in ("sh", "dirname"):
        found = subprocess.run(["sh", "-c", f"command -v {name}"], capture_output=True,
                               text=True).stdout.strip()
        if found:
            (empty / name).symlink_to(found)
    write(fork, "pkg/x.py", "x\n")
    commit_all(fork, "more")
    result = push(fork, "origin", "HEAD:refs/heads/more", PATH=str(empty))
    assert result.returncode != 0
    assert "pq: pre-push hook: pq is not installed" in result.stderr


@pytest.mark.parametrize("shebang", ["#!/usr/bin/env sh", "#!/bin/bash -e", "", None])
def test_a_chained_hook_sees_the_name_git_runs_it_by(tmp_path: Path, shebang: str | None
                                                     ) -> None:
    """husky's hook (core.hooksPath .husky/_) finds the user's script by `basename "$0"`:
    chained, it still runs as `pre-push` (a shell script is sourced with that `$0`), and
    refuses the push; a program that is no shell script runs as it is."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    hooks = fork / ".husky" / "_"
    if shebang is None:  # a Python hook: run as it is, with git's arguments and input
        write(hooks, "pre-push", f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
              "sys.exit(len(sys.argv) == 3 and 7)\n", mode=0o755)
    else:
        write(hooks, "h", 's=$(dirname "$(dirname "$0")")/$(basename "$0")\n'
              '[ ! -f "$s" ] && exit 0\nsh -e "$s" "$@"\n', mode=0o755)
        # No `#!` at all: git runs the text file through sh, and so does pq.
        write(hooks, "pre-push", f'{shebang}\n. "$(dirname "$0")/h"\n'.lstrip("\n"),
              mode=0o755)
        write(fork / ".husky", "pre-push", 'echo "tests failed: $1" >&2\nexit 1\n')
    git(fork, "config", "core.hooksPath", ".husky/_")
    pq(fork, "hook", "install", "--chain")
    assert (hooks / "pre-push.pre-pq").exists()
    refused = push(fork, "origin", "paddle")
    assert refused.returncode != 0, refused.stderr
    if shebang is None:
        assert "(exit 7)" in refused.stderr, refused.stderr
    else:
        assert "tests failed: origin" in refused.stderr, refused.stderr
    assert remote_refs(remote) == {}


def test_a_chained_hook_that_is_a_link_runs_as_it_is(tmp_path: Path) -> None:
    """A hook linked from elsewhere finds its files through `$0` (`readlink -f "$0"`): it
    runs as git runs it, not sourced under the name `pre-push`."""
    fork, remote = make_pushable(tmp_path)
    pq(fork, "hook", "uninstall")
    scripts = tmp_path / "scripts"
    write(scripts, "common.sh", 'echo "common: refusing" >&2\nexit 5\n')
    write(scripts, "pre-push", '#!/bin/sh\n. "$(dirname "$(readlink -f "$0")")/common.sh"\n',
          mode=0o755)
    (fork / ".git/hooks/pre-push").symlink_to(scripts / "pre-push")
    pq(fork, "hook", "install", "--chain")
    assert (fork / ".git/hooks/pre-push.pre-pq").is_symlink()
    refused = push(fork, "origin", "paddle")
    assert refused.returncode != 0
    assert "common: refusing" in refused.stderr and "(exit 5)" in refused.stderr, \
        refused.stderr
    assert remote_refs(remote) == {}


def test_a_chained_hook_is_found_beside_a_renamed_hook(tmp_path: Path) -> None:
    """A hook manager that moves pq's hook to another name (pre-commit's migration mode:
    pre-push.legacy) still runs the hook pq chained."""
    fork = make_fork(tmp_path)
    hooks = fork / ".git/hooks"
    write(hooks, "pre-push", "#!/bin/sh\necho team hook refuses >&2\nexit 1\n", mode=0o755)
    pq(fork, "hook", "install", "--chain")
    (hooks / "pre-push").rename(hooks / "pre-push.legacy")
    proc = subprocess.run([str(hooks / "pre-push.legacy"), "origin", "url"], cwd=fork,
                          input="", capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "team hook refuses" in proc.stderr


def _pre_commit(tmp_path: Path) -> Path:
    venv = tmp_path / "pre-commit-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(site),
                           "--disable-pip-version-check", "pre-commit"],
                          check=False, capture_output=True, text=True, timeout=240)
    if proc.returncode != 0:
        pytest.skip("pre-commit could not be installed (offline?); "
                    "test_pre_commit_entry_reads_the_framework_variables covers the entry")
    return venv / "bin/python"


def _commit_push_env(tmp_path: Path) -> dict[str, str]:
    # pre-commit's python hooks put their environment first on PATH; here that is pq's.
    return {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _expect_framework_refusal(fork: Path, remote: Path, env: dict[str, str]) -> None:
    ok = push(fork, "origin", "paddle", **env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    pushed = git(fork, "rev-parse", "HEAD")
    write(fork, "pkg/util.py", "changed\n")
    commit_all(fork, "unexported")
    bad = subprocess.run(["git", "push", "origin", "paddle"], check=False, cwd=fork,
                         capture_output=True, text=True, env={**os.environ, **env})
    assert bad.returncode != 0
    assert "unexported edit" in bad.stdout + bad.stderr
    assert remote_refs(remote) == {"refs/heads/paddle": pushed}


def test_pre_commit_framework_runs_the_same_check(tmp_path: Path) -> None:
    """pre-commit itself runs the hook pq ships, from a local hook definition holding the
    fields of .pre-commit-hooks.yaml with `language: system` (what `language: python`
    adds is pip building pq into a fresh environment; PQ_TEST_PRE_COMMIT_REPO=1 runs that
    too, in the test below)."""
    import yaml

    fork, remote = make_pushable(tmp_path)
    python = _pre_commit(tmp_path)
    (entry,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    local = {**entry, "language": "system"}
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    pq(fork, "hook", "uninstall")
    write(fork, ".pre-commit-config.yaml", yaml.safe_dump(config))
    commit_all(fork, "use pre-commit")  # not a queue file: export puts it in a patch
    pq(fork, "export", "--commit")
    env = _commit_push_env(tmp_path)
    subprocess.run([str(python), "-m", "pre_commit", "install", "--hook-type", "pre-push"],
                   cwd=fork, check=True, capture_output=True, env={**os.environ, **env})
    _expect_framework_refusal(fork, remote, env)


@pytest.mark.skipif(not os.environ.get("PQ_TEST_PRE_COMMIT_REPO"),
                    reason="builds pq and its dependencies into a pre-commit environment "
                           "(about 1.5 minutes); set PQ_TEST_PRE_COMMIT_REPO=1 to run it")
def test_pre_commit_framework_installs_pq_as_a_hook_repository(tmp_path: Path) -> None:
    fork, remote = make_pushable(tmp_path)
    python = _pre_commit(tmp_path)
    source = tmp_path / "pq-source"  # pq as it is in this checkout, as a hook repository
    source.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        (source / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run(["cp", "-r", str(ROOT / "src"), str(source / "src")], check=True)
    subprocess.run(["find", str(source), "-name", "*.egg-info", "-prune", "-exec", "rm", "-rf",
                    "{}", "+"], check=True)
    git(source, "init", "-q")
    rev = commit_all(source, "pq")
    pq(fork, "hook", "uninstall")
    write(fork, ".pre-commit-config.yaml", f"repos:\n- repo: {source}\n  rev: {rev}\n"
          "  hooks:\n  - id: pq-series\n")
    commit_all(fork, "use pre-commit")
    pq(fork, "export", "--commit")
    env = {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache")}
    subprocess.run([str(python), "-m", "pre_commit", "install", "--hook-type", "pre-push"],
                   cwd=fork, check=True, capture_output=True, env={**os.environ, **env})
    _expect_framework_refusal(fork, remote, env)


# -- the check list and the entry points ---------------------------------------------------


def test_a_new_check_plugs_in_without_touching_the_hook(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pq.push import registry

    fork, _ = make_pushable(tmp_path)
    assert json.loads(pq(fork, "check", "--json").stdout)["ok"] is True  # now cached

    @registry.check("lint", "no line says QUUX", needs=("series",))
    def lint(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        assert ctx.queue is not None
        return [registry.CheckFailure("lint", f"patches/{n} says QUUX", "edit the commit")
                for n, data in ctx.queue.files.items() if b"QUUX" in data]

    try:
        write(fork, "pkg/util.py", "# QUUX\n")
        commit_all(fork, "glue: a quux")
        pq(fork, "export", "--commit")
        result = pq(fork, "check", "--json", ok=False)
        data = json.loads(result.stdout)
        assert result.exit_code == 1 and data["checks"][-1] == {
            "name": "lint", "status": "failed", "summary": "no line says QUUX"}
        assert data["failures"] == [{"check": "lint", "fix": "edit the commit",
                                     "message": "patches/0003-glue-a-quux.patch says QUUX"}]
        monkeypatch.setenv("PQ_SKIP", "lint")
        skipped = pq(fork, "check", "--json")
        assert json.loads(skipped.stdout)["checks"][-1]["status"] == "skipped"
        assert "PQ_SKIP=lint" in skipped.stderr
    finally:
        registry._REGISTRY.pop("lint")


def test_checks_run_side_by_side_and_are_reported_in_registry_order(tmp_path: Path) -> None:
    from pq.push import registry

    fork, _ = make_pushable(tmp_path)
    registry.all_checks()  # pq's own checks registered first
    meet = threading.Barrier(2, timeout=30)  # passes only while both checks run at once
    second_ended = threading.Event()  # the first ends after the second, whatever the load
    ended: list[str] = []

    @registry.check("first", "meets the second", needs=("series",))
    def first(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        meet.wait()
        assert second_ended.wait(30), "the second check never ended"
        ended.append("first")
        return [registry.CheckFailure("first", "the first one failed", "fix the first")]

    @registry.check("second", "meets the first", needs=("series",))
    def second(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        meet.wait()
        ended.append("second")
        second_ended.set()
        return [registry.CheckFailure("second", "the second one failed", "fix the second")]

    try:
        data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
    finally:
        registry._REGISTRY.pop("first")
        registry._REGISTRY.pop("second")
    assert ended == ["second", "first"]
    assert [f["check"] for f in data["failures"]] == ["first", "second"]
    assert [c["name"] for c in data["checks"]][-2:] == ["first", "second"]


def test_a_check_after_export_sees_its_verdict_and_its_moot_error_is_not_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pq.push import registry

    fork, _ = make_pushable(tmp_path)
    registry.all_checks()  # pq's own checks registered first
    monkeypatch.setenv("PQ_DEBUG", "1")  # an internal error raises: pytest sees it
    seen: list[str] = []

    @registry.check("late", "raises once it knows export's verdict", needs=("series",),
                    after=("export",))
    def late(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        seen.append(ctx.status_of("export"))
        raise RuntimeError("a bug in the late check")

    @registry.check("early", "raises at once", needs=("series",))
    def early(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        raise ValueError("a bug in the early check")

    try:
        write(fork, "pkg/util.py", "changed\n")
        commit_all(fork, "unexported")
        with pytest.raises(ValueError, match="early"):  # the other bug is moot: not raised
            pq(fork, "check", "--json", ok=False)
        assert seen == ["failed"]
        registry._REGISTRY.pop("early")
        data = json.loads(pq(fork, "check", "--json", ok=False).stdout)
        assert [f["check"] for f in data["failures"]] == ["export"]
        assert {c["name"]: c["status"] for c in data["checks"]}["late"] == "not-run"
        pq(fork, "export", "--commit")
        with pytest.raises(RuntimeError, match="late"):  # export passed: the bug counts
            pq(fork, "check", ok=False)
        assert seen == ["failed", "failed", "passed"]
    finally:
        registry._REGISTRY.pop("late")
        registry._REGISTRY.pop("early", None)


def test_an_interrupt_in_one_check_starts_no_further_check(tmp_path: Path) -> None:
    from pq.git.repo import Git
    from pq.push import registry

    fork, _ = make_pushable(tmp_path)
    registry.all_checks()  # pq's own checks registered first
    started: list[str] = []

    @registry.check("interrupted", "as if Ctrl-C reached it", needs=("series",))
    def interrupted(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        raise KeyboardInterrupt

    def slow(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        started.append("slow")
        time.sleep(1)
        return []

    names = [f"slow{i}" for i in range(5)]
    for name in names:
        registry.check(name, "takes a second", needs=("series",))(slow)
    try:
        with Git.open(fork) as g:
            ctx = registry.load_context(g, g.resolve("HEAD"), "refs/heads/paddle")
            with pytest.raises(KeyboardInterrupt):
                registry.run_checks(g, ctx)
    finally:
        for name in ["interrupted", *names]:
            registry._REGISTRY.pop(name, None)
    assert len(started) <= 3  # the ones a worker had taken; the queued ones never start


def test_a_check_waiting_for_a_verdict_gives_up_its_place(tmp_path: Path) -> None:
    from pq.git.repo import Git
    from pq.push import registry

    fork, _ = make_pushable(tmp_path)
    registry.all_checks()
    seen: list[str] = []

    @registry.check("eager", "asks for export's verdict at once", needs=("series",),
                    after=("export",))
    def eager(g: object, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        seen.append(ctx.status_of("export"))
        return []

    outcome: list[registry.RunOutcome] = []
    try:
        with Git.open(fork) as g:
            ctx = registry.load_context(g, g.resolve("HEAD"), "refs/heads/paddle")
            # One place only: `eager` holds it while export still waits for base.
            runner = threading.Thread(target=lambda: outcome.append(
                registry.run_checks(g, ctx, workers=1)), daemon=True)
            runner.start()
            runner.join(timeout=120)
            assert not runner.is_alive(), "run_checks deadlocked"
    finally:
        registry._REGISTRY.pop("eager")
    assert seen == ["passed"] and outcome[0].ok
    assert outcome[0].statuses["eager"] == outcome[0].statuses["export"] == "passed"
    with pytest.raises(ValueError, match="no check is named"):  # never decided: no wait
        ctx.status_of("exprot")


def test_python_dash_m_pq_runs_every_command(tmp_path: Path) -> None:
    fork, _ = make_pushable(tmp_path)
    for args, code, text in ((["--version"], 0, "pq, version"),
                             (["hook", "run", "--help"], 0, "REMOTE"),
                             (["check"], 0, "series consistent"),
                             (["hook", "run", "only-one", "x", "y"], 2, "")):
        proc = subprocess.run([sys.executable, "-m", "pq", *args], cwd=fork, check=False,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert proc.returncode == code, proc.stderr
        assert text in proc.stdout
