"""What --continue writes into the set (port/finish.py), on synthetic releases: a patch n/a
on the nearest release although one of its files is on V gets a `==V` n/a variant when the
person wrote the reason into W/.sgpatch-port/na-ID at the stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import V10, make_set, make_wheel, port_cache, port_diff, release_files, run_cli
from sgpatch.patchset.manifest import load_manifest

THIRD = """\
  - id: third
    summary: third
    type: bugfix
    upstream: {status: pending}
    variants:
      - {sglang: ">=2.0", patch: patches/2.0/0003-third.patch}
      - {sglang: ">=1.0,<1.1", na: "no srt/extra.py before 2.0"}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    c = port_cache(tmp_path, monkeypatch)
    extra = {"sglang/srt/extra.py": b"def extra():\n    return 0\n"}
    make_wheel(c / "wheels", "1.8", release_files(V10, "1.8", extra))
    return c


def sgport(*args: str) -> tuple[int, dict]:
    code, out, _err = run_cli("port", "--offline", "--json", *args)
    return code, json.loads(out)


def na_set(tmp_path: Path) -> Path:
    """Set `demo` plus `third`: n/a on 1.0 ("no srt/extra.py"), a patch file for 2.0 on it."""
    d = make_set(tmp_path)
    (d / "patches/2.0").mkdir()
    extra = "def extra():\n    return 0\n"
    (d / "patches/2.0/0003-third.patch").write_text(
        "Subject: third\n\n" + port_diff(extra, extra.replace("0\n", "1\n"), "srt/extra.py")
    )
    (d / "patchset.yaml").write_text((d / "patchset.yaml").read_text() + THIRD)
    return d


def test_a_patch_n_a_nearby_whose_file_is_here_is_n_a_as_the_person_says(cache, tmp_path):
    """Input: `third` is n/a on 1.0, ported to 1.8, which has srt/extra.py: port stops (exit
    3) with a note naming W/.sgpatch-port/na-third; the person writes a reason there and runs
    --continue. Outcome: exit 0; `third` gets a `==1.8` n/a variant with that reason, and lint
    on 1.8 is clean (no --abort needed)."""
    d = na_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.8",
                       "--workspace", str(w))  # fmt: skip
    assert code == 3, doc
    note = {p["id"]: p for p in doc["steps"][0]["patches"]}["third"]["note"]
    assert f"write why into {w}/.sgpatch-port/na-third" in note
    (w / ".sgpatch-port/na-third").write_text("1.8's srt/extra.py has no such path\n")
    code, doc = sgport("--continue", "--workspace", str(w))
    assert code == 0, doc["steps"][-1]["fix"]
    assert (
        "third: n/a on 1.8 (as na-third says): new variant '==1.8'" in doc["steps"][-1]["changes"]
    )
    na = [v for v in load_manifest(d / "patchset.yaml").patch("third").variants if v.na]
    assert [str(v.sglang) for v in na] == ["==1.8", ">=1.0,<1.1"]
    assert na[0].na == "1.8's srt/extra.py has no such path"
    assert run_cli("lint", "--set", "demo", "--patchsets", str(d.parent), "--offline")[0] == 0
