"""Python def/class blocks of a file, for the hunk header's scope (`@@ ... @@ class Name(`).

Pure functions over a file's lines, no I/O. Blocks come from Python's own tokenizer, so a
signature over several lines (`class Scheduler(\n    Mixin,\n):`, black style), decorators,
nested classes, `async def` and brackets or `def` inside strings are all read as Python reads
them. A file the tokenizer cannot read to the end (not Python, or broken) keeps the blocks it
read before the problem; the engine then falls back to the nearest-line rule."""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

from sgpatch.diff.unified import Hunk, strip_eol
from sgpatch.placement.match import LineIndex, Place, context_edges, side_len, start

_SCOPE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")
_FUNCNAME_DEFAULT = re.compile(r"^[A-Za-z_$]")


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
    return _read_blocks(lines)[0]


def _read_blocks(lines: Sequence[str]) -> tuple[tuple[Block, ...], int]:
    """The blocks, and the line the tokenizer read up to (len(lines): the whole file)."""
    return _blocks_of("".join(lines), len(lines))


@functools.lru_cache(maxsize=128)
def _blocks_of(text: str, n: int) -> tuple[tuple[Block, ...], int]:
    """`_read_blocks` by content: most files are the same bytes in every release and for every
    hunk of a file, and matrix, lint and port ask for the same file's scopes again and again
    (tokenizing was a third of a matrix run). Blocks are frozen, so sharing them is safe. A
    file that parses is read from its syntax tree (the parse `_parses_to` and the defined-twice
    rule need anyway; the same blocks, several times faster than the tokenizer); one that does
    not, or whose indentation the tree's columns cannot tell (tabs, form feeds, CR), from
    the tokenizer, up to the point it reads."""
    from sgpatch.placement.pydefs import parsed

    tree = parsed(_tokenizable(text)).tree
    if tree is not None and not any(c in text for c in _NOT_PLAIN):
        return _tree_blocks(tree, text.split("\n"), n), n
    return _token_blocks(text, n)


_NOT_PLAIN = ("\t", "\r", "\x0c")


def _token_blocks(text: str, n: int) -> tuple[tuple[Block, ...], int]:
    """The blocks as Python's tokenizer reads them, and the row it read up to."""
    read_to = n
    row = 0
    out: list[Block] = []
    stack: list[tuple[str, str, int, int, int]] = []  # open blocks: name, kind, start, line, depth
    pending: tuple[str, str, int, int] | None = None  # header read, body not yet opened
    deco: int | None = None  # first decorator line of the statement being read
    first = True  # next token starts a logical line
    begun = 0  # row of the first token of the logical line being read
    level = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(_tokenizable(text)).readline):
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
                begun = row
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
    except (tokenize.TokenError, IndentationError, SyntaxError, UnicodeError):
        # scopes are unknown from the statement the tokenizer could not finish: a stray line
        # inside an open bracket or a triple quote swallows every def/class below it unseen
        read_to = row if first else min(row, begun)
    out += [
        Block(name, kind, start, line, n, depth - 1) for name, kind, start, line, depth in stack
    ]
    found = tuple(sorted((b for b in out if b.name != "?"), key=lambda b: (b.start, b.depth)))
    return found, read_to


def _parses_to(lines: Sequence[str]) -> int:
    """The 0-based line Python's parser stops at (len(lines) when the file parses): the
    tokenizer alone accepts an indented block after a module-level line, the parser does not."""
    return _parses_to_text("".join(lines), len(lines))


@functools.lru_cache(maxsize=128)
def _parses_to_text(text: str, n: int) -> int:
    """`_parses_to` by content (the same file is parsed again for every hunk and release)."""
    from sgpatch.placement.pydefs import parsed

    got = parsed(_tokenizable(text))
    if got.tree is not None:
        return n
    return max((got.line or 1) - 1, 0) if got.error is SyntaxError else 0


