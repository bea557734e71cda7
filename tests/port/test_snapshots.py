"""Each patch's files before and after it (sgpatch.port.snapshots): the absent lists are read
once per run and stay what W holds, a rolled-back step included."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from helpers import make_set, run_cli
from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.port import snapshots
from sgpatch.port.workspace import STATE, Workspace


def test_each_absent_list_is_read_once_per_step(cache, tmp_path, monkeypatch):
    """Input: the set ported to 1.1 (both carry) and to 1.2 (`first` stops), reads of W's
    state counted. Outcome: each `before/ID.absent` and `after/ID.absent` is read once per
    step, though a step checks each, adds to it and takes the patch's diff from it."""
    reads: collections.Counter[str] = collections.Counter()
    get = Workspace.get

    def counted(self: Workspace, name: str) -> str | None:
        if name.endswith(".absent"):
            reads[name] += 1
        return get(self, name)

    monkeypatch.setattr(Workspace, "get", counted)
    d = make_set(tmp_path)
    args = ("port", "--offline", "--set", "demo", "--patchsets", str(d.parent))
    for to, code in (("1.1", 0), ("1.2", 3)):
        reads.clear()
        assert run_cli(*args, "--to", to, "--workspace", str(tmp_path / to))[0] == code
        absent = {f"{side}/{pid}.absent" for side in ("before", "after")
                  for pid in ("first", "second")}  # fmt: skip
        assert reads == dict.fromkeys(absent, 1)


class Boom(BaseException):
    pass


def test_a_rolled_back_step_forgets_the_absent_lists_it_wrote(tmp_path: Path):
    """Input: a step that records a file as absent before a patch, then fails. Outcome: W's
    list is as before the step, and so is what the run reads of it."""
    ws = Workspace(tmp_path / "w")
    (ws.top / STATE).mkdir(parents=True)
    snapshots.put(ws, "before", "first", {"srt/a.py": b"a = 1\n"})
    with pytest.raises(Boom), ws.step("test"):
        snapshots.put(ws, "before", "first", {"srt/new.py": None})
        assert snapshots.absent_of(ws, "before", "first") == {"srt/new.py"}
        raise Boom
    assert snapshots.absent_of(ws, "before", "first") == frozenset()
    assert Workspace(ws.top).lines("before/first.absent") == []


def test_modes_are_recorded_beside_the_bytes_and_a_damaged_line_is_refused(tmp_path: Path):
    """Input: a patch's `after` recorded with a symlink, an executable file and a plain one;
    then the plain one made a symlink, the link's file absent; then `after/first.modes` given
    a line sgpatch never writes. Outcome: each recorded mode reads back (100644 unless named;
    an absent file has none; the list holds only the others); the bad line is exit 4."""
    ws = Workspace(tmp_path / "w")
    (ws.top / STATE).mkdir(parents=True)
    files = {"srt/l": b"x.py", "srt/run.sh": b"#!/bin/sh\n", "srt/x.py": b"x = 1\n"}
    snapshots.put(ws, "after", "first", files, {"srt/l": SYMLINK, "srt/run.sh": EXECUTABLE})
    assert snapshots.modes_of(ws, "after", "first") == {"srt/l": SYMLINK, "srt/run.sh": EXECUTABLE}
    assert snapshots.mode(ws, "after", "first", "srt/x.py") == REGULAR
    snapshots.put(ws, "after", "first", {"srt/x.py": b"l", "srt/l": None}, {"srt/x.py": SYMLINK})
    assert Workspace(ws.top).lines("after/first.modes") == ["100755 srt/run.sh", "120000 srt/x.py"]
    (ws.top / STATE / "after/first.modes").write_text("100644\n")
    with pytest.raises(SgpatchError) as e:
        snapshots.modes_of(Workspace(ws.top), "after", "first")
    assert e.value.code == ExitCode.UNSAFE and "after/first.modes: damaged" in e.value.message
