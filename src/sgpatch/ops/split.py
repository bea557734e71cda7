"""`sgpatch split`: one patch becomes two, by file or by hunk (when part of it lands upstream).

For every variant with a patch file, the set is planned on the lowest release that variant
covers (a minimal pristine tree, as the matrix does), which gives the patch's files just before
it (`before`, after the earlier patches) and just after it (`full`). The part that stays
(`rest`) is applied alone to `before` (`mid`); the patch keeps `before -> mid` and the new one,
listed right after it, gets `mid -> full`, both in canonical form. Applied in order they give
the very bytes the original gave. Each half gets a suggested probe (suggest.py), checked on
every variant's release; the manifest is edited in place (manifest_text.py), loaded back and
linted on those releases before any file of the set is replaced. Symlinks and the execute bit
go with their file (`Half.modes`): both halves say them as git does, so the two applied in
order leave every link and mode the original left.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version

from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK
from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.patchset.manifest import PatchSpec, SetManifest, Variant
from sgpatch.patchset.probe import ProbeNode, describe

BY = ("file", "hunk")


@dataclass(frozen=True)
class Half:
    """One variant's split: the two new patch files' bytes and the states they go between."""

    variant: Variant
    base: Version
    rest: bytes
    taken: bytes
    new_file: Path
    states: tuple[dict, dict, dict]  # before, mid, full: package-relative path -> bytes
    pristine: dict
    final: dict  # the same files with the whole set applied (later patches too)
    modes: tuple[dict, dict, dict]  # before, mid, full: path -> git mode (100644 if absent)


@dataclass(frozen=True)
class SplitResult:
    """What `split` made of one patch: the two halves, their probes and the manifest."""

    patch: str
    new_id: str
    halves: tuple[Half, ...]
    probes: tuple[ProbeNode | None, ProbeNode | None]  # rest, taken
    notes: tuple[str, ...]
    manifest: str

    def new_files(self, set_dir: Path) -> list[str]:
        """The new patch files, as the set names them (relative to its folder)."""
        return [h.new_file.relative_to(set_dir).as_posix() for h in self.halves]

    def to_json(self, set_dir: Path) -> dict[str, object]:
        """The split in `split --json` (docs/json.md): each half's probe as one line."""
        rest, taken = (describe(p) if p else None for p in self.probes)
        return {
            "patch": self.patch,
            "into": self.new_id,
            "new_files": self.new_files(set_dir),
            "releases": [str(h.base) for h in self.halves],
            "probes": {self.patch: rest, self.new_id: taken},
            "notes": list(self.notes),
        }


def parse_take(by: str, take: Sequence[str]) -> set:
    """--take values: package paths (by file) or `path:N` hunk numbers (by hunk)."""
    from sgpatch.ops.refresh import package_rel

    if by not in BY:
        raise bad_input(f"--by {by!r}: expected file or hunk")
    if not take:
        raise bad_input("--take: name what goes into the new patch (a file, or FILE:N by hunk)")
    if by == "file":
        return {package_rel(t, "--take") for t in take}
    out = set()
    for t in take:
        m = re.fullmatch(r"(.+):(\d+)", t)
        if not m or int(m.group(2)) < 1:
            raise bad_input(f"--take {t!r}: by hunk, give FILE:N (hunk N of FILE, from 1)")
        out.add((package_rel(m.group(1), "--take"), int(m.group(2))))
    return out


def base_release(manifest: SetManifest, variant: Variant) -> Version:
    """The lowest release on the index (or in the cache) the variant and the set cover."""
    from sgpatch.releases import cache as releases

    found = [
        v
        for v in releases.index_versions(">=0")
        if variant.sglang.contains(v) and manifest.sglang.contains(v)
    ]
    if not found:
        raise bad_input(f"variant {variant.sglang}: no release on the index is in its range")
    return found[0]


def _plan_on(manifest: SetManifest, spec: PatchSpec, version: Version, tmp: Path):
    """(the patch's plan, pristine bytes of its files, those files with the whole set
    applied, their git modes just before the patch) on a minimal pristine tree."""
    from sgpatch.ops import matrix
    from sgpatch.ops.plan import plan_set
    from sgpatch.releases import cache as releases
    from sgpatch.state.ledger import Ledger

    members = matrix.member_filter(matrix.needed_files(manifest))
    root = releases.extract(version, tmp, "site-packages", members)
    optional = tuple(p.id for p in manifest.patches if p.optional)
    plan = plan_set(manifest, root, version, Ledger(), with_ids=optional)
    (pp,) = [p for p in plan.patches if p.id == spec.id]
    if pp.state != "pending":
        why = pp.note or pp.state
        raise SgpatchError(
            f"{spec.id} is {pp.state} on sglang {version} ({why}): split needs it to apply there",
            ExitCode.CONFLICT,
        )
    pristine = {}
    for f in pp.files:
        for rel in {f.path, f.source}:
            data = (root / rel).read_bytes() if (root / rel).is_file() else None
            pristine[rel] = data
    final = {c.path: c.after for c in plan.changes if c.path in pristine}
    return pp, pristine, final, _modes_before(plan, spec.id, version, pristine)


