"""Where port takes its releases from, and which variant (and base release) it carries.

Releases are read straight from the cached wheels (sgpatch.releases.cache): a merge base is a few
files, never an extracted tree. Each patch is carried from the variant that covers the release
nearest to the target (the target itself first), and merged against the variant's `base:`, by
default that nearest release.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.version import Version

from sgpatch.diff.paths import package_mapper
from sgpatch.diff.unified import Patch, read_patch
from sgpatch.errors import SgpatchError
from sgpatch.ops.fileplan import plan_patch
from sgpatch.patchset.manifest import PatchSpec, SetManifest, Variant, select_variant
from sgpatch.port.carry import MemOverlay, Reader


def patch_file(path: Path, name: str | None = None) -> Patch:
    """The parsed patch file, read once per file as it is on disk: keyed by its size and
    modification time, as sgpatch.releases.cache keys the wheels it reads (a port reads each variant
    for every patch after it, and again to write the new files)."""
    try:
        st = Path(path).stat()
    except OSError:
        return read_patch(path, name)  # its own one-line error
    return _parsed(Path(path), name, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _parsed(path: Path, name: str | None, _size: int, _mtime: int) -> Patch:
    return read_patch(path, name)


def known_releases(offline: bool) -> list[Version]:
    """Final releases port may walk or take a base from: the index (or, offline or when it
    cannot be reached, the release cache), ascending."""
    from sgpatch.releases import cache as releases

    found = releases.cached_versions() if offline else releases.index_versions(">=0")
    return sorted(v for v in found if not v.is_prerelease)


def pristine(version: Version) -> Reader:
    """A reader of one release's files (package-relative; None when the release lacks one)."""
    from sgpatch.releases import cache as releases

    releases.wheel_path(version)  # a release that cannot be had fails here, not on a read

    def read(rel: str) -> bytes | None:
        if not releases.has_member(version, rel):
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
    """Releases ordered by how far they are from `target` (the older one first on a tie). A
    snapshot target (a pre-release: `port --to-tree`) comes first only when it is among
    `known` (a variant names it): a release range that merely contains it was not made on it."""
    order = sorted(set(known) | {target})
    at = order.index(target)
    out = sorted(order, key=lambda v: (abs(order.index(v) - at), v))
    return [v for v in out if v != target] if target.is_prerelease and target not in known else out


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


@dataclass(frozen=True)
class NotApplicable:
    """A patch n/a at the release nearest to the target: that variant, its release, the files
    the patch's patch files touch (in any release), and those of them the target has."""

    variant: Variant
    release: Version
    touched: tuple[str, ...]
    present: tuple[str, ...]

    @property
    def here_too(self) -> bool:
        """n/a on the target for the same reason: the patch's files are all absent there (and
        it has some: with no patch file anywhere there is nothing to tell it by)."""
        return bool(self.touched) and not self.present


def not_applicable(
    spec: PatchSpec, target: Version, known: Sequence[Version], created: frozenset[str]
):
    """The n/a variant that serves the release nearest to `target` (None: the nearest covered
    release has a patch file, or no release is covered), and which of the files the patch's
    patch files change (not create) the target has, or the set's earlier patches create
    (`created`): none means it is n/a there for the same reason; some means it may be needed."""
    for r in by_distance(target, known):
        v = select_variant(spec, r)
        if v is None:
            continue
        if v.patch is not None:
            return None
        touched = {f for w in spec.variants if w.patch is not None
                   for f in changed_files(patch_file(w.patch))}  # fmt: skip
        have = release_names(target) | created
        present = tuple(sorted(f for f in touched if f in have))
        return NotApplicable(v, r, tuple(sorted(touched)), present)
    return None


def before_it_existed(
    spec: PatchSpec, target: Version, known: Sequence[Version], created: frozenset[str]
) -> str | None:
    """A backport to a release older than the one the patch was made on, where none of the
    files the patch changes exists (in the release, or made by the set's earlier patches:
    `created`), not even under a new name: upstream had not written them yet. The n/a reason
    to record; None otherwise (a patch that only creates files is carried as it is). Forward,
    a file that is gone may have moved: that needs a person, never a silent n/a."""
    sorc = source_of(spec, target, known)
    if sorc is None or sorc.variant.patch is None or not target < sorc.base:
        return None
    files = changed_files(patch_file(sorc.variant.patch))
    try:
        have = release_names(target) | created
        if not files or any(f in have for f in files):
            return None
        if any(renamed(sorc.base, target, f) for f in files):
            return None
    except SgpatchError:
        return None  # a release that cannot be read: not decided here (the carry says why)
    return f"none of its files is in sglang {target} ({', '.join(files)}): added later upstream"


def changed_files(patch: Patch) -> list[str]:
    """Package files the patch needs to find: what it modifies, deletes or renames or copies
    from (not what it creates)."""
    mapper = package_mapper(patch.name)
    return sorted({mapper(fp.source) for fp in patch.files if not fp.is_new})


def created_files(patch: Patch) -> set[str]:
    """Package files the patch makes: created, or the new name of a rename or copy."""
    mapper = package_mapper(patch.name)
    return {mapper(fp.target) for fp in patch.files if fp.is_new or fp.git_op in ("rename", "copy")}


