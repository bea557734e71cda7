"""The `sgpatch` command (the console script) and `python -m sgpatch`.

The cyclic garbage collector is off from the first line: importing the stack and sgpatch
allocates hundreds of thousands of objects that live as long as the process, and Python's
default thresholds make it scan them ~50 times for ~500 objects found in cycles on `status`
(kilobytes): about a tenth of its whole run. `cli.main` keeps it off for the short commands
and turns it back on (with start-up's objects frozen) for the long ones.

Set before the CLI is imported (~50 ms of imports): Ctrl-C already means one line and exit 130
(`_stop_at_start_up`; `interrupts` while a command runs), and a reader that goes away
(`sgpatch status | head -1`) ends the process quietly by SIGPIPE, as it ends `grep`, instead
of a traceback or an exit code that reads like "pending" (1).
"""

import gc

gc.disable()  # start-up makes no garbage cycles; sgpatch.cli.app turns the collector back on

import _signal  # noqa: E402
import os  # noqa: E402

_MESSAGE = b"sgpatch: interrupted; nothing is left half-written (`sgpatch status` shows the tree)\n"


def _stop_at_start_up(signum: int, frame: object) -> None:
    """Ctrl-C during start-up, from before `interrupts` is even imported (a cold start compiles
    it first) until the CLI runs a command: nothing is written yet, so stop with
    `interrupts.MESSAGE` (spelled here as bytes: importing it would reopen the window)."""
    try:  # noqa: SIM105 (no contextlib: start-up time)
        os.write(2, _MESSAGE)
    except OSError:
        pass
    os._exit(130)


try:  # first thing the console script runs; an ignored SIGINT (`cmd &`) stays ignored
    if _signal.getsignal(_signal.SIGINT) != _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _stop_at_start_up)
except ValueError:  # imported outside the main thread: not ours to set
    pass


def _fill_closed_streams() -> None:
    """Started with stdin/stdout/stderr closed (`2>&-`): put /dev/null there. Otherwise the
    next file sgpatch opens (a journal, a patched file) gets fd 2 and any message meant for
    stderr, ours or a library's, lands inside it; and Python's sys.stderr is None, which must
    not change what the run does or its exit code."""
    import sys

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # lower ones were free: the loop fills them in order
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def main() -> None:
    _fill_closed_streams()
    if hasattr(_signal, "SIGPIPE"):
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    try:
        from sgpatch.cli.app import main as cli_main

        cli_main()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:  # the CLI itself could not start (an import failed): still one line
        code = _internal_error(exc)
    finally:  # finished: a Ctrl-C now just ends the process, with its output flushed so far
        if _signal.getsignal(_signal.SIGINT) == _stop_at_start_up:
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    _end(code)


def _internal_error(exc: Exception) -> int:
    """The boundary behind `cli.app.main`'s own (which catches everything a command raises):
    one line and exit 70 for what escapes before it runs, e.g. a broken install."""
    import sys

    if os.environ.get("SGPATCH_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    text = " ".join(str(exc).split())[:300] or "(no message)"
    line = f"sgpatch: internal error: {type(exc).__name__}: {text} (a bug in sgpatch)"
    try:
        os.write(2, (line + "\n").encode("utf-8", "replace"))
        if "--json" in sys.argv[1:]:
            import json

            doc = {"schema": 2, "error": line[25:], "exit_code": 70, "internal": True}
            os.write(1, (json.dumps(doc) + "\n").encode())
    except OSError:
        pass
    return 70


def _end(code: int | str | None) -> None:
    """Exit with `code`. After a short command (cli.SHORT_COMMANDS: everything it wrote is
    closed, flushed and fsynced by then) with nothing registered to run at exit, skip the
    interpreter's teardown: a last garbage collection over every object start-up made, then
    freeing each, ~10% of a `status` run for nothing the process needs. Output is flushed
    first; anything else (an unusual exit code, a flush that fails) ends as Python ends."""
    import sys

    try:
        from sgpatch.cli.app import SHORT_COMMANDS
    except Exception:  # the CLI could not be imported: `_internal_error` said so
        SHORT_COMMANDS = frozenset()
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


if __name__ == "__main__":
    main()
