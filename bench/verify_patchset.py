#!/usr/bin/env python3
"""Verify a patch set on real SGLang releases: now a thin wrapper around `sgpatch verify`.

The per-release check (apply --strict, compile, reapply is a no-op, status --check, revert to
the wheel's RECORD) is `sgpatch verify`, installed with the package, for any set:

    sgpatch verify --set kimi-eagle3-sm120 [--patchsets DIR] [--releases '>=0.5.9']

This script keeps its old spelling for muscle memory and CI scripts that call it:

    python bench/verify_patchset.py [--set kimi-eagle3-sm120] [--only 0.5.9 0.5.10 ...]

`--only V...` runs `sgpatch verify --releases ==V` once per release; without it, every release
the set claims. The shipped set's intent checks (tests/real/intent.py: does the patched tree do
what each patch means to do) run in the real-release tests (tests/real/test_kimi_eagle3_sm120.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="kimi-eagle3-sm120")
    ap.add_argument("--patchsets", type=Path, help="folder of patch sets (sgpatch --patchsets)")
    ap.add_argument("--only", nargs="*", help="releases to check (default: every one claimed)")
    args = ap.parse_args(argv)
    base = [sys.executable, "-m", "sgpatch", "verify", "--set", args.set]
    if args.patchsets:
        base += ["--patchsets", str(args.patchsets)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    }
    runs = [[*base, "--releases", f"=={v}"] for v in args.only] if args.only else [base]
    return max(subprocess.run(cmd, env=env).returncode for cmd in runs)


if __name__ == "__main__":
    sys.exit(main())
