"""console: tables are plain aligned lines off a terminal (build logs), rich on one; the
product on stdout, messages on stderr."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from sgpatch import console


def test_plain_table_aligns_columns_two_spaces_apart_without_trailing_blanks() -> None:
    lines = console.plain_table(
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
    lines = console.plain_table(("patch", "note"), [("a", "first\nsecond")])
    assert lines == ["patch  note", "a      first second"]


def _table_on(monkeypatch, tty: bool, force: str | None) -> str:
    buf = io.StringIO()
    buf.isatty = lambda: tty  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stdout", buf)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    if force is not None:
        monkeypatch.setenv("FORCE_COLOR", force)
    console.table(("patch", "state"), [("kimi-hooks", "applied")], lambda col, text: "green")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("tty", "force", "boxes"), [(False, None, False), (True, None, True), (False, "1", True)]
)
def test_table_form_follows_the_terminal(monkeypatch, tty, force, boxes) -> None:
    """Input: stdout a terminal or not, FORCE_COLOR set or not. Outcome: rich boxes only for a
    terminal or when forced; otherwise exactly the plain lines."""
    out = _table_on(monkeypatch, tty, force)
    assert ("│" in out) is boxes, out
    if not boxes:
        assert out == "patch       state\nkimi-hooks  applied\n"
    assert "kimi-hooks" in out and "applied" in out


def test_a_plain_run_never_imports_rich(tmp_path) -> None:
    """Input: `sgpatch list` with stdout a pipe. Outcome: the table is printed (on stdout, the
    command's product) and rich (about 45 ms of start-up) was not imported."""
    code = (
        "import sys\n"
        "from sgpatch.cli.app import main\n"
        "try:\n    main(['list'])\n"
        "except SystemExit:\n    pass\n"
        "print('rich' in sys.modules)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    *table, imported = proc.stdout.strip().splitlines()
    assert imported == "False", proc.stderr
    assert "kimi-eagle3-sm120" in table[1] and not proc.stderr


def test_ids_are_never_wrapped_on_an_80_column_terminal(monkeypatch) -> None:
    """Input: a rich table (stdout a terminal, 80 columns) whose first column holds a 44-char
    patch id and whose note is long. Outcome: the id is on one line, whole; the note folds."""
    buf = io.StringIO()
    buf.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stdout", buf)
    monkeypatch.setenv("COLUMNS", "80")
    long_id = "eagle3-aux-capture-allreduce-fusion-optional"
    note = "a long note that has to fold somewhere " * 3
    console.table(("patch", "state", "how", "note"), [(long_id, "pending", "clean", note)])
    lines = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue()).splitlines()  # colour codes out
    assert any(long_id in line for line in lines), buf.getvalue()
    assert max(len(line) for line in lines) <= 80


def test_product_and_messages_go_to_separate_streams(capsys) -> None:
    """Input: `out` and `err`. Outcome: the product on stdout, the message on stderr."""
    console.out("product")
    console.err("message")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("product\n", "message\n")


def test_a_json_document_gets_its_schema_from_the_console(capsys) -> None:
    """Input: a command's document and port's. Outcome: `schema` first, 1 for a command and 5
    for port, set by the console; a document that brings its own schema is refused."""
    import json

    console.emit_json({"command": "status", "exit_code": 0})
    console.emit_json({"command": "port", "exit_code": 0})
    first, second = capsys.readouterr().out.split("\n}\n")[:2]
    assert json.loads(first + "}") == {"schema": 1, "command": "status", "exit_code": 0}
    assert json.loads(second + "}")["schema"] == console.PORT_SCHEMA == 5
    with pytest.raises(TypeError):
        console.emit_json({"command": "status", "schema": 3})


@pytest.mark.parametrize("leak", [Path("/x"), Version("1.0"), object()])
def test_a_value_json_cannot_hold_fails_loudly(capsys, leak) -> None:
    """Input: a document holding a Path, a Version or any other object JSON cannot hold (a
    record that missed its to_json). Outcome: TypeError naming the type, nothing printed: no
    silent `str()` of it (the CLI's boundary makes that exit 70)."""
    with pytest.raises(TypeError, match=type(leak).__name__):
        console.emit_json({"command": "status", "where": [leak]})
    assert capsys.readouterr().out == ""


def test_no_json_writer_in_src_stringifies_what_it_cannot_hold() -> None:
    """Input: every module under src/sgpatch. Outcome: none passes `default=str` to json (a
    record that leaks into a document must fail, not turn into its repr), and no command or
    entry point sets a document's schema number itself (console does)."""
    import re

    import sgpatch

    root = Path(sgpatch.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "default=str" not in text, path
        if path.parent.name == "cli" or path.name in ("__main__.py", "boundary.py"):
            assert not re.search(r'"schema":\s*\d', text), path
