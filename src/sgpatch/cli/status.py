"""`sgpatch status`: what is applied, pending, upstream or edited, per set, without writing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch.cli.common import open_target
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import preconditions, report
from sgpatch.ops.plan import plan_set
from sgpatch.patchset import nearest
from sgpatch.patchset.manifest import SetManifest, find_sets, load_manifest, load_set, set_supports
from sgpatch.state import drift
from sgpatch.state.consistent import stable_read
from sgpatch.state.upgrade import for_target


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
    reconciled, rows, found_drift, unknown = stable_read(
        target.root, lambda: _read(target, set_name, patchsets, with_ids)
    )
    report.notes(reconciled)
    for name in unknown:
        report.err(f"sgpatch: {_unknown_note(name)}")
    ledger = reconciled.ledger
    code = max((row[3] for row in rows), default=ExitCode.OK)
    if unknown:  # --check of every recorded set cannot say "done" for one it cannot judge
        code = max(code, ExitCode.BAD_INPUT)
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
            report.applied_untested(record)
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
                "unknown_sets": unknown,
                "drift": drift.to_json(found_drift),
            }
        )
    return int(code) if check else 0


def _read(target, set_name: str | None, patchsets: Sequence[Path], with_ids: Sequence[str]):
    """Everything status reports, read in one go (ledger, plans, drift) so `stable_read` can
    read it again if a writer changed the tree meanwhile."""
    reconciled = for_target(target)
    ledger = reconciled.ledger
    unknown: list[str] = []
    if set_name:
        manifests = [load_set(set_name, tuple(patchsets))]
    else:
        manifests, unknown = _relevant_sets(target, ledger, patchsets)
    if not manifests and unknown:
        raise SgpatchError(_unknown_note(", ".join(unknown)))
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
        pre = preconditions.for_plan(manifest, plan, target.site_packages)
        rows.append((manifest, plan, pre, _check_code(plan), basis))
    found_drift = drift.check(target.root, target.dist_info, ledger, touched)
    return reconciled, rows, found_drift, unknown


def _unknown_note(names: str) -> str:
    return (
        f"set {names} is recorded in the ledger, but this run cannot find it: pass --patchsets "
        "DIR (the folder it was applied from) or add that folder to $SGPATCH_PATH"
    )


def _check_code(plan) -> ExitCode:
    """--check: 0 when done; 1 when something is pending or edited; 3/4 on a conflict."""
    selected = [p for p in plan.patches if p.selected]
    conflicts = [p.exit_code for p in selected if p.state == "conflict"]
    if conflicts:
        return max(conflicts)
    if any(p.state in ("pending", "modified") for p in selected):
        return ExitCode.NOT_DONE
    return ExitCode.OK


def _relevant_sets(
    target, ledger, patchsets: Sequence[Path]
) -> tuple[list[SetManifest], list[str]]:
    """Every set in the ledger that this run can find (in applied order) and the names of
    those it cannot; with no ledger, every known set that supports this version or names it
    as a snapshot it was checked on (each manifest is read once)."""
    known = find_sets(tuple(patchsets))
    if ledger.sets:
        found = [load_set(n, tuple(patchsets)) for n in ledger.sets if n in known]
        return found, [n for n in ledger.sets if n not in known]
    manifests = [load_manifest(path / "patchset.yaml") for _, path in sorted(known.items())]
    return [
        m
        for m in manifests
        if set_supports(m, target.version) or nearest.checked(m, target.version)
    ], []


def _applied_json(record) -> dict | None:
    """The ledger's word that the set was applied to an untested version (null otherwise)."""
    if record is None or not record.variants_of:
        return None
    return {"version": record.sglang_version, "variants_of": record.variants_of}
