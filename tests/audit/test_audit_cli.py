"""`pq audit workarounds` as users and the pre-push hook drive it: exit codes, the table,
--json, --markdown, --issue-body, --rev, malformed blocks, and `run_audit`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.audit.auditfork import (
    ISSUE,
    M_TESTING,
    audit,
    audit_json,
    build_fork,
    clean_specs,
    edit_series,
    git,
    patch_names,
)
from gitrepo import pq

from pq.audit import api
from pq.git.repo import Git
from pq.queue import files as queuefiles

P_LIBRARY, P_TESTING, P_CPPEXT, P_BUILD = 1, 2, 3, 6


def test_exit_codes_clean_findings_strict(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    code, out = audit(fork)
    assert code == 0
    assert "0 findings (0 errors, 0 warnings); 0 workarounds removable" in out
    block = dict(clean_specs()[P_LIBRARY].workaround or {})
    block["remove_when"] = ["paddle >= 3.3"]
    edit_series(fork, {patch_names(fork)[P_LIBRARY]: block})
    git(fork, "add", "series.yaml")
    git(fork, "commit", "-q", "-m", "pq: series")
    from gitrepo import pq
    pq(fork, "export")
    code, out = audit(fork)
    assert code == 0 and "1 workaround removable" in out
    code, out = audit(fork, "--strict")
    assert code == 1 and "WA017 removable" in out
    del block["reason"]
    edit_series(fork, {patch_names(fork)[P_LIBRARY]: block})
    code, out = audit(fork)
    assert code == 1 and "WA001 missing-field" in out and "fix: add `reason:`" in out


def test_table_shows_every_workaround_and_condition(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    _code, out = audit(fork)
    names = patch_names(fork)
    lines = out.splitlines()
    assert lines[0].startswith("5 workarounds in 7 patches (base ")
    assert "; upstream/main tip " in lines[0]
    assert lines[0].endswith("; paddle 3.3.1)")
    assert lines[2].split() == ["PATCH", "LAYER", "KIND", "REMOVAL", "ISSUE", "MRE", "FINDINGS"]
    row = next(ln for ln in lines if ln.startswith(names[P_LIBRARY]))
    assert row.split()[1:] == ["cpp-compat", "compat-gap", "not", "run", "#77012", "yes", "-"]
    assert lines[lines.index(row) + 1] == "    covers csrc/ops.cc"
    assert re.search(r"^    paddle >= 3\.4\s+not met\s+installed paddlepaddle 3\.3\.1$", out, re.MULTILINE)
    assert re.search(r"^    mre-passes\s+not run\s+rerun with --run-mre$", out, re.MULTILINE)


@pytest.mark.parametrize("block,where,text", [
    ({"kind": "gap"}, "kind", "kind 'gap' is not one of"),
    ({"remove_when": ["paddle > 3"]}, "remove_when", "remove_when: cannot read 'paddle > 3'"),
    ({"remove_when": ["when it works"]}, "remove_when", "unknown condition"),
    ({"covers": 5}, "covers", "`covers` must be a list"),
    ({"issue": "TBD"}, "issue", "neither a URL nor `not-needed: <why>`"),
    ({"issue": "not-needed"}, "issue", "must say why"),
    ({"issue": "https://"}, "issue", "issue 'https://' names no host"),
    ({"covers": ["pkg/a\0b.py"]}, "covers", "not a path inside the repository"),
    ({"mre": "../elsewhere"}, "mre", "not a path inside the repository"),
    ({"mre": "tests/repro"}, "mre", "is outside the queue"),
    # (a finding prints it on a line: a line break in it wrote lines of its own choosing)
    ({"mre": "mre/x\n  passed      audit"}, "mre", "holds a control character"),
    ({"remove-when": ["paddle >= 3.4"]}, "remove-when", "did you mean `remove_when`?"),
    ({"marker": "none"}, "marker", "must say why"),
])
def test_malformed_block_is_exit_2_with_file_line_column(
        tmp_path: Path, block: dict[str, Any], where: str, text: str) -> None:
    fork = build_fork(tmp_path, clean_specs()[:3])
    name = patch_names(fork)[P_TESTING]
    wa = dict(clean_specs()[P_TESTING].workaround or {})
    wa.update(block)
    edit_series(fork, {name: wa})
    before = (fork / "series.yaml").read_bytes()
    code, out = audit(fork)
    assert code == 2, out
    # The error names the line and column of the offending key's value in series.yaml.
    lines = before.decode().splitlines()
    start = next(i for i, ln in enumerate(lines) if name in ln)
    key_line = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(where))
    m = re.match(r"^pq: error: series\.yaml:(\d+):(\d+): patch .*: workaround (.*)$",
                 out.strip())
    assert m, out
    assert key_line + 1 <= int(m.group(1)) <= key_line + 2
    assert text in m.group(3)
    assert "Traceback" not in out
    assert (fork / "series.yaml").read_bytes() == before


def test_json_shape(tmp_path: Path) -> None:
    specs = clean_specs()
    specs[P_TESTING].files["README.md"] = "changed\n"
    fork = build_fork(tmp_path, specs)
    names = patch_names(fork)
    data = audit_json(fork)
    assert list(data) == ["version", "source", "base", "base_present", "upstream", "paddle",
                          "strict",
                          "ran_mre", "summary", "workarounds", "findings", "acknowledged",
                          "unused_acknowledgements", "exit_code"]
    assert data["version"] == 1 and data["source"] == "worktree"
    assert data["upstream"]["ref"] == "upstream/main"
    assert re.fullmatch(r"[0-9a-f]{40}", data["upstream"]["commit"])
    assert data["summary"] == {"patches": 7, "workarounds": 5, "removable": 0, "errors": 1,
                               "warnings": 0, "acknowledged": 0}
    row = data["workarounds"][1]
    assert row == {
        "patch": names[P_TESTING], "layer": "python-glue", "kind": "compat-gap",
        "covers": ["tests/test_tinyop.py::test_smoke"],
        "reason": "the torch proxy has no torch.testing", "issue": ISSUE.format(77013),
        "mre": "mre/torch-testing", "mre_present": True, "marker": M_TESTING,
        "conditions": [{"condition": "mre-passes", "kind": "mre-passes", "state": "not run",
                        "detail": "rerun with --run-mre"}],
        "removal": "not run", "mre_run": None, "findings": ["WA007"]}
    assert data["findings"] == [{
        "rule_id": "WA007", "rule": "outside-covers", "patch": names[P_TESTING],
        "severity": "error", "location": data["findings"][0]["location"],
        "message": data["findings"][0]["message"], "fix": data["findings"][0]["fix"]}]
    assert re.fullmatch(r"series\.yaml:\d+:\d+", data["findings"][0]["location"])


def test_markdown(tmp_path: Path) -> None:
    specs = clean_specs()
    specs[P_TESTING].files["README.md"] = "changed\n"
    fork = build_fork(tmp_path, specs)
    code, out = audit(fork, "--markdown")
    assert code == 1
    assert out.startswith("### pq audit: workarounds\n")
    assert "| Patch | Layer | Kind | Covers | Removal | Conditions | Issue | MRE | Findings |" in out
    assert f"[#77013]({ISSUE.format(77013)})" in out
    assert "#### Findings" in out and "| error | WA007 outside-covers |" in out
    code, out = audit(fork, "--markdown", "--json")
    assert code == 2 and "choose one of --json and --markdown" in out


def test_issue_body(tmp_path: Path) -> None:
    specs = clean_specs()
    specs[P_TESTING].mre = "real"
    fork = build_fork(tmp_path, specs)
    name = patch_names(fork)[P_TESTING]
    code, out = audit(fork, "--issue-body", name)
    assert code == 0
    assert out.splitlines()[0] == ("Title: [Cross-Ecosystem Custom Op] torch.testing is missing "
                                   "or inconsistent in Paddle compat layer")
    assert "- Paddle: 3.3.1 (paddlepaddle, commit " in out
    assert re.search(r"^- Python: 3\.\d+\.\d+$", out, re.MULTILINE)
    assert "- PyTorch (for comparison): 2.13.0" in out
    for section in ("### Environment", "### Reproducer", "### Expected behaviour",
                    "### Actual behaviour", "### The same code under PyTorch",
                    "### Workaround in the port"):
        assert section in out
    assert (fork / "mre/torch-testing/README.md").read_text().strip() in out
    assert "`repro.py`:" in out and "torch.testing.assert_close" in out
    assert "MRE_BACKEND=torch PYTHON=python bash run.sh" in out
    # Not run (no --run-mre): no result under PyTorch is claimed ("it exits 0 there").
    torch_section = out.split("### The same code under PyTorch", 1)[1].split("###", 1)[0]
    assert "it was not run for this report" in torch_section, torch_section
    assert "exits 0" not in torch_section
    assert f"+    # {M_TESTING}" in out
    for bad, why in ((patch_names(fork)[P_BUILD], "is a build-entry"),
                     (patch_names(fork)[0], "declares no workaround"),
                     ("9999-nope.patch", "no patch named '9999-nope.patch'")):
        code, err = audit(fork, "--issue-body", bad)
        assert code == 2 and why in err
    for form in ("--json", "--markdown"):  # the issue is text: no report shape to give it
        code, err = audit(fork, "--issue-body", name, form)
        assert code == 2 and f"--issue-body prints the issue's own text (Markdown); drop " \
                             f"{form}" in err


def test_rev_reads_the_committed_queue(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    git(fork, "add", "series.yaml", "patches", "mre")
    git(fork, "commit", "-q", "-m", "pq: queue")
    wa = dict(clean_specs()[P_LIBRARY].workaround or {})
    del wa["reason"]
    edit_series(fork, {patch_names(fork)[P_LIBRARY]: wa})
    assert audit(fork)[0] == 1
    assert audit_json(fork, "--rev", "HEAD")["findings"] == []
    code, out = audit(fork, "--rev", "HEAD~3")
    assert code == 2 and "has no series.yaml" in out


def test_run_audit_for_the_hook(tmp_path: Path) -> None:
    specs = clean_specs()
    specs[P_LIBRARY].files["csrc/ops.cc"] = str(specs[P_LIBRARY].files["csrc/ops.cc"]).replace(
        "// TODO", "// NOTE")
    specs[P_BUILD].files["scripts/build_paddle.py"] += "torch_dir = None  # TODO: later\n"
    fork = build_fork(tmp_path, specs)
    git(fork, "add", "series.yaml", "patches", "mre")
    git(fork, "commit", "-q", "-m", "pq: queue")
    with Git.open(fork) as g:
        tip = g.head()
        queue = queuefiles.read_tree(g, tip)
        assert queue is not None
        report = api.run_audit(g, queue, rev=tip, paddle_version="3.3.1")
    assert [(f.rule_id, f.rule, f.severity) for f in report.findings] == [
        ("WA006", "marker-missing", "error")]
    assert report.errors == list(report.findings) and report.exit_code == 1
    assert report.findings[0].patch == patch_names(fork)[P_LIBRARY]
    assert report.findings[0].fix
    assert len(report.workarounds) == 5 and report.source == tip


def test_export_writes_dep3_headers_from_the_series(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    names = patch_names(fork)
    gap = (fork / "patches" / names[P_LIBRARY]).read_text()
    assert f"Bug: {ISSUE.format(77012)}\nForwarded: {ISSUE.format(77012)}\n" in gap
    assert "X-Pq-Workaround: compat-gap\nX-Pq-Covers: csrc/ops.cc\n" in gap
    assert "X-Pq-Remove-When: paddle >= 3.4; mre-passes\n" in gap
    assert "X-Pq-Reproducer: mre/torch-library-include\n" in gap
    build = (fork / "patches" / names[P_BUILD]).read_text()
    assert "Forwarded: not-needed\nX-Pq-Workaround: build-entry\n" in build
    assert "Bug:" not in build
    plain = (fork / "patches" / names[0]).read_text()
    assert "X-Pq-Layer: build\n\n---" in plain


@pytest.mark.parametrize("args,text", [
    (["--paddle-version", "banana"], "is not a version such as 3.3.1"),
    (["--python", "/nonexistent/python3"], "not found"),
    (["--mre-timeout", "0"], "--mre-timeout"),
    (["--rev", "no-such-rev"], "unknown revision 'no-such-rev'"),
])
def test_bad_options_exit_2(tmp_path: Path, args: list[str], text: str) -> None:
    fork = build_fork(tmp_path, clean_specs()[:2])
    code, out = audit(fork, *args)
    assert code == 2, out
    assert text in out and "Traceback" not in out


def test_a_base_missing_from_the_repository_is_said_not_passed_over(tmp_path: Path) -> None:
    """A shallow clone lacks the base: audit and lint say so (text and JSON) instead of
    quietly running without upstream's files."""
    fork = build_fork(tmp_path, clean_specs())
    assert audit_json(fork)["base_present"] is True
    series = fork / "series.yaml"
    text = series.read_text()
    base = re.search(r"base: ([0-9a-f]{40})", text)
    assert base is not None
    series.write_text(text.replace(base.group(1), "ab" * 20))
    assert audit_json(fork)["base_present"] is False
    said = audit(fork)[1].splitlines()
    assert said[1].startswith("note: the base abababababab is not a commit in this repository")
    lint = pq(fork, "lint", ok=False).output.splitlines()
    assert lint[1].startswith("note: the base abababababab is not a commit in this repository")
    assert json.loads(pq(fork, "lint", "--json", ok=False).output)["base_present"] is False


