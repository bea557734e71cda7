"""fileplan: one patch planned file by file on an overlay."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import A, B, patch_of
from sgpatch.diff.unified import parse_patch
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops.fileplan import (
    Overlay,
    default_mapper,
    how_applied,
    patch_status,
    plan_patch,
)


def _tree(tmp_path: Path, files: dict[str, str]) -> Overlay:
    for rel, body in files.items():
        (tmp_path / rel).write_text(body)
    return Overlay(tmp_path)


def test_a_patch_updates_the_overlay_and_the_tree_is_not_written(tmp_path: Path) -> None:
    """Input: a one-hunk patch planned on an overlay. Outcome: the plan says `modify`/`ok`,
    the overlay reads the new bytes and lists one change, and the file on disk is as it was."""
    overlay = _tree(tmp_path, {"f.py": A})
    new = A.replace("alpha5\n", "ALPHA5\n")
    (plan,) = plan_patch(overlay, patch_of(A, new), default_mapper(1, "t.patch"))
    assert (plan.path, plan.action, plan.status) == ("f.py", "modify", "ok")
    assert overlay.read("f.py") == new.encode()
    assert [(c.path, c.before, c.after) for c in overlay.changes()] == [
        ("f.py", A.encode(), new.encode())
    ]
    assert (tmp_path / "f.py").read_text() == A
    assert how_applied((plan,)) == "clean"
    assert patch_status((plan,)) == ExitCode.OK


def test_a_conflict_leaves_the_overlay_as_it_was(tmp_path: Path) -> None:
    """Input: a patch whose context is not in the file. Outcome: a `conflict` plan with its
    hunk refused, exit code 3, and no change in the overlay."""
    overlay = _tree(tmp_path, {"f.py": B})
    (plan,) = plan_patch(
        overlay, patch_of(A, A.replace("alpha5\n", "X\n")), default_mapper(1, "t.patch")
    )
    assert plan.status == "conflict" and not plan.ok
    assert patch_status((plan,)) == ExitCode.CONFLICT
    assert overlay.changes() == [] and overlay.read("f.py") == B.encode()


def test_a_fork_plans_apart_until_it_is_adopted(tmp_path: Path) -> None:
    """Input: a patch planned on a fork of the overlay. Outcome: the overlay reads the old
    bytes until it adopts the fork, then the new ones."""
    overlay = _tree(tmp_path, {"f.py": A})
    new = A.replace("alpha1\n", "ALPHA1\n")
    trial = overlay.fork()
    plan_patch(trial, patch_of(A, new), default_mapper(1, "t.patch"))
    assert overlay.read("f.py") == A.encode()
    overlay.adopt(trial)
    assert overlay.read("f.py") == new.encode()


def test_two_files_swapping_names_each_get_the_others_old_content(tmp_path: Path) -> None:
    """Input: a git patch renaming a.py -> b.py and b.py -> a.py (no hunks). Outcome: as git
    does it, each name gets the other's content as it was before the patch; neither is
    removed."""
    overlay = _tree(tmp_path, {"a.py": "first\n", "b.py": "second\n"})
    swap = "".join(
        f"diff --git a/{s} b/{t}\nsimilarity index 100%\nrename from {s}\nrename to {t}\n"
        for s, t in (("a.py", "b.py"), ("b.py", "a.py"))
    )
    plans = plan_patch(overlay, parse_patch(swap, "swap.patch"), default_mapper(1, "swap"))
    assert [(p.source, p.path, p.action, p.status) for p in plans] == [
        ("a.py", "b.py", "rename", "ok"),
        ("b.py", "a.py", "rename", "ok"),
    ]
    assert (overlay.read("a.py"), overlay.read("b.py")) == (b"second\n", b"first\n")


def test_how_applied_names_offset_and_partial(tmp_path: Path) -> None:
    """Input: a hunk found 2 lines below its stated place; then a two-hunk patch whose first
    hunk is already in the file. Outcome: "offset", then "partial"."""
    overlay = _tree(tmp_path, {"f.py": "x\ny\n" + A})
    shifted = plan_patch(
        overlay, patch_of(A, A.replace("alpha6\n", "A6\n")), default_mapper(1, "t")
    )
    assert how_applied(shifted) == "offset"
    both = A.replace("alpha1\n", "A1\n").replace("alpha10\n", "A10\n")
    overlay = _tree(tmp_path, {"f.py": A.replace("alpha1\n", "A1\n")})
    partial = plan_patch(overlay, patch_of(A, both, n=1), default_mapper(1, "t"))
    assert [h.status for h in partial[0].hunks] == ["already-applied", "applied"]
    assert how_applied(partial) == "partial"


# --- symlinks (git mode 120000): made, retargeted, removed as links, never leaving the tree


def link_block(path: str, old: str | None, new: str | None) -> str:
    """A git symlink block: made (old None), removed (new None) or retargeted."""
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        return head + (f"new file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n"
                       f"+{new}\n\\ No newline at end of file\n")  # fmt: skip
    if new is None:
        return head + (f"deleted file mode 120000\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n"
                       f"-{old}\n\\ No newline at end of file\n")  # fmt: skip
    eof = "\\ No newline at end of file\n"
    return (
        head
        + f"index 1..2 120000\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n{eof}+{new}\n{eof}"
    )


def test_a_symlink_is_planned_as_a_link_and_written_as_one(tmp_path: Path) -> None:
    """Input: a tree with cfg/a.json; a git diff making cfg/latest -> a.json. Outcome: one
    `create` plan marked as a link; the overlay reads the target and calls it a link; its one
    change is a FileChange with `link` set (no bytes); the tree is not written."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg/a.json").write_text("{}\n")
    overlay = Overlay(tmp_path)
    (plan,) = plan_patch(overlay, parse_patch(link_block("cfg/latest", None, "a.json")),
                         default_mapper(1, "p"))  # fmt: skip
    assert (plan.action, plan.link, plan.after, plan.status) == ("create", True, b"a.json", "ok")
    assert overlay.is_link("cfg/latest") and overlay.read("cfg/latest") == b"a.json"
    (change,) = overlay.changes()
    assert (change.path, change.after, change.link, change.before_link) == (
        "cfg/latest", None, "a.json", None)  # fmt: skip
    assert not (tmp_path / "cfg/latest").exists()


