"""`pq import` on forks grown the way real ones grow (issue 15): a `paddle` branch kept alive
by merging upstream and its own pull-request branches, migration edits in every layer spread
over many commits, a conflict resolved inside a merge, a fork-only file, an upstream file
deleted, a mode change, a binary file, a rename and non-UTF-8 text.

Every expected fact comes from git itself, read before the import (the original tip, its
tree, the base `git merge-base`), never from pq."""

from __future__ import annotations

import json
from pathlib import Path

from gitrepo import commit_all, git, make_upstream, pq, tree_without_queue, worktree_files, write

BRANCH = "paddle"
UPSTREAM = "upstream/main"
LAYERS = {"build", "cpp-compat", "kernel", "python-glue"}

UPSTREAM_FILES = {
    "setup.py": "from torch.utils import cpp_extension\n\nsetup(name='x', ext_modules=[])\n",
    "csrc/ops.cc": "#include <torch/extension.h>\n\nat::Tensor add(at::Tensor a) {\n"
                   "  return a + 1;\n}\n",
    "csrc/kernel.cu": "__global__ void scale(float* x, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) x[i] = x[i] * 2.0f;\n}\n",
    "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return torch.relu(x)\n",
    "pkg/legacy.py": "def old_api():\n    return 'legacy'\n",
    "pkg/old_name.py": "".join(f"VALUE_{k} = {k}\n" for k in range(12)),
    "tests/test_op.py": "import torch\n\n\ndef test_op():\n    assert torch.ones(1)\n",
    "README.md": "upstream\n",
}
LATIN1 = "pkg/locale_table.py"
LATIN1_UPSTREAM = b"# -*- coding: latin-1 -*-\nNAMES = ['caf\xe9', 'na\xefve']\n"
LATIN1_FORK = b"# -*- coding: latin-1 -*-\nNAMES = ['caf\xe9', 'na\xefve', 'se\xf1or']\n"
BINARY = "data/weights.bin"
BINARY_UPSTREAM = bytes(range(256)) * 4
BINARY_FORK = bytes(reversed(range(256))) * 4 + b"\x00paddle\x00"
SCRIPT = "scripts/run.sh"

SUBJECT_BUILD = "build: link the extension against paddle's compat library"


def upstream_repo(root: Path) -> Path:
    """Upstream `main`: several commits, including the latin-1, binary and script files."""
    up = make_upstream(root, UPSTREAM_FILES)
    write(up, LATIN1, LATIN1_UPSTREAM)
    write(up, BINARY, BINARY_UPSTREAM)
    write(up, SCRIPT, "#!/bin/sh\npython -m pytest tests\n", mode=0o644)
    commit_all(up, "upstream: locale table, reference weights, test script")
    return up


def upstream_commit(up: Path, rel: str, text: str, message: str) -> None:
    write(up, rel, text)
    commit_all(up, message)


def merge_upstream(fork: Path) -> None:
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "--no-edit", "--no-ff", UPSTREAM)


def merge_pr(fork: Path, branch: str, number: int) -> None:
    git(fork, "checkout", "-q", BRANCH)
    git(fork, "merge", "-q", "--no-ff", branch, "-m",
        f"Merge pull request #{number} from paddle-fork/{branch}")


