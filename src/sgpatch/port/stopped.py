"""--continue and --abort: pick a stopped port up again from its workspace.

`reopen` checks that W is a live workspace and that the set has not changed since the port
began; `unresolved` lists what still has markers or fails the Python checks; `take_fixed`
turns each stopped patch's files, as the person left them, into its diff (a hand edit of a
file no patch owns joins the first stopped patch: a change moved to another file); `abort`
removes what sgpatch wrote.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch.diff.canonical import SYMLINK
from sgpatch.errors import ExitCode, SgpatchError, bad_input, unsafe
from sgpatch.fs.atomic import TMP_SUFFIX
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import snapshots
from sgpatch.port import source as src
from sgpatch.port.merge import import_problem, marker_lines, merge_file, python_problem
from sgpatch.port.sequencer import Context, Queue, write_patch
from sgpatch.port.snapshots import Listing
from sgpatch.port.state import Options, PortState, check_format
from sgpatch.port.statefiles import AFTER, BEFORE, CARRIED, FILES, FINISHING_SHA256, FIXING
from sgpatch.port.workspace import (
    PKG,
    Phase,
    Workspace,
    digest,
    entry_digest,
    files_left,
    hand_edits,
    keep_aside,
    left_in,
    own_files,
    remove,
    shown,
)

if TYPE_CHECKING:
    from sgpatch.placement.pyimports import Release


def reopen(ws: Workspace) -> tuple[Context, PortState, list[str]]:
    """The live workspace's context and state, read once (under its lock); an interrupted
    step is put back first (undo.recover: returns the tree files left as the person edited
    them since). The set must be the one the port began on, unchanged (`bound_set`)."""
    kept = ws.recover()
    check_format(ws)
    if not ws.is_live():
        raise bad_input(f"--workspace {ws.top}: that port already finished; nothing to continue")
    opts = Options.load(ws)
    phase = ws.phase
    manifest = load_manifest(bound_set(ws, opts, phase))
    state = PortState.load(ws, [s.id for s in manifest.patches], opts, phase)
    ctx = Context(manifest, opts.onto, ws, list(opts.known), offline=opts.offline)
    return ctx, state, kept


def bound_set(ws: Workspace, opts: Options, phase: Phase) -> Path:
    """The manifest --continue may write: the one the port began on. The state names it by
    its real path, the real path of its folder, its name and its digest; anything else (a
    path that is not real, files that disagree, another set, edits since; while the set is
    being written, the digest of what is written is the other one allowed) is refused, exit
    4, one line."""
    import os

    path, folder = opts.set, opts.set_dir
    real = path.is_absolute() and str(path.parent) == folder
    real = real and os.path.realpath(path) == str(path) and os.path.realpath(folder) == folder

    def refused(why: str) -> SgpatchError:
        return unsafe(f"--workspace {ws.top}: {why}; {ws.abort_hint()}")

    if not real:
        raise refused(f"its state names the set {path} in {folder or '?'}, not one real path")
    if not path.is_file():
        raise refused(f"{path}, the set the port began on, is gone")
    allowed = {opts.set_sha256}
    if phase == "finishing":
        allowed.add((ws.get(FINISHING_SHA256) or "").strip())
    if digest(path.read_bytes()) not in allowed:
        raise refused(f"{path}: the set changed since the port began")
    if load_manifest(path).name != opts.set_name:
        raise refused(f"{path} is not the set {opts.set_name} the port began on")
    return path


def unresolved(ctx: Context, state: PortState) -> list[str]:
    """Files --continue would take that still have markers, fail the Python checks, or are
    binary: those stopped patches wrote last, and the hand edits that would join one."""
    ws, out = ctx.ws, []
    stopped = state.queue.stopped
    writers = _last_writers(ctx, state)
    waiting = _waiting(state)
    check = _Check(f"sglang {ctx.to}", ws, waiting)
    for o in stopped:
        for rel in sorted(f for f, w in writers.items() if w == o.id):
            before = snapshots.get(ws, BEFORE, o.id, [rel])[rel]
            out += _problems(rel, _text(ws, rel), before, check)
    for rel in _edited(ctx, stopped, writers):
        out += _problems(rel, _text(ws, rel), _wrote(ctx, state.listing, rel), check)
    return out


def _waiting(state: PortState) -> frozenset[str]:
    """Files a patch on the todo list, or a stopped one, has still to carry (not those it is
    being fixed in: W holds the fix): their names are not known until it carries them."""
    q, listing = state.queue, state.listing
    pids = [*q.todo, *(o.id for o in q.stopped)]
    return frozenset(
        f for pid in pids for f in listing.unfinished(pid) - listing.fixing.get(pid, frozenset())
    )


@dataclass
class _Check:
    """What --continue checks a file against: the release's name, and W as the import check
    reads it (its package's files as they are on disk now, a file made by hand included;
    those a waiting patch has still to carry hold any name), walked once and only when a file
    asks."""

    label: str
    ws: Workspace
    waiting: frozenset[str] = frozenset()  # files patches on the todo list have still to carry
    _release: Release | None = None

    @property
    def release(self) -> Release:
        if self._release is None:
            from sgpatch.placement.pyimports import Release
            from sgpatch.releases.snapshot import tree_files

            files = frozenset(tree_files(self.ws.root))
            self._release = Release(files, self.ws.read_pkg, open_files=self.waiting)
        return self._release


def _text(ws: Workspace, rel: str) -> bytes | None:
    """W's file to check, None for a symlink (a link has no lines: its target is taken as
    the person left it)."""
    data = ws.read_pkg(rel)
    return None if data is None or ws.mode_pkg(rel) == SYMLINK else data


def _problems(rel: str, data: bytes | None, before: bytes | None, check: _Check) -> list[str]:
    if data is None:
        return []
    if b"\0" in data[:8192]:
        return [f"{PKG}/{rel}: a binary file (a patch holds text only): remove it"]
    marks = marker_lines(data)
    if marks:
        return [f"{PKG}/{rel}: conflict markers at lines {', '.join(map(str, marks))}"]
    why = python_problem(rel, data, before, check.label)
    if why is None and rel.endswith(".py") and _may_import(data, before):
        why = import_problem(rel, data, before, check.release, check.label)
    return [f"{PKG}/{rel}: {why}"] if why else []


def _may_import(data: bytes, before: bytes | None) -> bool:
    """Whether the file can import anything `before` did not (a file without the word
    `import` never walks W for the check)."""
    return b"import" in data and data != before


def _edited(ctx: Context, stopped, writers: dict[str, str]) -> list[str]:
    """Files edited by hand that no stopped patch wrote last: they join the first one."""
    ids = {o.id for o in stopped}
    return [r for r in changed_by_hand(ctx.ws) if writers.get(r) not in ids]


def _wrote(ctx: Context, listing: Listing, rel: str, writers: list[str] | None = None):
    """What sgpatch last left in `rel`: its last writer's after, else the release's file."""
    if writers is None:
        writers = listing.writers_of([s.id for s in ctx.manifest.patches], rel)
    if writers:
        return snapshots.one(ctx.ws, AFTER, writers[-1], rel)
    return src.pristine(ctx.to)(rel)


def take_fixed(ctx: Context, state: PortState) -> tuple[PortState, list[str]]:
    """Each stopped patch becomes `fixed`: W's bytes are its change to the files it wrote last
    (the fixes and any other edit there); a hand edit of a file no stopped patch wrote last
    joins the first stopped patch (`_join`). A patch with files still waiting goes back on the
    todo list; a finished one gets its new patch file. Returns the state as written (phase
    `carry`) and a note per joined edit."""
    order = [s.id for s in ctx.manifest.patches]
    joins = _joins(ctx, state, order)  # may refuse: nothing is written before this
    with ctx.ws.step("take the fixes"):  # W's files are only read: a kill redoes all of it
        return _take_fixes(ctx, state, joins, order)


def _take_fixes(ctx: Context, state: PortState, joins: dict, order: list[str]):
    ws, q = ctx.ws, state.queue.copy()  # worked on in place here, the state's own left as is
    listing, rewrite, notes = _take_edits(ctx, q, state.listing, joins)
    writers = _last_writers(ctx, replace(state, listing=listing))  # fixing -> carried below
    for o in q.stopped:
        now = snapshots.take(ws, AFTER, o.id, [f for f, w in writers.items() if w == o.id])
        _remember(ws, now)
        carried = listing.carried.get(o.id, frozenset()) | listing.fixing.get(o.id, frozenset())
        listing = listing.with_list(CARRIED, o.id, carried).with_list(FIXING, o.id, ())
        o.outcome, o.as_is, o.problems = "fixed", False, []
        if listing.unfinished(o.id):
            q.partial[o.id] = o
            q.todo.append(o.id)
        else:
            rewrite.append(o.id)
            q.done.append(o)
    q.stopped = []
    q.sort(order)
    state = replace(state, queue=q, listing=listing).save(ws, "carry")
    for pid in rewrite:  # from the snapshots and the listing just written
        write_patch(ctx, pid, listing.files.get(pid, frozenset()))
    return state, notes


def _joins(ctx: Context, state: PortState, order: list[str]) -> dict:
    """Each hand edit of a file no stopped patch wrote last, worked out as it would join a
    patch, before anything is recorded (a refusal changes nothing): {file: (patch, what to
    record, later patches)}. With a patch stopped it joins the first one (`_join`); with
    none (after --no-finish) the one patch that changes the file takes it (`_owner_join`)."""
    stopped = state.queue.stopped
    edited = _edited(ctx, stopped, _last_writers(ctx, state))
    if not stopped:
        return {rel: _owner_join(ctx, state.listing, rel, order) for rel in edited}
    first = stopped[0].id
    return {rel: (first, *_join(ctx, state.listing, first, rel, order)) for rel in edited}


def _owner_join(ctx: Context, listing: Listing, rel: str, order: list[str]):
    """A hand edit made with no patch stopped: the patch that changes `rel` takes it (its
    after is W's file now). A file no patch changes, or one several change (which of them
    the edit belongs to is the person's to say), is refused naming it and them."""
    writers = listing.writers_of(order, rel)
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
    return writers[0], [(AFTER, writers[0], ctx.ws.read_pkg(rel))], []


def _take_edits(ctx: Context, q: Queue, listing: Listing, joins: dict):
    """Record the joins: each edit becomes its patch's (a stopped one's, or a finished one's,
    whose patch file is written again), later patches' files keep their own change on top.
    Returns the listing with them, the finished patches whose patch file is to be written
    again, and a note per edit. `q`: the caller's copy of the queue (changed in place)."""
    ws = ctx.ws
    stopped = {o.id for o in q.stopped}
    moved: set[str] = set()
    for rel, (pid, puts, later) in joins.items():
        for side, who, data in puts:
            last = side == AFTER and who == pid and not later  # W's file is its after
            kind = {rel: snapshots.mode_in(ws, rel)} if last else None
            snapshots.put(ws, side, who, {rel: data}, kind)
        listing = listing.with_list(FILES, pid, listing.files.get(pid, frozenset()) | {rel})
        if pid in stopped:
            listing = listing.with_list(FIXING, pid, listing.fixing.get(pid, frozenset()) | {rel})
        else:
            moved.add(pid)
        _remember(ws, {rel: ws.read_pkg(rel)})
        moved |= set(later)
    rewrite = []
    for o in [*q.done, *q.partial.values()]:
        if o.id in moved:  # its file's history moved under the edit: a new patch file
            o.as_is = False
            if o in q.done:
                rewrite.append(o.id)
    notes = [f"{PKG}/{rel}: the edit there joins {pid}" for rel, (pid, _p, _l) in joins.items()]
    return listing, rewrite, notes


def _last_writers(ctx: Context, state: PortState) -> dict[str, str]:
    order = [s.id for s in ctx.manifest.patches]
    return state.listing.last_writers(order, [o.id for o in state.queue.stopped])


def _remember(ws: Workspace, files: dict[str, bytes | None]) -> None:
    """W's files as they are now are what sgpatch holds for them (`tree`)."""
    for f, data in files.items():
        if data is None:
            ws.tree().pop(f"{PKG}/{f}", None)
        else:
            ws.tree()[f"{PKG}/{f}"] = entry_digest(data, ws.mode_pkg(f))


def _join(ctx: Context, listing: Listing, pid: str, rel: str, order: list[str]):
    """A hand edit of `rel`, a file no stopped patch wrote last (a change moved to another
    file, as upstream moved the code), joins stopped patch `pid` at its place in the file's
    history, as an edit during a rebase joins the stopped commit: what the patches before it
    left there is its before; each later patch that wrote the file keeps its own change, now
    on top of the edit (a three-way merge of what it held before and after). Returns what to
    record, (side, patch, bytes), and those later patches; nothing is written here."""
    ws = ctx.ws
    writers = listing.writers_of(order, rel)
    later = [w for w in writers if order.index(w) > order.index(pid)]
    earlier = [w for w in writers if order.index(w) < order.index(pid)]
    now, wrote = ws.read_pkg(rel), _wrote(ctx, listing, rel, writers)
    if pid in writers:
        at = snapshots.one(ws, AFTER, pid, rel)
    elif earlier:
        at = snapshots.one(ws, AFTER, earlier[-1], rel)
    else:
        at = snapshots.one(ws, BEFORE, later[0], rel) if later else wrote
    who = ", ".join(later)  # the edit must go under all of them: name them all
    puts = [(side, w, _moved(rel, wrote, now, snapshots.one(ws, side, w, rel), who))
            for w in later for side in (BEFORE, AFTER)]  # fmt: skip
    if pid not in writers:
        puts.append((BEFORE, pid, at))
    puts.append((AFTER, pid, _moved(rel, wrote, now, at, who) if later else now))
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
    for dirpath, dirs, files in os.walk(ws.root, followlinks=False):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]  # never entered
        for name in [*files, *links]:
            full = Path(dirpath, name)
            rel = full.relative_to(ws.top).as_posix()
            if "/__pycache__/" in f"/{rel}":
                continue
            if rel not in tree and (name.startswith((".", "#")) or name.endswith(_JUNK)):
                continue
            if full.is_symlink():  # its target, read, never followed
                if tree.get(rel) != entry_digest(os.fsencode(os.readlink(full)), SYMLINK):
                    out.append(rel[len(PKG) + 1 :])
            elif tree.get(rel) != digest(full.read_bytes()):
                out.append(rel[len(PKG) + 1 :])
    for rel in tree:
        if rel.startswith(f"{PKG}/") and not os.path.lexists(ws.top / rel):
            out.append(rel[len(PKG) + 1 :])
    return sorted(set(out))


