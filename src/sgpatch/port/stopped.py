"""--continue and --abort: pick a stopped port up again from its workspace.

`reopen` checks that W is a live workspace and that the set has not changed since the port
began; `unresolved` lists what still has markers or fails the Python checks; `take_fixed`
turns each stopped patch's files, as the person left them, into its diff (a hand edit of a
file no patch owns joins the first stopped patch: a change moved to another file); `abort`
removes what sgpatch wrote.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from sgpatch.errors import ExitCode, SgpatchError, bad_input, unsafe
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import snapshots
from sgpatch.port import source as src
from sgpatch.port.merge import marker_lines, merge_file, python_problem
from sgpatch.port.sequencer import FORMAT, Context, Queue, stopped_of, write_patch
from sgpatch.port.workspace import (
    PKG,
    Workspace,
    digest,
    existing,
    hand_edits,
    keep_aside,
    left_in,
    remove,
    shown,
)
from sgpatch.state.folder import TMP_SUFFIX


def reopen(top: Path) -> tuple[Context, list[str]]:
    """The live workspace's context (under its lock); an interrupted step is put back first
    (undo.recover: returns the tree files left as the person edited them since). The set
    must be the one the port began on, unchanged (`bound_set`)."""
    ws = existing(top)
    kept = ws.recover()
    if (ws.get("format") or "").strip() != FORMAT:
        raise bad_input(
            f"--workspace {top}: made by an older sgpatch (its state cannot be continued); "
            f"{ws.abort_hint()}"
        )
    if not ws.is_live():
        raise bad_input(f"--workspace {top}: that port already finished; nothing to continue")
    path = bound_set(ws)
    try:
        to = Version((ws.get("onto") or "").strip())
    except InvalidVersion:
        raise ws.damaged("onto", "not a version") from None
    offline = (ws.get("offline") or "").strip() == "yes"
    try:
        known = sorted(Version(v) for v in ws.lines("known"))
    except InvalidVersion:
        raise ws.damaged("known", "not a list of versions") from None
    return Context(load_manifest(path), to, ws, known, offline=offline), kept


def bound_set(ws: Workspace) -> Path:
    """The manifest --continue may write: the one the port began on. The state names it by
    its real path, the real path of its folder, its name and its digest; anything else (a
    path that is not real, files that disagree, another set, edits since; while the set is
    being written, the digest of what is written is the other one allowed) is refused, exit
    4, one line."""
    import os

    path, folder = Path((ws.get("set") or "").strip()), (ws.get("set-dir") or "").strip()
    real = path.is_absolute() and str(path.parent) == folder
    real = real and os.path.realpath(path) == str(path) and os.path.realpath(folder) == folder

    def refused(why: str) -> SgpatchError:
        return unsafe(f"--workspace {ws.top}: {why}; {ws.abort_hint()}")

    if not real:
        raise refused(f"its state names the set {path} in {folder or '?'}, not one real path")
    if not path.is_file():
        raise refused(f"{path}, the set the port began on, is gone")
    allowed = {(ws.get("set-sha256") or "").strip()}
    if ws.phase == "finishing":
        allowed.add((ws.get("finishing/sha256") or "").strip())
    if digest(path.read_bytes()) not in allowed:
        raise refused(f"{path}: the set changed since the port began")
    name = (ws.get("set-name") or "").strip()
    if load_manifest(path).name != name:
        raise refused(f"{path} is not the set {name} the port began on")
    return path


def unresolved(ctx: Context) -> list[str]:
    """Files --continue would take that still have markers, fail the Python checks, or are
    binary: those stopped patches wrote last, and the hand edits that would join one."""
    ws, out = ctx.ws, []
    stopped = stopped_of(ws)
    writers = _last_writers(ctx, stopped)
    label = f"sglang {ctx.to}"
    for o in stopped:
        for rel in sorted(f for f, w in writers.items() if w == o.id):
            before = snapshots.get(ws, "before", o.id, [rel])[rel]
            out += _problems(rel, ws.read_pkg(rel), before, label)
    for rel in _edited(ctx, stopped, writers):
        out += _problems(rel, ws.read_pkg(rel), _wrote(ctx, rel), label)
    return out


def _problems(rel: str, data: bytes | None, before: bytes | None, label: str) -> list[str]:
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return [f"{PKG}/{rel}: a binary file (a patch holds text only): remove it"]
    marks = marker_lines(data)
    if marks:
        return [f"{PKG}/{rel}: conflict markers at lines {', '.join(map(str, marks))}"]
    why = python_problem(rel, data, before, label)
    return [f"{PKG}/{rel}: {why}"] if why else []


def _edited(ctx: Context, stopped, writers: dict[str, str]) -> list[str]:
    """Files edited by hand that no stopped patch wrote last: they join the first one."""
    ids = {o.id for o in stopped}
    return [r for r in changed_by_hand(ctx.ws) if writers.get(r) not in ids]


def _wrote(ctx: Context, rel: str, writers: list[str] | None = None) -> bytes | None:
    """What sgpatch last left in `rel`: its last writer's after, else the release's file."""
    if writers is None:
        writers = snapshots.writers_of(ctx.ws, [s.id for s in ctx.manifest.patches], rel)
    if writers:
        return snapshots.one(ctx.ws, "after", writers[-1], rel)
    return src.pristine(ctx.to)(rel)


def take_fixed(ctx: Context) -> list[str]:
    """Each stopped patch becomes `fixed`: W's bytes are its change to the files it wrote last
    (the fixes and any other edit there); a hand edit of a file no stopped patch wrote last
    joins the first stopped patch (`_join`). A patch with files still waiting goes back on the
    todo list; a finished one gets its new patch file. Returns a note per joined edit."""
    ws = ctx.ws
    q = Queue.load(ws)
    order = [s.id for s in ctx.manifest.patches]
    joins = _joins(ctx, q, order)  # may refuse: nothing is written before this
    with ws.step("take the fixes"):  # W's files are only read: a kill redoes all of it
        notes = _take_fixes(ctx, q, joins, order)
    return notes


def _take_fixes(ctx: Context, q: Queue, joins: dict, order: list[str]) -> list[str]:
    ws = ctx.ws
    notes = _take_edits(ctx, q, joins)
    writers = _last_writers(ctx, q.stopped)  # the same after each patch below: fixing -> carried
    for o in q.stopped:
        now = {f: ws.read_pkg(f) for f in sorted(f for f, w in writers.items() if w == o.id)}
        snapshots.put(ws, "after", o.id, now)
        _remember(ws, now)
        snapshots.add_carried(ws, o.id, ws.lines(f"fixing/{o.id}"))
        ws.put_lines(f"fixing/{o.id}", [])
        o.outcome, o.as_is, o.problems = "fixed", False, []
        if snapshots.unfinished(ws, o.id):
            q.partial[o.id] = o
            q.todo.append(o.id)
        else:
            write_patch(ctx, o.id)
            q.done.append(o)
    q.stopped = []
    q.sort(order)
    q.save(ws)
    ws.set_phase("carry")
    return notes


def _joins(ctx: Context, q: Queue, order: list[str]) -> dict:
    """Each hand edit of a file no stopped patch wrote last, worked out as it would join a
    patch, before anything is recorded (a refusal changes nothing): {file: (patch, what to
    record, later patches)}. With a patch stopped it joins the first one (`_join`); with
    none (after --no-finish) the one patch that changes the file takes it (`_owner_join`)."""
    edited = _edited(ctx, q.stopped, _last_writers(ctx, q.stopped))
    if not q.stopped:
        return {rel: _owner_join(ctx, rel, order) for rel in edited}
    first = q.stopped[0].id
    return {rel: (first, *_join(ctx, first, rel, order)) for rel in edited}


def _owner_join(ctx: Context, rel: str, order: list[str]):
    """A hand edit made with no patch stopped: the patch that changes `rel` takes it (its
    after is W's file now). A file no patch changes, or one several change (which of them
    the edit belongs to is the person's to say), is refused naming it and them."""
    writers = snapshots.writers_of(ctx.ws, order, rel)
    if len(writers) != 1:
        why = (
            f"{len(writers)} patches change it ({', '.join(writers)}), and which one the edit "
            "belongs to is yours to say"
            if writers
            else "no patch of the set changes it (a port takes edits only in files its patches "
            "change)"
        )
        raise SgpatchError(
            f"{PKG}/{rel} was edited, but {why}; undo the edit, or drop the port: "
            f"{ctx.ws.abort_hint()}",
            ExitCode.CONFLICT,
        )
    return writers[0], [("after", writers[0], ctx.ws.read_pkg(rel))], []


def _take_edits(ctx: Context, q: Queue, joins: dict) -> list[str]:
    """Record the joins: each edit becomes its patch's (a stopped one's, or a finished one's,
    whose patch file is written again), later patches' files keep their own change on top."""
    ws = ctx.ws
    stopped = {o.id for o in q.stopped}
    moved: set[str] = set()
    for rel, (pid, puts, later) in joins.items():
        for side, who, data in puts:
            snapshots.put(ws, side, who, {rel: data})
        ws.put_lines(f"files/{pid}", sorted(snapshots.files(ws, pid) | {rel}))
        if pid in stopped:
            ws.put_lines(f"fixing/{pid}", sorted(set(ws.lines(f"fixing/{pid}")) | {rel}))
        else:
            moved.add(pid)
        _remember(ws, {rel: ws.read_pkg(rel)})
        moved |= set(later)
    for o in [*q.done, *q.partial.values()]:
        if o.id in moved:  # its file's history moved under the edit: a new patch file
            o.as_is = False
            if o in q.done:
                write_patch(ctx, o.id)
    return [f"{PKG}/{rel}: the edit there joins {pid}" for rel, (pid, _p, _l) in joins.items()]


def _last_writers(ctx: Context, stopped) -> dict[str, str]:
    fixing = {o.id: set(ctx.ws.lines(f"fixing/{o.id}")) for o in stopped}
    return snapshots.last_writers(ctx.ws, [s.id for s in ctx.manifest.patches], fixing)


def _remember(ws: Workspace, files: dict[str, bytes | None]) -> None:
    """W's files as they are now are what sgpatch holds for them (`tree`)."""
    for f, data in files.items():
        if data is None:
            ws.tree().pop(f"{PKG}/{f}", None)
        else:
            ws.tree()[f"{PKG}/{f}"] = digest(data)


def _join(ctx: Context, pid: str, rel: str, order: list[str]):
    """A hand edit of `rel`, a file no stopped patch wrote last (a change moved to another
    file, as upstream moved the code), joins stopped patch `pid` at its place in the file's
    history, as an edit during a rebase joins the stopped commit: what the patches before it
    left there is its before; each later patch that wrote the file keeps its own change, now
    on top of the edit (a three-way merge of what it held before and after). Returns what to
    record, (side, patch, bytes), and those later patches; nothing is written here."""
    ws = ctx.ws
    writers = snapshots.writers_of(ws, order, rel)
    later = [w for w in writers if order.index(w) > order.index(pid)]
    earlier = [w for w in writers if order.index(w) < order.index(pid)]
    now, wrote = ws.read_pkg(rel), _wrote(ctx, rel, writers)
    if pid in writers:
        at = snapshots.one(ws, "after", pid, rel)
    elif earlier:
        at = snapshots.one(ws, "after", earlier[-1], rel)
    else:
        at = snapshots.one(ws, "before", later[0], rel) if later else wrote
    who = ", ".join(later)  # the edit must go under all of them: name them all
    puts = [(side, w, _moved(rel, wrote, now, snapshots.one(ws, side, w, rel), who))
            for w in later for side in ("before", "after")]  # fmt: skip
    if pid not in writers:
        puts.append(("before", pid, at))
    puts.append(("after", pid, _moved(rel, wrote, now, at, who) if later else now))
    return puts, later


def _moved(rel: str, wrote: bytes | None, now: bytes | None, old: bytes | None, who: str):
    """`old` with the hand edit (`wrote` -> `now`) made in it too, or a refusal."""
    if now == wrote:
        return old
    if now is None or wrote is None or old is None:
        raise _overlap(rel, who, "a file made or removed by hand under another patch's change")
    data, n = merge_file(wrote, now, old, ("edited", "sgpatch wrote", who))
    if n:
        raise _overlap(rel, who, "the edit overlaps a change of theirs")
    return data


def _overlap(rel: str, who: str, why: str) -> SgpatchError:
    return SgpatchError(
        f"{PKG}/{rel} was edited, but later patches ({who}) carried their changes there "
        f"already and the edit cannot be put under them ({why}); undo that part of the edit",
        ExitCode.CONFLICT,
    )


_JUNK = ("~", ".swp", ".swo", ".orig", ".rej", ".bak", ".pyc", TMP_SUFFIX)


def changed_by_hand(ws: Workspace) -> list[str]:
    """Package-relative files in W that differ from what sgpatch wrote, or that it did not
    write (editor and tool leftovers excepted: hidden files, `~`/.swp/.orig/.rej/.bak backups,
    `#autosave#`, bytecode, sgpatch's own temp files, when sgpatch did not write that name)."""
    import os

    tree, out = ws.tree(), []
    for dirpath, _dirs, files in os.walk(ws.root, followlinks=False):
        for name in files:
            full = Path(dirpath, name)
            rel = full.relative_to(ws.top).as_posix()
            if full.is_symlink() or "/__pycache__/" in f"/{rel}":
                continue
            if rel not in tree and (name.startswith((".", "#")) or name.endswith(_JUNK)):
                continue
            if tree.get(rel) != digest(full.read_bytes()):
                out.append(rel[len(PKG) + 1 :])
    for rel in tree:
        if rel.startswith(f"{PKG}/") and not (ws.top / rel).exists():
            out.append(rel[len(PKG) + 1 :])
    return sorted(set(out))


@dataclass(frozen=True)
class Aborted:
    """What --abort did: what others put in W (kept there), the hand edits it kept aside and
    where (`W.aborted-N`, with --force)."""

    left: list[str]
    edits: list[str]
    kept_in: Path | None


def abort(top: Path, force: bool = False) -> Aborted:
    """Remove the workspace (what sgpatch wrote). Files sgpatch wrote that a person edited
    are never deleted silently: without `force` that is refused (exit 4, naming them); with
    it they are copied to `W.aborted-N` next to W first."""
    ws = existing(top)
    ws.recover()
    edits = hand_edits(ws)
    if edits and not force:
        w = shlex.quote(str(ws.top))
        raise unsafe(
            f"--workspace {top}: --abort would delete your edits of {shown(edits)}; keep them with "
            f"`sgpatch port --abort --force --workspace {w}` (copied to {ws.top}.aborted-N "
            f"first), or go on with {ws.continue_hint()}"
        )
    kept_in = keep_aside(ws, edits) if edits else None
    remove(ws)
    return Aborted(left_in(ws), edits, kept_in)
