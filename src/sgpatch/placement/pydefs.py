"""Names a Python file defines twice in one body where the file it was made from did not.

The classic fuzz trap: a patch's method added a second time inside a class upstream already
extended with the same method. The file still compiles and the second definition silently wins.
One rule, shared by the engine (every placement, every fuzz level) and by port (every merged
file): a def/class name defined more often in one body than the target's same body defined it
is a problem, named with both places. if/else and try/except branches are bodies of their own
(`if X: def f` / `else: def f` is no duplicate); property setters, overloads and singledispatch
registrations may repeat a name. Pure, no I/O.

A file is parsed once per content (`parsed`, `_defs_of`): the engine asks about the same target
for every placement and release (matrix: the same bytes in most releases), and `placement.scope`
reads its def/class blocks from the same parse.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ALLOWED_TWICE = re.compile(r"\.(setter|getter|deleter|register)$|^(typing\.)?overload$")
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")

Node = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
Key = tuple[str, str]  # (dotted scope of the body, "" = module level; the name)
Span = tuple[int, int]  # a definition's 1-based (keyword line, last line)


@dataclass(frozen=True)
class Parsed:
    """One `ast.parse` of a text: the tree, or why it does not parse (the error's type, line
    and message, to raise again as it was)."""

    tree: ast.Module | None
    error: type[Exception] | None = None
    line: int | None = None
    msg: str = ""

    def raise_error(self) -> None:
        """Raise the parse's SyntaxError/ValueError again (a fresh one, same line and text)."""
        if self.error is SyntaxError or (self.error and issubclass(self.error, SyntaxError)):
            raise SyntaxError(self.msg, ("<unknown>", self.line, None, None))
        raise ValueError(self.msg)


@functools.lru_cache(maxsize=2)
def parsed(text: str | bytes) -> Parsed:
    """`ast.parse(text)`, kept for the next caller asking about the same content (a tree of a
    big file is tens of MB: only the last two are kept; what callers derive is cached apart)."""
    try:
        return Parsed(ast.parse(text))
    except SyntaxError as e:
        return Parsed(None, SyntaxError, e.lineno, str(e.msg))
    except ValueError as e:
        return Parsed(None, ValueError, None, str(e))


@dataclass(frozen=True)
class _Defs:
    """What the rule reads of one parsed file: every definition per (scope, name), how many
    more times than once a body defines it, and the kind of each scope that repeats one."""

    spans: dict[Key, tuple[Span, ...]]
    excess: dict[Key, int]
    kinds: dict[str, str]
    codes: dict[Key, tuple[str, ...]]  # per repeated name: each definition's code (ast.dump)


@functools.lru_cache(maxsize=128)
def _defs_of(text: str | bytes) -> _Defs | None:
    """The file's definitions by content (None: it does not parse)."""
    tree = parsed(text).tree
    if tree is None:
        return None
    defs, excess = _scan(tree)
    spans = {k: tuple((n.lineno, n.end_lineno or n.lineno) for n in v) for k, v in defs.items()}
    kinds = {scope: _kind_of(tree, scope) for scope, _name in excess}
    codes = {k: tuple(ast.dump(n) for n in defs[k]) for k in excess}
    return _Defs(spans, dict(excess), kinds, codes)


def _defs_or_raise(text: str | bytes) -> _Defs:
    found = _defs_of(text)
    if found is None:
        parsed(text).raise_error()
        raise SyntaxError("does not parse")  # not reached: raise_error raises
    return found


@dataclass(frozen=True)
class Twice:
    """One name defined in one scope's body more often than in the target's.

    `lines` are 1-based lines of the new file (the `def`/`class` keyword's line) of every
    definition of `name` there; `added` are those that are not in the target; `existing` are
    the 1-based lines in the target of the definitions it already had."""

    scope: str  # dotted path of the enclosing class/def ("" = module level)
    kind: str  # "class" or "def" of the enclosing scope ("" at module level)
    name: str
    lines: tuple[int, ...]
    added: tuple[int, ...]
    existing: tuple[int, ...]
    same: bool = False  # every copy is the same code (ast, positions aside)

    @property
    def runs(self) -> int:
        """The line of the copy Python runs: one body binds the name again at each
        definition, so the last one in the file wins."""
        return max(self.lines)

    @property
    def where(self) -> str:
        """'class EAGLEWorker' or 'module level', for messages."""
        return f"{self.kind} {self.scope.rsplit('.', 1)[-1]}" if self.scope else "module level"

    def describe(self, target: str = "the target") -> str:
        """'update_weights_from_tensor is defined twice in class EAGLEWorker: line 1041
        (added) and line 1019 (already in the target at line 1019)'."""
        kept = [n for n in self.lines if n not in self.added]
        parts = [f"line {n} (added)" for n in self.added]
        for n, old in zip(kept, self.existing, strict=False):
            parts.append(f"line {n} (already in {target} at line {old})")
        count = "twice" if len(self.lines) == 2 else f"{len(self.lines)} times"
        return f"{self.name} is defined {count} in {self.where}: {' and '.join(parts)}"

    def warning(self, target: str = "the target") -> str:
        """The one warning line for a duplicate the author's own patch makes: both places,
        the copy Python runs, whether the copies are the same code."""
        whose = "the added copy" if self.runs in self.added else f"the copy {target} had"
        code = "the same code" if self.same else "different code"
        return (
            f"{self.describe(target)}; Python runs line {self.runs} ({whose}); the copies are "
            f"{code}"
        )


