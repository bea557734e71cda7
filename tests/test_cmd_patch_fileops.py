"""`sgpatch patch` and the file operations a diff can mean (issue: peer suites): traditional
creation/deletion, git copies, renames (criss-cross too), modes, symlinks, plain diffs with two
names, and the GNU flags people type (-i, stdin, -N, -R, -E, --dry-run, the -p hint). Each test
says the input and the outcome."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, lines, sgpatch


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def git_diff(tmp_path: Path, setup, change, *flags: str) -> str:
    """A real `git diff` (with -M/-C as asked) of what `change` does to the tree `setup` made."""
    repo = tmp_path / "gen"
    repo.mkdir()
    git(repo, "init", "-q")
    setup(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    change(repo)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", *flags) + "\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    return root


def put(tmp_path: Path, text: str, name: str = "p.diff") -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


# --------------------------------------------------------------- traditional create / delete

EPOCHS = [
    "1970-01-01 00:00:00 +0000",
    "1969-12-31 18:00:00.000000000 -0600",
    "1970-01-01 01:00:00 +01:00",
]


@pytest.mark.parametrize("stamp", EPOCHS)
def test_diff_N_epoch_source_creates_the_file(tree, tmp_path, stamp):
    """`diff -Nu` writes the missing old side with the epoch in the maker's zone: creates f."""
    diff = f"--- f\t{stamp}\n+++ f\t2024-05-01 10:00:00 +0200\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    assert sgpatch("patch", "-p0", "-d", str(tree), put(tmp_path, diff)) == 0
    assert (tree / "f").read_text() == "one\ntwo\n"


@pytest.mark.parametrize("stamp", EPOCHS)
def test_diff_N_epoch_target_deletes_a_file_with_exactly_that_content(tree, tmp_path, stamp):
    """An epoch `+++` that empties the file deletes it when the content is what it removes."""
    (tree / "f").write_text("one\ntwo\n")
    diff = f"--- f\t2024-05-01 10:00:00 +0200\n+++ f\t{stamp}\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-d", str(tree), put(tmp_path, diff)) == 0
    assert not (tree / "f").exists()


def test_deletion_refused_when_content_differs_even_where_fuzz_would_forgive(
    tree, tmp_path, capsys
):
    """A deletion of a file edited since (here: whitespace) keeps it, exit 3, names the rule."""
    (tree / "f").write_text("one \ntwo\n")
    diff = "--- f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-F2", "-d", str(tree), put(tmp_path, diff)) == 3
    assert (tree / "f").read_text() == "one \ntwo\n"
    assert "content differs from the deletion" in capsys.readouterr().err


def test_deletion_refused_when_the_file_has_more_lines(tree, tmp_path, capsys):
    """A deletion of a file with an extra line at the end keeps it (exit 3)."""
    (tree / "f").write_text("one\ntwo\nthree\n")
    diff = "--- f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-d", str(tree), put(tmp_path, diff)) == 3
    assert (tree / "f").exists()
    assert "content differs from the deletion" in capsys.readouterr().err


def test_zero_zero_hunk_creates_a_missing_file_without_dev_null(tree, tmp_path):
    """`@@ -0,0 +1,N @@` under ordinary names creates the file (GNU patch does)."""
    diff = "--- a/new.py\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    assert sgpatch("patch", "-d", str(tree), put(tmp_path, diff)) == 0
    assert (tree / "new.py").read_text() == "x = 1\ny = 2\n"


def test_minus_E_removes_a_file_the_patch_empties(tree, tmp_path):
    """-E: a plain diff that removes every line deletes the file; without -E it stays empty."""
    (tree / "f").write_text("one\n")
    diff = put(tmp_path, "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-one\n")
    assert sgpatch("patch", "-d", str(tree), diff) == 0
    assert (tree / "f").read_bytes() == b""
    (tree / "f").write_text("one\n")
    assert sgpatch("patch", "-E", "-d", str(tree), diff) == 0
    assert not (tree / "f").exists()


# --------------------------------------------------------------- plain diffs with two names


