"""Find the SGLang package root and its version from whatever the user points at.

The package root is the `sglang` folder that holds `srt/`. It can live in site-packages (with a
`sglang-V.dist-info` beside it), in a repository checkout (`<repo>/python/sglang`), or be a bare
copy of the package. Nothing here imports SGLang: importing it pulls in torch and takes seconds.

Which tree, when the user names none: `$SGLANG_DIR`, else the tree the current directory is in
(as git finds its repository), else the `sglang` the running Python would import.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from sgpatch.errors import SgpatchError, bad_input
from sgpatch.tree.files import read_regular

Layout = Literal["site-packages", "checkout", "package"]

ENV_SGLANG_DIR = "SGLANG_DIR"

#: How a tree was chosen (`Found.how`), in the order they are tried.
CHOSEN_BY = ("--sglang-dir", "$SGLANG_DIR", "current directory", "installed")

#: Where each version came from, in the order they are tried (the override comes first).
VERSION_SOURCES = ("--sglang-version", "_version.py", "version.py", "METADATA", "git describe")


@dataclass(frozen=True)
class Target:
    """An SGLang tree to patch: where its package root is, how it is laid out, which release."""

    root: Path  # the `sglang` folder that holds srt/ (resolved, absolute)
    layout: Layout
    version: Version
    version_source: str  # one of VERSION_SOURCES
    repo_root: Path | None  # the checkout root (holds python/sglang) if layout == "checkout"
    dist_info: Path | None  # <site-packages>/sglang-V.dist-info if present
    # What the tree itself says, when --sglang-version overrode it (None if it could not tell).
    detected_version: Version | None = None
    detected_source: str | None = None

    @property
    def site_packages(self) -> Path | None:
        """The folder the package was installed into (where its environment's packages are),
        for a site-packages install; None for a checkout."""
        return self.root.parent if self.layout == "site-packages" else None

    def to_json(self) -> dict[str, object]:
        """The tree in --json documents (docs/json.md)."""
        return {
            "root": str(self.root),
            "layout": self.layout,
            "version": str(self.version),
            "version_source": self.version_source,
        }


@dataclass(frozen=True)
class Found:
    """A located package root and how it was chosen; for "current directory", also the root of
    the `sglang` the running Python would import (None: it imports none), to warn when the two
    differ."""

    root: Path
    how: str  # one of CHOSEN_BY
    imported: Path | None = None


def is_package_root(path: Path) -> bool:
    """An SGLang package root is a directory holding `srt/` (the runtime every patch touches)."""
    return path.is_dir() and (path / "srt").is_dir()


def find_root(sglang_dir: str | Path) -> Path:
    """Resolve what the user passed as `--sglang-dir` to the package root.

    Accepts the package root itself, a site-packages directory (`<dir>/sglang`), the `python/`
    folder of a checkout (`<dir>/sglang`) or a repository root (`<dir>/python/sglang`).
    """
    given = Path(sglang_dir).expanduser()
    if not given.exists():
        raise bad_input(f"SGLang directory {given} does not exist")
    if not given.is_dir():
        raise bad_input(f"SGLang directory {given} is not a directory")
    candidates = [given, given / "sglang", given / "python" / "sglang"]
    for candidate in candidates:
        if is_package_root(candidate):
            return candidate.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise bad_input(f"not an SGLang tree (no folder holding srt/): looked at {looked}")


def tree_around(cwd: Path) -> Path | None:
    """The SGLang tree the directory `cwd` is in, nearest first, as git finds a repository: each
    of `cwd` and its parents is tried as a package root (`.../sglang` holding srt/, so anywhere
    below it works), a folder holding one (`sglang/`: a site-packages folder) and a checkout root
    (`python/sglang`). Stricter than --sglang-dir: the folder must be named `sglang`, so a stray
    `srt/` (subtitles, say) above the current directory is never taken for SGLang."""
    for here in (cwd, *cwd.parents):
        for candidate in (here, here / "sglang", here / "python" / "sglang"):
            if candidate.name == "sglang" and is_package_root(candidate):
                return candidate.resolve()
    return None


def _current_dir() -> Path | None:
    try:
        return Path.cwd()
    except OSError:  # the current directory was removed
        return None


def _installed_root() -> tuple[Path | None, str]:
    """The installed `sglang` package, located without importing it.

    `importlib.util.find_spec` only imports the *parents* of a dotted name; `sglang` is top-level,
    so its `__init__` is never executed (tests/test_target.py checks that). Going through the
    import system rather than scanning sys.path also honours editable installs and .pth files.
    Returns the root (or None) and a description of where we looked, for the error message.
    """
    where = f"the Python path of {sys.executable}"
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):  # ValueError: sglang in sys.modules with no __spec__
        spec = None
    if spec is None:
        return None, where
    locations: list[Path] = []
    if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        locations.append(Path(spec.origin).parent)
    locations.extend(Path(p) for p in (spec.submodule_search_locations or ()))
    for location in locations:
        if is_package_root(location):
            return location.resolve(), where
    shown = ", ".join(str(p) for p in locations) or "no location"
    return None, f"{where} (found 'sglang' at {shown}, but no srt/ in it)"


def _parse_version(text: str, where: str) -> Version:
    try:
        return Version(text.strip())
    except ValueError:  # InvalidVersion, or digits past int()'s limit
        raise bad_input(f"{where}: {text.strip()!r} is not a PEP 440 version") from None


_MAX_VERSION_FILE = 1 << 16  # a version module is a few lines; refuse to read a huge one
_MAX_VERSION_LINE = 4096  # nor one with a huge line (a 50,000-term sum)


def _literal_version(path: Path) -> str | None:
    """The string assigned to `__version__` by a module-level statement of `path`, if literal.

    Only top-level statements count: from 0.5.7, version.py assigns the fallback "0.0.0.dev0"
    inside an `except` block, which must not be mistaken for the release; a later non-literal
    assignment overrides a literal one. A hostile file is bounded before it is parsed (size,
    line length); one past those bounds, or nested past the parser's depth, is bad input
    (exit 2): the tree names its version there, so falling back to METADATA would be a guess
    (a 4,400-digit version sits on one line). A file that is not regular, or not Python this
    interpreter parses, reads as none.
    """
    data = read_regular(path, _MAX_VERSION_FILE)
    if data is None:
        if _regular_size(path) > _MAX_VERSION_FILE:
            raise _unread(path, f"more than {_MAX_VERSION_FILE} bytes")
        return None
    if any(len(ln) > _MAX_VERSION_LINE for ln in data.split(b"\n")):
        raise _unread(path, f"a line longer than {_MAX_VERSION_LINE} characters")
    try:
        module = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError):  # not Python this interpreter reads (ValueError: a NUL)
        return None
    except (RecursionError, MemoryError):
        raise _unread(path, "nested deeper than Python's parser goes") from None
    found: str | None = None
    for stmt in module.body:
        if "__version__" in _assigned_names(stmt):
            value = stmt.value  # type: ignore[attr-defined]  # an Assign or AnnAssign
            found = (
                value.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str)
                else None
            )
    return found


def _regular_size(path: Path) -> int:
    """The size of `path` when it is a regular file (links followed, never opened), else -1."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return -1
    return st.st_size if stat.S_ISREG(st.st_mode) else -1


def _unread(path: Path, why: str) -> SgpatchError:
    return bad_input(
        f"{path}: {why}; sgpatch does not read a version from it (pass --sglang-version)"
    )


def _assigned_names(stmt: ast.stmt) -> set[str]:
    """The plain names `a = b = value` or `a: T = value` assigns (not tuples, not attributes)."""
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return {stmt.target.id} if isinstance(stmt.target, ast.Name) else set()
    return set()


def find_dist_info(root: Path) -> Path | None:
    """The `sglang-*.dist-info` beside the package root (site-packages layout), if any.

    With several (a broken upgrade), the highest version wins; unparsable names are ignored.
    """
    if root.name != "sglang":
        return None
    best: tuple[Version, Path] | None = None
    for candidate in _dist_infos(root.parent):
        if not candidate.is_dir():
            continue
        try:
            version = Version(candidate.name[len("sglang-") : -len(".dist-info")])
        except ValueError:  # InvalidVersion, or digits past int()'s limit
            continue
        if best is None or version > best[0]:
            best = (version, candidate)
    return best[1] if best else None


def _dist_infos(site: Path):
    """What `site.glob("sglang-*.dist-info")` yields, in its order. On POSIX (case-sensitive
    names) by name from one scandir, without translating the pattern to a regex."""
    if os.name != "posix":
        return site.glob("sglang-*.dist-info")
    try:
        with os.scandir(site) as entries:
            names = [e.name for e in entries]
    except OSError:
        return []
    wanted = (n for n in names if len(n) >= 17 and n.startswith("sglang-"))
    return [site / n for n in wanted if n.endswith(".dist-info")]


_MAX_METADATA = 1 << 24  # sglang's METADATA, its README included, is ~40 KB


def metadata_version(info: Path) -> str | None:
    """`Version:` from a dist-info's METADATA (or an egg-info's PKG-INFO); headers end at the
    first blank line."""
    for name in ("METADATA", "PKG-INFO"):
        data = read_regular(info / name, _MAX_METADATA)
        if data is None:
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            if not line.strip():
                break
            if line.lower().startswith("version:"):
                return line.split(":", 1)[1].strip()
    return None


_DESCRIBE = r"^v?(?P<tag>.+)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)$"  # compiled when used


def describe_to_version(describe: str) -> Version:
    """Turn `git describe --tags --long` output into a PEP 440 version.

    `v0.5.9-0-gabc123` is the release itself (`0.5.9`). `v0.5.9-3-gabc123` becomes
    `0.5.9.post1.dev3+gabc123` (setuptools-scm's "no-guess-dev" scheme): it sorts after 0.5.9 and
    before 0.5.9.post1 and 0.5.10, so a variant for `>=0.5.9,<0.5.10` matches, but `==0.5.9` does
    not claim a tree that is not the release. Guessing `0.5.10.dev3` (setuptools-scm's default)
    would instead pick the 0.5.10 variants for code that is mostly 0.5.9. After a post-release tag
    `v0.5.8.post1-3-g...` the result is `0.5.8.post2.dev3+g...`.
    """
    match = re.match(_DESCRIBE, describe.strip())
    if not match:
        raise InvalidVersion(describe)
    base = Version(match["tag"])
    distance = int(match["distance"])
    if distance == 0:
        return base
    sha = match["sha"]
    if base.dev is not None or base.local is not None:
        return Version(f"{base.public}+{distance}.g{sha}")
    text = ".".join(str(p) for p in base.release)
    if base.epoch:
        text = f"{base.epoch}!{text}"
    if base.pre:
        text += f"{base.pre[0]}{base.pre[1]}"
    post = (base.post or 0) + 1
    return Version(f"{text}.post{post}.dev{distance}+g{sha}")


def _git_describe(repo_root: Path) -> tuple[str | None, str]:
    """`git describe --tags --long` of the checkout, or None (no .git, no tags), and why git
    could not tell when it failed ("" otherwise). Run as a reader (sgpatch.tree.gitread): a
    checkout's config never makes this run a program."""
    if not (repo_root / ".git").exists():
        return None, ""  # never describe an enclosing repository that merely vendors this tree
    from sgpatch.tree import gitread

    try:
        return gitread.describe(repo_root), ""
    except gitread.GitUnreadable as exc:
        return None, exc.message


def detect_layout(root: Path) -> tuple[Layout, Path | None, Path | None]:
    """Layout, checkout root and dist-info of a package root."""
    dist_info = find_dist_info(root)
    if dist_info is not None:
        return "site-packages", None, dist_info
    if root.name == "sglang" and root.parent.name == "python":
        return "checkout", root.parent.parent, None
    return "package", None, None


def detect_version(
    root: Path, dist_info: Path | None = None, repo_root: Path | None = None
) -> tuple[Version, str]:
    """What the tree says its version is, and where that came from (bad_input if it cannot tell).

    Order: `_version.py` (0.5.7+, written by setuptools-scm), a literal in `version.py`
    (0.5.5-0.5.6), `Version:` in the dist-info METADATA, then `git describe` on a checkout.
    A source that exists but holds an unparsable version is an error, not a fall-through.
    `dist_info` and `repo_root` default to what `detect_layout(root)` finds.
    """
    if dist_info is None and repo_root is None:
        _, repo_root, dist_info = detect_layout(root)
    for name in ("_version.py", "version.py"):
        text = _literal_version(root / name)
        if text is not None:
            return _parse_version(text, str(root / name)), name
    if dist_info is not None:
        text = metadata_version(dist_info)
        if text is not None:
            return _parse_version(text, str(dist_info / "METADATA")), "METADATA"
    why = ""
    if repo_root is not None:
        described, why = _git_describe(repo_root)
        if described is not None:
            try:
                return describe_to_version(described), "git describe"
            except ValueError:  # InvalidVersion, or digits past int()'s limit
                raise bad_input(
                    f"{repo_root}: git describe gave {described!r}, not a vX.Y.Z tag "
                    "(pass --sglang-version)"
                ) from None
    tag = f"and {why}" if why else "no vX.Y.Z git tag"
    raise bad_input(
        f"cannot tell the SGLang version of {root}: no readable _version.py, no literal "
        f"__version__ in version.py, no sglang-*.dist-info beside it, {tag}; pass --sglang-version"
    )


def discover(
    sglang_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Found:
    """The package root and how it was chosen: `--sglang-dir`, else `$SGLANG_DIR`, else the tree
    around the current directory (`cwd`, default the process's), else the installed package."""
    env = os.environ if environ is None else environ
    if sglang_dir is not None and str(sglang_dir) != "":
        return Found(find_root(sglang_dir), "--sglang-dir")
    if env.get(ENV_SGLANG_DIR):
        return Found(find_root(env[ENV_SGLANG_DIR]), "$SGLANG_DIR")
    here = cwd if cwd is not None else _current_dir()
    around = tree_around(here) if here is not None else None
    installed, where = _installed_root()
    if around is not None:
        return Found(around, "current directory", installed)
    if installed is None:
        raise bad_input(
            f"no SGLang tree: --sglang-dir not given, ${ENV_SGLANG_DIR} not set, the current "
            f"directory is not inside one, and no 'sglang' package on {where}; pass "
            "--sglang-dir DIR (the package root, its site-packages folder or a checkout)"
        )
    return Found(installed, "installed")


def locate(
    sglang_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path:
    """The package root (see `discover`), without reading the version: rolling back an
    interrupted run must work on any tree."""
    return discover(sglang_dir, environ, cwd).root


def find_target(
    sglang_dir: str | Path | None = None,
    sglang_version: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    root: Path | None = None,
    cwd: Path | None = None,
) -> Target:
    """Locate the SGLang tree (`--sglang-dir`, else `$SGLANG_DIR`, else the tree around `cwd`,
    else the installed package; `root` when a caller already has it from `locate`).

    An explicit `sglang_version` wins over detection: the user said so on purpose (a fork whose
    `_version.py` is stale, a fresh clone without tags). What the tree itself says is still kept
    in `detected_version` so a caller can point out a disagreement.
    """
    root = root if root is not None else locate(sglang_dir, environ, cwd)
    layout, repo_root, dist_info = detect_layout(root)
    override = None
    if sglang_version is not None:
        override = _parse_version(sglang_version, "--sglang-version")
    detected: tuple[Version, str] | None
    try:
        detected = detect_version(root, dist_info, repo_root)
    except SgpatchError:
        if override is None:
            raise
        detected = None  # the user told us; an unknown or broken version does not matter then

    if override is not None:
        return Target(
            root=root,
            layout=layout,
            version=override,
            version_source="--sglang-version",
            repo_root=repo_root,
            dist_info=dist_info,
            detected_version=detected[0] if detected else None,
            detected_source=detected[1] if detected else None,
        )
    assert detected is not None  # detect_version raised otherwise
    return Target(
        root=root,
        layout=layout,
        version=detected[0],
        version_source=detected[1],
        repo_root=repo_root,
        dist_info=dist_info,
        detected_version=detected[0],
        detected_source=detected[1],
    )
