"""Make a Docker daemon reachable on this machine: install Debian's docker.io if `dockerd` is
missing, start `dockerd` if no daemon answers, and wait until `docker info` works.

Used by `.ci/run` (CI runs as root on a fresh machine) and by tests/real/test_docker.py when no
daemon is reachable. Idempotent: with a daemon already answering it only checks, in well under a
second. Needs root for anything beyond that check (apt-get, dockerd). Standard library only.

    python3 tools/docker_up.py [--log /var/log/sgpatch-dockerd.log] [--timeout 60]

Prints one line per action on stderr and, on success, the docker client to use on stdout (a path
or `docker`, see `client()`); exits 1 with the reason otherwise.

The docker client: the examples use BuildKit (Dockerfile.source selects a stage by a build ARG,
and only BuildKit skips the stage it does not use). A client from Docker 23+ needs the buildx
plugin for that; Debian bookworm's docker.io (20.10) has BuildKit built in (DOCKER_BUILDKIT=1) and
no buildx package. So the first client on PATH is taken if it has buildx or is older than 23,
else /usr/bin/docker (docker.io's) if that is one, else the client is refused with the reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PIDFILE = Path("/var/run/docker.pid")
DEFAULT_LOG = Path("/var/log/sgpatch-dockerd.log")


def say(msg: str) -> None:
    print(f"docker_up: {msg}", file=sys.stderr, flush=True)


def _run(cmd: list[str], timeout: float = 30, env: dict | None = None) -> tuple[int, str]:
    try:
        p = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, (p.stdout + p.stderr).strip()


def _client_ok(path: str) -> str | None:
    """Why `path` cannot run a BuildKit build, or None if it can."""
    rc, _ = _run([path, "buildx", "version"], timeout=15)
    if rc == 0:
        return None
    rc, out = _run([path, "version", "--format", "{{.Client.Version}}"], timeout=15)
    version = out.splitlines()[0] if out else ""
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return f"{path}: cannot read its version ({out[:200]!r})"
    if major < 23:
        return None  # BuildKit built into the client (DOCKER_BUILDKIT=1)
    return f"{path} is Docker {version} without the buildx plugin (BuildKit needs it)"


def client() -> str:
    """The docker client to use (see the module docstring); raises RuntimeError with why not."""
    reasons = []
    for cand in dict.fromkeys(p for p in (shutil.which("docker"), "/usr/bin/docker") if p):
        if not os.access(cand, os.X_OK):
            continue
        why = _client_ok(cand)
        if why is None:
            return cand
        reasons.append(why)
    raise RuntimeError("no usable docker client: " + ("; ".join(reasons) or "none installed"))


def reachable(docker: str) -> tuple[bool, str]:
    rc, out = _run([docker, "version", "--format", "{{.Server.Version}}"], timeout=20)
    return rc == 0, out


def _apt_install(packages: list[str]) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]
    say(f"installing {' '.join(packages)} with apt-get")
    for cmd in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        rc, out = _run(cmd, timeout=900, env=env)
        if rc != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed (exit {rc}):\n{out[-3000:]}")


def ensure_installed() -> None:
    if shutil.which("dockerd") is None or not Path("/usr/bin/docker").exists():
        if os.geteuid() != 0:
            raise RuntimeError("dockerd is not installed, and installing docker.io needs root")
        _apt_install(["docker.io"])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_pidfile() -> None:
    """dockerd refuses to start while /var/run/docker.pid names a live process; a file left
    by a daemon that died (a killed container, a reboot without /run cleared) is removed."""
    try:
        pid = int(PIDFILE.read_text().strip() or "0")
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        pid = 0
    if pid and _pid_alive(pid):
        comm = Path(f"/proc/{pid}/comm")
        name = comm.read_text().strip() if comm.exists() else "?"
        if name == "dockerd":
            return  # a daemon is starting (or hung): wait for it below
        say(f"{PIDFILE} names pid {pid} ({name}), not dockerd: removing it")
    else:
        say(f"removing stale {PIDFILE} (pid {pid} is not running)")
    PIDFILE.unlink(missing_ok=True)


def start_daemon(log: Path) -> None:
    if os.geteuid() != 0:
        raise RuntimeError("no Docker daemon is reachable, and starting dockerd needs root")
    _stale_pidfile()
    if PIDFILE.exists():
        say("a dockerd is already running; waiting for it")
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"starting dockerd in the background (log: {log})")
    with open(log, "ab") as out:
        subprocess.Popen(
            [shutil.which("dockerd") or "dockerd"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives the test run; CI's later steps use it too
        )


def up(log: Path = DEFAULT_LOG, timeout: float = 60) -> str:
    """Install and start what is missing; return the docker client. RuntimeError: why not."""
    try:
        docker = client()
    except RuntimeError:
        ensure_installed()
        docker = client()
    ok, out = reachable(docker)
    if ok:
        return docker
    ensure_installed()
    start_daemon(log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ok, out = reachable(docker)
        if ok:
            say(f"Docker daemon {out} is up")
            return docker
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(
        f"the Docker daemon did not answer within {timeout:.0f} s: {out}\n{log}:\n{tail}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--timeout", type=float, default=60)
    ns = ap.parse_args()
    try:
        print(up(ns.log, ns.timeout))
    except RuntimeError as e:
        say(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
