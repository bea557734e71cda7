"""The placement engine: every rule of docs/engine.md, the anchors' failures as regressions, and
property tests (diff -> apply -> reverse round trips)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import lines, make_diff, numbered, patch_of, run, statuses, text
from sgpatch.diff.unified import parse_patch, split_lines

BLOCK = ["def f():", "    x = 1", "    y = 2", "    return x + y", ""]


def test_clean_patch_applies_at_the_stated_line():
    old = lines(*numbered("l", 30))
    new = old.replace("l15\n", "FIFTEEN\n")
    res = run(old, patch_of(old, new))
    assert text(res) == new
    (h,) = res.hunks
    assert (h.status, h.level, h.line, h.offset, h.fuzz) == ("applied", "exact", 13, 0, 0)


def test_offset_is_found_and_reported_when_lines_were_inserted_above():
    old = lines(*numbered("l", 30))
    new = old.replace("l15\n", "FIFTEEN\n")
    drifted = lines(*numbered("extra", 7)) + old
    res = run(drifted, patch_of(old, new))
    assert text(res) == lines(*numbered("extra", 7)) + new
    (h,) = res.hunks
    assert (h.status, h.level, h.offset) == ("applied", "moved", 7)


def test_offset_carries_forward_to_later_hunks():
    old = lines(*numbered("l", 80))
    new = old.replace("l10\n", "TEN\n").replace("l60\n", "SIXTY\n")
    drifted = lines("a", "b", "c") + old
    res = run(drifted, patch_of(old, new))
    assert text(res) == lines("a", "b", "c") + new
    assert [h.offset for h in res.hunks] == [3, 3]


def _dup_case():
    """anchor-failures.sh #1: the block to change appears twice; the target drifted."""
    orig = ["# header", *numbered("pad", 10), *BLOCK, *numbered("mid", 10), *BLOCK]
    orig += numbered("tail", 10)
    new = list(orig)
    new[[i for i, ln in enumerate(new) if ln == "    y = 2"][1]] = "    y = 3"
    tgt = ["# header", *numbered("pad", 10), *BLOCK, *numbered("mid", 9)]
    tgt += ["mid9 renamed upstream", *numbered("new", 40), *BLOCK, *numbered("tail", 10)]
    return lines(*orig), lines(*new), lines(*tgt)


def test_gnu_wrong_duplicate_block_is_refused_at_equal_fuzz():
    """anchor #1: GNU patch -F2 changes the FIRST def f (wrong) and exits 0. Input: the right
    copy (40 lines further) keeps all but its top context line, the wrong one all but its top
    and bottom lines: both match at fuzz 1. Outcome: ambiguous, both listed, nothing changed
    (equally good at one fuzz factor, whichever keeps more: issue 46.17)."""
    orig, new, tgt = _dup_case()
    for fuzz in (1, 2):
        res = run(tgt, patch_of(orig, new), fuzz=fuzz)
        (h,) = res.hunks
        assert (h.status, h.candidates) == ("ambiguous", (11, 66))
        assert "(pre-image matches at 2 places with fuzz 1)" in (h.reason or "")
        assert text(res) == tgt


def test_duplicate_blocks_with_no_distinguishing_context_are_refused_with_candidates():
    orig, new, tgt = _dup_case()
    tgt = tgt.replace("tail0\n", "tail0 renamed\n")  # now both copies fit equally well
    res = run(tgt, patch_of(orig, new), fuzz=2)
    (h,) = res.hunks
    assert h.status == "ambiguous"
    assert len(h.candidates) == 2
    assert text(res) == tgt


def test_less_drifted_wrong_copy_does_not_beat_the_right_one():
    """From the accuracy bench (0.5.17->0.5.18 shape.py): upstream edited two context lines at
    the right place, so a copy elsewhere matches with *less* fuzz. Refuse, do not misplace."""
    head = ["    def __init__(self, config):", "        self.vae = vae"]
    tail = ["        self.config = config", "", "    @property", "    def role_affinity(self):"]
    tail += ["        return 1"]
    old = lines("class A:", *head, *tail, *numbered("pad", 30), "class B:", head[0], *tail)
    add = "    def extra(self):\n        return 2\n\n"
    new = old.replace("\n\n    @property", "\n\n" + add + "    @property", 1)  # in class A
    # upstream edits the two lines above the insertion point in class A only
    tgt = old.replace(
        "        self.vae = vae\n        self.config = config\n",
        "        self.vae = vae  # e\n        self.config = config  # e\n",
        1,
    )
    res = run(tgt, patch_of(old, new), fuzz=2)
    assert statuses(res) == ["ambiguous"]
    assert text(res) == tgt


def test_fuzz_zero_refuses_the_drifted_duplicate_case_as_a_conflict():
    orig, new, tgt = _dup_case()
    res = run(tgt, patch_of(orig, new), fuzz=0)
    assert statuses(res) == ["conflict"]
    assert "best match at line" in res.hunks[0].reason
    assert text(res) == tgt


def test_identical_copies_after_fuzz_are_refused_as_ambiguous_with_candidates():
    body = ["x0", *BLOCK, "x1", *BLOCK, "x2"]
    old = lines("start", *body, "end")
    new = old.replace("    y = 2\n", "    y = 3\n", 1)
    # both copies lose their distinguishing outer context
    tgt = lines("start!", "x0!", *BLOCK, "x1!", *BLOCK, "x2!", "end!")
    p = patch_of(old, new, n=3)
    res = run(tgt, p, fuzz=2)
    assert statuses(res) == ["ambiguous"]
    assert len(res.hunks[0].candidates) == 2
    assert text(res) == tgt


def _two_classes() -> list[str]:
    """Two classes with the same method: the copies differ only by the enclosing class."""
    method = [
        "    def go(self):",
        "        a = 1",
        "        q = 5",
        "        r = 6",
        "        b = 2",
    ]
    method += ["        return a"]
    return ["class A:", *method, "", "", "class B:", *method, "", "", "x = 1", "y = 2"]


def test_hunk_header_scope_picks_the_copy_inside_the_named_class():
    src = _two_classes()
    old = lines(*src)
    new_src = list(src)
    new_src[src.index("        b = 2", 10)] = "        b = 3"
    diff = make_diff(old, lines(*new_src))
    diff = diff.replace("@@\n", "@@ class B:\n", 1)
    # drift: 5 lines above move the stated line; both copies match exactly elsewhere
    tgt = lines(*numbered("import", 5), *src)
    res = run(tgt, diff)
    assert statuses(res) == ["applied"]
    out = text(res).splitlines()
    assert out.index("class B:") < out.index("        b = 3")
    assert out.count("        b = 2") == 1


def test_without_scope_two_exact_copies_elsewhere_are_ambiguous():
    src = _two_classes()
    new_src = list(src)
    new_src[src.index("        b = 2", 10)] = "        b = 3"
    tgt = lines(*numbered("import", 5), *src)
    res = run(tgt, make_diff(lines(*src), lines(*new_src)))
    assert statuses(res) == ["ambiguous"]


def test_fuzzed_place_outside_the_named_scope_is_refused():
    """The 0.5.16 Kimi trap in miniature: with Kimi's context gone, fuzz finds one place, in
    another class; the header names `class Kimi`, so the place is refused."""
    old = lines(
        "class Kimi:",
        "    def forward(self, x):",
        "        return x",
        "",
        "    def load(self):",
        "        pass",
    )
    hook = "\n    def hook(self):\n        return 1\n"
    new = old.replace("        return x\n", "        return x\n" + hook)
    diff = make_diff(old, new).replace("@@\n", "@@ class Kimi:\n", 1)
    tgt = lines(
        "class Kimi:",
        "    def forward(self, x, y):",
        "        return x + y",
        "",
        "class Other:",
        "    def go(self):",
        "        pass",
        "",
        "    def load(self):",
        "        pass",
    )
    res = run(tgt, diff, fuzz=2)
    assert statuses(res) == ["ambiguous"]
    assert "outside" in res.hunks[0].reason
    assert text(res) == tgt


