"""`pq report`: the shipped example's report is the golden docs/example-report.md, and
the verification part shows the latest gate record.

After a deliberate change of the report (or of the example series), regenerate the golden
file with `UPDATE_GOLDEN=1 python -m pytest tests/report/test_report.py`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, series_fork, write
from report_example import ROOT, example_fork

GOLDEN = ROOT / "docs" / "example-report.md"
_SHA = re.compile(r"\b[0-9a-f]{12}\b")


def _same_base(text: str) -> str:
    """The base commit's id depends on how git wrote tinyop v1 here: compare without it."""
    return _SHA.sub("<base>", text)


def test_the_example_report_is_the_golden_file(tmp_path: Path) -> None:
    fork = example_fork(tmp_path)
    out = pq(fork, "report").output
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(out)
    assert _same_base(out) == _same_base(GOLDEN.read_text())
    data = json.loads(pq(fork, "report", "--json").output)
    assert data["boundary"]["untouched_top_level"] == ["README.md", "tinyop"]
    assert [w["patch"][:4] for w in data["workarounds"]] == ["0001", "0002", "0003", "0005"]
    assert data["plan"]["first_landing_point"]["patch"].startswith("0001-")
    # Every layer, present or not: the key set is the same for every fork.
    assert list(data["plan"]["by_layer"]) == ["kernel", "build", "cpp-compat", "python-glue"]


def test_a_report_of_no_patches_says_so(tmp_path: Path) -> None:
    """A series of no patch: "By layer: ." and a `by_layer` with no keys."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream"))
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert "By layer: none." in pq(fork, "report").output
    data = json.loads(pq(fork, "report", "--json").output)
    assert data["plan"]["by_layer"] == {
        "kernel": [], "build": [], "cpp-compat": [], "python-glue": []}


def fork_with_gate(tmp_path: Path, stages: str) -> Path:
    """A one-patch fork whose committed series.yaml has a gate of `stages` (YAML lines)."""
    fork = make_fork(tmp_path, make_upstream(tmp_path / "upstream"))
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x + 1\n")
    commit_all(fork, "glue: add one")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    with (fork / "series.yaml").open("a") as f:
        f.write("gate:\n  stages:\n" + stages)
    commit_all(fork, "pq: a gate")
    return fork


def test_the_verification_path_reads_the_latest_gate_record(tmp_path: Path) -> None:
    fork = fork_with_gate(tmp_path, "    - name: check\n      run: 'true'\n"
                                    "    - name: never\n      run: 'false'\n")
    before = pq(fork, "report").output
    assert "| check | — | not run |" in before and "no gate record of this tree yet" in before
    pq(fork, "gate", ok=False)
    data = json.loads(pq(fork, "report", "--json").output)["verification"]
    assert [(s["name"], s["status"]) for s in data["stages"]] == [("check", "passed"),
                                                                   ("never", "failed")]
    assert data["record"]["commit"] == git(fork, "rev-parse", "HEAD")
    assert data["record"]["status"] == "failed"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data["record"]["finished"])
    text = pq(fork, "report").output
    assert "| check | — | passed |" in text and "Latest whole gate run of this tree: failed" \
        in text
    assert f"({data['record']['finished']})" in text
    # A later `--stage` run that passes is not the gate's result: the whole run's stands.
    pq(fork, "gate", "--stage", "check")
    data = json.loads(pq(fork, "report", "--json").output)["verification"]
    assert (data["record"]["status"], data["record"]["partial"]) == ("failed", False)
    assert "Latest whole gate run of this tree: failed" in pq(fork, "report").output


def test_a_later_gate_that_skipped_a_stage_does_not_hide_its_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run without a GPU after one with it: the report showed only the newest record, so
    a GPU pass read as `skipped-no-gpu`."""
    fork = fork_with_gate(tmp_path, "    - name: check\n      run: 'true'\n"
                                    "    - name: gpu-check\n      run: 'true'\n"
                                    "      requires: [gpu]\n")
    monkeypatch.setenv("PQ_GPU", "1")
    pq(fork, "gate")
    monkeypatch.setenv("PQ_GPU", "0")
    pq(fork, "gate", "--force", ok=False)
    data = json.loads(pq(fork, "report", "--json").output)["verification"]
    assert [(s["name"], s["status"]) for s in data["stages"]] == [("check", "passed"),
                                                                   ("gpu-check", "passed")]


