"""`sgpatch apply`: plan the whole set in memory, then write all of it or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch import __version__, preconditions, report
from sgpatch import ledger as ledger_mod
from sgpatch.commands.common import open_target, site_packages, supported_set
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ledger import PatchRecord, original_rel, sha256, state_dir
from sgpatch.plan import SetPlan, plan_set
from sgpatch.txn import FileChange, commit, locked, read_bytes


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
    ledger = ledger_mod.load(root)
    plan = plan_set(manifest, root, target.version, ledger, **options)
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
    if code == ExitCode.OK and plan.changes and not dry_run:
        # Only a run that writes takes the lock (and so creates .sgpatch/); if another run
        # wrote in between, plan again under the lock before writing.
        with locked(state_dir(root)):
            if ledger_mod.load(root) != ledger or _moved(root, plan):
                ledger = ledger_mod.load(root)
                plan = plan_set(manifest, root, target.version, ledger, **options)
                code = _verdict(plan)
            if code == ExitCode.OK and plan.changes:
                changes = list(plan.changes)
                changes += _ledger_changes(root, ledger, plan, str(target.version))
                if git_commit:
                    gitmode.check_clean(target, [c.path for c in plan.changes])
                commit(root, state_dir(root), changes)
                written = [c.path for c in plan.changes]
                if git_commit:
                    gitmode.report_commits(gitmode.commit_plan(target, manifest, plan))
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


def _refuse_stacking(ledger, plan: SetPlan) -> None:
    """Two sets on one file could never be reverted independently (each one's original bytes
    hold or lack the other's change), so refuse before writing instead."""
    for c in plan.changes:
        for other, rec in ledger.sets.items():
            if other != plan.name and c.path in rec.files:
                raise SgpatchError(
                    f"{c.path} is already patched by set {other}; sgpatch does not stack two "
                    f"sets on one file (revert {other} first, or merge the sets)",
                    ExitCode.UNSAFE,
                )


def _moved(root: Path, plan: SetPlan) -> bool:
    return any(read_bytes(root, c.path) != c.before for c in plan.changes)


def _verdict(plan: SetPlan) -> ExitCode:
    codes = [p.exit_code for p in plan.patches if p.selected and p.state in ("conflict",)]
    if codes:
        return max(codes)
    if any(p.selected and p.state == "modified" for p in plan.patches):
        return ExitCode.NOT_DONE
    return ExitCode.OK


def _ledger_changes(root: Path, ledger, plan: SetPlan, version: str) -> list[FileChange]:
    """The ledger update and the originals store, written in the same transaction."""
    originals = {c.path: (c.before, c.after) for c in plan.changes}
    written = set(originals)
    records = [
        PatchRecord(
            p.id,
            p.variant or "",
            p.patch_sha256 or "",
            tuple(sorted(({f.path for f in p.files} | {f.source for f in p.files}) & written)),
        )
        for p in plan.patches
        if p.selected and p.state == "pending"
    ]
    new = ledger_mod.record_apply(ledger, plan.name, version, __version__, records, originals)
    out = [
        FileChange(
            ledger_mod.ledger_rel(), read_bytes(root, ledger_mod.ledger_rel()), ledger_mod.dump(new)
        )
    ]
    stored: set[str] = set()
    for before, _ in originals.values():
        digest = sha256(before)
        if before is None or digest in stored or (root / original_rel(digest)).exists():
            continue
        stored.add(digest)
        out.append(FileChange(original_rel(digest), None, before, 0o444))
    return out
