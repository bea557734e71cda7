"""Place the hunks of one file's diff into that file's lines: never in the wrong place, never
silently. Pure functions, no I/O.

Search order per hunk, stopping at the first level that finds a place (docs/engine.md):
  1. exact at the expected line (stated line, carried forward from where earlier hunks landed);
  2. exact elsewhere;
  3. whitespace-tolerant (trailing blanks and runs of inner blanks ignored; indentation kept);
  4. fuzz 1..F: drop up to F *outer context* lines (least dropped first; never all context).
At every level the hunk's post-image is searched too: found where the pre-image is not, the hunk
is "already applied" and skipped (so a patch is never applied twice, and -R on an unpatched file
changes nothing). Beyond level 1 a place must be unique after the later-than-previous-hunk rule,
or made unique by the hunk header's scope (`@@ ... @@ class Name`); otherwise the hunk is refused
as ambiguous with the candidates listed. A fuzzed place outside the scope the header names is
refused too: that is how GNU patch lands code after a `return` in an unrelated function.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from sgpatch import scope
from sgpatch.diffs import Hunk, strip_eol

Status = Literal["applied", "already-applied", "conflict", "ambiguous"]
Level = Literal["exact", "moved", "whitespace", "fuzz", "none"]

_SCOPE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")
_FUNCNAME_DEFAULT = re.compile(r"^[A-Za-z_$]")


@dataclass(frozen=True)
class HunkResult:
    """What happened to one hunk, with enough detail to explain it to a person."""

    index: int
    status: Status
    level: Level = "none"
    line: int | None = None  # 1-based line where the post-image starts in the result file
    offset: int = 0  # line - stated target line
    fuzz: int = 0  # context lines dropped (max of leading/trailing)
    whitespace: bool = False  # matched only when ignoring whitespace differences
    candidates: tuple[int, ...] = ()  # 1-based lines (in the input file) considered
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "already-applied")


@dataclass(frozen=True)
class FileResult:
    """The file after placing every hunk, and one result per hunk."""

    lines: tuple[str, ...]
    hunks: tuple[HunkResult, ...]

    @property
    def ok(self) -> bool:
        return all(h.ok for h in self.hunks)

    @property
    def changed(self) -> bool:
        return any(h.status == "applied" for h in self.hunks)


def exact_key(line: str) -> str:
    return strip_eol(line)


def ws_key(line: str) -> str:
    """Whitespace-tolerant key: indentation width kept, inner runs collapsed, trailing dropped."""
    text = strip_eol(line).expandtabs(8)
    body = text.lstrip()
    return f"{len(text) - len(body)}|{' '.join(body.split())}"


def dominant_eol(lines: Sequence[str]) -> str:
    crlf = sum(1 for ln in lines if ln.endswith("\r\n"))
    lf = sum(1 for ln in lines if ln.endswith("\n")) - crlf
    return "\r\n" if crlf > lf else "\n"


class _Index:
    """Line keys of the input file plus a first-line index, per normalisation."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._keys: dict[str, list[str]] = {}
        self._pos: dict[str, dict[str, list[int]]] = {}
        self._blocks: tuple[scope.Block, ...] | None = None

    def blocks(self) -> tuple[scope.Block, ...]:
        """The file's def/class blocks (tokenized once, on first need)."""
        if self._blocks is None:
            self._blocks = scope.blocks(self.lines)
        return self._blocks

    def keys(self, mode: str) -> list[str]:
        if mode not in self._keys:
            fn = exact_key if mode == "exact" else ws_key
            keys = [fn(ln) for ln in self.lines]
            pos: dict[str, list[int]] = {}
            for i, k in enumerate(keys):
                pos.setdefault(k, []).append(i)
            self._keys[mode], self._pos[mode] = keys, pos
        return self._keys[mode]

    def positions(self, mode: str, key: str) -> list[int]:
        """0-based lines whose key (in `mode`) is `key`."""
        self.keys(mode)
        return self._pos[mode].get(key, [])

    def find(
        self, pattern: Sequence[str], mode: str, lo: int, at_eof: bool, at_bof: bool = False
    ) -> list[int]:
        """Every position >= lo where `pattern` (already keyed) matches."""
        keys = self.keys(mode)
        n, m = len(keys), len(pattern)
        if m == 0:
            return []
        out = []
        for p in self._pos[mode].get(pattern[0], ()):
            if p < lo or p + m > n:
                continue
            if (at_eof and p + m != n) or (at_bof and p != 0):
                continue
            if keys[p : p + m] == list(pattern):
                out.append(p)
        return out

    def matches_at(
        self, pattern: Sequence[str], mode: str, p: int, at_eof: bool, at_bof: bool = False
    ) -> bool:
        n, m = len(self.lines), len(pattern)
        if p < 0 or p + m > n or (at_eof and p + m != n) or (at_bof and p):
            return False
        if mode == "exact" and mode not in self._keys:  # one spot: no need to index the file
            return [exact_key(ln) for ln in self.lines[p : p + m]] == list(pattern)
        keys = self.keys(mode)
        if p < 0 or p + m > len(keys) or (at_eof and p + m != len(keys)) or (at_bof and p):
            return False
        return keys[p : p + m] == list(pattern)


