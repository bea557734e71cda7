"""Carry a patch set to another SGLang release, like `git rebase` (docs/porting.md).

    port(...)    plan -> workspace: every patch carried hunk by hunk into W (sequencer, carry)
    resume(...)  --continue: fixed files become the stopped patches' diffs, the rest is carried,
                 then the set is written (finish)
    abort(...)   --abort: W removed (hand edits and the person's own files kept aside)
    walk(...)    --step: one port per release between the set's nearest release and the target

Modules: source (releases, variants, merge bases), carry (per-hunk carry), merge (git
merge-file and the checks on a merged file), workspace (W, its state files, its lock), wsfiles
(W's files, never through a symlink), undo (a step all or nothing), sequencer
(todo/done/needs-a-hand), state (the state read once, one record --continue works on),
stopped (--continue, --abort), finish (manifest edits, lint), edits (text edits, ranges).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from sgpatch.errors import ExitCode, bad_input
from sgpatch.interrupts import Interrupted
from sgpatch.patchset.manifest import SetManifest
from sgpatch.patchset.manifest_text import insert_first_variant, set_set_spec, set_variant_spec
from sgpatch.port.edits import capped, set_widened
from sgpatch.port.merge import merge_file

if TYPE_CHECKING:
    from sgpatch.ops.lint import Finding
    from sgpatch.port.folds import Suggested
    from sgpatch.port.moved import Move
    from sgpatch.port.sequencer import Context, Outcome
    from sgpatch.port.snapshots import Listing
    from sgpatch.port.state import PortState
    from sgpatch.port.stopreport import (
        Dropped,
        FileStop,
        HunkDetail,
        LintRefusal,
        ProbeStop,
        Problem,
    )


class InterruptedIn(Interrupted):
    """Ctrl-C during a port into `workspace` (a temporary one too): the CLI's line names it."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(str(workspace))
        self.workspace = workspace


@dataclass(frozen=True)
class PatchReport:
    """One patch in a step's report: its state line (`outcome`, what W's state keeps) and what
    the report reads off W beside it, kept apart because none of it is state: it is read
    again at every report (a person fixing W changes the markers). Made JSON by Report.json
    only."""

    outcome: Outcome
    files: tuple[FileStop, ...] = ()  # a stopped patch's file problems, as W shows them now
    probe: ProbeStop | None = None  # a stopped patch's probe file and why it stops
    dropped: tuple[Dropped, ...] = ()  # hunks already there upstream
    moves: tuple[Move, ...] = ()  # hunks carried into the file their code moved to
    carried_files: tuple[str, ...] = ()
    waiting_files: tuple[str, ...] = ()
    waiting_for: tuple[str, ...] = ()  # unfinished patches it `requires`


@dataclass
class Report:
    """One port step: per patch what happened, what is left to fix, what was written."""

    set: str
    to: str
    workspace: str
    state: str  # finished | stopped | planned | aborted
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

    def json(self) -> dict:
        return {
            "set": self.set,
            "to": self.to,
            "workspace": self.workspace,
            "state": self.state,
            "patches": [_outcome_json(o) for o in self.patches],
            "waiting": self.waiting,
            "fix": self.fix,
            "written": self.written,
            "changes": self.changes,
            "lint": [f.brief() for f in self.lint],
            "lint_refusals": [
                {"patch": r.patch, "field": r.field, "message": r.message}
                for r in self.lint_refusals
            ],
            "warnings": self.warnings,
            "notes": self.notes,
            "set_dir": self.set_dir,
            "left": self.left,
        }


