"""Drift: files of a site-packages install that differed from the wheel's RECORD before sgpatch
touched them. A synthetic site-packages tree (the safety set's tree plus a dist-info whose RECORD
lists the pristine hashes)."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import pytest

from helpers import B, add_dist_info, make_env
from helpers import run_cli as cli
from sgpatch.state import drift
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.ledger import FileRecord, Ledger, SetRecord


@pytest.fixture
def site(tmp_path):
    pkg, _sets, args = make_env(tmp_path)
    (pkg / "srt" / "unrelated.py").write_text("x = 1\n")
    add_dist_info(pkg)
    return pkg, args


def status(args) -> tuple[dict, str]:
    code, out, err = cli("status", *args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    code, _, human = cli("status", *args)
    assert code == 0
    return doc, human


def test_pristine_install_has_no_drift(site):
    _pkg, args = site
    doc, human = status(args)
    assert doc["drift"] == []
    assert "drift" not in human


def test_file_edited_before_sgpatch_is_drift_and_named(site):
    """Input: someone changed srt/layers/b.py (a file the set patches) and an unrelated file.
    Outcome: status names b.py (human and JSON); the unrelated file is not hashed."""
    pkg, args = site
    b = pkg / "srt/layers/b.py"
    b.write_text(B + "# local hack\n")
    (pkg / "srt/unrelated.py").write_text("x = 2\n")
    doc, human = status(args)
    assert [d["path"] for d in doc["drift"]] == ["srt/layers/b.py"]
    entry = doc["drift"][0]
    assert entry["seen_in"] == "tree"
    assert entry["sha256"] == hashlib.sha256(b.read_bytes()).hexdigest()
    assert entry["record_sha256"] == hashlib.sha256(B.encode()).hexdigest()
    assert "drift: 1 file(s) differ from the wheel's RECORD: srt/layers/b.py" in human


def test_sgpatch_own_edits_are_not_drift(site):
    _pkg, args = site
    assert cli("apply", *args)[0] == 0
    doc, human = status(args)
    assert doc["drift"] == []
    assert "drift" not in human


def test_drift_before_apply_stays_visible_after_apply(site):
    """The ledger keeps the pre-sgpatch hash, so apply does not launder someone else's edit."""
    pkg, args = site
    b = pkg / "srt/layers/b.py"
    b.write_text(B + "# local hack\n")
    assert cli("apply", *args)[0] == 0
    assert "BETA6" in b.read_text()
    doc, _ = status(args)
    (entry,) = doc["drift"]
    assert entry["path"] == "srt/layers/b.py" and entry["seen_in"] == "ledger"
    assert entry["sha256"] == hashlib.sha256((B + "# local hack\n").encode()).hexdigest()


def test_edit_after_apply_is_modified_not_drift(site):
    pkg, args = site
    assert cli("apply", *args)[0] == 0
    b = pkg / "srt/layers/b.py"
    b.write_text(b.read_text() + "# later\n")
    doc, _ = status(args)
    assert doc["drift"] == []
    states = {p["id"]: p["state"] for p in doc["sets"][0]["patches"]}
    assert states["pb"] == "modified"


def test_missing_file_is_drift(site):
    pkg, args = site
    (pkg / "srt/layers/b.py").unlink()
    doc, human = status(args)
    assert [(d["path"], d["sha256"]) for d in doc["drift"]] == [("srt/layers/b.py", None)]
    assert "srt/layers/b.py (missing)" in human


def test_no_record_means_not_checked(tmp_path):
    _pkg, _, args = make_env(tmp_path)
    doc, human = status(args)
    assert doc["drift"] is None and "drift" not in human


