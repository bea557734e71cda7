"""The canonical diff writer: one deterministic form for every patch file sgpatch writes.

`refresh`, `diff`, `port` and `export` all write patches through `canonical_diff`, so the same
pair of trees always gives the same bytes (docs/porting.md, "canonical form"):

- the patch's free-text header is kept verbatim; no timestamps, no `index` lines;
- one `diff --git a/python/sglang/P b/python/sglang/P` block per file, files sorted by path,
  `new file mode 100644` / `deleted file mode 100644` and `/dev/null` for creations/deletions;
- 3 lines of context; hunks computed by git's own diff (Myers with the indent heuristic, via
  `git diff --no-index` with user configuration ignored), or by difflib when git is missing;
- hunk section headers computed like git's `python` funcname driver: the nearest line above the
  hunk's first line matching `^[ \\t]*((class|(async[ \\t]+)?def)[ \\t].*)$`, capped at 80 bytes,
  trailing blanks dropped.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sgpatch.diff.unified import decode, encode, split_lines
from sgpatch.errors import SgpatchError

CONTEXT = 3
UPSTREAM_PREFIX = "python/sglang/"
_FUNCNAME = re.compile(rb"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$")
_FUNC_MAX = 80  # git's func_line buffer
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_EOL = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class FileDiff:
    """One file's change: package-relative path, and its bytes before/after (None: absent)."""

    path: str
    old: bytes | None
    new: bytes | None


def upstream_path(rel: str) -> str:
    """Package-relative `srt/x.py` -> the path upstream's repository uses, `python/sglang/...`."""
    rel = rel.lstrip("/")
    return rel if rel.startswith(UPSTREAM_PREFIX) else UPSTREAM_PREFIX + rel


def funcname(old_lines: Sequence[str], start: int) -> str:
    """git's python funcname for a hunk whose first old line is `old_lines[start]` (0-based):
    the nearest matching line strictly above it, or ""."""
    for j in range(min(start, len(old_lines)) - 1, -1, -1):
        raw = encode(old_lines[j])
        if raw.endswith(b"\n"):
            raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        m = _FUNCNAME.match(raw)
        if m:
            return decode(m.group(1)[:_FUNC_MAX].rstrip(b" \t\r\n\v\f"))
    return ""


# ---------------------------------------------------------------------------------------------
# hunks


def _git() -> str | None:
    return shutil.which("git")


def _git_hunks(old: bytes, new: bytes, context: int) -> list[str]:
    """The hunk lines (from the first `@@`) of `git diff --no-index` between two byte strings."""
    with tempfile.TemporaryDirectory(prefix="sgpatch-diff-") as tmp:
        a, b = Path(tmp, "a"), Path(tmp, "b")
        a.write_bytes(old)
        b.write_bytes(new)
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": tmp,
            "LC_ALL": "C",
            "GIT_CEILING_DIRECTORIES": os.path.dirname(tmp),  # no repository's config, ever
        }
        cmd = [
            _git() or "git",
            "diff",
            "--no-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",
            "--diff-algorithm=myers",
            "--indent-heuristic",
            f"-U{context}",
            "a",
            "b",
        ]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, check=False)
    if proc.returncode not in (0, 1):
        raise SgpatchError(f"git diff failed: {decode(proc.stderr).strip()}")
    lines = split_lines(decode(proc.stdout))
    first = next((i for i, ln in enumerate(lines) if ln.startswith("@@ ")), len(lines))
    return lines[first:]


def _difflib_hunks(old: bytes, new: bytes, context: int) -> list[str]:
    a, b = split_lines(decode(old)), split_lines(decode(new))
    out: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += _body(" ", a[a1:a2])
                continue
            out += _body("-", a[a1:a2])
            out += _body("+", b[b1:b2])
    return out


def _range(start: int, length: int) -> str:
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _body(kind: str, lines: Sequence[str]) -> list[str]:
    out = []
    for ln in lines:
        out.append(kind + ln if ln.endswith("\n") else kind + ln + "\n" + NO_EOL)
    return out


