"""`sgpatch refresh` and `sgpatch diff`: a tree's files against their pristine release, in the
canonical form of `sgpatch.diff.canonical`, and a patch file regenerated from them.

Each file is compared as git records it, bytes and git mode: the execute bit (the release's
from its wheel) and a symlink, read as its target and never followed (`new file mode 120000`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.diff.canonical import (
    CONTEXT,
    EXECUTABLE,
    REGULAR,
    SYMLINK,
    FileDiff,
    canonical_diff,
    render,
)
from sgpatch.diff.paths import package_mapper, patch_files
from sgpatch.diff.unified import decode, encode, split_lines
from sgpatch.errors import ExitCode, SgpatchError

# ---------------------------------------------------------------------------------------------
# trees against their pristine release


def pristine_bytes(version, rel: str) -> bytes | None:
    """The release's own bytes for a package-relative path, None if the release lacks it."""
    from sgpatch.releases import cache as releases

    if not releases.has_member(version, rel):
        return None
    return releases.read_member(version, rel)


Entry = tuple["bytes | None", int]  # a path's bytes (a symlink's: its target) and git mode


def pristine_entry(version, rel: str) -> Entry:
    """The release's bytes for `rel` and its git mode (the wheel's execute bit)."""
    mode = EXECUTABLE if rel in executables(version) else REGULAR
    return pristine_bytes(version, rel), mode


def executables(version) -> frozenset[str]:
    """The release's package-relative files its wheel marks executable."""
    from sgpatch.releases import cache as releases

    prefix = f"{releases.PACKAGE}/"
    return frozenset(
        n[len(prefix) :] for n in releases.executables(version) if n.startswith(prefix)
    )


def tree_entry(root: Path, rel: str) -> Entry:
    """A path of the tree as a patch says it: a file's bytes and git mode (100755 with an
    execute bit), or a symlink's target (120000), read and never followed; one whose target
    leaves the tree is refused (exit 4), as a set never makes it. (None, 100644): absent."""
    from sgpatch.diff.unified import encode
    from sgpatch.ops.fileplan import check_link, link_at
    from sgpatch.state.txn import read_bytes

    link = link_at(root, rel)
    if link is not None:
        check_link(root, rel, link)
        return encode(link), SYMLINK
    data = read_bytes(root, rel)
    if data is None:
        return None, REGULAR
    return data, EXECUTABLE if os.stat(root / rel).st_mode & 0o111 else REGULAR


def file_change(version, rel: str, now: Entry) -> FileDiff:
    """The release's `rel` against `now` (the tree's), bytes and modes."""
    (old, old_mode), (new, new_mode) = pristine_entry(version, rel), now
    return FileDiff(rel, old, new, old_mode, new_mode)


def tree_diff(
    root: Path,
    version,
    paths: Iterable[str],
    context: int = CONTEXT,
    read: Callable[[str], Entry] | None = None,
) -> str:
    """Canonical diff of `paths` (package-relative) in the tree at `root` against the release;
    `read` gives a file's side of the diff (default: `tree_entry`, bytes and mode)."""
    read = read or (lambda p: tree_entry(root, p))
    files = [file_change(version, p, read(p)) for p in sorted(set(paths))]
    return canonical_diff(files, context)


@dataclass(frozen=True)
class TreeDiff:
    """`sgpatch diff`'s answer: the files that differ (in the order asked for, or sorted) and
    the canonical diff of them against the release."""

    files: tuple[str, ...]
    text: str

    def to_json(self, version) -> dict[str, object]:
        """The diff in `diff --json` (docs/json.md), against release `version`."""
        return {"version": str(version), "files": list(self.files), "diff": self.text}


def diff_tree(root: Path, version, paths: Sequence[str]) -> TreeDiff:
    """The tree's `paths` (as the user named them; none: every file that differs from the
    release) against the release. A path in neither is refused: a typo would otherwise be an
    empty diff and exit 0. Each file is diffed once."""
    from sgpatch.diff.canonical import file_diff

    rels = [package_rel(p, f"FILE {p}") for p in paths]
    now = {rel: tree_entry(root, rel) for rel in rels}
    for rel in rels:
        if now[rel][0] is None and pristine_bytes(version, rel) is None:
            raise SgpatchError(f"FILE {rel}: neither in the tree nor in sglang {version}")
    rels = rels or changed_files(root, version)
    blocks = {p: file_diff(file_change(version, p, now.get(p) or tree_entry(root, p)))
              for p in sorted(set(rels))}  # fmt: skip
    return TreeDiff(tuple(p for p in rels if blocks[p]), "".join(blocks.values()))


