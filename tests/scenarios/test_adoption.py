"""Adopting pq on a fork with history (issue 12, part 4): the first push is not a wall,
findings can be acknowledged in series.yaml, copied upstream lines are not workarounds,
the wording of pq's output, errors under --json, and the layer guess."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, origin_with_hook, pq, write

UPSTREAM_TEST = ("import torch\n\n\n"
                 "def test_op():\n"
                 "    if not hasattr(torch, 'compile'):  # TODO: drop with torch 1.x\n"
                 "        return\n"
                 "    assert torch.ones(1)\n")


def upstream_with_tests(root: Path) -> Path:
    return make_upstream(root, {
        "setup.py": "from torch.utils import cpp_extension\n\nsetup(name='x')\n",
        "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\n",
        "csrc/k.cu": "#include <ATen/ATen.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
                     "void run() { auto s = at::cuda::getCurrentCUDAStream(); }\n",
        "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x\n",
        "tests/test_op.py": UPSTREAM_TEST,
        "README.md": "upstream\n",
    })


def adopted_fork(tmp_path: Path) -> tuple[Path, Path]:
    """A fork with published history: upstream's test copied to paddle_tests/, one real
    undeclared workaround, two commits with the same subject; then `pq init`, a bare
    origin and the hook."""
    fork = make_fork(tmp_path, upstream_with_tests(tmp_path / "upstream"))
    write(fork, "paddle_tests/test_op.py", UPSTREAM_TEST)
    commit_all(fork, "tests: run upstream's tests on paddle")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n"
          "    # TODO: paddle has no op yet, go through numpy\n    return x\n")
    commit_all(fork, "fix")
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "fix")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork, origin_with_hook(tmp_path, fork)


def push(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "-q", "origin", "paddle"], check=False, cwd=repo,
                          capture_output=True, text=True, env=dict(os.environ))


def names(fork: Path) -> list[str]:
    data = json.loads(pq(fork, "series", "--json").output)
    return [p["name"] for p in data["patches"]]


def add_ack(fork: Path, patch: str, items: str) -> None:
    text = (fork / "series.yaml").read_text()
    anchor = f"  - name: {patch}\n"
    assert anchor in text, text
    text = text.replace(anchor, anchor + "    acknowledged:\n" + items)
    write(fork, "series.yaml", text)


# -- the first push ------------------------------------------------------------------------


def test_first_push_separates_policy_findings_from_consistency(tmp_path: Path) -> None:
    fork, _remote = adopted_fork(tmp_path)
    result = push(fork)
    assert result.returncode == 1
    err = result.stderr
    assert "the branch matches its series" in err, err
    assert "does not match its series" not in err, err
    assert "1 policy finding of the workaround audit" in err, err
    assert "WA014" in err and "acknowledged:" in err, err
    check = pq(fork, "check", ok=False)
    assert "policy findings of the workaround audit:" in check.output
    assert "the branch does not match" not in check.output
    data = json.loads(pq(fork, "check", "--json", ok=False).output)
    assert (data["consistent"], data["policy_findings"]) == (True, 1)


def test_acknowledged_finding_lets_the_first_push_through(tmp_path: Path) -> None:
    fork, remote = adopted_fork(tmp_path)
    glue = names(fork)[1]
    add_ack(fork, glue, '      - {rule: WA014, reason: "numpy path until paddle has op"}\n')
    commit_all(fork, "pq: acknowledge the numpy fallback")
    result = push(fork)
    assert result.returncode == 0, result.stderr
    assert git(remote, "rev-parse", "paddle") == git(fork, "rev-parse", "HEAD")
    audit = pq(fork, "audit", "workarounds")  # exit 0: acknowledged is not counted
    assert "acknowledged in series.yaml (reported, not counted):" in audit.output
    assert "reason: numpy path until paddle has op" in audit.output
    assert "1 acknowledged (not counted)" in audit.output
    data = json.loads(pq(fork, "audit", "workarounds", "--json").output)
    assert data["findings"] == [] and data["exit_code"] == 0
    assert [(a["rule_id"], a["patch"]) for a in data["acknowledged"]] == [("WA014", glue)]
    assert data["acknowledged"][0]["acknowledged_at"].startswith("series.yaml:")
    md = pq(fork, "audit", "workarounds", "--markdown").output
    assert "#### Acknowledged (reported, not counted)" in md and "numpy path" in md


@pytest.mark.parametrize("item, expect", [
    ('      - {rule: WA999, reason: "x"}\n', "names no rule 'WA999'"),
    ("      - {rule: WA014}\n", "acknowledging WA014 needs a `reason`"),
    ('      - {rule: WA014, reason: "  "}\n', "acknowledging WA014 needs a `reason`"),
    ('      - {rule: WA014, reason: "x", why: "y"}\n', "unknown key `why`"),
    ("      - {rule: WA014, reason: 5}\n", "acknowledging WA014 needs a `reason` in words"),
])
def test_bad_acknowledgement_is_an_error_at_its_line(tmp_path: Path, item: str,
                                                     expect: str) -> None:
    fork, _remote = adopted_fork(tmp_path)
    glue = names(fork)[1]
    add_ack(fork, glue, item)
    line = (fork / "series.yaml").read_text().splitlines().index(item.rstrip("\n")) + 1
    result = pq(fork, "audit", "workarounds", ok=False)
    assert result.exit_code == 2
    assert f"series.yaml:{line}:" in result.output and expect in result.output, result.output


def test_a_rule_acknowledged_twice_on_one_patch_is_an_error(tmp_path: Path) -> None:
    fork, _remote = adopted_fork(tmp_path)
    glue = names(fork)[1]
    add_ack(fork, glue, '      - {rule: WA014, reason: "one"}\n'
                        '      - {rule: WA014, reason: "two"}\n')
    lines = (fork / "series.yaml").read_text().splitlines()
    first = lines.index('      - {rule: WA014, reason: "one"}') + 1
    result = pq(fork, "audit", "workarounds", ok=False)
    assert result.exit_code == 2
    assert f"series.yaml:{first + 1}:" in result.output, result.output
    assert f"acknowledges WA014 twice (first at series.yaml:{first}:" in result.output


def test_unused_acknowledgement_is_reported(tmp_path: Path) -> None:
    fork, _remote = adopted_fork(tmp_path)
    first = names(fork)[0]
    add_ack(fork, first, '      - {rule: WA008, reason: "old"}\n')
    data = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    assert [(u["rule_id"], u["patch"]) for u in data["unused_acknowledgements"]] == \
        [("WA008", first)]


def test_copied_upstream_lines_are_not_workarounds(tmp_path: Path) -> None:
    """The copied test carries upstream's TODO and hasattr(torch, ...) guard: not WA014."""
    fork, _remote = adopted_fork(tmp_path)
    data = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    assert [(f["rule_id"], f["patch"]) for f in data["findings"]] == \
        [("WA014", names(fork)[1])], data["findings"]
    # the same line written by the fork (not in the origin file) is still a finding
    write(fork, "paddle_tests/test_more.py", UPSTREAM_TEST)
    commit_all(fork, "tests: a test of our own")
    pq(fork, "export")
    data = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    assert ("WA014", names(fork)[3]) in [(f["rule_id"], f["patch"]) for f in data["findings"]]


