"""certain.py: when a hunk's place counts as certain on a version the set was not checked on.
Each test gives a file, a diff and the engine's result, and says whether the place is certain."""

from __future__ import annotations

from helpers import lines, make_diff, numbered, patch_of
from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.placement.certain import uncertain_hunks
from sgpatch.placement.engine import apply_hunks

BODY = ("    y = 0", "    x = 1", "    return x")
REPEATED = lines("def a():", *BODY, "", "def b():", *BODY)


def doubts(text: str, diff: str, fuzz: int = 0):
    patch = parse_patch(diff, "t.patch")
    hunks = patch.files[0].hunks
    result = apply_hunks(split_lines(text), hunks, fuzz=fuzz)
    return result, uncertain_hunks(split_lines(text), hunks, result.hunks)


def test_an_exact_unique_hunk_is_certain():
    """Input: a hunk whose lines occur once, placed at its line. Outcome: certain (no doubt)."""
    text = lines(*numbered("line", 20))
    result, found = doubts(text, make_diff(text, text.replace("line9\n", "LINE9\n")))
    assert [h.status for h in result.hunks] == ["applied"] and found == []


def test_an_exact_hunk_moved_but_unique_is_certain():
    """Input: the same hunk on a file with five lines more on top (offset 5). Outcome: certain:
    exact and unique, wherever it lands."""
    text = lines(*numbered("line", 20))
    diff = make_diff(text, text.replace("line9\n", "LINE9\n"))
    result, found = doubts(lines(*numbered("top", 5)) + text, diff)
    assert result.hunks[0].offset == 5 and found == []


def test_lines_found_twice_without_a_header_are_not_certain():
    """Input: a one-line-context hunk (`y = 0` / `x = 1` / `return x`) whose lines occur in
    two functions, with no @@ header; the engine places it at its stated line. Outcome:
    placed, but not certain: "repeated", naming both places."""
    diff = make_diff(REPEATED, REPEATED.replace("    x = 1\n", "    x = 2\n", 1), n=1)
    result, found = doubts(REPEATED, diff)
    assert result.hunks[0].status == "applied" and result.hunks[0].level == "exact"
    assert [(d.hunk, d.kind) for d in found] == [(1, "repeated")]
    assert "the lines it changes are at 2 places (lines 2, 7)" in found[0].reason


def test_a_header_that_names_one_of_the_copies_makes_it_certain():
    """Input: the same repeated lines, the hunk's @@ header naming `def b():`. Outcome:
    certain: one copy is inside the scope the header names."""
    head = REPEATED[: REPEATED.index("def b")]
    new = head + REPEATED[len(head) :].replace("    x = 1\n", "    x = 9\n")
    diff = make_diff(REPEATED, new, n=1)
    assert "@@ -7,3 +7,3 @@\n" in diff
    diff = diff.replace("@@ -7,3 +7,3 @@", "@@ -7,3 +7,3 @@ def b():")
    result, found = doubts(REPEATED, diff)
    assert result.hunks[0].status == "applied" and found == []


def test_whitespace_tolerant_placement_is_not_certain():
    """Input: the file's line has a trailing blank the hunk lacks (placed by the engine's
    whitespace-tolerant level). Outcome: not certain: "tolerance"."""
    text = lines(*numbered("line", 10))
    diff = make_diff(text, text.replace("line5\n", "LINE5\n"))
    result, found = doubts(text.replace("line5\n", "line5  \n"), diff)
    assert result.hunks[0].whitespace
    assert [(d.kind, d.reason) for d in found] == [
        ("tolerance", "hunk #1 places only with whitespace-tolerant matching")
    ]


def test_fuzzy_placement_is_not_certain():
    """Input: the hunk's first context line changed, placed with fuzz 1. Outcome: not certain
    ("fuzz 1")."""
    text = lines(*numbered("line", 12))
    diff = make_diff(text, text.replace("line6\n", "LINE6\n"))
    result, found = doubts(text.replace("line3\n", "edited3\n"), diff, fuzz=1)
    assert result.hunks[0].fuzz == 1
    assert [d.reason for d in found] == ["hunk #1 places only with fuzz 1"]


