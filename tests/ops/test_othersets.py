"""othersets: a probe made true by another applied set's change is not "upstream"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import A, B, make_diff, make_env, run_cli


def _other_set(sets: Path, new_a: str, probe: str) -> tuple[str, ...]:
    """Set `other-set` beside safety-set: one patch `mine` turning srt/a.py into `new_a`, with
    the regex probe `probe` on srt/a.py or srt/layers/b.py ("FILE:REGEX")."""
    d = sets / "other-set"
    (d / "patches").mkdir(parents=True)
    (d / "patches" / "mine.patch").write_text(
        "Mine.\n\n" + make_diff(A, new_a, "python/sglang/srt/a.py")
    )
    file, regex = probe.split(":", 1)
    (d / "patchset.yaml").write_text(
        'schema: 1\nname: other-set\nsummary: o\nsglang: ">=0.5.0,<0.6"\npatches:\n'
        "  - id: mine\n    summary: m\n    type: feature\n    upstream: {status: pending}\n"
        f"    probe: {{file: {file}, regex: '{regex}'}}\n"
        '    variants:\n      - {sglang: ">=0.5.0", patch: patches/mine.patch}\n'
    )
    return ("--patchsets", str(sets), "--set", "other-set")


def _state(pkg: Path, other: tuple[str, ...]) -> dict:
    code, out, _ = run_cli("status", "--sglang-dir", str(pkg), *other, "--json")
    assert code == 0
    (mine,) = json.loads(out)["sets"][0]["patches"]
    return mine


@pytest.mark.parametrize(
    ("new_a", "state", "note"),
    [
        (A.replace("alpha5\n", "ALPHA5\n"), "present", "set safety-set made this change"),
        (A.replace("alpha5\n", "ALPHA5\n# mine\n"), "conflict", "the change set safety-set made"),
    ],
    ids=["same-change", "other-change"],
)
def test_a_probe_matching_another_sets_change_is_not_upstream(tmp_path, new_a, state, note):
    """Input: safety-set applied (its pa turns alpha5 into ALPHA5), then another set whose
    patch makes the same change, or ALPHA5 plus a line of its own, with a probe /^ALPHA5$/.
    Outcome: not `upstream` (was "upstream has it (probe matched)"): the same change is
    `present` naming safety-set; a different one is a `conflict` between the sets naming it
    (apply exit 3, nothing written); on the pristine tree the patch is `pending`."""
    pkg, sets, args = make_env(tmp_path)
    other = _other_set(sets, new_a, "srt/a.py:^ALPHA5$")
    assert _state(pkg, other)["state"] == "pending"
    assert run_cli("apply", *args)[0] == 0
    mine = _state(pkg, other)
    assert mine["state"] == state and note in mine["note"]
    if state == "conflict":
        before = (pkg / "srt/a.py").read_bytes()
        assert run_cli("apply", "--sglang-dir", str(pkg), *other)[0] == 3
        assert (pkg / "srt/a.py").read_bytes() == before


def test_a_probe_true_on_the_release_too_stays_upstream(tmp_path):
    """Input: safety-set applied (it changes srt/layers/b.py), and another set whose probe
    /^beta0$/ matches b.py, where the release itself has that line. Outcome: `upstream`: the
    probe is true on b.py as it was before safety-set as well."""
    pkg, sets, args = make_env(tmp_path)
    assert "beta0\n" in B
    other = _other_set(sets, A.replace("alpha5\n", "ALPHA5\n# mine\n"), "srt/layers/b.py:^beta0$")
    assert run_cli("apply", *args)[0] == 0
    assert _state(pkg, other)["state"] == "upstream"
