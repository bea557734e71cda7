"""`sgpatch patch` end to end (in-process): all-or-nothing, dry run == real run, path guards,
byte-exact writes, exit codes and JSON. Each test says the input and the expected outcome."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, lines, make_diff, numbered, sgpatch


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "f.py").write_text(lines(*numbered("l", 30)))
    (root / "g.py").write_text(lines(*numbered("g", 30)))
    return root


def write_patch(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_patch_touching_one_file_twice_dry_run_and_real_run_agree(tree, tmp_path, capsys):
    """anchor #5: GNU `patch --dry-run` fails on this; the real run succeeds."""
    base = (tree / "f.py").read_text()
    step1 = base.replace("l5\n", "five\n")
    step2 = step1.replace("five\n", "FIVE\n")
    p = write_patch(tmp_path, "twice.patch", make_diff(base, step1) + make_diff(step1, step2))
    assert sgpatch("patch", "-d", str(tree), "--dry-run", p) == 0
    assert (tree / "f.py").read_text() == base  # dry run wrote nothing
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert (tree / "f.py").read_text() == step2


def test_second_patch_failing_means_nothing_is_written(tree, tmp_path, capsys):
    """anchor #8: `git apply good bad` is atomic per input; sgpatch is atomic per invocation."""
    before = snapshot(tree)
    base = (tree / "f.py").read_text()
    good = write_patch(tmp_path, "good.patch", make_diff(base, base.replace("l15\n", "X\n")))
    bad_src = lines("nomatch", "y")
    bad = write_patch(tmp_path, "bad.patch", make_diff(bad_src, lines("z", "y"), "g.py"))
    assert sgpatch("patch", "-d", str(tree), good, bad) == 3
    assert snapshot(tree) == before
    assert "nothing was written" in capsys.readouterr().err


def test_applies_inside_a_subdirectory_of_an_unrelated_git_repo(tmp_path, capsys):
    """anchor #7: `git apply` silently skips here and exits 0; sgpatch patches the file."""
    outer = tmp_path / "outer"
    pkg = outer / "vendor" / "pkg"
    pkg.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    base = lines(*numbered("l", 30))
    (pkg / "f").write_text(base)
    new = base.replace("l15\n", "FIFTEEN\n")
    p = write_patch(tmp_path, "p.diff", "diff --git a/f b/f\n" + make_diff(base, new, "f"))
    assert sgpatch("patch", "-d", str(pkg), p) == 0
    assert (pkg / "f").read_text() == new


