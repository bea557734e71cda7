"""`sgpatch apply`: plan the whole set in memory, then write all of it or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sgpatch import __version__, preconditions, report
from sgpatch import ledger as ledger_mod
from sgpatch.commands.common import (
    ledger_changes,
    load_ledger,
    open_target,
    say_notes,
    site_packages,
    stable_read,
    supported_set,
)
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ledger import PatchRecord, state_dir
from sgpatch.plan import SetPlan, plan_set
from sgpatch.txn import commit, locked


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
) -> int:
    target = open_target(sglang_dir, sglang_version)
    manifest = supported_set(set_name, target, patchsets)
    if git_commit:  # git mode (sgpatch.gitmode): refuse early outside a git work tree
        from sgpatch import gitmode

        gitmode.require_repo(target)
    root = target.root
    options = {"with_ids": tuple(with_ids), "without_ids": tuple(without_ids), "strict": strict}
    # A first plan without the lock (a run with nothing to write creates nothing), read
    # consistently: a run writing meanwhile makes it read again, never judge a mix.
    reconciled, plan = stable_read(
        root,
        lambda: _plan_unlocked(target, manifest, options),
    )
    say_notes(reconciled)
    ledger = reconciled.ledger
    code = _verdict(plan)
    pre = preconditions.for_plan(manifest, plan, site_packages(target))
    unmet = [x for x in pre if x.verdict == "unmet"]
    if strict and unmet and code == ExitCode.OK:
        code = ExitCode.NOT_DONE
        report.err(
            "sgpatch: --strict: unmet precondition(s): "
            + ", ".join(f"{x.package}{x.specifier} (found {x.found})" for x in unmet)
        )
    _refuse_stacking(ledger, plan)
    written: list[str] = []
    writes = plan.changes or reconciled.stale or (git_commit and _git_pending(ledger, plan))
    if code == ExitCode.OK and writes and not dry_run:
        # Only a run that writes takes the lock (and so creates .sgpatch/), and it plans
        # again under the lock: what it writes is decided from state read while holding it.
        with locked(state_dir(root)):
            plan, code, written = _write(target, manifest, options, git_commit)
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
    return int(code)


def _plan_unlocked(target, manifest, options):
    reconciled = load_ledger(target)
    return reconciled, plan_set(manifest, target.root, target.version, reconciled.ledger, **options)


def _write(target, manifest, options, git_commit: bool):
    """Under the lock: plan again from the ledger and files as they are now, then write the
    patched files, the ledger and the store in one transaction (git mode: and the commits).
    Returns (plan, exit code, files written)."""
    root = target.root
    reconciled = load_ledger(target)
    ledger = reconciled.ledger
    plan = plan_set(manifest, root, target.version, ledger, **options)
    code = _verdict(plan)
    _refuse_stacking(ledger, plan)
    if code != ExitCode.OK:
        return plan, code, []
    gplan = None
    if git_commit and plan.changes:
        from sgpatch import gitmode

        gitmode.check_clean(target, [c.path for c in plan.changes])
        gplan = gitmode.apply_plan(target, manifest, plan)
    elif git_commit:  # applied; its commits made but HEAD not moved yet (a run stopped there)
        from sgpatch import gitmode

        gitmode.report_commits(gitmode.finish_apply(target, ledger.sets.get(plan.name)))
    if not plan.changes and not reconciled.stale:
        return plan, code, []
    new = ledger if not plan.changes else _recorded(root, ledger, plan, str(target.version), gplan)
    data = [x for c in plan.changes for x in (c.before, c.after)]
    changes = [*plan.changes, *ledger_changes(root, reconciled.stored, new, data)]
    commit(root, state_dir(root), changes)
    if gplan is not None:
        from sgpatch import gitmode

        gitmode.report_commits(gitmode.finish(target, gplan, undo=changes))
    return plan, code, [c.path for c in plan.changes]


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
        ledger, plan.name, version, __version__, records, originals, modes
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