def test_a_link_in_the_tree_is_retargeted_or_removed_only_as_the_patch_expects(tmp_path: Path):
    """Input: cfg/latest -> a.json in the tree; diffs retargeting it from a.json to b.json,
    from x.json (stale), and removing it. Outcome: the retarget is a link change (before_link
    a.json, link b.json); the stale one a conflict naming the expected target; the removal a
    change with before_link and no link."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg/latest").symlink_to("a.json")
    mapper = default_mapper(1, "p")
    overlay = Overlay(tmp_path)
    plan_patch(overlay, parse_patch(link_block("cfg/latest", "a.json", "b.json")), mapper)
    (change,) = overlay.changes()
    assert (change.before_link, change.link, change.before, change.after) == (
        "a.json", "b.json", None, None)  # fmt: skip
    (stale,) = plan_patch(Overlay(tmp_path), parse_patch(link_block("cfg/latest", "x.json",
                          "b.json")), mapper)  # fmt: skip
    assert stale.status == "conflict" and "a symlink to 'x.json'" in (stale.note or "")
    gone = Overlay(tmp_path)
    plan_patch(gone, parse_patch(link_block("cfg/latest", "a.json", None)), mapper)
    (change,) = gone.changes()
    assert (change.before_link, change.link, change.after) == ("a.json", None, None)


@pytest.mark.parametrize(
    "target", ["../../outside", "/etc/passwd", "x/../../../y", "../.sgpatch/ledger.json", ""]
)
def test_a_link_leaving_the_tree_is_refused_for_safety(tmp_path: Path, target: str) -> None:
    """Input: a git diff making cfg/latest point above the tree's root, at an absolute path,
    into sgpatch's state folder, or nowhere. Outcome: exit 4 naming the link, nothing planned."""
    (tmp_path / "cfg").mkdir()
    overlay = Overlay(tmp_path)
    with pytest.raises(SgpatchError) as e:
        plan_patch(overlay, parse_patch(link_block("cfg/latest", None, target)),
                   default_mapper(1, "p"))  # fmt: skip
    assert e.value.code == ExitCode.UNSAFE and "refusing symlink cfg/latest" in e.value.message
    assert overlay.changes() == []


def test_a_link_through_a_linked_folder_that_leaves_the_tree_is_refused(tmp_path: Path):
    """Input: the tree's own `out` is a symlink to a folder outside it; a diff makes cfg/l ->
    ../out/x (inside the tree as written). Outcome: exit 4: it resolves outside the tree."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    tree = tmp_path / "tree"
    (tree / "cfg").mkdir(parents=True)
    (tree / "out").symlink_to(outside)
    with pytest.raises(SgpatchError) as e:
        plan_patch(Overlay(tree), parse_patch(link_block("cfg/l", None, "../out/x")),
                   default_mapper(1, "p"))  # fmt: skip
    assert e.value.code == ExitCode.UNSAFE and "resolves outside the tree" in e.value.message


def test_a_text_diff_on_a_symlink_is_refused_not_written_through(tmp_path: Path) -> None:
    """Input: srt/alias.py is a symlink to srt/a.py; a text diff of srt/alias.py whose context
    is the link's target text. Outcome: exit 4 (never a regular file in the link's place)."""
    (tmp_path / "srt").mkdir()
    (tmp_path / "srt/a.py").write_text("a.py\n")
    (tmp_path / "srt/alias.py").symlink_to("a.py")
    diff = "--- a/srt/alias.py\n+++ b/srt/alias.py\n@@ -1 +1 @@\n-a.py\n+b.py\n"
    with pytest.raises(SgpatchError) as e:
        plan_patch(Overlay(tmp_path), parse_patch(diff), default_mapper(1, "p"))
    assert e.value.code == ExitCode.UNSAFE and "srt/alias.py" in e.value.message
