"""runs: contiguous runs of releases per worker, the far end of the longest taken when done."""

from __future__ import annotations

import itertools
import random

from sgpatch.ops.runs import first_runs, take


def test_first_runs_are_contiguous_and_even():
    """Input: 42 items on 2 workers, 5 on 3, 1 on 2. Outcome: [lo, hi) per worker, back to back,
    lengths within one of each other; a worker may start with nothing."""
    assert first_runs(42, 2) == [0, 21, 21, 42]
    assert first_runs(5, 3) == [0, 2, 2, 4, 4, 5]
    assert first_runs(1, 2) == [0, 1, 1, 1]


def test_a_worker_done_early_walks_back_from_the_end_of_the_longest_run():
    """Input: 10 items, 2 workers; worker 1 takes one, then worker 0 takes everything. Outcome:
    worker 0 takes its own run forwards, then worker 1's from its end backwards (contiguous, so
    its memo keeps hitting); then nothing is left."""
    bounds = first_runs(10, 2)
    assert take(bounds, 1) == 5
    got = []
    while (i := take(bounds, 0)) is not None:
        got.append(i)
    assert got == [0, 1, 2, 3, 4, 9, 8, 7, 6]
    assert take(bounds, 1) is None


def test_every_item_is_taken_once_whatever_the_interleaving():
    """Input: 42 items on 3 workers, taken in seeded random turns. Outcome: each item exactly
    once, and each worker's items are at most a few contiguous stretches."""
    rng = random.Random(7)
    bounds = first_runs(42, 3)
    taken: dict[int, list[int]] = {0: [], 1: [], 2: []}
    while True:
        me = rng.randrange(3)
        i = take(bounds, me)
        if i is None:
            break
        taken[me].append(i)
    assert sorted(i for got in taken.values() for i in got) == list(range(42))
    for got in taken.values():
        breaks = sum(1 for a, b in itertools.pairwise(got) if abs(a - b) != 1)
        assert breaks <= 3
