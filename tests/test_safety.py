"""Never outside the tree: absolute paths, `..`, symlinks leaving the target, writing through a
symlinked file, FIFOs and sockets, both through `sgpatch patch` and through a malicious patch
set. Each is refused with exit 4 naming the path, before anything is written (the tree and the
folder outside it are byte-identical afterwards)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from helpers import SET, lines, make_diff, make_env, manifest, numbered, one_line_error
from helpers import run_cli as cli
from helpers import tree_snapshot as snapshot
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.state import lock as state_lock
from sgpatch.state import txn

F = lines(*numbered("line", 10))
F2 = F.replace("line4\n", "LINE4\n")


@pytest.fixture
def world(tmp_path):
    """A tree to patch (`tree/`), a folder beside it that must never change (`outside/`)."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "f.py").write_text(F)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.py").write_text(F)
    (outside / "victim.txt").write_text("do not touch\n")
    return tree, outside


def run_patch(tree: Path, outside: Path, diff: str, *extra: str) -> str:
    """`sgpatch patch` the diff into tree; assert exit 4, a one-line error, nothing written."""
    patch = tree.parent / "evil.patch"
    patch.write_text(diff)
    before, out_before = snapshot(tree), snapshot(outside)
    code, _out, err = cli("patch", "-d", str(tree), str(patch), *extra)
    assert code == 4, err
    one_line_error(err)
    assert snapshot(tree) == before
    assert snapshot(outside) == out_before
    return err


def test_absolute_path_in_a_diff(world):
    tree, outside = world
    diff = make_diff(F, F2, "x").replace("--- a/x", f"--- {outside}/f.py")
    diff = diff.replace("+++ b/x", f"+++ {outside}/f.py")
    err = run_patch(tree, outside, diff, "-p0")
    assert "absolute path" in err and str(outside / "f.py") in err


def test_dotdot_in_a_diff(world):
    tree, outside = world
    err = run_patch(tree, outside, make_diff(F, F2, "../outside/f.py"), "-p1")
    assert "'..'" in err and "../outside/f.py" in err


def test_symlinked_folder_leaving_the_tree(world):
    tree, outside = world
    (tree / "escape").symlink_to(outside, target_is_directory=True)
    err = run_patch(tree, outside, make_diff(F, F2, "escape/f.py"))
    assert "escape" in err and "leaves the tree" in err


def test_new_file_through_a_symlinked_folder_leaving_the_tree(world):
    tree, outside = world
    (tree / "escape").symlink_to(outside, target_is_directory=True)
    diff = "--- /dev/null\n+++ b/escape/new.py\n@@ -0,0 +1 @@\n+x\n"
    err = run_patch(tree, outside, diff)
    assert "escape/new.py" in err
    assert not (outside / "new.py").exists()


def test_symlink_chain_that_ends_outside(world):
    """tree/a -> tree/b (inside) -> outside: still refused."""
    tree, outside = world
    (tree / "b").symlink_to(outside, target_is_directory=True)
    (tree / "a").symlink_to(tree / "b", target_is_directory=True)
    err = run_patch(tree, outside, make_diff(F, F2, "a/f.py"))
    assert "a/f.py" in err


def test_writing_through_a_symlinked_file_inside_the_tree(world):
    """pkg/link.py -> pkg/f.py: os.replace would swap the link for a file and leave f.py
    unpatched (or, outside, patch someone else's file); refuse instead."""
    tree, outside = world
    (tree / "pkg" / "link.py").symlink_to("f.py")
    err = run_patch(tree, outside, make_diff(F, F2, "pkg/link.py"))
    assert "through symlink" in err and "pkg/link.py" in err


def test_writing_through_a_symlinked_file_to_outside(world):
    tree, outside = world
    (tree / "pkg" / "link.py").symlink_to(outside / "f.py")
    err = run_patch(tree, outside, make_diff(F, F2, "pkg/link.py"))
    assert "pkg/link.py" in err


def test_fifo_target_is_refused_without_blocking(world):
    tree, outside = world
    os.mkfifo(tree / "pkg" / "pipe.py")
    err = run_patch(tree, outside, make_diff(F, F2, "pkg/pipe.py"))
    assert "not a regular file" in err and "pkg/pipe.py" in err


