"""Build the sgpatch wheel into a folder (`make dist` -> dist/), as examples/Dockerfile installs it.

sgpatch is not on the package index yet, so a Docker build installs the wheel from its build
context. The wheel is built from a clean copy of the working tree (pyproject.toml, README.md,
src/ and the bundled patch sets behind the src/sgpatch/patchsets symlink), so the repository
gets no build/ or *.egg-info folder, and older sgpatch wheels in the folder are removed, so
`COPY dist/sgpatch-*.whl` matches exactly one. The zip's timestamps are those of the last commit
($SOURCE_DATE_EPOCH, which the wheel builder honours), so the same commit builds the same bytes
wherever it is checked out, and a sha256 pin of the wheel stays valid across rebuilds.
tests/real/test_docker.py builds its wheel with this same script. Prints the wheel's path and
its sha256 (for pinning it by hash).

    python tools/dist.py [--out dist]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED_SET = "kimi-eagle3-sm120"


def build(out: Path) -> Path:
    """Build the wheel into `out`; return its path. Raises RuntimeError if pip fails."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sgpatch-dist-") as tmp:
        ctx = Path(tmp) / "sgpatch"
        ctx.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(REPO / name, ctx / name)
        ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
        for name in ("src", "patchsets"):
            shutil.copytree(REPO / name, ctx / name, symlinks=True, ignore=ignore)
        built = Path(tmp) / "wheel"
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(built), str(ctx)]
        env = {**os.environ, "SOURCE_DATE_EPOCH": _source_date_epoch()}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}")
        (wheel,) = built.glob("sgpatch-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            if f"sgpatch/patchsets/{SHIPPED_SET}/patchset.yaml" not in zf.namelist():
                raise RuntimeError("the wheel does not ship the bundled patch sets")
        for old in out.glob("sgpatch-*.whl"):
            old.unlink()
        return Path(shutil.copy2(wheel, out / wheel.name))


def _source_date_epoch() -> str:
    """$SOURCE_DATE_EPOCH if set, else the last commit's time, else 1980-01-01 (zip's first)."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        proc = subprocess.run(
            ["git", "log", "-1", "--format=%ct"], cwd=REPO, capture_output=True, text=True
        )
    except OSError:  # no git: not a checkout we can date
        return "315532800"
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "315532800"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="folder for the wheel")
    args = parser.parse_args(argv)
    try:
        wheel = build(args.out)
    except RuntimeError as e:
        print(f"dist: {e}", file=sys.stderr)
        return 1
    print(f"{wheel} sha256={sha256(wheel)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