def _modes_before(plan, pid: str, version: Version, rels) -> dict[str, int]:
    """The git mode of each of `rels` just before patch `pid`: the release's (its wheel's
    execute bit; a wheel holds no symlink) as the set's earlier patches leave it."""
    from sgpatch.ops.refresh import executables

    runs, modes = executables(version), dict[str, int]()

    def was(rel: str) -> int:
        return modes.get(rel, EXECUTABLE if rel in runs else REGULAR)

    for p in plan.patches:
        if p.id == pid:
            break
        if p.state == "pending" and p.selected:
            for f in p.files:
                modes[f.path] = _mode_after(f, was(f.source))
    return {rel: was(rel) for rel in rels}


def _mode_after(f, was: int) -> int:
    """The git mode a planned file is left in: a link it makes, its `new mode`, 100644 for
    a file it creates, else the mode it had (a rename's: its source's)."""
    if f.link:
        return SYMLINK
    if f.mode is not None:
        return EXECUTABLE if f.mode & 0o111 else REGULAR
    return REGULAR if f.action == "create" or was == SYMLINK else was


def _states(pp) -> tuple[dict, dict]:
    before: dict = {}
    full: dict = {}
    for f in pp.files:
        before[f.source] = f.before
        before.setdefault(f.path, f.before if f.path == f.source else None)
        full[f.path] = f.after
        if f.source != f.path:
            full[f.source] = None
    return before, full


def _full_modes(pp, before: dict[str, int]) -> dict[str, int]:
    """The git modes the patch leaves its files in."""
    out = dict(before)
    for f in pp.files:
        out[f.path] = _mode_after(f, before.get(f.source, REGULAR))
    return out


def _mid_modes(by: str, take: set, modes: tuple[dict, dict], files: tuple[dict, dict, dict]):
    """The git modes once only the part that stays is applied: a file taken whole (by file;
    a rename's source with it) keeps the mode it had before; by hunk, a mode change stays
    with the patch that stays."""
    (was, now), (before, mid, full) = modes, files
    if by == "hunk":
        return dict(now)
    back = {r for r in full if mid.get(r) == before.get(r) != full.get(r)} | (take & set(now))
    return {r: was.get(r, REGULAR) if r in back else m for r, m in now.items()}


def _mid(by: str, take: set, variant: Variant, before: dict, full: dict, fuzz: int) -> dict:
    """The files once only the part that stays is applied. (A mode goes with its file: by
    file, a taken file keeps its mode from before; by hunk, the mode change stays.)"""
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import decode, encode, read_patch, split_lines
    from sgpatch.placement.engine import apply_hunks

    patch = read_patch(variant.file)
    mapper = package_mapper(patch.name)
    mid = dict(full)
    for fp in patch.files:
        rel, src = mapper(fp.path), mapper(fp.source) if not fp.is_new else None
        if by == "file":
            if rel in take:
                mid[rel] = before.get(rel)
                if src is not None:
                    mid[src] = before.get(src)
            continue
        gone = [h for h in fp.hunks if (rel, h.index) in take]
        if not gone:
            continue
        if fp.is_new or fp.is_delete or fp.is_rename:
            raise bad_input(f"--by hunk: {rel} is created, deleted or renamed; split it by file")
        keep = [h for h in fp.hunks if (rel, h.index) not in take]
        res = apply_hunks(split_lines(decode(before[rel] or b"")), keep, fuzz=fuzz)
        if not res.ok:
            raise SgpatchError(
                f"{rel}: the hunks that stay do not apply without the others", ExitCode.CONFLICT
            )
        mid[rel] = encode("".join(res.lines))
    return mid