def test_lint_reads_a_patch_s_layer_as_export_and_classify_do(tmp_path: Path) -> None:
    """A kernel body line replaced by a c10:: call: `pq export` and `pq classify` say kernel
    (hunk by hunk, removed lines too); lint said cpp-compat from the added line alone, and
    called the declared layer wrong (LN001)."""
    import json

    from gitrepo import commit_all, git

    fork = example_fork(tmp_path)
    cu = fork / "csrc/cuda/scale_add.cu"
    text = cu.read_text()
    assert "    out[i] = x[i] + alpha * y[i];\n" in text
    cu.write_text(text.replace("    out[i] = x[i] + alpha * y[i];\n",
                               "    out[i] = c10::cuda::compat::fma(alpha, y[i], x[i]);\n"))
    commit_all(fork, "kernel: use fma")
    pq(fork, "export", "--commit")
    name = git(fork, "diff", "--name-only", "HEAD~2", "HEAD", "--", "patches").split()[-1]
    name = name.removeprefix("patches/")
    assert "kernel (cuda-kernel-hunk)" in pq(fork, "classify", f"patches/{name}").output
    data = json.loads(pq(fork, "lint", "--patch", name, "--json", ok=False).output)
    assert "LN001" not in {f["rule_id"] for f in data["findings"]}, data["findings"]


def test_a_workaround_in_a_cpp_compat_file_is_no_kernel_edit(tmp_path: Path) -> None:
    """A line added in csrc/ops.cc where the hunk shows no framework API (the file uses it
    elsewhere): `pq classify` says cpp-compat from the whole file, and so does the audit's
    WA012, which read the hunks alone and called it kernel code."""
    import json

    from gitrepo import commit_all

    fork = example_fork(tmp_path)
    ops = fork / "csrc/ops.cc"
    anchor = "  return PyModule_Create(&module_def);"
    assert anchor in ops.read_text()
    marker = "TODO(paddle-compat): remove after Paddle compat supports PyInit"
    ops.write_text(ops.read_text().replace(anchor, f"  // {marker}\n{anchor}"))
    commit_all(fork, "cpp-compat: note in PyInit")
    pq(fork, "export", "--commit")
    series = (fork / "series.yaml").read_text()
    at = series.rindex("\n  - name: ", 0, series.index("\ngate:")) + 1  # the new patch
    end = series.index("\n", series.index("layer:", at))
    block = ("\n    workaround:\n      kind: upstream-private\n      covers: [csrc/ops.cc]\n"
             "      reason: the module's init is private upstream\n"
             "      remove_when: ['manual: check']\n      issue: 'not-needed: private'\n"
             f"      marker: '{marker}'")
    (fork / "series.yaml").write_text(series[:end] + block + series[end:])
    data = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    name = series[at:].split("\n", 1)[0].removeprefix("  - name: ")
    assert "note-in-pyinit" in name
    mine = [f["rule_id"] for f in data["findings"] if f["patch"] == name]
    assert "WA012" not in mine, data["findings"]


def test_a_renamed_file_is_one_file_of_its_patch_and_an_upstream_file_touched(
        tmp_path: Path) -> None:
    """A patch that renames a file changes one file, as git and `pq series` count it; the
    boundary still counts upstream's file as touched (moved) and the new name as added."""
    fork = make_fork(tmp_path)
    git(fork, "mv", "setup.py", "setup_paddle.py")
    commit_all(fork, "build: rename setup")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    data = json.loads(pq(fork, "report", "--json").output)
    (patch,) = data["plan"]["patches"]
    assert patch["files"] == ["setup_paddle.py"]
    series = json.loads(pq(fork, "series", "--json").output)
    assert [p["files"] for p in series["patches"]] == [1]
    assert "setup.py" in data["boundary"]["touched"]
    assert data["boundary"]["created"] == ["setup_paddle.py"]
    (row,) = [line for line in pq(fork, "report").output.splitlines()
              if line.startswith("| 1 | `")]
    assert row.split(" | ")[3:5] == ["1", "+0 -0"], row  # the plan's Files column