def test_check_whole_package_and_chained_sets(site):
    pkg, _ = site
    di = pkg.parent / "sglang-0.5.9.dist-info"
    (pkg / "srt/unrelated.py").write_text("x = 3\n")
    everything = drift.check(pkg, di, Ledger(), None)
    assert [d.path for d in everything] == ["srt/unrelated.py"]
    # set one patched a.py (before = RECORD), set two patched it after (before = one's after)
    a = ledger_mod.sha256((pkg / "srt/a.py").read_bytes())
    one = SetRecord("one", "0.5.9", "0", files={"srt/a.py": FileRecord(a, "h1")})
    two = SetRecord("two", "0.5.9", "0", files={"srt/a.py": FileRecord("h1", "h2")})
    assert drift.check(pkg, di, Ledger({"one": one, "two": two}), ["srt/a.py"]) == []
    bad = SetRecord("one", "0.5.9", "0", files={"srt/a.py": FileRecord("h0", "h1")})
    (found,) = drift.check(pkg, di, Ledger({"one": bad, "two": two}), ["srt/a.py"])
    assert found.sha256 == "h0" and found.seen_in == "ledger"


def test_record_parsing_tolerates_odd_rows(tmp_path):
    di = tmp_path / "sglang-1.dist-info"
    di.mkdir()
    (di / "RECORD").write_text(
        'sglang/a.py,sha256=AAAA,1\nsglang/b.py,md5=xx,1\nsglang/c.py,,\n"sglang/d,e.py",'
        "sha256=_-8,2\nother/x.py,sha256=AAAA,1\ngarbage\n\n"
    )
    got = drift.record_hashes(di)
    assert got == {"a.py": "000000", "d,e.py": "ffef"}
    assert drift.record_hashes(tmp_path / "nope") is None


def test_record_hashes_decodes_only_the_wanted_paths(tmp_path):
    """RECORD with three files, asked for one (and one it lacks): only that one comes back,
    with the same hash the full read gives (status asks only for the files the sets touch)."""
    di = tmp_path / "sglang-1.dist-info"
    di.mkdir()
    (di / "RECORD").write_text(
        "sglang/a.py,sha256=AAAA,1\nsglang/b.py,sha256=_-8,2\nsglang/c.py,sha256=AAAA,1\n"
    )
    full = drift.record_hashes(di)
    assert drift.record_hashes(di, wanted=["b.py", "zz.py"]) == {"b.py": full["b.py"]}
    assert drift.record_hashes(di, wanted=[]) == {}


def test_status_drift_cost_is_small(site):
    pkg, _args = site
    t0 = time.perf_counter()
    for _ in range(5):
        drift.check(pkg, pkg.parent / "sglang-0.5.9.dist-info", Ledger(), ["srt/a.py"])
    assert (time.perf_counter() - t0) / 5 < 0.05


def test_record_hashes_read_rows_as_csv_does(tmp_path):
    """Input: 300 random RECORDs (plain and quoted names, names with commas and quotes, CRLF,
    a form feed inside a name, non-ASCII, a last row without a newline) and wanted files.
    Outcome: record_hashes gives exactly the wanted rows csv reads, their hashes decoded."""
    import csv
    import io
    import random

    rng = random.Random(15)
    names = ["a.py", "b/c.py", "x,y.json", 'q"r.py', "é.py", "a.py.bak", "b/c\x0c.pyx"]

    def row(name: str) -> str:
        h = base64.urlsafe_b64encode(hashlib.sha256(rng.randbytes(4)).digest()).rstrip(b"=")
        field = f"sglang/{name}"
        if "," in field or '"' in field or rng.random() < 0.2:
            field = '"' + field.replace('"', '""') + '"'
        return f"{field},sha256={h.decode()},{rng.randint(1, 99)}"

    info = tmp_path / "sglang-1.dist-info"
    info.mkdir()
    for _ in range(300):
        rows = [row(rng.choice(names)) for _ in range(rng.randint(0, 8))]
        sep = rng.choice(["\n", "\n", "\r\n"])
        text = sep.join(rows) + rng.choice(["", sep])
        wanted = set(rng.sample(names, rng.randint(1, 3)))
        (info / "RECORD").write_bytes(text.encode())
        want = {}
        for r in csv.reader(io.StringIO(text, newline="")):
            if len(r) == 3 and r[0].removeprefix("sglang/") in wanted:
                want[r[0].removeprefix("sglang/")] = base64.urlsafe_b64decode(
                    r[1].removeprefix("sha256=") + "="
                ).hex()
        assert drift.record_hashes(info, "sglang", wanted) == want, (text, wanted)
