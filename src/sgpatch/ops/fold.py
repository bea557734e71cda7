"""`sgpatch fold`: rewrite a patch whose author defined a name twice so that what runs stays.

A patch applied exactly as written on the release it was made on may define a def/class a
second time in one body (slime's 0.5.15.post1 stack adds `release_memory_occupation` to
`DecodePreallocQueue`, which the release already defines): sgpatch applies it as the author
wrote it and warns (placement.engine, `authored`). The fold (placement.foldtext) makes the patch
say the same thing once: on that release, the definition Python runs today (the later copy)
takes the earlier one's place and the dead copy goes, so the patched tree runs exactly the
same code. Same copies: the patch's copy is dropped; different: upstream's definition is
changed into the patch's.

Per patch variant made on one release (`==R` or `base: R`): the set is planned on a minimal
pristine tree of R, the patch's files are folded after it, and its new file is the canonical
diff from the tree before the patch to the folded one. The edited set is staged, loaded and
linted on every release folded, then the patch files are replaced; the manifest is untouched.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.patchset.manifest import PatchSpec, SetManifest, Variant


@dataclass(frozen=True)
class FoldedFile:
    """One file of a folded patch: the folds made, and the change as a diff (the patched file
    as the author's patch leaves it -> folded)."""

    path: str
    folds: tuple[str, ...]  # placement.foldtext.Fold.describe() of each
    diff: str

    def to_json(self) -> dict[str, object]:
        """The file in `fold --json`'s `files` (docs/json.md)."""
        return {"path": self.path, "folds": list(self.folds), "diff": self.diff}


@dataclass(frozen=True)
class FoldedPatch:
    """One patch variant folded: its file (absolute), the release it was checked on, the new
    bytes of the file, and what changed in each file."""

    id: str
    file: Path
    release: Version
    data: bytes
    files: tuple[FoldedFile, ...]

    def to_json(self, set_dir: Path) -> dict[str, object]:
        """The patch in `fold --json`'s `folded`, its file as the set names it (relative to
        its folder `set_dir`) (docs/json.md)."""
        return {
            "patch": self.id,
            "file": self.file.relative_to(set_dir).as_posix(),
            "release": str(self.release),
            "files": [f.to_json() for f in self.files],
        }


def fold_set(manifest: SetManifest, ids: Sequence[str] = ()) -> tuple[FoldedPatch, ...]:
    """Every variant of the named patches (all: none named) made on one release whose hunks
    define a name twice there, folded. Nothing is written."""
    known = {p.id for p in manifest.patches}
    for pid in ids:
        if pid not in known:
            raise bad_input(f"--patch {pid}: no such patch in set {manifest.name}")
    specs = [p for p in manifest.patches if not ids or p.id in ids]
    out: list[FoldedPatch] = []
    releases = {r for p in specs for v in _made(p) if (r := v.made_on) is not None}
    for release in sorted(releases):
        wanted = [(p, v) for p in specs for v in _made(p) if v.made_on == release]
        with tempfile.TemporaryDirectory(prefix="sgpatch-fold-") as tmp:
            plan = _plan_on(manifest, release, Path(tmp))
            for spec, variant in wanted:
                got = _fold_patch(manifest, spec, variant, release, plan)
                if got is not None:
                    out.append(got)
    return tuple(out)


def _made(spec: PatchSpec) -> list[Variant]:
    return [v for v in spec.variants if v.patch is not None and v.made_on is not None]


def _plan_on(manifest: SetManifest, version: Version, tmp: Path):
    """The whole set planned on a minimal pristine tree of `version` (every optional patch
    with it)."""
    from sgpatch.ops import matrix
    from sgpatch.ops.plan import plan_set
    from sgpatch.releases import cache as releases
    from sgpatch.state.ledger import Ledger

    members = matrix.member_filter(matrix.needed_files(manifest))
    root = releases.extract(version, tmp, "site-packages", members)
    optional = tuple(p.id for p in manifest.patches if p.optional)
    return plan_set(manifest, root, version, Ledger(), with_ids=optional)


def _fold_patch(manifest, spec, variant, release, plan) -> FoldedPatch | None:
    """The patch's new file on `release`, or None when it defines no name twice there."""
    from sgpatch.diff.canonical import FileDiff, canonical_diff, render
    from sgpatch.diff.unified import read_patch

    pp = next(p for p in plan.patches if p.id == spec.id)
    if pp.state != "pending" or pp.variant is None:
        return None
    if (manifest.base_dir / pp.variant).resolve() != Path(variant.file).resolve():
        return None  # another variant of the patch serves this release
    twice = [f for f in pp.files if any(h.warning for h in f.hunks)]
    if not twice:
        return None
    _only_named_once(manifest, spec, variant)
    if any(f.link or f.mode is not None for f in pp.files):
        raise bad_input(
            f"{spec.id}: its patch also changes a symlink or a file mode, which fold does not "
            "rewrite; fold it by hand (docs/engine.md)"
        )
    changed: list[FoldedFile] = []
    diffs = []
    for f in pp.files:
        after = f.after
        if f in twice and after is not None:
            after, done = _fold_file(f.path, f.before, after)
            changed.append(done)
        diffs.append(FileDiff(f.path, f.before if f.path == f.source else None, after))
        if f.source != f.path:
            diffs.append(FileDiff(f.source, f.before, None))
    body = canonical_diff(diffs)
    if not body:
        raise SgpatchError(
            f"{spec.id}: folded, it changes nothing on sglang {release}: every definition it "
            "adds is the release's own; the release has the patch (say so in its `upstream:`, "
            "or leave it out there)",
            ExitCode.CONFLICT,
        )
    data = render(read_patch(variant.file).header, body)
    return FoldedPatch(spec.id, variant.file, release, data, tuple(changed))


def _fold_file(path: str, before: bytes | None, after: bytes) -> tuple[bytes, FoldedFile]:
    """The file with every name the patch made defined twice folded."""
    import difflib

    from sgpatch.diff.unified import decode, encode
    from sgpatch.placement.foldtext import fold
    from sgpatch.placement.pydefs import defined_twice

    keys = {(t.scope, t.name) for t in defined_twice(after, before)}
    text = decode(after)
    got = fold(text, keys)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True), got.text.splitlines(keepends=True),
            f"a/{path} (as the patch leaves it)", f"b/{path} (folded)", n=2,
        )
    )  # fmt: skip
    return encode(got.text), FoldedFile(path, tuple(d.describe() for d in got.folds), diff)