def merge_fork(tmp: Path) -> Path:
    """A merge-maintained fork: migration commits interleaved with three merges of upstream
    (the last one resolves a conflict inside the merge commit) and two merged pull-request
    branches; upstream then has one more commit the fork has not merged yet."""
    up = upstream_repo(tmp / "upstream")
    fork = tmp / "fork"
    git(tmp, "clone", "-q", "-o", "upstream", str(up), str(fork))
    git(fork, "checkout", "-q", "-b", BRANCH)

    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\n"
          "setup(name='x', ext_modules=[])\n")
    commit_all(fork, SUBJECT_BUILD)
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nat::Tensor add(at::Tensor a) {\n"
          "  TORCH_CHECK(a.defined(), \"add: undefined tensor\");\n  return a + 1;\n}\n")
    commit_all(fork, "csrc: check inputs the way paddle's compat layer wants")

    upstream_commit(up, "pkg/util.py", "def helper():\n    return 2\n\n\ndef other():\n"
                    "    return 3\n", "upstream: add other()")
    upstream_commit(up, "README.md", "upstream\n\nNow with docs.\n", "upstream: docs")
    merge_upstream(fork)  # a clean merge of upstream

    git(fork, "checkout", "-q", "-b", "pr/kernel")
    write(fork, "csrc/kernel.cu", "__global__ void scale(float* x, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) x[i] = x[i] * 2.0f + 0.0f;\n}\n")
    commit_all(fork, "kernel: keep the scale kernel exact on paddle")
    git(fork, "mv", "pkg/old_name.py", "pkg/new_name.py")
    commit_all(fork, "pkg: rename old_name to new_name")
    merge_pr(fork, "pr/kernel", 1)

    git(fork, "rm", "-q", "pkg/legacy.py")
    (fork / SCRIPT).chmod(0o755)
    write(fork, BINARY, BINARY_FORK)
    commit_all(fork, "drop legacy api, executable test script, paddle weights")
    write(fork, "pkg/__init__.py", "import torch\n\ntry:\n    import paddle_compat\n"
          "except ImportError:\n    paddle_compat = None\n\n\ndef op(x):\n"
          "    # TODO: workaround until paddle has relu on this dtype\n"
          "    return torch.relu(x)\n")
    write(fork, "pkg/paddle_shim.py", "def shim():\n    return 'paddle'\n")
    commit_all(fork, "pkg: guard the compat import, add the paddle shim")

    upstream_commit(up, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n"
                    "    return torch.nn.functional.relu(x)\n", "upstream: functional relu")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "merge", "-q", "--no-edit", UPSTREAM, check=False)
    assert "pkg/__init__.py" in git(fork, "diff", "--name-only", "--diff-filter=U")
    write(fork, "pkg/__init__.py", "import torch\n\ntry:\n    import paddle_compat\n"
          "except ImportError:\n    paddle_compat = None\n\n\ndef op(x):\n"
          "    # TODO: workaround until paddle has relu on this dtype\n"
          "    return torch.nn.functional.relu(x)\n")
    git(fork, "add", "pkg/__init__.py")
    git(fork, "commit", "-q", "--no-edit")  # the conflict resolved inside the merge commit

    git(fork, "checkout", "-q", "-b", "pr/tests")
    write(fork, "tests/test_op.py", "import torch\n\n\ndef test_op():\n"
          "    assert torch.ones(1)\n\n\ndef test_paddle():\n    import paddle_compat\n")
    commit_all(fork, "tests: cover the paddle path")
    write(fork, LATIN1, LATIN1_FORK)
    commit_all(fork, "pkg: one more locale name")
    merge_pr(fork, "pr/tests", 2)

    upstream_commit(up, "pkg/extra.py", "EXTRA = 1\n", "upstream: extra module (not merged)")
    git(fork, "fetch", "-q", "upstream")
    return fork


def linear_fork(tmp: Path) -> Path:
    """A fork without merges: three migration commits straight on upstream."""
    up = upstream_repo(tmp / "upstream")
    fork = tmp / "fork"
    git(tmp, "clone", "-q", "-o", "upstream", str(up), str(fork))
    git(fork, "checkout", "-q", "-b", BRANCH)
    write(fork, "setup.py", "from paddle.utils import cpp_extension\n\n"
          "setup(name='x', ext_modules=[])\n")
    commit_all(fork, SUBJECT_BUILD)
    write(fork, "pkg/__init__.py", "import paddle as torch\n\n\ndef op(x):\n"
          "    return torch.relu(x)\n")
    commit_all(fork, "pkg: import paddle as torch")
    write(fork, "tests/test_op.py", "import paddle\n\n\ndef test_op():\n"
          "    assert paddle.ones([1])\n")
    commit_all(fork, "tests: run on paddle")
    return fork


class Facts:
    """What git says of the fork before the import."""

    def __init__(self, fork: Path) -> None:
        self.tip = git(fork, "rev-parse", BRANCH)
        self.tree = tree_without_queue(fork, BRANCH)
        self.base = git(fork, "merge-base", BRANCH, UPSTREAM)
        self.changed = git(fork, "diff", "--name-only", "--no-renames", self.base,
                           BRANCH).splitlines()


def state(fork: Path) -> tuple[str, str, str, dict[str, bytes]]:
    """Refs, HEAD, the index and the working tree, as bytes and text git prints."""
    return (git(fork, "for-each-ref", "--format=%(objectname) %(refname)"),
            git(fork, "symbolic-ref", "HEAD") + " " + git(fork, "rev-parse", "HEAD"),
            git(fork, "ls-files", "-s"), worktree_files(fork))


def series_names(fork: Path) -> list[str]:
    return [p["name"] for p in json.loads(pq(fork, "series", "--json").output)["patches"]]


def imported(tmp: Path) -> tuple[Path, Facts]:
    fork = merge_fork(tmp)
    facts = Facts(fork)
    pq(fork, "import", "--upstream", UPSTREAM)
    return fork, facts


# -- the builder itself ------------------------------------------------------------------


