"""explain: the nearest partial matches of a hunk that fits nowhere."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import patch_of
from sgpatch.diff.unified import split_lines
from sgpatch.placement.explain import _partial, _partial_starts
from sgpatch.placement.match import LineIndex, ws_key


def _by_comparison(hunk, idx: LineIndex, expected: int, lo: int) -> tuple[int, ...]:
    """The candidates as a start-by-start comparison of the pre-image scores them."""
    pattern = [ws_key(t) for t in hunk.before]
    keys = idx.keys("ws")
    scored = []
    for p in _partial_starts(pattern, idx, expected, lo):
        score = sum(1 for a, b in zip(keys[p : p + len(pattern)], pattern, strict=False) if a == b)
        if score:
            scored.append((-score, abs(p - expected), p))
    return tuple(p + 1 for _, _, p in sorted(scored)[:3])


WORDS = st.sampled_from(["a = 1", "b = 2", "", "return x", "  c = 3", "pass"])


@settings(max_examples=200)
@given(
    old=st.lists(WORDS, min_size=3, max_size=12),
    file=st.lists(WORDS, min_size=1, max_size=60),
    expected=st.integers(0, 60),
    lo=st.integers(0, 10),
)
def test_scores_count_the_lines_that_match_at_each_start(old, file, expected, lo):
    """Input: a hunk's pre-image and a file drawn from a few repeated lines (blank ones too),
    any expected line and lower bound. Outcome: the candidates (best three starts by lines
    matched, then nearness, then line) are those a start-by-start comparison gives."""
    before = "".join(f"{t}\n" for t in old)
    hunk = patch_of(before, before + "added\n").files[0].hunks[0]
    idx = LineIndex(split_lines("".join(f"{t}\n" for t in file)))
    got = _partial(hunk, idx, expected, lo)
    assert got.candidates == _by_comparison(hunk, idx, expected, lo)
