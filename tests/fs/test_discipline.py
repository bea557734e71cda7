"""The one file-system safety layer is the only one (issue 43.1): outside src/sgpatch/fs, no
code renames into place, opens a file for creation or takes a lock itself.

Structural: every module is read as text and searched for the calls that do it. A writer
that needs one of them uses sgpatch.fs (atomic, lock, dirs) instead, so the guarantees of
docs/safety.md (no link followed, no FIFO waited on, nothing half-written) hold in one place.
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "sgpatch"
LAYER = SRC / "fs"
FORBIDDEN = re.compile(
    r"os\.replace|os\.rename|\bfcntl\b|O_CREAT|\bFileLock\b|mkstemp|os\.link\b|shutil\.move"
)


def _offences() -> list[str]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        if LAYER in path.parents:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                out.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    return out


def test_nothing_outside_the_layer_renames_creates_or_locks_files():
    """Input: every module of src/sgpatch but fs/. Outcome: none names os.replace, os.rename,
    fcntl, O_CREAT, FileLock, mkstemp, os.link or shutil.move (not even in a comment: say
    "the atomic writer")."""
    assert _offences() == []


def test_the_check_would_see_an_offence(tmp_path):
    """Input: the pattern on lines a writer of old would hold. Outcome: each is found, so an
    empty list above means something."""
    for line in ("os.replace(tmp, path)", "fd = os.open(p, os.O_CREAT | os.O_WRONLY)",
                 "import fcntl", "os.rename(a, b)", "with FileLock(x):",
                 "os.link(a, b)", "shutil.move(a, b)"):  # fmt: skip
        assert FORBIDDEN.search(line), line
