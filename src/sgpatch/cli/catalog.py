"""`sgpatch list` and `sgpatch show`: the patch sets sgpatch knows, and one set in detail."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sgpatch import console
from sgpatch.errors import SgpatchError
from sgpatch.patchset.manifest import (
    PatchSpec,
    SetManifest,
    find_sets,
    load_manifest,
    load_set,
    shadow_note,
)
from sgpatch.shown import name as one_line


@dataclass(frozen=True)
class ListOptions:
    """`sgpatch list`'s options, as parsed."""

    patchsets: tuple[Path, ...]
    as_json: bool


def list_sets(opts: ListOptions) -> int:
    """Every set that can be read; one that cannot (others may write it, a bad manifest) is a
    line of its own on stderr and makes the exit code its own (4, else 2), the rest listed."""
    refused: list[SgpatchError] = []
    found = sorted(find_sets(tuple(opts.patchsets), refused=refused).items())
    for name, path in found:
        note = shadow_note(name, path)
        if note is not None:
            console.err(note)
    sets = []
    for _, path in found:
        try:
            sets.append(load_manifest(path / "patchset.yaml"))
        except SgpatchError as exc:
            refused.append(exc)
    code = max((int(r.code) for r in refused), default=0)
    if opts.as_json:
        console.emit_json(
            {
                "command": "list",
                "exit_code": code,
                "sets": [m.listed_json() for m in sets],
                "refused": [r.message for r in refused],
            }
        )
        return code
    console.table(
        ("set", "sglang", "patches", "summary"),
        [(m.name, str(m.sglang), str(len(m.patches)), m.summary) for m in sets],
    )
    for refusal in refused:
        console.err(f"sgpatch: error: {one_line(refusal.message)}")
    return code


@dataclass(frozen=True)
class ShowOptions:
    """`sgpatch show`'s options, as parsed."""

    name: str
    patchsets: tuple[Path, ...]
    as_json: bool


def show_set(opts: ShowOptions) -> int:
    m = load_set(opts.name, tuple(opts.patchsets))
    if opts.as_json:
        console.emit_json({"command": "show", "exit_code": 0, **m.to_json()})
        return 0
    console.out(f"{m.name}: {m.summary}")
    console.out(f"supports sglang {m.sglang}; fuzz {m.fuzz}; {m.base_dir}")
    for p in (_patch_json(m, spec) for spec in m.patches):
        opt = " (optional)" if p["optional"] else ""
        up = p["upstream"]
        since = f" since {up['since']}" if up["since"] else ""
        ref = f" {up['ref']}" if up["ref"] else ""
        console.out(f"\n{p['id']}{opt} ({p['type']}): {p['summary']}")
        console.out(f"  upstream: {up['status']}{ref}{since}")
        if p["requires"]:
            console.out(f"  requires: {', '.join(p['requires'])}")
        if p["probe"]:
            console.out(f"  probe: {p['probe']}")
        for v in p["variants"]:
            console.out(f"  sglang {v['sglang']}: {v['patch'] or 'n/a — ' + (v['na'] or '')}")
        for e in p["environment"]:
            console.out(f"  needs {e['package']}{e['specifier']}: {e['why']}")
    return 0


def _patch_json(m: SetManifest, p: PatchSpec) -> dict[str, Any]:
    """One patch as `show --json` writes it (and as the text view reads it)."""
    return p.to_json(m.base_dir)
