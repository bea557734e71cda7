"""`sgpatch apply`: plan the whole set in memory, then write all of it or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sgpatch import __version__
from sgpatch.cli.common import (
    applied_untested,
    load_ledger,
    open_target,
    say_notes,
    site_packages,
)
from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.ops import preconditions, report
from sgpatch.ops.plan import SetPlan, plan_set
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.consistent import stable_read
from sgpatch.state.ledger import PatchRecord, state_dir
from sgpatch.state.txn import LockBusy, commit, lock_timeout, locked


def run(
    set_name: str,
    sglang_dir: Path | None,
    sglang_version: str | None,
    patchsets: Sequence[Path],
    with_ids: Sequence[str],
    without_ids: Sequence[str],
    dry_run: bool,
    strict: bool,
    as_json: bool,
    verbose: bool,
    git_commit: bool = False,
    untested: bool = False,
) -> int:
    from sgpatch.patchset.manifest import load_set
    from sgpatch.patchset.nearest import basis as basis_of

    target = open_target(sglang_dir, sglang_version)
    manifest = load_set(set_name, tuple(patchsets))
    basis = basis_of(manifest, target.version)
    if not basis.checked and not untested and not dry_run:
        raise bad_input(
            f"sglang {target.version} is not a release {manifest.name} was checked on; "
            f"`apply --untested` applies its {basis.variants_of} variants only where every hunk "
            "is certain (or port the set: `sgpatch port --to-tree`)"
        )
    if not basis.checked:
        report.err(f"sgpatch: {basis.line()}")
    if git_commit:  # git mode (sgpatch.git.mode): refuse early outside a git work tree
        from sgpatch.git import mode as gitmode

        gitmode.require_repo(target)
    options = {"with_ids": tuple(with_ids), "without_ids": tuple(without_ids), "strict": strict,
               "variants_of": None if basis.checked else basis.variants_of}  # fmt: skip
    job = _Job(target, manifest, options, git_commit, dry_run)
    plan, code, pre, written = job.decide(*_read_unlocked(job)) if dry_run else _apply(job)
    after = plan.applied() if written else plan
    if as_json:
        report.emit_json(
            report.set_json(
                "apply", target, after, pre, code, dry_run=dry_run, written=written, before=plan
            )
        )
    else:
        report.show_set(target, after, pre, verbose)
        report.apply_summary(after, code, written, dry_run)
        if dry_run and not basis.checked and not untested:
            report.err("sgpatch: a real apply on this untested version needs --untested")
    return int(code)


class _Job:
    """One apply: what it plans (target, set, options) and how it decides on a plan."""

    def __init__(
        self, target, manifest, options: dict, git_commit: bool, dry_run: bool = False
    ) -> None:
        self.target, self.manifest, self.options = target, manifest, options
        self.git_commit, self.dry_run = git_commit, dry_run
        self.noted = False  # the stale sets' notes were said

    def plan(self):
        """The ledger as it applies to the tree, and the set planned on it."""
        reconciled = load_ledger(self.target)
        plan = plan_set(
            self.manifest, self.target.root, self.target.version, reconciled.ledger, **self.options
        )
        return reconciled, plan

    def decide(self, reconciled, plan, say: bool = True):
        """(plan, exit code, preconditions, written: none yet), the --strict verdict and the
        untested-version line said (`say`), and the stale sets' notes when this run will not
        write (a run that writes says, once written, that their records are dropped); refuses
        a set that would change files a set applied on top patched."""
        if say:
            applied_untested(reconciled.ledger.sets.get(plan.name))
        code = _verdict(plan)
        if not self.noted and (self.dry_run or not self.writes(reconciled, plan, code)):
            say_notes(reconciled)
            self.noted = True
        pre = preconditions.for_plan(self.manifest, plan, site_packages(self.target))
        unmet = [x for x in pre if x.verdict == "unmet"]
        if self.options["strict"] and unmet and code == ExitCode.OK:
            code = ExitCode.NOT_DONE
            if say:
                report.err(
                    "sgpatch: --strict: unmet precondition(s): "
                    + ", ".join(f"{x.package}{x.specifier} (found {x.found})" for x in unmet)
                )
        _refuse_stacking(reconciled.ledger, plan)
        return plan, code, pre, []

    def writes(self, reconciled, plan, code: ExitCode) -> bool:
        """Whether this plan has anything to write (files, a stale record, git commits)."""
        ledger = reconciled.ledger
        git = self.git_commit and _git_pending(ledger, plan)
        return code == ExitCode.OK and bool(plan.changes or reconciled.stale or git)


def _read_unlocked(job: _Job):
    """A plan without the lock (`--dry-run`, or while another run holds it), read
    consistently: a run writing meanwhile makes it read again, never judge a mix."""
    return stable_read(job.target.root, job.plan)


def _apply(job: _Job):
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
    if not job.writes(reconciled, plan, decided[1]):
        return decided
    if not isinstance(reason, LockBusy):
        raise reason
    with locked(folder, wait):  # what it writes is decided from what it reads under the lock
        return _plan_and_write(job, *job.plan(), quiet=True)


def _plan_and_write(job: _Job, reconciled, plan, quiet: bool = False):
    """Under the lock: decide on the plan just read, then write what it says."""
    decided = job.decide(reconciled, plan, say=not quiet)  # quiet: already said while waiting
    plan, code, pre, _ = decided
    if not job.writes(reconciled, plan, code):
        return decided
    written = _write(job.target, job.manifest, reconciled, plan, job.git_commit)
    say_notes(reconciled, dropped=True)  # the ledger just written holds none of them
    return plan, code, pre, written


def _write(target, manifest, reconciled, plan, git_commit: bool) -> list[str]:
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

        gitmode.report_commits(gitmode.finish_apply(target, ledger.sets.get(plan.name)))
    if not plan.changes and not reconciled.stale:
        return []
    new = ledger if not plan.changes else _recorded(root, ledger, plan, str(target.version), gplan)
    data = [x for c in plan.changes for x in (c.before, c.after)]
    changes = [*plan.changes, *ledger_mod.store_changes(root, reconciled.stored, new, data)]
    report.warnings(commit(root, state_dir(root), changes))
    if gplan is not None:
        from sgpatch.git import mode as gitmode

        gitmode.report_commits(gitmode.finish(target, gplan, undo=changes))
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
    originals = {c.path: (c.before, c.after) for c in plan.changes}
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
    modes = {c.path: (_mode_of(root, c.path), c.mode) for c in plan.changes}
    modes = {k: (b, a if a is not None else b) for k, (b, a) in modes.items()}
    new = ledger_mod.record_apply(
        ledger, plan.name, version, __version__, records, originals, modes, plan.variants_of
    )
    if gplan is not None:
        record = new.sets[plan.name]
        new = new.with_set(replace(record, commits=(*record.commits, *gplan.commits)))
    return new


def _mode_of(root: Path, rel: str) -> int | None:
    import stat

    try:
        return stat.S_IMODE((root / rel).lstat().st_mode)
    except OSError:
        return None
