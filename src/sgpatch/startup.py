"""Process-level measures for start-up and exit, in one place, with what each buys.

sgpatch's own work on a small tree is a few milliseconds; the rest of a short run is Python
and its imports. The measures below are the cheap ones that stay (bench/speed.py measures
them; docs/benchmarks.md has the numbers):

- **The cyclic collector off from the first line** (`collector_off`, called by `__main__`
  before anything is imported): importing the stack allocates hundreds of thousands of
  objects that live as long as the process; Python's default thresholds scan them ~50 times on
  `status` for kilobytes of cycles: about a tenth of its run.
- **Back on for long commands** (`collector_for`): commands that loop over releases or files
  get it back, with start-up's objects frozen (never scanned again).
- **No teardown after a short command** (`end`): after `SHORT_COMMANDS` (all they wrote is
  closed, flushed and fsynced), a last collection over every object and freeing each is ~10%
  of a `status` run for nothing; output is flushed, then `os._exit`.
- **The collector paused while a diff is parsed or placed** (`collector_paused`, for the long
  commands that turned it back on): both make many small objects and no cycles; with 100,000
  hunks the collector's passes over everything alive were about a third of the run.
- **Lazy imports**: each command imports only what it uses (GitPython, rich, re2 only where
  needed); tests/test_imports.py guards it, not this module.
"""

from __future__ import annotations

import gc
import os
import sys

# Commands that read a tree or a set once and end: the collector stays off for them (they make
# few cycles, freed at exit) and `end` skips the interpreter's teardown after them. The others
# loop over releases or files for as long as it takes and get the collector back.
SHORT_COMMANDS = frozenset(
    {"status", "apply", "revert", "patch", "probe", "list", "show", "recover"}
)


def collector_off() -> None:
    """First thing the console script does: start-up makes no garbage cycles worth finding."""
    gc.disable()


def collector_for(args: list[str]) -> None:
    """Turn the collector back on for a long command, with what start-up made frozen (modules,
    classes, functions live as long as the process anyway)."""
    if gc.isenabled() or (args and args[0] in SHORT_COMMANDS):
        return
    gc.freeze()
    gc.enable()


class collector_paused:
    """The collector off for the block, then as it was (nested use keeps it off). A class, not
    contextlib.contextmanager: `__main__` imports this module before the CLI, and it stays
    as cheap to import as its first lines need."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            gc.enable()


def end(code: int | str | None) -> None:
    """Exit with `code`; after a short command with nothing registered to run at exit, without
    the interpreter's teardown. Anything else (an unusual exit code, a flush that fails) ends
    as Python ends."""
    short = sys.argv[1:2] and sys.argv[1] in SHORT_COMMANDS
    if code is None:
        code = 0
    if short and isinstance(code, int) and _nothing_at_exit():
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except OSError:
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _nothing_at_exit() -> bool:
    """No atexit callback is registered (none is, on the short commands' path; should one be,
    e.g. by logging, the interpreter runs it)."""
    import atexit

    count = getattr(atexit, "_ncallbacks", None)
    return count is not None and count() == 0