def changed_files(root: Path, version) -> list[str]:
    """Package-relative .py (and other packaged) files of the tree that differ from the release
    (bytes, execute bit, or a symlink in a file's place), plus files the release has that the
    tree lacks. Files the release does not ship are left out (a tree holds caches, build
    output and sgpatch's own state)."""
    from sgpatch.releases import cache as releases
    from sgpatch.releases.record import digest as record_digest

    out = []
    prefix = f"{releases.PACKAGE}/"
    runs = executables(version)
    for name, digest in releases.record(version).items():
        if not name.startswith(prefix):
            continue
        rel = name[len(prefix) :]
        path = root / rel
        alg, _, b64 = digest.partition("=")
        try:
            st = os.lstat(path)
            data = b"" if stat.S_ISLNK(st.st_mode) else path.read_bytes()  # a link: never followed
        except OSError:
            out.append(rel)
            continue
        link, runs_now = stat.S_ISLNK(st.st_mode), bool(st.st_mode & 0o111)
        if link or runs_now != (rel in runs) or record_digest(alg, data) != b64:
            out.append(rel)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# refresh


@dataclass(frozen=True)
class Refreshed:
    """A patch file in canonical form, and whether that differs from disk. A file that also
    serves other releases (its variant's range admits another release, or another variant
    names the same file) is never rewritten: `variant` is then a new file for this release,
    and `how` says how the manifest points the release at it (docs/porting.md, refresh)."""

    patch_id: str
    variant: Path  # the patch file to write (absolute)
    data: bytes  # its new content
    changed: bool  # differs from what is on disk
    files: tuple[str, ...]
    split: str | None = None  # the refreshed variant's range, when a new file is written
    how: str = "in place"  # in place | split | repointed
    index: int = 0  # the refreshed variant's place in the patch's variants
    old_file: Path | None = None  # the file it came from (split, repointed)
    split_to: str | None = None  # split: the old variant's range without this release
    shared_by: tuple[str, ...] = ()  # the other variants naming the old file ("ID RANGE")

    def to_json(self, set_dir: Path, version, dry_run: bool) -> dict[str, object]:
        """The refresh in `refresh --json` (docs/json.md): files as the set names them
        (relative to its folder `set_dir`), on release `version`."""
        old = None if self.old_file is None else self.old_file.relative_to(set_dir).as_posix()
        return {
            "patch": self.patch_id,
            "variant": self.variant.relative_to(set_dir).as_posix(),
            "version": str(version),
            "files": list(self.files),
            "changed": self.changed,
            "written": self.changed and not dry_run,
            "how": self.how,
            "split_from": self.split if self.how == "split" else None,
            "split_to": self.split_to,
            "old_variant": old,
            "shared_by": list(self.shared_by),
        }


def refresh(
    manifest,
    patch_id: str,
    root: Path,
    version,
    extra_files: Sequence[str] = (),
    others: Sequence = (),
    known: Sequence = (),
):
    """Regenerate the variant of `patch_id` that covers `version` from the tree at `root`.

    A patch file is a diff against the pristine release. `others` are the parsed patches of the
    same set applied on the tree besides this one (from the ledger): their changes are taken
    out of each file first, reversed with the engine, so a file two patches touch does not
    end up in both (exit 3 if one cannot be taken out cleanly). A changed file that also
    serves another release is not rewritten (that release was never checked against the
    edit): the new content goes to `patches/<version>/<name>`, and the variant of this
    release is pointed at it (`_new_file`)."""
    from sgpatch.diff.unified import read_patch
    from sgpatch.patchset.manifest import select_variant

    spec = manifest.patch(patch_id)
    variant = select_variant(spec, version)
    if variant is None or variant.patch is None:
        why = variant.na if variant is not None else "no variant covers it"
        raise SgpatchError(
            f"patch {patch_id} has no patch file for sglang {version} ({why}); "
            "add a variant first (or port the set to this release)"
        )
    old = read_patch(variant.patch)
    files = sorted(set(patch_files(old)) | {package_rel(f) for f in extra_files})
    diff = tree_diff(root, version, files, read=lambda f: _without(root, f, others, patch_id))
    if not diff:
        raise SgpatchError(
            f"{patch_id}: the tree at {root} has no changes in {', '.join(files)} against "
            f"pristine sglang {version}; refusing to write an empty patch"
        )
    data = render(old.header, diff)
    current = variant.patch.read_bytes()
    index = spec.variants.index(variant)
    shared = shared_by(manifest, variant)
    wider = serves_others(variant.sglang, version, known)
    if data == current or not (shared or wider):
        return Refreshed(patch_id, variant.patch, data, data != current, tuple(files),
                         index=index)  # fmt: skip
    if _numbers_blanked(data) == _numbers_blanked(current):
        # only the @@ line numbers moved: the file as it is gives the same result here
        return Refreshed(patch_id, variant.patch, current, False, tuple(files), index=index)
    target = split_path(manifest.base_dir, version, variant.patch.name, data)
    if wider:
        return Refreshed(patch_id, target, data, True, tuple(files), str(variant.sglang),
                         "split", index, variant.patch, leaving_out(variant.sglang, version),
                         shared)  # fmt: skip
    return Refreshed(patch_id, target, data, True, tuple(files), str(variant.sglang),
                     "repointed", index, variant.patch, None, shared)  # fmt: skip


