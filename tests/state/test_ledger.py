"""sgpatch.state.ledger: schema 2, migration of schema-1 ledgers, refusal of newer ones."""

from __future__ import annotations

import json

import pytest

from helpers import SET, A, make_env
from helpers import run_cli as cli
from helpers import tree_snapshot as snapshot
from sgpatch.errors import SgpatchError
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.ledger import FileRecord, GitCommit, Ledger, PatchRecord, SetRecord


def _v1(doc: dict) -> dict:
    """A schema-2 document as sgpatch 0.x (schema 1) wrote it: no per-patch release, no
    modes, no commits."""
    for s in doc["sets"].values():
        for p in s["patches"]:
            p.pop("sglang_version", None)
        for f in s["files"].values():
            for k in ("mode_before", "mode_after", "link_before", "link_after"):
                f.pop(k, None)
        s.pop("commits", None)
    return {**doc, "schema": 1}


def test_v2_round_trip_keeps_every_field(tmp_path):
    record = SetRecord(
        "s",
        "0.5.9",
        "0.1",
        (PatchRecord("p", "patches/p.patch", "ab", ("x.py", "y.py"), "0.5.9"),),
        {
            "x.py": FileRecord("h0", "h1", 0o644, 0o755),
            "y.py": FileRecord(None, "h2", None, None, None, "target"),
        },
        (GitCommit("p", "c0ffee"),),
    )
    (tmp_path / ".sgpatch").mkdir()
    (tmp_path / ".sgpatch" / "ledger.json").write_bytes(ledger_mod.dump(Ledger({"s": record})))
    assert ledger_mod.load(tmp_path) == Ledger({"s": record})
    assert json.loads(ledger_mod.dump(Ledger({"s": record})))["schema"] == 2


def test_a_schema_1_ledger_is_migrated_on_read_and_revert_still_works(tmp_path):
    """Input: the set applied, its ledger rewritten as schema 1 and the after-bytes removed
    from the store (what an older sgpatch left). Outcome: status reads it (applied), each
    patch's release is the set's, revert restores the pristine tree and removes .sgpatch/;
    revert --force of an edited file falls back to the patch files."""
    pkg, _, args = make_env(tmp_path)
    pristine = snapshot(pkg)
    assert cli("apply", *args)[0] == 0
    path = pkg / ".sgpatch" / "ledger.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(_v1(doc)))
    for rec in ledger_mod.load(pkg).sets[SET].files.values():
        stored = pkg / ledger_mod.original_rel(rec.after)
        if rec.after != rec.before and stored.exists():
            stored.chmod(0o644)
            stored.unlink()
    record = ledger_mod.load(pkg).sets[SET]
    assert {p.sglang_version for p in record.patches} == {"0.5.9"}
    code, out, _ = cli("status", *args, "--json")
    assert code == 0
    assert {p["state"] for p in json.loads(out)["sets"][0]["patches"]} == {"applied"}
    (pkg / "srt/a.py").write_text((pkg / "srt/a.py").read_text() + "# mine\n")
    assert cli("revert", *args, "--force")[0] == 0
    assert (pkg / "srt/a.py").read_text() == A + "# mine\n"
    assert not (pkg / ".sgpatch").exists()
    assert {k: v for k, v in snapshot(pkg).items() if k != "srt/a.py"} == {
        k: v for k, v in pristine.items() if k != "srt/a.py"
    }


MISTYPED = json.dumps(
    {
        "schema": 2,
        "sets": {
            "s": {
                "sglang_version": "0.5.9",
                "sgpatch_version": "0",
                "patches": [],
                "files": {"x": {"before": None, "after": "h", "mode_before": "644"}},
            }
        },
    }
)


@pytest.mark.parametrize(
    "text,fragment",
    [('{"schema": 3, "sets": {}}', "newer sgpatch"), (MISTYPED, "corrupted")],
)
def test_newer_or_mistyped_ledgers_are_refused(tmp_path, text, fragment):
    (tmp_path / ".sgpatch").mkdir()
    (tmp_path / ".sgpatch" / "ledger.json").write_text(text)
    with pytest.raises(SgpatchError) as exc:
        ledger_mod.load(tmp_path)
    assert fragment in exc.value.message


