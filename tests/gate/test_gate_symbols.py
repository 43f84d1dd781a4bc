"""Undefined symbols in built extension modules: named, with the source that uses them,
before any later stage imports the library (which would die with exit 127)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.gate.gatefork import gate_fork, note, stage, stage_lines
from gitrepo import commit_all, git, pq, write

from pq.gate import symbols

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ldd") is None,
                                reason="needs g++ and ldd")

BROKEN = """\
namespace at {
int tensor(int value);  // declared by a header, defined nowhere: links, dies at load
}

extern "C" void* PyLong_FromLong(long);  // the interpreter provides it

int make() {
  PyLong_FromLong(1);
  return at::tensor(1);
}
"""

CLEAN = """\
extern "C" void* PyLong_FromLong(long);

int twice(int x) { PyLong_FromLong(x); return 2 * x; }
"""

BUILD = "mkdir -p pkg && g++ -shared -fPIC -o pkg/_C.so csrc/ops.cc && " \
        "g++ -shared -fPIC -o pkg/_clean.so csrc/clean.cc"


def test_undefined_symbol_is_named_with_its_source(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", BUILD), stage("import", "echo importing; exit 127")),
        files={"csrc/ops.cc": BROKEN, "csrc/clean.cc": CLEAN})
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1, result.output
    assert "undefined symbol _ZN2at6tensorEi in pkg/_C.so (at::tensor(int))" in result.output
    assert "used in csrc/ops.cc:9" in result.output
    assert "PyLong_FromLong" not in result.output
    assert "in pkg/_clean.so" not in result.output
    rec = note(fork)
    assert [s["status"] for s in rec["stages"]] == ["failed", "not-run"]
    assert "undefined symbol _ZN2at6tensorEi" in rec["stages"][0]["detail"]
    log = (fork / ".git/pq/gate/logs" / rec["tip"] / "build.log").read_text()
    assert "undefined symbol _ZN2at6tensorEi in pkg/_C.so" in log


def test_clean_libraries_pass(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, stage_lines(stage("build", BUILD)),
                     files={"csrc/ops.cc": CLEAN, "csrc/clean.cc": CLEAN})
    assert pq(fork, "gate").exit_code == 0


def test_only_newly_built_libraries_are_checked(tmp_path: Path) -> None:
    fork = gate_fork(tmp_path, "", files={"csrc/ops.cc": BROKEN, "csrc/clean.cc": CLEAN})
    subprocess.run(["g++", "-shared", "-fPIC", "-o", "prebuilt.so", "csrc/ops.cc"], cwd=fork,
                   check=True)
    commit_all(fork, "python-glue: a prebuilt library")
    from fixtures.gate.gatefork import set_gate
    set_gate(fork, stage_lines(stage("build", "g++ -shared -fPIC -o c.so csrc/clean.cc")))
    assert pq(fork, "gate").exit_code == 0
    # check_symbols: false turns the check off; check_symbols: true turns it on elsewhere.
    set_gate(fork, stage_lines(stage("build", "g++ -shared -fPIC -o b.so csrc/ops.cc",
                                     check_symbols="false")))
    assert pq(fork, "gate").exit_code == 0
    set_gate(fork, stage_lines(stage("compile", "g++ -shared -fPIC -o b.so csrc/ops.cc",
                                     check_symbols="true")))
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1 and "in b.so (at::tensor(int))" in result.output


def test_copies_of_one_library_are_reported_once(tmp_path: Path) -> None:
    build = ("mkdir -p build/lib pkg && g++ -shared -fPIC -o build/lib/_C.so csrc/ops.cc && "
             "cp build/lib/_C.so pkg/_C.so")
    fork = gate_fork(tmp_path, stage_lines(stage("build", build)),
                     files={"csrc/ops.cc": BROKEN})
    pq(fork, "gate", ok=False)
    rec = note(fork)
    log = (fork / ".git/pq/gate/logs" / rec["tip"] / "build.log").read_text()
    assert log.count("undefined symbol _ZN2at6tensorEi") == 1
    assert "and 1 more" not in rec["stages"][0]["detail"]


def test_name_parts_and_source_lookup() -> None:
    assert symbols.name_parts("float const* at::Tensor::const_data_ptr<float, 0>() const") \
        == ["at", "Tensor", "const_data_ptr"]
    assert symbols.name_parts("at::tensor(c10::ArrayRef<float>, c10::TensorOptions const&)") \
        == ["at", "tensor"]
    assert symbols.name_parts("vtable for torch::autograd::AutogradMeta") == \
        ["torch", "autograd", "AutogradMeta"]
    assert symbols.name_parts("missing_fn") == ["missing_fn"]
    texts = {
        "csrc/ops.cc": ["#include <torch/extension.h>", "  auto p = x.const_data_ptr<float>();",
                        "  auto t = at::tensor({1.0f});", "  // tensor of ones"],
        "csrc/other.cu": ["y->const_data_ptr<float>()"],
    }
    assert symbols.find_uses(texts, "_ZNK2at6Tensor14const_data_ptrIfLi0EEEPKT_v",
                             "float const* at::Tensor::const_data_ptr<float, 0>() const") == \
        ["csrc/ops.cc:2", "csrc/other.cu:1"]
    # The qualified use wins over a bare word in a comment.
    assert symbols.find_uses(texts, "_ZN2at6tensorE",
                             "at::tensor(c10::ArrayRef<float>, c10::TensorOptions const&)") == \
        ["csrc/ops.cc:3"]
    assert symbols.find_uses(texts, "nowhere", "nowhere") == []


def test_demangle_keeps_c_names() -> None:
    names = symbols.demangle(["_ZN2at6tensorEi", "plain_c"])
    assert names == {"_ZN2at6tensorEi": "at::tensor(int)", "plain_c": "plain_c"}


@pytest.mark.compat
def test_paddle_compat_build_names_the_api_that_dies_at_load(tmp_path: Path) -> None:
    """The measured Paddle 3.3.1 gap: `const_data_ptr` compiles and links under the compat
    headers but is missing from libpaddle; the gate names it and the line of ops.cc."""
    pytest.importorskip("paddle")
    import sys

    example = Path(__file__).parents[2] / "src/pq/demo/example/upstream"
    files = {str(p.relative_to(example)): p.read_text() for p in example.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    files["setup.py"] = "import paddle\npaddle.enable_compat()\n" + files["setup.py"].replace(
        '"tinyop._C",\n            ["csrc/ops.cc", "csrc/kernel/scale_add.cc"],',
        'name="tinyop._C",\n            sources=["csrc/ops.cc", "csrc/kernel/scale_add.cc"],')
    ops = files["csrc/ops.cc"].replace("#include <torch/extension.h>\n",
                                       "#include <torch/extension.h>\n#include <torch/library.h>\n")
    files["csrc/ops.cc"] = ops.replace("xc.data_ptr<float>()", "xc.const_data_ptr<float>()")
    fork = gate_fork(tmp_path, stage_lines(
        stage("build", '"$PYTHON" setup.py build_ext --inplace', timeout="900"),
        stage("import", '"$PYTHON" -c "import tinyop"'), python=sys.executable), files=files)
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 1, result.output
    assert "const_data_ptr" in result.output and "used in csrc/ops.cc:" in result.output
    assert "not run" in result.output  # the import never ran, so never died with 127
    assert git(fork, "status", "--porcelain") == ""
    write(fork, "unused.txt", "")  # the user's tree is still writable and ours


def test_a_library_whose_name_is_not_utf8_is_checked(tmp_path: Path) -> None:
    """ldd's lines were read with U+FFFD for the name's byte, and compared with the path's
    own (surrogate) text: no finding matched the library, a false pass."""
    build = "g++ -shared -fPIC -o \"$(printf '\\377')m.so\" csrc/ops.cc"
    fork = gate_fork(tmp_path, stage_lines(stage("build", build)),
                     files={"csrc/ops.cc": BROKEN})
    result = subprocess.run([sys.executable, "-m", "pq", "gate"], cwd=fork, timeout=120,
                            capture_output=True, check=False)
    out = (result.stdout + result.stderr).decode("utf-8", "replace")
    assert result.returncode == 1, out
    assert "undefined symbol _ZN2at6tensorEi in " in out, out


def test_a_versioned_library_is_checked_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    """CMake's VERSION builds make `libx.so` a link to `libx.so.1`: links were passed
    over, and the library was never checked (a false pass). A fifo named `out.so` blocked
    the check for good."""
    build = ("g++ -shared -fPIC -o libm2.so.1 csrc/ops.cc && ln -s libm2.so.1 libm2.so && "
             "mkfifo out.so")
    fork = gate_fork(tmp_path, stage_lines(stage("build", build)),
                     files={"csrc/ops.cc": BROKEN, "csrc/clean.cc": CLEAN})
    result = subprocess.run([sys.executable, "-m", "pq", "gate"], cwd=fork, timeout=120,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "undefined symbol _ZN2at6tensorEi in libm2.so.1" in result.stdout + result.stderr
    found = tmp_path / "found"
    (found / "sub").mkdir(parents=True)
    for name in ("libx.so.1", "libx.so.1.2.3", "sub/a.so", "b.so.txt", "c.sox"):
        (found / name).write_bytes(b"\x7fELF")
    (found / "libx.so").symlink_to("libx.so.1")
    os.mkfifo(found / "out.so")
    assert set(symbols.shared_objects(found)) == {"libx.so.1", "libx.so.1.2.3", "sub/a.so"}
