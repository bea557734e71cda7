"""The canonical diff writer (sgpatch.diff.canonical) on synthetic files."""

from __future__ import annotations

import pytest

from sgpatch.diff import canonical as rf
from sgpatch.diff.unified import parse_patch, split_lines
from sgpatch.placement.engine import apply_hunks


def body(n: int, prefix: str = "x") -> str:
    return "".join(f"{prefix}{i} = {i}\n" for i in range(n))


@pytest.fixture(params=["git", "difflib"])
def writer(request, monkeypatch):
    if request.param == "difflib":
        monkeypatch.setattr(rf, "_git", lambda: None)
    return request.param


def test_funcname_is_gits_python_driver():
    """The nearest line above the hunk matching the python funcname regex, capped at 80 bytes."""
    lines = split_lines(
        "import os\nclass A:\n    async def run(self):  \n        a = 1\n        b = 2\n"
    )
    assert rf.funcname(lines, 4) == "async def run(self):"
    assert rf.funcname(lines, 2) == "class A:"
    assert rf.funcname(lines, 1) == ""
    long = split_lines("def " + "f" * 100 + "():\n    pass\n")
    assert rf.funcname(long, 1) == ("def " + "f" * 100)[:80]


def test_canonical_diff_form(writer):
    """Input: a modify, a create and a delete given out of order. Outcome: files sorted, git
    headers with upstream paths, no index/timestamps, funcname headers, and the diff applies."""
    old = (
        "class K:\n    def f(self):\n" + body(20, "        y") + "    def g(self):\n        pass\n"
    )
    new = old.replace("        y15 = 15\n", "        y15 = 16\n")
    text = rf.canonical_diff(
        [
            rf.FileDiff("srt/z.py", b"gone\n", None),
            rf.FileDiff("srt/a.py", old.encode(), new.encode()),
            rf.FileDiff("srt/n.py", None, b"new\n"),
        ]
    )
    heads = [ln for ln in text.splitlines() if ln.startswith("diff --git")]
    assert heads == [
        "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py",
        "diff --git a/python/sglang/srt/n.py b/python/sglang/srt/n.py",
        "diff --git a/python/sglang/srt/z.py b/python/sglang/srt/z.py",
    ]
    assert "@@ -15,7 +15,7 @@ def f(self):\n" in text
    assert "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/n.py\n" in text
    assert "deleted file mode 100644\n--- a/python/sglang/srt/z.py\n+++ /dev/null\n" in text
    assert "index " not in text and "\t" not in text
    patch = parse_patch(text)
    res = apply_hunks(split_lines(old), patch.files[0].hunks)
    assert "".join(res.lines) == new


def test_no_newline_at_eof_and_identical_files(writer):
    text = rf.file_diff(rf.FileDiff("a.py", b"a\nb", b"a\nc"))
    assert text.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
    assert rf.file_diff(rf.FileDiff("a.py", b"same\n", b"same\n")) == ""


def test_git_and_difflib_writers_agree_on_simple_edits(monkeypatch):
    old = body(60)
    new = old.replace("x10 = 10\n", "x10 = 11\nextra = 1\n").replace("x50 = 50\n", "")
    fd = rf.FileDiff("m.py", old.encode(), new.encode())
    with_git = rf.file_diff(fd)
    monkeypatch.setattr(rf, "_git", lambda: None)
    assert rf.file_diff(fd) == with_git


def test_header_line_is_added_before_the_blank_line():
    assert (
        rf.add_header_line("Subject: x\n\nWhy.\n\n", "Ported") == "Subject: x\n\nWhy.\nPorted\n\n"
    )
    assert rf.add_header_line("", "Ported") == "Ported\n\n"
    assert rf.render("no newline", "diff") == b"no newline\ndiff"
