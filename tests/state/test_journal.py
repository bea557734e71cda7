"""The journal a writing run leaves: one fact per line, originals in a content-addressed store,
readable and replayable by a person with `cat` and `cp`; the old JSON form still rolled back."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
from pathlib import Path

import pytest

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.fs import steps
from sgpatch.state import journal
from sgpatch.state.folder import JOURNAL, JOURNAL_ORIGINALS, LEGACY_JOURNAL
from sgpatch.state.txn import FileChange, commit, recover


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_render_and_parse_round_trip(tmp_path: Path) -> None:
    """Input: a journal with a changed file (mode 0755, 120 bytes), a created file, a symlink
    and a folder, one path holding spaces. Outcome: the text has one line per fact, path
    last, and parses back to the same record."""
    doc = journal.Journal(
        42,
        (
            journal.Entry("srt/a b.py", "a" * 64, 120, 0o755, owner=(1000, 1001)),
            journal.Entry("srt/new.py", None),
            journal.Entry("srt/link.py", "b" * 64, 7, link=True),
        ),
        ("srt/extra",),
    )
    text = journal.render(doc).decode()
    assert text.splitlines() == [
        "sgpatch-journal 4",
        "pid 42",
        f"file 755 120 {'a' * 64} srt/a b.py",
        "owner 1000 1001 srt/a b.py",
        "file - - - srt/new.py",
        f"link 7 {'b' * 64} srt/link.py",
        "dir srt/extra",
    ]
    assert journal.parse(tmp_path / JOURNAL, text.encode()) == doc


def test_a_path_with_a_line_break_is_refused_not_journalled() -> None:
    """Input: an entry whose path holds a newline. Outcome: exit 4 naming it; no text."""
    with pytest.raises(SgpatchError) as exc:
        journal.render(journal.Journal(1, (journal.Entry("a\nfile - - b", None),)))
    assert exc.value.code == ExitCode.UNSAFE and "line break" in exc.value.message


def _killed_mid_commit(tmp_path: Path) -> Path:
    """A commit of two files SIGKILLed after the first file was replaced (write step 4: 1-2 the
    journal, 3-4 the first file's temp and rename, 5 the second's temp)."""
    (tmp_path / "srt").mkdir()
    (tmp_path / "srt/a.py").write_bytes(b"alpha\n")
    (tmp_path / "srt/b.py").write_bytes(b"beta\n")
    os.chmod(tmp_path / "srt/b.py", 0o750)
    changes = [
        FileChange("srt/a.py", b"alpha\n", b"ALPHA\n"),
        FileChange("srt/b.py", b"beta\n", b"BETA\n"),
    ]
    pid = os.fork()
    if pid == 0:
        try:
            os.environ[steps.KILL_ENV] = "5"
            steps.reset()
            commit(tmp_path, tmp_path / ".sgpatch", changes)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return tmp_path / ".sgpatch"


def test_a_killed_run_can_be_undone_by_hand_with_cat_and_cp(tmp_path: Path) -> None:
    """Input: a commit killed half-way (a.py rewritten, b.py not yet). Outcome: the journal
    names both files with mode and digest, each followed by its owner; copying each digest's
    file from journal-originals back (what a person does after `cat .sgpatch/journal`) gives
    the exact original bytes."""
    state = _killed_mid_commit(tmp_path)
    assert (tmp_path / "srt/a.py").read_bytes() == b"ALPHA\n"
    lines = (state / JOURNAL).read_text().splitlines()
    owner = f"{os.getuid()} {os.getgid()}"
    assert lines[0] == "sgpatch-journal 4" and lines[1] == f"pid {lines[1].split()[1]}"
    assert lines[2:] == [
        f"file 644 6 {_sha(b'alpha' + bytes([10]))} srt/a.py",
        f"owner {owner} srt/a.py",
        f"file 750 5 {_sha(b'beta' + bytes([10]))} srt/b.py",
        f"owner {owner} srt/b.py",
    ]
    for line in lines[2::2]:
        _, _mode, _size, digest, rel = line.split(" ", 4)
        (tmp_path / rel).write_bytes((state / JOURNAL_ORIGINALS / digest).read_bytes())
    assert (tmp_path / "srt/a.py").read_bytes() == b"alpha\n"
    assert (tmp_path / "srt/b.py").read_bytes() == b"beta\n"


def test_recover_restores_from_the_store_and_leaves_no_journal_files(tmp_path: Path) -> None:
    """Input: the same killed commit. Outcome: recover restores a.py (bytes and mode), and
    removes the journal and its originals folder."""
    state = _killed_mid_commit(tmp_path)
    assert recover(tmp_path, state) == ["srt/a.py"]
    assert (tmp_path / "srt/a.py").read_bytes() == b"alpha\n"
    assert oct((tmp_path / "srt/b.py").stat().st_mode & 0o777) == "0o750"
    assert not (state / JOURNAL).exists() and not (state / JOURNAL_ORIGINALS).exists()


def test_a_finished_commit_keeps_no_originals(tmp_path: Path) -> None:
    """Input: a commit that completes. Outcome: the file is written; neither the journal nor
    journal-originals is left in the state folder."""
    (tmp_path / "f.py").write_bytes(b"old\n")
    commit(tmp_path, tmp_path / ".sgpatch", [FileChange("f.py", b"old\n", b"new\n")])
    assert (tmp_path / "f.py").read_bytes() == b"new\n"
    assert sorted(p.name for p in (tmp_path / ".sgpatch").iterdir()) == []


def test_scratch_originals_of_a_run_killed_before_its_journal_are_removed(tmp_path: Path) -> None:
    """Input: journal-originals holding a file (a run killed while storing originals, before
    its journal existed: the tree untouched). Outcome: it is no interrupted run (nothing to
    recover), and the next commit removes the scratch before writing."""
    state = tmp_path / ".sgpatch"
    (state / JOURNAL_ORIGINALS).mkdir(parents=True)
    (state / JOURNAL_ORIGINALS / ("0" * 64)).write_bytes(b"scratch")
    (tmp_path / "f.py").write_bytes(b"old\n")
    assert recover(tmp_path, state) is None
    commit(tmp_path, state, [FileChange("f.py", b"old\n", b"new\n")])
    assert not (state / JOURNAL_ORIGINALS).exists()


def test_a_journal_an_older_sgpatch_left_is_still_rolled_back(tmp_path: Path) -> None:
    """Input: `.sgpatch/journal.json` in the schema-1 form (base64 originals inline) naming a
    changed file, a created file and a symlink that was replaced. Outcome: recover restores all
    three and removes journal.json."""
    state = tmp_path / ".sgpatch"
    state.mkdir()
    (tmp_path / "a.py").write_bytes(b"patched\n")
    (tmp_path / "new.py").write_bytes(b"created\n")
    (tmp_path / "link.py").write_bytes(b"not a link now\n")
    doc = {
        "schema": 1,
        "pid": 1,
        "files": [
            {"path": "a.py", "before": base64.b64encode(b"original\n").decode(), "mode": 0o644},
            {"path": "new.py", "before": None, "mode": None},
            {"path": "link.py", "before": None, "mode": None, "link": "a.py"},
        ],
        "dirs": [],
    }
    (state / LEGACY_JOURNAL).write_text(json.dumps(doc))
    assert sorted(recover(tmp_path, state) or []) == ["a.py", "link.py", "new.py"]
    assert (tmp_path / "a.py").read_bytes() == b"original\n"
    assert not (tmp_path / "new.py").exists()
    assert os.readlink(tmp_path / "link.py") == "a.py"
    assert not (state / LEGACY_JOURNAL).exists()


def test_a_journal_whose_original_is_damaged_is_kept_and_refused(tmp_path: Path) -> None:
    """Input: the killed commit, then one stored original edited. Outcome: recover refuses
    (exit 4, naming the digest) and keeps the journal; the tree is left as it is."""
    state = _killed_mid_commit(tmp_path)
    damaged = state / JOURNAL_ORIGINALS / _sha(b"alpha\n")
    os.chmod(damaged, 0o644)
    damaged.write_bytes(b"tampered\n")
    with pytest.raises(SgpatchError) as exc:
        recover(tmp_path, state)
    assert exc.value.code == ExitCode.UNSAFE and _sha(b"alpha\n")[:12] in exc.value.message
    assert (state / JOURNAL).exists()
    assert (tmp_path / "srt/a.py").read_bytes() == b"ALPHA\n"
