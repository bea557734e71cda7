"""Carry one patch onto a release, hunk by hunk (docs/porting.md, "How a patch is carried").

A hunk that places exactly (at its line or, unique or made unique by its scope, elsewhere) is
kept as it is. Only the hunks that do not are merged three-way, against the pristine release the
variant was made on (with the set's earlier patches applied there, as the patch file was made):
base = that file, theirs = base + the failing hunks, ours = the release's file with the kept
hunks. Files a patch creates, deletes or renames, and files the release lacks, are merged whole.
A merged (or kept) Python file must still compile and must not define a name twice in one body.
Every file keeps its git mode as the patch says (a symlink made as one, the execute bit): the
carried file's `mode` is what the workspace lays out and what the new patch file says.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.diff.paths import package_mapper
from sgpatch.diff.unified import FilePatch, Hunk, Patch, decode, encode, split_lines
from sgpatch.ops.fileplan import FilePlan, Overlay, plan_patch
from sgpatch.placement.engine import HunkResult, apply_hunks
from sgpatch.placement.match import FileResult
from sgpatch.port.merge import Checks, import_problem, marker_lines, merge_file, workers
from sgpatch.port.stopreport import ALONE, ALREADY, CONFLICT, MOVED, NO_PLACE, Dropped, HunkDetail

if TYPE_CHECKING:
    from concurrent.futures import Future

    from sgpatch.port.moved import Elsewhere, Lost, Move, Rewrite, Sorted

Reader = Callable[[str], "bytes | None"]
ModeReader = Callable[[str], int]  # a path's git mode: 100644, 100755 or 120000 (a symlink)


class MemOverlay(Overlay):
    """An Overlay over any reader (a workspace, a release read straight from its wheel);
    `mode`, when the source has symlinks (a workspace), tells them apart (Overlay.is_link).
    Overlay.fork copies it whole, links included."""

    def __init__(self, read: Reader, mode: ModeReader | None = None) -> None:
        super().__init__(Path(os.devnull))
        self._source = read
        self._mode = mode

    def read(self, rel: str) -> bytes | None:
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            data = self.original[rel] = self._source(rel)
            if data is not None and self._mode is not None and self._mode(rel) == SYMLINK:
                self.link_orig.add(rel)
        return self.original[rel]

    def git_mode(self, rel: str) -> int:
        """`rel`'s git mode in the source (100644 when there is no mode reader)."""
        if self.read(rel) is not None and self.is_link(rel):
            return SYMLINK
        return self._mode(rel) if self._mode is not None and rel not in self.changed else REGULAR


@dataclass(frozen=True)
class CarriedFile:
    """One file of a carried patch: what the workspace held before and what it holds now."""

    path: str
    before: bytes | None
    after: bytes | None
    kept: tuple[int, ...] = ()  # hunks kept as they are
    merged: tuple[int, ...] = ()  # hunks merged three-way, cleanly
    problem: str | None = None  # why it needs a hand (None: carried)
    markers: tuple[int, ...] = ()  # lines of conflict markers in `after`
    hunks: tuple[int, ...] = ()  # the hunks the problem is about
    source: str | None = None  # a rename's old path (removed from the workspace)
    mode: int = REGULAR  # git mode of `after`: 100644, 100755, 120000 (a symlink's target)
    base: bytes | None = None  # the merge's inputs, for the person who fixes it
    theirs: bytes | None = None
    details: tuple[HunkDetail, ...] = ()  # per failing hunk: upstream's change, the patch's
    dropped: tuple[Dropped, ...] = ()  # hunks already there upstream, with the evidence
    moves: tuple[Move, ...] = ()  # hunks carried into the file their code moved to
    moved_to: tuple[tuple[str, bytes], ...] = ()  # those files' new bytes, in order
    lost: tuple[Lost, ...] = ()  # hunks whose code moved, with no certain place (a stop)
    rewrite: Rewrite | None = None  # upstream rewrote this file (said once, in `problem`)
    moved_from: str | None = None  # a file hunks were carried into: the file they came from


@dataclass(frozen=True)
class CarriedPatch:
    id: str
    files: tuple[CarriedFile, ...]

    @property
    def ok(self) -> bool:
        return all(f.problem is None for f in self.files)


@dataclass(frozen=True)
class Labels:
    """Conflict marker labels, rebase style: ours = the release, theirs = the patch."""

    ours: str
    base: str
    theirs: str


