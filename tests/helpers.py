"""Small builders shared by the unit tests: make diffs and run the engine on lists of lines."""

from __future__ import annotations

import base64
import contextlib
import difflib
import hashlib
import json
import os
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from sgpatch.diff.unified import Patch, parse_patch, split_lines
from sgpatch.errors import SgpatchError
from sgpatch.fs import steps
from sgpatch.placement.engine import FileResult, apply_hunks
from sgpatch.releases import download


def make_diff(old: str, new: str, path: str = "f.py", n: int = 3) -> str:
    """A git-style unified diff of two texts (what `diff -u` / `git diff` would write)."""
    body = difflib.unified_diff(
        split_lines(old), split_lines(new), f"a/{path}", f"b/{path}", n=n, lineterm="\n"
    )
    out = []
    for line in body:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def patch_of(old: str, new: str, path: str = "f.py", n: int = 3) -> Patch:
    return parse_patch(make_diff(old, new, path, n), "test.patch")


def run(text: str, patch: Patch | str, fuzz: int = 0, reverse: bool = False) -> FileResult:
    if isinstance(patch, str):
        patch = parse_patch(patch, "test.patch")
    return apply_hunks(split_lines(text), patch.files[0].hunks, fuzz=fuzz, reverse=reverse)


def text(result: FileResult) -> str:
    return "".join(result.lines)


def lines(*items: str) -> str:
    return "".join(f"{i}\n" for i in items)


def statuses(result: FileResult) -> list[str]:
    return [h.status for h in result.hunks]


def numbered(prefix: str, count: int) -> Sequence[str]:
    return [f"{prefix}{i}" for i in range(count)]


def sgpatch(*args: str) -> int:
    """Run the CLI in-process (fast: no interpreter start-up) and return its exit code."""
    from sgpatch.cli.app import main

    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def git(repo, *args: str) -> str:
    """Run git in `repo` with a fixed identity and no user/system config; return stdout."""
    import os
    import subprocess

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    out = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return out.stdout.decode().strip()


def run_cli(*argv: str) -> tuple[int, str, str]:
    """sgpatch in-process with its own capture: (exit code, stdout, stderr). For tests that
    cannot use capsys (forked children, several runs per test)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = sgpatch(*argv)
    return code, out.getvalue(), err.getvalue()


# --- shared fixtures formerly in tests/state/test_txn.py

SET = "safety-set"


A = lines(*numbered("alpha", 12))


B = lines(*numbered("beta", 12))


C = lines(*numbered("gamma", 12))


D = lines("def new():", "    return 4")


FILES = {"srt/a.py": A, "srt/layers/b.py": B, "srt/models/c.py": C}


def manifest(extra: str = "") -> str:
    def patch(pid: str, n: int) -> str:
        return f"""  - id: {pid}
    summary: {pid}
    type: feature
    upstream: {{status: pending}}
    variants:
      - {{sglang: ">=0.5.0", patch: patches/000{n}-{pid}.patch}}
"""

    return (
        f'schema: 1\nname: {SET}\nsummary: safety demo\nsglang: ">=0.5.0,<0.6"\npatches:\n'
        + patch("pa", 1)
        + patch("pb", 2)
        + patch("pc", 3)
        + patch("pd", 4)
        + extra
    )


def write_set(sets: Path, text: str | None = None) -> Path:
    d = sets / SET
    (d / "patches").mkdir(parents=True, exist_ok=True)
    (d / "patchset.yaml").write_text(text if text is not None else manifest())
    p = d / "patches"
    (p / "0001-pa.patch").write_text(
        "Patch a.\n\n" + make_diff(A, A.replace("alpha5\n", "ALPHA5\n"), "python/sglang/srt/a.py")
    )
    (p / "0002-pb.patch").write_text(
        make_diff(B, B.replace("beta6\n", "BETA6\n"), "python/sglang/srt/layers/b.py")
    )
    (p / "0003-pc.patch").write_text(
        make_diff(C, C.replace("gamma7\n", "GAMMA7\n"), "python/sglang/srt/models/c.py")
    )
    (p / "0004-pd.patch").write_text(
        "--- /dev/null\n+++ b/python/sglang/srt/extra/d.py\n@@ -0,0 +1,2 @@\n"
        "+def new():\n+    return 4\n"
    )
    return d


def make_env(tmp_path: Path, version: str = "0.5.9") -> tuple[Path, Path, tuple[str, ...]]:
    """(package root, sets folder, common CLI args) for a fresh synthetic tree and set."""
    site = tmp_path / "site"
    pkg = site / "sglang"
    for rel, text in FILES.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    (pkg / "_version.py").write_text(f"__version__ = version = '{version}'\n")
    sets = tmp_path / "sets"
    write_set(sets)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    return pkg, sets, args


def tree_snapshot(root: Path) -> dict[str, object]:
    """Files (bytes, mode) and folders under root, sgpatch's state folder left out."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".sgpatch":
            continue
        if p.is_symlink():
            out[rel.as_posix()] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel.as_posix()] = "dir"
        elif p.is_file():
            out[rel.as_posix()] = (p.read_bytes(), p.stat().st_mode & 0o7777)
        else:
            out[rel.as_posix()] = "special"
    return out


