"""pq's pre-push checks, in the order they run: series, base, export, apply, markers,
audit, gate.

Each registers itself with `pq.push.registry.check`; a failure names the problem and the
command that fixes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pq.errors import ConfigError, OperationFailed
from pq.git.objects import CommitId, Person, TreeId
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.push.registry import (
    PASSED,
    UNAVAILABLE,
    CheckContext,
    CheckFailure,
    CheckUnavailable,
    check,
)
from pq.quoting import shown

if TYPE_CHECKING:
    from collections.abc import Callable

    from pq.queue.files import Queue

# Patches that match their commits but do not rebuild the tree: rebuild and compare.
_REBUILD = "pq apply --branch rebuilt, then `git diff rebuilt` shows what the patches lose"

# A fixed identity for the throwaway commits of the apply check: no `git var` per run.
_CHECKER = Person("pq check", "pq@localhost", "0 +0000")


def _queue(ctx: CheckContext) -> Queue:
    assert ctx.queue is not None, "checks that need the queue declare needs=('series',)"
    return ctx.queue


def _subject(git: Git, commit: str, limit: int = 72) -> str:
    """The commit's subject for a message (`!r`, one line): cut at `limit` characters."""
    title = git.commit(commit).title
    return title if len(title) <= limit else title[:limit - 3] + "..."


def _listing(paths: list[str], limit: int = 5) -> str:
    said = ", ".join(shown(p) for p in paths[:limit])
    return said + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


# -- the checks, in the order they run --------------------------------------------------


