"""`sgpatch verify` on the shipped set over real releases, as an author runs it."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import sgpatch
from sgpatch.patchset.manifest import load_set

SET = "kimi-eagle3-sm120"
RELEASES = ">=0.5.13.post1,<=0.5.14"  # 0.5.13.post1 and 0.5.14: a .post and three upstream


def test_verify_passes_the_shipped_set_and_agrees_with_status(release_tree, capsys):
    """Input: `sgpatch verify --set kimi-eagle3-sm120` over 0.5.13.post1 and 0.5.14 (a separate
    process, as installed). Outcome: exit 0, every step ok on both releases, and each
    release's states are what `apply --with OPTIONAL...` then `status --json` report on our own copy
    of that release."""
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", "verify", "--set", SET, "--releases", RELEASES, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["release"] for r in doc["releases"]] == ["0.5.13.post1", "0.5.14"]
    for rel in doc["releases"]:
        assert [s["step"] for s in rel["steps"] if s["ok"]] == [
            "apply",
            "compile",
            "imports",
            "reapply",
            "status",
            "revert",
        ]
        root = release_tree(rel["release"])
        optional = [a for p in load_set(SET).patches if p.optional for a in ("--with", p.id)]
        args = ("--set", SET, "--sglang-dir", str(root), *optional)
        assert sgpatch("apply", *args) == 0
        capsys.readouterr()
        assert sgpatch("status", *args, "--json") == 0
        states = {
            p["id"]: p["state"] for p in json.loads(capsys.readouterr().out)["sets"][0]["patches"]
        }
        assert rel["states"] == states


def test_verify_human_output_has_a_table_and_a_verdict(tmp_path):
    """Input: `sgpatch verify` on 0.5.14 without --json, output captured. Outcome: the table
    on stdout with the release's row all ok, the verdict line last on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", "verify", "--set", SET, "--releases", "==0.5.14"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()[:2]
    assert header.split() == [
        "release",
        "patches",
        "apply",
        "compile",
        "imports",
        "reapply",
        "status",
        "revert",
    ]
    assert row.split()[0] == "0.5.14" and row.split()[-6:] == ["ok"] * 6
    assert proc.stderr.splitlines()[-1] == f"sgpatch: {SET}: 1 release(s); verified"
