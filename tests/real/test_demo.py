"""`make demo` (examples/demo.sh), the README's first command, runs end to end on real releases."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from sgpatch.state import ledger as ledger_mod

REPO = Path(__file__).resolve().parents[2]
SET = "kimi-eagle3-sm120"


def _demo_env(
    demo_dir: Path, extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()
) -> dict[str, str]:
    """The environment `make demo` gives examples/demo.sh (this venv's sgpatch first on PATH),
    working in `demo_dir`."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DEMO_DIR": str(demo_dir),
        **(extra or {}),
    }
    for name in drop:
        env.pop(name, None)
    return env


def _run_demo(env: dict[str, str]) -> str:
    """examples/demo.sh run in `env`; asserts it exits 0 and returns its captured output."""
    proc = subprocess.run(
        ["bash", str(REPO / "examples" / "demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    return out


def test_demo_applies_the_set_and_shows_status_before_and_after(tmp_path: Path) -> None:
    """Input: examples/demo.sh with the real 0.5.9 and 0.5.10 releases, output captured (as
    in CI). Outcome: exit 0; status --check exits 1 before and 0 after; the set is applied on
    0.5.9 (five patches in the ledger) and on 0.5.10 with the Kimi hooks found upstream; no
    colour codes in a captured log."""
    env = _demo_env(tmp_path)
    out = _run_demo(env)
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


def test_demo_titles_follow_what_status_reports_on_another_release(tmp_path, release_tree, capsys):
    """Input: the demo with SGLANG_VERSION=0.5.14 (three patches upstream there). Outcome:
    exit 0; the 'status before' title gives the counts `status --json` reports on our own copy
    of 0.5.14; the comparison release is the first later one the set supports, never an older
    one."""
    from helpers import sgpatch
    from sgpatch.ops.matrix import select_versions
    from sgpatch.patchset.manifest import load_set

    out = _run_demo(
        _demo_env(tmp_path / "demo", {"SGLANG_VERSION": "0.5.14"}, drop=("UPSTREAM_VERSION",))
    )
    capsys.readouterr()
    assert (
        sgpatch("status", "--json", "--set", SET, "--sglang-dir", str(release_tree("0.5.14"))) == 0
    )
    patches = json.loads(capsys.readouterr().out)["sets"][0]["patches"]
    counts: dict[str, int] = {}
    for p in patches:
        if p["selected"]:
            counts[p["state"]] = counts.get(p["state"], 0) + 1
    expected = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    assert f"==== status before: {expected}; not done (status --check exits 1)" in out, out
    later = select_versions(load_set(SET), ">0.5.14")[0]
    assert re.search(rf"^==== SGLang {re.escape(str(later))}[ ,]", out, re.M), out
    titles = [line for line in out.splitlines() if line.startswith("==== ")]
    assert not [t for t in titles if "everything pending" in t or "0.5.10" in t], titles


def test_demo_keeps_its_trees_in_one_named_place_not_in_tmp(tmp_path: Path) -> None:
    """Input: examples/demo.sh twice, without DEMO_DIR, from a working folder, with TMPDIR a
    folder of its own. Outcome: nothing is left in TMPDIR; the trees are in ./demo-tree (the
    same ones, replaced by the second run: 0.5.9, 0.5.10 and the pristine copy), and the last
    line says where they are, how to remove them and how to revert the set; that revert, run as
    typed from another folder by a shell with no sgpatch on its PATH, exits 0."""
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    env = _demo_env(work, {"TMPDIR": str(tmp)}, drop=("DEMO_DIR",))
    for _ in range(2):
        proc = subprocess.run(["bash", str(REPO / "examples" / "demo.sh")], env=env, cwd=work,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(tmp.iterdir()) == []
    assert sorted(p.name for p in (work / "demo-tree").iterdir()) == ["0.5.10", "0.5.9", "pristine"]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"trees kept in {work / 'demo-tree'}, replaced by the next run")
    assert last.endswith(f"remove with: rm -rf {work / 'demo-tree'})")
    revert = last.split("(revert with: ", 1)[1].split("; remove with:", 1)[0]
    bare = {**env, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", revert], env=bare, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "reverted" in done.stderr, (revert, done.stderr)
