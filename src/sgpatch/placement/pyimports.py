"""Imports of SGLang a changed Python file makes that do not resolve on a release.

A port can carry every hunk of a file that upstream moved and still leave the file dead: a
hunk adds `from sglang.srt.layers.attention.fla.fused_recurrent import f`, and on the new
release that module is `sglang.kernels.ops.attention.fla.fused_recurrent`. The file compiles
and fails at import, and every module importing it fails too. This module finds such imports
and where the name lives on the release now; lint, verify and port report them.

What is checked (docs/porting.md, "Imports that no longer resolve"):
- only imports of `sglang` (absolute) and relative ones; third-party imports are out of scope;
- only what the set adds or keeps: a (module, name) the file imports that the release's own
  file does not import (every import of a file the set creates); upstream's imports, even
  broken ones, are upstream's;
- not those under a `try` that catches ImportError (or ModuleNotFoundError, Exception,
  BaseException, a bare `except`): the author made them optional on purpose; nor those under
  `if TYPE_CHECKING:`, which never run;
- a module resolves when the release has `x/y.py`, `x/y/__init__.py`, a folder `x/y/` (a
  namespace package) or an extension module `x/y.*.so`; `from M import n` also needs `n`: a
  submodule of M, or a name M binds at its top level (def, class, assignment, import, for,
  with, also inside top-level if/try/with). A module that defines `__getattr__`, does
  `from ... import *`, is an extension, or does not parse may hold any name: it resolves.

Pure (no I/O): the caller hands in the release as its file listing and a reader (`Release`),
with the set's own changes in it, so a name another patch of the set adds is found.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

PACKAGE = "sglang"
HOMES = 3  # at most this many candidate homes are named
_GUARDS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_EXTENSION = re.compile(r"\.(?:[\w-]+\.)?(?:so|pyd)$")

Parts = tuple[str, ...]  # a module's dotted name under `sglang`, split: ("srt", "utils")


@dataclass(frozen=True)
class Unresolved:
    """One import that does not resolve on the release: the file and line it is on (1-based),
    the statement as Python reads it, the module it names (dotted, absolute), the name that
    is gone from it (None: the module itself is gone) and where that lives on the release now
    (dotted modules to import it from; empty: nowhere found)."""

    file: str
    line: int
    text: str
    module: str
    name: str | None
    homes: tuple[str, ...] = ()

    @property
    def missing(self) -> str:
        """What the release lacks, in words: `no module X` or `no name N in X`."""
        if self.name is None:
            return f"no module {self.module}"
        return f"no name {self.name} in {self.module}"

    @property
    def where_now(self) -> str:
        """`now at X` / `now at X or Y`, `not found elsewhere` when nowhere."""
        if not self.homes:
            return "not found elsewhere on this release"
        return "now at " + " or ".join(self.homes)

    def brief(self) -> str:
        """`file:line: statement: no module X; now at Y`: one line for a screen or a finding."""
        return f"{self.file}:{self.line}: {self.text}: {self.missing}; {self.where_now}"

    def to_json(self) -> dict[str, object]:
        """One entry of `unresolved_imports` (docs/json.md)."""
        return {"file": self.file, "line": self.line, "import": self.text,
                "module": self.module, "name": self.name, "homes": list(self.homes)}  # fmt: skip


@dataclass(frozen=True)
class Release:
    """What the check reads of a release with the set applied: every package-relative file
    (`srt/utils.py`), and a reader of one (None: not there). `everything`, when given, reads
    every `.py` file at once (a wheel's bulk read), used only to find a name's new home."""

    paths: frozenset[str]
    read: Callable[[str], bytes | None]
    everything: Callable[[], Mapping[str, bytes]] | None = None
    # files a patch of the set has still to write (port: held by a stopped patch, waiting):
    # there, and any name in them resolves until they are written (port's finish lints again)
    open_files: frozenset[str] = frozenset()
    _names: dict[str, frozenset[str] | None] = field(default_factory=dict, compare=False)

    @functools.cached_property
    def modules(self) -> dict[Parts, str | None]:
        """Every importable module: its parts -> the source that binds its names (the `.py`,
        or the package's `__init__.py`), "" for a folder without one (a namespace package:
        its submodules are its only names), None for an extension module (any name)."""
        out: dict[Parts, str | None] = {}
        for rel in self.paths | self.open_files:
            *folders, base = rel.split("/")
            for i in range(len(folders) + 1):
                out.setdefault(tuple(folders[:i]), "")
            if base == "__init__.py":
                out[tuple(folders)] = rel
            elif base.endswith(".py"):
                out[tuple([*folders, base[:-3]])] = rel
            elif _EXTENSION.search(base):
                out.setdefault(tuple([*folders, base.split(".", 1)[0]]), None)
        out.setdefault((), "")
        return out

    def names(self, parts: Parts) -> frozenset[str] | None:
        """The names module `parts` binds at its top level; None: it may hold any name."""
        rel = self.modules.get(parts, "")
        if not rel:
            return None if rel is None else frozenset()
        if rel in self.open_files:
            return None
        if rel not in self._names:
            data = self.read(rel)
            self._names[rel] = None if data is None else top_names(data)
        return self._names[rel]

    def sources(self) -> Iterator[tuple[str, bytes]]:
        """Every `.py` file of the release with its bytes (for the new-home search)."""
        if self.everything is not None:
            yield from ((r, d) for r, d in self.everything().items() if r in self.paths)
            return
        for rel in sorted(p for p in self.paths if p.endswith(".py")):
            data = self.read(rel)
            if data is not None:
                yield rel, data


def dotted(parts: Parts) -> str:
    return ".".join((PACKAGE, *parts))


@functools.lru_cache(maxsize=256)
def top_names(source: bytes | str) -> frozenset[str] | None:
    """Names a module binds at its top level (None: any name may resolve: it does not parse,
    defines a module `__getattr__`, or imports `*`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out: set[str] = set()
    for node in _top_statements(tree.body):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        out |= _bound(node)
    return None if "__getattr__" in out else frozenset(out)


def _top_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at import: the module's, and those inside its if/try/with/for/while
    and match blocks (not inside a def or class)."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _top_statements(getattr(node, name, ()))
        for handler in getattr(node, "handlers", ()):
            yield from _top_statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from _top_statements(case.body)


def _bound(node: ast.stmt) -> set[str]:
    """Names one statement binds in its own scope (not in nested bodies: `_top_statements`
    walks those)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    out = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out | {n.target.id for n in _own_expressions(node) if isinstance(n, ast.NamedExpr)
                  and isinstance(n.target, ast.Name)}  # fmt: skip


def _own_expressions(node: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement outside the statements nested in it (an `if`'s test, not its
    body): where a walrus binds in the statement's own scope."""
    stack = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt)]
    while stack:
        child = stack.pop()
        yield child
        stack += [c for c in ast.iter_child_nodes(child) if not isinstance(c, ast.stmt)]