def printed_json(doc: dict) -> str:
    """A command's --json document as sgpatch prints it (schema 1 first, indented by two):
    what a test compares stdout with to pin the document byte for byte, key order included."""
    return json.dumps({"schema": 1, **doc}, indent=2) + "\n"


def one_line_error(err: str) -> str:
    assert "Traceback" not in err, err
    assert err.startswith("sgpatch: error:"), err
    assert err.count("\n") == 1, err
    return err


def waited_then_error(err: str) -> str:
    """stderr of a run that found a lock held: the line saying at once what it waits for
    (issue 45.4), then its one-line error. Returns the error line."""
    first, _, rest = err.partition("\n")
    assert first.startswith("sgpatch: waiting for ") and "giving up after" in first, err
    return one_line_error(rest)


def patched(pkg: Path) -> bool:
    return (pkg / "srt/extra/d.py").exists() and "GAMMA7" in (pkg / "srt/models/c.py").read_text()


# --- shared fixtures formerly in tests/state/test_drift.py


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def add_dist_info(pkg: Path, version: str = "0.5.9") -> Path:
    """A dist-info beside the package whose RECORD matches the tree as it is now."""
    di = pkg.parent / f"sglang-{version}.dist-info"
    di.mkdir()
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    rows = []
    for p in sorted(pkg.rglob("*")):
        if p.is_file() and ".sgpatch" not in p.parts:
            data = p.read_bytes()
            rows.append(f"sglang/{p.relative_to(pkg).as_posix()},{_record_hash(data)},{len(data)}")
    rows += [f"{di.name}/METADATA,,", f"{di.name}/RECORD,,"]
    (di / "RECORD").write_text("\n".join(rows) + "\n")
    return di


# --- shared fixtures formerly in tests/releases/test_cache.py

WHEEL_FILES = {
    "sglang/__init__.py": b"from sglang.version import __version__\n",
    "sglang/_version.py": b"__version__ = version = '9.9.9'\n",
    "sglang/srt/models/kimi_k25.py": b"class Kimi:\n    pass\n",
    "sglang/srt/data/table.json": b"{}\n",
    "sglang/bin/run.sh": b"#!/bin/sh\necho hi\n",
}


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    where: Path,
    version: str = "9.9.9",
    files: dict[str, bytes] | None = None,
    *,
    record_overrides: dict[str, str] | None = None,
    unlisted: dict[str, bytes] | None = None,
    tag: str = "py3-none-any",
) -> Path:
    """Write a minimal sglang wheel whose RECORD matches `files` (unless told otherwise)."""
    files = dict(WHEEL_FILES if files is None else files)
    dist = f"sglang-{version}.dist-info"
    files[f"{dist}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n".encode()
    )
    rows = {name: _digest(data) for name, data in files.items()}
    rows.update(record_overrides or {})
    record = "".join(f"{n},{h},{len(files.get(n, b''))}\n" for n, h in rows.items())
    record += f"{dist}/RECORD,,\n"
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"sglang-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**files, **(unlisted or {})}.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o755 if name.endswith(".sh") else 0o644) << 16
            zf.writestr(info, data)
        zf.writestr(f"{dist}/RECORD", record)
    return path


def _move(wheel: Path, dest: Path) -> Path:
    """What a successful `pip download -d dest` leaves behind."""
    os.replace(wheel, dest / wheel.name)
    return dest / wheel.name


