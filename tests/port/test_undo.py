"""The undo journal of a port step (sgpatch.port.undo): all of a step's writes or none."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from helpers import (
    FIXED12,
    PORT_OTHER,
    other_release,
    run_cli,
    snapshot,
    two_file_set,
)
from sgpatch.diff.canonical import SYMLINK
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.port import undo
from sgpatch.port.workspace import STATE, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A workspace folder with one tree file and one state file."""
    w = Workspace(tmp_path / "w")
    (w.top / "sglang/srt").mkdir(parents=True)
    (w.top / "sglang/srt/a.py").write_bytes(b"a = 1\n")
    (w.top / STATE).mkdir()
    (w.top / STATE / "todo").write_bytes(b"first\n")
    return w


class Boom(BaseException):
    pass


def half_step(ws: Workspace) -> None:
    """A step that changes a tree file twice, makes one, removes one, writes state, and then
    fails."""
    with ws.step("test"):
        ws.write_pkg("srt/a.py", b"a = 2\n")
        ws.write_pkg("srt/a.py", b"a = 3\n")
        ws.write_pkg("srt/new.py", b"new\n")
        ws.put("todo", None)
        ws.put("done", "first\n")
        raise Boom


def test_a_step_that_fails_is_put_back_byte_for_byte(ws):
    """Input: a step that rewrites, creates and removes files, then raises.
    Outcome: every file is as before the step (the created one gone, the removed one back);
    no journal left."""
    before = snapshot(ws.top)
    with pytest.raises(Boom):
        half_step(ws)
    assert snapshot(ws.top) == before


def test_a_step_that_ends_keeps_its_writes_and_no_journal(ws):
    """Input: a step that writes and ends. Outcome: the writes stay; the journal is gone."""
    with ws.step("test"):
        ws.write_pkg("srt/a.py", b"a = 2\n")
    assert (ws.root / "srt/a.py").read_bytes() == b"a = 2\n"
    assert not (ws.top / undo.DIR).exists()


def killed_half_way(ws: Workspace) -> None:
    """What a SIGKILL after some of a step's writes leaves: the journal, never committed."""
    j = undo.Journal(ws.top, "test")
    ws._journal = j
    ws.write_pkg("srt/a.py", b"a = 2\n")
    ws.write_pkg("srt/new.py", b"new\n")
    ws.put("todo", None)
    ws._journal = None


def test_a_killed_step_is_put_back_by_the_next_run(ws):
    """Input: a step killed half-way (its journal left). Outcome: recover puts every file
    back and removes the journal; a second recover does nothing."""
    before = snapshot(ws.top)
    killed_half_way(ws)
    assert snapshot(ws.top) != before
    assert Workspace(ws.top).recover() == []
    assert snapshot(ws.top) == before
    assert Workspace(ws.top).recover() == []


def test_a_tree_file_the_person_edited_after_the_kill_is_kept(ws):
    """Input: a step killed after writing a.py; then the person edits a.py (and not new.py).
    Outcome: recover leaves a.py as the person left it and names it; new.py (as the step
    wrote it) and the state are put back."""
    killed_half_way(ws)
    (ws.root / "srt/a.py").write_bytes(b"mine\n")
    assert Workspace(ws.top).recover() == ["sglang/srt/a.py"]
    assert (ws.root / "srt/a.py").read_bytes() == b"mine\n"
    assert not (ws.root / "srt/new.py").exists()
    assert (ws.top / STATE / "todo").read_bytes() == b"first\n"


def test_a_last_line_cut_short_is_a_write_that_never_began(ws):
    """Input: a killed step whose index ends in half a line (the kill hit the append).
    Outcome: the whole lines are put back; the cut one is left out."""
    before = snapshot(ws.top)
    killed_half_way(ws)
    with (ws.top / undo.INDEX).open("a") as f:
        f.write("-\tabc\tsglang/srt/ne")
    Workspace(ws.top).recover()
    assert snapshot(ws.top) == before


@pytest.mark.parametrize("line", ["x\t-\tsglang/a.py\n", "=\t-\tsglang/never.py\n", "1\t-\n"])
def test_a_damaged_journal_is_refused_in_one_line(ws, line):
    """Input: a journal index with a line sgpatch never writes (a bad tag, a later write of a
    file with no first one, a line cut in two). Outcome: exit 4, one line naming the index and
    the --abort command; nothing put back."""
    killed_half_way(ws)
    (ws.top / undo.INDEX).write_text(line)
    before = snapshot(ws.top)
    with pytest.raises(SgpatchError) as e:
        Workspace(ws.top).recover()
    assert e.value.code == ExitCode.UNSAFE and "\n" not in e.value.message
    assert "journal/index: damaged" in e.value.message and "--abort --workspace" in e.value.message
    assert snapshot(ws.top) == before


def test_the_step_journal_is_the_one_journal_type(ws):
    """Input: a step killed after rewriting a.py. Outcome: its index reads as every journal
    sgpatch writes (`sgpatch-journal 4`, a `file` line with mode, size and digest, a `wrote`
    line),
    and the original is in `originals/<sha256>`, so `cat` and `cp` undo it by hand too."""
    killed_half_way(ws)
    lines = (ws.top / undo.INDEX).read_text().splitlines()
    assert lines[0] == "sgpatch-journal 4" and lines[1].startswith("pid ")
    sha = hashlib.sha256(b"a = 1\n").hexdigest()
    assert lines[2] == f"file 644 6 {sha} sglang/srt/a.py"
    assert lines[3] == f"wrote {hashlib.sha256(b'a = 2' + bytes([10])).hexdigest()} sglang/srt/a.py"
    assert (ws.top / undo.ORIGINALS / sha).read_bytes() == b"a = 1\n"


