"""Turn a finished workspace into variants of the set (what --continue ends with).

Per patch, in manifest order:
- upstream: the variant that covers the release gets a bound that leaves it out;
- carried with every hunk as it was: the source variant serves the release too: its range is
  stretched to it when no other release lies in between, else a `==V` variant points at the
  same file;
- carried with merged hunks, or fixed by hand: a new file `patches/<V>/NNNN-<id>.patch` and a
  `==V` variant (with `base: V`) inserted first.
The set's own range takes in V. The edited set is linted on V in a scratch copy before a byte
of the real one is written; lint errors leave the set as it was (exit 3).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.patchset import manifest_text
from sgpatch.patchset.manifest import PatchSpec, load_manifest, select_variant
from sgpatch.port import edits
from sgpatch.port import source as src
from sgpatch.port.sequencer import Context, Outcome
from sgpatch.port.workspace import write


@dataclass
class Finished:
    """What --continue wrote (set-relative), the manifest changes it made, and lint's word."""

    written: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)  # errors: nothing was written
    warnings: list[str] = field(default_factory=list)
    by_patch: dict[str, list[str]] = field(default_factory=dict)  # lint errors per patch id


def finish(ctx: Context) -> Finished:
    text = ctx.manifest.path.read_text(encoding="utf-8")
    new_text, files, changes = _edits(ctx, text)
    out = Finished(changes=changes)
    errors, out.warnings, out.by_patch = _lint(ctx, new_text, files)
    if errors:
        out.lint = errors
        return out
    base = ctx.manifest.base_dir
    for rel, data in files.items():
        current = (base / rel).read_bytes() if (base / rel).is_file() else None
        if current is not None and current != data:
            raise SgpatchError(f"{rel}: exists in the set with other content; nothing written")
    for rel, data in files.items():
        write(base, rel, data)
        out.written.append(rel)
    if new_text != text:
        write(base, ctx.manifest.path.name, new_text.encode("utf-8"))
        out.written.append(ctx.manifest.path.name)
    ctx.ws.put_lines("finished", out.written or ["nothing to write"])
    return out


def _edits(ctx: Context, text: str) -> tuple[str, dict[str, bytes], list[str]]:
    done = {o.id: o for o in (Outcome.parse(ln, ctx.ws, "done") for ln in ctx.ws.lines("done"))}
    files: dict[str, bytes] = {}
    changes: list[str] = []
    for spec in ctx.manifest.patches:
        o = done.get(spec.id)
        if o is None:
            continue
        if o.outcome == "upstream":
            text = _upstream(ctx, spec, text, changes)
        elif o.outcome in ("carried", "fixed"):
            text = _carried(ctx, spec, o, text, files, changes)
        elif o.outcome == "n/a":
            text = _not_applicable(ctx, spec, text, changes)
        elif o.outcome == "skipped":
            why = f"left out when the set was ported to {ctx.to} (sgpatch port --without)"
            changes.append(f"{spec.id}: left out: new n/a variant '=={ctx.to}'")
            text = manifest_text.insert_first_na_variant(
                text, ctx.manifest.path, spec.id, edits.exact(ctx.to), why
            )
    if not _snapshot(ctx) and not ctx.manifest.sglang.contains(ctx.to, prereleases=True):
        spec = edits.set_widened(ctx.manifest.sglang, ctx.to)
        changes.append(f"set sglang {str(ctx.manifest.sglang)!r} -> {spec!r}")
        text = manifest_text.set_set_spec(text, ctx.manifest.path, spec)
    return text, files, changes


def _snapshot(ctx: Context) -> bool:
    """A port onto a snapshot (`--to-tree`; `--to` takes final releases only): the variants it
    writes name that snapshot alone (`==0.5.24.dev12`), and no range is moved, stretched or
    bounded by it: ranges speak of releases, and a snapshot is none (docs/porting.md)."""
    return ctx.to.is_prerelease


def _upstream(ctx: Context, spec: PatchSpec, text: str, changes: list[str]) -> str:
    cur = select_variant(spec, ctx.to)
    if cur is None or cur.patch is None or _snapshot(ctx):
        return text  # a snapshot: the probe says upstream there, with or without a variant
    below = any(v < ctx.to and cur.sglang.contains(v, True) for v in ctx.known)
    new = edits.capped(cur.sglang, ctx.to) if below else edits.floored(cur.sglang, ctx.to)
    changes.append(f"{spec.id}: upstream in {ctx.to}: variant {str(cur.sglang)!r} -> {new!r}")
    idx = spec.variants.index(cur)
    return manifest_text.set_variant_spec(text, ctx.manifest.path, spec.id, idx, new)