def _set(name: str, files: dict[str, FileRecord]) -> SetRecord:
    return SetRecord(name, "0.5.9", "0", (), files)


def test_the_set_order_is_stored_and_read_back(tmp_path):
    """Input: a ledger whose sets were applied as z then a, dumped and loaded; the same
    document without its `order` (as written before sets could stack). Outcome: the order
    z, a survives the round trip (not the names' order); without `order` the sets read back
    by name."""
    ledger = Ledger({"z": _set("z", {}), "a": _set("a", {})})
    (tmp_path / ".sgpatch").mkdir()
    path = tmp_path / ".sgpatch" / "ledger.json"
    path.write_bytes(ledger_mod.dump(ledger))
    assert list(ledger_mod.load(tmp_path).sets) == ["z", "a"]
    doc = json.loads(path.read_text())
    del doc["order"]
    path.write_text(json.dumps(doc))
    assert list(ledger_mod.load(tmp_path).sets) == ["a", "z"]


@pytest.mark.parametrize("order", [["z"], ["z", "a", "a"], ["z", "b"], "za"])
def test_an_order_not_naming_every_set_once_is_corrupted(tmp_path, order):
    """Input: a stored `order` that leaves a set out, names one twice, names an unknown set,
    or is not a list. Outcome: 'ledger is corrupted', never a half-read ledger."""
    doc = json.loads(ledger_mod.dump(Ledger({"z": _set("z", {}), "a": _set("a", {})})))
    (tmp_path / ".sgpatch").mkdir()
    (tmp_path / ".sgpatch" / "ledger.json").write_text(json.dumps({**doc, "order": order}))
    with pytest.raises(SgpatchError) as exc:
        ledger_mod.load(tmp_path)
    assert "corrupted" in exc.value.message


def test_record_apply_stacks_a_new_set_and_leaves_the_lower_record_alone():
    """Input: set z recorded on f.py (o -> a), then set y applied on f.py (a -> b), then z
    applied again on g.py. Outcome: z's record of f.py still says o -> a, y's says a -> b;
    the order is z, y (a set applied again keeps its place)."""
    ledger = ledger_mod.record_apply(Ledger(), "z", "0.5.9", "0", [], {"f.py": (b"o", b"a")})
    ledger = ledger_mod.record_apply(ledger, "y", "0.5.9", "0", [], {"f.py": (b"a", b"b")})
    ledger = ledger_mod.record_apply(ledger, "z", "0.5.9", "0", [], {"g.py": (b"1", b"2")})
    sha = ledger_mod.sha256
    assert list(ledger.sets) == ["z", "y"]
    assert ledger.sets["z"].files["f.py"] == FileRecord(sha(b"o"), sha(b"a"))
    assert ledger.sets["y"].files["f.py"] == FileRecord(sha(b"a"), sha(b"b"))
    assert ledger_mod.above(ledger, "z", "f.py") == ["y"]
    assert ledger_mod.above(ledger, "z", "g.py") == ledger_mod.above(ledger, "y", "f.py") == []


def test_holds_follows_the_chain_of_stacked_sets():
    """Input: z (o -> a) under y (a -> b) on f.py, and a ledger where y's 'before' is not z's
    'after' (y was applied over an edit). Outcome: f.py holding b holds for both sets, holding
    a holds for neither (y's change is gone), and a broken chain holds for z never (the edit
    under y) but for y still."""
    sha = ledger_mod.sha256
    z = _set("z", {"f.py": FileRecord(sha(b"o"), sha(b"a"))})
    y = _set("y", {"f.py": FileRecord(sha(b"a"), sha(b"b"))})
    ledger = Ledger({"z": z, "y": y})
    assert ledger_mod.holds(ledger, "z", "f.py", sha(b"b"))
    assert ledger_mod.holds(ledger, "y", "f.py", sha(b"b"))
    assert not ledger_mod.holds(ledger, "z", "f.py", sha(b"a"))
    assert not ledger_mod.holds(ledger, "y", "f.py", sha(b"a"))
    broken = Ledger({"z": z, "y": _set("y", {"f.py": FileRecord(sha(b"e"), sha(b"b"))})})
    assert not ledger_mod.holds(broken, "z", "f.py", sha(b"b"))
    assert ledger_mod.holds(broken, "y", "f.py", sha(b"b"))
