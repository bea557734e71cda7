"""Carry a patch set to another SGLang release, like `git rebase` (docs/porting.md).

    port(...)    plan -> workspace: every patch carried hunk by hunk into W (sequencer, carry)
    resume(...)  --continue: fixed files become the stopped patches' diffs, the rest is carried,
                 then the set is written (finish)
    abort(...)   --abort: W removed, nothing else touched
    walk(...)    --step: one port per release between the set's nearest release and the target

Modules: source (releases, variants, merge bases), carry (per-hunk carry), merge (git
merge-file and the checks on a merged file), workspace (W, its state files, its lock), wsfiles
(W's files, never through a symlink), undo (a step all or nothing), sequencer
(todo/done/needs-a-hand), stopped (--continue, --abort), finish (manifest edits, lint), edits
(text edits, ranges).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, bad_input
from sgpatch.interrupts import Interrupted
from sgpatch.patchset.manifest import SetManifest
from sgpatch.patchset.manifest_text import insert_first_variant, set_set_spec, set_variant_spec
from sgpatch.port.edits import capped, set_widened
from sgpatch.port.merge import merge_file


class InterruptedIn(Interrupted):
    """Ctrl-C during a port into `workspace` (a temporary one too): the CLI's line names it."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(str(workspace))
        self.workspace = workspace


@dataclass
class Report:
    """One port step: per patch what happened, what is left to fix, what was written."""

    set: str
    to: str
    workspace: str
    state: str  # finished | stopped | planned | aborted
    patches: list = field(default_factory=list)  # sequencer.Outcome
    waiting: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # absolute paths
    changes: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # hand edits --continue took, and where
    set_dir: str = ""  # the real path of the set's folder (where --continue writes)

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
            "lint": self.lint,
            "warnings": self.warnings,
            "notes": self.notes,
            "set_dir": self.set_dir,
        }


def _outcome_json(o) -> dict:
    return {
        "id": o.id,
        "outcome": o.outcome,
        "from_variant": None if o.variant == "-" else o.variant,
        "from_release": None if o.release == "-" else o.release,
        "base": None if o.base == "-" else o.base,
        "as_is": o.as_is,
        "hunks_kept": o.kept,
        "hunks_merged": o.merged,
        "note": o.note,
        "problems": o.problems,
        "files_carried": o.carried_files,
        "files_waiting": o.waiting_files,
        "waiting_for": o.waiting_for,
    }


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
    from sgpatch.port.workspace import check_free, locked, make_top
    from sgpatch.releases import cache as releases

    with releases.cache_only(offline):
        known = sequencer.prepare(manifest, to, offline=offline, without=without, known=known)
        if workspace is None:
            prefix = f"sgpatch-port-{manifest.name}-{to}-"
            workspace, made = Path(tempfile.mkdtemp(prefix=prefix)), True
        else:
            check_free(workspace)
            made = make_top(workspace)
        try:
            with locked(workspace):
                ctx = sequencer.start(manifest, to, workspace, offline=offline,
                                      without=without, made=made, known=known,
                                      to_tree=to_tree)  # fmt: skip
                sequencer.run_todo(ctx)
                return _conclude(ctx, finish)
        except Interrupted:
            raise InterruptedIn(workspace) from None


def resume(workspace: Path) -> Report:
    """--continue: redo an interrupted step, take the fixes, carry what waited, finish (exit
    3 while anything is left). What it does first is the workspace's phase (docs/porting.md)."""
    from sgpatch.port import sequencer
    from sgpatch.port import stopped as resume_mod
    from sgpatch.port.workspace import existing, locked
    from sgpatch.releases import cache as releases

    existing(workspace)  # no lock file is made in a folder that is no workspace
    with locked(workspace):
        ctx, kept = resume_mod.reopen(workspace)
        notes = [f"{rel}: kept as you edited it after the step that was interrupted there"
                 for rel in kept]  # fmt: skip
        with releases.cache_only(ctx.offline):
            phase = ctx.ws.phase
            if phase == "finishing":
                return _finished_again(ctx, notes)
            if phase == "start":
                sequencer.lay_out(ctx)
            elif phase in ("stopped", "planned"):
                left = resume_mod.unresolved(ctx)
                if left:
                    rep = _report(ctx, "stopped")
                    rep.fix, rep.notes = left, notes
                    return rep
                notes += resume_mod.take_fixed(ctx)
            sequencer.run_todo(ctx)
            rep = _conclude(ctx, True)
    rep.notes = notes + rep.notes
    return rep


def abort(workspace: Path, force: bool = False):
    """--abort: W's lock held, hand edits refused (or kept aside with `force`), W removed."""
    from sgpatch.port import stopped as resume_mod
    from sgpatch.port.workspace import existing, locked

    existing(workspace)
    with locked(workspace):
        return resume_mod.abort(workspace, force)


def _conclude(ctx, finish: bool) -> Report:
    from sgpatch.port.finish import finish as write_set

    ws = ctx.ws
    if ws.lines("needs-a-hand") or ws.lines("todo"):
        with ws.step("stopped"):
            ws.set_phase("stopped")
        return _report(ctx, "stopped")
    if not finish:
        with ws.step("planned"):
            ws.set_phase("planned")
        return _report(ctx, "planned")
    done = write_set(ctx)
    if done.lint:
        from sgpatch.port.sequencer import reopen_for_lint

        reopen_for_lint(ws, done.by_patch, [s.id for s in ctx.manifest.patches])
    rep = _report(ctx, "stopped" if done.lint else "finished")
    rep.written, rep.changes, rep.lint, rep.warnings = (
        done.written, done.changes, done.lint, done.warnings,
    )  # fmt: skip
    if done.lint:  # the reopened patches' lines, and what lint says about no patch in particular
        rep.fix = ctx.ws.lines("fix") + [f"lint: {m}" for m in done.lint if m.startswith("- ")]
    return rep


def _finished_again(ctx, notes: list[str]) -> Report:
    """--continue after a kill while the set was written: write what is staged."""
    from sgpatch.port.finish import write_staged

    written = write_staged(ctx)
    rep = _report(ctx, "finished")
    rep.written, rep.notes = written, notes
    rep.changes = ctx.ws.lines("finishing/changes")
    rep.warnings = ctx.ws.lines("finishing/warnings")
    return rep


def _report(ctx, state: str) -> Report:
    from sgpatch.port import snapshots
    from sgpatch.port.sequencer import Outcome, Queue

    ws, q = ctx.ws, Queue.load(ctx.ws)
    waiting = [q.partial.get(pid) or Outcome(pid, "waiting") for pid in q.todo]
    for o in waiting:
        o.outcome = "waiting"
    order = {s.id: i for i, s in enumerate(ctx.manifest.patches)}
    outs = sorted(q.done + q.stopped + waiting, key=lambda o: order.get(o.id, 0))
    unfinished = set(q.todo) | {o.id for o in q.stopped}
    for o in outs:
        fixing = set(ws.lines(f"fixing/{o.id}"))
        o.carried_files = sorted(snapshots.carried(ws, o.id))
        o.waiting_files = sorted(snapshots.unfinished(ws, o.id) - fixing)
        if o.outcome == "waiting":
            o.waiting_for = [r for r in ctx.manifest.patch(o.id).requires if r in unfinished]
    return Report(ctx.manifest.name, str(ctx.to), str(ws.top), state, outs, q.todo,
                  ws.lines("fix"), set_dir=str(ctx.manifest.base_dir))  # fmt: skip


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