def defined_names(lines: Iterable[str]) -> set[str]:
    """Names on def/class lines (a cheap text scan: the engine's trigger for the full check)."""
    return {m.group(1) for ln in lines if (m := _DEF_LINE.match(ln))}


def parses(text: str | bytes) -> bool:
    """Does Python parse it (is it a Python file this rule can read)?"""
    return _defs_of(text) is not None


def defined_twice(
    new: str | bytes, target: str | bytes | None, added: Collection[int] | None = None
) -> tuple[Twice, ...]:
    """Every name `new` defines more often in one body than `target` did, with both places.

    `added` (1-based lines of `new` that are not in the target, when the caller knows them, as
    the engine does) says which definitions are new; without it, a definition whose text is
    the same as one of the target's in that scope counts as already there. Raises SyntaxError
    or ValueError when `new` does not parse; a target that does not parse counts as empty."""
    new_defs = _defs_or_raise(new)
    if not new_defs.excess:
        return ()  # nothing repeated: the target need not be parsed (half the cost in port)
    old = _defs_of(target) if target is not None else None
    old_spans, old_excess = (old.spans, old.excess) if old is not None else ({}, {})
    out = []
    for key in sorted(new_defs.excess):
        if new_defs.excess[key] <= old_excess.get(key, 0):
            continue
        spans = new_defs.spans[key]
        olds = old_spans.get(key, ())
        if added is not None:
            fresh = [n for n in spans if n[0] in added]
        else:
            fresh = _unmatched(spans, _text(new), olds, _text(target) if target else "")
        out.append(
            Twice(
                scope=key[0],
                kind=new_defs.kinds[key[0]],
                name=key[1],
                lines=tuple(n[0] for n in spans),
                added=tuple(n[0] for n in fresh),
                existing=tuple(n[0] for n in olds),
                same=len(set(new_defs.codes[key])) == 1,
            )
        )
    return tuple(out)


def _scan(tree: ast.Module) -> tuple[dict[Key, list[Node]], dict[Key, int]]:
    """Per (scope, name): every definition of it in that scope, and how many more times than
    once a single body defines it (allowed repeats aside; only names some body repeats)."""
    defs: dict[Key, list[Node]] = defaultdict(list)
    excess: dict[Key, int] = defaultdict(int)

    def walk(body: Sequence[ast.stmt], scope: str) -> None:
        named: dict[str, list[Node]] = defaultdict(list)
        for stmt in body:
            if isinstance(stmt, _DEFS):
                named[stmt.name].append(stmt)
                defs[(scope, stmt.name)].append(stmt)
                walk(stmt.body, f"{scope}.{stmt.name}" if scope else stmt.name)
                continue
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list) and sub:
                    walk(sub, scope)
            for handler in getattr(stmt, "handlers", None) or []:
                walk(handler.body, scope)
            for case in getattr(stmt, "cases", None) or []:
                walk(case.body, scope)
        for name, nodes in named.items():
            n = len(nodes) - sum(1 for node in nodes if _allowed_twice(node))
            if n > 1:
                excess[(scope, name)] += n - 1

    walk(tree.body, "")
    return defs, excess


def _allowed_twice(node: Node) -> bool:
    """A property setter/getter/deleter, an @overload or a singledispatch registration."""
    return any(_ALLOWED_TWICE.search(ast.unparse(d)) for d in node.decorator_list)


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "surrogateescape")
    return data or ""


def _segment(lines: Sequence[str], span: Span) -> tuple[str, ...]:
    """The definition's lines (keyword line to its end), trailing blanks dropped, so two
    copies of one method compare equal wherever they sit."""
    return tuple(ln.rstrip() for ln in lines[span[0] - 1 : span[1]])


def _unmatched(
    nodes: Sequence[Span], new_text: str, olds: Sequence[Span], old_text: str
) -> list[Span]:
    """The definitions in `nodes` with no same-text partner among the target's `olds` (each
    partner used once); when every one has a partner, the last ones (the extra copies)."""
    new_lines, old_lines = new_text.splitlines(), old_text.splitlines()
    pool = [_segment(old_lines, o) for o in olds]
    fresh = []
    for node in nodes:
        seg = _segment(new_lines, node)
        if seg in pool:
            pool.remove(seg)
        else:
            fresh.append(node)
    extra = len(nodes) - len(olds)
    return fresh if fresh else list(nodes[len(nodes) - max(extra, 1) :])


def _kind_of(tree: ast.Module, scope: str) -> str:
    """'class' or 'def' for a dotted scope path ("" = module level)."""
    if not scope:
        return ""
    body: Sequence[ast.stmt] = tree.body
    kind = ""
    for part in scope.split("."):
        node = next((s for s in _all_defs(body) if s.name == part), None)
        if node is None:
            return kind or "def"
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        body = node.body
    return kind


def _all_defs(body: Sequence[ast.stmt]) -> Iterable[Node]:
    """The definitions of one body, those inside its if/try/with/for branches included."""
    for stmt in body:
        if isinstance(stmt, _DEFS):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(stmt, field, None)
            if isinstance(sub, list):
                yield from _all_defs(sub)
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _all_defs(handler.body)


__all__ = ["Parsed", "Twice", "defined_names", "defined_twice", "parsed", "parses"]
