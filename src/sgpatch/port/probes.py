"""Each patch's probe during a port: kept in the workspace, checked, replaced or asked for.

A patch's probe says "upstream has this change". When port changes a patch (merged or fixed
hunks), the probe may no longer match the change, and lint would refuse the set with no way to
edit the manifest during the port. So the probe of every stopped patch is a small file in the
workspace state, `W/.sgpatch-port/probes/ID.yaml` (what `probe:` holds in patchset.yaml), that
the person may edit during the stop. Before the set is written (`settle`), every carried or
fixed patch's probe is checked as import checks a suggestion (false on pristine V and before
the patch, true after it) and on the whole set (true with every patch applied):

- a probe that passes is kept; an edited one (or a new suggestion) is written to the set, on
  the patch when it is also right on every other release the patch covers (as lint checks it),
  else on the new variant for V only (a variant's own probe, docs/manifest.md);
- a probe that fails and that sgpatch suggested (`suggested: true`, no person edited it) is
  replaced by a new suggestion from the ported change, said in the notes;
- a probe that fails and that a person wrote, or a probe edited in W that fails: the patch
  stops on its probe (exit 3), with a suggestion written into the file to keep or edit.
"""

from __future__ import annotations

import fnmatch
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from sgpatch.errors import SgpatchError
from sgpatch.patchset.manifest import PatchSpec, load_probe_text, select_variant
from sgpatch.patchset.probe import ProbeNode, all_of, describe, entries, evaluate
from sgpatch.port import snapshots
from sgpatch.port import source as src
from sgpatch.port.statefiles import AFTER, BEFORE, STATE, probe_of
from sgpatch.port.workspace import Workspace, digest

if TYPE_CHECKING:
    from sgpatch.port.sequencer import Context, Outcome

Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True)
class Kept:
    """A patch's probe as the workspace holds it: the probe (None: no probe), whether it is a
    suggestion no person has edited, whether the person edited the file, and a parse error."""

    probe: ProbeNode | None
    suggested: bool
    edited: bool
    error: str = ""


def file_of(ws: Workspace, pid: str) -> Path:
    return ws.top / STATE / probe_of(pid)


def shown(ws: Workspace, pid: str) -> str:
    return f"{ws.top}/{STATE}/{probe_of(pid)}"


def render(pid: str, to: Version, probe: ProbeNode | None, suggested: bool, note: str) -> str:
    """The probe file: comments that say what it is and what --continue checks, then the probe
    as the manifest writes it (or no probe at all)."""
    from sgpatch.patchset.probe import probe_lines

    head = [
        f"# The probe of patch {pid} on sglang {to}: what `probe:` holds in patchset.yaml.",
        "# Edit it during the stop; --continue checks it: false on the pristine",
        f"# sglang {to} and before the patch, true with the patch and with the whole set applied,",
        "# and right on every other release the patch covers (else it is written for this",
        "# release's variant only). Delete every line but comments for no probe.",
    ]
    head += [f"# {ln}" for ln in note.splitlines()]
    body = probe_lines(probe, 0, suggested) if probe is not None else ["# (no probe)"]
    return "\n".join(head + body) + "\n"


def keep(
    ws: Workspace, pid: str, to: Version, probe: ProbeNode | None, suggested: bool, note: str = ""
) -> None:
    """Write the probe file and remember its digest (an edit is told by it)."""
    data = render(pid, to, probe, suggested, note).encode("utf-8")
    ws.put_editable(probe_of(pid), data)  # a person's edit of it is kept by --abort
    ws.put(probe_of(pid, "sha256"), digest(data) + "\n")


def kept(ws: Workspace, pid: str) -> Kept | None:
    """The probe file as it is now (None: port wrote none for this patch); one too big to read
    is a problem the stop reports (port.stopreport.probe_file)."""
    from sgpatch.port.stopreport import probe_file

    try:
        data = probe_file(ws, pid)
    except SgpatchError as e:
        return Kept(None, False, True, e.message)
    if data is None:
        return None
    edited = digest(data) != (ws.get(probe_of(pid, "sha256")) or "").strip()
    try:
        probe, suggested = load_probe_text(data.decode("utf-8"), file_of(ws, pid))
    except UnicodeDecodeError:
        return Kept(None, False, True, f"{shown(ws, pid)}: not UTF-8 text")
    except SgpatchError as e:
        return Kept(None, False, True, e.message)
    return Kept(probe, suggested and not edited, edited)


