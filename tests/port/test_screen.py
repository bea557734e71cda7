"""What a port step prints (sgpatch.port.screen): a stop fits one screen whatever the stack,
the details go to W's fix file, --json and `port --show`, and the fix file says only what is
still left to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import make_diff, make_wheel, offline_cache, release_files, run_cli

N = 40  # patches, each stopping on a file of its own (past PATCH_ROWS and FILE_ROWS)


def _module(i: int, x: int) -> str:
    return f'"""Module {i}."""\n\n\ndef function_{i}():\n    x = {x}\n    return x * {i}\n'


@pytest.fixture
def big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """1.0 and 1.4 with N modules srt/m{i}.py (x = 1 on 1.0, x = 3 on 1.4), and the set
    `big` made on 1.0: patch p{i} sets x = 2 in m{i}.py (each conflicts on 1.4)."""
    c = offline_cache(tmp_path, monkeypatch)
    for v, x in (("1.0", 1), ("1.4", 3)):
        extra = {f"sglang/srt/m{i}.py": _module(i, x).encode() for i in range(N)}
        make_wheel(c / "wheels", v, release_files("", v, extra))
    d = tmp_path / "sets" / "big"
    (d / "patches/1.0").mkdir(parents=True)
    rows = []
    for i in range(N):
        diff = make_diff(_module(i, 1), _module(i, 2), f"python/sglang/srt/m{i}.py")
        (d / f"patches/1.0/{i:04d}-p{i}.patch").write_text(f"Subject: p{i}\n\n{diff}")
        variant = f'{{sglang: "==1.0", patch: patches/1.0/{i:04d}-p{i}.patch}}'
        head = f"  - id: p{i}\n    summary: p{i}\n    type: bugfix\n"
        rows.append(f"{head}    upstream: {{status: pending}}\n    variants:\n      - {variant}\n")
    (d / "patchset.yaml").write_text(
        'schema: 1\nname: big\nsummary: big\nsglang: "==1.0"\npatches:\n' + "".join(rows)
    )
    return d


def test_a_stop_of_forty_conflicted_files_fits_one_screen(big, tmp_path):
    """Input: the 40-patch set ported to 1.4 (every patch stops on its own file, each with a
    side-by-side detail). Outcome: exit 3 in at most 100 lines on the terminal: the patch
    lines cut with `... and N more patches (in --json)`, the files cut with `... and N more
    files (in W/.sgpatch-port/fix)`, the last line the next command; no side-by-side detail
    on the terminal; W's fix file holds every file's entry with its detail, and `port --show`
    prints one file's."""
    w = tmp_path / "w"
    code, out, err = run_cli("port", "--offline", "--set", "big", "--patchsets",
                             str(big.parent), "--to", "1.4", "--workspace", str(w))  # fmt: skip
    lines = err.splitlines()
    assert code == 3 and out == ""
    assert len(lines) <= 100, len(lines)
    assert "  ... and 10 more patches (in --json)" in lines
    assert f"    ... and 15 more files (in {w}/.sgpatch-port/fix)" in lines
    assert not any(" | " in ln for ln in lines)  # no side-by-side detail on the terminal
    assert lines[-1].startswith("sgpatch port: stopped: fix what is listed above")
    fix = (w / ".sgpatch-port/fix").read_text()
    assert all(f"sglang/srt/m{i}.py (markers at lines" in fix for i in range(N))
    assert fix.count("hunk #1: conflict") == N
    code, shown, _ = run_cli("port", "--show", "sglang/srt/m7.py", "--workspace", str(w))
    assert code == 0 and "p7 hunk(s) #1" in shown and "|" in shown


def test_the_fix_file_says_only_what_is_left_after_a_continue(big, tmp_path):
    """Input: the 40-patch set stopped on 1.4; every file but m5.py fixed by hand, then
    --continue. Outcome: exit 3; the terminal lists m5.py alone under `left to fix in W`;
    the fix file is written again: m5.py (its markers and its hunk's detail) and no file
    already fixed."""
    w = tmp_path / "w"
    args = ("port", "--offline", "--set", "big", "--patchsets", str(big.parent), "--to", "1.4",
            "--workspace", str(w))  # fmt: skip
    assert run_cli(*args)[0] == 3
    for i in range(N):
        if i != 5:
            (w / f"sglang/srt/m{i}.py").write_text(_module(i, 2))
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 3
    lines = err.splitlines()
    at = lines.index(f"  left to fix in W (then `sgpatch port --continue --workspace {w}`):")
    assert lines[at + 1].startswith("    sglang/srt/m5.py: conflict markers at lines ")
    assert not lines[at + 2].startswith("    sglang/")
    fix = (w / ".sgpatch-port/fix").read_text()
    assert "sglang/srt/m5.py" in fix and "hunk #1: conflict" in fix
    assert not any(f"sglang/srt/m{i}.py" in fix for i in range(N) if i != 5)