@dataclass(frozen=True)
class _Image:
    """One side of a hunk (pre or post), possibly trimmed by fuzz."""

    kinds: tuple[str, ...]  # kind of each hunk line kept on this side
    texts: tuple[str, ...]
    lead: int  # context lines dropped at the start
    trail: int  # context lines dropped at the end
    at_eof: bool  # must end at the end of the file
    at_bof: bool = False  # must start at the top of the file


@dataclass(frozen=True)
class _Place:
    """Where a hunk image matched, and how much outer context was dropped to get there."""

    pos: int  # 0-based start in the input file of the matched (trimmed) image
    new_side: bool  # the post-image matched: already applied
    lead: int
    trail: int
    free: bool = False  # matched with its start/end-of-file anchors lifted (fuzz)


def _side(hunk: Hunk, new: bool, lead: int, trail: int, free: bool = False) -> _Image:
    """One image of the hunk with `lead`/`trail` outer context lines dropped.

    Anchors as git's apply.c sets them: a hunk whose start is line 0 or 1 must match at the
    start of the file, one without trailing context at the end. Both go when fuzz drops context
    (or `free`), and for -U0 diffs (`hunk.anchored` False). A missing newline at the end of the
    side always ties it to the end of the file."""
    drop = "-" if new else "+"
    body = [ln for ln in hunk.lines if ln.kind != drop]
    body = body[lead : len(body) - trail]
    no_eol = hunk.new_no_eol if new else hunk.old_no_eol
    anchored = hunk.anchored and not (lead or trail or free)
    _, trail_ctx = _context_edges(hunk)
    start = hunk.target_start if new else hunk.source_start
    return _Image(
        kinds=tuple(ln.kind for ln in body),
        texts=tuple(ln.text for ln in body),
        lead=lead,
        trail=trail,
        at_eof=(no_eol and trail == 0) or (anchored and trail_ctx == 0),
        at_bof=anchored and start <= 1,
    )


def _context_edges(hunk: Hunk) -> tuple[int, int]:
    """Leading and trailing context line counts (what fuzz may drop)."""
    kinds = [ln.kind for ln in hunk.lines]
    lead = next((i for i, k in enumerate(kinds) if k != " "), len(kinds))
    trail = next((i for i, k in enumerate(reversed(kinds)) if k != " "), len(kinds))
    return lead, trail


def _fuzz_drops(hunk: Hunk, fuzz: int) -> list[tuple[int, int]]:
    """Every (lead, trail) drop of outer context up to `fuzz`, least context dropped first.

    A side that has context keeps at least one line of it, so an insertion stays pinned
    between two known lines (stricter than GNU patch, which may drop a whole side)."""
    lead_max, trail_max = _context_edges(hunk)
    lead_cap = min(fuzz, max(lead_max - 1, 0))
    trail_cap = min(fuzz, max(trail_max - 1, 0))
    drops = [(i, j) for i in range(lead_cap + 1) for j in range(trail_cap + 1) if i + j > 0]
    return sorted(drops, key=lambda d: (d[0] + d[1], max(d)))


def enclosing_scopes(lines: Sequence[str], pos: int, indent: int) -> list[str]:
    """Names of the def/class blocks enclosing a line at `pos` indented by `indent` (innermost
    first), then the nearest def/class above it (what git's Python funcname would show)."""
    names: list[str] = []
    nearest: str | None = None
    for j in range(min(pos, len(lines)) - 1, -1, -1):
        text = strip_eol(lines[j])
        if not text.strip():
            continue
        m = _SCOPE.match(text)
        if m and nearest is None:
            nearest = m.group(1)
        ind = _indent(text)
        if ind < indent:
            if m:
                names.append(m.group(1))
            indent = ind
        if indent == 0 and nearest is not None:
            break
    if nearest is not None:
        names.append(nearest)
    return names


def _funcname_above(lines: Sequence[str], pos: int) -> str | None:
    """git's default funcname: the nearest line above `pos` starting with a letter, _ or $."""
    for j in range(min(pos, len(lines)) - 1, -1, -1):
        text = strip_eol(lines[j])
        if _FUNCNAME_DEFAULT.match(text):
            return text.strip()
    return None