def _check_take(by: str, take: set, variant: Variant) -> None:
    """Every --take names something the variant's patch has, and not all of it."""
    from sgpatch.diff.paths import package_mapper
    from sgpatch.diff.unified import read_patch

    patch = read_patch(variant.file)
    mapper = package_mapper(patch.name)
    links = [mapper(fp.path) for fp in patch.files if fp.symlink]
    bad = sorted(t for t in take if by == "hunk" and t[0] in links)
    if bad:  # a link's one line is its target: it moves whole, never as a hunk
        raise bad_input(f"--by hunk: {bad[0][0]} is a symlink; split it by file")
    have = (
        {mapper(fp.path) for fp in patch.files}
        if by == "file"
        else {(mapper(fp.path), h.index) for fp in patch.files for h in fp.hunks}
    )
    missing = sorted(str(t) for t in take - have)
    if missing:
        raise bad_input(f"{variant.file.name} has no {by} {missing[0]}")
    if take >= have:
        raise bad_input(f"--take names every {by} of {variant.file.name}: nothing would stay")


def _new_file(variant: Variant, new_id: str, position: int) -> Path:
    """The new patch's file beside the split one, numbered as the set numbers its files: by
    its place in the set (`position`, from 1; the split patch's own place + 1), in the split
    file's width (`0001-a.patch` split gives `0002-NEW.patch`); `split-NEW.patch` beside an
    unnumbered file. Later patches keep their files' numbers: a file is never renamed."""
    old = variant.patch
    assert old is not None
    m = re.match(r"(\d+)-", old.name)
    name = f"{str(position).zfill(len(m.group(1))) if m else 'split'}-{new_id}.patch"
    if (old.parent / name).exists():
        raise bad_input(f"{old.parent / name} exists already; choose another --into")
    return old.parent / name


def _diff(a: dict, b: dict, ma: dict, mb: dict) -> str:
    """The canonical diff from files `a` to `b`, of git modes `ma` to `mb`."""
    from sgpatch.diff.canonical import FileDiff, canonical_diff

    return canonical_diff(
        FileDiff(r, a.get(r), b.get(r), ma.get(r, REGULAR), mb.get(r, REGULAR))
        for r in sorted(set(a) | set(b))
    )


def _split_variant(manifest, spec, variant, by, take, new_id, summary, tmp: Path) -> Half:
    from sgpatch.diff.canonical import render
    from sgpatch.diff.unified import read_patch

    _check_take(by, take, variant)
    base = base_release(manifest, variant)
    pp, pristine, final, was = _plan_on(manifest, spec, base, tmp)
    before, full = _states(pp)
    mid = _mid(by, take, variant, before, full, manifest.fuzz)
    now = _full_modes(pp, was)
    halfway = _mid_modes(by, take, (was, now), (before, mid, full))
    what = ", ".join(sorted(f"{t[0]} hunk #{t[1]}" if by == "hunk" else t for t in take))
    head = (
        f"Subject: [PATCH] {summary}\n\nSplit out of {spec.id} ({what}) by sgpatch split; "
        f"the rest stays in {spec.id}.\n\n"
    )
    return Half(
        variant=variant,
        base=base,
        rest=render(read_patch(variant.patch).header, _diff(before, mid, was, halfway)),
        taken=render(head, _diff(mid, full, halfway, now)),
        new_file=_new_file(variant, new_id, manifest.patches.index(spec) + 2),
        states=(before, mid, full),
        pristine=pristine,
        final={**full, **final},
        modes=(was, halfway, now),
    )


def _probe_for(halves: Sequence[Half], a: int, b: int) -> tuple[ProbeNode | None, str]:
    """A probe suggested on one variant's release that also holds on every other one."""
    from sgpatch.ops import suggest

    why = ""
    for h in halves:
        old, new = h.states[a], h.states[b]
        links = {r for m in h.modes for r, k in m.items() if k == SYMLINK}  # no probe reads one
        files = [r for r in new if old.get(r) != new.get(r) and r not in links]
        sug = suggest.suggest(files, h.pristine.get, old, new)
        probe = _holding_at_the_end(sug.probe, halves)
        if probe is None:
            why = sug.why or "every suggested line is gone once the later patches are applied"
            continue
        sug = replace(sug, probe=probe)
        bad = [
            f"{o.base}: {p}"
            for o in halves
            if (p := suggest.check(probe, o.pristine.get, o.states[a].get, o.states[b].get))
        ]
        if not bad:
            return sug.probe, ""
        why = f"the suggested probe is {bad[0]}"
    return None, why


