"""Decide what a patch would do to a tree, without writing anything.

`plan_patch` runs the engine over every file of a patch against an in-memory overlay of the tree
(so a patch that touches one file twice, or several patches in a row, see each other's results in
a dry run exactly as in a real run). The set-level planner (states per patch) builds on it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sgpatch.diff.unified import (
    DEV_NULL,
    FilePatch,
    Patch,
    decode,
    encode,
    parse_patch,
    split_lines,
    strip_eol,
    strip_path,
)
from sgpatch.errors import ExitCode, SgpatchError, bad_input, unsafe
from sgpatch.ops.placed import Placed, place
from sgpatch.placement.engine import HunkResult, apply_hunks
from sgpatch.state.folder import is_state_path
from sgpatch.tree.files import FileChange, read_bytes

if TYPE_CHECKING:  # the set planner's inputs; `sgpatch patch` never loads them
    from packaging.version import Version

    from sgpatch.patchset.manifest import PatchSpec, SetManifest
    from sgpatch.patchset.probe import ProbeResult, Reader
    from sgpatch.state.ledger import Ledger, PatchRecord, SetRecord

Action = Literal["modify", "create", "delete", "rename", "copy"]
PathMapper = Callable[[str], str]


@dataclass(frozen=True)
class FilePlan:
    """One file of one patch: where it goes, what it becomes, and how each hunk placed."""

    path: str  # tree-relative path written (target; source for a delete)
    source: str  # tree-relative path read
    action: Action
    before: bytes | None
    after: bytes | None
    hunks: tuple[HunkResult, ...]
    note: str | None = None  # file-level problem (e.g. "file does not exist")
    status: Literal["ok", "already-applied", "conflict", "ambiguous"] = "ok"
    mode: int | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "already-applied")


@dataclass
class Overlay:
    """The tree as the plan sees it: real bytes, shadowed by earlier planned changes."""

    root: Path
    changed: dict[str, bytes | None] = field(default_factory=dict)
    original: dict[str, bytes | None] = field(default_factory=dict)

    def read(self, rel: str) -> bytes | None:
        if is_state_path(rel):  # sgpatch's own state (ledger, journal, originals): never
            raise unsafe(f"refusing diff path {rel!r}: it is inside sgpatch's state folder")
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            self.original[rel] = read_bytes(self.root, rel)
        return self.original[rel]

    def write(self, rel: str, data: bytes | None) -> None:
        self.read(rel)  # remember the original first
        self.changed[rel] = data

    def fork(self) -> Overlay:
        """A copy to plan on without touching this one (reads already done are shared)."""
        return Overlay(self.root, dict(self.changed), dict(self.original))

    def adopt(self, other: Overlay) -> None:
        """Take over what a fork planned."""
        self.changed, self.original = other.changed, other.original

    def changes(self, modes: Mapping[str, int] | None = None) -> list[FileChange]:
        modes = modes or {}
        return [
            FileChange(rel, self.original.get(rel), data, modes.get(rel))
            for rel, data in self.changed.items()
            if data != self.original.get(rel) or rel in modes
        ]


def patch_status(files: tuple[FilePlan, ...]) -> ExitCode:
    """The exit code a patch's file plans call for (0, 3 conflict or 4 ambiguous)."""
    if any(f.status == "ambiguous" for f in files):
        return ExitCode.UNSAFE
    if any(f.status == "conflict" for f in files):
        return ExitCode.CONFLICT
    return ExitCode.OK


def default_mapper(strip: int, name: str) -> PathMapper:
    return lambda p: strip_path(p, strip, name)


