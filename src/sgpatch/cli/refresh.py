"""`sgpatch refresh` and `sgpatch diff`: canonical diffs of a tree against its pristine release."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch.diff.unified import read_patch
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops import report
from sgpatch.state import ledger as ledger_mod

if TYPE_CHECKING:  # kept lazy: refresh loads the engine only when it runs
    from packaging.version import Version

    from sgpatch.ops.refresh import Refreshed


@dataclass(frozen=True)
class RefreshOptions:
    """`sgpatch refresh`'s options, as parsed."""

    set_name: str
    patch_id: str
    sglang_dir: Path | None
    sglang_version: str | None
    patchsets: tuple[Path, ...]
    files: tuple[str, ...]
    dry_run: bool
    as_json: bool


def run(opts: RefreshOptions) -> int:
    from sgpatch.cli.common import locate_tree
    from sgpatch.ops import refresh as rf
    from sgpatch.patchset.manifest import load_set
    from sgpatch.tree.target import find_target

    target = find_target(opts.sglang_dir, opts.sglang_version, root=locate_tree(opts.sglang_dir))
    manifest = load_set(opts.set_name, tuple(opts.patchsets))
    ledger = ledger_mod.load(target.root)
    record = ledger.sets.get(manifest.name)
    others = [
        read_patch(manifest.base_dir / p.variant)
        for p in (record.patches if record else ())
        if p.id != opts.patch_id and (manifest.base_dir / p.variant).is_file()
    ]
    known = _known_releases()
    res = rf.refresh(
        manifest, opts.patch_id, target.root, target.version, opts.files, others, known
    )
    _refuse_stacked(ledger, manifest.name, res.files)
    rel = res.variant.relative_to(manifest.base_dir).as_posix()
    if not opts.dry_run and res.changed:
        _write(res.variant, res.data)
        if res.how != "in place":
            text = manifest.path.read_text(encoding="utf-8")
            new = rf.manifest_edit(text, manifest.path, res, target.version, rel)
            _write(manifest.path, new.encode("utf-8"))
        _keep_applied(target.root, manifest.name, opts.patch_id, rel, res)
    _say(
        res,
        manifest.name,
        opts.patch_id,
        rel,
        target.version,
        opts.dry_run,
        opts.as_json,
        manifest.base_dir,
    )
    return int(ExitCode.OK)


def _say(
    res: Refreshed,
    set_name: str,
    patch_id: str,
    rel: str,
    version: Version,
    dry_run: bool,
    as_json: bool,
    set_dir: Path,
) -> None:
    """What refresh did: the --json document, the dry run's patch on stdout, or one line."""
    if as_json:
        report.emit_json(
            {
                "command": "refresh",
                "schema": 1,
                "exit_code": 0,
                "set": set_name,
                "patch": patch_id,
                "variant": rel,
                "version": str(version),
                "files": list(res.files),
                "changed": res.changed,
                "written": res.changed and not dry_run,
                "how": res.how,
                "split_from": res.split if res.how == "split" else None,
                "split_to": res.split_to,
                "old_variant": _rel(res.old_file, set_dir),
                "shared_by": list(res.shared_by),
            }
        )
    elif dry_run:
        sys.stdout.write(res.data.decode("utf-8", "surrogateescape"))
        what = "would change" if res.changed else "unchanged"
        report.err(f"sgpatch refresh: {set_name}/{patch_id}: {rel} {what} (dry run)")
    else:
        what = "refreshed" if res.changed else "unchanged"
        if res.changed and res.how != "in place":
            what = _new_file_said(res, version, set_dir)
        report.err(f"sgpatch refresh: {set_name}/{patch_id}: {rel} {what}")


def _new_file_said(res: Refreshed, version: Version, set_dir: Path) -> str:
    """Why refresh wrote a new file, and how the release now gets it."""
    old = _rel(res.old_file, set_dir)
    also = f", which {', '.join(res.shared_by)} also names," if res.shared_by else ""
    if res.how == "split":
        return (
            f"written for {version} only (new variant '=={version}'): the variant it came from, "
            f"'{res.split}', also serves other releases and now leaves {version} out "
            f"('{res.split_to}'); {old}{also} stays as it was"
        )
    return (
        f"written for {version}: its variant '{res.split}' now points at it; {old}{also} "
        "stays as it was"
    )


def _rel(path: Path | None, base: Path) -> str | None:
    return None if path is None else path.relative_to(base).as_posix()


def _known_releases() -> list:
    """Releases a variant's range may serve: the index, or the cache when it is unreachable."""
    from sgpatch.releases import cache as releases

    try:
        return releases.index_versions(">=0")
    except SgpatchError:
        return releases.cached_versions()


def _write(path: Path, data: bytes) -> None:
    import os
    import secrets

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.sgpatch-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


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

    from sgpatch.state.txn import commit, locked, read_bytes

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
            path: replace(r, after=ledger_mod.sha256(read_bytes(root, path)))
            if path in res.files
            else r
            for path, r in record.files.items()
        }
        new = ledger.with_set(replace(record, patches=patches, files=files))
        data = [read_bytes(root, path) for path in res.files if path in record.files]
        commit(root, ledger_mod.state_dir(root), ledger_mod.store_changes(root, ledger, new, data))


@dataclass(frozen=True)
class DiffOptions:
    """`sgpatch diff`'s options, as parsed."""

    paths: tuple[str, ...]
    sglang_dir: Path | None
    against: str | None
    as_json: bool


def diff(opts: DiffOptions) -> int:
    from packaging.version import InvalidVersion, Version

    from sgpatch.cli.common import locate_tree
    from sgpatch.ops import refresh as rf
    from sgpatch.state.txn import read_bytes
    from sgpatch.tree.target import find_target

    if opts.against is not None:
        try:
            Version(opts.against)
        except InvalidVersion:
            raise SgpatchError(f"--against {opts.against!r}: not a PEP 440 version") from None
    target = find_target(opts.sglang_dir, opts.against, root=locate_tree(opts.sglang_dir))
    version = Version(opts.against) if opts.against else target.version
    rels = [rf.package_rel(p, f"FILE {p}") for p in opts.paths]
    for rel in rels:  # a typo would otherwise be an empty diff and exit 0
        if read_bytes(target.root, rel) is None and rf.pristine_bytes(version, rel) is None:
            raise SgpatchError(f"FILE {rel}: neither in the tree nor in sglang {version}")
    rels = rels or rf.changed_files(target.root, version)
    text = rf.tree_diff(target.root, version, rels)
    if opts.as_json:
        report.emit_json(
            {
                "command": "diff",
                "schema": 1,
                "exit_code": 0,
                "version": str(version),
                "files": [p for p in rels if rf.file_diff(_fd(target.root, version, p))],
                "diff": text,
            }
        )
    else:
        sys.stdout.write(text)
    return int(ExitCode.OK)


def _fd(root: Path, version, rel: str):
    from sgpatch.ops import refresh as rf
    from sgpatch.state.txn import read_bytes

    return rf.FileDiff(rel, rf.pristine_bytes(version, rel), read_bytes(root, rel))
