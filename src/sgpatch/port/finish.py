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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError, unsafe
from sgpatch.patchset import manifest_text
from sgpatch.patchset.manifest import PatchSpec, SetManifest, load_manifest, select_variant
from sgpatch.port import edits, probes
from sgpatch.port import source as src
from sgpatch.port.sequencer import Context, Outcome
from sgpatch.port.state import Options, PortState
from sgpatch.port.statefiles import (
    FINISHED,
    FINISHING_CHANGES,
    FINISHING_LIST,
    FINISHING_SET,
    FINISHING_SHA256,
    FINISHING_WARNINGS,
    finishing_file,
    na_of,
    patch_of,
)
from sgpatch.port.workspace import digest, write

if TYPE_CHECKING:  # lint (and the matrix under it) is imported when --continue lints
    from sgpatch.ops.lint import Finding


@dataclass
class Finished:
    """What --continue wrote (absolute paths), the manifest changes it made, and lint's word:
    its errors as lint's records (each names its patch and manifest field), its warnings as
    the lines W keeps (`finishing/warnings`)."""

    written: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    lint: list[Finding] = field(default_factory=list)  # errors: nothing was written
    warnings: list[str] = field(default_factory=list)


def finish(ctx: Context, state: PortState) -> Finished:
    """Write the set: the edits worked out (from the state's `done` list) and linted in a
    scratch copy first (on every release whose patches they change); then staged in W
    (`finishing/`), then copied into the set (`write_staged`), so a kill at any point is
    finished by the next --continue."""
    text = ctx.manifest.path.read_text(encoding="utf-8")
    new_text, files, changes = _edits(ctx, state.queue.done, text)
    new_text = probes.manifest_edits(ctx, new_text, changes, state.queue.done)  # settled before
    out = Finished(changes=changes)
    found = _lint(ctx, new_text, files)
    warned = [f.brief() for f in found if f.level != "error"]
    out.warnings = list(dict.fromkeys(warned))  # once each (two variants, one file)
    out.lint = [f for f in found if f.level == "error"]
    if out.lint:
        return out
    base = ctx.manifest.base_dir
    for rel, data in files.items():
        current = (base / rel).read_bytes() if (base / rel).is_file() else None
        if current is not None and current != data:
            raise SgpatchError(
                f"{base / rel}: exists in the set with other content; nothing written"
            )
    ws = ctx.ws
    if digest(ctx.manifest.path.read_bytes()) != state.options.set_sha256:
        raise unsafe(f"{ctx.manifest.path}: the set changed since the port began; "
                     f"{ws.abort_hint()}")  # fmt: skip
    with ws.step("stage the set"):
        for rel, data in files.items():
            ws.put_bytes(finishing_file(rel), data)
        ws.put_lines(FINISHING_LIST, files)
        ws.put_bytes(FINISHING_SET, new_text.encode("utf-8"))
        ws.put(FINISHING_SHA256, digest(new_text.encode("utf-8")) + "\n")
        ws.put_lines(FINISHING_CHANGES, changes)
        ws.put_lines(FINISHING_WARNINGS, out.warnings)
        ws.set_phase("finishing")
    out.written = write_staged(ctx, state.options)
    return out


def write_staged(ctx: Context, options: Options) -> list[str]:
    """Copy the staged files into the set, the manifest last, then mark W finished; returns
    the absolute path of every file written. Again after a kill: a file that already holds
    what is staged is left, anything else in the way is refused (the set changed)."""
    ws, base = ctx.ws, ctx.manifest.base_dir
    manifest = ctx.manifest.path
    written = []
    for rel in ws.lines(FINISHING_LIST):
        data = ws.get_bytes(finishing_file(rel))
        if data is None:
            raise ws.damaged(finishing_file(rel), "missing")
        if (base / rel).is_file() and (base / rel).read_bytes() != data:
            raise unsafe(f"{base / rel}: changed while the port wrote the set; {ws.abort_hint()}")
        write(base, rel, data)
        written.append(str(base / rel))
    new = ws.get_bytes(FINISHING_SET)
    if new is None:
        raise ws.damaged(FINISHING_SET, "missing")
    if digest(new) != options.set_sha256:  # the port changes the manifest
        if manifest.read_bytes() != new:  # else written already, before a kill
            write(base, manifest.name, new)
        written.append(str(manifest))
    with ws.step("finished"):
        ws.put_lines(FINISHED, written or ["nothing to write"])
        ws.set_phase("finished")
    return written


