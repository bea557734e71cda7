"""scope.py: def/class blocks read with Python's tokenizer, for the hunk header's scope. Each
test says the source shape and the blocks expected."""

from __future__ import annotations

from helpers import lines
from sgpatch.diff.unified import split_lines
from sgpatch.placement import scope

SOURCE = lines(
    "import x",  # 0
    "",
    "@dataclass",  # 2
    "class Scheduler(",  # 3
    "    Mixin,",
    "    Other,",
    "):",  # 6
    '    """doc with def fake( and an unbalanced ( bracket"""',
    "",
    "    def __init__(",  # 9
    "        self,",
    "        a: int,",
    "    ) -> None:",  # 12
    "        self.a = a",  # 13
    "",
    "    @property",  # 15
    "    async def run(self):",  # 16
    "        return 1",
    "",
    "    class Inner:",  # 19
    "        def m(self):",
    "            pass",  # 21
    "",
    "def top(x):",  # 23
    "    return x",
    "s = '''",
    "def notreal():",  # 26
    "'''",
)


def blocks():
    return scope.blocks(split_lines(SOURCE))


def test_multi_line_class_header_with_decorator_spans_its_whole_body():
    """`@dataclass` + `class Scheduler(\\n    Mixin,\\n):`: one block from the decorator to the
    end of its body; the line git's funcname shows is the `class` line."""
    (cls,) = [b for b in blocks() if b.name == "Scheduler"]
    assert (cls.kind, cls.start, cls.line, cls.end, cls.depth) == ("class", 2, 3, 23, 0)


def test_lines_inside_multi_line_signatures_and_bodies_are_enclosed():
    """A signature line, a body line, an async method under a decorator, a nested class's
    method: each is enclosed by the right chain, innermost first."""
    found = blocks()
    assert [b.name for b in scope.enclosing(found, 5)] == ["Scheduler"]
    assert [b.name for b in scope.enclosing(found, 11)] == ["__init__", "Scheduler"]
    assert [b.name for b in scope.enclosing(found, 13)] == ["__init__", "Scheduler"]
    assert [b.name for b in scope.enclosing(found, 17)] == ["run", "Scheduler"]
    assert scope.describe(found, 21) == "class Scheduler, class Inner, def m"


def test_def_inside_a_string_is_not_a_block():
    """`def notreal():` inside a triple-quoted string is module-level text, not a def."""
    found = blocks()
    assert "notreal" not in {b.name for b in found}
    assert scope.describe(found, 26) == "module level"


def test_header_above_is_the_nearest_def_or_class_line():
    """git's funcname for a hunk starting at line 24 (`return x` of top) is `def top`."""
    above = scope.header_above(blocks(), 24)
    assert above is not None and above.name == "top"


def test_unreadable_file_keeps_the_blocks_read_before_the_problem():
    """A file the tokenizer stops on (unterminated bracket at the end) still yields the
    blocks before it, and never raises."""
    broken = split_lines(lines("def a():", "    return 1", "", "x = (", "    1,"))
    assert [b.name for b in scope.blocks(broken)] == ["a"]


def test_undecodable_bytes_do_not_hide_the_blocks():
    """Input: a file whose bytes did not decode (surrogateescape: a lone surrogate in a
    string). Outcome: its def/class blocks are found as for any file (Python 3.12's tokenizer
    refuses lone surrogates; they are made U+FFFD first, which keeps every row)."""
    from sgpatch.placement.scope import blocks

    lines = ["class K:\n", "    x = '\udcff'\n", "\n", "    def f(self):\n", "        pass\n"]
    assert [(b.name, b.start, b.end) for b in blocks(lines)] == [("K", 0, 5), ("f", 3, 5)]


TREE_SHAPES = [
    SOURCE,
    "class A:\n    def f(self): pass\nx = 1\n",  # a one-line def last in its class
    "class A:\n    def f(self): pass\n    # c\n\n    def g(self):\n        return 1\n# tail\n\n",
    "if a:\n    def f(): pass\nelif b:\n    def g():\n        pass\nelse:\n    class C: x = 1\n",
    "match x:\n    case 1:\n        def f():\n            pass\n"
    "    case _:\n        def g(): pass\ny = 2",
    "try:\n    import x\nexcept ImportError:\n    def x():\n        pass\n"
    "finally:\n    def z(): ...\n",
    "@a\n# c\n@b(\n  1)\nasync def f(\n  x,\n): return x\n\n\n",
    "for i in x:\n    class A:\n        class B:\n            def m(self): pass\n"
    "        def n(self):\n            pass\n    def q(): pass\n"
    "with a as b:\n    def w():\n        pass\n",
    "class A:\n    x = 1; y = 2\n    def f(self): return 'é'\n    def g(self):\n        return 2\n",
]


def test_blocks_from_the_syntax_tree_are_the_tokenizers():
    """Input: a file that parses, in each shape whose blocks the tree must read as the
    tokenizer does (one-line defs, whose end and depth are the next line's; elif/else,
    match/case, try/except/finally bodies; decorators with comments between them; blank and
    comment lines after a body; non-ASCII text). Outcome: the tree's blocks and the tokenizer's
    are the same (the tree is the fast path; the tokenizer reads files that do not parse).
    The same was checked on every .py file of four releases (6,626 files, 0 differ)."""
    from sgpatch.placement.pydefs import parsed

    for text in TREE_SHAPES:
        n = len(split_lines(text))
        tree = parsed(text).tree
        assert tree is not None
        want, read_to = scope._token_blocks(text, n)
        assert read_to == n
        assert scope._tree_blocks(tree, text.split("\n"), n) == want, text
        assert scope._blocks_of(text, n) == (want, n)


def test_a_file_with_tabs_is_read_by_the_tokenizer():
    """Input: a parsing file indented with a tab (the tree's columns cannot tell its levels).
    Outcome: its blocks are still found, by the tokenizer."""
    text = "class K:\n\tdef f(self):\n\t\tpass\n"
    assert [(b.name, b.depth) for b in scope.blocks(split_lines(text))] == [("K", 0), ("f", 1)]


def test_scopes_are_unknown_from_a_statement_the_tokenizer_could_not_finish():
    """Input: `def first`, then `def call(` whose parameters hold a stray line with a lone
    triple quote (a copy of a docstring's tail), then `class K` 20 lines below; the tokenizer
    reads to the end of the file inside that open bracket and fails there. Outcome: blocks are
    read only above `def call(` (line 4): `class K` is not taken for module level by a reader
    that never left the bracket."""
    text = lines(
        "def first():",
        "    return 1",
        "",
        "",
        "def call(",
        "    a,",
        '    """',
        "    b,",
        ")",
        *[f"x{i} = {i}" for i in range(20)],
        "class K:",
        '    """Doc.',
        '    """',
        "    z = 1",
    )
    n = len(split_lines(text))
    found, read_to = scope._token_blocks(text, n)
    assert read_to == 4
    assert [b.name for b in found] == ["first"]
