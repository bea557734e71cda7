"""Maintainer commands: `fetch` (release cache), `matrix` (set x releases), `lint` (CI checks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.errors import ExitCode, SgpatchError, bad_input


@dataclass(frozen=True)
class FetchOptions:
    """`sgpatch fetch`'s options, as parsed."""

    versions: tuple[str, ...]
    dest: Path | None
    layout: str | None
    as_json: bool
    git_url: str | None = None


def fetch(opts: FetchOptions) -> int:
    """Get pristine releases into the cache (checked against RECORD); optionally a tree."""
    from sgpatch.releases import cache as releases

    if opts.git_url is not None:
        if opts.layout is not None:
            raise bad_input(
                "--layout is for trees made from wheels; a --git checkout is always a checkout"
            )
        return _fetch_git(opts.git_url, opts.versions, opts.dest, opts.as_json)
    if opts.layout not in (None, "site-packages", "checkout"):
        raise bad_input(f"unknown layout {opts.layout!r}; expected one of site-packages, checkout")
    tree_layout: releases.Layout = "checkout" if opts.layout == "checkout" else "site-packages"
    releases.fetch(opts.versions)  # the missing ones as one batch: a line each, and a final line
    out = []
    for v in opts.versions:
        wheel = releases.wheel_path(v)
        where = (opts.dest / v if len(opts.versions) > 1 else opts.dest) if opts.dest else None
        if where is not None and where.exists() and (not where.is_dir() or any(where.iterdir())):
            raise SgpatchError(f"--dest {where} is not an empty folder; give a new or empty one")
        try:
            root = releases.copy_tree(v, where, tree_layout) if where is not None else None
        except OSError as exc:  # e.g. a file on the way to --dest
            raise SgpatchError(f"--dest {where}: {exc.strerror or exc}") from None
        out.append(releases.Fetched(v, root, wheel=wheel))
        if not opts.as_json:
            console.err(f"sglang {v}: {wheel}" + (f" -> {root}" if root else ""))
    if opts.as_json:
        console.emit_json(
            {"command": "fetch", "exit_code": 0, "releases": [r.to_json() for r in out]}
        )
    return 0


def _fetch_git(url: str, refs: Sequence[str], dest: Path | None, as_json: bool) -> int:
    from sgpatch.releases import cache as releases
    from sgpatch.tree.target import find_target

    if dest is None:
        raise SgpatchError("--git needs --dest (where to put the checkout)")
    out = []
    for ref in refs:
        where = dest / ref if len(refs) > 1 else dest
        root = releases.git_tree(url, ref, where)
        version = find_target(root).version
        out.append(releases.Fetched(str(version), root, ref=ref))
        if not as_json:
            console.err(f"{url} at {ref}: sglang {version} -> {root}")
    if as_json:
        console.emit_json(
            {"command": "fetch", "exit_code": 0, "checkouts": [c.to_json() for c in out]}
        )
    return 0


MATRIX_FORMATS = ("table", "markdown", "json")
LINT_FORMATS = ("text", "github", "json")


def _one_of(option: str, value: str, allowed: Sequence[str]) -> None:
    """A typo in a CI gate must not pass silently: refuse values the command does not know."""
    if value not in allowed:
        raise bad_input(f"{option} {value!r}: expected one of {', '.join(allowed)}")


@dataclass(frozen=True)
class MatrixOptions:
    """`sgpatch matrix`'s options, as parsed (--json already folded into fmt)."""

    set_name: str
    patchsets: tuple[Path, ...]
    releases_spec: str | None
    fmt: str
    fail_on: tuple[str, ...]
    offline: bool
    workers: int | None
    trees: tuple[Path, ...] = ()


def matrix(opts: MatrixOptions) -> int:
    from sgpatch.ops import matrix as mx
    from sgpatch.patchset.manifest import load_set

    _one_of("--format", opts.fmt, MATRIX_FORMATS)
    for kind in opts.fail_on:
        _one_of("--fail-on", kind, mx.FAIL_ON)
    manifest = load_set(opts.set_name, tuple(opts.patchsets))
    tree_rows = mx.compute_trees(manifest, opts.trees)  # bad trees are bad input before any work
    versions = mx.select_versions(manifest, opts.releases_spec, opts.offline)
    if not versions and not opts.trees:
        raise SgpatchError(f"no release matches {opts.releases_spec or manifest.sglang}")
    rows = (mx.compute(manifest, versions, opts.workers) if versions else []) + tree_rows
    code = mx.gate(rows, opts.fail_on)
    if opts.fmt == "json":
        console.emit_json(mx.json_doc(manifest, rows, code))
        return int(code)
    if opts.fmt == "markdown":
        console.write(mx.markdown(manifest, rows))
    else:
        _matrix_table(manifest, rows)
    for line in mx.tree_notes(manifest, rows):
        console.err(line)
    console.err(mx.summary(manifest, rows, code))
    return int(code)