def test_already_applied_is_reported_and_never_applied_twice():
    old = lines(*numbered("l", 30))
    new = old.replace("l15\n", "FIFTEEN\n")
    p = patch_of(old, new)
    res = run(new, p, fuzz=2)
    assert statuses(res) == ["already-applied"]
    assert text(res) == new
    assert not res.changed


def test_appending_at_eof_twice_is_detected_even_though_the_preimage_still_matches():
    old = lines("a", "b", "c")
    new = lines("a", "b", "c", "d", "e")
    res = run(new, patch_of(old, new))
    assert statuses(res) == ["already-applied"]
    assert text(res) == new


def test_partial_upstreaming_reports_hunk_by_hunk():
    """anchor #4: hunk 1 is already upstream; GNU `patch -t` reverts it. sgpatch skips it."""
    old = lines(*numbered("l", 60))
    new = old.replace("l10\n", "TEN\n").replace("l50\n", "FIFTY\n")
    tree = old.replace("l10\n", "TEN\n")
    res = run(tree, patch_of(old, new), fuzz=2)
    assert statuses(res) == ["already-applied", "applied"]
    assert text(res) == new


def test_reverse_on_an_unpatched_file_changes_nothing():
    """anchor #3: `patch -R` on a clean tree must not 'un-apply' anything."""
    old = lines(*numbered("l", 30))
    new = old.replace("l15\n", "FIFTEEN\n")
    res = run(old, patch_of(old, new), reverse=True, fuzz=2)
    assert statuses(res) == ["already-applied"]
    assert text(res) == old


def test_reverse_undoes_an_applied_patch():
    old = lines(*numbered("l", 60))
    new = old.replace("l10\n", "TEN\n").replace("l50\n", "FIFTY\n")
    res = run(new, patch_of(old, new), reverse=True)
    assert statuses(res) == ["applied", "applied"]
    assert text(res) == old


def test_lf_patch_on_crlf_file_keeps_crlf_everywhere():
    old = "a\nb\nc\nd\ne\n"
    new = "a\nb\nC\nX\nd\ne\n"
    crlf = old.replace("\n", "\r\n")
    res = run(crlf, patch_of(old, new))
    assert text(res) == new.replace("\n", "\r\n")


def test_crlf_patch_on_lf_file_adds_lf_lines():
    old = "a\nb\nc\nd\ne\n"
    new = "a\nb\nC\nd\ne\n"
    res = run(old, make_diff(old, new).replace("\n", "\r\n"))
    assert text(res) == new


def test_mixed_line_endings_keep_untouched_lines_byte_exact():
    old = "a\r\nb\nc\r\nd\ne\r\nf\n"
    res = run(old, patch_of("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nD\ne\nf\n"))
    assert text(res) == "a\r\nb\nc\r\nD\ne\r\nf\n"


def test_no_newline_at_eof_on_the_old_side_only():
    old = "a\nb\nc"
    new = "a\nb\nC\n"
    res = run(old, patch_of(old, new))
    assert text(res) == new


def test_no_newline_at_eof_on_the_new_side_only():
    old = "a\nb\nc\n"
    new = "a\nb\nC"
    res = run(old, patch_of(old, new))
    assert text(res) == new


def test_no_newline_at_eof_on_both_sides():
    old = "a\nb\nc"
    new = "a\nB\nc"
    res = run(old, patch_of(old, new))
    assert text(res) == new
    assert statuses(run(new, patch_of(old, new))) == ["already-applied"]


def test_whitespace_tolerant_match_keeps_the_files_own_context_lines():
    old = lines(*numbered("l", 20))
    new = old.replace("l10\n", "TEN\n")
    tgt = old.replace("l8\n", "l8   \n").replace("l12\n", "l12\t\n")
    res = run(tgt, patch_of(old, new))
    (h,) = res.hunks
    assert (h.status, h.whitespace, h.level) == ("applied", True, "whitespace")
    assert text(res) == tgt.replace("l10\n", "TEN\n")


def test_whitespace_tolerance_does_not_ignore_indentation():
    old = lines("def f():", "    a = 1", "    b = 2", "    c = 3", "    d = 4")
    new = old.replace("    b = 2", "    b = 3")
    tgt = old.replace("    ", "        ")
    assert statuses(run(tgt, patch_of(old, new), fuzz=0)) == ["conflict"]


def test_conflict_on_a_changed_removed_line_names_the_difference():
    old = lines(*numbered("l", 20))
    new = old.replace("l10\n", "TEN\n")
    tgt = old.replace("l10\n", "l10 changed upstream\n")
    res = run(tgt, patch_of(old, new), fuzz=2)
    (h,) = res.hunks
    assert h.status == "conflict"
    assert "l10 changed upstream" in h.reason
    assert text(res) == tgt


def test_fuzz_never_drops_all_context():
    old = lines("a", "b", "c")
    new = lines("a", "B", "c")
    p = patch_of(old, new, n=1)
    tgt = lines("x", "b", "y")  # only the removed line matches
    assert statuses(run(tgt, p, fuzz=2)) == ["conflict"]


def test_fuzz_drops_outer_context_only():
    old = lines(*numbered("l", 20))
    new = old.replace("l10\n", "TEN\n")
    tgt = old.replace("l7\n", "seven\n").replace("l13\n", "thirteen\n")
    res = run(tgt, patch_of(old, new), fuzz=1)
    assert statuses(res) == ["applied"]
    assert res.hunks[0].fuzz == 1
    assert text(res) == tgt.replace("l10\n", "TEN\n")
    assert statuses(run(tgt, patch_of(old, new), fuzz=0)) == ["conflict"]


def test_new_lines_in_a_later_hunk_are_placed_after_earlier_ones():
    old = lines(*numbered("l", 40))
    new = old.replace("l5\n", "l5\nADD\n").replace("l30\n", "l30\nADD2\n")
    res = run(old, patch_of(old, new))
    assert text(res) == new
    assert [h.line for h in res.hunks] == [4, 30]  # l3 is line 4; +1 for ADD


def test_hunk_lines_record_offset_relative_to_the_stated_new_line():
    old = lines(*numbered("l", 40))
    new = old.replace("l5\n", "l5\nADD\n").replace("l30\n", "l30\nADD2\n")
    res = run(lines("pre") + old, patch_of(old, new))
    assert [h.offset for h in res.hunks] == [1, 1]


def test_parse_then_reverse_roundtrip_on_a_real_looking_python_file():
    old = lines(
        "import os",
        "",
        "class A:",
        "    def f(self):",
        "        return 1",
        "",
        "    def g(self):",
        "        return 2",
    )
    new = old.replace("        return 1\n", "        return 11\n")
    p = parse_patch(make_diff(old, new), "x")
    assert text(run(text(run(old, p)), p, reverse=True)) == old


def test_hunk_order_resolves_an_ambiguous_first_hunk():
    """From the accuracy bench (batch.py): hunk 1 fits two places under fuzz, but hunk 2 is
    placed exactly, and hunks keep their order, so only the copy above hunk 2 is possible."""
    block = ["    def a(self):", "        x = 1", "        y = 2", "        return x"]
    old = lines("top", *block, *numbered("mid", 12), "last", *numbered("tail", 5), *block, "end")
    new = old.replace("        y = 2\n", "        y = 3\n", 1).replace("last\n", "LAST\n")
    tgt = old.replace("top\n", "top edited\n")  # hunk 1 needs fuzz; then both blocks fit
    tgt = tgt.replace("    def a(self):\n", "    def a(self):  # e\n", 1)
    tgt = lines(*numbered("new", 4)) + tgt
    res = run(tgt, patch_of(old, new), fuzz=2)
    assert statuses(res) == ["applied", "applied"]
    out = text(res)
    assert out.count("        y = 3\n") == 1 and out.index("y = 3") < out.index("LAST")


