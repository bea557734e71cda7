"""The typer app: one small function per command; logic lives in sgpatch.commands.*.

Imports of anything heavy happen inside the command functions so `sgpatch --help` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from sgpatch.errors import ExitCode, SgpatchError

app = typer.Typer(
    name="sgpatch",
    help="Versioned, probe-aware, fuzz-safe patch sets for vendored SGLang trees.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def _version(value: bool) -> None:
    if value:
        from sgpatch import __version__

        sys.stdout.write(f"sgpatch {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """sgpatch: apply, check and revert versioned patch sets on SGLang trees.

    Exit codes: 0 done, 1 not done (pending/modified), 2 bad input, 3 conflict, 4 refused for
    safety. Every command takes --json (one JSON document on stdout).
    """


@app.command("patch")
def patch_cmd(
    patchfiles: Annotated[list[Path], typer.Argument(help="Unified diff file(s) to apply.")],
    strip: Annotated[
        int, typer.Option("-p", "--strip", help="Strip N leading path components.")
    ] = 1,
    directory: Annotated[Path, typer.Option("-d", "--directory", help="Apply inside DIR.")] = Path(
        "."
    ),
    fuzz: Annotated[
        int, typer.Option("--fuzz", "-F", help="Max outer context lines to drop (0-2).")
    ] = 0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and report; write nothing.")
    ] = False,
    reverse: Annotated[bool, typer.Option("-R", "--reverse", help="Un-apply the patch.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply unified diffs like GNU patch, but never in the wrong place and all-or-nothing.

    Every file of every patch is planned in memory first; nothing is written if any hunk is
    refused. Exit 0 applied (or nothing to do), 2 bad input, 3 conflict, 4 ambiguous/unsafe.
    """
    from sgpatch.commands import patch

    raise typer.Exit(patch.run(patchfiles, strip, directory, fuzz, dry_run, reverse, as_json))


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn SgpatchError into one line on stderr and its exit code."""
    try:
        rc = app(args=argv, standalone_mode=False)
    except SgpatchError as exc:
        sys.stderr.write(f"sgpatch: error: {exc.message}\n")
        sys.exit(int(exc.code))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("sgpatch: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.Abort):
            sys.stderr.write("sgpatch: aborted\n")
            sys.exit(int(ExitCode.BAD_INPUT))
        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(int(ExitCode.BAD_INPUT))
        raise
    sys.exit(rc if isinstance(rc, int) else 0)
