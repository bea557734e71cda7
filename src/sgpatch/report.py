"""Human and JSON renderings of results. Human text goes to stderr, JSON to stdout.

Human output must read well in a terminal and in `docker build` logs alike: no colour and no
animation unless stderr is a terminal (rich decides; NO_COLOR and TERM=dumb are honoured).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from sgpatch.engine import HunkResult
from sgpatch.plan import FilePlan

SCHEMA = 1


def emit_json(doc: dict[str, Any]) -> None:
    """Print one JSON document on stdout (the only thing --json prints there)."""
    sys.stdout.write(json.dumps({"schema": SCHEMA, **doc}, indent=2, default=str) + "\n")


def err(text: str = "") -> None:
    sys.stderr.write(text + "\n")


def console():  # rich is imported only by commands that draw tables
    """Rich console on stderr; 120 columns when not a terminal so build logs do not wrap."""
    import os

    from rich.console import Console

    width = None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=True, highlight=False, soft_wrap=False, width=width)


def hunk_json(h: HunkResult) -> dict[str, Any]:
    d = asdict(h)
    d["candidates"] = list(h.candidates)
    return d


def file_json(f: FilePlan) -> dict[str, Any]:
    return {
        "path": f.path,
        "source": f.source,
        "action": f.action,
        "status": f.status,
        "note": f.note,
        "hunks": [hunk_json(h) for h in f.hunks],
    }


def hunk_line(h: HunkResult, reverse: bool = False) -> str:
    """One GNU-patch-like line per hunk, e.g. 'Hunk #2 applied at 120 (offset 12, fuzz 1).'"""
    extras = []
    if h.offset:
        extras.append(f"offset {h.offset}")
    if h.fuzz:
        extras.append(f"fuzz {h.fuzz}")
    if h.whitespace:
        extras.append("whitespace ignored")
    tail = f" ({', '.join(extras)})" if extras else ""
    if h.status == "applied":
        verb = "reversed" if reverse else "applied"
        return f"Hunk #{h.index} {verb} at {h.line}{tail}."
    if h.status == "already-applied":
        what = "not applied (nothing to reverse)" if reverse else "already applied"
        return f"Hunk #{h.index} {what} at {h.line}{tail}."
    if h.status == "ambiguous":
        return f"Hunk #{h.index} REFUSED (ambiguous): {h.reason}"
    return f"Hunk #{h.index} FAILED: {h.reason}"


def file_lines(f: FilePlan, dry_run: bool, reverse: bool = False) -> Iterable[str]:
    verb = "checking" if dry_run else "patching"
    what = {"create": "creating ", "delete": "deleting ", "rename": "renaming "}.get(f.action, "")
    src = f" (from {f.source})" if f.action == "rename" else ""
    yield f"{verb} file {what}{f.path}{src}"
    if f.note:
        yield f"  {f.note}"
    elif f.status == "already-applied" and not f.hunks:
        yield "  already done"
    for h in f.hunks:
        yield "  " + hunk_line(h, reverse)


# ---------------------------------------------------------------------------- patch sets

STATE_STYLE = {
    "applied": "green",
    "present": "green",
    "upstream": "cyan",
    "n/a": "dim",
    "pending": "yellow",
    "modified": "red",
    "conflict": "bold red",
}


def target_json(target) -> dict[str, Any]:
    return {
        "root": str(target.root),
        "layout": target.layout,
        "version": str(target.version),
        "version_source": target.version_source,
    }


def patch_json(p) -> dict[str, Any]:  # p: plan.PatchPlan
    doc: dict[str, Any] = {
        "id": p.id,
        "state": p.state,
        "how": p.how,
        "note": p.note,
        "optional": p.optional,
        "selected": p.selected,
        "variant": p.variant,
        "files": [file_json(f) for f in p.files],
    }
    if p.probe is not None:
        doc["probe"] = probe_json(p.probe)
    return doc


def probe_json(result) -> dict[str, Any]:
    return {
        "value": result.value,
        "evidence": [asdict(e) for e in result.evidence],
    }


def set_json(command, target, plan, pre, code, *, dry_run=False, written=(), before=None):
    doc: dict[str, Any] = {
        "command": command,
        "exit_code": int(code),
        "target": target_json(target),
        "set": plan.name,
        "done": plan.done,
        "patches": [patch_json(p) for p in plan.patches],
        "preconditions": [asdict(x) for x in pre],
    }
    if command == "apply":
        doc["dry_run"] = dry_run
        doc["written"] = list(written)
        if before is not None:
            doc["planned"] = [patch_json(p) for p in before.patches]
    return doc


def _short(text: str, width: int = 200) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def show_set(target, plan, pre, verbose: bool) -> None:
    """A rich table per set: patch, state, how it applied, note. Readable without colour."""
    from rich.table import Table

    con = console()
    con.print(
        f"sglang {target.version} ({target.layout}, version from {target.version_source}) "
        f"at {target.root}",
        markup=False,
        soft_wrap=True,
    )
    detected = target.detected_version
    if detected is not None and detected != target.version:
        con.print(
            f"warning: the tree says sglang {detected} ({target.detected_source}); using "
            f"{target.version} as given",
            markup=False,
        )
    con.print(f"patch set {plan.name}", markup=False)  # not a rich title: no padding in logs
    table = Table(expand=False)
    for col in ("patch", "state", "how", "note"):
        table.add_column(col, overflow="fold")
    for p in plan.patches:
        style = STATE_STYLE.get(p.state, "")
        state = f"[{style}]{p.state}[/]" if style else p.state
        opt = " (optional)" if p.optional else ""
        table.add_row(p.id + opt, state, p.how, _short(p.note))
    con.print(table)
    for x in pre:
        mark = {"ok": "ok", "unmet": "UNMET", "unknown": "unknown"}[x.verdict]
        found = x.found or "not found"
        # one unwrapped line each, so a build log can be grepped for "precondition .*: UNMET"
        con.print(
            f"precondition {x.package}{x.specifier}: {mark} ({found} in {x.where}); {x.why}",
            markup=False,
            soft_wrap=True,
        )
    if verbose:
        for p in plan.patches:
            show_patch_detail(con, p)


def show_patch_detail(con, p) -> None:
    con.print(
        f"[bold]{p.id}[/]: {p.state} ({p.how})" + (f" — variant {p.variant}" if p.variant else "")
    )
    for f in p.files:
        for line in file_lines(f, dry_run=True):
            con.print("  " + line, markup=False)
    if p.probe is not None:
        con.print(f"  probe: {'true' if p.probe.value else 'false'}")
        for e in p.probe.evidence:
            where = f"{e.file}:{e.line}" if e.line else e.file
            text = f" {e.text!r}" if e.text else ""
            con.print(f"    {e.kind} {where}{text} {e.note}".rstrip(), markup=False)


def apply_summary(plan, code, written, dry_run: bool) -> None:
    """One line a build log can grep: what happened to the set, counted by final state."""
    counts: dict[str, int] = {}
    for p in plan.patches:
        if p.selected:
            counts[p.state] = counts.get(p.state, 0) + 1
    optional = sum(1 for p in plan.patches if not p.selected and p.optional)
    left_out = sum(1 for p in plan.patches if not p.selected and not p.optional)
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    if optional:
        parts += f"; {optional} optional not chosen"
    if left_out:
        parts += f"; {left_out} left out (--without)"
    if code != 0:
        err(f"sgpatch: {plan.name}: not applied ({parts}); nothing was written")
    elif dry_run:
        err(f"sgpatch: {plan.name}: dry run ({parts}); nothing was written")
    elif written:
        err(f"sgpatch: {plan.name}: applied; {len(written)} file(s) written ({parts})")
    else:
        err(f"sgpatch: {plan.name}: nothing to do ({parts})")
