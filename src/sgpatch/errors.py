"""The one error type sgpatch raises on purpose, and the exit codes it maps to.

Every module raises `SgpatchError`; only the CLI turns it into a one-line message and an exit
code. Anything else escaping is a bug.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Stable exit codes shared by every command (docs/exit-codes.md)."""

    OK = 0  # done: nothing left to do, or the query succeeded
    NOT_DONE = 1  # patches pending (status --check), or the tree was modified after patching
    BAD_INPUT = 2  # usage, manifest, patch file, unknown set, no SGLang tree, no variant
    CONFLICT = 3  # a patch does not apply; nothing was written
    UNSAFE = 4  # ambiguous placement, unsafe path, lock held, interrupted run recovered
    INTERNAL = 70  # a bug in sgpatch: an exception nobody expected (sysexits' EX_SOFTWARE)


class SgpatchError(Exception):
    """An expected failure: a one-line message for the user plus the exit code to use."""

    def __init__(self, message: str, code: ExitCode = ExitCode.BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.code = ExitCode(code)

    def __str__(self) -> str:
        return self.message


def bad_input(message: str) -> SgpatchError:
    return SgpatchError(message, ExitCode.BAD_INPUT)


def unsafe(message: str) -> SgpatchError:
    return SgpatchError(message, ExitCode.UNSAFE)


def internal(message: str) -> SgpatchError:
    """sgpatch broke one of its own rules (a manifest it wrote reads back wrong, ...): the same
    one line and exit 70 as an exception nobody expected."""
    return SgpatchError(message, ExitCode.INTERNAL)
