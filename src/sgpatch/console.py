"""The streams: every line sgpatch prints goes through here, and every JSON document.

As git and pip use them: a command's product (a listing, `show`, a status, probe or matrix
table, lint findings, a diff) goes to stdout so it can be piped; messages, warnings, progress
and the one-line verdict go to stderr. JSON goes to stdout, one document per run, with the
schema number set here and nowhere else (docs/json.md).

Human output must read well in a terminal and in `docker build` logs alike. On a terminal, tables
are rich's (boxes, colour; NO_COLOR and TERM=dumb honoured). Anywhere else (a build log, a pipe,
CI) they are plain aligned columns, one line per row, with no colour, no animation and no padding
to a guessed width, and rich is not imported at all: that is ~45 ms of every `status`/`apply`.
FORCE_COLOR asks for the terminal form in a log.

Light on purpose (core layer: the standard library, `shown` and `errors` only): `status` and
`--version` import it, and json and rich are imported only by the runs that print them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from sgpatch import shown
from sgpatch.errors import SgpatchError

# The JSON documents' schema numbers (docs/json.md says what each added).
SCHEMA = 1  # every command's document
PORT_SCHEMA = 5  # `port`: 2 the workspace, 3 file by file, 4 a stop says more, 5 moved code, --show
ERROR_SCHEMA = 2  # the error document: 2 added `internal` (exit 70)


def emit_json(doc: Mapping[str, object]) -> None:
    """Print a command's JSON document on stdout (the only thing --json prints there), its
    schema first. Nothing is stringified behind the caller's back: a value JSON cannot hold
    is sgpatch's own bug (TypeError: exit 70). A script asked for it, so failing to deliver
    it (a full disk) is an error, not a traceback; a closed stdout (`>&-`) asked for nothing."""
    if "schema" in doc:
        raise TypeError("a JSON document's schema is console's to set (console.SCHEMA)")
    schema = PORT_SCHEMA if doc.get("command") == "port" else SCHEMA
    _json_out({"schema": schema, **doc}, indent=2)


def error_document(message: str, code: int, internal: bool) -> str:
    """The error document a failed run prints on stdout under --json (docs/json.md), one line."""
    import json

    doc = {"schema": ERROR_SCHEMA, "error": message, "exit_code": int(code), "internal": internal}
    return json.dumps(doc) + "\n"


def _json_out(doc: Mapping[str, object], indent: int | None = None) -> None:
    if sys.stdout is None:
        return
    import json  # only --json needs it

    text = json.dumps(doc, indent=indent, default=_not_json) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        raise SgpatchError(
            f"cannot write the JSON document to stdout: {exc.strerror or exc} (the command "
            "itself ran: status shows the tree)"
        ) from None


def _not_json(value: object) -> object:
    """json's hook for a value it cannot hold: refuse it by its type (a record that missed its
    `to_json`, a Path, a Version), so the bug shows in the tests instead of as a string."""
    raise TypeError(f"{type(value).__name__} {value!r} in a JSON document (use its to_json)")


def err(text: str = "") -> None:
    """A line for people on stderr; if nobody can read it (closed, full), the run goes on (the
    console script ends by SIGPIPE on a closed pipe, before this sees it). The product written
    to stdout so far goes out first, so a log that holds both streams keeps their order (the
    verdict after the table), though stdout is block-buffered there."""
    with contextlib.suppress(OSError, AttributeError):  # a full stdout is reported at exit
        sys.stdout.flush()
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: stderr is None
        sys.stderr.write(shown.lines(text) + "\n")


def lines(texts: Iterable[str]) -> None:
    """Lines for people on stderr, one each, as they are (notes a lower layer returned)."""
    for text in texts:
        err(text)


def warnings(texts: Iterable[str]) -> None:
    """`sgpatch: warning: ...` on stderr, one line each (a writer's notes: an owner not kept)."""
    for text in texts:
        err(f"sgpatch: warning: {text}")


def out(text: str = "") -> None:
    """A line of the command's product on stdout (see `write`), for people: control characters
    escaped (sgpatch.shown.lines); `write` is for bytes that must stay exact (a patch)."""
    write(shown.lines(text) + "\n")


def write(text: str) -> None:
    """The command's product, as it is, on stdout. A closed stdout (`>&-`) asked for nothing; a
    full disk is an error (a reader that went away ends the process by SIGPIPE)."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(text)
    except OSError as exc:
        raise SgpatchError(f"cannot write to stdout: {exc.strerror or exc}") from None


def stream(to_stdout: bool) -> Callable[[str], None]:
    """`out` for a product, `err` for a message: one switch for code shared by both."""
    return out if to_stdout else err


def on_terminal(to_stdout: bool = False) -> bool:
    """Rich tables only where someone is looking (or FORCE_COLOR says so)."""
    s = sys.stdout if to_stdout else sys.stderr
    return bool(s is not None and s.isatty()) or bool(os.environ.get("FORCE_COLOR"))


def rich_console(to_stdout: bool = False):  # rich is imported only when a terminal shows it
    """Rich console on stderr (or stdout); 160 columns when not a terminal so forced output
    does not wrap."""
    from rich.console import Console

    s = sys.stdout if to_stdout else sys.stderr
    width = None if s.isatty() or os.environ.get("COLUMNS") else 160
    return Console(stderr=not to_stdout, highlight=False, soft_wrap=False, width=width)


def plain_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Aligned columns, two spaces apart, one line per row, no trailing blanks."""
    cells = [[" ".join(str(c).split("\n")) for c in row] for row in [columns, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    style: Callable[[str, str], str] | None = None,
    *,
    to_stdout: bool = True,
) -> None:
    """A table on stdout (a product; stderr when it reports progress): rich on a terminal,
    `plain_table` elsewhere. `style(column, text)` colours a cell on a terminal only; the text
    is the same either way. The first column holds ids (patch, set, release): never wrapped or
    cut, so it can be copied; the other columns fold when the terminal is narrow."""
    rows = [[shown.lines(str(c)) for c in row] for row in rows]
    if not on_terminal(to_stdout):
        stream(to_stdout)("\n".join(plain_table(columns, rows)))
        return
    from rich.table import Table
    from rich.text import Text

    t = Table()
    for i, col in enumerate(columns):
        if i == 0:
            t.add_column(col, no_wrap=True, overflow="ignore", min_width=_widest(col, rows))
        else:
            t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(
            *(
                Text(c, style=style(col, c) if style else "")
                for col, c in zip(columns, row, strict=True)
            )
        )
    rich_console(to_stdout).print(t)


def _widest(column: str, rows: Sequence[Sequence[str]]) -> int:
    return max([len(column), *(len(r[0]) for r in rows)])
