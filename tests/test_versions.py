"""versions: a specifier is checked whole when it is read, not at its first match."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from sgpatch.versions import checked

HUGE = "0." + "1" * 5000  # a number over int()'s 4,300-digit limit


@pytest.mark.parametrize("text", [f"<{HUGE}", f">=0.5,!={HUGE}", f"=={HUGE}.*"])
def test_a_version_past_the_digit_limit_is_refused_when_read(text: str) -> None:
    """Input: a well-formed specifier one of whose versions has 5,000 digits (packaging parses
    it; `contains` would raise a bare ValueError later). Outcome: ValueError from `checked`."""
    spec = SpecifierSet(text)
    with pytest.raises(ValueError, match="digits"):
        checked(spec)


@pytest.mark.parametrize("text", ["", ">=0.5.5,<0.6", "==0.5.*", "===anything-goes"])
def test_an_ordinary_specifier_comes_back_as_it_is(text: str) -> None:
    """Input: ordinary specifiers, a wildcard, and `===` (any string). Outcome: the same object."""
    spec = SpecifierSet(text)
    assert checked(spec) is spec
