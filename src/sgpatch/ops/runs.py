"""Contiguous runs of releases for parallel workers, with stealing from the far end.

A worker remembers the placements it made (`ops.placed`), and a release mostly repeats its
neighbour's bytes, so a worker should plan neighbours one after the other. Releases do not
cost the same (the later ones conflict more, and conflicts are explained), so fixed halves
would leave one worker idle. Hence: each worker starts on a contiguous run of its own, and one
that is done takes releases from the *end* of the run with the most left, walking backwards;
what it takes is contiguous too, so its memo keeps hitting. Plain functions over a flat list of
bounds (`lo, hi` per run), which the caller keeps in shared memory under a lock.
"""

from __future__ import annotations

from collections.abc import MutableSequence

__all__ = ["first_runs", "take"]


def first_runs(items: int, workers: int) -> list[int]:
    """`[lo0, hi0, lo1, hi1, ...]`: `items` split into `workers` contiguous runs whose lengths
    differ by at most one (the earlier runs are the longer)."""
    bounds: list[int] = []
    lo = 0
    for w in range(workers):
        size = items // workers + (1 if w < items % workers else 0)
        bounds += [lo, lo + size]
        lo += size
    return bounds


def take(bounds: MutableSequence[int], me: int) -> int | None:
    """The next item for worker `me` (the caller holds the lock): the front of its own run,
    else the back of the run with the most left (the lowest such run on a tie); None when
    every run is empty."""
    if bounds[2 * me] < bounds[2 * me + 1]:
        bounds[2 * me] += 1
        return bounds[2 * me] - 1
    left = [bounds[2 * w + 1] - bounds[2 * w] for w in range(len(bounds) // 2)]
    most = max(range(len(left)), key=lambda w: (left[w], -w))
    if left[most] <= 0:
        return None
    bounds[2 * most + 1] -= 1
    return bounds[2 * most + 1]
