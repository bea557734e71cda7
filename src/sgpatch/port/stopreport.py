"""What a stopped port tells the person: the `fix` file, and the stop's typed records that
`port --json` renders (each its own `to_json`, but for a hunk's detail: its JSON row is also
what W keeps, so `detail_json` makes it for both).

Three kinds of thing stop a patch, each under its own heading in `fix`:

- files to fix in W: markers (with, per conflicted hunk, upstream's change to that region and
  the patch's, side by side), or a Python check (does not compile, defines a name twice);
- probes: the patch's probe (`W/.sgpatch-port/probes/ID.yaml`) is wrong for the ported change;
- lint: the set as --continue would write it fails lint on the release, named by patch id and
  manifest field.

A problem (`Problem`) is recorded in `problems/ID` as `file<TAB>hunks<TAB>why`; a probe or
lint problem has no file and a `why` that starts with `probe: ` or `lint: FIELD: `. Where a
file's conflict markers are is read off W when it is shown (the person may have fixed some).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from sgpatch.port.merge import marker_lines
from sgpatch.port.statefiles import (
    PKG,
    STATE,
    dropped_of,
    hunks_of,
    moved_of,
    probe_of,
)
from sgpatch.port.workspace import Workspace
from sgpatch.state.folder import parse_json

if TYPE_CHECKING:
    from sgpatch.port.folds import Suggested
    from sgpatch.port.moved import Move

PROBE, LINT = "probe: ", "lint: "
FILES_HEAD = "files to fix in W (then `sgpatch port --continue --workspace {top}`):"
LEFT_HEAD = "left to fix in W (then `sgpatch port --continue --workspace {top}`):"
PROBES_HEAD = "probes (the probe files: edit them during the stop; --continue checks them):"
LINT_HEAD = "lint refuses the set as --continue would write it (patch, manifest field):"


@dataclass(frozen=True)
class Problem:
    """Why a stopped patch needs a hand: a file of W (with the patch's hunks there), or (no
    file) its probe or lint."""

    file: str
    why: str
    hunks: tuple[int, ...] = ()


ALREADY = "already there"
CONFLICT = "conflict"
ALONE = "merges alone; conflicts only with the other hunks"
NO_PLACE = "does not place on the base by itself"
MOVED = "its code is no longer in this file"  # no certain place elsewhere: the candidates
STATUSES = (CONFLICT, ALREADY, ALONE, NO_PLACE, MOVED)


@dataclass(frozen=True)
class HunkDetail:
    """One hunk of a file stopped on its merge, so the person sees why without redoing it:
    upstream's change to the lines it conflicts on beside the patch's, or (already there) the
    evidence. None: the row has no such key (which it has depends on `status`)."""

    hunk: int
    status: str  # one of STATUSES
    where: str | None = None  # the base's lines it conflicts on, placed alone there
    upstream_label: str | None = None  # "base -> release"
    patch_label: str | None = None
    upstream: tuple[str, ...] | None = None  # diff lines: upstream's change there
    patch: tuple[str, ...] | None = None  # diff lines: the patch's change there
    evidence: tuple[str, ...] | None = None  # already there: the scope and the lines


@dataclass(frozen=True)
class FileStop:
    """A file problem as a step's report shows it: the conflict markers left in W's file now
    and the per-hunk details recorded at the stop (`hunks/ID/FILE.jsonl`)."""

    problem: Problem
    markers: tuple[int, ...]
    details: tuple[HunkDetail, ...]
    fold: Suggested | None = None  # W's file defines a name twice: the fold suggested

    def to_json(self) -> dict:
        """One file problem of `port --json` (docs/json.md): the file, why, the patch's hunks
        there, W's markers now, each hunk's detail, the fold suggested (null: none)."""
        p, f = self.problem, self.fold
        fold = None if f is None else {"folds": list(f.folds), "diff": list(f.diff)}
        return {"file": p.file, "why": p.why, "hunks": list(p.hunks),
                "markers": list(self.markers),
                "details": [detail_json(d) for d in self.details], "fold": fold}  # fmt: skip


@dataclass(frozen=True)
class ProbeStop:
    """A stopped patch's probe: its file in W (None: port wrote none) and why it stops the
    patch (None: it does not)."""

    file: str | None
    problem: str | None

    def to_json(self) -> dict:
        return {"file": self.file, "problem": self.problem}


@dataclass(frozen=True)
class Dropped:
    """A hunk port dropped as already there upstream (one line of `dropped/ID`): the file,
    the hunk's number in the patch, the evidence lines."""

    file: str
    hunk: int
    evidence: tuple[str, ...]

    def to_json(self) -> dict:
        return {"file": self.file, "hunk": self.hunk, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class LintRefusal:
    """A lint error that stops the set being written: the patch it is about (None: the set's
    own range), the manifest field to change, and lint's message."""

    patch: str | None
    field: str
    message: str

    def to_json(self) -> dict:
        return {"patch": self.patch, "field": self.field, "message": self.message}


def kind(problem: Problem) -> str:
    """file | probe | lint."""
    if problem.file:
        return "file"
    return "lint" if problem.why.startswith(LINT) else "probe"


def lint_problem(field: str, message: str) -> Problem:
    return Problem("", f"{LINT}{field}: {message}")


def probe_problem(why: str) -> Problem:
    return Problem("", f"{PROBE}{why}")


def fix_lines(ws: Workspace, stopped: Sequence, only: set[str] | None = None) -> list[str]:
    """The `fix` file: a heading per kind, one entry per problem (a file's entry followed by
    its hunks' details); `only`: the files still to fix (None: every stopped file)."""
    files: list[str] = []
    probes: list[str] = []
    lints: list[str] = []
    for o in stopped:
        for p in o.problems:
            k = kind(p)
            if k == "file":
                if only is None or p.file in only:
                    files += file_entry(ws, o.id, p)
            elif k == "probe":
                probes.append(f"  {o.id}: {p.why[len(PROBE) :]}")
            else:
                field, _, message = p.why[len(LINT) :].partition(": ")
                lints.append(f"  {o.id} ({field}): {message}")
    asked = {ln.split(":", 1)[0].strip() for ln in probes}
    for o in stopped:
        has = has_probe(ws, o.id)
        if has is not None and o.id not in asked:
            what = "its probe" if has else "no probe: write one there if it needs one"
            probes.append(f"  {o.id}: {ws.top}/{STATE}/{probe_of(o.id)} ({what}; checked at "
                          "--continue)")  # fmt: skip
    out: list[str] = []
    for head, body in ((FILES_HEAD.format(top=ws.top), files), (PROBES_HEAD, probes),
                       (LINT_HEAD, lints)):  # fmt: skip
        if body:
            out += [head, *body]
    return out


def has_probe(ws: Workspace, pid: str) -> bool | None:
    """Whether the patch's probe file holds a probe (None: port wrote no file for it; a file
    that does not load, or is too big to, counts as holding one: --continue names its
    problem)."""
    from sgpatch.errors import SgpatchError
    from sgpatch.patchset.manifest import load_probe_text

    try:
        data = probe_file(ws, pid)
        if data is None:
            return None
        probe, _ = load_probe_text(data.decode("utf-8"), ws.top / STATE / probe_of(pid))
    except (SgpatchError, UnicodeDecodeError):
        return True
    return probe is not None


MAX_PROBE_FILE = 64 << 10  # a probe file is a few hundred bytes; YAML parses at ~1.5 MB/s


def probe_file(ws: Workspace, pid: str) -> bytes | None:
    """The bytes of a stopped patch's probe file (None: port wrote none). One past
    MAX_PROBE_FILE is bad input, neither read nor parsed (10 MB cost --continue 8.7 s)."""
    from sgpatch.errors import bad_input

    name = probe_of(pid)
    try:
        size = (ws.top / STATE / name).lstat().st_size
    except (OSError, ValueError):
        size = 0
    data = ws.get_bytes(name) if size <= MAX_PROBE_FILE else None
    if size > MAX_PROBE_FILE or (data is not None and len(data) > MAX_PROBE_FILE):
        raise bad_input(
            f"{ws.top}/{STATE}/{name}: more than {MAX_PROBE_FILE} bytes, too big for a probe "
            "(what `probe:` holds in patchset.yaml); make it a few lines"
        )
    return data


def file_entry(ws: Workspace, pid: str, p: Problem) -> list[str]:
    """A stopped file's entry in `fix`: its line, then each hunk's details."""
    stop = file_stop(ws, pid, p)
    where = f" (markers at lines {', '.join(map(str, stop.markers))})" if stop.markers else ""
    hunks = ", ".join(f"#{h}" for h in p.hunks) or "-"
    out = [f"  {PKG}/{p.file}{where}: {pid} hunk(s) {hunks}: {p.why}"]
    for d in stop.details:
        out += ["    " + ln for ln in render_detail(d)]
    if stop.fold is not None:
        out += ["    " + ln for ln in stop.fold.lines(ws.top)]
    return out


# ---------------------------------------------------------------------------------------------
# per-hunk details (what upstream did to the region, what the patch does), kept as JSON lines


_KEYS = tuple(sorted(f.name for f in fields(HunkDetail)))  # a row's keys, in its order


def detail_json(d: HunkDetail) -> dict:
    """The row W keeps and --json shows: keys sorted, as W has always kept them (a workspace
    outlives an upgrade of sgpatch), a field that is None left out."""
    row = {k: getattr(d, k) for k in _KEYS}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in row.items() if v is not None}


