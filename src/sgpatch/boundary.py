"""The one error boundary: what any failure of a run becomes (docs/exit-codes.md).

`SgpatchError` is one line, `sgpatch: error: MESSAGE`, and its exit code; Ctrl-C is
`interrupts.MESSAGE` and 130; a stdout click could not write to (a full disk under `--help`) is
exit 2; anything else is a bug, `sgpatch: internal error: TYPE: MESSAGE`, exit 70 (the traceback
only with $SGPATCH_DEBUG=1; no log file anywhere), including an install so broken the CLI cannot
be imported. With --json the error document (console.error_document) goes to stdout as well, so
a script always gets something to parse.

The console script (`sgpatch.__main__`) and in-process callers (`cli.app.main`, the tests) both
run inside `guarded`: the exceptions are caught here and nowhere else. Light on purpose (core
layer: errors and interrupts; console and traceback only when a run fails): `__main__` imports
it before the CLI.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from sgpatch import interrupts
from sgpatch.errors import ExitCode, SgpatchError

DEBUG_ENV = "SGPATCH_DEBUG"


def guarded(args: list[str], body: Callable[[], None]) -> None:
    """Run `body` (one sgpatch command line, `args`); every failure ends here as one line and
    its exit code (SystemExit). Click's own exits (usage: 2, --help: 0) pass through."""
    try:
        body()
    except SgpatchError as exc:
        fail(args, exc.message, exc.code)
    except (interrupts.Interrupted, KeyboardInterrupt):
        say(sys.stderr, interrupts.MESSAGE + "\n")
        sys.exit(interrupts.EXIT)
    except OSError as exc:
        if not _raised_by_echo(exc):  # a bug, as below
            fail(args, internal_message(exc), ExitCode.INTERNAL)
        with contextlib.suppress(OSError):  # nothing more can go out through this stdout
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        fail(args, f"cannot write to stdout: {exc.strerror or exc}", ExitCode.BAD_INPUT)
    except Exception as exc:  # a bug: never a raw traceback, never an exit code that means a state
        fail(args, internal_message(exc), ExitCode.INTERNAL)


def _raised_by_echo(exc: OSError) -> bool:
    """The OSError came out of click's `echo` itself (`--help` or a usage message on a full
    stdout): the product could not be written, which is exit 2, as for sgpatch's own output."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code if tb is not None else None
    return code is not None and code.co_name == "echo" and "click" in code.co_filename


def internal_message(exc: BaseException) -> str:
    """One line for an exception nobody expected: its type and message, whitespace folded and
    cut to a line; with $SGPATCH_DEBUG=1 the traceback goes to stderr first."""
    import traceback

    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if debug:
        with contextlib.suppress(Exception):
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    text = " ".join(str(exc).split()) or "(no message)"
    if len(text) > 300:
        text = text[:297] + "..."
    hint = "the traceback is above" if debug else f"{DEBUG_ENV}=1 shows the traceback"
    return f"{type(exc).__name__}: {text} (a bug in sgpatch; {hint})"


def one_line(text: str) -> str:
    """`text` with its control characters shown as Python escapes (`\\n`, `\\x1b`): a path
    holding a newline or a terminal escape must neither split the one error line nor drive
    the terminal. The JSON error document keeps the text exact (sgpatch.shown, the one rule)."""
    from sgpatch.shown import name

    return name(text)


def fail(args: list[str], message: str, code: int) -> NoReturn:
    """The last words of a failed run: one line on stderr (and, with --json, the error
    document on stdout), then the exit code."""
    internal = code == ExitCode.INTERNAL
    prefix = "sgpatch: internal error: " if internal else "sgpatch: error: "
    say(sys.stderr, prefix + one_line(message.removeprefix("internal error: ")) + "\n")
    if wants_json(args):
        from sgpatch.console import error_document

        say(sys.stdout, error_document(message, code, internal))
    sys.exit(int(code))


def wants_json(args: list[str]) -> bool:
    """--json, or matrix/lint's --format json: the error then also goes to stdout as JSON."""
    opts = args[: args.index("--")] if "--" in args else args  # after `--`: file names
    pairs = zip(opts, [*opts[1:], ""], strict=True)
    return "--json" in opts or "--format=json" in opts or ("--format", "json") in pairs


def say(stream, text: str) -> None:
    """Last words on a stream that may be closed or broken: never a second traceback."""
    try:
        if stream is not None:
            stream.write(text)
            stream.flush()
    except (OSError, ValueError):  # ValueError: the stream was closed
        pass