def carried(spec: PatchSpec, release: Version) -> tuple[ProbeNode | None, bool, bool]:
    """The probe port carries `spec` with (the source variant's own, else the patch's):
    (probe, suggested, on the variant)."""
    v = select_variant(spec, release)
    if v is not None and v.probe is not None:
        return v.probe, v.probe_suggested, True
    return spec.probe, spec.probe_suggested, False


def keep_stopped(ctx: Context, stopped: Sequence[str]) -> None:
    """A probe file for every stopped patch that has none yet (what the set has)."""
    for pid in stopped:
        if kept(ctx.ws, pid) is None:
            spec = ctx.manifest.patch(pid)
            probe, suggested, _own = carried(spec, _source_release(ctx, spec))
            keep(ctx.ws, pid, ctx.to, probe, suggested)


def _source_release(ctx: Context, spec: PatchSpec) -> Version:
    sorc = src.source_of(spec, ctx.to, ctx.known)
    return sorc.release if sorc is not None else ctx.to


# ---------------------------------------------------------------------------------------------
# the checks


@dataclass(frozen=True)
class States:
    """Readers of the four trees a patch's probe is checked on (package-relative paths), and
    the files the patch touches."""

    pristine: Reader
    before: Reader
    after: Reader
    whole: Reader
    files: frozenset[str]


def states(ctx: Context, pid: str, listing: snapshots.Listing) -> States:
    """Pristine V; W as it was before `pid` and after it (its files from its snapshots, other
    files as the last earlier patch left them, by `listing`); W with the whole set (as it is
    now)."""
    ws = ctx.ws
    order = [s.id for s in ctx.manifest.patches]
    mine = listing.files.get(pid, frozenset())
    pristine = src.pristine(ctx.to)
    earlier = order[: order.index(pid)]

    def before(rel: str) -> bytes | None:
        if rel in mine:
            return snapshots.one(ws, BEFORE, pid, rel)
        writers = listing.writers_of(earlier, rel)
        return snapshots.one(ws, AFTER, writers[-1], rel) if writers else pristine(rel)

    def after(rel: str) -> bytes | None:
        return snapshots.one(ws, AFTER, pid, rel) if rel in mine else before(rel)

    return States(pristine, before, after, ws.read_pkg, mine)


def _names(node: ProbeNode, ctx: Context) -> list[str]:
    """The files a probe reads (as matrix plans a minimal tree: a symbol probe's folder too,
    for its base classes), a glob expanded over the release's and W's files."""
    from sgpatch.patchset.probe import files as probe_files

    out: set[str] = set()
    everything: list[str] | None = None
    for f in probe_files(node):
        if not any(c in f for c in "*?["):
            out.add(f)
            continue
        if everything is None:
            pkg = ctx.ws.root
            everything = sorted(src.release_names(ctx.to) | {
                p.relative_to(pkg).as_posix() for p in pkg.rglob("*") if p.is_file()
            })  # fmt: skip
        out |= {n for n in everything if fnmatch.fnmatch(n, f)}
    return sorted(out)


def value(node: ProbeNode, read: Reader, names: Sequence[str]) -> bool:
    from sgpatch.ops.suggest import write_tree

    with tempfile.TemporaryDirectory(prefix="sgpatch-probe-") as tmp:
        return evaluate(node, write_tree(Path(tmp), read, names)).value


def problem_on(node: ProbeNode, st: States, names: Sequence[str], to: Version) -> str:
    """ "" when the probe is right for the ported patch on V, else what is wrong."""
    if value(node, st.pristine, names):
        return f"true on the pristine sglang {to} (it would call the patch upstream)"
    if value(node, st.before, names):
        return "true before the patch (an earlier patch makes it true)"
    if not value(node, st.after, names):
        return "false with the patch applied (it does not recognise the ported change)"
    if not value(node, st.whole, names):
        return "false with the whole set applied (a later patch takes its lines away)"
    return ""