def _matrix_table(manifest, rows) -> None:
    """Release x patch, with numbered columns and the ids listed above the table: five ids side
    by side do not fit 80 columns, and an id folded across lines cannot be copied."""
    from sgpatch.ops import matrix as mx

    ids = [p.id for p in manifest.patches]
    console.out(f"{manifest.name} x sglang releases")
    for n, i in enumerate(ids, 1):
        console.out(f"  P{n}  {i}")
    console.table(
        ("release", *(f"P{n}" for n in range(1, len(ids) + 1))),
        [
            (
                mx.row_label(r),
                *(
                    "error" if r.error else mx.cell_text(r.cells[i]) if i in r.cells else ""
                    for i in ids
                ),
            )
            for r in rows
        ],
    )
    for r in rows:
        if r.error:
            console.err(f"{mx.row_label(r)}: {r.error}")
    for line in mx.failure_lines(manifest, rows):  # every refused hunk, with its reason
        console.out(line)


@dataclass(frozen=True)
class LintOptions:
    """`sgpatch lint`'s options, as parsed (--json already folded into fmt)."""

    set_names: tuple[str, ...]
    patchsets: tuple[Path, ...]
    releases_spec: str | None
    fmt: str
    offline: bool
    trees: tuple[Path, ...] = ()


def lint(opts: LintOptions) -> int:
    from sgpatch.ops import lint as lint_mod
    from sgpatch.ops import matrix as mx
    from sgpatch.patchset.manifest import find_sets, load_set

    _one_of("--format", opts.fmt, LINT_FORMATS)
    names = list(opts.set_names) or sorted(find_sets(tuple(opts.patchsets)))
    findings_all = []
    skipped: list[dict[str, str]] = []
    for name in names:
        manifest = load_set(name, tuple(opts.patchsets))
        tree_rows = mx.compute_trees(manifest, opts.trees, imports=True)
        versions = mx.select_versions(manifest, opts.releases_spec, opts.offline)
        rows = mx.compute(manifest, versions, imports=True)
        whole = opts.releases_spec is None
        findings = lint_mod.check(manifest, rows, every_release=whole and not opts.offline)
        if whole and opts.offline:  # the cache may hold only some releases: judge what is sure
            findings = lint_mod.dead_by_specifiers(manifest) + findings
        findings += lint_mod.check(manifest, tree_rows) if tree_rows else []
        findings_all += findings
        unchecked = lint_mod.unchosen(manifest, versions, _spec(opts)) if opts.offline else []
        skipped += [{"set": name, "patch": p, "variant": v} for p, v in unchecked]
        if opts.fmt == "json":
            continue
        for line in lint_mod.render(findings, opts.fmt, name):
            console.out(line)
        _say_skipped(name, len(versions), unchecked)
        errors = sum(1 for f in findings if f.level == "error")
        warnings = len(findings) - errors
        counted = f"{len(versions)} release(s)" + (
            f", {len(opts.trees)} tree(s)" if opts.trees else ""
        )
        console.err(f"sgpatch lint: {name}: {counted}, {errors} error(s), {warnings} warning(s)")
    code = ExitCode.CONFLICT if any(f.level == "error" for f in findings_all) else ExitCode.OK
    if opts.fmt == "json":
        console.emit_json(
            {
                "command": "lint",
                "exit_code": int(code),
                "findings": [f.to_json() for f in findings_all],
                "skipped": skipped,
            }
        )
    return int(code)


def _spec(opts: LintOptions):
    """--releases as a SpecifierSet (select_versions has refused a bad one already)."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(opts.releases_spec or "")


def _say_skipped(name: str, cached: int, unchecked: Sequence[tuple[str, str]]) -> None:
    """Offline on a partial cache: which variants went unchecked, so a clean lint is not read
    as a clean set."""
    if not unchecked:
        return
    console.err(
        f"sgpatch lint: {name}: offline, judged on the {cached} cached release(s) only; "
        f"{len(unchecked)} variant(s) no cached release chooses were skipped "
        "(without --offline lint fetches their releases):"
    )
    by_patch: dict[str, list[str]] = {}
    for patch, variant in unchecked:
        by_patch.setdefault(patch, []).append(variant)
    for patch, variants in by_patch.items():
        console.err(f"  {patch}: {'; '.join(variants)}")
