"""Real `docker build`s for tests/real/test_docker.py, offline, on images made from Debian packages.

- `connect()`: a reachable Docker daemon and a BuildKit-capable client (tools/docker_up.py
  installs docker.io and starts dockerd when needed, as root).
- `base_image()`: `sgpatch-test-base:<sha12>`, a Debian root file system made with
  `debootstrap --variant=minbase` plus python3 and python3-venv, from the mirror apt on this
  machine uses, imported with `docker import`. Tagged by a digest of its inputs (suite, mirror,
  architecture, packages, recipe) and kept in Docker (not in the release cache); made once.
- `sglang_image()`: on that base, a stand-in for an SGLang image (tests/real/docker/
  sglang-image.Dockerfile): a venv at /opt/venv, a wheelhouse at /wheelhouse that pip uses instead
  of an index, and the real SGLang release installed as a plain site-packages install (its wheel)
  or as an editable source install at /sgl-workspace/sglang/python (its sdist). Tagged by a digest
  of its inputs, kept and reused.
- `build()`: `docker build --network=none --no-cache` of an example Dockerfile on such an image,
  under a file lock, the image labelled with this run's id; `prune()` removes this run's images.

Every pip install in an image reads /wheelhouse only (PIP_NO_INDEX=1) and every build has no
network, so the builds are offline; only making a missing image downloads (debootstrap from the
Debian mirror, `pip download` from the package index), as the rest of tests/real does for wheels.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SGLANG_IMAGE_DOCKERFILE = HERE / "docker" / "sglang-image.Dockerfile"
LOCK = Path(tempfile.gettempdir()) / "sgpatch-test-docker.lock"
LOCK_TIMEOUT = 1800  # another run's cold base image build can take a few minutes
RUN_ID = uuid.uuid4().hex[:12]
LABEL = "sgpatch-test"  # on every image a test builds from an example (removed by prune)
FIXTURE_LABEL = "sgpatch-test-fixture"  # on base and SGLang images (kept, reused)
BASE_PACKAGES = ("python3", "python3-venv")
BASE_RECIPE = "1"  # bump when the way the base image is made changes
BUILD_TOOLS = ("setuptools", "setuptools-scm", "wheel")  # to build SGLang's sdist offline
DEFAULT_MIRROR = ("bookworm", "http://deb.debian.org/debian")


class Unavailable(Exception):
    """No Docker daemon can be reached (the message says why)."""


@dataclass(frozen=True)
class Docker:
    client: str

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_BUILDKIT": "1", "BUILDKIT_PROGRESS": "plain"}

    def run(self, *args: str, timeout: float = 600, input: bytes | None = None, check=True):
        proc = subprocess.run(
            [self.client, *args],
            env=self.env,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"docker {' '.join(args)} failed (exit {proc.returncode}):\n"
                + (proc.stdout + proc.stderr).decode(errors="replace")[-4000:]
            )
        return proc

    def has_image(self, tag: str) -> bool:
        return self.run("image", "inspect", tag, check=False).returncode == 0

    def out(self, *args: str, timeout: float = 120) -> str:
        return self.run(*args, timeout=timeout).stdout.decode().strip()


def connect() -> Docker:
    """A reachable daemon, made so by tools/docker_up.py (install docker.io, start dockerd:
    as root only). Raises Unavailable with its reason."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "docker_up.py")],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if proc.returncode != 0:
        raise Unavailable(proc.stderr.strip() or f"tools/docker_up.py exited {proc.returncode}")
    if proc.stderr.strip():
        print(proc.stderr.strip(), file=sys.stderr)
    return Docker(proc.stdout.strip())


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


# ----------------------------------------------------------------------------- base image
def _sources() -> list[tuple[list[str], list[str]]]:
    """(URIs, suites) of each `deb` entry apt on this machine reads (deb822 .sources and
    one-line .list files)."""
    out: list[tuple[list[str], list[str]]] = []
    apt = Path("/etc/apt")
    for path in sorted([apt / "sources.list", *apt.glob("sources.list.d/*")]):
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    k, _, v = line.partition(":")
                    fields[k.strip().lower()] = v.split()
                if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"]) != ["no"]:
                    out.append((fields.get("uris", []), fields.get("suites", [])))
        elif path.suffix == ".list":
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", "", line).split()
                if len(words) >= 3 and words[0] == "deb":
                    out.append(([words[1]], [words[2]]))
    return out


