"""`sgpatch port`: carry a patch set to a new SGLang release (logic in sgpatch.port)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sgpatch import report


def run(
    set_name: str,
    to: str,
    patchsets: Sequence[Path],
    dry_run: bool,
    scratch: Path | None,
    without: Sequence[str],
    offline: bool,
    as_json: bool,
) -> int:
    from packaging.version import InvalidVersion, Version

    from sgpatch.errors import bad_input
    from sgpatch.manifest import load_set
    from sgpatch.port import port

    try:
        version = Version(to)
    except InvalidVersion:
        raise bad_input(f"--to {to!r}: not a PEP 440 version") from None
    manifest = load_set(set_name, tuple(patchsets))
    rep = port(
        manifest, version, dry_run=dry_run, scratch=scratch, offline=offline, without=without
    )
    code = int(rep.exit_code)
    if as_json:
        report.emit_json(
            {
                "command": "port",
                "schema": 1,
                "exit_code": code,
                "set": rep.set,
                "to": rep.to,
                "dry_run": dry_run,
                "changed": bool(rep.written) and not dry_run and code == 0,
                "written": rep.written,
                "set_change": rep.set_change,
                "unchecked": rep.unchecked,
                "scratch": rep.scratch,
                "patches": [r.json() for r in rep.results],
            }
        )
        return code
    for r in rep.results:
        report.err(line(r))
        for c in r.conflicts:
            hunks = ", ".join(f"#{h}" for h in c.hunks) or "?"
            report.err(f"    {c.path} hunk(s) {hunks}: {c.reason}")
            if c.scratch:
                marks = f" (conflict markers at line(s) {', '.join(map(str, c.markers))})"
                report.err(f"    merged file: {c.scratch}{marks if c.markers else ''}")
    if rep.set_change:
        report.err(f"  set range: {rep.set_change}")
    if rep.unchecked and not code:
        report.err(
            f"  warning: the new range also claims {', '.join(rep.unchecked)}, which port did "
            f"not check (it checks {rep.to} only); run `sgpatch lint --set {rep.set}`, or port "
            "to each of them first"
        )
    if code:
        report.err(f"sgpatch port: {rep.set} -> {rep.to}: conflict; nothing in the set changed")
    elif not rep.written:
        report.err(f"sgpatch port: {rep.set} -> {rep.to}: nothing to change")
    else:
        verb = "would write" if dry_run else "wrote"
        report.err(f"sgpatch port: {rep.set} -> {rep.to}: {verb} {', '.join(rep.written)}")
    return code


def line(r) -> str:
    change = f"; {r.manifest_change}" if r.manifest_change else ""
    note = f" ({r.note})" if r.note else ""
    src = f" [{r.from_release} variant {r.from_variant}]" if r.from_variant else ""
    if r.outcome == "upstream":
        return f"{r.id}: upstream now{src}{change}{note}"
    if r.outcome == "applies":
        return f"{r.id}: still applies ({r.how}){src}{change}{note}"
    if r.outcome == "ported":
        return f"{r.id}: ported (new variant {r.new_variant}){src}{change}"
    if r.outcome == "conflict":
        return f"{r.id}: conflict{src}{note}"
    return f"{r.id}: {r.outcome}{note}"
