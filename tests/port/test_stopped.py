"""--continue taking a person's hand edits (port/stopped.py), on synthetic releases: after
`port --no-finish` (nothing stopped), an edit in a file one patch changes joins that patch; an
edit in a file no patch changes is refused naming it, and the set is left as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import (
    FIXED12,
    KINDS,
    MODE_BLOCKS,
    PATCHED10,
    PORT_OTHER,
    V10,
    V11,
    V12,
    apply_to,
    by_id,
    forced_abort,
    kinds_in,
    make_set,
    modes_set,
    no_hang,
    other_release,
    port_applied,
    port_diff,
    port_onto,
    release_files,
    run_cli,
    sgport,
    snapshot,
    start_conflict,
    two_file_set,
)
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import merge


def planned(tmp_path: Path, second: str | None = None) -> tuple[Path, Path]:
    d = make_set(tmp_path, second)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.1",
                       "--workspace", str(w), "--no-finish")  # fmt: skip
    assert code == 0 and doc["steps"][0]["state"] == "planned"
    return d, w


def test_an_edit_after_no_finish_joins_the_patch_that_changes_the_file(cache, tmp_path):
    """Input: a port to 1.1 with --no-finish (everything carries), then a line added by hand
    to srt/mod.py in W (patch `first` changes that file). Outcome: --continue writes the set
    (exit 0) noting that the edit joins `first`; the set applied to pristine 1.1 gives W's
    edited file byte for byte."""
    d, w = planned(tmp_path)
    mod = w / "sglang/srt/mod.py"
    mod.write_text(mod.read_text() + "# mine\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0 and doc["steps"][-1]["state"] == "finished"
    assert "sglang/srt/mod.py: the edit there joins first" in json.dumps(doc)
    assert apply_to(tmp_path, d.parent, "1.1", V11) == mod.read_bytes()


def test_an_edit_after_no_finish_in_a_file_no_patch_changes_is_refused(cache, tmp_path):
    """Input: a port to 1.1 with --no-finish, then an edit of srt/__init__.py (no patch of the
    set changes it). Outcome: --continue exits 3 naming the file and why, the set untouched;
    with the edit undone, --continue writes the set (exit 0)."""
    d, w = planned(tmp_path)
    before = snapshot(d)
    init = w / "sglang/srt/__init__.py"
    init.write_text("# mine\n")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3 and "sglang/srt/__init__.py was edited, but no patch of the set" in err
    assert "--abort --workspace" in err
    assert snapshot(d) == before
    init.write_text("")
    assert sgport("--continue", "--workspace", str(w))[0] == 0


def test_an_edit_after_no_finish_in_a_file_two_patches_change_is_refused(cache, tmp_path):
    """Input: a set whose patches `first` and `second` both change srt/mod.py, ported to 1.1
    with --no-finish, then srt/mod.py edited in W. Outcome: --continue exits 3 naming the file
    and both patches (which one the edit belongs to is the person's to say); the set untouched."""
    second = port_diff(PATCHED10, PATCHED10 + "# second\n")
    d, w = planned(tmp_path, second)
    before = snapshot(d)
    mod = w / "sglang/srt/mod.py"
    mod.write_text(mod.read_text() + "# mine\n")
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3 and "sglang/srt/mod.py was edited, but 2 patches change it" in err
    assert "(first, second)" in err
    assert snapshot(d) == before


# moved from tests/port/test_port.py


def test_conflict_stops_with_markers_and_readable_state(cache, tmp_path):
    """Input: 1.2 changed the very line hunk 2 of `first` changes.
    Outcome: exit 3; the set is byte-for-byte unchanged; W is a full 1.2 tree whose mod.py has
    diff3 markers (ours/base/theirs) with hunk 1 already kept; `second` (another file) was
    carried anyway; todo/done/needs-a-hand/fix/onto/marker are plain text naming all that."""
    d = make_set(tmp_path)
    before = snapshot(d)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3
    assert snapshot(d) == before
    text = (w / "sglang/srt/mod.py").read_text()
    for mark in ("<<<<<<< sglang 1.2\n", "||||||| sglang 1.0\n", "=======\n",
                 ">>>>>>> first (made on 1.0)\n"):  # fmt: skip
        assert mark in text
    assert "        return 100\n" in text  # the kept hunk
    assert (w / "sglang/srt/other.py").read_text().endswith("return 42\n")
    state = w / ".sgpatch-port"
    assert (state / "onto").read_text() == "1.2\n"
    assert (state / "needs-a-hand").read_text().startswith("first\tconflict\t")
    assert (state / "done").read_text().startswith("second\tcarried\t")
    assert (state / "todo").read_text() == ""
    fix = (state / "fix").read_text()
    assert fix.startswith("files to fix in W (then `sgpatch port --continue --workspace ")
    assert "\n  sglang/srt/mod.py (markers at lines " in fix and "first hunk(s) #2" in fix
    assert (state / "marker").is_file()
    assert by_id(doc)["first"]["outcome"] == "conflict"
    assert doc["steps"][0]["state"] == "stopped"


def test_the_json_problem_names_the_marker_lines_the_fix_list_names(cache, tmp_path):
    """Input: the stopped port to 1.2 (`first` conflicts in srt/mod.py), then --continue --json
    with nothing fixed. Outcome: the problem's `markers` are the 1-based lines of W's mod.py
    that are conflict markers (not an empty list), the same lines the fix list names."""
    _d, w, _code, _ = start_conflict(tmp_path)
    lines = (w / "sglang/srt/mod.py").read_text().splitlines()
    want = [
        n
        for n, ln in enumerate(lines, 1)
        if ln.startswith(("<<<<<<<", "|||||||", "=======", ">>>>>>>"))
    ]
    code, doc = sgport("--continue", "--workspace", str(w))
    (problem,) = by_id(doc)["first"]["problems"]
    assert code == 3 and want and problem["markers"] == want
    shown = ", ".join(map(str, want))
    assert f"(markers at lines {shown})" in (w / ".sgpatch-port/fix").read_text()


def test_continue_with_markers_left_exits_3_and_lists_them(cache, tmp_path):
    """Input: --continue on the stopped workspace without fixing anything.
    Outcome: exit 3 naming the file and marker lines; the set unchanged."""
    d, w, code, _ = start_conflict(tmp_path)
    before = snapshot(d)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 3
    assert any("srt/mod.py: conflict markers at lines" in f for f in doc["steps"][0]["fix"])
    assert snapshot(d) == before


def test_continue_after_a_fix_writes_the_variant(cache, tmp_path):
    """Input: the conflict resolved by hand (keep upstream's new line, and the patch's change),
    then --continue. Outcome: exit 0; `first` is `fixed` with a new `==1.2` variant whose diff
    is the fixed file against 1.2; applying the set to 1.2 gives the fixed file."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    fixed = FIXED12
    (w / "sglang/srt/mod.py").write_text(fixed)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert by_id(doc)["first"]["outcome"] == "fixed"
    m = load_manifest(d / "patchset.yaml")
    assert str(m.patch("first").variants[0].sglang) == "==1.2"
    assert apply_to(tmp_path, d.parent, "1.2", V12) == fixed.encode()


def test_abort_removes_only_what_sgpatch_wrote(cache, tmp_path):
    """Input: --abort on a stopped workspace where the user also saved notes.txt.
    Outcome: exit 0; the release tree and state are gone, notes.txt stays; the set unchanged;
    a second --abort is bad input (no workspace)."""
    d, w, code, _ = start_conflict(tmp_path)
    before = snapshot(d)
    (w / "notes.txt").write_text("mine\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    assert sorted(p.name for p in w.iterdir()) == ["notes.txt"]
    assert snapshot(d) == before
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 2


def test_the_set_changed_since_the_port_began(cache, tmp_path):
    """Input: the manifest edited between the port and --continue. Outcome: exit 4, one line
    naming the set and the abort command as it works; W and the set untouched."""
    d, w, _code, _ = start_conflict(tmp_path)
    with (d / "patchset.yaml").open("a") as f:
        f.write("# edited\n")
    before, set_before = snapshot(w), snapshot(d)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert "the set changed since the port began" in line
    assert f"`sgpatch port --abort --workspace {w}`" in line
    assert snapshot(w) == before and snapshot(d) == set_before


MOVED = "".join(f"def helper_{i}():\n    return {i}\n\n\n" for i in range(8)) + (
    "def other():\n    return 0\n"
)


def test_a_change_moved_to_another_file_by_hand(cache, tmp_path):
    """Input: 1.5 has no srt/other.py (upstream moved `other` into srt/moved.py, a bigger
    file: a move, not a rename port could follow); `second` patches srt/other.py. Outcome:
    exit 3 with a marker file at sglang/srt/other.py ("not in sglang 1.5"; moved.py's `other`
    named as a candidate, too small to be certain of); the person deletes it,
    makes the change in srt/moved.py and also edits mod.py (a file the already carried `first`
    patched): as in a rebase, both edits join the stopped
    `second` (said in `notes`); --continue gives `second` a 1.5 variant with moved.py and the
    mod.py edit, and applying the set to 1.5 writes exactly W's files."""
    files = release_files(V10, "1.5")
    del files["sglang/srt/other.py"]
    files["sglang/srt/moved.py"] = MOVED.encode()
    d = make_set(tmp_path)
    w, code, doc = port_onto(cache, tmp_path, d, "1.5", files)
    assert code == 3
    (problem,) = by_id(doc)["second"]["problems"]
    assert problem["file"] == "srt/other.py" and "not in sglang 1.5" in problem["why"]
    (moved,) = problem["details"]  # too small to call moved.py's `other` the same code
    assert moved["status"] == "its code is no longer in this file"
    assert any(e.startswith("maybe srt/moved.py:33 (def other") for e in moved["evidence"])
    assert merge.marker_lines((w / "sglang/srt/other.py").read_bytes())
    first_file = load_manifest(d / "patchset.yaml").patch("first").variants[0].patch.read_bytes()
    (w / "sglang/srt/other.py").unlink()
    mod = w / "sglang/srt/mod.py"
    mod.write_text(mod.read_text() + "# an edit\n")
    (w / "sglang/srt/moved.py").write_text(MOVED.replace("return 0\n", "return 42\n"))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert sorted(doc["steps"][0]["notes"]) == [
        "sglang/srt/mod.py: the edit there joins second",
        "sglang/srt/moved.py: the edit there joins second",
    ]
    m = load_manifest(d / "patchset.yaml")
    second = m.patch("second").variants[0]
    assert str(second.sglang) == "==1.5"
    text = second.patch.read_text()
    assert "srt/moved.py" in text and "srt/other.py" not in text and "+# an edit" in text
    assert m.patch("first").variants[0].patch.read_bytes() == first_file  # as it was
    files["sglang/srt/mod.py"] = V10.encode()
    assert port_applied(tmp_path, d, "1.5", files, ["srt/mod.py", "srt/moved.py"]) == {
        r: (w / "sglang" / r).read_bytes() for r in ["srt/mod.py", "srt/moved.py"]
    }


def test_a_stopped_patch_keeps_its_own_change_to_a_file_a_later_one_carried(cache, tmp_path):
    """Input: `first` patches mod.py (stops on 1.4) and other.py (`another` -> 11, clean);
    `second` patches other.py (`other` -> 42) and mod.py. Outcome: `second`'s other.py is
    carried on top of `first`'s now; after the fix, `first`'s new patch changes other.py by
    `another` -> 11 only and `second`'s by `other` -> 42 only; the set applied to 1.4 writes
    exactly W's files."""
    files = other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=True)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and by_id(doc)["second"]["files_carried"] == ["srt/other.py"]
    both = PORT_OTHER.replace("return 0\n", "return 42\n").replace("return 1\n", "return 11\n")
    assert (w / "sglang/srt/other.py").read_text() == both
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    m = load_manifest(d / "patchset.yaml")
    first = m.patch("first").variants[0].patch.read_text()
    second = m.patch("second").variants[0].patch.read_text()
    assert "+    return 11" in first and "return 42" not in first
    assert "+    return 42" in second and "return 11\n" not in second.replace(" return 11\n", "")
    rels = ["srt/mod.py", "srt/other.py"]
    assert port_applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


