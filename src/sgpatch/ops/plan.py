"""Decide what a patch set would do to a tree, without writing anything.

`plan_set` gives every patch of a set its state on one tree (ledger, post-image, probe, then the
engine), over one overlay so later patches see earlier ones; each patch's files are planned by
sgpatch.ops.fileplan.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sgpatch.diff.paths import package_mapper
from sgpatch.diff.unified import Patch, decode, parse_patch, split_lines
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops.fileplan import (
    FilePlan,
    Overlay,
    file_modes,
    how_applied,
    patch_status,
    plan_patch,
)
from sgpatch.tree.files import FileChange

if TYPE_CHECKING:  # annotations only: imported where used, or by the caller
    from packaging.version import Version

    from sgpatch.patchset.manifest import PatchSpec, SetManifest
    from sgpatch.patchset.probe import ProbeResult, Reader
    from sgpatch.state.ledger import Ledger, PatchRecord, SetRecord


State = Literal["applied", "modified", "present", "upstream", "pending", "conflict", "n/a"]
DONE_STATES = ("applied", "present", "upstream", "n/a")


class NoVariant(SgpatchError):
    """No variant of patch `patch_id` covers the release and its probe does not find it
    upstream: the set cannot be planned there (exit 2). Lint names the patch's `variants`."""

    def __init__(self, message: str, patch_id: str) -> None:
        super().__init__(message, ExitCode.BAD_INPUT)
        self.patch_id = patch_id

    def __reduce__(self):  # a matrix worker's exception crosses processes whole
        return (NoVariant, (self.message, self.patch_id))


@dataclass(frozen=True)
class PatchPlan:
    """One patch of a set on one tree: its state, how it would apply, and the evidence."""

    id: str
    state: State
    optional: bool
    selected: bool  # will apply act on it (required, or optional and chosen with --with)
    how: str  # clean / offset / fuzz / whitespace / partial / upstream / ... for the table
    note: str = ""
    variant: str | None = None  # patch file relative to the set directory
    patch_sha256: str | None = None
    files: tuple[FilePlan, ...] = ()
    probe: ProbeResult | None = None  # when the probe ran
    exit_code: ExitCode = ExitCode.OK

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES

    def to_json(self) -> dict[str, object]:
        """The patch in --json documents (docs/json.md): `probe` only when its probe ran."""
        doc: dict[str, object] = {
            "id": self.id,
            "state": self.state,
            "how": self.how,
            "note": self.note,
            "optional": self.optional,
            "selected": self.selected,
            "variant": self.variant,
            "files": [f.to_json() for f in self.files],
        }
        if self.probe is not None:
            doc["probe"] = self.probe.to_json()
        return doc


@dataclass(frozen=True)
class SetPlan:
    """A whole set on one tree, planned in memory: nothing has been written."""

    name: str
    version: str
    patches: tuple[PatchPlan, ...]
    changes: tuple[FileChange, ...]  # what apply would write (patched files only)
    variants_of: str | None = None  # an untested version: the version whose variants planned it

    @property
    def done(self) -> bool:
        return all(p.done for p in self.patches if p.selected)

    @property
    def exit_code(self) -> ExitCode:
        codes = [p.exit_code for p in self.patches if p.selected]
        return max(codes, default=ExitCode.OK)

    def untested_json(self) -> dict[str, object] | None:
        """null when the set was checked on the tree's version; else the version whose
        variants planned it (docs/manifest.md, "Versions a set was not checked on")."""
        if self.variants_of is None:
            return None
        return {"version": self.version, "variants_of": self.variants_of}

    def applied(self) -> SetPlan:
        """The plan as it reads once its changes are written: selected pending -> applied."""
        return replace(
            self,
            patches=tuple(
                replace(p, state="applied", exit_code=ExitCode.OK)
                if p.selected and p.state == "pending"
                else p
                for p in self.patches
            ),
            changes=(),
        )


def _refusal(files: tuple[FilePlan, ...]) -> str:
    for f in files:
        if f.note and not f.ok:
            return f"{f.path}: {f.note}"
        for h in f.hunks:
            if not h.ok:
                return f"{f.path} hunk #{h.index}: {h.reason}"
    return ""


