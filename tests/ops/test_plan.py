"""plan: a whole set's per-patch states on one tree, decided in memory (nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from helpers import SET, A, make_env, manifest, write_set
from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops.plan import SetPlan, plan_set
from sgpatch.patchset.manifest import load_manifest
from sgpatch.state.ledger import Ledger


def _plan(pkg: Path, sets: Path, **kw) -> SetPlan:
    return plan_set(
        load_manifest(sets / SET / "patchset.yaml"), pkg, Version("0.5.9"), Ledger(), **kw
    )


def test_a_fresh_tree_plans_every_patch_pending_and_writes_nothing(tmp_path: Path) -> None:
    """Input: the four-patch set on a pristine tree. Outcome: all pending and clean, exit 1
    (not done), the changes name the four files (d.py created), the tree is unchanged;
    `applied()` reads as done with nothing left to write."""
    pkg, sets, _ = make_env(tmp_path)
    plan = _plan(pkg, sets)
    assert [(p.id, p.state, p.how) for p in plan.patches] == [
        (pid, "pending", "clean") for pid in ("pa", "pb", "pc", "pd")
    ]
    assert plan.exit_code == ExitCode.NOT_DONE and not plan.done
    assert sorted(c.path for c in plan.changes) == [
        "srt/a.py", "srt/extra/d.py", "srt/layers/b.py", "srt/models/c.py"
    ]  # fmt: skip
    assert (pkg / "srt/a.py").read_text() == A and not (pkg / "srt/extra").exists()
    done = plan.applied()
    assert done.done and done.exit_code == ExitCode.OK and done.changes == ()


def test_a_post_image_already_there_is_present(tmp_path: Path) -> None:
    """Input: srt/a.py already holds patch pa's result (applied by hand). Outcome: pa is
    `present` and not among the changes; the others are pending."""
    pkg, sets, _ = make_env(tmp_path)
    (pkg / "srt/a.py").write_text(A.replace("alpha5\n", "ALPHA5\n"))
    plan = _plan(pkg, sets)
    assert [p.state for p in plan.patches] == ["present", "pending", "pending", "pending"]
    assert "srt/a.py" not in {c.path for c in plan.changes}


def test_a_requirement_listed_later_that_conflicts_makes_its_dependent_a_conflict(
    tmp_path: Path,
) -> None:
    """Input: pa requires pd, listed after it, and pd's file to create already exists with
    other content. Outcome: pd is a conflict, and pa (planned before pd was known) is a
    conflict "requires pd"; exit 3."""
    pkg, sets, _ = make_env(tmp_path)
    text = manifest().replace("    summary: pa\n", "    summary: pa\n    requires: [pd]\n")
    write_set(sets, text)
    (pkg / "srt/extra").mkdir()
    (pkg / "srt/extra/d.py").write_text("something else\n")
    plan = _plan(pkg, sets)
    by_id = {p.id: p for p in plan.patches}
    assert (by_id["pd"].state, by_id["pd"].how) == ("conflict", "conflict")
    assert (by_id["pa"].state, by_id["pa"].note) == ("conflict", "requires pd")
    assert plan.exit_code == ExitCode.CONFLICT


def test_without_leaves_a_patch_out_and_an_unknown_id_is_bad_input(tmp_path: Path) -> None:
    """Input: --without pb; then --with nope. Outcome: pb is planned but not selected and its
    file is not among the changes; an unknown id is refused (exit 2) naming it."""
    pkg, sets, _ = make_env(tmp_path)
    plan = _plan(pkg, sets, without_ids=("pb",))
    pb = next(p for p in plan.patches if p.id == "pb")
    assert (pb.state, pb.selected, pb.note) == ("pending", False, "left out with --without")
    assert "srt/layers/b.py" not in {c.path for c in plan.changes}
    with pytest.raises(SgpatchError, match="unknown patch id 'nope'") as info:
        _plan(pkg, sets, with_ids=("nope",))
    assert info.value.code == ExitCode.BAD_INPUT


def test_no_variant_names_its_patch_and_crosses_processes_whole():
    """Input: the planner's NoVariant for patch `p`, pickled as a matrix worker's exception
    would be. Outcome: it comes back with its message, exit 2 and the patch id (what lint
    names the `variants` of)."""
    import pickle

    from sgpatch.ops.plan import NoVariant

    back = pickle.loads(pickle.dumps(NoVariant("no variant of patch 'p'", "p")))
    assert isinstance(back, NoVariant)
    assert (back.message, back.code, back.patch_id) == (
        "no variant of patch 'p'",
        ExitCode.BAD_INPUT,
        "p",
    )
