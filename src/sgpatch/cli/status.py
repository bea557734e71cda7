"""`sgpatch status`: what is applied, pending, upstream or edited, per set, without writing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch.cli.common import (
    applied_untested,
    load_ledger,
    open_target,
    say_notes,
    site_packages,
    stable_read,
)
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import preconditions, report
from sgpatch.ops.plan import plan_set
from sgpatch.patchset import nearest
from sgpatch.patchset.manifest import SetManifest, find_sets, load_manifest, load_set, set_supports
from sgpatch.state import drift


def run(
    set_name: str | None,
    sglang_dir: Path | None,
    sglang_version: str | None,
    patchsets: Sequence[Path],
    with_ids: Sequence[str],
    check: bool,
    as_json: bool,
    verbose: bool,
) -> int:
    target = open_target(sglang_dir, sglang_version, reader=True)
    reconciled, rows, found_drift = stable_read(
        target.root, lambda: _read(target, set_name, patchsets, with_ids)
    )
    say_notes(reconciled)
    ledger = reconciled.ledger
    code = max((row[3] for row in rows), default=ExitCode.OK)
    docs = []
    for manifest, plan, pre, set_code, basis in rows:
        if not basis.checked:
            report.err(f"sgpatch: {basis.line()}")
        dirty: list[str] | None = []
        if target.layout == "checkout":  # git mode only; keeps GitPython off the common path
            from sgpatch.git import mode as gitmode

            dirty = gitmode.status_warning(target, manifest, ledger, quiet=as_json)
        record = ledger.sets.get(manifest.name)
        if as_json:
            doc = report.set_json("status", target, plan, pre, set_code)
            docs.append({**doc, "applied_untested": _applied_json(record), "uncommitted": dirty})
        else:
            applied_untested(record)
            report.show_set(target, plan, pre, verbose, to_stdout=True)
            report.status_verdict(plan, set_code)
    if found_drift and not as_json:
        report.err(drift.summary(found_drift))
    if as_json:
        report.emit_json(
            {
                "command": "status",
                "exit_code": int(code if check else ExitCode.OK),
                "target": report.target_json(target),
                "sets": docs,
                "drift": drift.to_json(found_drift),
            }
        )
    return int(code) if check else 0


def _read(target, set_name: str | None, patchsets: Sequence[Path], with_ids: Sequence[str]):
    """Everything status reports, read in one go (ledger, plans, drift) so `stable_read` can
    read it again if a writer changed the tree meanwhile."""
    reconciled = load_ledger(target)
    ledger = reconciled.ledger
    if set_name:
        manifests = [load_set(set_name, tuple(patchsets))]
    else:
        manifests = _relevant_sets(target, ledger, patchsets)
    if not manifests:
        raise SgpatchError(
            f"no known patch set supports sglang {target.version} ({target.root}); see "
            "`sgpatch list` (--set NAME plans a version a set was not checked on with the set's "
            "nearest variants)"
        )
    rows = []
    touched = {f for s in ledger.sets.values() for f in s.files}  # drift: files sets touch
    for manifest in manifests:
        basis = nearest.basis(manifest, target.version)
        plan = plan_set(
            manifest,
            target.root,
            target.version,
            ledger,
            with_ids=tuple(with_ids),
            variants_of=None if basis.checked else basis.variants_of,
        )
        touched |= {x for p in plan.patches for f in p.files for x in (f.path, f.source)}
        pre = preconditions.for_plan(manifest, plan, site_packages(target))
        rows.append((manifest, plan, pre, _check_code(plan), basis))
    return reconciled, rows, drift.check(target.root, target.dist_info, ledger, touched)


def _check_code(plan) -> ExitCode:
    """--check: 0 when done; 1 when something is pending or edited; 3/4 on a conflict."""
    selected = [p for p in plan.patches if p.selected]
    conflicts = [p.exit_code for p in selected if p.state == "conflict"]
    if conflicts:
        return max(conflicts)
    if any(p.state in ("pending", "modified") for p in selected):
        return ExitCode.NOT_DONE
    return ExitCode.OK


def _relevant_sets(target, ledger, patchsets: Sequence[Path]) -> list[SetManifest]:
    """Every set in the ledger, else every known set that supports this version or names it
    as a snapshot it was checked on (each manifest is read once)."""
    if ledger.sets:
        return [load_set(name, tuple(patchsets)) for name in ledger.sets]  # applied order
    found = sorted(find_sets(tuple(patchsets)).items())
    manifests = [load_manifest(path / "patchset.yaml") for _, path in found]
    return [
        m
        for m in manifests
        if set_supports(m, target.version) or nearest.checked(m, target.version)
    ]


def _applied_json(record) -> dict | None:
    """The ledger's word that the set was applied to an untested version (null otherwise)."""
    if record is None or not record.variants_of:
        return None
    return {"version": record.sglang_version, "variants_of": record.variants_of}
