"""Each patch's files before and after it (sgpatch.port.snapshots): the absent lists are read
once per run and stay what W holds, a rolled-back step included."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from helpers import make_set, run_cli
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