def suggestion(ctx: Context, pid: str, st: States) -> tuple[ProbeNode | None, str]:
    """A probe from the ported change (the patch's files before and after it, as import
    makes one), its entries that a later patch takes away dropped; or None and why."""
    from sgpatch.ops import suggest

    rels = sorted(st.files)
    before = {r: st.before(r) for r in rels}
    after = {r: st.after(r) for r in rels}
    sug = suggest.suggest(rels, st.pristine, before, after)
    if sug.probe is None:
        return None, sug.why
    probe = all_of([n for n in entries(sug.probe) if value(n, st.whole, _names(n, ctx))])
    if probe is None:
        return None, "every suggested line is gone again once the later patches are applied"
    why = problem_on(probe, st, _names(probe, ctx), ctx.to)
    return (None, f"the suggested probe is {why}") if why else (probe, "")


def elsewhere(ctx: Context, spec: PatchSpec, probe: ProbeNode | None) -> list[str]:
    """Where the probe, as the patch's own, would be wrong on another release the patch covers
    (lint's rule there: false on the pristine release, true with the set applied): one line
    per release. Releases whose variant has a probe of its own are not asked."""
    from sgpatch.ops import matrix
    from sgpatch.patchset import manifest_text
    from sgpatch.patchset.manifest import load_manifest
    from sgpatch.patchset.probe import probe_lines

    m = ctx.manifest
    others = []
    for v in ctx.known:
        var = select_variant(spec, v)
        covered = var is not None and var.patch is not None and var.probe is None
        if v != ctx.to and m.sglang.contains(v, True) and covered:
            others.append(v)
    if not others or probe is None:
        return []
    text = m.path.read_text(encoding="utf-8")
    col = manifest_text.patch_key_indent(text, m.path, spec.id)
    lines = [" " * col + "probe:", *probe_lines(probe, col + 2, False)]
    text = manifest_text.replace_key(text, m.path, spec.id, "probe", lines)
    with tempfile.TemporaryDirectory(prefix="sgpatch-port-probe-") as tmp:
        d = Path(tmp) / m.base_dir.name
        shutil.copytree(m.base_dir, d, symlinks=True)
        (d / m.path.name).write_text(text, encoding="utf-8")
        rows = matrix.compute(load_manifest(d / m.path.name), others, workers=1)
    out = []
    for row in rows:
        cell = row.cells.get(spec.id)
        if row.error or cell is None:
            out.append(f"{row.release}: not checked ({row.error or 'no cell'})")
        elif cell.probe:
            out.append(f"{row.release}: true on the pristine release")
        elif cell.probe_after is False:
            out.append(f"{row.release}: false with the set applied")
    return out


# ---------------------------------------------------------------------------------------------
# settling every patch's probe before the set is written


@dataclass(frozen=True)
class Settled:
    """What `settle` found: notes for the report, and the patches that stop on their probe
    (id -> why)."""

    notes: tuple[str, ...]
    stops: dict[str, str]


def settle(ctx: Context, pids: Sequence[str], listing: snapshots.Listing) -> Settled:
    """Check the probe of each carried or fixed patch `pids` on V (their files by `listing`);
    decide what the set gets (`decided/ID`: patch | variant | none), or stop the patch on its
    probe."""
    notes: list[str] = []
    stops: dict[str, str] = {}
    for pid in pids:
        spec = ctx.manifest.patch(pid)
        note, stop = _settle_one(ctx, spec, listing)
        if note:
            notes.append(note)
        if stop:
            stops[pid] = stop
    return Settled(tuple(notes), stops)


