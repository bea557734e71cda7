"""Versions and specifiers read from text sgpatch does not control (a manifest, a tree, a flag).

packaging raises InvalidVersion for a malformed version, but a well-formed one with a number
past Python's int() digit limit (4,300) raises a plain ValueError, and a specifier holding one
parses fine and fails only at its first `contains`. So callers catch ValueError (InvalidVersion
and InvalidSpecifier are ValueErrors too), and a specifier is checked whole when it is read.
"""

from __future__ import annotations

from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

S = TypeVar("S", bound=SpecifierSet)


def checked(spec: S) -> S:
    """`spec` itself, once every clause's version parses (`===` takes any string); a ValueError
    otherwise, raised here rather than in the middle of a match."""
    for clause in spec:
        if clause.operator != "===":
            Version(clause.version.removesuffix(".*"))
    return spec