# -- wording and edges ---------------------------------------------------------------------


def test_singular_counts_and_init_undo_wording(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "one change")
    out = pq(fork, "init", "--upstream", "upstream/main").output
    assert "1 patch on base" in out and "1 patches" not in out, out
    assert "restores the previous series.yaml" not in out
    assert "`pq undo` removes the new series.yaml and patches/ again" in out
    series = pq(fork, "series").output
    assert "1 patch" in series and "1 patches" not in series and "1 file " in series, series
    base = git(fork, "merge-base", "HEAD", "upstream/main")[:12]
    assert series.startswith(f"base {base} (upstream/main): 1 patch")
    audit = pq(fork, "audit", "workarounds").output
    assert f"base {base}" in audit and "upstream/main tip" in audit, audit
    assert "1 patch " in audit or "1 patch" in audit.split("\n")[0]
    again = pq(fork, "init", "--upstream", "upstream/main", "--force").output
    assert "already up to date" in again or "restores the previous" in again


def test_issue_body_for_an_unknown_patch_lists_the_patches(tmp_path: Path) -> None:
    fork, _remote = adopted_fork(tmp_path)
    result = pq(fork, "audit", "workarounds", "--issue-body", "nosuch", ok=False)
    assert result.exit_code == 2
    assert "no patch named 'nosuch'" in result.output
    assert "the series has none" not in result.output
    for name in names(fork):
        assert name in result.output


