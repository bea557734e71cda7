"""`sgpatch patch` end to end (in-process): all-or-nothing, dry run == real run, path guards,
byte-exact writes, exit codes and JSON. Each test says the input and the expected outcome."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import lines, make_diff, numbered, sgpatch


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
