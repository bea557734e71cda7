"""pyrun: `python -m MODULE` children never import MODULE from the current directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sgpatch import pyrun


def _planted(cwd: Path, module: str) -> Path:
    """A `./MODULE/` package in `cwd` whose __main__ writes a canary file and prints a lie."""
    canary = cwd / f"{module}-ran"
    (cwd / module).mkdir()
    (cwd / module / "__init__.py").write_text("")
    (cwd / module / "__main__.py").write_text(
        f"open({str(canary)!r}, 'w').write('ran')\nprint('planted 0.0')\n"
    )
    return canary


@pytest.mark.parametrize("python", ["this", "3.10"])
@pytest.mark.parametrize("module", ["pip", "sgpatch"])
def test_a_module_in_the_current_directory_is_not_run(tmp_path, monkeypatch, module, python):
    """Input: the current directory holds `./pip/` or `./sgpatch/` (a package whose __main__
    writes a canary), and the child is started with `module_command` as on this Python and as
    on 3.10 (no `-P` there). Outcome: the installed module answers `--version`; the canary is
    never written. Plain `python -m` in the same folder runs the planted one (checked too)."""
    canary = _planted(tmp_path, module)
    with monkeypatch.context() as m:
        if python == "3.10":
            m.setattr(sys, "version_info", (3, 10, 13, "final", 0))
        argv = pyrun.module_command(module)
    assert ("-P" in argv) == (python == "this" and sys.version_info >= (3, 11))
    proc = subprocess.run([*argv, "--version"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and "planted" not in proc.stdout and not canary.exists()
    assert module in proc.stdout
    plain = subprocess.run(
        [sys.executable, "-m", module, "--version"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "planted" in plain.stdout and canary.exists()