def _settle_one(ctx: Context, spec: PatchSpec, listing: snapshots.Listing) -> tuple[str, str]:
    """(a note, why the patch stops on its probe): both "" when the probe stays as it is.
    An edited probe file is the person's word: checked, taken or refused. Otherwise the set's
    probe is kept while it is right; else a suggestion port wrote (and nobody edited) is taken
    while it is right; else a new one is suggested: taken by itself when the set's probe was a
    suggestion too, offered in the file (a stop) when a person wrote it."""
    ws, pid = ctx.ws, spec.id
    old, old_suggested, _own = carried(spec, _source_release(ctx, spec))
    k = kept(ws, pid)
    ws.put(probe_of(pid, "decided"), None)
    if k is not None and k.error:
        return "", f"{k.error}: fix the file"
    st = states(ctx, pid, listing)
    if k is not None and k.edited:
        if k.probe is None:
            return _decide(ctx, spec, None, False) if old is not None else ("", "")
        why = problem_on(k.probe, st, _names(k.probe, ctx), ctx.to)
        if not why:
            return _decide(ctx, spec, k.probe, False)
        new, none_why = suggestion(ctx, pid, st)
        hint = f"; a suggestion: {describe(new)}" if new is not None else f" ({none_why})"
        return "", f"the probe in {shown(ws, pid)} is {why}{hint}"
    if old is None:
        return "", ""
    why = problem_on(old, st, _names(old, ctx), ctx.to)
    if not why:
        return "", ""
    mine = k.probe if k is not None else None
    if mine is not None and mine != old and not problem_on(mine, st, _names(mine, ctx), ctx.to):
        return _decide(ctx, spec, mine, bool(k and k.suggested))  # port's suggestion, kept
    new, none_why = suggestion(ctx, pid, st)
    if new is None:
        keep(ws, pid, ctx.to, old, old_suggested, f"no new probe could be suggested: {none_why}")
        return "", (f"the probe is {why}, and no new one can be suggested ({none_why}): write "
                    f"one in {shown(ws, pid)}, or delete its lines for no probe")  # fmt: skip
    if old_suggested:  # sgpatch made the old one: a new suggestion may take its place
        note, stop = _decide(ctx, spec, new, True)
        said = (f"{pid}: the probe sgpatch suggested was {why}; replaced by a new suggestion "
                f"({describe(new)})")  # fmt: skip
        return "; ".join(x for x in (said, note) if x), stop
    keep(ws, pid, ctx.to, new, True, f"suggested by sgpatch port: the set's probe was {why}")
    return "", (f"the probe is {why}: a new one is suggested in {shown(ws, pid)}; keep it or "
                "edit it, then --continue")  # fmt: skip


def _decide(
    ctx: Context, spec: PatchSpec, probe: ProbeNode | None, suggested: bool
) -> tuple[str, str]:
    """Where a new probe goes: the patch, when it is right on every other release the patch
    covers; else the variant for V only."""
    wrong = elsewhere(ctx, spec, probe) if probe is not None else []
    where = "variant" if wrong or _own_variant(ctx, spec) else "patch"
    ctx.ws.put_lines(probe_of(spec.id, "decided"), [where, "suggested" if suggested else "edited"])
    keep(ctx.ws, spec.id, ctx.to, probe, suggested, "")
    if where == "variant" and wrong:
        return (f"{spec.id}: the new probe is not right on {'; '.join(wrong)}: written on the "
                f"variant for {ctx.to} only"), ""  # fmt: skip
    return "", ""


def _own_variant(ctx: Context, spec: PatchSpec) -> bool:
    return carried(spec, _source_release(ctx, spec))[2]


def decided(ws: Workspace, pid: str) -> tuple[str, ProbeNode | None, bool] | None:
    """What `settle` decided for the set: (patch | variant, the probe or None, suggested)."""
    lines = ws.lines(probe_of(pid, "decided"))
    if not lines:
        return None
    k = kept(ws, pid)
    if k is None or k.error:
        raise ws.damaged(probe_of(pid), "the decided probe is gone")
    return lines[0], k.probe, lines[1:2] == ["suggested"]


def manifest_edits(ctx: Context, text: str, changes: list[str], done: Sequence[Outcome]) -> str:
    """The manifest with each decided probe written: on the patch, or on its new `==V`
    variant (the first: every patch whose probe goes on a variant has one, see settle).
    `done`: the settled patches (port.state's queue)."""
    from sgpatch.patchset import manifest_text
    from sgpatch.patchset.probe import probe_lines

    new_variant = {o.id for o in done if o.outcome in ("carried", "fixed") and not o.as_is}
    path = ctx.manifest.path
    for spec in ctx.manifest.patches:
        d = decided(ctx.ws, spec.id)
        if d is None:
            continue
        where, probe, suggested = d
        if where == "variant" and spec.id in new_variant:
            lines = probe_lines(probe, 0, suggested) if probe is not None else []
            if probe is not None:
                text = manifest_text.set_variant_probe(text, path, spec.id, 0, lines)
                changes.append(f"{spec.id}: probe for {ctx.to} (on its variant): {describe(probe)}")
            continue
        col = manifest_text.patch_key_indent(text, path, spec.id)
        new = [" " * col + "probe:", *probe_lines(probe, col + 2, suggested)] if probe else []
        text = manifest_text.replace_key(text, path, spec.id, "probe", new)
        changes.append(f"{spec.id}: probe: {describe(probe) if probe else 'none'}")
    return text