def test_the_report_states_each_workaround_as_the_audit_reads_it(tmp_path: Path) -> None:
    """`issue: {not-needed: why}` and `- manual: ...` are mappings in YAML: the report
    printed Python's text of them, called a block without `kind` a "workaround" (the audit:
    none, WA001), and took an `acknowledged` rule that the audit and lint refuse."""
    fork = series_fork(tmp_path, ("python-glue: a shim", {"pkg/shim.py": "import torch\n"}),
                       ("python-glue: another", {"pkg/other.py": "x = 1\n"}))
    text = (fork / "series.yaml").read_text()
    shim = text.index("layer:", text.index("a-shim.patch"))
    other = text.index("layer:", text.index("another.patch"))
    end_shim, end_other = text.index("\n", shim), text.index("\n", other)
    first = ("\n    workaround:\n      kind: upstream-private\n      covers: [pkg/shim.py]\n"
             "      reason: private upstream\n      issue: {not-needed: upstream private}\n"
             "      remove_when:\n        - manual: upstream drops it\n        - paddle>=3.9")
    second = ("\n    workaround:\n      covers: [pkg/other.py]\n      reason: r\n"
              "      issue: 'not-needed: x'\n      remove_when: paddle >= 3.9")
    write(fork, "series.yaml", text[:end_shim] + first + text[end_shim:end_other] + second +
          text[end_other:])
    audit = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    data = json.loads(pq(fork, "report", "--json").output)
    shown = {w["patch"]: w for w in data["workarounds"]}
    for w in audit["workarounds"]:
        mine = shown[w["patch"]]
        assert (mine["kind"], mine["issue"]) == (w["kind"], w["issue"]), (mine, w)
        assert mine["remove_when"] == [c["condition"] for c in w["conditions"]], (mine, w)
    assert shown[next(iter(shown))]["remove_when"] == ["manual: upstream drops it",
                                                       "paddle >= 3.9"]
    assert [p["workaround"] for p in data["plan"]["patches"]] == ["upstream-private", None]
    markdown = pq(fork, "report").output
    assert "{'" not in markdown and "| `0002-python-glue-another.patch` | — |" in markdown
    bad = (fork / "series.yaml").read_text().replace(
        "      remove_when: paddle >= 3.9",
        "      remove_when: paddle >= 3.9\n    acknowledged: [{rule: WA099, reason: x}]")
    write(fork, "series.yaml", bad)
    for args in (["audit", "workarounds"], ["lint"], ["report"]):
        refused = pq(fork, *args, ok=False)
        assert refused.exit_code == 2 and "names no rule 'WA099'" in refused.output, args


def test_a_file_one_patch_adds_and_a_later_one_deletes_is_no_new_file(tmp_path: Path) -> None:
    """Patch 2 adds scratch.py, patch 3 deletes it: the boundary called it a new file of the
    series (`created`) and a touched file of its layer, though the tip has no such file."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import torch  # paddle\n")
    commit_all(fork, "glue: note")
    write(fork, "scratch.py", "x = 1\n")
    commit_all(fork, "glue: scratch")
    git(fork, "rm", "-q", "scratch.py")
    commit_all(fork, "glue: drop scratch")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    data = json.loads(pq(fork, "report", "--json").output)
    assert data["boundary"]["created"] == [], data["boundary"]
    assert data["boundary"]["touched"] == ["pkg/__init__.py"], data["boundary"]
    assert "scratch.py" not in pq(fork, "report").output.split("Touched files")[1]
