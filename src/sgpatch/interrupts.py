"""Ctrl-C: one line and exit 130, never a traceback and never a half-written tree.

Until the CLI runs (start-up imports, nothing written yet) Ctrl-C simply exits with MESSAGE:
`sgpatch.__main__` sets that handler before it imports anything of sgpatch, this module included.
While a command runs, it raises `Interrupted` instead of KeyboardInterrupt (`raising`): the CLI
library would turn KeyboardInterrupt into a silent exit 130, while `Interrupted`, a
BaseException like it, still unwinds through the writer's rollback (which catches
BaseException) up to `cli.main`, which prints the line.

Only `_signal` and `os` are imported, the C module behind `signal`: `signal` itself imports
enum, which would be ~6 ms of start-up during which Ctrl-C was not ours yet.
"""

import _signal

EXIT = 130  # 128 + SIGINT, what a shell reports for a process Ctrl-C stopped
MESSAGE = "sgpatch: interrupted; nothing is left half-written (status shows the tree)"


class Interrupted(BaseException):
    """Ctrl-C while a command runs."""


def install(handler) -> object | None:
    """Set the SIGINT handler and return the previous one; None (and nothing changed) where
    Ctrl-C is ignored (`cmd &` in a script) or this is not the main thread."""
    try:
        if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
            return None
        return _signal.signal(_signal.SIGINT, handler)
    except ValueError:  # not the main thread
        return None


def _raise(signum: int, frame: object) -> None:
    raise Interrupted()


class raising:  # a lowercase name: read as `with interrupts.raising():`
    """Within the block, Ctrl-C raises `Interrupted`; the previous handler comes back after.
    Only the main thread can set handlers: elsewhere (a test calling the CLI from a thread)
    the block changes nothing."""

    def __enter__(self) -> "raising":
        self.previous = install(_raise)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            _signal.signal(_signal.SIGINT, self.previous)


class deferred:  # a lowercase name: read as `with interrupts.deferred():`
    """Within the block Ctrl-C is only noted, and raised as `Interrupted` when the block ends:
    for a rollback, which a second Ctrl-C must not cut short."""

    def __enter__(self) -> "deferred":
        self.hit = False

        def note(signum: int, frame: object) -> None:
            self.hit = True

        self.previous = install(note)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            _signal.signal(_signal.SIGINT, self.previous)
        if self.hit and exc[0] is None:
            raise Interrupted()