def plan_set(
    manifest: SetManifest,
    root: Path,
    version: Version,
    ledger: Ledger,
    *,
    with_ids: tuple[str, ...] = (),
    without_ids: tuple[str, ...] = (),
    strict: bool = False,
    variants_of: Version | None = None,
) -> SetPlan:
    """Decide every patch's state in manifest order, over one overlay (later patches see
    earlier ones). Order of evidence: ledger -> post-image present -> probe -> engine.

    `variants_of`: a version the set was not checked on (sgpatch.patchset.nearest) is planned
    with the variants of this one, at fuzz 0, and a patch is pending only when every hunk's
    place is certain (sgpatch.placement.certain); otherwise it is a conflict."""
    ids = {p.id for p in manifest.patches}
    for pid in (*with_ids, *without_ids):
        if pid not in ids:
            raise SgpatchError(f"unknown patch id {pid!r} in set {manifest.name}")
    from sgpatch.patchset.probe import Reader

    record = ledger.sets.get(manifest.name)
    overlay = Overlay(root)
    probes = Reader(root)  # one read (and parse) per tree file for all the set's probes
    fuzz = 0 if strict or variants_of is not None else manifest.fuzz
    chosen = ChosenBy(version, variants_of)
    plans: list[PatchPlan] = []
    by_id: dict[str, PatchPlan] = {}
    for spec in manifest.patches:
        selected = (not spec.optional or spec.id in with_ids) and spec.id not in without_ids
        plan = _plan_one(
            spec, manifest, probes, chosen, record, ledger, overlay, fuzz, selected, by_id
        )
        plans.append(plan)
        by_id[spec.id] = plan
    plans = _requires_after(manifest, plans)
    pending_files = {f.path for p in plans if p.state == "pending" and p.selected for f in p.files}
    pending_files |= {
        f.source for p in plans if p.state == "pending" and p.selected for f in p.files
    }
    modes = file_modes([f for p in plans if p.state == "pending" and p.selected for f in p.files])
    changes = tuple(c for c in overlay.changes(modes) if c.path in pending_files)
    untested = str(variants_of) if variants_of is not None else None
    return SetPlan(manifest.name, str(version), tuple(plans), changes, untested)


def _plan_one(
    spec: PatchSpec,
    manifest: SetManifest,
    probes: Reader,
    chosen: ChosenBy,
    record: SetRecord | None,
    ledger: Ledger,
    overlay: Overlay,
    fuzz: int,
    selected: bool,
    by_id: Mapping[str, PatchPlan],
) -> PatchPlan:
    """One patch's state, decided in order: the ledger, the variant, the post-image, the
    probe, its requirements, then the engine."""
    from sgpatch.patchset.manifest import probe_for, select_variant
    from sgpatch.patchset.probe import evaluate
    from sgpatch.state.digest import sha256

    base = PatchPlan(spec.id, "pending", spec.optional, selected, how="")  # decided below
    # 1. the ledger: sgpatch applied it; do the files still hash to what it (or a set
    # stacked on it) wrote?
    rec = record.patch(spec.id) if record else None
    if record is not None and rec is not None:
        return _plan_recorded(base, record, rec, ledger, overlay)
    variant = select_variant(spec, chosen.variants)
    probe = probe_for(spec, chosen.variants)
    probe_result = evaluate(probe, probes.root, probes) if probe is not None else None
    if variant is not None and variant.na is not None:
        return replace(base, state="n/a", how="n/a", note=variant.na, probe=probe_result)
    made = _made_by(ledger, manifest.name, probes.root, probe, probe_result)
    if variant is None:
        if made:
            return _other_sets(replace(base, probe=probe_result), made)
        return _plan_without_variant(base, spec, manifest, chosen, probe_result)
    rel = _set_relative(variant.file, manifest.base_dir)
    data = _read_patch_bytes(variant.file, rel)
    patch = _parsed_patch(data, f"{manifest.name}/{rel}")
    common = replace(base, variant=rel, patch_sha256=sha256(data), probe=probe_result)
    made_on = variant.made_on
    authored = made_on is not None and made_on.public == chosen.version.public
    authored = authored and not chosen.untested
    how = (fuzz, authored)
    return _plan_variant(common, spec, patch, overlay, how, by_id, chosen.untested, made)


def _made_by(ledger, own, root, probe, result) -> tuple[str, ...]:
    """The other applied sets whose change makes the probe true (sgpatch.ops.othersets)."""
    if probe is None or result is None or not result.value:
        return ()
    if all(name == own for name in ledger.sets):  # no other set applied: nothing to tell apart
        return ()
    from sgpatch.ops.othersets import made_by

    return made_by(ledger, own, root, probe, result)