def detail_of(row: object) -> HunkDetail:
    """A row read back from W (ValueError for one sgpatch does not write: the caller refuses
    the file as damaged, as every state file is, rather than show a guess)."""
    if not isinstance(row, dict) or not row.keys() <= set(_KEYS):
        raise ValueError("not a hunk detail")
    hunk, status = row.get("hunk"), row.get("status")
    if type(hunk) is not int or hunk < 1 or status not in STATUSES:
        raise ValueError("no hunk number or status")
    return HunkDetail(
        hunk, status, where=_text(row, "where"), upstream_label=_text(row, "upstream_label"),
        patch_label=_text(row, "patch_label"), upstream=_lines(row, "upstream"),
        patch=_lines(row, "patch"), evidence=_lines(row, "evidence"),
    )  # fmt: skip


def _text(row: dict, key: str) -> str | None:
    """row[key], a string (None: no such key; a null is no row sgpatch writes)."""
    if key not in row:
        return None
    if not isinstance(row[key], str):
        raise ValueError(f"{key}: not a string")
    return row[key]


def _lines(row: dict, key: str) -> tuple[str, ...] | None:
    """row[key], a list of strings (None: no such key)."""
    if key not in row:
        return None
    got = row[key]
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        raise ValueError(f"{key}: not a list of strings")
    return tuple(got)