def fake_index(monkeypatch: pytest.MonkeyPatch, listing: str | None = None) -> None:
    """`pip index versions` answers `listing` (its stdout), or (None) cannot reach the index,
    so the release cache stands in."""

    def answer(_pre: bool) -> str:
        if listing is None:
            raise OSError("no index in the tests")
        return listing

    monkeypatch.setattr("sgpatch.releases.index._pip_index_versions", answer)


def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$SGPATCH_CACHE pointed at an empty tmp_path/cache; any download fails loudly (shared
    with tests/test_port.py, which fills it with wheels)."""
    c = tmp_path / "cache"
    monkeypatch.setenv("SGPATCH_CACHE", str(c))

    def no_network(version: str, dest: Path) -> Path:
        raise SgpatchError(f"test tried to download sglang=={version}")

    monkeypatch.setattr(download, "_pip_download", no_network)
    return c


# --- shared fixtures formerly in tests/port/test_port.py

FILLER = "".join(f"# filler {i}\n" for i in range(12))


def port_module(top: str = "", x: str = "    x = 1\n", y: str = "    y = 2\n") -> str:
    """srt/mod.py of a synthetic release: a class and a module-level function far apart."""
    return (
        f"import os\n{top}\n\nclass A:\n    def f(self):\n        return 1\n\n"
        f"    def g(self):\n        return 2\n\n{FILLER}\ndef helper():\n{x}    z = 0\n{y}"
        "    return x + y + z\n"
    )


V10 = port_module()


V11 = port_module(top="import sys\nimport re\n", x="    x = 10\n")  # offset + context drift


V12 = port_module(top="import sys\n", y="    y = 3\n")  # the line the patch changes changed


V13 = V12  # nothing new


def release_files(text: str, version: str, extra: dict[str, bytes] | None = None):
    return {
        "sglang/__init__.py": b"",
        "sglang/_version.py": f"__version__ = version = '{version}'\n".encode(),
        "sglang/srt/__init__.py": b"",
        "sglang/srt/mod.py": text.encode(),
        "sglang/srt/other.py": b"def other():\n    return 0\n",
        **(extra or {}),
    }


PATCHED10 = V10.replace("        return 1\n", "        return 100\n").replace(
    "    y = 2\n", "    y = 20\n"
)


def port_diff(old: str, new: str, path: str = "srt/mod.py") -> str:
    from helpers import make_diff

    return make_diff(old, new, f"python/sglang/{path}")


PORT_MANIFEST = """\
# a set made on 1.0 (this comment must survive every edit)
schema: 1
name: demo
summary: demo set
sglang: ">=1.0,<1.1"
patches:
  - id: first
    summary: first
    type: bugfix
    upstream: {{status: pending}}
    variants:
      - {{sglang: ">=1.0,<1.1", patch: patches/1.0/0001-first.patch}}
  - id: second
    summary: second
    type: bugfix
    upstream: {{status: pending}}{probe}
    variants:
      - {{sglang: ">=1.0,<1.1", patch: patches/1.0/0002-second.patch}}