def _carried(ctx: Context, spec, o: Outcome, text: str, files: dict, changes: list) -> str:
    sorc = src.source_of(spec, ctx.to, ctx.known)
    assert sorc is not None and sorc.variant.patch is not None
    old_rel = sorc.variant.patch.relative_to(ctx.manifest.base_dir).as_posix()
    path, to = ctx.manifest.path, ctx.to
    if o.as_is and _snapshot(ctx) and str(sorc.variant.sglang) != edits.exact(to):
        changes.append(f"{spec.id}: {old_rel} serves {to}: new variant '=={to}'")
        return manifest_text.insert_first_variant(
            text, path, spec.id, edits.exact(to), old_rel, str(sorc.base)
        )
    if o.as_is:
        if sorc.variant.sglang.contains(to, prereleases=True):
            return text
        wide = edits.widened(sorc.variant.sglang, to)
        if wide is not None and not _claims_more(sorc.variant.sglang, wide, to, ctx.known):
            changes.append(
                f"{spec.id}: {old_rel} serves {to}: {str(sorc.variant.sglang)!r} -> {wide!r}"
            )
            idx = spec.variants.index(sorc.variant)
            return manifest_text.set_variant_spec(text, path, spec.id, idx, wide)
        changes.append(f"{spec.id}: {old_rel} serves {to}: new variant '=={to}'")
        return manifest_text.insert_first_variant(
            text, path, spec.id, edits.exact(to), old_rel, str(sorc.base)
        )
    data = ctx.ws.get_bytes(f"patches/{spec.id}.patch")
    if data is None:
        raise SgpatchError(f"workspace: patches/{spec.id}.patch is missing", ExitCode.BAD_INPUT)
    rel = _free(ctx.manifest.base_dir, f"patches/{to}/{_name(sorc.variant.patch, spec, ctx)}", data)
    files[rel] = data
    changes.append(f"{spec.id}: new variant '=={to}' -> {rel}")
    return manifest_text.insert_first_variant(text, path, spec.id, edits.exact(to), rel, str(to))


def _not_applicable(ctx: Context, spec: PatchSpec, text: str, changes: list) -> str:
    """A backport to before the patch's files existed: a `==V` n/a variant saying so. n/a on
    the nearest release, and none of the patch's files is in V either: that n/a variant serves
    V too (stretched to it, or a `==V` copy of it). Otherwise nothing: lint then says the
    patch has no variant for V, which needs a person (the port's note says so)."""
    path, to = ctx.manifest.path, ctx.to
    created = src.created_before(ctx.manifest, spec, to, ctx.known)
    why = src.before_it_existed(spec, to, ctx.known, created)
    if why is not None:
        changes.append(f"{spec.id}: n/a on {to}: new variant '=={to}' ({why})")
        return manifest_text.insert_first_na_variant(text, path, spec.id, edits.exact(to), why)
    na = src.not_applicable(spec, to, ctx.known, created)
    if na is None or not na.here_too or select_variant(spec, to) is not None:
        return text
    old = na.variant.sglang
    wide = None if _snapshot(ctx) else edits.widened(old, to)
    if wide is not None and not _claims_more(old, wide, to, ctx.known):
        changes.append(f"{spec.id}: n/a on {na.release} serves {to}: {str(old)!r} -> {wide!r}")
        idx = spec.variants.index(na.variant)
        return manifest_text.set_variant_spec(text, path, spec.id, idx, wide)
    changes.append(f"{spec.id}: n/a on {na.release} serves {to}: new variant '=={to}'")
    return manifest_text.insert_first_na_variant(text, path, spec.id, edits.exact(to),
                                                 na.variant.na or "n/a")  # fmt: skip


def _claims_more(old, wide: str, to: Version, known) -> bool:
    """Would the stretched range claim a release other than `to` that port did not check?"""
    from packaging.specifiers import SpecifierSet

    new = SpecifierSet(wide)
    return any(v != to and new.contains(v, True) and not old.contains(v, True) for v in known)


def _name(old: Path, spec: PatchSpec, ctx: Context) -> str:
    m = re.match(r"^(\d+)-", old.name)
    ids = [p.id for p in ctx.manifest.patches]
    number = m.group(1) if m else f"{ids.index(spec.id) + 1:04d}"
    return f"{number}-{spec.id}.patch"


def _free(base: Path, rel: str, data: bytes) -> str:
    """`rel`, or `rel` with -2, -3... when the set already has another file of that name."""
    stem, k = rel.removesuffix(".patch"), 1
    while (base / rel).exists() and (base / rel).read_bytes() != data:
        k += 1
        rel = f"{stem}-{k}.patch"
    return rel


def _lint(ctx: Context, text: str, files: dict[str, bytes]):
    """Lint the edited set on the target release, in a scratch copy."""
    from sgpatch.ops import lint, matrix

    with tempfile.TemporaryDirectory(prefix="sgpatch-port-lint-") as tmp:
        d = Path(tmp) / ctx.manifest.base_dir.name
        shutil.copytree(ctx.manifest.base_dir, d, symlinks=True)
        (d / ctx.manifest.path.name).write_text(text, encoding="utf-8")
        for rel, data in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_bytes(data)
        edited = load_manifest(d / ctx.manifest.path.name)
        rows = matrix.compute(edited, [ctx.to], workers=1)
        found = lint.check(edited, rows)
    fmt = [f"{f.patch or '-'} [{f.release or '-'}]: {f.message}" for f in found]
    errors = [m for f, m in zip(found, fmt, strict=True) if f.level == "error"]
    by_patch: dict[str, list[str]] = {}
    for f in found:
        if f.level == "error" and f.patch is not None:
            by_patch.setdefault(f.patch, []).append(f.message)
    warnings = [m for f, m in zip(found, fmt, strict=True) if f.level != "error"]
    return errors, list(dict.fromkeys(warnings)), by_patch  # once each (two variants, one file)