def test_builder_grows_a_merge_maintained_fork(tmp_path: Path) -> None:
    """The fork really has what the import tests rely on (checked with git only)."""
    fork = merge_fork(tmp_path)
    facts = Facts(fork)
    merges = git(fork, "rev-list", "--merges", "--format=%s", "--no-commit-header",
                 BRANCH).splitlines()
    assert len(merges) == 4 and sum(s.startswith("Merge pull request") for s in merges) == 2
    assert facts.base != git(fork, "rev-parse", UPSTREAM)  # upstream has one unmerged commit
    status = dict(line.split("\t", 1)[::-1] for line in git(
        fork, "diff", "--name-status", "--no-renames", facts.base, BRANCH).splitlines())
    assert status["pkg/paddle_shim.py"] == "A" and status["pkg/legacy.py"] == "D"
    assert status["pkg/old_name.py"] == "D" and status["pkg/new_name.py"] == "A"
    assert "old mode 100644\nnew mode 100755" in git(fork, "diff", facts.base, BRANCH, "--",
                                                     SCRIPT)
    assert "Binary files" in git(fork, "diff", facts.base, BRANCH, "--", BINARY)
    assert git(fork, "rev-parse", f"{BRANCH}:{LATIN1}") \
        == git(fork, "hash-object", "--stdin", input=LATIN1_FORK)  # non-UTF-8, byte for byte
    assert {"setup.py", "csrc/ops.cc", "csrc/kernel.cu", "tests/test_op.py"} <= set(status)
    # The conflict resolution lives in a merge commit: its pkg/__init__.py is neither
    # parent's.
    resolved = [m for m in git(fork, "rev-list", "--merges", BRANCH).splitlines()
                if len({git(fork, "rev-parse", f"{c}:pkg/__init__.py")
                        for c in (m, f"{m}^1", f"{m}^2")}) == 3]
    assert len(resolved) == 1


# -- pq import on the merge-maintained fork ----------------------------------------------


def test_import_reproduces_the_branch_tree_on_a_linear_history(tmp_path: Path) -> None:
    fork, facts = imported(tmp_path)
    assert git(fork, "symbolic-ref", "--short", "HEAD") == BRANCH
    assert tree_without_queue(fork, "HEAD") == facts.tree  # byte for byte, modes included
    assert git(fork, "status", "--porcelain") == ""
    assert git(fork, "rev-list", "--merges", f"{facts.base}..HEAD") == ""
    git(fork, "merge-base", "--is-ancestor", facts.base, "HEAD")
    names = series_names(fork)
    assert names and all((fork / "patches" / n).is_file() for n in names)
    # base..HEAD is the patches, one commit each, and the bookkeeping commit on top.
    assert int(git(fork, "rev-list", "--count", f"{facts.base}..HEAD")) == len(names) + 1
    assert git(fork, "rev-parse", f"refs/pq/orig-head/{BRANCH}") == facts.tip
    pq(fork, "series")


def test_import_never_mixes_layers_and_covers_every_layer(tmp_path: Path) -> None:
    fork, facts = imported(tmp_path)
    paths = [f"patches/{n}" for n in series_names(fork)]
    decided = json.loads(pq(fork, "classify", "--json", *paths).output)["files"]
    seen: set[str] = set()
    touched: set[str] = set()
    for d in decided:
        lays = {h["layer"] for h in d["hunks"]} - {"docs"}
        assert len(lays) <= 1, (d["path"], d["hunks"])
        seen |= lays
        touched |= {h["path"] for h in d["hunks"]}
    assert seen == LAYERS
    assert set(facts.changed) <= touched | {"pkg/old_name.py", "pkg/new_name.py"}
    declared = {p["name"]: p["layer"] for p in json.loads(
        pq(fork, "series", "--json").output)["patches"]}
    assert {f"patches/{n}": lay for n, lay in declared.items()} \
        == {d["path"]: d["layer"] for d in decided}
    lint = json.loads(pq(fork, "lint", "--json", ok=False).output)
    rules = {f["rule_id"] for f in lint["findings"]}
    assert not rules & {"LN001", "LN002"}, lint["findings"]


def test_import_keeps_messages_and_drafts_workarounds(tmp_path: Path) -> None:
    fork, _facts = imported(tmp_path)
    texts = [(fork / "patches" / n).read_bytes() for n in series_names(fork)]
    # setup.py changed in one non-merge commit only: that patch keeps the commit's message.
    assert sum(SUBJECT_BUILD.encode() in t for t in texts) == 1
    entries = json.loads(pq(fork, "series", "--json").output)["patches"]
    drafts = [e for e in entries if e["workaround"]]
    assert drafts, entries
    guarded = [e["name"] for e in drafts
               if b"pkg/__init__.py" in (fork / "patches" / e["name"]).read_bytes()]
    assert guarded, drafts
    # Marked for review in series.yaml, under the entry of the guarded patch.
    entry = (fork / "series.yaml").read_text().split(f"name: {guarded[0]}\n", 1)[1]
    entry = entry.split("\n  - name:", 1)[0]
    assert "workaround:" in entry and "review" in entry.lower(), entry


