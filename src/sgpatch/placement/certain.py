"""Is a hunk's place certain? The bar a patch must clear on a version its set was not checked on.

On a release the set was checked on, the engine's usual reach is fine: lint proved every hunk
there. On a snapshot (a checkout of main, a nightly image) nobody did, so a hunk counts only when
it placed exactly (no whitespace tolerance, no fuzz) and its lines occur once in the file, or it
placed inside the def/class its `@@` header names and no other copy is in there. An exact copy
that won only by being nearest to (or at) the stated line while the named scope holds another
is not certain: the line numbers point at the wrong copy (issue 46.6). Copies of the other
image count too (the change already made in the named scope, its old lines placed elsewhere).
Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sgpatch.diff.unified import Hunk
from sgpatch.placement.match import HunkResult, LineIndex, Place, search, side_len


@dataclass(frozen=True)
class Doubt:
    """Why one hunk's place is not certain: it needed tolerance (whitespace, fuzz), or its
    lines are at several places and its header does not pick one (`repeated`)."""

    hunk: int
    kind: Literal["tolerance", "repeated"]
    reason: str


def _rivals(hunk: Hunk, idx: LineIndex, placed: Place) -> list[Place]:
    """Exact copies of the hunk elsewhere in the file: of the image it placed, at any other
    line; of its other image, where it does not overlap the placed one (a short image inside
    the longer one is an echo, as the engine reads it, not a second place)."""
    a = placed.pos
    b = a + side_len(hunk, placed.new_side, 0, 0)
    out = []
    for pl in search(hunk, idx, "exact", 0, 0, 0):
        if pl.new_side == placed.new_side:
            if pl.pos != a:
                out.append(pl)
        elif not (pl.pos < b and a < pl.pos + side_len(hunk, pl.new_side, 0, 0)):
            out.append(pl)
    return out


def uncertain(hunk: Hunk, result: HunkResult, idx: LineIndex) -> Doubt | None:
    """Why the hunk's place is not certain, or None when it is: exact, and either no exact
    copy of either image elsewhere in the file, or the place inside the def/class the `@@`
    header names with no copy there. A place outside the named scope while a copy stands in
    it is the copy the author meant left as it was: not certain. `idx` indexes the file as
    the hunk found it."""
    if result.status not in ("applied", "already-applied"):
        return None  # refused anyway: the engine's own reason stands
    if result.fuzz or result.whitespace or result.level in ("fuzz", "whitespace"):
        how = f"fuzz {result.fuzz}" if result.fuzz else "whitespace-tolerant matching"
        return Doubt(hunk.index, "tolerance", f"hunk #{hunk.index} places only with {how}")
    new_side = result.status == "already-applied"
    placed = Place((result.line or 1) - 1, new_side, 0, 0)
    rivals = _rivals(hunk, idx, placed)
    if not rivals:
        return None  # unique in the file
    from sgpatch.placement.scope import in_scope

    scoped = [pl for pl in rivals if in_scope(hunk, idx, pl)]
    if not scoped and in_scope(hunk, idx, placed):
        return None  # the one copy inside the def/class the header names
    return Doubt(hunk.index, "repeated", _repeated(hunk, placed, rivals, scoped))


def _repeated(hunk: Hunk, placed: Place, rivals: list[Place], scoped: list[Place]) -> str:
    """The reason a repeated hunk is not certain, naming the places."""
    same = sorted([placed.pos, *(pl.pos for pl in rivals if pl.new_side == placed.new_side)])
    what = "its post-image is" if placed.new_side else "the lines it changes are"
    where = ", ".join(str(p + 1) for p in same[:8])
    if len(same) > 1:
        why = f"hunk #{hunk.index}: {what} at {len(same)} places (lines {where})"
    else:
        why = f"hunk #{hunk.index}: {what} at line {where}"
    other = [pl.pos + 1 for pl in rivals if pl.new_side != placed.new_side]
    if other:
        also = "its post-image" if not placed.new_side else "the lines it changes"
        why += f", and {also} at line(s) {', '.join(map(str, other[:8]))}"
    if scoped:
        return (
            f"{why}; it is placed at line {placed.pos + 1}, but the scope its @@ header names "
            f"('{hunk.section_header.strip()}') holds the copy at line {scoped[0].pos + 1}"
        )
    return f"{why} and its @@ header does not single one out"


def uncertain_hunks(
    lines: Sequence[str], hunks: Sequence[Hunk], results: Sequence[HunkResult]
) -> list[Doubt]:
    """The reasons, hunk by hunk, that a file's placements are not certain ([] when all are).
    Each hunk is judged on the file as it found it: the hunks before it applied."""
    from sgpatch.placement.engine import apply_hunks

    out = []
    current = list(lines)
    for n, (hunk, result) in enumerate(zip(hunks, results, strict=True)):
        why = uncertain(hunk, result, LineIndex(current))
        if why is not None:
            out.append(why)
        if n + 1 < len(hunks):
            current = list(apply_hunks(lines, hunks[: n + 1]).lines)
    return out


__all__ = ["Doubt", "uncertain", "uncertain_hunks"]
