"""Every patch of a set against every release: the table maintainers and CI read.

Each release is planned on a *minimal* pristine tree extracted from the cached wheel: the files
the set's variants touch, the files its probes read (plus their sibling modules, so a symbol
probe can follow base classes), and the version files. That keeps one release to milliseconds
and lets the releases run in parallel over the cores.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from sgpatch.diffs import read_patch
from sgpatch.errors import bad_input
from sgpatch.manifest import SetManifest, load_manifest
from sgpatch.probe import AllProbe, AnyProbe, NotProbe, RegexProbe, SymbolProbe


@dataclass(frozen=True)
class Cell:
    """One patch on one release."""

    state: str
    how: str
    note: str = ""
    variant: str | None = None
    probe: bool | None = None


@dataclass(frozen=True)
class Row:
    """One release's line of the matrix: a cell per patch, or why it could not be planned."""

    release: str
    cells: dict[str, Cell]
    error: str | None = None  # the release could not be planned at all (e.g. no variant)


def _probe_files(node) -> list[str]:
    if node is None:
        return []
    if isinstance(node, RegexProbe):
        return [node.file_glob]
    if isinstance(node, SymbolProbe):
        return [node.file, str(PurePosixPath(node.file).parent / "*.py")]
    if isinstance(node, (AllProbe, AnyProbe)):
        return [f for n in node.nodes for f in _probe_files(n)]
    if isinstance(node, NotProbe):
        return _probe_files(node.node)
    return []


def needed_files(manifest: SetManifest) -> list[str]:
    """Package-relative paths or globs a minimal tree must hold to plan this set."""
    from sgpatch.plan import package_mapper

    out = {"_version.py", "version.py", "__init__.py"}
    for spec in manifest.patches:
        out.update(_probe_files(spec.probe))
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


def _member_filter(patterns: Sequence[str]):
    regexes = [re.compile(_glob_re(p)) for p in patterns]

    def keep(name: str) -> bool:
        if ".dist-info/" in name:
            return name.endswith(("/METADATA", "/RECORD"))
        rel = name.split("/", 1)[1] if name.startswith("sglang/") else name
        return any(r.fullmatch(rel) for r in regexes)

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


def plan_release(set_dir: str, release: str, members: Sequence[str]) -> Row:
    """Plan the set on a fresh minimal pristine tree of one release (runs in a worker)."""
    from sgpatch import releases
    from sgpatch.errors import SgpatchError
    from sgpatch.ledger import Ledger
    from sgpatch.plan import plan_set
    from sgpatch.target import find_target

    manifest = load_manifest(Path(set_dir) / "patchset.yaml")
    with tempfile.TemporaryDirectory(prefix=f"sgpatch-matrix-{release}-") as tmp:
        try:
            root = releases.extract(release, Path(tmp), "site-packages", _member_filter(members))
            target = find_target(root)
            plan = plan_set(manifest, root, target.version, Ledger(), with_ids=_optional(manifest))
        except SgpatchError as exc:
            return Row(release, {}, error=exc.message)
    cells = {
        p.id: Cell(
            state=p.state,
            how=p.how,
            note=p.note,
            variant=p.variant,
            probe=p.probe.value if p.probe is not None else None,
        )
        for p in plan.patches
    }
    return Row(release, cells)


def _optional(manifest: SetManifest) -> tuple[str, ...]:
    return tuple(p.id for p in manifest.patches if p.optional)


def compute(
    manifest: SetManifest,
    versions: Sequence[Version],
    workers: int | None = None,
) -> list[Row]:
    """The matrix over `versions`, in parallel (processes: planning is CPU-bound Python).
    Missing wheels are fetched first, here, as one reported batch (not by the workers at once);
    one that cannot be fetched becomes its release's error row."""
    from sgpatch import releases as cache

    cache.fetch(versions, keep_going=True)
    members = needed_files(manifest)
    set_dir = str(manifest.base_dir)
    releases = [str(v) for v in versions]
    workers = workers or min(len(releases), os.cpu_count() or 1)
    if workers <= 1 or len(releases) <= 1:
        return [plan_release(set_dir, r, members) for r in releases]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(
            pool.map(plan_release, [set_dir] * len(releases), releases, [members] * len(releases))
        )


def select_versions(
    manifest: SetManifest, spec: str | None, offline: bool = False
) -> list[Version]:
    """Releases on the index (or in the cache when offline) that the set and `spec` cover."""
    from sgpatch import releases

    try:
        wanted = SpecifierSet(spec) if spec else SpecifierSet()
    except InvalidSpecifier:
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
            body.append(f"| {row.release} | " + " | ".join(["error"] * len(ids)) + " |")
            continue
        body.append(
            f"| {row.release} | "
            + " | ".join(cell_text(row.cells[i]) if i in row.cells else "" for i in ids)
            + " |"
        )
    return "\n".join([head, sep, *body]) + "\n"
