"""Code upstream moved between files, on real releases (tests/real/moved.py): a set that
changes ServerArgs made on 0.5.18 and ported to 0.5.19, 0.5.20 and 0.5.23, and one that
changes scheduler_output_processor_mixin.py ported from 0.5.12 to 0.5.13. Per step: what
port carries by itself is in the right place byte for byte (0 wrong), moved code is carried
where it is certain and named where it is not, a stop fits one screen, and after the
person's fix the written set applied to the release gives W's files. docs/porting.md's
moved-code stop and rewrite are this output exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import run_cli
from sgpatch.releases import cache as releases

from . import moved

REPO = Path(__file__).resolve().parents[2]


def port(case: moved.Case, tmp: Path) -> tuple[Path, Path, int, list[str]]:
    """The case's set ported to its release (text output): set folder, W, exit, lines."""
    for v in (case.to, "0.5.18" if case.name == "server-args" else "0.5.12"):
        releases.wheel_path(v)
    d = case.make(tmp / "sets")
    w = tmp / "w"
    code, out, err = run_cli("port", "--offline", "--set", d.name, "--patchsets",
                             str(d.parent), "--to", case.to, "--workspace", str(w))  # fmt: skip
    assert out == ""
    return d, w, code, err.splitlines()


@pytest.mark.parametrize("case", moved.CASES, ids=lambda c: f"{c.name}-{c.to}")
def test_moved_code_is_carried_where_certain_and_named_where_not(case, tmp_path):
    """Input: the case's set, `port --to` its release. Outcome: no stop on 0.5.19 (the
    field and the flag carried where they were); on 0.5.20/0.5.23 a stop on server_args.py,
    said rewritten upstream in one line, its field hunk naming fields/model.py as where its
    code may be; on 0.5.13 two hunks carried into the files their methods moved to (one
    `moved:` line each), the third stopped naming output_streamer.py. Every file port wrote
    by itself holds the change at the right place (0 wrong); the stop is at most 100 lines.
    After the person's fix, --continue writes the set (exit 0), and `sgpatch apply` of it to
    the pristine release writes W's files."""
    d, w, code, lines = port(case, tmp_path)
    assert len(lines) <= 100
    moves = [ln for ln in lines if ln.startswith("    moved: ")]
    assert len(moves) == case.moved
    pkg = w / "sglang"
    for rel, edits in case.carried:
        assert moved.drop_blocks((pkg / rel).read_text()) == moved.expected(case.to, rel, edits)
    if case.fix is None:
        assert code == 0, lines
        return
    assert code == 3, lines
    if case.name == "server-args":
        (row,) = [ln for ln in lines if ln.startswith("    sglang/srt/server_args.py")]
        assert ": pull-weights-hook hunk(s) #1: rewritten upstream (9,984 lines on sglang " in row
        (went,) = [ln for ln in lines if ln.startswith("      hunk #1 (class ServerArgs): ")]
        assert "maybe srt/arg_groups/fields/model.py:" in went
    else:
        assert moves == [
            f"    moved: {moved.OUT} SchedulerOutputProcessorMixin._get_storage_backend_type -> "
            f"{moved.STREAMER}:57",
            f"    moved: {moved.OUT} SchedulerOutputProcessorMixin._calculate_relevant_tokens_len "
            f"-> {moved.LOGPROB}:133",
        ]
        (went,) = [ln for ln in lines if ln.startswith("      hunk #3 ")]
        assert went.startswith("      hunk #3 (def SchedulerOutputProcessorMixin.stream_output_"
                               f"generation): maybe {moved.STREAMER}:")  # fmt: skip
    case.fix(w)
    code, _out, err = run_cli("port", "--continue", "--workspace", str(w))
    assert code == 0, err
    tree = releases.copy_tree(case.to, tmp_path / "tree", "site-packages")
    code, _out, err = run_cli("apply", "--set", d.name, "--patchsets", str(d.parent),
                              "--sglang-dir", str(tree))  # fmt: skip
    assert code == 0, err
    written = [ln for ln in err.splitlines() if ln.startswith("  ")]
    for rel in [*(r for r, _e in case.carried), moved.FIELDS if case.name == "server-args"
                else moved.STREAMER]:  # fmt: skip
        assert (tree / rel).read_bytes() == (pkg / rel).read_bytes(), (rel, written)


def _console(heading: str) -> list[str]:
    """The console block under `heading` in docs/porting.md: its lines."""
    text = (REPO / "docs/porting.md").read_text()
    at = text.index(heading)
    block = re.search(r"```console\n(.*?)```", text[at:], re.S)
    assert block is not None
    return block.group(1).splitlines()


@pytest.mark.parametrize(("heading", "index"), [("<!-- moved-code-stop -->", 3),
                                                  ("<!-- rewrite-stop -->", 1)])  # fmt: skip
def test_docs_show_the_stops_exactly(heading, index, tmp_path):
    """Input: docs/porting.md's two console blocks (a moved-code stop: the output processor
    to 0.5.13; a rewrite: ServerArgs to 0.5.20), their workspace as /home/me/w. Outcome: the
    page's lines are what port prints, word for word (the set's folder and W mapped)."""
    case = moved.CASES[index]
    _d, w, _code, lines = port(case, tmp_path)
    got = [ln.replace(str(w), "/home/me/w").replace(str(tmp_path / "sets"), "/home/me/sets")
           for ln in lines]  # fmt: skip
    page = _console(heading)
    assert page[0].startswith("$ sgpatch port ")
    assert page[1:] == [*got, "exit 3"]
