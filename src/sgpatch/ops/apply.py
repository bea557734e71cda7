"""Apply a set to a tree: plan the whole set in memory, then write all of it or nothing.

`apply_set` plans under the tree's lock and writes what that plan says, once; a dry run plans
without the lock (reading consistently: sgpatch.state.consistent). The ledger and its store
go in the same transaction as the files (sgpatch.state.txn).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch import __version__, console
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import preconditions, report
from sgpatch.ops.plan import SetPlan, plan_set
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.consistent import stable_read
from sgpatch.state.ledger import PatchRecord, state_dir
from sgpatch.state.lock import LockBusy, lock_timeout, locked
from sgpatch.state.txn import commit
from sgpatch.state.upgrade import Reconciled, for_target

if TYPE_CHECKING:
    from packaging.version import Version

    from sgpatch.ops.preconditions import Precondition
    from sgpatch.patchset.manifest import SetManifest
    from sgpatch.tree.target import Target


@dataclass(frozen=True)
class Request:
    """What one apply is asked to do with its set (the command's options that are not about
    finding the tree or rendering)."""

    with_ids: tuple[str, ...] = ()
    without_ids: tuple[str, ...] = ()
    strict: bool = False
    variants_of: Version | None = None  # planning an untested version with these variants
    git_commit: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class Decision:
    """What an apply decided and did: the plan it acted on, its exit code, the environment
    preconditions, and the files it wrote (none for a dry run or a refusal)."""

    plan: SetPlan
    code: ExitCode
    pre: tuple[Precondition, ...]
    written: tuple[str, ...] = ()


def apply_set(target: Target, manifest: SetManifest, request: Request) -> Decision:
    """Plan the whole set and write all of it or nothing (a dry run only plans)."""
    job = _Job(target, manifest, request)
    return job.decide(*_read_unlocked(job)) if request.dry_run else _apply(job)


class _Job:
    """One apply: what it plans (target, set, request) and how it decides on a plan."""

    def __init__(self, target: Target, manifest: SetManifest, request: Request) -> None:
        self.target, self.manifest, self.request = target, manifest, request
        self.noted = False  # the stale sets' notes were said

    def plan(self) -> tuple[Reconciled, SetPlan]:
        """The ledger as it applies to the tree, and the set planned on it."""
        r = self.request
        reconciled = for_target(self.target)
        plan = plan_set(
            self.manifest,
            self.target.root,
            self.target.version,
            reconciled.ledger,
            with_ids=r.with_ids,
            without_ids=r.without_ids,
            strict=r.strict,
            variants_of=r.variants_of,
        )
        return reconciled, plan

    def decide(self, reconciled: Reconciled, plan: SetPlan, say: bool = True) -> Decision:
        """The plan's exit code and preconditions (nothing written yet), the --strict verdict
        and the untested-version line said (`say`), and the stale sets' notes when this run
        will not write (a run that writes says, once written, that their records are
        dropped); refuses a set that would change files a set applied on top patched."""
        if say:
            report.applied_untested(reconciled.ledger.sets.get(plan.name))
        code = _verdict(plan)
        if not self.noted and (self.request.dry_run or not self.writes(reconciled, plan, code)):
            report.notes(reconciled)
            self.noted = True
        pre = preconditions.for_plan(self.manifest, plan, self.target.site_packages)
        unmet = [x for x in pre if x.verdict == "unmet"]
        if self.request.strict and unmet and code == ExitCode.OK:
            code = ExitCode.NOT_DONE  # the verdict line says why (report.apply_summary)
        _refuse_stacking(reconciled.ledger, plan)
        return Decision(plan, code, tuple(pre))

    def writes(self, reconciled: Reconciled, plan: SetPlan, code: ExitCode) -> bool:
        """Whether this plan has anything to write (files, a stale record, git commits)."""
        ledger = reconciled.ledger
        git = self.request.git_commit and _git_pending(ledger, plan)
        return code == ExitCode.OK and bool(plan.changes or reconciled.stale or git)


def _read_unlocked(job: _Job) -> tuple[Reconciled, SetPlan]:
    """A plan without the lock (`--dry-run`, or while another run holds it), read
    consistently: a run writing meanwhile makes it read again, never judge a mix."""
    return stable_read(job.target.root, job.plan)


def _apply(job: _Job) -> Decision:
    """Plan under the lock and write what the plan says, once: the lock is tried without
    waiting first. Held by another run: plan without it (as status does) and, only if there
    is something to write, wait for it and plan again under it. Not to be had at all (a
    read-only tree, a planted symlink): fine when there is nothing to write, else its error.
    A run that takes the lock and writes nothing leaves no `.sgpatch/` behind (`locked`)."""
    folder = state_dir(job.target.root)
    wait = lock_timeout()  # a bad $SGPATCH_LOCK_TIMEOUT is bad input before anything else
    held = []
    try:
        with locked(folder, timeout=0):
            held.append(True)
            return _plan_and_write(job, *job.plan())
    except SgpatchError as exc:
        if held:
            raise
        reason = exc
    reconciled, plan = _read_unlocked(job)
    decided = job.decide(reconciled, plan)
    if not job.writes(reconciled, plan, decided.code):
        return decided
    if not isinstance(reason, LockBusy):
        raise reason
    with locked(folder, wait):  # what it writes is decided from what it reads under the lock
        reconciled, plan = job.plan()
        return _plan_and_write(job, reconciled, plan, quiet=True)


def _plan_and_write(
    job: _Job, reconciled: Reconciled, plan: SetPlan, quiet: bool = False
) -> Decision:
    """Under the lock: decide on the plan just read, then write what it says."""
    decided = job.decide(reconciled, plan, say=not quiet)  # quiet: already said while waiting
    if not job.writes(reconciled, decided.plan, decided.code):
        return decided
    written = _write(job.target, job.manifest, reconciled, plan, job.request.git_commit)
    report.notes(reconciled, dropped=True)  # the ledger just written holds none of them
    return replace(decided, written=tuple(written))


def _write(
    target: Target, manifest: SetManifest, reconciled: Reconciled, plan: SetPlan, git_commit: bool
) -> list[str]:
    """Write the plan made under the lock: the patched files, the ledger and the store in one
    transaction (git mode: and the commits). Returns the files written."""
    root = target.root
    ledger = reconciled.ledger
    gplan = None
    if git_commit and plan.changes:
        from sgpatch.git import mode as gitmode

        gitmode.check_clean(target, [c.path for c in plan.changes])
        gplan = gitmode.apply_plan(target, manifest, plan)
    elif git_commit:  # applied; its commits made but HEAD not moved yet (a run stopped there)
        from sgpatch.git import mode as gitmode

        done = gitmode.finish_apply(target, ledger.sets.get(plan.name))
        console.lines([*done.notes, *(m.line() for m in done.made)])
    if not plan.changes and not reconciled.stale:
        return []
    new = ledger if not plan.changes else _recorded(root, ledger, plan, str(target.version), gplan)
    data = [x for c in plan.changes for x in (c.before, c.after, _content(None, c.link))]
    changes = [*plan.changes, *ledger_mod.store_changes(root, reconciled.stored, new, data)]
    console.warnings(commit(root, state_dir(root), changes))
    if gplan is not None:
        from sgpatch.git import mode as gitmode

        console.lines([m.line() for m in gitmode.finish(target, gplan, undo=changes)])
    return [c.path for c in plan.changes]


def _git_pending(ledger, plan: SetPlan) -> bool:
    record = ledger.sets.get(plan.name)
    return record is not None and bool(record.commits)


def _refuse_stacking(ledger, plan: SetPlan) -> None:
    """A set may patch files an earlier set patched (it goes on top), but not a file a set
    applied after it also patched: that set's recorded bytes would no longer be exact."""
    for c in plan.changes:
        higher = ledger_mod.above(ledger, plan.name, c.path)
        if higher:
            raise SgpatchError(
                f"{c.path} is also patched by set {higher[-1]}, applied on top of "
                f"{plan.name}; revert {higher[-1]} first",
                ExitCode.UNSAFE,
            )


