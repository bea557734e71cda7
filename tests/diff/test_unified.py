"""Reading diffs: byte-exactness, git headers, format-patch headers, and malformed input."""

from __future__ import annotations

import pytest

from helpers import make_diff, sgpatch
from sgpatch.diff.unified import decode, encode, parse_patch, split_lines, strip_path
from sgpatch.errors import ExitCode, SgpatchError


def test_split_lines_keeps_cr_and_only_splits_on_lf():
    text = "a\r\nb\x0cc\x1dd\u2028e\nlast"
    assert split_lines(text) == ["a\r\n", "b\x0cc\x1dd\u2028e\n", "last"]


def test_non_utf8_bytes_roundtrip():
    data = b"caf\xe9\n\xff\xfe\n"
    assert encode(decode(data)) == data


def test_crlf_patch_keeps_cr_out_of_line_text_and_parses():
    diff = make_diff("a\nb\nc\n", "a\nB\nc\n").replace("\n", "\r\n")
    p = parse_patch(diff.encode(), "crlf.patch")
    h = p.files[0].hunks[0]
    assert h.before == ("a", "b", "c") and h.after == ("a", "B", "c")


def test_git_headers_new_delete_rename_and_mode():
    diff = (
        "diff --git a/new.py b/new.py\n"
        "new file mode 100755\n"
        "--- /dev/null\n"
        "+++ b/new.py\n"
        "@@ -0,0 +1,2 @@\n"
        "+x = 1\n"
        "+y = 2\n"
        "diff --git a/old.py b/old.py\n"
        "deleted file mode 100644\n"
        "--- a/old.py\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-gone\n"
        "diff --git a/a.py b/b.py\n"
        "similarity index 90%\n"
        "rename from a.py\n"
        "rename to b.py\n"
        "--- a/a.py\n"
        "+++ b/b.py\n"
        "@@ -1 +1 @@\n"
        "-q\n"
        "+r\n"
    )
    new, old, ren = parse_patch(diff, "g.patch").files
    assert new.is_new and new.new_mode == 0o755 and new.hunks[0].after == ("x = 1", "y = 2")
    assert old.is_delete and old.path == "a/old.py"
    assert ren.is_rename and ren.source == "a/a.py" and ren.target == "b/b.py"


def test_format_patch_message_header_is_kept_as_the_header():
    diff = (
        "From 123 Mon Sep 17 00:00:00 2001\n"
        "Subject: [PATCH] fix a thing\n"
        "\n"
        "Why: because.\n"
        "---\n"
        " f.py | 2 +-\n"
        "\n" + make_diff("a\nb\n", "a\nc\n") + "-- \n2.39.5\n"
    )
    p = parse_patch(diff, "fp.patch")
    assert "Subject: [PATCH] fix a thing" in p.header
    assert len(p.files) == 1 and p.files[0].hunks[0].after == ("a", "c")


def test_no_newline_markers_are_read_per_side():
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n"
    h = parse_patch(diff, "n.patch").files[0].hunks[0]
    assert (h.old_no_eol, h.new_no_eol) == (True, False)
    assert h.reversed().new_no_eol is True


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty patch file"),
        ("\n\n  \n", "empty patch file"),
        ("just some prose\nno diff here\n", "no diff found"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n", "malformed diff"),  # truncated
        ("--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n-b\n+c\n", "malformed diff"),  # counts
        (
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\ngarbage\n@@ -5 +5 @@\n-c\n+d\n",
            "malformed diff",
        ),
        ("diff --git a/x b/x\nGIT binary patch\nliteral 3\nabc\n", "binary patches"),
        ("Binary files a/x.bin and b/x.bin differ\n", "binary patches"),
    ],
)
def test_malformed_input_is_one_line_exit_2_naming_the_file(text, fragment):
    with pytest.raises(SgpatchError) as info:
        parse_patch(text, "bad.patch")
    assert info.value.code == ExitCode.BAD_INPUT
    assert fragment in info.value.message
    assert info.value.message.startswith("bad.patch")
    assert "\n" not in info.value.message


def test_malformed_error_names_the_line():
    text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\ngarbage\n@@ -5 +5 @@\n-c\n+d\n"
    with pytest.raises(SgpatchError) as info:
        parse_patch(text, "bad.patch")
    assert info.value.message.startswith("bad.patch:7:")