def put_details(ws: Workspace, pid: str, rel: str, rows: Sequence[HunkDetail]) -> None:
    rows_json = (json.dumps(detail_json(r), sort_keys=True) for r in rows)
    ws.put_lines(hunks_of(pid, rel), rows_json)


def details(ws: Workspace, pid: str, rel: str) -> list[HunkDetail]:
    """The per-hunk details recorded for a stopped file (empty when none were)."""
    out = []
    for ln in ws.lines(hunks_of(pid, rel)):
        try:
            out.append(detail_of(parse_json(ln.encode())))
        except ValueError:  # not JSON (nested too deeply too), or not a row sgpatch writes
            raise ws.damaged(hunks_of(pid, rel), f"line {ln[:60]!r}") from None
    return out


def render_detail(d: HunkDetail) -> list[str]:
    """One hunk's detail as text: what happened, then upstream's change and the patch's
    change to the same lines side by side (or the evidence a hunk is already there)."""
    head = f"hunk #{d.hunk}: {d.status}"
    if d.where:
        head += f" ({d.where})"
    if d.status == ALREADY:
        return [head, *[f"  {e}" for e in d.evidence or ()]]
    if d.status == MOVED:
        change = [f"  the patch, {d.patch_label}:", *(f"  {x}" for x in d.patch or ())]
        return [head, *[f"  {e}" for e in d.evidence or ()], *change]
    left = [f"upstream, {d.upstream_label or ''}:", *(d.upstream or ())]
    right = [f"the patch, {d.patch_label or ''}:", *(d.patch or ())]
    return [head, *side_by_side(left, right)]


def side_by_side(left: Sequence[str], right: Sequence[str], gap: str = " | ") -> list[str]:
    width = max((len(s) for s in left), default=0)
    n = max(len(left), len(right))
    rows = []
    for i in range(n):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        rows.append(f"  {a.ljust(width)}{gap}{b}".rstrip())
    return rows