def test_reverse_of_an_edited_look_alike_block_is_a_conflict_not_already_reverted():
    """Found on 0.5.23 (revert --force): the patch inserts a `12: {...}` block that copies the
    `10: {...}` block above it. After the user edits the inserted comment, the reversed hunk's
    post-image (context only) matches the tail of the inserted block. That must not count as
    "already reverted" (a silent no-op); it is a conflict."""
    table = ["T = {", "    10: {", "        2: 64,", "        8: 128,", "    },"]
    old = lines(*table, "}", "", "x = 1")
    new = old.replace(
        "    },\n}", "    },\n    # sm12\n    12: {\n        2: 64,\n        8: 128,\n    },\n}"
    )
    edited = new.replace("# sm12", "# sm12 (measured)")
    res = run(edited, patch_of(old, new), reverse=True)
    assert statuses(res) == ["conflict"]
    assert text(res) == edited


def test_hunk_order_second_pass_keeps_the_scope_veto():
    """Review finding: a hunk refused because its only fuzzy place lies outside the `def` its
    header names must stay refused when a second look-alike appears after the next hunk (the
    order pass used to pick the first look-alike without the vetoes)."""
    diff = (
        "--- a/f.py\n+++ b/f.py\n"
        "@@ -1,7 +1,7 @@\n h1a\n h1b\n h1c\n-h1d\n+h1d_new\n h1e\n h1f\n h1g\n"
        "@@ -20,7 +20,7 @@ def target():\n     top_line_author_saw\n     ca\n     cb\n"
        "-    old = 1\n+    old = 2\n     cc\n     cd\n     ce\n"
        "@@ -40,7 +40,7 @@\n h3a\n h3b\n h3c\n-h3d\n+h3d_new\n h3e\n h3f\n h3g\n"
    )
    body = ["    ca", "    cb", "    old = 1", "    cc", "    cd", "    ce", "    return 0", ""]
    tree = ["h1a", "h1b", "h1c", "h1d", "h1e", "h1f", "h1g", "", "def target():"]
    tree += ["    rewritten = True", "    return rewritten", "", "def other():", "    x", *body]
    tree += [*numbered("pad", 10), "h3a", "h3b", "h3c", "h3d", "h3e", "h3f", "h3g", ""]
    for extra in ([], ["def other2():", "    y", *body]):
        res = run(lines(*tree, *extra), diff, fuzz=1)
        assert statuses(res)[1] == "ambiguous"
        assert "outside scope" in res.hunks[1].reason and "'def target():'" in res.hunks[1].reason
        assert "    old = 2\n" not in text(res)


def test_blank_line_after_the_last_hunk_is_not_an_added_line():
    """Review finding: unidiff keeps a blank line after a finished hunk; it must not become an
    added line (GNU patch ignores it), and -R must not crash on it."""
    old = "import os\nimport sys\nimport re\n\nx = 1\n"
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n-import os\n+import os, json\n"
    diff += " import sys\n import re\n\n"
    res = run(old, diff)
    assert text(res) == old.replace("import os\n", "import os, json\n")
    assert text(run(text(res), diff, reverse=True)) == old


# ---------------------------------------------------------------- property tests

LINE = st.sampled_from([f"line {i}" for i in range(40)] + ["", "    pass", "    return x"])
FILE = st.lists(LINE, min_size=0, max_size=60)


@st.composite
def edited(draw):
    base = draw(FILE)
    out = list(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["ins", "del", "chg"]))
        pos = draw(st.integers(0, len(out)))
        if op == "ins":
            out.insert(pos, draw(st.text("abcxyz", min_size=1, max_size=6)))
        elif out and pos < len(out):
            if op == "del":
                out.pop(pos)
            else:
                out[pos] = "changed " + out[pos]
    return lines(*base), lines(*out)


@settings(max_examples=300, deadline=None)
@given(edited())
def test_property_apply_gives_the_edited_file(pair):
    old, new = pair
    if old == new:
        return
    res = run(old, patch_of(old, new))
    if not res.ok:  # refusing is allowed only as "ambiguous", and then nothing changes
        assert {h.status for h in res.hunks} <= {"ambiguous", "applied", "already-applied"}
        return
    assert text(res) == new


@settings(max_examples=300, deadline=None)
@given(edited())
def test_property_apply_then_reverse_gives_the_original(pair):
    old, new = pair
    if old == new:
        return
    p = patch_of(old, new)
    forward = run(old, p)
    if not forward.ok:
        assert {h.status for h in forward.hunks} <= {"ambiguous", "applied", "already-applied"}
        return
    back = run(text(forward), p, reverse=True)
    if not back.ok:
        assert {h.status for h in back.hunks} <= {"ambiguous", "applied", "already-applied"}
        return
    assert text(back) == old


@settings(max_examples=200, deadline=None)
@given(edited(), st.integers(1, 30))
def test_property_unrelated_lines_above_only_shift_the_result(pair, count):
    """Input: a generated edit, `count` unrelated lines put above the file. Outcome: the same
    edit, shifted. Not when the padded file holds a hunk's pre-image exactly at the hunk's
    stated line (repeated lines, e.g. five `line 0`): the documented rule takes that exact
    copy, as GNU patch does, so the edit lands `count` lines higher by design."""
    old, new = pair
    if old == new:
        return
    patch = patch_of(old, new)
    if patch.files[0].hunks[0].source_start <= 1:
        return  # a hunk that starts at line 1 is anchored to the top: padding is not "away"
    pad = lines(*[f"unrelated {i} ~" for i in range(count)])
    padded = [line.rstrip("\n") for line in split_lines(pad + old)]
    for hunk in patch.files[0].hunks:
        pre = [line.text for line in hunk.lines if line.kind in (" ", "-")]
        at = hunk.source_start - 1
        if padded[at : at + len(pre)] == pre:
            return  # an exact copy at the stated line: taken there by the rule
    res = run(pad + old, patch)
    if not res.ok:
        assert {h.status for h in res.hunks} <= {"ambiguous", "applied", "already-applied"}
        return
    assert text(res) == pad + new


# ------------------------------------------------------------------ anchoring (git's apply.c)

TAIL = lines(*numbered("t", 20))


def test_hunk_without_trailing_context_must_match_at_end_of_file():
    """A hunk that appends at the end (no trailing context) is refused where the file got a
    line after it, and the message names the anchor; with fuzz 1 the anchor is lifted."""
    new = TAIL + "added\n"
    edited = TAIL + "# local edit\n"
    res = run(edited, patch_of(TAIL, new))
    assert statuses(res) == ["conflict"]
    assert "anchored at the end of the file" in res.hunks[0].reason
    lifted = run(edited, patch_of(TAIL, new), fuzz=1)
    assert text(lifted) == TAIL + "added\n# local edit\n"


def test_hunk_starting_at_line_1_must_match_at_start_of_file():
    """A hunk whose old start is line 1 is refused when lines were inserted above it (exit 3
    with the anchor named), and placed with the anchor lifted at fuzz 1."""
    new = TAIL.replace("t1\n", "ONE\n")
    drifted = "# header\n" + TAIL
    res = run(drifted, patch_of(TAIL, new))
    assert statuses(res) == ["conflict"]
    assert "anchored at the start of the file" in res.hunks[0].reason
    assert text(run(drifted, patch_of(TAIL, new), fuzz=1)) == "# header\n" + new


def test_unidiff_zero_hunks_carry_no_anchor():
    """A -U0 diff replacing the first line still applies after lines were inserted above."""
    new = TAIL.replace("t0\n", "ZERO\n")
    drifted = "# header\n" + TAIL
    res = run(drifted, patch_of(TAIL, new, n=0))
    assert text(res) == "# header\n" + new


