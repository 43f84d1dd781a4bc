"""Finding the repository pq works on: the `git rev-parse` that opens one from a folder
(or from GIT_DIR and GIT_WORK_TREE, as git takes them), and, when git will not, its
reason in one line."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from pq.errors import ConfigError
from pq.git.failures import stderr_reason
from pq.git.gateway import clean_env


def locate(path: Path, environment: bool = False, bare: bool = False
           ) -> tuple[Path, Path, Path, str]:
    """(working tree, git dir, common git dir, object format) of the repository at
    `path`; `environment`: the one GIT_DIR and GIT_WORK_TREE name when they are set (the
    command line's repository); `bare`: a bare repository is taken too, its git dir
    standing for the working tree it has not (for what reads commits only)."""
    if not path.is_dir():
        raise ConfigError(f"{path}: not a directory", hint="run pq inside a git repository")
    given = {k: os.environ[k] for k in ("GIT_DIR", "GIT_WORK_TREE") if os.environ.get(k)}
    if environment and given:
        top, named_dir = _named_by(path, given)
        try:
            found: tuple[Path, Path, Path, str] | None = locate(top)
        except ConfigError:  # no repository of its own there: the folder pq runs in, say
            found = None
        # (a subfolder of the clone taken for the tree: git's paths are not the clone's)
        if found is None or found[1].resolve() != named_dir.resolve() or \
                found[0].resolve() != top.resolve():
            # git takes the current folder for the tree (unless core.worktree names one)
            alone = "GIT_WORK_TREE" not in given and top.resolve() == path.resolve()
            raise ConfigError(
                f"{' and '.join(sorted(given))} name{'s' if len(given) == 1 else ''} the git "
                f"dir {named_dir}, which is not the .git of its working tree {top}"
                f"{' (the current folder: GIT_WORK_TREE is unset)' if alone else ''}: pq "
                "works in a working tree with its repository in it",
                hint="set GIT_WORK_TREE too, or unset GIT_DIR and run pq in the clone's working "
                     "tree" if alone else "unset GIT_DIR and GIT_WORK_TREE and run pq in a "
                     "clone's working tree")
        return found
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-object-format", "--show-toplevel",
         "--absolute-git-dir", "--git-common-dir"],
        capture_output=True,
        env=clean_env(),
    )
    if proc.returncode != 0 and b"must be run in a work tree" in proc.stderr and bare:
        proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-object-format",
                               "--absolute-git-dir", "--git-common-dir"],
                              capture_output=True, env=clean_env())
        lines = os.fsdecode(proc.stdout).splitlines()
        if proc.returncode == 0 and len(lines) == 3:
            lines.insert(1, lines[1])
            return _found(path, lines)
    if proc.returncode != 0 and b"must be run in a work tree" in proc.stderr:
        if subprocess.run(["git", "-C", str(path), "rev-parse", "--is-bare-repository"],
                          capture_output=True, env=clean_env()).stdout.strip() == b"false":
            raise ConfigError(f"{path.resolve()}: inside a repository's git folder (.git), "
                              "not its working tree", hint="run pq in the working tree (for "
                              "a .git folder, the folder that holds it)")
        raise ConfigError(f"{path.resolve()}: a bare repository has no working tree for pq",
                          hint="run pq in a clone of it, or in a worktree that `git "
                               "worktree add` makes")
    if proc.returncode != 0:
        raise _not_opened(path.resolve(), proc.stderr)
    lines = os.fsdecode(proc.stdout).splitlines()  # a folder name need not be UTF-8
    if len(lines) > 4:  # git names the folders one per line: a line break splits one
        raise ConfigError(f"{str(path.resolve())!r}: the repository's path holds a line "
                          "break, which pq cannot read from git's answers",
                          hint="rename the folder, or clone the repository to a path "
                               "without one, and run pq there")
    if len(lines) != 4:
        raise ConfigError(f"{path.resolve()}: a bare repository has no working tree for pq")
    if not _finds(Path(lines[1]), Path(lines[2])):  # run from a git dir whose
        raise ConfigError(  # core.worktree names its tree: no git there finds it again
            f"{path.resolve()}: the git dir {lines[2]} is kept apart from its working tree "
            f"{lines[1]} (core.worktree): pq works in a working tree with its repository "
            "in it", hint="move the git dir into its working tree as .git (and `git "
                          "config --unset core.worktree`), then run pq there")
    return _found(path, lines)


def _finds(root: Path, git_dir: Path) -> bool:
    """Whether git run in the working tree `root` finds `git_dir` there: its `.git` folder,
    or the `gitdir:` a `.git` file names (a linked worktree, a submodule)."""
    dot = root / ".git"
    try:
        if dot.is_dir():
            return dot.resolve() == git_dir.resolve()
        named = dot.read_bytes().decode("utf-8", "surrogateescape")
    except (OSError, RuntimeError):
        return False
    return named.startswith("gitdir: ") and (root / named[8:].strip()).resolve() == \
        git_dir.resolve()


def _found(path: Path, lines: list[str]) -> tuple[Path, Path, Path, str]:
    object_format, root, git_dir, common = lines
    common_path = Path(common)
    if not common_path.is_absolute():
        common_path = (path / common_path).resolve()
    return Path(root), Path(git_dir), common_path, object_format or "sha1"


def _not_opened(path: Path, stderr: bytes) -> ConfigError:
    """Why git would not open `path`: no repository there, or git's own reason (a folder
    another user owns, a repository format this git does not know)."""
    said = stderr_reason(stderr).removeprefix("fatal: ")
    if not stderr.strip() or b"not a git repository" in stderr:
        return ConfigError(f"{path}: not a git repository",
                           hint="run pq inside a git repository's working tree, or `git init` "
                                "one")
    if b"dubious ownership" in stderr:
        # git names the repository's top folder (pq may run in a folder under it).
        named = re.search(rb"dubious ownership in repository at '([^\n]*)'", stderr)
        top = os.fsdecode(named.group(1)) if named else str(path)
        return ConfigError(f"{top}: git refuses to work in a repository another user owns "
                           "(its safe.directory check)",
                           hint="if you trust it, `git config --global --add safe.directory "
                                f"{top}`, then run pq again")
    return ConfigError(f"{path}: git cannot open this repository: {said}",
                       hint="fix what git says (`git status` there shows it too), then run pq "
                            "again")


def _named_by(path: Path, given: dict[str, str]) -> tuple[Path, Path]:
    """(working tree, git dir) that GIT_DIR and GIT_WORK_TREE (`given`) name, from `path`."""
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel",
                           "--absolute-git-dir"], capture_output=True,
                          env={**clean_env(), **given})
    lines = os.fsdecode(proc.stdout).splitlines()
    if proc.returncode != 0 or len(lines) != 2:
        where = ", ".join(f"{k}={v}" for k, v in sorted(given.items()))
        raise ConfigError(f"{where}: git finds no working tree there "
                          f"({stderr_reason(proc.stderr).removeprefix('fatal: ')})",
                          hint="set GIT_DIR and GIT_WORK_TREE to a clone's .git and working "
                               "tree, or unset them and run pq in the working tree")
    return Path(lines[0]), Path(lines[1])

