"""The unit suite on every supported Python (`.ci/run` runs it; `make test` covers one Python).

    nox                  # 3.10, 3.12 and 3.13 (3.11 is the one `make test` runs)
    nox -s unit-3.12     # one of them

Interpreters are found on PATH as pythonX.Y, or in pyenv's versions folder (where this project's
machines keep 3.10.13, 3.11.7, 3.12.1 and 3.13.0) when pyenv's shims are not on PATH.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

PYTHONS = ["3.10", "3.12", "3.13"]
nox.options.sessions = ["unit"]
nox.options.reuse_existing_virtualenvs = True

_pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
for _v in PYTHONS:
    for _bin in sorted(_pyenv.glob(f"{_v}.*/bin")):
        os.environ["PATH"] += os.pathsep + str(_bin)


@nox.session(python=PYTHONS)
def unit(session: nox.Session) -> None:
    """The unit suite (no real releases: those are Python-independent and take minutes)."""
    session.install("-q", "-e", ".[test]")
    session.run(
        "python", "-m", "pytest", "-m", "not real", "-p", "no:cacheprovider", *session.posargs
    )