def _outcome_json(r: PatchReport) -> dict:
    """One patch of `port --json` (docs/json.md): its state line, then what was read off W."""
    o = r.outcome
    return {
        "id": o.id,
        "outcome": o.outcome,
        "from_variant": None if o.variant == "-" else o.variant,
        "from_release": None if o.release == "-" else o.release,
        "base": None if o.base == "-" else o.base,
        "as_is": o.as_is,
        "hunks_kept": o.kept,
        "hunks_merged": o.merged,
        "hunks_moved": o.moved,
        "hunks_by_hand": o.hand,
        "moved": [
            {
                "file": m.old,
                "hunk": m.hunk,
                "scope": m.scope,
                "to": m.target,
                "line": m.line,
                "how": m.how,
                "conflicts": m.conflicts,
            }
            for m in r.moves
        ],
        "note": o.note,
        "problems": [_problem_json(f.problem, f.markers, f.details, f.fold) for f in r.files],
        "files_carried": list(r.carried_files),
        "files_waiting": list(r.waiting_files),
        "waiting_for": list(r.waiting_for),
        "probe": None if r.probe is None else {"file": r.probe.file, "problem": r.probe.problem},
        "hunks_dropped": [
            {"file": d.file, "hunk": d.hunk, "evidence": list(d.evidence)} for d in r.dropped
        ],
    }


def _problem_json(
    p: Problem, markers: Sequence[int], details: Sequence[HunkDetail], fold: Suggested | None
) -> dict:
    from sgpatch.port.stopreport import detail_json

    folded = None if fold is None else {"folds": list(fold.folds), "diff": list(fold.diff)}
    return {"file": p.file, "why": p.why, "hunks": list(p.hunks), "markers": list(markers),
            "details": [detail_json(d) for d in details], "fold": folded}  # fmt: skip


def port(
    manifest: SetManifest,
    to: Version,
    workspace: Path | None,
    *,
    offline: bool = False,
    without: Sequence[str] = (),
    finish: bool = True,
    known: Sequence[Version] | None = None,
    to_tree: Path | None = None,
) -> Report:
    """Carry the set to `to` in `workspace` (None: a new temporary folder); finish by itself
    when nothing needs a hand. The release is checked and fetched before W is made or cleared
    (sequencer.prepare); W's lock is held throughout. `known`: where variants may come from,
    when not the releases; `to_tree`: the tree a snapshot `to` came from
    (sgpatch.port.onto_tree)."""
    import tempfile

    from sgpatch.port import sequencer
    from sgpatch.port.workspace import KEPT_ASIDE, check_free, locked, make_top
    from sgpatch.releases import cache as releases

    with releases.cache_only(offline):
        known = sequencer.prepare(manifest, to, offline=offline, without=without, known=known)
        if workspace is None:
            prefix = f"sgpatch-port-{manifest.name}-{to}-"
            workspace, made = Path(tempfile.mkdtemp(prefix=prefix)), True
        else:
            check_free(workspace, edits=False)  # claim hashes the tree, under the lock
            made = make_top(workspace)
        try:
            with locked(workspace):
                ctx = sequencer.start(manifest, to, workspace, offline=offline,
                                      without=without, made=made, known=known,
                                      to_tree=to_tree)  # fmt: skip
                sequencer.run_todo(ctx)
                rep = _conclude(ctx, _state(ctx), finish)
                kept = ctx.ws.get_raw(KEPT_ASIDE)
                if kept:  # the person's files of the port finished in W before (claim)
                    rep.notes.insert(0, kept.strip())
                return rep
        except Interrupted:
            raise InterruptedIn(workspace) from None


def resume(workspace: Path) -> Report:
    """--continue: redo an interrupted step, take the fixes, carry what waited, finish (exit
    3 while anything is left). What it does first is the workspace's phase (docs/porting.md).
    The state is read once (port.state) and handed from step to step."""
    from sgpatch.port import sequencer
    from sgpatch.port import stopped as resume_mod
    from sgpatch.port.workspace import existing, locked
    from sgpatch.releases import cache as releases

    ws = existing(workspace)  # no lock file is made in a folder that is no workspace
    with locked(ws.top):
        ctx, state, kept = resume_mod.reopen(ws)
        notes = [f"{rel}: kept as you edited it after the step that was interrupted there"
                 for rel in kept]  # fmt: skip
        with releases.cache_only(ctx.offline):
            if state.phase == "finishing":
                return _finished_again(ctx, state, notes)
            if state.phase in ("stopped", "planned"):
                left = resume_mod.unresolved(ctx, state)
                if left:
                    rep = _report(ctx, state, "stopped")
                    rep.fix, rep.left, rep.notes = _left_fix(ctx, state, left), left, notes
                    return rep
                state, joined = resume_mod.take_fixed(ctx, state)
                notes += joined
            if state.phase == "start":
                sequencer.lay_out(ctx)  # writes the lists afresh: read back once
                state = _state(ctx, state)
            if state.queue.todo:  # the queue worked on in place
                state = state.carried(sequencer.run_todo(ctx, state.queue, state.listing))
            rep = _conclude(ctx, state, True)
    rep.notes = notes + rep.notes
    return rep