def test_no_newline_marker_on_the_old_side_zero_context():
    """-U0 hunk whose old last line lacks a newline: it adds one and a line after it."""
    old = "a\nb\nc"
    new = "a\nb\nc\nd\n"
    assert text(run(old, patch_of(old, new, n=0))) == new


def test_no_newline_marker_on_the_new_side_zero_context():
    """-U0 hunk that removes the final newline (post-image side marker)."""
    old = "a\nb\nc\n"
    new = "a\nb\nC"
    assert text(run(old, patch_of(old, new, n=0))) == new


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=8),
    st.lists(st.sampled_from(["a", "b", "x"]), min_size=0, max_size=8),
    st.booleans(),
    st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_newline_at_eof_round_trips_either_side(a, b, a_eol, b_eol):
    """diff -> apply gives the new text exactly, with or without a final newline on either
    side; -R gives the old text back."""
    old = "\n".join(a) + ("\n" if a_eol else "")
    new = "\n".join(b) + ("\n" if b_eol and b else "")
    if old == new:
        return
    patch = patch_of(old, new)
    res = run(old, patch)
    if res.ok:
        assert text(res) == new
        back = run(new, patch, reverse=True)
        assert not back.ok or text(back) == old


def test_images_that_differ_only_in_the_final_newline_are_told_apart_by_the_file():
    """'a\\nb\\n' -> 'a\\nb' (git's t4101 shape): applies to the first, is already applied on the
    second; and the reverse diff the other way round."""
    with_nl, without = "a\nb\n", "a\nb"
    drop = patch_of(with_nl, without)
    assert text(run(with_nl, drop)) == without
    assert statuses(run(without, drop)) == ["already-applied"]
    add = patch_of(without, with_nl)
    assert text(run(without, add)) == with_nl
    assert statuses(run(with_nl, add)) == ["already-applied"]


def test_zero_context_insertion_at_old_line_0_into_a_non_empty_file_is_refused():
    """`@@ -0,0 +1 @@ +aaa` on a file holding `bbb` (git's t4104 'two lines'): a diff of an
    empty file, or a -U0 insertion at the top? It cannot tell: refused (exit 3)."""
    res = run(lines("bbb"), "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+aaa\n")
    assert statuses(res) == ["conflict"] and "no context" in res.hunks[0].reason


def test_zero_context_insertion_elsewhere_is_refused_with_the_reason():
    """A -U0 insertion after line 2 has nothing but its line number: refused (exit 3)."""
    old = lines("a", "b", "c")
    res = run(old, patch_of(old, lines("a", "b", "x", "c"), n=0))
    assert statuses(res) == ["conflict"] and "no context" in res.hunks[0].reason


def test_conflict_explanation_still_finds_the_best_partial_match_far_away():
    """The bounded conflict search (starts aligned on not-too-common lines) still reports the
    best partial match when it lies far from the expected line."""
    body = lines(*numbered("l", 2000))
    old = lines("alpha", "beta", "gamma", "delta", "eps", "zeta", "eta")
    new = old.replace("delta\n", "DELTA\n")
    target = body + old.replace("beta\n", "BETA\n").replace("zeta\n", "ZETA\n")
    res = run(target, patch_of(old, new))
    (h,) = res.hunks
    assert h.status == "conflict" and h.candidates[0] == 2001
    assert "best match at line 2001 (5/7 lines)" in h.reason


def test_two_identical_hunks_on_two_copies_are_placed_in_order():
    """Two hunks with the same text (one per copy of a block, as slime's fused_moe layer.py
    patch has), the file drifted so neither is at its stated line: the only order-consistent
    assignment is first->first, second->second. With a third copy it is ambiguous again."""
    block = ["        if x:", "            z = 0", "            w = 0", "            y = 1"]
    block += ["            v = 0", "            u = 0", "        return y", ""]
    fill = [f"    pad{i} = {i}" for i in range(30)]
    old = lines("class C:", *fill, "    def a(self):", *block, "    def b(self):", *block, *fill)
    new = old.replace("            y = 1\n", "            y = 2\n")
    drifted = lines("# new", "# lines", *numbered("# top", 20)) + old
    res = run(drifted, patch_of(old, new))
    assert statuses(res) == ["applied", "applied"]
    assert text(res) == lines("# new", "# lines", *numbered("# top", 20)) + new
    third = drifted + lines("    def c(self):", *block)
    assert "ambiguous" in statuses(run(third, patch_of(old, new)))


# --------------------------------------------- reach (GNU -F2 without its mistakes)


def _far_copy_file(gap: int, header_scope: str | None = "def target"):
    """`def target` holding a block, and the same block `gap` lines further in `def other`."""
    block = ["    a = compute()", "    a1 = 1", "    a2 = 2", "    a3 = 3", "    b = a + 1"]
    block += ["    c = b * 2", "    c1 = 1", "    d = c - 3", "    return d"]
    top = [*numbered("# module header ", 5), ""]
    old = lines(
        *top, "def target():", *block, "", *numbered("# filler ", gap), "def other():", *block
    )
    new = old.replace("    b = a + 1\n", "    b = a + 2\n", 1)
    diff = make_diff(old, new)
    if header_scope:
        diff = diff.replace("@@\n", f"@@ {header_scope}():\n", 1)
    return old, new, diff


def test_one_exact_copy_far_away_does_not_stop_the_nearest_in_scope():
    """Drifted by 5 lines, a copy 400 lines away in another def: the block in `def target`
    (named by the header, where the line numbers point) is patched, as GNU patch would."""
    old, new, diff = _far_copy_file(400)
    drift = lines(*numbered("# new ", 5))
    res = run(drift + old, diff)
    assert statuses(res) == ["applied"] and text(res) == drift + new


def test_copy_at_a_comparable_distance_stays_equally_good_and_refused():
    """The other copy only 30 lines further: refused, listing both candidates."""
    old, _, diff = _far_copy_file(30, header_scope=None)
    drift = lines(*numbered("# new ", 5))
    res = run(drift + old, diff)
    (h,) = res.hunks
    assert h.status == "ambiguous" and "equally good candidates at lines" in h.reason
    assert len(h.candidates) == 2


def test_far_copy_rule_needs_the_header_to_agree():
    """A header naming no def of the file: refused although the other copy is 400 lines away;
    a header naming `def other`: the far copy in it is taken (scope beats distance)."""
    old, _, diff = _far_copy_file(400, header_scope="def missing")
    res = run(lines(*numbered("# new ", 5)) + old, diff)
    assert statuses(res) == ["ambiguous"]
    _, _, named_other = _far_copy_file(400, header_scope="def other")
    res = run(lines(*numbered("# new ", 5)) + old, named_other)
    assert statuses(res) == ["applied"] and res.hunks[0].line > 400


def test_hunk_that_changes_nothing_is_already_applied_not_ambiguous():
    """`-1` / `+1` (GNU's bad-filenames d.diff): both images are one; nothing to do, exit 0."""
    res = run(lines("1"), "--- f\n+++ f\n@@ -1 +1 @@\n-1\n+1\n")
    assert statuses(res) == ["already-applied"] and text(res) == lines("1")


# ------------------------------------ Python-aware safety and the nearest original (issue 22)

CLASS = [
    "class Worker:",
    "    def a(self):",
    "        return 1",
    "",
    "    def b(self):",
    "        return 2",
    "",
    "",
    "def helper():",
    "    return 3",
]
METHOD = ["    def h(self, req):", "        out = self.a() + req", "        return out", ""]


def _adds_h(target: list[str], fuzz: int = 0, header: str = "class Worker:"):
    """The patch (made on CLASS): method h inserted between a and b, under `header`."""
    old = lines(*CLASS)
    new = lines(*CLASS[:4], *METHOD, *CLASS[4:])
    diff = make_diff(old, new).replace("@@\n", f"@@ {header}\n", 1)
    return run(lines(*target), diff, fuzz=fuzz)


