"""The typer app: one small function per command; logic lives in sgpatch.cli.*.

Imports of anything heavy happen inside the command functions so `sgpatch --help` stays fast.
Annotations are strings (`from __future__ import annotations`): typer evaluates them for the
commands it builds, which is one per run (`_app_for`) but for help; evaluated at import they
were ~70 `Annotated[...]` and typer.Option objects for the twenty commands, on every run.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from sgpatch import interrupts
from sgpatch.cli import complete
from sgpatch.errors import SgpatchError

app = typer.Typer(
    name="sgpatch",
    help="Versioned, probe-aware, fuzz-safe patch sets for vendored SGLang trees.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
LockTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--lock-timeout",
        min=0,
        metavar="SECONDS",
        help="Wait this long for another run's lock (default $SGPATCH_LOCK_TIMEOUT, else 30).",
    ),
]


def _lock_timeout(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    """The command's --lock-timeout for every lock it takes (the writer is imported only when
    the option is given)."""
    if seconds is None:
        return contextlib.nullcontext()
    from sgpatch.state.lock import timeout_given

    return timeout_given(seconds)


def _version(value: bool) -> None:
    if value:
        from sgpatch import __version__

        _product(f"sgpatch {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show version."),
    ] = False,
) -> None:
    """sgpatch: apply, check and revert versioned patch sets on SGLang trees.

    Exit codes: 0 done, 1 not done (pending/modified), 2 bad input, 3 conflict, 4 refused for
    safety, 70 internal error (a bug). Every command takes --json: one JSON document on
    stdout. A command's product (listings, tables, diffs) goes to stdout; messages and the
    one-line verdict to stderr.
    `sgpatch help CMD` shows a command's options; `sgpatch completion bash|zsh|fish` prints a
    shell completion script.
    """


@app.command("patch", short_help="Apply unified diffs like GNU patch, never in the wrong place.")
def patch_cmd(
    patchfiles: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATCHFILE]...", help="Unified diff file(s) to apply; none or '-': stdin."
        ),
    ] = None,
    strip: Annotated[
        int, typer.Option("-p", "--strip", help="Strip N leading path components.")
    ] = 1,
    directory: Annotated[Path, typer.Option("-d", "--directory", help="Apply inside DIR.")] = Path(
        "."
    ),
    inputs: Annotated[
        list[Path] | None,
        typer.Option("-i", "--input", help="Read the patch from FILE (repeatable; '-': stdin)."),
    ] = None,
    fuzz: Annotated[
        int, typer.Option("--fuzz", "-F", help="Max outer context lines to drop (0-2).")
    ] = 0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and report; write nothing.")
    ] = False,
    reverse: Annotated[bool, typer.Option("-R", "--reverse", help="Un-apply the patch.")] = False,
    forward: Annotated[
        bool,
        typer.Option(
            "-N", "--forward", help="Skip what is already applied (always so: never reversed)."
        ),
    ] = False,
    remove_empty: Annotated[
        bool, typer.Option("-E", "--remove-empty-files", help="Delete files left empty.")
    ] = False,
    as_json: JsonOpt = False,
    lock_timeout: LockTimeoutOpt = None,
) -> None:
    """Apply unified diffs like GNU patch, but never in the wrong place and all-or-nothing.

    Every file of every patch is planned in memory first; nothing is written if any hunk is
    refused. Exit 0 applied (or nothing to do), 2 bad input, 3 conflict, 4 ambiguous/unsafe.
    """
    from sgpatch.cli import patch

    del forward  # sgpatch never reverses a patch it finds applied: -N is how it always works
    sources = [*(patchfiles or []), *(inputs or [])] or [Path("-")]
    options = patch.Options(strip, directory, fuzz, dry_run, reverse, as_json, remove_empty)
    with _lock_timeout(lock_timeout):
        raise typer.Exit(patch.run(sources, options))


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
SetOpt = Annotated[
    str,
    typer.Option(
        "--set",
        "-s",
        help="Patch set name (see `sgpatch list`).",
        autocompletion=complete.set_names,
    ),
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Hunk and probe detail.")]
WithOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--with",
        help="Also apply this optional patch (repeatable).",
        autocompletion=complete.optional_ids,
    ),
]
WithoutOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--without", help="Leave this patch out (repeatable).", autocompletion=complete.patch_ids
    ),
]


@app.command("apply", short_help="Apply a patch set to an SGLang tree, all or nothing.")
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
    untested: Annotated[
        bool,
        typer.Option(
            "--untested",
            help="On a version the set was not checked on (a snapshot of main, a nightly): "
            "apply its nearest variants where every hunk is certain.",
        ),
    ] = False,
    lock_timeout: LockTimeoutOpt = None,
) -> None:
    """Apply a patch set: probes first, then every patch planned in memory; all or nothing.

    Exit 0 done (applied, present or upstream), 1 a patched file was edited, 2 bad input or no
    variant for this release, 3 conflict, 4 refused for safety. Running it twice is a no-op.

    A set may patch files an earlier applied set patched: it goes on top, planned on the bytes
    that set left, and is reverted first (docs/safety.md, "Stacked sets").

    On a version the set was not checked on (docs/tracking-main.md) apply refuses (exit 2)
    unless --untested: then each patch uses the variants of the nearest lower version the set
    was checked on, and is applied only if every hunk places exactly and uniquely.
    """
    from sgpatch.cli import apply

    opts = apply.ApplyOptions(
        set_name=set_name,
        sglang_dir=sglang_dir,
        sglang_version=sglang_version,
        patchsets=tuple(patchsets or ()),
        with_ids=tuple(with_ids or ()),
        without_ids=tuple(without_ids or ()),
        dry_run=dry_run,
        strict=strict,
        as_json=as_json,
        verbose=verbose,
        git_commit=git_commit,
        untested=untested,
    )
    with _lock_timeout(lock_timeout):
        raise typer.Exit(apply.run(opts))


@app.command("status", short_help="Show each patch's state on an SGLang tree.")
def status_cmd(
    set_name: Annotated[
        str | None,
        typer.Option(
            "--set",
            "-s",
            help="Only this set (default: all relevant).",
            autocompletion=complete.set_names,
        ),
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
    from sgpatch.cli import status

    opts = status.StatusOptions(
        set_name, sglang_dir, sglang_version, tuple(patchsets or ()), tuple(with_ids or ()),
        check=check, as_json=as_json, verbose=verbose,
    )  # fmt: skip
    raise typer.Exit(status.run(opts))


@app.command("revert", short_help="Restore the original bytes of every file a set touched.")
def revert_cmd(
    set_name: SetOpt,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Keep edits made since and take the set's changes out."),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change.")] = False,
    as_json: JsonOpt = False,
    git_commit: Annotated[
        bool,
        typer.Option("--commit", help="Git checkout: record the revert as one commit."),
    ] = False,
    lock_timeout: LockTimeoutOpt = None,
) -> None:
    """Restore the exact original bytes of every file the set touched.

    A file edited since sgpatch patched it is refused (exit 1) unless --force, which keeps the
    edit and takes only the set's changes out.

    Stacked sets come off in reverse order: reverting a set while a set applied on top of it
    still patches one of its files is refused (exit 4, with or without --force), naming the set
    to revert first.
    """
    from sgpatch.cli import revert

    opts = revert.RevertOptions(
        set_name=set_name,
        sglang_dir=sglang_dir,
        sglang_version=sglang_version,
        patchsets=tuple(patchsets or ()),
        force=force,
        dry_run=dry_run,
        as_json=as_json,
        git_commit=git_commit,
    )
    with _lock_timeout(lock_timeout):
        raise typer.Exit(revert.run(opts))


@app.command("list", short_help="List the known patch sets and the releases they support.")
def list_cmd(patchsets: PatchsetsOpt = None, as_json: JsonOpt = False) -> None:
    """The patch sets sgpatch knows, with the SGLang releases each supports."""
    from sgpatch.cli import catalog

    raise typer.Exit(catalog.list_sets(catalog.ListOptions(tuple(patchsets or ()), as_json)))


@app.command("show", short_help="Show one patch set: patches, variants, probes.")
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(metavar="NAME", help="Patch set name.", autocompletion=complete.set_names),
    ],
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One set: its patches, variants per release, probes, upstream status, preconditions."""
    from sgpatch.cli import catalog

    raise typer.Exit(catalog.show_set(catalog.ShowOptions(name, tuple(patchsets or ()), as_json)))


