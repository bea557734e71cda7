"""sgpatch.state.recovery under hostile state (issue 46, items 1, 2, 3 and 9): a journal is
replayed only by a writer, only when every line and every original is as sgpatch writes
them, and nothing outside the tree is ever written or deleted. Each test builds the input,
runs the command, and checks one line, the exit code and byte-identical trees."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    A,
    fork_cli,
    full_snapshot,
    make_diff,
    make_env,
    one_line_error,
    run_cli,
    with_state,
)
from sgpatch.state.folder import JOURNAL, JOURNAL_ORIGINALS

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _killed(tmp_path: Path, step: int = 8) -> tuple[Path, tuple[str, ...]]:
    """The synthetic tree with an apply SIGKILLed at write step `step` (its journal left)."""
    pkg, _sets, args = make_env(tmp_path)
    assert fork_cli(["apply", *args], kill_at=step) == ("killed", 9)
    assert (pkg / ".sgpatch" / JOURNAL).exists()
    return pkg, args


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    for n in range(3):
        (victim / f"precious-{n}").write_bytes(b"not sgpatch's\n")
    return victim


@pytest.mark.parametrize("argv", ["recover", "apply", "patch"])
def test_a_symlink_at_the_journal_store_deletes_nothing_it_points_at(tmp_path, argv):
    """Input: `.sgpatch/journal-originals` a symlink to a folder outside the tree holding
    files; then `recover`, `apply` (something to write) or `patch`. Outcome: exit 4 in one
    line naming the store; the folder outside and the tree (state included) byte for byte as
    they were (every file in that folder was deleted, and recover said "nothing to do")."""
    pkg, _sets, args = make_env(tmp_path)
    (pkg / ".sgpatch").mkdir()
    victim = _victim(tmp_path)
    (pkg / ".sgpatch" / JOURNAL_ORIGINALS).symlink_to(victim)
    (tmp_path / "x.diff").write_text(make_diff(A, A.replace("alpha5\n", "X\n"), "srt/a.py"))
    cmd = {
        "recover": ["recover", "--sglang-dir", str(pkg)],
        "apply": ["apply", *args],
        "patch": ["patch", "-d", str(pkg), "-p1", "-i", str(tmp_path / "x.diff")],
    }[argv]
    before, outside = with_state(pkg), full_snapshot(victim)
    code, _out, err = run_cli(*cmd)
    assert code == 4, err
    assert JOURNAL_ORIGINALS in one_line_error(err) and "symlink" in err
    assert full_snapshot(victim) == outside
    assert with_state(pkg) == before


def test_a_symlink_at_the_store_of_a_real_journal_is_refused_before_the_rollback(tmp_path):
    """Input: an interrupted apply, its journal-originals moved out and a symlink to the
    moved folder left in its place; `recover`. Outcome: exit 4 in one line; the moved
    originals, the journal and the half-written tree all left as they were."""
    pkg, _args = _killed(tmp_path)
    store = pkg / ".sgpatch" / JOURNAL_ORIGINALS
    moved = tmp_path / "moved"
    store.rename(moved)
    store.symlink_to(moved)
    before, outside = with_state(pkg), full_snapshot(moved)
    code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
    assert code == 4 and "symlink" in one_line_error(err)
    assert full_snapshot(moved) == outside and with_state(pkg) == before


def test_a_journal_saved_with_crlf_is_damaged_and_touches_nothing(tmp_path):
    """Input: an interrupted apply whose journal was saved with CRLF line ends (an editor).
    Outcome: `recover` and the next `apply` exit 4 in one line ("unreadable journal"); no
    file named with a trailing CR is made, nothing is restored or deleted, the journal, its
    originals and `.sgpatch/` stay (it was replayed onto names ending in CR)."""
    pkg, args = _killed(tmp_path)
    journal = pkg / ".sgpatch" / JOURNAL
    journal.write_bytes(journal.read_bytes().replace(b"\n", b"\r\n"))
    before = with_state(pkg)
    for argv in (["recover", "--sglang-dir", str(pkg)], ["apply", *args]):
        code, _out, err = run_cli(*argv)
        assert code == 4 and "unreadable journal" in one_line_error(err), argv
        assert with_state(pkg) == before
    assert not [p for p in pkg.rglob("*") if p.name.endswith("\r")]


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace(" srt/", " ../outside/", 1),
        lambda t: t.replace(" srt/", " /tmp/", 1),
        lambda t: t.replace(" srt/", " .sgpatch/journal-originals/", 1),
        lambda t: t.replace("file 644 ", "file 644 0", 1),
        lambda t: t + t.splitlines(keepends=True)[2],
    ],
    ids=["dotdot", "absolute", "into-state", "size-leading-zero", "path-twice"],
)
def test_a_journal_line_sgpatch_does_not_write_is_damaged_state(tmp_path, edit):
    """Input: an interrupted apply's journal with one line edited: a path climbing out, an
    absolute one, one into `.sgpatch/` beyond the ledger, a size with a leading zero, a file
    journalled twice. Outcome: `recover` exits 4 in one line; the tree, state included, is
    byte for byte as it was."""
    pkg, _args = _killed(tmp_path)
    journal = pkg / ".sgpatch" / JOURNAL
    journal.write_text(edit(journal.read_text()))
    before = with_state(pkg)
    code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
    assert code == 4, err
    one_line_error(err)
    assert with_state(pkg) == before


def test_an_original_whose_size_is_not_the_journals_is_refused_before_anything(tmp_path):
    """Input: an interrupted apply; its second original replaced by other bytes of another
    size (the first is intact). Outcome: `recover` exits 4 naming that original and restores
    nothing, not even the intact first file."""
    pkg, _args = _killed(tmp_path)
    lines = (pkg / ".sgpatch" / JOURNAL).read_text().splitlines()
    digests = [ln.split(" ")[3] for ln in lines if ln.startswith("file ") and " - - - " not in ln]
    bad = pkg / ".sgpatch" / JOURNAL_ORIGINALS / digests[-1]
    bad.chmod(0o644)
    bad.write_bytes(b"short\n")
    before = with_state(pkg)
    code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
    assert code == 4 and digests[-1][:12] in one_line_error(err)
    assert with_state(pkg) == before


def _limited(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def test_a_3_gb_sparse_original_costs_no_memory(tmp_path):
    """Input: an interrupted apply; one original replaced by a 3 GB sparse file (no disk
    used). Outcome: `status` (a reader) and `recover`, each in a process limited to 1 GB of
    address space, exit 4 in one line: status names `recover` and reads no original; recover
    refuses the original from its size alone. The tree is byte for byte as it was."""
    pkg, _args = _killed(tmp_path)
    lines = (pkg / ".sgpatch" / JOURNAL).read_text().splitlines()
    digest = next(ln.split(" ")[3] for ln in lines if ln.startswith("file ") and " - - " not in ln)
    big = pkg / ".sgpatch" / JOURNAL_ORIGINALS / digest
    big.chmod(0o644)
    with open(big, "r+b") as f:
        f.truncate(3 << 30)
    before = with_state(pkg)  # the 3 GB file by size and mtime (helpers.SNAPSHOT_BYTES)
    env = {**os.environ, "PYTHONPATH": SRC}
    for argv in (["status", "--sglang-dir", str(pkg)], ["recover", "--sglang-dir", str(pkg)]):
        proc = subprocess.run(
            [sys.executable, "-m", "sgpatch", *argv],
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=_limited(1 << 30),
            timeout=60,
        )
        assert proc.returncode == 4, proc.stderr
        one_line_error(proc.stderr)
    assert "sgpatch recover" not in proc.stderr and f"{digest[:12]}" in proc.stderr
    assert big.stat().st_size == 3 << 30 and with_state(pkg) == before


@pytest.mark.parametrize("argv", ["status", "probe", "apply --dry-run", "revert --dry-run"])
def test_a_read_only_command_never_rolls_back(tmp_path, argv):
    """Input: an interrupted apply (journal left, no run holding the lock); `status`,
    `probe`, `apply --dry-run`, `revert --dry-run`. Outcome: exit 4 in one line naming
    `sgpatch recover --sglang-dir ROOT`, and the tree, state included, byte for byte as it
    was: recovery belongs to writers. The named command then rolls back (exit 0)."""
    pkg, args = _killed(tmp_path)
    before = with_state(pkg)
    command, *flags = argv.split()
    code, _out, err = run_cli(command, *args, *flags)
    assert code == 4, err
    hint = one_line_error(err).split("`")[1]
    assert hint == f"sgpatch recover --sglang-dir {pkg}"
    assert with_state(pkg) == before
    code, _out, err = run_cli(*hint.split()[1:])
    assert code == 0 and "rolled back" in err
