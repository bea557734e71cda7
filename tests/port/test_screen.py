"""What a port step prints (sgpatch.port.screen): a stop fits one screen whatever the stack,
the details go to W's fix file, --json and `port --show`, and the fix file says only what is
still left to fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import make_diff, make_set, make_wheel, offline_cache, release_files, run_cli

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
    files (in W/.sgpatch-port/fix)`, each N what was cut of the 40, the probes as well; the
    last line the next command; no side-by-side detail
    on the terminal; W's fix file holds every file's entry with its detail, and `port --show`
    prints one file's."""
    w = tmp_path / "w"
    code, out, err = run_cli("port", "--offline", "--set", "big", "--patchsets",
                             str(big.parent), "--to", "1.4", "--workspace", str(w))  # fmt: skip
    lines = err.splitlines()
    assert code == 3 and out == ""
    assert len(lines) <= 100, len(lines)
    patches = [ln for ln in lines if re.match(r"  p\d+: needs a hand", ln)]
    files = [ln for ln in lines if re.match(r"    sglang/srt/m\d+\.py ", ln)]
    assert f"  ... and {N - len(patches)} more patches (in --json)" in lines
    assert f"    ... and {N - len(files)} more files (in {w}/.sgpatch-port/fix)" in lines
    assert patches and files
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


@pytest.mark.parametrize("sizes", [(0, 1, 2), (40, 40, 40), (3, 200, 1), (120, 0, 0)])
@pytest.mark.parametrize("rows", [1, 2, 7])
def test_fit_keeps_every_part_under_the_budget_saying_what_it_cut(sizes, rows):
    """Input: a heading and three lists (of `sizes` rows, each `rows` lines, the middle one
    with a fixed last line), fitted into 40 lines. Outcome: at most 40 lines; every part
    keeps its heading and fixed line; a cut part ends with one `... and N more` line whose N
    is the rows cut."""
    from sgpatch.port.screen import Part, fit

    def part(name: str, n: int, tail: tuple[str, ...] = ()) -> Part:
        body = tuple(tuple(f"{name}{i}.{j}" for j in range(rows)) for i in range(n))
        return Part((f"{name}:",), body, lambda cut: f"... and {cut} more {name}", tail)

    parts = [Part(("top",), (), str), part("a", sizes[0]), part("b", sizes[1], ("b-end",)),
             part("c", sizes[2])]  # fmt: skip
    got = fit(parts, 40)
    assert len(got) <= 40
    assert got[0] == "top" and "b-end" in got
    for name, n in zip("abc", sizes, strict=True):
        assert f"{name}:" in got
        kept = len({ln.split(".")[0] for ln in got if re.fullmatch(rf"{name}\d+\.\d+", ln)})
        cut = [ln for ln in got if ln.startswith("... and ") and ln.endswith(f" {name}")]
        assert cut == ([f"... and {n - kept} more {name}"] if kept < n else [])


def test_a_step_walk_says_each_release_before_the_stop_in_one_line(cache, tmp_path):
    """Input: `--step --to 1.3` from a set made on 1.0 (1.1 carries, 1.2 stops). Outcome:
    exit 3; 1.1 in one line (carried, how many of the set's files were written), then 1.2's
    stop in full: its heading, its patch lines, and the next command last."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    args = ("--set", "demo", "--patchsets", str(d.parent), "--to", "1.3", "--step")
    code, out, err = run_cli("port", "--offline", *args, "--workspace", str(w))
    lines = err.splitlines()
    assert code == 3 and out == ""
    assert re.fullmatch(
        r"sgpatch port --step: demo -> 1\.1: carried, \d+ file\(s\) of the set written "
        r"\(each step's patches: --json\)",
        lines[0],
    )
    assert lines[1] == f"sgpatch port: demo -> 1.2 (workspace {w})"
    assert lines[2].startswith("  first: needs a hand (srt/mod.py)")
    assert lines[-1].startswith("sgpatch port: stopped: fix what is listed above")


def test_a_long_walk_fits_one_screen_whatever_its_length():
    """Input: a --step walk of 20 releases written, then a last step with 300 changes to the
    set. Outcome: at most MAX_LINES lines in all: the 20 releases in one line (first ... last,
    counted), the set's files written counted once, the last step cut to what is left."""
    from sgpatch.port.report import Report
    from sgpatch.port.screen import MAX_LINES, walk_lines

    before = [Report("s", f"1.{i}", "/w", "finished", written=["/s/patchset.yaml", f"/s/{i}"])
              for i in range(1, 21)]  # fmt: skip
    last = Report("s", "1.21", "/w", "finished", changes=[f"p{i}: new variant" for i in range(300)])
    lines = walk_lines([*before, last])
    assert len(lines) <= MAX_LINES
    assert lines[0] == ("sgpatch port --step: s -> 1.1 ... 1.20 (20 releases): carried, 21 file(s) "
                        "of the set written (each step's patches: --json)")  # fmt: skip
    assert lines[1] == "sgpatch port: s -> 1.21 (workspace /w)"
    assert any(ln.startswith("  ... and ") and "changes to the set" in ln for ln in lines)
