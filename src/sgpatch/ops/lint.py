"""Checks a patch set must pass before it ships: run over the release matrix, pure logic.

Each finding names the manifest field to change (`Finding.field`), set here from what the
check is about, never read back from the message: port's `--json` and `fix` blame that field,
so rewording a message cannot move the blame (tests/port/test_finish.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sgpatch.diff.unified import read_patch
from sgpatch.ops.matrix import Cell, Row, failure_text
from sgpatch.patchset.manifest import PatchSpec, SetManifest, Variant, select_variant
from sgpatch.placement.pyimports import Unresolved

PROBE_AFTER_LEVEL: Literal["error", "warning"] = "error"

# What a finding is about: one patch on one release (a matrix cell), a release that could not
# be planned at all (no variant of a patch for it), or the manifest itself (any release).
Scope = Literal["cell", "release", "manifest"]


@dataclass(frozen=True)
class Finding:
    """One lint problem: the manifest field to change (`sglang`, `patches[2].variants[0]`,
    `patches[2].probe`, ...: a path into the manifest lint checked), and where to annotate it
    in CI (`file`, `line`)."""

    level: Literal["error", "warning"]
    patch: str | None
    release: str | None
    message: str
    file: Path | None
    line: int | None
    field: str
    scope: Scope = "cell"

    def to_json(self) -> dict[str, object]:
        """One entry of `lint --json`'s `findings` (docs/json.md)."""
        return {"level": self.level, "patch": self.patch, "release": self.release,
                "message": self.message, "file": str(self.file) if self.file else None,
                "line": self.line, "field": self.field}  # fmt: skip

    def brief(self) -> str:
        """`PATCH [RELEASE]: message` (`-` for none): how port lists lint's word."""
        return f"{self.patch or '-'} [{self.release or '-'}]: {self.message}"


def check(manifest: SetManifest, rows: Sequence[Row], every_release: bool = False) -> list[Finding]:
    """Every variant applies at fuzz 0 without ambiguity on each release it covers; probes say
    'upstream' exactly where the manifest says upstream has the change; headers are there.
    With `every_release` (rows cover the set's whole range), also: no variant is dead, i.e.
    shadowed by earlier ones on every release it names."""
    out: list[Finding] = []
    if every_release and rows:
        out += _dead_variants(manifest, [Version(r.release) for r in rows])
    out += _header_findings(manifest)
    for row in rows:
        if row.error:
            out.append(_row_finding(manifest, row))
            continue
        for spec in manifest.patches:
            cell = row.cells.get(spec.id)
            if cell is not None:
                out += _cell_findings(manifest, spec, row.release, cell)
    out += [f for spec in manifest.patches for f in _since_findings(manifest, spec, rows)]
    return out


def _row_finding(manifest: SetManifest, row: Row) -> Finding:
    """A release that could not be planned: about the patch with no variant for it (its
    `variants`), when the planner named one, else about the set's range."""
    assert row.error is not None
    spec = next((s for s in manifest.patches if s.id == row.error_patch), None)
    if spec is None:
        return Finding("error", None, row.release, row.error, manifest.path, None, "sglang",
                       "release")  # fmt: skip
    field = f"{_patch_field(manifest, spec)}.variants"
    return Finding("error", spec.id, row.release, row.error, manifest.path, spec.line, field,
                   "release")  # fmt: skip


def _patch_field(manifest: SetManifest, spec: PatchSpec) -> str:
    return f"patches[{manifest.patches.index(spec)}]"


def _variant_field(manifest: SetManifest, spec: PatchSpec, variant: Variant | None) -> str:
    """`patches[i].variants[j]` for the variant (by identity), `patches[i].variants` for none."""
    at = next((j for j, v in enumerate(spec.variants) if v is variant), None)
    tail = ".variants" if at is None else f".variants[{at}]"
    return _patch_field(manifest, spec) + tail


def _probe_field(manifest: SetManifest, spec: PatchSpec, version: Version) -> str:
    """Where the probe that judges `version` is written: the variant's own, else the patch's
    (`patches[i].probe`, also when there is none yet: that is where one goes)."""
    variant = select_variant(spec, version)
    if variant is not None and variant.probe is not None:
        return _variant_field(manifest, spec, variant) + ".probe"
    return _patch_field(manifest, spec) + ".probe"


def _header_findings(manifest: SetManifest) -> list[Finding]:
    """A patch file without a header hides what, why and where from: warn on each."""
    return [
        Finding(
            "warning",
            spec.id,
            None,
            f"{v.patch.name}: no header (say what, why, origin, upstream)",
            v.patch,
            1,
            _variant_field(manifest, spec, v),
            "manifest",
        )
        for spec in manifest.patches
        for v in spec.variants
        if v.patch is not None and not read_patch(v.patch).header.strip()
    ]


