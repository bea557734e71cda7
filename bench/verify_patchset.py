#!/usr/bin/env python3
"""Verify a patch set against real SGLang release wheels, independently of sgpatch.

For every cached wheel ``sglang-V-*.whl`` and every patch of the set it:
  * extracts the release's ``sglang/**/*.py`` into a temp dir, checkout-shaped
    (``<tmp>/<V>/python/sglang/...``);
  * evaluates the patch's probe on the pristine tree (regex / absent / symbol / all / any / not,
    as docs/manifest.md defines them) and picks the first variant whose specifier holds;
  * for a ``patch:`` variant: ``patch -p1 -F0 --dry-run`` must succeed (no fuzz), then the patch
    is applied for real on a copy, every touched file must pass ``py_compile``, the intent
    checks of tests/real/intent.py must fail on the pristine tree and pass on the patched one;
  * for ``upstream`` (probe true) the intent checks must pass on the pristine tree;
  * finally all pending patches are applied together, in manifest order, and re-checked;
  * the measured state is compared with ``EXPECTED`` in tests/real/intent.py.
It prints a release x patch table and exits 1 if anything failed.

Standard library + GNU patch only; PyYAML is used to read patchset.yaml (the same loader
sgpatch uses: yaml.safe_load) -- it is the one non-stdlib import and is loaded lazily.

    python bench/verify_patchset.py [--set kimi-eagle3-sm120] [--wheels DIR] [--only 0.5.9 ...]
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import glob
import importlib.util
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_WHEELS = Path(os.path.expanduser("~/.cache/sgpatch/wheels"))


# ----------------------------------------------------------------------------- versions
_VER = re.compile(r"^(\d+(?:\.\d+)*)(?:\.post(\d+))?(?:\+.*)?$")


def vkey(v: str) -> tuple:
    m = _VER.match(v)
    if not m:
        raise ValueError(f"unsupported version {v!r} (release or .postN only)")
    rel = tuple(int(x) for x in m.group(1).split("."))
    rel = rel + (0,) * (4 - len(rel))
    return (*rel, int(m.group(2)) if m.group(2) else -1)


def spec_contains(spec: str, version: str) -> bool:
    """PEP 440 subset: comma-separated clauses with >=, <=, >, <, ==, != on release/.postN."""
    v = vkey(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.match(r"^(>=|<=|==|!=|>|<)\s*(\S+)$", clause)
        if not m:
            raise ValueError(f"unsupported specifier clause {clause!r}")
        op, ref = m.group(1), vkey(m.group(2))
        ok = {
            ">=": v >= ref,
            "<=": v <= ref,
            ">": v > ref,
            "<": v < ref,
            "==": v == ref,
            "!=": v != ref,
        }[op]
        if not ok:
            return False
    return True


# ----------------------------------------------------------------------------- wheels
def find_wheels(wheel_dir: Path) -> dict:
    out = {}
    for w in glob.glob(str(wheel_dir / "sglang-*.whl")):
        v = os.path.basename(w).split("-")[1]
        try:
            vkey(v)
        except ValueError:
            continue
        out[v] = Path(w)
    return dict(sorted(out.items(), key=lambda kv: vkey(kv[0])))


def extract(wheel: Path, dest: Path) -> Path:
    """Extract sglang/**/*.py checkout-shaped: returns the package root dest/python/sglang."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("sglang/") and name.endswith(".py"):
                z.extract(name, dest / "python")
    return dest / "python" / "sglang"


# ----------------------------------------------------------------------------- probes
def _files(root: Path, pattern: str) -> list:
    if any(ch in pattern for ch in "*?["):
        return sorted(
            p
            for p in root.rglob("*")
            if p.is_file() and fnmatch.fnmatch(p.relative_to(root).as_posix(), pattern)
        )
    p = root / pattern
    return [p] if p.is_file() else []


def _module_file(root: Path, module: str) -> Path | None:
    if not module.startswith("sglang."):
        return None
    rel = Path(*module.split(".")[1:])
    for cand in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _has_method(root: Path, path: Path, cls: str, method: str, seen: set) -> bool:
    key = (str(path), cls)
    if key in seen or not path.is_file():
        return False
    seen.add(key)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if node is None:
        return False
    if any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method
        for n in node.body
    ):
        return True
    pkg = path.relative_to(root).parent.parts
    for base in node.bases:
        if not isinstance(base, ast.Name):
            continue
        if any(isinstance(n, ast.ClassDef) and n.name == base.id for n in tree.body):
            if _has_method(root, path, base.id, method, seen):
                return True
            continue
        for imp in tree.body:
            if not isinstance(imp, ast.ImportFrom):
                continue
            for alias in imp.names:
                if (alias.asname or alias.name) != base.id:
                    continue
                if imp.level:
                    parts = list(pkg[: len(pkg) - (imp.level - 1)]) if imp.level > 1 else list(pkg)
                    module = ".".join(
                        ["sglang", *parts, *(imp.module.split(".") if imp.module else [])]
                    )
                else:
                    module = imp.module or ""
                target = _module_file(root, module)
                if target and _has_method(root, target, alias.name, method, seen):
                    return True
    return False


