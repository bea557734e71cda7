"""The port driver: `port` (plan -> workspace -> finish when nothing needs a hand) and
`walk` (--step: one port per release between the set's nearest release and the target).

A port is a rebase (docs/porting.md): the sequencer claims W and carries every patch hunk by
hunk (sequencer, carry); `conclude` ends a step the same way for a new port and for
--continue (port.resume): stopped (the fix list, a probe file per stopped patch), planned
(--no-finish), or the set written (finish) once every probe is settled and lint passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from sgpatch.errors import ExitCode, bad_input
from sgpatch.interrupts import Interrupted
from sgpatch.patchset.manifest import SetManifest
from sgpatch.port.report import Report, build

if TYPE_CHECKING:
    from sgpatch.port.sequencer import Context
    from sgpatch.port.state import PortState
    from sgpatch.port.stopreport import LintRefusal, Problem


class InterruptedIn(Interrupted):
    """Ctrl-C during a port into `workspace` (a temporary one too): the CLI's line names it."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(str(workspace))
        self.workspace = workspace


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
    from sgpatch.port.statefiles import KEPT_ASIDE
    from sgpatch.port.workspace import check_free, locked, make_top
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
                rep = conclude(ctx, load_state(ctx), finish)
                kept = ctx.ws.get_raw(KEPT_ASIDE)
                if kept:  # the person's files of the port finished in W before (claim)
                    rep.notes.insert(0, kept.strip())
                return rep
        except Interrupted:
            raise InterruptedIn(workspace) from None


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


def load_state(ctx: Context, state: PortState | None = None) -> PortState:
    """The state as the carry left it (port.state), the options kept when known."""
    from sgpatch.port.state import PortState

    ids = [s.id for s in ctx.manifest.patches]
    return PortState.load(ctx.ws, ids, state.options if state is not None else None)


def conclude(ctx: Context, state: PortState, finish: bool) -> Report:
    from sgpatch.port import stopreport
    from sgpatch.port.finish import finish as write_set
    from sgpatch.port.stopreport import LintRefusal, lint_problem, probe_problem

    order = [s.id for s in ctx.manifest.patches]
    if state.queue.stopped or state.queue.todo:
        return build(ctx, _stopped(ctx, state), "stopped")
    if not finish:
        with ctx.ws.step("planned"):
            ctx.ws.set_phase("planned")
        return build(ctx, state, "planned")
    state, settled = _settle_probes(ctx, state)
    if settled.stops:
        problems = {pid: [probe_problem(why)] for pid, why in settled.stops.items()}
        rep = build(ctx, _stopped(ctx, state.reopened(problems, order)), "stopped")
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
    rep = build(ctx, state, "stopped" if done.lint else "finished")
    rep.written, rep.changes, rep.lint, rep.warnings = (
        done.written, done.changes, done.lint, done.warnings,
    )  # fmt: skip
    rep.notes = list(settled.notes)
    if done.lint:  # the reopened patches' lines, then the release-wide refusals
        rep.lint_refusals += rows
        rep.fix = stopreport.with_lint_rows(list(state.fix), rows)
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
        own = {pid for pid in pids if (d := probes.decided(ctx.ws, pid)) and d[0] == "variant"}
        if any(o.as_is for o in q.done if o.id in own):  # no longer served as it was
            done = [replace(o, as_is=False) if o.id in own else o for o in q.done]
            state = replace(state, queue=replace(q, done=done)).save(ctx.ws)
    return state, settled
