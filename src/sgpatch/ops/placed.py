"""Placements remembered by content, for a run that places the same hunks on the same file
bytes many times: `matrix` over neighbouring releases, where most files a stack touches are
the same bytes from one release to the next (the slime stack over the 42 0.5.x releases: 1,899
placements, 1,170 distinct inputs). Off unless a run turns it on (`remembering`), so a
short command pays nothing (no hashlib, no memory kept).

Why the key is enough: the engine (`placement.engine.apply_hunks`) is a pure function of the
file's lines, the hunks and fuzz (no I/O, no global option, nothing read from the tree), and
a file plan's `after` and hunk results are all it returns. So a placement is reused only when
  - the input bytes are equal: their sha256 is the key (the lines are `split_lines(decode(..))`
    of the bytes alone);
  - the hunks are equal: a `Hunk` is a frozen dataclass compared by value over every field the
    engine reads (its derived side texts and edges are made from `lines`), so two file
    patches with the same text give equal hunks;
  - the fuzz and `authored` are equal (the options `_plan_hunks` passes; direction is in
    the hunks).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sgpatch.diff.unified import Hunk, decode, encode, split_lines
from sgpatch.placement.engine import HunkResult, apply_hunks

__all__ = ["Placed", "Placements", "place", "remember", "remembering"]


@dataclass(frozen=True)
class Placed:
    """What placing a file's hunks gives a file plan: the bytes after, a result per hunk."""

    after: bytes
    hunks: tuple[HunkResult, ...]


class Placements:
    """A bounded memo of placements, least recently used dropped first. The bound keeps a few
    releases' worth of files (the next release mostly repeats the last one's bytes) without
    holding every file of a long run."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.hits = 0
        self._memo: OrderedDict[tuple[bytes, tuple[Hunk, ...], int, bool], Placed] = OrderedDict()

    def place(
        self, current: bytes, hunks: tuple[Hunk, ...], fuzz: int, authored: bool = False
    ) -> Placed:
        import hashlib

        key = (hashlib.sha256(current).digest(), hunks, fuzz, authored)
        found = self._memo.get(key)
        if found is not None:
            self.hits += 1
            self._memo.move_to_end(key)
            return found
        placed = self._memo[key] = _place(current, hunks, fuzz, authored)
        if len(self._memo) > self.size:
            self._memo.popitem(last=False)
        return placed


_active: Placements | None = None


def place(current: bytes, hunks: Sequence[Hunk], fuzz: int, authored: bool = False) -> Placed:
    """The hunks placed in `current`: remembered when a run turned the memo on."""
    if _active is None:
        return _place(current, hunks, fuzz, authored)
    return _active.place(current, tuple(hunks), fuzz, authored)


def _place(current: bytes, hunks: Sequence[Hunk], fuzz: int, authored: bool = False) -> Placed:
    result = apply_hunks(split_lines(decode(current)), hunks, fuzz=fuzz, authored=authored)
    return Placed(encode("".join(result.lines)), result.hunks)


def remember(size: int = 256) -> Placements:
    """Turn the memo on for the rest of this process (a matrix worker's whole life)."""
    global _active
    if _active is None:
        _active = Placements(size)
    return _active


@contextlib.contextmanager
def remembering(size: int = 256) -> Iterator[Placements]:
    """The memo on for a block (matrix planning in this process), off again after it, so a
    later run in the same process (a test) never sees another's placements."""
    global _active
    before = _active
    _active = Placements(size)
    try:
        yield _active
    finally:
        _active = before