"""


def make_set(root: Path, second: str | None = None, probe: str = "") -> Path:
    """Set `demo` with patch `first` (two hunks in srt/mod.py) and `second` (srt/other.py)."""
    d = root / "sets" / "demo"
    (d / "patches" / "1.0").mkdir(parents=True)
    (d / "patches/1.0/0001-first.patch").write_text(
        "Subject: first\n\n" + port_diff(V10, PATCHED10)
    )
    other = "def other():\n    return 0\n"
    second = second or port_diff(other, other.replace("0\n", "42\n"), "srt/other.py")
    (d / "patches/1.0/0002-second.patch").write_text("Subject: second\n\n" + second)
    (d / "patchset.yaml").write_text(PORT_MANIFEST.format(probe=probe))
    return d


def one_patch_set(root: Path, diff: str, pid: str = "mover", version: str = "1.0") -> Path:
    """Set `demo` of one patch `pid` made on `version` (`==version`), its file `diff`."""
    d = root / "sets" / "demo"
    (d / "patches" / version).mkdir(parents=True)
    (d / f"patches/{version}/0001-{pid}.patch").write_text(f"Subject: {pid}\n\n{diff}")
    (d / "patchset.yaml").write_text(
        f'schema: 1\nname: demo\nsummary: demo set\nsglang: "=={version}"\npatches:\n'
        f"  - id: {pid}\n    summary: {pid}\n    type: bugfix\n    upstream: {{status: pending}}\n"
        f'    variants:\n      - {{sglang: "=={version}", '
        f"patch: patches/{version}/0001-{pid}.patch}}\n"
    )
    return d


def probe_set(tmp_path: Path, probe: str, spec: str = ">=1.0,<1.1") -> Path:
    """`demo`: `first` (srt/mod.py) and `second` (other.py returns the_answer_to(42)), whose
    probe is `probe` (YAML lines under `probe:`), both variants and the set on `spec`."""
    from sgpatch.patchset.manifest import load_manifest

    other = "def other():\n    return 0\n"
    answer = "def other():\n    return the_answer_to(42)\n"
    d = make_set(tmp_path, second=port_diff(other, answer, "srt/other.py"))
    text = (d / "patchset.yaml").read_text().replace(">=1.0,<1.1", spec)
    body = "".join(f"      {ln}\n" for ln in probe.splitlines())
    second = f'    variants:\n      - {{sglang: "{spec}", patch: patches/1.0/0002'
    head = "upstream: {status: pending}\n"
    text = text.replace(head + second, head + "    probe:\n" + body + second)
    (d / "patchset.yaml").write_text(text)
    assert load_manifest(d / "patchset.yaml").patch("second").probe is not None
    return d


def apply_to(tmp: Path, sets: Path, version: str, text: str) -> bytes:
    """Apply the (ported) set to a fresh tree of `version`; return srt/mod.py."""
    pkg = tmp / f"tree-{version}" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    for name, data in release_files(text, version).items():
        (pkg.parent / name).write_bytes(data)
    code, _o, err = run_cli("apply", "--set", "demo", "--patchsets", str(sets), "--sglang-dir",
                            str(pkg))  # fmt: skip
    assert code == 0, err
    return (pkg / "srt/mod.py").read_bytes()


# --- real third-party stacks (tests/data/stacks) as patch sets

STACKS = Path(__file__).resolve().parent / "data" / "stacks"


def stack_set(project: str, version: str, dest: Path) -> Path:
    """A set `project` with one patch per file of the project's stack for `version` (its
    `series` order), each variant `==version`: the stack as the project keeps it. Patch ids
    are the file names, lower-cased, runs of other characters turned into `-`."""
    import re
    import shutil

    src = STACKS / project / version
    d = dest / project
    (d / "patches" / version).mkdir(parents=True)
    text = f'schema: 1\nname: {project}\nsummary: s\nsglang: "=={version}"\npatches:\n'
    for n, name in enumerate((src / "series").read_text().split(), 1):
        pid = re.sub(r"[^a-z0-9]+", "-", Path(name).stem.lower()).strip("-")
        rel = f"patches/{version}/{n:04d}-{pid}.patch"
        shutil.copyfile(src / name, d / rel)
        text += (f"  - id: {pid}\n    summary: {name}\n    type: feature\n"
                 f"    upstream: {{status: pending}}\n    variants:\n"
                 f"      - {{sglang: \"=={version}\", patch: {rel}}}\n")  # fmt: skip
    (d / "patchset.yaml").write_text(text)
    return d


# --- hostile owners and dropped privileges (issue 22): CI runs as root, where mode bits do not
# stop writes, so "another user's file" and "unwritable" are built and run for real

NOBODY = 65534  # nobody:nogroup on Debian and most images
OTHER = 4242  # a uid and gid no account has: "another user"

root_only = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root (as CI runs): builds other users' files and drops privileges",
)


def chown_tree(top: Path, uid: int) -> None:
    """Give `top` and everything under it (links themselves, never followed) to uid:uid: a
    tree another user owns, as `tar` unpacks an sdist with its uid."""
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)
    os.chown(top, uid, uid)


SNAPSHOT_BYTES = 256 << 20  # a file larger is compared by size and mtime, never read whole


def full_snapshot(root: Path, with_state: bool = False) -> dict[str, object]:
    """Every entry under root: kind, bytes or link target, mode and owner (uid, gid), folders
    included (a file over 256 MiB: its size and mtime); sgpatch's `.sgpatch/` left out unless
    `with_state`."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".sgpatch" and not with_state:
            continue
        st = p.lstat()
        owner = (st.st_mode & 0o7777, st.st_uid, st.st_gid)
        if p.is_symlink():
            out[rel.as_posix()] = ("link", os.readlink(p), owner)
        elif p.is_dir():
            out[rel.as_posix()] = ("dir", owner)
        elif p.is_file() and st.st_size > SNAPSHOT_BYTES:  # a huge (sparse) file: not read
            out[rel.as_posix()] = ("big", st.st_size, st.st_mtime_ns, owner)
        elif p.is_file():
            out[rel.as_posix()] = ("file", p.read_bytes(), owner)
        else:
            out[rel.as_posix()] = ("special", owner)
    return out