def test_lf_patch_on_crlf_file_writes_crlf_bytes(tmp_path, capsys):
    """anchor #6: GNU patch fails; git apply --ignore-whitespace writes a bare-LF line."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "c").write_bytes(b"a\r\nb\r\nc\r\nd\r\ne\r\n")
    p = write_patch(tmp_path, "c.diff", make_diff("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n", "c"))
    assert sgpatch("patch", "-d", str(root), p) == 0
    assert (root / "c").read_bytes() == b"a\r\nb\r\nC\r\nd\r\ne\r\n"


def test_file_mode_is_kept(tree, tmp_path, capsys):
    os.chmod(tree / "f.py", 0o755)
    base = (tree / "f.py").read_text()
    p = write_patch(tmp_path, "m.patch", make_diff(base, base.replace("l3\n", "3\n")))
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert (tree / "f.py").stat().st_mode & 0o777 == 0o755


def test_ambiguous_placement_exits_4_and_writes_nothing(tmp_path, capsys):
    block = ["def f():", "    x = 1", "    y = 2", "    return x"]
    old = lines("a", *block, "b", *block, "c")
    new = old.replace("    y = 2\n", "    y = 3\n", 1)
    root = tmp_path / "t"
    root.mkdir()
    drifted = lines("a!", *block, "b!", *block, "c!")
    (root / "f.py").write_text(drifted)
    p = write_patch(tmp_path, "amb.patch", make_diff(old, new, n=3))
    assert sgpatch("patch", "-d", str(root), "--fuzz", "2", p) == 4
    assert (root / "f.py").read_text() == drifted
    assert "REFUSED (ambiguous)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("path", "why"),
    [("/tmp/evil.py", "absolute"), ("../evil.py", "'..'"), ("a/../../evil.py", "'..'")],
)
def test_paths_leaving_the_tree_are_refused_with_exit_4(tree, tmp_path, capsys, path, why):
    text = f"--- {path}\n+++ {path}\n@@ -1 +1 @@\n-x\n+y\n"
    p = write_patch(tmp_path, "evil.patch", text)
    before = snapshot(tree)
    assert sgpatch("patch", "-p0", "-d", str(tree), p) == 4
    assert why in capsys.readouterr().err
    assert snapshot(tree) == before


def test_symlink_leaving_the_tree_is_refused(tree, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("x\n")
    (tree / "link").symlink_to(outside)
    p = write_patch(tmp_path, "s.patch", "--- a/link/x.py\n+++ b/link/x.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert sgpatch("patch", "-d", str(tree), p) == 4
    assert (outside / "x.py").read_text() == "x\n"
    assert "leaves the tree" in capsys.readouterr().err


def test_writing_through_a_symlinked_file_is_refused(tree, tmp_path, capsys):
    (tree / "alias.py").symlink_to(tree / "f.py")
    base = (tree / "f.py").read_text()
    p = write_patch(tmp_path, "a.patch", make_diff(base, base.replace("l1\n", "1\n"), "alias.py"))
    assert sgpatch("patch", "-d", str(tree), p) == 4
    assert (tree / "f.py").read_text() == base


def test_malformed_patch_is_one_line_exit_2_without_traceback(tree, tmp_path, capsys):
    p = write_patch(tmp_path, "bad.patch", "--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n l0\n")
    before = snapshot(tree)
    assert sgpatch("patch", "-d", str(tree), p) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.patch:" in err and "Traceback" not in err
    assert snapshot(tree) == before


def test_missing_target_file_is_a_conflict(tree, tmp_path, capsys):
    p = write_patch(tmp_path, "m.patch", make_diff("a\n", "b\n", "nope.py"))
    assert sgpatch("patch", "-d", str(tree), p) == 3
    assert "file does not exist" in capsys.readouterr().err


def test_wrong_strip_level_is_bad_input(tree, tmp_path, capsys):
    p = write_patch(tmp_path, "p.patch", make_diff("a\n", "b\n", "f.py"))
    assert sgpatch("patch", "-p", "5", "-d", str(tree), p) == 2


def test_new_delete_and_rename_files(tree, tmp_path, capsys):
    diff = (
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
        "diff --git a/g.py b/g.py\ndeleted file mode 100644\n--- a/g.py\n+++ /dev/null\n"
        f"@@ -1,30 +0,0 @@\n{''.join('-' + ln + chr(10) for ln in numbered('g', 30))}"
    )
    p = write_patch(tmp_path, "nd.patch", diff)
    capsys.readouterr()
    assert sgpatch("patch", "--dry-run", "-d", str(tree), p) == 0
    err = capsys.readouterr().err.splitlines()
    assert "checking file new.py (new)" in err and "checking file g.py (deleted)" in err
    assert sgpatch("patch", "-d", str(tree), p) == 0
    err = capsys.readouterr().err.splitlines()
    assert "creating file new.py" in err and "deleting file g.py" in err
    assert "  Hunk #1 applied at 1." in err  # an empty side's start is the line it follows
    assert (tree / "new.py").read_text() == "x = 1\ny = 2\n"
    assert not (tree / "g.py").exists()
    assert sgpatch("patch", "-d", str(tree), p) == 0  # again: already done, nothing to do
    capsys.readouterr()
    assert sgpatch("patch", "-R", "-d", str(tree), p) == 0
    err = capsys.readouterr().err.splitlines()
    assert "deleting file new.py" in err and "creating file g.py" in err
    assert "  Hunk #1 reversed at 1." in err  # not "(offset 1)"
    assert not (tree / "new.py").exists()
    assert (tree / "g.py").read_text() == lines(*numbered("g", 30))
    assert not (tree / ".sgpatch").exists()


def test_json_output_is_one_document_on_stdout(tree, tmp_path, capsys):
    base = (tree / "f.py").read_text()
    p = write_patch(tmp_path, "j.patch", make_diff(base, base.replace("l15\n", "X\n")))
    assert sgpatch("patch", "--json", "-d", str(tree), "--dry-run", p) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == 1 and doc["command"] == "patch" and doc["exit_code"] == 0
    (hunk,) = doc["patches"][0]["files"][0]["hunks"]
    assert hunk["status"] == "applied" and hunk["line"] == 13


def test_hunk_lines_read_like_gnu_patch(tree, tmp_path, capsys):
    base = (tree / "f.py").read_text()
    (tree / "f.py").write_text("new top\n" * 12 + base)
    p = write_patch(tmp_path, "o.patch", make_diff(base, base.replace("l15\n", "X\n")))
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert "Hunk #1 applied at 25 (offset 12)." in capsys.readouterr().err


def test_git_modes_are_applied_for_new_files_and_mode_only_changes(tree, tmp_path, capsys):
    """Review finding: `new file mode 100755` and mode-only patches were ignored. Input: a git
    diff creating an executable script and one only making f.py executable. Outcome: both end
    up 0o755; applying again is a no-op (exit 0)."""
    diff = (
        "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n"
        "@@ -0,0 +1 @@\n+echo hi\n"
        "diff --git a/f.py b/f.py\nold mode 100644\nnew mode 100755\n"
    )
    p = write_patch(tmp_path, "modes.patch", diff)
    os.chmod(tree / "f.py", 0o644)
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (tree / "f.py").stat().st_mode & 0o777 == 0o755
    assert sgpatch("patch", "-d", str(tree), p) == 0


def test_reversing_a_new_file_removes_the_folders_it_made(tree, tmp_path, capsys):
    """Input: a patch creating new/dir/n.txt, applied then reversed; and one deleting a file
    from a folder that holds another. Outcome: no new/ left after the reverse (the tree is as
    before, as git leaves it); the folder that still holds a file stays."""
    before = snapshot(tree)
    folders = sorted(p for p in tree.rglob("*") if p.is_dir())
    diff = "--- /dev/null\n+++ b/new/dir/n.txt\n@@ -0,0 +1 @@\n+hello\n"
    p = write_patch(tmp_path, "c.patch", diff)
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert (tree / "new" / "dir" / "n.txt").read_text() == "hello\n"
    assert sgpatch("patch", "-R", "-d", str(tree), p) == 0
    assert snapshot(tree) == before
    assert sorted(p for p in tree.rglob("*") if p.is_dir()) == folders
    (tree / "keep").mkdir()
    (tree / "keep" / "a.py").write_text("a\n")
    (tree / "keep" / "b.py").write_text("b\n")
    p = write_patch(tmp_path, "d.patch", "--- a/keep/a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n")
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert sorted(x.name for x in (tree / "keep").iterdir()) == ["b.py"]


def test_every_run_ends_with_a_verdict_line(tree, tmp_path, capsys):
    """Input: one diff, dry run, real run, then -R. Outcome: the last stderr line says what
    happened each time (would be patched / patched / reversed), counting the file."""
    base = (tree / "f.py").read_text()
    p = write_patch(tmp_path, "v.patch", make_diff(base, base.replace("l15\n", "X\n")))
    capsys.readouterr()
    runs = [("--dry-run",), (), ("-R",)]
    last = []
    for extra in runs:
        assert sgpatch("patch", *extra, "-d", str(tree), p) == 0
        last.append(capsys.readouterr().err.splitlines()[-1])
    assert last == [
        "sgpatch: dry run: 1 file(s) would be patched; nothing was written",
        "sgpatch: 1 file(s) patched",
        "sgpatch: 1 file(s) reversed",
    ]


def test_a_patch_with_nothing_to_do_says_so_not_patched(tree, tmp_path, capsys):
    """Input: a diff of two files applied, then applied again, then -R twice, then the diff
    with one file reverted by hand (-R's second run undone for it). Outcome: exit 0 each time;
    the last line says "nothing to do (already patched: 2 file(s))" and "nothing to do
    (nothing to reverse in 2 file(s))" where it said "2 file(s) patched/reversed", the tree
    unchanged by those runs; a mixed run counts each kind."""
    base = (tree / "f.py").read_text()
    (tree / "g.py").write_text(base)
    p = write_patch(tmp_path, "two.patch", make_diff(base, base.replace("l15\n", "X\n"))
                    + make_diff(base, base.replace("l3\n", "Y\n"), "g.py"))  # fmt: skip
    last = []
    for extra in ((), (), ("-R",), ("-R",)):
        capsys.readouterr()
        before = {n: (tree / n).read_bytes() for n in ("f.py", "g.py")}
        assert sgpatch("patch", *extra, "-d", str(tree), p) == 0
        last.append(capsys.readouterr().err.splitlines()[-1])
        if "nothing to do" in last[-1]:
            assert {n: (tree / n).read_bytes() for n in ("f.py", "g.py")} == before
    assert last == [
        "sgpatch: 2 file(s) patched",
        "sgpatch: nothing to do (already patched: 2 file(s)); nothing was written",
        "sgpatch: 2 file(s) reversed",
        "sgpatch: nothing to do (nothing to reverse in 2 file(s)); nothing was written",
    ]
    (tree / "g.py").write_text(base.replace("l3\n", "Y\n"))
    assert sgpatch("patch", "-d", str(tree), p) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "sgpatch: 1 file(s) patched; already patched: 1 file(s)"
    )


# ------------------------------------------------------------------------------------------
# File operations a diff can mean, and the GNU flags people type (issue: peer suites).
# `empty` is an empty tree; `git_diff` makes a real git diff of a change.


def git_diff(tmp_path: Path, setup, change, *flags: str) -> str:
    """A real `git diff` (with -M/-C as asked) of what `change` does to the empty `setup` made."""
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
def empty(tmp_path: Path) -> Path:
    root = tmp_path / "empty"
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
def test_diff_N_epoch_source_creates_the_file(empty, tmp_path, stamp):
    """`diff -Nu` writes the missing old side with the epoch in the maker's zone: creates f."""
    diff = f"--- f\t{stamp}\n+++ f\t2024-05-01 10:00:00 +0200\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "f").read_text() == "one\ntwo\n"


@pytest.mark.parametrize("stamp", EPOCHS)
def test_diff_N_epoch_target_deletes_a_file_with_exactly_that_content(empty, tmp_path, stamp):
    """An epoch `+++` that empties the file deletes it when the content is what it removes."""
    (empty / "f").write_text("one\ntwo\n")
    diff = f"--- f\t2024-05-01 10:00:00 +0200\n+++ f\t{stamp}\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 0
    assert not (empty / "f").exists()


def test_deletion_refused_when_content_differs_even_where_fuzz_would_forgive(
    empty, tmp_path, capsys
):
    """A deletion of a file edited since (here: whitespace) keeps it, exit 3, names the rule."""
    (empty / "f").write_text("one \ntwo\n")
    diff = "--- f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-F2", "-d", str(empty), put(tmp_path, diff)) == 3
    assert (empty / "f").read_text() == "one \ntwo\n"
    assert "content differs from the deletion" in capsys.readouterr().err