@pytest.mark.parametrize(
    ("path", "strip", "expected"),
    [("a/python/sglang/x.py", 1, "python/sglang/x.py"), ("x.py", 0, "x.py")],
)
def test_strip_path(path, strip, expected):
    assert strip_path(path, strip) == expected


@pytest.mark.parametrize("path", ["/etc/passwd", "a/../../etc/passwd"])
def test_strip_path_refuses_escapes_with_exit_4(path):
    with pytest.raises(SgpatchError) as info:
        strip_path(path, 1, "evil.patch")
    assert info.value.code == ExitCode.UNSAFE


def test_strip_level_too_deep_is_bad_input():
    with pytest.raises(SgpatchError) as info:
        strip_path("a/x.py", 3, "p")
    assert info.value.code == ExitCode.BAD_INPUT and "-p3" in info.value.message


# ------------------------------------------------------------------ file operations (peer suites)


@pytest.mark.parametrize(
    ("stamp", "epoch"),
    [
        ("1970-01-01 00:00:00 +0000", True),
        ("1969-12-31 18:00:00.000000000 -0600", True),
        ("1970-01-01 01:00:00 +01:00", True),
        ("Thu Jan  1 00:00:00 1970", True),
        ("1970-01-01 00:00:01 +0000", False),
        ("2024-05-01 10:00:00 +0200", False),
        ("", False),
    ],
)
def test_epoch_timestamps_in_any_zone(stamp, epoch):
    """`diff -N` stamps the missing side with the epoch in the maker's zone; nothing else is."""
    from sgpatch.diff.unified import is_epoch

    assert is_epoch(stamp) is epoch


def test_epoch_sides_read_as_dev_null():
    """An epoch `---` is a creation, an epoch `+++` a deletion (plain diffs only)."""
    create = (
        "--- f\t1970-01-01 00:00:00 +0000\n+++ f\t2024-01-01 00:00:00 +0000\n@@ -0,0 +1 @@\n+x\n"
    )
    delete = (
        "--- f\t2024-01-01 00:00:00 +0000\n+++ f\t1970-01-01 00:00:00 +0000\n@@ -1 +0,0 @@\n-x\n"
    )
    assert parse_patch(create).files[0].is_new
    assert parse_patch(delete).files[0].is_delete


def test_git_extended_headers_are_read():
    """copy/rename names, old/new modes and a symlink mode land on the FilePatch; -R swaps the
    modes and turns a copy into its removal."""
    diff = (
        "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n"
        "diff --git a/m b/m\nold mode 100644\nnew mode 100755\n"
        "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+t\n"
    )
    copy, mode, link = parse_patch(diff).files
    assert (copy.is_copy, copy.source, copy.target) == (True, "a/x", "b/y")
    assert (mode.old_mode, mode.new_mode, mode.mode_change) == (0o644, 0o755, True)
    assert link.symlink and not copy.symlink
    back = mode.reversed()
    assert (back.old_mode, back.new_mode) == (0o755, 0o644)
    assert copy.reversed().git_op == "uncopy"


def test_plain_diff_with_two_names_is_not_a_rename():
    """`--- a.py.orig` / `+++ a.py` without git headers is one file, never a rename."""
    fp = parse_patch("--- a.py.orig\n+++ a.py\n@@ -1 +1 @@\n-a\n+b\n").files[0]
    assert not fp.is_rename and fp.git_op is None


def test_git_block_with_a_differently_prefixed_target_name_parses():
    """`+++ a/f` under `diff --git a/f b/f` (GNU's file-modes test) is the same file."""
    diff = "diff --git a/f b/f\nold mode 100644\nnew mode 100600\n"
    diff += "--- a/f\n+++ a/f\n@@ -1 +1 @@\n-o\n+n\n"
    fp = parse_patch(diff).files[0]
    assert strip_path(fp.target, 1) == "f" and fp.new_mode == 0o600


def test_dotdot_that_strip_removes_is_fine_but_one_that_stays_is_refused():
    """`../z` with -p1 is `z`; `a/../z` with -p1 keeps `..` and is refused (exit 4)."""
    assert strip_path("../z", 1) == "z"
    with pytest.raises(SgpatchError) as exc:
        strip_path("a/../z", 1)
    assert exc.value.code == 4


