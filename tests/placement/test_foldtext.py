"""placement/foldtext.py: a name defined twice in one body folded so that what runs stays."""

from __future__ import annotations

from sgpatch.placement.foldtext import fold

UPSTREAM = (
    "class Q:\n"
    "    def release(self):\n"
    "        self.queue.clear()\n"
    "\n"
    "    def resume(self):\n"
    "        self.start()\n"
    "\n"
    "    def other(self):\n"
    "        return 1\n"
)
# the author's patch adds both methods again at the end of the class (slime's decode.py shape)
PATCHED = UPSTREAM + (
    "\n"
    "    # also drop what is pending\n"
    "    def release(self):\n"
    "        self.queue.clear()\n"
    "        self.pending.clear()\n"
    "\n"
    "    def resume(self):\n"
    "        self.start()\n"
)


def test_different_code_runs_from_the_earlier_place_and_the_same_code_is_dropped():
    """Input: class Q defining `release` and `resume` twice, the later `release` with one
    statement more (and a comment above it), the later `resume` the same code. Outcome:
    `release` once, in the first place, with the later body and its comment; `resume` once,
    the first copy byte for byte; the class's other lines and spacing as upstream had them."""
    got = fold(PATCHED)
    assert got.text == UPSTREAM.replace(
        "    def release(self):\n        self.queue.clear()\n",
        "    # also drop what is pending\n    def release(self):\n        self.queue.clear()\n"
        "        self.pending.clear()\n",
    )
    assert [(f.name, f.same, f.kept_at, f.runs_from) for f in got.folds] == [
        ("release", False, 2, 12),
        ("resume", True, 5, 16),
    ]


def test_only_the_keys_asked_for_are_folded_and_setters_never():
    """Input: the same text folded for `resume` only; and a property with its setter.
    Outcome: only `resume` folded; the property and its setter untouched (an allowed
    repeat)."""
    got = fold(PATCHED, {("Q", "resume")})
    assert [f.name for f in got.folds] == ["resume"]
    assert got.text.count("def release(") == 2
    prop = (
        "class P:\n    @property\n    def x(self):\n        return 1\n\n"
        "    @x.setter\n    def x(self, v):\n        pass\n"
    )
    assert fold(prop).text == prop and fold(prop).folds == ()


def test_a_text_that_does_not_parse_is_returned_as_it_is():
    """Input: text Python cannot parse. Outcome: unchanged, no fold."""
    bad = "def f(:\n    pass\n"
    assert fold(bad).text == bad and fold(bad).folds == ()


def test_module_level_copies_and_branches_apart():
    """Input: a module defining `f` twice at top level, and `g` once in each branch of an
    if/else. Outcome: `f` folded (the later body in the first place); `g` untouched."""
    text = (
        "def f():\n    return 1\n\n\nif X:\n    def g():\n        pass\nelse:\n"
        "    def g():\n        return 2\n\n\ndef f():\n    return 2\n"
    )
    got = fold(text)
    assert got.text == (
        "def f():\n    return 2\n\n\nif X:\n    def g():\n        pass\nelse:\n"
        "    def g():\n        return 2\n"
    )
