"""The `sgpatch` command (the console script) and `python -m sgpatch`.

Set before the CLI is imported (~50 ms of imports): Ctrl-C already means one line and exit 130
(`interrupts`), and a reader that goes away (`sgpatch status | head -1`) ends the process
quietly by SIGPIPE, as it ends `grep`, instead of a traceback or an exit code that reads like
"pending" (1).
"""

import _signal

from sgpatch import interrupts


def main() -> None:
    interrupts.install(interrupts.exit_now)
    if hasattr(_signal, "SIGPIPE"):
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    try:
        from sgpatch.cli import main as cli_main

        cli_main()
    finally:  # finished: a Ctrl-C now just ends the process, with its output flushed so far
        if _signal.getsignal(_signal.SIGINT) == interrupts.exit_now:
            _signal.signal(_signal.SIGINT, _signal.SIG_DFL)


if __name__ == "__main__":
    main()