def test_plain_diff_with_two_names_patches_the_existing_file_and_keeps_the_backup(tree, tmp_path):
    """`diff -u a.py.orig a.py` applied to a tree holding both: a.py is patched (GNU's choice:
    shorter name), a.py.orig is untouched, nothing is renamed or deleted."""
    (tree / "a.py").write_text("x = 1\n")
    (tree / "a.py.orig").write_text("x = 1\n")
    diff = "--- a.py.orig\n+++ a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert sgpatch("patch", "-p0", "-d", str(tree), put(tmp_path, diff)) == 0
    assert (tree / "a.py").read_text() == "x = 2\n"
    assert (tree / "a.py.orig").read_text() == "x = 1\n"


def test_plain_diff_with_two_names_patches_the_only_one_that_exists(tree, tmp_path):
    """Only the old name exists: it is patched in place, no new name appears."""
    (tree / "old.py").write_text("x = 1\n")
    diff = "--- old.py\n+++ new.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert sgpatch("patch", "-p0", "-d", str(tree), put(tmp_path, diff)) == 0
    assert (tree / "old.py").read_text() == "x = 2\n"
    assert not (tree / "new.py").exists()


# --------------------------------------------------------------- git copies and renames


def _two(repo: Path) -> None:
    (repo / "a.py").write_text(lines(*(f"a{i}" for i in range(20))))
    (repo / "b.py").write_text(lines(*(f"b{i}" for i in range(20))))


def _apply_git(tree: Path, tmp_path: Path, diff: str, *flags: str) -> int:
    _two(tree)
    return sgpatch("patch", *flags, "-d", str(tree), put(tmp_path, diff))


@pytest.mark.parametrize("edit", [False, True])
def test_git_copy_keeps_its_source(tree, tmp_path, edit):
    """`copy from/copy to`, with and without edits: the copy appears, the source stays."""

    def change(repo):
        text = (repo / "a.py").read_text()
        (repo / "c.py").write_text(text.replace("a5\n", "FIVE\n") if edit else text)

    diff = git_diff(tmp_path, _two, change, "-C", "--find-copies-harder")
    assert "copy from a.py" in diff
    before = (tmp_path / "gen" / "a.py").read_text()
    assert _apply_git(tree, tmp_path, diff) == 0
    assert (tree / "a.py").read_text() == before
    assert (tree / "c.py").read_text() == (tmp_path / "gen" / "c.py").read_text()
    assert sgpatch("patch", "-R", "-d", str(tree), str(tmp_path / "p.diff")) == 0
    assert not (tree / "c.py").exists() and (tree / "a.py").read_text() == before


def test_git_criss_cross_rename_swaps_the_two_files(tree, tmp_path):
    """a.py and b.py swap names (git's t4130 shape): each ends with the other's content."""

    diff = (
        "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
        "diff --git a/b.py b/a.py\nsimilarity index 95%\nrename from b.py\nrename to a.py\n"
        "--- a/b.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n b0\n-b1\n+B1\n b2\n"
    )
    assert _apply_git(tree, tmp_path, diff) == 0
    assert (tree / "a.py").read_text().startswith("b0\nB1\nb2\n")
    assert (tree / "b.py").read_text().startswith("a0\n")
    assert sgpatch("patch", "-R", "-d", str(tree), str(tmp_path / "p.diff")) == 0
    assert (tree / "a.py").read_text().startswith("a0\n")


def test_git_rename_with_edit_moves_and_edits(tree, tmp_path):
    """`rename from/to` plus a hunk: the old name is gone, the new one has the edit; -R undoes."""

    def change(repo):
        text = (repo / "a.py").read_text().replace("a9\n", "NINE\n")
        (repo / "a.py").unlink()
        (repo / "z.py").write_text(text)

    diff = git_diff(tmp_path, _two, change, "-M")
    assert "rename to z.py" in diff
    assert _apply_git(tree, tmp_path, diff) == 0
    assert not (tree / "a.py").exists()
    assert "NINE\n" in (tree / "z.py").read_text()
    assert sgpatch("patch", "-R", "-d", str(tree), str(tmp_path / "p.diff")) == 0
    assert not (tree / "z.py").exists() and "a9\n" in (tree / "a.py").read_text()


