"""sgpatch.fs.regular: a regular file opened without following links or blocking, read within
a bound."""

from __future__ import annotations

import os

import pytest

from sgpatch.fs import regular
from sgpatch.fs.regular import OddFile, TooBig


@pytest.mark.parametrize(
    "kind,what",
    [("fifo", "a FIFO"), ("symlink", "a symlink"), ("folder", "a folder")],
)
def test_anything_but_a_regular_file_is_odd_and_never_opened(tmp_path, kind, what):
    """Input: a FIFO nobody writes, a symlink to a readable file, a folder, each at the name.
    Outcome: `OddFile` saying what it is, at once (the FIFO is never waited on, the link never
    followed)."""
    path = tmp_path / "x"
    (tmp_path / "target").write_bytes(b"secret")
    {"fifo": lambda: os.mkfifo(path), "symlink": lambda: path.symlink_to(tmp_path / "target"),
     "folder": path.mkdir}[kind]()  # fmt: skip
    with pytest.raises(OddFile) as info:
        regular.read(path)
    assert info.value.kind == what and info.value.path == str(path)


def test_an_absent_file_or_folder_reads_as_none(tmp_path):
    """Input: a missing name, and a name under a file (not a folder). Outcome: None, both."""
    (tmp_path / "f").write_bytes(b"x")
    assert regular.read(tmp_path / "missing") is None
    assert regular.read(tmp_path / "f" / "under") is None


def test_a_file_larger_than_the_bound_is_refused_before_it_is_read(tmp_path):
    """Input: a 3 GB sparse file (no disk used) read with a 1 MiB bound. Outcome: `TooBig`
    from its size, at once; a 10-byte file within the bound reads whole."""
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(3 << 30)
    with pytest.raises(TooBig) as info:
        regular.read(big, limit=1 << 20)
    assert info.value.size == 3 << 30
    (tmp_path / "small").write_bytes(b"0123456789")
    assert regular.read(tmp_path / "small", limit=10) == b"0123456789"


def test_a_file_read_relative_to_a_folder_descriptor(tmp_path):
    """Input: a folder opened once, a file named in it. Outcome: its bytes; a link there is
    odd, as by path."""
    (tmp_path / "f").write_bytes(b"hello")
    (tmp_path / "l").symlink_to("f")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert regular.read("f", dir_fd=fd) == b"hello"
        with pytest.raises(OddFile):
            regular.read("l", dir_fd=fd)
    finally:
        os.close(fd)


def test_chunks_stream_no_more_than_asked(tmp_path):
    """Input: a 3 MiB file, 2.5 MiB of it asked for. Outcome: chunks of at most 1 MiB adding
    up to exactly 2.5 MiB."""
    path = tmp_path / "f"
    path.write_bytes(b"a" * (3 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = list(regular.chunks(fd, (5 << 20) // 2))
    finally:
        os.close(fd)
    assert sum(map(len, got)) == (5 << 20) // 2 and max(map(len, got)) <= regular.CHUNK