def test_deletion_refused_when_the_file_has_more_lines(empty, tmp_path, capsys):
    """A deletion of a file with an extra line at the end keeps it (exit 3)."""
    (empty / "f").write_text("one\ntwo\nthree\n")
    diff = "--- f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 3
    assert (empty / "f").exists()
    assert "content differs from the deletion" in capsys.readouterr().err


def test_zero_zero_hunk_creates_a_missing_file_without_dev_null(empty, tmp_path):
    """`@@ -0,0 +1,N @@` under ordinary names creates the file (GNU patch does)."""
    diff = "--- a/new.py\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "new.py").read_text() == "x = 1\ny = 2\n"


def test_minus_E_removes_a_file_the_patch_empties(empty, tmp_path):
    """-E: a plain diff that removes every line deletes the file; without -E it stays empty."""
    (empty / "f").write_text("one\n")
    diff = put(tmp_path, "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-one\n")
    assert sgpatch("patch", "-d", str(empty), diff) == 0
    assert (empty / "f").read_bytes() == b""
    (empty / "f").write_text("one\n")
    assert sgpatch("patch", "-E", "-d", str(empty), diff) == 0
    assert not (empty / "f").exists()


# --------------------------------------------------------------- plain diffs with two names


def test_plain_diff_with_two_names_patches_the_existing_file_and_keeps_the_backup(empty, tmp_path):
    """`diff -u a.py.orig a.py` applied to a empty holding both: a.py is patched (GNU's choice:
    shorter name), a.py.orig is untouched, nothing is renamed or deleted."""
    (empty / "a.py").write_text("x = 1\n")
    (empty / "a.py.orig").write_text("x = 1\n")
    diff = "--- a.py.orig\n+++ a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "a.py").read_text() == "x = 2\n"
    assert (empty / "a.py.orig").read_text() == "x = 1\n"


