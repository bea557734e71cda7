"""What a port step prints on the terminal: one screen, whatever the stack.

A stop says, per stopped file, one or two lines (the file, the patch and hunks, why, where
its code went), then the next command. Everything longer (each conflicted hunk's upstream
change beside the patch's, the candidates of moved code with their evidence) goes to
`W/.sgpatch-port/fix`, to `--json`, and to `sgpatch port --show FILE --workspace W` for one
file. The screen never passes MAX_LINES: past it, the longest list is cut first, each cut
said in one line with how many more there are and where they are.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sgpatch.port.folds import SCREEN_DIFF
from sgpatch.port.stopreport import MOVED

if TYPE_CHECKING:
    from sgpatch.port.report import PatchReport, Report
    from sgpatch.port.stopreport import FileStop

MAX_LINES = 100  # a stop never prints more (issue 44: 5,529 lines was one real stop)
PATCH_ROWS = 30  # patches past which the quiet ones are summed up
MOVE_ROWS = 5  # moved-code lines per patch
MARKERS = 6  # marker lines named per file
WALKED = 4  # releases a --step walk names before its last step (a longer run: first ... last)


@dataclass(frozen=True)
class Part:
    """A section of the screen: fixed lines (a heading), then rows (a patch with its moved
    lines, a file with where its code went) that may be cut from the end, the cut said in
    one line by `more` (it gets how many rows were cut)."""

    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    more: Callable[[int], str]
    tail: tuple[str, ...] = ()  # fixed lines after the rows

    def lines(self, keep: int) -> list[str]:
        cut = len(self.rows) - keep
        kept = [ln for row in self.rows[:keep] for ln in row]
        return [*self.head, *kept, *([self.more(cut)] if cut else []), *self.tail]


def fit(parts: Sequence[Part], budget: int) -> list[str]:
    """The parts in at most `budget` lines (when they can be: every part keeps its heading
    and its `more` line): the last row of the longest part is cut until they fit, so a long
    list gives way first and no section vanishes for another."""
    keep = [len(p.rows) for p in parts]

    def size(i: int) -> int:
        return len(parts[i].lines(keep[i]))

    total = sum(size(i) for i in range(len(parts)))
    while total > budget:
        cuttable = [i for i in range(len(parts)) if keep[i]]
        if not cuttable:
            break
        i = max(cuttable, key=size)
        before = size(i)
        keep[i] -= 1
        total += size(i) - before
    return [ln for p, k in zip(parts, keep, strict=True) for ln in p.lines(k)]


def step_lines(rep: Report, budget: int = MAX_LINES) -> list[str]:
    """The lines of one step, in order: the heading, the patches, what --continue noted,
    what was written or what is left to fix, and the last line; never more than `budget`."""
    parts = [
        Part((f"sgpatch port: {rep.set} -> {rep.to} (workspace {rep.workspace})",), (), _none),
        _patches(rep.patches),
        _listed([f"  note: {n}" for n in rep.notes], "notes", "--json"),
        _listed([f"  set: {c}" for c in rep.changes], "changes to the set", "--json"),
        _listed([f"  lint warning: {w}" for w in rep.warnings], "lint warnings", "--json"),
    ]
    if rep.state == "stopped":
        parts += _stop(rep)
    return [*fit(parts, budget - 1), _last(rep)]


def walk_lines(reps: Sequence[Report]) -> list[str]:
    """A `--step` walk on the terminal, one screen in all: the releases carried and written
    before the last step in one line (each step's patches are in --json), then the last step,
    stopped or not, within what is left of MAX_LINES."""
    *before, last = reps
    head = [_walked(before)] if before else []
    return [*head, *step_lines(last, MAX_LINES - len(head))]


def _walked(before: Sequence[Report]) -> str:
    """The steps of a walk before its last, in one line: the releases (the first and last of
    a long run) and how many of the set's files they wrote."""
    tos = [r.to for r in before]
    span = ", ".join(tos) if len(tos) <= WALKED else f"{tos[0]} ... {tos[-1]} ({len(tos)} releases)"
    written = {f for r in before for f in r.written}
    return (f"sgpatch port --step: {before[0].set} -> {span}: carried, {len(written)} file(s) "
            "of the set written (each step's patches: --json)")  # fmt: skip


def _none(_n: int) -> str:
    raise AssertionError("a part without rows is never cut")


def _listed(lines: list[str], what: str, where: str, indent: str = "  ") -> Part:
    """Lines of one kind, a row each, cut as `... and N more WHAT (in WHERE)`."""
    return Part((), tuple((ln,) for ln in lines),
                lambda n: f"{indent}... and {n} more {what} (in {where})")  # fmt: skip


def _last(rep: Report) -> str:
    """The step's last line: the next command, or what was written."""
    w = shlex.quote(rep.workspace)
    if rep.state == "stopped":
        return _next(rep)
    if rep.state == "planned":
        return f"sgpatch port: carried; `sgpatch port --continue --workspace {w}`"
    what = f"wrote {', '.join(rep.written)}" if rep.written else "nothing to change"
    return f"sgpatch port: {rep.set} -> {rep.to}: {what} (workspace kept)"


# ---------------------------------------------------------------------------------------------
# the patches


def _quiet(r: PatchReport) -> bool:
    """A patch nothing is to be said about: carried as it was, or decided before carrying."""
    o = r.outcome
    plain = o.outcome == "carried" and o.as_is and not r.dropped and not r.moves
    return plain or o.outcome in ("upstream", "n/a", "skipped")


def _patches(patches: Sequence[PatchReport]) -> Part:
    """A row per patch (its line and its moved code); past PATCH_ROWS, the quiet ones are
    summed up in one line."""
    shown = list(patches)
    summed: Counter = Counter()
    if len(shown) > PATCH_ROWS:
        summed = Counter(_sum_name(r) for r in shown if _quiet(r))
        shown = [r for r in shown if not _quiet(r)]
    rows: list[tuple[str, ...]] = []
    for r in shown:
        moves = [f"    {m.text()}" for m in r.moves]
        if len(moves) > MOVE_ROWS:
            moves = [
                *moves[:MOVE_ROWS],
                f"    ... and {len(moves) - MOVE_ROWS} more moved (in --json)",
            ]
        rows.append(("  " + line(r), *moves))
    tail: tuple[str, ...] = ()
    if summed:
        parts = ", ".join(f"{n} {what}" for what, n in sorted(summed.items()))
        tail = (f"  and {sum(summed.values())} more patches: {parts} (each in --json)",)
    return Part((), tuple(rows), lambda n: f"  ... and {n} more patches (in --json)", tail)


def _sum_name(r: PatchReport) -> str:
    return "carried as they were" if r.outcome.outcome == "carried" else r.outcome.outcome


def line(r: PatchReport) -> str:
    """A patch's line: what happened to it, and where it came from."""
    o = r.outcome
    src = f" [from {o.variant}, base {o.base}]" if o.variant is not None else ""
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


def _stop(rep: Report) -> list[Part]:
    """What is left to fix, short: the files, then the probes and lint refusals."""
    w = shlex.quote(rep.workspace)
    fix = f"{rep.workspace}/.sgpatch-port/fix"
    files = [(r.outcome.id, f) for r in rep.patches for f in r.files]
    parts: list[Part] = []
    more = f"in {fix}"
    rows: tuple[tuple[str, ...], ...] = ()
    if rep.left:
        head = f"  left to fix in W (then `sgpatch port --continue --workspace {w}`):"
        rows = tuple((f"    {x}",) for x in rep.left)
        rows += tuple(_fold_rows(rep.workspace, f) for _pid, f in files if f.fold is not None)
    elif files:
        head = f"  files to fix in W (then `sgpatch port --continue --workspace {w}`):"
        rows = tuple(tuple(_file_rows(pid, f, rep.workspace)) for pid, f in files)
    if rows:
        parts.append(Part((head,), rows, lambda n: f"    ... and {n} more files ({more})"))
    return parts + _others(rep)


def _next(rep: Report) -> str:
    """A stop's last line: what to run next, and where the details are."""
    w = shlex.quote(rep.workspace)
    fix = f"{rep.workspace}/.sgpatch-port/fix"
    first = next((f"sglang/{f.problem.file}" for r in rep.patches for f in r.files), "")
    one = f", or one file: `sgpatch port --show {shlex.quote(first)} --workspace {w}`"
    return (
        f"sgpatch port: stopped: fix what is listed above, then `sgpatch port --continue "
        f"--workspace {w}` (or drop the port: `sgpatch port --abort --workspace {w}`); the "
        f"set is unchanged; in full (each conflict's upstream change beside the patch's): "
        f"{fix}, --json{one if first else ''}"
    )


def _file_rows(pid: str, f: FileStop, top: str) -> list[str]:
    """One stopped file in a line (file, markers, patch, hunks, why), and where the code of
    the hunks whose code moved went, in a second; a file that defines a name twice, its fold
    (the command, the diff)."""
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
    return out + (list(_fold_rows(top, f)[1:]) if f.fold is not None else [])


def _fold_rows(top: str, f: FileStop) -> tuple[str, ...]:
    """The fold suggested for a file (its name, then what is folded, the command, the diff's
    first lines): the resolution that keeps the code Python runs."""
    assert f.fold is not None
    rows = f.fold.lines(top, SCREEN_DIFF)
    return (f"    sglang/{f.problem.file}:", *(f"      {ln}" for ln in rows))


def _went(hunk: int, scope: str | None, evidence: Sequence[str]) -> str:
    maybe = [e[len("maybe ") :] for e in evidence if e.startswith("maybe ")]
    where = f"maybe {maybe[0]}" if maybe else "no candidate found"
    more = f" (+{len(maybe) - 1} more)" if len(maybe) > 1 else ""
    return f"hunk #{hunk} ({scope}): {where}{more}"


def _others(rep: Report) -> list[Part]:
    """The probes and lint refusals that stop patches, a line each."""
    probes = [f"    {r.outcome.id}: {r.probe.problem}" for r in rep.patches
              if r.probe is not None and r.probe.problem]  # fmt: skip
    asked = [f"    {r.outcome.id}: {r.probe.file} (checked at --continue)" for r in rep.patches
             if r.probe is not None and not r.probe.problem and r.probe.file]  # fmt: skip
    parts: list[Part] = []
    if probes or asked:
        head = "  probes (edit the files during the stop; --continue checks them):"
        p = _listed(probes + asked, "probes", "--json", "    ")
        parts.append(Part((head,), p.rows, p.more))
    lints = [f"    {x.patch or 'the set'} ({x.field}): {x.message}" for x in rep.lint_refusals]
    if lints:
        head = "  lint refuses the set as --continue would write it (patch, manifest field):"
        p = _listed(lints, "lint refusals", "--json", "    ")
        parts.append(Part((head,), p.rows, p.more))
    return parts


__all__ = ["MAX_LINES", "Part", "fit", "line", "step_lines", "walk_lines"]
