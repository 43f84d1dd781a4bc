"""The hook file: the script `pq hook install` writes, and installing, chaining, replacing
and uninstalling it without ever deleting a hook pq did not write.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from pq.errors import ConfigError
from pq.git.repo import Git

HOOK_NAME = "pre-push"
CHAINED_SUFFIX = ".pre-pq"
REPLACED_SUFFIX = ".replaced-by-pq"  # a foreign hook that `install --force` set aside
MARKER = "# pq-hook: pre-push"
# Set for the hook pq's runs in turn (`--chain`): a hook manager that runs pq's hook from
# it (pre-commit's migration mode) would otherwise chain back to itself, round and round.
CHAINING = "PQ_HOOK_CHAINED"


def script(python: str | None) -> str:
    """The hook script; `hooks/pre-push` in pq's source is this with no interpreter. With
    one, it runs `python -P -m pq` while that interpreter still has pq (the package's
    folder is checked, not imported: no second interpreter per push); else pq on PATH,
    else a python3 that imports pq. `-P`: git runs hooks in the top folder, and a
    project's own `pq.py` there is not pq. The chained hook is found beside the script,
    under whatever name a hook manager gives the script itself."""
    package = _installed_at() if python else ""
    # (and pq's own files: an editable install's source moved away leaves its metadata)
    module = str(Path(__file__).resolve().parents[1] / "__init__.py") if python else ""
    return f"""#!/bin/sh
{MARKER} (written by `pq hook install`; `pq hook uninstall` removes it)
# Refuses a push whose branch, series.yaml and patches/ disagree: the same checks as
# `pq check`. `git push --no-verify` skips it; PQ_SKIP=gate (or all) skips checks, loudly.
PQ_PYTHON={shlex.quote(python or '')}
PQ_PACKAGE={shlex.quote(package)}
PQ_MODULE={shlex.quote(module)}
chained="$(dirname "$0")/{HOOK_NAME}{CHAINED_SUFFIX}"
if [ -e "$chained" ] && [ -z "${{{CHAINING}:-}}" ]; then
    set -- --chain "$chained" "$@"
fi
# -P: git runs hooks in the top folder, whose own pq.py or pq/ must not stand in for pq.
if [ -n "$PQ_PYTHON" ] && [ -x "$PQ_PYTHON" ] && [ -e "$PQ_PACKAGE" ] && [ -e "$PQ_MODULE" ]
then
    exec "$PQ_PYTHON" -P -m pq hook run "$@"
fi
if command -v pq >/dev/null 2>&1; then
    exec pq hook run "$@"
fi
if command -v python3 >/dev/null 2>&1 && python3 -P -c 'import pq' 2>/dev/null; then
    exec python3 -P -m pq hook run "$@"
