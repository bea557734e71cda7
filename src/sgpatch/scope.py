"""Python def/class blocks of a file, for the hunk header's scope (`@@ ... @@ class Name(`).

Pure functions over a file's lines, no I/O. Blocks come from Python's own tokenizer, so a
signature over several lines (`class Scheduler(\n    Mixin,\n):`, black style), decorators,
nested classes, `async def` and brackets or `def` inside strings are all read as Python reads
them. A file the tokenizer cannot read to the end (not Python, or broken) keeps the blocks it
read before the problem; the engine then falls back to the nearest-line rule."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One def or class: 0-based lines, `end` exclusive (last body line + 1)."""

    name: str
    kind: str  # "def" or "class"
    start: int  # first line, decorators included
    line: int  # the line with the `def`/`class` keyword (what git's funcname shows)
    end: int
    depth: int  # nesting level (0 = module level)


def blocks(lines: Sequence[str]) -> tuple[Block, ...]:
    """Every def/class block of a Python file, in order of their start."""
    out: list[Block] = []
    stack: list[tuple[str, str, int, int, int]] = []  # open blocks: name, kind, start, line, depth
    pending: tuple[str, str, int, int] | None = None  # header read, body not yet opened
    deco: int | None = None  # first decorator line of the statement being read
    first = True  # next token starts a logical line
    level = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            row = tok.start[0] - 1
            if tok.type == tokenize.INDENT:
                level += 1
                if pending is not None:
                    stack.append((*pending, level))
                    pending = None
                continue
            if tok.type == tokenize.DEDENT:
                level -= 1
                while stack and stack[-1][4] > level:
                    name, kind, start, line, depth = stack.pop()
                    out.append(Block(name, kind, start, line, row, depth - 1))
                continue
            if tok.type in (tokenize.NL, tokenize.COMMENT):
                continue
            if tok.type == tokenize.NEWLINE:
                first = True
                continue
            if first:
                first = False
                if pending is not None:  # `def f(): pass` on one line: no body block
                    out.append(Block(*pending, row, level))
                    pending = None
                if tok.string == "@":
                    deco = row if deco is None else deco
                    continue
                if tok.string in ("def", "class", "async"):
                    pending = ("?", tok.string, row if deco is None else deco, row)
                deco = None
                continue
            if pending is not None and pending[0] == "?" and tok.type == tokenize.NAME:
                if tok.string in ("def", "class"):
                    pending = ("?", tok.string, pending[2], pending[3])
                elif pending[1] in ("def", "class"):
                    pending = (tok.string, pending[1], pending[2], pending[3])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    n = len(lines)
    out += [
        Block(name, kind, start, line, n, depth - 1) for name, kind, start, line, depth in stack
    ]
    return tuple(sorted((b for b in out if b.name != "?"), key=lambda b: (b.start, b.depth)))


def enclosing(found: Sequence[Block], pos: int) -> list[Block]:
    """Blocks that contain line `pos` (signature and decorators count), innermost first."""
    return sorted((b for b in found if b.start <= pos < b.end), key=lambda b: -b.depth)


def header_above(found: Sequence[Block], pos: int) -> Block | None:
    """The nearest def/class line above `pos`: what git's Python funcname shows for a hunk
    starting there."""
    above = [b for b in found if b.line < pos]
    return max(above, key=lambda b: b.line) if above else None


def describe(found: Sequence[Block], pos: int) -> str:
    """'class Scheduler, def run_batch' or 'module level': where a line is, for messages."""
    chain = list(reversed(enclosing(found, pos)))
    return ", ".join(f"{b.kind} {b.name}" for b in chain) or "module level"