def test_plain_diff_with_two_names_patches_the_only_one_that_exists(empty, tmp_path):
    """Only the old name exists: it is patched in place, no new name appears."""
    (empty / "old.py").write_text("x = 1\n")
    diff = "--- old.py\n+++ new.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "old.py").read_text() == "x = 2\n"
    assert not (empty / "new.py").exists()


# --------------------------------------------------------------- git copies and renames


def _two(repo: Path) -> None:
    (repo / "a.py").write_text(lines(*(f"a{i}" for i in range(20))))
    (repo / "b.py").write_text(lines(*(f"b{i}" for i in range(20))))


def _apply_git(empty: Path, tmp_path: Path, diff: str, *flags: str) -> int:
    _two(empty)
    return sgpatch("patch", *flags, "-d", str(empty), put(tmp_path, diff))


@pytest.mark.parametrize("edit", [False, True])
def test_git_copy_keeps_its_source(empty, tmp_path, edit):
    """`copy from/copy to`, with and without edits: the copy appears, the source stays."""

    def change(repo):
        text = (repo / "a.py").read_text()
        (repo / "c.py").write_text(text.replace("a5\n", "FIVE\n") if edit else text)

    diff = git_diff(tmp_path, _two, change, "-C", "--find-copies-harder")
    assert "copy from a.py" in diff
    before = (tmp_path / "gen" / "a.py").read_text()
    assert _apply_git(empty, tmp_path, diff) == 0
    assert (empty / "a.py").read_text() == before
    assert (empty / "c.py").read_text() == (tmp_path / "gen" / "c.py").read_text()
    assert sgpatch("patch", "-R", "-d", str(empty), str(tmp_path / "p.diff")) == 0
    assert not (empty / "c.py").exists() and (empty / "a.py").read_text() == before


