"""Carry a patch set to a new SGLang release (docs/porting.md).

For each patch, in manifest order (later patches see earlier ones, as `apply` does), take the
variant of the nearest older release the set covers and decide:

- `upstream`: the probe matches on the pristine new release -> cap the variant that covers the
  new release below it (a text edit of that one specifier);
- `applies`: it places at fuzz 0 (clean or offset) -> make sure a variant covers the release
  (widen the old variant's upper bound when the releases are contiguous, else add a variant
  pointing at the same file);
- `ported`: it does not place at fuzz 0, but a 3-way merge of every file it touches (base = the
  old release's file, ours = base + patch, theirs = the new release's file; `git merge-file`) is
  clean -> write `patches/<VERSION>/NNNN-<id>.patch` in canonical form, checked to apply at
  fuzz 0, and insert it as the patch's first variant;
- `conflict`: the merge has conflicts (or the file is gone) -> the merged file with conflict
  markers goes into a scratch tree, and nothing in the set changes.

The set is changed only if no patch conflicts (and never with dry_run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from sgpatch.diffs import decode, parse_patch, read_patch
from sgpatch.errors import ExitCode, SgpatchError, bad_input
from sgpatch.manifest import PatchSpec, SetManifest, Variant, load_manifest, select_variant
from sgpatch.plan import Overlay, how_applied, package_mapper, plan_patch

PORTED_LINE = "Ported to {version} by sgpatch port"


@dataclass
class FileConflict:
    """A file whose old hunks would not place, and the scratch merge left for a human."""

    path: str  # package-relative
    hunks: tuple[int, ...]  # hunks of the old patch that did not place at fuzz 0
    reason: str
    scratch: str | None = None  # merged file with conflict markers
    markers: tuple[int, ...] = ()  # 1-based lines of '<<<<<<<' in it


@dataclass
class PortResult:
    """What porting did to one patch, and the manifest line it changes."""

    id: str
    outcome: str  # upstream | applies | ported | conflict | n/a | unchanged
    from_release: str | None = None
    from_variant: str | None = None  # set-relative patch path
    how: str = ""  # clean / offset for `applies`
    new_variant: str | None = None
    manifest_change: str | None = None
    note: str = ""
    conflicts: list[FileConflict] = field(default_factory=list)

    def json(self) -> dict:
        return {
            "id": self.id,
            "outcome": self.outcome,
            "from_release": self.from_release,
            "from_variant": self.from_variant,
            "how": self.how or None,
            "new_variant": self.new_variant,
            "manifest_change": self.manifest_change,
            "note": self.note,
            "conflicts": [
                {
                    "file": c.path,
                    "hunks": list(c.hunks),
                    "reason": c.reason,
                    "scratch": c.scratch,
                    "marker_lines": list(c.markers),
                }
                for c in self.conflicts
            ],
        }


@dataclass
class PortReport:
    """The whole port of a set to one release: per-patch results and files written."""

    set: str
    to: str
    results: list[PortResult]
    written: list[str]  # set-relative files written (or that would be, on a dry run)
    dry_run: bool
    scratch: str | None
    set_change: str | None = None
    # releases between the set's old range and `to` that the widened range now claims, though
    # port checked only `to` (lint checks them)
    unchecked: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        if any(r.outcome == "conflict" for r in self.results):
            return ExitCode.CONFLICT
        return ExitCode.OK


# ---------------------------------------------------------------------------------------------
# releases and trees


def _check_forward(manifest: SetManifest, to: Version, offline: bool) -> None:
    """port carries a set forward to a newer release (exit 2 otherwise), and with --offline
    only to one already in the cache: nothing is fetched behind the user's back."""
    from sgpatch import releases

    for s in manifest.sglang:
        floor = None  # the lowest release the clause lets through
        if s.operator in (">=", ">", "~=", "==", "==="):
            floor = Version(s.version.removesuffix(".*"))
        if floor is not None and (to < floor or (s.operator == ">" and to == floor)):
            raise bad_input(
                f"--to {to} is older than what set {manifest.name} supports ({manifest.sglang}); "
                "port carries a set forward to a newer release"
            )
    if offline and to not in releases.cached_versions():
        raise bad_input(
            f"--offline: sglang {to} is not in the release cache; run `sgpatch fetch {to}` first"
        )