def test_an_edit_under_a_later_patch_joins_the_stopped_one(cache, tmp_path):
    """Input: as in test_a_waiting_patch_carries_its_other_files_now; while fixing mod.py the
    person also edits other.py, where `second` carried `other` -> 42 already: once in a line of
    its own (`another` -> 7), once on the very line `second` changed. Outcome: the overlapping
    edit is refused at --continue (exit 3, naming `second`, nothing taken); the separate one
    joins `first` underneath `second`: `first`'s patch has `another` -> 7, `second`'s still
    only `other` -> 42, and the set applied to 1.4 writes exactly W's files."""
    files = other_release(cache, "1.4")
    d = two_file_set(tmp_path, first_other=False)
    w = tmp_path / "w"
    code, _doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                        "--workspace", str(w))  # fmt: skip
    assert code == 3
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    other = w / "sglang/srt/other.py"
    carried = other.read_text()
    state = snapshot(w / ".sgpatch-port")
    other.write_text(carried.replace("return 42\n", "return 43\n"))
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3 and "later patches (second) carried their changes there already" in err
    assert snapshot(w / ".sgpatch-port") == state
    other.write_text(carried.replace("return 1\n", "return 7\n"))
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    assert doc["steps"][0]["notes"] == ["sglang/srt/other.py: the edit there joins first"]
    m = load_manifest(d / "patchset.yaml")
    first = m.patch("first").variants[0].patch.read_text()
    second = m.patch("second").variants[0].patch.read_text()
    assert "+    return 7" in first and "return 42" not in first
    assert "+    return 42" in second and "+    return 7" not in second
    rels = ["srt/mod.py", "srt/other.py"]
    assert port_applied(tmp_path, d, "1.4", files, rels) == {
        r: (w / "sglang" / r).read_bytes() for r in rels
    }


