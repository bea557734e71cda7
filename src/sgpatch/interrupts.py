"""Ctrl-C: one line and exit 130, never a traceback and never a half-written tree.

Until the CLI runs (start-up imports, nothing written yet) Ctrl-C simply exits with MESSAGE:
`sgpatch.__main__` sets that handler before it imports anything of sgpatch, this module included.
While a command runs, it raises `Interrupted` instead of KeyboardInterrupt (`raising`): the CLI
library would turn KeyboardInterrupt into a silent exit 130, while `Interrupted`, a
BaseException like it, still unwinds through the writer's rollback (which catches
BaseException) up to `cli.main`, which prints the line.

Only `_signal`, `sys` and `os` are imported, the C module behind `signal`: `signal` itself imports
enum, which would be ~6 ms of start-up during which Ctrl-C was not ours yet.
"""

import _signal
import sys

TYPE_CHECKING = False  # typing's, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    Hook = Callable[[sys.UnraisableHookArgs], object]

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


def _resend(signum: int, frame: object) -> None:
    """SIGALRM: the Ctrl-C a callback swallowed, sent again now that the callback is over."""
    _signal.raise_signal(_signal.SIGINT)


def _swallowed(previous: "Hook") -> "Hook":
    """A `sys.unraisablehook` for Ctrl-C in a callback. A handler runs in whatever frame is
    current, and that can be a weakref callback (importlib's, dropping a module lock, while a
    lazy import is in flight) or a `__del__`: the interpreter only prints what is raised there
    and carries on, so the Ctrl-C would be lost under a traceback. Here it is sent again 1 ms
    later (and again, should that land in a callback too); other reports go to `previous`."""

    def hook(unraisable: "sys.UnraisableHookArgs") -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            previous(unraisable)
            return
        _signal.signal(_signal.SIGALRM, _resend)
        _signal.setitimer(_signal.ITIMER_REAL, 0.001)

    return hook


class raising:  # a lowercase name: read as `with interrupts.raising():`
    """Within the block, Ctrl-C raises `Interrupted`; the previous handler comes back after.
    Only the main thread can set handlers: elsewhere (a test calling the CLI from a thread)
    the block changes nothing."""

    def __enter__(self) -> "raising":
        self.previous = install(_raise)
        if self.previous is not None:
            self.alarm = _signal.getsignal(_signal.SIGALRM)
            self.unraisable = sys.unraisablehook
            sys.unraisablehook = _swallowed(self.unraisable)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGALRM, self.alarm)
            sys.unraisablehook = self.unraisable
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