def _exact(hunks: tuple[HunkResult, ...]) -> tuple[int, ...]:
    """Hunks placed exactly: at their line or elsewhere (unique/scoped), no whitespace slack."""
    return tuple(
        h.index
        for h in hunks
        if h.status == "already-applied"
        or (h.status == "applied" and h.level in ("exact", "moved") and not h.whitespace)
    )


NO_BASE = "the variant does not apply to the release it was made on: no merge base"


def carry_patch(
    patch: Patch, pid: str, ws: Reader, base: Reader | None, labels: Labels, no_base: str = NO_BASE,
    elsewhere: Elsewhere | None = None, modes: ModeReader | None = None,
    pristine: Reader | None = None, files: Collection[str] | None = None,
):  # fmt: skip
    """Carry every file of `patch` onto the workspace reader `ws` (nothing is written here).
    `base` None: a hunk that needs a merge is a problem, `no_base` says why. `elsewhere`: the
    release to look in for code upstream moved out of a file (port.moved; None: not looked
    for); a hunk carried there adds that file to the result. `modes`: the workspace's git
    modes (each carried file's `mode` follows them and the patch). `pristine`: the target
    release's own files, where "already there" reads its evidence (None: W's file before the
    patch, which holds no hunk of this patch). `files`: W's package files; with them, every
    import of SGLang a carried Python file adds must resolve in W (merge.import_problem)."""
    mapper = package_mapper(patch.name)
    here = MemOverlay(ws, modes)
    kinds: dict[str, int] = {}  # the git mode of each file the patch wrote so far
    there = MemOverlay(base) if base is not None else None
    where = replace(elsewhere, read=here.read) if elsewhere is not None else None
    out: list[CarriedFile] = []
    paths = [mapper(fp.path) for fp in patch.files]
    checks = Checks(labels.ours)  # parsed meanwhile, in workers, as each file is carried
    explain = Explanations()  # each conflict's per-hunk details, worked out meanwhile too
    for n, fp in enumerate(patch.files):
        one = replace(patch, files=(fp,))
        path = paths[n]
        before = here.read(path)
        (fplan,) = plan_patch(here.fork(), one, mapper, fuzz=0)
        mine = here.read(fplan.source) if fplan.action == "rename" else before
        explain.at = len(out)
        explain.pristine = pristine
        was = kinds.get(fplan.source, here.git_mode(fplan.source))
        done = _carry_file(fp, fplan, (before, mine), there or no_base, (one, where), labels,
                           explain)  # fmt: skip
        done = _with_mode(done, fp, was)
        for got in (done, *_moved_files(done, here, kinds)):
            out.append(got)
            if got.problem is None:
                checks.add(got.path, None if got.mode == SYMLINK else got.after, got.before)
            if got.source is not None:
                here.write(got.source, None)
            here.write(got.path, got.after, link=got.mode == SYMLINK)
            kinds[got.path] = got.mode
        if there is not None and path in paths[n + 1 :]:
            plan_patch(there, one, mapper, fuzz=0)  # the file comes again: the base moves on
    carried = _checked(explain.filled(out), checks)
    if files is not None:
        held = elsewhere.held if elsewhere is not None else frozenset()
        carried = _imports_checked(carried, here, (files, held), labels.ours)
    return CarriedPatch(pid, carried)


def _moved_files(done: CarriedFile, here: MemOverlay, kinds: dict[str, int]) -> list[CarriedFile]:
    """The files hunks of `done` were carried into (their code moved there), each once with
    its last bytes: merged, or with the markers of a merge against the moved def; each keeps
    the git mode it has (`kinds`: those the patch wrote so far, else the workspace's)."""
    out: dict[str, CarriedFile] = {}
    for target, data in done.moved_to:
        into = tuple(m.hunk for m in done.moves if m.target == target)
        bad = sum(m.conflicts for m in done.moves if m.target == target)
        before = out[target].before if target in out else here.read(target)
        why = None
        if bad:
            old = {f"{m.old} {m.scope}" for m in done.moves if m.target == target}
            why = (f"{bad} conflict(s) merging hunk(s) {_hunk_list(into)} of {done.path} into "
                   f"the code moved here ({', '.join(sorted(old))})")  # fmt: skip
        out[target] = CarriedFile(target, before, data, merged=into, problem=why,
                                  markers=marker_lines(data) if bad else (),
                                  hunks=into if bad else (), moved_from=done.path,
                                  mode=kinds.get(target, here.git_mode(target)))  # fmt: skip
    return list(out.values())


