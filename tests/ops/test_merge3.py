"""sgpatch.ops.merge3: the three-way merge behind `revert --force`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sgpatch.ops.merge3 import merge, split

BASE = b"".join(b"line %d\n" % i for i in range(1, 21))  # what sgpatch wrote
ORIGINAL = BASE.replace(b"line 5\n", b"").replace(b"line 20\n", b"orig 20\n")  # before sgpatch


def test_an_edit_elsewhere_is_kept_and_the_set_change_taken_out():
    """Input: the user changed line 12 of what sgpatch wrote. Outcome: the original with the
    user's line 12."""
    ours = BASE.replace(b"line 12\n", b"mine 12\n")
    merged, _ = merge(BASE, ours, ORIGINAL)
    assert merged == ORIGINAL.replace(b"line 12\n", b"mine 12\n")


def test_a_line_appended_at_the_end_after_a_change_at_the_end_is_kept():
    """Input: the set's change is the last line; the user appended a line after it (the case
    that exited 3 with patch-file reverse-apply). Outcome: original + the appended line."""
    ours = BASE + b"appended\n"
    merged, _ = merge(BASE, ours, ORIGINAL)
    assert merged == ORIGINAL + b"appended\n"


def test_an_edit_of_a_line_the_set_changed_is_a_conflict_naming_the_line():
    """Input: the user edited line 20, which the set changed. Outcome: (None, 20)."""
    ours = BASE.replace(b"line 20\n", b"mine 20\n")
    assert merge(BASE, ours, ORIGINAL) == (None, 20)


def test_two_insertions_at_one_place_are_a_conflict():
    base = b"a\nb\n"
    assert merge(base, b"a\nmine\nb\n", b"a\ntheirs\nb\n")[0] is None


def test_the_same_change_on_both_sides_is_taken_once():
    ours = ORIGINAL
    assert merge(BASE, ours, ORIGINAL) == (ORIGINAL, 0)


@pytest.mark.parametrize("data", [b"", b"x", b"x\n", b"a\r\nb\r\n", b"a\n\nb"])
def test_split_is_byte_exact(data):
    assert b"".join(split(data)) == data


lines = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"d\r\n", b"e"]), max_size=12)


@given(lines, lines, lines)
def test_merge_never_raises_and_keeps_one_side_when_the_other_is_unchanged(b, o, t):
    """Hypothesis: with ours == base the result is theirs, with theirs == base it is ours;
    any input gives bytes or a conflict, never an exception."""
    base, ours, theirs = b"".join(b), b"".join(o), b"".join(t)
    assert merge(base, base, theirs)[0] == theirs
    assert merge(base, ours, base)[0] == ours
    merge(base, ours, theirs)
