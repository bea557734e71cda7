"""Every patch of a set against every release: the table maintainers and CI read.

Each release is planned on a *minimal* pristine tree extracted from the cached wheel: the files
the set's variants touch, the files its probes read (plus their sibling modules, so a symbol
probe can follow base classes), and the version files. That keeps one release to milliseconds
and lets the releases run in parallel over the cores.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.diff.unified import read_patch
from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.patchset.manifest import SetManifest, load_manifest, probe_for, probes_of
from sgpatch.patchset.probe import files as probe_files
from sgpatch.placement.pyimports import Unresolved

# a cell's state, or how it applied (any fuzz level is "fuzz"); "error": a release not planned
FAIL_ON = (
    "conflict",
    "error",
    "fuzz",
    "offset",
    "whitespace",
    "partial",
    "pending",
    "present",
    "upstream",
    "n/a",
)


@dataclass(frozen=True)
class Failure:
    """One refused hunk (or a file-level problem: hunk None) of a patch on a release."""

    file: str
    hunk: int | None
    reason: str


@dataclass(frozen=True)
class Cell:
    """One patch on one release."""

    state: str
    how: str
    note: str = ""
    variant: str | None = None
    probe: bool | None = None
    failures: tuple[Failure, ...] = ()  # every refused hunk, in file and hunk order
    probe_after: bool | None = None  # the probe on the tree with the set applied (pending only)
    warnings: tuple[Failure, ...] = ()  # hunks applied with a warning (a def its author twice)
    imports: tuple[Unresolved, ...] = ()  # lint's import check: what does not resolve here

    def to_json(self) -> dict[str, object]:
        """The cell in `matrix --json`: every field by name, its failures included."""
        return asdict(self)


def failures_of(files) -> tuple[Failure, ...]:
    """Every refused hunk of a patch's file plans, and file-level problems, with the reason."""
    out = []
    for f in files:
        if f.note and not f.ok:
            out.append(Failure(f.path, None, f.note))
        for h in f.hunks:
            if not h.ok:
                out.append(Failure(f.path, h.index, h.reason or h.status))
    return tuple(out)


def warnings_of(files) -> tuple[Failure, ...]:
    """Every hunk of a patch's file plans that applies with a warning (placement.engine: a
    def/class its author's hunk defines twice), with the warning."""
    return tuple(Failure(f.path, h.index, h.warning) for f in files for h in f.hunks if h.warning)


def failure_text(f: Failure) -> str:
    return f"{f.file} hunk #{f.hunk}: {f.reason}" if f.hunk else f"{f.file}: {f.reason}"


def failure_lines(manifest: SetManifest, rows: Sequence[Row]) -> list[str]:
    """`release patch: file hunk #n: reason`, one line per refused hunk of every release."""
    return [
        f"{row.release} {pid}: {failure_text(f)}"
        for row in rows
        for pid in (p.id for p in manifest.patches)
        if pid in row.cells
        for f in row.cells[pid].failures
    ]


@dataclass(frozen=True)
class Row:
    """One release's line of the matrix: a cell per patch, or why it could not be planned."""

    release: str
    cells: dict[str, Cell]
    error: str | None = None  # the release could not be planned at all (e.g. no variant)
    error_patch: str | None = None  # the patch with no variant for it, when that is why
    tree: str | None = None  # a tree's row (`matrix --tree`): its package root
    variants_of: str | None = None  # not checked on: the version whose variants planned it

    def to_json(self) -> dict[str, object]:
        """The row in `matrix --json` (docs/json.md)."""
        cells = {k: c.to_json() for k, c in self.cells.items()}
        return {"release": self.release, "tree": self.tree, "variants_of": self.variants_of,
                "error": self.error, "cells": cells}  # fmt: skip


def needed_files(manifest: SetManifest) -> list[str]:
    """Package-relative paths or globs a minimal tree must hold to plan this set."""
    from sgpatch.diff.paths import package_mapper

    out = {"_version.py", "version.py", "__init__.py"}
    for spec in manifest.patches:
        for probe in probes_of(spec):
            out.update(probe_files(probe))
        for v in spec.variants:
            if v.patch is None:
                continue
            patch = read_patch(v.patch)
            mapper = package_mapper(patch.name)
            for fp in patch.files:
                for p in (fp.source, fp.target):
                    if p != "/dev/null":
                        out.add(mapper(p))
    return sorted(out)