def _indent(line: str) -> int:
    text = strip_eol(line).expandtabs(8)
    return len(text) - len(text.lstrip())


def _scope_name(hunk: Hunk) -> str | None:
    m = re.search(r"(?:^|\s)(?:def|class)\s+(\w+)", hunk.section_header)
    return m.group(1) if m else None


def _first_change(hunk: Hunk, place: _Place) -> int:
    """0-based line in the input of the hunk's first changed line (or insertion point)."""
    lead_ctx, _ = _context_edges(hunk)
    return place.pos + lead_ctx - place.lead


def _in_scope(hunk: Hunk, idx: _Index, place: _Place) -> bool:
    """Does the candidate sit where the hunk header says it should? Inside the def/class the
    header names (read with Python's tokenizer: multi-line signatures, decorators, nesting,
    async), or right below that header line, as git's funcname would show it."""
    header = hunk.section_header
    if not header:
        return False
    name = _scope_name(hunk)
    lines = idx.lines
    if not name:
        return _funcname_above(lines, _start(place)) == header.strip()
    found = idx.blocks()
    if not found:  # not Python (or unreadable): the indentation heuristic
        changed = [ln.text for ln in hunk.lines if ln.kind != " " and ln.text.strip()]
        indent = _indent(changed[0]) if changed else 0
        return name in enclosing_scopes(lines, _first_change(hunk, place), indent)
    if any(b.name == name for b in scope.enclosing(found, _first_change(hunk, place))):
        return True
    above = scope.header_above(found, _start(place))
    return above is not None and above.name == name


def _outside(hunk: Hunk, idx: _Index, place: _Place) -> str:
    """'outside scope' naming both: where the candidate is, and what the header names."""
    found = idx.blocks()
    where = scope.describe(found, _first_change(hunk, place)) if found else "another scope"
    at = _start(place) + 1
    return (
        f"outside scope: the match at line {at} is in {where}, but the hunk header names "
        f"'{hunk.section_header}'"
    )


def _name_defined(hunk: Hunk, lines: Sequence[str]) -> bool:
    name = _scope_name(hunk)
    if not name:
        return False
    pat = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    return any(pat.match(ln) for ln in lines)


def _search(
    hunk: Hunk, idx: _Index, mode: str, lead: int, trail: int, lo: int, free: bool = False
) -> list[_Place]:
    places: dict[int, tuple[int, _Place]] = {}
    key = (lambda t: t) if mode == "exact" else ws_key
    for new_side in (True, False):
        img = _side(hunk, new_side, lead, trail, free)
        pattern = [key(t) for t in img.texts]
        for p in idx.find(pattern, mode, lo, img.at_eof, img.at_bof):
            # both images at one spot: the longer match wins (post-image on a tie)
            if p not in places or len(pattern) > places[p][0]:
                places[p] = (len(pattern), _Place(p, new_side, lead, trail, free))
    return sorted((pl for _, pl in places.values()), key=lambda pl: pl.pos)


def _independent(hunk: Hunk, places) -> list[_Place]:
    """Drop matches of one image that overlap a longer match of the other image: a short
    post-image found inside the pre-image (or vice versa) is an echo, not a second place."""

    def span(pl: _Place) -> tuple[int, int]:
        return pl.pos, pl.pos + len(_side(hunk, pl.new_side, pl.lead, pl.trail, pl.free).texts)

    kept: list[_Place] = []
    for pl in sorted(places, key=lambda p: -(span(p)[1] - span(p)[0])):
        a, b = span(pl)
        if not any(k.new_side != pl.new_side and a < span(k)[1] and span(k)[0] < b for k in kept):
            kept.append(pl)
    return kept


@dataclass(frozen=True)
class _Outcome:
    """One hunk's first-pass verdict, kept with what the second pass needs to revisit it."""

    place: _Place | None
    result: HunkResult
    alternatives: tuple[_Place, ...] = ()  # for a plain multi-candidate ambiguity
    expected: int = 0  # where the hunk was expected (for the second pass's vetoes)


Drop = tuple[int, int, bool]  # (leading, trailing) context dropped, anchors lifted
LevelSpec = tuple[Level, tuple[str, ...], list[Drop]]