def plan_patch(
    overlay: Overlay,
    patch: Patch,
    mapper: PathMapper,
    *,
    fuzz: int = 0,
    reverse: bool = False,
    remove_empty: bool = False,
) -> tuple[FilePlan, ...]:
    """Plan every file of `patch` against `overlay`; successful files update the overlay.

    As git does, renames and copies read their source as it was before this patch, so two
    files swapping names (a->b, b->a) each get the other's old content, and a rename's source
    is removed only when no other file of the patch writes that name."""
    # -R undoes the last change first: a patch that touches one file twice is reversed in
    # reverse order (the plans are reported in the patch's order all the same)
    files = [fp.reversed() for fp in reversed(patch.files)] if reverse else list(patch.files)
    for fp in files:
        if fp.symlink:
            name = fp.target if fp.target != DEV_NULL else fp.source
            raise bad_input(
                f"{patch.name}: {name} is a symlink (git mode 120000); sgpatch does not create "
                "or change symlinks: drop that file from the patch"
            )
    start = overlay.fork()
    moving = {mapper(fp.source) for fp in files if fp.is_rename}
    written: set[str] = set()
    plans = []
    for fp in files:
        plan = _plan_file(overlay, start, fp, mapper, fuzz, moving)
        if remove_empty and plan.ok and plan.action == "modify" and plan.after == b"":
            plan = replace(plan, action="delete", after=None)
        if plan.ok:
            if plan.action == "rename" and plan.source not in written:
                overlay.write(plan.source, None)
            overlay.write(plan.path, plan.after)
            written.add(plan.path)
        plans.append(plan)
    return tuple(reversed(plans)) if reverse else tuple(plans)


def _status(
    hunks: Sequence[HunkResult],
) -> Literal["ok", "already-applied", "conflict", "ambiguous"]:
    if any(h.status == "ambiguous" for h in hunks):
        return "ambiguous"
    if any(h.status == "conflict" for h in hunks):
        return "conflict"
    if hunks and all(h.status == "already-applied" for h in hunks):
        return "already-applied"
    return "ok"


def _refused(path: str, source: str, action: Action, current: bytes | None, note: str) -> FilePlan:
    return FilePlan(path, source, action, current, current, (), note=note, status="conflict")


def _creates(fp: FilePatch) -> bool:
    """A new file: `--- /dev/null` (or an epoch timestamp), or one `@@ -0,0 +1,N @@` hunk."""
    if fp.is_new:
        return True
    return (
        not fp.git
        and len(fp.hunks) == 1
        and fp.hunks[0].source_start == 0
        and fp.hunks[0].source_length == 0
    )


def _plan_file(
    overlay: Overlay,
    start: Overlay,
    fp: FilePatch,
    mapper: PathMapper,
    fuzz: int,
    moving: set[str] = frozenset(),  # type: ignore[assignment]
) -> FilePlan:
    if fp.git_op == "uncopy":
        return _plan_uncopy(overlay, fp, mapper, fuzz)
    if fp.is_rename or fp.is_copy:
        return _plan_move(overlay, start, fp, mapper, fuzz, moving)
    if _creates(fp):
        path = _pick_name(overlay, fp, mapper, creating=True)
        if fp.is_new or overlay.read(path) is None:
            return _plan_create(overlay, fp, path)
    path = mapper(fp.source) if fp.is_delete else _pick_name(overlay, fp, mapper)
    current = overlay.read(path)
    action: Action = "delete" if fp.is_delete else "modify"
    if current is None:
        if fp.is_delete:
            return FilePlan(path, path, action, None, None, (), status="already-applied")
        return _refused(path, path, action, None, "file does not exist")
    if fp.is_delete:
        return _plan_delete(fp, path, current, fuzz)
    return _plan_hunks(overlay, fp, path, path, action, current, fuzz)


def _plan_hunks(
    overlay: Overlay,
    fp: FilePatch,
    path: str,
    source: str,
    action: Action,
    current: bytes,
    fuzz: int,
) -> FilePlan:
    """Place the hunks of a file that exists (modify, or the content of a rename/copy)."""
    placed = place(current, fp.hunks, fuzz) if fp.hunks else Placed(current, ())
    status = _status(placed.hunks)
    after = placed.after
    mode_only = not fp.hunks and action == "modify" and fp.new_mode is not None
    if mode_only and _mode(overlay.root, path) == fp.new_mode:
        status = "already-applied"  # a mode-only change that is already there
    return FilePlan(
        path, source, action, current, after, placed.hunks, status=status, mode=fp.new_mode
    )


