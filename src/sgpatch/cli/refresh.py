"""`sgpatch refresh` and `sgpatch diff`: canonical diffs of a tree against its pristine release."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch import console
from sgpatch.errors import ExitCode, SgpatchError

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
    res = rf.refresh_tree(manifest, opts.patch_id, target.root, target.version, opts.files,
                          write=not opts.dry_run)  # fmt: skip
    rel = res.variant.relative_to(manifest.base_dir).as_posix()
    if opts.as_json:
        doc = res.to_json(manifest.base_dir, target.version, opts.dry_run)
        console.emit_json({"command": "refresh", "exit_code": 0, "set": manifest.name, **doc})
    else:
        _say(res, manifest.name, rel, target.version, opts.dry_run, manifest.base_dir)
    return int(ExitCode.OK)


def _say(
    res: Refreshed, set_name: str, rel: str, version: Version, dry_run: bool, set_dir: Path
) -> None:
    """What refresh did: the dry run's patch on stdout, or one line."""
    patch_id = res.patch_id
    if dry_run:
        console.write(res.data.decode("utf-8", "surrogateescape"))
        what = "would change" if res.changed else "unchanged"
        console.err(f"sgpatch refresh: {set_name}/{patch_id}: {rel} {what} (dry run)")
    else:
        what = "refreshed" if res.changed else "unchanged"
        if res.changed and res.how != "in place":
            what = _new_file_said(res, version, set_dir)
        console.err(f"sgpatch refresh: {set_name}/{patch_id}: {rel} {what}")


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


@dataclass(frozen=True)
class DiffOptions:
    """`sgpatch diff`'s options, as parsed."""

    paths: tuple[str, ...]
    sglang_dir: Path | None
    against: str | None
    as_json: bool


def diff(opts: DiffOptions) -> int:
    from packaging.version import Version

    from sgpatch.cli.common import locate_tree
    from sgpatch.ops import refresh as rf
    from sgpatch.tree.target import find_target

    if opts.against is not None:
        try:
            Version(opts.against)
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            raise SgpatchError(f"--against {opts.against!r}: not a PEP 440 version") from None
    target = find_target(opts.sglang_dir, opts.against, root=locate_tree(opts.sglang_dir))
    version = Version(opts.against) if opts.against else target.version
    res = rf.diff_tree(target.root, version, opts.paths)
    if opts.as_json:
        console.emit_json({"command": "diff", "exit_code": 0, **res.to_json(version)})
    else:
        console.write(res.text)
    return int(ExitCode.OK)
