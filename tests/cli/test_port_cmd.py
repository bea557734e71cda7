"""cli/port: the lines `sgpatch port` prints, names from the workspace included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import FIXED12, forced_abort, make_set, port_cache, run_cli, sgport, start_conflict

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
    assert "stays (it holds what others put there: note\\x1b[2J\\x07\\nmore.txt)" in line
    assert not any(c in line for c in "\x1b\x07")
    assert (w / HOSTILE).read_text() == "mine\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return port_cache(tmp_path, monkeypatch)


def test_abort_force_says_w_stays_when_others_files_keep_it(cache, tmp_path):
    """Input: a stopped port, mod.py edited and an editor's backup `mod.py~` saved beside it,
    then `--abort --force`. Outcome: exit 0; W still exists (the backup is not sgpatch's to
    remove), and the one line says so: what sgpatch wrote was removed, W stays, holding
    sglang/srt/mod.py~ (issue 44, dead end 2: it said `removed W` while W was there)."""
    w, line = forced_abort(tmp_path, {"sglang/srt/mod.py~": "backup\n"})
    assert w.is_dir() and (w / "sglang/srt/mod.py~").is_file()
    assert (
        f"removed what sgpatch wrote in {w}; {w} stays (it holds what others put there: "
        "sglang/srt/mod.py~)" in line
    )
    assert "sglang/srt/mod.py~)" in line and f"removed {w};" not in line
    code, _out, _err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 2  # no workspace there any more: only the person's file


def test_abort_of_a_folder_the_person_made_says_it_stays_empty(cache, tmp_path):
    """Input: a port into an empty folder the person made, stopped, then `--abort`. Outcome:
    exit 0; the folder stays, empty, and the line says the person made it."""
    d = make_set(tmp_path)
    w = tmp_path / "mine"
    w.mkdir()
    code, _doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                        "--workspace", str(w))  # fmt: skip
    assert code == 3
    code, _out, err = run_cli("port", "--abort", "--workspace", str(w))
    assert code == 0 and w.is_dir() and not list(w.iterdir())
    assert f"removed what sgpatch wrote in {w}; {w} stays (you made it; it is empty now)" in err


def test_a_fixed_patch_counts_the_hunks_fixed_by_hand(cache, tmp_path):
    """Input: a port to 1.2 where one of `first`'s two hunks conflicts, the file fixed by
    hand, then --continue. Outcome: the stop's state line keeps `kept 1, merged 0, by hand 1`
    (needs-a-hand), the line after --continue says `first: fixed, 1 hunk(s) kept, 0 merged,
    1 fixed by hand`, and
    --json's hunks_by_hand is 1 (issue 44, dead end 3: it said `0 hunk(s) kept, 0 merged`)."""
    _d, w, code, _ = start_conflict(tmp_path)
    assert code == 3
    (row,) = (w / ".sgpatch-port/needs-a-hand").read_text().splitlines()
    assert row.split("\t")[6] == "kept 1, merged 0, by hand 1"
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    code, out, err = run_cli("port", "--continue", "--workspace", str(w), "--json")
    assert code == 0, err
    (first,) = [p for p in json.loads(out)["steps"][-1]["patches"] if p["id"] == "first"]
    assert (first["outcome"], first["hunks_kept"], first["hunks_by_hand"]) == ("fixed", 1, 1)
    _d, w2, code, _ = start_conflict(tmp_path / "again")
    (w2 / "sglang/srt/mod.py").write_text(FIXED12)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w2))
    assert code == 0 and "  first: fixed, 1 hunk(s) kept, 0 merged, 1 fixed by hand [" in err