def refresh_tree(
    manifest, patch_id: str, root: Path, version, extra_files: Sequence[str], write: bool
) -> Refreshed:
    """`sgpatch refresh` whole: the patch regenerated from the tree (`refresh`, the set's other
    applied patches taken out), refused when another set also patched one of its files; with
    `write`, the patch file (and the manifest, for a new file) written and the set kept
    applied on the tree in the ledger."""
    from sgpatch.diff.unified import read_patch
    from sgpatch.state import ledger as ledger_mod

    ledger = ledger_mod.load(root)
    record = ledger.sets.get(manifest.name)
    others = [
        read_patch(manifest.base_dir / p.variant)
        for p in (record.patches if record else ())
        if p.id != patch_id and (manifest.base_dir / p.variant).is_file()
    ]
    res = refresh(manifest, patch_id, root, version, extra_files, others, _known_releases())
    _refuse_stacked(ledger, manifest.name, res.files)
    if write and res.changed:
        rel = res.variant.relative_to(manifest.base_dir).as_posix()
        _write(res.variant, res.data)
        if res.how != "in place":
            text = manifest.path.read_text(encoding="utf-8")
            new = manifest_edit(text, manifest.path, res, version, rel)
            _write(manifest.path, new.encode("utf-8"))
        _keep_applied(root, manifest.name, patch_id, rel, res)
    return res


def _known_releases() -> list:
    """Releases a variant's range may serve: the index, or the cache when it is unreachable."""
    from sgpatch.releases import cache as releases

    try:
        return releases.index_versions(">=0")
    except SgpatchError:
        return releases.cached_versions()


def _write(path: Path, data: bytes) -> None:
    """A patch file or manifest of the set, replaced atomically (its mode kept)."""
    from sgpatch.fs import atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_path(path, data, None)


def _refuse_stacked(ledger, set_name: str, files: Sequence[str]) -> None:
    """A patch file is a diff against the pristine release: refreshed from a file another
    set also patched (stacked above or below), it would take that set's change in too."""
    for path in files:
        other = next((n for n, s in ledger.sets.items() if n != set_name and path in s.files), None)
        if other is not None:
            raise SgpatchError(
                f"{path} is also patched by set {other}: a diff against the pristine release "
                f"would take its change in too; refresh from a tree where only {set_name} "
                "is applied (nothing was written)",
                ExitCode.UNSAFE,
            )


def _keep_applied(root: Path, set_name: str, patch_id: str, variant: str, res) -> None:
    """Like quilt refresh, the patch stays applied on the tree it was refreshed from: the ledger
    learns the new patch file and the bytes now in its files (they are the patch's now, not an
    edit), so `status`, `apply` and `revert` keep working there."""
    from dataclasses import replace

    from sgpatch.state import ledger as ledger_mod
    from sgpatch.state.lock import locked
    from sgpatch.state.txn import commit

    with locked(ledger_mod.state_dir(root)):
        ledger = ledger_mod.load(root)
        record = ledger.sets.get(set_name)
        if record is None or record.patch(patch_id) is None:
            return  # refreshed from a tree the set was not applied to by sgpatch
        sha = ledger_mod.sha256(res.data) or ""  # res.data is bytes: never None
        patches = tuple(
            replace(p, variant=variant, patch_sha256=sha) if p.id == patch_id else p
            for p in record.patches
        )
        files = {
            path: _kept(root, path, r, record.sglang_version) if path in res.files else r
            for path, r in record.files.items()
        }
        new = ledger.with_set(replace(record, patches=patches, files=files))
        data = [tree_entry(root, path)[0] for path in res.files if path in record.files]
        commit(root, ledger_mod.state_dir(root), ledger_mod.store_changes(root, ledger, new, data))


