"""A port step's report as JSON (sgpatch.port.report): each record makes its own part of
`port --json` (docs/json.md), in the keys and order the document has always had."""

from __future__ import annotations

import json

from sgpatch.port.moved import Move
from sgpatch.port.report import PatchReport, Report
from sgpatch.port.sequencer import Outcome
from sgpatch.port.stopreport import Dropped, LintRefusal, ProbeStop


def test_a_step_report_is_json_from_its_records():
    """Input: a report of one carried patch with a moved hunk, a dropped hunk and a probe, and
    a release-wide lint refusal. Outcome: the document's keys in their documented order, the
    empty fields of the state line null, each record's row as the records hold it."""
    o = Outcome("p", "carried", "patches/1.0/0001-p.patch", "1.0", "1.0", True, 2, 1, moved=1)
    move = Move(3, "srt/a.py", "A.f", "srt/b.py", 12, "same def", conflicts=0)
    dropped = (Dropped("srt/c.py", 1, ("x",)),)
    r = PatchReport(o, probe=ProbeStop("/w/p.yaml", None), dropped=dropped, moves=(move,),
                    carried_files=("srt/a.py", "srt/b.py"))  # fmt: skip
    refusal = LintRefusal(None, "sglang", "no")
    rep = Report("s", "1.1", "/w", "stopped", [r], lint_refusals=[refusal])
    doc = json.loads(json.dumps(rep.to_json()))
    assert list(doc) == ["set", "to", "workspace", "state", "patches", "waiting", "fix",
                         "written", "changes", "lint", "lint_refusals", "warnings", "notes",
                         "set_dir", "left"]  # fmt: skip
    assert doc["lint_refusals"] == [{"patch": None, "field": "sglang", "message": "no"}]
    p = doc["patches"][0]
    assert list(p)[:6] == ["id", "outcome", "from_variant", "from_release", "base", "as_is"]
    assert list(p)[6:10] == ["hunks_kept", "hunks_merged", "hunks_moved", "hunks_by_hand"]
    assert p["moved"] == [{"file": "srt/a.py", "hunk": 3, "scope": "A.f", "to": "srt/b.py",
                           "line": 12, "how": "same def", "conflicts": 0}]  # fmt: skip
    assert p["hunks_dropped"] == [{"file": "srt/c.py", "hunk": 1, "evidence": ["x"]}]
    assert p["probe"] == {"file": "/w/p.yaml", "problem": None}
    assert p["files_carried"] == ["srt/a.py", "srt/b.py"] and p["problems"] == []
    upstream = PatchReport(Outcome("q", "upstream")).to_json()
    assert (upstream["from_variant"], upstream["from_release"], upstream["base"]) == (None,) * 3