fi
echo "pq: pre-push hook: pq is not installed (install it, or \\`git push --no-verify\\`)" >&2
exit 1
"""


def _installed_at() -> str:
    """What uninstalling pq from the running interpreter removes: its distribution's
    metadata folder (an editable install leaves the source, not this), else the package's
    own `__init__.py` (pq run from a source tree)."""
    from importlib import metadata

    try:
        found = getattr(metadata.distribution("pq"), "_path", None)
    except metadata.PackageNotFoundError:
        found = None
    if found is not None and Path(found).name.endswith(".dist-info"):
        return str(found)
    return str(Path(__file__).resolve().parents[1] / "__init__.py")


def hooks_dir(git: Git) -> Path:
    """Where git looks for hooks: core.hooksPath when set, else .git/hooks."""
    return git.git_path("hooks")


def _require_hooks_on(git: Git) -> None:
    """Refuse a core.hooksPath that turns git's hooks off (empty, /dev/null: not a folder),
    where a hook pq wrote would never run, or would land in the working tree."""
    found = git.config_matching(r"^core\.hookspath$")
    if "core.hookspath" not in found:
        return
    value = found["core.hookspath"]
    where = os.path.expanduser(value)
    if value and (not os.path.lexists(where) or os.path.isdir(where)):
        return  # a folder, or one pq makes
    raise ConfigError(f"core.hooksPath is {value!r}, which turns git's hooks off: a pre-push "
                      "hook would never run", hint="point it at a folder or unset it, where "
                      "`git config --show-origin core.hooksPath` says it is set; then `pq hook "
                      "install`")


def is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return MARKER.encode() in f.read(4096)
    except OSError:
        return False


@dataclass(frozen=True)
class InstallResult:
    path: Path
    action: str  # installed | updated | replaced
    chained: Path | None
    set_aside: Path | None = None  # a foreign hook moved to pre-push.replaced-by-pq
    older: Path | None = None  # where the hook set aside there before went (.1, .2, ...)
    # A relative core.hooksPath names a folder of each working tree: the hook's path in this
    # one. Another worktree of the repository looks in its own, which pq did not write to.
    in_worktree: str | None = None


def install(git: Git, *, force: bool = False, chain: bool = False,
            python: str | None = None) -> InstallResult:
    _require_hooks_on(git)
    path = hooks_dir(git) / HOOK_NAME
    _require_untracked(git, path)
    chained = path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    replaced = path.with_name(HOOK_NAME + REPLACED_SUFFIX)
    action = "installed"
    set_aside = older = None
    if os.path.lexists(path):
        if path.is_dir():
            raise ConfigError(f"{path} is a directory", hint="move it away first")
        if is_ours(path):
            action = "updated"
        elif chain:
            if os.path.lexists(chained) and not force:
                raise ConfigError(f"{chained} already exists",
                                  hint="remove it, or pass --force to replace it")
            if os.path.lexists(chained):
                set_aside, older = _set_aside(chained, replaced)
            os.replace(path, chained)
        elif force:
            action = "replaced"
            set_aside, older = _set_aside(path, replaced)
        else:
            raise ConfigError(f"{path} exists and was not written by pq",
                              hint="`pq hook install --chain` keeps it and runs it first; "
                                   "`--force` replaces it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileNotFoundError:  # a folder no one can make (under /proc, say)
        raise ConfigError(f"the hooks folder {path.parent} cannot be made",
                          hint="point core.hooksPath at a folder that can (`git config "
                               "core.hooksPath <folder>`), or unset it") from None
    tmp = path.with_name(f".{HOOK_NAME}.pq-tmp")
    tmp.write_text(script(python))
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    # Only a relative core.hooksPath is each worktree's own folder (an absolute one inside
    # this working tree is still one folder that every worktree looks in).
    configured = git.config_matching(r"^core\.hookspath$").get("core.hookspath", "")
    where = path.resolve()
    local = bool(configured) and not os.path.isabs(os.path.expanduser(configured)) \
        and where.is_relative_to(git.root.resolve())
    result = InstallResult(path, action, chained if os.path.lexists(chained) else None,
                           set_aside, older,
                           where.relative_to(git.root.resolve()).as_posix() if local else None)
    if set_aside is not None:
        from pq.oplog.txn import log_note

        log_note(git, "pq hook install --force" + (" --chain" if chain else ""),
                 f"replaced {set_aside}, which pq did not write; kept as {replaced.name}"
                 + (f"; the hook kept there before is now {older.name}" if older else ""))
    return result


def _require_untracked(git: Git, path: Path) -> None:
    """Refuse a hook that is a file of the fork's (a hooks folder git tracks, husky's
    `.husky/`): pq's hook in its place (or moved aside by `--chain`) would be an uncommitted
    change in every checkout, which `pq rebase` refuses, and its `git stash` takes pq's
    hook away again."""
    where = path.absolute()
    if not where.is_relative_to(git.root) or not git.ls_files(
            [where.relative_to(git.root).as_posix()], literal=True):
        return
    raise ConfigError(f"{where.relative_to(git.root).as_posix()} is a file of the fork's "
                      "(git tracks it): pq's hook in its place would be an uncommitted "
                      "change in every checkout", hint="call pq from it: add `pq hook run "
                      "\"$@\"` to it and commit that (git gives it the push's arguments and "
                      "input); or set core.hooksPath to a folder git does not track")


def _set_aside(hook: Path, replaced: Path) -> tuple[Path, Path | None]:
    """Move a hook pq did not write to `replaced`, never deleting one: (where it was, where
    an earlier hook set aside there went: `replaced`.1, .2, ..., unless it was the same)."""
    older = None
    if os.path.lexists(replaced):
        if not replaced.is_symlink() and not hook.is_symlink() \
                and replaced.read_bytes() == hook.read_bytes():
            replaced.unlink()  # the same hook again: nothing is lost
        else:
            taken = [int(p.name.rsplit(".", 1)[1]) for p in replaced.parent.glob(
                replaced.name + ".*") if p.name.rsplit(".", 1)[1].isdigit()]
            older = replaced.with_name(f"{replaced.name}.{max(taken, default=0) + 1}")  # newest
            os.replace(replaced, older)
    os.replace(hook, replaced)
    return hook, older


@dataclass(frozen=True)
class UninstallResult:
    path: Path
    removed: bool
    restored: bool
    foreign: bool
    restored_from: str | None = None


def uninstall(git: Git) -> UninstallResult:
    path = hooks_dir(git) / HOOK_NAME
    chained = path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    if not os.path.lexists(path):
        return UninstallResult(path, False, False, False)
    if not is_ours(path):
        return UninstallResult(path, False, False, True)
    os.unlink(path)
    restored = False
    restored_from = None
    for kept in (chained, path.with_name(HOOK_NAME + REPLACED_SUFFIX)):
        if os.path.lexists(kept):
            os.replace(kept, path)
            restored, restored_from = True, kept.name
            break
    return UninstallResult(path, True, restored, False, restored_from)
