"""How names and commands appear in what sgpatch prints: one rule for each.

A file name, set name or path is the tree's text, not ours: an ESC or BEL in it must not drive
the terminal, and a newline must not split a one-line message, so every name printed goes
through `name` (control characters as Python escapes: `\\x1b`, `\\n`; JSON keeps the text
exact). A command sgpatch advises must work as typed, so it is built by `command`: every word
shell-quoted, in backticks, with the options that say which tree and which sets it is about.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

_CONTROLS = {c: repr(chr(c))[1:-1] for c in (*range(32), *range(127, 160))}
_IN_LINES = {c: e for c, e in _CONTROLS.items() if chr(c) not in "\n\t"}


def name(text: object) -> str:
    """`text` with its control characters (C0, DEL, C1) shown as Python escapes."""
    return str(text).translate(_CONTROLS)


def lines(text: str) -> str:
    """Text for people (messages, listings, table cells): its line breaks and tabs kept, every
    other control character escaped, the net under every name that was not passed to `name`
    (an ESC or BEL from a file name never reaches the terminal raw)."""
    return text.translate(_IN_LINES)


def command(*words: object) -> str:
    """`sgpatch WORD...` as a person types it: each word quoted for a POSIX shell (and its
    control characters escaped: a hint is text on a terminal first), in backticks."""
    import shlex

    return "`" + " ".join(["sgpatch", *(name(shlex.quote(str(w))) for w in words)]) + "`"


_GIVEN: list[Path] = []  # the --patchsets folders of this run's command line (`given`)


def given(argv: Iterable[str]) -> None:
    """Remember the `--patchsets` folders this run was given (the CLI's entry point calls it),
    so advice printed anywhere finds the same sets."""
    args = list(argv)
    _GIVEN[:] = [
        Path(args[i + 1]) for i in range(len(args) - 1) if args[i] == "--patchsets" and args[i + 1]
    ] + [Path(a.split("=", 1)[1]) for a in args if a.startswith("--patchsets=")]


def context(root: Path | None = None, patchsets: Iterable[Path] | None = None) -> tuple[str, ...]:
    """The options that keep an advised command on the same tree and the same sets as the run
    that advises it: `--sglang-dir ROOT` (absolute) and each `--patchsets DIR` (by default the
    ones this run was given)."""
    out: list[str] = []
    if root is not None:
        out += ["--sglang-dir", str(Path(root).absolute())]
    for p in _GIVEN if patchsets is None else patchsets:
        out += ["--patchsets", str(Path(p).absolute())]
    return tuple(out)
