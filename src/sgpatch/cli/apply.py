"""`sgpatch apply`: wiring. Options in, `ops.apply.apply_set`, the report out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.cli.common import open_target
from sgpatch.errors import bad_input
from sgpatch.ops import report
from sgpatch.ops.report import RECORDED


@dataclass(frozen=True)
class ApplyOptions:
    """Everything `sgpatch apply` was given."""

    set_name: str
    sglang_dir: Path | None = None
    sglang_version: str | None = None
    patchsets: tuple[Path, ...] = ()
    with_ids: tuple[str, ...] = ()
    without_ids: tuple[str, ...] = ()
    dry_run: bool = False
    strict: bool = False
    as_json: bool = False
    verbose: bool = False
    git_commit: bool = False
    untested: bool = False


def run(opts: ApplyOptions) -> int:
    from sgpatch.ops.apply import Request, apply_set
    from sgpatch.patchset.manifest import load_set
    from sgpatch.patchset.nearest import basis as basis_of

    target = open_target(opts.sglang_dir, opts.sglang_version, reader=opts.dry_run)
    manifest = load_set(opts.set_name, opts.patchsets)
    basis = basis_of(manifest, target.version)
    if not basis.checked and not opts.untested and not opts.dry_run:
        raise bad_input(_untested_advice(opts, target, manifest.name, basis.variants_of))
    if not basis.checked:
        console.err(f"sgpatch: {basis.line()}")
    if opts.git_commit:  # git mode (sgpatch.git.mode): refuse early outside a git work tree
        from sgpatch.git import mode as gitmode

        gitmode.require_repo(target)
    request = Request(
        with_ids=opts.with_ids,
        without_ids=opts.without_ids,
        strict=opts.strict,
        variants_of=None if basis.checked else basis.variants_of,
        git_commit=opts.git_commit,
        dry_run=opts.dry_run,
    )
    d = apply_set(target, manifest, request)
    _show(opts, target, d, untested_hint=not basis.checked and not opts.untested)
    if d.written and not opts.as_json:
        _state_untracked(target)
    return int(d.code)


def _state_untracked(target) -> None:
    """In a git checkout, `.sgpatch/` (the ledger and original bytes) shows as untracked until
    it is ignored: say how, once per writing run until it is. sgpatch writes nothing outside
    the tree, `.git/info/exclude` included, so the person adds the line (docs/safety.md)."""
    import os
    import shlex

    from sgpatch.state.folder import STATE_DIR
    from sgpatch.tree.gitread import unignored_exclude

    top = target.repo_root
    if top is None or not os.path.lexists(top / ".git") or not (target.root / STATE_DIR).is_dir():
        return
    rel = os.path.relpath(target.root / STATE_DIR, top) + "/"
    exclude = unignored_exclude(top, rel)
    if exclude is not None:
        console.err(
            f"sgpatch: note: git shows {rel} (what sgpatch applied, and the original bytes) as "
            f"untracked; to hide it: echo {STATE_DIR}/ >> {shlex.quote(str(exclude))}"
        )


def _untested_advice(opts: ApplyOptions, target, name: str, variants_of) -> str:
    """The refusal on a version the set was not checked on, with the two ways on, as typed:
    apply --untested, or a port: `--to V` for a release (0.5.24), `--to-tree` for a snapshot
    (a checkout of main, a nightly), which is not a release port could download."""
    from packaging.version import Version

    from sgpatch.shown import command, context

    version = Version(target.version.public)
    here = context(target.root, opts.patchsets)
    untested = command("apply", "--set", name, *here, "--untested")
    onto = ("--to", str(version)) if not version.is_prerelease else ("--to-tree", str(target.root))
    w = Path.cwd() / f"port-{name}-{version}"
    port = command("port", "--set", name, *context(None, opts.patchsets), *onto, "--workspace", w)
    return (
        f"sglang {target.version} is not a release {name} was checked on; {untested} applies "
        f"its {variants_of} variants only where every hunk is certain (or port the set: {port})"
    )


def _show(opts: ApplyOptions, target, d, untested_hint: bool) -> None:
    """The table and the summary line, or the JSON document."""
    from sgpatch.shown import context

    after = d.plan.applied() if d.written else d.plan
    written = list(d.written)
    if opts.as_json:
        console.emit_json(
            report.set_json(
                "apply",
                target,
                after,
                list(d.pre),
                d.code,
                dry_run=opts.dry_run,
                written=written,
                before=d.plan,
            )
        )
        return
    report.show_set(target, after, list(d.pre), opts.verbose)
    _without_applied(opts, target, after)
    unmet = [x for x in d.pre if x.verdict == "unmet"] if opts.strict else []
    where = context(target.root, opts.patchsets)
    report.apply_summary(after, d.code, written, opts.dry_run, unmet if d.code else [], where)
    if opts.dry_run and untested_hint:
        console.err("sgpatch: a real apply on this untested version needs --untested")


def _without_applied(opts: ApplyOptions, target, plan) -> None:
    """`--without X` where X is in the tree already: apply never takes a patch out (that is
    revert's work, for the whole set), and refusing would also stop the patches the same
    command asks for; so it goes on, and says what would take X out."""
    from sgpatch.shown import command, context

    kept = [p.id for p in plan.patches if p.id in opts.without_ids and p.state in RECORDED]
    if not kept:
        return
    where = context(target.root, opts.patchsets)
    again = [x for pid in opts.without_ids for x in ("--without", pid)]
    console.err(
        f"sgpatch: warning: --without {', '.join(kept)}: applied in this tree already, and apply "
        f"does not take a patch out; {command('revert', '--set', plan.name, *where)} takes the "
        f"set out, then {command('apply', '--set', plan.name, *where, *again)}"
    )
