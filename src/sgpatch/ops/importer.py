"""`sgpatch import`: make a patch set from the patches people already have.

Every input (see sources.py) is applied in order, with the engine at fuzz 0 and no whitespace
tolerance (as `git apply` does it), to an in-memory copy of the pristine release V read straight
from its wheel. Each input becomes one patch of the set, written in canonical form (refresh.py)
as the difference between the tree just before it and just after it, so the set applied to V gives
the very bytes the inputs give. Each patch gets a suggested probe (suggest.py), checked on the
spot, and a variant bounded to V (`==V`: it was checked there and nowhere else).

Nothing is written until everything is known: the set is written into a temporary folder beside
DEST/NAME, loaded back with manifest.py, linted on V, then renamed into place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError, bad_input, internal
from sgpatch.ops.fileplan import FilePlan, Overlay
from sgpatch.ops.sources import OUTSIDE, Section, Source
from sgpatch.patchset.probe import ProbeNode, describe

TYPE = "feature"
MAX_NAME = 100  # a set's name is a folder name (and part of a temporary one beside it)
# What YAML cannot hold, even quoted: C0 and C1 controls but tab, DEL, lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


@dataclass
class ReleaseOverlay(Overlay):
    """An overlay whose untouched files are read from release `version`'s wheel (no tree), and
    that keeps each file's git mode as the inputs set it (the release's own: 100755 where its
    wheel says so, else 100644)."""

    version: Version = field(default_factory=lambda: Version("0"))
    modes: dict[str, int] = field(default_factory=dict)

    def read(self, rel: str) -> bytes | None:
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            self.original[rel] = pristine(self.version, rel)
        return self.original[rel]

    def git_mode(self, rel: str) -> int:
        from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK

        if self.is_link(rel):
            return SYMLINK
        if rel in self.modes:
            return self.modes[rel]
        return EXECUTABLE if rel in executables(self.version) else REGULAR

    def settle_modes(self, plans: Sequence[FilePlan], before: Mapping[str, int]) -> None:
        """The modes the planned files have now: a patch's `new mode`, a rename's source's."""
        from sgpatch.diff.canonical import EXECUTABLE, REGULAR

        for f in plans:
            if not f.ok or f.link or f.status == "already-applied":
                continue
            if f.mode is not None:
                self.modes[f.path] = EXECUTABLE if f.mode & 0o111 else REGULAR
            elif f.action in ("rename", "copy"):
                self.modes[f.path] = before.get(f.source, REGULAR)
            elif f.action == "create":
                self.modes[f.path] = REGULAR


@functools.lru_cache(maxsize=4096)
def pristine(version: Version, rel: str) -> bytes | None:
    """The release's own bytes (cached: the overlay, the probes and lint all ask)."""
    from sgpatch.ops.refresh import pristine_bytes

    return pristine_bytes(version, rel)


@functools.lru_cache(maxsize=16)
def executables(version: Version) -> frozenset[str]:
    """The release's package-relative files its wheel marks executable (cached: the overlay
    asks for every file's mode)."""
    from sgpatch.ops.refresh import executables as release_executables

    return release_executables(version)


@dataclass(frozen=True)
class Step:
    """One input's effect on the tree: each touched file's bytes and git mode before and
    after it (None: absent; a symlink's bytes are its target, its mode 120000)."""

    before: Mapping[str, bytes | None]
    after: Mapping[str, bytes | None]
    modes: Mapping[str, tuple[int, int]]

    def mode(self, rel: str) -> tuple[int, int]:
        return self.modes.get(rel, (0o100644, 0o100644))

    @property
    def files(self) -> tuple[str, ...]:
        """The files it changes: bytes, or the mode of a file there on both sides."""

        def changed(r: str) -> bool:
            old, new = self.before.get(r), self.after[r]
            both = old is not None and new is not None
            return old != new or (both and self.mode(r)[0] != self.mode(r)[1])

        return tuple(sorted(r for r in self.after if changed(r)))

    @property
    def text_files(self) -> tuple[str, ...]:
        """The changed files that are no symlink on either side (what probes can read)."""
        return tuple(f for f in self.files if 0o120000 not in self.mode(f))


