"""Read what people already have into patches to import: diffs, format-patch mails, mboxes,
commit ranges of an SGLang checkout.

A `Source` is one patch-to-be: its diff text split into per-file `Section`s, each with the
package-relative path it patches (or why it is left out), plus provenance from the mail headers.
A plain diff gives one source per file given; an mbox one per commit, in order.

Paths are mapped as `plan.package_mapper` does (upstream `a/python/sglang/...`, site-packages
`sglang/...`, package-relative), with two differences that only make sense for whole inputs:
a diff written in repository form (any path under `python/sglang/`) leaves out every other path
(the repository's own `test/`, `sgl-kernel/`, docs, CI) instead of reading it as package-relative,
and a `diff -ruN` between two unrelated folders (`./srt/x.py` vs `../my-sglang/python/sglang/srt/
x.py`) takes the side that names the package.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sgpatch.diff.unified import DEV_NULL, body_like, decode, split_lines, strip_eol
from sgpatch.errors import bad_input, unsafe
from sgpatch.state.folder import is_state_path
from sgpatch.tree.files import read_input

_MBOX_FROM = re.compile(r"^From \S+ +(Mon|Tue|Wed|Thu|Fri|Sat|Sun) ")
_GIT_DIFF = re.compile(r"^diff --git (\S+) (\S+)\s*$")
_BINARY_FILES = re.compile(r"^Binary files (\S+) and (\S+) differ")
_SUBJECT_TAG = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_HUNK_COUNTS = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_MAIL_HEADER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:")
REPO_FORM = "python/sglang/"
SITE_FORM = "sglang/"
UNSAFE = "unsafe path"
OUTSIDE = "outside the SGLang package (python/sglang/)"
EXCLUDED = "excluded with --exclude"
BINARY = "binary: a patch set carries text diffs only"


@dataclass(frozen=True)
class Section:
    """One file's block of a diff: its raw lines and where it goes."""

    lines: tuple[str, ...]
    shown: str  # the path as the input writes it (for messages)
    rel: str | None  # package-relative path; None when left out
    source_rel: str | None  # package-relative path read (differs for a rename); None if new
    why: str = ""  # why it is left out
    lost: bool = False  # left out as a file of the package a patch set cannot carry

    @property
    def kind(self) -> str:
        """Why it is left out, as a word: `outside` the package, `excluded` with --exclude,
        or `uncarried` (a file of the package a set cannot carry: binary, a link leaving the
        tree, a special file)."""
        return "uncarried" if self.lost else "excluded" if self.why == EXCLUDED else "outside"

    def left_out_json(self, label: str) -> dict[str, object]:
        """The section as `import --json` lists it left out of input `label` (docs/json.md)."""
        return {"input": label, "path": self.shown, "why": self.why, "kind": self.kind}


@dataclass(frozen=True)
class Source:
    """One input patch: its file sections and provenance (empty strings when unknown)."""

    label: str  # "x.patch", "series.mbox [2/3]", "abc1234"
    stem: str  # for the id when there is no subject
    sections: tuple[Section, ...]
    subject: str = ""
    author: str = ""
    date: str = ""
    body: str = ""
    commit: str = ""
    strip: int | None = None  # the -p level its paths were read with (None: as written)
    detected: bool = False  # that level was detected (no -p given)
    notes: tuple[str, ...] = ()  # how it was read where that is worth a warning

    @property
    def kept(self) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.rel is not None)

    @property
    def left_out(self) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.rel is None)


