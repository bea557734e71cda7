"""Odd release-cache layouts: each is one line and exit 2, nothing written, nothing left in /tmp."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from helpers import make_wheel, no_hang, offline_cache, run_cli


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache (downloads fail loudly) and a private temp folder to check for leftovers."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return offline_cache(tmp_path, monkeypatch)


def _fetch(tmp_path: Path) -> tuple[int, str]:
    with no_hang():
        code, _out, err = run_cli("fetch", "9.9.9", "--dest", str(tmp_path / "tree"))
    return code, err


def _one_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), err


def _layouts(cache: Path) -> dict[str, tuple[object, str]]:
    """name -> (make the odd layout, what the line names)."""
    wheels = cache / "wheels"
    whl = wheels / "sglang-9.9.9-py3-none-any.whl"

    def cache_a_file():
        cache.write_text("not a folder\n")

    def wheels_a_file():
        cache.mkdir()
        wheels.write_text("not a folder\n")

    def verified_a_file():
        make_wheel(wheels)
        (wheels / ".verified").write_text("not a folder\n")

    def wheels_dangling_link():
        cache.mkdir()
        wheels.symlink_to(cache / "elsewhere")

    def wheel_dangling_link():
        wheels.mkdir(parents=True)
        whl.symlink_to(cache / "gone.whl")

    def wheel_fifo():
        wheels.mkdir(parents=True)
        os.mkfifo(whl)

    def stamp_fifo():
        make_wheel(wheels)
        (wheels / ".verified").mkdir()
        os.mkfifo(wheels / ".verified" / f"{whl.name}.ok")

    def lock_a_link():
        wheels.mkdir(parents=True)
        (cache / "precious").write_text("keep me\n")
        (wheels / ".sglang-9.9.9.lock").symlink_to(cache / "precious")

    return {
        "cache-a-file": (cache_a_file, f"{cache} is a file"),
        "wheels-a-file": (wheels_a_file, f"{wheels} is a file"),
        "verified-a-file": (verified_a_file, f"{wheels / '.verified'} is a file"),
        "wheels-dangling-link": (wheels_dangling_link, f"{wheels} is a dangling symbolic link"),
        "wheel-dangling-link": (wheel_dangling_link, f"{whl} is a symbolic link"),
        "wheel-fifo": (wheel_fifo, f"{whl} is a FIFO"),
        "stamp-fifo": (stamp_fifo, "is a FIFO"),
        "lock-a-link": (lock_a_link, "lock is a symbolic link"),
    }


@pytest.mark.parametrize("name", list(_layouts(Path("/x"))))
def test_an_odd_cache_layout_is_one_line_and_exit_2(cache: Path, tmp_path: Path, name: str):
    """Input: `sgpatch fetch 9.9.9 --dest D` with the cache laid out oddly: $SGPATCH_CACHE a
    file, wheels/ a file or a dangling link, wheels/.verified a file, the wheel a dangling link
    or a FIFO, its
    stamp a FIFO, the download lock a link to another file. Outcome: one line naming the path
    and what is there, exit 2, no traceback, no hang; --dest is not made, nothing is left in
    the temp folder, the cache is byte-identical (the lock's target untouched)."""
    from helpers import tree_snapshot

    make, says = _layouts(cache)[name]
    make()  # type: ignore[operator]
    before = tree_snapshot(tmp_path / "cache") if (tmp_path / "cache").is_dir() else None
    code, err = _fetch(tmp_path)
    assert code == 2
    _one_line(err, "release cache:", says)
    assert not (tmp_path / "tree").exists()
    assert os.listdir(tmp_path / "tmp") == []
    if before is not None:
        assert tree_snapshot(tmp_path / "cache") == before
    if name == "lock-a-link":
        assert (cache / "precious").read_text() == "keep me\n"


def test_wheels_may_be_a_link_to_a_folder(cache: Path, tmp_path: Path) -> None:
    """Input: wheels/ a symbolic link to a folder elsewhere holding the wheel (wheels kept on
    another disk). Outcome: fetch --dest works from it (exit 0), the stamp lands there."""
    make_wheel(tmp_path / "disk" / "wheels")
    cache.mkdir()
    (cache / "wheels").symlink_to(tmp_path / "disk" / "wheels")
    code, err = _fetch(tmp_path)
    assert code == 0, err
    assert (tmp_path / "tree" / "sglang" / "_version.py").is_file()
    assert (tmp_path / "disk" / "wheels" / ".verified").is_dir()


def _as_nobody(work) -> tuple[int, str]:
    """Run `work()` (-> (code, stderr)) in a forked child that dropped root for nobody, as CI
    (root) must to test an unwritable folder; modules are imported by the parent first."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            code, err = work()
            os.write(w, f"{code}\n{err}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    code, _, err = got.partition("\n")
    return int(code or -1), err


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to nobody")
def test_an_unwritable_cache_reads_what_it_has_and_says_it_cannot_download(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Input: a cache nobody can only read, holding 9.9.9 (never stamped), and a fetch of the
    missing 9.9.10, both as nobody. Outcome: 9.9.9 is verified and written to --dest (exit 0;
    the cache unchanged, no stamp); 9.9.10 is one line saying the cache cannot be written and
    how to point $SGPATCH_CACHE elsewhere, exit 2, nothing created anywhere."""
    from helpers import tree_snapshot

    top = Path(tempfile.mkdtemp(prefix="sgpatch-test-ro-"))
    try:
        os.chmod(top, 0o755)
        cache, out = top / "cache", top / "out"
        make_wheel(cache / "wheels")
        out.mkdir()
        os.chmod(out, 0o777)
        monkeypatch.setenv("SGPATCH_CACHE", str(cache))
        assert run_cli("fetch", "9.9.9", "--dest", str(top / "warm"))[0] == 0  # imports, as root
        (cache / "wheels" / ".verified" / "sglang-9.9.9-py3-none-any.whl.ok").unlink()
        before = tree_snapshot(cache)

        def fetch(version: str, dest: Path):
            code, _o, err = run_cli("fetch", version, "--dest", str(dest))
            return code, err

        code, err = _as_nobody(lambda: fetch("9.9.9", out / "t"))
        assert code == 0, err
        assert (out / "t" / "sglang" / "_version.py").is_file()
        code, err = _as_nobody(lambda: fetch("9.9.10", out / "u"))
        assert code == 2
        _one_line(err, "release cache: cannot write", "Permission denied", "$SGPATCH_CACHE")
        assert not (out / "u").exists()
        assert tree_snapshot(cache) == before
    finally:
        import shutil

        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize(
    ("sgpatch_cache", "xdg", "expected"),
    [
        (None, "{tmp}/xdg", "{tmp}/xdg/sgpatch"),
        ("{tmp}/mine", "{tmp}/xdg", "{tmp}/mine"),
        (None, "relative/xdg", "{home}/.cache/sgpatch"),
        (None, None, "{home}/.cache/sgpatch"),
    ],
    ids=["xdg", "sgpatch-cache-wins", "relative-xdg-ignored", "default"],
)
def test_the_cache_follows_xdg_cache_home(tmp_path, monkeypatch, sgpatch_cache, xdg, expected):
    """Input: $SGPATCH_CACHE and $XDG_CACHE_HOME set or not (a relative XDG value, which the
    XDG spec says to ignore). Outcome: the cache is $SGPATCH_CACHE, else $XDG_CACHE_HOME/sgpatch,
    else ~/.cache/sgpatch; `fetch` of a cached wheel reads it from there."""
    from sgpatch.releases.folder import cache_dir

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for var, value in (("SGPATCH_CACHE", sgpatch_cache), ("XDG_CACHE_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value.format(tmp=tmp_path))
    where = Path(expected.format(tmp=tmp_path, home=home))
    assert cache_dir() == where
    make_wheel(where / "wheels", "9.9.9")
    code, _out, err = run_cli("fetch", "9.9.9")
    assert code == 0 and str(where / "wheels") in err