def _plan_create(overlay: Overlay, fp: FilePatch, path: str) -> FilePlan:
    current = overlay.read(path)
    wanted_lines = [t + "\n" for t in _new_file_lines(fp)]
    if wanted_lines and fp.hunks and fp.hunks[-1].new_no_eol:
        wanted_lines[-1] = wanted_lines[-1][:-1]
    wanted = encode("".join(wanted_lines))
    if current is None:
        return FilePlan(path, path, "create", None, wanted, (), mode=fp.new_mode)
    same = [ln.rstrip("\r\n") for ln in split_lines(decode(current))] == [
        ln.rstrip("\n") for ln in wanted_lines
    ]
    if same:
        return FilePlan(path, path, "create", current, current, (), status="already-applied")
    return _refused(path, path, "create", current, "file to create already exists")


def _plan_delete(fp: FilePatch, path: str, current: bytes, fuzz: int) -> FilePlan:
    """Delete a file only when its content is exactly what the patch removes (line endings
    aside): a file edited since, even in a way fuzz would forgive, is kept."""
    lines = split_lines(decode(current))
    result = apply_hunks(lines, fp.hunks, fuzz=0)
    removed = [ln.text for h in fp.hunks for ln in h.lines if ln.kind != "+"]
    have = [strip_eol(ln) for ln in lines]
    if have == removed:
        return FilePlan(path, path, "delete", current, None, result.hunks)
    at = next((i for i, (a, b) in enumerate(zip(have, removed, strict=False)) if a != b), None)
    if at is None:
        at = min(len(have), len(removed))
        got = have[at] if at < len(have) else "<end of file>"
        want = removed[at] if at < len(removed) else "<end of file>"
    else:
        got, want = have[at], removed[at]
    note = (
        f"content differs from the deletion: line {at + 1} is {got.strip()!r}, the patch "
        f"removes {want.strip()!r}; the file is kept"
    )
    return FilePlan(
        path, path, "delete", current, current, result.hunks, note=note, status="conflict"
    )


def _plan_move(
    overlay: Overlay,
    start: Overlay,
    fp: FilePatch,
    mapper: PathMapper,
    fuzz: int,
    moving: set[str],
) -> FilePlan:
    """A git rename or copy: the source as it was before the patch, edited, at the new name."""
    source, path = mapper(fp.source), mapper(fp.target)
    action: Action = "copy" if fp.is_copy else "rename"
    current = start.read(source)
    there = overlay.read(path)
    if current is not None and (there is None or path in moving):
        plan = _plan_hunks(overlay, fp, path, source, action, current, fuzz)
        mode = fp.new_mode if fp.new_mode is not None else _mode(overlay.root, source)
        return replace(plan, before=there, mode=mode)
    if there is not None and current is None and fp.is_rename:
        # renamed already (by hand or an earlier run): its hunks are checked, or applied, there
        return _plan_hunks(overlay, fp, path, path, "modify", there, fuzz)
    if there is not None and fp.is_copy:
        done = _plan_hunks(overlay, fp, path, path, "modify", there, fuzz)
        if done.status == "already-applied" or (not fp.hunks and current in (None, there)):
            return replace(done, action=action, source=source, status="already-applied")
    what = "file to rename" if fp.is_rename else "file to copy"
    if current is None:
        return _refused(path, source, action, None, f"{what} ({source}) does not exist")
    return _refused(path, source, action, there, f"{path} already exists ({what} onto it)")


