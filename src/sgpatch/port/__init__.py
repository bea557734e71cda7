"""Carry a patch set to another SGLang release, like `git rebase` (docs/porting.md).

    port(...)    plan -> workspace: every patch carried hunk by hunk into W (sequencer, carry)
    resume(...)  --continue: fixed files become the stopped patches' diffs, the rest is carried,
                 then the set is written (finish)
    abort(...)   --abort: W removed, nothing else touched
    walk(...)    --step: one port per release between the set's nearest release and the target

Modules: source (releases, variants, merge bases), carry (per-hunk carry), merge (git
merge-file and the checks on a merged file), workspace (W and its state files), sequencer
(todo/done/needs-a-hand), stopped (--continue, --abort), finish (manifest edits, lint), edits
(text edits, ranges).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, bad_input
from sgpatch.patchset.manifest import SetManifest
from sgpatch.patchset.manifest_text import insert_first_variant, set_set_spec, set_variant_spec
from sgpatch.port.edits import capped, set_widened
from sgpatch.port.merge import merge_file


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
    written: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # hand edits --continue took, and where

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
    workspace: Path,
    *,
    offline: bool = False,
    without: Sequence[str] = (),
    finish: bool = True,
    known: Sequence[Version] | None = None,
) -> Report:
    """Carry the set to `to` in `workspace`; finish by itself when nothing needs a hand.
    `known`: where variants may come from, when not the releases (sgpatch.port.onto_tree)."""
    from sgpatch.port import sequencer
    from sgpatch.releases import cache as releases

    with releases.cache_only(offline):
        ctx = sequencer.start(
            manifest, to, workspace, offline=offline, without=without, known=known
        )
        sequencer.run_todo(ctx)
        return _conclude(ctx, finish)


def resume(workspace: Path) -> Report:
    """--continue: take the fixes, carry what waited, finish (exit 3 while anything is left)."""
    from sgpatch.port import sequencer
    from sgpatch.port import stopped as resume_mod
    from sgpatch.releases import cache as releases

    ctx = resume_mod.reopen(workspace)
    with releases.cache_only(ctx.offline):
        left = resume_mod.unresolved(ctx)
        if left:
            rep = _report(ctx, "stopped")
            rep.fix = left
            return rep
        notes = resume_mod.take_fixed(ctx)
        sequencer.run_todo(ctx)
        rep = _conclude(ctx, True)
    rep.notes = notes + rep.notes
    return rep


def abort(workspace: Path) -> list[str]:
    from sgpatch.port import stopped as resume_mod

    return resume_mod.abort(workspace)


def _conclude(ctx, finish: bool) -> Report:
    from sgpatch.port.finish import finish as write_set
    from sgpatch.port.workspace import running

    if ctx.ws.lines("needs-a-hand") or ctx.ws.lines("todo"):
        running(ctx.ws, None)
        return _report(ctx, "stopped")
    if not finish:
        running(ctx.ws, None)
        return _report(ctx, "planned")
    done = write_set(ctx)
    if done.by_patch:
        from sgpatch.port.sequencer import reopen_for_lint

        reopen_for_lint(ctx.ws, done.by_patch, [s.id for s in ctx.manifest.patches])
    rep = _report(ctx, "stopped" if done.lint else "finished")
    rep.written, rep.changes, rep.lint, rep.warnings = (
        done.written, done.changes, done.lint, done.warnings,
    )  # fmt: skip
    if done.lint:  # the reopened patches' lines, and what lint says about no patch in particular
        rep.fix = ctx.ws.lines("fix") + [f"lint: {m}" for m in done.lint if m.startswith("- ")]
    running(ctx.ws, None)
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
                  ws.lines("fix"))  # fmt: skip


def walk(
    manifest: SetManifest,
    to: Version,
    workspace: Path,
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
