"""sgpatch.fs.journal: the one undo journal type, read strictly, its originals checked."""

from __future__ import annotations

import hashlib
import os

import pytest

from sgpatch.fs import journal
from sgpatch.fs.journal import Damaged, Entry, Journal, Store

SHA = hashlib.sha256(b"alpha\n").hexdigest()
GOOD = f"sgpatch-journal 4\npid 7\nfile 644 6 {SHA} srt/a.py\nowner 0 0 srt/a.py\n"


def test_a_journal_reads_back_as_written_wrote_lines_included():
    """Input: a rendered journal plus two `wrote` lines for its file. Outcome: the same
    entries, with the two writes in order."""
    doc = Journal(7, (Entry("srt/a.py", SHA, 6, 0o644, owner=(0, 0)),), ("srt",))
    text = journal.render(doc) + journal.wrote_line("srt/a.py", "b" * 64).encode()
    text += journal.wrote_line("srt/a.py", None).encode()
    got = journal.parse(text)
    assert got.entries == (Entry("srt/a.py", SHA, 6, 0o644, owner=(0, 0), wrote=("b" * 64, "-")),)
    assert got.dirs == ("srt",) and got.pid == 7


@pytest.mark.parametrize(
    "text,why",
    [
        (GOOD.replace("\n", "\r\n"), "carriage return"),
        (GOOD + f"file 644 6 {SHA} srt/a.py\n", "journalled twice"),
        (GOOD.replace("srt/a.py\nowner", "../a.py\nowner"), "plain relative path"),
        (GOOD.replace("srt/a.py\nowner", "/etc/passwd\nowner"), "plain relative path"),
        (GOOD.replace("srt/a.py\nowner", "srt//a.py\nowner"), "plain relative path"),
        (GOOD.replace(" 6 ", " 06 "), "bad size"),
        (GOOD.replace(" 6 ", " -6 "), "bad size"),
        (GOOD.replace("644", "9999"), "bad mode"),
        (GOOD.replace("pid 7", "pid 1e400"), "bad pid"),
        (GOOD + "wrote - srt/b.py\n", "before its file line"),
        (GOOD + "\n", "bad line"),
        (GOOD[:-1], "cut short"),
        ("sgpatch-journal 9\npid 1\n", "newer sgpatch"),
        ("sgpatch-journal 3\npid 1\nwrote - a\n", "bad line"),
    ],
)
def test_anything_sgpatch_does_not_write_is_damaged(text, why):
    """Input: a journal with CRLF line ends, a path twice, a path climbing out or absolute or
    with an empty part, a size with a leading zero or a sign, a bad mode or pid, a write of an
    unjournalled path, an empty line, no final line break, a newer schema, a `wrote` line in
    an older one. Outcome: `Damaged` saying why, every time."""
    with pytest.raises(Damaged) as info:
        journal.parse(text.encode())
    assert why in str(info.value)


def test_an_appended_journal_drops_only_a_last_line_cut_short():
    """Input: a journal written a line at a time, its last line cut short by a kill. Outcome:
    read without it; the same text read as a whole journal is damaged."""
    text = (GOOD + "wrote - srt/a").encode()
    assert journal.parse(text, appended=True).entries[0].wrote == ()
    with pytest.raises(Damaged):
        journal.parse(text)


@pytest.fixture
def store(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    s = Store.open(fd, "orig", str(tmp_path / "orig"), create=True)
    assert s is not None
    yield s
    s.close()
    os.close(fd)


def test_an_original_is_checked_against_the_journals_size_before_it_is_read(tmp_path, store):
    """Input: a stored original, then the file at its name replaced by a 3 GB sparse file.
    Outcome: the first checks (its size and digest); the second is damaged from its size
    alone, at once, with no byte read."""
    digest, size = store.put(b"alpha\n")
    store.check(digest, size)
    path = tmp_path / "orig" / digest
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:
        f.truncate(3 << 30)
    with pytest.raises(Damaged, match="is not 6 bytes"):
        store.check(digest, size)


def test_a_tampered_or_missing_original_is_damaged(tmp_path, store):
    """Input: an original whose bytes were changed (same size), and a digest with no file.
    Outcome: Damaged, naming the digest, both times."""
    digest, size = store.put(b"alpha\n")
    path = tmp_path / "orig" / digest
    os.chmod(path, 0o644)
    path.write_bytes(b"ALPHA\n")
    with pytest.raises(Damaged, match="does not hash"):
        store.check(digest, size)
    with pytest.raises(Damaged, match="missing"):
        store.check("0" * 64, 1)


def test_a_symlink_at_the_store_is_refused_never_followed(tmp_path):
    """Input: the store's name a symlink to a folder holding a file. Outcome: Damaged when it
    is opened; the folder and its file untouched."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_bytes(b"x")
    (tmp_path / "orig").symlink_to(victim)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(Damaged, match="a symlink"):
            Store.open(fd, "orig", "orig")
    finally:
        os.close(fd)
    assert (victim / "precious").read_bytes() == b"x"
