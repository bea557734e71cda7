"""Checks a patch set must pass before it ships: run over the release matrix, pure logic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.version import Version

from sgpatch.diffs import read_patch
from sgpatch.manifest import SetManifest, select_variant
from sgpatch.matrix import Row


@dataclass(frozen=True)
class Finding:
    """One lint problem, with where to annotate it in CI."""

    level: Literal["error", "warning"]
    patch: str | None
    release: str | None
    message: str
    file: Path | None = None  # for annotations
    line: int | None = None


def check(manifest: SetManifest, rows: Sequence[Row], every_release: bool = False) -> list[Finding]:
    """Every variant applies at fuzz 0 without ambiguity on each release it covers; probes say
    'upstream' exactly where the manifest says upstream has the change; headers are there.
    With `every_release` (rows cover the set's whole range), also: no variant is dead, i.e.
    shadowed by earlier ones on every release it names."""
    out: list[Finding] = []
    if every_release and rows:
        out += _dead_variants(manifest, [Version(r.release) for r in rows])
    for spec in manifest.patches:
        for v in spec.variants:
            if v.patch is None:
                continue
            header = read_patch(v.patch).header.strip()
            if not header:
                out.append(
                    Finding(
                        "warning",
                        spec.id,
                        None,
                        f"{v.patch.name}: no header (say what, why, origin, upstream)",
                        v.patch,
                        1,
                    )
                )
    for row in rows:
        if row.error:
            out.append(Finding("error", None, row.release, row.error, manifest.path))
            continue
        version = Version(row.release)
        for spec in manifest.patches:
            cell = row.cells.get(spec.id)
            if cell is None:
                continue
            variant = select_variant(spec, version)
            where = (manifest.path, spec.line)
            if cell.state == "conflict":
                out.append(
                    Finding("error", spec.id, row.release, f"does not apply: {cell.note}", *where)
                )
            elif cell.state == "pending" and cell.how not in ("clean", "offset"):
                out.append(
                    Finding(
                        "error",
                        spec.id,
                        row.release,
                        f"applies only with {cell.how}; make a variant that applies with fuzz 0",
                        *where,
                    )
                )
            elif cell.state == "present":
                out.append(
                    Finding(
                        "warning",
                        spec.id,
                        row.release,
                        "the release already holds the post-image; upstream merged it "
                        "verbatim? narrow the variant and add a probe",
                        *where,
                    )
                )
            elif cell.state == "upstream" and variant is not None and variant.patch is not None:
                up = spec.upstream
                if up.status == "merged" and up.since is not None and version >= up.since:
                    out.append(
                        Finding(
                            "warning",
                            spec.id,
                            row.release,
                            "a variant covers this release but the probe says upstream "
                            "has it; narrow the variant's specifier",
                            *where,
                        )
                    )
                else:  # the patch silently never applies here: a probe that matches too much
                    said = f"merged since {up.since}" if up.status == "merged" else up.status
                    out.append(
                        Finding(
                            "error",
                            spec.id,
                            row.release,
                            f"the probe says upstream has it, but the manifest says {said}, so "
                            "the patch is never applied here: fix the probe, or record when "
                            "upstream merged it (upstream: {status: merged, since: ...})",
                            *where,
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
                        row.release,
                        f"manifest says merged since {since}, but the probe does not "
                        f"find it (state {cell.state})",
                        *where,
                    )
                )
    return out


def _dead_variants(manifest: SetManifest, versions: Sequence[Version]) -> list[Finding]:
    """Variants with a patch file that no release selects: the first matching variant wins, so
    an earlier, wider one hides it (often a range typo), or no release is in its range."""
    out = []
    for spec in manifest.patches:
        chosen = {id(select_variant(spec, v)) for v in versions}
        for v in spec.variants:
            if v.patch is not None and id(v) not in chosen:
                out.append(
                    Finding(
                        "warning",
                        spec.id,
                        None,
                        f"variant {v.sglang} ({v.patch.name}) is never chosen: an earlier "
                        "variant covers every release it names, or none is in the set's range",
                        manifest.path,
                        v.line or spec.line,
                    )
                )
    return out


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