def probe(node, root: Path) -> bool:
    if "all" in node:
        return all(probe(n, root) for n in node["all"])
    if "any" in node:
        return any(probe(n, root) for n in node["any"])
    if "not" in node:
        return not probe(node["not"], root)
    if "symbol" in node:
        s = node["symbol"]
        return _has_method(root, root / s["file"], s["class"], s["method"], set())
    files = _files(root, node["file"])
    if "regex" in node:
        rx = re.compile(node["regex"], re.MULTILINE)
        return any(rx.search(f.read_text(encoding="utf-8")) for f in files)
    if "absent" in node:
        rx = re.compile(node["absent"], re.MULTILINE)
        return bool(files) and not any(rx.search(f.read_text(encoding="utf-8")) for f in files)
    raise ValueError(f"unknown probe node {node!r}")


# ----------------------------------------------------------------------------- patching
def touched_files(patch_text: str) -> list:
    return re.findall(r"(?m)^\+\+\+ b/(\S+)", patch_text)


def run_patch(checkout: Path, patch_file: Path, dry: bool) -> tuple:
    cmd = ["patch", "-p1", "-F0", "-N", "--no-backup-if-mismatch", "-r", "-", "-i", str(patch_file)]
    if dry:
        cmd.append("--dry-run")
    r = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0:
        return False, "patch failed: " + " / ".join(out.splitlines()[-3:])
    if "fuzz" in out:
        return False, "applied with fuzz: " + out
    return True, out


def copy_tree(src: Path, dst: Path, rels: list) -> None:
    """Copy the checkout files a patch needs (checkout-relative paths)."""
    for rel in rels:
        s, d = src / rel, dst / rel
        if s.is_file():
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, d)


def run_checks(checks, root: Path) -> str | None:
    for fn in checks:
        try:
            fn(root)
        except AssertionError as e:
            return f"{fn.__name__}: {e}"
    return None


