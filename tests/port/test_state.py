"""The port's state read once (sgpatch.port.state): what a stopped workspace's files say, as one
record; a changed record written back, only the files that changed, inside a step."""

from __future__ import annotations

from packaging.version import Version

from helpers import snapshot, start_conflict
from sgpatch.port.state import Options, PortState
from sgpatch.port.stopreport import Problem
from sgpatch.port.workspace import Workspace


def _loaded(tmp_path):
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    ws = Workspace(w)
    return d, w, ws, PortState.load(ws, ["first", "second"])


def test_a_stopped_workspace_as_one_record(cache, tmp_path):
    """Input: the demo set ported to 1.2 (`first` stops on srt/mod.py, `second` carried).
    Outcome: the record says phase stopped, `first` on needs-a-hand with its problem,
    `second` done, the release and the set the port began on, the fix list as `fix` holds
    it, and per patch its files, carried and to-fix files as the state folder lists them."""
    d, w, ws, state = _loaded(tmp_path)
    assert state.phase == "stopped"
    assert [o.id for o in state.queue.stopped] == ["first"]
    assert [o.id for o in state.queue.done] == ["second"] and state.queue.todo == []
    assert state.queue.stopped[0].problems[0].file == "srt/mod.py"
    assert state.options == Options.load(ws)
    assert state.options.onto == Version("1.2") and state.options.set == d / "patchset.yaml"
    assert list(state.fix) == (w / ".sgpatch-port/fix").read_text().splitlines()
    assert state.listing.fixing["first"] == {"srt/mod.py"}
    assert state.listing.carried["second"] == {"srt/other.py"}
    assert state.listing.unfinished("first") == {"srt/mod.py"}
    assert state.listing.writers_of(["first", "second"], "srt/other.py") == ["second"]
    assert state.listing.last_writers(["first", "second"], ["first"]) == {
        "srt/mod.py": "first",
        "srt/other.py": "second",
    }


def test_only_the_changed_listing_files_are_written(cache, tmp_path):
    """Input: the record of a stopped workspace with `first`'s to-fix file moved to carried,
    in memory, then saved inside a step. Outcome: on disk carried/first and fixing/first
    (and nothing else of the listing) changed; the record as saved has nothing left to
    write; a record saved unchanged rewrites no listing file."""
    _d, w, ws, state = _loaded(tmp_path)
    before = snapshot(w / ".sgpatch-port")
    listing = state.listing.with_list("carried", "first", {"srt/mod.py"})
    listing = listing.with_list("fixing", "first", ())
    assert listing.changed == {"carried/first", "fixing/first"}
    assert listing.with_list("files", "first", state.listing.files["first"]) is listing
    with ws.step("test"):
        saved = listing.save(ws)
    after = snapshot(w / ".sgpatch-port")
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == {"carried/first", "fixing/first"}
    assert after["carried/first"] == b"srt/mod.py\n" and after["fixing/first"] == b""
    assert saved.changed == frozenset()
    assert PortState.load(ws, ["first", "second"]).listing.carried["first"] == {"srt/mod.py"}


def test_reopened_puts_a_done_patch_back_on_needs_a_hand(cache, tmp_path):
    """Input: the record, `second` reopened with a lint problem, saved with phase stopped.
    Outcome: both patches stopped, in manifest order; needs-a-hand, problems/second, phase
    and fix on disk say so, and the saved record's fix list is the file's."""
    _d, _w, ws, state = _loaded(tmp_path)
    problem = Problem("", "lint: sglang: no")
    with ws.step("test"):
        state = state.reopened({"second": [problem]}, ["first", "second"]).save(ws, "stopped")
    assert [o.id for o in state.queue.stopped] == ["first", "second"]
    assert [ln.split("\t")[0] for ln in ws.lines("needs-a-hand")] == ["first", "second"]
    assert ws.lines("problems/second") == ["\t\tlint: sglang: no"]
    assert ws.phase == "stopped" and list(state.fix) == ws.lines("fix")
    assert any("second (sglang): no" in ln for ln in state.fix)


def test_reopened_leaves_the_record_it_was_made_from_as_it_was(cache, tmp_path):
    """Input: the record of a stopped workspace, `second` reopened with a lint problem (in
    memory, not saved). Outcome: the new record has `second` stopped as a conflict; the one
    it came from (frozen) still has it done, carried, with no problem: a record is never
    changed, only replaced."""
    _d, _w, _ws, state = _loaded(tmp_path)
    second = state.queue.done[0]
    new = state.reopened({"second": [Problem("", "lint: sglang: no")]}, ["first", "second"])
    assert [(o.id, o.outcome) for o in new.queue.stopped] == [
        ("first", "conflict"),
        ("second", "conflict"),
    ]
    assert [o.id for o in state.queue.stopped] == ["first"]
    assert state.queue.done == [second] and second.outcome == "carried" and not second.problems


def test_a_state_line_keeps_dashes_on_disk_only(cache, tmp_path):
    """Input: an upstream patch's outcome (no variant, release, base or note), its state line
    read back. Outcome: the line says `-` for each empty field; in memory they are None (no
    `-` placeholder outside the line reader and writer), and the line round-trips."""
    from sgpatch.port.sequencer import Outcome

    _d, _w, ws, _state = _loaded(tmp_path)
    line = Outcome("p", "upstream").line()
    assert line.split("\t") == ["p", "upstream", "-", "-", "-", "changed", "-", "-"]
    back = Outcome.parse(line, ws, "done")
    assert (back.variant, back.release, back.base, back.note) == (None, None, None, "")
    assert back.line() == line
