"""What a port step prints on the terminal: one screen, whatever the stack.

A stop says, per stopped file, one or two lines (the file, the patch and hunks, why, where
its code went), then the next command. Everything longer (each conflicted hunk's upstream
change beside the patch's, the candidates of moved code with their evidence) goes to
`W/.sgpatch-port/fix`, to `--json`, and to `sgpatch port --show FILE --workspace W` for one
file. The screen stays under MAX_LINES: beyond that, each list is cut with a line saying
how many more there are and where they are.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sgpatch.port.stopreport import MOVED

if TYPE_CHECKING:
    from sgpatch.port import PatchReport, Report
    from sgpatch.port.stopreport import FileStop

MAX_LINES = 100  # a stop never prints more (issue 44: 5,529 lines was one real stop)
PATCH_ROWS = 30  # patch lines before the quiet ones are summed up
FILE_ROWS = 25  # stopped files listed (two lines each at most)
NOTE_ROWS = 8  # notes, probe and lint lines
MOVE_ROWS = 5  # moved-code lines per patch
MARKERS = 6  # marker lines named per file


def step_lines(rep: Report) -> list[str]:
    """The lines of one step, in order: the heading, the patches, what --continue noted,
    what was written or what is left to fix, and the last line."""
    out = [f"sgpatch port: {rep.set} -> {rep.to} (workspace {rep.workspace})"]
    out += _patches(rep.patches)
    out += _capped([f"  note: {n}" for n in rep.notes], NOTE_ROWS, "notes", "--json")
    out += [f"  set: {c}" for c in rep.changes]
    out += [f"  lint warning: {w}" for w in rep.warnings]
    if rep.state == "stopped":
        out += _stop(rep)
    w = shlex.quote(rep.workspace)
    if rep.state == "planned":
        out.append(f"sgpatch port: carried; `sgpatch port --continue --workspace {w}`")
    elif rep.state != "stopped":
        what = f"wrote {', '.join(rep.written)}" if rep.written else "nothing to change"
        out.append(f"sgpatch port: {rep.set} -> {rep.to}: {what} (workspace kept)")
    return out


def _capped(lines: list[str], most: int, what: str, where: str) -> list[str]:
    if len(lines) <= most:
        return lines
    return [*lines[:most], f"  ... and {len(lines) - most} more {what} (in {where})"]


# ---------------------------------------------------------------------------------------------
# the patches


def _quiet(r: PatchReport) -> bool:
    """A patch nothing is to be said about: carried as it was, or decided before carrying."""
    o = r.outcome
    plain = o.outcome == "carried" and o.as_is and not r.dropped and not r.moves
    return plain or o.outcome in ("upstream", "n/a", "skipped")


def _patches(patches: Sequence[PatchReport]) -> list[str]:
    """A line per patch (and its moved code); past PATCH_ROWS, the quiet ones summed up."""
    shown = list(patches)
    summed: Counter = Counter()
    if len(shown) > PATCH_ROWS:
        summed = Counter(_sum_name(r) for r in shown if _quiet(r))
        shown = [r for r in shown if not _quiet(r)]
    out: list[str] = []
    for r in shown[:PATCH_ROWS]:
        out.append("  " + line(r))
        moves = [f"    {m.text()}" for m in r.moves]
        out += _capped(moves, MOVE_ROWS, "moved", "--json")
    if len(shown) > PATCH_ROWS:
        out.append(f"  ... and {len(shown) - PATCH_ROWS} more patches (in --json)")
    if summed:
        parts = ", ".join(f"{n} {what}" for what, n in sorted(summed.items()))
        out.append(f"  and {sum(summed.values())} more patches: {parts} (each in --json)")
    return out


def _sum_name(r: PatchReport) -> str:
    return "carried as they were" if r.outcome.outcome == "carried" else r.outcome.outcome


def line(r: PatchReport) -> str:
    """A patch's line: what happened to it, and where it came from."""
    o = r.outcome
    src = f" [from {o.variant}, base {o.base}]" if o.variant != "-" else ""
    note = f" ({o.note})" if o.note else ""
    if o.outcome in ("carried", "fixed"):
        how = "as it was" if o.as_is else f"{o.kept} hunk(s) kept, {o.merged} merged"
        how += f", {o.moved} moved" if o.moved and not o.as_is else ""
        how += f", {o.hand} fixed by hand" if o.hand and not o.as_is else ""
        if r.dropped:
            how += f", {len(r.dropped)} dropped (already there upstream: see --json)"
        return f"{o.id}: {o.outcome}, {how}{note}{src}"
    if o.outcome == "conflict":
        names = [f.problem.file for f in r.files]
        files = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
        if not names:
            files = "its probe" if r.probe is not None and r.probe.problem else "see below"
        return f"{o.id}: needs a hand ({files}){src}"
    if o.outcome == "waiting":
        return f"{o.id}: {_waiting(r)}{src}"
    return f"{o.id}: {o.outcome}{note}"