def _levels(hunk: Hunk, fuzz: int) -> list[LevelSpec]:
    """Search levels after 'exact at the expected line', in order. Fuzz goes by total context
    dropped (1, 2, ...), each total one level, exact and whitespace-tolerant together. As in
    git, the first fuzz step of an anchored hunk only lifts its start/end-of-file anchors."""
    levels: list[LevelSpec] = [
        ("moved", ("exact",), [(0, 0, False)]),
        ("whitespace", ("ws",), [(0, 0, False)]),
    ]
    pre = _side(hunk, False, 0, 0)
    if fuzz and (pre.at_bof or pre.at_eof):
        levels.append(("fuzz", ("exact", "ws"), [(0, 0, True)]))
    by_total: dict[int, list[Drop]] = {}
    for lead, trail in _fuzz_drops(hunk, fuzz):
        by_total.setdefault(lead + trail, []).append((lead, trail, False))
    levels += [("fuzz", ("exact", "ws"), group) for _, group in sorted(by_total.items())]
    return levels


def _find_level(
    hunk: Hunk, idx: _Index, modes: tuple[str, ...], drops: list[Drop], lo: int
) -> tuple[dict[int, _Place], set[int]]:
    found: dict[int, _Place] = {}
    loose: set[int] = set()
    for lead, trail, free in drops:
        for mode in modes:
            for pl in _search(hunk, idx, mode, lead, trail, lo, free):
                start = pl.pos - pl.lead  # where the full hunk would start
                if start not in found:
                    found[start] = pl
                    if mode == "ws":
                        loose.add(start)
    return found, loose


def _start(pl: _Place) -> int:
    return pl.pos - pl.lead


def place_hunk(
    hunk: Hunk, lines: Sequence[str], idx: _Index, expected: int, lo: int, fuzz: int
) -> _Outcome:
    """Find where one hunk goes (or why it cannot), without changing anything."""
    at_line = _at_expected(hunk, idx, expected, lo)
    if at_line is not None:
        return at_line
    if not hunk.before:
        return _insertion(hunk, lines, expected)
    levels = _levels(hunk, fuzz)
    for n, (level, modes, drops) in enumerate(levels):
        found, loose = _find_level(hunk, idx, modes, drops, lo)
        if not found:
            continue
        places = sorted(
            _independent(hunk, found.values()),
            key=lambda pl: (abs(_start(pl) - expected), pl.pos),
        )
        chosen = _choose(hunk, idx, places, level, expected)
        if chosen is None:
            return _equally_good(hunk, level, places, expected)
        cands = tuple(_start(pl) + 1 for pl in places)
        loose_match = level == "whitespace" or _start(chosen) in loose
        veto = _veto(hunk, lines, idx, chosen, level, levels[n:], expected, lo, loose_match)
        if veto is not None:
            return _Outcome(None, veto)
        return _Outcome(chosen, _result(hunk, chosen, level, cands, whitespace=loose_match))
    return _Outcome(None, _conflict(hunk, idx, expected, lo))


def _at_expected(hunk: Hunk, idx: _Index, expected: int, lo: int) -> _Outcome | None:
    """Level 1: exact at the expected line. When both images match there (one is a prefix of
    the other: appending at EOF, deleting a repeated line) the longer match is the evidence."""
    hits = []
    for new_side in (True, False):
        img = _side(hunk, new_side, 0, 0)
        at_expected = expected >= lo and img.texts
        if at_expected and idx.matches_at(
            list(img.texts), "exact", expected, img.at_eof, img.at_bof
        ):
            hits.append((len(img.texts), new_side))
    if len(hits) == 2 and (side := _eol_decides(hunk, idx, expected)) is not None:
        hits = [h for h in hits if h[1] == side]
    if len(hits) == 2:
        why = (
            f"both the pre-image and the post-image match at line {expected + 1} (repeated "
            "lines): cannot tell whether it is applied"
        )
        return _Outcome(None, _ambiguous(hunk, "exact", (expected + 1,), why))
    if not hits:
        return None
    _, new_side = max(hits)
    place = _Place(expected, new_side, 0, 0)
    if new_side and _deleted_block_still_there(hunk, idx, expected):
        return _Outcome(None, _still_there(hunk, expected))
    return _Outcome(place, _result(hunk, place, "exact", ()))


def _insertion(hunk: Hunk, lines: Sequence[str], expected: int) -> _Outcome:
    """A pure insertion with no context at all: only where the place needs no evidence, an
    empty file or the start of the file (old start 0, as git anchors it)."""
    if (not lines or hunk.source_start == 0) and expected == 0:
        place = _Place(0, False, 0, 0)
        return _Outcome(place, _result(hunk, place, "exact", ()))
    why = (
        "the hunk adds lines with no context to place them by (a -U0 diff): only the line "
        "number says where; make the diff with context"
    )
    return _Outcome(None, HunkResult(hunk.index, "conflict", reason=why))


