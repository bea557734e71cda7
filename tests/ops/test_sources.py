"""sources.py: inputs (diffs, format-patch mails, mboxes) split into per-file sections with
package-relative paths and provenance."""

from __future__ import annotations

import pytest

from sgpatch.errors import SgpatchError
from sgpatch.ops.sources import Reading, from_text, package_path, split_mbox

HUNK = "@@ -1,2 +1,3 @@\n a\n+b\n c\n"


def git_block(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + HUNK


def mail(sha: str, subject: str, body: str, diff: str) -> str:
    return (
        f"From {sha} Mon Sep 17 00:00:00 2001\n"
        "From: Ada Lovelace <ada@example.org>\n"
        "Date: Tue, 1 Dec 2026 04:00:00 +0000\n"
        f"Subject: [PATCH 1/2] {subject}\n\n{body}\n---\n f.py | 1 +\n\n{diff}-- \n2.43.0\n\n"
    )


def test_repo_form_keeps_the_package_and_leaves_out_the_rest():
    """Input: a git diff touching python/sglang/srt/x.py, test/srt/test_x.py and sgl-kernel/.
    Outcome: the package file is kept as srt/x.py; the other two are left out with a reason."""
    text = "".join(
        git_block(p) for p in ("python/sglang/srt/x.py", "test/srt/test_x.py", "sgl-kernel/k.cu")
    )
    (src,) = from_text(text, "in.patch", "in")
    assert [s.rel for s in src.kept] == ["srt/x.py"]
    assert [(s.shown, s.why) for s in src.left_out] == [
        ("test/srt/test_x.py", "outside the SGLang package (python/sglang/)"),
        ("sgl-kernel/k.cu", "outside the SGLang package (python/sglang/)"),
    ]


def test_package_relative_diff_keeps_test_folder_of_the_package():
    """Input: a package-relative diff (srt/x.py, test/runners.py: the package's own test/).
    Outcome: both kept as written."""
    (src,) = from_text(git_block("srt/x.py") + git_block("test/runners.py"), "p", "p")
    assert [s.rel for s in src.kept] == ["srt/x.py", "test/runners.py"]


def test_diff_ruN_between_unrelated_folders_takes_the_side_naming_the_package():
    """Input: `diff -ruN ./srt/x.py ../../my-sglang/python/sglang/srt/x.py` with timestamps.
    Outcome: one section for srt/x.py (the `..` side is not refused: it names the package)."""
    text = (
        "diff -ruN ./srt/x.py ../../my/python/sglang/srt/x.py\n"
        "--- ./srt/x.py\t2025-10-13 13:20:52.071417615 +0800\n"
        "+++ ../../my/python/sglang/srt/x.py\t2025-10-11 15:06:03.052603197 +0800\n" + HUNK
    )
    (src,) = from_text(text, "r.patch", "r")
    assert [(s.rel, s.source_rel) for s in src.sections] == [("srt/x.py", "srt/x.py")]


def test_exclude_glob_matches_package_or_repo_paths():
    """Input: two package files, --exclude 'srt/models/*'. Outcome: the model file is left out
    as excluded, the other kept."""
    text = git_block("python/sglang/srt/models/m.py") + git_block("python/sglang/srt/x.py")
    (src,) = from_text(text, "in", "in", Reading(exclude=("srt/models/*",)))
    assert [s.rel for s in src.kept] == ["srt/x.py"]
    assert src.left_out[0].why == "excluded with --exclude"


def test_mbox_gives_one_source_per_commit_with_mail_headers():
    """Input: an mbox of two format-patch mails. Outcome: two sources in order, subject without
    the [PATCH n/m] tag, author, date, body without the diffstat, the commit sha; the `-- `
    signature is not part of the last hunk."""
    one = mail("a" * 40, "First change", "Why: speed.", git_block("python/sglang/a.py"))
    two = mail("b" * 40, "Second change", "More.", git_block("python/sglang/b.py"))
    assert len(split_mbox(one + two)) == 2
    first, second = from_text(one + two, "s.mbox", "s")
    assert (first.subject, first.author, first.body, first.commit) == (
        "First change",
        "Ada Lovelace <ada@example.org>",
        "Why: speed.",
        "a" * 40,
    )
    assert first.date.startswith("Tue, 1 Dec 2026")
    assert second.label == "s.mbox [2/2]" and second.kept[0].rel == "b.py"
    assert second.kept[0].lines[-1] == " c\n"


def test_removed_line_that_looks_like_a_file_header_stays_in_its_hunk():
    """Input: a hunk removing a line that reads `-- x` followed by one reading `++ y` (so the
    diff has `--- x`/`+++ y` lines inside a hunk). Outcome: one section, not two."""
    text = "--- a/python/sglang/f.py\n+++ b/python/sglang/f.py\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n k\n"
    (src,) = from_text(text, "t", "t")
    assert len(src.sections) == 1 and src.sections[0].rel == "f.py"


def test_input_without_a_diff_is_bad_input():
    """Input: prose only. Outcome: exit 2, the message names the input."""
    with pytest.raises(SgpatchError) as e:
        from_text("just words\n", "notes.txt", "notes")
    assert e.value.code == 2 and "notes.txt" in e.value.message


@pytest.mark.parametrize(
    ("path", "form", "rel"),
    [
        ("a/python/sglang/srt/x.py", "repo", "srt/x.py"),
        ("b/sglang/srt/x.py", "site", "srt/x.py"),
        ("a/srt/x.py", "package", "srt/x.py"),
        ("a/docs/index.md", "package", None),
        ("a/python/pyproject.toml", "repo", None),
        ("a/../etc/passwd", "package", None),
    ],
)
def test_package_path_per_form(path, form, rel):
    """Input: one path in an input of a given form. Outcome: its package-relative path, or None
    (left out) for repository-only and unsafe paths."""
    assert package_path(path, form)[0] == rel


def test_commit_message_mentioning_diff_is_not_the_diff():
    """Input: a mail whose message has a line starting `diff of the two configs`. Outcome: the
    message is the body; the diff starts at `diff --git`."""
    text = mail("c" * 40, "Subject", "diff of the two configs is small", git_block("sglang/a.py"))
    (src,) = from_text(text, "m.patch", "m")
    assert src.body == "diff of the two configs is small" and src.kept[0].rel == "a.py"


def test_binary_file_outside_the_package_is_left_out_not_refused():
    """Input: a `diff -r` with a text change in the package and a `Binary files ... differ`
    line for a kernel library outside it. Outcome: the text change is kept, the binary left
    out; the kept section holds no binary line."""
    text = (
        "diff -ruN a/python/sglang/f.py b/python/sglang/f.py\n"
        "--- a/python/sglang/f.py\n+++ b/python/sglang/f.py\n" + HUNK
        + "Binary files a/sgl-kernel/k.so and b/sgl-kernel/k.so differ\n"
    )  # fmt: skip
    (src,) = from_text(text, "r.patch", "r")
    assert [s.rel for s in src.kept] == ["f.py"]
    assert [s.shown for s in src.left_out] == ["sgl-kernel/k.so"]
    assert not any("Binary" in ln for ln in src.kept[0].lines)


def test_an_endless_input_file_is_bad_input_in_a_moment() -> None:
    """Input: `sgpatch import ... /dev/zero` (read_files of a device without end). Outcome:
    SgpatchError, exit 2, saying it is more than 256 MiB, not a patch (import filled memory
    for minutes before)."""
    from pathlib import Path

    from sgpatch.ops.sources import read_files

    with pytest.raises(SgpatchError, match=r"^/dev/zero: cannot read: more than 256 MiB") as e:
        read_files([Path("/dev/zero")])
    assert e.value.code == 2


# --- the strip level (issue 45, item 2)

RELEASE = frozenset({"srt/server_args.py", "srt/x.py", "__init__.py"})


def plain_block(old: str, new: str) -> str:
    return (
        f"diff -ru {old} {new}\n--- {old}\t2026-01-01 00:00:00 +0000\n+++ {new}\t2026-01-02 \n"
        + HUNK
    )


def reading(**kw) -> Reading:
    return Reading(release_files=lambda: RELEASE, **kw)


@pytest.mark.parametrize(
    ("old", "new", "rel", "level"),
    [
        ("b/sglang/srt/server_args.py", "c/sglang/srt/server_args.py", "srt/server_args.py", 1),
        (
            "orig/sglang/srt/server_args.py",
            "new/sglang/srt/server_args.py",
            "srt/server_args.py",
            1,
        ),
        ("sglang.orig/srt/x.py", "sglang.new/srt/x.py", "srt/x.py", 1),  # package-root copies
        ("/tmp/w/old/srt/x.py", "/tmp/w/new/srt/x.py", "srt/x.py", 4),  # `/` is a component
    ],
)
def test_the_strip_level_is_detected_where_the_paths_name_release_files(old, new, rel, level):
    """Input: a `diff -ru` between two folders not named a/ and b/ (`diff -ru b c`, orig/ and
    new/ site-packages copies, package-root copies, absolute paths), the release's files known.
    Outcome: the file is kept as its package path, read with the detected -p level (said on
    the source)."""
    (src,) = from_text(plain_block(old, new), "x.patch", "x", reading())
    assert [s.rel for s in src.sections] == [rel]
    assert (src.strip, src.detected) == (level, True)


def test_a_created_file_in_a_release_folder_counts_for_the_level():
    """Input: `diff -ruN orig new` whose only file is new (an epoch-stamped old side) in the
    release's srt/ folder. Outcome: detected -p1, kept as srt/brand_new.py."""
    text = (
        "diff -ruN orig/srt/brand_new.py new/srt/brand_new.py\n"
        "--- orig/srt/brand_new.py\t1970-01-01 00:00:00 +0000\n"
        "+++ new/srt/brand_new.py\t2026-01-02 00:00:00 +0000\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    (src,) = from_text(text, "n.patch", "n", reading())
    assert [s.rel for s in src.kept] == ["srt/brand_new.py"] and src.strip == 1


def test_paths_that_name_the_release_as_written_keep_the_default_reading():
    """Input: a git diff (a/python/sglang/srt/x.py) and a package-relative one (srt/x.py), the
    release known. Outcome: read as written: no -p level recorded, nothing detected."""
    for text in (git_block("python/sglang/srt/x.py"), plain_block("srt/x.py", "srt/x.py")):
        (src,) = from_text(text, "g.patch", "g", reading())
        assert [s.rel for s in src.kept] == ["srt/x.py"] and src.strip is None


@pytest.mark.parametrize(
    ("strip", "rel", "why"),
    [
        (2, "srt/x.py", ""),  # work/copy/srt/x.py
        (1, "copy/srt/x.py", ""),  # as told, even where it names nothing of the release
        (5, None, "-p5 strips all of it"),
    ],
)
def test_an_explicit_p_level_is_used_as_given(strip, rel, why):
    """Input: `-p N` for a diff of work/copy/srt/x.py. Outcome: exactly N folders stripped (no
    detection); a level that strips the whole path leaves the file out, saying so."""
    text = plain_block("work/copy/srt/x.py", "work/copy/srt/x.py")
    (src,) = from_text(text, "p.patch", "p", reading(strip=strip))
    assert [(s.rel, s.why) for s in src.sections] == [(rel, why)] and src.strip == strip


def test_no_level_naming_the_release_keeps_the_default_reading():
    """Input: a `diff -ru` of a file no level makes a release file (x/docs/a.md, y/docs/a.md;
    a bare a.md at the package root does not count). Outcome: the default reading (the old
    name, package-relative), no -p level; applying it then says the file does not exist."""
    (src,) = from_text(plain_block("x/docs/a.md", "y/docs/a.md"), "d.patch", "d", reading())
    assert src.strip is None and [s.rel for s in src.sections] == ["x/docs/a.md"]


def test_a_detected_level_still_refuses_a_path_that_climbs_out():
    """Input: `-p 1` on b/../../etc/x.py. Outcome: exit 4 (what -p strips is never used, what
    is left must not climb out)."""
    with pytest.raises(SgpatchError) as e:
        from_text(plain_block("b/../../etc/x.py", "c/../../etc/x.py"), "u", "u", reading(strip=1))
    assert e.value.code == 4


def test_lines_past_a_hunks_counts_are_dropped_as_git_apply_drops_them():
    """Input: a git diff whose hunk says `@@ -1,2 +1,3 @@` but is followed by two more
    context lines (a hand-edited hunk), then a second file. Outcome: the first section ends
    with the hunk as its header counts it (the two lines dropped), the second file is its own
    section, and the source carries one note naming the file, the hunk and the count."""
    text = git_block("python/sglang/srt/x.py") + " d\n e\n" + git_block("python/sglang/srt/y.py")
    (src,) = from_text(text, "long.patch", "long")
    assert [s.rel for s in src.sections] == ["srt/x.py", "srt/y.py"]
    assert src.sections[0].lines[-1] == " c\n"
    assert src.notes == (
        "python/sglang/srt/x.py: the hunk `@@ -1,2 +1,3 @@` is 2 line(s) longer than its "
        "header says; read as git apply reads it, without them",
    )