def _plan_uncopy(overlay: Overlay, fp: FilePatch, mapper: PathMapper, fuzz: int) -> FilePlan:
    """-R of a git copy: the copy goes away if, un-edited, it is the original again."""
    path, original = mapper(fp.source), mapper(fp.target)
    current = overlay.read(path)
    if current is None:
        return FilePlan(path, path, "delete", None, None, (), status="already-applied")
    plan = _plan_hunks(overlay, fp, path, path, "delete", current, fuzz)
    if plan.ok and plan.after != overlay.read(original):
        return _refused(path, path, "delete", current, f"the copy differs from {original}")
    return replace(plan, after=None) if plan.ok else plan


def _pick_name(overlay: Overlay, fp: FilePatch, mapper: PathMapper, creating: bool = False) -> str:
    """Which file a diff is about. A git diff names it; a plain diff whose two names differ
    (`diff -u a.py.orig a.py`) patches the one that exists, chosen as GNU patch does (fewest
    path components, then shortest base name, then shortest name; the same choice among both
    names when neither exists); never both."""
    if fp.git or fp.source == fp.target or DEV_NULL in (fp.source, fp.target):
        return mapper(fp.target if fp.target != DEV_NULL else fp.source)
    names: list[str] = []
    error: SgpatchError | None = None
    for raw in (fp.target, fp.source):
        try:
            names.append(mapper(raw))
        except SgpatchError as exc:  # an unusable or unsafe name: the other one may do (GNU)
            if exc.code not in (ExitCode.BAD_INPUT, ExitCode.UNSAFE):
                raise
            error = error or exc
    if not names:
        raise error  # type: ignore[misc]
    exist = [n for n in names if overlay.read(n) is not None]
    pool = names if creating or not exist else exist
    return min(pool, key=lambda n: (n.count("/"), len(n.rsplit("/", 1)[-1]), len(n)))


def _mode(root: Path, rel: str) -> int | None:
    try:
        return (root / rel).stat().st_mode & 0o777
    except OSError:
        return None


def file_modes(plans: Sequence[FilePlan]) -> dict[str, int]:
    """Modes a patch sets (git 'new file mode' / 'new mode') on the files it writes."""
    return {f.path: f.mode for f in plans if f.ok and f.mode is not None and f.status == "ok"}


def _new_file_lines(fp: FilePatch) -> list[str]:
    out: list[str] = []
    for h in fp.hunks:
        out.extend(ln.text for ln in h.lines if ln.kind != "-")
    return out


# ---------------------------------------------------------------------------- patch sets

State = Literal["applied", "modified", "present", "upstream", "pending", "conflict", "n/a"]
DONE_STATES = ("applied", "present", "upstream", "n/a")


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


# Top-level folders of the SGLang repository that are never inside the package: a diff made
# from an upstream pull request often touches them (kernels, docs, CI), and read as package-
# relative they would land inside python/sglang/ (a new file would be created there silently).
# `test/` and `benchmark/` are not listed: some releases' packages have their own (checked on
# every cached release by tests/real/test_plan_real.py).
REPO_ONLY = frozenset(
    {
        "sgl-kernel",
        "sgl-router",
        "sgl-model-gateway",
        "docs",
        "examples",
        "scripts",
        "docker",
        "3rdparty",
        "assets",
        ".github",
        ".devcontainer",
    }
)


def package_mapper(name: str) -> PathMapper:
    """Upstream-form paths (a/python/sglang/x) or bare ones (sglang/x, x) -> package-relative.
    A path that is clearly elsewhere in the repository (python/<not sglang>/..., sgl-kernel/,
    docs/, ...) is refused (exit 2): a patch set patches the package only."""

    def mapper(path: str) -> str:
        rel = strip_path(path, 1 if path.startswith(("a/", "b/")) else 0, name)
        for prefix in ("python/sglang/", "sglang/"):
            if rel.startswith(prefix):
                return rel[len(prefix) :]
        top = rel.split("/", 1)[0]
        if top in REPO_ONLY or (top == "python" and "/" in rel):
            raise SgpatchError(
                f"{name}: {rel} is outside the SGLang package (python/sglang/); a patch set "
                "patches the package only: drop that file from the patch"
            )
        return rel

    return mapper