def _hunks(old: bytes, new: bytes, context: int) -> list[str]:
    if _git() is not None:
        return _git_hunks(old, new, context)
    return _difflib_hunks(old, new, context)


def _with_funcnames(hunk_lines: list[str], old: bytes) -> list[str]:
    """Replace each `@@` line's section header with git's python funcname."""
    old_lines = split_lines(decode(old))
    out = []
    for line in hunk_lines:
        m = _HUNK.match(line)
        if m is None:
            out.append(line)
            continue
        start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        first = start if count == 0 else start - 1
        func = funcname(old_lines, first)
        out.append(m.group(0) + (f" {func}" if func else "") + "\n")
    return out


def file_diff(fd: FileDiff, context: int = CONTEXT) -> str:
    """The canonical block for one file ("" when nothing changed)."""
    if fd.old == fd.new:
        return ""
    up = upstream_path(fd.path)
    head = [f"diff --git a/{up} b/{up}\n"]
    if fd.old is None:
        head += ["new file mode 100644\n", "--- /dev/null\n", f"+++ b/{up}\n"]
    elif fd.new is None:
        head += ["deleted file mode 100644\n", f"--- a/{up}\n", "+++ /dev/null\n"]
    else:
        head += [f"--- a/{up}\n", f"+++ b/{up}\n"]
    old, new = fd.old or b"", fd.new or b""
    return "".join(head + _with_funcnames(_hunks(old, new, context), old))


def canonical_diff(files: Iterable[FileDiff], context: int = CONTEXT) -> str:
    """Every changed file, sorted by path, in canonical form."""
    return "".join(file_diff(fd, context) for fd in sorted(files, key=lambda f: f.path))


def render(header: str, diff: str) -> bytes:
    """A patch file: header (kept verbatim, but ending in a newline) + the canonical diff."""
    if header and not header.endswith("\n"):
        header += "\n"
    return encode(header + diff)


def add_header_line(header: str, line: str) -> str:
    """Append `line` as the header's last text line, keeping the blank line(s) that follow it."""
    body = header.rstrip("\n")
    trailing = header[len(body) :]
    if not body:
        return f"{line}\n\n"
    return f"{body}\n{line}{trailing if trailing.count(chr(10)) >= 2 else chr(10) * 2}"


# ---------------------------------------------------------------------------------------------
# trees against their pristine release


def patch_files(patch) -> list[str]:
    """Package-relative paths a parsed patch touches (sources and targets)."""
    from sgpatch.ops.plan import package_mapper

    mapper = package_mapper(patch.name)
    out: set[str] = set()
    for fp in patch.files:
        for p in (fp.source, fp.target):
            if p != "/dev/null":
                out.add(mapper(p))
    return sorted(out)


def pristine_bytes(version, rel: str) -> bytes | None:
    """The release's own bytes for a package-relative path, None if the release lacks it."""
    from sgpatch.releases import cache as releases

    if not releases.has_member(version, rel):
        return None
    return releases.read_member(version, rel)


def tree_diff(
    root: Path,
    version,
    paths: Iterable[str],
    context: int = CONTEXT,
    read: Callable[[str], bytes | None] | None = None,
) -> str:
    """Canonical diff of `paths` (package-relative) in the tree at `root` against the release;
    `read` gives a file's side of the diff (default: its bytes in the tree)."""
    from sgpatch.state.txn import read_bytes

    read = read or (lambda p: read_bytes(root, p))
    files = [FileDiff(p, pristine_bytes(version, p), read(p)) for p in sorted(set(paths))]
    return canonical_diff(files, context)


