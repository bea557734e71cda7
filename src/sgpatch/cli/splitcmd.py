"""`sgpatch split`: one patch of a set becomes two, by file or by hunk (logic in ops.split)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console


@dataclass(frozen=True)
class SplitOptions:
    """`sgpatch split`'s options, as parsed."""

    set_name: str
    patchsets: tuple[Path, ...]
    patch_id: str
    by: str
    take: tuple[str, ...]
    new_id: str
    summary: str | None
    as_json: bool


def run(opts: SplitOptions) -> int:
    from sgpatch.ops import split
    from sgpatch.patchset.manifest import load_set

    manifest = load_set(opts.set_name, tuple(opts.patchsets))
    result = split.split_patch(
        manifest, opts.patch_id, opts.by, opts.take, opts.new_id, opts.summary
    )
    findings = split.write(manifest, result)
    if opts.as_json:
        doc = result.to_json(manifest.base_dir)
        warnings = [f.message for f in findings]
        console.emit_json(
            {"command": "split", "exit_code": 0, "set": manifest.name, **doc, "warnings": warnings}
        )
        return 0
    for note in result.notes:
        console.err(f"note: {note}")
    for f in findings:
        console.err(f"warning: {f.patch or manifest.name}: {f.message}")
    checked = ", ".join(str(h.base) for h in result.halves)
    console.err(
        f"sgpatch split: {manifest.name}: {opts.patch_id} -> {opts.patch_id} + {opts.new_id} "
        f"({', '.join(result.new_files(manifest.base_dir))}); checked on sglang {checked}"
    )
    return 0