def debian_mirror() -> tuple[str, str]:
    """(suite, mirror) for debootstrap: this machine's Debian release and the mirror apt uses
    for it; bookworm from deb.debian.org on a machine that is not Debian."""
    osr = Path("/etc/os-release")
    info = (
        dict(line.split("=", 1) for line in osr.read_text().splitlines() if "=" in line)
        if osr.is_file()
        else {}
    )
    if info.get("ID", "").strip('"') != "debian":
        return DEFAULT_MIRROR
    suite = info.get("VERSION_CODENAME", "").strip('"') or DEFAULT_MIRROR[0]
    for uris, suites in _sources():
        if suite in suites:
            for uri in uris:
                if uri.startswith(("http://", "https://")) and "security" not in uri:
                    return suite, uri.rstrip("/")
    return suite, DEFAULT_MIRROR[1]


def _apt_install(*packages: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    for cmd in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=900)


@dataclass
class Made:
    tag: str
    seconds: float | None  # None: it was there already


def base_image(docker: Docker) -> Made:
    """`sgpatch-test-base:<sha12>`: made with debootstrap (installed with apt if missing) if
    Docker has no image of that tag yet."""
    suite, mirror = debian_mirror()
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=False
    ).stdout.strip() or {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "amd64")
    tag = f"sgpatch-test-base:{_digest(BASE_RECIPE, suite, mirror, arch, BASE_PACKAGES)}"
    if docker.has_image(tag):
        return Made(tag, None)
    with FileLock(str(LOCK), timeout=LOCK_TIMEOUT):
        if docker.has_image(tag):  # another run made it while we waited
            return Made(tag, None)
        t0 = time.monotonic()
        if shutil.which("debootstrap") is None:
            _apt_install("debootstrap")
        with tempfile.TemporaryDirectory(prefix="sgpatch-base-", dir="/var/tmp") as tmp:
            root = Path(tmp) / "root"
            proc = subprocess.run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--arch={arch}",
                    "--include=" + ",".join(BASE_PACKAGES),
                    suite,
                    str(root),
                    mirror,
                ],
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"debootstrap failed:\n{proc.stdout[-3000:]}{proc.stderr}")
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for p in (root / junk).glob("*"):
                    if p.is_file():
                        p.unlink()
            tar = subprocess.run(
                ["tar", "-C", str(root), "--numeric-owner", "-c", "."],
                capture_output=True,
                check=True,
            ).stdout
            changes = [
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "ENV LANG=C.UTF-8",
                f"LABEL {FIXTURE_LABEL}=base",
                'CMD ["/bin/bash"]',
            ]
            args = [a for c in changes for a in ("--change", c)]
            docker.run("import", *args, "-", tag, input=tar, timeout=600)
        return Made(tag, time.monotonic() - t0)


# ----------------------------------------------------------------------------- SGLang images
def _requires(wheel: Path) -> list[str]:
    """Requires-Dist of a wheel (its dependencies as pip resolves them)."""
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    return sorted(
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    )


def _pip(*args: str, cwd: Path | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=900, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr}")


def _python_of(docker: Docker, image: str) -> str:
    return docker.out(
        "run",
        "--rm",
        "--network=none",
        image,
        "python3",
        "-c",
        "import sys; print('%d%d' % sys.version_info[:2])",
    )


def _download(dest: Path, pyver: str, requirements: list[str], version: str, layout: str):
    """The fixture's build context: wheelhouse/ (binary wheels for the image's CPython) and
    sglang/ (the release wheel or sdist)."""
    house = dest / "wheelhouse"
    machine = platform.machine()
    _pip(
        "download",
        "-q",
        "-d",
        str(house),
        "--only-binary=:all:",
        "--implementation=cp",
        f"--python-version={pyver}",
        f"--abi=cp{pyver}",
        f"--platform=manylinux_2_17_{machine}",
        f"--platform=manylinux2014_{machine}",
        "--platform=any",
        *requirements,
        *BUILD_TOOLS,
    )
    sgl = dest / "sglang"
    sgl.mkdir()
    if layout == "site-packages":
        _pip(
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(sgl),
            f"sglang=={version}",
        )
    elif layout == "checkout":
        _pip(
            "download", "-q", "--no-deps", "--no-binary=:all:", "-d", str(sgl), f"sglang=={version}"
        )


