"""sgpatch.boundary: the one error boundary, for the console script and in-process callers."""

from __future__ import annotations

import json
import subprocess
import sys


def test_a_cli_that_cannot_be_imported_is_one_internal_line_and_70(tmp_path) -> None:
    """Input: the console script run where `sgpatch.cli.app` cannot be imported (a broken
    install), `status --json`. Outcome: exit 70, one `sgpatch: internal error: ModuleNotFoundError:`
    line on stderr and the error document on stdout, from the same boundary as every command
    (no second copy of it in __main__)."""
    code = (
        "import sys; sys.modules['sgpatch.cli.app'] = None; "
        "sys.argv = ['sgpatch', 'status', '--json']; "
        "from sgpatch.__main__ import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 70, proc.stderr
    assert proc.stderr.startswith("sgpatch: internal error: ModuleNotFoundError: ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 2 and doc["exit_code"] == 70 and doc["internal"] is True
    assert doc["error"].startswith("ModuleNotFoundError: ")


def test_the_exceptions_are_caught_in_the_boundary_alone() -> None:
    """Input: the sources of the two entry points. Outcome: neither catches what a command
    raises (SgpatchError, Exception) itself: both hand the command line to boundary.guarded."""
    from pathlib import Path

    import sgpatch

    root = Path(sgpatch.__file__).parent
    for rel in ("__main__.py", "cli/app.py"):
        text = (root / rel).read_text()
        assert "boundary.guarded(" in text, rel
        assert "except SgpatchError" not in text and "except Exception" not in text, rel