def _releases_below(version: Version, offline: bool) -> list[Version]:
    from sgpatch import releases

    found = releases.cached_versions() if offline else releases.index_versions(">=0")
    return sorted((v for v in found if v < version), reverse=True)


def _minimal_tree(manifest: SetManifest, version: Version, dest: Path) -> Path:
    from sgpatch import releases
    from sgpatch.matrix import _member_filter, needed_files

    return releases.extract(version, dest, "site-packages", _member_filter(needed_files(manifest)))


def _old_variant(
    spec: PatchSpec, below: Sequence[Version]
) -> tuple[Version, Variant] | tuple[None, None]:
    for r in below:
        v = select_variant(spec, r)
        if v is not None and v.patch is not None:
            return r, v
    return None, None


@dataclass
class _OldRelease:
    """An older release with the set's patches applied in order: per patch, before/after bytes."""

    root: Path
    images: dict[str, dict[str, tuple[bytes | None, bytes | None]]]


def _old_release(manifest: SetManifest, version: Version, work: Path) -> _OldRelease:
    from sgpatch.probe import evaluate

    root = _minimal_tree(manifest, version, work / f"old-{version}")
    overlay = Overlay(root)
    images: dict[str, dict[str, tuple[bytes | None, bytes | None]]] = {}
    for spec in manifest.patches:
        v = select_variant(spec, version)
        if v is None or v.patch is None:
            continue
        if spec.probe is not None and evaluate(spec.probe, root).value:
            continue
        patch = read_patch(v.patch)
        trial = overlay.fork()
        files = plan_patch(trial, patch, package_mapper(patch.name), fuzz=0)
        if all(f.ok for f in files):
            images[spec.id] = {f.path: (f.before, f.after) for f in files}
            for f in files:
                if f.action == "rename":
                    overlay.write(f.source, None)
                overlay.write(f.path, f.after)
    return _OldRelease(root, images)


# ---------------------------------------------------------------------------------------------
# 3-way merge