def _choose(
    hunk: Hunk, idx: _Index, places: Sequence[_Place], level: Level, expected: int
) -> _Place | None:
    """The one place among those found at one level (nearest first), or None."""
    if len(places) == 1:
        return places[0]
    scoped = [pl for pl in places if _in_scope(hunk, idx, pl)]
    if len(scoped) == 1:
        return scoped[0]
    if all(pl.new_side for pl in places):
        return places[0]  # post-image in several places, pre-image nowhere: nothing to do
    if level != "fuzz":
        return _clear_nearest(hunk, idx, places, expected)
    return None


def _equally_good(hunk: Hunk, level: Level, places: Sequence[_Place], expected: int) -> _Outcome:
    """Refuse: several places are as good as each other, listed nearest first."""
    cands = tuple(_start(pl) + 1 for pl in places)
    new = any(pl.new_side for pl in places)
    old = any(not pl.new_side for pl in places)
    what = "pre-image" if not new else ("post-image" if not old else "pre/post-image")
    why = (
        f"equally good candidates at lines {', '.join(map(str, cands[:8]))} ({what} matches "
        f"at {len(places)} places); the hunk header does not single one out"
    )
    return _Outcome(
        None,
        _ambiguous(hunk, level, cands, why),
        alternatives=tuple(places) if not new else (),
        expected=expected,
    )


def _clear_nearest(
    hunk: Hunk, idx: _Index, places: Sequence[_Place], expected: int
) -> _Place | None:
    """GNU patch's and git's reach, made safe: of several exact copies, the nearest is taken
    when it is clearly where the line numbers point (every other copy at least 10 times as far
    and 200 lines further) and the hunk header's scope contains it. Equally near copies, a
    nearest one outside the named scope, or no header at all, stay a refusal."""
    if len({pl.new_side for pl in places}) != 1:
        return None
    near, *rest = places  # sorted by distance to the expected line
    d1 = abs(_start(near) - expected)
    if any(abs(_start(pl) - expected) < max(10 * max(d1, 1), d1 + 200) for pl in rest):
        return None
    if not hunk.section_header or not _in_scope(hunk, idx, near):
        return None  # no header to agree, or it names another scope
    return near


def _veto(
    hunk: Hunk,
    lines: Sequence[str],
    idx: _Index,
    chosen: _Place,
    level: Level,
    later: list[LevelSpec],
    expected: int,
    lo: int,
    loose: bool,
) -> HunkResult | None:
    """The checks a unique place beyond the expected line must still pass; each one is a way
    GNU patch goes wrong. Returns the refusal, or None when the place stands."""
    at = _start(chosen) + 1
    if level == "fuzz" and _name_defined(hunk, lines) and not _in_scope(hunk, idx, chosen):
        return _ambiguous(hunk, level, (at,), _outside(hunk, idx, chosen))
    rival = _near_miss(hunk, idx, expected, lo, chosen) if level == "fuzz" else None
    if rival is not None:
        why = f"fuzzy match at line {at} competes with a partial match at the expected line"
        return _ambiguous(hunk, level, (at, rival + 1), f"{why} {rival + 1}")
    if chosen.new_side:
        # The post-image is here, but is the pre-image somewhere too (within the allowance)?
        span = len(_side(hunk, True, chosen.lead, chosen.trail).texts)
        for _, modes, drops in later:
            pre, _ = _find_level(hunk, idx, modes, drops, lo)
            clash = [
                p
                for p, pl in pre.items()
                if not pl.new_side and not (chosen.pos - span < pl.pos < chosen.pos + span)
            ]
            if clash:
                why = f"post-image at line {at} but pre-image at line {clash[0] + 1}"
                return _ambiguous(hunk, level, (at, clash[0] + 1), why)
        if not any(ln.kind == "+" for ln in hunk.lines):
            # A pure deletion's post-image is context only: it may be the tail of a look-alike
            # block. It counts only if the lines to delete are not still there, edited.
            still = _deleted_block_anywhere(hunk, idx, lo)
            if still is not None:
                return _still_there(hunk, still)
    if _echo(hunk, idx, chosen, "ws" if loose else "exact"):
        why = f"both the pre-image and the post-image match at line {at} (repeated lines)"
        return _ambiguous(hunk, level, (at,), why + ": cannot tell whether it is applied")
    return None


def _deleted_block_still_there(hunk: Hunk, idx: _Index, pos: int) -> bool:
    """For a pure deletion, its post-image (context only) can match where the lines to delete
    are still present but edited; most of the pre-image aligned there says so."""
    if any(ln.kind == "+" for ln in hunk.lines):
        return False
    return _mostly_there(hunk, idx, pos)


