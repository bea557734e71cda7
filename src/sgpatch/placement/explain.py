"""Why a hunk fits nowhere, in words a person can act on: the anchor that held it (start or
end of the file), or the nearest partial matches of its pre-image and the first line that
differs. Pure, no I/O; bounded by the file's line index, not by file size x hunk size."""

from __future__ import annotations

from collections.abc import Sequence

from sgpatch.diff.unified import Hunk, strip_eol
from sgpatch.placement.match import HunkResult, Image, LineIndex, search, side, ws_key


def explain_conflict(hunk: Hunk, idx: LineIndex, expected: int, lo: int) -> HunkResult:
    """Explain a hunk that fits nowhere: the anchor that held it, or the nearest partial
    matches of its pre-image."""
    pre = side(hunk, False, 0, 0)
    rule = _anchor_rule(hunk, pre)
    if rule:
        free = [pl.pos for pl in search(hunk, idx, "ws", 0, 0, lo, free=True) if not pl.new_side]
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
        return found._replace(reason=f"anchored at {rule}: {found.reason}")
    return found


def _anchor_rule(hunk: Hunk, pre: Image) -> str:
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


def _partial_starts(pattern: Sequence[str], idx: LineIndex, expected: int, lo: int) -> list[int]:
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


def _partial(hunk: Hunk, idx: LineIndex, expected: int, lo: int) -> HunkResult:
    """The nearest partial matches of the pre-image, and the first line that differs."""
    pattern = [ws_key(t) for t in hunk.before]
    keys = idx.keys("ws")
    m = len(pattern)
    scores = dict.fromkeys(_partial_starts(pattern, idx, expected, lo), 0)
    for k, key in enumerate(pattern):  # a start's score: the pattern lines that match there
        for q in idx.positions("ws", key):
            if q - k in scores:
                scores[q - k] += 1
    scored = sorted((-score, abs(p - expected), p) for p, score in scores.items() if score)
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
