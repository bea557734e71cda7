"""status, probe and apply on a version the set was not checked on (a snapshot of main, a
nightly), on synthetic trees (helpers.make_env: a set checked on >=0.5.0,<0.6, variants made
on 0.5.0). Real trees relabelled as snapshots: tests/real/test_snapshots_real.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import SET, make_diff, make_env, one_line_error, patched, run_cli, tree_snapshot
from sgpatch.state import ledger as ledger_mod

SNAPSHOT = "0.6.0.dev3+gabc1234"  # main shortly before 0.6.0: past the set's range
LINE = (
    f"sgpatch: {SNAPSHOT} is not a release {SET} was checked on; planning with the 0.5.0 variants"
)


@pytest.fixture
def env(tmp_path: Path):
    return make_env(tmp_path, SNAPSHOT)


def test_status_plans_a_snapshot_with_the_nearest_variants(env):
    """Input: status (and --check, --json) on a tree labelled 0.6.0.dev3+gabc1234. Outcome:
    one stderr line says it is planned with the 0.5.0 variants; the states are the usual ones
    (all pending); --check exits 1 and its verdict says untested; JSON has `untested`."""
    _pkg, _sets, args = env
    code, out, err = run_cli("status", *args)
    assert code == 0 and LINE in err.splitlines()
    assert "pending" in out
    code, _out, err = run_cli("status", *args, "--check")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"sgpatch: {SET}: 4 pending; not done; untested: sglang {SNAPSHOT}, planned with the "
        "0.5.0 variants"
    )
    code, out, _err = run_cli("status", *args, "--json")
    doc = json.loads(out)["sets"][0]
    assert doc["untested"] == {"version": SNAPSHOT, "variants_of": "0.5.0"}
    assert {p["state"] for p in doc["patches"]} == {"pending"}
    assert doc["applied_untested"] is None


def test_apply_refuses_a_snapshot_without_the_flag(env):
    """Input: plain `apply` on the snapshot. Outcome: exit 2, one line naming --untested, the
    tree byte for byte as it was (no state folder either)."""
    pkg, _sets, args = env
    before = tree_snapshot(pkg)
    code, _out, err = run_cli("apply", *args)
    assert code == 2
    assert "--untested` applies its 0.5.0 variants" in one_line_error(err)
    assert tree_snapshot(pkg) == before and not (pkg / ".sgpatch").exists()


def test_dry_run_plans_it_and_says_the_flag_is_needed(env):
    """Input: `apply --dry-run` on the snapshot. Outcome: exit 0 (it would apply), a line that
    a real apply needs --untested, nothing written."""
    pkg, _sets, args = env
    before = tree_snapshot(pkg)
    code, _out, err = run_cli("apply", *args, "--dry-run")
    assert code == 0
    assert "sgpatch: a real apply on this untested version needs --untested" in err
    assert tree_snapshot(pkg) == before


def test_apply_untested_applies_and_the_ledger_says_so(env):
    """Input: `apply --untested` on the snapshot (every hunk exact and unique). Outcome: exit
    0, the set applied; the ledger records the 0.5.0 variants; status says the set was
    applied to an untested version, in its lines and its JSON; apply again is a no-op."""
    pkg, _sets, args = env
    code, _out, err = run_cli("apply", *args, "--untested")
    assert code == 0, err
    assert patched(pkg)
    record = ledger_mod.load(pkg).sets[SET]
    assert (record.sglang_version, record.variants_of) == (SNAPSHOT, "0.5.0")
    code, _out, err = run_cli("status", *args, "--check")
    assert code == 0
    assert (
        f"sgpatch: {SET} was applied to untested sglang {SNAPSHOT} with the 0.5.0 variants "
        "(apply --untested)"
    ) in err.splitlines()
    doc = json.loads(run_cli("status", *args, "--json")[1])["sets"][0]
    assert doc["applied_untested"] == {"version": SNAPSHOT, "variants_of": "0.5.0"}
    before = tree_snapshot(pkg)
    assert run_cli("apply", *args, "--untested")[0] == 0
    assert tree_snapshot(pkg) == before


def _repeat_c_block(pkg: Path) -> None:
    """c.py gets a second copy of the lines patch pc changes (gamma4..gamma10) at its end."""
    c = pkg / "srt/models/c.py"
    text = c.read_text()
    c.write_text(text + "".join(f"gamma{i}\n" for i in range(4, 11)))


def test_untested_apply_refuses_a_hunk_found_twice(env, tmp_path):
    """Input: c.py holds the lines pc changes twice (the hunk still matches at its stated
    line). Outcome: on the snapshot `apply --untested` exits 4 (ambiguous: pc's hunk #1 lines
    occur at 2 places), the tree byte for byte unchanged; the same tree labelled 0.5.9, a
    release the set was checked on, applies (exit 0): there lint vouched for the place."""
    pkg, _sets, args = env
    _repeat_c_block(pkg)
    before = tree_snapshot(pkg)
    code, out, err = run_cli("apply", *args, "--untested", "--json")
    assert code == 4, err
    pc = next(p for p in json.loads(out)["patches"] if p["id"] == "pc")
    assert pc["state"] == "conflict" and pc["how"] == "ambiguous"
    assert "hunk #1: the lines it changes are at 2 places (lines 5, 13)" in pc["note"]
    assert tree_snapshot(pkg) == before
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    assert run_cli("apply", *args)[0] == 0


FOO = ("def foo():", "    y = 0", "    x = 1", "    return x", "")
BAR = ("def bar():", "    y = 0", "    x = 1", "    return x", "")


def _pc_changes_foo(pkg: Path, sets: Path, *order: tuple[str, ...]) -> Path:
    """pc becomes a one-line-context change of foo's `x = 1` (made where foo comes first: line
    3, header `def foo():`), and c.py holds the defs in `order`."""
    made = "".join(f"{ln}\n" for ln in (*FOO, *BAR))
    diff = make_diff(made, made.replace("x = 1", "x = 2", 1), "python/sglang/srt/models/c.py", 1)
    diff = diff.replace("@@ -2,3 +2,3 @@\n", "@@ -2,3 +2,3 @@ def foo():\n")
    (sets / SET / "patches/0003-pc.patch").write_text(diff)
    c = pkg / "srt/models/c.py"
    c.write_text("".join(f"{ln}\n" for block in order for ln in block))
    return c


def test_untested_apply_refuses_the_stated_line_in_another_def_than_the_header_s(env):
    """Input (46.6): on the snapshot c.py holds `def bar()` then `def foo()` with the same
    lines; pc's hunk names `def foo():` and states line 3, which is inside bar. Outcome:
    `apply --untested` exits 4 (pc ambiguous: placed in bar while foo holds the copy the
    header names), the tree byte for byte unchanged (foo's and bar's copies as they were)."""
    pkg, sets, args = env
    _pc_changes_foo(pkg, sets, BAR, FOO)
    before = tree_snapshot(pkg)
    code, out, err = run_cli("apply", *args, "--untested", "--json")
    assert code == 4, err
    pc = next(p for p in json.loads(out)["patches"] if p["id"] == "pc")
    assert (pc["state"], pc["how"]) == ("conflict", "ambiguous")
    assert "the scope its @@ header names ('def foo():') holds the copy at line 7" in pc["note"]
    assert tree_snapshot(pkg) == before


def test_untested_apply_takes_the_copy_in_the_header_s_def(env):
    """Input: the same pc on a snapshot where foo comes first (the stated line is in foo; bar
    holds the other copy). Outcome: `apply --untested` exits 0 and changes foo's line only."""
    pkg, sets, args = env
    c = _pc_changes_foo(pkg, sets, FOO, BAR)
    code, _out, err = run_cli("apply", *args, "--untested")
    assert code == 0, err
    assert c.read_text() == "".join(f"{ln}\n" for ln in (*FOO, *BAR)).replace("x = 1", "x = 2", 1)