def test_git_mode_change_is_kept_on_apply_and_restored_by_reverse(tree, tmp_path):
    """`old mode 100644 / new mode 100755` with an edit: 755 after, 644 again after -R."""

    def change(repo):
        (repo / "a.py").write_text((repo / "a.py").read_text().replace("a3\n", "X\n"))
        (repo / "a.py").chmod(0o755)

    diff = git_diff(tmp_path, _two, change)
    assert "new mode 100755" in diff
    _two(tree)
    (tree / "a.py").chmod(0o644)
    assert sgpatch("patch", "-d", str(tree), put(tmp_path, diff)) == 0
    assert stat.S_IMODE((tree / "a.py").stat().st_mode) == 0o755
    assert sgpatch("patch", "-R", "-d", str(tree), str(tmp_path / "p.diff")) == 0
    assert stat.S_IMODE((tree / "a.py").stat().st_mode) == 0o644
    assert "a3\n" in (tree / "a.py").read_text()


def test_git_symlink_is_refused_in_one_line_and_never_becomes_a_file(tree, tmp_path, capsys):
    """`new file mode 120000`: refused (exit 2, one line), no regular file, tree unchanged."""
    diff = (
        "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1de5659\n"
        "--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n"
    )
    assert sgpatch("patch", "-d", str(tree), put(tmp_path, diff)) == 2
    assert not os.path.lexists(tree / "link")
    err = capsys.readouterr().err.strip()
    assert "symlink" in err and len(err.splitlines()) == 1


def test_binary_patch_is_refused_in_one_line(tree, tmp_path, capsys):
    """A git binary diff: exit 2 with one line naming it, nothing written."""
    diff = (
        "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n"
    )
    assert sgpatch("patch", "-d", str(tree), put(tmp_path, diff)) == 2
    err = capsys.readouterr().err.strip()
    assert "binary" in err and len(err.splitlines()) == 1


# --------------------------------------------------------------- flags


DIFF = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"


def test_input_flag_reads_the_patch_from_a_file(tree, tmp_path):
    """-i FILE works like the positional argument."""
    (tree / "f").write_text("one\ntwo\nthree\n")
    assert sgpatch("patch", "-d", str(tree), "-i", put(tmp_path, DIFF)) == 0
    assert (tree / "f").read_text() == "one\nTWO\nthree\n"


@pytest.mark.parametrize("args", [[], ["-"]])
def test_patch_on_stdin(tree, args):
    """No patch file, or '-': the patch is read from stdin (a real process, real stdin)."""
    (tree / "f").write_text("one\ntwo\nthree\n")
    cmd = [sys.executable, "-m", "sgpatch", "patch", "-d", str(tree), *args]
    proc = subprocess.run(cmd, input=DIFF.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (tree / "f").read_text() == "one\nTWO\nthree\n"


def test_dry_run_says_checking_file_and_would_apply(tree, tmp_path, capsys):
    """--dry-run: 'checking file f', 'Hunk #1 would apply at 1.', nothing written."""
    (tree / "f").write_text("one\ntwo\nthree\n")
    assert sgpatch("patch", "--dry-run", "-d", str(tree), put(tmp_path, DIFF)) == 0
    err = capsys.readouterr().err
    assert "checking file f" in err and "Hunk #1 would apply at 1" in err
    assert (tree / "f").read_text() == "one\ntwo\nthree\n"


def test_forward_on_an_applied_patch_skips_and_never_reverses(tree, tmp_path, capsys):
    """-N on an already-applied patch: exit 0, 'already applied', file unchanged (GNU -t would
    reverse it)."""
    (tree / "f").write_text("one\nTWO\nthree\n")
    assert sgpatch("patch", "-N", "-d", str(tree), put(tmp_path, DIFF)) == 0
    assert (tree / "f").read_text() == "one\nTWO\nthree\n"
    assert "already applied" in capsys.readouterr().err


def test_no_file_for_any_hunk_hints_at_minus_p(tree, tmp_path, capsys):
    """A diff whose paths need -p0 applied with the default -p1: exit 3 and a -p hint."""
    (tree / "f").write_text("one\ntwo\nthree\n")
    diff = "--- x/y/f\n+++ x/y/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    assert sgpatch("patch", "-d", str(tree), put(tmp_path, diff)) == 3
    assert "wrong -p level?" in capsys.readouterr().err