def _with_mode(done: CarriedFile, fp: FilePatch, was: int) -> CarriedFile:
    """The carried file with the git mode the patch leaves it in: a symlink block makes a
    link; `new mode` / `new file mode` says; a new file is 100644; else the file keeps the
    mode it had (`was`: in the workspace, a rename's source's). A symlink block that needs a
    hand leaves the workspace's file as it was."""
    if fp.symlink and done.problem is not None:
        return replace(done, mode=was)
    if fp.symlink:
        return replace(done, mode=SYMLINK)
    if fp.new_mode is not None:
        return replace(done, mode=EXECUTABLE if fp.new_mode & 0o111 else REGULAR)
    return replace(done, mode=REGULAR if fp.is_new or was == SYMLINK else was)


def _carry_file(
    fp, fplan: FilePlan, now, there, one_where, labels: Labels, explain: Explanations
) -> CarriedFile:
    """`now`: W's file at the patch's path before it, and the file the change is made to (a
    rename's source; else the same). `there`: the merge base, or why there is none.
    `one_where`: the patch with only this file, and where moved code is looked for."""
    before, mine = now
    one, where = one_where
    exact = _exact(fplan.hunks)
    if fplan.ok and len(exact) == len(fplan.hunks):
        source = fplan.source if fplan.action == "rename" else None
        return CarriedFile(fplan.path, before, fplan.after, kept=exact, source=source)
    every = tuple(h.index for h in fp.hunks)
    if fp.symlink:  # a link has no lines to merge: made as the patch says, or by a person
        return CarriedFile(fplan.path, before, before, problem=_link_problem(fp, fplan),
                           hunks=every)  # fmt: skip
    if isinstance(there, str):
        return CarriedFile(fplan.path, before, before, problem=there, hunks=every)
    if fplan.action == "modify" and fplan.before is not None:
        got = _merge_hunks(fp, fplan, there, exact, labels, explain, where)
        if got is not None:
            return got
    if fplan.action == "modify" and fplan.before is None and where is not None:
        gone = _file_gone(fp, fplan.path, there, labels, where)
        if gone is not None:
            return gone
    return _merge_whole(fplan, (before, mine), there, one, labels)


def _link_problem(fp: FilePatch, fplan: FilePlan) -> str:
    """Why a symlink block of the patch is not carried, and what a person does about it (a
    link has no lines to merge: it is made as the patch says, or by hand)."""
    new = "".join(ln.text for h in fp.hunks for ln in h.lines if ln.kind != "-")
    what = (
        "removes the symlink" if fp.is_delete
        else f"makes a symlink to {new!r}" if fp.is_new
        else f"points the symlink at {new!r}"
    )  # fmt: skip
    why = fplan.note or "this release has something else there"
    return (
        f"the patch {what}, which cannot be done on this release ({why}): make the symlink "
        "in W by hand, or leave W's file, as it should be on this release"
    )


def _lines(data: bytes | None) -> list[str]:
    return split_lines(decode(data or b""))


def _merge_hunks(
    fp: FilePatch, fplan: FilePlan, there, exact, labels, explain: Explanations,
    where: Elsewhere | None = None,
) -> CarriedFile | None:  # fmt: skip
    """Keep the exact hunks, drop the ones upstream already made in the same scope (with the
    evidence), merge only the others (None: fall back to a whole-file merge). Where that
    merge conflicts, the hunks whose code upstream moved to another file are carried there
    or stopped on their own (port.moved), and the rest merged again without them."""
    base = there.read(fplan.path)
    if base is None:
        return None
    base_lines = _lines(base)
    failing = tuple(h for h in fp.hunks if h.index not in exact)
    if all(h.index in exact or h.status != "applied" for h in fplan.hunks):
        ours = fplan.after or b""  # only the exact hunks were applied there already
    else:
        kept = apply_hunks(_lines(fplan.before), tuple(h for h in fp.hunks if h.index in exact))
        ours = encode("".join(kept.lines))
    alone = _Alone(base_lines)  # each failing hunk placed by itself on the base, once
    pristine = explain.pristine(fplan.path) if explain.pristine else fplan.before
    dropped = _already(fplan.path, failing, alone, _lines(pristine))
    failing = tuple(h for h in failing if h.index not in {d.hunk for d in dropped})
    plain = CarriedFile(fplan.path, fplan.before, ours, kept=exact, dropped=dropped)
    if not failing:
        return plain
    first = _merged(plain, failing, base, alone, labels)
    if first is not None and first.problem is None:
        return first
    sort = _sort_out(fplan.path, base_lines, _lines(ours), failing, alone, where)
    if sort.moves or sort.lost or sort.there:
        got = _moved_out(plain, sort, (fp.hunks, base, alone), labels, explain)
        if got is not None:
            return got
    if first is not None:
        explain.add(_Conflict(failing, base, ours, labels, dropped), alone)
    return first


