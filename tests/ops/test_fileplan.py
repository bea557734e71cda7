"""fileplan: one patch planned file by file on an overlay; diff paths mapped onto the package."""

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
    package_mapper,
    patch_status,
    plan_patch,
)


@pytest.mark.parametrize(
    ("path", "rel"),
    [
        ("a/python/sglang/srt/models/kimi_k25.py", "srt/models/kimi_k25.py"),
        ("b/python/sglang/srt/models/kimi_k25.py", "srt/models/kimi_k25.py"),
        ("sglang/srt/layers/communicator.py", "srt/layers/communicator.py"),
        ("a/srt/layers/communicator.py", "srt/layers/communicator.py"),
        ("a/test/test_utils.py", "test/test_utils.py"),  # the package has a test/ too
        ("a/benchmark/x.py", "benchmark/x.py"),  # and, in some releases, a benchmark/
    ],
)
def test_upstream_and_package_relative_paths_map_onto_the_package(path: str, rel: str) -> None:
    assert package_mapper("p.patch")(path) == rel


@pytest.mark.parametrize(
    "path",
    [
        "a/sgl-kernel/csrc/allreduce/custom_all_reduce.cu",
        "a/docs/references/environment_variables.md",
        "a/python/pyproject.toml",
        "a/python/sglang_router/__init__.py",
        "b/.github/workflows/pr-test.yml",
        "a/docker/Dockerfile",
    ],
)
def test_paths_elsewhere_in_the_repository_are_refused(path: str) -> None:
    """Input: a path of an upstream pull request outside python/sglang/. Outcome: exit 2 naming
    it, instead of a file created or looked for inside the package."""
    with pytest.raises(SgpatchError) as info:
        package_mapper("0001-fix.patch")(path)
    assert info.value.code == ExitCode.BAD_INPUT
    assert "outside the SGLang package" in info.value.message
    assert info.value.message.startswith("0001-fix.patch: ")


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
