"""cli/port: the lines `sgpatch port` prints, names from the workspace included."""

from __future__ import annotations

from helpers import port_cache, run_cli, start_conflict

HOSTILE = "note\x1b[2J\x07\nmore.txt"  # ESC (clear screen), BEL and a newline in a file name


def test_abort_says_a_hostile_file_name_escaped_on_one_line(tmp_path, monkeypatch) -> None:
    """Input: a stopped port; someone leaves a file named with ESC, BEL and a newline in W,
    beside what sgpatch wrote; `port --abort`. Outcome: exit 0, one line on stderr naming the
    file it left in place with `\\x1b`, `\\x07` and `\\n` written out, no raw control
    character; the file is still there."""
    port_cache(tmp_path, monkeypatch)
    _d, w, code, _doc = start_conflict(tmp_path)
    assert code == 3
    (w / HOSTILE).write_text("mine\n")
    code, out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0 and out == ""
    (line,) = err.splitlines()
    assert "kept what others put there: note\\x1b[2J\\x07\\nmore.txt)" in line
    assert not any(c in line for c in "\x1b\x07")
    assert (w / HOSTILE).read_text() == "mine\n"