def _merged(got: CarriedFile, failing, base: bytes, alone: _Alone, labels) -> CarriedFile | None:
    """`got` (W's file with the kept hunks, `after`) with the `failing` hunks merged three-way
    against the base: merged cleanly, or with its conflicts as the problem. None: the failing
    hunks do not place on the base together."""
    patched = apply_hunks(alone.base, failing, index=alone.index)
    if not patched.ok:
        return None
    theirs = encode("".join(patched.lines))
    data, n = merge_file(base, got.after or b"", theirs, (labels.ours, labels.base, labels.theirs))
    idx = tuple(h.index for h in failing)
    if n == 0:
        return replace(got, after=data, merged=idx)
    why = f"{n} conflict(s) in the three-way merge of hunk(s) {_hunk_list(idx)}"
    return replace(got, after=data, problem=why, markers=marker_lines(data), hunks=idx,
                   base=base, theirs=theirs)  # fmt: skip


def _moved_out(plain: CarriedFile, sort: Sorted, inputs, labels, explain) -> CarriedFile | None:
    """The file once the hunks whose code moved are sorted out: carried elsewhere (the moves
    and the files they went to), a small block each for those with no certain place, and the
    others merged as before (None: those others do not place on the base together)."""
    hunks, base, alone = inputs
    ours = plain.after or b""
    if sort.lost:
        ours = encode("".join(_with_blocks(sort, hunks, alone.base, _lines(ours), alone, labels)))
    got = replace(plain, after=ours, moves=sort.moves, moved_to=tuple(sort.files.items()),
                  lost=sort.lost, rewrite=sort.rewrite,
                  dropped=plain.dropped + _there(plain.path, sort))  # fmt: skip
    if sort.stay:
        merged = _merged(got, sort.stay, base, alone, labels)
        if merged is None:
            return None
        if merged.problem is not None:
            explain.add(_Conflict(sort.stay, base, ours, labels, plain.dropped), alone)
        got = merged
    return _lost_problem(got, _lost_rows(sort, hunks, labels), labels) if sort.lost else got


def _sort_out(path, base_lines, ours_lines, failing, alone, where) -> Sorted:
    """port.moved.sort_out, when moved code is looked for at all."""
    from sgpatch.port.moved import Sorted, sort_out

    if where is None or not failing:
        return Sorted(stay=tuple(failing))
    return sort_out(path, base_lines, ours_lines, failing, alone, where)


def _with_blocks(sort: Sorted, hunks, base_lines, ours_lines, alone, labels: Labels) -> list[str]:
    from sgpatch.port.moved import lost_blocks

    names = (labels.ours, labels.base, labels.theirs)
    return lost_blocks(sort.lost, hunks, base_lines, ours_lines, alone, names)


def _lost_rows(sort: Sorted, hunks, labels: Labels) -> tuple[HunkDetail, ...]:
    """A detail row per hunk whose code moved with no certain place: its scope, the
    candidates with their evidence, and the patch's change to make there."""
    by_index = {h.index: h for h in hunks}
    return tuple(
        HunkDetail(lo.hunk, MOVED, where=lo.scope, patch_label=labels.theirs,
                   patch=tuple(f"{ln.kind}{ln.text}" for ln in by_index[lo.hunk].lines),
                   evidence=(lo.why, *(f"maybe {c.text()}" for c in lo.candidates)))
        for lo in sort.lost
    )  # fmt: skip