def test_socket_target_is_refused(world):
    tree, outside = world
    path = tree / "pkg" / "s.py"
    if len(str(path)) > 100:
        pytest.skip("AF_UNIX path too long here")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        err = run_patch(tree, outside, make_diff(F, F2, "pkg/s.py"))
        assert "not a regular file" in err
    finally:
        sock.close()


def test_refusal_is_before_any_write_even_when_the_bad_file_comes_last(world):
    """Input: a patch whose first file is fine and whose second escapes. Outcome: exit 4 and the
    first file is not patched either."""
    tree, outside = world
    (tree / "escape").symlink_to(outside, target_is_directory=True)
    diff = make_diff(F, F2, "pkg/f.py") + make_diff(F, F2, "escape/f.py")
    run_patch(tree, outside, diff)
    assert (tree / "pkg" / "f.py").read_text() == F


def test_symlinked_folder_inside_the_tree_is_fine(world):
    tree, _ = world
    (tree / "alias").symlink_to(tree / "pkg", target_is_directory=True)
    patch = tree.parent / "ok.patch"
    patch.write_text(make_diff(F, F2, "alias/f.py"))
    code, _, err = cli("patch", "-d", str(tree), str(patch))
    assert code == 0, err
    assert (tree / "pkg" / "f.py").read_text() == F2


@pytest.mark.parametrize(
    "rel",
    ["", ".", "/etc/passwd", "a/../../x", "..", "x\x00y", "a/" + "n" * 5000],
)
def test_safe_path_refuses(tmp_path, rel):
    with pytest.raises(SgpatchError) as exc:
        txn.safe_path(tmp_path, rel)
    assert exc.value.code == ExitCode.UNSAFE


# ------------------------------------------------------------------------ malicious patch set