@dataclass(frozen=True)
class Reading:
    """How the inputs' paths are read: `--exclude` globs; `-p N` (strip N leading folders,
    then map `python/sglang/...` and `sglang/...` onto the package, as a set's paths are); and
    the release's package-relative files (asked for only once a diff is read), against which
    the strip level is detected when the paths as written name none of them (`diff -ru orig
    new`: folders not named a/ and b/)."""

    exclude: tuple[str, ...] = ()
    strip: int | None = None
    release_files: Callable[[], frozenset[str]] | None = None

    @functools.cached_property
    def release(self) -> frozenset[str]:
        return self.release_files() if self.release_files is not None else frozenset()

    @functools.cached_property
    def folders(self) -> frozenset[str]:
        return frozenset(str(PurePosixPath(p).parent) for p in self.release) - {"."}

    def names(self, rel: str | None) -> int:
        """2: `rel` is a file of the release; 1: a new file in one of its folders (the package
        root aside: any name would do there); 0: neither."""
        if rel is None:
            return 0
        return 2 if rel in self.release else int(str(PurePosixPath(rel).parent) in self.folders)


# ---------------------------------------------------------------------------------------------
# inputs


def read_files(paths: Sequence[Path], reading: Reading = Reading()) -> list[Source]:
    """Every PATCH argument, in order: an mbox gives one source per message, else one per file."""
    texts = []
    for path in paths:  # every input is read before any is parsed (or the release fetched)
        try:
            texts.append((path, decode(read_input(Path(path)))))
        except OSError as exc:
            raise bad_input(f"{path}: cannot read: {exc.strerror or exc}") from None
    return [src for path, text in texts for src in from_text(text, str(path), path.stem, reading)]


def from_text(text: str, label: str, stem: str, reading: Reading = Reading()) -> list[Source]:
    """Sources in one input's text: several for an mbox, one for a diff or a single mail."""
    messages = split_mbox(text)
    if len(messages) <= 1:
        return [_source(text, label, stem, reading)]
    many = len(messages)
    return [
        _source(m, f"{label} [{i}/{many}]", f"{stem}-{i}", reading)
        for i, m in enumerate(messages, 1)
    ]


def split_mbox(text: str) -> list[str]:
    """An mbox's messages (`From <sha> Mon Sep 17 ...` separators); [text] when it has none."""
    lines = split_lines(text)
    starts = [
        i
        for i, ln in enumerate(lines)
        if _MBOX_FROM.match(ln) and (i == 0 or not strip_eol(lines[i - 1]))
    ]
    if not starts:
        return [text]
    bounds = [*starts, len(lines)]
    return ["".join(lines[a:b]) for a, b in itertools.pairwise(bounds)]


def _source(text: str, label: str, stem: str, reading: Reading) -> Source:
    lines = split_lines(text)
    first = next((i for i, ln in enumerate(lines) if _starts_file(lines, i)), None)
    if first is None:
        raise bad_input(f"{label}: no diff found (expected 'diff --git' or '--- a/...' lines)")
    mail = _mail(lines[:first])
    raws, overlong = _sections(_strip_signature(lines[first:]))
    blocks = [_map(raw, label) for raw in raws]
    sections, strip = _placed(blocks, reading)
    detected = strip is not None and reading.strip is None
    notes = tuple(
        f"{sections[b].shown}: the hunk `{head[:40]}` is {n} line(s) longer than its header "
        "says; read as git apply reads it, without them"
        for b, head, n in overlong
    )
    return Source(label, stem, sections, strip=strip, detected=detected, notes=notes, **mail)


def _strip_signature(lines: list[str]) -> list[str]:
    """format-patch ends a mail with `-- ` and git's version: not part of the last hunk."""
    for i in range(len(lines) - 1, max(len(lines) - 4, -1), -1):
        if strip_eol(lines[i]) == "-- ":
            return lines[:i]
    return lines


def _starts_file(lines: Sequence[str], i: int) -> bool:
    """A diff starts here: `diff --git`, another `diff ...` line with its `---` close below (a
    commit message may say "diff of ..."), or a `---`/`+++` pair."""
    line = lines[i]
    if line.startswith("diff --git ") or _BINARY_FILES.match(line):
        return True
    if line.startswith("diff "):
        return any(ln.startswith("--- ") for ln in lines[i + 1 : i + 4])
    return line.startswith("--- ") and _next_is_plus(lines, i)


