"""sgpatch.fs.atomic: a temp file nobody can plant, then one rename, relative to a folder."""

from __future__ import annotations

import os
import stat

import pytest

from sgpatch.fs import atomic


@pytest.fixture
def folder(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_a_symlink_at_the_name_is_replaced_never_written_through(tmp_path, folder):
    """Input: `x` a symlink to a file outside; write `x`. Outcome: `x` is a regular file with
    the new bytes; the file the link pointed at is untouched; no temp file is left."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    (tmp_path / "x").symlink_to(outside)
    atomic.write(folder, "x", b"new", 0o644)
    assert not (tmp_path / "x").is_symlink() and (tmp_path / "x").read_bytes() == b"new"
    assert outside.read_bytes() == b"keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "x"]


@pytest.mark.parametrize("umask", [0o000, 0o077])
def test_the_mode_is_exactly_the_one_asked_whatever_the_umask(tmp_path, folder, umask):
    """Input: umask 000 and 077, a file written with 0644. Outcome: mode 0644 both times."""
    old = os.umask(umask)
    try:
        atomic.write(folder, "f", b"x", 0o644)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o644


def test_setid_bits_are_kept_only_with_the_owner(tmp_path, folder):
    """Input: a 06755 mode with its set-id bits allowed, once with the owner the file has (kept)
    and once with none given. Outcome: 06755 the first time, 0755 the second."""
    me = (os.getuid(), os.getgid())
    assert atomic.write(folder, "kept", b"x", 0o6755, owner=me, setid=0o6000)
    assert stat.S_IMODE(os.stat(tmp_path / "kept").st_mode) == 0o6755
    assert not atomic.write(folder, "lost", b"x", 0o6755, setid=0o6000)
    assert stat.S_IMODE(os.stat(tmp_path / "lost").st_mode) == 0o755


def test_a_name_of_250_bytes_gets_a_temp_name_that_fits(tmp_path, folder):
    """Input: a file name of 250 bytes (NAME_MAX is 255). Outcome: it is written; every temp
    name is at most 255 bytes and is recognised as a temp of that name."""
    name = "n" * 250
    atomic.write(folder, name, b"x", 0o644)
    assert (tmp_path / name).read_bytes() == b"x"
    tmp = atomic.temp_name(name)
    assert len(os.fsencode(tmp)) <= atomic.NAME_MAX and atomic.is_temp(tmp, name)
    assert not atomic.is_temp(atomic.temp_name("other"), name)


def test_a_failed_write_leaves_no_temp_and_the_old_file(tmp_path, folder, monkeypatch):
    """Input: the rename fails (ENOSPC). Outcome: the error propagates, the old bytes stay, no
    temp file is left."""
    (tmp_path / "f").write_bytes(b"old")

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        atomic.write(folder, "f", b"new", 0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["f"]
    assert (tmp_path / "f").read_bytes() == b"old"


def test_streamed_chunks_are_written_whole(tmp_path, folder):
    """Input: the data as three chunks. Outcome: the file holds them in order."""
    atomic.write(folder, "f", iter([b"ab", b"", b"cd"]), 0o600)
    assert (tmp_path / "f").read_bytes() == b"abcd"


def test_create_never_opens_an_existing_file_or_a_link(tmp_path, folder):
    """Input: `create` over an existing file, and over a dangling symlink. Outcome:
    FileExistsError both times; the link's target is never made."""
    (tmp_path / "f").write_bytes(b"old")
    (tmp_path / "l").symlink_to(tmp_path / "made")
    for name in ("f", "l"):
        with pytest.raises(FileExistsError):
            atomic.create(folder, name, b"new")
    assert not (tmp_path / "made").exists() and (tmp_path / "f").read_bytes() == b"old"


def test_writing_a_path_removes_its_temp_when_the_block_raises(tmp_path):
    """Input: `writing(path)` whose block raises after writing some bytes. Outcome: nothing
    at the name, no temp left; a block that ends renames the file into place."""
    with pytest.raises(RuntimeError), atomic.writing(tmp_path / "z") as f:
        f.write(b"half")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []
    with atomic.writing(tmp_path / "z", 0o600) as f:
        f.write(b"whole")
    assert (tmp_path / "z").read_bytes() == b"whole"
    assert stat.S_IMODE(os.stat(tmp_path / "z").st_mode) == 0o600


def test_symlink_replaces_the_name_with_a_link(tmp_path, folder):
    """Input: a file `x`, replaced by a link to `t`. Outcome: `x` is that link."""
    (tmp_path / "x").write_bytes(b"file")
    atomic.symlink(folder, "x", "t")
    assert os.readlink(tmp_path / "x") == "t"