def test_git_criss_cross_rename_swaps_the_two_files(empty, tmp_path):
    """a.py and b.py swap names (git's t4130 shape): each ends with the other's content."""

    diff = (
        "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
        "diff --git a/b.py b/a.py\nsimilarity index 95%\nrename from b.py\nrename to a.py\n"
        "--- a/b.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n b0\n-b1\n+B1\n b2\n"
    )
    assert _apply_git(empty, tmp_path, diff) == 0
    assert (empty / "a.py").read_text().startswith("b0\nB1\nb2\n")
    assert (empty / "b.py").read_text().startswith("a0\n")
    assert sgpatch("patch", "-R", "-d", str(empty), str(tmp_path / "p.diff")) == 0
    assert (empty / "a.py").read_text().startswith("a0\n")


def test_git_rename_with_edit_moves_and_edits(empty, tmp_path):
    """`rename from/to` plus a hunk: the old name is gone, the new one has the edit; -R undoes."""

    def change(repo):
        text = (repo / "a.py").read_text().replace("a9\n", "NINE\n")
        (repo / "a.py").unlink()
        (repo / "z.py").write_text(text)

    diff = git_diff(tmp_path, _two, change, "-M")
    assert "rename to z.py" in diff
    assert _apply_git(empty, tmp_path, diff) == 0
    assert not (empty / "a.py").exists()
    assert "NINE\n" in (empty / "z.py").read_text()
    assert sgpatch("patch", "-R", "-d", str(empty), str(tmp_path / "p.diff")) == 0
    assert not (empty / "z.py").exists() and "a9\n" in (empty / "a.py").read_text()


