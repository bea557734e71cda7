"""cli/probe: `sgpatch probe` and its -v evidence as a person reads it."""

from __future__ import annotations

import json

from helpers import make_env, manifest, run_cli, write_set

PROBE = """    probe:
      all:
        - symbol: {file: srt/m.py, class: A, method: f}
        - symbol: {file: srt/m.py, class: A, method: g}
        - symbol: {file: srt/m.py, class: A, method: h}
"""


def test_probe_v_says_each_evidence_line_once(tmp_path) -> None:
    """Input: a probe `all` of three methods of one class, on a tree that has them (each
    clause finds the class line). Outcome: `probe -v` shows the class line once and each
    method once, in order; --json keeps every entry (the class three times)."""
    pkg, sets, args = make_env(tmp_path)
    write_set(sets, manifest().replace("  - id: pa\n", "  - id: pa\n" + PROBE))
    (pkg / "srt" / "m.py").write_text(
        "class A:\n    def f(self):\n        pass\n\n    def g(self):\n        pass\n\n"
        "    def h(self):\n        pass\n"
    )
    code, out, _ = run_cli("probe", "-v", *args)
    lines = out.splitlines()
    assert code == 0 and "pa: upstream has it" in lines
    assert sum("class srt/m.py:1 'class A:'" in ln for ln in lines) == 1
    methods = [ln.split()[1] for ln in lines if ln.startswith("    method ")]
    assert methods == ["srt/m.py:2", "srt/m.py:5", "srt/m.py:8"]
    code, out, _ = run_cli("probe", *args, "--json")
    (pa,) = [p for p in json.loads(out)["probes"] if p["id"] == "pa"]
    assert [e["kind"] for e in pa["evidence"]].count("class") == 3
