"""sgpatch.fs.dirs: folders opened component by component, never through a symlink."""

from __future__ import annotations

import os
import stat

import pytest

from sgpatch.fs import dirs
from sgpatch.fs.regular import OddFile


@pytest.fixture
def top(tmp_path):
    fd = dirs.open_top(tmp_path)
    yield fd
    os.close(fd)


def test_a_symlinked_folder_on_the_way_is_odd(tmp_path, top):
    """Input: `a` a symlink to a folder outside, then `a/b` opened with create. Outcome:
    `OddFile` naming `a` as a symlink; nothing is made in the folder outside."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "a").symlink_to(outside)
    with pytest.raises(OddFile) as info:
        dirs.open_dir(top, ["a", "b"], create=True)
    assert info.value.kind == "a symlink" and info.value.path == "a"
    assert list(outside.iterdir()) == []


def test_folders_are_made_with_exactly_their_mode_under_umask_0(tmp_path, top):
    """Input: umask 000, `x/y` made with mode 0755. Outcome: both folders are 0755, not 0777."""
    old = os.umask(0)
    try:
        os.close(dirs.open_dir(top, ["x", "y"], create=True, mode=0o755))
    finally:
        os.umask(old)
    for rel in ("x", "x/y"):
        assert stat.S_IMODE(os.stat(tmp_path / rel).st_mode) == 0o755


@pytest.mark.parametrize("rel", ["", "/abs", "a/../b", "a\x00b", "./."])
def test_paths_that_could_leave_the_top_are_refused(rel):
    """Input: empty, absolute, `..`, NUL, nothing but dots. Outcome: BadPath."""
    with pytest.raises(dirs.BadPath):
        dirs.parts(rel)


def test_remove_tree_removes_links_and_never_what_they_point_at(tmp_path, top):
    """Input: `t/` holding a read-only folder, a file and a symlink to a folder outside.
    Outcome: `t` is gone; the folder outside and its file remain."""
    outside = tmp_path.parent / f"{tmp_path.name}-keep"
    outside.mkdir()
    (outside / "precious").write_bytes(b"x")
    (tmp_path / "t" / "ro").mkdir(parents=True)
    (tmp_path / "t" / "ro" / "f").write_bytes(b"y")
    (tmp_path / "t" / "ro").chmod(0o555)
    (tmp_path / "t" / "link").symlink_to(outside)
    dirs.remove_tree(top, "t")
    assert not (tmp_path / "t").exists()
    assert (outside / "precious").read_bytes() == b"x"