def without_owners(snapshot: dict[str, object]) -> dict[str, object]:
    """A `full_snapshot` without owners: kind, bytes (or link target) and mode bits."""
    return {k: (*v[:-1], v[-1][0]) for k, v in snapshot.items()}  # type: ignore[index]


def with_state(root: Path) -> dict[str, object]:
    """`full_snapshot` with sgpatch's state folder, but for the lock's own files (`lock`, and
    `lock.owner` while a run holds it): the lock of a run that refused is no state."""
    snap = full_snapshot(root, with_state=True)
    return {k: v for k, v in snap.items() if k not in (".sgpatch/lock", ".sgpatch/lock.owner")}


@contextlib.contextmanager
def reachable_dir(prefix: str = "sgpatch-test-") -> Iterator[Path]:
    """A fresh folder under the system temp folder that every user can enter, removed
    afterwards. pytest's tmp_path sits under root's 0700 `pytest-of-root/`, which a process
    dropped to nobody cannot reach (and pytest resets its mode on each run)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    try:
        path.chmod(0o755)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


_READABLE: list[Path] = []  # this test process's readable copy of the code (made once)


def readable_code() -> Path:
    """sgpatch and every package it imports, copied once per test process into a folder any
    user can read (removed at exit): a process that dropped root cannot import them from a
    clone inside a 0700 folder (`mktemp -d`, a private home) nor from its venv (issue 45.1).
    Run with the base interpreter and PYTHONPATH set to it (`sgpatch_as`)."""
    if _READABLE:
        return _READABLE[0]
    import atexit
    import importlib.metadata as metadata
    import shutil
    import tempfile

    from packaging.requirements import Requirement

    top = Path(tempfile.mkdtemp(prefix="sgpatch-test-code-")).resolve()
    atexit.register(shutil.rmtree, top, True)
    import sgpatch

    shutil.copytree(Path(sgpatch.__file__).parent, top / "sgpatch",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    seen, todo = {"sgpatch"}, list(metadata.requires("sgpatch") or [])
    while todo:
        req = Requirement(todo.pop())
        name = req.name.lower().replace("_", "-")
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        dist = metadata.distribution(req.name)
        todo += dist.requires or []
        for f in dist.files or []:
            src = Path(str(dist.locate_file(f)))
            if f.parts[0] != ".." and src.is_file():
                (top / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, top / f)
    for d in [top, *top.rglob("*")]:
        d.chmod(0o755 if d.is_dir() else 0o644)
    _READABLE.append(top)
    return top


def sgpatch_as(
    uid: int, gid: int, *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m sgpatch ARGV` in a real process that dropped root for uid:gid, with no
    supplementary groups and no capabilities, importing sgpatch from `readable_code()` with
    the venv's base interpreter (that user may not enter the clone or its venv). Through
    `setpriv` where there is one: it drops them as it execs; else subprocess's own
    user/group/extra_groups. An interpreter that user cannot start is a skip, with the
    reason."""
    import shutil

    base = {k: v for k, v in os.environ.items() if not k.startswith(("SGPATCH_TEST", "PYTHON"))}
    base.update({"HOME": str(cwd or "/nonexistent"), "SGPATCH_LOCK_TIMEOUT": "5"})
    base.update({"PYTHONPATH": str(readable_code()), "PYTHONNOUSERSITE": "1",
                 "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    cmd = [python, "-m", "sgpatch", *argv]
    drop: dict[str, object] = {"user": uid, "group": gid, "extra_groups": []}
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        cmd = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *cmd]
        drop = {}
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env={**base, **(env or {})},
            cwd=cwd or "/",
            check=False,
            **drop,  # type: ignore[arg-type]
        )
    except PermissionError:  # subprocess's own exec, as that user
        pytest.skip(f"{python} cannot be started as uid {uid}: a folder above it is private")
    if proc.returncode in (126, 127) and (
        "error while loading shared libraries" in proc.stderr or "setpriv:" in proc.stderr
    ):
        pytest.skip(f"{python} cannot start as uid {uid}: {proc.stderr.strip()[:200]}")
    return proc