def test_a_workspace_of_an_older_sgpatch_is_not_continued(cache, tmp_path):
    """Input: a stopped workspace whose state has no `format` file (as the previous sgpatch
    left it). Outcome: --continue is bad input (exit 2) naming --abort, W untouched;
    --abort still removes it."""
    _d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    (w / ".sgpatch-port/format").unlink()
    before = snapshot(w)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 2 and "made by an older sgpatch" in err and "--abort" in err
    assert snapshot(w) == before
    assert run_cli("port", "--abort", "--workspace", str(w))[0] == 0
    assert not w.exists()


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("needs-a-hand", lambda t: t.replace("kept 1, merged 0", "kept x, merged 0")),
        ("needs-a-hand", lambda t: t.replace("\tconflict\t", "\tbogus\t")),
        ("needs-a-hand", lambda t: t.split("\t", 1)[0] + "\n"),
        ("done", lambda t: t.replace("as-is", "maybe")),
        ("problems/first", lambda t: t.replace("\t2\t", "\ttwo\t")),
        ("onto", lambda t: "not a version\n"),
        ("done", lambda t: "\udcff"),
        ("fixing/first", lambda t: "srt/mo\n"),
        ("files/second", lambda t: "../../etc/passwd\n"),
        ("before/first.absent", lambda t: "srt/elsewhere.py\n"),
        ("tree", lambda t: t + "0123abcd  sglang/srt/mod.py\n"),
        ("hunks/first/srt/mod.py.jsonl", lambda t: t[:40] + "\n"),
        ("hunks/first/srt/mod.py.jsonl", lambda t: t.replace('"hunk": 2', '"hunk": "2"')),
        ("hunks/first/srt/mod.py.jsonl", lambda t: "[" * 200_000 + "\n"),
    ],
)
def test_a_damaged_state_file_is_one_line_and_exit_4(cache, tmp_path, name, damage):
    """Input: a stopped workspace, one state file damaged by hand (a count that is not a
    number, an unknown outcome, a line cut short, a bad hunk number, a bad release, bytes that
    are not UTF-8, a path list naming a file the patch does not have or a path out of W, a
    tree line whose digest is cut short, a hunk detail cut short, with a hunk number that is
    a string, or nested 200,000 lists deep: exit 70 on RecursionError before).
    Outcome: --continue exits 4 with one line naming the file and --abort;
    W is byte-for-byte as it was; the set too."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    f = w / ".sgpatch-port" / name
    f.write_bytes(damage(f.read_text()).encode("utf-8", "surrogateescape"))
    before, set_before = snapshot(w), snapshot(d)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert f"{name}: damaged" in line and "--abort" in line
    assert snapshot(w) == before and snapshot(d) == set_before


@pytest.mark.parametrize(
    "name",
    ["needs-a-hand", "done", "tree", "fixing/first", "before/first.absent",
     "before/first/srt/mod.py", "hunks/first/srt/mod.py.jsonl", "carried/second"],
)  # fmt: skip
def test_a_fifo_at_a_state_file_is_refused_not_waited_on(cache, tmp_path, name):
    """Input: a stopped workspace whose state file NAME (a list, a snapshot, a hunk detail)
    was replaced by a FIFO nobody writes. Outcome: --continue exits 4 at once (it blocked for
    ever on the open) with one line naming the file as not a regular file; W otherwise
    byte-for-byte as it was, the set too."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    f = w / ".sgpatch-port" / name
    f.unlink()
    os.mkfifo(f)
    before, set_before = snapshot(w), snapshot(d)
    with no_hang():
        code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4, err
    (line,) = err.splitlines()
    assert f"{name} is not a regular file" in line
    assert snapshot(w) == before and snapshot(d) == set_before