def _sections(lines: list[str]) -> tuple[list[list[str]], list[tuple[int, str, int]]]:
    """Split a diff into per-file blocks: a new block starts at a `diff ...` line, or at a
    `---`/`+++` pair outside a hunk (hunks are measured by their @@ counts, so a removed line
    that reads `-- x` stays in its hunk) unless the block's `diff` line has not had its pair.
    Body lines right after a hunk whose counts are used up are not part of it, as `git apply`
    reads them (a hand-edited hunk longer than its header): they are dropped, and each such
    run is returned as (block, hunk header, lines dropped)."""
    out: list[list[str]] = []
    overlong: list[tuple[int, str, int]] = []
    old = new = 0  # lines left in the current hunk
    head = ""  # the header of the last hunk, once its counts are used up
    for i, line in enumerate(lines):
        if old > 0 or new > 0:
            kind = line[:1]
            if kind == "-":
                old -= 1
            elif kind == "+":
                new -= 1
            elif kind != "\\":
                old, new = old - 1, new - 1
            out[-1].append(line)
            continue
        pair = line.startswith("--- ") and _next_is_plus(lines, i)
        if head and not pair and body_like(line):
            if overlong and overlong[-1][:2] == (len(out) - 1, head):
                overlong[-1] = (len(out) - 1, head, overlong[-1][2] + 1)
            else:
                overlong.append((len(out) - 1, head, 1))
            continue
        binary = _BINARY_FILES.match(line) and (not out or _has_minus_header(out[-1]))
        if line.startswith("diff ") or not out or binary or (pair and _has_minus_header(out[-1])):
            out.append([])
            head = ""
        m = _HUNK_COUNTS.match(line)
        if m:
            old = int(m.group(1) if m.group(1) is not None else 1)
            new = int(m.group(2) if m.group(2) is not None else 1)
            head = strip_eol(line)
        out[-1].append(line)
    return out, overlong


def _has_minus_header(block: list[str]) -> bool:
    return any(ln.startswith("--- ") for ln in block) or any(ln.startswith("@@") for ln in block)


def _next_is_plus(lines: Sequence[str], i: int) -> bool:
    return i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


# ---------------------------------------------------------------------------------------------
# paths


def _header_path(raw: list[str], prefix: str) -> str | None:
    for ln in raw:
        if ln.startswith("@@"):
            break
        if ln.startswith(prefix):
            path = strip_eol(ln[len(prefix) :]).split("\t")[0].strip()
            return None if path == DEV_NULL else path
    return None


def _map(raw: list[str], label: str) -> tuple[list[str], str, tuple[str | None, str | None]]:
    """(raw lines, path to show, (old path, new path)) with a/ b/ kept for now."""
    old, new = _header_path(raw, "--- "), _header_path(raw, "+++ ")
    b = next((_BINARY_FILES.match(strip_eol(ln)) for ln in raw if _BINARY_FILES.match(ln)), None)
    if b and old is None and new is None:  # `diff -r` says "Binary files X and Y differ"
        old, new = (None if p == DEV_NULL else p for p in (b.group(1), b.group(2)))
    m = _GIT_DIFF.match(strip_eol(raw[0]))
    if m and old is None and new is None:  # git header only: mode change, rename, binary
        old, new = m.group(1), m.group(2)
        if any(ln.startswith("new file mode") for ln in raw):
            old = None
        if any(ln.startswith("deleted file mode") for ln in raw):
            new = None
    if old is None and new is None:
        raise bad_input(f"{label}: a file block without paths: {strip_eol(raw[0])[:80]!r}")
    return raw, new or old or "", (old, new)


