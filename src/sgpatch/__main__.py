"""The `sgpatch` command (the console script) and `python -m sgpatch`.

Set before the CLI is imported (~50 ms of imports): Ctrl-C already means one line and exit 130
(`interrupts`), and a reader that goes away (`sgpatch status | head -1`) ends the process
quietly by SIGPIPE, as it ends `grep`, instead of a traceback or an exit code that reads like
"pending" (1).
"""

import _signal

from sgpatch import interrupts


def main() -> None:
    _signal.signal(_signal.SIGINT, interrupts.exit_now)
    if hasattr(_signal, "SIGPIPE"):
        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    from sgpatch.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
