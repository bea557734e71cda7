"""The fold at a port stop (port/folds.py, issue 42.2): where a hand fix or a merge leaves a
file defining a name twice, the stop suggests the fold (the code Python runs kept, in the
earlier copy's place) as a diff with the command that makes it; run as typed, --continue takes
the folded file and writes the set."""

from __future__ import annotations

from pathlib import Path

from helpers import (
    FIXED12,
    V12,
    by_id,
    hint_commands,
    make_diff,
    make_wheel,
    one_patch_set,
    port_applied,
    release_files,
    run_cli,
    sgport,
    start_conflict,
)
from sgpatch.placement.pydefs import defined_twice
from sgpatch.port.folds import suggest

# FIXED12 with a second `def f` at the end of class A (a hand fix that adds the patch's
# method again, different code): Python runs the later copy, `return 101`
LATER_F = "    def f(self):\n        return 101\n\n"
TWICE12 = FIXED12.replace("        return 2\n\n", "        return 2\n\n" + LATER_F, 1)
FOLDED12 = FIXED12.replace("        return 100\n", "        return 101\n")


def test_suggest_folds_only_what_the_file_adds_twice():
    """Input: a file defining A.f twice (different code), against the file it was carried
    onto (one f). Outcome: the fold puts the later copy's code in the earlier one's place,
    the diff says so; a file that defines nothing twice, or does not parse, has no fold."""
    got = suggest("srt/mod.py", TWICE12.encode(), V12.encode())
    assert got is not None and got.data == FOLDED12.encode()
    assert "-        return 100" in got.diff and "+        return 101" in got.diff
    assert got.folds == (
        "f in A: the definition Python runs (line 12) replaces the one at line 6, in its "
        "place; the dead copy removed",
    )
    assert suggest("srt/mod.py", FIXED12.encode(), V12.encode()) is None
    assert suggest("srt/mod.py", b"<<<<<<< x\n", V12.encode()) is None
    assert suggest("srt/mod.txt", TWICE12.encode(), V12.encode()) is None


def test_a_hand_fix_that_defines_a_name_twice_is_folded_as_the_stop_says(cache, tmp_path):
    """Input: the demo set stopped on 1.2 (markers in srt/mod.py); the person's fix defines
    A.f twice; `port --continue`. Outcome: exit 3, the screen names the file, the fold's
    diff and the command; that command, run as typed, folds W's file (exit 0); --continue
    then writes the set (exit 0), and the set applied to pristine 1.2 gives the folded file,
    which runs what the person's file ran."""
    d, w, code, _doc = start_conflict(tmp_path)
    assert code == 3
    (w / "sglang/srt/mod.py").write_text(TWICE12)
    code, out, err = run_cli("port", "--continue", "--workspace", str(w))
    screen = out + err
    assert code == 3, screen
    assert "sglang/srt/mod.py: defines the same name twice" in screen
    assert "-        return 100" in screen and "+        return 101" in screen
    folds = [c for c in hint_commands(screen) if "--fold" in c]
    assert folds == [["port", "--fold", "sglang/srt/mod.py", "--workspace", str(w)]]
    fix = (w / ".sgpatch-port/fix").read_text()
    assert "+        return 101" in fix and "--fold sglang/srt/mod.py" in fix
    code, out, err = run_cli(*folds[0])
    assert code == 0, err
    assert (w / "sglang/srt/mod.py").read_text() == FOLDED12
    assert "+        return 101" in out
    (cont,) = hint_commands(err)  # what to run next, as typed
    assert cont == ["port", "--continue", "--workspace", str(w)]
    code, _out, err = run_cli(*cont)
    assert code == 0, err
    got = port_applied(tmp_path, d, "1.2", release_files(V12, "1.2"), ["srt/mod.py"])
    assert got["srt/mod.py"] == FOLDED12.encode()


def test_a_merge_that_defines_a_name_twice_stops_with_the_fold_in_json(cache, tmp_path):
    """Input: a patch made on 1.2 adds `def h` at the end of class A; release 1.4 added its
    own `h` (other code) after `f`, so the three-way merge is clean but defines A.h twice.
    Outcome: port stops (exit 3) on that file with its `fold` in --json (what is folded, the
    diff); `port --fold` as the fix file says, then --continue, writes the set (exit 0); W's
    file defines h once, in upstream's place, with the patch's code (the later copy, the one
    Python runs in the merged file)."""
    h = "\n    def h(self):\n        return {!r}\n"
    ups = V12.replace("        return 1\n", "        return 1\n" + h.format("up"))
    make_wheel(cache / "wheels", "1.4", release_files(ups, "1.4"))
    mine = V12.replace("        return 2\n", "        return 2\n" + h.format("mine"))
    d = one_patch_set(tmp_path, make_diff(V12, mine, "python/sglang/srt/mod.py"), "adder", "1.2")
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.4",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    (problem,) = by_id(doc)["adder"]["problems"]
    assert problem["file"] == "srt/mod.py" and problem["fold"] is not None
    assert problem["fold"]["folds"] and any(ln.startswith("+") for ln in problem["fold"]["diff"])
    fix = (w / ".sgpatch-port/fix").read_text()
    (cmd,) = [c for c in hint_commands(fix) if "--fold" in c]
    assert run_cli(*cmd)[0] == 0
    text = (w / "sglang/srt/mod.py").read_text()
    assert defined_twice(text, None) == () and text.count("def h(self)") == 1
    assert "return 'mine'" in text and "return 'up'" not in text
    assert text.index("def h(self)") < text.index("def g(self)")  # upstream's place
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc


def test_fold_refuses_a_file_that_is_not_to_fix(cache, tmp_path):
    """Input: a stop on 1.2; `port --fold` of a file that is not stopped, and of the stopped
    file while it still has markers. Outcome: exit 2 each, naming the files to fix / saying
    there is nothing to fold; W's file unchanged."""
    _d, w, _code, _doc = start_conflict(tmp_path)
    before = (w / "sglang/srt/mod.py").read_bytes()
    code, _o, err = run_cli("port", "--fold", "sglang/srt/other.py", "--workspace", str(w))
    assert code == 2 and "the files to fix: sglang/srt/mod.py" in err
    code, _o, err = run_cli("port", "--fold", "srt/mod.py", "--workspace", str(Path(w)))
    assert code == 2 and "nothing to fold" in err
    assert (w / "sglang/srt/mod.py").read_bytes() == before