def test_untested_apply_refuses_a_whitespace_tolerant_hunk(env):
    """Input: a.py's line next to the one pa changes has trailing blanks (the engine places
    pa only ignoring them). Outcome: `apply --untested` exits 3 (pa uncertain), nothing
    written."""
    pkg, _sets, args = env
    a = pkg / "srt/a.py"
    a.write_text(a.read_text().replace("alpha4\n", "alpha4   \n"))
    before = tree_snapshot(pkg)
    code, out, _err = run_cli("apply", *args, "--untested", "--json")
    assert code == 3
    pa = next(p for p in json.loads(out)["patches"] if p["id"] == "pa")
    assert (pa["state"], pa["how"]) == ("conflict", "uncertain")
    assert "whitespace-tolerant" in pa["note"]
    assert tree_snapshot(pkg) == before


def test_a_set_s_fuzz_does_not_reach_a_snapshot(env):
    """Input: the set allows fuzz 2, and b.py's context line next to pb's change was edited.
    Outcome: on 0.5.9 (checked) apply places pb with fuzz (exit 0); on the snapshot `apply
    --untested` plans at fuzz 0 and refuses it (exit 3), nothing written."""
    pkg, sets, args = env
    yaml = sets / SET / "patchset.yaml"
    yaml.write_text(yaml.read_text().replace("summary: safety demo\n", "summary: s\nfuzz: 2\n"))
    b = pkg / "srt/layers/b.py"
    b.write_text(b.read_text().replace("beta3\n", "edited3\n"))
    before = tree_snapshot(pkg)
    code, out, _err = run_cli("apply", *args, "--untested", "--json")
    assert code == 3
    assert {p["id"]: p["state"] for p in json.loads(out)["patches"]}["pb"] == "conflict"
    assert tree_snapshot(pkg) == before
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    code, out, _err = run_cli("apply", *args, "--json")
    assert code == 0
    assert {p["id"]: p["how"] for p in json.loads(out)["planned"]}["pb"] == "fuzz 1"


