"""wheels.py: a verified wheel's members are read with zipfile and checked against RECORD.
Each test says the wheel and the bytes expected."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from helpers import WHEEL_FILES, make_wheel
from sgpatch.errors import SgpatchError
from sgpatch.releases.wheels import Wheel


def test_deflated_and_stored_members_read_as_recorded(tmp_path: Path) -> None:
    """Input: a wheel with deflated members, and one with the same members stored. Outcome:
    every member reads to the bytes RECORD holds, either way."""
    deflated = make_wheel(tmp_path / "a")
    stored = tmp_path / "b" / deflated.name
    stored.parent.mkdir()
    with zipfile.ZipFile(deflated) as src, zipfile.ZipFile(stored, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), zipfile.ZIP_STORED)
    for path in (deflated, stored):
        wheel = Wheel.of(path)
        for name in WHEEL_FILES:
            assert wheel.read(name) == WHEEL_FILES[name]


def test_a_member_whose_header_is_damaged_is_one_line(tmp_path: Path) -> None:
    """Input: a wheel whose first member's local header is overwritten after it was opened.
    Outcome: the read reports the wheel's member as corrupt, one line (no traceback, no wrong
    bytes)."""
    path = make_wheel(tmp_path)
    wheel = Wheel.of(path)
    name = next(iter(WHEEL_FILES))
    at = wheel.infos[name].header_offset
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"JUNK")
    with pytest.raises(SgpatchError, match="corrupt"):
        wheel.read(name)


def test_loaded_reads_the_same_bytes_from_memory_and_lets_go_after(tmp_path: Path) -> None:
    """Input: a wheel read inside `Wheel.loaded()` (a whole-tree lay) and after it. Outcome:
    the same bytes as RECORD inside, and afterwards the reads come from the file again (the
    in-memory copy is closed, not kept)."""
    wheel = Wheel.of(make_wheel(tmp_path))
    disk = wheel.zip
    with wheel.loaded():
        assert wheel.zip is not disk
        for name in WHEEL_FILES:
            assert wheel.read(name) == WHEEL_FILES[name]
    assert wheel.zip is disk
    assert [wheel.read(n) for n in WHEEL_FILES] == list(WHEEL_FILES.values())


def test_a_wheel_rewritten_after_it_was_opened_is_not_loaded(tmp_path: Path) -> None:
    """Input: the wheel file rewritten (other size and mtime) after this process opened it,
    then `loaded()`. Outcome: one line saying it changed while sgpatch ran; nothing is read
    from the new bytes and the Wheel still reads its own file's members."""
    import os

    path = make_wheel(tmp_path)
    wheel = Wheel.of(path)
    data = path.read_bytes()
    path.write_bytes(data + b"\0" * 16)
    os.utime(path, ns=(1, 1))
    with pytest.raises(SgpatchError, match="changed while sgpatch ran") as exc, wheel.loaded():
        pass
    assert "\n" not in exc.value.message
    assert wheel.zip.filename == str(path)


def test_a_wheel_removed_or_unreadable_after_it_was_opened_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input: the wheel file made unreadable after this process opened it (EACCES: chmod 000
    as a non-root user, stood in by an `open` that says so, as root reads anything), then
    removed; `loaded()` each time. Outcome: one line each, `cannot read: Permission denied`
    and `was removed while sgpatch ran`: neither is reported as "changed"."""
    import builtins

    path = make_wheel(tmp_path)
    wheel = Wheel.of(path)
    real_open = builtins.open

    def no_permission(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", no_permission)
        with pytest.raises(SgpatchError) as exc, wheel.loaded():
            pass
    assert exc.value.message == f"release cache: {path}: cannot read: Permission denied"
    path.unlink()
    with pytest.raises(SgpatchError) as exc, wheel.loaded():
        pass
    assert exc.value.message == f"release cache: {path} was removed while sgpatch ran; run it again"
