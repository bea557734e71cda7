"""The fold of a name defined twice in one body: behaviour kept, the dead copy gone.

Python binds a def/class name again at each definition in one body, so of two copies the later
one is what runs and the earlier one is dead code. Advice must never change what runs, so the
fold keeps the running definition and puts it where the earlier one stood (the earlier place is
usually upstream's, where a reader and the next release look for it):

- the copies are the same code (ast, positions and comments aside): the later copy goes, and
  the earlier one stays byte for byte;
- different code: the earlier definition's lines are replaced by the later one's (its
  decorators and the comment lines right above it travel with it), and the later one goes.

A removed copy takes the blank lines that separated it from the statement before it, so the
spacing of the body stays as it was. Pure text in, text out, no I/O (`fold`); `placement.pydefs`
says which names are defined twice (allowed repeats such as property setters are not folded).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sgpatch.placement.pydefs import Node, defined_twice, parsed

Key = tuple[str, str]  # (dotted scope of the body, "" = module level; the name)


@dataclass(frozen=True)
class Fold:
    """One name folded: where its copies were (1-based lines of the input) and what was kept."""

    scope: str
    name: str
    kept_at: int  # the earlier definition's line: its place is kept
    runs_from: int  # the later definition's line: the code Python runs, kept
    same: bool  # the copies were the same code: the later one was only dropped

    def describe(self) -> str:
        where = f"in {self.scope}" if self.scope else "at module level"
        if self.same:
            return (
                f"{self.name} {where}: the copies at lines {self.kept_at} and "
                f"{self.runs_from} are the same code; the one at {self.runs_from} removed"
            )
        return (
            f"{self.name} {where}: the definition Python runs (line {self.runs_from}) "
            f"replaces the one at line {self.kept_at}, in its place; the dead copy removed"
        )


@dataclass(frozen=True)
class Folded:
    """A text with its duplicates folded, and each fold made (none: the text unchanged)."""

    text: str
    folds: tuple[Fold, ...]


def fold(text: str, keys: Collection[Key] | None = None) -> Folded:
    """Fold every name `text` defines twice in one body (only `keys`, when given); lines in
    the folds are the input's. A text that does not parse is returned as it is. Copies
    nested in another folded copy go with it (they are inside code that is removed or
    moved whole)."""
    try:
        dups = defined_twice(text, None)
    except (SyntaxError, ValueError):
        return Folded(text, ())
    tree = parsed(text).tree
    assert tree is not None  # defined_twice parsed it
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []
    folds: list[Fold] = []
    for twice in dups:
        if keys is not None and (twice.scope, twice.name) not in keys:
            continue
        nodes = _copies(tree, twice.scope, twice.name)
        if len(nodes) < 2:
            continue
        mine, done = _edits(lines, nodes, twice.scope)
        if any(a < d and c < b for a, b, _ in mine for c, d, _ in edits):
            continue  # inside a copy folded already
        edits += mine
        folds.append(done)
    for a, b, new in sorted(edits, key=lambda e: e[0], reverse=True):
        lines[a:b] = new
    return Folded("".join(lines), tuple(folds))


def _copies(tree: ast.Module, scope: str, name: str) -> list[Node]:
    """The definitions of `name` directly in one body of `scope` (its if/try branches apart),
    in file order: the first body that holds two or more."""
    from sgpatch.placement.pydefs import _allowed_twice

    body: Sequence[ast.stmt] = tree.body
    for part in scope.split(".") if scope else ():
        node = next((s for s in _walk_defs(body) if s.name == part), None)
        if node is None:
            return []
        body = node.body
    for block in _blocks(body):
        found = [s for s in block if isinstance(s, _DEFS) and s.name == name]
        found = [s for s in found if not _allowed_twice(s)]
        if len(found) >= 2:
            return found
    return []


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _blocks(body: Sequence[ast.stmt]):
    """A body and every branch body inside it that is not a def/class of its own."""
    yield body
    for stmt in body:
        if isinstance(stmt, _DEFS):
            continue
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(stmt, field, None)
            if isinstance(sub, list) and sub:
                yield from _blocks(sub)
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _blocks(handler.body)


def _walk_defs(body: Sequence[ast.stmt]):
    for block in _blocks(body):
        yield from (s for s in block if isinstance(s, _DEFS))


def _edits(
    lines: list[str], nodes: list[Node], scope: str
) -> tuple[list[tuple[int, int, list[str]]], Fold]:
    """The edits (0-based [start, end) -> new lines) that put the later copy's code in the
    first copy's place and remove every later copy."""
    first, last = nodes[0], nodes[-1]
    same = ast.dump(first) == ast.dump(last)
    edits: list[tuple[int, int, list[str]]] = []
    for node in nodes[1:]:
        a, b = _span(lines, node)
        edits.append((_blank_above(lines, a), b, []))
    if not same:
        a, b = _span(lines, first, comments=False)  # the earlier copy's comments stay
        la, lb = _span(lines, last)
        edits.append((a, b, _reindent(lines[la:lb], _indent(lines[first.lineno - 1]),
                                      _indent(lines[last.lineno - 1]))))  # fmt: skip
    return edits, Fold(scope, first.name, first.lineno, last.lineno, same)


def _span(lines: list[str], node: Node, comments: bool = True) -> tuple[int, int]:
    """0-based [start, end) of a definition: its decorators, and (`comments`) the comment
    lines right above them at the same indentation (they belong to it)."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    end = node.end_lineno or node.lineno
    indent = _indent(lines[node.lineno - 1])
    while comments and start > 0 and lines[start - 1].lstrip().startswith("#"):
        if _indent(lines[start - 1]) != indent:
            break
        start -= 1
    return start, end


def _blank_above(lines: list[str], start: int) -> int:
    """`start`, moved up over the blank lines above it (the separator a removed copy takes)."""
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    return start


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(block: list[str], want: str, have: str) -> list[str]:
    if want == have:
        return list(block)
    return [want + ln[len(have) :] if ln.startswith(have) else ln for ln in block]


__all__ = ["Fold", "Folded", "fold"]
