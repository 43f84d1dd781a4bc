"""The gate stage `kind: compare`: its keys checked at their series.yaml line, and a run on the
gate's worktree (stand-in frameworks) that passes when the traces agree and fails naming
the first divergence."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fixtures.compare.stubs import frameworks, line_of
from fixtures.gate.gatefork import gate_fork, note, stage, stage_lines
from gitrepo import commit_all, pq, write

CHECK = '''import os
import pq
side = os.environ["PQ_COMPARE_SIDE"]
pq.observe("first", 1.0)
pq.observe("second", 2.0)
'''


def compare_stage(**keys: str) -> str:
    text = "    - name: compare\n      kind: compare\n"
    return text + "".join(f"      {k}: {v}\n" for k, v in keys.items())


BAD = [
    ("script type", compare_stage(script="[a]"), "script: [a]", "`script` must be a non-empty"),
    ("no script", compare_stage(package="tinyop"), "- name: compare", "needs `script`"),
    ("tolerance pair", compare_stage(script="c.py", tolerance="{float32: [1e-6, -1]}"),
     "tolerance:", "tolerance float32 must be [rtol, atol]"),
    ("tolerance dtype", compare_stage(script="c.py", tolerance="{flaot32: [1, 1]}"),
     "tolerance:", "tolerance for 'flaot32', no dtype a tensor is recorded with (did you mean "
     "float32?)"),
    ("tolerance type", compare_stage(script="c.py", tolerance="loose"), "tolerance: loose",
     "`tolerance` must map dtypes"),
    ("path type", compare_stage(script="c.py", torch_path="{a: 1}"), "torch_path:",
     "`torch_path` must be a folder or a list"),
    ("seed", compare_stage(script="c.py", seed="x"), "seed: x", "`seed` must be an integer"),
    ("key on a run stage", stage("build", "true", script="c.py"), "script: c.py",
     "`script` belongs to `kind: compare` stages"),
]


@pytest.mark.parametrize("case,stages,marker,message", BAD, ids=[b[0] for b in BAD])
def test_bad_compare_keys_point_at_the_line(tmp_path: Path, case: str, stages: str,
                                            marker: str, message: str) -> None:
    fork = gate_fork(tmp_path, stage_lines(stages))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2, result.output
    lines = (fork / "series.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if marker in t)
    assert f"series.yaml:{line}:" in result.output, result.output
    assert message in result.output and "Traceback" not in result.output


def test_compare_stage_passes_then_fails_at_the_divergence(tmp_path: Path) -> None:
    fw = frameworks(tmp_path / "fw")
    paths = f"[{fw}]"
    gate = stage_lines(stage("build", "true"),
                       compare_stage(script="check.py", torch_path=paths,
                                     paddle_path=f"[{fw}, .]", seed="3"))
    fork = gate_fork(tmp_path, gate, files={"check.py": CHECK})
    result = pq(fork, "gate", "--json", ok=False)
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.stdout
    stages = {s["name"]: s for s in data["stages"]}
    assert stages["compare"]["status"] == "passed" and data["status"] == "passed"
    assert stages["compare"]["duration_s"] > 0  # the two runs' time is the stage's
    log_text = Path(stages["compare"]["log"]).read_text()
    assert stages["compare"]["log_sha256"] == hashlib.sha256(log_text.encode()).hexdigest()
    log = json.loads(log_text.split("\n", 1)[1])
    assert log["status"] == "agree" and log["observations"] == {"torch": 2, "paddle": 2}

    planted = CHECK.replace('pq.observe("second", 2.0)',
                            'pq.observe("second", 2.0 if side == "torch" else 2.5)')
    write(fork, "check.py", planted)
    commit_all(fork, "python-glue: a port that changes the second value")
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1, result.output
    line = line_of(planted.splitlines(), '"second"')
    rec = note(fork)
    compare = next(s for s in rec["stages"] if s["name"] == "compare")
    assert compare["status"] == "failed" and compare["exit_code"] == 1
    assert "observe second: result: 2.0 vs 2.5" in compare["detail"]
    assert f"at check.py:{line} (python-glue)" in compare["detail"]
    assert "result: failed" in result.output and compare["detail"] in result.output


def test_compare_stage_without_keys_stays_not_available(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", "true"), compare_stage()))
    data = json.loads(pq(fork, "gate", "--json").stdout)
    compare = next(s for s in data["stages"] if s["name"] == "compare")
    assert compare["status"] == "not-available" and "without `script`" in compare["detail"]