def test_a_method_the_class_already_has_is_refused_naming_both_places():
    """Input: upstream added its own `h` (another body) at the end of Worker; the patch's
    hunk adding h between a and b still matches exactly (fuzz 0). Outcome: refused
    (ambiguous, exit 4), naming upstream's h (line 8) and where the hunk would add it (4)."""
    upstream = [*CLASS[:7], "    def h(self, req):", "        return req", "", *CLASS[7:]]
    res = _adds_h(upstream)
    (h,) = res.hunks
    assert h.status == "ambiguous" and not res.ok
    assert h.reason == (
        "would define h twice in class Worker: the target already has it at line 8, and this "
        "hunk adds it at line 4"
    )
    assert h.candidates == (1, 8)


def test_the_method_already_there_with_a_blank_line_of_difference_is_already_applied():
    """Input: upstream took the patch's h, with a blank line after its def line, and put it
    after b; the hunk still fits between a and b at fuzz 0. Outcome: already applied, the
    file unchanged, the line of upstream's h (8) reported with the scope."""
    taken = [*CLASS[:7], METHOD[0], "", *METHOD[1:], *CLASS[7:]]
    res = _adds_h(taken)
    (h,) = res.hunks
    assert (h.status, h.line) == ("already-applied", 8) and text(res) == lines(*taken)
    assert h.reason == (
        "its added lines are already in class Worker (blank lines and trailing whitespace aside)"
    )


def test_repeats_python_allows_and_files_that_are_not_python_are_applied():
    """Input: a hunk adding an `x` setter under the `x` property; a hunk adding `def h` to a
    text file that does not parse as Python and has a `def h` line. Outcome: both applied."""
    prop = ["class P:", "    @property", "    def x(self):", "        return 1", "", "end = 1"]
    setter = ["    @x.setter", "    def x(self, v):", "        pass", ""]
    old = lines(*prop)
    res = run(old, make_diff(old, lines(*prop[:5], *setter, *prop[5:])))
    assert statuses(res) == ["applied"]
    notes = ["notes: def h(x):", "  not python", "def h is here", "x", "y", "z"]
    old = lines(*notes)
    new = lines(*notes[:4], "def h(x):", *notes[4:])
    assert statuses(run(old, make_diff(old, new))) == ["applied"]


def _block_patch():
    """A patch (made on ORIG) adding a 3-line block after `x = prep()` in def build."""
    orig = ["def build(self):", "    x = prep()", "    y = more()", "", "    z = last()"]
    orig += ["    w = done()", "    return x, y, z, w"]
    block = ["    if not self.sym:", "        q = zeros(x)", "        keep(q)"]
    new = lines(*orig[:4], *block, "", *orig[4:])
    return orig, block, make_diff(lines(*orig), new).replace("@@\n", "@@ def build(self):\n")


def test_a_fuzzy_block_upstream_already_has_just_above_is_already_applied():
    """Input (slime's wNa16 MoE hunk on 0.5.14): upstream added the same block with a comment
    line `# add zero param` above it, and edited a line before; fuzz 2 would put the block a
    second time right after upstream's, recomputing its variables. Outcome: already applied,
    the file unchanged."""
    orig, block, diff = _block_patch()
    target = [orig[0], "    x = prep()  # edited", *orig[2:4], "    # add zero param", *block]
    target += ["", *orig[4:]]
    res = run(lines(*target), diff, fuzz=2)
    assert statuses(res) == ["already-applied"] and text(res) == lines(*target)
    assert "already in def build" in res.hunks[0].reason


def test_one_added_line_found_elsewhere_in_scope_is_refused_at_fuzz():
    """Input: a fuzzy hunk that adds one line (`keep(q)`), which the function already has
    elsewhere. Outcome: refused (ambiguous), both lines listed: one line says too little."""
    orig = ["def f():", "    a = 1", "    b = 2", "    c = 3", "    d = 4", "    e = 5"]
    orig += ["    keep(q)", "    g = 7"]
    new = lines(*orig[:3], "    keep(q)", *orig[3:])
    diff = make_diff(lines(*orig), new).replace("@@\n", "@@ def f():\n")
    target = [orig[0], "    a = 1  # edited", *orig[2:]]
    (h,) = run(lines(*target), diff, fuzz=2).hunks
    assert h.status == "ambiguous" and "its added line is already at line 7" in h.reason


def test_lines_the_diff_moves_are_not_evidence_of_already_applied():
    """Input: a diff moving `if not self.sym:` block from the end of build to the top (one
    hunk adds it, another removes it), applied with fuzz on a drifted file. Outcome: both
    hunks applied, the block moved."""
    orig, block, _ = _block_patch()
    fill = [f"    n{i} = {i}" for i in range(10)]
    old = lines(*orig[:-1], *fill, *block, orig[-1])
    new = lines(*orig[:4], *block, "", *orig[4:-1], *fill, orig[-1])
    target = old.replace("    x = prep()\n", "    x = prep()  # edited\n")
    res = run(target, make_diff(old, new), fuzz=2)
    assert statuses(res) == ["applied", "applied"]
    assert text(res) == new.replace("    x = prep()\n", "    x = prep()  # edited\n")


def _two_copies(header: str | None = "def big(x):"):
    """def big with a 7-line block at line 52 and the same block 400 lines further; the patch
    changes `d = c - 3` in the second copy (stated line 459)."""
    block = ["    a = compute(x)", "    b = a + 1", "    c = b * 2", "    d = c - 3"]
    block += ["    e = d / 4", "    f = e % 5", "    g = f ** 6"]
    body = [f"    v{i} = {i}" for i in range(500)]
    old = ["def big(x):", *body[:50], *block, *body[50:450], *block, *body[450:]]
    new = list(old)
    new[461] = "    d = c - 33"
    diff = make_diff(lines(*old), lines(*new))
    if header:
        diff = diff.replace("@@\n", f"@@ {header}\n", 1)
    return old, diff


def test_two_exact_copies_in_the_named_function_the_near_one_wins():
    """Input: both copies inside `def big` (the header), the original 6 lines from the stated
    line (6 lines inserted above it, or 6 removed), the copy ~400 lines away. Outcome: the
    near one is patched (offset +6 / -6), at fuzz 0 and 2."""
    old, diff = _two_copies()
    pad = [f"    w{i} = 0" for i in range(6)]
    for target, offset in ((old[:448] + pad + old[448:], 6), (old[:442] + old[448:], -6)):
        for fuzz in (0, 2):
            res = run(lines(*target), diff, fuzz=fuzz)
            (h,) = res.hunks
            assert (h.status, h.offset) == ("applied", offset)
            assert "    d = c - 33\n" in text(res).split("    v449 = 449\n")[1]


def test_a_far_exact_copy_never_beats_the_edited_original_near_the_stated_line():
    """Input: the original (6 lines from the stated line) has its first context line edited
    upstream, the far copy is exact. Outcome: at fuzz 0 refused, listing the far copy (52)
    and the original (465); at fuzz 1 and 2 the original is patched (fuzz 1, offset 6); with
    no header naming the function, refused at fuzz 1 too."""
    old, diff = _two_copies()
    target = old[:448] + [f"    w{i} = 0" for i in range(6)] + old[448:]
    target[464] = "    a = compute(x)  # upstream"
    (h,) = run(lines(*target), diff).hunks
    assert h.status == "ambiguous" and h.candidates == (52, 465)
    assert "most of the hunk is at line 465 (edited)" in h.reason
    for fuzz in (1, 2):
        (h,) = run(lines(*target), diff, fuzz=fuzz).hunks
        assert (h.status, h.line, h.fuzz, h.offset) == ("applied", 465, 1, 6)
    _, bare = _two_copies(header=None)
    (h,) = run(lines(*target), bare, fuzz=1).hunks
    assert h.status == "ambiguous" and set(h.candidates) == {52, 465}