def test_abort_of_a_workspace_with_a_damaged_tree_list(cache, tmp_path):
    """Input: a stopped workspace whose `tree` list has a line cut short and one naming a path
    out of W. Outcome: --abort still removes W (exit 0): what a damaged line names is never
    followed out of W, and nothing outside W is touched."""
    _d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    tree = w / ".sgpatch-port/tree"
    tree.write_text(tree.read_text() + "0123abcd\n" + "ab  ../outside.txt\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    assert not w.exists() and outside.read_text() == "keep"


def test_abort_keeps_the_persons_own_state_files_aside(cache, tmp_path):
    """Input: a stopped port where the person wrote a reason into W/.sgpatch-port/na-first and
    a note into W/.sgpatch-port/mine/todo.txt (neither written by sgpatch), then --abort
    (no --force: nothing of theirs is deleted). Outcome: exit 0 and one line naming the aside
    folder w.aborted-1 and both files; that folder holds exactly them, byte for byte; W is
    gone; the set is unchanged. --abort --json names them in `own_files`."""
    d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    before = snapshot(d)
    (w / ".sgpatch-port/na-first").write_text("gone upstream in 1.2\n")
    (w / ".sgpatch-port/mine").mkdir()
    (w / ".sgpatch-port/mine/todo.txt").write_bytes(b"ask upstream\n")
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0, err
    (line,) = err.splitlines()
    aside = tmp_path / "w.aborted-1"
    assert (
        f"kept your files in {aside}: .sgpatch-port/mine/todo.txt, .sgpatch-port/na-first" in line
    )
    assert snapshot(aside) == {
        ".sgpatch-port/mine/todo.txt": b"ask upstream\n",
        ".sgpatch-port/na-first": b"gone upstream in 1.2\n",
    }
    assert not w.exists() and snapshot(d) == before
    _d2, w2, code, _ = start_conflict(tmp_path / "again")
    (w2 / ".sgpatch-port/na-first").write_text("mine\n")
    code, out, _err = run_cli("port", "--abort", "--json", "--workspace", str(w2))
    doc = json.loads(out)
    assert code == 0 and doc["own_files"] == [".sgpatch-port/na-first"] and doc["edits"] == []
    assert doc["kept_in"] == str(tmp_path / "again/w.aborted-1")


def test_abort_with_an_edit_and_an_own_file_is_one_line(cache, tmp_path):
    """Input: a stopped port, mod.py edited and na-first written, `--abort --force`. Outcome:
    exit 0, one line naming w.aborted-1 with the edit and the file; both kept there; an
    abort with neither writes no aside folder."""
    _w, line = forced_abort(tmp_path, {".sgpatch-port/na-first": "why\n"})
    aside = tmp_path / "w.aborted-1"
    assert (
        f"kept your edits and files in {aside}: sglang/srt/mod.py, .sgpatch-port/na-first" in line
    )
    assert sorted(snapshot(aside)) == [".sgpatch-port/na-first", "sglang/srt/mod.py"]
    _d2, w2, _code, _ = start_conflict(tmp_path / "plain")
    assert run_cli("port", "--abort", "--workspace", str(w2))[0] == 0
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == ["sets"]


def test_a_hand_fix_keeps_the_patch_s_symlink_and_execute_bits(cache, tmp_path):
    """Input: `first` (a symlink, an executable script, a mode change, two mod.py hunks)
    ported to 1.2, where mod.py stops; the person fixes mod.py and runs --continue.
    Outcome: exit 3, then 0; W held the link and the execute bits all along; the patch file
    --continue writes says each of them, and the set applied to a fresh 1.2 makes them."""
    d = modes_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3 and [p["file"] for p in by_id(doc)["first"]["problems"]] == ["srt/mod.py"]
    assert kinds_in(w / "sglang") == KINDS
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc
    text = next((d / "patches/1.2").glob("*first*.patch")).read_text()
    assert all(block in text for block in MODE_BLOCKS), text
    got = port_applied(tmp_path, d, "1.2", release_files(V12, "1.2"), ["srt/mod.py"])
    assert got["srt/mod.py"] == FIXED12.encode()
    assert kinds_in(tmp_path / "applied-1.2/sglang") == KINDS


def test_a_symlink_a_person_points_out_of_the_package_is_refused(cache, tmp_path):
    """Input: the same port stopped on 1.2; the person fixes mod.py but also points the
    patch's symlink srt/alias.py at a file outside W. Outcome: --continue refuses (exit 4,
    one line naming the link); the set is unchanged."""
    d = modes_set(tmp_path)
    w = tmp_path / "w"
    assert sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                  "--workspace", str(w))[0] == 3  # fmt: skip
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    (w / "sglang/srt/alias.py").unlink()
    (w / "sglang/srt/alias.py").symlink_to(tmp_path / "outside.py")
    before = snapshot(d)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 4 and "srt/alias.py" in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(d) == before