def _edits(ctx: Context, settled: Sequence[Outcome], text: str):
    """The manifest's new text, the new patch files (set-relative) and a line per change."""
    done = {o.id: o for o in settled}
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
        wide, holes = edits.set_widened(ctx.manifest.sglang, ctx.to, ctx.known)
        left = (f" (not ported to {', '.join(map(str, holes))}: `--step` carries the set "
                "through every release in between)") if holes else ""  # fmt: skip
        changes.append(f"set sglang {str(ctx.manifest.sglang)!r} -> {wide!r}{left}")
        text = manifest_text.set_set_spec(text, ctx.manifest.path, wide)
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
    data = ctx.ws.get_bytes(patch_of(spec.id))
    if data is None:
        raise SgpatchError(f"workspace: patches/{spec.id}.patch is missing", ExitCode.BAD_INPUT)
    if b"\n@@ " not in data and b"\ndiff --git " not in data:  # every hunk already upstream
        why = f"sglang {to} already has every hunk (sgpatch port dropped them as already there)"
        changes.append(f"{spec.id}: nothing left to apply on {to}: new n/a variant '=={to}'")
        return manifest_text.insert_first_na_variant(text, path, spec.id, edits.exact(to), why)
    rel = _free(ctx.manifest.base_dir, f"patches/{to}/{_name(sorc.variant.patch, spec, ctx)}", data)
    files[rel] = data
    changes.append(f"{spec.id}: new variant '=={to}' -> {rel}")
    return manifest_text.insert_first_variant(text, path, spec.id, edits.exact(to), rel, str(to))


def _not_applicable(ctx: Context, spec: PatchSpec, text: str, changes: list) -> str:
    """A backport to before the patch's files existed: a `==V` n/a variant saying so. n/a on
    the nearest release, and none of the patch's files is in V either: that n/a variant serves
    V too (stretched to it, or a `==V` copy of it). n/a nearby though one of its files is in
    V: a `==V` n/a variant when the person wrote the reason into W/.sgpatch-port/na-ID (the
    port's note says how); otherwise nothing, and lint says the patch has no variant for V."""
    path, to = ctx.manifest.path, ctx.to
    created = src.created_before(ctx.manifest, spec, to, ctx.known)
    why = src.before_it_existed(spec, to, ctx.known, created)
    if why is not None:
        changes.append(f"{spec.id}: n/a on {to}: new variant '=={to}' ({why})")
        return manifest_text.insert_first_na_variant(text, path, spec.id, edits.exact(to), why)
    na = src.not_applicable(spec, to, ctx.known, created)
    if select_variant(spec, to) is not None:
        return text
    said = (ctx.ws.get(na_of(spec.id)) or "").strip()
    if na is not None and not na.here_too and said:  # the person says: n/a on V too
        changes.append(f"{spec.id}: n/a on {to} (as {na_of(spec.id)} says): new variant "
                       f"'=={to}'")  # fmt: skip
        return manifest_text.insert_first_na_variant(text, path, spec.id, edits.exact(to), said)
    if na is None or not na.here_too:
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


def _lint(ctx: Context, text: str, files: dict[str, bytes]) -> list[Finding]:
    """Lint the edited set in a scratch copy, on the target and on every other release the
    edits change: a port never claims a release nobody checked (lint_releases); its imports
    too, now that every file is carried (a name a waiting patch was to add was taken as there
    at the carry's own check). The fields
    the findings name are the edited set's (a new variant is `variants[0]`)."""
    from sgpatch.ops import lint, matrix

    with tempfile.TemporaryDirectory(prefix="sgpatch-port-lint-") as tmp:
        d = Path(tmp) / ctx.manifest.base_dir.name
        shutil.copytree(ctx.manifest.base_dir, d, symlinks=True)
        (d / ctx.manifest.path.name).write_text(text, encoding="utf-8")
        for rel, data in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_bytes(data)
        edited = load_manifest(d / ctx.manifest.path.name)
        versions = lint_releases(ctx.manifest, edited, ctx.to, ctx.known)
        rows = matrix.compute(edited, versions, workers=1, imports=True)
        return lint.check(edited, rows)


def lint_releases(old: SetManifest, new: SetManifest, to: Version, known) -> list[Version]:
    """The releases to lint the edited set on: `to`, and every known release the edited set
    claims where it did not before, or where some patch now gets another variant (another
    file or bytes, n/a, base or probe) than before. A release where every patch gets what it
    got is not linted again: lint's result there cannot have changed."""
    out = {to}
    for v in known:
        if not new.sglang.contains(v, prereleases=True):
            continue
        if not old.sglang.contains(v, prereleases=True) or any(
            _served(old, a, v) != _served(new, b, v)
            for a, b in zip(old.patches, new.patches, strict=True)
        ):
            out.add(v)
    return sorted(out)


def _served(m: SetManifest, spec: PatchSpec, v: Version) -> tuple:
    """What release `v` gets of the patch: its variant's file (set-relative, and its bytes),
    n/a reason, base, and the probes that judge it."""
    var = select_variant(spec, v)
    if var is None:
        return (None, spec.probe)
    data = None
    if var.patch is not None:
        rel = var.patch.relative_to(m.base_dir).as_posix()
        data = (rel, digest(var.patch.read_bytes()) if var.patch.is_file() else None)
    return (data, var.na, var.base, getattr(var, "probe", None), spec.probe)
