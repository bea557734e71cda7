"""sgpatch.state.upgrade: SGLang reinstalled or upgraded under an applied set (synthetic trees; the
real-release scenario is tests/real/test_upgrade_real.py)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from helpers import FILES, SET, full_snapshot, git, make_env, patched, write_set
from helpers import run_cli as cli
from helpers import tree_snapshot as snapshot
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.upgrade import _same_release, reconcile, reverted_outside


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


# --- ordinary git and pip work under an applied set (issue 22, item 6)

REVERTED = (
    "sgpatch: set safety-set was reverted outside sgpatch (every file it patched holds its "
    "bytes from before it again: git checkout, stash or reset, or a reinstall); its patches "
    "read pending: `sgpatch apply --set safety-set --sglang-dir {pkg} --patchsets {sets}` "
    "applies it again"
)
DROPPED = (
    "sgpatch: set safety-set was reverted outside sgpatch (every file it patched holds its "
    "bytes from before it again: git checkout, stash or reset, or a reinstall); its records "
    "are dropped"
)


def _git_checkout_tree(tmp_path: Path, monkeypatch) -> tuple[Path, Path, tuple[str, ...]]:
    """(repo, package root, CLI args): the synthetic tree as python/sglang of a git checkout
    with the pristine release committed (`.sgpatch/` ignored), and the safety set."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    repo = tmp_path / "repo"
    pkg = repo / "python" / "sglang"
    for rel, text in FILES.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (repo / ".gitignore").write_text(".sgpatch/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "pristine")
    write_set(tmp_path / "sets")
    args = ("--sglang-dir", str(repo), "--patchsets", str(tmp_path / "sets"), "--set", SET)
    return repo, pkg, args


@pytest.mark.parametrize(
    "undo", [("checkout", "--", "python/sglang"), ("stash",), ("reset", "--hard")]
)
def test_a_set_git_put_back_reads_reverted_outside_sgpatch(tmp_path, monkeypatch, undo):
    """Input: the set applied to a git checkout, then `git checkout -- python/sglang` / `git
    stash` / `git reset --hard` (every patched file back to its original bytes; the file the
    set created is untracked and stays). Outcome: `status` exits 0 saying so in one line, its
    patches `pending` (the created file's `present`), writing nothing; `status --check` exits
    1; `apply` exits 0 and patches the tree (the set recorded once); after the same git
    command again, `revert` exits 0 saying once that the records are dropped, and leaves no
    `.sgpatch/`."""
    repo, pkg, args = _git_checkout_tree(tmp_path, monkeypatch)
    reverted = REVERTED.format(pkg=pkg, sets=tmp_path / "sets")
    assert cli("apply", *args)[0] == 0 and patched(pkg)
    git(repo, *undo)
    before = full_snapshot(pkg, with_state=True)
    code, out, err = cli("status", *args, "--json")
    states = {p["id"]: p["state"] for p in __import__("json").loads(out)["sets"][0]["patches"]}
    assert code == 0 and err.splitlines() == [reverted]
    assert states == {"pa": "pending", "pb": "pending", "pc": "pending", "pd": "present"}
    code, _, err = cli("status", *args, "--check")
    assert code == 1 and err.splitlines()[0] == reverted
    assert full_snapshot(pkg, with_state=True) == before
    code, _, err = cli("apply", *args)
    assert code == 0 and patched(pkg) and DROPPED in err.splitlines()
    assert [p.id for p in ledger_mod.load(pkg).sets[SET].patches] == ["pa", "pb", "pc"]
    git(repo, *undo)
    code, _, err = cli("revert", *args)
    assert code == 0 and err.splitlines()[0] == DROPPED and err.count("dropped") == 1
    assert "nothing to revert" in err and not (pkg / ".sgpatch").exists()


def test_only_some_files_put_back_stays_modified(tmp_path, monkeypatch):
    """Input: the set applied to a git checkout, then `git checkout` of one patched file only.
    Outcome: no 'reverted outside' line; that patch is `modified`, `status --check` exits 1
    and `apply` exits 1 writing nothing, as before."""
    repo, pkg, args = _git_checkout_tree(tmp_path, monkeypatch)
    assert cli("apply", *args)[0] == 0
    git(repo, "checkout", "--", "python/sglang/srt/a.py")
    before = full_snapshot(pkg, with_state=True)
    code, out, err = cli("status", *args, "--check")
    assert code == 1 and "reverted outside" not in err
    assert "pa" in out and "modified" in out
    assert cli("apply", *args)[0] == 1
    assert full_snapshot(pkg, with_state=True) == before


def _record(files: dict[str, tuple[str | None, str | None]]) -> ledger_mod.SetRecord:
    recs = {p: ledger_mod.FileRecord(b, a) for p, (b, a) in files.items()}
    return ledger_mod.SetRecord("x", "0.5.9", "0", (), recs)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("f", "g", "expected"),
    [
        ("f0", "g0", ["low", "top"]),  # a git checkout of everything: both stacked sets off
        ("f1", "g1", ["top"]),  # only the top set's change undone: the low set still holds
        ("f2", "g1", []),  # both applied
        ("f0", "g1", []),  # the shared file at the low set's "before", but g still patched
    ],
)
def test_stacked_sets_are_judged_together(tmp_path, f, g, expected):
    """Input: set low patched f (f0->f1) and g (g0->g1); set top, applied on it, patched f
    (f1->f2); the files now hold the given bytes. Outcome: the sets reverted outside sgpatch
    are exactly `expected`: a top set's file back at the low set's "before" counts only when
    the low set is reverted too."""
    (tmp_path / "f").write_text(f)
    (tmp_path / "g").write_text(g)
    low = _record({"f": (_digest("f0"), _digest("f1")), "g": (_digest("g0"), _digest("g1"))})
    top = _record({"f": (_digest("f1"), _digest("f2"))})
    ledger = ledger_mod.Ledger({"low": low, "top": top})
    assert reverted_outside(tmp_path, ledger) == expected


def test_after_a_pip_upgrade_the_records_are_dropped_once_and_apply_is_suggested(tmp_path):
    """Input: the set applied on 0.5.9, 0.5.10 installed over it; `status` twice, `apply
    --dry-run`, `apply`, `status`. Outcome: the reading runs each say in one line that the
    set is no longer applied and to run `sgpatch apply --set safety-set --sglang-dir TREE
    --patchsets SETS` (never that records are dropped, which they are not); the `apply` that
    writes says once that its records are dropped; the status after it says nothing of the
    kind."""
    pkg, _, args = make_env(tmp_path)
    install(pkg, "0.5.9")
    assert cli("apply", *args)[0] == 0
    install(pkg, "0.5.10")
    reading = (
        "sgpatch: ledger is for 0.5.9, tree is now 0.5.10: reinstalled; set safety-set is no "
        f"longer applied: `sgpatch apply --set safety-set --sglang-dir {pkg} --patchsets "
        f"{tmp_path / 'sets'}` applies it to this tree"
    )
    for argv in (("status", *args), ("status", *args), ("apply", "--dry-run", *args)):
        code, _, err = cli(*argv)
        assert code == 0 and reading in err.splitlines() and "dropped" not in err, argv
    code, _, err = cli("apply", *args)
    assert code == 0 and err.count("records are dropped") == 1
    assert (
        "sgpatch: ledger is for 0.5.9, tree is now 0.5.10: reinstalled; set safety-set is no "
        "longer applied: its records are dropped"
    ) in err.splitlines()
    code, _, err = cli("status", *args)
    assert code == 0 and "reinstalled" not in err and "dropped" not in err