def _other_sets(common: PatchPlan, made: tuple[str, ...]) -> PatchPlan:
    """The probe finds a change another applied set made, and this patch's own post-image is
    not there: two sets change the same code. Not upstream (that is the release), and not
    applied on top of it: a conflict between the sets (docs/index.md, "States")."""
    sets = ", ".join(made)
    return replace(
        common,
        state="conflict",
        how="other set",
        note=f"its probe matches the change set {sets} made, not the release: both sets change "
        f"this code; revert {made[-1]} or leave this patch out (--without)",
        exit_code=ExitCode.CONFLICT,
    )


def _plan_recorded(
    base: PatchPlan, record: SetRecord, rec: PatchRecord, ledger: Ledger, overlay: Overlay
) -> PatchPlan:
    """A patch the ledger says sgpatch applied: `applied`, or `modified` if a file it wrote
    (or a set stacked on it wrote) no longer hashes to what the ledger holds."""
    from sgpatch.state.ledger import holds, sha256

    edited = [
        f
        for f in rec.files
        if f in record.files
        and (
            not holds(ledger, record.name, f, sha256(overlay.read(f)))
            or overlay.is_link(f) != (record.files[f].link_after is not None)
        )
    ]
    if edited:
        return replace(
            base,
            state="modified",
            how="edited",
            note="changed since sgpatch applied it: " + ", ".join(edited),
            variant=rec.variant,
            exit_code=ExitCode.NOT_DONE,
        )
    return replace(base, state="applied", how="recorded", variant=rec.variant)


def _plan_without_variant(
    base: PatchPlan,
    spec: PatchSpec,
    manifest: SetManifest,
    chosen: ChosenBy,
    probe_result: ProbeResult | None,
) -> PatchPlan:
    """No variant covers this release: fine if upstream has it or it is not selected; bad
    input otherwise."""
    if probe_result is not None and probe_result.value:
        return replace(
            base, state="upstream", how="probe", note=_upstream_note(spec), probe=probe_result
        )
    if not base.selected:  # left out with --without (or an optional one not chosen)
        return replace(
            base,
            state="n/a",
            how="n/a",
            probe=probe_result,
            note=f"no variant for sglang {chosen.variants}; not selected",
        )
    raise NoVariant(
        f"no variant of patch {spec.id!r} (set {manifest.name}) for sglang {chosen.described}, "
        "and its probe does not find it upstream",
        spec.id,
    )


def _plan_variant(
    common: PatchPlan,
    spec: PatchSpec,
    patch: Patch,
    overlay: Overlay,
    how: tuple[int, bool],
    by_id: Mapping[str, PatchPlan],
    certain: bool = False,
    made: tuple[str, ...] = (),
) -> PatchPlan:
    """Steps 2-4 for a patch with a variant: post-image present, probe, requirements, engine
    (`certain`: every hunk's place must be certain, sgpatch.placement.certain; `made`: the
    other applied sets whose change the probe matches, not upstream's; `how`: the fuzz, and
    whether the tree is the release the variant was made on: there a def its hunk adds
    twice, exactly as written, is the author's, applied with a warning)."""
    authored = how[1]
    mapper = package_mapper(patch.name)
    probe_result: ProbeResult | None = common.probe
    # 2. post-image exactly in place (applied by hand or by an older tool)? Planned at fuzz 0
    # on a fork of the overlay; at the set's usual fuzz 0 that is also the real plan (step 4).
    trial = overlay.fork()
    present = plan_patch(trial, patch, mapper, fuzz=0, authored=authored)
    if present and all(f.status == "already-applied" for f in present):
        return replace(
            common,
            state="present",
            how="present",
            files=present,
            note=f"post-image already in the tree: set {', '.join(made)} made this change"
            if made
            else "post-image already in the tree (not applied by sgpatch)",
        )
    if made:  # the probe matched another set's change: not upstream, and not to stack on it
        return _other_sets(common, made)
    # 3. the probe: upstream contains it -> never apply (fuzz must not decide this)
    if probe_result is not None and probe_result.value:
        return replace(common, state="upstream", how="probe", note=_upstream_note(spec))
    missing = _unmet(spec, by_id)
    if missing:
        return replace(
            common,
            state="conflict",
            how="requires",
            note="requires " + ", ".join(missing),
            exit_code=ExitCode.CONFLICT,
        )
    return _plan_engine(common, spec, patch, overlay, how, trial, present, certain)


