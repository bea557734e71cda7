"""Port's merges and Python checks (port/merge.py): git merge-file clean and in conflict, the
fuzz trap of a clean merge that defines a method twice, compile and marker checks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from helpers import (
    V10,
    make_set,
    make_wheel,
    port_diff,
    release_files,
    sgport,
)
from sgpatch.port import merge


def test_a_clean_merge_that_defines_a_method_twice_is_a_conflict(cache, tmp_path):
    """Input: a patch made on 1.0 adds method `h` to class A; 1.4 added its own `h` next to
    other changes, so `git merge-file` is clean but A would define `h` twice (the fuzz trap).
    Outcome: exit 3, the file listed with 'defines the same name twice'."""
    v14 = V10.replace("import os\n", "import os\nimport abc\n").replace(
        "        return 2\n", "        return 2\n\n    def h(self):\n        return 'upstream'\n"
    )
    make_wheel(cache / "wheels", "1.4", release_files(v14, "1.4"))
    added = V10.replace(
        "    def g(self):\n", "    def h(self):\n        return 'ours'\n\n    def g(self):\n"
    )
    d = make_set(tmp_path)
    (d / "patches/1.0/0001-first.patch").write_text("Subject: h\n\n" + port_diff(V10, added))
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(tmp_path / "w"))  # fmt: skip
    assert code == 3
    assert any("twice" in f for f in doc["steps"][0]["fix"]), doc


def test_merge_file_clean_and_conflict():
    """Input: two edits far apart, then two edits of one line. Outcome: clean merge; one
    conflict block with diff3 markers and labels."""
    base = b"a\nb\nc\nd\ne\nf\ng\n"
    ours = base.replace(b"b\n", b"B\n")
    theirs = base.replace(b"f\n", b"F\n")
    merged, n = merge.merge_file(base, ours, theirs, ("ours", "base", "theirs"))
    assert n == 0 and merged == b"a\nB\nc\nd\ne\nF\ng\n"
    merged, n = merge.merge_file(base, ours, base.replace(b"b\n", b"X\n"), ("o", "b", "t"))
    assert n == 1 and b"<<<<<<< o\nB\n||||||| b\nb\n=======\nX\n>>>>>>> t\n" in merged
    assert merge.marker_lines(merged) == (2, 4, 6, 8)


def test_python_checks():
    """Input: a file that does not compile; one defining a method twice (with and without the
    release's copy among them); property setters, if/else branches and a duplicate the release
    already had. Outcome: the first two are problems, the duplicate named with every line it is
    defined at and the one that came with the release; the rest are not."""
    assert "does not compile" in merge.python_problem("a.py", b"def f(:\n", b"x = 1\n")
    twice = b"class A:\n    def f(self): pass\n    def f(self): pass\n"
    assert "A: f is defined twice in class A: line 2 (added) and line 3 (added)" in (
        merge.python_problem("a.py", twice, b"class A:\n    pass\n")
    )
    upstream = b"class A:\n    def f(self):\n        return 1\n"
    again = upstream + b"\n    def f(self):\n        return 2\n"
    assert "line 5 (added) and line 2 (already in sglang 1.4 at line 2)" in merge.python_problem(
        "a.py", again, upstream, "sglang 1.4"
    )
    assert merge.python_problem("a.py", twice, twice) is None
    setter = (
        b"class A:\n    @property\n    def x(self): pass\n    @x.setter\n    def x(self, v): pass\n"
    )
    assert merge.python_problem("a.py", setter, b"") is None
    branches = b"if X:\n    def f(): pass\nelse:\n    def f(): pass\n"
    assert merge.python_problem("a.py", branches, b"") is None
    assert merge.python_problem("a.txt", b"def f(:\n", None) is None


def test_checks_answer_in_the_order_added_with_or_without_workers(monkeypatch):
    """Input: a patch's files handed to `Checks` one by one (a file that does not compile, a
    method defined twice, a clean one, a deleted one, a text file), once below the size that
    is worth a worker and once above it (the pool of the process, as the carry uses it).
    Outcome: the same answers as `python_problem` of each, in the order added, both ways."""
    twice = b"class A:\n    def f(self): pass\n    def f(self): pass\n"
    items = [("a.py", b"def f(:\n", b"x = 1\n"), ("b.py", twice, b"class A:\n    pass\n"),
             ("c.py", b"x = 1\n" * 20, b""), ("d.py", None, b"x = 1\n"),
             ("e.txt", b"def f(:\n", None)]  # fmt: skip
    want = [merge.python_problem(*item, "sglang 1.4") for item in items]
    assert want[0] and want[1] and want[2:] == [None, None, None]
    for limit in (10**9, 1):
        monkeypatch.setattr(merge, "_PARALLEL_BYTES", limit)
        checks = merge.Checks("sglang 1.4")
        for item in items:
            checks.add(*item)
        assert checks.results() == want
        assert bool(checks.sent) == (limit == 1 and merge.workers() is not None)


_PIECES = ["<<<<<<<", "<<<<<<< ours", "|||||||", "||||||| base", "=======", "=======x",
           ">>>>>>>", ">>>>>>> t", " =======", "x", "", "\r", "<<<<<<<<",
           "=======\r\r"]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_marker_lines_finds_the_lines_a_line_by_line_reading_finds(pieces, eol):
    """Input: texts of marker-like lines (labels, no label, CRs, look-alikes, LF or CRLF).
    Outcome: marker_lines gives the lines a plain per-line reading of git's marker rule gives
    (it scans the whole text once instead); a text without <<<<<<<, ======= or >>>>>>> holds
    no conflict (a lone ||||||| line is not one)."""
    import re

    rule = re.compile(r"(<<<<<<<|\|\|\|\|\|\|\||>>>>>>>)( |$)|=======$")
    text = eol.join(pieces)
    want = tuple(n for n, ln in enumerate(text.split("\n"), 1) if rule.match(ln.rstrip("\r")))
    if not any(m in text for m in ("<<<<<<<", "=======", ">>>>>>>")):
        want = ()
    assert merge.marker_lines(text.encode()) == want


def test_a_forked_process_never_uses_its_parents_pool():
    """Input: this process makes its worker pool, then forks (as the kill tests fork the CLI).
    Outcome: in the child, `workers(make=False)` is None (the parent's workers and feeder
    thread did not come along: a job sent there would hang), while the parent still has it."""
    import os

    import pytest

    pool = merge.workers()
    if pool is None:
        pytest.skip("one core (or threads running): no pool to inherit")
    pid = os.fork()
    if pid == 0:
        os._exit(0 if merge.workers(make=False) is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert merge.workers(make=False) is pool
