"""The "already applied in scope" rule (placement/present.py)."""

from __future__ import annotations

from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.placement.present import already_there

HUNK = (
    "--- a/w.py\n+++ b/w.py\n@@ -1,4 +1,8 @@ class W:\n"
    "     def a(self):\n"
    "         return 1\n"
    "+\n"
    "+    def b(self):\n"
    "+        x = 1\n"
    "+        return x\n"
    " \n"
    "     def c(self):\n"
)


def _hunk(text: str = HUNK):
    return parse_patch(text, "t.patch").files[0].hunks[0]


def test_added_lines_with_a_blank_line_of_difference_are_there():
    """Input: the hunk adds method b (3 lines); the scope has b elsewhere, with a blank line
    inside it and trailing spaces. Outcome: there, at b's def line (0-based 5)."""
    lines = split_lines(
        "class W:\n    def c(self):\n        pass\n\n\n    def b(self):  \n\n"
        "        x = 1\n        return x\n"
    )
    assert already_there(_hunk(), lines) == 5


def test_indentation_counts_and_runs_stay_together():
    """Input: b's lines at another indentation; b's lines split by another line.
    Outcome: not there, either way."""
    moved = split_lines("def b(self):\n    x = 1\n    return x\n")
    split = split_lines("    def b(self):\n        x = 1\n        y = 2\n        return x\n")
    assert already_there(_hunk(), moved) is None
    assert already_there(_hunk(), split) is None


def test_only_inside_the_scope():
    """Input: b's lines at lines 0-2; the scope given is lines 3 onwards.
    Outcome: there for the whole file, not for the scope."""
    lines = split_lines("    def b(self):\n        x = 1\n        return x\nclass W:\n    pass\n")
    assert already_there(_hunk(), lines) == 0
    assert already_there(_hunk(), lines, 3, len(lines)) is None


def test_removed_lines_must_be_gone_unless_the_post_image_keeps_them():
    """Input: a hunk replacing `x = 1` by `x = 2`, on a scope with `x = 2` and still `x = 1`;
    then on one with only `x = 2`; a hunk that removes a line it also keeps as context.
    Outcome: not there; there; there."""
    swap = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-    x = 1\n+    x = 2\n b\n"
    assert already_there(_hunk(swap), split_lines("    x = 2\n    x = 1\n")) is None
    assert already_there(_hunk(swap), split_lines("a\n    x = 2\nb\n")) == 1
    keep = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-a\n+z\n b\n"
    assert already_there(_hunk(keep), split_lines("a\nz\nb\n")) == 1


def test_runs_must_come_in_order():
    """Input: a hunk adding `one` then (after context) `two`; a scope with two before one,
    then one with one before two. Outcome: not there; there at `one`."""
    two_runs = "--- a/f\n+++ b/f\n@@ -1,3 +1,5 @@\n a\n+one\n b\n+two\n c\n"
    assert already_there(_hunk(two_runs), split_lines("two\nx\none\n")) is None
    assert already_there(_hunk(two_runs), split_lines("x\none\ny\ntwo\n")) == 1


def test_a_pure_deletion_is_there_when_its_lines_are_gone():
    """Input: a hunk deleting `gone`; a scope without it, one with it.
    Outcome: there (at the scope's start); not there."""
    deletion = "--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n-gone\n b\n"
    assert already_there(_hunk(deletion), split_lines("a\nb\n"), 0, 2) == 0
    assert already_there(_hunk(deletion), split_lines("a\ngone\nb\n")) is None