def _waiting(r: PatchReport) -> str:
    """What a waiting patch waits on: the files an earlier patch still holds (or it requires
    a stopped patch), and how much of it is carried already."""
    names = r.waiting_files
    on = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    on = (
        f"waiting for {', '.join(r.waiting_for)} (it requires it)"
        if r.waiting_for
        else (f"waiting on {on}")
    )
    done = len(r.carried_files)
    return f"{on} ({done} of {done + len(names)} files carried)" if done else on


# ---------------------------------------------------------------------------------------------
# a stop


def _stop(rep: Report) -> list[str]:
    """What is left to fix, short, then the next command."""
    w = shlex.quote(rep.workspace)
    fix = f"{rep.workspace}/.sgpatch-port/fix"
    files = [(r.outcome.id, f) for r in rep.patches for f in r.files]
    out: list[str] = []
    if rep.left:
        out.append(f"  left to fix in W (then `sgpatch port --continue --workspace {w}`):")
        out += _capped([f"    {x}" for x in rep.left], FILE_ROWS, "files", fix)
    elif files:
        out.append(f"  files to fix in W (then `sgpatch port --continue --workspace {w}`):")
        rows = [_file_rows(pid, f) for pid, f in files]
        out += [ln for rs in rows[:FILE_ROWS] for ln in rs]
        if len(rows) > FILE_ROWS:
            out.append(f"    ... and {len(rows) - FILE_ROWS} more files (in {fix})")
    out += _others(rep)
    first = next((f"sglang/{f.problem.file}" for _p, f in files), "")
    one = f", or one file: `sgpatch port --show {shlex.quote(first)} --workspace {w}`"
    out.append(
        f"sgpatch port: stopped: fix what is listed above, then `sgpatch port --continue "
        f"--workspace {w}` (or drop the port: `sgpatch port --abort --workspace {w}`); the "
        f"set is unchanged; in full (each conflict's upstream change beside the patch's): "
        f"{fix}, --json{one if first else ''}"
    )
    return out


def _file_rows(pid: str, f: FileStop) -> list[str]:
    """One stopped file in a line (file, markers, patch, hunks, why), and where the code of
    the hunks whose code moved went, in a second."""
    p = f.problem
    marks = ", ".join(map(str, f.markers[:MARKERS]))
    if len(f.markers) > MARKERS:
        marks += f", ... ({len(f.markers)} in all)"
    where = f" (markers at lines {marks})" if f.markers else ""
    hunks = ", ".join(f"#{h}" for h in p.hunks) or "-"
    out = [f"    sglang/{p.file}{where}: {pid} hunk(s) {hunks}: {p.why}"]
    went = [_went(d.hunk, d.where, d.evidence or ()) for d in f.details if d.status == MOVED]
    if went:
        out.append("      " + "; ".join(went))
    return out


def _went(hunk: int, scope: str | None, evidence: Sequence[str]) -> str:
    maybe = [e[len("maybe ") :] for e in evidence if e.startswith("maybe ")]
    where = f"maybe {maybe[0]}" if maybe else "no candidate found"
    more = f" (+{len(maybe) - 1} more)" if len(maybe) > 1 else ""
    return f"hunk #{hunk} ({scope}): {where}{more}"


def _others(rep: Report) -> list[str]:
    """The probes and lint refusals that stop patches, a line each."""
    probes = [f"    {r.outcome.id}: {r.probe.problem}" for r in rep.patches
              if r.probe is not None and r.probe.problem]  # fmt: skip
    asked = [f"    {r.outcome.id}: {r.probe.file} (checked at --continue)" for r in rep.patches
             if r.probe is not None and not r.probe.problem and r.probe.file]  # fmt: skip
    out: list[str] = []
    if probes or asked:
        out.append("  probes (edit the files during the stop; --continue checks them):")
        out += _capped(probes + asked, NOTE_ROWS, "probes", "--json")
    lints = [f"    {x.patch or 'the set'} ({x.field}): {x.message}" for x in rep.lint_refusals]
    if lints:
        out.append("  lint refuses the set as --continue would write it (patch, manifest field):")
        out += _capped(lints, NOTE_ROWS, "lint refusals", "--json")
    return out


__all__ = ["MAX_LINES", "line", "step_lines"]