@app.command("probe", short_help="Say which patches upstream already contains.")
def probe_cmd(
    set_name: SetOpt,
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Run only the probes: which patches does upstream already contain? -v shows evidence."""
    from sgpatch.cli import probe

    opts = probe.ProbeOptions(
        set_name, sglang_dir, sglang_version, tuple(patchsets or ()), as_json, verbose
    )
    raise typer.Exit(probe.run(opts))


@app.command("recover", short_help="Roll back an interrupted sgpatch run.")
def recover_cmd(
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    as_json: JsonOpt = False,
    lock_timeout: LockTimeoutOpt = None,
) -> None:
    """Roll back an interrupted sgpatch run explicitly (every writing command does it first).

    Exit 0 whether or not there was anything to roll back; the output says which.
    """
    from sgpatch.cli import recover

    with _lock_timeout(lock_timeout):
        raise typer.Exit(recover.run(recover.RecoverOptions(sglang_dir, sglang_version, as_json)))


@app.command("fetch", short_help="Download pristine SGLang releases into the cache.")
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
    With $XDG_CACHE_HOME set, the cache defaults to $XDG_CACHE_HOME/sgpatch.
    With --git URL, each argument is a git ref checked out into --dest (for releases not on the
    index, or main).
    """
    from sgpatch.cli import maint

    raise typer.Exit(
        maint.fetch(maint.FetchOptions(tuple(versions), dest, layout, as_json, git_url))
    )


FormatOpt = Annotated[str, typer.Option("--format", help="table, markdown or json.")]
ReleasesOpt = Annotated[
    str | None,
    typer.Option("--releases", help="PEP 440 specifier narrowing the releases (default: all)."),
]
OfflineOpt = Annotated[
    bool, typer.Option("--offline", help="Only releases already in the cache; no index query.")
]
TreeOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--tree",
        help="Also plan the set on this SGLang tree (a checkout of main, a nightly's package); "
        "repeatable.",
    ),
]


