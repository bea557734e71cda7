"""examples/Dockerfile and examples/Dockerfile.source, built for real with `docker build`, offline.

The machinery is in tests/real/dockerkit.py: a Docker daemon (tools/docker_up.py installs
docker.io and starts dockerd when needed, as root), a Debian base image made once with
debootstrap (python3 + python3-venv, `sgpatch-test-base:<sha12>`), and on it stand-ins for an
SGLang image, made once and kept: a venv at /opt/venv, a wheelhouse pip uses instead of an index
(PIP_NO_INDEX=1, PIP_FIND_LINKS=/wheelhouse), and the real SGLang 0.5.9 release installed either
as a plain site-packages install (its wheel, `pip install --no-deps`) or as an editable source
install at /sgl-workspace/sglang/python (its sdist, `pip install --no-deps --no-build-isolation
-e`), as the lmsysorg/sglang images have it. Every example build runs with `--network=none` and
`--no-cache` (each step really runs), under a file lock, labelled with the run's id, and the run's
images are removed at the end.

The examples are built as a user builds them, with build ARGs only: `BASE_IMAGE` (the stand-in,
never a retagged real image name), `UPGRADE_FLASHINFER=0` (the upgrade needs FlashInfer's own
index), and for Dockerfile.source `SGLANG_SOURCE=context` (the release tree from the build
context instead of a git clone), `APT_PACKAGES=` and `SGLANG_INSTALL_ARGS=--no-deps`. The build
context is a folder with the repository's .dockerignore and `dist/` holding the wheel that
`tools/dist.py` (what `make dist` runs) builds from this working tree.

Under CI (CI=true) or as root (as `make test` runs in CI), a missing daemon is an error with the
reason; otherwise the Docker tests are skipped with it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from . import dockerkit
from .intent import CHECKS, COMM

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SET = "kimi-eagle3-sm120"
VERSION = "0.5.9"  # the release of the examples' defaults (lmsysorg/sglang:v0.5.9-cu130, v0.5.9)
OPTIONAL = "sm120-symm-mem-two-shot-no-multicast"
# The line of srt/layers/communicator.py (0.5.9) that sm120-flashinfer-allreduce-fusion rewrites;
# the conflict builds edit it as a local change or a different base image would.
GATE = "(_is_sm90_supported or _is_sm100_supported)"
GATE_EDITED = "(_is_sm90_supported or _is_sm100_supported or _is_hopper_plus)"
ESC = re.compile(r"\x1b[\[\]()]")  # CSI / OSC / charset escape sequences
# where the stand-in images have SGLang's package root
ROOTS = {
    "site-packages": "/opt/venv/lib/python3.11/site-packages/sglang",
    "checkout": "/sgl-workspace/sglang/python/sglang",
}
LAYOUTS = list(ROOTS)
# a RUN that failed, as BuildKit reports it (20.10: "executor failed running [...]";
# later: 'process "..." did not complete successfully'), with the sgpatch step's command
FAILED_RUN = re.compile(
    r"(?:executor failed running \[/bin/sh -c [^\]]*sgpatch apply[^\]]*\]"
    r'|process "/bin/sh -c [^"]*sgpatch apply[^"]*" did not complete successfully)'
    r": exit code: (\d+)"
)


# ----------------------------------------------------------------------------- the wheel
def make_dist(out: Path) -> Path:
    """`make dist` into `out`: the Makefile runs the same script with the venv's Python."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "dist.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"tools/dist.py failed:\n{proc.stdout}\n{proc.stderr}"
    path, _, digest = proc.stdout.strip().partition(" sha256=")
    wheel = Path(path)
    assert wheel.parent == out and [p.name for p in out.glob("sgpatch-*.whl")] == [wheel.name]
    assert digest == hashlib.sha256(wheel.read_bytes()).hexdigest()
    return wheel


