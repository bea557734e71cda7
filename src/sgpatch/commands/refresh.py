"""`sgpatch refresh` and `sgpatch diff`: canonical diffs of a tree against its pristine release."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from sgpatch import report
from sgpatch.errors import ExitCode, SgpatchError


def run(
    set_name: str,
    patch_id: str,
    sglang_dir: Path | None,
    sglang_version: str | None,
    patchsets: Sequence[Path],
    files: Sequence[str],
    dry_run: bool,
    as_json: bool,
) -> int:
    from sgpatch import refresh as rf
    from sgpatch.manifest import load_set
    from sgpatch.target import find_target

    target = find_target(sglang_dir, sglang_version)
    manifest = load_set(set_name, tuple(patchsets))
    res = rf.refresh(manifest, patch_id, target.root, target.version, files)
    rel = res.variant.relative_to(manifest.base_dir).as_posix()
    if not dry_run and res.changed:
        tmp = res.variant.with_name(f".{res.variant.name}.sgpatch-tmp")
        tmp.write_bytes(res.data)
        tmp.replace(res.variant)
    if as_json:
        report.emit_json(
            {
                "command": "refresh",
                "schema": 1,
                "exit_code": 0,
                "set": manifest.name,
                "patch": patch_id,
                "variant": rel,
                "version": str(target.version),
                "files": list(res.files),
                "changed": res.changed,
                "written": res.changed and not dry_run,
            }
        )
    elif dry_run:
        sys.stdout.write(res.data.decode("utf-8", "surrogateescape"))
    else:
        what = "refreshed" if res.changed else "unchanged"
        report.err(f"sgpatch refresh: {manifest.name}/{patch_id}: {rel} {what}")
    return int(ExitCode.OK)


def diff(paths: Sequence[str], sglang_dir: Path | None, against: str | None, as_json: bool) -> int:
    from packaging.version import Version

    from sgpatch import refresh as rf
    from sgpatch.target import find_target
    from sgpatch.txn import read_bytes

    target = find_target(sglang_dir, against)
    version = Version(against) if against else target.version
    rels = [rf.package_rel(p, f"FILE {p}") for p in paths]
    for rel in rels:  # a typo would otherwise be an empty diff and exit 0
        if read_bytes(target.root, rel) is None and rf.pristine_bytes(version, rel) is None:
            raise SgpatchError(f"FILE {rel}: neither in the tree nor in sglang {version}")
    rels = rels or rf.changed_files(target.root, version)
    text = rf.tree_diff(target.root, version, rels)
    if as_json:
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
    from sgpatch import refresh as rf
    from sgpatch.txn import read_bytes

    return rf.FileDiff(rel, rf.pristine_bytes(version, rel), read_bytes(root, rel))
