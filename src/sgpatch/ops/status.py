"""What `sgpatch status` reports, read in one go: the ledger as reconciled with the tree, one
plan per set it is about, drift, and the recorded sets this run cannot find. The command
renders it; nothing here writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import preconditions
from sgpatch.ops.plan import SetPlan, plan_set
from sgpatch.patchset import nearest
from sgpatch.patchset.manifest import SetManifest, find_sets, load_manifest, load_set, set_supports
from sgpatch.state import drift
from sgpatch.state.drift import Drift
from sgpatch.state.upgrade import Reconciled, for_target
from sgpatch.tree.target import Target


@dataclass(frozen=True)
class Row:
    """One set's status: its plan, the preconditions, the --check code, the variants' basis."""

    manifest: SetManifest
    plan: SetPlan
    pre: list[preconditions.Precondition]
    code: ExitCode
    basis: nearest.Basis


@dataclass(frozen=True)
class Reading:
    """Everything one status run reports, read over a tree no writer touched meanwhile."""

    reconciled: Reconciled
    rows: list[Row]
    drift: list[Drift] | None  # None: nothing to say (drift.check)
    unknown: list[str]


def read(
    target: Target, set_name: str | None, patchsets: Sequence[Path], with_ids: Sequence[str]
) -> Reading:
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
        raise SgpatchError(unknown_note(", ".join(unknown)))
    if not manifests:
        raise SgpatchError(
            f"no known patch set supports sglang {target.version} ({target.root}); see "
            "`sgpatch list` (--set NAME plans a version a set was not checked on with the set's "
            "nearest variants)"
        )
    rows: list[Row] = []
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
        rows.append(Row(manifest, plan, pre, check_code(plan), basis))
    found_drift = drift.check(target.root, target.dist_info, ledger, touched)
    return Reading(reconciled, rows, found_drift, unknown)


def unknown_note(names: str) -> str:
    return (
        f"set {names} is recorded in the ledger, but this run cannot find it: pass --patchsets "
        "DIR (the folder it was applied from) or add that folder to $SGPATCH_PATH"
    )


def check_code(plan) -> ExitCode:
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