def test_two_equally_good_fuzzy_candidates_in_scope_are_refused_and_listed():
    """Input: two copies of a block in one function, 10 lines apart, each with one outer
    context line edited (fuzz 1 each). Outcome: refused, both listed, at fuzz 1 and 2."""
    block = ["    p = 1", "    q = 2", "    r = 3", "    s = 4", "    t = 5", "    u = 6"]
    block += ["    v = 7"]
    fill = [f"    f{i} = {i}" for i in range(10)]
    old = lines("def g():", *block, *fill, *block)
    new = old.replace("    s = 4\n", "    s = 40\n", 1)
    diff = make_diff(old, new).replace("@@\n", "@@ def g():\n", 1)
    target = old.replace("    p = 1\n", "    p = 1  # edited\n")
    for fuzz in (1, 2):
        (h,) = run(target, diff, fuzz=fuzz).hunks
        assert h.status == "ambiguous" and h.candidates == (2, 19), h
        assert "equally good candidates at lines 2, 19" in h.reason


def test_reported_lines_follow_every_earlier_hunk():
    """Input: 300 hunks on a 3,000-line file, hunk k adding k % 4 lines and removing one,
    the file drifted by 7 lines at the top. Outcome: every reported line is where that
    hunk's post-image starts in the result (the linear offset structure agrees with a
    direct count)."""
    old_lines = numbered("l", 3000)
    new_lines: list[str] = []
    for i, ln in enumerate(old_lines):
        if i % 10 == 5:
            new_lines += [f"add{i}_{j}" for j in range((i // 10) % 4)]
        else:
            new_lines.append(ln)
    drift = numbered("top", 7)
    res = run(lines(*drift, *old_lines), make_diff(lines(*old_lines), lines(*new_lines)))
    assert text(res) == lines(*drift, *new_lines)
    out = text(res).splitlines()
    patch = parse_patch(make_diff(lines(*old_lines), lines(*new_lines)), "t.patch")
    for h, hunk in zip(res.hunks, patch.files[0].hunks, strict=True):
        post = [ln.text for ln in hunk.lines if ln.kind != "-"]
        assert out[h.line - 1 : h.line - 1 + len(post)] == post


def test_a_deletions_post_image_inside_the_block_it_deletes_is_an_echo():
    """Input: a pure deletion of a block that ends like the lines above it (its context-only
    post-image matches the block's own tail), the outermost context line edited so only fuzz 1
    fits the pre-image. Outcome: the block is deleted (fuzz 1), not "post-image at X but
    pre-image at Y"."""
    tail = ["        )", "", ""]
    old_l = ["class A:", "    def f(self):", "        g(", "            1,", *tail]
    old_l += ["class B:", "    def h(self):", "        k(", "            2,", *tail]
    old_l += ["def after():", "    pass", "x = 1", "y = 2"]
    new_l = old_l[:7] + old_l[14:]
    diff = make_diff(lines(*old_l), lines(*new_l)).replace("@@\n", "@@ class A:\n", 1)
    target = list(old_l)
    target[4] = "        )  # edited"
    res = run(lines(*target), diff, fuzz=2)
    assert statuses(res) == ["applied"] and res.hunks[0].fuzz == 1
    assert text(res) == lines(*target[:7], *target[14:])


def test_a_scope_that_disagrees_with_the_line_numbers_does_not_break_a_fuzzy_tie():
    """Input: a hunk appending `w = 99` at the end of `def f` (trailing context `class K:`);
    the file's `class K:` line edited, and a look-alike of the region (its top line edited,
    ending in its own `class K:`) put 10 lines above: both need fuzz 1. The original, nearer
    the stated line, now reads as inside the look-alike's class; the look-alike is in def f.
    Outcome: refused, both listed (with the scope alone deciding, the look-alike at line 7
    would be patched)."""
    body = [f"    v{i} = {i}" for i in range(12)]
    old = ["import os", "", "", "def f():", *body, "", "", "class K:", "    z = 0"]
    new = [*old[:16], "    w = 99", *old[16:]]
    diff = make_diff(lines(*old), lines(*new)).replace("@@\n", "@@ def f():\n", 1)
    decoy = ["    v9 = 9  # edited", "    v10 = 10", "    v11 = 11", "", "", "class K:"]
    target = [*old[:6], *decoy, *body[2:], "", "", "class K:  # edited", "    z = 0"]
    (h,) = run(lines(*target), diff, fuzz=1).hunks
    assert h.status == "ambiguous" and h.candidates == (20, 7)
    assert "equally good candidates at lines 20, 7" in h.reason


def test_a_block_added_before_the_next_def_belongs_to_the_method_it_follows():
    """Input: a hunk adding `z = x + y` / `keep(z)` at the end of method a (its trailing
    context starts at `def b`); upstream took the block with a comment line above it and
    edited `x = 1`, so only fuzz 2 fits, right after upstream's copy. Outcome: already applied
    in def a (the body is the one the lines follow, not the def after them), file unchanged."""
    cls = ["class Worker:", "    def a(self):", "        x = 1", "        y = 2", ""]
    cls += ["    def b(self):", "        return 2", "", "", "def helper():", "    return 3"]
    diff = (
        "--- a/f.py\n+++ b/f.py\n@@ -3,6 +3,9 @@ class Worker:\n"
        "         x = 1\n         y = 2\n \n+        z = x + y\n+        keep(z)\n+\n"
        "     def b(self):\n         return 2\n \n"
    )
    assert statuses(run(lines(*cls), diff)) == ["applied"]
    taken = [*cls[:5], "        # added upstream", "        z = x + y", "        keep(z)", ""]
    taken += cls[5:]
    taken[2] = "        x = 1  # edited"
    res = run(lines(*taken), diff, fuzz=2)
    assert statuses(res) == ["already-applied"] and text(res) == lines(*taken)
    assert "already in def a" in res.hunks[0].reason


def test_scope_past_a_syntax_error_is_unknown_and_decides_nothing():
    """Input: two exact copies of a block, one in `def f` (named by the header, 2 lines from
    the stated line), one in `def g`; then the same with a line Python cannot parse at the top
    of g (`x = 1 +`; the tokenizer reads on). Outcome: the copy in f is patched; with the
    syntax error, refused as equally good (no scope read past where the parser stopped)."""
    block = ["    o = 0", "    p = 1", "    q = 2", "    r = 3", "    s = 4", "    t = 5"]
    block += ["    u = 6"]

    def module(bad: str) -> str:
        return lines("import os", "", "", "def f():", *block, "", "", "def g():", bad, *block)

    old = module("    x = 1")
    diff = make_diff(old, old.replace("    r = 3\n", "    r = 30\n", 1))
    diff = diff.replace("@@\n", "@@ def f():\n", 1)
    (h,) = run(lines("# new", "# top") + old, diff).hunks
    assert (h.status, h.line) == ("applied", 7)
    (h,) = run(lines("# new", "# top") + module("    x = 1 +"), diff).hunks
    assert h.status == "ambiguous" and "equally good" in h.reason


def test_a_far_copy_with_nothing_near_is_placed_without_reading_scopes(monkeypatch):
    """Input: a Python file whose hunk (header `def f():`) is only at line 500, 480 lines below
    its stated line, with nothing like it near there. Outcome: placed at the far copy (the one
    place there is), and the file's def/class blocks were never read: the nearest-original rule
    asks for the far copy's scope only when a near candidate makes it decide (reading scopes
    parses the file, a quarter of a matrix run when asked for every far hunk)."""
    from sgpatch.placement import scope

    def no_scopes(*_a):
        raise AssertionError("the file's scopes were read")

    monkeypatch.setattr(scope, "_read_blocks", no_scopes)
    filler = [f"x{i} = {i}" for i in range(500)]
    old = lines(*filler, "def f():", "    a = 1", "    b = 2", "    return a + b")
    new = old.replace("    b = 2\n", "    b = 3\n")
    diff = make_diff(old, new).replace("-500,5 +500,5 @@", "-20,5 +20,5 @@ def f():")
    res = run(old, diff)
    assert statuses(res) == ["applied"]
    assert res.hunks[0].line == 500 and text(res) == new


def test_a_shared_index_places_every_hunk_set_as_a_fresh_one_does():
    """Input: one drifted, whitespace-changed file and each hunk of a 3-hunk patch placed
    alone, then all together, through one LineIndex of the file (as port's carry does), and
    the same without it. Outcome: identical results; an index of other lines is refused."""
    import pytest

    from sgpatch.placement.engine import apply_hunks
    from sgpatch.placement.match import LineIndex

    old = lines(*numbered("l", 90))
    new = old.replace("l10\n", "TEN\n").replace("l45\n", "FORTY-FIVE\n").replace("l80\n", "X\n")
    drifted = lines("a", "b") + old.replace("l44\n", "l44  \n")
    file_lines = split_lines(drifted)
    hunks = patch_of(old, new).files[0].hunks
    index = LineIndex(file_lines)
    for chosen in [(h,) for h in hunks] + [tuple(hunks)]:
        shared = apply_hunks(file_lines, chosen, fuzz=1, index=index)
        assert shared == apply_hunks(file_lines, chosen, fuzz=1)
    assert text(apply_hunks(file_lines, hunks, index=index)) != drifted
    with pytest.raises(ValueError):
        apply_hunks(list(file_lines), hunks, index=index)


# --- issue 46.17 / 46.18: equal fuzz is a refusal; the stated line and far copies ----------


def _in_f(body: list[str]) -> list[str]:
    """A module whose `def f` holds `body` (then `return 0`), a `def g` below it."""
    return ["import os", "", "", "def f():", *body, "    return 0", "", "", "def g():", "    pass"]


def _insert_before(old: list[str], line: str, added: str, header: str = "def f():") -> str:
    """The diff adding `added` before `line` of `old`, git's header naming `header`."""
    i = old.index(line)
    diff = make_diff(lines(*old), lines(*old[:i], added, *old[i:]))
    return diff.replace("@@\n", f"@@ {header}\n", 1)


def test_a_decoy_of_the_inner_context_beside_a_blank_line_nearer_the_stated_line_is_refused():
    """Input (46.17): an insert-only hunk (context: blank, a, b / c, d, e) in def f; upstream
    edited both outer lines of the original (blank -> a comment, e -> edited: fuzz 1), and a
    copy of the inner lines (a, b, c, d) after a blank line stands 2 lines above it, in def f:
    it matches with only the bottom line dropped, also fuzz 1. Outcome at fuzz 1 and 2:
    ambiguous, both listed, nothing written (total-dropped levels placed it at the decoy)."""
    body = [f"    v{i} = {i}" for i in range(8)]
    body += ["", "    a = 1", "    b = 2", "    c = 3", "    d = 4", "    e = 5"]
    old = _in_f(body)
    diff = _insert_before(old, "    c = 3", "    x = 0")
    target = list(old)
    target[target.index("    e = 5")] = "    e = 5  # edited"
    target[12] = "    # upstream note"
    target[10:10] = ["", "    a = 1", "    b = 2", "    c = 3", "    d = 4"]
    for fuzz in (1, 2):
        res = run(lines(*target), diff, fuzz=fuzz)
        (h,) = res.hunks
        assert (h.status, h.candidates) == ("ambiguous", (11, 18))
        assert "(pre-image matches at 2 places with fuzz 1)" in (h.reason or "")
        assert text(res) == lines(*target)


def test_the_place_at_the_stated_line_keeping_a_telling_line_more_wins_at_equal_fuzz():
    """Input: an insert-only hunk (a, b, c / d, e, g) whose original, at its stated line, lost
    its top line to an upstream edit (fuzz 1, keeps g); a copy of the inner lines (b..e) 20
    lines below in the same def also matches at fuzz 1 (both outer lines dropped). Outcome:
    placed at the original (it keeps `g = 6` more, a line with letters). The same with a blank
    bottom line instead of g: what the original keeps more is blank, so ambiguous."""
    for last, placed in (("    g = 6", True), ("", False)):
        body = ["    a = 1", "    b = 2", "    c = 3", "    d = 4", "    e = 5", last]
        body += [f"    w{i} = {i}" for i in range(20)]
        body += ["    b = 2", "    c = 3", "    d = 4", "    e = 5", "    h = 7"]
        old = _in_f(body)
        diff = _insert_before(old, "    d = 4", "    x = 0")
        target = [ln.replace("a = 1", "a = 1  # edited") for ln in old]
        res = run(lines(*target), diff, fuzz=1)
        (h,) = res.hunks
        if placed:
            assert (h.status, h.line, h.fuzz) == ("applied", 5, 1)
            assert text(res).splitlines()[7:9] == ["    x = 0", "    d = 4"]
        else:
            assert (h.status, h.candidates) == ("ambiguous", (5, 30))
            assert text(res) == lines(*target)


def _two_hunks_and_a_far_copy(copy_at: int) -> tuple[list[str], list[str], str]:
    """A 200-line def f with an exact copy of l97..l102 put at line `copy_at`, and a diff
    changing l20 and inserting `x = 0` before the original l100 (hunk 2's pre-image: the
    original l97..l102; the copy is left as it is)."""
    body = [f"    l{i} = {i}" for i in range(200)]
    old = _in_f(body)
    old[copy_at:copy_at] = [f"    l{i} = {i}" for i in range(97, 103)]
    at = max(i for i, ln in enumerate(old) if ln == "    l100 = 100" and i != copy_at + 3)
    new = [ln.replace("l20 = 20", "l20 = 2000") for ln in old]
    new[at:at] = ["    x = 0"]
    diff = make_diff(lines(*old), lines(*new)).replace("@@\n", "@@ def f():\n")
    return old, new, diff


def test_an_exact_match_at_the_stated_line_wins_when_drift_cancels_out_and_the_copy_is_far():
    """Input (46.18): two hunks; the target has 8 lines inserted above hunk 1 and 8 removed
    between the hunks, so hunk 1 is found 8 lines down and hunk 2 is back at its stated line
    (the expected line carried from hunk 1 is 8 lines off); an exact copy of hunk 2's pre-image
    stands 60 lines above the stated line. Outcome: both hunks applied, hunk 2 at its stated
    line (offset 0), as git and GNU patch place it; the copy untouched."""
    old, new, diff = _two_hunks_and_a_far_copy(40)
    shift = [f"    s{i} = {i}" for i in range(8)]

    def drift(ls: list[str]) -> list[str]:
        out = [*ls[:10], *shift, *ls[10:]]
        k = out.index("    l50 = 50")
        return out[:k] + out[k + 8 :]

    res = run(lines(*drift(old)), diff)
    assert statuses(res) == ["applied", "applied"]
    assert [h.offset for h in res.hunks] == [8, 0]
    assert text(res) == lines(*drift(new))


def test_a_copy_nearer_the_carried_expected_line_than_the_stated_one_is_a_refusal():
    """Input: as above, but the far copy stands 40 lines below the stated line and the drift
    (lines added above hunk 1, as many removed between the hunks) is 30 lines: the copy is
    nearer the expected line (carried from hunk 1) than the original at the stated line.
    Outcome: hunk 2 ambiguous, both listed (the two lines disagree: git places it at the
    stated line, GNU patch at the copy; a refused hunk means the file is not written)."""
    old, _, diff = _two_hunks_and_a_far_copy(144)
    shift = [f"    s{i} = {i}" for i in range(30)]
    target = [*old[:10], *shift, *old[10:]]
    k = target.index("    l50 = 50")
    target = target[:k] + target[k + 30 :]
    res = run(lines(*target), diff)
    assert statuses(res) == ["applied", "ambiguous"]
    assert res.hunks[1].candidates == (145, 102)
    assert "equally good candidates at lines 145, 102" in (res.hunks[1].reason or "")


def test_the_edited_original_at_the_stated_line_beats_an_exact_copy_of_its_context_far_away():
    """Input (46.18): an insert-only hunk in def f whose original, at the stated line, has its
    top context line edited upstream (fuzz 1), and an exact copy of its whole context 40 lines
    below, in def g: GNU patch and git put the line into the copy. Outcome at fuzz 1: placed
    at the original (fuzz 1), the copy untouched; at fuzz 0: refused, both listed."""
    ctx = ["    a = 1", "    b = 2", "    c = 3", "    d = 4", "    e = 5", "    g = 6"]
    old = _in_f(ctx)
    old += [f"    p{i} = {i}" for i in range(40)] + ctx
    diff = _insert_before(old, "    d = 4", "    x = 0")
    target = [old[i] if i != 4 else "    a = 1  # edited" for i in range(len(old))]
    res = run(lines(*target), diff, fuzz=1)
    (h,) = res.hunks
    assert (h.status, h.line, h.fuzz) == ("applied", 5, 1)
    out = text(res).splitlines()
    assert out[7] == "    x = 0" and out.count("    x = 0") == 1
    (h,) = run(lines(*target), diff).hunks
    assert h.status == "ambiguous" and set(h.candidates) == {5, 56}


def test_a_far_copy_that_breaks_the_syntax_above_does_not_hide_the_originals_scope():
    """Input: a hunk adding a line at the end of class K's docstring (context: its last three
    lines / the closing quotes, a blank line, `z = 1`), `z = 1` edited upstream (fuzz 1), and
    an exact copy of the context 40 lines above, inside an open bracket (a def's parameters):
    the copy's lone triple quote swallows everything down to the class's docstring, so Python
    stops reading near the file's end, having seen no def/class below `def first`.
    Outcome: placed at the original (git's funcname above it is the header), not refused as
    "outside scope: module level"."""
    ctx = ["    More.", "    Even more.", "    Last.", '    """', "", "    z = 1"]
    head = ["def first():", "    return 1", "", "", "def call(", "    a,", *ctx, "    b,", ")"]
    filler = [f"x{i} = {i}" for i in range(40)]
    old = [*head, "", "", *filler, "class K(Base):", '    """Doc.', *ctx, "    y = 2"]
    i = len(old) - 4
    assert old[i] == '    """'
    new = [*old[:i], "    Added.", *old[i:]]
    diff = make_diff(lines(*old), lines(*new)).replace("@@\n", "@@ class K(Base):\n", 1)
    target = [*old[:-2], "    z = 1  # edited", old[-1]]
    res = run(lines(*target), diff, fuzz=1)
    (h,) = res.hunks
    assert (h.status, h.fuzz) == ("applied", 1)
    assert text(res).splitlines()[i] == "    Added."


def test_a_header_cut_at_80_bytes_as_git_writes_it_still_names_the_scope():
    """Input: a hunk in a module-level import list whose funcname line is 95 characters (git
    writes its first 80 bytes, trailing blanks dropped, after the @@); the original's top
    context line edited (fuzz 1) and an exact copy of its context 40 lines below. Outcome:
    placed at the original: the cut header is read as the line above it."""
    imp = "from sglang.srt.managers.some_long_module_name.sub_package.io_struct_utils import ("
    assert len(imp) > 80
    ctx = ["    Alpha,", "    Beta,", "    Gamma,", "    Delta,", "    Epsilon,", "    Zeta,"]
    old = ["import os", imp, *ctx, ")", *[f"x{i} = {i}" for i in range(40)], "y = [", *ctx, "]"]
    i = old.index("    Delta,")
    new = [*old[:i], "    Added,", *old[i:]]
    cut = imp.encode()[:80].decode().rstrip()
    diff = make_diff(lines(*old), lines(*new)).replace("@@\n", f"@@ {cut}\n", 1)
    target = list(old)
    target[2] = "    Alpha,  # edited"
    res = run(lines(*target), diff, fuzz=1)
    (h,) = res.hunks
    assert (h.status, h.line, h.fuzz) == ("applied", 3, 1)
    assert text(res).splitlines()[5] == "    Added,"


# issue 42.3: the engine's fuzzy "already applied" is the one rule judged on code
TOPK_TARGET = (
    "class Block:\n"
    "    def __init__(self, config, prefix):\n"
    "        self.experts = get_moe(\n"
    "            layer_id=self.layer_id,\n"
    "            prefix=prefix,\n"
    "        )(num=1)\n"
    "        self.x = 1\n"
    "        self.topk = TopK(\n"
    "            top_k=self.top_k_new,\n"
    "            num_experts=n,\n"
    "            renormalize=config.norm_topk_prob,\n"
    "        )\n"
    "        self.y = 2\n"
)
TOPK_HUNK = (
    "--- a/b.py\n+++ b/b.py\n@@ -4,5 +4,7 @@ class Block:\n"
    "             top_k=self.top_k,\n"
    "             num_experts=n,\n"
    "+            layer_id=self.layer_id,\n"
    "+            prefix=prefix,\n"
    "             renormalize=config.norm_topk_prob,\n"
    "         )\n"
    "         self.y = 2\n"
)


def test_added_lines_found_inside_another_call_of_the_scope_are_no_evidence():
    """Input: a hunk adding two keywords to `self.topk = TopK(...)` at fuzz 2 (the target's
    call changed its first argument, the hunk's outer context line); the target's
    call lacks them, while another call of the same
    __init__ holds both lines. Outcome: not "already applied" (the text alone would say so):
    the keywords are added to the TopK call, the other call left as it was."""
    res = run(TOPK_TARGET, TOPK_HUNK, fuzz=2)
    assert statuses(res) == ["applied"], res.hunks[0].reason
    out = text(res)
    assert out.count("layer_id=self.layer_id,") == 2
    assert "            num_experts=n,\n            layer_id=self.layer_id,\n" in out


def test_the_statement_already_reading_as_the_result_is_already_applied():
    """Input: the same hunk; the target's TopK call already has both keywords (upstream took
    the change; its first argument changed). Outcome: already applied at fuzz 2, the
    file unchanged."""
    target = TOPK_TARGET.replace(
        "            num_experts=n,\n",
        "            num_experts=n,\n            layer_id=self.layer_id,\n"
        "            prefix=prefix,\n",
    )
    res = run(target, TOPK_HUNK, fuzz=2)
    assert statuses(res) == ["already-applied"], res.hunks[0].reason
    assert text(res) == target


def test_lines_found_inside_the_statement_the_hunk_changes_are_already_applied():
    """Input: a hunk adding a paragraph (two lines) to a docstring at fuzz 2; the target's
    docstring has the paragraph with a line of upstream's own above it (so the string is not
    the hunk's result, but the lines stand inside the very statement the hunk changes), and
    its outer context line differs. Outcome: already applied, the file unchanged."""
    target = (
        "def f():\n"
        '    """Load it.\n'
        "\n"
        "    Upstream's own words.\n"
        "    # added upstream\n"
        "    Uses a lock to coordinate\n"
        "    downloads across processes.\n"
        "\n"
        "    Args:\n"
        "        x: the x\n"
        '    """\n'
        "    return 1\n"
    )
    hunk = (
        "--- a/d.py\n+++ b/d.py\n@@ -3,5 +3,8 @@\n"
        "     The original words.\n"
        " \n"
        "+    Uses a lock to coordinate\n"
        "+    downloads across processes.\n"
        "+\n"
        "     Args:\n"
        "         x: the x\n"
        '     """\n'
    )
    res = run(target, hunk, fuzz=2)
    assert statuses(res) == ["already-applied"], res.hunks[0].reason
    assert text(res) == target