def _deleted_block_anywhere(hunk: Hunk, idx: _Index, lo: int) -> int | None:
    """Where the lines a pure deletion removes still mostly are (edited), if anywhere."""
    removed = [ws_key(ln.text) for ln in hunk.lines if ln.kind == "-"]
    keys = idx.keys("ws")
    for p in range(max(lo, 0), len(keys) - len(hunk.before) + 1):
        if _deleted_block_still_there(hunk, idx, p) and any(
            k in removed for k in keys[p : p + len(hunk.before)]
        ):
            return p
    return None


def _still_there(hunk: Hunk, pos: int) -> HunkResult:
    return HunkResult(
        hunk.index,
        "conflict",
        candidates=(pos + 1,),
        reason=f"the lines to remove are still at line {pos + 1} but were edited",
    )


def _eol_decides(hunk: Hunk, idx: _Index, pos: int) -> bool | None:
    """When the two images differ in their final newline only and reach the end of the file
    from `pos`, the file's last line says which one is there: True = the post-image."""
    if hunk.old_no_eol == hunk.new_no_eol or not idx.lines:
        return None
    if hunk.before != hunk.after or pos + len(hunk.before) != len(idx.lines):
        return None
    return hunk.new_no_eol == (not idx.lines[-1].endswith("\n"))


def _echo(hunk: Hunk, idx: _Index, place: _Place, mode: str) -> bool:
    """Does the other image match at the very same spot too?"""
    side = _eol_decides(hunk, idx, place.pos) if not (place.lead or place.trail) else None
    if side is not None:
        return side != place.new_side
    other = _side(hunk, not place.new_side, place.lead, place.trail, place.free)
    if not other.texts:
        return False
    key = (lambda t: t) if mode == "exact" else ws_key
    pattern = [key(t) for t in other.texts]
    return idx.matches_at(pattern, mode, place.pos, other.at_eof, other.at_bof)


def _ambiguous(hunk: Hunk, level: Level, cands: tuple[int, ...], reason: str) -> HunkResult:
    return HunkResult(hunk.index, "ambiguous", level=level, candidates=cands, reason=reason)


def _near_miss(hunk: Hunk, idx: _Index, expected: int, lo: int, chosen: _Place) -> int | None:
    """A fuzzy match far from the expected line must not win over the expected place itself
    when most of the hunk is still there (upstream edited more context than fuzz allows)."""
    m = len(hunk.before)
    start = chosen.pos - chosen.lead
    for p in range(max(lo, expected - 3), expected + 4):
        if abs(p - start) > m and _mostly_there(hunk, idx, p):
            return p
    return None


@lru_cache(maxsize=256)
def _ws_before(hunk: Hunk) -> tuple[str, ...]:
    return tuple(ws_key(t) for t in hunk.before)


