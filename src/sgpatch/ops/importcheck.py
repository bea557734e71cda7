"""The import check (placement.pyimports) over a planned set: the release it is judged on, as
the cache or a tree holds it with the set's changes over it, and the findings per file.

Lint (a matrix row per release or tree), verify (a tree the set was applied to) and port (the
workspace) read the release differently; what they hand the pure check is one `Release`
view, built here. Imported only by the commands that check imports (never by `status`,
`apply` or `patch`: tests/test_imports.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sgpatch.diff.unified import decode
from sgpatch.errors import SgpatchError
from sgpatch.placement.pyimports import Release, Unresolved, unresolved
from sgpatch.tree.files import FileChange


def cached_release(version: str) -> Release:
    """Release `version` as the cache holds it: its RECORD is the listing, a file is read from
    the wheel when asked."""
    from sgpatch.releases import cache as releases

    prefix = f"{releases.PACKAGE}/"
    listing = [n[len(prefix) :] for n in releases.record(version) if n.startswith(prefix)]

    def read(rel: str) -> bytes | None:
        try:
            return releases.read_member(version, rel)
        except SgpatchError:
            return None

    def everything() -> Mapping[str, bytes]:
        return releases.read_members(version, [p for p in listing if p.endswith(".py")])

    return Release(frozenset(listing), read, everything)


def tree_release(root: Path) -> Release:
    """A tree's package (`root`, the package root), read from the disk through the one
    regular-file reader (fs.regular)."""
    from sgpatch.fs import regular
    from sgpatch.releases.snapshot import tree_files

    files = tree_files(root)

    def read(rel: str) -> bytes | None:
        """The file as the listing saw it: one swapped since for a link, a FIFO or nothing
        reads as absent (never followed, never waited on)."""
        path = files.get(rel)
        try:
            return regular.read(path) if path is not None else None
        except (OSError, regular.OddFile):
            return None

    def everything() -> Mapping[str, bytes]:
        return {r: d for r in files if r.endswith(".py") and (d := read(r)) is not None}

    return Release(frozenset(files), read, everything)


def with_changes(release: Release, changes: Sequence[FileChange]) -> Release:
    """The release with the set's changes over it: a file the set writes reads as written,
    one it deletes is gone, one it creates is there."""
    after = {c.path: c.after for c in changes}
    paths = frozenset(p for p in {*release.paths, *after} if after.get(p, b"") is not None)

    def read(rel: str) -> bytes | None:
        return after[rel] if rel in after else release.read(rel)

    def everything() -> Mapping[str, bytes]:
        out = {r: d for r, d in release.sources() if r not in after}
        out.update({r: d for r, d in after.items() if d is not None and r.endswith(".py")})
        return out

    return Release(paths, read, everything)


def changed_imports(changes: Sequence[FileChange], release: Release) -> list[Unresolved]:
    """Every import the changes add or keep in a Python file that does not resolve on the
    release (the file as written against the release's own), by file and line."""
    out: list[Unresolved] = []
    for change in sorted(changes, key=lambda c: c.path):
        if not change.path.endswith(".py") or change.after is None:
            continue
        before = decode(change.before) if change.before is not None else None
        out += unresolved(change.path, decode(change.after), before, release)
    return out