@dataclass(frozen=True)
class _Import:
    """One import statement, read: its line, its text, and per module it names, the names it
    takes from it (empty: `import sglang.x.y`, only the module)."""

    line: int
    text: str
    wants: tuple[tuple[Parts | None, tuple[str, ...]], ...]  # None: beyond the package


def unresolved(rel: str, after: str, before: str | None, release: Release) -> list[Unresolved]:
    """Every import of SGLang the set adds or keeps in file `rel` (package-relative; its text
    with the set applied, `after`, and the release's own, `before`, None when the set creates
    it) that does not resolve on `release`, in line order. What the set adds or keeps is a
    (module, name) the file imports that the release's own file does not: upstream's imports
    are upstream's. A file that does not parse has no findings here: the compile check names
    it."""
    if before is not None and not _may_add_imports(after, before):
        return []
    found = _imports_of(rel, after)
    if not found:
        return []
    own = {want for imp in _imports_of(rel, before or "") for want in imp.wants}
    out: list[Unresolved] = []
    for imp in found:
        for parts, names in imp.wants:
            if (parts, names) not in own:
                out += _check(rel, imp, parts, names, release)
    return out


# A multi-line import: its continuation lines (a name alone, `    fused_recurrent_rule,`) do
# not say `import`; only to decide whether a file needs parsing at all.
_CONTINUED = re.compile(
    r"^[ \t]*(?:from[ \t]+[.\w]+[ \t]+)?import[ \t]*(?:\([^)]*\)|[^\n]*\\\n(?:[^\n]*\\\n)*.*)",
    re.M,
)


def _may_add_imports(after: str, before: str) -> bool:
    """Whether a line the set adds (one the release's file does not have) can be part of an
    import: parsing two big files (server_args.py: 5,000 lines) for every file a set touches
    is what lint would otherwise spend its time on."""
    new = set(after.splitlines()) - set(before.splitlines())
    if any("import" in line for line in new):
        return True
    return bool(new) and any(
        new.intersection(m[0].splitlines()) for m in _CONTINUED.finditer(after)
    )