def _set_run(tmp_path, mutate) -> tuple[str, Path, Path]:
    """Build the synthetic set, let `mutate(pkg, set_dir, outside)` make it malicious, run
    apply; assert exit 4, one line, and that nothing changed inside or outside the tree."""
    pkg, sets, args = make_env(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.py").write_text(F)
    mutate(pkg, sets / SET, outside)
    before, out_before = snapshot(pkg), snapshot(outside)
    code, _, err = cli("apply", *args)
    assert code == 4, err
    one_line_error(err)
    assert snapshot(pkg) == before and snapshot(outside) == out_before
    assert not (pkg / ".sgpatch" / "ledger.json").exists()
    return err, pkg, outside


def test_manifest_variant_path_with_dotdot(tmp_path):
    def mutate(pkg, set_dir, outside):
        (outside / "evil.patch").write_text(make_diff(F, F2, "python/sglang/srt/a.py"))
        text = manifest().replace("patches/0002-pb.patch", "../../outside/evil.patch")
        (set_dir / "patchset.yaml").write_text(text)

    err, _, _ = _set_run(tmp_path, mutate)
    assert "../../outside/evil.patch" in err and "'..'" in err


def test_manifest_variant_absolute_path(tmp_path):
    def mutate(pkg, set_dir, outside):
        (outside / "evil.patch").write_text(make_diff(F, F2, "python/sglang/srt/a.py"))
        text = manifest().replace("patches/0002-pb.patch", str(outside / "evil.patch"))
        (set_dir / "patchset.yaml").write_text(text)

    err, _, _ = _set_run(tmp_path, mutate)
    assert str(tmp_path / "outside" / "evil.patch") in err


def test_probe_path_leaving_the_tree(tmp_path):
    def mutate(pkg, set_dir, outside):
        text = manifest().replace(
            "  - id: pb\n", "  - id: pb\n    probe: {file: ../../outside/victim.py, regex: x}\n"
        )
        (set_dir / "patchset.yaml").write_text(text)

    err, _, _ = _set_run(tmp_path, mutate)
    assert "../../outside/victim.py" in err


@pytest.mark.parametrize(
    "evil_path",
    [
        "python/sglang/../../../outside/victim.py",
        "python/sglang/srt/../../../../outside/victim.py",
    ],
)
def test_set_patch_whose_diff_path_escapes(tmp_path, evil_path):
    """The third patch's diff climbs out of the package; the first two must not be written."""

    def mutate(pkg, set_dir, outside):
        (set_dir / "patches" / "0003-pc.patch").write_text(make_diff(F, F2, evil_path))

    err, pkg, _ = _set_run(tmp_path, mutate)
    assert "'..'" in err
    assert "ALPHA5" not in (pkg / "srt/a.py").read_text()


def test_set_patch_with_absolute_diff_path(tmp_path):
    def mutate(pkg, set_dir, outside):
        diff = make_diff(F, F2, "x").replace("--- a/x", f"--- {outside}/victim.py")
        diff = diff.replace("+++ b/x", f"+++ {outside}/victim.py")
        (set_dir / "patches" / "0003-pc.patch").write_text(diff)

    err, _, _ = _set_run(tmp_path, mutate)
    assert "absolute path" in err


def test_set_target_folder_symlinked_outside(tmp_path):
    """srt/models is a symlink to a folder outside the tree that holds a c.py the patch fits."""

    def mutate(pkg, set_dir, outside):
        models = pkg / "srt" / "models"
        (outside / "c.py").write_bytes((models / "c.py").read_bytes())
        (models / "c.py").unlink()
        models.rmdir()
        models.symlink_to(outside, target_is_directory=True)

    err, _, _outside = _set_run(tmp_path, mutate)
    assert "srt/models" in err and "leaves the tree" in err


def test_set_target_file_is_a_symlink(tmp_path):
    def mutate(pkg, set_dir, outside):
        b = pkg / "srt" / "layers" / "b.py"
        (outside / "b.py").write_bytes(b.read_bytes())
        b.unlink()
        b.symlink_to(outside / "b.py")

    err, _, _ = _set_run(tmp_path, mutate)
    assert "srt/layers/b.py" in err


def test_set_new_file_into_a_fifo(tmp_path):
    def mutate(pkg, set_dir, outside):
        (pkg / "srt" / "extra").mkdir()
        os.mkfifo(pkg / "srt" / "extra" / "d.py")

    err, _, _ = _set_run(tmp_path, mutate)
    assert "srt/extra/d.py" in err and "not a regular file" in err


def test_state_folder_symlinked_outside_is_refused(tmp_path):
    """.sgpatch itself a symlink out of the tree: the ledger/journal must not be written there."""

    def mutate(pkg, set_dir, outside):
        (outside / "state").mkdir()
        (pkg / ".sgpatch").symlink_to(outside / "state", target_is_directory=True)

    err, _, outside = _set_run(tmp_path, mutate)
    assert ".sgpatch" in err
    assert not list((outside / "state").iterdir())


def test_patch_command_does_not_recover_under_a_running_writer(tmp_path, monkeypatch):
    """Input: another run holds the lock and is mid-commit (its journal exists, one file already
    written). Outcome wanted: `sgpatch patch` waits for the lock and gives up (exit 4) without
    touching the other run's files."""
    root = tmp_path
    (root / "f.py").write_text(F2)  # the running writer already replaced f.py
    state = root / ".sgpatch"
    txn.write_journal(state, [txn.FileChange("f.py", F.encode(), F2.encode())], {})
    patch = tmp_path / "other.patch"
    patch.write_text(make_diff("x\n", "y\n", "g.py"))
    (root / "g.py").write_text("x\n")
    monkeypatch.setenv(state_lock.LOCK_TIMEOUT_ENV, "0.2")
    with state_lock.locked(state):
        code, _, err = cli("patch", "-d", str(root), str(patch))
        assert (root / "f.py").read_text() == F2, "rolled back under the running writer"
    assert code == 4, err


def test_a_ledger_behind_a_symlinked_state_folder_is_not_read(tmp_path):
    """Input: .sgpatch is a symlink to a folder outside holding a ledger.json that claims the
    set is applied. Outcome: status refuses in one line (exit 4) instead of trusting it."""
    from helpers import make_env

    pkg, _, args = make_env(tmp_path / "env")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ledger.json").write_text('{"schema": 2, "sets": {}}\n')
    (pkg / ".sgpatch").symlink_to(outside, target_is_directory=True)
    code, _, err = cli("status", *args)
    assert code == 4
    assert "symlink" in err and err.count("\n") == 1
