"""`mre-passes` with the repository's real reproducers, run against the installed
paddlepaddle==3.3.1: gaps that are still there keep their workaround, an API that 3.3.1
covers makes its workaround removable. Slow (they import Paddle and build C++ ops)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.audit.auditfork import (
    ISSUE,
    OPS,
    Spec,
    audit,
    audit_json,
    build_fork,
    clean_specs,
    patch_names,
)

M_RESHAPE = "TODO(paddle#77015): remove after Paddle compat supports at::Tensor::reshape"


def reshape_spec() -> Spec:
    """A workaround for an API that 3.3.1 already covers: reshape spelled as view."""
    ops = OPS.replace("  at::Tensor out = torch::empty_like(x);\n",
                      f"  // {M_RESHAPE}\n  at::Tensor flat = x.contiguous().view({{-1}});\n"
                      "  at::Tensor out = torch::empty_like(flat);\n")
    return Spec("cpp-compat: flatten with view instead of reshape", {"csrc/ops.cc": ops},
                {"kind": "compat-gap", "covers": ["csrc/ops.cc::scale_add"],
                 "reason": "at::Tensor::reshape was believed to differ under compat",
                 "remove_when": ["mre-passes"], "issue": ISSUE.format(77015),
                 "mre": "mre/tensor-reshape", "marker": M_RESHAPE}, mre="real")


@pytest.mark.compat
def test_mre_passes_both_ways_with_real_reproducers(tmp_path: Path) -> None:
    specs = clean_specs()
    specs = [specs[0], specs[2], specs[3], reshape_spec()]
    for spec in specs:
        spec.mre = "real"
    fork = build_fork(tmp_path, specs)
    names = patch_names(fork)
    data = audit_json(fork, "--run-mre", "--strict")
    rows = {w["patch"]: w for w in data["workarounds"]}
    no_testing = "AttributeError: module 'paddle' has no attribute 'testing'"
    positional = "got multiple values for keyword argument 'include_dirs'"
    for gap, symptom in ((names[1], no_testing), (names[2], positional)):
        run = rows[gap]["mre_run"]
        assert run["exit_code"] == 1, run["output"]
        assert symptom in run["output"]
        assert rows[gap]["removal"] == "not met"
        assert rows[gap]["conditions"][0]["detail"].startswith("the reproducer fails (exit 1)")
    covered = rows[names[3]]
    assert covered["mre_run"]["exit_code"] == 0, covered["mre_run"]["output"]
    assert "OK: x.reshape({3, -1}) keeps dtype and values" in covered["mre_run"]["output"]
    assert covered["removal"] == "met"
    assert [(f["rule_id"], f["patch"]) for f in data["findings"]] == [("WA017", names[3])]
    assert data["exit_code"] == 1


@pytest.mark.compat
def test_issue_body_runs_the_reproducer_under_paddle_and_torch(tmp_path: Path) -> None:
    specs = clean_specs()[:3]
    specs[2].mre = "real"
    fork = build_fork(tmp_path, specs)
    code, out = audit(fork, "--issue-body", patch_names(fork)[2], "--run-mre")
    assert code == 0
    actual = out.split("### Actual behaviour")[1].split("###")[0]
    assert "`bash run.sh` (exit code 1," in actual
    assert "AttributeError: module 'paddle' has no attribute 'testing'" in actual
    under_torch = out.split("### The same code under PyTorch")[1].split("###")[0]
    assert "`MRE_BACKEND=torch bash run.sh` (exit code 0," in under_torch
    assert "OK: torch.testing.assert_close works" in under_torch