@dataclass(frozen=True)
class Imported:
    """One input turned into one patch of the set."""

    id: str
    file: str  # set-relative: patches/V/NNNN-slug.patch
    source: Source
    files: tuple[str, ...]  # package-relative files it changes
    hunks: int
    data: bytes  # the patch file's bytes
    probe: ProbeNode | None
    probe_why: str  # why there is no probe ("" when there is one)
    requires: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """The patch in `import --json` (docs/json.md)."""
        return {
            "id": self.id,
            "file": self.file,
            "input": self.source.label,
            "files": list(self.files),
            "hunks": self.hunks,
            "requires": list(self.requires),
            "probe": describe(self.probe) if self.probe is not None else None,
            "probe_missing": self.probe_why or None,
            "strip": self.source.strip,
        }


@dataclass(frozen=True)
class ImportResult:
    """What `import` made: the set's patches, the input sections left out, the manifest."""

    name: str
    version: Version
    patches: tuple[Imported, ...]
    left_out: tuple[tuple[str, Section], ...]  # (input label, section)
    manifest: str

    @property
    def notes(self) -> list[str]:
        """How an input was read where that is worth saying (a hunk longer than its header)."""
        return [f"{p.source.label}: {note}" for p in self.patches for note in p.source.notes]

    def to_json(self, dest: Path | None, warnings: Sequence[str]) -> dict[str, object]:
        """The set in `import --json` (docs/json.md): written to `dest` (None: nothing was)."""
        return {
            "set": self.name,
            "dest": None if dest is None else str(dest),
            "sglang_version": str(self.version),
            "patches": [p.to_json() for p in self.patches],
            "left_out": [s.left_out_json(label) for label, s in self.left_out],
            "warnings": list(warnings),
        }


# ---------------------------------------------------------------------------------------------
# applying the inputs


def _parse_sections(src: Source):
    """The kept sections as one parsed Patch, and a mapper from its raw paths to the package."""
    from sgpatch.diff.unified import Patch, parse_patch

    files = []
    where: dict[str, str] = {}
    for sec in src.kept:
        parsed = parse_patch("".join(sec.lines), f"{src.label} ({sec.shown})")
        for fp in parsed.files:
            if not sec.lines[0].startswith("diff --git "):
                fp = _plain_create_delete(fp)
            files.append(fp)
            where[fp.target] = sec.rel or ""
            where[fp.source] = sec.source_rel or sec.rel or ""
    return Patch(src.label, "", tuple(files)), where.__getitem__


def _plain_create_delete(fp):
    """`diff -N` writes a created file as a diff against an empty one (`@@ -0,0 +1,N @@`, an
    epoch timestamp) instead of /dev/null: read it as GNU patch does, as a creation (and
    `+0,0` as a deletion)."""
    from dataclasses import replace

    from sgpatch.diff.unified import DEV_NULL

    if fp.hunks and all(h.source_start == 0 and h.source_length == 0 for h in fp.hunks):
        return replace(fp, source=DEV_NULL)
    if fp.hunks and all(h.target_start == 0 and h.target_length == 0 for h in fp.hunks):
        return replace(fp, target=DEV_NULL)
    return fp


def _failures(label: str, plans: Sequence[FilePlan], noop: set[tuple[int, int]]) -> list[str]:
    """Everything `git apply` would refuse (or do differently), one line per hunk. A hunk
    that changes nothing (`noop`: (file, hunk) whose lines read the same before and after)
    and is found in place is what git applies too: no failure."""
    out = []
    for i, f in enumerate(plans):
        if f.note or (f.status == "already-applied" and not f.hunks):
            out.append(f"{label}: {f.path}: {f.note or 'already there'}")
        for h in f.hunks:
            if h.status == "already-applied" and (i, h.index) in noop:
                continue
            if h.status == "already-applied":
                at = f" at line {h.line}" if h.line else ""
                out.append(
                    f"{label}: {f.path} hunk #{h.index}: already there: the release has its "
                    f"lines{at} (`git apply` would add them a second time or refuse); take "
                    "this hunk out of the input (the release keeps its copy) and import again"
                )
            elif not h.ok:
                out.append(f"{label}: {f.path} hunk #{h.index}: {h.reason}")
            elif h.fuzz or h.whitespace:
                out.append(f"{label}: {f.path} hunk #{h.index}: applies only with fuzz/whitespace")
    return out


def _nothing_kept(src: Source) -> list[str]:
    """An input whose every file is left out, and under it (indented: details, not counted)
    why, file by file, and what to try."""
    hint = ""
    if src.strip is None and any(sec.why == OUTSIDE for sec in src.left_out):
        hint = "; if its paths start with folders of your own, give -p N, the number to strip"
    lines = [f"    {sec.shown}: left out ({sec.why})" for sec in src.left_out]
    return [f"{src.label}: nothing left to import (every file is left out{hint})", *lines]