def sglang_images(docker: Docker, base: str, layout: str, version: str, sgpatch_wheel: Path):
    """Tags of the SGLang stand-in image for `layout` ("site-packages", "checkout" or "none":
    no SGLang) and of the same with the fusion gate line edited: {"pristine": tag, "edited": tag}.
    Made (both at once, from one download) if Docker lacks them."""
    requirements = _requires(sgpatch_wheel)
    key = _digest(
        base, layout, version, requirements, BUILD_TOOLS, SGLANG_IMAGE_DOCKERFILE.read_text()
    )
    name = f"sgpatch-test-sglang:{version}-{layout}-{key}"
    tags = {"pristine": name}
    if layout != "none":
        tags["edited"] = f"{name}-edited"
    if all(docker.has_image(t) for t in tags.values()):
        return tags
    with FileLock(str(LOCK), timeout=LOCK_TIMEOUT):
        if all(docker.has_image(t) for t in tags.values()):
            return tags
        with tempfile.TemporaryDirectory(prefix="sgpatch-fixture-") as tmp:
            ctx = Path(tmp)
            _download(ctx, _python_of(docker, base), requirements, version, layout)
            for which in tags:
                edit = "1" if which == "edited" else ""
                rc, log = _build(
                    docker,
                    SGLANG_IMAGE_DOCKERFILE,
                    ctx,
                    {"BASE": base, "LAYOUT": layout, "EDIT_GATE": edit},
                    tags[which],
                    labels={FIXTURE_LABEL: "sglang"},
                    no_cache=False,
                )
                if rc != 0:
                    raise RuntimeError(f"building {tags[which]} failed:\n{log}")
    return tags


# ----------------------------------------------------------------------------- builds
def _build(
    docker, dockerfile: Path, context: Path, args: dict, tag: str, labels: dict, no_cache: bool
) -> tuple[int, str]:
    cmd = ["build", "--progress=plain", "--network=none", "-f", str(dockerfile), "-t", tag]
    if no_cache:
        cmd.append("--no-cache")
    for k, v in args.items():
        cmd += ["--build-arg", f"{k}={v}"]
    for k, v in labels.items():
        cmd += ["--label", f"{k}={v}"]
    proc = docker.run(*cmd, str(context), timeout=900, check=False)
    log = (proc.stdout + proc.stderr).decode(errors="replace")
    return proc.returncode, log


def build(docker: Docker, dockerfile: Path, context: Path, args: dict[str, str]):
    """`docker build --network=none --no-cache` (every step runs: nothing is taken from an
    earlier run's cache), under the lock, labelled with this run's id. Returns (exit code,
    build log, tag)."""
    tag = f"sgpatch-test-example:{RUN_ID}-{uuid.uuid4().hex[:6]}"
    with FileLock(str(LOCK), timeout=LOCK_TIMEOUT):
        rc, log = _build(
            docker,
            dockerfile,
            context,
            args,
            tag,
            labels={LABEL: "1", f"{LABEL}-run": RUN_ID},
            no_cache=True,
        )
    return rc, log, tag


def prune(docker: Docker) -> None:
    """Remove this run's example images (tagged or dangling) and nothing else."""
    ids = docker.out("images", "-aq", "--filter", f"label={LABEL}-run={RUN_ID}").split()
    if ids:
        docker.run("rmi", "-f", *sorted(set(ids)), check=False)
    docker.run("image", "prune", "-f", "--filter", f"label={LABEL}-run={RUN_ID}", check=False)


_STEP_PREFIX = re.compile(r"^#\d+ (?:\d+\.\d+ )?", re.M)


def step_output(log: str) -> str:
    """The build log without BuildKit's `#N 1.234 ` prefixes (what the RUN lines printed)."""
    return _STEP_PREFIX.sub("", log)