def _lost_problem(got: CarriedFile, rows: tuple[HunkDetail, ...], labels: Labels) -> CarriedFile:
    """The file with the stopped hunks' blocks: a problem naming them (and the rewrite, and
    the merge's conflicts when there are some), their detail rows beside the merge's."""
    lost = tuple(lo.hunk for lo in got.lost)
    said = (f"hunk(s) {_hunk_list(lost)}: the code is no longer here and has no certain new "
            "place: make the change where it went, then delete the block")  # fmt: skip
    parts = [got.rewrite.text(labels.base, labels.ours)] if got.rewrite is not None else []
    parts += [x for x in (got.problem, said) if x]
    data = got.after
    return replace(got, problem="; ".join(parts), markers=marker_lines(data),
                   hunks=tuple(sorted({*got.hunks, *lost})), details=rows)  # fmt: skip


def _there(path: str, sort: Sorted) -> tuple[Dropped, ...]:
    """The hunks whose code moved to a def that already has their change (a three-way merge
    into it changes nothing): dropped, saying where."""
    return tuple(Dropped(path, m.hunk, (
        f"its code moved to {m.target} ({m.how.removeprefix('the same ')}, line {m.line}), "
        "where the three-way merge leaves it as it is: upstream made the change there",))
        for m in sort.there)  # fmt: skip


def _file_gone(fp, path: str, there, labels: Labels, where: Elsewhere) -> CarriedFile | None:
    """A file the release lacks: each hunk carried to where its code went, when certain; the
    others left as small blocks in a file of markers at the old path (the person moves them
    and deletes it). None: a hunk does not place on the base (the whole-file merge says so)."""
    base = there.read(path)
    if base is None:
        return None
    base_lines = _lines(base)
    alone = _Alone(base_lines)
    sort = _sort_out(path, base_lines, None, fp.hunks, alone, where)
    if sort.stay:
        return None
    got = CarriedFile(path, None, None, moves=sort.moves, moved_to=tuple(sort.files.items()),
                      lost=sort.lost, dropped=_there(path, sort))  # fmt: skip
    if not sort.lost:
        return got
    data = encode("".join(_with_blocks(sort, fp.hunks, base_lines, [], alone, labels)))
    got = replace(got, after=data, problem=f"not in {labels.ours} (delete this file when done)")
    return _lost_problem(got, _lost_rows(sort, fp.hunks, labels), labels)


class _Alone:
    """Hunks of one file placed by themselves on its base, each once: finding what upstream
    already has and explaining a conflict both ask, and each placement indexes the whole file."""

    def __init__(self, base_lines: list[str]) -> None:
        from sgpatch.placement.match import LineIndex

        self.base = base_lines
        self.index = LineIndex(base_lines)  # the base's lines keyed once for every placement
        self.placed: dict[int, FileResult] = {}

    def lines(self, h) -> tuple[str, ...]:
        """The base with the hunk applied alone (port.moved merges a moved def from it)."""
        return self.result(h).lines

    def result(self, h) -> FileResult:
        got = self.placed.get(h.index)
        if got is None:
            got = self.placed[h.index] = apply_hunks(self.base, (h,), index=self.index)
        return got

    def at(self, h) -> int | None:
        """0-based line where the hunk's pre-image starts on the base, placed alone (None: it
        does not place there by itself)."""
        r = self.result(h).hunks[0]
        if r.status != "applied" or r.line is None:
            return None
        return r.line - 1


def _already(path: str, failing, alone: _Alone, release_lines: list[str]) -> tuple[Dropped, ...]:
    """The failing hunks of `path` whose whole change the pristine release already has, at
    its place (port.already): judged on `release_lines`, never on W or on other hunks."""
    from sgpatch.port.already import Files, already_there

    out = []
    files = Files(alone.base, release_lines)
    python = path.endswith(".py")
    for h in failing:
        at = alone.at(h)
        ev = (already_there(h, at, alone.base, release_lines, files, python)
              if at is not None else None)  # fmt: skip
        if ev is not None:
            out.append(Dropped(path, h.index, tuple(ev.text())))
    return tuple(out)


@dataclass(frozen=True)
class _Conflict:
    """What explaining one conflicted file needs, picklable for a worker: its failing hunks,
    the base, ours (the release's file with the kept hunks), the labels, the dropped hunks."""

    failing: tuple[Hunk, ...]
    base: bytes
    ours: bytes
    labels: Labels
    dropped: tuple[Dropped, ...]

    def details(self, alone: _Alone | None = None) -> tuple[HunkDetail, ...]:
        """hunk_details of the file; `alone`: the hunks placed alone on the base already (a
        worker places them again)."""
        alone = alone or _Alone(_lines(self.base))
        return hunk_details(self.failing, (self.base, alone, self.ours), self.labels, self.dropped)


