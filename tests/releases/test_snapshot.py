"""Snapshots kept in the release cache (sgpatch.releases.snapshot): a tree packed once in wheel
form and read back through sgpatch.releases.cache like a release."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.version import Version

from helpers import offline_cache
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.releases import cache
from sgpatch.releases.snapshot import keep, tree_files


def tree(where: Path) -> Path:
    root = where / "sglang"
    (root / "srt/odd, name").mkdir(parents=True)
    (root / "_version.py").write_text("__version__ = version = '0.5.24.dev12+g1a2b3c4'\n")
    (root / "srt/mod.py").write_text("x = 1\n")
    (root / "srt/odd, name/a.py").write_text("y = 2\n")  # a comma: RECORD is CSV
    (root / "bin.sh").write_text("#!/bin/sh\n")
    (root / "bin.sh").chmod(0o755)
    (root / "srt/__pycache__").mkdir()
    (root / "srt/__pycache__/mod.cpython-311.pyc").write_bytes(b"\0")
    (root / ".sgpatch").mkdir()
    (root / ".sgpatch/ledger.json").write_text("{}")
    (root / "link.py").symlink_to(root / "srt/mod.py")
    return root


def test_a_kept_snapshot_reads_like_a_release(tmp_path, monkeypatch):
    """Input: a tree (a file name with a comma, an executable, bytecode, sgpatch's state, a
    symlink) kept as 0.5.24.dev12+g1a2b3c4. Outcome: an archive named for the public version;
    the cache's record/read_member/extract read it (verified against its RECORD) with the
    package's regular files only, the executable bit kept; it is never listed as a release."""
    c = offline_cache(tmp_path, monkeypatch)
    root = tree(tmp_path / "t")
    path = keep(c, root, Version("0.5.24.dev12+g1a2b3c4"))
    assert path == c / "snapshots/sglang-0.5.24.dev12-py3-none-any.whl"
    names = {n for n in cache.record("0.5.24.dev12+g1a2b3c4") if n.startswith("sglang/")}
    assert names == {"sglang/_version.py", "sglang/srt/mod.py", "sglang/srt/odd, name/a.py",
                     "sglang/bin.sh"}  # fmt: skip
    assert cache.read_member("0.5.24.dev12", "srt/odd, name/a.py") == b"y = 2\n"
    out = cache.extract("0.5.24.dev12", tmp_path / "x", "site-packages")
    assert os.access(out / "bin.sh", os.X_OK)
    meta = (out.parent / "sglang-0.5.24.dev12.dist-info/METADATA").read_text()
    assert "Version: 0.5.24.dev12+g1a2b3c4\n" in meta
    assert cache.cached_versions() == []
    assert set(tree_files(root)) == {n.removeprefix("sglang/") for n in names}


def test_keeping_the_same_tree_again_is_a_no_op_and_another_is_refused(tmp_path, monkeypatch):
    """Input: the same tree kept twice, then a tree with one file changed under the same
    public version (another local label). Outcome: the second keep returns the same archive,
    bytes unchanged; the third is bad input naming the archive, which stays as it was."""
    c = offline_cache(tmp_path, monkeypatch)
    root = tree(tmp_path / "t")
    path = keep(c, root, Version("0.5.24.dev12+g1a2b3c4"))
    data = path.read_bytes()
    assert keep(c, root, Version("0.5.24.dev12+g1a2b3c4")) == path
    assert path.read_bytes() == data
    (root / "srt/mod.py").write_text("x = 2\n")
    with pytest.raises(SgpatchError) as err:
        keep(c, root, Version("0.5.24.dev12+g9999999"))
    assert err.value.code == ExitCode.BAD_INPUT
    assert f"already keeps another snapshot 0.5.24.dev12 ({path})" in err.value.message
    assert path.read_bytes() == data


def test_a_release_is_not_kept_as_a_snapshot(tmp_path, monkeypatch):
    """Input: a tree labelled 0.5.23+cu130 (a build of a release). Outcome: bad input naming
    `--to 0.5.23`; nothing written to the cache."""
    c = offline_cache(tmp_path, monkeypatch)
    root = tree(tmp_path / "t")
    with pytest.raises(SgpatchError) as err:
        keep(c, root, Version("0.5.23+cu130"))
    assert "`--to 0.5.23`" in err.value.message
    assert not (c / "snapshots").exists()
