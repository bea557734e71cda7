"""The typer app: one small function per command; logic lives in sgpatch.commands.*.

Imports of anything heavy happen inside the command functions so `sgpatch --help` stays fast.
No `from __future__ import annotations` here: typer would have to compile every annotation
string back (~220 compiles, ~13 ms per run).
"""

import copy
import sys
from pathlib import Path
from typing import Annotated

import typer

from sgpatch import interrupts
from sgpatch.errors import SgpatchError

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
    safety. Every command takes --json (matrix and lint: --format json): one JSON
    document on stdout.
    """


@app.command("patch")
def patch_cmd(
    patchfiles: Annotated[
        list[Path], typer.Argument(metavar="PATCHFILE...", help="Unified diff file(s) to apply.")
    ],
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


SglangDir = Annotated[
    Path | None,
    typer.Option(
        "--sglang-dir",
        help="SGLang package root, site-packages, repository root or its python/ folder "
        "(default: $SGLANG_DIR, else the tree the current directory is in, else the installed "
        "sglang).",
    ),
]
SglangVersion = Annotated[
    str | None,
    typer.Option("--sglang-version", help="Use this SGLang version instead of detecting it."),
]
PatchsetsOpt = Annotated[
    list[Path] | None,
    typer.Option("--patchsets", help="Extra folder of patch sets (before $SGPATCH_PATH)."),
]
SetOpt = Annotated[str, typer.Option("--set", "-s", help="Patch set name (see `sgpatch list`).")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Hunk and probe detail.")]
WithOpt = Annotated[
    list[str] | None, typer.Option("--with", help="Also apply this optional patch (repeatable).")
]
WithoutOpt = Annotated[
    list[str] | None, typer.Option("--without", help="Leave this patch out (repeatable).")
]


@app.command("apply")
def apply_cmd(
    set_name: SetOpt,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    with_ids: WithOpt = None,
    without_ids: WithoutOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and report; write nothing.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Refuse any fuzz, and fail (exit 1) on an unmet precondition."
        ),
    ] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    git_commit: Annotated[
        bool,
        typer.Option(
            "--commit",
            help="Git checkout: record each newly applied patch as its own commit.",
        ),
    ] = False,
) -> None:
    """Apply a patch set: probes first, then every patch planned in memory; all or nothing.

    Exit 0 done (applied, present or upstream), 1 a patched file was edited, 2 bad input or no
    variant for this release, 3 conflict, 4 refused for safety. Running it twice is a no-op.
    """
    from sgpatch.commands import apply

    raise typer.Exit(
        apply.run(
            set_name,
            sglang_dir,
            sglang_version,
            patchsets or [],
            with_ids or [],
            without_ids or [],
            dry_run,
            strict,
            as_json,
            verbose,
            git_commit,
        )
    )


@app.command("status")
def status_cmd(
    set_name: Annotated[
        str | None, typer.Option("--set", "-s", help="Only this set (default: all relevant).")
    ] = None,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    with_ids: Annotated[
        list[str] | None,
        typer.Option("--with", help="Count this optional patch as wanted (repeatable)."),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Exit 1 if a patch is pending or edited (3/4 on conflict)."),
    ] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Show the SGLang version and layout found and each patch's state; writes nothing.

    Without --set: every set in the ledger, else every known set that supports the version.
    """
    from sgpatch.commands import status

    raise typer.Exit(
        status.run(
            set_name,
            sglang_dir,
            sglang_version,
            patchsets or [],
            with_ids or [],
            check,
            as_json,
            verbose,
        )
    )