@check("series", "series.yaml and patches/ load")
def check_series(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    if ctx.load_error is None:
        return []
    return [CheckFailure("series", f"series.yaml does not load: {ctx.load_error.render()}",
                         "fix series.yaml or patches/ as the message says, then `git commit` "
                         "(`pq series` shows the same error)", unreadable=True)]


_AGAIN = "push (or `pq check`) again"  # the checks run in the hook and in `pq check`


@check("base", "the recorded base is the branch's fork point from upstream",
       needs=("series",))
def check_base(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    series = _queue(ctx).series
    base, ref = series.base, series.upstream_ref
    fix = f"pq init --force --upstream {ref} --commit"
    later = "(`pq rebase` moves a series onto a new upstream without this)"
    from pq.queue.reach import missing_base, shallow_cut, upstream_past_base

    missing = missing_base(git, base, f"the upstream of {ref}", _AGAIN, fix)
    if missing is not None:
        return [CheckFailure("base", *missing)]
    if not git.is_ancestor(base, ctx.commit):
        cut = shallow_cut(git, base, ctx.commit, _AGAIN)
        if cut is not None:
            return [CheckFailure("base", *cut)]
        return [CheckFailure(
            "base",
            f"stale base: series.yaml records base {base[:12]}, which is not an ancestor of "
            f"the pushed tip {ctx.commit[:12]}: the branch was rebased or reset outside pq; "
            f"re-record the base from the branch {later}", fix)]

    upstream = git.try_resolve(ref)
    if upstream is None:  # a clone without that remote (CI, a colleague's)
        raise CheckUnavailable(
            f"{ref} (upstream.ref in series.yaml) is not in this clone, so whether the "
            f"branch holds {ref} commits that pq did not put there was not checked (fetch "
            "it under that name to check)")
    past = upstream_past_base(git, upstream, base, ctx.commit)  # by id: no rev-parse again
    if past is not None:
        n, fork_point = past
        if git.count(f"{fork_point}..{ctx.commit}", "--merges"):  # init refuses merges
            return [CheckFailure(
                "base", f"stale base: series.yaml records base {base[:12]}, but the branch "
                        f"merged {n} newer {ref} commit(s), up to {fork_point[:12]}, outside pq",
                f"undo the merge (`git reset --keep` to the commit before it), then `pq "
                f"rebase {ref}`")]
        return [CheckFailure(
            "base",
            f"stale base: series.yaml records base {base[:12]}, but the branch contains {n} "
            f"newer {ref} commit(s), up to {fork_point[:12]}: it was rebased onto {ref} "
            f"outside pq; re-record the base from the branch {later}", fix)]
    return []


@check("export", "every commit on the branch is in the series, as committed",
       needs=("series", "base"), version=4)
def check_export(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    from pq.queue import verified

    queue = _queue(ctx)
    # Exporting this very commit gave these very bytes before (a rebase's landing, `pq
    # export --commit`, a `pq export` that changed nothing): it passes without exporting
    # again. The evidence weighed then (the working tree's queue and HEAD's, both this one,
    # and pq's last bookkeeping commit's) is what the full check below weighs.
    if ctx.use_export_cache and verified.known(git, ctx.commit, queue):
        return []
    from pq.model import patchfile
    from pq.queue import stack

    series = queue.series
    try:
        commits = stack.read_stack(git, series.base, ctx.commit, series.queue_paths,
                                   upstream=series.upstream_ref)
    except ConfigError as exc:  # merges on the branch
        return [CheckFailure("export", exc.message, exc.hint or "see the message")]
    last = stack.last_written(git, series.base, ctx.commit, queue)
    written = last[1] if last else None
    fresh = stack.export(git, commits, series, series.base,
                         recorded=stack.recorded_files(queue, written))
    fresh_names = [e.name for e in fresh.series.patches]
    old_names = [e.name for e in series.patches]
    failures: list[CheckFailure] = []
    by_name = dict(zip(fresh_names, commits))
    fix = "pq export --commit"
    unexported = [i for i, n in enumerate(fresh_names) if n not in queue.files]
    orphaned = [i for i, n in enumerate(old_names) if n not in fresh.files]
    if ctx.status_of("base") == UNAVAILABLE:  # the commit may be upstream's, rebased in
        fix = (f"pq export --commit, if it is the fork's own; if it is an {series.upstream_ref}"
               f" commit (the branch was rebased outside pq), fetch {series.upstream_ref} "
               "first: pq then names the fix")
    from pq.queue.handedits import hand_added, hand_removed

    added = set(hand_added(queue, fresh)) if orphaned else set()
    # {the export's name: the patch taken out by hand whose very commit it is}
    removed = {n: name for name, n in hand_removed(queue, last[1], fresh)} if (
        unexported and last) else {}
    for i in unexported:
        sc = by_name[fresh_names[i]]
        what = f"commit {sc.commit[:12]} ({_subject(git, sc.commit)!r})"
        if fresh_names[i] in removed and i not in orphaned:
            failures.append(CheckFailure(
                "export", f"{what} is not in the series: its patch was taken out of "
                          f"series.yaml by hand (patches/{removed[fresh_names[i]]})",
                "pq apply (rebuilds the branch without it), or pq export --commit (writes "
                "it back)"))
        elif i in orphaned:  # the same place in both lists: one commit changed, not two
            failures.append(CheckFailure(
                "export", f"{what} does not match patches/{old_names[i]}, listed at its place "
                          "in series.yaml: the commit was reworded or amended without "
                          "`pq export`", fix))
        else:
            failures.append(CheckFailure(
                "export", f"{what} is not in the series: an unexported edit", fix))
    for i in orphaned:
        if i not in unexported and old_names[i] in added:
            failures.append(CheckFailure(
                "export", f"patches/{old_names[i]} is in series.yaml but no commit on the "
                          "branch carries it: it was added by hand", "pq apply (makes a "
                                                                      "commit of it)"))
        elif i not in unexported:
            failures.append(CheckFailure(
                "export", f"patches/{old_names[i]} is in series.yaml but no commit on the "
                          "branch carries it (the commit was dropped or squashed without "
                          "`pq export`)", fix))
    differ = [n for n in fresh_names if n in queue.files and fresh.files[n] != queue.files[n]]
    edited = set(stack.hand_edits(git, series.base, ctx.commit, queue, last)) if (
        differ and last) else set()
    for name in differ:
        if fresh.files[name].replace(b"\r\n", b"\n") == queue.files[name]:
            failures.append(CheckFailure(  # `git add` under core.autocrlf, a `text` attribute
                "export", f"patches/{name} was committed without the CR bytes of its CRLF "
                          "lines (a line-end conversion on `git add`: core.autocrlf, or a "
                          "`text` attribute), so it no longer says what its commit changes",
                f"{fix} (it commits the files as pq writes them); `patches/*.patch -text` "
                "in .gitattributes keeps `git add` from converting them"))
            continue
        same = patchfile.same_parts(fresh.files[name], queue.files[name], f"patches/{name}")
        if same == "all":  # the same patch file in another form: CRLF line ends, say
            failures.append(CheckFailure(
                "export", f"patches/{name} says what pq writes for its commit, in other bytes "
                          "(line ends or header folding changed, by an editor say)", fix))
        elif same == "commit":
            apart = ", ".join(f"`{k}:`" + (" (the summary)" if k == "Description" else "") for k
                              in patchfile.headers_apart(fresh.files[name], queue.files[name],
                                                        f"patches/{name}"))
            failures.append(CheckFailure(
                "export", f"patches/{name}'s header lines {apart} do not match its entry in "
                          "series.yaml, one of them edited without `pq export`; its message and "
                          "diff are its commit's", fix))
        else:
            failures.append(_mismatch(git, name, by_name[name].commit, fresh, last, edited))
    common_fresh = [n for n in fresh_names if n in queue.files]
    common_old = [n for n in old_names if n in fresh.files]
    if not failures and common_fresh != common_old:
        failures.append(CheckFailure(
            "export", "the branch's commits are in a different order than series.yaml lists "
                      "the patches", f"{fix} (writes the commits' order), or `pq apply` "
                                     "(builds the branch in series.yaml's order)"))
    return failures


def _mismatch(git: Git, name: str, commit: str, fresh: Queue,
              last: tuple[CommitId, Queue] | None, edited: set[str]) -> CheckFailure:
    """A patch file that differs from its commit, and the direction that fixes it: which
    side changed since pq last wrote the file (its bytes in pq's last bookkeeping commit;
    `edited`: the files committed as edits by hand since, see `stack.hand_edits`)."""
    what = f"commit {commit[:12]} ({_subject(git, commit)!r})"
    written = last[1].files.get(name) if last else None
    if last is None or written is None or name not in edited:
        return CheckFailure(
            "export", f"{what} does not match patches/{name}, its patch: the commit was "
                      "reworded or amended without `pq export`", "pq export --commit")
    where = f"pq last wrote it in {last[0][:12]}"
    if fresh.files[name] == written:
        return CheckFailure(
            "export", f"patches/{name} does not match its {what}: the patch file was edited "
                      f"by hand after {where}, and the commit is unchanged; take the edit into "
                      "the commit (`pq export` would overwrite it)", "pq apply")
    return CheckFailure(
        "export", f"both patches/{name} (edited by hand) and its {what} changed after "
                  f"{where}: one of them must win",
        "pq apply --branch NEW (the patch file's version, on a new branch) or pq export "
        "--commit --force (the commit's version; the file's edit is lost)")


@check("apply", "every patch applies to the base and rebuilds the tip's tree",
       needs=("series", "base"), after=("export",))
def check_apply(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    from pq.queue import stack

    queue = _queue(ctx)
    base = git.resolve(queue.series.base)
    paths = tuple(queue.series.queue_paths)
    trees = Trees(git)  # the queue's files leave the trees in memory, not through an index,

    def without_queue(tree: str) -> str:  # unless a queue path is a pattern git matches
        return (git.build_tree(tree, remove=list(paths)) if stack.patterns(paths)
                else trees.without(tree, paths))

    want = without_queue(ctx.tree)
    quick = _apply_in_one_go(git, queue, base)
    if quick is not None and without_queue(quick) == want:
        return []
    if ctx.status_of("export") not in (PASSED, UNAVAILABLE):
        return []  # moot (reported not-run): spare the patch-by-patch rebuild
    return _apply_one_by_one(git, ctx, queue, base, want, without_queue)


def _apply_in_one_go(git: Git, queue: Queue, base: CommitId) -> TreeId | None:
    """The whole series as one `git apply` (two processes instead of two per patch); None
    when git cannot take it in one go (a path deleted then re-created, say)."""
    from pq.model import patchfile

    try:
        diffs = [patchfile.parse_committable(queue.files[e.name], f"patches/{e.name}").diff
                 for e in queue.series.patches]
    except ConfigError:
        return None
    if not diffs:
        return git.tree_of(base)
    tree, _ = git.apply_to_tree(git.tree_of(base), b"".join(diffs))
    return tree


def _apply_one_by_one(git: Git, ctx: CheckContext, queue: Queue, base: CommitId,
                      want: str, without_queue: Callable[[str], str]) -> list[CheckFailure]:
    """`stack.materialise`, patch by patch: slower, and it names the patch that fails."""
    from pq.queue import stack

    try:
        commits = stack.materialise(git, queue, base, _CHECKER, branch=False)
    except OperationFailed as exc:
        return [CheckFailure("apply", f"{exc.path}: {exc.message}, although it matches its "
                             "commit: the patch file cannot rebuild the branch", _REBUILD)]
    except ConfigError as exc:  # a patch file that does not parse
        return [CheckFailure("apply", (f"{exc.path}: " if exc.path else "") + exc.render(),
                             _REBUILD)]
    built = git.tree_of(commits[-1][1]) if commits else git.tree_of(base)
    got = without_queue(built)
    if want == got:
        return []
    differ = git.changed_paths(got, want)
    return [CheckFailure(
        "apply",
        f"applying the {len(queue.series.patches)} patches to base {base[:12]} does not give "
        f"the pushed tree: {_listing(differ)} differ, although every patch matches its "
        "commit (something the patch files cannot carry)", _REBUILD)]


@check("markers", "no patch adds conflict-marker lines", needs=("series",))
def check_markers(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    """Added lines git would call conflict markers, in files where one of them is a
    `<<<<<<<` or `>>>>>>>` line (as `pq rebase --continue` refuses them); a file whose
    `conflict-marker-size` attribute is larger (a merge tool's test data) has none of
    that size, as `git diff --check` reads it."""
    from pq.model import patchfile
    from pq.rebase.markers import is_conflict_marker

    queue = _queue(ctx)
    failures = []
    candidates = []
    for entry in queue.series.patches:
        name = f"patches/{entry.name}"
        data = queue.files[entry.name]
        if b"\n+<" not in data and b"\n+>" not in data:  # (a `conflict-marker-size` can
            continue  # be below 7) no added line starts with < or >: no marker to read
        try:
            candidates.append((name, patchfile.parse(data, name).files))
        except ConfigError:
            continue  # the series check reports patch files that do not parse
    paths = sorted({f.path for _, files in candidates for f in files})
    sizes = git.marker_sizes(ctx.tree, paths)
    ctx.read_local = ctx.read_local or bool(paths)  # info/attributes, core.attributesFile
    for name, files in candidates:
        found = []
        for f in files:
            marks = [(ln.number, is_conflict_marker(ln.text, sizes[f.path]))
                     for ln in f.added()]
            if any(char in ("<", ">") for _, char in marks):
                found += [(f.path, number) for number, char in marks if char]
        if found:
            path, line = shown(found[0][0]), found[0][1]
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            failures.append(CheckFailure(
                "markers", f"{name} adds a conflict marker at {path}:{line}{more}: an "
                           "unresolved conflict was committed",
                f"resolve the conflict in {path} in that patch's commit (`git rebase -i`, "
                "edit), then `pq export --commit`; lines that are the file's content (a "
                "merge tool's test data) want a `conflict-marker-size` attribute above 7 in "
                ".gitattributes, as for `git diff --check`"))
    return failures


@check("audit", "the workaround audit reports no errors", needs=("series",),
       module="pq.audit.api", forks=True)
def check_audit(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    try:
        from pq.audit.api import run_audit
    except ImportError:
        raise CheckUnavailable("the workaround audit is not available in this pq; "
                               "workaround blocks were not checked") from None
    report = run_audit(git, _queue(ctx), rev=ctx.commit)
    failures = []
    for f in report.errors:
        where = f"{f.location}: " if f.location else ""
        failures.append(CheckFailure(
            "audit", f"{where}[{f.rule_id} {f.rule}] {f.patch}: {f.message}", f.fix,
            rule=f.rule_id))
    return failures


@check("gate", "a passing gate record exists when series.yaml requires one",
       needs=("series",), module="pq.gate.api")
def check_gate(git: Git, ctx: CheckContext) -> list[CheckFailure]:
    series = _queue(ctx).series
    if series.gate is None:
        return []
    try:
        from pq.gate.config import parse
        # A block `pq gate` refuses is refused here too, required for a push or not.
        required = list(parse(series, ctx.commit).required_for_push)
        if not required:
            return []
        from pq.gate.api import record_ok  # the records: only where stages are required
    except ConfigError as exc:
        return [CheckFailure("gate", f"series.yaml's `gate` block: {exc.render()}",
                             "fix it as the message says (docs/gate.md), then `git "
                             "commit`", unreadable=True)]
    except ImportError:
        if not isinstance(series.gate, dict) or not series.gate.get("required_for_push"):
            return []
        raise CheckUnavailable("series.yaml requires gate stages before a push, but the gate "
                               "is not available in this pq; no record was checked") from None
    ok, why = record_ok(git, ctx.commit, required)
    if ok:
        return []
    return [CheckFailure(
        "gate", f"the stages required for a push ({', '.join(required)}) have not passed "
                f"for {ctx.commit[:12]}: {why}", "pq gate")]
