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
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, chain, repeat
from typing import TYPE_CHECKING, NamedTuple

from sgpatch.diff.unified import Hunk, strip_eol
from sgpatch.placement.match import (
    FileResult,
    HunkResult,
    Level,
    LineIndex,
    Place,
    Status,
    anchors,
    context_edges,
    dominant_eol,
    exact_key,
    search,
    side,
    side_len,
    start,
    whole_side_at,
    ws_key,
)
from sgpatch.startup import collector_paused

if TYPE_CHECKING:
    from sgpatch.placement.pydefs import Twice

__all__ = [
    "FileResult",
    "HunkResult",
    "Level",
    "Status",
    "apply_hunks",
    "dominant_eol",
    "exact_key",
    "place_hunk",
    "ws_key",
]


def _fuzz_drops(hunk: Hunk, fuzz: int) -> list[tuple[int, int]]:
    """Every (lead, trail) drop of outer context up to `fuzz` on either side, by fuzz factor
    (the larger of the two drops, as GNU patch counts fuzz), least context dropped first.

    A side that has context keeps at least one line of it, so an insertion stays pinned
    between two known lines (stricter than GNU patch, which may drop a whole side)."""
    lead_max, trail_max = context_edges(hunk)
    lead_cap = min(fuzz, max(lead_max - 1, 0))
    trail_cap = min(fuzz, max(trail_max - 1, 0))
    drops = [(i, j) for i in range(lead_cap + 1) for j in range(trail_cap + 1) if i + j > 0]
    return sorted(drops, key=lambda d: (max(d), d[0] + d[1]))


def _independent(hunk: Hunk, places) -> list[Place]:
    """Drop matches of one image that overlap a longer match of the other image: a short
    post-image found inside the pre-image (or vice versa) is an echo, not a second place."""

    def span(pl: Place) -> tuple[int, int]:
        return pl.pos, pl.pos + len(side(hunk, pl.new_side, pl.lead, pl.trail, pl.free).texts)

    kept: list[Place] = []
    for pl in sorted(places, key=lambda p: -(span(p)[1] - span(p)[0])):
        a, b = span(pl)
        if not any(k.new_side != pl.new_side and a < span(k)[1] and span(k)[0] < b for k in kept):
            kept.append(pl)
    return kept


@dataclass(frozen=True)
class _Outcome:
    """One hunk's first-pass verdict, kept with what the second pass needs to revisit it."""

    place: Place | None
    result: HunkResult
    alternatives: tuple[Place, ...] = ()  # for a plain multi-candidate ambiguity
    expected: int = 0  # where the hunk was expected (for the second pass's vetoes)
    shown: int | None = None  # input line to report (already applied elsewhere in scope)


Drop = tuple[int, int, bool]  # (leading, trailing) context dropped, anchors lifted
LevelSpec = tuple[Level, tuple[str, ...], list[Drop]]


def _levels(hunk: Hunk, fuzz: int) -> list[LevelSpec]:
    """Search levels after 'exact at the expected line', in order. Fuzz goes by fuzz factor,
    as GNU patch counts it (the larger of the context lines dropped at the top and at the
    bottom): every place found at fuzz 1 ((1, 0), (0, 1) or (1, 1) dropped) is as good as any
    other found at fuzz 1, so two of them are ambiguous whichever keeps more context (a decoy
    of the inner context lines may match one line more by chance: issue 46.17). Exact and
    whitespace-tolerant matches are one level. As in git, the first fuzz step of an anchored
    hunk only lifts its start/end-of-file anchors."""
    levels: list[LevelSpec] = [
        ("moved", ("exact",), [(0, 0, False)]),
        ("whitespace", ("ws",), [(0, 0, False)]),
    ]
    pre = side(hunk, False, 0, 0)
    if fuzz and (pre.at_bof or pre.at_eof):
        levels.append(("fuzz", ("exact", "ws"), [(0, 0, True)]))
    by_fuzz: dict[int, list[Drop]] = {}
    for lead, trail in _fuzz_drops(hunk, fuzz):
        by_fuzz.setdefault(max(lead, trail), []).append((lead, trail, False))
    levels += [("fuzz", ("exact", "ws"), group) for _, group in sorted(by_fuzz.items())]
    return levels


def _find_level(
    hunk: Hunk, idx: LineIndex, modes: tuple[str, ...], drops: list[Drop], lo: int
) -> tuple[dict[int, Place], set[int]]:
    found: dict[int, Place] = {}
    loose: set[int] = set()
    for lead, trail, free in drops:
        for mode in modes:
            for pl in search(hunk, idx, mode, lead, trail, lo, free):
                start = pl.pos - pl.lead  # where the full hunk would start
                if start not in found:
                    found[start] = pl
                    if mode == "ws":
                        loose.add(start)
    return found, loose


def place_hunk(
    hunk: Hunk,
    lines: Sequence[str],
    idx: LineIndex,
    expected: int,
    lo: int,
    fuzz: int,
    moving: frozenset[str] = frozenset(),
) -> _Outcome:
    """Find where one hunk goes (or why it cannot), without changing anything. `moving` are
    the lines (`present.key`) the file's hunks remove: lines a diff moves are not evidence
    that a hunk adding them is already applied."""
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
            key=lambda pl: (abs(start(pl) - expected), pl.pos),
        )
        if level == "fuzz" and len(places) > 1:
            places = _better_at_line(hunk, places, (expected, _stated(hunk)))
        chosen = _choose(hunk, idx, places, level, expected)
        if chosen is None:
            return _equally_good(hunk, level, places, expected)
        cands = tuple(start(pl) + 1 for pl in places)
        loose_match = level == "whitespace" or start(chosen) in loose
        if chosen.new_side:
            pre = _pre_around(hunk, idx, chosen, levels[n + 1 :], expected, lo)
            if pre is not None:
                chosen, n, loose_match = pre[0], n + 1 + pre[1], pre[2]
                level = levels[n][0]
        near = _nearest_original(hunk, idx, chosen, level, levels[n + 1 :], expected, lo)
        if isinstance(near, HunkResult):
            return _Outcome(None, near)
        if near is not None:
            chosen, n, loose_match = near[0], n + 1 + near[1], near[2]
            level = levels[n][0]
            cands = (start(chosen) + 1, *cands)
        if level == "fuzz" and not chosen.new_side:
            # before the vetoes: a body that already holds the hunk's lines says "applied"
            # wherever in it the fuzzy place is
            there = _there_in_scope(hunk, idx, chosen, level, moving)
            if there is not None:
                return there
        veto = _veto(hunk, lines, idx, chosen, level, levels[n:], expected, lo, loose_match)
        if veto is not None:
            return _Outcome(None, veto)
        return _Outcome(chosen, _result(hunk, chosen, level, cands, whitespace=loose_match))
    from sgpatch.placement.explain import (
        explain_conflict,  # only for a conflict: off the common path
    )

    return _Outcome(None, explain_conflict(hunk, idx, expected, lo))


