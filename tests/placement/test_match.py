"""match: the per-file line index under the engine (its placement behaviour is covered through
the engine in test_engine.py and test_fuzz.py)."""

from __future__ import annotations

import pytest

from sgpatch.placement.match import LineIndex, dominant_eol, exact_key, ws_key


@pytest.mark.parametrize(
    "file_lines",
    [
        [],
        ["a\n", "b\n"],
        ["a\n", "b"],
        ["a\r\n", "b\n"],
        ["\n", "\n", "x"],
        ["a", "b\n"],  # a line without an ending mid-file (never from split_lines)
        ["a\nb", "c\n"],  # a line holding an LF: the per-line way must be used
        ["\tx  =\t1 \r\n", "  \t y\n", " \x0c z"],  # tabs, CRLF, form feed (ws keys)
    ],
)
def test_index_keys_match_the_per_line_keys(file_lines):
    """Input: lines of odd shapes. Outcome: the index's fast key paths (split of the joined
    text; ws keys from the exact ones) give exactly exact_key and ws_key of each line, falling
    back to the per-line way whenever the split would not."""
    assert LineIndex(file_lines).keys("exact") == [exact_key(ln) for ln in file_lines]
    assert LineIndex(file_lines).keys("ws") == [ws_key(ln) for ln in file_lines]


@pytest.mark.parametrize(
    ("file_lines", "eol"),
    [([], "\n"), (["a\r\n", "b\r\n", "c\n"], "\r\n"), (["a\r\n", "b\n"], "\n"), (["a"], "\n")],
)
def test_dominant_eol_counts_line_endings(file_lines, eol):
    """Input: lines ending in CRLF, LF or nothing. Outcome: CRLF only when more lines end in
    it than in a bare LF (a tie is LF)."""
    assert dominant_eol(file_lines) == eol