def member_filter(patterns: Sequence[str]):
    """A wheel-member filter keeping the files `patterns` (package-relative globs) name."""
    # one alternation, one match per wheel member (thousands of them, ~50 patterns for a stack)
    either = re.compile("|".join(f"(?:{_glob_re(p)})" for p in patterns) or "(?!)")

    def keep(name: str) -> bool:
        if ".dist-info/" in name:
            return name.endswith(("/METADATA", "/RECORD"))
        rel = name.split("/", 1)[1] if name.startswith("sglang/") else name
        return either.fullmatch(rel) is not None

    return keep


def _glob_re(pattern: str) -> str:
    out = ""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return out


def plan_release(set_dir: str, release: str, members: Sequence[str], imports: bool = False) -> Row:
    """Plan the set on a fresh minimal pristine tree of one release (runs in a worker); with
    `imports`, also check the imports its changes add on the release (lint)."""
    from sgpatch.releases import cache as releases
    from sgpatch.tree.target import find_target

    manifest = _manifest(Path(set_dir) / "patchset.yaml")
    with tempfile.TemporaryDirectory(prefix=f"sgpatch-matrix-{release}-", dir=_scratch()) as tmp:
        try:
            root = releases.extract(release, Path(tmp), "site-packages", member_filter(members))
            (root / "srt").mkdir(exist_ok=True)  # a set that only creates files lays none of srt/
            view = _cached_view(release) if imports else None
            return _row(manifest, root, find_target(root).version, release, view=view)
        except SgpatchError as exc:
            return _error_row(release, exc)


def _error_row(label: str, exc: SgpatchError, tree: str | None = None) -> Row:
    """A release (or tree) the set could not be planned on, and the patch to blame if any."""
    from sgpatch.ops.plan import NoVariant

    patch = exc.patch_id if isinstance(exc, NoVariant) else None
    return Row(label, {}, error=exc.message, error_patch=patch, tree=tree)


def _row(
    manifest: SetManifest, root: Path, version: Version, label: str, tree=None, view=None
) -> Row:
    """The set planned on a minimal scratch tree (its probes then see the set applied): with
    its own variants, or, on a version it was not checked on, the nearest lower one's
    (sgpatch.patchset.nearest). `view`: the release as a whole (ops.importcheck), to check
    the imports the set's changes add on it (lint)."""
    from sgpatch.ops.plan import plan_set
    from sgpatch.patchset.nearest import basis
    from sgpatch.state.ledger import Ledger

    found = basis(manifest, version)
    lower = None if found.checked else found.variants_of
    plan = plan_set(
        manifest, root, version, Ledger(), with_ids=_optional(manifest), variants_of=lower
    )
    unresolved = _imports_by_patch(plan, view) if view is not None else {}
    after = _probes_after(manifest, plan, root)
    cells = {
        p.id: Cell(
            state=p.state,
            how=p.how,
            note=p.note,
            variant=p.variant,
            probe=p.probe.value if p.probe is not None else None,
            failures=failures_of(p.files) if p.state == "conflict" else (),
            probe_after=after.get(p.id),
            warnings=warnings_of(p.files) if p.state == "pending" else (),
            imports=unresolved.get(p.id, ()),
        )
        for p in plan.patches
    }
    return Row(label, cells, tree=tree, variants_of=plan.variants_of)


def _cached_view(release: str):
    """A release from the cache, as the import check reads it (the set's changes go over it
    in `_imports_by_patch`)."""
    from sgpatch.ops.importcheck import cached_release

    return cached_release(release)


def _tree_view(root: Path):
    """A tree (`matrix --tree`'s, read in place), as the import check reads it."""
    from sgpatch.ops.importcheck import tree_release

    return tree_release(root)


def _imports_by_patch(plan, view) -> dict[str, tuple[Unresolved, ...]]:
    """What the import check finds in the plan's changes on the release, per patch: a file's
    findings go to the last patch that writes it (the file as it ends is its doing)."""
    from sgpatch.ops.importcheck import changed_imports, with_changes

    release = with_changes(view, plan.changes)
    owner = {f.path: p.id for p in plan.patches if p.state == "pending" and p.selected
             for f in p.files}  # fmt: skip
    out: dict[str, tuple[Unresolved, ...]] = {}
    for u in changed_imports(plan.changes, release):
        if u.file in owner:
            out[owner[u.file]] = (*out.get(owner[u.file], ()), u)
    return out


def tree_version(tree: Path) -> tuple[Path, Version]:
    """The package root and version of a tree given to `matrix --tree` (bad input, exit 2:
    not an SGLang tree, or no version it can tell)."""
    from sgpatch.tree.target import find_root, find_target

    target = find_target(root=find_root(tree))
    return target.root, target.version


