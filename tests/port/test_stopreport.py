"""A stop's report pinned (sgpatch.port.stopreport, cli/port): the per-patch part of
`port --json` (problems with markers and hunk details, the probe, the hunks dropped) and the
text lines, exactly as docs/json.md and docs/porting.md show them; a hunk's detail as a
record and as the JSON row W keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import V10, V12, make_set, make_wheel, port_diff, probe_set, release_files, run_cli
from sgpatch.port.stopreport import (
    ALREADY,
    CONFLICT,
    HunkDetail,
    detail_json,
    detail_of,
    details,
    put_details,
)

OTHER14 = b'def other():\n    """Doc."""\n    value = compute_the_value()\n    return value\n'
STOPPED = (
    "sgpatch port: stopped: fix what is listed above, then `sgpatch port --continue "
    "--workspace <tmp>/w` (or drop the port: `sgpatch port --abort --workspace <tmp>/w`); the "
    "set is unchanged; in full (each conflict's upstream change beside the patch's): "
    "<tmp>/w/.sgpatch-port/fix, --json"
)
SHOW = ", or one file: `sgpatch port --show sglang/srt/mod.py --workspace <tmp>/w`"


def _both(tmp_path: Path, d: Path, to: str) -> tuple[list[dict], list[str]]:
    """The port to `to` twice (--json into tmp/json/w, text into tmp/text/w): the last step's
    patches in --json and the text lines, the temporary folder shown as <tmp>."""
    args = ("--offline", "--set", "demo", "--patchsets", str(d.parent), "--to", to)
    code, out, _ = run_cli("port", "--json", *args, "--workspace", str(tmp_path / "json/w"))
    assert code == 3
    doc = json.loads(out.replace(str(tmp_path / "json"), "<tmp>"))
    code, _, err = run_cli("port", *args, "--workspace", str(tmp_path / "text/w"))
    assert code == 3
    return doc["steps"][-1]["patches"], err.replace(str(tmp_path / "text"), "<tmp>").splitlines()


def _outcome(pid: str, outcome: str, kept: int, merged: int, hand: int = 0, **reported) -> dict:
    n = "0001-first" if pid == "first" else "0002-second"
    return {"id": pid, "outcome": outcome, "from_variant": f"patches/1.0/{n}.patch",
            "from_release": "1.0", "base": "1.0", "as_is": False, "hunks_kept": kept,
            "hunks_merged": merged, "hunks_moved": 0, "hunks_by_hand": hand, "moved": [],
            "note": "", "problems": [], "files_carried": [],
            "files_waiting": [], "waiting_for": [], "probe": None, "hunks_dropped": [],
            **reported}  # fmt: skip


def test_a_conflict_beside_a_dropped_hunk_is_reported_exactly(cache, tmp_path):
    """Input: 1.5 (1.2's mod.py, other.py already computing the value): `first` conflicts in
    hunk #2, `second`'s only hunk is already there. Outcome: exit 3; `first` has its file
    problem (markers, the hunk's detail) and an empty probe file, `second` is carried with
    the hunk dropped and its evidence; the text says the same in its lines."""
    make_wheel(cache / "wheels", "1.5", release_files(V12, "1.5", {"sglang/srt/other.py": OTHER14}))
    old = "def other():\n    return 0\n"
    new = "def other():\n    value = compute_the_value()\n    return value\n"
    d = make_set(tmp_path, second=port_diff(old, new, "srt/other.py"))
    patches, text = _both(tmp_path, d, "1.5")
    detail = {"hunk": 2, "patch": ["-    y = 2", "+    y = 20"],
              "patch_label": "first (made on 1.0)", "status": "conflict",
              "upstream": ["-    y = 2", "+    y = 3"],
              "upstream_label": "sglang 1.0 -> sglang 1.5",
              "where": "sglang 1.0 lines 24-28, in def helper"}  # fmt: skip
    problem = {"file": "srt/mod.py", "why": "1 conflict(s) in the three-way merge of hunk(s) #2",
               "hunks": [2], "markers": [28, 30, 32, 34], "details": [detail],
               "fold": None}  # fmt: skip
    evidence = ["already there on the pristine release:",
                "  the assignment value in other: line 3 of the release's file",
                "  the return in other: line 4 of the release's file"]  # fmt: skip
    assert patches == [
        _outcome("first", "conflict", 1, 0, 1, problems=[problem],
                 probe={"file": "<tmp>/w/.sgpatch-port/probes/first.yaml", "problem": None}),
        _outcome("second", "carried", 0, 0, files_carried=["srt/other.py"],
                 hunks_dropped=[{"file": "srt/other.py", "hunk": 1, "evidence": evidence}]),
    ]  # fmt: skip
    assert text == [
        "sgpatch port: demo -> 1.5 (workspace <tmp>/w)",
        "  first: needs a hand (srt/mod.py) [from patches/1.0/0001-first.patch, base 1.0]",
        "  second: carried, 0 hunk(s) kept, 0 merged, 1 dropped (already there upstream: see "
        "--json) [from patches/1.0/0002-second.patch, base 1.0]",
        "  files to fix in W (then `sgpatch port --continue --workspace <tmp>/w`):",
        "    sglang/srt/mod.py (markers at lines 28, 30, 32, 34): first hunk(s) #2: 1 "
        "conflict(s) in the three-way merge of hunk(s) #2",
        "  probes (edit the files during the stop; --continue checks them):",
        "    first: <tmp>/w/.sgpatch-port/probes/first.yaml (checked at --continue)",
        STOPPED + SHOW,
    ]
    fix = (tmp_path / "text/w/.sgpatch-port/fix").read_text().splitlines()
    assert fix[1:6] == [
        "  sglang/srt/mod.py (markers at lines 28, 30, 32, 34): first hunk(s) #2: 1 "
        "conflict(s) in the three-way merge of hunk(s) #2",
        "    hunk #2: conflict (sglang 1.0 lines 24-28, in def helper)",
        "      upstream, sglang 1.0 -> sglang 1.5: | the patch, first (made on 1.0):",
        "      -    y = 2                          | -    y = 2",
        "      +    y = 3                          | +    y = 20",
    ]


def test_a_stop_on_a_probe_is_reported_exactly(cache, tmp_path):
    """Input: `second`'s probe looks for the_answer_to(43), which its patch never writes;
    ported to 1.1. Outcome: exit 3; `second` has no file problem and its probe (the file in
    W, why it stops); the text names its probe instead of files."""
    d = probe_set(tmp_path, r"{file: srt/other.py, regex: 'the_answer_to\(43\)'}")
    patches, text = _both(tmp_path, d, "1.1")
    kept = "<tmp>/w/.sgpatch-port/probes/second.yaml"
    why = (
        "the probe is false with the patch applied (it does not recognise the ported change): "
        f"a new one is suggested in {kept}; keep it or edit it, then --continue"
    )
    assert patches == [
        _outcome("first", "carried", 1, 1, files_carried=["srt/mod.py"]),
        _outcome("second", "conflict", 1, 0, files_carried=["srt/other.py"],
                 probe={"file": kept, "problem": why}),
    ]  # fmt: skip
    assert text == [
        "sgpatch port: demo -> 1.1 (workspace <tmp>/w)",
        "  first: carried, 1 hunk(s) kept, 1 merged [from patches/1.0/0001-first.patch, base 1.0]",
        "  second: needs a hand (its probe) [from patches/1.0/0002-second.patch, base 1.0]",
        "  probes (edit the files during the stop; --continue checks them):",
        f"    second: {why}",
        STOPPED,
    ]


MINE16 = (
    V10.replace("        return 2\n", "        self.ready = compute_ready()\n        return 2\n")
    .replace("# filler 7\n", "# filler seven\n")
    .replace("    y = 2\n", "    y = 20\n")
)
UP16 = (
    V10.replace("        return 2\n", '        """Doc."""\n        self.ready = compute_ready()\n'
                "        return 2\n")
    .replace("# filler 5\n", "# filler five\n")
    .replace("    y = 2\n", "    y = 3\n")
)  # fmt: skip
LABELS = {"patch_label": "first (made on 1.0)", "upstream_label": "sglang 1.0 -> sglang 1.6"}
JSONL16 = (
    b'{"evidence": ["already there on the pristine release:", '
    b'"  the assignment self.ready in A.g: line 10 of the release\'s file"], "hunk": 1, '
    b'"status": "already there"}\n'
    b'{"hunk": 2, "patch_label": "first (made on 1.0)", "status": "merges alone; conflicts only '
    b'with the other hunks", "upstream_label": "sglang 1.0 -> sglang 1.6", "where": "sglang 1.0 '
    b'lines 15-21, at module level"}\n'
    b'{"hunk": 3, "patch": ["-    y = 2", "+    y = 20"], "patch_label": "first (made on 1.0)", '
    b'"status": "conflict", "upstream": ["-    y = 2", "+    y = 3"], "upstream_label": '
    b'"sglang 1.0 -> sglang 1.6", "where": "sglang 1.0 lines 24-28, in def helper"}\n'
)


def test_every_kind_of_hunk_detail_is_reported_and_kept_exactly(cache, tmp_path):
    """Input: `first` made on 1.0 with three hunks in srt/mod.py; 1.6 already has hunk #1's
    line in A.g (under a new docstring), changed a context line of hunk #2 (not its own) and
    the very line hunk #3 changes. Outcome: exit 3; the file's details are one row per hunk
    (already there with its evidence, merges alone, conflict with both changes), in --json
    (keys in the order they are kept), in `port --show` and, byte for byte, in W's
    `hunks/first/srt/mod.py.jsonl` (the format a workspace keeps across versions)."""
    make_wheel(cache / "wheels", "1.6", release_files(UP16, "1.6"))
    d = make_set(tmp_path)
    (d / "patches/1.0/0001-first.patch").write_text("Subject: first\n\n" + port_diff(V10, MINE16))
    patches, text = _both(tmp_path, d, "1.6")
    evidence = ["already there on the pristine release:",
                "  the assignment self.ready in A.g: line 10 of the release's file"]  # fmt: skip
    details = [
        {"evidence": evidence, "hunk": 1, "status": "already there"},
        {"hunk": 2, **LABELS, "status": "merges alone; conflicts only with the other hunks",
         "where": "sglang 1.0 lines 15-21, at module level"},
        {"hunk": 3, "patch": ["-    y = 2", "+    y = 20"], "patch_label": LABELS["patch_label"],
         "status": "conflict", "upstream": ["-    y = 2", "+    y = 3"],
         "upstream_label": LABELS["upstream_label"],
         "where": "sglang 1.0 lines 24-28, in def helper"},
    ]  # fmt: skip
    (first, _second) = patches
    (problem,) = first["problems"]
    assert problem["details"] == details
    assert [list(row) for row in problem["details"]] == [sorted(row) for row in details]
    assert first["hunks_dropped"] == [{"file": "srt/mod.py", "hunk": 1, "evidence": evidence}]
    for run in ("json", "text"):
        kept = tmp_path / run / "w/.sgpatch-port/hunks/first/srt/mod.py.jsonl"
        assert kept.read_bytes() == JSONL16
    assert text[4] == (
        "    sglang/srt/mod.py (markers at lines 29, 31, 33, 35): first hunk(s) #2, #3: 1 "
        "conflict(s) in the three-way merge of hunk(s) #2, #3"
    )
    code, out, _err = run_cli("port", "--show", "sglang/srt/mod.py", "--workspace",
                              str(tmp_path / "text/w"))  # fmt: skip
    assert code == 0 and out.splitlines() == [
        "sglang/srt/mod.py (markers at lines 29, 31, 33, 35): first hunk(s) #2, #3: 1 "
        "conflict(s) in the three-way merge of hunk(s) #2, #3",
        "  hunk #1: already there",
        "    already there on the pristine release:",
        "      the assignment self.ready in A.g: line 10 of the release's file",
        "  hunk #2: merges alone; conflicts only with the other hunks (sglang 1.0 lines "
        "15-21, at module level)",
        "    upstream, sglang 1.0 -> sglang 1.6: | the patch, first (made on 1.0):",
        "  hunk #3: conflict (sglang 1.0 lines 24-28, in def helper)",
        "    upstream, sglang 1.0 -> sglang 1.6: | the patch, first (made on 1.0):",
        "    -    y = 2                          | -    y = 2",
        "    +    y = 3                          | +    y = 20",
    ]


# ---------------------------------------------------------------------------------------------
# HunkDetail: the record and its JSON row

ROWS16 = [json.loads(ln) for ln in JSONL16.decode().splitlines()]
NO_PLACE_ROW = {"hunk": 4, **LABELS, "status": "does not place on the base by itself"}


@pytest.mark.parametrize("row", [*ROWS16, NO_PLACE_ROW])
def test_a_hunk_detail_row_reads_back_to_the_same_row(row):
    """Input: each kind of row as W keeps it (written by the code before the record: a
    workspace outlives an upgrade). Outcome: read into a HunkDetail and made JSON again, it is
    the same row, keys in the same (sorted) order; and the record survives the trip too."""
    d = detail_of(row)
    assert isinstance(d, HunkDetail) and d.hunk == row["hunk"] and d.status == row["status"]
    again = detail_json(d)
    assert again == row and list(again) == sorted(row)
    assert detail_of(json.loads(json.dumps(again))) == d


def test_a_hunk_detail_keeps_only_the_fields_it_has():
    """Input: records of each status made the way carry makes them. Outcome: their rows have
    only the keys whose field is set (an empty list stays a key), as lists."""
    already = HunkDetail(1, ALREADY, evidence=("in f, every line is there:",))
    assert detail_json(already) == {"evidence": ["in f, every line is there:"], "hunk": 1,
                                    "status": "already there"}  # fmt: skip
    bare = HunkDetail(2, CONFLICT, upstream=(), patch=("+x",))
    assert detail_json(bare) == {"hunk": 2, "patch": ["+x"], "status": "conflict",
                                 "upstream": []}  # fmt: skip


@pytest.mark.parametrize(
    "row",
    [
        ["hunk", 1],
        "conflict",
        {"hunk": 1},
        {"status": "conflict"},
        {"hunk": "1", "status": "conflict"},
        {"hunk": True, "status": "conflict"},
        {"hunk": 0, "status": "conflict"},
        {"hunk": 1, "status": "bogus"},
        {"hunk": 1, "status": "conflict", "extra": 1},
        {"hunk": 1, "status": "conflict", "where": None},
        {"hunk": 1, "status": "conflict", "where": 3},
        {"hunk": 1, "status": "conflict", "upstream": "-x"},
        {"hunk": 1, "status": "conflict", "patch": ["+x", 2]},
        {"hunk": 1, "status": "already there", "evidence": None},
    ],
)
def test_a_malformed_hunk_detail_row_is_refused(row):
    """Input: rows sgpatch never writes (not an object, no hunk number or status, a number
    that is a string, a bool or 0, an unknown status or key, a null, a field of the wrong
    type). Outcome: ValueError, which the reader of W turns into `damaged` (exit 4)."""
    with pytest.raises(ValueError):
        detail_of(row)


def test_a_malformed_row_in_w_is_damaged_state(tmp_path):
    """Input: W's details file for a stopped file, one good row then a row that is JSON but
    no hunk detail. Outcome: the reader refuses the file as damaged (exit 4, naming it and
    the line), as it does a line that is no JSON; the good row alone reads back."""
    from sgpatch.errors import SgpatchError
    from sgpatch.port.workspace import STATE, Workspace

    ws = Workspace(tmp_path / "w")
    (ws.top / STATE).mkdir(parents=True)
    put_details(ws, "first", "srt/mod.py", [detail_of(r) for r in ROWS16[:1]])
    f = tmp_path / "w/.sgpatch-port/hunks/first/srt/mod.py.jsonl"
    assert f.read_bytes() == JSONL16.splitlines(keepends=True)[0]
    assert details(ws, "first", "srt/mod.py") == [detail_of(ROWS16[0])]
    for bad in ('{"hunk": 2, "status": "conflict", "patch": "+x"}', "{not json"):
        f.write_bytes(JSONL16.splitlines(keepends=True)[0] + bad.encode() + b"\n")
        with pytest.raises(SgpatchError) as e:
            details(ws, "first", "srt/mod.py")
        assert e.value.code == 4
        assert f"hunks/first/srt/mod.py.jsonl: damaged (line {bad!r})" in str(e.value)