def _kept(root: Path, path: str, rec, version):
    """A refreshed file's ledger record: what it holds now (a symlink's target), and its
    execute bit where that changed, so `revert` still gives back the release's file."""
    from dataclasses import replace

    from sgpatch.diff.unified import decode
    from sgpatch.state.ledger import sha256

    data, mode = tree_entry(root, path)
    link = decode(data) if mode == SYMLINK and data is not None else None
    rec = replace(rec, after=sha256(data), link_after=link)
    if data is None or link is not None:
        return rec
    perm = stat.S_IMODE(os.lstat(root / path).st_mode)
    first = rec.mode_before
    if first is None:
        first = 0o755 if pristine_entry(version, path)[1] == EXECUTABLE else 0o644
    was = rec.mode_after if rec.mode_after is not None else first
    if bool(perm & 0o111) == bool(was & 0o111):
        return rec
    return replace(rec, mode_before=first, mode_after=perm)


def shared_by(manifest, variant) -> tuple[str, ...]:
    """The other variants of the set (any patch) that name `variant`'s patch file."""
    return tuple(
        f"{spec.id} {v.sglang}"
        for spec in manifest.patches
        for v in spec.variants
        if v is not variant and v.patch is not None and v.patch == variant.patch
    )


def leaving_out(spec, version) -> str:
    """`spec` with `!=version` added: every other release keeps what it had (a moved bound
    would change what a post or pre release of it gets)."""
    from packaging.specifiers import Specifier
    from packaging.version import Version

    here = Version(Version(str(version)).public)
    clauses = [*spec, Specifier(f"!={here}")]
    lower = sorted((c for c in clauses if c.operator in (">=", ">", "==", "~=", "===")), key=str)
    rest = sorted((c for c in clauses if c not in lower), key=str)
    return ",".join(str(c) for c in [*lower, *rest])


def manifest_edit(text: str, path: Path, res: Refreshed, version, rel: str) -> str:
    """The manifest text pointing the release at the new file `rel` (set-relative): a split
    range leaves the release out and a `==V` variant comes first; a variant serving only the
    release (and sharing its file with another) is re-pointed, never shadowed."""
    from packaging.version import Version

    from sgpatch.patchset import manifest_text as mt

    public = str(Version(Version(str(version)).public))
    if res.how == "split":
        assert res.split_to is not None
        text = mt.set_variant_spec(text, path, res.patch_id, res.index, res.split_to)
        return mt.insert_first_variant(text, path, res.patch_id, f"=={public}", rel, public)
    if res.how == "repointed":
        text = mt.set_variant_value(text, path, res.patch_id, res.index, "patch", rel)
        return mt.set_variant_value(text, path, res.patch_id, res.index, "base", public,
                                    only_if_present=True)  # fmt: skip
    return text


def _numbers_blanked(data: bytes) -> bytes:
    return re.sub(rb"(?m)^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", b"@@", data)


def serves_others(spec, version, known: Sequence) -> bool:
    """Does the range admit a release other than `version` (of those known)?"""
    from packaging.version import Version

    here = Version(Version(str(version)).public)
    return any(v != here and spec.contains(v, prereleases=True) for v in known)


def split_path(base: Path, version, name: str, data: bytes) -> Path:
    """`patches/<release>/<name>` in the set, with -2, -3... if another file holds that name."""
    from packaging.version import Version

    folder = base / "patches" / str(Version(str(version)).public)
    path, stem, k = folder / name, name.removesuffix(".patch"), 1
    while path.exists() and path.read_bytes() != data:
        k += 1
        path = folder / f"{stem}-{k}.patch"
    return path


def _without(root: Path, rel: str, others: Sequence, patch_id: str) -> Entry:
    """The file's bytes (and mode) in the tree with the other applied patches' changes
    reversed, newest first; a symlink as it is (no patch's lines are in a link)."""
    from sgpatch.errors import ExitCode
    from sgpatch.placement.engine import apply_hunks

    data, mode = tree_entry(root, rel)
    if mode == SYMLINK:
        return data, mode
    for other in reversed(others):
        mapper = package_mapper(other.name)
        for fp in other.files:
            if mapper(fp.target if fp.target != "/dev/null" else fp.source) != rel or data is None:
                continue
            res = apply_hunks(split_lines(decode(data)), fp.hunks, reverse=True)
            if not res.ok:
                bad = next(h for h in res.hunks if not h.ok)
                raise SgpatchError(
                    f"{patch_id}: cannot take {other.name}'s change out of {rel} "
                    f"(hunk #{bad.index}: {bad.reason}); revert that patch, then refresh",
                    ExitCode.CONFLICT,
                )
            data = encode("".join(res.lines))
    return data, mode


def package_rel(path: str, what: str = "--file") -> str:
    """A file the user named, package-relative; errors name it as `what` (the option or
    argument it came from)."""

    return package_mapper(what)(path)
