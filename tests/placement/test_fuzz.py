"""Fuzz the diff reader and the engine: whatever the input, nothing but SgpatchError escapes.

- random bytes and mutated real diffs (the bundled patch files) into `diffs.parse_patch`;
- random hunks (arbitrary starts, lengths, kinds, no-EOL flags, scope headers) over random files
  into `engine.apply_hunks`, forwards and reversed, at fuzz 0..2;
- parsed random diffs through the whole planner (`plan.plan_patch` on an in-memory overlay).
Budgets are small (CI); raise them locally with SGPATCH_FUZZ_EXAMPLES=5000.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgpatch.diff.unified import Hunk, HunkLine, parse_patch, split_lines
from sgpatch.errors import SgpatchError
from sgpatch.ops.fileplan import Overlay, default_mapper, plan_patch
from sgpatch.placement.engine import apply_hunks

N = int(os.environ.get("SGPATCH_FUZZ_EXAMPLES", "300"))
FAST = settings(
    max_examples=N,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI never flakes; vary N to explore
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

PATCH_DIR = Path(__file__).resolve().parents[2] / "src" / "sgpatch" / "patchsets"
REAL = sorted(p.read_bytes() for p in PATCH_DIR.rglob("*.patch"))[:40]
assert REAL, "no bundled patch files to mutate"


def _parse(data: bytes) -> None:
    try:
        parse_patch(data, "fuzz.patch")
    except SgpatchError as exc:
        assert exc.message and "\n" not in exc.message, exc.message


# ------------------------------------------------------------------------- the diff reader

LINE_STARTS = [
    b"--- ",
    b"+++ ",
    b"@@ ",
    b" ",
    b"-",
    b"+",
    b"\\ No newline at end of file",
    b"diff --git ",
    b"new file mode ",
    b"deleted file mode ",
    b"rename from ",
    b"rename to ",
    b"index ",
    b"old mode ",
    b"new mode ",
    b"similarity index ",
    b"GIT binary patch",
    b"Binary files ",
    b"@@ -",
    b"--- /dev/null",
    b'+++ "b/',
]


@FAST
@given(st.binary(max_size=2000))
def test_parse_random_bytes(data):
    _parse(data)


@st.composite
def diffish(draw):
    """Lines that look like diff syntax, glued together at random."""
    out = []
    for _ in range(draw(st.integers(1, 30))):
        start = draw(st.sampled_from(LINE_STARTS))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            tail = draw(st.binary(max_size=20))
        elif kind == 1:
            a, b, c, d = (draw(st.integers(-2, 99)) for _ in range(4))
            tail = f"{a},{b} +{c},{d} @@ {draw(st.sampled_from(['', 'def f():', 'x']))}".encode()
        elif kind == 2:
            tail = draw(
                st.sampled_from(
                    [
                        b"a/f.py",
                        b"b/f.py",
                        b"/dev/null",
                        b"a/../x",
                        b'"b/f\\tx"',
                        b"b/d/f.py\t2020-01-01",
                    ]
                )
            )
        else:  # octal only: non-octal mode digits are a known bug (test_parse_git_...)
            tail = oct(draw(st.integers(0, 8**8)))[2:].encode()
        eol = draw(st.sampled_from([b"\n", b"\r\n", b"", b"\r"]))
        out.append(start + tail + eol)
    return b"".join(out)


@FAST
@given(diffish())
def test_parse_diff_shaped_noise(data):
    _parse(data)


@st.composite
def mutated_real(draw):
    data = draw(st.sampled_from(REAL))
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "flip", "insert", "digits", "truncate", "crlf"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "flip" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            b = draw(st.integers(0, 255))
            lines[i] = lines[i][:j] + bytes([b]) + lines[i][j + 1 :]
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(LINE_STARTS)) + draw(st.binary(max_size=10)))
        elif op == "digits":
            lines[i] = bytes(
                (c if not 48 <= c <= 57 else 48 + draw(st.integers(0, 9))) for c in lines[i]
            )
        elif op == "truncate":
            lines = lines[: i + 1]
        elif op == "crlf":
            lines[i] += b"\r"
    return b"\n".join(lines)


@FAST
@given(mutated_real())
def test_parse_mutated_real_diffs(data):
    _parse(data)


def test_every_bundled_patch_parses():
    for data in REAL:
        assert parse_patch(data, "bundled").files


@st.composite
def git_file_section(draw):
    """A well-formed git file section with random extended headers and (quoted) paths."""
    name = draw(st.sampled_from(["f.py", "d/f.py"]))
    quoted = draw(st.booleans())
    esc = draw(st.sampled_from(["", "\\t", "\\303\\251", "\\N", "\\x", "\\u12", "\\"]))
    path = f'"a/{name}{esc}"' if quoted else f"a/{name}"
    target = path.replace("a/", "b/", 1)
    head = [f"diff --git {path} {target}"]
    for _ in range(draw(st.integers(0, 2))):
        word = draw(st.sampled_from(["new mode", "old mode", "new file mode", "index 1..2"]))
        digits = draw(st.text("0123456789", min_size=1, max_size=7))
        head.append(f"{word} {digits}" if "mode" in word else word)
    body = ["@@ -1 +1 @@", "-a", "+b"]
    return ("\n".join([*head, f"--- {path}", f"+++ {target}", *body]) + "\n").encode()


GIT_HEADER_BUGS = (
    "diffs._freeze_file/_clean_path: 'new mode 100999' raises ValueError (int(..., 8)); a quoted "
    "path with a bad escape ('\\N', '\\x') raises UnicodeDecodeError"
)


@FAST
@given(git_file_section())
def test_parse_git_extended_headers(data):
    _parse(data)


def test_git_mode_with_non_octal_digits_is_bad_input():
    _parse(b"diff --git a/f b/f\nnew mode 100999\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")


def test_quoted_path_with_bad_escape_is_bad_input():
    _parse(b'--- a/f\n+++ "b/\\N"\n@@ -1 +1 @@\n-a\n+b\n')


HUNKLESS_BUG = (
    "diffs.parse_patch accepts a file section with no hunks (or a malformed @@ line), so apply/"
    "patch exit 0 without changing anything"
)


@pytest.mark.parametrize(
    "data",
    [b"--- a/f\n+++ b/f\n", b"--- a/f\n+++ b/f\n@@ -x,3 +y @@\n a\n-b\n+B\n c\n"],
    ids=["headers-only", "malformed-hunk-header"],
)
def test_file_section_without_hunks_is_bad_input(data):
    with pytest.raises(SgpatchError):
        parse_patch(data, "x.patch")


# ------------------------------------------------------------------------- the engine

WORDS = ["a", "b", "c", "def f():", "    return 1", "", "  ", "class K:", "\tx", "a ", "é\udcff"]


@st.composite
def hunk(draw, index: int = 1):
    body = draw(
        st.lists(st.tuples(st.sampled_from(" -+"), st.sampled_from(WORDS)), min_size=0, max_size=8)
    )
    return Hunk(
        index=index,
        source_start=draw(st.integers(-3, 40)),
        source_length=draw(st.integers(-2, 12)),
        target_start=draw(st.integers(-3, 40)),
        target_length=draw(st.integers(-2, 12)),
        section_header=draw(st.sampled_from(["", "class K:", "def f():", "def nope(x)", "("])),
        lines=tuple(HunkLine(k, t) for k, t in body),
        old_no_eol=draw(st.booleans()),
        new_no_eol=draw(st.booleans()),
    )


@st.composite
def file_lines(draw):
    words = draw(st.lists(st.sampled_from(WORDS), max_size=30))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(w + eol for w in words)
    if text and draw(st.booleans()):
        text = text.rstrip("\r\n")
    return split_lines(text)


@FAST
@given(
    file_lines(),
    st.lists(hunk(), max_size=5),
    st.integers(0, 2),
    st.booleans(),
)
def test_engine_random_hunks(lines, hunks, fuzz, reverse):
    hunks = [h._replace(index=i) for i, h in enumerate(hunks, 1)]
    try:
        result = apply_hunks(lines, hunks, fuzz=fuzz, reverse=reverse)
    except SgpatchError:
        return
    assert len(result.hunks) == len(hunks)
    if not result.ok:
        return
    assert all(isinstance(x, str) for x in result.lines)


# ------------------------------------------------------------------------- parser -> planner


@FAST
@given(st.one_of(diffish(), mutated_real()), file_lines(), st.integers(0, 3), st.booleans())
def test_planner_on_parsed_noise(tmp_path_factory, data, lines, strip, reverse):
    """Whatever parses is planned against an in-memory overlay without anything escaping."""
    try:
        patch = parse_patch(data, "fuzz.patch")
    except SgpatchError:
        return
    root = tmp_path_factory.getbasetemp()
    overlay = Overlay(root / "does-not-exist")
    content = "".join(lines).encode("utf-8", "surrogateescape")
    for fp in patch.files:
        for p in (fp.source, fp.target):
            try:
                rel = default_mapper(strip, "fuzz")(p)
            except SgpatchError:
                continue
            overlay.changed[rel] = content
    with contextlib.suppress(SgpatchError):
        plan_patch(overlay, patch, default_mapper(strip, "fuzz"), fuzz=1, reverse=reverse)