@app.command("matrix", short_help="Plan a set against every release it claims.")
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
    as_json: JsonOpt = False,
    trees: TreeOpt = None,
) -> None:
    """Plan each patch of a set against each release the set claims.

    A cell is clean / offset / fuzz / upstream / n/a / conflict, planned on pristine trees from
    the release cache, in parallel. --json is --format json. --tree DIR adds a row for an SGLang
    tree that is not a release (a checkout of main, a nightly's package), planned as `status`
    plans it.
    """
    from sgpatch.cli import maint

    fmt = _json_format(fmt, as_json, "table")
    raise typer.Exit(
        maint.matrix(
            maint.MatrixOptions(
                set_name,
                tuple(patchsets or ()),
                releases,
                fmt,
                tuple(fail_on or ()),
                offline,
                workers,
                tuple(trees or ()),
            )
        )
    )


def _json_format(fmt: str, as_json: bool, default: str) -> str:
    """--json is --format json; with another --format it is a contradiction, not a guess."""
    if as_json and fmt not in (default, "json"):
        from sgpatch.errors import bad_input

        raise bad_input(f"--json and --format {fmt} contradict each other; give one")
    return "json" if as_json else fmt


@app.command("lint", short_help="Check patch sets the way CI does.")
def lint_cmd(
    set_names: Annotated[
        list[str] | None,
        typer.Option(
            "--set", "-s", help="Set(s) to check (default: all).", autocompletion=complete.set_names
        ),
    ] = None,
    patchsets: PatchsetsOpt = None,
    releases: ReleasesOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="text, github or json.")] = "text",
    offline: OfflineOpt = False,
    as_json: JsonOpt = False,
    trees: TreeOpt = None,
) -> None:
    """Check patch sets the way CI does.

    Every variant applies with fuzz 0 and no ambiguity on every release it covers; probes agree
    with the manifest's upstream status; headers present. Exit 3 on any error finding; 2 when
    the set cannot be read. --json is --format json. --tree DIR checks the set on that tree
    too, as `status` plans it.
    """
    from sgpatch.cli import maint

    fmt = _json_format(fmt, as_json, "text")
    raise typer.Exit(
        maint.lint(
            maint.LintOptions(
                tuple(set_names or ()),
                tuple(patchsets or ()),
                releases,
                fmt,
                offline,
                tuple(trees or ()),
            )
        )
    )


