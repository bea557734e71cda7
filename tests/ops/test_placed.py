"""placed: the memo of placements a matrix run keeps (same bytes and hunks placed once)."""

from __future__ import annotations

from helpers import PATCHED10, V10, patch_of
from sgpatch.ops import placed

HUNKS = patch_of(V10, PATCHED10, "srt/mod.py").files[0].hunks
ONE_BYTE_OFF = V10.replace("    y = 2\n", "    y = 3\n").encode()  # a line the patch changes


def test_the_same_bytes_and_hunks_are_placed_once_with_the_same_result():
    """Input: V10's bytes and the patch's hunks placed twice under `remembering`. Outcome: the
    second is a hit, the very result of the first, and equal to a placement without the memo."""
    plain = placed.place(V10.encode(), HUNKS, 0)
    with placed.remembering() as memo:
        first = placed.place(V10.encode(), HUNKS, 0)
        again = placed.place(bytes(bytearray(V10.encode())), HUNKS, 0)  # equal, not the same
    assert memo.hits == 1 and again is first
    assert first == plain and first.after == PATCHED10.encode()


def test_a_differing_byte_or_fuzz_is_placed_anew():
    """Input: V10, then V10 with one byte changed where the patch edits, then V10 at fuzz 1.
    Outcome: no hit; the changed bytes get their own result (a conflict), not V10's."""
    with placed.remembering() as memo:
        good = placed.place(V10.encode(), HUNKS, 0)
        off = placed.place(ONE_BYTE_OFF, HUNKS, 0)
        fuzzed = placed.place(V10.encode(), HUNKS, 1)
    assert memo.hits == 0
    assert [h.status for h in good.hunks] == ["applied", "applied"]
    assert "conflict" in [h.status for h in off.hunks] and off.after != good.after
    assert off == placed.place(ONE_BYTE_OFF, HUNKS, 0)  # what the engine says without the memo
    assert fuzzed == good


def test_equal_hunks_from_another_parse_hit():
    """Input: the hunks of the same diff parsed twice (equal values, other objects). Outcome: a
    hit: the key compares hunks by value, as two releases' plans parse their patch anew."""
    other = patch_of(V10, PATCHED10, "srt/mod.py").files[0].hunks
    assert other is not HUNKS
    with placed.remembering() as memo:
        placed.place(V10.encode(), HUNKS, 0)
        placed.place(V10.encode(), other, 0)
    assert memo.hits == 1


def test_the_memo_is_off_outside_the_block_and_bounded():
    """Input: a memo of two entries fed three inputs, then the block left. Outcome: the oldest
    is placed anew (dropped), the newest hits; after the block nothing is remembered."""
    texts = [V10.encode(), ONE_BYTE_OFF, V10.encode() + b"\n# tail\n"]
    with placed.remembering(size=2) as memo:
        for t in texts:
            placed.place(t, HUNKS, 0)
        placed.place(texts[2], HUNKS, 0)
        assert memo.hits == 1
        placed.place(texts[0], HUNKS, 0)
        assert memo.hits == 1
    assert placed._active is None