def port_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, versions=("1.0", "1.1", "1.2", "1.3")
) -> Path:
    """A private release cache holding synthetic releases (1.0: V10, 1.1: V11, 1.2/1.3: V12,
    any other: V10); downloads fail loudly."""
    c = offline_cache(tmp_path, monkeypatch)
    texts = {"1.0": V10, "1.1": V11, "1.2": V12, "1.3": V13}
    for v in versions:
        make_wheel(c / "wheels", v, release_files(texts.get(v, V10), v))
    return c


def fd_path(name: str | os.PathLike[str], dir_fd: int | None = None) -> str:
    """The path a call such as os.replace(src, dst, dst_dir_fd=FD) acts on, for a test's
    fault injection: sgpatch writes relative to folder descriptors (sgpatch.fs)."""
    if dir_fd is None:
        return os.fspath(name)
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fspath(name))


def failing_replace(when: Callable[[str], bool], error: BaseException) -> Callable[..., None]:
    """An os.replace that raises `error` when `when(destination path)` says so."""
    real = os.replace

    def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        if when(fd_path(dst, dst_dir_fd)):
            raise error
        return real(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    return replace


def fork_cli(argv: Sequence[str], kill_at: int | None = None, sig: str = "KILL") -> tuple[str, int]:
    """sgpatch in a forked child (output dropped), sent signal `sig` at write step `kill_at`
    (the test-only hook of sgpatch.fs.steps, which port's workspace writes count in too).
    Returns ("killed", signal number) or ("exit", code): a SIGKILL is a real crash (no
    `finally`, no flush)."""

    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 99
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            if kill_at is not None:
                os.environ[steps.KILL_ENV] = str(kill_at)
                os.environ[steps.SIGNAL_ENV] = sig
            steps.reset()
            code = sgpatch(*argv)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "killed", os.WTERMSIG(status)
    return "exit", os.WEXITSTATUS(status)


# ---------------------------------------------------------------------------------------------
# port on synthetic releases (tests/port): the JSON run, a set stopped on 1.2, two-file sets


def sgport(*args: str) -> tuple[int, dict]:
    """`sgpatch port --offline --json ARGS`: the exit code and the JSON document."""
    code, out, _err = run_cli("port", "--offline", "--json", *args)
    return code, json.loads(out)


def by_id(doc: dict, step: int = -1) -> dict[str, dict]:
    return {p["id"]: p for p in doc["steps"][step]["patches"]}


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file's bytes under `d`, by relative path."""
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


# ---------------------------------------------------------------------------------------------
# stopped -> fix -> --continue / --abort


def port_onto(cache: Path, tmp_path: Path, set_dir: Path, version: str, files: dict):
    """`files` (wheel-relative name -> bytes) cached as release `version`, and the demo set at
    `set_dir` ported onto it in W = tmp_path/w (offline, --json): W, the exit code, the
    document."""
    make_wheel(cache / "wheels", version, files)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(set_dir.parent), "--to", version,
                       "--workspace", str(w))  # fmt: skip
    return w, code, doc


def start_conflict(tmp_path) -> tuple[Path, Path, int, dict]:
    """The set ported to 1.2, where `first` stops."""
    d = make_set(tmp_path)
    w = tmp_path / "w"
    code, doc = sgport("--set", "demo", "--patchsets", str(d.parent), "--to", "1.2",
                       "--workspace", str(w))  # fmt: skip
    return d, w, code, doc


