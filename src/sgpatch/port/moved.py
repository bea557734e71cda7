"""Code upstream moved to another file: where a hunk's code went, and carrying it there.

git follows a renamed file; SGLang also moves *code* between files (server_args.py into
arg_groups/, the scheduler's output mixin into scheduler_components/). A hunk that does not
place in its file, and whose code is no longer there (its def/class is gone from the file, or
fewer than half of its lines are), is looked for in the release's other files
(port.relindex). It is carried there only when the place is certain (docs/porting.md, "Code
upstream moved"):

- its lines: the hunk's whole pre-image placed exactly (the engine, fuzz 0) at one place of
  the release's other files, and nowhere else; or
- its def/class: the one def/class of that name in the release's other files (the one with
  the same name path, where several have the name), holding more than half of the old one's
  lines (git's rename score): the hunk is merged three-way against it (base: the def on the
  variant's base; theirs: that def with the hunk; ours: the moved def).

Anything less certain is a stop that lists the candidates with their evidence: a stop is
better than a guess. Nothing here writes: the caller carries what `sort_out` returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from packaging.version import Version

from sgpatch.diff.unified import Hunk, decode, encode, split_lines
from sgpatch.placement import scope as sc
from sgpatch.port.relindex import Def, chain_of, defs_of, index_of

DISTINCT = 10  # a line this long (stripped) tells code apart (as port.source scores renames)
SIMILAR = 0.5  # a moved def shares more than half of its lines with the old one
SHOWN = 3  # candidates listed per hunk (and files a rewritten file's code went to)
COMMON = 20  # a def name held by more defs of the release tells nothing (`__init__`, `forward`)
CLOSE = 0.25  # a def of the same name sharing this much of the old one's lines is a candidate
MANY = 10  # a file holding this many of a rewritten file's lines is one its code went to
FOLDERS = 2  # folders named for the further files a rewritten file's code went to
SHARE = 4  # ... each holding at least a quarter of them

Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True)
class Scope:
    """The def/class a hunk changes on the base (its name path; () at module level)."""

    names: tuple[str, ...] = ()
    kind: str = ""
    block: sc.Block | None = None

    @property
    def label(self) -> str:
        """`def ServerArgs._handle_page_size`, `class ServerArgs` or `module level`."""
        return f"{self.kind} {'.'.join(self.names)}" if self.names else "module level"


def hunk_scope(lines: Sequence[str], hunk: Hunk, at: int) -> Scope:
    """The innermost def/class whose body holds the hunk's changed lines, on `lines` where its
    pre-image starts at 0-based line `at`, and whose header is indented less than they are:
    the scope the change is in, not the nearest def above it (git's funcname)."""
    first = next((i for i, ln in enumerate(hunk.lines) if ln.kind != " "), 0)
    start = at + first
    end = start + sum(1 for ln in hunk.lines if ln.kind == "-")
    texts = [ln.text for ln in hunk.lines if ln.kind != " " and ln.text.strip()]
    indent = min((_indent(t) for t in texts), default=0)
    found = sc.blocks(lines)
    chain = [b for b in found if b.line < start and max(end, start) <= b.end
             and _indent(lines[b.line]) < indent]  # fmt: skip
    if not chain:
        return Scope()
    inner = max(chain, key=lambda b: b.depth)
    return Scope(chain_of(found, inner), inner.kind, inner)


def _indent(text: str) -> int:
    text = text.expandtabs(8)
    return len(text) - len(text.lstrip())


# ---------------------------------------------------------------------------------------------
# what a sorted-out hunk is


@dataclass(frozen=True)
class Candidate:
    """A place the code of a stopped hunk may have gone, and why port thinks so."""

    file: str
    line: int  # 1-based
    evidence: str
    strong: bool = True  # evidence enough to call the code moved (a stop instead of a merge)

    def text(self) -> str:
        return f"{self.file}:{self.line} ({self.evidence})"


@dataclass(frozen=True)
class Move:
    """A hunk carried into the file its code moved to, with certainty."""

    hunk: int
    old: str  # the file the hunk was made for
    scope: str  # its scope there, by name path (`ServerArgs.__post_init__`, `module level`)
    target: str
    line: int  # 1-based line of the change in the target, as carried
    how: str  # the evidence that made the place certain
    conflicts: int = 0  # left by the three-way merge against the moved def (markers there)
    already: bool = False  # the merge leaves the moved def as it is: the change is there

    def text(self) -> str:
        """The one line the report says it in."""
        return f"moved: {self.old} {self.scope} -> {self.target}:{self.line}"

    def to_json(self) -> dict:
        """A row of `port --json`'s `moved` (docs/json.md)."""
        return {"file": self.old, "hunk": self.hunk, "scope": self.scope, "to": self.target,
                "line": self.line, "how": self.how, "conflicts": self.conflicts}  # fmt: skip


@dataclass(frozen=True)
class Lost:
    """A hunk whose code is no longer in its file and has no certain place: a stop, with the
    candidates and their evidence."""

    hunk: int
    scope: str
    why: str
    candidates: tuple[Candidate, ...] = ()
    held: str = ""  # the certain place is in this file, which an earlier patch still holds

    def text(self) -> str:
        where = "; maybe " + ", ".join(c.text() for c in self.candidates) if self.candidates else ""
        return f"hunk #{self.hunk} ({self.scope}): {self.why}{where}"


@dataclass(frozen=True)
class Rewrite:
    """A file upstream rewrote: most of the base's distinctive lines are gone from it."""

    old_lines: int
    new_lines: int
    kept: float  # share of the base's distinctive lines still in the file
    went: tuple[tuple[str, int], ...]  # the files most of the rest went to, with how many
    rest: tuple[str, ...] = ()  # further files that got MANY of them or more

    def text(self, base: str, to: str) -> str:
        where = ", ".join(f"{f} ({n} lines)" for f, n in self.went)
        went = f"; its code went to {where}{_more(self.rest)}" if where else ""
        return (f"rewritten upstream ({self.old_lines:,} lines on {base} -> {self.new_lines:,} "
                f"on {to}, {self.kept:.0%} of its lines still there)"
                f"{went or '; its code is nowhere else'}")  # fmt: skip


def _more(rest: Sequence[str]) -> str:
    """The further files a rewritten file's code went to, by the folder that holds many of
    them (a file split into a package of modules is that folder, not a count): `and 85 more
    files in srt/arg_groups/`, or `... (31 in srt/arg_groups/)` when others hold a few
    lines each. A folder is named with its subfolders, the deepest of equal count, when it
    holds a SHARE of them; a top folder (`srt/`, which holds nearly all) never."""
    if not rest:
        return ""
    by = Counter(d for f in rest for d in _folders(f))
    ranked = sorted(by.items(), key=lambda dn: (-dn[1], -dn[0].count("/")))
    named: list[tuple[str, int]] = []
    for d, n in ranked:
        if len(named) == FOLDERS or n < 2 or n * SHARE < len(rest):
            break
        if not any(_nested(d, e) for e, _n in named):
            named.append((d, n))
    if not named:
        return f" and {len(rest)} more file(s)"
    if named[0][1] == len(rest):
        return f" and {len(rest)} more files in {named[0][0]}/"
    where = " and ".join(f"{n} in {d}/" for d, n in named)
    return f" and {len(rest)} more files ({where})"


def _folders(rel: str) -> list[str]:
    """The folders `rel` is in, but the top one: `srt/a/b/x.py` -> srt/a, srt/a/b."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]


def _nested(a: str, b: str) -> bool:
    return a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")


@dataclass(frozen=True)
class Sorted:
    """The failing hunks of one file, sorted out: carried elsewhere (`moves`, the targets'
    new bytes in `files`, in the order written), stopped (`lost`), or merged in their file as
    before (`stay`); and whether upstream rewrote the file."""

    moves: tuple[Move, ...] = ()
    lost: tuple[Lost, ...] = ()
    stay: tuple[Hunk, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict)
    rewrite: Rewrite | None = None
    there: tuple[Move, ...] = ()  # moved where the change is already made (nothing to carry)


@dataclass(frozen=True)
class Elsewhere:
    """What looking elsewhere needs: the release (its index), W's files as the carry sees
    them, the files that cannot be written now (an unfinished earlier patch holds them), the
    merge labels (ours, base, theirs) and the two releases' names for messages."""

    version: Version
    read: Reader
    held: frozenset[str] = frozenset()
    labels: tuple[str, str, str] = ("ours", "base", "theirs")


class Placed(Protocol):
    """How a hunk places alone on its file's base (carry's `_Alone`): `at` its pre-image's
    0-based start (None: it does not place there), `lines` the base with it applied."""

    def at(self, h: Hunk) -> int | None: ...

    def lines(self, h: Hunk) -> Sequence[str]: ...


# ---------------------------------------------------------------------------------------------
# sorting out a file's failing hunks


def sort_out(
    path: str, base: Sequence[str], ours: Sequence[str] | None, failing: Sequence[Hunk],
    placed: Placed, where: Elsewhere,
) -> Sorted:  # fmt: skip
    """Each failing hunk of `path`: carried to where its code went, stopped with candidates,
    or left to the usual merge in its file. `ours`: W's file (None: the release lacks it)."""
    mine = list(ours or [])
    names = _Names(mine)
    gone = {h.index: s for h in failing if (s := _gone_scope(h, base, names, placed)) is not None}
    if not gone:
        return Sorted(stay=tuple(failing))
    rewrite = rewritten(path, base, mine, where) if ours is not None else None
    files: dict[str, bytes] = {}
    moves: list[Move] = []
    there: list[Move] = []
    lost: list[Lost] = []
    stay: list[Hunk] = []
    for h in failing:
        if h.index not in gone:
            stay.append(h)
            continue
        got = _elsewhere(path, h, base, names, gone[h.index], placed, where, files)
        if isinstance(got, Move):
            (there if got.already else moves).append(got)
        elif any(c.strong for c in got.candidates) or got.held or rewrite or ours is None:
            lost.append(got)
        else:  # rewritten in place, found nowhere else: the usual merge shows upstream's side
            stay.append(h)
    return Sorted(tuple(moves), tuple(lost), tuple(stay), files, rewrite, tuple(there))


class _Names:
    """W's file: its def/class name paths and its stripped lines, each worked out once."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._paths: set[tuple[str, ...]] | None = None
        self._stripped: set[str] | None = None

    def has(self, names: tuple[str, ...]) -> bool:
        if self._paths is None:
            self._paths = {d.names for d in defs_of("", self.lines)}
        return names in self._paths

    def holds(self, text: str) -> bool:
        if self._stripped is None:
            self._stripped = {ln.strip() for ln in self.lines}
        return text in self._stripped


def _gone_scope(h: Hunk, base: Sequence[str], ours: _Names, placed: Placed) -> Scope | None:
    """The hunk's scope when its code is no longer in W's file (its def/class is not there by
    name path, or fewer than half of its distinctive lines are), else None."""
    at = placed.at(h)
    if at is None:
        return None
    scope = hunk_scope(base, h, at)
    if scope.names and not ours.has(scope.names):
        return scope
    lines = _distinct(h)
    if not lines:
        return None
    return scope if 2 * sum(1 for t in lines if ours.holds(t)) < len(lines) else None


def _distinct(h: Hunk) -> list[str]:
    """The hunk's pre-image lines that tell code apart (stripped, 10 characters or more)."""
    return [t for t in (x.strip() for x in h.side_texts[0]) if len(t) >= DISTINCT]


_DEF_GONE = "its def/class is no longer in this file, and no certain place was found"
_HELD = "its code went to a file an earlier unfinished patch holds: it waits for that patch"
_LINES_GONE = "its lines are no longer in this file, and no certain place was found"


def _elsewhere(
    path: str, h: Hunk, base: Sequence[str], ours: _Names, scope: Scope, placed: Placed,
    where: Elsewhere, files: dict[str, bytes],
) -> Move | Lost:  # fmt: skip
    """The certain place of the hunk's code outside `path` (carried there, into `files`), or
    why not and the candidates."""
    name = ".".join(scope.names) or "module level"
    gone_def = bool(scope.names) and not ours.has(scope.names)
    why = _DEF_GONE if gone_def else _LINES_GONE
    at_lines = _by_lines(path, h, where, files)
    if isinstance(at_lines, Move):
        return _named(at_lines, path, name)
    if isinstance(at_lines, Lost):
        return replace(at_lines, scope=scope.label)
    found = _by_def(path, h, base, scope, placed, where, files) if gone_def else None
    if isinstance(found, Move):
        return _named(found, path, name)
    if isinstance(found, Lost):
        return replace(found, scope=scope.label)
    cands = [*(found or []), *at_lines]
    cands += _by_some_lines(path, h, where, {c.file for c in cands})
    return Lost(h.index, scope.label, why, tuple(cands[:SHOWN]))


def _named(m: Move, old: str, scope: str) -> Move:
    return replace(m, old=old, scope=scope)


def _read_lines(where: Elsewhere, files: dict[str, bytes], rel: str) -> list[str] | None:
    data = files[rel] if rel in files else where.read(rel)
    return None if data is None else split_lines(decode(data))


def _by_lines(path: str, h: Hunk, where: Elsewhere, files: dict[str, bytes]):
    """The hunk's whole pre-image at exactly one place of the release's other files (and its
    post-image nowhere): the hunk carried there by the engine (a Move; a Lost that waits when
    an earlier patch holds that file); else the places found (candidates)."""
    from sgpatch.placement.match import LineIndex, search

    texts = h.side_texts[0]
    if not texts or not any(t.strip() for t in texts):
        return []
    longest = max(texts, key=lambda t: len(t.strip()))
    places: list[tuple[str, int, bool]] = []
    for rel in index_of(where.version).holding(longest):
        lines = _read_lines(where, files, rel) if rel != path else None
        if lines is not None:
            idx = LineIndex(lines)
            places += [(rel, p.pos, p.new_side) for p in search(h, idx, "exact", 0, 0, 0)]
    pre = [(rel, pos) for rel, pos, new in places if not new]
    if len(pre) == 1 and len(places) == 1:
        if pre[0][0] in where.held:
            return Lost(h.index, "", _HELD, held=pre[0][0])
        got = _apply_at(h, pre[0][0], pre[0][1], where, files)
        if got is not None:
            return got
    return [_line_candidate(rel, pos, new, where) for rel, pos, new in places]


def _line_candidate(rel: str, pos: int, new: bool, where: Elsewhere) -> Candidate:
    if new:
        return Candidate(rel, pos + 1, "the change is already there")
    return Candidate(rel, pos + 1, "all of its lines, found at more than one place")


def _apply_at(h: Hunk, rel: str, pos: int, where: Elsewhere, files: dict[str, bytes]):
    """The hunk placed by the engine at `pos` of `rel` (as at its own line): a Move, or None
    if the engine does not take it there as it is."""
    from sgpatch.placement.engine import apply_hunks

    lines = _read_lines(where, files, rel) or []
    moved = h._replace(source_start=pos + 1, target_start=pos + 1)
    res = apply_hunks(lines, (moved,))
    (r,) = res.hunks
    if r.status != "applied" or r.level != "exact" or r.whitespace or r.line is None:
        return None
    files[rel] = encode("".join(res.lines))
    first = next((i for i, ln in enumerate(h.lines) if ln.kind != " "), 0)
    return Move(h.index, "", "", rel, r.line + first, "its lines, found at this one place")


def _by_def(
    path: str, h: Hunk, base: Sequence[str], scope: Scope, placed: Placed, where: Elsewhere,
    files: dict[str, bytes],
) -> Move | Lost | list[Candidate]:  # fmt: skip
    """The one def/class of the same name elsewhere (the same name path first), holding more
    than half of the old one's lines: the hunk merged three-way against it (a Lost that waits
    when an earlier patch holds that file). Else the defs of that name as candidates."""
    assert scope.block is not None
    name = scope.names[-1]
    defs = [d for d in index_of(where.version).defs_named(name, scope.kind) if d.file != path]
    same = [d for d in defs if d.names == scope.names]
    pick = same or (defs if len(defs) <= COMMON else [])
    old = base[scope.block.start : scope.block.end]
    cands = []
    for d in pick:
        now = _now_def(d, where, files)
        if now is not None:
            lines, block = now
            share = similarity(old, lines[block.start : block.end])
            how = f"{d.block.kind} {d.qualified}, {share:.0%} of its lines the same"
            cands.append((d, share, how, lines, block))
    if len(pick) == 1 and cands and cands[0][1] > SIMILAR:
        d, _share, how, lines, block = cands[0]
        if d.file in where.held:
            return Lost(h.index, "", _HELD, held=d.file)
        return _merge_def(h, scope, base, placed, (d.file, lines, block), how, where, files)
    cands.sort(key=lambda c: -c[1])
    return [Candidate(d.file, b.line + 1, how, share >= CLOSE)
            for d, share, how, _l, b in cands[:SHOWN]]  # fmt: skip


def _now_def(d: Def, where: Elsewhere, files: dict[str, bytes]):
    """The def as W holds it now (an earlier patch may have changed its file): (the file's
    lines, its block), or None when W's file no longer has it once."""
    lines = _read_lines(where, files, d.file)
    if lines is None:
        return None
    same = [x for x in defs_of(d.file, lines) if x.names == d.names]
    return (lines, same[0].block) if len(same) == 1 else None


def _merge_def(
    h: Hunk, scope: Scope, base: Sequence[str], placed: Placed, target, how: str,
    where: Elsewhere, files: dict[str, bytes],
) -> Move:  # fmt: skip
    """The hunk's change merged three-way into the moved def (`target`: its file, the file's
    lines, its block): base = the def on the base, theirs = the def with the hunk, ours = the
    moved def. Conflicts stay in the target as markers (the place is certain)."""
    from sgpatch.port.merge import merge_file

    assert scope.block is not None
    rel, lines, block = target
    b = scope.block
    delta = sum(1 for ln in h.lines if ln.kind == "+") - sum(1 for ln in h.lines if ln.kind == "-")
    theirs = list(placed.lines(h))[b.start : b.end + delta]
    ours = lines[block.start : block.end]
    data, n = merge_file(_bytes(base[b.start : b.end]), _bytes(ours), _bytes(theirs), where.labels)
    merged = split_lines(decode(data))
    if n == 0 and merged == list(ours):  # upstream made the very change in the moved def
        return Move(h.index, "", "", rel, block.line + 1, f"the same {how}", 0, already=True)
    files[rel] = _bytes([*lines[: block.start], *merged, *lines[block.end :]])
    at = next((i for i, (x, y) in enumerate(zip(merged, ours, strict=False)) if x != y),
              min(len(merged), len(ours)))  # fmt: skip
    return Move(h.index, "", "", rel, block.start + at + 1, f"the same {how}", n)


def _bytes(lines: Sequence[str]) -> bytes:
    return encode("".join(lines))


def _by_some_lines(path: str, h: Hunk, where: Elsewhere, seen: set[str]) -> list[Candidate]:
    """Files of the release holding some of the hunk's distinctive lines (the most first):
    where its code may have gone, rewritten."""
    lines = sorted(set(_distinct(h)), key=len, reverse=True)
    index = index_of(where.version)
    count: Counter = Counter()
    for t in lines:
        for rel in index.holding(t):
            if rel != path and rel not in seen:
                count[rel] += 1
    out = []
    want = set(lines)
    for rel, n in count.most_common(SHOWN):
        rows = index.lines(rel)
        line = next((i for i, ln in enumerate(rows) if ln.strip() in want), None)
        if line is not None:
            where_in = sc.describe(sc.blocks(rows), line)
            said = f"{n} of {len(lines)} of its lines, in {where_in}"
            out.append(Candidate(rel, line + 1, said, 2 * n >= len(lines)))
    return out


# ---------------------------------------------------------------------------------------------
# similarity and rewrites


def _counts(lines: Sequence[str]) -> Counter:
    return Counter(s for ln in lines if len(s := ln.strip()) >= DISTINCT)


def similarity(old: Sequence[str], new: Sequence[str]) -> float:
    """The share of two blocks' distinctive lines they have in common, over the bigger (git's
    rename score, as port.source scores a renamed file); 0 for a block too small to tell."""
    a, b = _counts(old), _counts(new)
    if sum(a.values()) < 2:
        return 0.0
    return sum((a & b).values()) / max(sum(a.values()), sum(b.values()), 1)


def rewritten(
    path: str, base: Sequence[str], ours: Sequence[str], where: Elsewhere
) -> Rewrite | None:
    """`path` rewritten upstream: fewer than half of the base's distinctive lines still in
    W's file. Then where the others went (the release's files holding the most of them)."""
    old = set(_counts(base))
    if len(old) < 3:
        return None
    have = set(_counts(ours))
    kept = len(old & have) / len(old)
    if kept >= SIMILAR:
        return None
    went = index_of(where.version).where_lines_went(old - have, path)
    top = tuple(went.most_common(SHOWN))
    rest = tuple(f for f, n in went.most_common()[SHOWN:] if n >= MANY)
    return Rewrite(len(base), len(ours), kept, top, rest)


# ---------------------------------------------------------------------------------------------
# a stopped hunk's place in its old file


def lost_blocks(
    lost: Sequence[Lost], hunks: Sequence[Hunk], base: Sequence[str], ours: Sequence[str],
    placed: Placed, labels: tuple[str, str, str],
) -> list[str]:  # fmt: skip
    """`ours` with one small conflict block per stopped hunk (its lines on the base, nothing
    on the release's side, the patch's lines), near where its code was: the person moves the
    change by hand and deletes the block. Never one block spanning a rewritten file."""
    by_index = {h.index: h for h in hunks}
    out = list(ours)
    inserts = []
    for lo in lost:
        h = by_index[lo.hunk]
        at = placed.at(h)
        pos = _mapped(base, out, at, _region(base, out, h, at)) if at is not None else len(out)
        inserts.append((pos, _block(h, lo, labels)))
    for pos, block in sorted(inserts, key=lambda x: -x[0]):
        if out and pos == len(out) and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out[pos:pos] = block
    return out


def _block(h: Hunk, lo: Lost, labels: tuple[str, str, str]) -> list[str]:
    ours, base, theirs = labels
    return [
        f"<<<<<<< {ours} (hunk #{lo.hunk}: its code is no longer here; see fix)\n",
        f"||||||| {base}\n",
        *(f"{t}\n" for t in h.side_texts[0]),
        "=======\n",
        *(f"{t}\n" for t in h.side_texts[1]),
        f">>>>>>> {theirs}\n",
    ]


def _region(base: Sequence[str], ours: Sequence[str], h: Hunk, at: int) -> tuple[int, int]:
    """The lines of `ours` the hunk's scope spans there (its def/class by name path, once),
    else the whole file: a stopped hunk's block stays inside the code it was made for."""
    names = hunk_scope(base, h, at).names
    same = [d.block for d in defs_of("", ours) if names and d.names == names]
    return (same[0].start, same[0].end) if len(same) == 1 else (0, len(ours))


def _mapped(base: Sequence[str], ours: Sequence[str], at: int, region: tuple[int, int]) -> int:
    """Where line `at` of the base is in `ours`, inside `region`: just after the nearest
    distinctive line above it that both files hold exactly once (there, in the region);
    else just before the nearest one below; else the end of the region."""
    lo, hi = region
    a, b = Counter(x.strip() for x in base), Counter(x.strip() for x in ours)
    pos = {x.strip(): i for i, x in enumerate(ours)}
    in_base, in_ours = _innermost(base), _innermost(ours)

    def anchor(i: int) -> bool:  # the same line, once in each file, in the same def/class
        t = base[i].strip()
        if len(t) < DISTINCT or a[t] != 1 or b[t] != 1 or not lo <= pos[t] < hi:
            return False
        return in_base(i) == in_ours(pos[t])

    for i in range(min(at, len(base)) - 1, -1, -1):
        if anchor(i):
            return pos[base[i].strip()] + 1
    for i in range(at, len(base)):
        if anchor(i):
            return pos[base[i].strip()]
    return hi


def _innermost(lines: Sequence[str]) -> Callable[[int], tuple[str, ...]]:
    """line -> the name path of the innermost def/class holding it (() at module level)."""
    defs = defs_of("", lines)

    def at(i: int) -> tuple[str, ...]:
        inside = [d for d in defs if d.block.start <= i < d.block.end]
        return max(inside, key=lambda d: d.block.depth).names if inside else ()

    return at


__all__ = [
    "Candidate",
    "Elsewhere",
    "Lost",
    "Move",
    "Placed",
    "Rewrite",
    "Scope",
    "Sorted",
    "hunk_scope",
    "lost_blocks",
    "rewritten",
    "similarity",
    "sort_out",
]