@app.command("revert")
def revert_cmd(
    set_name: SetOpt,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Reverse-apply patches on files edited since (else refuse)."),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Restore the exact original bytes of every file the set touched.

    A file edited since sgpatch patched it is refused (exit 1) unless --force.
    """
    from sgpatch.commands import revert

    raise typer.Exit(
        revert.run(set_name, sglang_dir, sglang_version, patchsets or [], force, dry_run, as_json)
    )


@app.command("list")
def list_cmd(patchsets: PatchsetsOpt = None, as_json: JsonOpt = False) -> None:
    """The patch sets sgpatch knows, with the SGLang releases each supports."""
    from sgpatch.commands import catalog

    raise typer.Exit(catalog.list_sets(patchsets or [], as_json))


@app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Patch set name.")],
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One set: its patches, variants per release, probes, upstream status, preconditions."""
    from sgpatch.commands import catalog

    raise typer.Exit(catalog.show_set(name, patchsets or [], as_json))


@app.command("probe")
def probe_cmd(
    set_name: SetOpt,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run only the probes: which patches does upstream already contain? -v shows evidence."""
    from sgpatch.commands import probe

    raise typer.Exit(
        probe.run(set_name, sglang_dir, sglang_version, patchsets or [], as_json, verbose)
    )


@app.command("recover")
def recover_cmd(
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    as_json: JsonOpt = False,
) -> None:
    """Roll back an interrupted sgpatch run explicitly (every command also does it first).

    Exit 0 whether or not there was anything to roll back; the output says which.
    """
    from sgpatch.commands import recover

    raise typer.Exit(recover.run(sglang_dir, sglang_version, as_json))


@app.command("fetch")
def fetch_cmd(
    versions: Annotated[
        list[str], typer.Argument(metavar="VERSION...", help="SGLang release(s), e.g. 0.5.10.")
    ],
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Also extract a pristine tree here.")
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout", help="site-packages (default) or checkout (python/sglang); not with --git."
        ),
    ] = None,
    git_url: Annotated[
        str | None,
        typer.Option(
            "--git",
            help="Check out this SGLang git repository at the given ref "
            "(tag, branch or commit) into --dest instead of using the index.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Download pristine SGLang releases into the cache ($SGPATCH_CACHE or ~/.cache/sgpatch).

    Wheels come from the package index via pip and are checked against their RECORD hashes.
    With --git URL, each argument is a git ref checked out into --dest (for releases not on the
    index, or main).
    """
    from sgpatch.commands import maint

    raise typer.Exit(maint.fetch(versions, dest, layout, as_json, git_url))


FormatOpt = Annotated[str, typer.Option("--format", help="table, markdown or json.")]
ReleasesOpt = Annotated[
    str | None,
    typer.Option("--releases", help="PEP 440 specifier narrowing the releases (default: all)."),
]
OfflineOpt = Annotated[
    bool, typer.Option("--offline", help="Only releases already in the cache; no index query.")
]


@app.command("matrix")
def matrix_cmd(
    set_name: SetOpt,
    patchsets: PatchsetsOpt = None,
    releases: ReleasesOpt = None,
    fmt: FormatOpt = "table",
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            help="Exit 3 if a cell is (repeatable): conflict, error, fuzz, offset, whitespace, "
            "partial, pending, present, upstream, n/a.",
        ),
    ] = None,
    offline: OfflineOpt = False,
    workers: Annotated[int | None, typer.Option("--workers", help="Parallel workers.")] = None,
) -> None:
    """Each patch of a set against each release the set claims: clean / offset / fuzz /
    upstream / n/a / conflict, planned on pristine trees from the release cache, in parallel."""
    from sgpatch.commands import maint

    raise typer.Exit(
        maint.matrix(set_name, patchsets or [], releases, fmt, fail_on or [], offline, workers)
    )


@app.command("lint")
def lint_cmd(
    set_names: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="Set(s) to check (default: all).")
    ] = None,
    patchsets: PatchsetsOpt = None,
    releases: ReleasesOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="text, github or json.")] = "text",
    offline: OfflineOpt = False,
) -> None:
    """CI checks for patch sets: every variant applies with fuzz 0 and no ambiguity on every
    release it covers; probes agree with the manifest's upstream status; headers present.
    Exit 3 on any error finding; 2 when the set cannot be read."""
    from sgpatch.commands import maint

    raise typer.Exit(maint.lint(set_names or [], patchsets or [], releases, fmt, offline))