def test_abort_drops_a_damaged_journal_instead_of_refusing_its_own_hint(cache, tmp_path):
    """Input: a stopped port whose step journal was left damaged (a line sgpatch never
    writes). Outcome: --continue refuses in one line naming the --abort command (exit 4,
    nothing put back); that command, run as printed, removes W (exit 0)."""
    import shlex

    other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    args = ("port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
            "--workspace", str(w))  # fmt: skip
    assert run_cli(*args)[0] == 3
    (w / undo.DIR).mkdir()
    (w / undo.INDEX).write_text("sgpatch-journal 4\npid 1\nexec rm -rf /\n")
    before = snapshot(w)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    (line,) = err.splitlines()
    assert code == 4 and "journal/index: damaged" in line and snapshot(w) == before
    hint = line.split("`")[1]
    assert run_cli(*shlex.split(hint)[1:])[0] == 0
    assert not (w / ".sgpatch-port").exists()


# moved from tests/port/test_port.py


class Killed(BaseException):
    """A failure at a chosen write (BaseException, as Ctrl-C is: nothing catches it)."""


@pytest.mark.parametrize("at", ["carried", "todo", "joined"])
def test_a_step_that_fails_mid_write_is_put_back(cache, tmp_path, monkeypatch, at):
    """Input: a port that fails while it writes: inside a carry (W's file written, `carried/ID`
    not yet), between `done` and `todo` of one save, or while --continue records a joined
    edit. Outcome: the step is put back as it was before it (state files byte for byte; the
    person's edits in W untouched), and the next --continue redoes it and goes on: exit 3 (the
    port's stop) or 0 (the fixed --continue); never --abort. (A real SIGKILL at fixed points:
    tests/port/test_workspace.py.)"""
    from sgpatch.port import snapshots
    from sgpatch.port.workspace import Workspace

    other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    args = ("port", "--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
            "--workspace", str(w))  # fmt: skip
    real_lines, real_put = Workspace.put_lines, snapshots.put
    fail_on = ("carried/second", None) if at == "carried" else ("todo", ["second"])

    def put_lines(self, name, lines):
        lines = list(lines)
        if name == fail_on[0] and fail_on[1] in (None, lines):
            raise Killed
        return real_lines(self, name, lines)

    want = 3
    if at == "joined":
        assert run_cli(*args)[0] == 3
        (w / "sglang/srt/mod.py").write_text(FIXED12)
        (w / "sglang/srt/other.py").write_text(
            PORT_OTHER.replace("return 1\n", "return 7\n") + "\n"
        )
        monkeypatch.setattr(snapshots, "put", lambda *a: (_ for _ in ()).throw(Killed()))
        args, want = ("port", "--continue", "--workspace", str(w)), 0
    else:
        monkeypatch.setattr(Workspace, "put_lines", put_lines)
    before = snapshot(w) if w.exists() else None
    with pytest.raises(Killed):
        run_cli(*args)
    if before is not None:
        assert snapshot(w) == before
    monkeypatch.setattr(Workspace, "put_lines", real_lines)
    monkeypatch.setattr(snapshots, "put", real_put)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == want, err


def test_a_step_that_changed_a_file_s_kind_is_put_back_as_that_kind(ws):
    """Input: an executable tree file; a step (killed half-way) makes it a plain file, turns
    a.py into a symlink and makes a new symlink. Outcome: recover gives back the executable
    file with its bit, a.py as a file with its bytes, and no new link; the index kept the
    mode (`file 755 ...`) and the link's write as a link."""
    (ws.root / "srt/run.sh").write_bytes(b"#!/bin/sh\n")
    (ws.root / "srt/run.sh").chmod(0o755)
    j = undo.Journal(ws.top, "test")
    ws._journal = j
    ws.write_pkg("srt/run.sh", b"#!/bin/sh\necho\n")
    ws.write_pkg("srt/a.py", b"run.sh", SYMLINK)
    ws.write_pkg("srt/b.py", b"a.py", SYMLINK)
    ws._journal = None
    assert (ws.root / "srt/a.py").is_symlink() and not (
        ws.root / "srt/run.sh"
    ).stat().st_mode & 0o111
    index = (ws.top / undo.INDEX).read_text()
    assert f"file 755 10 {hashlib.sha256(b'#!/bin/sh' + bytes([10])).hexdigest()}" in index
    assert Workspace(ws.top).recover() == []
    assert (ws.root / "srt/run.sh").stat().st_mode & 0o777 == 0o755
    assert not (ws.root / "srt/a.py").is_symlink()
    assert (ws.root / "srt/a.py").read_bytes() == b"a = 1\n"
    assert not os.path.lexists(ws.root / "srt/b.py")


def test_a_link_the_step_wrote_then_the_person_retargeted_is_kept(ws):
    """Input: a step killed after making srt/b.py a symlink; then the person points it at
    another file. Outcome: recover leaves the person's link and names it."""
    j = undo.Journal(ws.top, "test")
    ws._journal = j
    ws.write_pkg("srt/b.py", b"a.py", SYMLINK)
    ws._journal = None
    (ws.root / "srt/b.py").unlink()
    (ws.root / "srt/b.py").symlink_to("c.py")
    assert Workspace(ws.top).recover() == ["sglang/srt/b.py"]
    assert os.readlink(ws.root / "srt/b.py") == "c.py"