def how_applied(files: Sequence[FilePlan]) -> str:
    """clean / offset / fuzz N / whitespace / partial: the words the tables and the matrix use."""
    hunks = [h for f in files for h in f.hunks]
    if any(h.status == "already-applied" for h in hunks) and any(
        h.status == "applied" for h in hunks
    ):
        return "partial"
    applied = [h for h in hunks if h.status == "applied"]
    if any(h.fuzz for h in applied):
        return f"fuzz {max(h.fuzz for h in applied)}"
    if any(h.whitespace for h in applied):
        return "whitespace"
    if any(h.offset for h in applied):
        return "offset"
    return "clean"


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
    from sgpatch.state.ledger import sha256

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
    if variant is None:
        return _plan_without_variant(base, spec, manifest, chosen, probe_result)
    rel = _set_relative(variant.file, manifest.base_dir)
    data = _read_patch_bytes(variant.file, rel)
    patch = _parsed_patch(data, f"{manifest.name}/{rel}")
    common = replace(base, variant=rel, patch_sha256=sha256(data), probe=probe_result)
    return _plan_variant(common, spec, patch, overlay, fuzz, by_id, chosen.untested)


def _plan_recorded(
    base: PatchPlan, record: SetRecord, rec: PatchRecord, ledger: Ledger, overlay: Overlay
) -> PatchPlan:
    """A patch the ledger says sgpatch applied: `applied`, or `modified` if a file it wrote
    (or a set stacked on it wrote) no longer hashes to what the ledger holds."""
    from sgpatch.state.ledger import holds, sha256

    edited = [
        f
        for f in rec.files
        if f in record.files and not holds(ledger, record.name, f, sha256(overlay.read(f)))
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
    raise SgpatchError(
        f"no variant of patch {spec.id!r} (set {manifest.name}) for sglang {chosen.described}, "
        "and its probe does not find it upstream"
    )


def _plan_variant(
    common: PatchPlan,
    spec: PatchSpec,
    patch: Patch,
    overlay: Overlay,
    fuzz: int,
    by_id: Mapping[str, PatchPlan],
    certain: bool = False,
) -> PatchPlan:
    """Steps 2-4 for a patch with a variant: post-image present, probe, requirements, engine
    (`certain`: every hunk's place must be certain, sgpatch.placement.certain)."""
    mapper = package_mapper(patch.name)
    probe_result: ProbeResult | None = common.probe
    # 2. post-image exactly in place (applied by hand or by an older tool)? Planned at fuzz 0
    # on a fork of the overlay; at the set's usual fuzz 0 that is also the real plan (step 4).
    trial = overlay.fork()
    present = plan_patch(trial, patch, mapper, fuzz=0)
    if present and all(f.status == "already-applied" for f in present):
        return replace(
            common,
            state="present",
            how="present",
            files=present,
            note="post-image already in the tree (not applied by sgpatch)",
        )
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
    return _plan_engine(common, spec, patch, overlay, fuzz, trial, present, certain)


def _plan_engine(
    common: PatchPlan,
    spec: PatchSpec,
    patch: Patch,
    overlay: Overlay,
    fuzz: int,
    trial: Overlay,
    present: tuple[FilePlan, ...],
    certain: bool = False,
) -> PatchPlan:
    """Step 4: the engine, on the overlay (so patches see each other), only for selected
    patches. At fuzz 0 the step-2 plan on `trial` is reused."""
    mapper = package_mapper(patch.name)
    selected: bool = common.selected
    if fuzz == 0:
        files = present
    else:
        trial = overlay.fork()
        files = plan_patch(trial, patch, mapper, fuzz=fuzz)
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
