"""Git-mode commands: `sgpatch export` (sgpatch's commits back to patch files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console


@dataclass(frozen=True)
class ExportOptions:
    """`sgpatch export`'s options, as parsed."""

    set_name: str
    to: Path
    sglang_dir: Path | None
    sglang_version: str | None
    patchsets: tuple[Path, ...]
    as_json: bool


def export(opts: ExportOptions) -> int:
    from sgpatch.cli.common import locate_tree
    from sgpatch.errors import SgpatchError
    from sgpatch.git import mode as gitmode
    from sgpatch.patchset.manifest import load_set
    from sgpatch.tree.target import find_target

    target = find_target(opts.sglang_dir, opts.sglang_version, root=locate_tree(opts.sglang_dir))
    try:
        manifest = load_set(opts.set_name, tuple(opts.patchsets))
    except SgpatchError:
        manifest = None  # exporting from a tree whose set is not installed here still works
    out = gitmode.export(target, opts.set_name, opts.to, manifest)
    if opts.as_json:
        console.emit_json(
            {
                "command": "export",
                "exit_code": 0,
                "set": opts.set_name,
                "patches": [e.to_json() for e in out],
            }
        )
    else:
        for e in out:
            console.err(f"{e.patch_id}: {e.sha[:12]} -> {e.path}")
        console.err(
            f"sgpatch export: {opts.set_name}: {len(out)} patch file(s) written to {opts.to}"
        )
    return 0