@dataclass(frozen=True)
class Shown:
    """`port --show FILE`: one stopped file as `fix` shows it (its line, each hunk's upstream
    change beside the patch's), and the same as records for --json."""

    file: str
    lines: tuple[str, ...]
    problems: tuple[tuple[str, FileStop], ...]  # (patch id, the file's problem as W shows it)


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


def shown_json(got: Shown) -> dict:
    return {"file": got.file,
            "problems": [{"patch": pid, **_problem_json(f.problem, f.markers, f.details, f.fold)}
                         for pid, f in got.problems]}  # fmt: skip


def _left_fix(ctx: Context, state: PortState, left: list[str]) -> list[str]:
    """The fix file at a --continue that finds files still unresolved, written again: what
    is left (with each still-stopped file's details), never a file already fixed."""
    from sgpatch.port.stopreport import LEFT_HEAD, fix_lines

    files = {x.split(":", 1)[0].removeprefix("sglang/") for x in left}
    fix = [LEFT_HEAD.format(top=ctx.ws.top), *(f"  {x}" for x in left)]
    fix += fix_lines(ctx.ws, state.queue.stopped, only=files)
    with ctx.ws.step("fix"):
        ctx.ws.put_lines("fix", fix)
    return fix


def abort(workspace: Path, force: bool = False):
    """--abort: W's lock held, hand edits refused (or kept aside with `force`), W removed."""
    from sgpatch.port import stopped as resume_mod
    from sgpatch.port.workspace import existing, locked

    ws = existing(workspace)
    with locked(ws.top):
        return resume_mod.abort(ws, force)


def _state(ctx: Context, state: PortState | None = None) -> PortState:
    """The state as the carry left it (port.state), the options kept when known."""
    from sgpatch.port.state import PortState

    ids = [s.id for s in ctx.manifest.patches]
    return PortState.load(ctx.ws, ids, state.options if state is not None else None)


def _conclude(ctx: Context, state: PortState, finish: bool) -> Report:
    from sgpatch.port import stopreport
    from sgpatch.port.finish import finish as write_set
    from sgpatch.port.stopreport import LintRefusal, lint_problem, probe_problem

    order = [s.id for s in ctx.manifest.patches]
    if state.queue.stopped or state.queue.todo:
        return _report(ctx, _stopped(ctx, state), "stopped")
    if not finish:
        with ctx.ws.step("planned"):
            ctx.ws.set_phase("planned")
        return _report(ctx, state, "planned")
    state, settled = _settle_probes(ctx, state)
    if settled.stops:
        problems = {pid: [probe_problem(why)] for pid, why in settled.stops.items()}
        rep = _report(ctx, _stopped(ctx, state.reopened(problems, order)), "stopped")
        rep.notes = list(settled.notes)
        return rep
    done = write_set(ctx, state)
    reopened: dict[str, list[Problem]] = {}  # a patch lint blames on a release: needs a hand
    rows: list[LintRefusal] = []  # what lint says about a whole release (no variant for it)
    for f in done.lint:
        if f.scope == "cell" and f.patch is not None:
            reopened.setdefault(f.patch, []).append(lint_problem(f.field, f.message))
        else:
            rows.append(LintRefusal(f.patch, f.field, f.message))
    if done.lint:
        state = _stopped(ctx, state.reopened(reopened, order))
    rep = _report(ctx, state, "stopped" if done.lint else "finished")
    rep.written, rep.changes, rep.lint, rep.warnings = (
        done.written, done.changes, done.lint, done.warnings,
    )  # fmt: skip
    rep.notes = list(settled.notes)
    if done.lint:  # the reopened patches' lines, then the release-wide refusals
        rep.lint_refusals += rows
        rep.fix = stopreport.with_lint_rows(list(state.fix), rows)
    return rep