@pytest.fixture(scope="session")
def context(tmp_path_factory) -> Path:
    """A build context as `make dist` leaves the repository: `dist/sgpatch-V-py3-none-any.whl`,
    the repository's .dockerignore, and things it must keep out (a .venv, a stray wheel)."""
    ctx = tmp_path_factory.mktemp("context")
    wheel = make_dist(ctx / "dist")
    with zipfile.ZipFile(wheel) as zf:
        assert f"sgpatch/patchsets/{SET}/patchset.yaml" in zf.namelist(), (
            "the sgpatch wheel does not ship the bundled patch sets"
        )
    shutil.copy2(REPO / ".dockerignore", ctx / ".dockerignore")
    (ctx / ".venv" / "bin").mkdir(parents=True)
    (ctx / ".venv" / "bin" / "sgpatch").write_text("#!/bin/sh\nexit 99\n")
    (ctx / "other-0.1-py3-none-any.whl").write_bytes(b"not sent to the daemon")
    return ctx


# ----------------------------------------------------------------------------- docker
@pytest.fixture(scope="session")
def docker():
    must = os.environ.get("CI") == "true" or os.geteuid() == 0
    try:
        d = dockerkit.connect()
    except dockerkit.Unavailable as e:
        why = f"no Docker daemon can be reached: {e}"
        if must:
            pytest.fail(f"{why} (required under CI=true or as root)")
        pytest.skip(why)
    yield d
    dockerkit.prune(d)


@pytest.fixture(scope="session")
def base(docker) -> str:
    made = dockerkit.base_image(docker)
    if made.seconds is not None:
        print(f"made {made.tag} with debootstrap in {made.seconds:.0f} s", file=sys.stderr)
    return made.tag


@pytest.fixture(scope="session")
def images(docker, base, context):
    """layout -> {"pristine": tag, "edited": tag} of the SGLang stand-in images ("none": no
    SGLang, for Dockerfile.source)."""
    (wheel,) = (context / "dist").glob("sgpatch-*.whl")
    return {
        layout: dockerkit.sglang_images(docker, base, layout, VERSION, wheel)
        for layout in [*LAYOUTS, "none"]
    }


def _build(docker, name: str, ctx: Path, **args: str) -> tuple[int, str, str]:
    t0 = time.monotonic()
    rc, log, tag = dockerkit.build(docker, EXAMPLES / name, ctx, args)
    print(f"docker build {name} {args}: exit {rc} in {time.monotonic() - t0:.1f} s")
    return rc, log, tag