class Explanations:
    """`hunk_details` of a patch's conflicted files (a git merge-file per failing hunk, and a
    diff of each conflict region): handed to the forked workers as each conflict is found, so
    they are worked out while the carry goes on with the patch's next files, and filled into
    the carried files at the end (`filled`). Without workers, worked out here, the same way.
    `at`: the index, in the patch's carried files, of the file being carried."""

    def __init__(self) -> None:
        self.at = 0
        self.done: dict[int, tuple[HunkDetail, ...]] = {}
        self.sent: dict[int, Future] = {}
        self.pristine: Reader | None = None  # the target release's files (carry_patch's)

    def add(self, job: _Conflict, alone: _Alone) -> None:
        pool = workers(make=False)  # the checks' pool, once a big patch made one
        if pool is None:
            self.done[self.at] = job.details(alone)
        else:
            self.sent[self.at] = pool.submit(_details_of, job)

    def filled(self, files: list[CarriedFile]) -> list[CarriedFile]:
        got = {**self.done, **{n: f.result() for n, f in self.sent.items()}}
        return [
            replace(f, details=tuple(sorted((*f.details, *got[n]), key=lambda d: d.hunk)))
            if n in got else f
            for n, f in enumerate(files)
        ]  # fmt: skip


def _details_of(job: _Conflict) -> tuple[HunkDetail, ...]:
    return job.details()  # in a worker (a module-level function: the pool pickles it by name)


def hunk_details(failing, merge_in, labels: Labels, dropped) -> tuple[HunkDetail, ...]:
    """Per failing hunk of a conflicted file: merged alone (base + that hunk), the region it
    conflicts on, as upstream changed it (base -> the release) and as the patch changes it."""
    base, alone, ours = merge_in
    base_lines = alone.base
    out = [HunkDetail(d.hunk, ALREADY, evidence=d.evidence) for d in dropped]
    for h in failing:
        at = alone.at(h)
        row = HunkDetail(h.index, NO_PLACE, upstream_label=f"{labels.base} -> {labels.ours}",
                         patch_label=labels.theirs)  # fmt: skip
        if at is None:
            out.append(row)
            continue
        size = len(h.before)
        head = _scope_label(base_lines, h, at)
        scope = f", {head}" if head else ""
        row = replace(row, where=f"{labels.base} lines {at + 1}-{at + max(size, 1)}{scope}")
        by_itself = encode("".join(alone.result(h).lines))
        data, n = merge_file(base, ours, by_itself, (labels.ours, labels.base, labels.theirs))
        blocks = conflict_blocks(data) if n else []
        if not blocks:
            out.append(replace(row, status=ALONE))
            continue
        up: list[str] = []
        mine: list[str] = []
        for b_ours, b_base, b_theirs in blocks:
            up += mini_diff(b_base, b_ours)
            mine += mini_diff(b_base, b_theirs)
        out.append(replace(row, status=CONFLICT, upstream=tuple(up), patch=tuple(mine)))
    return tuple(sorted(out, key=lambda d: d.hunk))


def _scope_label(lines: list[str], h: Hunk, at: int) -> str:
    """The def/class the hunk's changed lines are in (`in def ServerArgs._handle_page_size`,
    `at module level`), not the nearest one above them (git's funcname, the `@@` header, names
    the def before when the hunk's context begins there); the header where the file has no
    def/class to tell by (not Python)."""
    from sgpatch.placement.scope import blocks
    from sgpatch.port.moved import hunk_scope

    if not blocks(lines):
        header = h.section_header.strip().rstrip(":")
        return f"in {header}" if header else ""
    label = hunk_scope(lines, h, at).label
    return f"at {label}" if label == "module level" else f"in {label}"


def conflict_blocks(data: bytes) -> list[tuple[list[str], list[str], list[str]]]:
    """The (ours, base, theirs) lines of each diff3 conflict in a merged file."""
    from sgpatch.diff.unified import decode

    out = []
    side: str | None = None
    cur: dict[str, list[str]] = {}
    for line in decode(data).split("\n"):
        if line.startswith("<<<<<<< "):
            side, cur = "ours", {"ours": [], "base": [], "theirs": []}
        elif side and line.startswith("||||||| "):
            side = "base"
        elif side and line == "=======":
            side = "theirs"
        elif side and line.startswith(">>>>>>> "):
            out.append((cur["ours"], cur["base"], cur["theirs"]))
            side = None
        elif side:
            cur[side].append(line)
    return out