def _twice(failures: list[str], plans: Sequence[FilePlan], label: str) -> list[str]:
    """A defined-twice refusal at import is a hunk away from the line its header states
    (at its own line the author's duplicate is imported as written, with a warning): say
    where it is and what to change. No advice ever deletes a copy (docs/import.md)."""
    out = list(failures)
    for f in plans:
        for h in f.hunks:
            if h.status != "ambiguous" or not (h.reason or "").startswith("would define"):
                continue
            line = f"{label}: {f.path} hunk #{h.index}: {h.reason}"
            if line in out and h.candidates:
                out[out.index(line)] = (
                    f"{line} (its lines are at line {h.candidates[0]}, not where its header "
                    "says: placed there, the second copy would be sgpatch's doing, not its "
                    f"author's; make the diff again on this release, or correct the hunk's "
                    f"`@@ -` line to {h.candidates[0]}, and import again)"
                )
    return out


def apply_source(overlay: ReleaseOverlay, src: Source) -> tuple[Step, list[str]]:
    """Apply one input to the overlay: what it did to each file it touches, and failures."""
    from sgpatch.ops.fileplan import plan_patch

    patch, mapper = _parse_sections(src)
    touched = sorted({r for s in src.kept for r in (s.rel, s.source_rel) if r})
    before = {rel: overlay.read(rel) for rel in touched}
    old_modes = {rel: overlay.git_mode(rel) for rel in touched}
    plans = plan_patch(overlay, patch, mapper, fuzz=0, authored=True)
    overlay.settle_modes(plans, old_modes)
    after = {rel: overlay.read(rel) for rel in touched}
    modes = {rel: (old_modes[rel], overlay.git_mode(rel)) for rel in touched}
    noop = {(i, h.index) for i, fp in enumerate(patch.files) for h in fp.hunks
            if h.before == h.after}  # fmt: skip
    failures = _failures(src.label, plans, noop)
    return Step(before, after, modes), _twice(failures, plans, src.label)


# ---------------------------------------------------------------------------------------------
# naming, headers, probes


def _readable(src: Source) -> Source:
    """The input with the one-line fields that go into the manifest and the header (subject,
    author, date, label) made printable: a control character (a BEL in a mail's Subject)
    becomes a space, whitespace runs fold; YAML could not read the manifest back otherwise."""
    from dataclasses import replace

    def clean(text: str) -> str:
        return " ".join(_UNPRINTABLE.sub(" ", text).split())

    return replace(
        src,
        subject=clean(src.subject),
        author=clean(src.author),
        date=clean(src.date),
        label=clean(src.label),
    )


def slug(text: str, limit: int = 48) -> str:
    """`[PATCH 2/3] Fix top_p sampling!` -> `fix-top-p-sampling` (a valid patch id)."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    words = words[:limit].rstrip("-")
    return words if words and words[0].isalnum() else f"patch-{words}".rstrip("-")


def unique_id(wanted: str, taken: set[str]) -> str:
    out, n = wanted, 2
    while out in taken:
        out, n = f"{wanted}-{n}", n + 1
    taken.add(out)
    return out


def header(src: Source, version: Version, left_out: Sequence[Section]) -> str:
    """The patch file's free-text header: subject, provenance, message, what was left out."""
    subject = src.subject or f"{src.stem} (imported from {Path(src.label).name})"
    lines = [f"Subject: [PATCH] {subject}"]
    if src.author:
        lines.append(f"From: {src.author}")
    if src.date:
        lines.append(f"Date: {src.date}")
    lines.append("")
    if src.body.strip():
        lines += [_safe(ln) for ln in src.body.strip("\n").splitlines()] + [""]
    origin = src.label + (f" (commit {src.commit})" if src.commit else "")
    origin += f" (paths read with -p{src.strip})" if src.strip is not None else ""
    lines.append(f"Imported-from: {origin}, onto sglang {version}, by sgpatch import")
    for sec in left_out:
        lines.append(f"Left-out: {sec.shown} ({sec.why})")
    return "\n".join(lines) + "\n\n"


def _safe(line: str) -> str:
    """A message line that a diff reader would take for the start of a diff gets indented."""
    return f"  {line}" if line.startswith(("diff ", "--- ", "+++ ", "@@")) else line


def _count_hunks(data: bytes) -> int:
    return sum(1 for ln in data.split(b"\n") if ln.startswith(b"@@ "))


# ---------------------------------------------------------------------------------------------
# the whole import


