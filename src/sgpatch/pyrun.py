"""`python -m MODULE` in a child process, without the current directory on its path.

`python -m pip` puts the current directory first on sys.path, so a `./pip/` or `./sgpatch/`
folder where the user happens to stand (a checkout, an unpacked archive) would run in pip's or
sgpatch's place. Python 3.11 has `-P` for exactly this; on 3.10 the same is done by hand.
"""

from __future__ import annotations

import sys

_SHIM = (
    "import runpy, sys; sys.path.pop(0); "  # the '' that -c puts first: the current directory
    "runpy.run_module({!r}, run_name='__main__', alter_sys=True)"
)


def module_command(module: str) -> list[str]:
    """The argv that runs `module` as `python -m module` does, with this interpreter, never
    importing it from the current directory."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module]
    return [sys.executable, "-c", _SHIM.format(module)]