def test_rebase_works_right_after_import(tmp_path: Path) -> None:
    fork, facts = imported(tmp_path)
    up = tmp_path / "upstream"
    upstream_commit(up, "pkg/extra2.py", "EXTRA2 = 2\n", "upstream: moves on")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", UPSTREAM)
    git(fork, "merge-base", "--is-ancestor", UPSTREAM, "HEAD")
    expected = dict(facts.tree)
    for line in git(fork, "ls-tree", "-r", UPSTREAM, "--", "pkg/extra.py",
                    "pkg/extra2.py").splitlines():
        meta, path = line.split("\t", 1)
        expected[path] = meta
    assert tree_without_queue(fork, "HEAD") == expected
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "series")


def test_undo_brings_back_the_original_tip(tmp_path: Path) -> None:
    fork = merge_fork(tmp_path)
    before = state(fork)
    pq(fork, "import", "--upstream", UPSTREAM)
    assert git(fork, "rev-parse", BRANCH) != before[1].split()[1]
    pq(fork, "undo")
    refs, head, index, files = state(fork)
    assert head == before[1] and index == before[2] and files == before[3]
    branch_refs = [ln for ln in refs.splitlines() if ln.endswith(f" refs/heads/{BRANCH}")]
    assert branch_refs == [ln for ln in before[0].splitlines()
                           if ln.endswith(f" refs/heads/{BRANCH}")]


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    fork = merge_fork(tmp_path)
    before = state(fork)
    result = pq(fork, "import", "--upstream", UPSTREAM, "--dry-run")
    assert state(fork) == before
    assert not (fork / "series.yaml").exists() and not (fork / "patches").exists()
    for layer in LAYERS:
        assert layer in result.output, result.output


def test_json_summary_names_base_branch_and_patches(tmp_path: Path) -> None:
    fork = merge_fork(tmp_path)
    facts = Facts(fork)
    data = json.loads(pq(fork, "import", "--upstream", UPSTREAM, "--json").output)
    base = str(data["base"])
    assert len(base) >= 7 and facts.base.startswith(base), data["base"]
    assert BRANCH in str(data["branch"])
    listed = [p if isinstance(p, str) else p["name"] for p in data["patches"]]
    assert listed == series_names(fork)


def test_dry_run_json_matches_the_real_import(tmp_path: Path) -> None:
    fork = merge_fork(tmp_path)
    plan = json.loads(pq(fork, "import", "--upstream", UPSTREAM, "--dry-run", "--json").output)
    done = json.loads(pq(fork, "import", "--upstream", UPSTREAM, "--json").output)
    assert plan["patches"] == done["patches"] and plan["base"] == done["base"]


def test_unknown_upstream_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    fork = merge_fork(tmp_path)
    before = state(fork)
    result = pq(fork, "import", "--upstream", "upstream/no-such-branch", ok=False)
    assert "No such command" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert "upstream/no-such-branch" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert state(fork) == before


# -- --keep-commits ------------------------------------------------------------------------


def test_keep_commits_on_a_linear_fork_keeps_one_patch_per_commit(tmp_path: Path) -> None:
    fork = linear_fork(tmp_path)
    facts = Facts(fork)
    subjects = git(fork, "log", "--reverse", "--format=%s", f"{facts.base}..{BRANCH}"
                   ).splitlines()
    result = pq(fork, "import", "--upstream", UPSTREAM, "--keep-commits")
    # The summary says which mode ran and why (`mode: ...`).
    mode = [ln for ln in result.output.splitlines() if ln.strip().startswith("mode:")]
    assert len(mode) == 1 and "kept" in mode[0] and "3" in mode[0], result.output
    names = series_names(fork)
    assert len(names) == len(subjects) == 3
    texts = [(fork / "patches" / n).read_bytes() for n in names]
    for subject, text in zip(subjects, texts, strict=True):
        assert subject.encode() in text, (subject, text[:300])
    assert tree_without_queue(fork, "HEAD") == facts.tree
    assert int(git(fork, "rev-list", "--count", f"{facts.base}..HEAD")) == len(names) + 1


def test_keep_commits_on_a_merge_fork_still_reproduces_the_tree(tmp_path: Path) -> None:
    """The conflict resolved in a merge cannot replay linearised: pq falls back to
    regrouping (and says so), and the tree is still the branch's."""
    fork = merge_fork(tmp_path)
    facts = Facts(fork)
    result = pq(fork, "import", "--upstream", UPSTREAM, "--keep-commits")
    assert "regroup" in result.output.lower(), result.output
    assert tree_without_queue(fork, "HEAD") == facts.tree
    pq(fork, "series")
