"""`sgpatch fold`: a patch that defines a name twice, rewritten to keep what runs (logic in
ops.fold and placement.foldtext)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console


@dataclass(frozen=True)
class FoldOptions:
    """`sgpatch fold`'s options, as parsed."""

    set_name: str
    patchsets: tuple[Path, ...]
    patch_ids: tuple[str, ...]
    dry_run: bool
    as_json: bool


def run(opts: FoldOptions) -> int:
    from sgpatch.ops import fold
    from sgpatch.patchset.manifest import load_set

    manifest = load_set(opts.set_name, opts.patchsets)
    folded = fold.fold_set(manifest, opts.patch_ids)
    findings = [] if opts.dry_run or not folded else fold.write(manifest, folded)
    if opts.as_json:
        console.emit_json(
            {
                "command": "fold",
                "exit_code": 0,
                "set": manifest.name,
                "dry_run": opts.dry_run,
                "folded": [f.to_json(manifest.base_dir) for f in folded],
                "warnings": [x.message for x in findings],
            }
        )
        return 0
    for f in folded:
        for x in f.files:
            for what in x.folds:
                console.err(f"{f.id}: {x.path}: {what}")
            console.out(x.diff.rstrip("\n"))
    for x in findings:
        console.err(f"warning: {x.patch or manifest.name}: {x.message}")
    verb = "would rewrite" if opts.dry_run else "rewrote"
    if not folded:
        console.err(f"sgpatch fold: {manifest.name}: no patch defines a name twice; nothing to do")
    else:
        rels = {f.file.relative_to(manifest.base_dir).as_posix() for f in folded}
        names = ", ".join(sorted(rels))
        console.err(f"sgpatch fold: {manifest.name}: {verb} {names}")
    return 0
