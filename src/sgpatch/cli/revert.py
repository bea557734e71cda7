"""`sgpatch revert`: wiring. Options in, `ops.revert.revert_set`, the report out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.cli.common import open_target


@dataclass(frozen=True)
class RevertOptions:
    """Everything `sgpatch revert` was given."""

    set_name: str
    sglang_dir: Path | None = None
    sglang_version: str | None = None
    patchsets: tuple[Path, ...] = ()
    force: bool = False
    dry_run: bool = False
    as_json: bool = False
    git_commit: bool = False


def run(opts: RevertOptions) -> int:
    from sgpatch.ops.revert import Request, revert_set

    target = open_target(opts.sglang_dir, opts.sglang_version, reader=opts.dry_run)
    request = Request(force=opts.force, dry_run=opts.dry_run, git_commit=opts.git_commit)
    outcome = revert_set(target, opts.set_name, opts.patchsets, request)
    if opts.as_json:
        doc = outcome.to_json(opts.dry_run)
        console.emit_json(
            {"command": "revert", "exit_code": outcome.exit_code, "set": opts.set_name, **doc}
        )
    elif not outcome.applied:
        console.err(f"sgpatch: {opts.set_name} is not applied in {target.root}; nothing to revert")
    elif outcome.blocked:
        _blocked(opts, target.root, outcome)
    else:
        _report(opts, outcome)
    return outcome.exit_code


def _blocked(opts: RevertOptions, root: Path, outcome) -> None:
    """`revert --dry-run` where files were edited since: what a revert would restore, what
    stops it, and the command that goes past it (the exit code is the real revert's, 1)."""
    from sgpatch.shown import command, context, name

    for path in outcome.restored:
        console.err(f"would restore {name(path)}")
    for path in outcome.blocked:
        console.err(f"blocked: {name(path)} was edited since sgpatch patched it")
    force = command("revert", "--set", opts.set_name, *context(root, opts.patchsets), "--force")
    console.err(
        f"sgpatch: {name(opts.set_name)}: dry run, nothing written: a revert would refuse "
        f"({len(outcome.blocked)} file(s) edited since); {force} keeps the edits and takes the "
        "set's changes out"
    )


def _report(opts: RevertOptions, outcome) -> None:  # outcome: ops.revert.Outcome
    verb = "would restore" if opts.dry_run else "restored"
    for path in outcome.restored:
        merged = " (merged with your edit, --force)" if path in outcome.edited else ""
        console.err(f"{verb} {path}{merged}")
    done = "dry run, nothing written" if opts.dry_run else "reverted"
    console.err(f"sgpatch: {opts.set_name}: {done} ({len(outcome.restored)} file(s))")
