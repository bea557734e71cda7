"""manifest_text.py: edits splice lines into patchset.yaml and keep every other byte."""

from __future__ import annotations

from pathlib import Path

from sgpatch.patchset.manifest_text import insert_after_patch, replace_key

TEXT = """# top comment
schema: 1
patches:
  # about a
  - id: a
    summary: a  # inline
    type: bugfix
    upstream: {status: pending}
    probe:
      all:
        - {file: x.py, regex: 'old'}
    # a comment inside a, after its probe
    variants:
      - {sglang: "==0.5.9", patch: p.patch}

  # about b
  - id: b
    summary: b
    type: bugfix
    upstream: {status: pending}
    variants:
      - {sglang: "==0.5.9", patch: q.patch}
"""


def test_replace_probe_keeps_everything_else():
    """Input: a's block probe replaced by a one-line probe. Outcome: only the probe lines
    changed; every comment (including the one right after the probe) is kept."""
    out = replace_key(TEXT, Path("m"), "a", "probe", ["    probe: {file: y.py, regex: 'new'}"])
    assert out == TEXT.replace(
        "    probe:\n      all:\n        - {file: x.py, regex: 'old'}\n",
        "    probe: {file: y.py, regex: 'new'}\n",
    )


def test_probe_is_added_where_there_was_none():
    """Input: b has no probe. Outcome: the probe lines go right after its upstream line."""
    out = replace_key(TEXT, Path("m"), "b", "probe", ["    probe: {file: y.py, regex: 'n'}"])
    assert (
        "    upstream: {status: pending}\n    probe: {file: y.py, regex: 'n'}\n    variants:\n"
        in (out.split("  - id: b\n")[1])
    )


def test_new_entry_goes_after_the_patch_and_before_the_next_ones_comment():
    """Input: an entry inserted after a. Outcome: it sits after a's variants and before
    `# about b`, indented like the others, with a blank line before it."""
    out = insert_after_patch(TEXT, Path("m"), "a", ["- id: c", "  summary: c"])
    assert "patch: p.patch}\n\n  - id: c\n    summary: c\n\n  # about b\n" in out
    assert out.replace("\n  - id: c\n    summary: c\n", "") == TEXT