def _cell_findings(
    manifest: SetManifest, spec: PatchSpec, release: str, cell: Cell
) -> list[Finding]:
    """What one matrix cell (one patch on one release) says is wrong, in a fixed order:
    its state, then its probe on the patched tree, then the manifest's `merged since`."""
    version = Version(release)
    variant = _variant_field(manifest, spec, select_variant(spec, version))
    where = (manifest.path, spec.line, variant)
    probe = (manifest.path, spec.line, _probe_field(manifest, spec, version))
    out = _state_findings(spec, release, version, cell, where, probe)
    out += [
        Finding("warning", spec.id, release, f"{failure_text(w)}; {fold_hint(manifest, spec)}",
                *where)
        for w in cell.warnings
    ]  # fmt: skip
    out += [Finding("error", spec.id, release, import_text(u), *where) for u in cell.imports]
    if cell.state == "pending" and cell.probe_after is False:
        out.append(
            Finding(
                PROBE_AFTER_LEVEL,
                spec.id,
                release,
                "the probe is false on the tree with the set applied: it does not "
                "recognise the patch's own change, so it cannot tell when upstream has "
                "it; make it match what the patch adds",
                *probe,
            )
        )
    since = spec.upstream.since
    if (
        spec.upstream.status == "merged"
        and since is not None
        and version >= since
        and cell.state not in ("upstream", "n/a")
    ):
        out.append(
            Finding(
                "error",
                spec.id,
                release,
                f"manifest says merged since {since}, but the probe does not "
                f"find it (state {cell.state})",
                *probe,
            )
        )
    return out


def import_text(u: Unresolved) -> str:
    """An import the patch adds that does not resolve on the release (placement.pyimports),
    and where the name lives there now: the file fails at import."""
    return f"import does not resolve: {u.brief()}; make the patch import it from where it is"


def fold_hint(manifest: SetManifest, spec: PatchSpec) -> str:
    """What to run to fold a name the author's patch defines twice (docs/engine.md)."""
    return (
        f"the author's own code, applied as written; `sgpatch fold --set {manifest.name} "
        f"--patchsets {manifest.base_dir.parent} --patch {spec.id}` keeps the copy Python runs "
        "and removes the other"
    )


Where = tuple[Path, int, str]  # the manifest, the patch's line, the field a finding is about


def _state_findings(
    spec: PatchSpec, release: str, version: Version, cell: Cell, where: Where, probe: Where
) -> list[Finding]:
    """The cell's state read as a finding: a conflict, fuzz, an unprobed merge (about the
    variant, `where`), or a probe that disagrees with the manifest about upstream (`probe`)."""
    if cell.state == "conflict":
        reasons = [failure_text(f) for f in cell.failures] or [cell.note]
        return [Finding("error", spec.id, release, f"does not apply: {r}", *where) for r in reasons]
    if cell.state == "pending" and cell.how not in ("clean", "offset"):
        text = f"applies only with {cell.how}; make a variant that applies with fuzz 0"
        return [Finding("error", spec.id, release, text, *where)]
    if cell.state == "present":
        text = (
            "the release already holds the post-image; upstream merged it "
            "verbatim? narrow the variant and add a probe"
        )
        return [Finding("warning", spec.id, release, text, *where)]
    variant = select_variant(spec, version)
    if cell.state != "upstream" or variant is None or variant.patch is None:
        return []
    up = spec.upstream
    if up.status == "merged" and up.since is not None and version >= up.since:
        text = (
            "a variant covers this release but the probe says upstream "
            "has it; narrow the variant's specifier"
        )
        return [Finding("warning", spec.id, release, text, *where)]
    # the patch silently never applies here: a probe that matches too much
    said = f"merged since {up.since}" if up.status == "merged" else up.status
    text = (
        f"the probe says upstream has it, but the manifest says {said}, so "
        "the patch is never applied here: fix the probe, or record when "
        "upstream merged it (upstream: {status: merged, since: ...})"
    )
    return [Finding("error", spec.id, release, text, *probe)]


def _turns_true(spec: PatchSpec, rows: Sequence[Row]) -> Version | None:
    """The first release (of the planned rows, in version order) where the probe is true on
    the pristine tree."""
    planned = sorted(
        (Version(r.release), r.cells.get(spec.id))
        for r in rows
        if not r.error and not Version(r.release).is_prerelease  # a snapshot has it before
    )  # its release: merged upstream, not yet released, is no reason to move `since`
    return next((v for v, cell in planned if cell is not None and cell.probe), None)


def _since_findings(manifest: SetManifest, spec: PatchSpec, rows: Sequence[Row]) -> list[Finding]:
    """One finding per patch when the first release where the probe turns true disagrees with
    the manifest: before `since`, or on a patch the manifest still calls pending/submitted."""
    if spec.probe is None and all(v.probe is None for v in spec.variants):
        return []
    first = _turns_true(spec, rows)
    up = spec.upstream
    if first is None or (up.since is not None and first >= up.since):
        return []
    where = (manifest.path, spec.line, f"{_patch_field(manifest, spec)}.upstream")
    if up.status == "merged":
        message = (
            f"the probe finds it on the pristine {first} already, but the manifest says merged "
            f'since {up.since}: set since: "{first}", or the probe matches too much'
        )
    else:
        message = (
            f"the probe finds it on the pristine {first} and later, but the manifest says "
            f'{up.status}: record upstream: {{status: merged, since: "{first}"}}, or the probe '
            "matches too much"
        )
    return [Finding("warning", spec.id, str(first), message, *where, "manifest")]