@dataclass(frozen=True)
class Aborted:
    """What --abort did: what others put in W (kept there), the hand edits it kept aside and
    where (`W.aborted-N`, with --force), and the person's own files in the state folder
    (na-<id> reasons, notes: kept there too)."""

    left: list[str]
    edits: list[str]
    kept_in: Path | None
    own: list[str] = field(default_factory=list)
    stays: bool = False  # W itself is still there (made by the person, or holding others' files)
    left_files: list[str] = field(default_factory=list)  # the files others put in W, kept

    def to_json(self) -> dict:
        """What `port --abort --json` says it did (docs/json.md)."""
        kept_in = None if self.kept_in is None else str(self.kept_in)
        return {"left": self.left, "edits": self.edits, "own_files": self.own, "kept_in": kept_in}


def abort(ws: Workspace, force: bool = False) -> Aborted:
    """Remove the workspace (what sgpatch wrote). Files sgpatch wrote that a person edited
    are never deleted silently: without `force` that is refused (exit 4, naming them); with
    it they are copied to `W.aborted-N` next to W first, as the person's own files in the
    state folder (na-<id> reasons, notes) always are. A damaged tree list does not keep W:
    its damaged lines are left out (never followed)."""
    top = ws.top
    ws.recover(strict=False)  # a damaged journal must not keep W: its hint is this command
    ws.tree(lenient=True)
    edits = hand_edits(ws)
    if edits and not force:
        w = shlex.quote(str(ws.top))
        raise unsafe(
            f"--workspace {top}: --abort would delete your edits of {shown(edits)}; keep them with "
            f"`sgpatch port --abort --force --workspace {w}` (copied to {ws.top}.aborted-N "
            f"first), or go on with {ws.continue_hint()}"
        )
    own = own_files(ws)
    kept_in = keep_aside(ws, edits + own) if edits or own else None
    remove(ws)
    return Aborted(left_in(ws), edits, kept_in, own, ws.top.is_dir(), files_left(ws))