def _clean(path: str, git: bool) -> str:
    """Drop `a/`/`b/` (git form) and `./`; a path with `..` keeps them (checked later)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if git and parts and parts[0] in ("a", "b") and len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts)


def _after(path: str, marker: str) -> str | None:
    """What follows `marker` (a folder prefix) in `path`, at its start or after a `/`."""
    if path.startswith(marker):
        return path[len(marker) :]
    idx = path.find("/" + marker)
    return path[idx + len(marker) + 1 :] if idx >= 0 else None


_Block = tuple[list[str], str, tuple[str | None, str | None]]  # raw lines, shown, (old, new)
_Read = Callable[[str], tuple[str | None, str]]  # a path as written -> (package path, why not)


def _form(sections: Sequence[_Block]) -> str:
    """How the input writes paths: `repo` (python/sglang/...), `site` (sglang/...) or `package`."""
    paths = [
        _clean(p, True) for _, _, pair in sections for p in pair if p is not None and p != DEV_NULL
    ]
    if any(_after(p, REPO_FORM) is not None for p in paths):
        return "repo"
    if any(p.startswith(SITE_FORM) for p in paths):
        return "site"
    return "package"


def package_path(path: str, form: str, git: bool = True) -> tuple[str | None, str]:
    """(package-relative path, "") or (None, why it is left out), for an input of `form`."""
    clean = _clean(path, git)
    parts, lead = clean.split("/"), 0
    while not git and lead < len(parts) and parts[lead] == "..":
        lead += 1  # a plain diff's leading ../ (a folder beside this one) is fine
    if ".." in parts[lead:]:
        return None, UNSAFE
    rel = _after(clean, REPO_FORM)
    if rel is None and form != "repo" and clean.startswith(SITE_FORM):
        rel = clean[len(SITE_FORM) :]
    if rel is None and form == "package" and ".." not in clean.split("/"):
        return _in_package(clean)
    if rel is None or not rel:
        return None, OUTSIDE
    if ".." in rel.split("/") or rel.startswith("/"):
        return None, UNSAFE
    return rel, ""


def _in_package(path: str) -> tuple[str | None, str]:
    """A path read from the package root, or (None, why) when it names a folder of the
    repository that is not in the package (`sgl-kernel/`, `docs/`, `python/pyproject.toml`)."""
    from sgpatch.diff.paths import REPO_ONLY

    top = path.split("/", 1)[0]
    if not path or top in REPO_ONLY or (top == "python" and "/" in path):
        return None, OUTSIDE
    return path, ""


def _components(path: str) -> list[str]:
    """A path's components as `-p` counts them: a leading `/` is one (GNU patch), `.` none."""
    head, *rest = path.split("/")
    kept = [p for p in rest if p not in ("", ".")]
    return kept if head == "." else [head, *kept]


def stripped_path(path: str, strip: int) -> tuple[str | None, str]:
    """`path` read as `git apply -pN` / `patch -pN` read it, then mapped onto the package as a
    set's paths are (`python/sglang/` or `sglang/` dropped)."""
    parts = _components(path)
    if strip >= len(parts):
        return None, f"-p{strip} strips all of it"
    rest = parts[strip:]
    if ".." in rest or rest[0] == "":
        return None, UNSAFE
    rel = "/".join(rest)
    for prefix in (REPO_FORM, SITE_FORM):
        if rel.startswith(prefix):
            return (rel[len(prefix) :], "") if rel != prefix else (None, OUTSIDE)
    return _in_package(rel)


def _placed(blocks: Sequence[_Block], reading: Reading) -> tuple[tuple[Section, ...], int | None]:
    """Every file block placed in the package, and the -p level used (None: as written). As
    written means git's `a/` `b/` dropped and the package found by its folder names; when that
    names no file of the release (and no -p is given), the level at which the most paths do
    is taken."""
    if reading.strip is not None:
        return _at_level(blocks, reading.strip, reading), reading.strip
    form = _form(blocks)
    default = tuple(_place(block, _as_written(block, form), reading) for block in blocks)
    if not reading.release or any(reading.names(s.rel or s.source_rel) for s in default):
        return default, None
    level = _detect_level(blocks, reading)
    if level is None:
        return default, None
    return _at_level(blocks, level, reading), level