def port_applied(tmp: Path, set_dir: Path, version: str, files: dict, rels: list[str]) -> dict:
    """`sgpatch apply` of the set to a fresh tree holding `files`; the bytes of `rels`."""
    pkg = tmp / f"applied-{version}" / "sglang"
    for name, data in files.items():
        (pkg.parent / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg.parent / name).write_bytes(data)
    code, _o, err = run_cli("apply", "--set", "demo", "--patchsets", str(set_dir.parent),
                            "--sglang-dir", str(pkg))  # fmt: skip
    assert code == 0, err
    return {r: (pkg / r).read_bytes() for r in rels}


# ---------------------------------------------------------------------------------------------
# file by file: a later patch goes on with the files no stopped patch holds

PORT_OTHER = "def other():\n    return 0\n\n\ndef another():\n    return 1\n"


def two_file_set(tmp_path: Path, first_other: bool) -> Path:
    """`first`: mod.py's two hunks (stops on 1.2), plus, with `first_other`, other.py's
    `another` -> 11. `second`: other.py's `other` -> 42 and mod.py's `g` -> 200 (on top of
    `first`)."""
    d = make_set(tmp_path)
    other_1 = PORT_OTHER.replace("return 1\n", "return 11\n") if first_other else PORT_OTHER
    first = port_diff(V10, PATCHED10) + (
        port_diff(PORT_OTHER, other_1, "srt/other.py") if first_other else ""
    )
    second = port_diff(other_1, other_1.replace("return 0\n", "return 42\n"), "srt/other.py")
    second += port_diff(PATCHED10, PATCHED10.replace("        return 2\n", "        return 200\n"))
    (d / "patches/1.0/0001-first.patch").write_text("Subject: first\n\n" + first)
    (d / "patches/1.0/0002-second.patch").write_text("Subject: second\n\n" + second)
    return d


def other_release(cache: Path, version: str) -> dict[str, bytes]:
    files = release_files(V12, version, {"sglang/srt/other.py": PORT_OTHER.encode()})
    make_wheel(cache / "wheels", version, files)
    return files


FIXED12 = V12.replace("        return 1\n", "        return 100\n").replace(
    "    y = 3\n", "    y = 30\n"
)  # what a person makes of `first` on 1.2's code: upstream's y = 3 kept, the patch's 30


def forced_abort(tmp_path: Path, others: dict[str, str]) -> tuple[Path, str]:
    """A port stopped at 1.2 (start_conflict), mod.py fixed by hand (FIXED12) and `others`
    (W-relative path -> text) written, then `port --abort --force` (exit 0 asserted): W and
    the abort's one stderr line."""
    _d, w, _code, _ = start_conflict(tmp_path)
    (w / "sglang/srt/mod.py").write_text(FIXED12)
    for rel, text in others.items():
        (w / rel).write_text(text)
    code, _out, err = run_cli("port", "--abort", "--force", "--workspace", str(w))
    assert code == 0, err
    (line,) = err.splitlines()
    return w, line