def _finished_again(ctx: Context, state: PortState, notes: list[str]) -> Report:
    """--continue after a kill while the set was written: write what is staged."""
    from sgpatch.port.finish import write_staged

    written = write_staged(ctx, state.options)
    rep = _report(ctx, state, "finished")
    rep.written, rep.notes = written, notes
    rep.changes = ctx.ws.lines("finishing/changes")
    rep.warnings = ctx.ws.lines("finishing/warnings")
    return rep


def _stopped(ctx: Context, state: PortState) -> PortState:
    """A stopped port's last writes, one step: the lists (patches lint or a probe reopened
    among them), a probe file for every stopped patch, the fix list with them in it; then
    the workspace is whole again. Returns the state as written."""
    from sgpatch.port import probes

    with ctx.ws.step("stopped"):
        probes.keep_stopped(ctx, [o.id for o in state.queue.stopped])
        return state.save(ctx.ws, "stopped")


def _settle_probes(ctx: Context, state: PortState):
    """Every carried or fixed patch's probe checked on the release (port.probes); a patch
    whose new probe must go on a variant of its own gets a new patch file for V."""
    from sgpatch.port import probes

    with ctx.ws.step("probes"):  # whole or not at all: a kill checks them again
        q = state.queue
        pids = [o.id for o in q.done if o.outcome in ("carried", "fixed")]
        settled = probes.settle(ctx, pids, state.listing)
        flipped = False
        for o in q.done:
            d = probes.decided(ctx.ws, o.id) if o.id in pids else None
            if d is not None and d[0] == "variant" and o.as_is:
                o.as_is, flipped = False, True
        if flipped:
            state = state.save(ctx.ws)
    return state, settled


def _report(ctx: Context, state: PortState, kind: str) -> Report:
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


def walk(
    manifest: SetManifest,
    to: Version,
    workspace: Path | None,
    *,
    offline: bool = False,
    without: Sequence[str] = (),
) -> list[Report]:
    """--step: port to every release between the set's nearest release and `to`, in order;
    stop at the first that needs a hand (its workspace stays; the steps before are written)."""
    from sgpatch.patchset.manifest import load_manifest
    from sgpatch.port.source import known_releases

    known = known_releases(offline)
    path = steps(manifest, to, known)
    reports: list[Report] = []
    for version in path:
        manifest = load_manifest(manifest.path)  # each step sees the variants the last wrote
        rep = port(manifest, version, workspace, offline=offline, without=without)
        workspace = Path(rep.workspace)  # the next step goes into the same W
        reports.append(rep)
        if rep.exit_code != ExitCode.OK:
            break
    return reports


def steps(manifest: SetManifest, to: Version, known: Sequence[Version]) -> list[Version]:
    """The releases --step walks: from the set's release nearest to `to` (exclusive) to `to`."""
    covered = [v for v in known if manifest.sglang.contains(v, prereleases=True)]
    if not covered:
        raise bad_input(f"set {manifest.name} covers no known release ({manifest.sglang})")
    if to > max(covered):
        return [v for v in known if max(covered) < v < to] + [to]
    if to < min(covered):
        return [v for v in reversed(known) if to < v < min(covered)] + [to]
    return [to]


__all__ = [
    "InterruptedIn",
    "PatchReport",
    "Report",
    "abort",
    "capped",
    "insert_first_variant",
    "merge_file",
    "port",
    "resume",
    "set_set_spec",
    "set_variant_spec",
    "set_widened",
    "steps",
    "walk",
]