def _at_level(blocks: Sequence[_Block], strip: int, reading: Reading) -> tuple[Section, ...]:
    read = functools.partial(stripped_path, strip=strip)
    return tuple(_place(block, (read, lambda p: _shown(p, strip)), reading) for block in blocks)


def _shown(path: str, strip: int) -> str:
    return "/".join(_components(path)[strip:]) or path


def _detect_level(blocks: Sequence[_Block], reading: Reading) -> int | None:
    """The -p level at which the input's paths name the most files of the release (then the
    most new files in its folders), the lowest of equals; None when no level names any."""
    deepest = max((len(_components(p)) for _, _, pair in blocks for p in pair if p), default=0)
    best, score = None, (0, 0)
    for level in range(deepest):
        named = [max(reading.names(stripped_path(p, level)[0]) for p in pair if p)
                 for _, _, pair in blocks]  # fmt: skip
        found = (named.count(2), named.count(1))
        if found > score:
            best, score = level, found
    return best


def _as_written(block: _Block, form: str) -> tuple[_Read, Callable[[str], str]]:
    """The default reading of one block's paths: git's (and a plain `diff -u a/x b/x`'s) `a/`
    `b/` dropped, the package found by its folder names."""
    raw, _shown_path, pair = block
    sides = [p for p in pair if p is not None]
    git = raw[0].startswith("diff --git ") or all(p.startswith(("a/", "b/")) for p in sides)
    return (lambda p: package_path(p, form, git)), (lambda p: _clean(p, git))


def _place(block: _Block, how: tuple[_Read, Callable[[str], str]], reading: Reading) -> Section:
    raw, shown, (old, new) = block
    read, show = how
    mapped = {p: read(p) for p in (old, new) if p is not None}
    if not raw[0].startswith("diff --git ") and old is not None and new is not None:
        # a plain diff has no renames: both names mean one file; take the one naming the package
        rel_old, rel_new = mapped[old][0], mapped[new][0]
        rel = rel_new if _better(new, rel_new, reading) or rel_old is None else rel_old
        mapped = {old: (rel, mapped[old][1]), new: (rel, mapped[new][1])}
    target = new if new is not None else old
    assert target is not None
    if any(why == UNSAFE for _rel, why in mapped.values()):
        raise unsafe(f"{show(shown)}: a path that climbs out of the SGLang package; "
                     "nothing imported")  # fmt: skip
    for rel_side, _why in mapped.values():
        if rel_side is not None and is_state_path(rel_side):
            raise unsafe(f"{show(shown)}: a path into sgpatch's state folder (.sgpatch/); "
                         "nothing imported")  # fmt: skip
    rel, why = mapped[target]
    source_rel = mapped[old][0] if old is not None else None
    if rel is not None and old is not None and source_rel is None:
        rel, why = None, mapped[old][1]
    if rel is not None and excluded(rel, show(target), reading.exclude):
        rel, why = None, EXCLUDED
    lost = uncarried(raw, rel) if rel is not None else ""
    if lost:
        return Section(tuple(raw), show(shown), None, None, lost, lost=True)
    return Section(tuple(raw), show(shown), rel, source_rel if rel else None, why)


def uncarried(raw: Sequence[str], rel: str) -> str:
    """Why a package file's diff block cannot go into a patch set ("" when it can): a binary
    diff, or a symlink whose target leaves the tree."""
    from sgpatch.errors import SgpatchError
    from sgpatch.ops.fileplan import check_link

    if any(_BINARY_FILES.match(ln) or ln.startswith("GIT binary patch") for ln in raw):
        return BINARY
    if not any(re.match(r"(new file |new |old |deleted file )?mode 120000\b", ln) for ln in raw):
        return ""
    target = "\n".join(strip_eol(ln[1:]) for ln in raw if ln.startswith("+") and ln[:4] != "+++ ")
    try:
        check_link(Path("/nonexistent-sgpatch-tree"), rel, target)
    except SgpatchError as exc:
        why = exc.message.rsplit(": ", 1)[-1]
        return f"a symlink to {target!r}, which a patch set never makes: {why}"
    return ""


