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
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=False)


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