def plan_tree(
    manifest: SetManifest, tree: Path, members: Sequence[str], imports: bool = False
) -> Row:
    """The set planned on an SGLang tree that is not in the release cache (a checkout of
    main, a nightly's package): the files the set needs, copied into a scratch tree (the
    tree itself is only read). The row is labelled with the tree's version."""
    import shutil

    from sgpatch.releases.snapshot import tree_files

    root, version = tree_version(tree)
    keep = member_filter(members)
    with tempfile.TemporaryDirectory(prefix="sgpatch-matrix-tree-") as tmp:
        pkg = Path(tmp) / "sglang"
        for rel, path in tree_files(root).items():
            if keep(f"sglang/{rel}"):
                (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, pkg / rel)
        (pkg / "srt").mkdir(parents=True, exist_ok=True)  # a set may only create files
        try:
            view = _tree_view(root) if imports else None
            return _row(manifest, pkg, version, str(version), str(root), view)
        except SgpatchError as exc:
            return _error_row(str(version), exc, str(root))


def compute_trees(manifest: SetManifest, trees: Sequence[Path], imports: bool = False) -> list[Row]:
    """A row per tree, in the order given. Each tree is checked first (an SGLang tree with a
    version; one older than every version the set was checked on): bad input, exit 2."""
    from sgpatch.patchset.nearest import basis

    for tree in trees:
        basis(manifest, tree_version(tree)[1])
    members = needed_files(manifest)
    return [plan_tree(manifest, tree, members, imports) for tree in trees]


def row_label(row: Row) -> str:
    """The first column: the release, or a tree's version marked as such."""
    return f"{row.release} (tree)" if row.tree else row.release


def _manifest(path: Path) -> SetManifest:
    """The set, loaded once per worker (a worker plans a share of the releases) and again
    only if its file changes."""
    st = path.stat()
    return _loaded(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _loaded(path: Path, _size: int, _mtime_ns: int) -> SetManifest:
    return load_manifest(path)


def _scratch() -> str | None:
    """Where the minimal trees go: memory (/dev/shm) when it is a writable folder, as
    creating and removing ~100 small files per release costs a journaled disk far more;
    else the usual temp folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _probes_after(manifest: SetManifest, plan, root: Path) -> dict[str, bool]:
    """Write what the plan would apply into the (scratch) minimal tree and evaluate the probe
    of every patch that would be applied: a probe must find its own patch's post-image."""
    from sgpatch.patchset.probe import evaluate

    if not any(c.path for c in plan.changes):
        return {}
    for change in plan.changes:
        path = root / change.path
        if change.after is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(change.after)
    version = Version(plan.variants_of or plan.version)
    probes = {spec.id: probe_for(spec, version) for spec in manifest.patches}
    return {
        p.id: evaluate(probe, root).value
        for p in plan.patches
        if p.state == "pending" and (probe := probes[p.id]) is not None
    }


def _optional(manifest: SetManifest) -> tuple[str, ...]:
    return tuple(p.id for p in manifest.patches if p.optional)


def compute(
    manifest: SetManifest,
    versions: Sequence[Version],
    workers: int | None = None,
    imports: bool = False,
) -> list[Row]:
    """The matrix over `versions`, in parallel (processes: planning is CPU-bound Python).
    Missing wheels are fetched first, here, as one reported batch (not by the workers at once);
    one that cannot be fetched becomes its release's error row. With `imports` (lint), each
    cell also holds the imports its patch adds that do not resolve on the release."""
    from sgpatch.ops import placed
    from sgpatch.releases import cache

    cache.fetch(versions, keep_going=True)
    members = needed_files(manifest)
    set_dir = str(manifest.base_dir)
    releases = [str(v) for v in versions]
    workers = workers or min(len(releases), os.cpu_count() or 1)
    if workers <= 1 or len(releases) <= 1:
        with placed.remembering():
            return [plan_release(set_dir, r, members, imports) for r in releases]
    return _in_parallel(set_dir, releases, members, workers, imports)


def _in_parallel(
    set_dir: str, releases: list[str], members: Sequence[str], workers: int, imports: bool
) -> list[Row]:
    """The rows planned by `workers` processes, each walking contiguous runs of releases
    (sgpatch.ops.runs: its memo of placements keeps hitting, as neighbours share most files'
    bytes; the slime stack over 42 releases places 1,899 files, 1,170 of them distinct), in
    release order again."""
    import multiprocessing

    from sgpatch.ops import runs

    bounds = multiprocessing.Array("i", runs.first_runs(len(releases), workers))
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_start, initargs=(bounds,)
    ) as pool:
        futures = [
            pool.submit(_plan_runs, set_dir, releases, members, me, imports)
            for me in range(workers)
        ]
        done = [pair for f in futures for pair in f.result()]
    return [row for _, row in sorted(done, key=lambda pair: pair[0])]