def changed_files(root: Path, version) -> list[str]:
    """Package-relative .py (and other packaged) files of the tree that differ from the release,
    plus files the release has that the tree lacks. Files the release does not ship are left out
    (a tree holds caches, build output and sgpatch's own state)."""
    import base64
    import hashlib

    from sgpatch.releases import cache as releases

    out = []
    prefix = f"{releases.PACKAGE}/"
    for name, digest in releases.record(version).items():
        if not name.startswith(prefix):
            continue
        rel = name[len(prefix) :]
        path = root / rel
        alg, _, b64 = digest.partition("=")
        try:
            data = path.read_bytes()
        except OSError:
            out.append(rel)
            continue
        got = base64.urlsafe_b64encode(hashlib.new(alg, data).digest()).rstrip(b"=").decode()
        if got != b64:
            out.append(rel)
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# refresh


@dataclass(frozen=True)
class Refreshed:
    """A patch file in canonical form, and whether that differs from disk. A file that also
    serves other releases (its variant's range admits another release, or another variant
    names the same file) is never rewritten: `variant` is then a new file for this release,
    and `how` says how the manifest points the release at it (docs/porting.md, refresh)."""

    patch_id: str
    variant: Path  # the patch file to write (absolute)
    data: bytes  # its new content
    changed: bool  # differs from what is on disk
    files: tuple[str, ...]
    split: str | None = None  # the refreshed variant's range, when a new file is written
    how: str = "in place"  # in place | split | repointed
    index: int = 0  # the refreshed variant's place in the patch's variants
    old_file: Path | None = None  # the file it came from (split, repointed)
    split_to: str | None = None  # split: the old variant's range without this release
    shared_by: tuple[str, ...] = ()  # the other variants naming the old file ("ID RANGE")


def refresh(
    manifest,
    patch_id: str,
    root: Path,
    version,
    extra_files: Sequence[str] = (),
    others: Sequence = (),
    known: Sequence = (),
):
    """Regenerate the variant of `patch_id` that covers `version` from the tree at `root`.

    A patch file is a diff against the pristine release. `others` are the parsed patches of the
    same set applied on the tree besides this one (from the ledger): their changes are taken
    out of each file first, reversed with the engine, so a file two patches touch does not
    end up in both (exit 3 if one cannot be taken out cleanly). A changed file that also
    serves another release is not rewritten (that release was never checked against the
    edit): the new content goes to `patches/<version>/<name>`, and the variant of this
    release is pointed at it (`_new_file`)."""
    from sgpatch.diff.unified import read_patch
    from sgpatch.patchset.manifest import select_variant

    spec = manifest.patch(patch_id)
    variant = select_variant(spec, version)
    if variant is None or variant.patch is None:
        why = variant.na if variant is not None else "no variant covers it"
        raise SgpatchError(
            f"patch {patch_id} has no patch file for sglang {version} ({why}); "
            "add a variant first (or use `sgpatch port`)"
        )
    old = read_patch(variant.patch)
    files = sorted(set(patch_files(old)) | {package_rel(f) for f in extra_files})
    diff = tree_diff(root, version, files, read=lambda f: _without(root, f, others, patch_id))
    if not diff:
        raise SgpatchError(
            f"{patch_id}: the tree at {root} has no changes in {', '.join(files)} against "
            f"pristine sglang {version}; refusing to write an empty patch"
        )
    data = render(old.header, diff)
    current = variant.patch.read_bytes()
    index = spec.variants.index(variant)
    shared = shared_by(manifest, variant)
    wider = serves_others(variant.sglang, version, known)
    if data == current or not (shared or wider):
        return Refreshed(patch_id, variant.patch, data, data != current, tuple(files),
                         index=index)  # fmt: skip
    if _numbers_blanked(data) == _numbers_blanked(current):
        # only the @@ line numbers moved: the file as it is gives the same result here
        return Refreshed(patch_id, variant.patch, current, False, tuple(files), index=index)
    target = split_path(manifest.base_dir, version, variant.patch.name, data)
    if wider:
        return Refreshed(patch_id, target, data, True, tuple(files), str(variant.sglang),
                         "split", index, variant.patch, leaving_out(variant.sglang, version),
                         shared)  # fmt: skip
    return Refreshed(patch_id, target, data, True, tuple(files), str(variant.sglang),
                     "repointed", index, variant.patch, None, shared)  # fmt: skip


