"""treesource: an edited tree as one import input: every kind of file that differs from the
release is carried or named as left out, never passed over (a synthetic release in an
offline cache; no SGLang needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.version import Version

from helpers import V10, fake_index, make_wheel, release_files
from sgpatch.errors import SgpatchError
from sgpatch.ops import importer
from sgpatch.ops.treesource import tree_source
from sgpatch.releases import cache as releases

V = Version("1.0")


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """A writable tree of release 1.0 (srt/mod.py, srt/other.py, an executable srt/run.sh).
    Other tests make other releases named 1.0: the per-version memos start empty."""
    importer.pristine.cache_clear()
    importer.executables.cache_clear()
    monkeypatch.setenv("SGPATCH_CACHE", str(tmp_path / "cache"))
    fake_index(monkeypatch)
    files = release_files(V10, "1.0", {"sglang/srt/run.sh": b"#!/bin/sh\necho run\n"})
    make_wheel(tmp_path / "cache" / "wheels", "1.0", files)
    return releases.copy_tree("1.0", tmp_path / "t", "site-packages")


def test_every_kind_of_change_is_carried_with_its_mode(tree):
    """Input: the tree with new JSON tuning files under a new folder, a symlink to that folder
    and one to a file, srt/other.py made executable, srt/run.sh made plain, srt/mod.py
    deleted, and caches (__pycache__/, a .pyc, .sgpatch/). Outcome: one input; every changed
    path is kept (no cache among them); the step holds each one's bytes (a link's: its
    target) and git modes (120000, 100755 -> 100644, ...); nothing is left out."""
    cfg = tree / "srt/configs/triton_3_6_0"
    cfg.mkdir(parents=True)
    for n in (1, 2):
        (cfg / f"E=128,N=384,device_name=H{n}.json").write_text(f'{{"M": {n}}}\n')
    (tree / "srt/configs/latest").symlink_to("triton_3_6_0")
    (tree / "srt/alias.py").symlink_to("other.py")
    os.chmod(tree / "srt/other.py", 0o755)
    os.chmod(tree / "srt/run.sh", 0o644)
    (tree / "srt/mod.py").unlink()
    for junk in ("srt/__pycache__/x.cpython-311.pyc", "srt/old.pyc", ".sgpatch/ledger.json"):
        (tree / junk).parent.mkdir(exist_ok=True)
        (tree / junk).write_bytes(b"\0junk")
    got = tree_source(tree, V, "edited")
    json1, json2 = (f"srt/configs/triton_3_6_0/E=128,N=384,device_name=H{n}.json" for n in (1, 2))
    assert [s.rel for s in got.source.sections] == sorted(
        ["srt/alias.py", "srt/configs/latest", json1, json2, "srt/mod.py", "srt/other.py",
         "srt/run.sh"])  # fmt: skip
    assert got.source.left_out == ()
    step = got.step
    assert step.after["srt/configs/latest"] == b"triton_3_6_0"
    assert step.mode("srt/configs/latest") == (0o100644, 0o120000)
    assert step.mode("srt/other.py") == (0o100644, 0o100755)
    assert step.mode("srt/run.sh") == (0o100755, 0o100644)
    assert step.after["srt/mod.py"] is None and step.before["srt/mod.py"] == V10.encode()
    assert step.after[json1] == b'{"M": 1}\n' and step.before[json1] is None
    assert set(step.files) == {s.rel for s in got.source.sections}
    assert "srt/configs/latest" not in step.text_files


def test_what_a_set_cannot_carry_is_left_out_by_name(tree):
    """Input: the tree with a new binary file (a NUL byte), a symlink to /etc/passwd, one
    climbing out of the tree, a FIFO, and one good JSON file. Outcome: the JSON kept; each of
    the four left out as `uncarried`, with its reason; none in the step."""
    (tree / "srt/blob.bin").write_bytes(b"ab\0cd")
    (tree / "srt/abs").symlink_to("/etc/passwd")
    (tree / "srt/up").symlink_to("../../outside")
    os.mkfifo(tree / "srt/pipe")
    (tree / "srt/ok.json").write_text("{}\n")
    got = tree_source(tree, V, "edited")
    assert [s.rel for s in got.source.kept] == ["srt/ok.json"]
    whys = {s.shown: (s.kind, s.why) for s in got.source.left_out}
    assert whys["srt/blob.bin"] == ("uncarried", "binary: a patch set carries text diffs only")
    assert whys["srt/abs"][0] == "uncarried" and "absolute target" in whys["srt/abs"][1]
    assert "climbs out of the tree" in whys["srt/up"][1]
    assert whys["srt/pipe"] == ("uncarried", "a FIFO: a patch set carries files and symlinks only")
    assert set(got.step.files) == {"srt/ok.json"}


def test_exclude_leaves_a_tree_file_out_as_excluded(tree):
    """Input: two new JSON files, --exclude 'srt/b*.json'. Outcome: b.json left out as
    `excluded`, a.json kept."""
    (tree / "srt/a.json").write_text("{}\n")
    (tree / "srt/b.json").write_text("{}\n")
    got = tree_source(tree, V, "edited", exclude=("srt/b*.json",))
    assert [s.rel for s in got.source.kept] == ["srt/a.json"]
    assert [(s.shown, s.kind) for s in got.source.left_out] == [("srt/b.json", "excluded")]


def test_an_unchanged_tree_is_bad_input(tree):
    """Input: the pristine tree with only caches added. Outcome: exit 2, nothing differs."""
    (tree / "srt/__pycache__").mkdir()
    (tree / "srt/__pycache__/m.pyc").write_bytes(b"\0")
    with pytest.raises(SgpatchError) as e:
        tree_source(tree, V, "edited")
    assert e.value.code == 2 and "no file differs from sglang 1.0" in e.value.message