def import_sources(
    name: str,
    version: Version,
    sources: Sequence[Source],
    tree: Step | None = None,
) -> ImportResult:
    """Apply every source in order to release `version` and make one patch of each (`tree`:
    the one source is an edited tree, and this is what it changes)."""
    from sgpatch.patchset.manifest import ID_RE

    if not ID_RE.match(name):
        raise bad_input(f"--name {name!r}: must match [a-z0-9][a-z0-9-]* (it names the folder)")
    if len(name) > MAX_NAME:
        raise bad_input(
            f"--name {name[:20]}...: {len(name)} characters; at most {MAX_NAME} (it names a folder)"
        )
    sources = [_readable(src) for src in sources]
    overlay = ReleaseOverlay(Path("/nonexistent-sgpatch-release"), version=version)
    made = _Made()
    failures: list[str] = []
    for n, src in enumerate(sources, 1):
        made.left += [(src.label, s) for s in src.left_out]
        bad: list[str] = []
        if tree is not None:
            step = _take_tree(overlay, tree)
        elif not src.kept:
            failures += _nothing_kept(src)
            continue
        else:
            step, bad = apply_source(overlay, src)
        failures += bad
        if not bad and not step.files:
            failures.append(f"{src.label}: changes nothing in sglang {version}")
        if not bad and step.files:
            made.add(n, version, src, step)
    if failures:
        _fail(failures, version)
    out = [_settle(p, st, overlay, version) for p, st in zip(made.out, made.steps, strict=True)]
    result = ImportResult(name, version, tuple(out), tuple(made.left), "")
    return ImportResult(name, version, tuple(out), tuple(made.left), manifest_text(result))


@dataclass
class _Made:
    """What an import has made so far: its patches, the steps they came from, the ids taken,
    which patches touched each file (for `requires`) and the left-out files."""

    out: list[Imported] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)
    touched_by: dict[str, list[str]] = field(default_factory=dict)
    left: list[tuple[str, Section]] = field(default_factory=list)

    def add(self, n: int, version: Version, src: Source, step: Step) -> None:
        from sgpatch.diff.canonical import FileDiff, canonical_diff, render

        files = step.files
        pid = unique_id(slug(src.subject or src.stem), self.taken)
        diffs = (FileDiff(r, step.before[r], step.after[r], *step.mode(r)) for r in files)
        diff = canonical_diff(diffs)
        data = render(header(src, version, src.left_out), diff)
        requires = tuple(dict.fromkeys(p for f in files for p in self.touched_by.get(f, ())))
        for f in files:
            self.touched_by.setdefault(f, []).append(pid)
        self.out.append(_imported(pid, n, version, src, step, (data, diff), requires))
        self.steps.append(step)


def _take_tree(overlay: ReleaseOverlay, tree: Step) -> Step:
    """An edited tree's change, written onto the overlay (links as links, modes kept)."""
    for rel, data in tree.after.items():
        mode = tree.mode(rel)[1]
        overlay.write(rel, data, link=mode == 0o120000)
        overlay.modes[rel] = mode
    return tree


def _settle(p: Imported, step: Step, overlay: Overlay, version: Version) -> Imported:
    """A probe must also hold on the tree with every patch applied (lint checks it there): if a
    later patch took some of its lines away, keep only the entries still true at the end."""
    from dataclasses import replace

    from sgpatch.ops import suggest
    from sgpatch.patchset.probe import all_of, entries

    if p.probe is None or suggest.value_on(p.probe, overlay.read):
        return p
    clauses = entries(p.probe)
    kept = [n for n, v in zip(clauses, suggest.values_on(clauses, overlay.read), strict=True) if v]
    probe = all_of(kept)
    if probe is not None and not suggest.check(
        probe, lambda r: pristine(version, r), step.before.get, step.after.get
    ):
        return replace(p, probe=probe)
    why = "every suggested line is gone again once the later patches are applied"
    return replace(p, probe=None, probe_why=why)


def _imported(pid, n, version, src, step: Step, made, requires) -> Imported:
    """One patch of the set, with a probe suggested from its text files' lines."""
    from sgpatch.ops import suggest

    data, diff = made
    text = step.text_files
    sug = suggest.suggest(text, lambda r: pristine(version, r), step.before, step.after, diff)
    if not text:
        sug = suggest.Suggestion(None, "it changes only symlinks and modes, which no probe reads")
    return Imported(
        id=pid,
        file=f"patches/{version}/{n:04d}-{pid}.patch",
        source=src,
        files=step.files,
        hunks=_count_hunks(data),
        data=data,
        probe=sug.probe,
        probe_why=sug.why,
        requires=requires,
    )