def test_git_mode_change_is_kept_on_apply_and_restored_by_reverse(empty, tmp_path):
    """`old mode 100644 / new mode 100755` with an edit: 755 after, 644 again after -R."""

    def change(repo):
        (repo / "a.py").write_text((repo / "a.py").read_text().replace("a3\n", "X\n"))
        (repo / "a.py").chmod(0o755)

    diff = git_diff(tmp_path, _two, change)
    assert "new mode 100755" in diff
    _two(empty)
    (empty / "a.py").chmod(0o644)
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, diff)) == 0
    assert stat.S_IMODE((empty / "a.py").stat().st_mode) == 0o755
    assert sgpatch("patch", "-R", "-d", str(empty), str(tmp_path / "p.diff")) == 0
    assert stat.S_IMODE((empty / "a.py").stat().st_mode) == 0o644
    assert "a3\n" in (empty / "a.py").read_text()


LINK = (
    "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1de5659\n"
    "--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
)


def test_git_symlink_is_made_as_a_link_and_reversed(empty, tmp_path):
    """`new file mode 120000` with target `sub/t.txt`: a symlink (never a regular file holding
    the target), exit 0; again: already there, exit 0; -R removes the link."""
    diff = put(tmp_path, LINK.format(target="sub/t.txt"))
    assert sgpatch("patch", "-d", str(empty), diff) == 0
    assert (empty / "link").is_symlink() and os.readlink(empty / "link") == "sub/t.txt"
    assert sgpatch("patch", "-d", str(empty), diff) == 0
    assert sgpatch("patch", "-R", "-d", str(empty), diff) == 0
    assert not os.path.lexists(empty / "link")


def test_what_a_symlink_block_and_a_mode_do_is_said_of_a_symlink_and_a_mode(
    empty, tmp_path, capsys
):
    """Input: a symlink made, checked with --dry-run, made, then reversed; a script created
    executable and a file made executable. Outcome: the lines say `symlink` (never `creating
    file`): `checking symlink link -> sub/t.txt (new)`, `creating symlink link -> sub/t.txt`,
    `removing symlink link`; `creating file run.sh (mode 100755)`, `patching file f.py (mode
    100755)`."""
    diff = put(tmp_path, LINK.format(target="sub/t.txt"))
    assert sgpatch("patch", "--dry-run", "-d", str(empty), diff) == 0
    assert capsys.readouterr().err.splitlines()[0] == "checking symlink link -> sub/t.txt (new)"
    assert sgpatch("patch", "-d", str(empty), diff) == 0
    assert capsys.readouterr().err.splitlines()[0] == "creating symlink link -> sub/t.txt"
    assert sgpatch("patch", "-R", "-d", str(empty), diff) == 0
    assert capsys.readouterr().err.splitlines()[0] == "removing symlink link"
    (empty / "f.py").write_text("x\n")
    modes = (
        "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n"
        "@@ -0,0 +1 @@\n+echo hi\n"
        "diff --git a/f.py b/f.py\nold mode 100644\nnew mode 100755\n"
    )
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, modes, "m.diff")) == 0
    err = capsys.readouterr().err.splitlines()
    assert "creating file run.sh (mode 100755)" in err and "patching file f.py (mode 100755)" in err


@pytest.mark.parametrize("target", ["../outside", "/etc/passwd", "a/../../x", ".sgpatch/ledger"])
def test_a_symlink_leaving_the_tree_is_refused_in_one_line(empty, tmp_path, capsys, target):
    """A git symlink whose target climbs out of the tree, is absolute or names sgpatch's state
    folder: exit 4, one line naming the link and its target; nothing made."""
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, LINK.format(target=target))) == 4
    assert not os.path.lexists(empty / "link")
    err = capsys.readouterr().err.strip()
    assert "refusing symlink link -> " in err and len(err.splitlines()) == 1


def test_binary_patch_is_refused_in_one_line(empty, tmp_path, capsys):
    """A git binary diff: exit 2 with one line naming it, nothing written."""
    diff = (
        "diff --git a/x.bin b/x.bin\nindex 1..2 100644\nBinary files a/x.bin and b/x.bin differ\n"
    )
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, diff)) == 2
    err = capsys.readouterr().err.strip()
    assert "binary" in err and len(err.splitlines()) == 1


