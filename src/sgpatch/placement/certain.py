"""Is a hunk's place certain? The bar a patch must clear on a version its set was not checked on.

On a release the set was checked on, the engine's usual reach is fine: lint proved every hunk
there. On a snapshot (a checkout of main, a nightly image) nobody did, so a hunk counts only when
it placed exactly (no whitespace tolerance, no fuzz) and its lines occur once in the file, or once
inside the def/class its `@@` header names. An exact copy that won only by being nearest to the
stated line (GNU patch's reach) is not certain. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sgpatch.diff.unified import Hunk
from sgpatch.placement.match import HunkResult, LineIndex, search


@dataclass(frozen=True)
class Doubt:
    """Why one hunk's place is not certain: it needed tolerance (whitespace, fuzz), or its
    lines are at several places and its header does not pick one (`repeated`)."""

    hunk: int
    kind: Literal["tolerance", "repeated"]
    reason: str


def _copies(hunk: Hunk, idx: LineIndex, new_side: bool) -> list:
    return [pl for pl in search(hunk, idx, "exact", 0, 0, 0) if pl.new_side == new_side]


def uncertain(hunk: Hunk, result: HunkResult, idx: LineIndex) -> Doubt | None:
    """Why the hunk's place is not certain, or None when it is. `idx` indexes the file as the
    hunk found it."""
    if result.status not in ("applied", "already-applied"):
        return None  # refused anyway: the engine's own reason stands
    if result.fuzz or result.whitespace or result.level in ("fuzz", "whitespace"):
        how = f"fuzz {result.fuzz}" if result.fuzz else "whitespace-tolerant matching"
        return Doubt(hunk.index, "tolerance", f"hunk #{hunk.index} places only with {how}")
    new_side = result.status == "already-applied"
    copies = _copies(hunk, idx, new_side)
    if len(copies) <= 1:
        return None
    from sgpatch.placement.scope import in_scope

    if sum(1 for pl in copies if in_scope(hunk, idx, pl)) == 1:
        return None
    what = "its post-image is" if new_side else "the lines it changes are"
    lines = ", ".join(str(pl.pos + 1) for pl in copies[:8])
    why = (
        f"hunk #{hunk.index}: {what} at {len(copies)} places (lines {lines}) and its @@ header "
        "does not single one out"
    )
    return Doubt(hunk.index, "repeated", why)


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
