"""`sgpatch import`: a patch set from patch files, commits or an edited tree (logic in
sgpatch.ops.importer and sgpatch.ops.sources)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch import console
from sgpatch.errors import ExitCode, bad_input


@dataclass(frozen=True)
class ImportOptions:
    """`sgpatch import`'s options, as parsed."""

    name: str
    sglang_version: str | None
    dest: Path
    patches: tuple[Path, ...]
    git_range: str | None
    repo: Path | None
    tree: Path | None
    exclude: tuple[str, ...]
    as_json: bool
    strip: int | None = None  # -p N for PATCH files (None: detected)
    allow_left_out: bool = False  # import even where files a set cannot carry are left out


def run(opts: ImportOptions) -> int:
    from sgpatch.ops import importer

    _check(opts)
    tree_step = None
    if opts.tree is not None:
        version, tree_input = _tree(opts)
        srcs, tree_step = [tree_input.source], tree_input.step
    else:
        version, srcs = _read(opts)
    _release_files(version)  # the release must be on the index or cached: its wheel is the base
    lost = [(src.label, s) for src in srcs for s in src.left_out if s.lost]
    if lost and not opts.allow_left_out:
        return _refuse_lost(opts, version, srcs, lost)
    result = importer.import_sources(opts.name, version, srcs, tree_step)
    final, findings = importer.write_set(result, opts.dest)
    _report(result, final, findings, opts.as_json)
    return 0


def _check(opts: ImportOptions) -> None:
    """The options that go together, before anything is read."""
    given = [bool(opts.patches), opts.git_range is not None, opts.tree is not None]
    if sum(given) != 1:
        raise bad_input("give exactly one of: PATCH files, --git RANGE (with --repo), --tree DIR")
    if (opts.git_range is None) != (opts.repo is None):
        raise bad_input("--git RANGE and --repo CHECKOUT go together")
    if opts.strip is not None and not opts.patches:
        raise bad_input("-p N reads PATCH files; --git and --tree paths need no stripping")
    if opts.strip is not None and opts.strip < 0:
        raise bad_input(f"-p must be 0 or more (got {opts.strip})")


def _read(opts: ImportOptions):
    """The release and the inputs: PATCH files in order, or the commits of --git."""
    from sgpatch.ops import sources

    version = _version(opts.sglang_version)
    reading = sources.Reading(opts.exclude, opts.strip, lambda: _release_files(version))
    if opts.git_range is not None:
        assert opts.repo is not None
        return version, sources.from_git(opts.repo, opts.git_range, reading)
    return version, sources.read_files(opts.patches, reading)


def _refuse_lost(opts: ImportOptions, version, srcs, lost) -> int:
    """Files of the package a set cannot carry: each named, and exit 3 with nothing written,
    unless --allow-left-out says to leave them out."""
    for label, sec in lost:
        console.err(f"  {label}: {sec.shown}: cannot be carried by a patch set: {sec.why}")
    message = (
        f"{len(lost)} file(s) of the package cannot be carried by a patch set (listed above); "
        "nothing was written; to import the rest, leave them out with --allow-left-out"
    )
    console.err(f"sgpatch: error: {message}")
    if opts.as_json:
        from sgpatch.ops.importer import ImportResult

        left = tuple((src.label, s) for src in srcs for s in src.left_out)
        nothing = ImportResult(opts.name, version, (), left, manifest="")
        code = int(ExitCode.CONFLICT)
        doc = nothing.to_json(None, [])
        console.emit_json({"command": "import", "exit_code": code, **doc, "error": message})
    return int(ExitCode.CONFLICT)


def _version(text: str | None):
    from packaging.version import Version

    if text is None:
        raise bad_input("--sglang-version V is needed: the release the patches were made for")
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        raise bad_input(f"--sglang-version {text!r}: not a PEP 440 version") from None


def _release_files(version) -> frozenset[str]:
    """The release's package-relative files (its wheel is the base, so it must be on the index
    or cached): what the inputs' strip level is detected against."""
    from sgpatch.releases import cache as releases

    prefix = f"{releases.PACKAGE}/"
    return frozenset(n[len(prefix) :] for n in releases.record(version) if n.startswith(prefix))


def _tree(opts: ImportOptions):
    from sgpatch.ops.treesource import tree_source
    from sgpatch.tree.target import find_target

    assert opts.tree is not None
    target = find_target(opts.tree, opts.sglang_version)
    return target.version, tree_source(target.root, target.version, opts.name, opts.exclude)


def _report(result, final: Path, findings, as_json: bool) -> None:
    if as_json:
        warnings = result.notes + [f.message for f in findings]
        doc = result.to_json(final, warnings)
        console.emit_json({"command": "import", "exit_code": 0, **doc})
        return
    for label, sec in result.left_out:
        console.err(f"warning: {label}: left out {sec.shown} ({sec.why})")
    for note in result.notes:
        console.err(f"warning: {note}")
    for p in result.patches:
        if p.source.detected:
            console.err(
                f"  {p.source.label}: paths read with -p{p.source.strip} (detected: the level at "
                f"which they name files of sglang {result.version}; -p N says otherwise)"
            )
        probe = f"probe: {_count(p.probe)} line(s)" if p.probe else f"no probe: {p.probe_why}"
        console.err(f"  {p.file}: {len(p.files)} file(s), {p.hunks} hunk(s); {probe}")
    for f in findings:
        console.err(f"warning: {f.patch or result.name}: {f.message}")
    console.err(
        f"sgpatch import: {result.name}: {len(result.patches)} patch(es) for sglang "
        f"{result.version} -> {final}"
    )


def _count(node) -> int:
    from sgpatch.patchset.probe import files

    return len(files(node))
