"""`make demo` (examples/demo.sh), the README's first command, runs end to end on real releases."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sgpatch import ledger as ledger_mod

REPO = Path(__file__).resolve().parents[2]
SET = "kimi-eagle3-sm120"


def test_demo_applies_the_set_and_shows_status_before_and_after(tmp_path: Path) -> None:
    """Input: examples/demo.sh with the real 0.5.9 and 0.5.10 releases, output captured (as
    in CI). Outcome: exit 0; status --check exits 1 before and 0 after; the set is applied on
    0.5.9 (five patches in the ledger) and on 0.5.10 with the Kimi hooks found upstream; no
    colour codes in a captured log."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEMO_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        ["bash", str(REPO / "examples" / "demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "\x1b" not in out, "colour codes in a captured demo log"
    checks = re.findall(r"^\$ sgpatch status .*--check.*\n(?:.*\n)*?\[exit (\d)\]", out, re.M)
    assert checks == ["1", "0"], out  # before: pending; after: done
    assert f"sgpatch: {SET}: applied; 5 file(s) written" in out
    assert "kimi-k25-eagle3-hooks on 0.5.10: upstream" in out
    applied = ledger_mod.load(tmp_path / "0.5.9" / "sglang").sets[SET]
    assert len(applied.patches) == 5
    status = subprocess.run(
        ["sgpatch", "status", "--json", "--sglang-dir", str(tmp_path / "0.5.10" / "sglang")],
        env=env,
        capture_output=True,
        text=True,
    )
    states = {p["id"]: p["state"] for p in json.loads(status.stdout)["sets"][0]["patches"]}
    assert states["kimi-k25-eagle3-hooks"] == "upstream"
    assert states["sm120-symm-mem-sizes"] == "applied"
