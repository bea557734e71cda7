"""The port sequencer (git rebase style): start -> (fix) -> --continue | --abort.

`start` lays out the workspace (a full tree of the target release), asks every patch's probe
whether upstream has it there, and carries the patches in manifest order (`run_todo`). A patch
that needs a hand stops with its files written (markers and all); the patches after it keep
going unless they touch one of its files or require it. `resume` checks the fixed files, takes
each stopped patch's diff from the workspace, carries what was waiting, and finishes.
Everything a step knows is in the workspace's state files, so a crash leaves them meaningful.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, get_args

from packaging.version import Version

from sgpatch.diff.paths import package_mapper
from sgpatch.diff.unified import DEV_NULL, Patch
from sgpatch.errors import SgpatchError, bad_input
from sgpatch.patchset.manifest import SetManifest
from sgpatch.port import snapshots, stopreport
from sgpatch.port import source as src
from sgpatch.port.carry import NO_BASE, CarriedPatch, Labels, Reader, carry_patch
from sgpatch.port.statefiles import (
    AFTER,
    BEFORE,
    CARRIED,
    COMMAND,
    CURRENT_FORMAT,
    DONE,
    FILES,
    FIX,
    FIXING,
    FORMAT,
    KNOWN,
    NEEDS_A_HAND,
    OFFLINE,
    ONTO,
    PARTIAL,
    REUSED,
    SET,
    SET_DIR,
    SET_NAME,
    SET_SHA256,
    STAGE,
    STATE,
    TODO,
    TREE,
    WITHOUT,
    listed,
    merge_input,
    na_of,
    patch_of,
    problem_list,
)
from sgpatch.port.stopreport import Problem
from sgpatch.port.workspace import Workspace, claim, digest

# what happened to a patch, as `done`, `partial` and `needs-a-hand` keep it; `waiting` (still on
# the todo list) is a report's only, never written
Kept = Literal["carried", "fixed", "upstream", "n/a", "skipped", "conflict"]
OutcomeKind = Literal[Kept, "waiting"]
OUTCOMES: tuple[Kept, ...] = get_args(Kept)
NONE = "-"  # an empty field of a state line (no variant, release or base; no note)
_HOW = re.compile(
    r"-|kept (\d{1,9}), merged (\d{1,9})(?:, moved (\d{1,9}))?(?:, by hand (\d{1,9}))?"
)
PORTED_LINE = "Ported to {to} by sgpatch port (from {variant}, made on {base})"


@dataclass
class Outcome:
    """What happened to one patch (one line of `done` or `needs-a-hand`, and a stopped
    patch's `problems/ID`): only what W's state keeps. What a report reads off W beside it
    (files carried or waiting, markers, the probe, hunks dropped) is port.report's
    PatchReport."""

    id: str
    outcome: OutcomeKind
    variant: str | None = None  # set-relative source variant (None: carried from none)
    release: str | None = None
    base: str | None = None
    as_is: bool = False  # every hunk kept as it was (the source file serves the release)
    kept: int = 0
    merged: int = 0
    note: str = ""
    problems: list[Problem] = field(default_factory=list)  # kept in `problems/ID`
    moved: int = 0  # hunks carried into the file their code moved to (`moved/ID`)
    hand: int = 0  # hunks a person had to fix (those its file problems named at the stop)

    def line(self) -> str:
        """The state line (tab-separated; an empty field is `-`, as `parse` reads it)."""
        assert self.outcome != "waiting", "a report's outcome, never written"
        how = NONE
        if self.outcome != "upstream":
            how = f"kept {self.kept}, merged {self.merged}"
            how += f", moved {self.moved}" if self.moved else ""
            how += f", by hand {self.hand}" if self.hand else ""
        fields = (self.id, self.outcome, self.variant or NONE, self.release or NONE,
                  self.base or NONE, "as-is" if self.as_is else "changed", how,
                  self.note or NONE)  # fmt: skip
        return "\t".join(fields)

    @classmethod
    def parse(cls, line: str, ws: Workspace, where: str) -> Outcome:
        """One line as line() wrote it; anything else is a damaged state file (`where`)."""
        parts = line.split("\t")
        how = _HOW.fullmatch(parts[6]) if len(parts) == 8 else None
        if how is None or parts[1] not in OUTCOMES or parts[5] not in ("as-is", "changed"):
            raise ws.damaged(where, f"line {line[:60]!r}")
        pid, outcome, variant, release, base, as_is, _how, note = parts
        kept, merged, moved, hand = (int(n) if n else 0 for n in how.groups())
        return cls(pid, _kept(outcome), _field(variant), _field(release), _field(base),
                   as_is == "as-is", kept, merged, _field(note) or "", moved=moved,
                   hand=hand)  # fmt: skip


def _kept(word: str) -> Kept:
    """An outcome word `parse` checked is one of OUTCOMES (narrowed for the type)."""
    return next(k for k in OUTCOMES if k == word)


def _field(text: str) -> str | None:
    return None if text == NONE else text


@dataclass
class Context:
    """One port in progress: the set, the target, the workspace, the releases it knows."""

    manifest: SetManifest
    to: Version
    ws: Workspace
    known: list[Version]
    bases: dict[Version, src.BaseTree] = field(default_factory=dict)
    offline: bool = False  # releases only from the cache (merge bases too)

    def base(self, version: Version) -> src.BaseTree:
        if version not in self.bases:
            self.bases[version] = src.BaseTree(self.manifest, version, src.pristine(version))
        return self.bases[version]


# ---------------------------------------------------------------------------------------------
# start


def prepare(
    manifest: SetManifest,
    to: Version,
    *,
    offline: bool,
    without: Sequence[str] = (),
    known: Sequence[Version] | None = None,
) -> list[Version]:
    """Everything a port checks and fetches before it creates or clears W, so a failure here
    leaves W as it was: the ids of --without, the release (on the index, or in the cache
    offline), its wheel, and (online) the wheels of the merge bases. Returns the versions port
    knows: `known` when given (the versions variants may come from when not the releases: a
    snapshot, sgpatch.port.onto_tree), else the releases."""
    from sgpatch.releases import cache as releases

    for pid in without:
        manifest.patch(pid)  # unknown ids are bad input
    given = known is not None
    known = list(known) if known is not None else src.known_releases(offline)
    if not given and to not in known:
        if offline:
            raise bad_input(
                f"--offline: sglang {to} is not in the release cache; `sgpatch fetch {to}`"
            )
        raise bad_input(f"--to {to}: not a release of sglang on the package index")
    releases.wheel_path(to)
    releases.record(to)
    if not offline:  # a base that cannot be fetched is the carry's problem (it says why)
        bases = {s.base for spec in manifest.patches if (s := src.source_of(spec, to, known))}
        releases.fetch(sorted(bases - {to}), keep_going=True)
    return known


def identity(
    manifest: SetManifest,
    to: Version,
    top: Path,
    offline: bool,
    without: Sequence[str],
    known,
    to_tree: Path | None = None,
) -> dict[str, str]:
    """The state files that say which port this is (workspace.claim writes them whole)."""
    import os
    import shlex

    path = Path(os.path.realpath(manifest.path))
    onto = ["--to", str(to)] if to_tree is None else ["--to-tree", os.path.abspath(to_tree)]
    again = ["sgpatch", "port", "--set", path.parent.name, "--patchsets", str(path.parent),
             *onto, "--workspace", str(Path(os.path.abspath(top)))]  # fmt: skip
    again += ["--offline"] * offline + [a for pid in without for a in ("--without", pid)]
    return {
        COMMAND: shlex.join(again),  # first: a kill right after still leaves what to rerun
        FORMAT: CURRENT_FORMAT,
        SET: str(path),
        SET_DIR: str(path.parent),
        SET_NAME: manifest.name,
        SET_SHA256: digest(path.read_bytes()),
        ONTO: str(to),
        OFFLINE: "yes" if offline else "no",
        KNOWN: "".join(f"{v}\n" for v in known) or "\n",  # --continue decides on the same
        WITHOUT: "".join(f"{p}\n" for p in without) or "\n",
    }


def start(
    manifest: SetManifest,
    to: Version,
    top: Path,
    *,
    offline: bool,
    without: Sequence[str] = (),
    made: bool = False,
    known: Sequence[Version] | None = None,
    to_tree: Path | None = None,
) -> Context:
    """Claim W (under its lock), record which port this is, lay out the release and settle
    probes and skips; nothing carried yet. `manifest` is read from its real path: the set
    --continue writes is the one named here. `known`: the versions variants may come from
    (prepare); `to_tree`: the tree a snapshot came from (`port --to-tree`, for the hints)."""
    import os

    from sgpatch.patchset.manifest import load_manifest

    known = list(src.known_releases(offline) if known is None else known)
    manifest = load_manifest(Path(os.path.realpath(manifest.path)))
    ws = claim(top, made, identity(manifest, to, top, offline, without, known, to_tree))
    ctx = Context(manifest, to, ws, known, offline=offline)
    lay_out(ctx)
    return ctx


def lay_out(ctx: Context) -> None:
    """The rest of the start, from the state alone (so --continue redoes it after a kill):
    the release's tree into W, the tree list, the patches decided before any carrying, the
    lists. Ends with the phase `carry`."""
    ws = ctx.ws
    _lay_tree(ws, ctx.to)
    without = ws.lines(WITHOUT)
    done = [_settled(ctx, spec, without) for spec in ctx.manifest.patches]
    ws.put_lines(DONE, (o.line() for o in done if o is not None))
    ws.put_lines(TODO, (s.id for s, o in zip(ctx.manifest.patches, done, strict=True)
                          if o is None))  # fmt: skip
    ws.put_lines(NEEDS_A_HAND, [])
    ws.put_lines(PARTIAL, [])
    ws.set_phase("carry")


def _lay_tree(ws: Workspace, to: Version) -> None:
    """The release's files into W: written aside into the state folder's `stage/` straight
    from the verified wheel (no copy of a cached tree, no link into the cache: W is the
    person's to edit anywhere), listed in `tree` with their sha256 from RECORD (what --abort
    removes), then each of its top folders renamed into W (a rename is whole). A kill leaves
    each folder of the release complete in W or absent; laid out again, only the absent ones
    are copied. A stage taken over from the port finished before in W (`reused`, see
    workspace.claim) is turned into the release in place: only the files whose RECORD hash
    differs are written (a kill meanwhile: the stage is laid afresh)."""
    import os

    from sgpatch.fs import atomic
    from sgpatch.port.workspace import kill_point, rmtree
    from sgpatch.releases import cache as releases

    tops = {name.split("/", 1)[0] for name in releases.record(to)}
    if all(os.path.lexists(ws.top / t) for t in tops) and ws.lines(TREE):
        return
    stage = ws.top / STATE / STAGE
    reused = _reused(ws)
    if reused is not None and stage.is_dir():
        ws.put(REUSED, None)  # from here the stage is no longer that tree
        laid = releases.relay(to, stage, reused)
    else:
        rmtree(stage)
        ws.put(REUSED, None)
        laid = releases.lay(to, stage, "site-packages")  # one pass from the verified wheel
    ws.save_tree({**ws.tree(), **laid.files})
    for child in sorted(stage.iterdir()):
        if not os.path.lexists(ws.top / child.name):
            kill_point()
            atomic.rename_path(child, ws.top / child.name)
    rmtree(stage)


def _reused(ws: Workspace) -> dict[str, str] | None:
    """The tree the stage holds when it was taken over from a finished port (path -> sha256),
    or None."""
    return ws.digest_list(REUSED)


def _settled(ctx: Context, spec, without: Sequence[str]) -> Outcome | None:
    """A patch decided before any carrying (skipped, upstream, n/a), else None (to carry)."""
    from sgpatch.patchset.probe import evaluate

    if spec.id in without:
        return Outcome(spec.id, "skipped", note="left out with --without")
    probe = carried_probe(ctx, spec)
    if probe is not None and evaluate(probe, ctx.ws.root).value:
        return Outcome(spec.id, "upstream", note=f"the probe matches on pristine sglang {ctx.to}")
    created = src.created_before(ctx.manifest, spec, ctx.to, ctx.known)
    if src.source_of(spec, ctx.to, ctx.known) is None:
        return Outcome(spec.id, "n/a", note=_na_note(ctx, spec, created))
    why = src.before_it_existed(spec, ctx.to, ctx.known, created)
    if why is not None:
        return Outcome(spec.id, "n/a", note=why)
    return None


def carried_probe(ctx: Context, spec):
    """The probe of the variant port carries `spec` from (its own, else the patch's)."""
    from sgpatch.patchset.manifest import probe_for

    sorc = src.source_of(spec, ctx.to, ctx.known)
    return probe_for(spec, sorc.release) if sorc is not None else spec.probe


def _na_note(ctx: Context, spec, created: frozenset[str]) -> str:
    na = src.not_applicable(spec, ctx.to, ctx.known, created)
    if na is None:
        return "no variant with a patch file near this release"
    if na.here_too:
        return f"n/a on {na.release}, and none of its files is in {ctx.to} either"
    why = f"{na.present[0]} is in {ctx.to}" if na.present else "the set has no patch file for it"
    reason = ctx.ws.top / STATE / na_of(spec.id)
    return (f"n/a on {na.release}, but {why}: the set needs a variant for {ctx.to}; if the "
            f"patch is n/a there too, write why into {reason} "
            f"and `sgpatch port --continue --workspace {ctx.ws.top}`; else add a variant, "
            f"then {ctx.ws.abort_hint()}")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the queue


@dataclass
class Queue:
    """The sequencer's lists as the state files hold them: `todo` (ids, in order), `done`,
    `needs-a-hand` (the stopped patches; their problems in `problems/ID`) and `partial` (what
    the patches on the todo list that have some files carried already have so far)."""

    todo: list[str]
    done: list[Outcome]
    stopped: list[Outcome]
    partial: dict[str, Outcome]

    @classmethod
    def load(cls, ws: Workspace, listing: snapshots.Listing) -> Queue:
        """The lists, each patch on them checked against `listing` (its path lists)."""
        done = [Outcome.parse(ln, ws, DONE) for ln in ws.lines(DONE)]
        partial = {o.id: o for o in (Outcome.parse(ln, ws, PARTIAL) for ln in ws.lines(PARTIAL))}
        q = cls(ws.lines(TODO), done, stopped_of(ws), partial)
        for pid in [*q.todo, *(o.id for o in [*q.done, *q.stopped])]:
            snapshots.check(ws, pid, listing)
        return q

    def save(self, ws: Workspace, todo: list[str] | None = None) -> list[str]:
        """Write the lists (`todo`: the todo list to write, when it is not self.todo); returns
        the `fix` list written."""
        todo = self.todo if todo is None else todo
        for o in self.stopped:
            lines = (f"{p.file}\t{','.join(map(str, p.hunks))}\t{p.why}" for p in o.problems)
            ws.put_lines(problem_list(o.id), lines)
        ws.save_tree()
        ws.put_lines(DONE, (o.line() for o in self.done))
        ws.put_lines(NEEDS_A_HAND, (o.line() for o in self.stopped))
        ws.put_lines(PARTIAL, (self.partial[p].line() for p in todo if p in self.partial))
        ws.put_lines(TODO, todo)
        fix = fix_list(ws, self.stopped)
        ws.put_lines(FIX, fix)
        return fix

    def reopened(self, problems: Mapping[str, list[Problem]], order: Sequence[str]) -> Queue:
        """A new queue with the patches that lint, or their probe, finds wrong on the release
        back on needs-a-hand with those problems: the files they wrote last (and files no
        patch owns) can be edited, and --continue takes their diff again and checks again."""
        back = [replace(o, outcome="conflict", as_is=False, problems=list(problems[o.id]))
                for o in self.done if o.id in problems]  # fmt: skip
        q = Queue(list(self.todo), [o for o in self.done if o.id not in problems],
                  [*self.stopped, *back], dict(self.partial))  # fmt: skip
        q.sort(order)  # the first stopped patch is the first in the set (edits join it)
        return q

    def copy(self) -> Queue:
        """A queue a step may work on in place, the state's own left as it was: its lists
        and outcomes copied."""
        return Queue(list(self.todo), [replace(o) for o in self.done],
                     [replace(o) for o in self.stopped],
                     {p: replace(o) for p, o in self.partial.items()})  # fmt: skip

    def sort(self, order: Sequence[str]) -> None:
        """Manifest order (a patch taken off needs-a-hand goes back to its place)."""
        at = {pid: n for n, pid in enumerate(order)}
        self.todo.sort(key=lambda p: at.get(p, 0))
        self.done.sort(key=lambda o: at.get(o.id, 0))
        self.stopped.sort(key=lambda o: at.get(o.id, 0))


def stopped_of(ws: Workspace) -> list[Outcome]:
    """The stopped patches, with their problems (from `problems/<id>`)."""
    out = []
    for ln in ws.lines(NEEDS_A_HAND):
        o = Outcome.parse(ln, ws, NEEDS_A_HAND)
        for p in ws.lines(problem_list(o.id)):
            file, hunks, why = ([*p.split("\t"), "", ""])[:3]
            if not all(h.isdigit() and len(h) < 10 for h in hunks.split(",") if h):
                raise ws.damaged(problem_list(o.id), f"line {p[:60]!r}")
            o.problems.append(Problem(file, why, tuple(int(h) for h in hunks.split(",") if h)))
        out.append(o)
    return out


# ---------------------------------------------------------------------------------------------
# carrying


@dataclass(frozen=True)
class Carried:
    """What `run_todo` leaves: the queue, the listing and the `fix` list, as it wrote them."""

    queue: Queue
    listing: snapshots.Listing
    fix: tuple[str, ...]


def run_todo(
    ctx: Context, q: Queue | None = None, listing: snapshots.Listing | None = None
) -> Carried:
    """Carry the todo list in order, file by file (docs/porting.md): a file that an earlier
    patch has still to carry, or to have fixed, waits, so every file takes the patches in
    manifest order; the patch's other files are carried now. A patch that `requires` an
    unfinished one waits whole. `q`, `listing`: the queue and path lists as the caller holds
    them (port.state; the queue is worked on in a copy, returned), else read from W. Each
    patch's lists change in memory and are written at its step's end, inside the step."""
    ws = ctx.ws
    if listing is None:
        listing = snapshots.Listing.load(ws, [s.id for s in ctx.manifest.patches])
    q = Queue.load(ws, listing) if q is None else q.copy()
    blocked: set[str] = set()
    for o in q.stopped:
        blocked |= listing.unfinished(o.id)
    unfinished = {o.id for o in q.stopped}
    pending, q.todo = q.todo, []
    fix: list[str] = []
    for n, pid in enumerate(pending):
        with ws.step(f"carry {pid}"):  # all of it or nothing: a kill redoes this patch
            out, listing = _step(ctx, q.partial.get(pid), pid, blocked, unfinished, listing)
            left = listing.unfinished(pid)
            q.partial.pop(pid, None)
            if out.outcome == "conflict":
                q.stopped.append(out)
            elif left:
                if listing.carried.get(pid):
                    q.partial[pid] = out
                q.todo.append(pid)
            else:
                q.done.append(out)
            if left or out.outcome == "conflict":
                unfinished.add(pid)
                blocked |= left
            listing = listing.save(ws)
            fix = q.save(ws, q.todo + pending[n + 1 :])
    if not pending:
        with ws.step("lists"):
            fix = q.save(ws)
    return Carried(q, listing, tuple(fix))


def _step(
    ctx: Context, so_far: Outcome | None, pid: str, blocked: set, unfinished: set,
    listing: snapshots.Listing,
) -> tuple[Outcome, snapshots.Listing]:  # fmt: skip
    """Carry what of patch `pid` can go now (files no earlier patch still holds); its outcome
    so far and the listing with its files. Finished, its new patch file is written."""
    spec = ctx.manifest.patch(pid)
    sorc, patch = _source(ctx, spec)
    patch, follows = _follow_renames(ctx, sorc, patch)
    units = file_units(patch)
    touched = set().union(*units)
    recorded = listing.files.get(pid, frozenset())
    if not recorded:
        listing = listing.with_list(FILES, pid, touched)
    elif not touched <= recorded:  # recorded: these, and edits joined by hand
        raise ctx.ws.damaged(listed(FILES, pid), f"not the files {pid} touches")
    out = so_far or Outcome(pid, "carried", _rel(sorc.variant.patch, ctx.manifest.base_dir),
                            str(sorc.release), str(sorc.base), True)  # fmt: skip
    if follows:  # the old file names a path the release lacks: never "serves it as it was"
        out.as_is = False
        out.note = "; ".join(f"followed upstream's rename of {old} to {new}"
                             for new, old in sorted(follows.items()))  # fmt: skip
    if unfinished & set(spec.requires):
        return out, listing
    have = listing.carried.get(pid, frozenset())
    ready = {p for u in units if not u & blocked and not u <= have for p in u}
    if ready:
        out, ready, went, bad = _carry_files(ctx, out, sorc, patch, ready, (follows, blocked))
        if went - listing.files.get(pid, frozenset()):  # files its code moved to join it
            listing = listing.with_list(FILES, pid, listing.files.get(pid, frozenset()) | went)
        listing = listing.with_list(CARRIED, pid, have | ((ready | went) - bad))
        listing = listing.with_list(FIXING, pid, bad)
    if out.outcome != "conflict" and not listing.unfinished(pid):
        write_patch(ctx, pid, listing.files[pid])
    return out, listing


def _source(ctx: Context, spec) -> tuple[src.Source, Patch]:
    sorc = src.source_of(spec, ctx.to, ctx.known)
    assert sorc is not None and sorc.variant.patch is not None
    return sorc, src.patch_file(sorc.variant.patch, _rel(sorc.variant.patch, ctx.manifest.base_dir))


def _follow_renames(ctx: Context, sorc: src.Source, patch: Patch) -> tuple[Patch, dict]:
    """The patch with each file it changes that the release no longer has, but has under
    another name (src.renamed: upstream renamed it), pointed at the new name; and new -> old
    name of each (the merge base is still read under the old one). Two files that would go to
    one new name (upstream merged them) are not followed: that is a move, for a person."""
    mapper = package_mapper(patch.name)
    names, ours = src.release_names(ctx.to), {mapper(f.path) for f in patch.files}
    found: dict[str, str] = {}
    for fp in patch.files:
        rel = mapper(fp.path)
        if rel not in found and _followable(fp, rel, names):
            new = src.renamed(sorc.base, ctx.to, rel)
            if new is not None and new not in ours:
                found[rel] = new
    targets = list(found.values())
    follows = {new: rel for rel, new in found.items() if targets.count(new) == 1}
    if not follows:
        return patch, {}
    back = {rel: new for new, rel in follows.items()}
    files = tuple(
        _renamed_fp(fp, rel, back[rel])
        if (rel := mapper(fp.path)) in back and _followable(fp, rel, names)
        else fp
        for fp in patch.files
    )
    return replace(patch, files=files), follows


def _followable(fp, rel: str, names: set[str]) -> bool:
    """A change to an existing file that the release lacks, its path spelled as it maps (a
    path is rewritten only where it can be rewritten whole)."""
    if fp.is_new or fp.is_delete or fp.git_op or rel in names:
        return False
    return all(p.endswith(rel) for p in (fp.source, fp.target))


def _renamed_fp(fp, rel: str, new: str):
    moved = {p: p[: len(p) - len(rel)] + new for p in (fp.source, fp.target)}
    return replace(fp, source=moved[fp.source], target=moved[fp.target])


def file_units(patch: Patch) -> list[set[str]]:
    """The package files of `patch`, grouped so that what is carried together stays together:
    a rename's two paths, every part of the patch on one path."""
    mapper = package_mapper(patch.name)
    units: list[set[str]] = []
    for fp in patch.files:
        paths = _paths(fp, mapper)
        for u in [u for u in units if u & paths]:
            units.remove(u)
            paths |= u
        units.append(paths)
    return units


def _carry_files(ctx: Context, out: Outcome, sorc: src.Source, patch, ready, where: tuple):
    """Carry the files `ready` of the patch into W (markers and all), keep what each held
    before and after; the outcome so far with what happened added, the files carried now
    (`ready`, less those whose moved code must wait), the files its code moved to
    (port.moved) and the files that did not go in (to fix). `where`: new -> old name of the
    files upstream renamed (the base has them under the old name), and the files an
    unfinished earlier patch holds (moved code waits for it, as a file it holds does)."""
    ws, pid = ctx.ws, out.id
    sub, res = _carried(ctx, out.id, sorc, patch, ready, where)
    ready = {p for fp in sub.files for p in _paths(fp, package_mapper(patch.name))}
    if not ready:
        return out, set(), set(), set()
    went = {f.path for f in res.files} - ready
    snapshots.take(ws, BEFORE, pid, ready | went)
    for f in res.files:
        if f.source is not None:
            ws.write_pkg(f.source, None)
        ws.write_pkg(f.path, f.after, f.mode)
    snapshots.take(ws, AFTER, pid, ready | went)
    _keep_merge_inputs(ws, res)
    stopreport.keep_hunks(ws, pid, res.files)
    stopreport.keep_moves(ws, pid, res.files)
    problems = problems_of(res)
    bad_files = {p.file for p in problems}
    bad = {p for u in file_units(sub) if u & bad_files for p in u} | (bad_files & went)
    kept, merged, hand = _counts(res)
    moved = sum(len(f.moves) for f in res.files)
    dropped = sum(len(f.dropped) for f in res.files)
    as_is = out.as_is and res.ok and not merged and not dropped and not moved
    return Outcome(pid, "conflict" if problems else out.outcome, out.variant, out.release,
                   out.base, as_is, out.kept + kept, out.merged + merged, out.note, problems,
                   out.moved + moved, out.hand + hand), ready, went, bad  # fmt: skip


def _pristine(ctx: Context):
    """The target release's own files (where "already there" reads its evidence); None when
    the target is no release sgpatch can read (a tree: `port --to-tree`)."""
    try:
        return src.pristine(ctx.to)
    except SgpatchError:  # a target that is no cached release
        return None


def _carried(ctx: Context, pid: str, sorc: src.Source, patch, ready, where: tuple):
    """The patch's files `ready`, carried in memory (nothing written): (the sub-patch carried,
    the result). A file whose moved code has its certain place in a file an unfinished
    earlier patch holds waits (carried again without it)."""
    from sgpatch.port.moved import Elsewhere

    follows, held = where
    mapper = package_mapper(patch.name)
    labels = Labels(f"sglang {ctx.to}", f"sglang {sorc.base}", f"{pid} (made on {sorc.base})")
    base, why = _base_reader(ctx, sorc.base, ctx.manifest.patches.index(ctx.manifest.patch(pid)))
    if base is not None and follows:
        base = functools.partial(_renamed_reader, base, follows)
    names = (labels.ours, labels.base, labels.theirs)
    elsewhere = Elsewhere(ctx.to, ctx.ws.read_pkg, frozenset(held), names)
    while True:
        sub = replace(patch, files=tuple(fp for fp in patch.files if _paths(fp, mapper) <= ready))
        res = carry_patch(sub, pid, ctx.ws.read_pkg, base, labels, why or NO_BASE, elsewhere,
                          modes=ctx.ws.mode_pkg, pristine=_pristine(ctx),
                          files=package_files(ctx.ws))  # fmt: skip
        waits = {f.path for f in res.files if any(lo.held for lo in f.lost)}
        if not waits:
            return sub, res
        ready = {p for u in file_units(sub) if not u & waits for p in u}


def package_files(ws: Workspace) -> frozenset[str]:
    """The package's files in W as sgpatch wrote them (its `tree`, package-relative): what
    the import check of a carried file reads W's modules from."""
    from sgpatch.port.statefiles import PKG

    return frozenset(p[len(PKG) + 1 :] for p in ws.tree() if p.startswith(f"{PKG}/"))


def _counts(res: CarriedPatch) -> tuple[int, int, int]:
    """Hunks kept, merged and left to a hand, each hunk counted once: a hunk its file's
    problem names (a conflict, or a Python check of the whole file) is a hand's, not kept."""
    kept = merged = hand = 0
    for f in res.files:
        named = set(f.hunks) if f.problem is not None else set()
        hand += len(named)
        if f.moved_from is not None:
            continue  # a file code moved into: its hunks count as moved, by the old file
        kept += len(set(f.kept) - named)
        merged += len(set(f.merged) - named)
    return kept, merged, hand


def _renamed_reader(base, follows: dict, rel: str) -> bytes | None:
    return base(follows.get(rel, rel))


def _paths(fp, mapper) -> set[str]:
    return {mapper(p) for p in (fp.source, fp.target) if p != DEV_NULL}


def _rel(path: Path | None, base: Path) -> str:
    assert path is not None  # a variant port carries from has a patch file
    return Path(path).relative_to(base).as_posix()


def _base_reader(ctx: Context, version: Version, index: int) -> tuple[Reader | None, str]:
    """(a reader of the merge base, "") or (None, why the base release cannot be read: then
    a hunk that needs a merge is a problem that says so)."""
    try:
        return ctx.base(version).before(index), ""
    except SgpatchError as e:
        return None, f"no merge base: {e}"


def write_patch(ctx: Context, pid: str, files: Iterable[str]) -> None:
    """The finished patch's new file (`patches/ID.patch`), from what each of its `files` (all
    it touches) held before and after it."""
    ws, spec = ctx.ws, ctx.manifest.patch(pid)
    sorc, patch = _source(ctx, spec)
    rels = sorted(files)
    befores = snapshots.get(ws, BEFORE, pid, rels)
    afters = snapshots.get(ws, AFTER, pid, rels)
    modes = {p: (snapshots.mode(ws, BEFORE, pid, p), snapshots.mode(ws, AFTER, pid, p))
             for p in rels}  # fmt: skip
    patch_file = render_patch(ctx, patch.header, sorc, befores, afters, modes)
    ws.put_bytes(patch_of(pid), patch_file)


def render_patch(
    ctx: Context, header: str, sorc, befores: dict, afters: dict, modes: dict | None = None
) -> bytes:
    """The new patch file: the old header + one line saying where it came from, canonical diff
    of each file from what the workspace held before the patch to what it holds after, in
    the git modes `modes[path]` (before, after) gives (the execute bit, a symlink)."""
    from sgpatch.diff import canonical as rf

    modes = modes or {}
    diff = rf.canonical_diff(
        rf.FileDiff(p, befores.get(p), afters[p], *modes.get(p, (rf.REGULAR, rf.REGULAR)))
        for p in sorted(afters)
    )
    variant = _rel(sorc.variant.patch, ctx.manifest.base_dir)
    line = PORTED_LINE.format(to=ctx.to, variant=variant, base=sorc.base)
    return rf.render(rf.add_header_line(header, line), diff)


def _keep_merge_inputs(ws: Workspace, res: CarriedPatch) -> None:
    """The inputs of each merge, for the person who fixes it."""
    for f in res.files:
        if f.base is not None:
            ws.put_bytes(merge_input(res.id, f.path, "base"), f.base)
        if f.theirs is not None:
            ws.put_bytes(merge_input(res.id, f.path, "theirs"), f.theirs)


def problems_of(res: CarriedPatch) -> list[Problem]:
    return [Problem(f.path, f.problem, tuple(f.hunks)) for f in res.files if f.problem is not None]


def fix_list(ws: Workspace, stopped: list[Outcome]) -> list[str]:
    """What to fix, under a heading per kind (port.stopreport)."""
    from sgpatch.port.stopreport import fix_lines

    return fix_lines(ws, stopped)