def _in_image(docker, tag: str, *cmd: str) -> subprocess.CompletedProcess:
    proc = docker.run("run", "--rm", "--network=none", tag, *cmd, check=False)
    return subprocess.CompletedProcess(
        cmd, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def _copy_out(docker, tag: str, path: str, dest: Path) -> Path:
    """`docker cp` a folder of the image to `dest` (to check what the build wrote)."""
    cid = docker.out("create", tag)
    try:
        docker.run("cp", f"{cid}:{path}", str(dest))
    finally:
        docker.run("rm", "-f", cid, check=False)
    return dest


# ----------------------------------------------------------------------------- log checks
def _patch_ids() -> list[str]:
    return list(CHECKS)


def _table_rows(log: str) -> dict[str, list[str]]:
    """patch id -> its state in each table of the log. Not a terminal, so a table is plain
    aligned columns, one line per patch: `id [(optional)]  state  how  [note]`."""
    ids = "|".join(re.escape(i) for i in _patch_ids())
    rows: dict[str, list[str]] = {}
    for line in log.splitlines():
        m = re.match(rf"({ids})(?: \(optional\))? {{2,}}(\w[\w/-]*)(?: {{2,}}|$)", line)
        if m:
            rows.setdefault(m.group(1), []).append(m.group(2))
    return rows


def _assert_plain_log(log: str) -> None:
    assert not ESC.search(log), f"colour or control codes in a non-tty build log:\n{log!r}"
    assert "\r" not in log, "a progress animation (carriage returns) in a non-tty build log"
    assert "Traceback" not in log, log
    assert not re.search("[│┃━─┏└]", log), f"box drawing in a non-tty build log:\n{log}"


def _assert_applied(out: str, root: str, source: str = "_version.py") -> None:
    assert re.search(
        rf"^sglang {re.escape(VERSION)} \((site-packages|checkout), version from "
        rf"{re.escape(source)}\) at {re.escape(root)}$",
        out,
        re.M,
    ), out
    assert f"sgpatch: {SET}: applied; 5 file(s) written (5 applied; 1 optional not chosen)" in out
    rows = _table_rows(out)  # apply's table, then status --check's: one row per patch in each
    assert sorted(rows) == sorted(_patch_ids()), rows
    for pid, states in rows.items():
        want = "pending" if pid == OPTIONAL else "applied"
        assert states == [want, want], (pid, states)
    # UPGRADE_FLASHINFER=0 and no FlashInfer in the stand-in: reported, not failed (--strict)
    assert re.search(r"^precondition flashinfer-python>=0\.6\.17: unknown ", out, re.M), out


def _assert_intent(tree: Path) -> None:
    """The patched tree means what the set says (tests/real/intent.py), the optional patch
    not applied."""
    for pid, checks in CHECKS.items():
        for check in checks:
            if pid == OPTIONAL:
                with pytest.raises(AssertionError):
                    check(tree)
            else:
                check(tree)


def _assert_conflict(rc: int, log: str) -> None:
    out = dockerkit.step_output(log)
    assert rc != 0, f"the build did not fail:\n{log}"
    m = FAILED_RUN.search(out)
    assert m, f"the sgpatch RUN is not the step that failed:\n{log}"
    assert m.group(1) == "3", log  # the `&&` chain passes apply's exit code to RUN
    _assert_plain_log(out)
    assert re.search(
        rf"^sgpatch: {SET}: not applied \(1 conflict, 4 pending; 1 optional not chosen\); "
        r"nothing was written$",
        out,
        re.M,
    ), out
    rows = _table_rows(out)
    assert sorted(rows) == sorted(_patch_ids()), rows
    assert all(len(states) == 1 for states in rows.values()), rows  # apply's; status never ran
    assert rows["sm120-flashinfer-allreduce-fusion"] == ["conflict"]
    assert f"{COMM} hunk #2" in out
    assert "sgpatch: kimi-eagle3-sm120: 5 applied" not in out


# ----------------------------------------------------------------------------- the examples
def test_examples_default_to_the_real_images_and_steps():
    """Input: the two example Dockerfiles as a user reads them. Outcome: the testing hooks are
    build ARGs whose defaults are the real thing: FROM lmsysorg/sglang:v0.5.9-cu130 and
    nvidia/cuda, the FlashInfer upgrade on (both packages pinned to 0.6.17), the SGLang tree
    cloned from GitHub, apt-get installing git and python3."""
    df = (EXAMPLES / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=lmsysorg/sglang:v0.5.9-cu130\nFROM ${BASE_IMAGE}\n" in df
    assert "ARG UPGRADE_FLASHINFER=1\n" in df
    assert '"flashinfer-python==0.6.17"' in df and '"flashinfer-cubin==0.6.17"' in df
    src = (EXAMPLES / "Dockerfile.source").read_text()
    assert "ARG BASE_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04\n" in src
    assert "ARG SGLANG_SOURCE=git\n" in src and "FROM sglang-${SGLANG_SOURCE}\n" in src
    assert 'ARG APT_PACKAGES="git python3 python3-pip python3-venv"\n' in src
    assert "ARG SGLANG_REPO=https://github.com/sgl-project/sglang.git\n" in src
    assert "ARG SGLANG_REF=v0.5.9\n" in src and "ARG SGLANG_INSTALL_ARGS=\n" in src


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dockerfile_builds_and_patches(layout, docker, images, context, tmp_path):
    """Input: examples/Dockerfile built on an SGLang 0.5.9 image (`layout`: the release wheel
    pip-installed into site-packages, or an editable install of its sdist at
    /sgl-workspace/sglang/python), no --sglang-dir. Outcome: the build succeeds; its log names
    the tree and layout sgpatch found, applies 5 patches (the optional one not chosen) and
    `status --check` passes, in plain text; in the image, `sgpatch status --check` passes again,
    the installed sgpatch is the wheel's, and the patched files copied out of the image pass the
    set's intent checks."""
    rc, log, tag = _build(
        docker, "Dockerfile", context, BASE_IMAGE=images[layout]["pristine"], UPGRADE_FLASHINFER="0"
    )
    out = dockerkit.step_output(log)
    assert rc == 0, f"build failed:\n{log}"
    assert "UPGRADE_FLASHINFER=0: FlashInfer not upgraded" in out
    _assert_plain_log(out)
    _assert_applied(out, ROOTS[layout])
    # the image: labelled as this run's, sgpatch from the wheel, the tree done
    labels = json.loads(docker.out("image", "inspect", "--format", "{{json .Config.Labels}}", tag))
    assert labels.get(f"{dockerkit.LABEL}-run") == dockerkit.RUN_ID, labels
    check = _in_image(docker, tag, "sgpatch", "status", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"sgpatch: {SET}: 5 applied; 1 optional not chosen; done" in check.stderr
    doc = json.loads(_in_image(docker, tag, "sgpatch", "status", "--json", "--set", SET).stdout)
    assert doc["target"]["root"] == ROOTS[layout] and doc["sets"][0]["done"] is True, doc
    where = _in_image(docker, tag, "python", "-c", "import sgpatch; print(sgpatch.__file__)")
    assert where.stdout.startswith("/opt/venv/lib/python3.11/site-packages/sgpatch/"), where
    grep = _in_image(docker, tag, "grep", "-c", "_is_sm120_supported", f"{ROOTS[layout]}/{COMM}")
    assert grep.returncode == 0 and int(grep.stdout) >= 1, grep
    _assert_intent(_copy_out(docker, tag, ROOTS[layout], tmp_path / "sglang"))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dockerfile_build_stops_on_a_conflict(layout, docker, images, context):
    """Input: examples/Dockerfile on the same SGLang 0.5.9 image with one line edited where a
    patch needs its context (communicator.py's fusion gate gets a third term). Outcome: the
    build fails at the sgpatch RUN with exit code 3; the log has apply's table (one row per
    patch, the fusion patch `conflict`, naming the hunk), the "not applied ... nothing was
    written" line, and no `status --check` output."""
    rc, log, _ = _build(
        docker, "Dockerfile", context, BASE_IMAGE=images[layout]["edited"], UPGRADE_FLASHINFER="0"
    )
    _assert_conflict(rc, log)


@pytest.fixture(scope="session")
def release_tree(docker, images, tmp_path_factory) -> Path:
    """The release's source tree (the sdist unpacked as a checkout's python/ folder), copied out
    of the checkout image before any patching: what a user's sglang/ checkout holds."""
    dest = tmp_path_factory.mktemp("sglang-source") / "sglang"
    _copy_out(docker, images["checkout"]["pristine"], "/sgl-workspace/sglang", dest)
    assert (dest / "python" / "sglang" / "srt").is_dir() and not (
        dest / "python/sglang/.sgpatch"
    ).exists()
    return dest


def _source_context(context: Path, tree: Path, dest: Path, edit: bool) -> Path:
    shutil.copytree(context, dest, symlinks=True)
    shutil.copytree(tree, dest / "sglang", symlinks=True)
    if edit:
        path = dest / "sglang" / "python" / "sglang" / COMM
        text = path.read_text(encoding="utf-8")
        assert GATE in text
        path.write_text(text.replace(GATE, GATE_EDITED, 1), encoding="utf-8")
    return dest


def _source_args(images) -> dict[str, str]:
    return {
        "BASE_IMAGE": images["none"]["pristine"],
        "SGLANG_SOURCE": "context",
        "APT_PACKAGES": "",
        "SGLANG_INSTALL_ARGS": "--no-deps",
    }


def test_dockerfile_source_builds_and_patches(docker, images, context, release_tree, tmp_path):
    """Input: examples/Dockerfile.source with SGLANG_SOURCE=context: the SGLang 0.5.9 source tree
    in the build context's sglang/, patched with --sglang-dir /root/sglang before it is
    installed (editable, --no-deps, its build tools from the wheelhouse). Outcome: the build
    succeeds; the log shows the checkout found at /root/sglang/python/sglang, 5 patches applied
    and status --check passing; in the image, `sgpatch status --check` *without* --sglang-dir
    finds the installed tree (the editable install) and passes, and the files copied out pass
    the set's intent checks."""
    ctx = _source_context(context, release_tree, tmp_path / "ctx", edit=False)
    rc, log, tag = _build(docker, "Dockerfile.source", ctx, **_source_args(images))
    out = dockerkit.step_output(log)
    assert rc == 0, f"build failed:\n{log}"
    assert "git clone" not in out  # the sglang-git stage is not built
    _assert_plain_log(out)
    root = "/root/sglang/python/sglang"
    _assert_applied(out, root)
    check = _in_image(docker, tag, "sgpatch", "status", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"at {root}\n" in check.stdout + check.stderr
    pip = _in_image(docker, tag, "pip", "show", "sglang")
    assert "Version: 0.5.9" in pip.stdout and "Editable project location: /root/sglang/python" in (
        pip.stdout
    ), pip.stdout
    _assert_intent(_copy_out(docker, tag, root, tmp_path / "sglang"))


def test_dockerfile_source_build_stops_on_a_conflict(
    docker, images, context, release_tree, tmp_path
):
    """Input: examples/Dockerfile.source with SGLANG_SOURCE=context and the tree's fusion gate
    line edited. Outcome: the build fails at the sgpatch RUN with exit code 3, apply's table
    and the "nothing was written" line in the log, no `status --check`, and the install step
    never runs."""
    ctx = _source_context(context, release_tree, tmp_path / "ctx", edit=True)
    rc, log, _ = _build(docker, "Dockerfile.source", ctx, **_source_args(images))
    _assert_conflict(rc, log)
    assert '-e "/root/sglang/python"' not in log, log


# ----------------------------------------------------------------------------- tools/docker_up.py
def _docker_up():
    spec = importlib.util.spec_from_file_location("docker_up", REPO / "tools" / "docker_up.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docker_up_removes_a_stale_pid_file(tmp_path, monkeypatch):
    """Input: a docker.pid naming a process that is gone, then one naming a live process that is
    not dockerd (this test's Python), then one naming nothing. Outcome: each is removed, so
    dockerd can start; the reason is said on stderr."""
    mod = _docker_up()
    pidfile = tmp_path / "docker.pid"
    monkeypatch.setattr(mod, "PIDFILE", pidfile)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for content in (str(gone.pid), str(os.getpid()), ""):
        pidfile.write_text(content)
        mod._stale_pidfile()
        assert not pidfile.exists(), content


# ----------------------------------------------------------------------------- pinning the wheel
def _pip_install(target: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-compile",
            "-q",
            "--disable-pip-version-check",
            "--target",
            str(target),
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_wheel_can_be_pinned_by_hash(tmp_path, context):
    """Input: the wheel `make dist` built, installed as docs/docker.md shows: a direct reference
    with a `#sha256=` fragment, and a requirements file with `--hash` under `--require-hashes`,
    each with the right and with a wrong digest. Outcome: the right digest installs sgpatch,
    a wrong one is refused by pip ("DO NOT MATCH THE HASHES") and installs nothing."""
    (wheel,) = (context / "dist").glob("sgpatch-*.whl")
    right = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wrong = hashlib.sha256(b"not the wheel").hexdigest()
    url = wheel.as_uri()
    for digest, ok in ((wrong, False), (right, True)):
        target = tmp_path / f"fragment-{ok}"
        proc = _pip_install(target, f"sgpatch @ {url}#sha256={digest}")
        assert (proc.returncode == 0) is ok, proc.stderr
        assert (target / "sgpatch" / "__main__.py").is_file() is ok
        if not ok:
            assert "DO NOT MATCH THE HASHES" in proc.stderr, proc.stderr
        req = tmp_path / f"requirements-{ok}.txt"
        req.write_text(f"sgpatch @ {url} --hash=sha256:{digest}\n")
        target = tmp_path / f"require-hashes-{ok}"
        proc = _pip_install(target, "--require-hashes", "-r", str(req))
        assert (proc.returncode == 0) is ok, proc.stderr
        assert (target / "sgpatch" / "__main__.py").is_file() is ok


def test_make_dist_builds_the_same_bytes_again(tmp_path, context):
    """Input: `make dist` run a second time on the same working tree, into another folder.
    Outcome: the same sha256 (timestamps come from the last commit), so a hash pin of the
    wheel survives a rebuild of the same commit."""
    (first,) = (context / "dist").glob("sgpatch-*.whl")
    again = make_dist(tmp_path / "dist")
    assert again.name == first.name
    assert again.read_bytes() == first.read_bytes()
