"""sgpatch.ledger: schema 2, migration of schema-1 ledgers, refusal of newer ones."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli as cli
from sgpatch import ledger as ledger_mod
from sgpatch.errors import SgpatchError
from sgpatch.ledger import FileRecord, GitCommit, Ledger, PatchRecord, SetRecord
from test_txn import SET, A, make_env, snapshot


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