def _plan_engine(
    common: PatchPlan,
    spec: PatchSpec,
    patch: Patch,
    overlay: Overlay,
    how: tuple[int, bool],
    trial: Overlay,
    present: tuple[FilePlan, ...],
    certain: bool = False,
) -> PatchPlan:
    """Step 4: the engine, on the overlay (so patches see each other), only for selected
    patches. At fuzz 0 the step-2 plan on `trial` is reused. `how`: (fuzz, authored)."""
    fuzz, authored = how
    mapper = package_mapper(patch.name)
    selected: bool = common.selected
    if fuzz == 0:
        files = present
    else:
        trial = overlay.fork()
        files = plan_patch(trial, patch, mapper, fuzz=fuzz, authored=authored)
    code = patch_status(files)
    doubt = _uncertain(patch, files) if certain and code == ExitCode.OK else None
    if doubt is not None:
        return replace(
            common, state="conflict", how=doubt[0], note=doubt[1], files=files,
            exit_code=ExitCode.UNSAFE if doubt[0] == "ambiguous" else ExitCode.CONFLICT,
        )  # fmt: skip
    if selected:
        overlay.adopt(trial)
    if code != ExitCode.OK:
        return replace(
            common,
            state="conflict",
            how="ambiguous" if code == 4 else "conflict",
            note=_refusal(files),
            files=files,
            exit_code=code,
        )
    return replace(
        common,
        state="pending",
        how=how_applied(files),
        files=files,
        note="" if selected else _left_out(spec),
        exit_code=ExitCode.NOT_DONE if selected else ExitCode.OK,
    )


@dataclass(frozen=True)
class ChosenBy:
    """The tree's version and the version whose variants plan it (None: its own)."""

    version: Version
    variants_of: Version | None = None

    @property
    def variants(self) -> Version:
        return self.version if self.variants_of is None else self.variants_of

    @property
    def untested(self) -> bool:
        return self.variants_of is not None

    @property
    def described(self) -> str:
        if self.variants_of is None:
            return str(self.version)
        return f"{self.variants_of} (nearest to {self.version}, which the set was not checked on)"


def _uncertain(patch: Patch, files: tuple[FilePlan, ...]) -> tuple[str, str] | None:
    """(how, note) when some hunk of a pending patch is not certainly placed: "uncertain" for
    a match that needed tolerance, "ambiguous" for lines found at several places."""
    from sgpatch.placement.certain import uncertain_hunks

    for fp, plan in zip(patch.files, files, strict=True):
        if not plan.hunks or plan.before is None:
            continue
        doubts = uncertain_hunks(split_lines(decode(plan.before)), fp.hunks, plan.hunks)
        if doubts:
            how = "ambiguous" if doubts[0].kind == "repeated" else "uncertain"
            return how, f"{plan.path} {doubts[0].reason}: not certain on an untested version"
    return None


def _unmet(spec: PatchSpec, by_id: Mapping[str, PatchPlan]) -> list[str]:
    """Required patches that are neither done nor about to be applied in this run."""
    return [
        r
        for r in spec.requires
        if r in by_id
        and not by_id[r].done
        and not (by_id[r].state == "pending" and by_id[r].selected)
    ]


def _requires_after(manifest: SetManifest, plans: list[PatchPlan]) -> list[PatchPlan]:
    """`requires` may name a patch listed later: check every requirement once all are known."""
    by_id = {p.id: p for p in plans}
    out = []
    for spec, plan in zip(manifest.patches, plans, strict=True):
        missing = _unmet(spec, by_id)
        if plan.state == "pending" and plan.selected and missing:
            plan = replace(
                plan,
                state="conflict",
                how="requires",
                note="requires " + ", ".join(missing),
                exit_code=ExitCode.CONFLICT,
            )
        out.append(plan)
    return out


def _left_out(spec: PatchSpec) -> str:
    if spec.optional:
        return f"optional: apply with --with {spec.id}"
    return "left out with --without"


def _upstream_note(spec) -> str:
    up = spec.upstream
    if up and up.ref:
        since = f" (since {up.since})" if getattr(up, "since", None) else ""
        return f"upstream has it: {up.ref}{since}"
    return "upstream has it (probe matched)"


def _set_relative(path: Path, base: Path) -> str:
    try:
        return Path(path).relative_to(base).as_posix()
    except ValueError:
        return Path(path).as_posix()


@functools.lru_cache(maxsize=64)
def _parsed_patch(data: bytes, name: str) -> Patch:
    """`parse_patch` by content: a Patch is frozen, and matrix plans the same variant files on
    every release a worker takes (parsing the 167-hunk stack was ~80 ms a release)."""
    return parse_patch(data, name)


def _read_patch_bytes(path: Path, rel: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SgpatchError(f"patch file {rel}: {exc.strerror or exc}") from None
