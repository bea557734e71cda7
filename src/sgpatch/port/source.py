"""Where port takes its releases from, and which variant (and base release) it carries.

Releases are read straight from the cached wheels (sgpatch.releases): a merge base is a few
files, never an extracted tree. Each patch is carried from the variant that covers the release
nearest to the target (the target itself first), and merged against the variant's `base:`, by
default that nearest release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import Version

from sgpatch.diffs import read_patch
from sgpatch.manifest import PatchSpec, SetManifest, Variant, select_variant
from sgpatch.plan import package_mapper, plan_patch
from sgpatch.port.carry import MemOverlay, Reader


def known_releases(offline: bool) -> list[Version]:
    """Final releases port may walk or take a base from: the index (or, offline or when it
    cannot be reached, the release cache), ascending."""
    from sgpatch import releases

    found = releases.cached_versions() if offline else releases.index_versions(">=0")
    return sorted(v for v in found if not v.is_prerelease)


def pristine(version: Version) -> Reader:
    """A reader of one release's files (package-relative; None when the release lacks one)."""
    from sgpatch import releases

    names = releases.record(version)

    def read(rel: str) -> bytes | None:
        if releases._member_name(rel) not in names:
            return None
        return releases.read_member(version, rel)

    return read


@dataclass(frozen=True)
class Source:
    """What a patch is carried from: the variant, the release it came from, its merge base."""

    variant: Variant
    release: Version  # the release nearest to the target that the variant covers
    base: Version


def by_distance(target: Version, known: Sequence[Version]) -> list[Version]:
    """Releases ordered by how far they are from `target` (the older one first on a tie)."""
    order = sorted(set(known) | {target})
    at = order.index(target)
    return sorted(order, key=lambda v: (abs(order.index(v) - at), v))


def source_of(spec: PatchSpec, target: Version, known: Sequence[Version]) -> Source | None:
    """The variant with a patch file covering the release nearest to `target`; None if the
    nearest covered release has none (n/a there) or no release has one."""
    for r in by_distance(target, known):
        v = select_variant(spec, r)
        if v is None:
            continue
        if v.patch is None:
            return None
        return Source(v, r, v.base or r)
    return None


class BaseTree:
    """A release with the set's patches applied in order, read lazily: the base a patch file
    was made on is its release plus the patches before it."""

    def __init__(self, manifest: SetManifest, version: Version, read: Reader) -> None:
        self.manifest, self.version = manifest, version
        self._overlay = MemOverlay(read)
        self._states: list[dict[str, bytes | None]] = []

    def before(self, index: int) -> Reader:
        """A reader of the tree as patch number `index` (0-based) finds it."""
        while len(self._states) <= index:
            self._states.append(dict(self._overlay.changed))
            self._apply(self.manifest.patches[len(self._states) - 1])
        state, pristine = self._states[index], self._pristine

        def reader(rel: str) -> bytes | None:
            return state[rel] if rel in state else pristine(rel)

        return reader

    def _pristine(self, rel: str) -> bytes | None:
        if rel not in self._overlay.original:
            self._overlay.original[rel] = self._overlay._source(rel)
        return self._overlay.original[rel]

    def _apply(self, spec: PatchSpec) -> None:
        v = select_variant(spec, self.version)
        if v is None or v.patch is None:
            return
        patch = read_patch(v.patch)
        trial = self._overlay.fork()
        plans = plan_patch(trial, patch, package_mapper(patch.name), fuzz=self.manifest.fuzz)
        if all(p.ok for p in plans):  # else: upstream or broken on this release; left out
            self._overlay.changed, self._overlay.original = trial.changed, trial.original