def test_whitespace_damaged_traditional_header_keeps_name_and_epoch():
    """`--- dir/post image.txt 1969-12-31 16:00:00 -08:00` (tab lost, git's t4135): the name
    is `dir/post image.txt` and the epoch still makes it a creation."""
    diff = (
        "--- a/post image.txt 1969-12-31 16:00:00 -08:00\n"
        "+++ b/post image.txt 2005-04-12 02:14:06 -07:00\n@@ -0,0 +1 @@\n+postimage\n"
    )
    fp = parse_patch(diff).files[0]
    assert fp.is_new and fp.target == "b/post image.txt"


def test_whitespace_damaged_header_with_several_spaces_names_the_file_as_git_does():
    """Input: git's t4135 damaged.diff (`+++ b/postimage.txt     2010-08-18 20:13:31.48 -0500`,
    five spaces for the tab, an epoch old side), and a ctime-stamped one. Outcome: the files
    are `b/postimage.txt` and `b/post image.txt` (no trailing spaces), both creations."""
    damaged = (
        "diff -pruN a/postimage.txt b/postimage.txt\n"
        "--- a/postimage.txt     1969-12-31 18:00:00.000000000 -0600\n"
        "+++ b/postimage.txt     2010-08-18 20:13:31.484002255 -0500\n@@ -0,0 +1 @@\n+postimage\n"
    )
    fp = parse_patch(damaged).files[0]
    assert fp.is_new and fp.target == "b/postimage.txt"
    ctime = (
        "--- a/post image.txt  Thu Jan  1 00:00:00 1970\n"
        "+++ b/post image.txt  Wed Aug 18 20:13:31 2010\n@@ -0,0 +1 @@\n+postimage\n"
    )
    fp = parse_patch(ctime).files[0]
    assert fp.is_new and fp.target == "b/post image.txt"


def test_damaged_creation_diff_creates_postimage_txt(tmp_path):
    """Input: t4135's damaged.diff through `sgpatch patch -p1` in an empty folder.
    Outcome: exit 0, exactly one file, `postimage.txt`, holding `postimage`."""
    damaged = (
        "--- a/postimage.txt     1969-12-31 18:00:00.000000000 -0600\n"
        "+++ b/postimage.txt     2010-08-18 20:13:31.484002255 -0500\n@@ -0,0 +1 @@\n+postimage\n"
    )
    (tmp_path / "d.diff").write_text(damaged)
    work = tmp_path / "w"
    work.mkdir()
    assert sgpatch("patch", "-p1", "-d", str(work), str(tmp_path / "d.diff")) == 0
    assert [p.name for p in work.iterdir()] == ["postimage.txt"]
    assert (work / "postimage.txt").read_text() == "postimage\n"


# Diffs the quick reader (hunk bodies read without unidiff) must read as unidiff does, or leave
# to it: git headers of every kind, a format-patch message and signature, markers on either
# side, blank lines after hunks, body lines that look like headers, CRLF
_SEEDS = [
    "diff --git a/new.py b/new.py\nnew file mode 100755\n--- /dev/null\n+++ b/new.py\n"
    "@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\ndiff --git a/old.py b/old.py\ndeleted file mode 100644\n"
    "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\ndiff --git a/a.py b/b.py\n"
    "similarity index 90%\nrename from a.py\nrename to b.py\n--- a/a.py\n+++ b/b.py\n"
    "@@ -1 +1 @@\n-q\n+r\n",
    "From 123 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\nWhy.\n---\n f.py | 2 +-\n\n"
    "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@ def f():\n a\n-b\n+c\n@@ -10,3 +10,3 @@\n x\n-y\n"
    "+z\n w\n-- \n2.39.5\n",
    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n",
    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n\\ No newline at end of file\n\n\n"
    "--- a/y\n+++ b/y\n@@ -3 +3,2 @@\n\n+q\n",
    "diff --git a/x b/x\nindex 123..456 100644\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n"
    "+c\n \n@@ -20,2 +20,3 @@\n-- x\n--- y\n++++ z\n+++ w\n+-- \n",
    "diff --git a/x b/x\nold mode 100644\nnew mode 100755\ndiff --git a/y b/y\n"
    "new file mode 100644\nindex 0000000..e69de29\n",
    "--- a/f.txt\t2020-01-01 00:00:00 +0000\n+++ b/f.txt\t1970-01-01 00:00:00 +0000\n"
    "@@ -1 +0,0 @@\n-x\n",
    "diff --git a/x b/x\n--- a/x\n+++ a/x\n@@ -1 +1 @@\n-a\n+b\n",
]
_PIECES = [
    "\n", "\r\n", " \n", "-\n", "+\n", "\\ No newline at end of file\n", "\\ other\n",
    "@@ -1 +1 @@\n", "@@ -0,0 +0,0 @@\n", "@@ -1,2 +1 @@ x\n", "@@ bad\n", "--- a/q\n",
    "+++ b/q\n", "garbage\n", "-- \n", "--\n", "\rfoo\n", "diff --git a/q b/q\n",
    "Binary files a and b differ\n", " ctx\r\n", "+add", " last",
]  # fmt: skip


