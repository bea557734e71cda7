"""The defined-twice rule (placement/pydefs.py), shared by the engine and port."""

from __future__ import annotations

import pytest

from sgpatch.placement.pydefs import Twice, defined_names, defined_twice

TARGET = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"


def test_a_method_added_to_a_class_that_has_it_names_both_lines():
    """Input: a class with f at line 2; the new file adds a second f (line 7).
    Outcome: one Twice for class A, f at lines 2 and 7, line 7 added, line 2 of the target
    already there; its description says so."""
    new = TARGET + "\n    def f(self):\n        return 3\n"
    (t,) = defined_twice(new, TARGET)
    assert t == Twice("A", "class", "f", (2, 8), (8,), (2,))
    assert t.describe() == (
        "f is defined twice in class A: line 8 (added) and line 2 (already in the target at line 2)"
    )


def test_the_same_text_moved_is_the_copy_that_was_there():
    """Input: the target's f copied verbatim above it, before the target's own f (same text).
    Outcome: which one is "added" cannot come from text alone: one of the two is reported
    added, the other is the target's; with `added` given, that line is the added one."""
    new = "class A:\n    def f(self):\n        return 1\n" + TARGET.split("\n", 1)[1]
    (t,) = defined_twice(new, TARGET)
    assert t.lines == (2, 4) and len(t.added) == 1 and t.existing == (2,)
    (t,) = defined_twice(new, TARGET, added={2, 3})
    assert t.added == (2,)


@pytest.mark.parametrize(
    "new",
    [
        # property setter, overload, singledispatch registration
        "class A:\n    @property\n    def x(self): ...\n    @x.setter\n    def x(self, v): ...\n",
        "from typing import overload\n@overload\ndef f(x: int): ...\n@overload\n"
        "def f(x: str): ...\ndef f(x): ...\n",
        "if X:\n    def f(): pass\nelse:\n    def f(): pass\n",
        "try:\n    def f(): pass\nexcept E:\n    def f(): pass\n",
        "match x:\n    case 1:\n        def f(): pass\n    case _:\n        def f(): pass\n",
    ],
)
def test_allowed_repeats_are_not_duplicates(new):
    """Input: repeats Python means (a setter, overloads, if/else, try/except and match-case
    branches). Outcome: no Twice."""
    assert defined_twice(new, "") == ()


def test_a_duplicate_the_target_already_had_is_upstreams():
    """Input: the target already defines f twice in A; the new file too (and adds a method).
    Outcome: no Twice; a third f is one."""
    twice = "class A:\n    def f(self): pass\n    def f(self): pass\n"
    assert defined_twice(twice + "    def h(self): pass\n", twice) == ()
    (t,) = defined_twice(twice + "    def f(self): return 3\n", twice)
    assert t.lines == (2, 3, 4) and t.added == (4,) and "3 times" in t.describe()


def test_nested_scopes_and_module_level():
    """Input: a def twice inside a method, and a class twice at module level.
    Outcome: Twice scopes 'A.m' (kind def) and '' (module level)."""
    new = "class A:\n    def m(self):\n        def h(): pass\n        def h(): pass\nclass A: ...\n"
    got = {(t.scope, t.kind, t.name, t.where) for t in defined_twice(new, None)}
    assert got == {("A.m", "def", "h", "def m"), ("", "", "A", "module level")}


def test_an_unparsable_new_file_raises_an_unparsable_target_counts_as_empty():
    """Input: a new file with a syntax error; a target with one. Outcome: SyntaxError for the
    first; the second is compared against nothing."""
    with pytest.raises(SyntaxError):
        defined_twice("def f(:\n", TARGET)
    assert defined_twice(TARGET, "def f(:\n") == ()


def test_defined_names_is_a_text_scan():
    """Input: def/class/async def lines and a string mentioning def. Outcome: the names."""
    lines = ["class A(B):\n", "    async def run(self):\n", "x = 'def no'\n", "def f():\n"]
    assert defined_names(lines) == {"A", "run", "f"}


def test_a_file_is_parsed_once_per_content():
    """Input: the same target asked about twice (the engine's `parses` then `defined_twice`,
    as for every placement). Outcome: one `ast.parse`; the answers are those of a fresh parse,
    and an unparsable file raises its SyntaxError again with its line each time."""
    from unittest import mock

    from sgpatch.placement import pydefs

    target = TARGET + "# parsed once\n"
    new = target + "    def f(self):\n        return 2\n"
    real = pydefs.ast.parse
    with mock.patch.object(pydefs.ast, "parse", side_effect=real) as parse:
        assert pydefs.parses(target)
        first = defined_twice(new, target)
        assert defined_twice(new, target) == first and len(first) == 1
    assert parse.call_count == 2  # target and new, once each
    for _ in range(2):
        with pytest.raises(SyntaxError) as e:
            defined_twice("def f(:\n", TARGET)
        assert e.value.lineno == 1
