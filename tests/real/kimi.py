"""The shipped kimi-eagle3-sm120 set as the real-release tests meet it: its name and folder, the
files it touches (a wheel member filter that lays only those), the CLI run in-process, and the
patch states of a `--json` document. Shared by the test files that run the set on real trees
(one kit, so no test file imports another).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sgpatch.cli.app import main

from .intent import READS

SET = "kimi-eagle3-sm120"
SET_DIR = Path(__file__).resolve().parents[2] / "patchsets" / SET


def _set_files() -> frozenset[str]:
    """Package-relative paths every patch file of the set touches and every probe reads."""
    found = set()
    for patch in SET_DIR.glob("patches/*/*.patch"):
        found.update(re.findall(r"^\+\+\+ b/python/sglang/(\S+)", patch.read_text(), re.M))
    found.update(re.findall(r"\bfile:\s*([\w./-]+)", (SET_DIR / "patchset.yaml").read_text()))
    return frozenset(found | {"version.py", "_version.py", *READS})


SET_FILES = _set_files()


def members(name: str) -> bool:
    """Wheel member filter: the set's files, the files the intent checks read, the version
    files and the dist-info."""
    if ".dist-info/" in name:
        return True
    return name.startswith("sglang/") and name[len("sglang/") :] in SET_FILES


class Cli:
    """Run `sgpatch ...` in-process; returns (exit code, JSON document or None, stderr)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, Any, str]:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        out, err = self.capsys.readouterr()
        doc = json.loads(out) if "--json" in args and out.strip() else None
        code = exc.value.code
        return (code if isinstance(code, int) else (0 if code is None else 2)), doc, err


def states(doc: dict) -> dict[str, str]:
    """patch id -> state from a `status --json` or `apply --json` document."""
    sets = doc.get("sets", [doc])
    assert [s["set"] for s in sets] == [SET]
    return {p["id"]: p["state"] for p in sets[0]["patches"]}
