"""wheels.py: a verified wheel's members read straight from the file (Wheel._raw), with
zipfile as the reader of anything else. Each test says the wheel and the bytes expected."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from helpers import WHEEL_FILES, make_wheel
from sgpatch.errors import SgpatchError
from sgpatch.releases.wheels import Wheel


def test_deflated_and_stored_members_read_as_zipfile_reads_them(tmp_path: Path) -> None:
    """Input: a wheel with deflated members, and one with the same members stored. Outcome:
    every member reads to zipfile's bytes, through the direct reader (not zipfile's)."""
    deflated = make_wheel(tmp_path / "a")
    stored = tmp_path / "b" / deflated.name
    stored.parent.mkdir()
    with zipfile.ZipFile(deflated) as src, zipfile.ZipFile(stored, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info), zipfile.ZIP_STORED)
    for path in (deflated, stored):
        wheel = Wheel.of(path)
        with zipfile.ZipFile(path) as zf:
            for name in WHEEL_FILES:
                assert wheel._raw(wheel.infos[name]) == zf.read(name)
                assert wheel.read(name) == WHEEL_FILES[name]


def test_a_member_whose_header_is_not_where_the_directory_says_goes_to_zipfile(
    tmp_path: Path,
) -> None:
    """Input: a wheel whose first member's local header is overwritten after it was opened.
    Outcome: the direct reader declines it (None) and zipfile's read reports the wheel's
    member as corrupt, one line (no traceback, no wrong bytes)."""
    path = make_wheel(tmp_path)
    wheel = Wheel.of(path)
    name = next(iter(WHEEL_FILES))
    at = wheel.infos[name].header_offset
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"JUNK")
    assert wheel._raw(wheel.infos[name]) is None
    with pytest.raises(SgpatchError, match="corrupt"):
        wheel.read(name)
