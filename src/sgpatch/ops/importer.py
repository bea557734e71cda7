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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError, bad_input, internal
from sgpatch.ops.fileplan import FilePlan, Overlay
from sgpatch.ops.sources import Section, Source
from sgpatch.patchset.probe import ProbeNode, describe

TYPE = "feature"
MAX_NAME = 100  # a set's name is a folder name (and part of a temporary one beside it)
# What YAML cannot hold, even quoted: C0 and C1 controls but tab, DEL, lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


@dataclass
class ReleaseOverlay(Overlay):
    """An overlay whose untouched files are read from release `version`'s wheel (no tree)."""

    version: Version = field(default_factory=lambda: Version("0"))

    def read(self, rel: str) -> bytes | None:
        if rel in self.changed:
            return self.changed[rel]
        if rel not in self.original:
            self.original[rel] = pristine(self.version, rel)
        return self.original[rel]


@functools.lru_cache(maxsize=4096)
def pristine(version: Version, rel: str) -> bytes | None:
    """The release's own bytes (cached: the overlay, the probes and lint all ask)."""
    from sgpatch.ops.refresh import pristine_bytes

    return pristine_bytes(version, rel)


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


@dataclass(frozen=True)
class ImportResult:
    """What `import` made: the set's patches, the input sections left out, the manifest."""

    name: str
    version: Version
    patches: tuple[Imported, ...]
    left_out: tuple[tuple[str, Section], ...]  # (input label, section)
    manifest: str


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


def _failures(label: str, plans: Sequence[FilePlan]) -> list[str]:
    """Everything `git apply` would refuse (or do differently), one line per hunk."""
    out = []
    for f in plans:
        if f.note or (f.status == "already-applied" and not f.hunks):
            out.append(f"{label}: {f.path}: {f.note or 'already there'}")
        for h in f.hunks:
            if h.status == "already-applied":
                out.append(f"{label}: {f.path} hunk #{h.index}: already there (in {f.path} of V)")
            elif not h.ok:
                out.append(f"{label}: {f.path} hunk #{h.index}: {h.reason}")
            elif h.fuzz or h.whitespace:
                out.append(f"{label}: {f.path} hunk #{h.index}: applies only with fuzz/whitespace")
    return out


_TWICE = re.compile(r": (\S+) hunk #\d+: would define (\w+) twice in (?:class|def) (\w+)")


def _whose_copy(line: str, version: Version) -> str:
    """A defined-twice refusal with which copy is upstream's: the release's own file defines
    the name in that class/def (upstream made it since the patch was written: drop the patch's
    copy) or not (an earlier patch of the stack added it), and what to change."""
    m = _TWICE.search(line)
    if m is None or "the patch adds it more than once" in line:
        return line
    rel, name, scope = m.groups()
    at = _defined_at(pristine(version, rel), scope, name)
    if at is None:
        return (
            f"{line} (the other copy came with an earlier input of this stack, not with "
            f"sglang {version}: delete one of the two from its patch file; docs/import.md)"
        )
    return (
        f"{line} (the copy at line {at} is sglang {version}'s own: upstream has it now; "
        f"delete this hunk's copy of {name} from the patch file and import again; "
        "docs/import.md)"
    )


def _defined_at(data: bytes | None, scope: str, name: str) -> int | None:
    """The line where `data` defines `name` directly in the body of class/def `scope`."""
    import ast

    try:
        tree = ast.parse(data or b"")
    except (SyntaxError, ValueError):
        return None
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in ast.walk(tree):
        if isinstance(node, defs) and node.name == scope:
            for st in node.body:
                if isinstance(st, defs) and st.name == name:
                    return st.lineno
    return None


def apply_source(overlay: ReleaseOverlay, src: Source) -> tuple[dict, dict, list[str]]:
    """Apply one input to the overlay: (before, after) bytes per touched file, and failures."""
    from sgpatch.ops.fileplan import plan_patch

    patch, mapper = _parse_sections(src)
    touched = sorted({r for s in src.kept for r in (s.rel, s.source_rel) if r})
    before = {rel: overlay.read(rel) for rel in touched}
    plans = plan_patch(overlay, patch, mapper, fuzz=0)
    after = {rel: overlay.read(rel) for rel in touched}
    failures = _failures(src.label, plans)
    return before, after, [_whose_copy(f, overlay.version) for f in failures]


