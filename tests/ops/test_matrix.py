"""matrix: the member filter that picks what a minimal pristine tree holds (the planning itself
is covered on real releases in tests/real/test_matrix_lint.py)."""

from __future__ import annotations

from sgpatch.ops.matrix import _member_filter


def test_member_filter_keeps_exactly_the_files_some_pattern_names():
    """Input: wheel member names and patterns (a file, a glob, a ** glob). Outcome: a member is
    kept when any pattern matches its whole package-relative path, and dist-info keeps only
    METADATA and RECORD; no pattern keeps nothing."""
    keep = _member_filter(["srt/a.py", "srt/models/*.py", "**/conf.py"])
    names = {
        "sglang/srt/a.py": True,
        "sglang/srt/a.pyc": False,
        "sglang/srt/models/x.py": True,
        "sglang/srt/models/sub/x.py": False,
        "sglang/srt/deep/er/conf.py": True,
        "sglang/conf.py": True,
        "sglang-0.5.9.dist-info/RECORD": True,
        "sglang-0.5.9.dist-info/WHEEL": False,
    }
    assert {n: keep(n) for n in names} == names
    assert not _member_filter([])("sglang/srt/a.py")
