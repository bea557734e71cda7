"""The `sgpatch` command (the console script) and `python -m sgpatch`.

The cyclic garbage collector is off before anything else is imported (right after the Ctrl-C
handler) and a short command ends without the interpreter's teardown: `sgpatch.startup` holds
those measures and says what each buys.

Set before the CLI is imported (~50 ms of imports): Ctrl-C already means one line and exit 130
(`_stop_at_start_up`; `interrupts` while a command runs), and a reader that goes away
(`sgpatch status | head -1`) ends the process quietly by SIGPIPE, as it ends `grep`, instead
of a traceback or an exit code that reads like "pending" (1).
"""

import _signal
import os

_MESSAGE = b"sgpatch: interrupted; nothing is left half-written (status shows the tree)\n"


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

from sgpatch import startup  # noqa: E402 - after the handler: a Ctrl-C here is one line too

startup.collector_off()  # before the CLI's imports; sgpatch.startup says why


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
    # each lives as long as the process
    if sys.stdin is None:  # `patch <&-` reads an empty patch, not None.buffer
        sys.stdin = open(os.devnull)  # noqa: SIM115
    if sys.stdout is None:  # `help >&-`: a product nobody asked for, written nowhere
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def main() -> None:
    """The console script: the command line run inside the one error boundary (an install so
    broken the CLI cannot be imported is its one line and exit 70 too), then a quick exit."""
    import sys

    _fill_closed_streams()
    if hasattr(_signal, "SIGPIPE"):
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    code: int | str | None = 0
    try:
        from sgpatch import boundary

        args = sys.argv[1:]
        boundary.guarded(args, lambda: _run(args))
    except SystemExit as exc:
        code = exc.code
    finally:  # finished: a Ctrl-C now just ends the process, with its output flushed so far
        if _signal.getsignal(_signal.SIGINT) == _stop_at_start_up:
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    startup.end(code)


def _run(args: list[str]) -> None:
    from sgpatch.cli.app import run

    run(args)


if __name__ == "__main__":
    main()