def merge_file(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, str, str]
) -> tuple[bytes, int]:
    """`git merge-file -p --diff3`: (merged bytes, number of conflicts). No repository needed."""
    git = shutil.which("git")
    if git is None:
        raise SgpatchError("sgpatch port needs git (for `git merge-file`) on PATH")
    with tempfile.TemporaryDirectory(prefix="sgpatch-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(tmp, name)
            p.write_bytes(data)
            paths.append(str(p))
        cmd = [git, "merge-file", "-p", "--diff3"]
        for label in labels:
            cmd += ["-L", label]
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        proc = subprocess.run(cmd + paths, capture_output=True, env=env, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise SgpatchError(f"git merge-file failed: {decode(proc.stderr).strip()}")
    return proc.stdout, proc.returncode


# ---------------------------------------------------------------------------------------------
# manifest text edits (every other byte of patchset.yaml is kept)


def _compose(text: str, path: Path):
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:  # pragma: no cover - the manifest loaded before
        raise SgpatchError(f"{path}: cannot re-read: {e}") from None


def _get(node, key: str):
    for k, v in node.value:
        if k.value == key:
            return v
    return None


def _patch_node(root, patch_id: str):
    for item in _get(root, "patches").value:
        if _get(item, "id").value == patch_id:
            return item
    raise SgpatchError(f"patch {patch_id} not found in the manifest text")  # pragma: no cover


def _replace(text: str, node, value: str) -> str:
    return text[: node.start_mark.index] + f'"{value}"' + text[node.end_mark.index :]


def set_variant_spec(text: str, path: Path, patch_id: str, index: int, spec: str) -> str:
    """Replace the `sglang:` value of the patch's variant number `index` (0-based)."""
    items = _get(_patch_node(_compose(text, path), patch_id), "variants").value
    return _replace(text, _get(items[index], "sglang"), spec)


def insert_first_variant(text: str, path: Path, patch_id: str, spec: str, patch_rel: str) -> str:
    root = _compose(text, path)
    seq = _get(_patch_node(root, patch_id), "variants")
    if seq.flow_style or not seq.value:
        raise SgpatchError(f"{path}: variants of {patch_id} must be a block list to edit them")
    first = seq.value[0]
    col = first.start_mark.column - 2
    lines = text.splitlines(keepends=True)
    idx = first.start_mark.line
    dash = lines[idx][col : col + 2]
    if dash != "- ":
        raise SgpatchError(f"{path}:{idx + 1}: unexpected variant layout; edit it by hand")
    eol = "\r\n" if lines[idx].endswith("\r\n") else "\n"
    new = " " * col + f'- {{sglang: "{spec}", patch: {patch_rel}}}' + eol
    return "".join([*lines[:idx], new, *lines[idx:]])


def set_set_spec(text: str, path: Path, spec: str) -> str:
    return _replace(text, _get(_compose(text, path), "sglang"), spec)


def capped(spec: SpecifierSet, version: Version) -> str:
    """`spec` with every upper bound above `version` replaced by `<version`."""
    keep = [
        s
        for s in spec
        if not (s.operator in ("<", "<=") and Version(s.version) >= version)
        and not (s.operator == "==" and "*" not in s.version and Version(s.version) >= version)
    ]
    return _join([*keep, Specifier(f"<{version}")])


def _join(specs) -> str:
    lower = sorted((s for s in specs if s.operator in (">=", ">", "==", "~=", "===")), key=str)
    rest = sorted((s for s in specs if s.operator not in (">=", ">", "==", "~=", "===")), key=str)
    return ",".join(str(s) for s in [*lower, *rest])


def _upper_for(spec: PatchSpec, version: Version, skip: Variant | None) -> Version | None:
    """The lowest lower bound above `version` among the patch's other variants (so a new
    variant starting at `version` never shadows them)."""
    bounds = []
    for v in spec.variants:
        if v is skip:
            continue
        for s in v.sglang:
            if s.operator in (">=", ">", "==", "~=") and "*" not in s.version:
                b = Version(s.version)
                if b > version:
                    bounds.append(b)
    return min(bounds, default=None)


def _new_spec(spec: PatchSpec, version: Version, skip: Variant | None = None) -> str:
    upper = _upper_for(spec, version, skip)
    return f">={version}" + (f",<{upper}" if upper else "")


def _widened(variant: Variant, version: Version, spec: PatchSpec, index: Sequence[Version]):
    """The old variant's specifier widened to cover `version`, if that covers no release in
    between that it did not cover before (else None: add a variant instead)."""
    if any(s.operator not in (">=", ">", "<", "<=") for s in variant.sglang):
        return None
    uppers = [s for s in variant.sglang if s.operator in ("<", "<=")]
    lowers = [s for s in variant.sglang if s.operator in (">=", ">")]
    if not uppers or not lowers:
        return None
    top = max(Version(s.version) for s in uppers)
    gap = [r for r in index if top <= r < version and not variant.sglang.contains(r, True)]
    if gap:
        return None
    upper = _upper_for(spec, version, variant)
    return _join([*lowers, *([Specifier(f"<{upper}")] if upper else [])])


# ---------------------------------------------------------------------------------------------
# the port


def _rel(path: Path, base: Path) -> str:
    return Path(path).relative_to(base).as_posix()


def _new_patch_name(old: Path, spec: PatchSpec, manifest: SetManifest) -> str:
    m = re.match(r"^(\d+)-", old.name)
    number = m.group(1) if m else f"{[p.id for p in manifest.patches].index(spec.id) + 1:04d}"
    return f"{number}-{spec.id}.patch"


def port(
    manifest: SetManifest,
    version: str | Version,
    *,
    dry_run: bool = False,
    scratch: Path | None = None,
    offline: bool = False,
    without: Sequence[str] = (),
) -> PortReport:
    from sgpatch import refresh as rf
    from sgpatch.probe import evaluate

    to = Version(str(version))
    _check_forward(manifest, to, offline)
    below = _releases_below(to, offline)
    index = sorted(below)
    text = manifest.path.read_text(encoding="utf-8")
    new_files: dict[Path, bytes] = {}
    results: list[PortResult] = []
    edits: list = []  # callables text -> text, applied in order
    scratch_dir: Path | None = None
    with tempfile.TemporaryDirectory(prefix="sgpatch-port-") as tmp:
        work = Path(tmp)
        new_root = _minimal_tree(manifest, to, work / f"new-{to}")
        new = Overlay(new_root)
        olds: dict[Version, _OldRelease] = {}
        for pid in without:
            manifest.patch(pid)  # unknown ids are bad input
        for spec in manifest.patches:
            if spec.id in without:
                results.append(PortResult(spec.id, "skipped", note="left out with --without"))
                continue
            rel_ver, old_v = _old_variant(spec, below)
            current = select_variant(spec, to)
            if old_v is None:
                outcome = "n/a" if current is not None and current.na else "unchanged"
                results.append(
                    PortResult(
                        spec.id,
                        outcome,
                        note=current.na
                        if current is not None and current.na
                        else "no older variant with a patch file to port",
                    )
                )
                continue
            assert rel_ver is not None and old_v.patch is not None
            old_rel = _rel(old_v.patch, manifest.base_dir)
            res = PortResult(spec.id, "", str(rel_ver), old_rel)
            results.append(res)
            # 1. upstream now?
            if spec.probe is not None and evaluate(spec.probe, new_root).value:
                res.outcome = "upstream"
                res.note = f"the probe matches on pristine sglang {to}"
                if spec.upstream.status != "merged":
                    res.note += (
                        f"; the manifest says upstream status {spec.upstream.status}: "
                        f"consider 'merged, since: {to}'"
                    )
                if current is None or current.patch is None:
                    res.note += f"; no variant with a patch file covers {to}: nothing to record"
                if current is not None and current.patch is not None:
                    new_spec = capped(current.sglang, to)
                    cur_index = spec.variants.index(current)
                    res.manifest_change = (
                        f"variant line {current.line}: sglang {str(current.sglang)!r} -> "
                        f"{new_spec!r}"
                    )
                    edits.append(
                        lambda t, s=spec.id, j=cur_index, ns=new_spec: set_variant_spec(
                            t, manifest.path, s, j, ns
                        )
                    )
                continue
            if current is not None and current.patch is not None and current != old_v:
                # the set already has a variant for this release: if it places, nothing to do
                cur_rel = _rel(current.patch, manifest.base_dir)
                cur = read_patch(current.patch, cur_rel)
                trial = Overlay(new_root, dict(new.changed), dict(new.original))
                placed = plan_patch(trial, cur, package_mapper(cur.name), fuzz=0)
                if all(f.ok for f in placed):
                    new.changed, new.original = trial.changed, trial.original
                    res.outcome, res.how = "applies", how_applied(placed)
                    res.from_release, res.from_variant = str(to), cur_rel
                    res.note = f"the set's variant for {to} applies"
                    continue
            patch = read_patch(old_v.patch, old_rel)
            mapper = package_mapper(patch.name)
            # 2. places at fuzz 0?
            trial = Overlay(new_root, dict(new.changed), dict(new.original))
            files = plan_patch(trial, patch, mapper, fuzz=0)
            if all(f.ok for f in files):
                new.changed = trial.changed
                new.original = trial.original
                if all(f.status == "already-applied" for f in files):
                    res.outcome, res.how = "applies", "present"
                    res.note = "the post-image is already there (upstream merged it verbatim?)"
                else:
                    res.outcome, res.how = "applies", how_applied(files)
                if current is not None and current.patch == old_v.patch:
                    continue
                if current is not None and current.patch is not None:
                    res.note = (
                        f"a variant for {to} exists ({_rel(current.patch, manifest.base_dir)}); "
                        f"the {rel_ver} variant applies too"
                    )
                    continue
                widened = _widened(old_v, to, spec, index)
                if widened is not None and current is None:
                    old_index = spec.variants.index(old_v)
                    res.manifest_change = (
                        f"variant line {old_v.line}: sglang {str(old_v.sglang)!r} -> {widened!r}"
                    )
                    edits.append(
                        lambda t, s=spec.id, j=old_index, ns=widened: set_variant_spec(
                            t, manifest.path, s, j, ns
                        )
                    )
                else:
                    ns = _new_spec(spec, to)
                    res.manifest_change = f"new first variant {ns!r} -> {old_rel}"
                    edits.append(
                        lambda t, s=spec.id, ns=ns, p=old_rel: insert_first_variant(
                            t, manifest.path, s, ns, p
                        )
                    )
                continue
            # 3. 3-way merge per file
            if rel_ver not in olds:
                olds[rel_ver] = _old_release(manifest, rel_ver, work)
            images = olds[rel_ver].images.get(spec.id)
            if images is None:
                res.outcome = "conflict"
                res.note = (
                    f"the {rel_ver} variant does not apply to pristine sglang {rel_ver} itself "
                    "(run `sgpatch lint`); cannot take a merge base"
                )
                continue
            failed = {
                f.path: tuple(h.index for h in f.hunks if not h.ok) for f in files if not f.ok
            }
            reasons = {f.path: _file_reason(f) for f in files if not f.ok}
            merged: dict[str, bytes | None] = {}
            for path, (base, ours) in sorted(images.items()):
                theirs = new.read(path)
                if base == theirs:
                    merged[path] = ours
                    continue
                if base is None or ours is None or theirs is None:
                    why = (
                        f"{path} does not exist in sglang {to} (moved or removed upstream)"
                        if theirs is None
                        else f"{path}: created or deleted by the patch, and sglang {to} differs"
                    )
                    hunks = failed.get(path) or tuple(h.index for h in _hunks_of(patch, path))
                    res.conflicts.append(FileConflict(path, hunks, why))
                    continue
                labels = (f"{spec.id} on sglang {rel_ver}", f"sglang {rel_ver}", f"sglang {to}")
                out, n = merge_file(base, ours, theirs, labels)
                if n:
                    marks, implicated = _conflict_blocks(decode(out), _hunks_of(patch, path))
                    res.conflicts.append(
                        FileConflict(
                            path,
                            implicated or failed.get(path, ()),
                            f"{n} conflict(s) in the 3-way merge"
                            + (f"; at fuzz 0: {reasons[path]}" if path in reasons else ""),
                            markers=marks,
                        )
                    )
                    merged[path] = out
                else:
                    merged[path] = out
            if res.conflicts:
                res.outcome = "conflict"
                scratch_dir = scratch_dir or _scratch(scratch, manifest.name, to)
                for c in res.conflicts:
                    c.scratch = _write_scratch(
                        scratch_dir, c.path, merged.get(c.path), images[c.path], new.read(c.path)
                    )
                continue
            # write the new variant, check it places at fuzz 0 with the same result
            diff = rf.canonical_diff(rf.FileDiff(p, new.read(p), merged[p]) for p in merged)
            header = rf.add_header_line(patch.header, PORTED_LINE.format(version=to))
            data = rf.render(header, diff)
            name = _new_patch_name(old_v.patch, spec, manifest)
            new_rel = f"patches/{to}/{name}"
            check = parse_patch(data, new_rel)
            trial = Overlay(new_root, dict(new.changed), dict(new.original))
            placed = plan_patch(trial, check, package_mapper(check.name), fuzz=0)
            bad = [f for f in placed if not f.ok or any(h.fuzz for h in f.hunks)]
            if bad or any(trial.read(p) != merged[p] for p in merged):
                res.outcome = "conflict"
                res.note = "the merged variant does not re-apply at fuzz 0 to the same result"
                continue
            new.changed, new.original = trial.changed, trial.original
            res.outcome, res.new_variant = "ported", new_rel
            new_files[manifest.base_dir / new_rel] = data
            ns = _new_spec(spec, to)
            res.manifest_change = f"new first variant {ns!r} -> {new_rel}"
            edits.append(
                lambda t, s=spec.id, ns=ns, p=new_rel: insert_first_variant(
                    t, manifest.path, s, ns, p
                )
            )
    set_change = None
    if not manifest.sglang.contains(to, prereleases=True):
        set_spec = _set_widened(manifest.sglang, to)
        set_change = f"set sglang {str(manifest.sglang)!r} -> {set_spec!r}"
        edits.append(lambda t, ns=set_spec: set_set_spec(t, manifest.path, ns))
    report = PortReport(
        manifest.name, str(to), results, [], dry_run, str(scratch_dir) if scratch_dir else None
    )
    report.set_change = set_change
    if set_change is not None:
        covered = [v for v in below if manifest.sglang.contains(v, prereleases=True)]
        report.unchecked = [str(v) for v in sorted(below) if not covered or v > max(covered)]
    if report.exit_code != ExitCode.OK:
        return report
    new_text = text
    for edit in edits:
        new_text = edit(new_text)
    written = [_rel(p, manifest.base_dir) for p in new_files]
    if new_text != text:
        written.append(manifest.path.name)
    report.written = written
    if dry_run or not written:
        return report
    _check_edit(manifest, new_text, to, results)
    for path, data in new_files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, data)
    if new_text != text:
        _write(manifest.path, new_text.encode("utf-8"))
    return report


def _set_widened(spec: SpecifierSet, version: Version) -> str:
    keep = [s for s in spec if not (s.operator in ("<", "<=") and Version(s.version) <= version)]
    keep = [s for s in keep if not (s.operator in (">=", ">") and Version(s.version) > version)]
    if not any(s.operator in (">=", ">") for s in keep):
        keep.append(Specifier(f">={version}"))
    keep.append(Specifier(f"<={version}"))
    return _join(keep)


def _check_edit(manifest: SetManifest, text: str, to: Version, results) -> None:
    """Load the edited manifest (patch files resolved from the set dir) before writing it."""
    import yaml

    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise SgpatchError(f"sgpatch port produced an invalid manifest: {e}") from None
    with tempfile.TemporaryDirectory(prefix="sgpatch-port-check-") as tmp:
        d = Path(tmp) / manifest.base_dir.name
        shutil.copytree(manifest.base_dir, d)
        (d / manifest.path.name).write_text(text, encoding="utf-8")
        for r in results:
            if r.new_variant:
                (d / r.new_variant).parent.mkdir(parents=True, exist_ok=True)
                (d / r.new_variant).write_bytes(b"placeholder")
        edited = load_manifest(d / manifest.path.name)
        for r in results:
            spec = edited.patch(r.id)
            v = select_variant(spec, to)
            got = _rel(v.patch, d) if v is not None and v.patch is not None else None
            want = {
                "upstream": None,
                "ported": r.new_variant,
            }.get(r.outcome, got)
            if r.outcome == "applies" and got is None:
                want = "a patch file"
            if got != want:
                raise SgpatchError(
                    f"internal error: after the manifest edit, {r.id} on {to} selects {got}, "
                    f"expected {want}; nothing was written"
                )


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.sgpatch-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _hunks_of(patch, path: str):
    mapper = package_mapper(patch.name)
    return tuple(h for fp in patch.files if mapper(fp.path) == path for h in fp.hunks)


def _conflict_blocks(text: str, hunks) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Lines of the `<<<<<<<` markers, and the patch hunks whose changed lines show up in the
    ours/base sides of a conflict block (which hunk of the patch each conflict is about)."""
    marks: list[int] = []
    implicated: set[int] = set()
    block: list[str] | None = None
    side = ""
    for no, line in enumerate(text.split("\n"), 1):
        if line.startswith("<<<<<<< "):
            marks.append(no)
            block, side = [], "ours"
        elif block is not None and line.startswith("||||||| "):
            side = "base"
        elif block is not None and line == "=======":
            side = "theirs"
        elif block is not None and line.startswith(">>>>>>> "):
            chunk = {ln.strip() for ln in block if ln.strip()}
            for h in hunks:
                changed = {t for ln in h.lines if ln.kind != " " and len(t := ln.text.strip()) >= 8}
                if changed & chunk:
                    implicated.add(h.index)
            block = None
        elif block is not None and side in ("ours", "base"):
            block.append(line)
    return tuple(marks), tuple(sorted(implicated))


def _file_reason(f) -> str:
    if f.note:
        return f.note
    for h in f.hunks:
        if not h.ok:
            return f"hunk #{h.index}: {h.reason}"
    return f.status


def _scratch(scratch: Path | None, name: str, to: Version) -> Path:
    if scratch is not None:
        try:
            scratch.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file there, or on the way
            raise bad_input(f"--scratch {scratch}: {exc.strerror or exc}") from None
        return scratch.resolve()
    return Path(tempfile.mkdtemp(prefix=f"sgpatch-port-{name}-{to}-"))


def _write_scratch(
    scratch: Path,
    rel: str,
    merged: bytes | None,
    images: tuple[bytes | None, bytes | None],
    theirs: bytes | None,
) -> str:
    """The merged file (with markers) at scratch/sglang/<rel>, inputs beside it."""
    target = scratch / "sglang" / PurePosixPath(rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    base, ours = images
    for suffix, data in ((".base", base), (".ours", ours), (".theirs", theirs)):
        if data is not None:
            target.with_name(target.name + suffix).write_bytes(data)
    if merged is not None:
        target.write_bytes(merged)
        return str(target)
    return str(target.with_name(target.name + ".ours"))


__all__ = ["PortReport", "PortResult", "merge_file", "port"]