def test_a_shallow_ci_clone_is_told_the_fetch_that_brings_the_base(tmp_path: Path) -> None:
    """`git clone --depth 1` (a CI checkout) with `origin` only: `pq apply` said `git
    fetch` the base (it fetches nothing more), the audit `git fetch upstream` (no such
    remote); `git fetch --unshallow` is what works."""
    fork = build_fork(tmp_path, clean_specs())
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", "pq: update series")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", "-b", git(fork, "branch", "--show-current"), fork.resolve().as_uri(),
        str(ci))
    refused = pq(ci, "apply", "-b", "t", ok=False)
    assert refused.exit_code == 2 and "in this shallow clone" in refused.output, refused.output
    assert "`git fetch --unshallow`" in refused.output, refused.output
    assert "git fetch --unshallow" in audit(ci)[1].splitlines()[1]
    git(ci, "fetch", "-q", "--unshallow")
    pq(ci, "apply", "-b", "t")


def test_a_base_that_names_a_tree_leaks_no_git_message(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    series = fork / "series.yaml"
    text = series.read_text()
    base = re.search(r"base: ([0-9a-f]{40})", text)
    assert base is not None
    tree = git(fork, "rev-parse", "HEAD^{tree}").strip()
    series.write_text(text.replace(base.group(1), tree))
    proc = subprocess.run([sys.executable, "-m", "pq", "lint"], cwd=fork, capture_output=True,
                          text=True, check=False)
    assert "is not a commit in this repository" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stderr == "", proc.stderr  # git's "expected commit type" stays with git


def test_usage_errors_for_an_impossible_timeout_interpreter_or_base(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    code, said = audit(fork, "--mre-timeout", "nan")
    assert code == 2 and "nan is not a number of seconds" in said
    code, said = audit(fork, "--python", str(tmp_path))  # a folder
    assert code == 2 and f"--python {tmp_path}: no such program" in said
    series = fork / "series.yaml"
    text = series.read_text()
    base = re.search(r"base: ([0-9a-f]{40})", text)
    assert base is not None
    series.write_text(text.replace(base.group(1), "1" * 40))  # YAML reads an integer
    code, said = audit(fork)
    assert code == 2 and "written as a string" in said and "put it in quotes" in said


def test_a_reproducer_behind_a_link_out_of_the_repository_is_not_run(tmp_path: Path) -> None:
    """`mre: mre/torch-testing` passes the path check, but a symbolic link in the working
    tree (mre/torch-testing -> a folder elsewhere) led `--run-mre` to run a script outside
    the repository. It is a missing reproducer (WA004) now, and nothing outside runs."""
    fork = build_fork(tmp_path, clean_specs()[:3])
    name = patch_names(fork)[P_TESTING]
    outside = tmp_path / "outside"
    outside.mkdir()
    ran = tmp_path / "ran"
    (outside / "run.sh").write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    shutil.rmtree(fork / "mre" / "torch-testing")
    (fork / "mre" / "torch-testing").symlink_to(outside)
    data = audit_json(fork, "--run-mre")
    assert not ran.exists()
    row = next(w for w in data["workarounds"] if w["patch"] == name)
    assert "leads outside the repository" in (row["mre_run"] or {}).get("error", "") or \
        any("leads outside the repository" in c["detail"] for c in row["conditions"])
    assert ("WA004", name) in [(f["rule_id"], f["patch"]) for f in data["findings"]]


def test_a_reproducer_script_that_links_out_of_the_repository_is_not_run(tmp_path: Path
                                                                          ) -> None:
    """The folder is the repository's, its run.sh a link to a script elsewhere."""
    fork = build_fork(tmp_path, clean_specs()[:3])
    name = patch_names(fork)[P_TESTING]
    ran = tmp_path / "ran"
    (tmp_path / "elsewhere.sh").write_text(f"#!/bin/sh\ntouch '{ran}'\n")
    (fork / "mre" / "torch-testing" / "run.sh").unlink()
    (fork / "mre" / "torch-testing" / "run.sh").symlink_to(tmp_path / "elsewhere.sh")
    data = audit_json(fork, "--run-mre")
    assert not ran.exists()
    assert ("WA004", name) in [(f["rule_id"], f["patch"]) for f in data["findings"]]
