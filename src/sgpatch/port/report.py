"""A port step's report: per patch its state line and what is read off W beside it
(`PatchReport`), the step as a whole (`Report`), each made JSON by its own `to_json`, and
`port --show FILE` (`show`): one stopped file's details, read off W.

The report is built from the state as a step left it (`build`): nothing in it is state, so
it is read again at every report (a person fixing W changes the markers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sgpatch.errors import ExitCode, bad_input

if TYPE_CHECKING:
    from sgpatch.ops.lint import Finding
    from sgpatch.port.moved import Move
    from sgpatch.port.sequencer import Context, Outcome
    from sgpatch.port.snapshots import Listing
    from sgpatch.port.state import PortState
    from sgpatch.port.stopreport import (
        Dropped,
        FileStop,
        LintRefusal,
        ProbeStop,
    )

# how a step ended: the set written, stopped for a hand (exit 3), or planned (--no-finish)
Ending = Literal["finished", "stopped", "planned"]


@dataclass(frozen=True)
class PatchReport:
    """One patch in a step's report: its state line (`outcome`, what W's state keeps) and what
    the report reads off W beside it, kept apart because none of it is state: it is read
    again at every report (a person fixing W changes the markers)."""

    outcome: Outcome
    files: tuple[FileStop, ...] = ()  # a stopped patch's file problems, as W shows them now
    probe: ProbeStop | None = None  # a stopped patch's probe file and why it stops
    dropped: tuple[Dropped, ...] = ()  # hunks already there upstream
    moves: tuple[Move, ...] = ()  # hunks carried into the file their code moved to
    carried_files: tuple[str, ...] = ()
    waiting_files: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()  # unfinished patches it `requires`

    def to_json(self) -> dict:
        """One patch of `port --json` (docs/json.md): its state line, then what was read off
        W."""
        o = self.outcome
        return {
            "id": o.id,
            "outcome": o.outcome,
            "from_variant": o.variant,
            "from_release": o.release,
            "base": o.base,
            "as_is": o.as_is,
            "hunks_kept": o.kept,
            "hunks_merged": o.merged,
            "hunks_moved": o.moved,
            "hunks_by_hand": o.hand,
            "moved": [m.to_json() for m in self.moves],
            "note": o.note,
            "problems": [f.to_json() for f in self.files],
            "files_carried": list(self.carried_files),
            "files_waiting": list(self.waiting_files),
            "waiting_for": list(self.waiting_for),
            "probe": None if self.probe is None else self.probe.to_json(),
            "hunks_dropped": [d.to_json() for d in self.dropped],
        }


@dataclass
class Report:
    """One port step: per patch what happened, what is left to fix, what was written."""

    set: str
    to: str
    workspace: str
    state: Ending
    patches: list[PatchReport] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # absolute paths
    changes: list[str] = field(default_factory=list)
    lint: list[Finding] = field(default_factory=list)  # lint's errors: the set was not written
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # hand edits --continue took, and where
    set_dir: str = ""  # the real path of the set's folder (where --continue writes)
    lint_refusals: list[LintRefusal] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # what --continue found still unresolved

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.CONFLICT if self.state == "stopped" else ExitCode.OK

    def to_json(self) -> dict:
        """One step of `port --json` (docs/json.md), from its records' own `to_json`."""
        return {
            "set": self.set,
            "to": self.to,
            "workspace": self.workspace,
            "state": self.state,
            "patches": [r.to_json() for r in self.patches],
            "waiting": self.waiting,
            "fix": self.fix,
            "written": self.written,
            "changes": self.changes,
            "lint": [f.brief() for f in self.lint],
            "lint_refusals": [r.to_json() for r in self.lint_refusals],
            "warnings": self.warnings,
            "notes": self.notes,
            "set_dir": self.set_dir,
            "left": self.left,
        }