def _verdict(plan: SetPlan) -> ExitCode:
    codes = [p.exit_code for p in plan.patches if p.selected and p.state in ("conflict",)]
    if codes:
        return max(codes)
    if any(p.selected and p.state == "modified" for p in plan.patches):
        return ExitCode.NOT_DONE
    return ExitCode.OK


def _recorded(root: Path, ledger, plan: SetPlan, version: str, gplan=None):
    """The ledger once the plan is written: its pending patches recorded with the release,
    each file's bytes and mode before and after, and git mode's commits."""
    originals = {c.path: (_content(c.before, c.before_link), _content(c.after, c.link))
                 for c in plan.changes}  # fmt: skip
    links = {c.path: (c.before_link, c.link) for c in plan.changes if c.link or c.before_link}
    written = set(originals)
    records = [
        PatchRecord(
            p.id,
            p.variant or "",
            p.patch_sha256 or "",
            tuple(sorted(({f.path for f in p.files} | {f.source for f in p.files}) & written)),
            version,
        )
        for p in plan.patches
        if p.selected and p.state == "pending"
    ]
    modes = {c.path: (_mode_of(root, c.path), c.mode) for c in plan.changes if c.path not in links}
    modes = {k: (b, a if a is not None else b) for k, (b, a) in modes.items()}
    new = ledger_mod.record_apply(
        ledger, plan.name, version, __version__, records, originals, modes, plan.variants_of, links
    )
    if gplan is not None:
        record = new.sets[plan.name]
        new = new.with_set(replace(record, commits=(*record.commits, *gplan.commits)))
    return new


def _content(data: bytes | None, link: str | None) -> bytes | None:
    """What the ledger hashes for a path: its bytes, or a symlink's target text (as git)."""
    return data if link is None else link.encode("utf-8", "surrogateescape")


def _mode_of(root: Path, rel: str) -> int | None:
    import stat

    try:
        return stat.S_IMODE((root / rel).lstat().st_mode)
    except OSError:
        return None