def mini_diff(old: list[str], new: list[str]) -> list[str]:
    """`old` -> `new` as diff lines (` `, `-`, `+`), small regions only (difflib)."""
    import difflib

    out: list[str] = []
    sm = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            out += [f" {x}" for x in old[i1:i2]]
            continue
        out += [f"-{x}" for x in old[i1:i2]] + [f"+{x}" for x in new[j1:j2]]
    return out


def _merge_whole(fplan: FilePlan, now, there, one: Patch, labels) -> CarriedFile:
    """A file the patch creates, deletes or renames, or that the release lacks: merge it whole
    (`now`: the workspace's file at the path, and the one the change is made to: a rename's
    source; absent = empty)."""
    before, mine = now
    mapper = package_mapper(one.name)
    trial = there.fork()
    (on_base,) = plan_patch(trial, one, mapper, fuzz=0)
    every = tuple(h.index for h in one.files[0].hunks)
    if not on_base.ok:
        return CarriedFile(fplan.path, before, before, problem=NO_BASE, hunks=every)
    base = there.read(on_base.source) or b""
    theirs = on_base.after or b""
    data, n = merge_file(base, mine or b"", theirs, (labels.ours, labels.base, labels.theirs))
    source = on_base.source if on_base.action == "rename" else None
    after: bytes | None = data
    if n == 0 and on_base.after is None and not data:
        after = None  # deleted by the patch, and the release did not change it
    if n == 0:
        return CarriedFile(fplan.path, before, after, merged=every, source=source)
    why = _whole_reason(fplan, mine, n)
    return CarriedFile(
        fplan.path, before, after, problem=why, markers=marker_lines(data), hunks=every,
        source=source, base=base, theirs=theirs,
    )  # fmt: skip


def _whole_reason(fplan: FilePlan, mine: bytes | None, n: int) -> str:
    if mine is None and fplan.action != "create":
        return "no such file in this release (moved or removed upstream?): move the change"
    if fplan.action == "create":
        return "the patch creates it, and this release has a different file there"
    if fplan.action == "delete":
        return "the patch deletes it, and this release changed it"
    return f"{n} conflict(s) in the three-way merge of the whole file"


def _checked(files: list[CarriedFile], checks: Checks) -> tuple[CarriedFile, ...]:
    """A carried Python file must compile and must not define a name twice in one body. The
    files carried without a problem were handed to `checks` as they were carried (in parallel
    where that helps: the check never changes what the next file of the patch reads); its
    label names the release carried onto, so a duplicate can say which copy came with it."""
    todo = [n for n, f in enumerate(files) if f.problem is None]
    out = list(files)
    for n, problem in zip(todo, checks.results(), strict=True):
        if problem is not None:
            done = files[n]
            out[n] = replace(done, problem=problem, hunks=done.kept + done.merged)
    return tuple(out)


def _imports_checked(
    files: tuple[CarriedFile, ...], here: MemOverlay, w: tuple[Collection[str], Collection[str]],
    label: str,
) -> tuple[CarriedFile, ...]:  # fmt: skip
    """A carried Python file that compiles must not import from SGLang what W (the release
    with the set so far, this patch's files included) does not have: a file that fails at
    import is a stop, naming the import and where it is now. `w`: W's package files, and
    those an unfinished earlier patch still holds (their names are not known yet)."""
    from sgpatch.placement.pyimports import Release

    listing, held = w
    paths = {p for p in listing if here.changed.get(p, b"") is not None}
    paths |= {p for p, data in here.changed.items() if data is not None}
    release = Release(frozenset(paths), here.read, open_files=frozenset(held))
    out = []
    for f in files:
        why = None
        if f.problem is None and f.mode != SYMLINK:
            why = import_problem(f.path, f.after, f.before, release, label)
        out.append(f if why is None else replace(f, problem=why, hunks=f.kept + f.merged))
    return tuple(out)


def _hunk_list(idx: tuple[int, ...]) -> str:
    return ", ".join(f"#{i}" for i in idx)


__all__ = ["CarriedFile", "CarriedPatch", "Labels", "MemOverlay", "ModeReader", "carry_patch"]