# ----------------------------------------------------------------------------- main
def load_intent():
    spec = importlib.util.spec_from_file_location(
        "sgpatch_real_intent", REPO / "tests/real/intent.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="kimi-eagle3-sm120")
    ap.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS)
    ap.add_argument("--only", nargs="*", help="releases to check (default: every cached wheel)")
    ap.add_argument("--keep", action="store_true", help="keep the extracted trees")
    args = ap.parse_args(argv)

    import yaml  # the one non-stdlib dependency (see module docstring)

    set_dir = REPO / "patchsets" / args.set
    manifest = yaml.safe_load((set_dir / "patchset.yaml").read_text(encoding="utf-8"))
    intent = load_intent()
    patches = manifest["patches"]
    wheels = find_wheels(args.wheels)
    if args.only:
        wheels = {v: w for v, w in wheels.items() if v in args.only}
    wheels = {v: w for v, w in wheels.items() if spec_contains(manifest["sglang"], v)}
    if not wheels:
        print(f"no wheels in {args.wheels} inside {manifest['sglang']}", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="verify-patchset-"))
    failures, table = [], {}
    try:
        for version, wheel in wheels.items():
            pristine_checkout = tmp / version / "pristine"
            root = extract(wheel, pristine_checkout)
            row = table[version] = {}
            pending = []
            for p in patches:
                pid = p["id"]
                checks = intent.CHECKS[pid]
                variant = next(
                    (v for v in p["variants"] if spec_contains(v["sglang"], version)), None
                )
                is_up = probe(p["probe"], root)
                if is_up:
                    state, cell = "upstream", "upstream"
                    err = run_checks(checks, root)
                    if err:
                        failures.append(
                            f"{version} {pid}: probe says upstream but intent fails: {err}"
                        )
                        cell = "FAIL(up)"
                    if variant and "patch" in variant:
                        cell += "*"  # a patch variant exists but the probe short-circuits it
                elif variant is None:
                    state, cell = "no-variant", "NO-VARIANT"
                    failures.append(f"{version} {pid}: probe false and no variant covers it")
                elif "na" in variant:
                    state, cell = "n/a", "n/a"
                else:
                    state = "pending"
                    pfile = set_dir / variant["patch"]
                    start = Path(variant["patch"]).parts[1]
                    cell = f"ok {start}"
                    text = pfile.read_text(encoding="utf-8")
                    rels = touched_files(text)
                    work = tmp / version / f"p-{pid}"
                    copy_tree(pristine_checkout, work, rels)
                    problems = []
                    if run_checks(checks, root) is None:
                        problems.append(
                            "intent already met on the pristine tree (probe too narrow?)"
                        )
                    ok, out = run_patch(work, pfile, dry=True)
                    if not ok:
                        problems.append("dry-run: " + out)
                    else:
                        ok, out = run_patch(work, pfile, dry=False)
                        if not ok:
                            problems.append("apply: " + out)
                        for rel in rels:
                            try:
                                py_compile.compile(
                                    str(work / rel), doraise=True, cfile=str(tmp / "check.pyc")
                                )
                            except py_compile.PyCompileError as e:
                                problems.append(f"py_compile {rel}: {e.msg}")
                        # intent checks need the files the checks read: overlay the patched
                        # files on a copy of the pristine package
                        overlay = tmp / version / f"o-{pid}"
                        shutil.copytree(root, overlay / "python" / "sglang")
                        copy_tree(work, overlay, rels)
                        err = run_checks(checks, overlay / "python" / "sglang")
                        if err:
                            problems.append("intent after apply: " + err)
                        if not probe(p["probe"], overlay / "python" / "sglang"):
                            cell += " (probe stays false)"
                        shutil.rmtree(overlay)
                    if problems:
                        cell = "FAIL"
                        failures.extend(f"{version} {pid}: {m}" for m in problems)
                    pending.append((p, pfile))
                expected = intent.EXPECTED.get(version, {}).get(pid)
                if expected is not None and expected != state:
                    failures.append(f"{version} {pid}: measured {state}, EXPECTED says {expected}")
                    cell += " !=EXPECTED"
                row[pid] = cell

            # all pending patches together, in manifest order
            if pending:
                combined = tmp / version / "combined"
                shutil.copytree(pristine_checkout, combined)
                croot = combined / "python" / "sglang"
                for p, pfile in pending:
                    ok, out = run_patch(combined, pfile, dry=False)
                    if not ok:
                        failures.append(
                            f"{version} {p['id']}: does not apply on top of the others: {out}"
                        )
                touched = {
                    rel
                    for _, pf in pending
                    for rel in touched_files(pf.read_text(encoding="utf-8"))
                }
                for rel in sorted(touched):
                    try:
                        py_compile.compile(
                            str(combined / rel), doraise=True, cfile=str(tmp / "check.pyc")
                        )
                    except py_compile.PyCompileError as e:
                        failures.append(f"{version} combined py_compile {rel}: {e.msg}")
                for p, _ in pending:
                    err = run_checks(intent.CHECKS[p["id"]], croot)
                    if err:
                        failures.append(f"{version} {p['id']}: combined intent: {err}")
                row["_all"] = (
                    "ok"
                    if not any(f.startswith(f"{version} ") and "combined" in f for f in failures)
                    else "FAIL"
                )
            else:
                row["_all"] = "-"
            if not args.keep:
                shutil.rmtree(tmp / version, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"trees kept in {tmp}", file=sys.stderr)

    ids = [p["id"] for p in patches] + ["_all"]
    short = {pid: f"P{n}" for n, pid in enumerate(ids[:-1], 1)}
    short["_all"] = "_all"
    widths = {
        pid: max(len(short[pid]), *(len(table[v].get(pid, "")) for v in table)) for pid in ids
    }
    print("release".ljust(13) + " | " + " | ".join(short[i].ljust(widths[i]) for i in ids))
    print("-" * 13 + "-+-" + "-+-".join("-" * widths[i] for i in ids))
    for v, row in table.items():
        print(v.ljust(13) + " | " + " | ".join(row.get(i, "").ljust(widths[i]) for i in ids))
    print()
    for i in ids[:-1]:
        print(f"{short[i]} = {i}")
    print("cells: upstream = probe true and intent met on the pristine tree; n/a = na variant;")
    print("       ok X = variant patches/X/... applies with -F0, compiles, intent met;")
    print("       _all = every pending patch applied together, compiled and re-checked")
    if failures:
        print(f"\n{len(failures)} problem(s):")
        for f in failures:
            print("  - " + f)
        return 1
    print(f"\nall {len(table)} release(s) verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
