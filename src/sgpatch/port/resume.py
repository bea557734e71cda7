"""--continue, --abort and --fold as commands: W's lock held, the state read once (port.state) and
handed from step to step; what --continue does first is the workspace's phase
(docs/porting.md). The steps themselves (reopen, unresolved, take_fixed, the removal of W)
are port.stopped's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch.port.driver import conclude, load_state
from sgpatch.port.report import Report, build
from sgpatch.port.statefiles import FINISHING_CHANGES, FINISHING_WARNINGS, FIX

if TYPE_CHECKING:
    from sgpatch.port.folds import Suggested
    from sgpatch.port.sequencer import Context
    from sgpatch.port.state import PortState


def resume(workspace: Path) -> Report:
    """--continue: redo an interrupted step, take the fixes, carry what waited, finish (exit
    3 while anything is left). What it does first is the workspace's phase (docs/porting.md).
    The state is read once (port.state) and handed from step to step."""
    from sgpatch.port import sequencer, stopped
    from sgpatch.port.workspace import existing, locked
    from sgpatch.releases import cache as releases

    ws = existing(workspace)  # no lock file is made in a folder that is no workspace
    with locked(ws.top):
        ctx, state, kept = stopped.reopen(ws)
        notes = [f"{rel}: kept as you edited it after the step that was interrupted there"
                 for rel in kept]  # fmt: skip
        with releases.cache_only(ctx.offline):
            if state.phase == "finishing":
                return _finished_again(ctx, state, notes)
            if state.phase in ("stopped", "planned"):
                left = stopped.unresolved(ctx, state)
                if left:
                    rep = build(ctx, state, "stopped")
                    rep.fix, rep.left, rep.notes = _left_fix(ctx, state, left), left, notes
                    return rep
                state, joined = stopped.take_fixed(ctx, state)
                notes += joined
            if state.phase == "start":
                sequencer.lay_out(ctx)  # writes the lists afresh: read back once
                state = load_state(ctx, state)
            if state.queue.todo:  # the queue worked on in place
                state = state.carried(sequencer.run_todo(ctx, state.queue, state.listing))
            rep = conclude(ctx, state, True)
    rep.notes = notes + rep.notes
    return rep


def _finished_again(ctx: Context, state: PortState, notes: list[str]) -> Report:
    """--continue after a kill while the set was written: write what is staged."""
    from sgpatch.port.finish import write_staged

    written = write_staged(ctx, state.options)
    rep = build(ctx, state, "finished")
    rep.written, rep.notes = written, notes
    rep.changes = ctx.ws.lines(FINISHING_CHANGES)
    rep.warnings = ctx.ws.lines(FINISHING_WARNINGS)
    return rep


def _left_fix(ctx: Context, state: PortState, left: list[str]) -> list[str]:
    """The fix file at a --continue that finds files still unresolved, written again: what
    is left (with each still-stopped file's details), never a file already fixed."""
    from sgpatch.port.stopreport import LEFT_HEAD, fix_lines

    files = {x.split(":", 1)[0].removeprefix("sglang/") for x in left}
    fix = [LEFT_HEAD.format(top=ctx.ws.top), *(f"  {x}" for x in left)]
    fix += fix_lines(ctx.ws, state.queue.stopped, only=files)
    with ctx.ws.step("fix"):
        ctx.ws.put_lines(FIX, fix)
    return fix


def fold(workspace: Path, file: str) -> Suggested:
    """`port --fold FILE --workspace W`: W's file folded as the stop suggests, written as the
    person's own edit (under W's lock); --continue then takes it. FILE: `sglang/srt/x.py`,
    `srt/x.py`, or its path in W (the fold: port.folds)."""
    import os

    from sgpatch.errors import bad_input
    from sgpatch.port.folds import at_stop
    from sgpatch.port.sequencer import stopped_of
    from sgpatch.port.stopreport import kind
    from sgpatch.port.workspace import PKG, existing, locked, shown

    ws = existing(workspace)
    with locked(ws.top):
        full = os.path.abspath(file)
        rel = full[len(str(ws.root)) + 1 :] if full.startswith(f"{ws.root}/") else file
        rel = rel.removeprefix(f"{PKG}/")
        found = [(o.id, p.file) for o in stopped_of(ws) for p in o.problems if kind(p) == "file"]
        owners = [pid for pid, f in found if f == rel]
        if ws.phase != "stopped" or not owners:
            names = sorted({f"{PKG}/{f}" for _pid, f in found})
            raise bad_input(f"--fold {file}: not a file to fix in {ws.top} (the files to fix: "
                            f"{shown(names) if names else 'none'})")  # fmt: skip
        got = at_stop(ws, owners[0], rel)
        if got is None:
            raise bad_input(
                f"--fold {file}: {PKG}/{rel} defines no name twice in one body that the file "
                "it was carried onto did not (or it does not parse yet: conflict markers?); "
                "nothing to fold"
            )
        ws.write(f"{PKG}/{rel}", got.data, ws.mode_pkg(rel))
    return got


def abort(workspace: Path, force: bool = False):
    """--abort: W's lock held, hand edits refused (or kept aside with `force`), W removed."""
    from sgpatch.port import stopped
    from sgpatch.port.workspace import existing, locked

    ws = existing(workspace)
    with locked(ws.top):
        return stopped.abort(ws, force)