def _fail(failures: Sequence[str], version: Version) -> None:
    from sgpatch import console

    for line in failures:
        console.err(f"  {line}")
    counted = [line for line in failures if not line.startswith(" ")]  # details are indented
    raise SgpatchError(
        f"{len(counted)} hunk(s) or input(s) do not apply to sglang {version} as given "
        f"(fuzz 0, as git apply does; listed above); first: {counted[0]}",
        ExitCode.CONFLICT,
    )


# ---------------------------------------------------------------------------------------------
# the manifest


def manifest_text(result: ImportResult) -> str:
    """patchset.yaml for the imported set: provenance as comments, one `==V` variant each."""
    from sgpatch.patchset.probe import probe_lines, quote

    v = result.version
    lines = [
        f"# {result.name}: imported by `sgpatch import` onto sglang {v}.",
        "# Each variant is bounded to the release it was checked on; `sgpatch port` carries it on.",
        "schema: 1",
        f"name: {result.name}",
        f"summary: {quote(f'imported patch stack for sglang {v}')}",
        f'sglang: "=={v}"',
        "fuzz: 0",
        "patches:",
    ]
    for p in result.patches:
        src = p.source
        who = ", ".join(x for x in (src.author, src.date) if x)
        lines.append(f"  # from {src.label}" + (f" ({who})" if who else ""))
        if p.probe is None:
            lines.append(f"  # no probe: {p.probe_why}")
        summary = src.subject or f"{src.stem} (imported from {Path(src.label).name})"
        lines += [
            f"  - id: {p.id}",
            f"    summary: {quote(summary)}",
            f"    type: {TYPE}",
            "    upstream: {status: pending}",
            f"    requires: [{', '.join(p.requires)}]",
        ]
        if p.probe is not None:
            lines += ["    probe:", *probe_lines(p.probe, 6, suggested=True)]
        lines += ["    variants:", f'      - {{sglang: "=={v}", patch: {p.file}}}', ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# writing


def write_set(result: ImportResult, dest: Path) -> tuple[Path, list]:
    """Write the set into DEST/NAME atomically (a temporary folder renamed into place), after
    loading it back and linting it on its release; on any failure DEST is left as it was."""
    import shutil
    import tempfile

    from sgpatch.fs import atomic

    final = dest / result.name
    if final.exists() or final.is_symlink():
        raise bad_input(f"--dest {dest}: {result.name} already exists there; remove it or rename")
    if dest.exists() and not dest.is_dir():
        raise bad_input(f"--dest {dest}: not a folder")
    made_dest = not dest.exists()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{result.name}-import-", dir=dest))
    except OSError as exc:
        if made_dest:
            shutil.rmtree(dest, ignore_errors=True)
        raise bad_input(f"--dest {dest}: {exc.strerror or exc}; nothing was written") from None
    try:
        staged = tmp / result.name
        staged.mkdir()
        (staged / "patchset.yaml").write_text(result.manifest, encoding="utf-8")
        for p in result.patches:
            path = staged / p.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(p.data)
        findings = validate(staged, result.version, final)
        atomic.rename_path(staged, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if made_dest:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return final, findings


def validate(set_dir: Path, version: Version, final: Path | None = None) -> list:
    """Load the written manifest and lint it on `version`; warnings are returned. A manifest
    that does not load back is import's own bug (exit 70, named as DEST/NAME would be, never
    as the temporary folder); a lint error exit 3; nothing is written either way."""
    from sgpatch.ops import lint, matrix
    from sgpatch.patchset.manifest import load_manifest

    try:
        manifest = load_manifest(set_dir / "patchset.yaml")
    except SgpatchError as exc:
        shown = exc.message.replace(str(set_dir), str(final or set_dir))
        raise internal(
            f"sgpatch import wrote a manifest it cannot read back, so nothing was written: {shown}"
        ) from None
    rows = matrix.compute(manifest, [version], workers=1)
    findings = lint.check(manifest, rows)
    errors = [f for f in findings if f.level == "error"]
    if errors:
        first = errors[0]
        what = f"{first.patch}: " if first.patch else ""
        raise SgpatchError(
            f"the imported set fails lint on sglang {version}: {what}{first.message}",
            ExitCode.CONFLICT,
        )
    if final is None:
        return findings
    from dataclasses import replace

    staged, shown = str(set_dir.parent), str(final.parent)  # a hint names DEST, not the stage
    return [replace(f, message=f.message.replace(staged, shown)) for f in findings]
