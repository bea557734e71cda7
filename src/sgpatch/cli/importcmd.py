"""`sgpatch import`: a patch set from patch files, commits or an edited tree (logic in
sgpatch.ops.importer and sgpatch.ops.sources)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgpatch.errors import bad_input
from sgpatch.ops import report


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


def run(opts: ImportOptions) -> int:
    from sgpatch.ops import importer, sources

    given = [bool(opts.patches), opts.git_range is not None, opts.tree is not None]
    if sum(given) != 1:
        raise bad_input("give exactly one of: PATCH files, --git RANGE (with --repo), --tree DIR")
    if (opts.git_range is None) != (opts.repo is None):
        raise bad_input("--git RANGE and --repo CHECKOUT go together")
    if opts.strip is not None and not opts.patches:
        raise bad_input("-p N reads PATCH files; --git and --tree paths need no stripping")
    if opts.strip is not None and opts.strip < 0:
        raise bad_input(f"-p must be 0 or more (got {opts.strip})")
    tree_changes = None
    if opts.tree is not None:
        version, src, before, after = _tree(opts.tree, opts.sglang_version, opts.name)
        srcs = [src]
        tree_changes = (before, after)
    else:
        version = _version(opts.sglang_version)
        reading = sources.Reading(opts.exclude, opts.strip, lambda: _release_files(version))
        if opts.git_range is not None:
            assert opts.repo is not None
            srcs = sources.from_git(opts.repo, opts.git_range, reading)
        else:
            srcs = sources.read_files(opts.patches, reading)
    _release_files(version)  # the release must be on the index or cached: its wheel is the base
    result = importer.import_sources(opts.name, version, srcs, tree_changes)
    final, findings = importer.write_set(result, opts.dest)
    _report(result, final, findings, opts.as_json)
    return 0


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


def _tree(tree: Path, sglang_version: str | None, name: str):
    from sgpatch.ops import importer
    from sgpatch.tree.target import find_target

    target = find_target(tree, sglang_version)
    version = target.version
    src, before, after = importer.tree_source(target.root, version, name)
    return version, src, before, after


def _report(result, final: Path, findings, as_json: bool) -> None:
    from sgpatch.ops.importer import probe_text

    if as_json:
        report.emit_json(
            {
                "command": "import",
                "schema": 1,
                "exit_code": 0,
                "set": result.name,
                "dest": str(final),
                "sglang_version": str(result.version),
                "patches": [
                    {
                        "id": p.id,
                        "file": p.file,
                        "input": p.source.label,
                        "files": list(p.files),
                        "hunks": p.hunks,
                        "requires": list(p.requires),
                        "probe": probe_text(p) if p.probe is not None else None,
                        "probe_missing": p.probe_why or None,
                        "strip": p.source.strip,
                    }
                    for p in result.patches
                ],
                "left_out": [
                    {"input": label, "path": s.shown, "why": s.why} for label, s in result.left_out
                ],
                "warnings": [f.message for f in findings],
            }
        )
        return
    for label, sec in result.left_out:
        report.err(f"warning: {label}: left out {sec.shown} ({sec.why})")
    for p in result.patches:
        if p.source.detected:
            report.err(
                f"  {p.source.label}: paths read with -p{p.source.strip} (detected: the level at "
                f"which they name files of sglang {result.version}; -p N says otherwise)"
            )
        probe = f"probe: {_count(p.probe)} line(s)" if p.probe else f"no probe: {p.probe_why}"
        report.err(f"  {p.file}: {len(p.files)} file(s), {p.hunks} hunk(s); {probe}")
    for f in findings:
        report.err(f"warning: {f.patch or result.name}: {f.message}")
    report.err(
        f"sgpatch import: {result.name}: {len(result.patches)} patch(es) for sglang "
        f"{result.version} -> {final}"
    )


def _count(node) -> int:
    from sgpatch.ops.suggest import files_of

    return len(files_of(node))