def _only_named_once(manifest: SetManifest, spec: PatchSpec, variant: Variant) -> None:
    """A patch file another variant also names serves other releases: never rewritten."""
    mine = Path(variant.file).resolve()
    for other in manifest.patches:
        for v in other.variants:
            if v is variant or v.patch is None or Path(v.patch).resolve() != mine:
                continue
            raise bad_input(
                f"{spec.id}: {variant.file.name} is also the file of {other.id}'s variant "
                f"{v.sglang}; fold rewrites a patch file only one variant names"
            )


def write(manifest: SetManifest, folded: Sequence[FoldedPatch]) -> list:
    """Replace the folded patch files once the set holding them passes lint on each release
    folded (ops.gate); any error writes nothing. Lint's warnings are returned."""
    from sgpatch.ops.gate import write_linted

    files = {f.file: f.data for f in folded}
    return write_linted(manifest, files, [f.release for f in folded], "folded")


__all__ = ["FoldedFile", "FoldedPatch", "fold_set", "write"]


def standing(manifest: SetManifest, plan, root: Path) -> list[str]:
    """`status -v`'s word on names a patch defines twice, until they are folded: a pending
    patch's hunks that would apply with that warning, and in a tree where the patch is
    applied, each def/class it adds that its file still defines twice in one body."""
    out = []
    for p in plan.patches:
        if p.state == "pending":
            out += [f"{p.id}: {f.path} hunk #{h.index}: {h.warning}"
                    for f in p.files for h in f.hunks if h.warning]  # fmt: skip
        elif p.state in ("applied", "modified") and p.variant:
            out += _standing_in_tree(p.id, manifest.base_dir / p.variant, root)
    if out:
        out.append(f"fold them with `sgpatch fold --set {manifest.name} --patchsets "
                   f"{manifest.base_dir.parent}`: the copy Python runs is kept")  # fmt: skip
    return out


def _standing_in_tree(pid: str, patch_file: Path, root: Path) -> list[str]:
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import read_patch
    from sgpatch.placement.pydefs import defined_names, defined_twice
    from sgpatch.tree.files import read_bytes

    if not patch_file.is_file():
        return []
    patch = read_patch(patch_file)
    mapper = package_mapper(patch.name)
    out = []
    for fp in patch.files:
        names = defined_names(ln.text for h in fp.hunks for ln in h.lines if ln.kind == "+")
        rel = mapper(fp.target if fp.target != "/dev/null" else fp.source)
        data = read_bytes(root, rel) if names and rel.endswith(".py") else None
        try:
            dups = defined_twice(data, None) if data is not None else ()
        except (SyntaxError, ValueError):
            continue
        for t in dups:
            if t.name in names:
                lines = " and ".join(str(n) for n in t.lines)
                code = "the same code" if t.same else "different code"
                out.append(
                    f"{pid}: {rel}: {t.name} is defined twice in {t.where}: lines {lines}; "
                    f"Python runs line {t.runs}; the copies are {code}"
                )
    return out