def _holding_at_the_end(probe: ProbeNode | None, halves: Sequence[Half]) -> ProbeNode | None:
    """The probe's entries that are still true with the whole set applied, on every variant's
    release (lint checks probes there)."""
    from sgpatch.ops import suggest
    from sgpatch.patchset.probe import all_of, entries

    if probe is None:
        return None
    clauses = entries(probe)
    alive = [suggest.values_on(clauses, h.final.get) for h in halves]
    kept = [n for i, n in enumerate(clauses) if all(a[i] for a in alive)]
    if len(kept) == len(clauses):
        return probe
    return all_of(kept)


def split_patch(
    manifest: SetManifest,
    patch_id: str,
    by: str,
    take_args: Sequence[str],
    new_id: str,
    summary: str | None = None,
) -> SplitResult:
    """Split `patch_id` into itself (what is not taken) and `new_id` (what is), in memory."""
    from sgpatch.patchset.manifest import ID_RE

    spec = manifest.patch(patch_id)
    if not ID_RE.match(new_id):
        raise bad_input(f"--into {new_id!r}: must match [a-z0-9][a-z0-9-]*")
    if any(p.id == new_id for p in manifest.patches):
        raise bad_input(f"--into {new_id!r}: the set has a patch with that id already")
    take = parse_take(by, take_args)
    variants = [v for v in spec.variants if v.patch is not None]
    if not variants:
        raise bad_input(f"{patch_id} has no variant with a patch file to split")
    if by == "hunk" and len(variants) > 1:
        raise bad_input(
            f"{patch_id} has {len(variants)} variants and hunk numbers differ between them: "
            "split by file, or narrow it to one variant first"
        )
    summary = summary or f"part of {patch_id}: {spec.summary}"
    with tempfile.TemporaryDirectory(prefix="sgpatch-split-") as tmp:
        halves = tuple(
            _split_variant(manifest, spec, v, by, take, new_id, summary, Path(tmp, str(i)))
            for i, v in enumerate(variants)
        )
    rest_probe, rest_why = _probe_for(halves, 0, 1)
    new_probe, new_why = _probe_for(halves, 1, 2)
    notes = []
    if rest_probe is None:
        notes.append(f"{patch_id}: kept its probe ({rest_why})")
    if new_probe is None:
        notes.append(f"{new_id}: no probe ({new_why})")
    text = _edit(manifest, spec, halves, new_id, summary, by, rest_probe, new_probe)
    return SplitResult(patch_id, new_id, halves, (rest_probe, new_probe), tuple(notes), text)


def _edit(manifest, spec, halves, new_id, summary, by, rest_probe, new_probe) -> str:
    from sgpatch.patchset import manifest_text as mt
    from sgpatch.patchset.probe import probe_lines, quote

    path = manifest.path
    text = path.read_text(encoding="utf-8")
    col = mt.patch_key_indent(text, path, spec.id)
    if rest_probe is not None:
        text = mt.replace_key(
            text,
            path,
            spec.id,
            "probe",
            [" " * col + "probe:", *probe_lines(rest_probe, col + 2, True)],
        )
    shares = by == "hunk"
    requires = [spec.id] if shares else []
    requires += [r for r in spec.requires if r not in requires]
    files = {h.variant.line: h.new_file for h in halves}
    entry = [
        f"# split out of {spec.id} by `sgpatch split --by {by}`",
        f"- id: {new_id}",
        f"  summary: {quote(summary)}",
        f"  type: {spec.type}",
        "  upstream: {status: pending}",
        f"  requires: [{', '.join(requires)}]",
    ]
    if spec.optional:
        entry.append("  optional: true")
    if new_probe is not None:
        entry += ["  probe:", *probe_lines(new_probe, 4, True)]
    entry.append("  variants:")
    for v in spec.variants:
        if v.patch is None:
            entry.append(f'    - {{sglang: "{v.sglang}", na: {quote(v.na or "")}}}')
        else:
            rel = files[v.line].relative_to(manifest.base_dir).as_posix()
            entry.append(f'    - {{sglang: "{v.sglang}", patch: {rel}}}')
    return mt.insert_after_patch(text, path, spec.id, entry)


def write(manifest: SetManifest, result: SplitResult) -> list:
    """Replace the set's files (the new patch files, the rewritten ones, the manifest) once the
    edited set passes lint on every variant's release (ops.gate); any error writes nothing."""
    from sgpatch.ops.gate import write_linted

    files = {manifest.path: result.manifest.encode("utf-8")}
    for h in result.halves:
        assert h.variant.patch is not None
        files[h.variant.patch] = h.rest
        files[h.new_file] = h.taken
    return write_linted(manifest, files, [h.base for h in result.halves], "split")