_bounds = None  # a worker's view of the shared runs (set by _worker_start)


def _worker_start(bounds) -> None:
    """A matrix worker: the shared runs, and a memo of placements for its whole life."""
    global _bounds
    from sgpatch.ops import placed

    _bounds = bounds
    placed.remember()


def _plan_runs(
    set_dir: str, releases: list[str], members: Sequence[str], me: int, imports: bool
) -> list[tuple[int, Row]]:
    """Releases planned by one worker, taken as sgpatch.ops.runs says, with their index."""
    from sgpatch.ops.runs import take

    assert _bounds is not None
    out: list[tuple[int, Row]] = []
    while True:
        with _bounds.get_lock():
            i = take(_bounds, me)
        if i is None:
            return out
        out.append((i, plan_release(set_dir, releases[i], members, imports)))


def select_versions(
    manifest: SetManifest, spec: str | None, offline: bool = False
) -> list[Version]:
    """Releases on the index (or in the cache when offline) that the set and `spec` cover."""
    from sgpatch.releases import cache as releases
    from sgpatch.versions import checked

    try:
        wanted = checked(SpecifierSet(spec)) if spec else SpecifierSet()
    except ValueError:  # InvalidSpecifier, or a version past int()'s digit limit
        raise bad_input(f"--releases {spec!r}: not a PEP 440 specifier (e.g. '>=0.5.10')") from None
    found = releases.cached_versions() if offline else releases.index_versions(">=0")
    return [
        v
        for v in found
        if manifest.sglang.contains(v, prereleases=True) and wanted.contains(v, prereleases=True)
    ]


def cell_text(cell: Cell) -> str:
    if cell.state in ("pending", "present"):
        return cell.how if cell.state == "pending" else "present"
    return cell.state


def markdown(manifest: SetManifest, rows: Sequence[Row]) -> str:
    ids = [p.id for p in manifest.patches]
    head = "| release | " + " | ".join(f"`{i}`" for i in ids) + " |"
    sep = "|---|" + "---|" * len(ids)
    body = []
    for row in rows:
        if row.error:
            body.append(f"| {row_label(row)} | " + " | ".join(["error"] * len(ids)) + " |")
            continue
        body.append(
            f"| {row_label(row)} | "
            + " | ".join(cell_text(row.cells[i]) if i in row.cells else "" for i in ids)
            + " |"
        )
    fails = [f"- {line}" for line in failure_lines(manifest, rows)]
    tail = ["", "Refused hunks:", "", *fails] if fails else []
    return "\n".join([head, sep, *body, *tail]) + "\n"


def gate(rows: Sequence[Row], fail_on: Sequence[str]) -> ExitCode:
    """`--fail-on`: CONFLICT (3) when a row was not planned and "error" is asked for, or when
    a cell's state or how it applied (any fuzz level counting as "fuzz") is one asked for."""
    failing = set(fail_on)
    for row in rows:
        if row.error and "error" in failing:
            return ExitCode.CONFLICT
        for cell in row.cells.values():
            if {cell.state, "fuzz" if cell.how.startswith("fuzz") else cell.how} & failing:
                return ExitCode.CONFLICT
    return ExitCode.OK


def json_doc(manifest: SetManifest, rows: Sequence[Row], code: ExitCode) -> dict:
    """`matrix --json` (docs/json.md): every row with its cells, and the gate's exit code."""
    return {
        "command": "matrix",
        "exit_code": int(code),
        "set": manifest.name,
        "patches": [p.id for p in manifest.patches],
        "releases": [r.to_json() for r in rows],
    }


def tree_notes(manifest: SetManifest, rows: Sequence[Row]) -> list[str]:
    """One line per `--tree` whose release the set was never checked on: which variants
    planned it, and that only exact, unique hunks count there."""
    return [
        f"sgpatch: tree {r.tree}: sglang {r.release}, not a release {manifest.name} was "
        f"checked on: planned with the {r.variants_of} variants, every hunk exact and unique"
        for r in rows
        if r.tree and r.variants_of
    ]


def summary(manifest: SetManifest, rows: Sequence[Row], code: ExitCode) -> str:
    """The last line: how many releases and trees, how many not planned, and the gate."""
    trees = sum(1 for r in rows if r.tree)
    errors = sum(1 for r in rows if r.error)
    counted = f"{len(rows) - trees} release(s)" + (f", {trees} tree(s)" if trees else "")
    tail = f", {errors} not planned" if errors else ""
    gate_note = f"; a --fail-on state found (exit {int(code)})" if code else ""
    return f"sgpatch: {manifest.name}: {counted}{tail}{gate_note}"