@app.command("verify", short_help="Check a patch set on real releases, end to end.")
def verify_cmd(
    set_name: SetOpt,
    patchsets: PatchsetsOpt = None,
    releases: ReleasesOpt = None,
    offline: OfflineOpt = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the patched trees (the path is printed).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a patch set on real releases, end to end.

    Per release, on a fresh copy of the pristine release, optional patches chosen too:
    `apply --strict` exits 0, every
    Python file it wrote compiles, every import of SGLang the set added there resolves on the
    release, `apply` again is a no-op, `status --check` exits 0, and `revert` leaves every
    file exactly as the wheel's RECORD says. Exit 0 every release verified; otherwise the
    worst release's code: apply's own (2 no variant, 3 conflict, 4 ambiguous), 3 for a
    failed compile, imports, reapply, status or revert; 2 no release matches.
    """
    from sgpatch.cli import verify

    opts = verify.VerifyOptions(set_name, tuple(patchsets or ()), releases, offline, keep, as_json)
    raise typer.Exit(verify.run(opts))


@app.command("port", short_help="Carry a patch set to another SGLang release (a rebase).")
def port_cmd(
    set_name: Annotated[
        str | None,
        typer.Option(
            "--set",
            "-s",
            help="Patch set name (see `sgpatch list`).",
            autocompletion=complete.set_names,
        ),
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="The release to carry the set to, e.g. 0.5.24.")
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Where to build the release tree and keep the port's state (a new folder).",
        ),
    ] = None,
    patchsets: PatchsetsOpt = None,
    step: Annotated[
        bool,
        typer.Option("--step", help="Port through every release between the set's and --to."),
    ] = False,
    cont: Annotated[
        bool, typer.Option("--continue", help="Take the fixed workspace and write the set.")
    ] = False,
    abort: Annotated[
        bool, typer.Option("--abort", help="Remove the workspace; the set stays as it was.")
    ] = False,
    no_finish: Annotated[
        bool,
        typer.Option("--no-finish", help="Stop before writing the set, even with nothing to fix."),
    ] = False,
    without_ids: WithoutOpt = None,
    offline: OfflineOpt = False,
    as_json: JsonOpt = False,
    to_tree: Annotated[
        Path | None,
        typer.Option(
            "--to-tree",
            help="Carry the set onto this SGLang tree instead (a checkout of main, a nightly "
            "image's package): its variants name that snapshot only.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="With --abort: keep your edits in W.aborted-N next to W, then abort."
        ),
    ] = False,
    show: Annotated[
        str | None,
        typer.Option(
            "--show",
            metavar="FILE",
            help="With --workspace: one stopped file's details (upstream's change beside the "
            "patch's, where moved code may have gone).",
        ),
    ] = None,
    fold: Annotated[
        str | None,
        typer.Option(
            "--fold",
            metavar="FILE",
            help="With --workspace: fold the names a stopped file defines twice, as the stop "
            "suggests (the code Python runs stays); then --continue.",
        ),
    ] = None,
) -> None:
    """Carry a patch set to another SGLang release, like a rebase.

    Every hunk that places exactly is kept, only the others are merged three-way, into a
    workspace holding the release's tree; fix what needs a hand there, then --continue (or
    --abort). Exit 0 carried and the set written, 3 conflicts left in the workspace (the set
    unchanged), 2 bad input, 4 refused for safety (a port in progress there, another run
    holding the workspace, the set changed since the port began, hand edits --abort would
    delete).

    --to-tree DIR ports onto a tree that is not a release (docs/tracking-main.md): it is kept
    in the release cache as a snapshot, each patch is carried from the variant of the nearest
    lower version the set was checked on, and the new variants name the snapshot alone
    (`==0.5.24.dev12`).
    """
    from sgpatch.cli import port

    raise typer.Exit(
        port.run(
            port.Args(
                set_name,
                to,
                workspace,
                patchsets or [],
                step,
                cont,
                abort,
                no_finish,
                without_ids or [],
                offline,
                as_json,
                to_tree,
                force,
                show,
                fold,
            )
        )
    )


@app.command("refresh", short_help="Regenerate a patch from an edited tree.")
def refresh_cmd(
    set_name: SetOpt,
    patch_id: Annotated[
        str | None,
        typer.Option(
            "--patch",
            help="The patch id to regenerate (required).",
            autocompletion=complete.patch_ids,
        ),
    ] = None,
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
    old_p: Annotated[str | None, typer.Option("-p", hidden=True)] = None,
) -> None:
    """Regenerate a patch from an edited tree.

    The variant for the tree's release is rewritten from the tree against the pristine release
    (like quilt refresh), in canonical form; its header is kept.
    """
    from sgpatch.cli import refresh

    patch_id = _deprecated_alias(patch_id, old_p, "refresh -p", "--patch")
    raise typer.Exit(
        refresh.run(
            refresh.RefreshOptions(
                set_name,
                patch_id,
                sglang_dir,
                sglang_version,
                tuple(patchsets or ()),
                tuple(files or ()),
                dry_run,
                as_json,
            )
        )
    )


@app.command("diff", short_help="Print a tree's diff against its pristine release.")
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
    """Print the canonical diff of a tree against its pristine release (from the cache).

    Paths are `a/python/sglang/...`, the form patch files use, so the output is a patch file.
    """
    from sgpatch.cli import refresh

    raise typer.Exit(
        refresh.diff(refresh.DiffOptions(tuple(paths or ()), sglang_dir, against, as_json))
    )


@app.command("export", short_help="Git mode: write sgpatch commits back to patch files.")
def export_cmd(
    set_name: SetOpt,
    to: Annotated[Path, typer.Option("--to", help="Folder to write the patch files into.")],
    sglang_dir: SglangDir = None,
    sglang_version: SglangVersion = None,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Git mode: write sgpatch's commits back to patch files.

    The commits `apply --commit` made (found by their trailer) become canonical patch files.
    """
    from sgpatch.cli import gitcmds

    raise typer.Exit(
        gitcmds.export(
            gitcmds.ExportOptions(
                set_name, to, sglang_dir, sglang_version, tuple(patchsets or ()), as_json
            )
        )
    )