def shared_by(manifest, variant) -> tuple[str, ...]:
    """The other variants of the set (any patch) that name `variant`'s patch file."""
    return tuple(
        f"{spec.id} {v.sglang}"
        for spec in manifest.patches
        for v in spec.variants
        if v is not variant and v.patch is not None and v.patch == variant.patch
    )


def leaving_out(spec, version) -> str:
    """`spec` with `!=version` added: every other release keeps what it had (a moved bound
    would change what a post or pre release of it gets)."""
    from packaging.specifiers import Specifier
    from packaging.version import Version

    here = Version(Version(str(version)).public)
    clauses = [*spec, Specifier(f"!={here}")]
    lower = sorted((c for c in clauses if c.operator in (">=", ">", "==", "~=", "===")), key=str)
    rest = sorted((c for c in clauses if c not in lower), key=str)
    return ",".join(str(c) for c in [*lower, *rest])


def manifest_edit(text: str, path: Path, res: Refreshed, version, rel: str) -> str:
    """The manifest text pointing the release at the new file `rel` (set-relative): a split
    range leaves the release out and a `==V` variant comes first; a variant serving only the
    release (and sharing its file with another) is re-pointed, never shadowed."""
    from packaging.version import Version

    from sgpatch.patchset import manifest_text as mt

    public = str(Version(Version(str(version)).public))
    if res.how == "split":
        assert res.split_to is not None
        text = mt.set_variant_spec(text, path, res.patch_id, res.index, res.split_to)
        return mt.insert_first_variant(text, path, res.patch_id, f"=={public}", rel, public)
    if res.how == "repointed":
        text = mt.set_variant_value(text, path, res.patch_id, res.index, "patch", rel)
        return mt.set_variant_value(text, path, res.patch_id, res.index, "base", public,
                                    only_if_present=True)  # fmt: skip
    return text


def _numbers_blanked(data: bytes) -> bytes:
    return re.sub(rb"(?m)^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", b"@@", data)


def serves_others(spec, version, known: Sequence) -> bool:
    """Does the range admit a release other than `version` (of those known)?"""
    from packaging.version import Version

    here = Version(Version(str(version)).public)
    return any(v != here and spec.contains(v, prereleases=True) for v in known)


def split_path(base: Path, version, name: str, data: bytes) -> Path:
    """`patches/<release>/<name>` in the set, with -2, -3... if another file holds that name."""
    from packaging.version import Version

    folder = base / "patches" / str(Version(str(version)).public)
    path, stem, k = folder / name, name.removesuffix(".patch"), 1
    while path.exists() and path.read_bytes() != data:
        k += 1
        path = folder / f"{stem}-{k}.patch"
    return path


def _without(root: Path, rel: str, others: Sequence, patch_id: str) -> bytes | None:
    """The file's bytes in the tree with the other applied patches' changes reversed, newest
    first."""
    from sgpatch.errors import ExitCode
    from sgpatch.ops.plan import package_mapper
    from sgpatch.placement.engine import apply_hunks
    from sgpatch.state.txn import read_bytes

    data = read_bytes(root, rel)
    for other in reversed(others):
        mapper = package_mapper(other.name)
        for fp in other.files:
            if mapper(fp.target if fp.target != "/dev/null" else fp.source) != rel or data is None:
                continue
            res = apply_hunks(split_lines(decode(data)), fp.hunks, reverse=True)
            if not res.ok:
                bad = next(h for h in res.hunks if not h.ok)
                raise SgpatchError(
                    f"{patch_id}: cannot take {other.name}'s change out of {rel} "
                    f"(hunk #{bad.index}: {bad.reason}); revert that patch, then refresh",
                    ExitCode.CONFLICT,
                )
            data = encode("".join(res.lines))
    return data


def package_rel(path: str, what: str = "--file") -> str:
    """A file the user named, package-relative; errors name it as `what` (the option or
    argument it came from)."""
    from sgpatch.ops.plan import package_mapper

    return package_mapper(what)(path)