def _mutated(text: str, rng) -> str:
    lines = split_lines(text)
    for _ in range(rng.randint(1, 4)):
        op, k = rng.random(), rng.randrange(len(lines) + 1)
        j = min(k, len(lines) - 1)
        if op < 0.25 and lines:
            del lines[j]
        elif op < 0.5:
            lines.insert(k, rng.choice(_PIECES))
        elif op < 0.65 and lines:
            lines.insert(j, lines[j])
        elif op < 0.8 and lines:
            lines[j] = rng.choice(" +-\\@") + lines[j][1:]
        elif op < 0.9:
            lines = [ln.replace("\n", "\r\n") for ln in lines]
        elif lines:
            lines[j] = lines[j].rstrip("\n")
    return "".join(lines)


def _outcome(text: str, reader) -> tuple:
    try:
        return ("read", reader(split_lines(text), "p.diff"))
    except SgpatchError as exc:
        return ("refused", exc.code, exc.message)


def test_quick_reader_reads_as_unidiff_does_or_leaves_it_to_unidiff():
    """Input: 2,000 diffs, the seeds above and random damage to them (lines dropped, doubled,
    re-kinded, inserted from `_PIECES`, CRLF, a lost last newline). Outcome: each reads to
    the very same Patch, or is refused with the very same message and exit code, whether
    parse_patch's quick reader takes it or leaves it to the full unidiff reading; the quick
    one takes a good share of them (it is not always declining)."""
    import random

    from sgpatch.diff.unified import _read_quickly, _read_with_unidiff

    rng = random.Random(22)
    quick = 0
    for n in range(2000):
        text = rng.choice(_SEEDS)
        text = _mutated(text, rng) if n % 5 else text
        if not text.strip():
            continue
        reference = _outcome(text, _read_with_unidiff)
        got = _outcome(text, _read_quickly)
        if got == ("read", None):
            continue
        quick += 1
        assert got == reference, text
    assert quick > 500


def test_hunks_sliced_from_the_patch_are_the_hunks_made_one_by_one():
    """Input: one file's diff whose bodies take every shape a hunk has (context, removals and
    additions in any order, only one kind, a context line inside), each running up to the
    next @@ line, so the quick reader slices them out of the patch and derives their sides
    from its texts. Outcome: each is the Hunk made from its fields (sides and edges computed
    from its lines), the whole Patch is unidiff's reading, and -R swaps the sides."""
    from sgpatch.diff.unified import Hunk, _read_with_unidiff

    shapes = [" -+ ", "+", "-", " ", "-+-", " - + ", "+-", "  --++  ", " + ", "- ", " +"]
    text, start = "--- a/f\n+++ b/f\n", 1
    for n, kinds in enumerate(shapes):
        old, new = sum(k != "+" for k in kinds), sum(k != "-" for k in kinds)
        text += f"@@ -{start},{old} +{start},{new} @@ def f{n}():\n"
        text += "".join(f"{k}line {n}.{i}\n" for i, k in enumerate(kinds))
        start += old + 10
    patch = parse_patch(text)
    assert patch == _read_with_unidiff(split_lines(text), "patch")
    hunks = patch.files[0].hunks
    assert len(hunks) == len(shapes)
    for h in hunks:
        assert h == Hunk(*h[:11])
        assert h.reversed().side_texts == h.side_texts[::-1]
        assert h._replace(index=7) == Hunk(7, *h[1:11])


def test_a_symlink_retargeted_is_known_by_its_index_line():
    """Input: git's diff of a retargeted symlink, whose only mention of mode 120000 is its
    `index A..B 120000` line (and one with a bad mode there). Outcome: the file is a symlink;
    the bad mode reads as no mode (not an error)."""
    text = (
        "diff --git a/l b/l\nindex 1e1..2f2 120000\n--- a/l\n+++ b/l\n@@ -1 +1 @@\n-a\n"
        "\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
    )
    assert parse_patch(text).files[0].symlink
    assert not parse_patch(text.replace("120000", "19x")).files[0].symlink