def _better(new: str, rel_new: str | None, reading: Reading) -> bool:
    """A plain diff's new name is the file meant: it names the package by its folders, or
    (with the release known) a file of it."""
    return _names_package(new) or reading.names(rel_new) > 0


def _names_package(path: str) -> bool:
    clean = _clean(path, False)
    return _after(clean, REPO_FORM) is not None or clean.startswith(SITE_FORM)


def excluded(rel: str, shown: str, patterns: Sequence[str]) -> bool:
    names = (rel, shown, REPO_FORM + rel)
    return any(fnmatch.fnmatchcase(n, g) for g in patterns for n in names)


# ---------------------------------------------------------------------------------------------
# mail headers


def _mail(lines: Sequence[str]) -> dict[str, str]:
    """subject, author, date and body from a format-patch mail's head (all "" for a bare diff)."""
    import email
    import email.policy

    text = "".join(lines)
    if _MBOX_FROM.match(text):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    if not _MAIL_HEADER.match(text):
        return {"body": _body(text)}
    msg = email.message_from_string(text, policy=email.policy.default)
    subject = " ".join(str(msg.get("Subject", "")).split())
    payload = msg.get_payload()
    body = payload if isinstance(payload, str) else ""
    commit = ""
    if lines and _MBOX_FROM.match(lines[0]):
        commit = lines[0].split()[1]
    return {
        "subject": _SUBJECT_TAG.sub("", subject).strip(),
        "author": " ".join(str(msg.get("From", "")).split()),
        "date": next((strip_eol(ln)[6:].strip() for ln in lines if ln.startswith("Date: ")), ""),
        "body": _body(body),
        "commit": commit if re.fullmatch(r"[0-9a-f]{7,40}", commit) else "",
    }


def _body(text: str) -> str:
    """A commit message body without format-patch's `---` + diffstat tail."""
    out = []
    for line in text.splitlines():
        if line.rstrip() == "---":
            break
        out.append(line.rstrip())
    return "\n".join(out).strip("\n")


# ---------------------------------------------------------------------------------------------
# a commit range of a checkout


def from_git(repo_dir: Path, rev_range: str, reading: Reading = Reading()) -> list[Source]:
    """One source per commit of `rev_range` in the checkout, oldest first (merges refused)."""
    try:
        import git
    except ImportError:  # pragma: no cover - GitPython is a dependency
        raise bad_input("--git needs GitPython (pip install GitPython)") from None
    try:
        repo = git.Repo(repo_dir, search_parent_directories=False)
    except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError):
        raise bad_input(f"--repo {repo_dir}: not a git checkout") from None
    try:
        commits = list(repo.iter_commits(rev_range, reverse=True))
    except git.exc.GitCommandError as exc:
        raise bad_input(f"--git {rev_range}: {_git_line(exc)}") from None
    if not commits:
        raise bad_input(f"--git {rev_range}: no commits in that range")
    merges = [c.hexsha[:10] for c in commits if len(c.parents) > 1]
    if merges:
        raise bad_input(f"--git {rev_range}: merge commits cannot be imported ({merges[0]})")
    out = []
    for c in commits:
        mail = repo.git.format_patch("-1", "--stdout", "--no-signature", "-k", c.hexsha)
        src = from_text(mail + "\n", c.hexsha[:10], c.hexsha[:10], reading)[0]
        out.append(src)
    return out


def _git_line(exc) -> str:
    text = str(getattr(exc, "stderr", "") or exc).strip().strip("'")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if "fatal:" in ln]
    return (fatal or lines or ["git failed"])[0].replace("stderr: ", "").strip("'")


def posix(path: str) -> str:
    return PurePosixPath(path).as_posix()