@app.command("port")
def port_cmd(
    set_name: SetOpt,
    to: Annotated[str, typer.Option("--to", help="The new SGLang release, e.g. 0.5.24.")],
    patchsets: PatchsetsOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    scratch: Annotated[
        Path | None,
        typer.Option("--scratch", help="Where to leave merged files with conflict markers."),
    ] = None,
    without_ids: WithoutOpt = None,
    offline: OfflineOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Carry a set to a new release: per patch upstream now / still applies / ported (3-way
    merge into a new fuzz-0 variant) / conflict. Any conflict: exit 3 and the set is unchanged."""
    from sgpatch.commands import port

    raise typer.Exit(
        port.run(
            set_name, to, patchsets or [], dry_run, scratch, without_ids or [], offline, as_json
        )
    )


@app.command("refresh")
def refresh_cmd(
    set_name: SetOpt,
    patch_id: Annotated[str, typer.Option("--patch", "-p", help="The patch id to regenerate.")],
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    files: Annotated[
        list[str] | None,
        typer.Option("--file", help="Also include this package-relative file (repeatable)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the new patch; write nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Regenerate a patch's variant for the tree's release from the edited tree, against the
    pristine release (like quilt refresh), in canonical form; header kept."""
    from sgpatch.commands import refresh

    raise typer.Exit(
        refresh.run(
            set_name,
            patch_id,
            sglang_dir,
            sglang_version,
            patchsets or [],
            files or [],
            dry_run,
            as_json,
        )
    )


@app.command("diff")
def diff_cmd(
    paths: Annotated[
        list[str] | None,
        typer.Argument(metavar="[FILE]...", help="Package-relative files (default: all changed)."),
    ] = None,
    sglang_dir: SglangDir = None,
    against: Annotated[
        str | None,
        typer.Option("--against", help="Release to diff against (default: the tree's version)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the canonical diff of a tree against its pristine release (from the cache)."""
    from sgpatch.commands import refresh

    raise typer.Exit(refresh.diff(paths or [], sglang_dir, against, as_json))


@app.command("export")
def export_cmd(
    set_name: SetOpt,
    to: Annotated[Path, typer.Option("--to", help="Folder to write the patch files into.")],
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Git mode: write the commits `apply --commit` made (found by their trailer) back to
    canonical patch files."""
    from sgpatch.commands import gitcmds

    raise typer.Exit(
        gitcmds.export(set_name, to, sglang_dir, sglang_version, patchsets or [], as_json)
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: turn SgpatchError into one line on stderr and its exit code.

    Click's standalone mode handles usage errors (exit 2, with usage) and --help; with --json an
    error is also one JSON document on stdout, so scripts always get something to parse.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        with interrupts.raising():
            _app_for(args)(args=args, standalone_mode=True, prog_name="sgpatch")
    except SgpatchError as exc:
        _say(sys.stderr, f"sgpatch: error: {exc.message}\n")
        if _wants_json(args):
            import json

            doc = {"schema": 1, "error": exc.message, "exit_code": int(exc.code)}
            _say(sys.stdout, json.dumps(doc) + "\n")
        sys.exit(int(exc.code))
    except (interrupts.Interrupted, KeyboardInterrupt):
        _say(sys.stderr, interrupts.MESSAGE + "\n")
        sys.exit(interrupts.EXIT)


def _wants_json(args: list[str]) -> bool:
    """--json, or matrix/lint's --format json: the error then also goes to stdout as JSON."""
    opts = args[: args.index("--")] if "--" in args else args  # after `--`: file names
    pairs = zip(opts, [*opts[1:], ""], strict=True)
    return "--json" in opts or "--format=json" in opts or ("--format", "json") in pairs


def _say(stream, text: str) -> None:
    """Last words on a stream that may be closed or broken: never a second traceback."""
    try:
        if stream is not None:
            stream.write(text)
            stream.flush()
    except OSError:
        pass


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command argv names, when it names one: typer turns every
    registered command into a click command on each run (~20 ms for all of them), and one
    invocation needs one. `sgpatch`, `sgpatch --help` and unknown names get the whole app."""
    wanted = [c for c in app.registered_commands if args and c.name == args[0]]
    if not wanted:
        return app
    one = copy.copy(app)
    one.registered_commands = wanted
    return one