@pytest.mark.parametrize("args", [
    ("series", "--json"), ("export", "--json"), ("check", "--json"),
    ("audit", "workarounds", "--json"), ("gate", "--json"), ("apply", "--json"),
])
def test_errors_under_json_are_json(tmp_path: Path, args: tuple[str, ...]) -> None:
    fork = make_fork(tmp_path)  # no series.yaml: every command fails with exit 2
    result = pq(fork, *args, ok=False)
    assert result.exit_code == 2, result.output
    data = json.loads(result.stdout)
    err = data["error"]
    assert set(err) >= {"message", "path", "line", "hint", "exit_code"}
    assert err["exit_code"] == 2 and err["message"]


def test_json_usage_error_is_json(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    result = pq(fork, "audit", "workarounds", "--json", "--paddle-version", "x", ok=False)
    assert result.exit_code == 2
    assert "x" in json.loads(result.stdout)["error"]["message"]


def test_gate_junit_path_is_checked_before_any_stage(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "one change")
    pq(fork, "init", "--upstream", "upstream/main")
    marker = tmp_path / "stage-ran"
    text = (fork / "series.yaml").read_text()
    text += f"gate:\n  stages:\n    - name: build\n      run: touch {marker}\n"
    write(fork, "series.yaml", text)
    commit_all(fork, "pq: gate")
    write(tmp_path, "afile", "not a folder\n")
    result = pq(fork, "gate", "--junit", str(tmp_path / "afile" / "x.xml"), ok=False)
    assert result.exit_code == 2, result.output
    assert "is not a folder" in result.output and "internal error" not in result.output
    assert not marker.exists()


# -- the layer guess -------------------------------------------------------------------------


def _layer_of_new_commit(tmp_path: Path, files: dict[str, str]) -> str:
    fork = make_fork(tmp_path, upstream_with_tests(tmp_path / "upstream"))
    for rel, text in files.items():
        write(fork, rel, text)
    commit_all(fork, "the change")
    data = json.loads(pq(fork, "init", "--upstream", "upstream/main", "--json").output)
    layers = [p["layer"] for p in data["patches"]]
    assert len(layers) == 1
    return str(layers[0])


def test_cu_file_swapping_aten_calls_is_cpp_compat(tmp_path: Path) -> None:
    layer = _layer_of_new_commit(tmp_path, {"csrc/k.cu": (
        "#include <paddle/phi/backends/gpu/gpu_context.h>\n"
        "__global__ void k(float* x) { x[0] = 1; }\n"
        "void run() { auto s = phi::GetCurrentStream(); }\n")})
    assert layer == "cpp-compat"


def test_cu_file_changing_kernel_code_is_kernel(tmp_path: Path) -> None:
    layer = _layer_of_new_commit(tmp_path, {"csrc/k.cu": (
        "#include <ATen/ATen.h>\n__global__ void k(float* x) { x[0] = 2; }\n"
        "void run() { auto s = at::cuda::getCurrentCUDAStream(); }\n")})
    assert layer == "kernel"


def test_docs_only_patch_is_python_glue_by_the_docs_only_rule(tmp_path: Path) -> None:
    from pq.model import layers

    assert layers.explain([("README.md", b"", None)]) == ("python-glue", layers.DOCS_ONLY)
    assert layers.explain([("README.md", b"", None), ("setup.py", b"", None)])[0] == "build"
    assert _layer_of_new_commit(tmp_path, {"README.md": "paddle fork\n",
                                           "CMakeLists.txt": "project(x)\n"}) == "build"


def test_docs_only_commit(tmp_path: Path) -> None:
    assert _layer_of_new_commit(tmp_path, {"README.md": "paddle fork\n",
                                           "docs/usage.md": "use it\n"}) == "python-glue"
