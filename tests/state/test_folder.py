"""sgpatch.state.folder: state files read without following links or blocking; the state folder
under any spelling."""

from __future__ import annotations

import os

import pytest

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.state.folder import is_state_path, read_state, write_state


@pytest.mark.parametrize(
    "rel,inside",
    [
        (".sgpatch/ledger.json", True),
        ("./.sgpatch/x", True),
        (".SGPATCH/x", True),
        ("srt/.sgpatch/x", True),
        (".sgpatch", True),
        ("srt/a.py", False),
        (".sgpatchy/x", False),
        ("srt/sgpatch/x", False),
    ],
)
def test_is_state_path(rel, inside):
    assert is_state_path(rel) is inside


@pytest.mark.parametrize("kind", ["fifo", "symlink", "dir", "dangling"])
def test_read_state_refuses_what_is_not_a_regular_file(tmp_path, kind):
    """Input: a FIFO (no writer: opening it for reading would block), a symlink to a real
    file, a folder, a dangling symlink. Outcome: exit 4 naming the kind, at once."""
    p = tmp_path / "ledger.json"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "symlink":
        (tmp_path / "real").write_text("{}")
        p.symlink_to(tmp_path / "real")
    elif kind == "dir":
        p.mkdir()
    else:
        p.symlink_to(tmp_path / "nowhere")
    with pytest.raises(SgpatchError) as exc:
        read_state(p)
    assert exc.value.code == ExitCode.UNSAFE
    assert "refusing sgpatch state file" in exc.value.message


def test_read_state_of_a_missing_file_is_none(tmp_path):
    assert read_state(tmp_path / "absent") is None
    assert read_state(tmp_path / "no" / "such") is None


def test_write_state_replaces_a_planted_symlink_instead_of_writing_through(tmp_path):
    """Input: lock.owner is a symlink to a file outside. Outcome: the link is replaced by a
    regular file with the new bytes; the outside file is unchanged; no temp file is left."""
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    state = tmp_path / "state"
    state.mkdir()
    (state / "lock.owner").symlink_to(outside)
    write_state(state / "lock.owner", b"new\n")
    assert outside.read_text() == "keep\n"
    assert not (state / "lock.owner").is_symlink()
    assert (state / "lock.owner").read_bytes() == b"new\n"
    assert os.listdir(state) == ["lock.owner"]