@functools.lru_cache(maxsize=64)
def _imports_of(rel: str, text: str) -> tuple[_Import, ...]:
    """The file's imports of SGLang outside `try` blocks that catch an ImportError, in line
    order (none: it does not parse). Kept per content: the matrix asks about the same bytes
    on release after release."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    out = []
    for node in _unguarded(tree.body):
        wants: tuple[tuple[Parts | None, tuple[str, ...]], ...] = ()
        if isinstance(node, ast.Import):
            wants = tuple(
                (tuple(a.name.split(".")[1:]), ())
                for a in node.names
                if a.name.split(".")[0] == PACKAGE
            )
        elif isinstance(node, ast.ImportFrom) and _ours(node):
            parts = _from_module(rel, node)
            wants = tuple((parts, (a.name,)) for a in node.names if a.name != "*")
        if wants:
            out.append(_Import(node.lineno, ast.unparse(node), wants))
    return tuple(sorted(out, key=lambda i: i.line))


_TRIES: tuple[type, ...] = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t)


def _unguarded(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, at any depth (a lazy import inside a def fails too, only later), but
    those in the body of a `try` whose handlers catch an ImportError or of `if TYPE_CHECKING`.
    Only statement bodies are walked, never expressions: a big file has ten times more."""
    for node in body:
        yield node
        blocks: list[Iterable[ast.stmt]] = [
            getattr(node, "orelse", ()),
            getattr(node, "finalbody", ()),
        ]
        blocks += [h.body for h in getattr(node, "handlers", ())]
        blocks += [c.body for c in getattr(node, "cases", ())]
        if not (isinstance(node, _TRIES) and _guards(node)) and not _type_checking(node):
            blocks.append(getattr(node, "body", ()))
        for block in blocks:
            if isinstance(block, list):
                yield from _unguarded(block)


def _type_checking(node: ast.stmt) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): its imports never run."""
    return isinstance(node, ast.If) and _tail(node.test) == "TYPE_CHECKING"


def _guards(node: ast.stmt) -> bool:
    """Whether a handler of the `try` catches an ImportError."""
    for handler in getattr(node, "handlers", ()):
        kinds = handler.type
        if kinds is None:
            return True
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        if any(_tail(n) in _GUARDS for n in names):
            return True
    return False


def _tail(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _ours(node: ast.ImportFrom) -> bool:
    """A relative import, or one of `sglang` (another package's are out of scope)."""
    return node.level > 0 or (node.module or "").split(".")[0] == PACKAGE


def _from_module(rel: str, node: ast.ImportFrom) -> Parts | None:
    """The module a `from ... import` of SGLang names, as parts under `sglang`; None for a
    relative import reaching above `sglang`."""
    if node.level == 0:
        return tuple((node.module or "").split(".")[1:])
    package = rel.split("/")[:-1]  # a module's package; an __init__.py's is its own folder
    up = node.level - 1
    if up > len(package):
        return None
    base = package[: len(package) - up]
    return (*base, *(node.module.split(".") if node.module else ()))


def _check(
    rel: str, imp: _Import, parts: Parts | None, names: tuple[str, ...], release: Release
) -> list[Unresolved]:
    """What of one (module, names) does not resolve, each with its candidate homes."""
    text = imp.text
    if parts is None:
        return [Unresolved(rel, imp.line, text, f"(above the {PACKAGE} package)", None)]
    if parts not in release.modules:
        homes = module_homes(parts, names, release)
        return [Unresolved(rel, imp.line, text, dotted(parts), None, homes)]
    bound = release.names(parts)
    out = []
    for name in names:
        if (*parts, name) in release.modules or bound is None or name in bound:
            continue
        out.append(Unresolved(rel, imp.line, text, dotted(parts), name, name_homes(name, release)))
    return out


def module_homes(parts: Parts, names: tuple[str, ...], release: Release) -> tuple[str, ...]:
    """Where a module that is gone lives now: the modules ending in the most of its last
    components (`attention.fla.fused_recurrent`), those binding the names imported from it
    first; with none of its last name, the modules that define the first name."""
    best: list[Parts] = []
    depth = 0
    for mod in release.modules:
        k = _common_tail(mod, parts)
        if k and k > depth:
            best, depth = [mod], k
        elif k and k == depth:
            best.append(mod)
    if not best:
        return name_homes(names[0], release) if names else ()

    def binds_all(mod: Parts) -> bool:
        have = release.names(mod)
        return have is None or all(n in have or (*mod, n) in release.modules for n in names)

    ranked = sorted(best, key=lambda m: (not binds_all(m), m))
    return tuple(dotted(m) for m in ranked[:HOMES])


def _common_tail(a: Parts, b: Parts) -> int:
    k = 0
    while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k]:
        k += 1
    return k


def name_homes(name: str, release: Release) -> tuple[str, ...]:
    """Modules that bind `name` at their top level by a def, class or assignment (found by
    bytes first, then read with Python's parser)."""
    needle = re.compile(
        rb"^(?:(?:async\s+)?def|class)\s+" + re.escape(name.encode()) + rb"\b|^"
        + re.escape(name.encode()) + rb"\s*[:=]",
        re.M,
    )  # fmt: skip
    out = []
    for rel, data in release.sources():
        if needle.search(data) and name in (top_names(data) or ()):
            out.append(_module_of(rel))
    return tuple(dotted(m) for m in sorted(out)[:HOMES])


def _module_of(rel: str) -> Parts:
    parts = rel[: -len(".py")].split("/")
    return tuple(parts[:-1]) if parts[-1] == "__init__" else tuple(parts)


def release_of(paths: Collection[str], files: Mapping[str, bytes]) -> Release:
    """A release held wholly in memory (tests, small trees): its listing and its bytes."""
    return Release(frozenset(paths), files.get, lambda: files)
