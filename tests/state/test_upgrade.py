"""sgpatch.state.upgrade: SGLang reinstalled or upgraded under an applied set (synthetic trees; the
real-release scenario is tests/real/test_upgrade_real.py)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from helpers import FILES, SET, make_env, patched
from helpers import run_cli as cli
from helpers import tree_snapshot as snapshot
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.upgrade import _same_release, reconcile


def _record_line(rel: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sglang/{rel},sha256={digest},{len(data)}\n"


def install(pkg: Path, version: str) -> None:
    """What `pip install sglang==VERSION` does to the synthetic tree: pristine files (the
    patch-created file is not the wheel's, so it stays), the version, a fresh dist-info."""
    site = pkg.parent
    for old in site.glob("sglang-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    files = {k: v.encode() for k, v in FILES.items()}
    files["_version.py"] = f"__version__ = version = '{version}'\n".encode()
    for rel, data in files.items():
        (pkg / rel).write_bytes(data)
    info = site / f"sglang-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(_record_line(r, d) for r, d in sorted(files.items())))


def test_upgrade_under_an_applied_set_is_said_once_and_apply_plans_afresh(tmp_path):
    """Input: the set applied on 0.5.9, then 0.5.9 -> 0.5.10 installed over it (pristine files,
    the ledger left behind). Outcome: status says 'ledger is for 0.5.9, tree is now 0.5.10:
    reinstalled' in one line, shows the patches pending (never modified), reports no drift
    and exits 0; apply patches 0.5.10 and stores a ledger for 0.5.10 without the old bytes;
    revert then leaves the 0.5.10 tree as installed, with no .sgpatch/."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    old_digests = ledger_mod.referenced(ledger_mod.load(pkg))
    install(pkg, "0.5.10")
    installed = snapshot(pkg)
    code, out, err = cli("status", *args, "--json")
    assert code == 0, err
    assert "ledger is for 0.5.9, tree is now 0.5.10: reinstalled" in err
    assert err.count("reinstalled") == 1
    doc = __import__("json").loads(out)
    states = {p["id"]: p["state"] for p in doc["sets"][0]["patches"]}
    assert states == {"pa": "pending", "pb": "pending", "pc": "pending", "pd": "present"}
    assert doc["drift"] == []
    assert ledger_mod.load(pkg).sets[SET].sglang_version == "0.5.9"  # status wrote nothing
    code, _, err = cli("apply", *args)
    assert code == 0, err
    assert patched(pkg)
    record = ledger_mod.load(pkg).sets[SET]
    assert record.sglang_version == "0.5.10"
    assert {p.sglang_version for p in record.patches} == {"0.5.10"}
    store = {p.name for p in (pkg / ".sgpatch" / "originals").iterdir()}
    assert store == ledger_mod.referenced(ledger_mod.load(pkg))
    assert not (old_digests - ledger_mod.referenced(ledger_mod.load(pkg))) & store
    assert cli("revert", *args)[0] == 0
    assert not (pkg / ".sgpatch").exists()
    assert snapshot(pkg) == installed


def test_revert_after_an_upgrade_clears_the_stale_record(tmp_path):
    """Input: applied on 0.5.9, 0.5.10 installed over it, then `revert` (the documented way
    out used to exit 3). Outcome: exit 0, one line saying the tree was reinstalled and the set
    is not applied, the installed files untouched, no .sgpatch/ left."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    install(pkg, "0.5.10")
    installed = snapshot(pkg)
    for force in ((), ("--force",)):
        code, _, err = cli("revert", *args, *force)
        assert code == 0, err
        assert snapshot(pkg) == installed
        assert not (pkg / ".sgpatch").exists()
        assert "nothing to revert" in err


def test_reinstall_of_the_same_release_is_seen_by_its_record_hashes(tmp_path):
    """Input: applied on 0.5.9, then `pip install --force-reinstall sglang==0.5.9` (same
    version, the wheel's bytes back). Outcome: status says the tree holds a fresh 0.5.9
    install and shows the patches pending, never modified (--check: exit 1, pending); apply
    patches again."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    install(pkg, "0.5.9")
    code, out, err = cli("status", *args, "--check")
    assert code == 1, err
    assert "fresh 0.5.9 install" in err and "modified" not in out + err
    assert cli("apply", *args)[0] == 0
    assert patched(pkg)


def test_a_hand_edit_on_the_same_release_is_still_modified(tmp_path):
    """Input: applied on 0.5.9, then one patched file edited by hand (not a reinstall: the
    other files still hold what sgpatch wrote). Outcome: no 'reinstalled' line; that patch is
    modified and apply exits 1 as before."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    (pkg / "srt/a.py").write_text("edited\n")
    code, _, err = cli("apply", *args)
    assert code == 1 and "reinstalled" not in err


def test_reconcile_keeps_a_ledger_that_matches_and_drops_one_for_another_release(tmp_path):
    """Input: reconcile() on a tree at 0.5.9 with the set recorded for 0.5.9 (bytes as
    written), then the same ledger with the tree at 0.5.10. Outcome: first kept whole, no
    notes; then dropped with one note naming both releases."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    stored = ledger_mod.load(pkg)
    info = pkg.parent / "sglang-0.5.9.dist-info"
    same = reconcile(pkg, "0.5.9", info, stored)
    assert same.ledger == stored and same.stale == () and same.notes == ()
    other = reconcile(pkg, "0.5.10", info, stored)
    assert other.stale == (SET,) and other.ledger.sets == {}
    assert other.notes[0].startswith("ledger is for 0.5.9, tree is now 0.5.10: reinstalled")


@pytest.mark.parametrize(
    "recorded,now,same",
    [
        ("0.5.9", "0.5.9", True),
        ("0.5.9", "0.5.10", False),
        ("0.5.9", "0.5.9.post1.dev3+gabc1234", True),  # a checkout a few commits on
        ("0.5.9.post1.dev1+gabc", "0.5.9.post1.dev2+gdef", True),
        ("0.5.10", "0.5.10+cu130", True),  # a local label: RECORD decides
        ("0.5.1.post1", "0.5.1.post2", False),  # real post releases are releases
        ("0.5.9", "0.5.10.post1.dev1+gabc", False),
    ],
)
def test_same_release(recorded, now, same):
    assert _same_release(recorded, now) is same