def _stated(hunk: Hunk) -> int:
    """The 0-based input line the hunk's `@@` header states (its old start)."""
    return hunk.source_start - 1 if hunk.source_length else hunk.source_start


_TELLING = re.compile(r"\w")


def _better_at_line(hunk: Hunk, places: list[Place], lines_at: tuple[int, ...]) -> list[Place]:
    """At one fuzz factor every place is as good as any other (issue 46.17), with one
    exception: the place that starts at the expected (or stated) line and keeps strictly more
    context than each other one (no more dropped on either side) is taken when what it keeps
    more holds a line with a letter or digit; a blank line or a bracket next to a look-alike
    matches by chance. Returns [that place], or `places` as they were."""
    at = [pl for pl in places if start(pl) in lines_at and not pl.new_side]
    if len(at) != 1:
        return places
    best = at[0]
    for pl in places:
        if pl is best:
            continue
        same = (pl.lead, pl.trail) == (best.lead, best.trail)
        if same or pl.lead < best.lead or pl.trail < best.trail:
            return places
        texts = hunk.side_texts[False]
        n = len(texts)
        more = [*texts[best.lead : pl.lead], *texts[n - pl.trail : n - best.trail]]
        if not any(_TELLING.search(t) for t in more):
            return places
    return [best]


def _pre_around(
    hunk: Hunk, idx: LineIndex, post: Place, later: list[LevelSpec], expected: int, lo: int
) -> tuple[Place, int, bool] | None:
    """A post-image found inside a longer pre-image match (with more of the allowed tolerance)
    is an echo: a pure deletion's context-only post-image matching the tail of the very block
    it deletes, which is still there. That pre-image is the place when it is the only one at
    its level, or every other is a far copy (`_far_window`). Returns (place, index into
    `later`, whitespace-tolerant), or None (the post-image's own checks decide)."""
    a, b = _span(hunk, post)
    for k, (level, modes, drops) in enumerate(later):
        found, loose = _find_level(hunk, idx, modes, drops, lo)
        pres = [pl for pl in found.values() if not pl.new_side]
        if not pres:
            continue
        around = [pl for pl in pres if pl.pos <= a and b <= _span(hunk, pl)[1]]
        if len(around) != 1 or _span(hunk, around[0])[1] - around[0].pos <= b - a:
            return None
        near = around[0]
        d = abs(start(near) - expected)
        if any(
            abs(start(pl) - expected) < max(10 * max(d, 1), d + 200)
            for pl in pres
            if pl is not near
        ):
            return None
        return near, k, level == "whitespace" or start(near) in loose
    return None