def test_each_hunk_is_judged_on_the_file_the_hunks_before_it_left():
    """Input: hunk 1 rewrites the first copy of a repeated block, so hunk 2's lines (the
    second copy) are unique once hunk 1 applied. Outcome: both certain."""
    block = ["    x = 1", "    return x"]
    old = lines("def a():", *block, *numbered("f", 8), "def b():", *block)
    new = old.replace("def a():\n    x = 1\n", "def a():\n    x = 7\n")
    new = new.replace("def b():\n    x = 1\n", "def b():\n    x = 8\n")
    patch = patch_of(old, new, n=1)
    hunks = patch.files[0].hunks
    assert len(hunks) == 2
    result = apply_hunks(split_lines(old), hunks)
    assert uncertain_hunks(split_lines(old), hunks, result.hunks) == []


def test_a_refused_hunk_keeps_the_engine_s_own_reason():
    """Input: a hunk that does not apply at all. Outcome: no doubt added (the engine's
    conflict stands on its own)."""
    text = lines(*numbered("line", 10))
    diff = make_diff(text, text.replace("line5\n", "LINE5\n"))
    result, found = doubts(text.replace("line5\n", "other\n"), diff)
    assert result.hunks[0].status == "conflict" and found == []


FOO_THEN_BAR = lines("def foo():", *BODY, "", "def bar():", *BODY)
BAR_THEN_FOO = lines("def bar():", *BODY, "", "def foo():", *BODY)


def _foo_diff() -> str:
    """A one-line-context diff made on FOO_THEN_BAR that changes foo's `x = 1` (line 3), its
    @@ header naming `def foo():` as git writes it."""
    diff = make_diff(FOO_THEN_BAR, FOO_THEN_BAR.replace("    x = 1\n", "    x = 2\n", 1), n=1)
    assert "@@ -2,3 +2,3 @@\n" in diff
    return diff.replace("@@ -2,3 +2,3 @@", "@@ -2,3 +2,3 @@ def foo():")


def test_the_stated_line_in_another_def_while_the_named_def_holds_a_copy_is_not_certain():
    """Input (46.6): the diff changes foo's `x = 1` at line 3, header `def foo():`; on the
    snapshot bar comes first, so line 3 is inside bar and foo's copy is at line 8. The engine
    places it exactly at the stated line (in bar). Outcome: not certain ("repeated"), naming
    the placed line 2 and foo's copy at line 7."""
    result, found = doubts(BAR_THEN_FOO, _foo_diff())
    assert (result.hunks[0].status, result.hunks[0].line) == ("applied", 2)
    assert [(d.hunk, d.kind) for d in found] == [(1, "repeated")]
    assert found[0].reason == (
        "hunk #1: the lines it changes are at 2 places (lines 2, 7); it is placed at line 2, "
        "but the scope its @@ header names ('def foo():') holds the copy at line 7"
    )


def test_the_stated_line_inside_the_named_def_with_a_copy_elsewhere_is_certain():
    """Input: the same diff on FOO_THEN_BAR itself (the stated line is in foo, the header's
    def; bar holds the other copy). Outcome: certain."""
    result, found = doubts(FOO_THEN_BAR, _foo_diff())
    assert (result.hunks[0].status, result.hunks[0].line) == ("applied", 2) and found == []


def test_a_unique_place_outside_the_named_def_is_certain():
    """Input: foo's diff on a file where only bar has the lines (foo's body differs). Outcome:
    certain: the lines are unique in the file, wherever the header points."""
    text = BAR_THEN_FOO.replace("def foo():\n    y = 0\n", "def foo():\n    y = 5\n")
    result, found = doubts(text, _foo_diff())
    assert result.hunks[0].status == "applied" and found == []


def test_the_change_already_in_the_named_def_and_its_old_lines_elsewhere_is_not_certain():
    """Input: on BAR_THEN_FOO, foo already holds the changed line (`x = 2`), bar the old one
    at the stated line. The engine places the hunk in bar. Outcome: not certain: the post-image
    is in the named def (line 7), the pre-image placed at line 2."""
    foo_done = BAR_THEN_FOO.index("def foo():")
    text = BAR_THEN_FOO[:foo_done] + BAR_THEN_FOO[foo_done:].replace("x = 1", "x = 2")
    result, found = doubts(text, _foo_diff())
    assert result.hunks[0].status == "applied"
    assert [d.kind for d in found] == ["repeated"]
    assert found[0].reason == (
        "hunk #1: the lines it changes are at line 2, and its post-image at line(s) 7; it is "
        "placed at line 2, but the scope its @@ header names ('def foo():') holds the copy at "
        "line 7"
    )