def file_stop(ws: Workspace, pid: str, p: Problem) -> FileStop:
    """A file problem of `pid` as W shows it now (the person may have fixed some markers; a
    file that defines a name twice now has its fold suggested, port.folds)."""
    from sgpatch.port.folds import at_stop

    marks = marker_lines(ws.read_pkg(p.file))
    fold = None if marks else at_stop(ws, pid, p.file)
    return FileStop(p, marks, tuple(details(ws, pid, p.file)), fold)


def probe_stop(ws: Workspace, pid: str, problems: Sequence[Problem]) -> ProbeStop | None:
    """A patch's probe at a stop: its file in W, and why it stops the patch (None: neither)."""
    has_file = ws.get_bytes(probe_of(pid)) is not None
    why = [p.why[len(PROBE) :] for p in problems if kind(p) == "probe"]
    if not has_file and not why:
        return None
    return ProbeStop(f"{ws.top}/{STATE}/{probe_of(pid)}" if has_file else None,
                     why[0] if why else None)  # fmt: skip


def lint_refusals(stopped: Sequence) -> list[LintRefusal]:
    """Every lint refusal of the stopped patches."""
    out = []
    for o in stopped:
        for p in o.problems:
            if kind(p) == "lint":
                field, _, message = p.why[len(LINT) :].partition(": ")
                out.append(LintRefusal(o.id, field, message))
    return out


def keep_hunks(ws: Workspace, pid: str, files: Sequence) -> None:
    """Record what the carry found per hunk: the details of each conflicted file's hunks
    (`hunks/ID/FILE.jsonl`) and the hunks dropped as already there (`dropped/ID`)."""
    rows = [f"{d.file}\t{d.hunk}\t{' / '.join(d.evidence)}" for f in files for d in f.dropped]
    if rows:
        ws.put_lines(dropped_of(pid), [*ws.lines(dropped_of(pid)), *rows])
    for f in files:
        if f.details:
            put_details(ws, pid, f.path, f.details)


def keep_moves(ws: Workspace, pid: str, files: Sequence) -> None:
    """Record the hunks carried into the file their code moved to (`moved/ID`: old file,
    hunk, its scope there, the file and line it went to, the evidence, conflicts left)."""
    rows = [f"{m.old}\t{m.hunk}\t{m.scope}\t{m.target}\t{m.line}\t{m.how}\t{m.conflicts}"
            for f in files for m in f.moves]  # fmt: skip
    if rows:
        ws.put_lines(moved_of(pid), [*ws.lines(moved_of(pid)), *rows])


def moves(ws: Workspace, pid: str) -> tuple[Move, ...]:
    """The hunks of `pid` carried into moved code (`moved/ID`), in the order recorded."""
    from sgpatch.port.moved import Move

    out = []
    for ln in ws.lines(moved_of(pid)):
        parts = ln.split("\t")
        if len(parts) != 7 or not all(_count(x) for x in (parts[1], parts[4], parts[6])):
            raise ws.damaged(moved_of(pid), f"line {ln[:60]!r}")
        old, hunk, scope, target, line, how, bad = parts
        out.append(Move(int(hunk), old, scope, target, int(line), how, int(bad)))
    return tuple(out)


def _count(text: str) -> bool:
    return text.isdigit() and len(text) < 10


def dropped(ws: Workspace, pid: str) -> tuple[Dropped, ...]:
    """The hunks of `pid` dropped as already there (`dropped/ID`), in the order recorded."""
    out = []
    for ln in ws.lines(dropped_of(pid)):
        parts = ln.split("\t")
        if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 9:
            raise ws.damaged(dropped_of(pid), f"line {ln[:60]!r}")
        out.append(Dropped(parts[0], int(parts[1]), tuple(parts[2].split(" / "))))
    return tuple(out)


def with_lint_rows(fix: list[str], rows: Sequence[LintRefusal]) -> list[str]:
    """`fix` with lint's errors about a release (not one patch's cell) under the lint
    heading, by patch and field."""
    if not rows:
        return fix
    out = list(fix)
    if LINT_HEAD not in out:
        out.append(LINT_HEAD)
    at = out.index(LINT_HEAD) + 1
    while at < len(out) and out[at].startswith("  "):
        at += 1
    lines = [f"  {r.patch or 'the set'} ({r.field}): {r.message}" for r in rows]
    return out[:at] + lines + out[at:]
