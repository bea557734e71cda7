"""treefs: the read side of a tree (path guards, reads); the guards' refusals are exercised
through the commands in test_safety.py and test_txn.py."""

from __future__ import annotations

import pytest

from sgpatch.tree.files import within


@pytest.mark.parametrize(
    ("real", "root", "inside"),
    [
        ("/t/sglang", "/t/sglang", True),
        ("/t/sglang/srt/a.py", "/t/sglang", True),
        ("/t/sglang-evil/a.py", "/t/sglang", False),  # a prefix of the name is not inside
        ("/t", "/t/sglang", False),
        ("/etc/passwd", "/", True),  # the root of the filesystem holds everything
    ],
)
def test_within_is_a_path_prefix_not_a_string_prefix(real, root, inside):
    """Input: two realpaths. Outcome: inside only when `real` is the root or below it by
    whole components (`/t/sglang-evil` is not under `/t/sglang`)."""
    assert within(real, root) is inside
