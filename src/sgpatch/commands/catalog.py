"""`sgpatch list` and `sgpatch show`: the patch sets sgpatch knows, and one set in detail."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch import report
from sgpatch.manifest import find_sets, load_manifest, load_set
from sgpatch.probe import describe


def list_sets(patchsets: Sequence[Path], as_json: bool) -> int:
    sets = [
        load_manifest(path / "patchset.yaml")
        for _, path in sorted(find_sets(tuple(patchsets)).items())
    ]
    if as_json:
        report.emit_json(
            {
                "command": "list",
                "exit_code": 0,
                "sets": [
                    {
                        "name": m.name,
                        "summary": m.summary,
                        "sglang": str(m.sglang),
                        "patches": len(m.patches),
                        "path": str(m.base_dir),
                    }
                    for m in sets
                ],
            }
        )
        return 0
    from rich.table import Table

    table = Table()
    for col in ("set", "sglang", "patches", "summary"):
        table.add_column(col, overflow="fold")
    for m in sets:
        table.add_row(m.name, str(m.sglang), str(len(m.patches)), m.summary)
    report.console().print(table)
    return 0


def show_set(name: str, patchsets: Sequence[Path], as_json: bool) -> int:
    m = load_set(name, tuple(patchsets))
    patches = []
    for p in m.patches:
        patches.append(
            {
                "id": p.id,
                "summary": p.summary,
                "type": p.type,
                "optional": p.optional,
                "requires": list(p.requires),
                "upstream": {
                    "status": p.upstream.status,
                    "ref": p.upstream.ref,
                    "since": str(p.upstream.since) if p.upstream.since else None,
                },
                "probe": describe(p.probe) if p.probe is not None else None,
                "variants": [
                    {
                        "sglang": str(v.sglang),
                        "patch": v.patch.relative_to(m.base_dir).as_posix() if v.patch else None,
                        "na": v.na,
                    }
                    for v in p.variants
                ],
                "environment": [
                    {"package": e.package, "specifier": str(e.specifier), "why": e.why}
                    for e in p.environment
                ],
            }
        )
    if as_json:
        report.emit_json(
            {
                "command": "show",
                "exit_code": 0,
                "name": m.name,
                "summary": m.summary,
                "sglang": str(m.sglang),
                "fuzz": m.fuzz,
                "patches": patches,
            }
        )
        return 0
    con = report.console()
    con.print(f"[bold]{m.name}[/]: {m.summary}")
    con.print(f"supports sglang {m.sglang}; fuzz {m.fuzz}; {m.base_dir}")
    for p in patches:
        opt = " (optional)" if p["optional"] else ""
        up = p["upstream"]
        since = f" since {up['since']}" if up["since"] else ""
        ref = f" {up['ref']}" if up["ref"] else ""
        con.print(f"\n{p['id']}{opt} ({p['type']}): {p['summary']}", markup=False)
        con.print(f"  upstream: {up['status']}{ref}{since}", markup=False)
        if p["requires"]:
            con.print(f"  requires: {', '.join(p['requires'])}")
        if p["probe"]:
            con.print(f"  probe: {p['probe']}", markup=False)
        for v in p["variants"]:
            con.print(
                f"  sglang {v['sglang']}: {v['patch'] or 'n/a — ' + (v['na'] or '')}", markup=False
            )
        for e in p["environment"]:
            con.print(f"  needs {e['package']}{e['specifier']}: {e['why']}", markup=False)
    return 0
