"""`sgpatch probe`: run only the probes and say what upstream already contains, with evidence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.cli.common import open_target
from sgpatch.ops import report
from sgpatch.patchset.manifest import load_set, probe_for
from sgpatch.patchset.probe import describe, evaluate


@dataclass(frozen=True)
class ProbeOptions:
    """`sgpatch probe`'s options, as parsed."""

    set_name: str
    sglang_dir: Path | None
    sglang_version: str | None
    patchsets: tuple[Path, ...]
    as_json: bool
    verbose: bool


def run(opts: ProbeOptions) -> int:
    target = open_target(opts.sglang_dir, opts.sglang_version, reader=True)
    manifest = load_set(opts.set_name, tuple(opts.patchsets))
    untested = _untested(manifest, target.version)
    rows = []
    chosen = untested.variants_of if untested is not None else target.version
    probes = {p.id: probe_for(p, chosen) for p in manifest.patches}
    for p in manifest.patches:
        probe = probes[p.id]
        result = evaluate(probe, target.root) if probe is not None else None
        rows.append((p, result))
    if opts.as_json:
        console.emit_json(
            {
                "command": "probe",
                "exit_code": 0,
                "target": target.to_json(),
                "set": manifest.name,
                "untested": None if untested is None else untested.to_json(),
                "probes": [
                    {
                        "id": p.id,
                        "probe": describe(pr) if (pr := probes[p.id]) is not None else None,
                        "upstream": r.value if r else None,
                        **({"evidence": r.to_json()["evidence"]} if r else {}),
                    }
                    for p, r in rows
                ],
            }
        )
        return 0
    if untested is not None:
        console.err(f"sgpatch: {untested.line()}")
    console.out(f"sglang {target.version} at {target.root}")
    for p, r in rows:
        verdict = "no probe" if r is None else ("upstream has it" if r.value else "not upstream")
        console.out(f"{p.id}: {verdict}")
        probe = probes[p.id]
        if opts.verbose and r is not None and probe is not None:
            console.out(f"  probe: {describe(probe)}")
            for line in report.evidence_lines(r.evidence):
                console.out(line)
    upstream = sum(1 for _, r in rows if r is not None and r.value)
    without = sum(1 for _, r in rows if r is None)
    tail = f", {without} without a probe" if without else ""
    console.err(
        f"sgpatch: {manifest.name}: {upstream} of {len(rows)} upstream on sglang "
        f"{target.version}{tail}"
    )
    return 0


def _untested(manifest, version):
    """Probes need no variant, so probe runs on any version; on one the set was not checked
    on it says which variants status would plan it with (None: checked, or nothing lower)."""
    from sgpatch.errors import SgpatchError
    from sgpatch.patchset.nearest import basis

    try:
        found = basis(manifest, version)
    except SgpatchError:
        return None
    return None if found.checked else found