def _far_window(hunk: Hunk, chosen: Place, expected: int) -> int:
    """How near to the expected line a rival must be for `chosen` to be a far copy of it:
    the rule for exact copies (every other copy at least 10 times as far and 200 lines
    further), read from the far side; for a place merely far (`far_from`: 30 lines, more
    than twice the hunk), 3 lines, where an original edited upstream still sits (issue
    46.18's copies of a hunk's whole context). 0 when `chosen` is not far."""
    d = abs(start(chosen) - expected)
    w = min(d // 10, d - 200) if d > 200 else 0
    return max(w, 3) if far_from(hunk, expected, start(chosen)) else w


def _nearest_original(
    hunk: Hunk,
    idx: LineIndex,
    chosen: Place,
    found_at: Level,
    later: list[LevelSpec],
    expected: int,
    lo: int,
) -> tuple[Place, int, bool] | HunkResult | None:
    """The nearest-original rule never loses to a far copy. When the place found is far from
    the expected line and the hunk, with more of the allowed tolerance (whitespace, fuzz),
    also fits clearly nearer (`_far_window`), the near one is the original, edited upstream:
    it wins when it is the only one there and the header's scope contains it, and otherwise
    the hunk is refused with both listed. With no tolerance left, a near place where most of
    the pre-image still is (60%, aligned) refuses the far copy too. Returns (place, index into
    `later`, whitespace-tolerant), a refusal, or None (the far place stands)."""
    w = _far_window(hunk, chosen, expected)
    if not w:
        return None
    from sgpatch.placement.scope import in_scope

    def scoped(pl: Place) -> bool:  # asked only when it decides: it may parse the file
        return bool(hunk.section_header) and in_scope(hunk, idx, pl)

    near_lo, near_hi = max(lo, expected - w), expected + w
    far = start(chosen) + 1
    for k, (level, modes, drops) in enumerate(later):
        found, loose = _find_level(hunk, idx, modes, drops, lo)
        if not any(near_lo <= s <= near_hi for s in found):
            continue
        # every other place at that level competes, near or not: equally good places are a
        # refusal whatever their distance (a decoy inside the window, the original just out)
        rivals = _independent(hunk, [pl for s, pl in found.items() if s != start(chosen)])
        if level == "fuzz" and len(rivals) > 1:
            rivals = _better_at_line(hunk, rivals, (expected, _stated(hunk)))
        near = [pl for pl in rivals if near_lo <= start(pl) <= near_hi]
        near_scoped = [pl for pl in near if scoped(pl)]
        if len(rivals) == 1 and near_scoped:
            return near[0], k, level == "whitespace" or start(near[0]) in loose
        if not near_scoped and scoped(chosen):
            return None  # the header names the far copy's scope: scope beats distance
        near = sorted(rivals, key=lambda pl: abs(start(pl) - expected))
        lines_at = ", ".join(str(start(pl) + 1) for pl in near[:8])
        why = (
            f"the exact copy at line {far} is far from the expected line {expected + 1}, and "
            f"the hunk also fits at line {lines_at} ({level}); the hunk header does not "
            "single one out"
        )
        return _ambiguous(hunk, level, (far, *(start(pl) + 1 for pl in near)), why)
    for p in range(near_lo, near_hi + 1):
        if _mostly_there(hunk, idx, p):
            if scoped(chosen) and not scoped(Place(p, False, 0, 0)):
                return None
            why = (
                f"the exact copy at line {far} is far from the expected line {expected + 1}, "
                f"and most of the hunk is at line {p + 1} (edited): the original may be there"
            )
            return _ambiguous(hunk, found_at, (far, p + 1), why)
    return None


def _at_expected(hunk: Hunk, idx: LineIndex, expected: int, lo: int) -> _Outcome | None:
    """Level 1: exact at the expected line. When both images match there (one is a prefix of
    the other: appending at EOF, deleting a repeated line) the longer match is the evidence."""
    if expected < lo:
        return None
    hits = [
        (len(hunk.side_texts[new_side]), new_side)
        for new_side in (True, False)
        if whole_side_at(hunk, idx, new_side, expected)
    ]
    if len(hits) == 2 and _no_op(hunk):
        hits = [h for h in hits if h[1]]  # changes nothing: there is nothing to do
    if len(hits) == 2 and (eol_side := _eol_decides(hunk, idx, expected)) is not None:
        hits = [h for h in hits if h[1] == eol_side]
    if len(hits) == 2:
        why = (
            f"both the pre-image and the post-image match at line {expected + 1} (repeated "
            "lines): cannot tell whether it is applied"
        )
        return _Outcome(None, _ambiguous(hunk, "exact", (expected + 1,), why))
    if not hits:
        return None
    _, new_side = max(hits)
    place = Place(expected, new_side, 0, 0)
    if new_side and _deleted_block_still_there(hunk, idx, expected):
        return _Outcome(None, _still_there(hunk, expected))
    return _Outcome(place, _result(hunk, place, "exact", ()))


def _insertion(hunk: Hunk, lines: Sequence[str], expected: int) -> _Outcome:
    """A pure insertion with no context at all goes only into an empty file. `@@ -0,0 +1 @@`
    is also what a -U0 diff writes to insert at the top of a non-empty file, but it cannot be
    told from a diff of an empty file (git needs --unidiff-zero to tell it), so it is refused."""
    if not lines and expected == 0:
        place = Place(0, False, 0, 0)
        return _Outcome(place, _result(hunk, place, "exact", ()))
    why = (
        "the hunk adds lines with no context to place them by (a -U0 diff): only the line "
        "number says where; make the diff with context"
    )
    return _Outcome(None, HunkResult(hunk.index, "conflict", reason=why))


def _choose(
    hunk: Hunk, idx: LineIndex, places: Sequence[Place], level: Level, expected: int
) -> Place | None:
    """The one place among those found at one level (nearest first), or None. Among fuzzy
    places the header's scope decides only when it agrees with the line numbers (the place in
    scope is at least as near as every other): a look-alike that moves the original out of the
    named block (a copy holding a class header) must not win a tie by scope alone."""
    if len(places) == 1:
        return places[0]
    from sgpatch.placement.scope import in_scope, inside, known  # only between several places

    # scope decides only when every candidate's scope can be read (the file tokenizes past it);
    # between fuzzy ones, only a candidate inside the named block (not one merely below its
    # line, which a look-alike's own def line can fake) and at least as near as the others
    readable = all(known(idx, pl) for pl in places)
    test = inside if level == "fuzz" else in_scope
    scoped = [pl for pl in places if test(hunk, idx, pl)] if readable else []
    if len(scoped) == 1 and (level != "fuzz" or _nearest(scoped[0], places, expected)):
        return scoped[0]
    if all(pl.new_side for pl in places):
        return places[0]  # post-image in several places, pre-image nowhere: nothing to do
    if level == "moved" and not (scoped and len(scoped) < len(places)):
        at = _at_stated_line(hunk, places, expected)
        if at is not None:
            return at
    if level != "fuzz":
        return _clear_nearest(hunk, idx, places, expected)
    return None


def far_from(hunk: Hunk, a: int, b: int) -> bool:
    """Is line `b` far from line `a` for this hunk: 30 lines or more, and more than twice the
    hunk's length (a copy that far is not the same place drifted)."""
    return abs(a - b) >= max(30, 2 * len(hunk.before) + 1)


def _at_stated_line(hunk: Hunk, places: Sequence[Place], expected: int) -> Place | None:
    """An exact match of the pre-image at the line the `@@` header states, with every other
    place far from it and farther from the expected line too, is the place (what git and GNU
    patch take): the expected line, carried from where the earlier hunks landed, can be off
    when the drift between hunks cancels out, and then the stated line is the evidence
    (issue 46.18).
    The caller has made sure the header's scope does not name another candidate's block."""
    stated = _stated(hunk)
    at = [pl for pl in places if pl.pos == stated and not pl.new_side and not pl.lead]
    if len(at) != 1:
        return None
    d = abs(stated - expected)
    others = [start(pl) for pl in places if pl is not at[0]]
    if all(far_from(hunk, stated, p) and abs(p - expected) > d for p in others):
        return at[0]
    return None


def _nearest(pl: Place, places: Sequence[Place], expected: int) -> bool:
    return abs(start(pl) - expected) <= min(abs(start(q) - expected) for q in places)


def _equally_good(hunk: Hunk, level: Level, places: Sequence[Place], expected: int) -> _Outcome:
    """Refuse: several places are as good as each other, listed nearest first."""
    cands = tuple(start(pl) + 1 for pl in places)
    new = any(pl.new_side for pl in places)
    old = any(not pl.new_side for pl in places)
    what = "pre-image" if not new else ("post-image" if not old else "pre/post-image")
    f = max((max(pl.lead, pl.trail, int(pl.free)) for pl in places), default=0)
    how = f" with fuzz {f}" if level == "fuzz" and f else ""
    why = (
        f"equally good candidates at lines {', '.join(map(str, cands[:8]))} ({what} matches "
        f"at {len(places)} places{how}); the hunk header does not single one out"
    )
    return _Outcome(
        None,
        _ambiguous(hunk, level, cands, why),
        alternatives=tuple(places) if not new else (),
        expected=expected,
    )


def _clear_nearest(
    hunk: Hunk, idx: LineIndex, places: Sequence[Place], expected: int
) -> Place | None:
    """GNU patch's and git's reach, made safe: of several exact copies, the nearest is taken
    when it is clearly where the line numbers point (every other copy at least 10 times as far
    and 200 lines further) and the hunk header's scope contains it. Equally near copies, a
    nearest one outside the named scope, or no header at all, stay a refusal."""
    from sgpatch.placement.scope import in_scope

    if len({pl.new_side for pl in places}) != 1:
        return None
    near, *rest = places  # sorted by distance to the expected line
    d1 = abs(start(near) - expected)
    if any(abs(start(pl) - expected) < max(10 * max(d1, 1), d1 + 200) for pl in rest):
        return None
    if not hunk.section_header or not in_scope(hunk, idx, near):
        return None  # no header to agree, or it names another scope
    return near


def _veto(
    hunk: Hunk,
    lines: Sequence[str],
    idx: LineIndex,
    chosen: Place,
    level: Level,
    later: list[LevelSpec],
    expected: int,
    lo: int,
    loose: bool,
) -> HunkResult | None:
    """The checks a unique place beyond the expected line must still pass; each one is a way
    GNU patch goes wrong. Returns the refusal, or None when the place stands."""
    at = start(chosen) + 1
    if level == "fuzz":
        from sgpatch.placement.scope import in_scope, name_defined, outside

        if name_defined(hunk, lines) and not in_scope(hunk, idx, chosen):
            return _ambiguous(hunk, level, (at,), outside(hunk, idx, chosen))
    rival = _near_miss(hunk, idx, expected, lo, chosen) if level == "fuzz" else None
    if rival is not None:
        why = f"fuzzy match at line {at} competes with a partial match at the expected line"
        return _ambiguous(hunk, level, (at, rival + 1), f"{why} {rival + 1}")
    if chosen.new_side:
        # The post-image is here, but is the pre-image somewhere too (within the allowance)?
        span = len(side(hunk, True, chosen.lead, chosen.trail).texts)
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


def _there_in_scope(
    hunk: Hunk, idx: LineIndex, place: Place, level: Level, moving: frozenset[str]
) -> _Outcome | None:
    """A fuzzy place whose hunk is already applied in its scope (`present.already_there`):
    upstream took the patch with small edits (a comment line, a blank line), so the exact
    post-image is nowhere, and applying it would add a second copy (the fuzz trap). Reported
    already applied when the hunk adds two or more lines; one added line found elsewhere in
    the scope says too little either way, so that hunk is refused. Lines the diff removes
    elsewhere (code it moves) do not count."""
    from sgpatch.placement.present import key, there_rows
    from sgpatch.placement.scope import body_of

    added = [ln.text for ln in hunk.lines if ln.kind == "+" and ln.text.strip()]
    if not added or any(key(t) in moving for t in added):
        return None
    lo, hi, where = body_of(idx, _first_change(hunk, place), _indent(added[0]))
    rows = there_rows(hunk, idx.lines, lo, hi)
    if not rows:
        return None
    at = rows[0]
    there = _judged_there(hunk, idx, place, rows)
    if there is False:
        return None  # its statements do not read as its result: the lines found are no evidence
    if there is None:
        said = "line is" if len(added) < 2 else "lines are"
        why = (
            f"its added {said} already at line {at + 1} in {where}, and the fuzzy place is "
            f"line {start(place) + 1}: cannot tell whether it is applied"
        )
        return _Outcome(None, _ambiguous(hunk, level, (start(place) + 1, at + 1), why))
    return _Outcome(place, _in_scope_result(hunk, level, at, where), shown=at)


def _judged_there(hunk: Hunk, idx: LineIndex, place: Place, rows: Sequence[int]) -> bool | None:
    """The one "already there" rule on code (`present.judge`, docs/engine.md), once the
    hunk's lines were found in its scope (`rows`): the input read as the release, and as the
    base the input without those lines, the hunk (less the context its place dropped) at its
    place there. True: every statement it changes has its counterpart in the same def/class
    reading as its result, or the lines found stand inside the very statement it changes
    (upstream took the change there, edited); False: not (a line found inside another
    statement of the scope is no evidence); None: the rule cannot tell (one line found, a
    counterpart twice). Where
    there are no statements to read (the file, or the base without those lines, is not
    Python), the lines found are the evidence: True for two or more, else None."""
    from sgpatch.placement.present import judge

    gone = set(rows)
    base = [ln for i, ln in enumerate(idx.lines) if i not in gone]
    at = place.pos - sum(1 for r in rows if r < place.pos)
    trimmed = hunk._replace(lines=hunk.lines[place.lead : len(hunk.lines) - place.trail])
    verdict = judge(trimmed, base, at, idx.lines)
    if not verdict.parsed:
        return True if len(rows) >= 2 else None
    there = verdict.there
    if there is False and _in_own_statement(hunk, idx, place, rows):
        there = True  # upstream took the change into that very statement, edited
    if there is True and len(rows) < 2:
        return None  # one line says too little either way, even in its own statement
    return there


def _in_own_statement(hunk: Hunk, idx: LineIndex, place: Place, rows: Sequence[int]) -> bool:
    """Do the lines found all stand inside the one statement the hunk changes at its place
    (upstream took the change into that statement, edited: a docstring's paragraph with a
    line of its own inside), rather than in another statement of the scope?"""
    from sgpatch.placement import statements as st

    iv = st.index("".join(idx.lines))
    chain = iv.holding(_first_change(hunk, place) + 1) if iv is not None else []
    if not chain:
        return False
    own = chain[-1]
    return all(own.start <= r + 1 <= own.end for r in rows)


def _in_scope_result(hunk: Hunk, level: Level, at: int, where: str) -> HunkResult:
    why = f"its added lines are already in {where} (blank lines and trailing whitespace aside)"
    return HunkResult(hunk.index, "already-applied", level=level, candidates=(at + 1,), reason=why)


def _first_change(hunk: Hunk, place: Place) -> int:
    """Input line of the hunk's first changed line (or insertion point) at `place`."""
    lead_ctx, _ = context_edges(hunk)
    return place.pos + lead_ctx - place.lead


def _indent(text: str) -> int:
    text = text.expandtabs(8)
    return len(text) - len(text.lstrip())


def _deleted_block_still_there(hunk: Hunk, idx: LineIndex, pos: int) -> bool:
    """For a pure deletion, its post-image (context only) can match where the lines to delete
    are still present but edited; most of the pre-image aligned there says so."""
    if any(ln.kind == "+" for ln in hunk.lines):
        return False
    return _mostly_there(hunk, idx, pos)


def _deleted_block_anywhere(hunk: Hunk, idx: LineIndex, lo: int) -> int | None:
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


def _eol_decides(hunk: Hunk, idx: LineIndex, pos: int) -> bool | None:
    """When the two images differ in their final newline only and reach the end of the file
    from `pos`, the file's last line says which one is there: True = the post-image."""
    if hunk.old_no_eol == hunk.new_no_eol or not idx.lines:
        return None
    if hunk.before != hunk.after or pos + len(hunk.before) != len(idx.lines):
        return None
    return hunk.new_no_eol == (not idx.lines[-1].endswith("\n"))


def _no_op(hunk: Hunk) -> bool:
    """A hunk whose two images are the same (`-1` then `+1`) changes nothing."""
    return hunk.before == hunk.after and hunk.old_no_eol == hunk.new_no_eol


def _echo(hunk: Hunk, idx: LineIndex, place: Place, mode: str) -> bool:
    """Does the other image match at the very same spot too?"""
    if _no_op(hunk):
        return False
    eol_side = _eol_decides(hunk, idx, place.pos) if not (place.lead or place.trail) else None
    if eol_side is not None:
        return eol_side != place.new_side
    other = side(hunk, not place.new_side, place.lead, place.trail, place.free)
    if not other.texts:
        return False
    key = (lambda t: t) if mode == "exact" else ws_key
    pattern = [key(t) for t in other.texts]
    return idx.matches_at(pattern, mode, place.pos, other.at_eof, other.at_bof)


def _ambiguous(hunk: Hunk, level: Level, cands: tuple[int, ...], reason: str) -> HunkResult:
    return HunkResult(hunk.index, "ambiguous", level=level, candidates=cands, reason=reason)


def _near_miss(hunk: Hunk, idx: LineIndex, expected: int, lo: int, chosen: Place) -> int | None:
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


def _mostly_there(hunk: Hunk, idx: LineIndex, pos: int) -> bool:
    """At least 60% (and 2) of the pre-image's lines sit at `pos`, aligned, whitespace-tolerant:
    the hunk's place, edited more than fuzz allows."""
    pattern = _ws_before(hunk)
    keys = idx.keys("ws")
    if pos < 0 or pos + len(pattern) > len(keys):
        return False
    same = sum(1 for a, b in zip(keys[pos : pos + len(pattern)], pattern, strict=True) if a == b)
    return same >= max(2, -(-3 * len(pattern) // 5))


def _result(
    hunk: Hunk, place: Place, level: Level, cands: tuple[int, ...], whitespace: bool = False
) -> HunkResult:
    return HunkResult(
        hunk.index,
        "already-applied" if place.new_side else "applied",
        level=level,
        fuzz=max(place.lead, place.trail, int(place.free)),
        whitespace=whitespace,
        candidates=cands,
    )


class _Step(NamedTuple):
    """One hunk's outcome inside apply_hunks: its result, and the place it was found at.
    `shown` is the input line to report instead of the place's (the hunk is already applied
    elsewhere in its scope). A named tuple: one a hunk, made at C speed."""

    result: HunkResult
    hunk: Hunk
    place: Place | None
    shown: int | None = None


def apply_hunks(
    lines: Sequence[str],
    hunks: Sequence[Hunk],
    *,
    fuzz: int = 0,
    reverse: bool = False,
    index: LineIndex | None = None,
    authored: bool = False,
) -> FileResult:
    """Place every hunk of one file and build the result (the input is not modified).

    `lines` keep their line endings (see diffs.split_lines). Hunks are placed in order, each after
    the previous one; a refused hunk leaves the others' results intact so every hunk is reported.
    Expected lines are carried forward: the gap between two hunks in the patch is the gap
    expected in the file, counted from where the previous hunk really was. A result that would
    define a def/class name twice in one body where the input did not is checked last
    (`_defined_twice`). Linear in hunks + lines on the common path (each hunk at its line).
    `index`: the LineIndex of these same `lines` from an earlier call (a caller placing many
    hunk sets on one file keys its lines once). `authored`: `lines` are the file the diff was
    made on (its variant's own release), so a hunk at its stated line, exactly, that defines a
    name twice did so in its author's tree: applied, with a warning (docs/engine.md).
    """
    if index is not None and index.lines is not lines:
        raise ValueError("apply_hunks: the index is of other lines")
    with collector_paused():
        return _apply_hunks(lines, hunks, fuzz, reverse, index or LineIndex(lines), authored)


def _apply_hunks(
    lines: Sequence[str],
    hunks: Sequence[Hunk],
    fuzz: int,
    reverse: bool,
    idx: LineIndex,
    authored: bool = False,
) -> FileResult:
    if reverse:
        hunks = [h.reversed() for h in hunks]
    if hunks and not any(ln.kind == " " for h in hunks for ln in h.lines):
        # a -U0 diff says nothing about the start or end of the file (git's --unidiff-zero)
        hunks = [h._replace(anchored=False) for h in hunks]
    steps, alternatives, plain = _first_pass(lines, idx, hunks, fuzz)
    if alternatives:
        steps = _by_order(steps, alternatives, lines, idx)
    spliced = [s for s in steps if _spliced(s)]
    out, spans, used = _splice(lines, [(s.place, s.hunk) for s in spliced])
    if _may_define_twice(idx, spliced):
        checked = _defined_twice(idx, steps, out, spans, authored)
        if checked is not steps:
            steps, plain = checked, False
            spliced = [s for s in steps if _spliced(s)]
            out, spans, used = _splice(lines, [(s.place, s.hunk) for s in spliced])
    if plain:  # every hunk at its expected line: the first pass's lines are the result's
        return FileResult(tuple(out), tuple([s.result for s in steps]))
    return FileResult(tuple(out), tuple(_reported(steps, spliced, spans, used)))


def _first_pass(
    lines: Sequence[str], idx: LineIndex, hunks: Sequence[Hunk], fuzz: int
) -> tuple[list[_Step], dict[int, tuple[tuple[Place, ...], int]], bool]:
    """Place each hunk in file order, after the previous one; ambiguous ones with several
    plain candidates are kept for the second pass (by index into the steps). Also says
    whether every hunk was plainly at its expected line (`_plainly_at`): then each result's
    line, foreseen from the shifts of the hunks before it, is the one `_reported` would find."""
    steps: list[_Step] = []
    alternatives: dict[int, tuple[tuple[Place, ...], int]] = {}
    moving: frozenset[str] | None = None  # what place_hunk needs, once one hunk needs it
    lo = 0
    prev_end: int | None = None
    prev_stated_end = 0
    shift = 0  # lines the hunks placed so far add: where the next plain one lands, if all stay
    keys = idx.exact_keys()
    plain = 0
    for hunk in hunks:
        stated = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        expected = stated if prev_end is None else prev_end + (stated - prev_stated_end)
        if _plainly_at(hunk, keys, expected, lo):
            plain += 1
            pre, post = hunk.side_texts
            line = expected + shift + 1  # as _reported maps it (it checks)
            offset = line - hunk.target_start - (0 if hunk.target_length else 1)
            result = HunkResult(hunk.index, "applied", "exact", line, offset)
            steps.append(_Step(result, hunk, Place(expected, False, 0, 0)))
            lo = prev_end = expected + len(pre)
            prev_stated_end = stated + hunk.source_length
            shift += len(post) - len(pre)
            continue
        if moving is None:
            moving = frozenset(ln.text.rstrip() for h in hunks for ln in h.lines if ln.kind == "-")
        out = place_hunk(hunk, lines, idx, expected, lo, fuzz, moving)
        place = out.place
        if place is not None:
            end = place.pos + side_len(hunk, place.new_side, place.lead, place.trail)
            lo = end
            prev_end = end + place.trail
            prev_stated_end = stated + hunk.source_length
            if out.result.status == "applied":
                shift += side_len(hunk, True, place.lead, place.trail) - (end - place.pos)
        elif out.alternatives:
            alternatives[len(steps)] = (out.alternatives, out.expected)
        steps.append(_Step(out.result, hunk, place, out.shown))
    return steps, alternatives, plain == len(steps)


def _plainly_at(hunk: Hunk, keys: list[str], expected: int, lo: int) -> bool:
    """The common case, which `place_hunk` would settle at its first step with no question
    left (`_at_expected`: one image, the pre-image, matches exactly at the expected line):
    checked without building its outcome, for each hunk of a many-hunk diff. `keys`: the
    exact keys of the file's lines. A post-image whose lines are there too goes the full
    way, whatever its anchors say. (`LineIndex.matches_at`, with its slice compared once.)"""
    pre, post = hunk.side_texts
    end = expected + len(pre)
    if expected < lo or not pre or keys[expected:end] != list(pre):
        return False
    if post and keys[expected : expected + len(post)] == list(post):
        return False
    at_eof, at_bof = anchors(hunk, False, 0, 0, False)
    return not ((at_eof and end != len(keys)) or (at_bof and expected))


def _spliced(step: _Step) -> bool:
    return step.place is not None and step.result.status == "applied"


def _reported(
    steps: Sequence[_Step],
    spliced: Sequence[_Step],
    spans: Sequence[tuple[int, int]],
    used: Sequence[int],
) -> list[HunkResult]:
    """Each hunk's result with the line where its post-image starts in the result file.
    Input lines map to result lines through the applied hunks' deltas, in one sorted walk
    (the steps are in file order and so are the splices): no per-hunk sum over all shifts.
    `spans` and `used`: each splice's result lines and the input lines it replaced."""
    deltas = sorted(
        (s.place.pos, (b - a) - n)
        for s, (a, b), n in zip(spliced, spans, used, strict=True)
        if s.place is not None
    )
    starts = [p for p, _ in deltas]
    sums = list(accumulate((d for _, d in deltas), initial=0))
    final = []
    for step in steps:
        res, hunk, place = step.result, step.hunk, step.place
        if place is None:
            final.append(res)
            continue
        start = step.shown if step.shown is not None else place.pos - place.lead
        line = start + sums[bisect_left(starts, start)] + 1
        # an empty side's start names the line it follows (`-5,2 +4,0` lands on line 5)
        offset = line - hunk.target_start - (0 if hunk.target_length else 1)
        same = res.line == line and res.offset == offset  # as the first pass foresaw
        final.append(res if same else _at_line(res, line, offset))
    return final


def _at_line(res: HunkResult, line: int, offset: int) -> HunkResult:
    """`replace(res, line=line, offset=offset)`, spelled out: once per hunk of the diff, and
    `dataclasses.replace` reads the fields first."""
    return HunkResult(
        res.index,
        res.status,
        res.level,
        line,
        offset,
        res.fuzz,
        res.whitespace,
        res.candidates,
        res.reason,
        res.warning,
    )


_DEF_STARTS = ("def ", "class ", "async ")


def _may_define_twice(idx: LineIndex, spliced: Sequence[_Step]) -> bool:
    """The cheap trigger for the defined-twice check: an applied hunk adds a def/class line
    whose name the input already defines somewhere, or that the hunks add twice. Nothing is
    parsed (and pydefs is not imported) for the many hunks that add no def/class line, nor
    are their post-images looked at one by one when none of them holds one (one C-speed
    search of them all, joined)."""
    if not _mentions_def("\n".join(chain.from_iterable(s.hunk.side_texts[1] for s in spliced))):
        return False
    added = [
        ln.text
        for s in spliced
        if _mentions_def("\n".join(s.hunk.side_texts[1]))
        for ln in s.hunk.lines
        if ln.kind == "+" and ln.text.lstrip().startswith(_DEF_STARTS)
    ]
    if not added:
        return False
    from sgpatch.placement.pydefs import defined_names

    names = [n for t in added for n in defined_names([t])]
    if len(set(names)) < len(names):
        return True
    have = idx.cache.get("defined")
    if have is None:
        have = idx.cache["defined"] = defined_names(idx.lines)
    return bool(set(names) & have)  # type: ignore[operator]


def _mentions_def(text: str) -> bool:
    """`text` (post-images, joined) holds one of `_DEF_STARTS` anywhere: searched at C speed
    before their lines are looked at one by one."""
    return "def " in text or "class " in text or "async " in text  # _DEF_STARTS


def _defined_twice(
    idx: LineIndex,
    steps: list[_Step],
    out: Sequence[str],
    spans: Sequence[tuple[int, int]],
    authored: bool = False,
) -> list[_Step]:
    """Python-aware safety at every level: a hunk whose placement makes one body define a
    def/class name twice where the input did not is already applied when its whole post-image
    is in that scope (`present.already_there`), and refused (naming both places) otherwise.
    A file that is not Python (the input does not parse) or whose result does not parse is
    not this check's business. Returns `steps` itself when nothing changes. `authored`: a
    hunk at its stated line, exactly, in the file it was made on, is the author's own code
    at the author's own place: applied as written, with a warning (`_authored_twice`)."""
    from sgpatch.placement.pydefs import defined_twice, parses

    target = "".join(idx.lines)
    if not parses(target):
        return steps
    owner = _added_lines(steps, spans)  # 1-based result line -> step index
    try:
        dups = defined_twice("".join(out), target, added=owner.keys())
    except (SyntaxError, ValueError):
        return steps
    checked = list(steps)
    for twice in dups:
        for line in twice.added:
            i, offset = owner.get(line, (None, 0))
            if i is not None and authored and _as_written(steps[i]):
                checked[i] = _authored_twice(checked[i], twice)
            elif i is not None and checked[i] is steps[i]:
                checked[i] = _twice_step(idx, steps[i], twice, offset)
    return checked if any(a is not b for a, b in zip(checked, steps, strict=True)) else steps


def _added_lines(
    steps: Sequence[_Step], spans: Sequence[tuple[int, int]]
) -> dict[int, tuple[int, int]]:
    """1-based result lines that applied hunks added: (step index, the line's 0-based row in
    that hunk's spliced post-image)."""
    owner: dict[int, tuple[int, int]] = {}
    spliced = [i for i, s in enumerate(steps) if _spliced(s)]
    for i, (first, _) in zip(spliced, spans, strict=True):
        place, hunk = steps[i].place, steps[i].hunk
        assert place is not None
        row = 0
        for ln in hunk.lines[place.lead : len(hunk.lines) - place.trail]:
            if ln.kind == "+":
                owner[first + row + 1] = (i, row)
            if ln.kind != "-":
                row += 1
    return owner


def _as_written(step: _Step) -> bool:
    """The hunk sits exactly where its header says (offset 0, fuzz 0, no whitespace slack)."""
    res, place, hunk = step.result, step.place, step.hunk
    stated = hunk.source_start - 1 if hunk.source_length else hunk.source_start
    return (
        place is not None
        and res.level == "exact"
        and not (res.fuzz or res.whitespace or place.lead or place.trail or place.free)
        and place.pos == stated
    )


def _authored_twice(step: _Step, twice: Twice) -> _Step:
    """The author's own duplicate: applied as written, and said (`Twice.warning`; a hunk
    that adds several, one after the other)."""
    said = step.result.warning
    if said is not None and twice.name + " is defined" in said:
        return step  # one warning per name, however many of its copies the hunk adds
    line = twice.warning() if said is None else f"{said}; {twice.warning()}"
    return step._replace(result=step.result._replace(warning=line))


def _twice_step(idx: LineIndex, step: _Step, twice: Twice, offset: int) -> _Step:
    """The verdict on one hunk that adds a second definition (at row `offset` of its spliced
    post-image): already applied in that scope, or refused naming both places."""
    from sgpatch.placement.present import there_rows
    from sgpatch.placement.scope import body_of

    place, hunk = step.place, step.hunk
    assert place is not None
    body = [ln for ln in hunk.lines[place.lead : len(hunk.lines) - place.trail] if ln.kind != "-"]
    at_input = _input_row(hunk, place, offset)
    lo, hi, where = body_of(idx, at_input, _indent(body[offset].text))
    rows = there_rows(hunk, idx.lines, lo, hi)
    level = step.result.level
    if rows and _judged_there(hunk, idx, place, rows) is not False:
        return _Step(_in_scope_result(hunk, level, rows[0], where), hunk, place, shown=rows[0])
    if twice.existing:
        had = f"the target already has it at line {twice.existing[0]}"
    else:
        had = "the patch adds it more than once"
    why = (
        f"would define {twice.name} twice in {twice.where}: {had}, and this hunk adds it "
        f"at line {at_input + 1}"
    )
    cands = (start(place) + 1, *twice.existing)
    return _Step(_ambiguous(hunk, level, cands, why), hunk, None)


def _input_row(hunk: Hunk, place: Place, offset: int) -> int:
    """The input line before which the post-image's `offset`-th body line would go."""
    row = place.pos
    seen = 0
    for ln in hunk.lines[place.lead : len(hunk.lines) - place.trail]:
        if ln.kind == "-":
            row += 1
            continue
        if seen == offset:
            return row
        seen += 1
        if ln.kind == " ":
            row += 1
    return row


def _by_order(
    steps: Sequence[_Step],
    alternatives: dict[int, tuple[tuple[Place, ...], int]],
    lines: Sequence[str],
    idx: LineIndex,
) -> list[_Step]:
    """Second pass for ambiguous hunks: hunks keep their order and never overlap, so only the
    candidates that leave room for the others can be right. A hunk whose earliest and latest
    order-consistent candidates are one and the same is placed there (two identical hunks in
    one class, two copies of the block: the first goes to the first, the second to the second),
    if it also passes the vetoes any single place must pass."""
    early = _assign(steps, alternatives, forward=True)
    late = _assign(steps, alternatives, forward=False)
    out = list(steps)
    lo, done = 0, 0  # the end of the last placed hunk before i, walked forward once
    for i, (_, expected) in sorted(alternatives.items()):
        for q in out[done:i]:
            if q.place is not None:
                lo = max(lo, _span(q.hunk, q.place)[1])
        done = i
        pl = early.get(i)
        if pl is None or late.get(i) is not pl:
            continue
        res, hunk = steps[i].result, steps[i].hunk
        veto = _veto(hunk, lines, idx, pl, res.level, [], expected, lo, loose=False)
        out[i] = (
            _Step(veto, hunk, None)
            if veto
            else _Step(_result(hunk, pl, res.level, res.candidates), hunk, pl)
        )
    return out


def _span(hunk: Hunk, pl: Place) -> tuple[int, int]:
    return pl.pos, pl.pos + side_len(hunk, pl.new_side, pl.lead, pl.trail)


def _assign(
    steps: Sequence[_Step],
    alternatives: dict[int, tuple[tuple[Place, ...], int]],
    forward: bool,
) -> dict[int, Place]:
    """Greedy order-consistent candidates for the ambiguous hunks: the earliest that fits after
    what comes before (forward) or the latest before what comes after; {} if none fits."""
    chosen: dict[int, Place] = {}
    bound: int | None = 0 if forward else None
    order = range(len(steps)) if forward else range(len(steps) - 1, -1, -1)
    for i in order:
        hunk, placed = steps[i].hunk, steps[i].place
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


def _fits(hunk: Hunk, pl: Place, bound: int, forward: bool) -> bool:
    a, b = _span(hunk, pl)
    return a >= bound if forward else b <= bound


def _splice(
    lines: Sequence[str], splices: Sequence[tuple[Place | None, Hunk]]
) -> tuple[list[str], list[tuple[int, int]], list[int]]:
    """Build the result; also return, per splice (in the order given), the span of result
    lines its body became and how many input lines it replaced."""
    eol = dominant_eol(lines)
    out: list[str] = []
    spans: list[tuple[int, int]] = [(0, 0)] * len(splices)
    used = [0] * len(splices)
    cur = 0
    n = len(lines)
    order = sorted(range(len(splices)), key=[pl.pos for pl, _ in splices].__getitem__)  # type: ignore[union-attr]
    for k in order:
        place, hunk = splices[k]
        assert place is not None
        size = len(hunk.lines) - place.lead - place.trail  # the body fuzz leaves
        # the context at either end of the body is the input's lines as they are: copied in
        # one slice each, with the gap before it
        head = max(0, min(hunk.edges[0] - place.lead, size))
        tail = max(0, min(hunk.edges[1] - place.trail, size - head))
        first = len(out) + place.pos - cur
        out.extend(lines[cur : place.pos + head])
        i = _middle(out, lines, place.pos + head, hunk, place.lead + head, size - head - tail, eol)
        out.extend(lines[i : i + tail])
        i += tail
        if i == n and out:
            if hunk.new_no_eol and place.trail == 0:
                out[-1] = strip_eol(out[-1])
            elif hunk.old_no_eol and not hunk.new_no_eol:
                out[-1] = strip_eol(out[-1]) + eol
        spans[k] = (first, len(out))
        used[k] = i - place.pos
        cur = i
    out.extend(lines[cur:])
    if _unended(out):  # only the very last line may lack a line ending
        for k in range(len(out) - 1):
            if not out[k].endswith("\n"):
                out[k] = out[k] + eol
    return out, spans, used


def _middle(
    out: list[str], lines: Sequence[str], i: int, hunk: Hunk, before: int, size: int, eol: str
) -> int:
    """Splice the middle of a hunk's body, its `size` lines between the context lines at
    either end (`before` of them ahead: dropped by fuzz or copied with the gap), from input
    line `i` on, and return the input line after it. With no context line inside it (the
    usual hunk: removed lines, then added ones), its added lines are the post-image's middle,
    put in at once, with nothing sliced from the hunk's lines; else it goes line by line."""
    pre, post = hunk.side_texts
    ends = len(hunk.lines) - size  # the context lines at either end, on both sides
    removed, added = len(pre) - ends, len(post) - ends
    if removed + added == size:
        out.extend(map(str.__add__, post[before : before + added], repeat(eol)))
        return i + removed
    for kind, text in hunk.lines[before : before + size]:
        if kind == " ":
            out.append(lines[i])
            i += 1
        elif kind == "-":
            i += 1
        else:
            out.append(text + eol)
    return i


def _unended(out: list[str]) -> bool:
    """Some line but the last lacks its line ending (the input's last line, now followed by
    added ones): checked at C speed (map over str.endswith), not a Python loop per line."""
    return not all(map(str.endswith, out[:-1], repeat("\n")))