@contextlib.contextmanager
def no_hang(seconds: int = 20) -> Iterator[None]:
    """A FIFO opened for reading blocks forever: fail the test with a TimeoutError instead of
    hanging the suite (raised inside sgpatch, its error boundary reports it as exit 70)."""

    def stop(*_args: object) -> None:
        raise TimeoutError(f"blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def hint_commands(text: str) -> list[list[str]]:
    """The argv (without `sgpatch`) of every command a message advises in backticks
    (`sgpatch ...`), split as a POSIX shell would: to run advice as typed."""
    import re
    import shlex

    return [shlex.split(m)[1:] for m in re.findall(r"`(sgpatch [^`]*)`", text)]


# ---------------------------------------------------------------------------------------------
# symlinks and the execute bit through a port (issue 42): what a rewritten patch must keep

ALIAS = "../srt/mod.py"  # srt/alias.py -> srt/mod.py: a symlink inside the package
SCRIPT = b"#!/bin/sh\necho hi\n"
KINDS = {"srt/alias.py": ("link", ALIAS), "srt/run.sh": ("exec", SCRIPT),
         "srt/__init__.py": ("exec", b"")}  # fmt: skip


def modes_set(tmp_path: Path) -> Path:
    """Set `demo` whose `first` makes srt/alias.py a symlink to mod.py, creates the
    executable srt/run.sh, makes srt/__init__.py executable (a mode change alone) and changes
    srt/mod.py with two hunks (on 1.1 the second needs a merge; on 1.2 the patch stops)."""
    from sgpatch.diff.canonical import EXECUTABLE, REGULAR, SYMLINK, FileDiff, canonical_diff

    d = make_set(tmp_path)
    diff = canonical_diff([
        FileDiff("srt/mod.py", V10.encode(), PATCHED10.encode()),
        FileDiff("srt/alias.py", None, ALIAS.encode(), new_mode=SYMLINK),
        FileDiff("srt/run.sh", None, SCRIPT, new_mode=EXECUTABLE),
        FileDiff("srt/__init__.py", b"", b"", REGULAR, EXECUTABLE),
    ])  # fmt: skip
    (d / "patches/1.0/0001-first.patch").write_text("Subject: first\n\n" + diff)
    return d


def kinds_in(pkg: Path) -> dict[str, tuple[str, object]]:
    """What a tree holds at the paths of KINDS: ("link", target), or ("exec" | "file",
    bytes) by the file's execute bit (None: absent)."""
    out: dict[str, tuple[str, object]] = {}
    for rel in KINDS:
        p = pkg / rel
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = ("exec" if p.stat().st_mode & 0o111 else "file", p.read_bytes())
    return out


MODE_BLOCKS = (  # how a canonical patch file says each of KINDS
    "diff --git a/python/sglang/srt/__init__.py b/python/sglang/srt/__init__.py\n"
    "old mode 100644\nnew mode 100755\n",
    "diff --git a/python/sglang/srt/alias.py b/python/sglang/srt/alias.py\nnew file mode 120000\n",
    "diff --git a/python/sglang/srt/run.sh b/python/sglang/srt/run.sh\nnew file mode 100755\n",
)


# ---------------------------------------------------------------------------------------------
# imports that no longer resolve (issue 42.4): upstream moves the fla kernels between releases

FLA_OLD = "srt/layers/attention/fla"
FLA_NEW = "kernels/ops/attention/fla"
FLA_IMPORT = "from sglang.srt.layers.attention.fla.fused_recurrent import fused_recurrent_rule\n"


def fla_chunk(folder: str) -> str:
    """chunk.py of the fla kernels in `folder`, importing its sibling by absolute name."""
    return (
        f"from sglang.{folder.replace('/', '.')}.utils import cdiv\n\n\n"
        "def chunk(x):\n    y = cdiv(x)\n    return y\n"
    )


def fla_patched(folder: str) -> str:
    """chunk.py with the set's change: it imports fused_recurrent from the OLD folder (right
    on 1.0, dead once upstream moved the folder) and calls it."""
    return (
        fla_chunk(folder)
        .replace("\n\n\n", "\n" + FLA_IMPORT + "\n\n", 1)
        .replace("    return y\n", "    return fused_recurrent_rule(y)\n")
    )


def fla_release_files(version: str, folder: str) -> dict[str, bytes]:
    """A release whose fla kernels live in `folder` (FLA_OLD on 1.0, FLA_NEW after the move)."""
    return {
        "sglang/__init__.py": b"",
        "sglang/_version.py": f"__version__ = version = '{version}'\n".encode(),
        "sglang/srt/__init__.py": b"",
        f"sglang/{folder}/__init__.py": b"",
        f"sglang/{folder}/chunk.py": fla_chunk(folder).encode(),
        f"sglang/{folder}/utils.py": b"def cdiv(a):\n    return a\n",
        f"sglang/{folder}/fused_recurrent.py": b"def fused_recurrent_rule(x):\n    return x\n",
    }


def fla_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private release cache: 1.0 with the fla kernels under srt/layers/attention/fla, 1.1
    with them moved to kernels/ops/attention/fla; downloads fail loudly."""
    c = offline_cache(tmp_path, monkeypatch)
    make_wheel(c / "wheels", "1.0", fla_release_files("1.0", FLA_OLD))
    make_wheel(c / "wheels", "1.1", fla_release_files("1.1", FLA_NEW))
    return c


def fla_set(root: Path, folder: str = FLA_OLD, version: str = "1.0") -> Path:
    """Set `demo`, one patch `fla` (==version) adding the old-folder import to `folder`'s
    chunk.py: on 1.0 as its author wrote it; with FLA_NEW on 1.1, as a port carried it."""
    diff = port_diff(fla_chunk(folder), fla_patched(folder), f"{folder}/chunk.py")
    return one_patch_set(root, diff, "fla", version)
