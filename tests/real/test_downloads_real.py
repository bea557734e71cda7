"""Downloads in a build log (issue #14): `sgpatch fetch` and `sgpatch matrix` on an empty release
cache, output captured as in CI or `docker build`, with real wheels from the package index."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sgpatch.releases import cache as releases

SGPATCH = str(Path(sys.executable).with_name("sgpatch"))
SET = "kimi-eagle3-sm120"


def _run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "COLUMNS")}
    env[releases.CACHE_ENV] = str(cache)
    return subprocess.run([SGPATCH, *args], capture_output=True, text=True, env=env, check=False)


def _download_line(cache: Path, version: str) -> str:
    (wheel,) = (cache / "wheels").glob(f"sglang-{version}-*.whl")
    return rf"sgpatch: downloaded {re.escape(wheel.name)} \({wheel.stat().st_size / 1e6:.1f} MB in "


def test_fetch_off_a_terminal_prints_a_line_per_download_and_a_total(tmp_path):
    """Input: `sgpatch fetch 0.5.9 0.5.10` on an empty cache, stderr captured; then again.
    Outcome: exit 0; the log has one line per wheel with its real size, then the total line
    (2 wheels, the cache folder), then fetch's own lines; no carriage return or escape code.
    The second run downloads nothing and prints no download line."""
    cache = tmp_path / "cache"
    proc = _run(cache, "fetch", "0.5.9", "0.5.10")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert re.match(_download_line(cache, "0.5.9"), lines[0]), lines
    assert re.match(_download_line(cache, "0.5.10"), lines[1]), lines
    total = sum(p.stat().st_size for p in (cache / "wheels").glob("*.whl")) / 1e6
    assert re.fullmatch(
        rf"sgpatch: downloaded 2 wheel\(s\), {total:.1f} MB in [\d.]+ s, into "
        + re.escape(str(cache / "wheels")),
        lines[2],
    ), lines
    assert lines[3:] == [
        f"sglang {v}: {next((cache / 'wheels').glob(f'sglang-{v}-*.whl'))}"
        for v in ("0.5.9", "0.5.10")
    ]
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr
    again = _run(cache, "fetch", "0.5.9", "0.5.10")
    assert again.returncode == 0 and "downloaded" not in again.stderr, again.stderr


def test_matrix_on_an_empty_cache_says_what_it_downloads(tmp_path):
    """Input: `sgpatch matrix --releases ==0.5.10 --format json` on an empty cache. Outcome:
    stderr has the download line and the total line, stdout is the JSON document alone, and the
    row has no error."""
    cache = tmp_path / "cache"
    proc = _run(cache, "matrix", "--set", SET, "--releases", "==0.5.10", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert re.match(_download_line(cache, "0.5.10"), lines[0]), lines
    assert lines[1].startswith("sgpatch: downloaded 1 wheel(s), "), lines
    (row,) = json.loads(proc.stdout)["releases"]
    assert row["release"] == "0.5.10" and row["error"] is None
