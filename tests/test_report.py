"""report: tables are plain aligned lines off a terminal (build logs), rich on one."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from sgpatch import report


def test_plain_table_aligns_columns_two_spaces_apart_without_trailing_blanks() -> None:
    lines = report.plain_table(
        ("patch", "state", "note"),
        [("kimi-hooks", "applied", ""), ("sm120 (optional)", "pending", "apply with --with")],
    )
    assert lines == [
        "patch             state    note",
        "kimi-hooks        applied",
        "sm120 (optional)  pending  apply with --with",
    ]


def test_plain_table_keeps_a_multi_line_cell_on_its_row() -> None:
    """Input: a note with a newline. Outcome: still one line per row (a log stays greppable)."""
    lines = report.plain_table(("patch", "note"), [("a", "first\nsecond")])
    assert lines == ["patch  note", "a      first second"]


def _table_on(monkeypatch, tty: bool, force: str | None) -> str:
    buf = io.StringIO()
    buf.isatty = lambda: tty  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", buf)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    if force is not None:
        monkeypatch.setenv("FORCE_COLOR", force)
    report.table(("patch", "state"), [("kimi-hooks", "applied")], lambda col, text: "green")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("tty", "force", "boxes"), [(False, None, False), (True, None, True), (False, "1", True)]
)
def test_table_form_follows_the_terminal(monkeypatch, tty, force, boxes) -> None:
    """Input: stderr a terminal or not, FORCE_COLOR set or not. Outcome: rich boxes only for a
    terminal or when forced; otherwise exactly the plain lines."""
    out = _table_on(monkeypatch, tty, force)
    assert ("│" in out) is boxes, out
    if not boxes:
        assert out == "patch       state\nkimi-hooks  applied\n"
    assert "kimi-hooks" in out and "applied" in out


def test_a_plain_run_never_imports_rich(tmp_path) -> None:
    """Input: `sgpatch list` with stderr a pipe. Outcome: the table is printed and rich (about
    45 ms of start-up) was not imported."""
    code = (
        "import sys\n"
        "from sgpatch.cli import main\n"
        "try:\n    main(['list'])\n"
        "except SystemExit:\n    pass\n"
        "print('rich' in sys.modules)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.stdout.strip() == "False", proc.stderr
    assert "kimi-eagle3-sm120" in proc.stderr