def _deprecated_alias(value: str | None, old: str | None, old_name: str, new: str) -> str:
    """An option whose spelling changed: the old one still works for one release, with a
    warning; neither is a usage error (exit 2)."""
    from sgpatch.errors import bad_input

    if old is not None:
        sys.stderr.write(
            f"sgpatch: warning: {old_name} is deprecated (short flags now mean one thing in "
            f"every command: -p is --strip); use {new}\n"
        )
        if value is not None and value != old:
            raise bad_input(f"{old_name} {old!r} and {new} {value!r} disagree")
        value = value or old
    if value is None:
        raise bad_input(f"missing option {new}")
    return value


@app.command("import", short_help="Make a patch set from patch files, commits or an edited tree.")
def import_cmd(
    name: Annotated[str, typer.Option("--name", help="Name of the new set (its folder).")],
    dest: Annotated[Path, typer.Option("--dest", help="Folder to write the set into (DEST/NAME).")],
    patches: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATCH]...",
            help="Unified diffs, git format-patch files or mboxes, applied in this order.",
        ),
    ] = None,
    sglang_version: Annotated[
        str | None,
        typer.Option("--sglang-version", help="The release the patches were made for."),
    ] = None,
    git_range: Annotated[
        str | None, typer.Option("--git", help="A commit range of --repo, e.g. v0.5.9..mine.")
    ] = None,
    repo: Annotated[
        Path | None, typer.Option("--repo", help="The SGLang checkout --git reads.")
    ] = None,
    tree: Annotated[
        Path | None,
        typer.Option("--tree", help="An edited SGLang tree, imported against its release."),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Leave out files matching this glob (repeatable)."),
    ] = None,
    strip: Annotated[
        int | None,
        typer.Option(
            "-p", "--strip", help="Strip N leading folders of PATCH paths (default: detected)."
        ),
    ] = None,
    allow_left_out: Annotated[
        bool,
        typer.Option(
            "--allow-left-out",
            help="Import the rest where files a set cannot carry (binary, a symlink leaving the "
            "tree) must be left out; they are still listed.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Make a patch set from patches you have: one patch per input file, per mbox commit, per
    --git commit, or one for a --tree; applied in order to the pristine release, written in
    canonical form with a checked probe and a variant bounded to that release, then linted."""
    from sgpatch.cli import importcmd

    raise typer.Exit(
        importcmd.run(
            importcmd.ImportOptions(
                name,
                sglang_version,
                dest,
                tuple(patches or ()),
                git_range,
                repo,
                tree,
                tuple(exclude or ()),
                as_json,
                strip,
                allow_left_out,
            )
        )
    )


@app.command("split", short_help="Split one patch of a set into two, by file or by hunk.")
def split_cmd(
    set_name: SetOpt,
    patch_id: Annotated[
        str,
        typer.Option("--patch", help="The patch id to split.", autocompletion=complete.patch_ids),
    ],
    by: Annotated[str, typer.Option("--by", help="file or hunk.")],
    take: Annotated[
        list[str],
        typer.Option(
            "--take", help="What goes into the new patch: a file, or FILE:N by hunk (repeatable)."
        ),
    ],
    new_id: Annotated[str, typer.Option("--into", help="Id of the new patch.")],
    summary: Annotated[
        str | None, typer.Option("--summary", help="Summary of the new patch.")
    ] = None,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Split one patch into two (for when part of it lands upstream): the taken files or hunks
    move into a new patch listed right after it, each half with its own checked probe; the
    manifest is edited in place and linted on each variant's release before anything is written."""
    from sgpatch.cli import splitcmd

    opts = splitcmd.SplitOptions(
        set_name, tuple(patchsets or ()), patch_id, by, tuple(take), new_id, summary, as_json
    )
    raise typer.Exit(splitcmd.run(opts))


@app.command("fold", short_help="Fold a name a patch defines twice, keeping what runs.")
def fold_cmd(
    set_name: SetOpt,
    patch_ids: Annotated[
        list[str] | None,
        typer.Option(
            "--patch",
            help="A patch to fold (repeatable; default: every patch that needs it).",
            autocompletion=complete.patch_ids,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the folds; write nothing.")
    ] = False,
    patchsets: PatchsetsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rewrite each patch that, applied as its author wrote it on its own release, defines a
    def/class twice in one body: the definition Python runs (the later one) replaces the earlier
    one in its place, and the dead copy goes, so the patched tree runs the same code. Each fold
    is printed as a diff; the set is linted before its patch files are replaced."""
    from sgpatch.cli import foldcmd

    opts = foldcmd.FoldOptions(
        set_name, tuple(patchsets or ()), tuple(patch_ids or ()), dry_run, as_json
    )
    raise typer.Exit(foldcmd.run(opts))


@app.command("help", short_help="Show the help of sgpatch or of one command.")
def help_cmd(
    command: Annotated[
        str | None, typer.Argument(metavar="[COMMAND]", help="The command to explain.")
    ] = None,
) -> None:
    """Show the help of sgpatch or of one command (the same as the command with --help)."""
    _resolve_annotations(app.registered_commands)
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)  # an app of several commands
    root = group.context_class(group, info_name="sgpatch", **group.context_settings)
    if command is None:
        _product(group.get_help(root) + "\n")
        return
    sub = group.get_command(root, command)
    if sub is None:
        from sgpatch.errors import bad_input

        raise bad_input(f"no such command {command!r}; see `sgpatch --help`")
    ctx = sub.context_class(sub, info_name=command, parent=root)
    _product(sub.get_help(ctx) + "\n")


SHELLS = ("bash", "zsh", "fish")


@app.command("completion", short_help="Print a shell completion script.")
def completion_cmd(
    shell: Annotated[str, typer.Argument(metavar="SHELL", help="bash, zsh or fish.")],
) -> None:
    """Print a shell completion script for bash, zsh or fish.

    bash: `sgpatch completion bash > ~/.local/share/bash-completion/completions/sgpatch`;
    zsh: into a file named `_sgpatch` on $fpath; fish: into
    `~/.config/fish/completions/sgpatch.fish`. Or `eval "$(sgpatch completion bash)"` in a shell's
    start-up file. Completion costs nothing on ordinary runs: the script calls sgpatch only when
    Tab is pressed.
    """
    from sgpatch.errors import bad_input

    if shell not in SHELLS:
        raise bad_input(f"shell {shell!r}: expected one of {', '.join(SHELLS)}")
    from typer._completion_shared import get_completion_script

    script = get_completion_script(prog_name="sgpatch", complete_var=COMPLETE_VAR, shell=shell)
    _product(script.rstrip("\n") + "\n")


COMPLETE_VAR = "_SGPATCH_COMPLETE"


def main(argv: list[str] | None = None) -> None:
    """Run one command line in-process (the tests, scripts that import sgpatch) inside the one
    error boundary (sgpatch.boundary): every failure is one line and its exit code."""
    from sgpatch import boundary

    args = sys.argv[1:] if argv is None else list(argv)
    boundary.guarded(args, lambda: run(args))


def run(args: list[str]) -> None:
    """The command line `args`, run; failures are raised for the boundary to report.

    Click's standalone mode handles usage errors (exit 2, with usage) and --help, raising
    SystemExit, which the boundary lets through."""
    from sgpatch import startup

    startup.collector_for(args)
    _replace_unencodable()
    from sgpatch import shown

    shown.given(args[: args.index("--")] if "--" in args else args)  # advice names these sets
    if COMPLETE_VAR in os.environ:  # Tab in a shell: typer's completion classes answer
        from typer.completion import completion_init

        completion_init()
    with interrupts.raising():
        try:
            _app_for(args)(args=args, standalone_mode=True, prog_name="sgpatch")
        finally:
            _flush_product()


def _replace_unencodable() -> None:
    """Text the terminal's encoding cannot hold (a tree under `prüfung/` with
    PYTHONIOENCODING=ascii, a non-UTF-8 file name) is written with replacement characters,
    never a UnicodeEncodeError. Only streams left strict are changed (stderr already
    backslash-escapes; a user's own PYTHONIOENCODING=...:errors stays)."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(Exception):
                stream.reconfigure(errors="replace")


def _product(text: str) -> None:
    """What `--version`, `help` and `completion` print, written as every product is: nothing
    on a closed stdout, an error line and exit 2 on a full one (sgpatch.console.write; not
    imported here, where it would cost `--version` the placement engine)."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        with contextlib.suppress(OSError):  # nothing more can go out through this stdout
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        raise SgpatchError(f"cannot write to stdout: {exc.strerror or exc}") from None


def _flush_product() -> None:
    """A product on stdout that cannot be written (a full disk) is an error line and exit 2,
    not Python's 'Exception ignored' at exit; a reader that went away ends us by SIGPIPE."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as exc:
        with contextlib.suppress(OSError):  # nothing more can go out through this stdout
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        raise SgpatchError(f"cannot write to stdout: {exc.strerror or exc}") from None


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command argv names, when it names one: typer turns every
    registered command into a click command on each run (~20 ms for all of them), and one
    invocation needs one. `sgpatch`, `sgpatch --help` and unknown names get the whole app."""
    wanted = [c for c in app.registered_commands if args and c.name == args[0]]
    _resolve_annotations(wanted or app.registered_commands)
    if not wanted:
        return app
    one = copy.copy(app)
    one.registered_commands = wanted
    return one


def _resolve_annotations(commands: list) -> None:
    """Evaluate the annotation strings of these commands (and the root callback) once, in
    place, before typer reads them: it would evaluate each one twice (inspect.signature and
    get_type_hints). Only the commands a run builds are evaluated."""
    import inspect

    funcs = [c.callback for c in commands]
    if app.registered_callback is not None:
        funcs.append(app.registered_callback.callback)
    for func in funcs:
        if func is not None and any(isinstance(v, str) for v in func.__annotations__.values()):
            func.__annotations__ = inspect.get_annotations(func, eval_str=True)