def _mostly_there(hunk: Hunk, idx: _Index, pos: int) -> bool:
    """At least 60% (and 2) of the pre-image's lines sit at `pos`, aligned, whitespace-tolerant:
    the hunk's place, edited more than fuzz allows."""
    pattern = _ws_before(hunk)
    keys = idx.keys("ws")
    if pos < 0 or pos + len(pattern) > len(keys):
        return False
    same = sum(1 for a, b in zip(keys[pos : pos + len(pattern)], pattern, strict=True) if a == b)
    return same >= max(2, -(-3 * len(pattern) // 5))


def _result(
    hunk: Hunk, place: _Place, level: Level, cands: tuple[int, ...], whitespace: bool = False
) -> HunkResult:
    return HunkResult(
        hunk.index,
        "already-applied" if place.new_side else "applied",
        level=level,
        fuzz=max(place.lead, place.trail, int(place.free)),
        whitespace=whitespace,
        candidates=cands,
    )


def _conflict(hunk: Hunk, idx: _Index, expected: int, lo: int) -> HunkResult:
    """Explain a hunk that fits nowhere: the anchor that held it, or the nearest partial
    matches of its pre-image."""
    pre = _side(hunk, False, 0, 0)
    rule = _anchor_rule(hunk, pre)
    if rule:
        free = [pl.pos for pl in _search(hunk, idx, "ws", 0, 0, lo, free=True) if not pl.new_side]
        if free:
            near = min(free, key=lambda p: abs(p - expected))
            return HunkResult(
                hunk.index,
                "conflict",
                candidates=(near + 1,),
                reason=f"the hunk is anchored at {rule}, but its lines are at line {near + 1}",
            )
    found = _partial(hunk, idx, expected, lo)
    if rule and found.reason and "none of its lines" not in found.reason:
        return replace(found, reason=f"anchored at {rule}: {found.reason}")
    return found


def _anchor_rule(hunk: Hunk, pre: _Image) -> str:
    """Which anchor ties the hunk (for messages): start and/or end of the file, and why."""
    where = []
    if pre.at_bof:
        where.append(f"the start of the file (its old start is line {hunk.source_start})")
    if pre.at_eof:
        why = "no newline at its end" if hunk.old_no_eol else "no trailing context"
        where.append(f"the end of the file ({why})")
    return " and ".join(where)


COMMON = 200  # a line found more often than this says nothing about where a hunk belongs
NEAR = 300  # lines either side of the expected line always scored


def _partial_starts(pattern: Sequence[str], idx: _Index, expected: int, lo: int) -> list[int]:
    """Where a partial match can start: every start that aligns a not-too-common line of the
    pre-image, plus the starts near the expected line. Bounded by the file's index, not by
    file size x hunk size, so a large conflicting diff on a large file is explained quickly."""
    keys = idx.keys("ws")
    last = len(keys) - len(pattern)
    starts = set(range(max(lo, expected - NEAR, 0), max(min(last, expected + NEAR) + 1, 0)))
    for k, key in enumerate(pattern):
        hits = idx.positions("ws", key)
        if len(hits) <= COMMON:
            starts.update(q - k for q in hits if lo <= q - k <= last)
    return sorted(starts)


def _partial(hunk: Hunk, idx: _Index, expected: int, lo: int) -> HunkResult:
    """The nearest partial matches of the pre-image, and the first line that differs."""
    pattern = [ws_key(t) for t in hunk.before]
    keys = idx.keys("ws")
    m = len(pattern)
    scored: list[tuple[int, int, int]] = []
    for p in _partial_starts(pattern, idx, expected, lo):
        score = sum(1 for a, b in zip(keys[p : p + m], pattern, strict=False) if a == b)
        if score:
            scored.append((-score, abs(p - expected), p))
    scored.sort()
    best = scored[:3]
    if not best:
        return HunkResult(hunk.index, "conflict", reason="none of its lines occur in the file")
    score, _, p = best[0]
    diff_at = next(
        (i for i, (a, b) in enumerate(zip(keys[p : p + m], pattern, strict=False)) if a != b),
        min(m, len(keys) - p),
    )
    want = hunk.before[diff_at] if diff_at < m else ""
    got = strip_eol(idx.lines[p + diff_at]) if p + diff_at < len(idx.lines) else "<end of file>"
    return HunkResult(
        hunk.index,
        "conflict",
        candidates=tuple(b[2] + 1 for b in best),
        reason=f"best match at line {p + 1} ({-score}/{m} lines); line {p + diff_at + 1} is "
        f"{got.strip()!r}, the patch expects {want.strip()!r}",
    )


def apply_hunks(
    lines: Sequence[str], hunks: Sequence[Hunk], *, fuzz: int = 0, reverse: bool = False
) -> FileResult:
    """Place every hunk of one file and build the result (the input is not modified).

    `lines` keep their line endings (see diffs.split_lines). Hunks are placed in order, each after
    the previous one; a refused hunk leaves the others' results intact so every hunk is reported.
    Expected lines are carried forward: the gap between two hunks in the patch is the gap
    expected in the file, counted from where the previous hunk really was.
    """
    if reverse:
        hunks = [h.reversed() for h in hunks]
    if hunks and not any(ln.kind == " " for h in hunks for ln in h.lines):
        # a -U0 diff says nothing about the start or end of the file (git's --unidiff-zero)
        hunks = [replace(h, anchored=False) for h in hunks]
    idx = _Index(lines)
    results: list[tuple[HunkResult, Hunk, _Place | None]] = []
    alternatives: dict[int, tuple[tuple[_Place, ...], int]] = {}
    lo = 0
    prev_end: int | None = None
    prev_stated_end = 0
    for hunk in hunks:
        stated = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        expected = stated if prev_end is None else prev_end + (stated - prev_stated_end)
        out = place_hunk(hunk, lines, idx, expected, lo, fuzz)
        place = out.place
        if place is not None:
            end = place.pos + len(_side(hunk, place.new_side, place.lead, place.trail).texts)
            lo = end
            prev_end = end + place.trail
            prev_stated_end = stated + hunk.source_length
        elif out.alternatives:
            alternatives[len(results)] = (out.alternatives, out.expected)
        results.append((out.result, hunk, place))
    if alternatives:
        results = _by_order(results, alternatives, lines, idx)
    splices = [(pl, h) for r, h, pl in results if pl is not None and r.status == "applied"]
    out, shifts = _splice(lines, splices)
    final = []
    for res, hunk, place in results:
        if place is not None:
            start = place.pos - place.lead
            line = start + sum(d for at, d in shifts if at < start) + 1
            # an empty side's start names the line it follows (`-5,2 +4,0` lands on line 5)
            stated = hunk.target_start + (0 if hunk.target_length else 1)
            final.append(HunkResult(**{**res.__dict__, "line": line, "offset": line - stated}))
        else:
            final.append(res)
    return FileResult(tuple(out), tuple(final))


def _by_order(
    results: Sequence[tuple[HunkResult, Hunk, _Place | None]],
    alternatives: dict[int, tuple[tuple[_Place, ...], int]],
    lines: Sequence[str],
    idx: _Index,
) -> list[tuple[HunkResult, Hunk, _Place | None]]:
    """Second pass for ambiguous hunks: hunks keep their order and never overlap, so only the
    candidates that leave room for the others can be right. A hunk whose earliest and latest
    order-consistent candidates are one and the same is placed there (two identical hunks in
    one class, two copies of the block: the first goes to the first, the second to the second),
    if it also passes the vetoes any single place must pass."""
    early = _assign(results, alternatives, forward=True)
    late = _assign(results, alternatives, forward=False)
    out = list(results)
    for i, (_, expected) in alternatives.items():
        pl = early.get(i)
        if pl is None or late.get(i) is not pl:
            continue
        res, hunk, _ = results[i]
        lo = max((_span(h, q)[1] for _, h, q in out[:i] if q is not None), default=0)
        veto = _veto(hunk, lines, idx, pl, res.level, [], expected, lo, loose=False)
        out[i] = (
            (veto, hunk, None) if veto else (_result(hunk, pl, res.level, res.candidates), hunk, pl)
        )
    return out


def _span(hunk: Hunk, pl: _Place) -> tuple[int, int]:
    return pl.pos, pl.pos + len(_side(hunk, pl.new_side, pl.lead, pl.trail, pl.free).texts)


def _assign(
    results: Sequence[tuple[HunkResult, Hunk, _Place | None]],
    alternatives: dict[int, tuple[tuple[_Place, ...], int]],
    forward: bool,
) -> dict[int, _Place]:
    """Greedy order-consistent candidates for the ambiguous hunks: the earliest that fits after
    what comes before (forward) or the latest before what comes after; {} if none fits."""
    chosen: dict[int, _Place] = {}
    bound: int | None = 0 if forward else None
    order = range(len(results)) if forward else range(len(results) - 1, -1, -1)
    for i in order:
        _, hunk, placed = results[i]
        if placed is not None or i in alternatives:
            if placed is not None:
                fits = [placed]
            else:
                alts = alternatives[i][0]
                fits = [q for q in alts if bound is None or _fits(hunk, q, bound, forward)]
            if placed is not None and bound is not None and not _fits(hunk, placed, bound, forward):
                return {}
            if not fits:
                return {}
            pick = min(fits, key=lambda q: q.pos) if forward else max(fits, key=lambda q: q.pos)
            if placed is None:
                chosen[i] = pick
            bound = _span(hunk, pick)[1] if forward else _span(hunk, pick)[0]
    return chosen


def _fits(hunk: Hunk, pl: _Place, bound: int, forward: bool) -> bool:
    a, b = _span(hunk, pl)
    return a >= bound if forward else b <= bound


def _splice(
    lines: Sequence[str], splices: Sequence[tuple[_Place, Hunk]]
) -> tuple[list[str], list[tuple[int, int]]]:
    """Build the result; also return (input position, line delta) per applied hunk."""
    eol = dominant_eol(lines)
    out: list[str] = []
    shifts: list[tuple[int, int]] = []
    cur = 0
    n = len(lines)
    for place, hunk in sorted(splices, key=lambda s: s[0].pos):
        out.extend(lines[cur : place.pos])
        i = place.pos
        body = hunk.lines[place.lead : len(hunk.lines) - place.trail]
        for ln in body:
            if ln.kind == " ":
                out.append(lines[i])
                i += 1
            elif ln.kind == "-":
                i += 1
            else:
                out.append(ln.text + eol)
        if i == n and out:
            if hunk.new_no_eol and place.trail == 0:
                out[-1] = strip_eol(out[-1])
            elif hunk.old_no_eol and not hunk.new_no_eol:
                out[-1] = strip_eol(out[-1]) + eol
        added = sum(1 for ln in body if ln.kind == "+")
        removed = sum(1 for ln in body if ln.kind == "-")
        shifts.append((place.pos, added - removed))
        cur = i
    out.extend(lines[cur:])
    for k in range(len(out) - 1):  # only the very last line may lack a line ending
        if not out[k].endswith("\n"):
            out[k] = out[k] + eol
    return out, shifts
