"""cli/complete: Tab completes set names and a set's patch ids, as bash's script asks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import make_env


def _complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    """What sgpatch answers bash's completion script for the command line `words`, Tab at
    its end (a trailing space: a new word)."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch"],
        env={
            **os.environ,
            **(env or {}),
            "_SGPATCH_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("sgpatch apply --set ki", ["kimi-eagle3-sm120"]),
        ("sgpatch status -s ", ["kimi-eagle3-sm120"]),
        ("sgpatch show ", ["kimi-eagle3-sm120"]),
        ("sgpatch lint --set ", ["kimi-eagle3-sm120"]),
        ("sgpatch apply -s kimi-eagle3-sm120 --with ", ["sm120-symm-mem-two-shot-no-multicast"]),
        ("sgpatch apply -s kimi-eagle3-sm120 --without kimi", ["kimi-k25-eagle3-hooks"]),
        (
            "sgpatch split -s kimi-eagle3-sm120 --patch eagle",
            ["eagle3-aux-capture-allreduce-fusion"],
        ),
        ("sgpatch apply --with ", []),  # no --set yet: nothing to say
        ("sgpatch apply -s no-such-set --with ", []),
    ],
)
def test_tab_completes_set_names_and_patch_ids(words, expected) -> None:
    """Input: `--set <Tab>` (and -s, show's NAME, lint's --set), `--with <Tab>` and
    `--without`/`--patch <Tab>` after a set, and `--with` with no set or an unknown one.
    Outcome: the shipped set's name; its optional patch for --with, every matching patch id
    for --without/--patch; nothing (and no error) without a set to read."""
    assert _complete(words, {"SGPATCH_PATH": ""}) == expected


def test_tab_completes_the_sets_of_patchsets_typed_before_it(tmp_path) -> None:
    """Input: `sgpatch apply --patchsets DIR --set sa<Tab>` and then `--without p<Tab>`, DIR
    holding the test set `safety-set` (patches pa..pd). Outcome: `safety-set`, then its ids."""
    _pkg, sets, _args = make_env(tmp_path)
    assert _complete(f"sgpatch apply --patchsets {sets} --set sa") == ["safety-set"]
    line = f"sgpatch apply --patchsets {sets} --set safety-set --without p"
    assert _complete(line) == ["pa", "pb", "pc", "pd"]
