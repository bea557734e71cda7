"""The whole port loop on the real stacks of tests/data/stacks (tests/real/loop.py): each step
of the projects' own chains of hand ports, A -> B, scripted as the project acted (import A's
stack, `port --to B --no-finish`, at each stop write the project's own B files into W,
`--continue`, until the set is written). Then the ported set, applied to the pristine B by
`sgpatch apply`, must give the project's own port byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from helpers import sgpatch
from sgpatch.ops import lint, matrix
from sgpatch.patchset.manifest import load_manifest
from sgpatch.port import merge
from sgpatch.releases import cache as releases

from . import loop

# Where the project's own B file defines a name twice in one body (the later copy silently
# replaces upstream's): the person takes the fold a port stop suggests (the copy that runs,
# in the earlier one's place; loop.folded).
FOLDS = {
    ("slime", "0.5.10.post1", "0.5.12.post1"): {"srt/mem_cache/memory_pool.py"},
    ("slime", "0.5.13", "0.5.15.post1"): {"srt/disaggregation/decode.py"},
}
# Where the project changed a file beyond its port and port needed no hand there (AReaL
# reworded a log line in model_runner.py in its 0.5.2 port): the person edits it after
# `port --no-finish` and `--continue` gives the edit to the patch that changes that file.
OWN_EDITS = {("areal", "0.5.1.post3", "0.5.2"): {"srt/model_executor/model_runner.py"}}


def applied(set_dir: Path, version: str, tmp: Path, rels) -> dict[str, bytes | None]:
    """`sgpatch apply` of the ported set on a fresh pristine tree of `version`: `rels`."""
    m = load_manifest(set_dir / "patchset.yaml")
    members = matrix.member_filter(matrix.needed_files(m) + sorted(rels))
    root = releases.extract(version, tmp, "site-packages", members)
    code = sgpatch("apply", "--set", m.name, "--sglang-dir", str(root), "--patchsets",
                   str(set_dir.parent))  # fmt: skip
    assert code == 0
    return {r: (root / r).read_bytes() if (root / r).is_file() else None for r in rels}


@pytest.mark.parametrize(("project", "a", "b"), loop.STEPS)
def test_the_scripted_person_finishes_every_real_step(project, a, b, tmp_path):
    """Input: the project's stack for A, imported and ported to B (--no-finish); at each
    stop the project's own B files written into W and --continue. Outcome: the loop ends with
    the set written (exit 0, never more than 3 stops); lint passes on B; the ported set
    applied to pristine B gives the project's own B files byte for byte (a name the project's
    file defines twice folded as a port stop suggests, FOLDS; a project's edit port
    had no stop for, OWN_EDITS, made after --no-finish and taken at --continue); never more
    files left in conflict than a plain `git merge-file` leaves, but for a file whose clean
    merge defines a name twice; no file that port carried by itself had to be rewritten where
    the plain merge was right. Import takes every A stack as written (a method upstream's A
    already has is the author's duplicate, imported with a warning), with no fix."""
    r = loop.run(project, a, b, tmp_path)
    assert r.exit_code == 0, r.docs[-1]["steps"][-1]["fix"]
    assert r.stops <= 3
    assert set(r.folds) == FOLDS.get((project, a, b), set())
    m = load_manifest(r.set_dir / "patchset.yaml")
    rows = matrix.compute(m, [Version(b)], workers=1)
    assert [f.message for f in lint.check(m, rows) if f.level == "error"] == []
    got = applied(r.set_dir, b, tmp_path / "applied", r.want)
    for rel in r.want:
        wf = r.workspace / "sglang" / rel
        assert got[rel] == (wf.read_bytes() if wf.exists() else None), rel
    assert {rel for rel, data in r.want.items() if got[rel] != data} == set()
    plain = loop.plain(project, a, b, r.want, tmp_path / "plain")
    for rel in OWN_EDITS.get((project, a, b), set()):  # port's bytes were the plain merge's
        assert rel in r.hand - r.conflicts and plain.merged[rel][0] != r.want[rel], rel
    trap = {
        rel
        for rel in r.conflicts - plain.conflicts
        if rel in plain.merged
        and merge.python_problem(rel, plain.merged[rel][0], loop.release_file(b, rel))
    }
    assert len(r.conflicts - trap) <= len(plain.conflicts)
    assert loop.written_wrong(r, plain) == set()
