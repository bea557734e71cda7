"""shown: one rule for how names and advised commands are printed."""

from __future__ import annotations

import shlex
from pathlib import Path

from sgpatch import console
from sgpatch.shown import command, context, lines, name


def test_name_escapes_every_control_character() -> None:
    """Input: text with ESC, BEL, a newline, a tab, DEL and a C1 control. Outcome: each as a
    Python escape, the rest as it was."""
    assert name("a\x1b[31mb\x07c\nd\te\x7ff\x9bg") == "a\\x1b[31mb\\x07c\\nd\\te\\x7ff\\x9bg"


def test_lines_keeps_line_breaks_and_tabs_only() -> None:
    """Input: a two-line message holding ESC and BEL. Outcome: the line break and tab kept,
    ESC and BEL escaped."""
    assert lines("one\x1b]0;x\x07\n\ttwo") == "one\\x1b]0;x\\x07\n\ttwo"


def test_command_quotes_each_word_for_a_shell() -> None:
    """Input: a command with a path holding a space and a quote. Outcome: backticked, and
    split by a POSIX shell into exactly the words given."""
    shown = command("revert", "--set", "s", "--sglang-dir", "/tmp/my tree/it's")
    assert shown.startswith("`sgpatch revert") and shown.endswith("`")
    assert shlex.split(shown[1:-1]) == ["sgpatch", "revert", "--set", "s", "--sglang-dir",
                                        "/tmp/my tree/it's"]  # fmt: skip


def test_context_names_the_tree_and_the_set_folders_absolute(tmp_path, monkeypatch) -> None:
    """Input: a relative tree and two --patchsets folders. Outcome: --sglang-dir and each
    --patchsets, absolute, so the advice works from any folder."""
    monkeypatch.chdir(tmp_path)
    assert context(Path("t"), [Path("a"), Path("b")]) == (
        "--sglang-dir", str(tmp_path / "t"), "--patchsets", str(tmp_path / "a"),
        "--patchsets", str(tmp_path / "b"),
    )  # fmt: skip


def test_messages_listings_and_tables_never_print_a_raw_escape(capsys) -> None:
    """Input: console.err, console.out and a plain console.table given text with ESC and BEL
    (a name not passed through `name`). Outcome: both escaped on both streams; console.write,
    for bytes that must stay exact (a patch), leaves them."""
    console.err("e\x1b[2J\x07")
    console.out("o\x1b[2J")
    console.table(("c",), [("t\x07",)])
    console.write("w\x1b")
    captured = capsys.readouterr()
    assert captured.err == "e\\x1b[2J\\x07\n"
    assert captured.out == "o\\x1b[2J\nc\nt\\x07\nw\x1b"
