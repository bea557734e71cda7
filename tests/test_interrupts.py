"""Ctrl-C while a command runs (sgpatch.interrupts)."""

import _signal
import sys
import time
import weakref

import pytest

from sgpatch import interrupts


class _Held:
    """Something a weakref can watch."""


def test_ctrl_c_swallowed_by_a_callback_still_stops_the_command(capsys):
    """Input: Ctrl-C handled while a weakref callback runs (as importlib's module-lock callback
    does during a lazy import), where the interpreter ignores whatever is raised. Outcome:
    `Interrupted` still reaches the running code a moment later, and nothing is printed."""
    with pytest.raises(interrupts.Interrupted), interrupts.raising():
        held = _Held()
        watch = weakref.ref(held, lambda _ref: _signal.raise_signal(_signal.SIGINT))
        del held
        assert watch() is None  # the callback ran, and swallowed the Ctrl-C
        time.sleep(5)  # the Ctrl-C comes again within ~1 ms: this never sleeps its 5 s
    assert capsys.readouterr().err == ""


def test_the_block_puts_back_what_it_changed():
    """Input: a `raising` block entered and left. Outcome: the SIGINT and SIGALRM handlers and
    sys.unraisablehook are the ones from before."""
    before = (
        _signal.getsignal(_signal.SIGINT),
        _signal.getsignal(_signal.SIGALRM),
        sys.unraisablehook,
    )
    with interrupts.raising():
        assert sys.unraisablehook is not before[2]
    after = (
        _signal.getsignal(_signal.SIGINT),
        _signal.getsignal(_signal.SIGALRM),
        sys.unraisablehook,
    )
    assert after == before