# --------------------------------------------------------------- flags


DIFF = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"


def test_input_flag_reads_the_patch_from_a_file(empty, tmp_path):
    """-i FILE works like the positional argument."""
    (empty / "f").write_text("one\ntwo\nthree\n")
    assert sgpatch("patch", "-d", str(empty), "-i", put(tmp_path, DIFF)) == 0
    assert (empty / "f").read_text() == "one\nTWO\nthree\n"


@pytest.mark.parametrize("args", [[], ["-"]])
def test_patch_on_stdin(empty, args):
    """No patch file, or '-': the patch is read from stdin (a real process, real stdin)."""
    (empty / "f").write_text("one\ntwo\nthree\n")
    cmd = [sys.executable, "-m", "sgpatch", "patch", "-d", str(empty), *args]
    proc = subprocess.run(cmd, input=DIFF.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (empty / "f").read_text() == "one\nTWO\nthree\n"


def test_dry_run_says_checking_file_and_would_apply(empty, tmp_path, capsys):
    """--dry-run: 'checking file f', 'Hunk #1 would apply at 1.', nothing written."""
    (empty / "f").write_text("one\ntwo\nthree\n")
    assert sgpatch("patch", "--dry-run", "-d", str(empty), put(tmp_path, DIFF)) == 0
    err = capsys.readouterr().err
    assert "checking file f" in err and "Hunk #1 would apply at 1" in err
    assert (empty / "f").read_text() == "one\ntwo\nthree\n"


def test_forward_on_an_applied_patch_skips_and_never_reverses(empty, tmp_path, capsys):
    """-N on an already-applied patch: exit 0, 'already applied', file unchanged (GNU -t would
    reverse it)."""
    (empty / "f").write_text("one\nTWO\nthree\n")
    assert sgpatch("patch", "-N", "-d", str(empty), put(tmp_path, DIFF)) == 0
    assert (empty / "f").read_text() == "one\nTWO\nthree\n"
    assert "already applied" in capsys.readouterr().err


def test_no_file_for_any_hunk_hints_at_minus_p(empty, tmp_path, capsys):
    """A diff whose paths need -p0 applied with the default -p1: exit 3 and a -p hint."""
    (empty / "f").write_text("one\ntwo\nthree\n")
    diff = "--- x/y/f\n+++ x/y/f\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, diff)) == 3
    assert "wrong -p level?" in capsys.readouterr().err


def test_creation_under_two_names_creates_the_shorter_one(empty, tmp_path):
    """`--- f` / `+++ f.new` with `@@ -0,0 +1 @@` and neither file there creates `f` (GNU's
    filename-choice rule)."""
    diff = "--- f\n+++ f.new\n@@ -0,0 +1 @@\n+content\n"
    assert sgpatch("patch", "-p0", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "f").read_text() == "content\n" and not (empty / "f.new").exists()


def test_git_rename_already_done_applies_its_hunks_at_the_new_name(empty, tmp_path):
    """Source gone, target present with the old content: the hunk is applied there."""
    (empty / "h").write_text("old\n")
    diff = "diff --git a/f b/h\nrename from f\nrename to h\n"
    diff += "--- a/f\n+++ b/h\n@@ -1 +1 @@\n-old\n+new\n"
    assert sgpatch("patch", "-d", str(empty), put(tmp_path, diff)) == 0
    assert (empty / "h").read_text() == "new\n" and not (empty / "f").exists()


def test_plain_diff_with_one_unsafe_name_uses_the_other(empty, tmp_path):
    """`--- f` / `+++ ../g`: the `..` name is never used; f (which exists) is checked."""
    (empty / "f").write_text("1\n")
    diff = put(tmp_path, "--- f\n+++ ../g\n@@ -1 +1 @@\n-1\n+one\n")
    assert sgpatch("patch", "-p0", "-d", str(empty), diff) == 0
    assert (empty / "f").read_text() == "one\n"
    assert not (empty.parent / "g").exists()


def test_quoted_name_with_a_newline_is_bad_input(empty, tmp_path, capsys):
    """`+++ "a\\nb"`: exit 2 in one line, nothing created."""
    diff = put(tmp_path, '--- /dev/null\n+++ "a\\nb"\n@@ -0,0 +1 @@\n+x\n')
    assert sgpatch("patch", "-p0", "-d", str(empty), diff) == 2
    assert list(empty.iterdir()) == []
    assert "newline" in capsys.readouterr().err


def test_reverse_of_a_patch_touching_one_file_twice_undoes_the_last_change_first(empty, tmp_path):
    """Two diffs of one file whose second edits what the first added (git's t4127 shape):
    -R takes them back in reverse order and restores the file."""
    base = lines(*numbered("l", 20))
    one = base.replace("l5\n", "five\n")
    two = one.replace("five\n", "FIVE\n")
    (empty / "f.py").write_text(two)
    diff = put(tmp_path, make_diff(base, one) + make_diff(one, two))
    assert sgpatch("patch", "-R", "-d", str(empty), diff) == 0
    assert (empty / "f.py").read_text() == base


def test_an_endless_patch_input_ends_in_a_moment(tmp_path: Path) -> None:
    """Input: `sgpatch patch -p1 -i /dev/zero`, and `sgpatch patch -p1 < /dev/zero` (a device
    that never ends). Outcome: exit 2 and one line saying it is more than 256 MiB, not a
    patch (it filled memory for minutes before); nothing written in the folder."""
    base = [sys.executable, "-m", "sgpatch", "patch", "-p1"]
    named = subprocess.run([*base, "-i", "/dev/zero"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    with open("/dev/zero", "rb") as zero:
        piped = subprocess.run(base, cwd=tmp_path, stdin=zero, capture_output=True, text=True,
                               timeout=60)  # fmt: skip
    assert (named.returncode, piped.returncode) == (2, 2)
    assert named.stderr == (
        "sgpatch: error: /dev/zero: cannot read patch file: more than 256 MiB, not a patch\n"
    )
    assert piped.stderr == "sgpatch: error: <stdin>: more than 256 MiB, not a patch\n"
    assert os.listdir(tmp_path) == []


def test_a_patch_from_a_pipe_is_read_as_gnu_patch_reads_one(tmp_path: Path) -> None:
    """Input: `sgpatch patch -p1 -i /dev/fd/N`, N a pipe holding a diff of f.py (what
    `-i <(curl ...)` passes). Outcome: exit 0 and f.py patched: a pipe the user names is
    input, only devices without end are refused."""
    (tmp_path / "f.py").write_text("a\nb\nc\n")
    diff = make_diff("a\nb\nc\n", "a\nB\nc\n", "f.py")
    r, w = os.pipe()
    os.write(w, diff.encode())
    os.close(w)
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", "patch", "-p1", "-i", f"/dev/fd/{r}"],
        cwd=tmp_path, capture_output=True, text=True, pass_fds=(r,), timeout=60,
    )  # fmt: skip
    os.close(r)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "f.py").read_text() == "a\nB\nc\n"


def test_a_file_name_with_terminal_escapes_is_printed_escaped(tmp_path, capsys):
    """Input: a diff (paths C-quoted, as git writes them) patching a file named with ESC and
    BEL, an escape that would retitle the terminal (`a\\x1b]0;pwned\\x07b.py`). Outcome: the
    patch applies (exit 0), and stderr shows the name with `\\x1b` and `\\x07` written out: no
    raw ESC or BEL reaches the terminal. (A newline in a diff's path is refused, exit 2.)"""
    name = "a\x1b]0;pwned\x07b.py"
    root = tmp_path / "tree"
    root.mkdir()
    (root / name).write_text("x\n")
    quoted = '"%s/a\\033]0;pwned\\007b.py"'  # as git quotes such a name
    body = f"--- {quoted % 'a'}\n+++ {quoted % 'b'}\n@@ -1 +1 @@\n-x\n+y\n"
    p = write_patch(tmp_path, "e.patch", body)
    capsys.readouterr()
    assert sgpatch("patch", "-d", str(root), p) == 0
    err = capsys.readouterr().err
    assert not any(c in err for c in "\x1b\x07")
    assert "patching file a\\x1b]0;pwned\\x07b.py\n" in err
    assert (root / name).read_text() == "y\n"
