"""Python statements as the "already there" rule reads them (docs/engine.md, "Already there").

A statement is known by where it stands (its enclosing def/class names, outermost first), its
kind and its identity: the assignment's target, the call's target, the def's or class's name,
the import's module, a compound statement's header. Two statements are counterparts when all
three agree; a counterpart "reads as" another when their code is the same, whitespace and
comments aside (their ASTs, positions left out). Pure, no I/O.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_KINDS = {
    "Assign": "assignment", "AnnAssign": "assignment", "AugAssign": "assignment",
    "FunctionDef": "def", "AsyncFunctionDef": "def", "ClassDef": "class",
    "Import": "import", "ImportFrom": "import", "Expr": "expression", "Return": "return",
}  # fmt: skip


@dataclass(frozen=True)
class Stmt:
    """One statement of a parsed file: its kind and identity, where it stands, its lines
    (1-based, decorators included) and its node."""

    kind: str
    identity: str
    scope: tuple[str, ...]
    start: int
    end: int
    node: ast.stmt

    @property
    def where(self) -> str:
        return ".".join(self.scope) or "module level"

    def describe(self) -> str:
        """`the assignment self.topk in Qwen.__init__` (what a drop names)."""
        what = f"{self.kind} {self.identity}" if self.identity else self.kind
        return f"the {what} in {self.where}"

    def key(self) -> tuple[tuple[str, ...], str, str]:
        return (self.scope, self.kind, self.identity)

    def code(self, header_only: bool = False) -> str:
        """The statement's code, whitespace and comments aside; `header_only`: without the
        statements of its bodies (a compound statement whose header alone changed)."""
        node = self.node
        if header_only:
            node = copy.copy(node)
            for name in _BODIES:
                if hasattr(node, name):
                    setattr(node, name, [])
        return ast.dump(node)

    def body_start(self) -> int:
        """The first line of the first statement of its bodies (end + 1 if none)."""
        firsts = [
            s.lineno for name in _BODIES for s in getattr(self.node, name, None) or []
            if isinstance(s, ast.stmt)
        ]  # fmt: skip
        return min(firsts) if firsts else self.end + 1


def _identity(node: ast.stmt) -> str:
    if isinstance(node, _DEFS):
        return node.name
    if isinstance(node, ast.Assign):
        return ", ".join(ast.unparse(t) for t in node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return ast.unparse(node.target)
    if isinstance(node, ast.ImportFrom):
        return "." * node.level + (node.module or "")
    if isinstance(node, ast.Import):
        return ", ".join(a.name for a in node.names)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return ast.unparse(node.value.func)
    if isinstance(node, (ast.If, ast.While)):
        return ast.unparse(node.test)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return f"{ast.unparse(node.target)} in {ast.unparse(node.iter)}"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return ", ".join(ast.unparse(i.context_expr) for i in node.items)
    return ""


def _kind(node: ast.stmt) -> str:
    name = type(node).__name__
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return "call"
    return _KINDS.get(name, name.lower())


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def walk(tree: ast.Module) -> Iterator[tuple[Stmt, int]]:
    """Every statement of `tree` with its depth (0 at module level, +1 per enclosing
    statement), outer statements before the ones they hold."""

    def visit(body, scope: tuple[str, ...], depth: int) -> Iterator[tuple[Stmt, int]]:
        for node in body:
            if not isinstance(node, ast.stmt):
                continue
            end = node.end_lineno or node.lineno
            yield Stmt(_kind(node), _identity(node), scope, _start(node), end, node), depth
            inner = (*scope, node.name) if isinstance(node, _DEFS) else scope
            for name in _BODIES:
                children = getattr(node, name, None) or []
                for child in children:
                    if isinstance(child, ast.stmt):
                        yield from visit([child], inner, depth + 1)
                    else:  # an except handler or a match case: its own body
                        yield from visit(getattr(child, "body", []), inner, depth + 1)

    yield from visit(tree.body, (), 0)


@dataclass(frozen=True)
class Index:
    """A file's statements, and how many def/class blocks stand at each name path."""

    stmts: tuple[tuple[Stmt, int], ...]
    scopes: dict[tuple[str, ...], int]

    def holding(self, line: int) -> list[Stmt]:
        """The statements whose lines hold `line`, outermost first."""
        return [s for s, _d in self.stmts if s.start <= line <= s.end]

    def counterparts(self, stmt: Stmt) -> list[Stmt]:
        """The statements of this file with `stmt`'s place, kind and identity, in order."""
        return [s for s, _d in self.stmts if s.key() == stmt.key()]


def index(text: str) -> Index | None:
    """The statements of `text`; None when it is not Python (it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    stmts = tuple(walk(tree))
    scopes: dict[tuple[str, ...], int] = {}
    for s, _d in stmts:
        if isinstance(s.node, _DEFS):
            path = (*s.scope, s.identity)
            scopes[path] = scopes.get(path, 0) + 1
    return Index(stmts, scopes)


__all__ = ["Index", "Stmt", "index", "walk"]
