"""treefs: the read side of a tree (path guards, reads); the guards' refusals are exercised
through the commands in test_safety.py and test_txn.py."""

from __future__ import annotations

import os

import pytest

from sgpatch.tree.files import read_regular, within


@pytest.mark.parametrize(
    ("real", "root", "inside"),
    [
        ("/t/sglang", "/t/sglang", True),
        ("/t/sglang/srt/a.py", "/t/sglang", True),
        ("/t/sglang-evil/a.py", "/t/sglang", False),  # a prefix of the name is not inside
        ("/t", "/t/sglang", False),
        ("/etc/passwd", "/", True),  # the root of the filesystem holds everything
    ],
)
def test_within_is_a_path_prefix_not_a_string_prefix(real, root, inside):
    """Input: two realpaths. Outcome: inside only when `real` is the root or below it by
    whole components (`/t/sglang-evil` is not under `/t/sglang`)."""
    assert within(real, root) is inside


def test_read_regular_reads_only_small_regular_files(tmp_path) -> None:
    """Input: a 10-byte file, the same read with a 9-byte limit, a FIFO nobody writes, a
    symlink to /dev/zero, a folder, a missing path, a path with a NUL. Outcome: the bytes for
    the first; None for every other, at once (the FIFO is not waited on)."""
    f = tmp_path / "f"
    f.write_bytes(b"0123456789")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    assert read_regular(f, 10) == b"0123456789"
    odd = [tmp_path / "fifo", tmp_path / "zero", tmp_path, tmp_path / "none", tmp_path / "a\0b"]
    assert read_regular(f, 9) is None
    assert [read_regular(p, 1 << 20) for p in odd] == [None] * 5


def test_read_regular_limit_is_inclusive(tmp_path) -> None:
    """Input: a 4,000-byte file read with a limit of 4,000 and of 3,999 bytes. Outcome: its
    bytes at the limit, None one byte under it."""
    f = tmp_path / "f"
    f.write_bytes(b"abcd" * 1000)
    assert read_regular(f, 4000) == b"abcd" * 1000
    assert read_regular(f, 3999) is None
