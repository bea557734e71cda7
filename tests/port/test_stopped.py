"""--continue taking a person's hand edits (port/stopped.py), on synthetic releases: after
`port --no-finish` (nothing stopped), an edit in a file one patch changes joins that patch; an
edit in a file no patch changes is refused naming it, and the set is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import PATCHED10, V11, apply_to, make_set, port_cache, port_diff, run_cli


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return port_cache(tmp_path, monkeypatch)


def sgport(*args: str) -> tuple[int, dict]:
    code, out, _err = run_cli("port", "--offline", "--json", *args)
    return code, json.loads(out)


def snapshot(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


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