def tree_source(root: Path, version: Version, name: str) -> tuple[Source, dict, dict]:
    """An edited tree as one input: every packaged file that differs from release `version`,
    plus new .py files the release does not ship (caches and sgpatch's state left out)."""
    from sgpatch.ops.refresh import changed_files
    from sgpatch.releases import cache as releases
    from sgpatch.state.txn import read_bytes

    shipped = {n[len("sglang/") :] for n in releases.record(version) if n.startswith("sglang/")}
    new = [
        p.relative_to(root).as_posix()
        for p in sorted(root.rglob("*.py"))
        if not {"__pycache__", ".sgpatch"} & set(p.relative_to(root).parts)
        and p.relative_to(root).as_posix() not in shipped
    ]
    rels = sorted({*changed_files(root, version), *new})
    if not rels:
        raise bad_input(f"--tree {root}: no file differs from sglang {version}")
    before = {rel: pristine(version, rel) for rel in rels}
    after = {rel: read_bytes(root, rel) for rel in rels}
    sections = tuple(Section((), rel, rel, rel) for rel in rels)
    body = f"Every file of {root} that differs from the pristine sglang {version}."
    return Source(label=str(root), stem=name, sections=sections, body=body), before, after


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
    tree: tuple[dict, dict] | None = None,
) -> ImportResult:
    """Apply every source in order to release `version` and make one patch of each."""
    from sgpatch.diff.canonical import FileDiff, canonical_diff, render
    from sgpatch.patchset.manifest import ID_RE

    if not ID_RE.match(name):
        raise bad_input(f"--name {name!r}: must match [a-z0-9][a-z0-9-]* (it names the folder)")
    if len(name) > MAX_NAME:
        raise bad_input(
            f"--name {name[:20]}...: {len(name)} characters; at most {MAX_NAME} (it names a folder)"
        )
    sources = [_readable(src) for src in sources]
    overlay = ReleaseOverlay(Path("/nonexistent-sgpatch-release"), version=version)
    taken: set[str] = set()
    out: list[Imported] = []
    touched_by: dict[str, list[str]] = {}
    left: list[tuple[str, Section]] = []
    failures: list[str] = []
    states: list[tuple[dict, dict]] = []
    for n, src in enumerate(sources, 1):
        left += [(src.label, s) for s in src.left_out]
        if tree is not None:
            before, after = tree
            for rel, data in after.items():
                overlay.write(rel, data)
        elif not src.kept:
            failures.append(f"{src.label}: nothing left to import (every file is left out)")
            continue
        else:
            before, after, bad = apply_source(overlay, src)
            failures += bad
            if bad:
                continue
        files = tuple(sorted(r for r in after if after[r] != before.get(r)))
        if not files:
            failures.append(f"{src.label}: changes nothing in sglang {version}")
            continue
        pid = unique_id(slug(src.subject or src.stem), taken)
        diff = canonical_diff(FileDiff(r, before[r], after[r]) for r in files)
        data = render(header(src, version, src.left_out), diff)
        requires = tuple(dict.fromkeys(p for f in files for p in touched_by.get(f, ())))
        for f in files:
            touched_by.setdefault(f, []).append(pid)
        out.append(_imported(pid, n, version, src, files, (data, diff), requires, before, after))
        states.append((before, after))
    if failures:
        _fail(failures, version)
    out = [_settle(p, st, overlay, version) for p, st in zip(out, states, strict=True)]
    result = ImportResult(name, version, tuple(out), tuple(left), "")
    return ImportResult(name, version, tuple(out), tuple(left), manifest_text(result))


def _settle(p: Imported, state: tuple[dict, dict], overlay: Overlay, version: Version) -> Imported:
    """A probe must also hold on the tree with every patch applied (lint checks it there): if a
    later patch took some of its lines away, keep only the entries still true at the end."""
    from dataclasses import replace

    from sgpatch.ops import suggest
    from sgpatch.patchset.probe import AllProbe

    if p.probe is None or suggest.value_on(p.probe, overlay.read):
        return p
    entries = p.probe.nodes if isinstance(p.probe, AllProbe) else (p.probe,)
    kept = [n for n, v in zip(entries, suggest.values_on(entries, overlay.read), strict=True) if v]
    probe = kept[0] if len(kept) == 1 else AllProbe(tuple(kept)) if kept else None
    before, after = state
    if probe is not None and not suggest.check(
        probe, lambda r: pristine(version, r), before.get, after.get
    ):
        return replace(p, probe=probe)
    why = "every suggested line is gone again once the later patches are applied"
    return replace(p, probe=None, probe_why=why)


def _imported(pid, n, version, src, files, made, requires, before, after) -> Imported:
    from sgpatch.ops import suggest

    data, diff = made
    sug = suggest.suggest(files, lambda r: pristine(version, r), before, after, diff)
    return Imported(
        id=pid,
        file=f"patches/{version}/{n:04d}-{pid}.patch",
        source=src,
        files=files,
        hunks=_count_hunks(data),
        data=data,
        probe=sug.probe,
        probe_why=sug.why,
        requires=requires,
    )


def _fail(failures: Sequence[str], version: Version) -> None:
    from sgpatch.ops import report

    for line in failures:
        report.err(f"  {line}")
    raise SgpatchError(
        f"{len(failures)} hunk(s) or input(s) do not apply to sglang {version} as given "
        f"(fuzz 0, as git apply does; listed above); first: {failures[0]}",
        ExitCode.CONFLICT,
    )


# ---------------------------------------------------------------------------------------------
# the manifest


def manifest_text(result: ImportResult) -> str:
    """patchset.yaml for the imported set: provenance as comments, one `==V` variant each."""
    from sgpatch.ops.suggest import probe_lines, quote

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


def probe_text(p: Imported) -> str:
    return describe(p.probe) if p.probe is not None else f"none ({p.probe_why})"


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
        raise SgpatchError(
            f"the imported set fails lint on sglang {version}: {first.patch}: {first.message}",
            ExitCode.CONFLICT,
        )
    return findings
