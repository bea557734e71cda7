"""sources.py: inputs (diffs, format-patch mails, mboxes) split into per-file sections with
package-relative paths and provenance."""

from __future__ import annotations

import pytest

from sgpatch.errors import SgpatchError
from sgpatch.ops.sources import from_text, package_path, split_mbox

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
    (src,) = from_text(text, "in", "in", exclude=["srt/models/*"])
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