def _tree_blocks(tree, rows: list[str], n: int) -> tuple[Block, ...]:
    """The tokenizer's blocks, from a parsed file's tree: a block ends at the row of the
    first token after its body (the DEDENT's: blank and comment lines below it included; `n`
    at the end of the file), and its depth is the number of indented bodies around its header.
    A one-line `def f(): pass` has no body of its own and the tokenizer gives it the row and
    the depth of the next line's token; so does this."""
    import ast
    from bisect import bisect_right

    code = [i for i, r in enumerate(rows) if (t := r.lstrip()) and not t.startswith("#")]
    out: list[Block] = []

    def after(last: int) -> tuple[int, int]:  # (row, indent) of the first token below row `last`
        i = bisect_right(code, last)
        if i == len(code):
            return n, 0
        row = rows[code[i]]
        return code[i], len(row) - len(row.lstrip(" "))

    def walk(body: Sequence[ast.stmt], cols: tuple[int, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(_tree_block(stmt, rows, cols, after))
            for sub, opens in _bodies(stmt, rows):
                walk(sub, cols + opens)

    walk(tree.body, ())
    return tuple(sorted(out, key=lambda b: (b.start, b.depth)))


def _tree_block(stmt, rows: list[str], cols: tuple[int, ...], after) -> Block:
    """One def/class of the tree as the tokenizer reads it (`cols`: the columns of the
    indented bodies around it, outermost first)."""
    kind = "class" if stmt.__class__.__name__ == "ClassDef" else "def"
    line = stmt.lineno - 1
    start = min([line, *(d.lineno - 1 for d in stmt.decorator_list)])
    first = stmt.body[0]
    lead = rows[first.lineno - 1].encode("utf-8", "surrogatepass")[: first.col_offset]
    end, indent = after((stmt.end_lineno or stmt.lineno) - 1)
    if lead.strip():  # the body is on the header's line: no INDENT, no DEDENT
        return Block(stmt.name, kind, start, line, end, sum(1 for c in cols if c <= indent))
    return Block(stmt.name, kind, start, line, end, len(cols))


def _bodies(stmt, rows: list[str]):
    """The statement lists inside `stmt`, each with the columns of the indented bodies it
    opens (an `elif`'s If sits in the `orelse` of the one above at the same level: none; a
    `case` body: the `case` line's and its own)."""
    for field in ("body", "orelse", "finalbody"):
        sub = getattr(stmt, field, None)
        if isinstance(sub, list) and sub:
            elif_ = field == "orelse" and _is_elif(sub, rows)
            yield sub, () if elif_ else (sub[0].col_offset,)
    for handler in getattr(stmt, "handlers", None) or []:
        yield handler.body, (handler.body[0].col_offset,)
    for case in getattr(stmt, "cases", None) or []:
        head = rows[case.pattern.lineno - 1]
        yield case.body, (len(head) - len(head.lstrip(" ")), case.body[0].col_offset)


def _is_elif(orelse: list, rows: list[str]) -> bool:
    first = orelse[0]
    return (
        len(orelse) == 1
        and first.__class__.__name__ == "If"
        and rows[first.lineno - 1].lstrip().startswith("elif")
    )


def _tokenizable(text: str) -> str:
    """`text` with the lone surrogates of undecodable bytes made U+FFFD: Python 3.12's tokenizer
    encodes its input as UTF-8 and refuses them. Only rows are read, and rows stay the same."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


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


def blocks_of(idx: LineIndex) -> tuple[Block, ...]:
    """The blocks of an indexed file, tokenized once per file (cached on the index)."""
    found = idx.cache.get("blocks")
    if found is None:
        found, read_to = _read_blocks(idx.lines)
        idx.cache["blocks_read_to"] = min(read_to, _parses_to(idx.lines))
        idx.cache["blocks"] = found
    return found  # type: ignore[return-value]


# ------------------------------------------------------------------ the hunk header's scope


def _enclosing_by_indent(lines: Sequence[str], pos: int, indent: int) -> list[str]:
    """Names of the def/class blocks enclosing a line at `pos` indented by `indent` (innermost
    first), then the nearest def/class above it (what git's Python funcname would show)."""
    names: list[str] = []
    nearest: str | None = None
    for j in range(min(pos, len(lines)) - 1, -1, -1):
        text = strip_eol(lines[j])
        if not text.strip():
            continue
        m = _SCOPE.match(text)
        if m and nearest is None:
            nearest = m.group(1)
        ind = _indent(text)
        if ind < indent:
            if m:
                names.append(m.group(1))
            indent = ind
        if indent == 0 and nearest is not None:
            break
    if nearest is not None:
        names.append(nearest)
    return names


def _funcname_above(lines: Sequence[str], pos: int) -> str | None:
    """git's default funcname: the nearest line above `pos` starting with a letter, _ or $."""
    for j in range(min(pos, len(lines)) - 1, -1, -1):
        text = strip_eol(lines[j])
        if _FUNCNAME_DEFAULT.match(text):
            return text.strip()
    return None


def _funcname_is(header: str, lines: Sequence[str], pos: int) -> bool:
    """Is the header git's default funcname of a hunk at `pos`: the line above, as git writes
    it (cut to 80 bytes, trailing blanks dropped), or whole (a diff tool that does not cut)."""
    above = _funcname_above(lines, pos)
    if above is None:
        return False
    cut = above.encode("utf-8", "surrogatepass")[:80].decode("utf-8", "ignore").rstrip()
    return header.strip() in (above, cut)


def _indent(line: str) -> int:
    text = strip_eol(line).expandtabs(8)
    return len(text) - len(text.lstrip())


def _scope_name(hunk: Hunk) -> str | None:
    m = re.search(r"(?:^|\s)(?:def|class)\s+(\w+)", hunk.section_header)
    return m.group(1) if m else None


def _first_change(hunk: Hunk, place: Place) -> int:
    """0-based line in the input of the hunk's first changed line (or insertion point)."""
    lead_ctx, _ = context_edges(hunk)
    return place.pos + lead_ctx - place.lead


def known(idx: LineIndex, place: Place) -> bool:
    """Can the scope of a place be read (the tokenizer read the file past it)? A file that is
    not Python to its end (a stray indented copy, a syntax error) has blocks only above the
    line the tokenizer stopped at."""
    blocks_of(idx)
    return place.pos < idx.cache["blocks_read_to"]  # type: ignore[operator]


def in_scope(hunk: Hunk, idx: LineIndex, place: Place) -> bool:
    """Does the candidate sit where the hunk header says it should? Its first changed line or
    its first matched line inside the def/class the header names (read with Python's
    tokenizer: multi-line signatures, decorators, nesting, async), or right below that header
    line, as git's funcname would show it."""
    header = hunk.section_header
    if not header:
        return False
    name = _scope_name(hunk)
    lines = idx.lines
    if not name:
        return _funcname_is(header, lines, start(place))
    found = blocks_of(idx)
    if not known(idx, place) and _funcname_is(header, lines, start(place)):
        return True  # the tokenizer stopped early: git's own funcname there is the header
    if not found:  # not Python (or unreadable): the indentation heuristic
        changed = [ln.text for ln in hunk.lines if ln.kind != " " and ln.text.strip()]
        indent = _indent(changed[0]) if changed else 0
        return name in _enclosing_by_indent(lines, _first_change(hunk, place), indent)
    if any(b.name == name for b in enclosing(found, _first_change(hunk, place))):
        return True
    if any(b.name == name for b in enclosing(found, place.pos)):
        return True  # its first matched line is inside the named block (a change just after it)
    above = header_above(found, start(place))
    return above is not None and above.name == name


def inside(hunk: Hunk, idx: LineIndex, place: Place) -> bool:
    """Is the candidate inside the def/class the header names: its first changed line or its
    first non-blank matched line within that block, as Python reads the file (a blank line
    after a class may count as the class's)? Stricter than `in_scope`:
    the nearest def/class line above (git's funcname) does not count, since a look-alike's own
    `def` line above the original changes what is "above" it. A header that names no def/class,
    or a file with no blocks read, holds nothing."""
    name = _scope_name(hunk)
    found = blocks_of(idx) if name else ()
    if not found:
        return False
    n = side_len(hunk, place.new_side, place.lead, place.trail)
    first = next((p for p in range(place.pos, place.pos + n) if idx.lines[p].strip()), None)
    rows = [_first_change(hunk, place)] + ([first] if first is not None else [])
    return any(b.name == name for row in rows for b in enclosing(found, row))


def outside(hunk: Hunk, idx: LineIndex, place: Place) -> str:
    """'outside scope' naming both: where the candidate is, and what the header names."""
    found = blocks_of(idx)
    where = describe(found, _first_change(hunk, place)) if found else "another scope"
    at = start(place) + 1
    return (
        f"outside scope: the match at line {at} is in {where}, but the hunk header names "
        f"'{hunk.section_header}'"
    )


def body_of(idx: LineIndex, pos: int, indent: int) -> tuple[int, int, str]:
    """The body a line indented by `indent` put before input line `pos` belongs to, as
    (start, end, 'class Name'): the innermost def/class around the line it follows (`pos` - 1:
    a method added before the next `def` belongs to the class, not to that def) whose keyword
    line is indented less; else the whole file ('module level', or 'the file' when it is not
    Python)."""
    found = blocks_of(idx)
    if pos > idx.cache["blocks_read_to"]:  # type: ignore[operator]
        walked = _body_by_indent(idx.lines, pos, indent)
        if walked is not None:
            return walked
    for b in enclosing(found, max(pos - 1, 0)):
        if _indent(idx.lines[b.line]) < indent:
            return b.start, b.end, f"{b.kind} {b.name}"
    return 0, len(idx.lines), "module level" if found else "the file"


def _body_by_indent(lines: Sequence[str], pos: int, indent: int) -> tuple[int, int, str] | None:
    """`body_of` past the line where Python stopped reading the file (a stray copy of a
    block, a syntax error): the nearest def/class line above `pos` indented less than
    `indent`, to the next non-blank line indented no more than it; None when there is none
    (the file is not Python: its body is the file)."""
    for j in range(min(pos, len(lines)) - 1, -1, -1):
        text = strip_eol(lines[j])
        m = _SCOPE.match(text)
        if m and _indent(text) < indent:
            top = _indent(text)
            end = next(
                (
                    k
                    for k in range(max(pos, j + 1), len(lines))
                    if lines[k].strip() and _indent(lines[k]) <= top
                ),
                len(lines),
            )
            kind = "class" if text.lstrip().startswith("class") else "def"
            return j, end, f"{kind} {m.group(1)}"
    return None


def name_defined(hunk: Hunk, lines: Sequence[str]) -> bool:
    name = _scope_name(hunk)
    if not name:
        return False
    pat = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    return any(pat.match(ln) for ln in lines)