def build(ctx: Context, state: PortState, kind: Ending) -> Report:
    """The report of a port step: the state's outcomes in manifest order (the patches still
    to do as `waiting`), each with what is read off W about it (_patch_report)."""
    from dataclasses import replace

    from sgpatch.port import stopreport
    from sgpatch.port.sequencer import Outcome

    q = state.queue
    waiting = [replace(q.partial[pid], outcome="waiting") if pid in q.partial
               else Outcome(pid, "waiting") for pid in q.todo]  # fmt: skip
    unfinished = set(q.todo) | {o.id for o in q.stopped}
    order = {s.id: i for i, s in enumerate(ctx.manifest.patches)}
    outs = [(o, False) for o in q.done] + [(o, True) for o in q.stopped]
    patches = [_patch_report(ctx, state.listing, o, stopped, unfinished)
               for o, stopped in [*outs, *((o, False) for o in waiting)]]  # fmt: skip
    patches.sort(key=lambda r: order.get(r.outcome.id, 0))
    rep = Report(ctx.manifest.name, str(ctx.to), str(ctx.ws.top), kind, patches, list(q.todo),
                 list(state.fix), set_dir=str(ctx.manifest.base_dir))  # fmt: skip
    rep.lint_refusals = stopreport.lint_refusals(q.stopped)
    return rep


def _patch_report(
    ctx: Context, listing: Listing, o: Outcome, stopped: bool, unfinished: set[str]
) -> PatchReport:
    """What the report says of one patch beyond its line: a stopped one's file problems and
    probe, the hunks dropped, its files carried and waiting, what it waits for."""
    from dataclasses import replace

    from sgpatch.port import stopreport

    ws = ctx.ws
    waiting = listing.unfinished(o.id) - listing.fixing.get(o.id, frozenset())
    files = tuple(stopreport.file_stop(ws, o.id, p) for p in o.problems
                  if stopreport.kind(p) == "file") if stopped else ()  # fmt: skip
    requires = ctx.manifest.patch(o.id).requires if o.outcome == "waiting" else ()
    return PatchReport(
        replace(o),  # a copy: the sequencer changes outcomes in place
        files=files,
        probe=stopreport.probe_stop(ws, o.id, o.problems) if stopped else None,
        dropped=stopreport.dropped(ws, o.id),
        moves=stopreport.moves(ws, o.id),
        carried_files=tuple(sorted(listing.carried.get(o.id, ()))),
        waiting_files=tuple(sorted(waiting)),
        waiting_for=tuple(r for r in requires if r in unfinished),
    )


@dataclass(frozen=True)
class Shown:
    """`port --show FILE`: one stopped file as `fix` shows it (its line, each hunk's upstream
    change beside the patch's), and the same as records for --json."""

    file: str
    lines: tuple[str, ...]
    problems: tuple[tuple[str, FileStop], ...]  # (patch id, the file's problem as W shows it)

    def to_json(self) -> dict:
        """`port --show FILE --json`: the file, and per patch its problem there."""
        problems = [{"patch": pid, **f.to_json()} for pid, f in self.problems]
        return {"file": self.file, "problems": problems}


def show(workspace: Path, file: str) -> Shown:
    """The details of one file a stopped port needs a hand for, read off W (nothing is
    written). FILE: `sglang/srt/x.py`, `srt/x.py`, or its path in W."""
    import os

    from sgpatch.port.sequencer import stopped_of
    from sgpatch.port.stopreport import file_entry, file_stop, kind
    from sgpatch.port.workspace import PKG, existing, shown

    ws = existing(workspace)
    full = os.path.abspath(file)
    rel = full[len(str(ws.root)) + 1 :] if full.startswith(f"{ws.root}/") else file
    rel = rel.removeprefix(f"{PKG}/")
    stopped = stopped_of(ws)
    found = [(o.id, p) for o in stopped for p in o.problems if kind(p) == "file"]
    mine = [(pid, p) for pid, p in found if p.file == rel]
    if not mine:
        names = sorted({f"{PKG}/{p.file}" for _pid, p in found})
        raise bad_input(f"--show {file}: not a file to fix in {ws.top} (the files to fix: "
                        f"{shown(names) if names else 'none'})")  # fmt: skip
    lines = [ln.removeprefix("  ") for pid, p in mine for ln in file_entry(ws, pid, p)]
    stops = tuple((pid, file_stop(ws, pid, p)) for pid, p in mine)
    return Shown(f"{PKG}/{rel}", tuple(lines), stops)