def created_before(manifest: SetManifest, spec: PatchSpec, target, known) -> frozenset[str]:
    """Files the set's patches before `spec` make, from the variants port carries them from."""
    out: set[str] = set()
    for earlier in manifest.patches[: manifest.patches.index(spec)]:
        sorc = source_of(earlier, target, known)
        if sorc is not None and sorc.variant.patch is not None:
            out |= created_files(patch_file(sorc.variant.patch))
    return frozenset(out)


def release_names(version: Version) -> set[str]:
    """Package-relative paths of every file the release ships."""
    from sgpatch.releases import cache as releases

    return {_pkg(n) for n in releases.record(version)}


class BaseTree:
    """A release with the set's patches applied in order, read lazily: the base a patch file
    was made on is its release plus the patches before it."""

    def __init__(self, manifest: SetManifest, version: Version, read: Reader) -> None:
        self.manifest, self.version = manifest, version
        self._overlay = MemOverlay(read)
        self._states: list[dict[str, bytes | None]] = []

    def before(self, index: int) -> Reader:
        """A reader of the tree as patch number `index` (0-based) finds it. The patches before
        it are applied on the first read, not here: a step whose hunks all place on the
        release never reads its merge base (0.5.13 -> 0.5.13.post1 of slime's 198 hunks:
        ~0.9 s of planning the stack on 0.5.13 saved)."""
        pristine = self._pristine

        def reader(rel: str) -> bytes | None:
            state = self._state(index)
            return state[rel] if rel in state else pristine(rel)

        return reader

    def _state(self, index: int) -> dict[str, bytes | None]:
        while len(self._states) <= index:
            self._states.append(dict(self._overlay.changed))
            self._apply(self.manifest.patches[len(self._states) - 1])
        return self._states[index]

    def _pristine(self, rel: str) -> bytes | None:
        if rel not in self._overlay.original:
            self._overlay.original[rel] = self._overlay._source(rel)
        return self._overlay.original[rel]

    def _apply(self, spec: PatchSpec) -> None:
        v = select_variant(spec, self.version)
        if v is None or v.patch is None:
            return
        patch = patch_file(v.patch)
        trial = self._overlay.fork()
        plans = plan_patch(trial, patch, package_mapper(patch.name), fuzz=self.manifest.fuzz)
        if all(p.ok for p in plans):  # else: upstream or broken on this release; left out
            self._overlay.adopt(trial)  # links and all


# ---------------------------------------------------------------------------------------------
# files upstream renamed

RENAME_SIMILARITY = 0.5  # more than half of the lines in common: git's default (50%)
_MARGIN = 0.1  # the best candidate must beat the next one by this much, or nothing is followed


def renamed(base: Version, to: Version, rel: str) -> str | None:
    """The name release `to` gives to `rel`, a file of release `base` that `to` no longer has,
    as git's rename detection finds it: a file `to` added (absent in `base`), with the same
    extension, within half to twice the size, in the same folder or with a related name, with
    more than half of the two files' distinctive lines in common (`_similarity`), clearly more
    than any other candidate. None: not renamed, or not clearly (a file moved into one twice
    its size, two look-alikes, a file too small to tell), and port says so instead."""
    from sgpatch.releases import cache as releases

    try:
        old_sizes = {_pkg(n): z for n, z in releases.sizes(base).items()}
        new_sizes = {_pkg(n): z for n, z in releases.sizes(to).items()}
    except SgpatchError:
        return None  # a release that cannot be read: nothing followed (the carry says why)
    if rel in new_sizes or rel not in old_sizes:
        return None
    size = max(old_sizes[rel], 1)
    cands = [n for n in new_sizes if n not in old_sizes and _related(rel, n)
             and 0.5 <= max(new_sizes[n], 1) / size <= 2]  # fmt: skip
    old = _line_counts(pristine(base)(rel))
    scored = sorted(((_similarity(old, _line_counts(pristine(to)(n))), n) for n in cands),
                    reverse=True)  # fmt: skip
    if not scored or scored[0][0] <= RENAME_SIMILARITY:
        return None
    if len(scored) > 1 and scored[1][0] > scored[0][0] - _MARGIN:
        return None
    return scored[0][1]


def _pkg(name: str) -> str:
    return name.split("/", 1)[1] if name.startswith("sglang/") else name


def _related(old: str, new: str) -> bool:
    """Same folder and extension, or the same file name, or one name's stem inside the other's
    (`torch_symm_mem.py` and `symm_mem.py`)."""
    o, n = PurePosixPath(old), PurePosixPath(new)
    if o.suffix != n.suffix:
        return False
    return o.parent == n.parent or o.name == n.name or o.stem in n.stem or n.stem in o.stem


_DISTINCT = 10  # a line this long (stripped) tells files apart; `return x`, `pass`, `)` do not
_ENOUGH = 3  # distinctive lines a file needs before port will call another file its rename


def _line_counts(data: bytes | None) -> Counter:
    text = (data or b"").decode("utf-8", "replace")
    return Counter(s for ln in text.splitlines() if len(s := ln.strip()) >= _DISTINCT)


def _similarity(old: Counter, new: Counter) -> float:
    """The share of the two files' distinctive lines they have in common, over the bigger of
    the two (as git scores a rename): a file moved into one twice its size scores at most 0.5.
    0 for a file too small to tell."""
    if sum(old.values()) < _ENOUGH:
        return 0.0
    common = sum((old & new).values())
    return common / max(sum(old.values()), sum(new.values()), 1)
