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
    if not outcome.applied:
        _not_applied(opts.set_name, target.root, opts.as_json)
        return 0
    if outcome.blocked:
        return _blocked(opts, target.root, outcome)
    _report(opts, outcome)
    return 0


def _blocked(opts: RevertOptions, root: Path, outcome) -> int:
    """`revert --dry-run` where files were edited since: what a revert would restore, what
    stops it, and the command that goes past it; the real revert's exit code (1)."""
    from sgpatch.errors import ExitCode
    from sgpatch.shown import command, context, name

    code = int(ExitCode.NOT_DONE)
    if opts.as_json:
        console.emit_json(
            {"command": "revert", "exit_code": code, "set": opts.set_name, "dry_run": True,
             "restored": list(outcome.restored), "edited": [], "blocked": list(outcome.blocked),
             "commits": []}
        )  # fmt: skip
        return code
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
    return code


def _not_applied(set_name: str, root: Path, as_json: bool) -> None:
    if as_json:
        console.emit_json(
            {"command": "revert", "exit_code": 0, "set": set_name, "restored": [], "edited": []}
        )
    else:
        console.err(f"sgpatch: {set_name} is not applied in {root}; nothing to revert")


def _report(opts: RevertOptions, outcome) -> None:  # outcome: ops.revert.Outcome
    if opts.as_json:
        console.emit_json(
            {
                "command": "revert",
                "exit_code": 0,
                "set": opts.set_name,
                "dry_run": opts.dry_run,
                "restored": list(outcome.restored),
                "edited": list(outcome.edited),
                "commits": [m.to_json() for m in outcome.commits],
            }
        )
        return
    verb = "would restore" if opts.dry_run else "restored"
    for path in outcome.restored:
        merged = " (merged with your edit, --force)" if path in outcome.edited else ""
        console.err(f"{verb} {path}{merged}")
    done = "dry run, nothing written" if opts.dry_run else "reverted"
    console.err(f"sgpatch: {opts.set_name}: {done} ({len(outcome.restored)} file(s))")