def _dead_variants(manifest: SetManifest, versions: Sequence[Version]) -> list[Finding]:
    """Variants with a patch file that no release selects: the first matching variant wins, so
    an earlier, wider one hides it (often a range typo), or no release is in its range."""
    out = []
    for spec in manifest.patches:
        chosen = {id(select_variant(spec, v)) for v in versions}
        for v in spec.variants:
            if v.patch is not None and id(v) not in chosen and not _names_a_snapshot(v):
                out.append(
                    Finding(
                        "warning",
                        spec.id,
                        None,
                        f"variant {v.sglang} ({v.patch.name}) is never chosen: an earlier "
                        "variant covers every release it names, or none is in the set's range",
                        manifest.path,
                        v.line or spec.line,
                        _variant_field(manifest, spec, v),
                        "manifest",
                    )
                )
    return out


def dead_by_specifiers(manifest: SetManifest) -> list[Finding]:
    """The dead-variant check without the release list (`lint --offline`, a partial cache): a
    variant is dead only when no version at all in the set's range chooses it, judged on one
    version per stretch between the bounds the specifiers name, so a variant whose releases are
    merely not cached is never called dead."""
    return _dead_variants(manifest, _stretch_versions(manifest))


def _stretch_versions(manifest: SetManifest, wanted: SpecifierSet | None = None) -> list[Version]:
    """Versions standing for every stretch the specifiers cut the line into (within the set's
    range and `wanted`): each bound, a version just above it (a post-release, and one past any
    post-release: `>V` excludes V's post-releases), and one below them all. Every specifier
    holds all or none of a stretch, so these decide "chosen by some version" (final releases)."""
    spec_sets = [manifest.sglang, *(v.sglang for p in manifest.patches for v in p.variants)]
    bounds: set[Version] = set()
    for clause in (c for spec_set in [*spec_sets, wanted or SpecifierSet()] for c in spec_set):
        text = clause.version.removesuffix(".*")
        try:
            bound = Version(text)
        except ValueError:  # `===anything`: an arbitrary string, no bound to cut on
            continue
        bounds.add(bound)
        if clause.version.endswith(".*") or clause.operator == "~=":
            cut = bound.release[:-1] if clause.operator == "~=" else bound.release
            bounds.add(Version(".".join(map(str, (*cut[:-1], cut[-1] + 1)))))
    points = {Version("0")}
    for b in bounds:
        base = ".".join(map(str, b.release))
        points |= {b, Version(f"{base}.post{(b.post or -1) + 1}"), Version(f"{base}.0.0.1")}
    inside = (wanted or SpecifierSet()) & manifest.sglang
    return sorted(p for p in points if not p.is_prerelease and inside.contains(p))


def unchosen(
    manifest: SetManifest, versions: Sequence[Version], wanted: SpecifierSet | None = None
) -> list[tuple[str, str]]:
    """(patch id, specifier) of each variant with a patch file that some version in the set's
    range (and `wanted`) chooses but none of `versions` does: what an offline lint on a partial
    cache could not check."""
    points = _stretch_versions(manifest, wanted)
    out = []
    for spec in manifest.patches:
        live = {id(select_variant(spec, v)) for v in points}
        chosen = {id(select_variant(spec, v)) for v in versions}
        out += [
            (spec.id, str(v.sglang))
            for v in spec.variants
            if v.patch is not None and id(v) in live - chosen and not _names_a_snapshot(v)
        ]
    return out


def _names_a_snapshot(variant) -> bool:
    """A variant `port --to-tree` wrote (`==0.5.24.dev12`): it serves one snapshot, which is
    never among the releases lint plans, so it is not dead for being chosen by none of them."""
    clauses = list(variant.sglang)
    return bool(clauses) and all(
        c.operator == "==" and not c.version.endswith(".*") and Version(c.version).is_prerelease
        for c in clauses
    )


def render(findings: Sequence[Finding], fmt: str, name: str) -> list[str]:
    lines = []
    for f in findings:
        what = f"{name}/{f.patch}" if f.patch else name
        rel = f" on sglang {f.release}" if f.release else ""
        if fmt == "github":
            loc = f"file={f.file},line={f.line or 1}," if f.file else ""
            lines.append(f"::{f.level} {loc}title=sgpatch lint {what}::{what}{rel}: {f.message}")
        else:
            lines.append(f"{f.level}: {what}{rel}: {f.message}")
    return lines