@pytest.mark.parametrize("command", ["status", "apply", "probe"])
def test_older_than_every_variant_is_one_line_exit_2(tmp_path, command):
    """Input: a tree labelled 0.4.9.dev1 (below everything the set was checked on).
    Outcome: status and apply exit 2 with one line naming the set's range and the version, the
    tree unchanged; probe (which needs no variant) runs, and says nothing about variants."""
    pkg, _sets, args = make_env(tmp_path, "0.4.9.dev1")
    before = tree_snapshot(pkg)
    code, _out, err = run_cli(command, *args)
    if command == "probe":
        assert code == 0 and "planning with" not in err
        return
    assert code == 2
    assert one_line_error(err) == (
        f"sgpatch: error: patch set {SET} supports sglang >=0.5.0,<0.6; this tree is "
        "0.4.9.dev1, older than every version the set was checked on\n"
    )
    assert tree_snapshot(pkg) == before


@pytest.mark.parametrize("command", ["status", "apply"])
def test_a_tree_with_no_version_is_one_line_exit_2(env, command):
    """Input: the snapshot tree without its _version.py (nothing else tells a version).
    Outcome: exit 2, one line saying the version cannot be told, the tree unchanged."""
    pkg, _sets, args = env
    (pkg / "_version.py").unlink()
    before = tree_snapshot(pkg)
    code, _out, err = run_cli(command, *args)
    assert code == 2 and "cannot tell the SGLang version" in one_line_error(err)
    assert tree_snapshot(pkg) == before


def test_probe_says_which_variants_status_would_use(env):
    """Input: probe on the snapshot. Outcome: exit 0; the same one line as status; JSON
    `untested` names the version and the 0.5.0 variants."""
    _pkg, _sets, args = env
    code, _out, err = run_cli("probe", *args)
    assert code == 0 and LINE in err.splitlines()
    doc = json.loads(run_cli("probe", *args, "--json")[1])
    assert doc["untested"] == {"version": SNAPSHOT, "variants_of": "0.5.0"}


def test_status_without_a_set_names_the_flag_that_plans_a_snapshot(env):
    """Input: `status` without --set on the snapshot (no set's range holds it, nothing
    applied). Outcome: exit 2, one line: no set supports it, --set NAME plans it with the set's
    nearest variants."""
    pkg, sets, _args = env
    code, _out, err = run_cli("status", "--sglang-dir", str(pkg), "--patchsets", str(sets))
    assert code == 2
    assert "--set NAME plans a version a set was not checked on" in one_line_error(err)
