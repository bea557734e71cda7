"""sgpatch.state.lock: who may write a tree's state, and with which modes (issue 46, items 3,
5 and 7): a writer run by root on a tree another user owns refuses (as git's safe.directory),
state folders are 0755 with files 0644 whatever the umask and owned by the tree's owner, a
state folder others may write is never trusted, and state a user may not read is one line."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess

import pytest

from helpers import (
    NOBODY,
    OTHER,
    chown_tree,
    fork_cli,
    full_snapshot,
    hint_commands,
    make_env,
    one_line_error,
    patched,
    reachable_dir,
    root_only,
    run_cli,
    sgpatch_as,
    waited_then_error,
    with_state,
    without_owners,
)
from sgpatch.state.lock import SAFE_ENV


@root_only
def test_root_writes_another_users_tree_as_that_user_would(tmp_path, monkeypatch):
    """Input: the synthetic tree owned by uid 4242 (a Docker build patching an sdist that tar
    unpacked with its uid); root runs `apply` with no $SGPATCH_SAFE_DIRECTORY. Outcome: exit 0,
    the set applied, and the state folder, every file in it and the file the set made belong
    to uid 4242 (the tree stays that user's), folders 0755, files 0644 or 0444; a rewritten
    file keeps its owner. `revert` as root then gives the tree back byte for byte."""
    pkg, _sets, args = make_env(tmp_path)
    chown_tree(pkg, OTHER)
    monkeypatch.delenv(SAFE_ENV, raising=False)
    before = full_snapshot(pkg)
    code, _out, err = run_cli("apply", *args)
    assert code == 0, err
    assert patched(pkg)
    for p in [pkg / ".sgpatch", *(pkg / ".sgpatch").rglob("*")]:
        st = p.lstat()
        assert st.st_uid == OTHER and st.st_gid == OTHER, p
        assert stat.S_IMODE(st.st_mode) in ((0o755,) if p.is_dir() else (0o644, 0o444)), p
    assert (pkg / "srt/extra/d.py").stat().st_uid == OTHER  # a file the set made: theirs
    assert (pkg / "srt/extra").stat().st_uid == OTHER  # and the folder it made for it
    assert (pkg / "srt/models/c.py").stat().st_uid == OTHER  # a file it rewrote: kept
    code, _out, err = run_cli("revert", *args)
    assert code == 0, err
    assert full_snapshot(pkg) == before and not (pkg / ".sgpatch").exists()


@root_only
@pytest.mark.parametrize("argv", ["recover", "revert", "apply"])
def test_root_rolls_back_no_journal_another_user_planted(tmp_path, monkeypatch, argv):
    """Input: a tree owned by uid 4242 holding a journal (an interrupted run of theirs, or a
    planted one); root runs `status`, then `recover`, `revert` or `apply`. Outcome: status
    exits 4 naming `recover` and writes nothing; the writer exits 4 in one line that names
    `sgpatch recover` as that uid and `export SGPATCH_SAFE_DIRECTORY=ROOT`; the tree, state
    included, is byte for byte as it was. With the variable exported as the line says, the
    writer rolls the journal back (exit 4 for apply/revert, which then ask to run again; 0 for
    recover) and the tree holds the bytes and modes it had before the interrupted run."""
    pkg, _sets, args = make_env(tmp_path)
    pristine = full_snapshot(pkg)
    assert fork_cli(["apply", *args], kill_at=8) == ("killed", 9)
    chown_tree(pkg, OTHER)
    monkeypatch.delenv(SAFE_ENV, raising=False)
    before = with_state(pkg)
    code, _out, err = run_cli("status", *args)
    assert code == 4 and "sgpatch recover" in one_line_error(err)
    writer = ["recover", "--sglang-dir", str(pkg)] if argv == "recover" else [argv, *args]
    code, _out, err = run_cli(*writer)
    line = one_line_error(err)
    assert code == 4 and f"uid {OTHER}, who could have planted it" in line, err
    assert hint_commands(line) == [["recover", "--sglang-dir", str(pkg)]]
    assert with_state(pkg) == before
    export = [h for h in line.split("`") if h.startswith("export ")]
    assert export == [f"export {SAFE_ENV}={shlex.quote(str(pkg))}"]
    name, _, value = export[0].removeprefix("export ").partition("=")
    monkeypatch.setenv(name, shlex.split(value)[0])
    code, _out, err = run_cli(*writer)
    assert code == (0 if argv == "recover" else 4), err
    assert not (pkg / ".sgpatch" / "journal").exists()
    assert without_owners(full_snapshot(pkg)) == without_owners(pristine)


@pytest.mark.parametrize("umask", [0o000, 0o077])
def test_state_modes_do_not_depend_on_the_umask(tmp_path, umask):
    """Input: `apply` under umask 000 (any user could plant a journal in a 0777 folder), and
    under 077. Outcome: `.sgpatch/` and its folders 0755, the ledger 0644, the stored
    originals 0444, both times."""
    pkg, _sets, args = make_env(tmp_path)
    old = os.umask(umask)
    try:
        code, _out, err = run_cli("apply", *args)
    finally:
        os.umask(old)
    assert code == 0, err
    state = pkg / ".sgpatch"
    modes = {p.relative_to(state).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in [state, *state.rglob("*")]}  # fmt: skip
    assert modes.pop(".") == 0o755 and modes.pop("originals") == 0o755
    assert modes.pop("lock") == 0o644
    assert modes.pop("ledger.json") == 0o644
    assert set(modes.values()) == {0o444}, modes


@pytest.mark.parametrize("where", [".sgpatch", ".sgpatch/originals"])
def test_a_state_folder_others_may_write_is_refused_with_a_hint_that_works(tmp_path, where):
    """Input: an applied tree whose `.sgpatch/` (or its `originals/`) is mode 0777, as an
    older sgpatch made it under umask 000; `revert`. Outcome: exit 4 in one line, nothing
    changed; the `chmod` it advises, run as printed, makes the revert work (exit 0)."""
    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    (pkg / where).chmod(0o777)
    before = with_state(pkg)
    code, _out, err = run_cli("revert", *args)
    assert code == 4, err
    hint = one_line_error(err).split("`")[1]
    assert hint == f"chmod -R go-w {pkg / '.sgpatch'}" and with_state(pkg) == before
    subprocess.run(shlex.split(hint), check=True)
    assert run_cli("revert", *args)[0] == 0


@root_only
def test_a_state_folder_another_user_made_is_refused(tmp_path):
    """Input: root's tree whose `.sgpatch/` (with a journal in it) belongs to uid 4242.
    Outcome: root's `recover` exits 4 in one line naming the owner; nothing is replayed."""
    pkg, _sets, args = make_env(tmp_path)
    assert fork_cli(["apply", *args], kill_at=8) == ("killed", 9)
    chown_tree(pkg / ".sgpatch", OTHER)
    before = with_state(pkg)
    code, _out, err = run_cli("recover", "--sglang-dir", str(pkg))
    assert code == 4 and f"belongs to uid {OTHER}" in one_line_error(err)
    assert with_state(pkg) == before


@root_only
@pytest.mark.parametrize("argv", ["status", "apply --dry-run", "recover"])
def test_state_another_user_cannot_read_is_one_line_not_exit_70(argv):
    """Input: a tree root applied the set to, its `.sgpatch/` mode 0700 (root's umask 077 in
    an older sgpatch); `status`, `apply --dry-run`, `recover` run as nobody. Outcome: exit 4
    in one line naming what cannot be read (it was `internal error: PermissionError`, exit
    70); nothing changed."""
    with reachable_dir() as top:
        pkg, _sets, args = make_env(top)
        os.chmod(top / "sets", 0o755)
        assert run_cli("apply", *args)[0] == 0
        (pkg / ".sgpatch").chmod(0o700)
        before = with_state(pkg)
        command, *flags = argv.split()
        extra = ["--sglang-dir", str(pkg)] if command == "recover" else [*args, *flags]
        proc = sgpatch_as(NOBODY, NOBODY, command, *extra)
        assert proc.returncode == 4, proc.stderr
        assert "cannot read" in one_line_error(proc.stderr) and ".sgpatch" in proc.stderr
        assert with_state(pkg) == before


# --- a held lock (issue 45.4): said at once, who holds it, with a timeout option


@pytest.mark.parametrize("argv", ["revert", "apply", "recover"])
def test_a_held_lock_is_said_at_once_and_lock_timeout_beats_the_environment(
    tmp_path, monkeypatch, argv
):
    """Input: the set applied (for apply: not; for recover: a killed apply's journal),
    another run holding the tree's lock, $SGPATCH_LOCK_TIMEOUT=600, and the command run with
    `--lock-timeout 0.2`. Outcome: stderr's first line says at once what it waits for, who
    holds it (this pid) and that it gives up after 0.2s, naming --lock-timeout; then one
    error line, exit 4, saying it waited 0.2s (the option, not the variable); the tree,
    state included, as it was."""
    from sgpatch.state.lock import LOCK_TIMEOUT_ENV, locked

    pkg, _sets, args = make_env(tmp_path)
    if argv == "recover":
        assert fork_cli(["apply", *args], kill_at=8) == ("killed", 9)
        argv_full: tuple[str, ...] = ("recover", "--sglang-dir", str(pkg))
    else:
        if argv == "revert":
            assert run_cli("apply", *args)[0] == 0
        argv_full = (argv, *args)
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "600")
    before = with_state(pkg)
    with locked(pkg / ".sgpatch"):
        code, _out, err = run_cli(*argv_full, "--lock-timeout", "0.2")
    waiting = err.partition("\n")[0]
    assert f"held by pid {os.getpid()}" in waiting and "giving up after 0.2s" in waiting, err
    assert "--lock-timeout SECONDS" in waiting
    assert code == 4 and "waited 0.2s" in waited_then_error(err)
    assert with_state(pkg) == before


def test_a_free_lock_says_nothing_about_waiting(tmp_path):
    """Input: `apply --lock-timeout 5` then `revert --lock-timeout 0` with nobody holding the
    lock. Outcome: both exit 0 and neither prints a waiting line."""
    _pkg, _sets, args = make_env(tmp_path)
    for argv in ("apply", "revert"):
        code, _out, err = run_cli(argv, *args, "--lock-timeout", "5" if argv == "apply" else "0")
        assert code == 0 and "waiting for" not in err, err


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_a_bad_lock_timeout_is_bad_input(tmp_path, value):
    """Input: `apply --lock-timeout V` for a negative number, nan and a word. Outcome: exit 2
    naming --lock-timeout, nothing written (no `.sgpatch/`)."""
    pkg, _sets, args = make_env(tmp_path)
    before = with_state(pkg)
    code, _out, err = run_cli("apply", *args, "--lock-timeout", value)
    assert code == 2 and "--lock-timeout" in err, err
    assert with_state(pkg) == before
