"""Speed of sgpatch against the shell a user writes today, measured side by side in one run.

    python bench/speed.py                    # table on stdout
    python bench/speed.py --out docs/benchmarks.md

What is measured (median of --repeat runs, wall time of whole processes):
- baseline: a bash script doing what people do by hand for the same set on the same tree: one
  `grep -qE` per probe, then `patch --dry-run -p1` and `patch -p1` per patch;
- `sgpatch apply` and `sgpatch status` on the same tree (fresh copy each run);
- start-up: `sgpatch --help`, and how many modules `sgpatch status` imports;
- scale: the engine alone on the largest real diffs between consecutive releases;
- `sgpatch matrix` over every cached 0.5.x release (warm cache, both cores);
- a profile of one `sgpatch apply` (top functions by cumulative time).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sgpatch import releases  # noqa: E402
from sgpatch.manifest import load_set, select_variant  # noqa: E402
from sgpatch.probe import AllProbe, AnyProbe, NotProbe, RegexProbe, SymbolProbe  # noqa: E402

SET = "kimi-eagle3-sm120"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
# what users run: the console script of this environment (python -m adds runpy's imports)
_SCRIPT = Path(sys.executable).with_name("sgpatch")
SGPATCH = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sgpatch"]
# the cumulative import floors of `sgpatch status`, measured as whole processes: the stack the
# design card asks for, then sgpatch's own modules, then everything status imports
FLOORS = {
    "interpreter": "pass",
    "+ typer (the CLI library)": "import typer",
    "+ yaml, unidiff, packaging, dataclasses (rest of the stack)": (
        "import typer, yaml, unidiff, packaging.specifiers, dataclasses"
    ),
    "+ sgpatch's modules (every import status makes)": (
        "import typer, yaml, unidiff, sgpatch.cli, sgpatch.commands.status"
    ),
}
# the same imports but typer's: what a hand-written command line could save at most
NO_TYPER = "import yaml, unidiff, sgpatch.commands.status"


def _probe_greps(node, out: list[tuple[str, str]]) -> None:
    """The grep a person would write for each probe (symbol probes become a def grep)."""
    if isinstance(node, RegexProbe):
        out.append((node.regex, node.file_glob))
    elif isinstance(node, SymbolProbe):
        out.append((rf"def {node.method}\(", node.file))
    elif isinstance(node, (AllProbe, AnyProbe)):
        for n in node.nodes:
            _probe_greps(n, out)
    elif isinstance(node, NotProbe):
        _probe_greps(node.node, out)


def baseline_script(version: str) -> str:
    manifest = load_set(SET)
    from packaging.version import Version

    lines = ["set -u", 'cd "$1"', "rc=0"]
    for spec in manifest.patches:
        if spec.optional:
            continue
        greps: list[tuple[str, str]] = []
        _probe_greps(spec.probe, greps)
        for regex, path in greps:
            q = regex.replace("'", "'\\''")
            lines.append(f"grep -qE '{q}' python/sglang/{path} 2>/dev/null && echo upstream")
        v = select_variant(spec, Version(version))
        if v is None or v.patch is None:
            continue
        lines.append(f"if patch --dry-run -p1 -s -i {v.patch} </dev/null >/dev/null; then")
        lines.append(f"  patch -p1 -s -i {v.patch} </dev/null >/dev/null || rc=1")
        lines.append("else rc=1; fi")
    lines.append("exit $rc")
    return "\n".join(lines) + "\n"


def _fresh(version: str, work: Path) -> Path:
    """A checkout-shaped copy of the release (repo root returned)."""
    if work.exists():
        shutil.rmtree(work)
    releases.copy_tree(version, work, "checkout")
    return work


def _timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, proc.returncode


def end_to_end(version: str, repeat: int, tmp: Path) -> dict[str, float]:
    script = tmp / "baseline.sh"
    script.write_text(baseline_script(version))
    times: dict[str, list[float]] = {"baseline": [], "apply": [], "status": []}
    for _ in range(repeat):
        tree = _fresh(version, tmp / "base")
        t, rc = _timed(["bash", str(script), str(tree)])
        assert rc == 0, "baseline script failed"
        times["baseline"].append(t)
        tree = _fresh(version, tmp / "sg")
        t, rc = _timed([*SGPATCH, "apply", "--set", SET, "--sglang-dir", str(tree)])
        assert rc == 0, "sgpatch apply failed"
        times["apply"].append(t)
        t, rc = _timed([*SGPATCH, "status", "--set", SET, "--sglang-dir", str(tree)])
        times["status"].append(t)
    return {k: statistics.median(v) for k, v in times.items()}


def startup(repeat: int) -> dict[str, float]:
    helps = [_timed([*SGPATCH, "--help"])[0] for _ in range(repeat)]
    bare = [_timed([sys.executable, "-c", "pass"])[0] for _ in range(repeat)]
    floors = {
        what: statistics.median(_timed([sys.executable, "-c", code])[0] for _ in range(repeat))
        for what, code in FLOORS.items()
    }
    no_typer = statistics.median(_timed([sys.executable, "-c", NO_TYPER])[0] for _ in range(repeat))
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sgpatch", "--help"],
        env=ENV,
        capture_output=True,
        text=True,
    ).stderr
    mods = sum(1 for ln in out.splitlines() if ln.startswith("import time:")) - 1
    heavy = [
        m
        for m in ("git", "rich", "yaml", "unidiff")
        if f"| {m}\n" in out + "\n"
        or any(ln.rstrip().endswith(f"| {m}") for ln in out.splitlines())
    ]
    return {
        "help": statistics.median(helps),
        "python": statistics.median(bare),
        "floors": floors,
        "no_typer": no_typer,
        "modules": mods,
        "heavy_on_help": heavy,
    }


def engine_scale() -> list[dict[str, object]]:
    """The engine on the biggest real diffs between consecutive releases."""
    import difflib

    from sgpatch.diffs import parse_patch, split_lines
    from sgpatch.engine import apply_hunks

    pairs = [("0.5.22", "0.5.23"), ("0.5.13", "0.5.14")]
    files = ["srt/server_args.py", "srt/models/deepseek_v2.py", "srt/managers/scheduler.py"]
    rows = []
    for old_v, new_v in pairs:
        for f in files:
            try:
                old = releases.read_member(old_v, f).decode()
                new = releases.read_member(new_v, f).decode()
            except Exception:  # a file moved between releases: skip it
                continue
            diff = "".join(difflib.unified_diff(split_lines(old), split_lines(new), "a/x", "b/x"))
            if not diff:
                continue
            patch = parse_patch(diff, f)
            hunks = patch.files[0].hunks
            lines = split_lines(old)
            reps = 5
            t0 = time.perf_counter()
            for _ in range(reps):
                res = apply_hunks(lines, hunks, fuzz=2)
            dt = (time.perf_counter() - t0) / reps
            rows.append(
                {
                    "file": f,
                    "pair": f"{old_v}->{new_v}",
                    "lines": len(lines),
                    "hunks": len(hunks),
                    "ms": dt * 1000,
                    "ok": res.ok,
                }
            )
    return rows


def matrix_time() -> tuple[float, int]:
    """Wall time of the matrix over every cached release the set covers, and how many."""
    cmd = [*SGPATCH, "matrix", "--set", SET, "--offline", "--format", "json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, len(json.loads(proc.stdout)["releases"])


def profile(version: str, tmp: Path) -> str:
    tree = _fresh(version, tmp / "prof")
    from sgpatch.cli import main

    prof = cProfile.Profile()
    prof.enable()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        main(["apply", "--set", SET, "--sglang-dir", str(tree), "--json"])
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(
        r"sgpatch/(plan|engine|probe|txn|manifest|diffs)", 10
    )
    stats.sort_stats("tottime").print_stats(10)
    keep = [
        ln.replace(str(ROOT) + "/", "").replace(sys.prefix, "<py>")
        for ln in buf.getvalue().splitlines()
        if ln.strip() and ("(" in ln or "ncalls" in ln)
    ]
    return "\n".join(keep)


def markdown(res: dict) -> str:
    e, s = res["end_to_end"], res["startup"]
    out = [
        "## Speed",
        "",
        f"Generated by `python bench/speed.py` on sglang {res['version']} (checkout layout, "
        f"median of {res['repeat']} runs, whole processes, {os.cpu_count()} cores).",
        "",
        "| work | wall time | vs baseline |",
        "|---|---:|---:|",
        f"| shell baseline: grep per probe + `patch --dry-run` + `patch -p1` per patch | "
        f"{e['baseline'] * 1000:.0f} ms | 1.0x |",
        f"| `sgpatch apply --set {SET}` | {e['apply'] * 1000:.0f} ms | "
        f"{e['apply'] / e['baseline']:.1f}x |",
        f"| `sgpatch status --set {SET}` | {e['status'] * 1000:.0f} ms | "
        f"{e['status'] / e['baseline']:.1f}x |",
        f"| `sgpatch --help` (start-up) | {s['help'] * 1000:.0f} ms | |",
        f"| `python -c pass` (interpreter alone) | {s['python'] * 1000:.0f} ms | |",
        f"| `sgpatch matrix` over {res['matrix_releases']} releases (warm cache) | "
        f"{res['matrix'] * 1000:.0f} ms | |",
        "",
        f"`sgpatch --help` imports {s['modules']} modules; heavy ones on that path: "
        f"{', '.join(s['heavy_on_help']) or 'none (GitPython, rich, yaml, unidiff are lazy)'}.",
        "",
        "Where `sgpatch status` spends its time: each row a whole process importing a bit more "
        "(same run, median), the last row the command itself; the difference to the row above is "
        "that step's cost.",
        "",
        "| process | wall time | step | vs baseline |",
        "|---|---:|---:|---:|",
    ]
    prev = 0.0
    steps = [*s["floors"].items(), (f"`sgpatch status --set {SET}` (+ the work)", e["status"])]
    for what, t in steps:
        out.append(
            f"| {what} | {t * 1000:.0f} ms | +{(t - prev) * 1000:.0f} ms | "
            f"{t / e['baseline']:.1f}x |"
        )
        prev = t
    all_imports = list(s["floors"].values())[-1]
    out += [
        "",
        f"The same imports without typer take {s['no_typer'] * 1000:.0f} ms "
        f"({s['no_typer'] / e['baseline']:.1f}x): typer shares most of its start-up with the "
        f"standard library the rest needs, so a hand-written command line would save about "
        f"{(all_imports - s['no_typer']) * 1000:.0f} ms.",
        "",
        "Engine alone on the largest real diffs between releases (fuzz 2 allowed):",
        "",
        "| file | releases | lines | hunks | time |",
        "|---|---|---:|---:|---:|",
    ]
    for r in res["engine"]:
        out.append(
            f"| {r['file']} | {r['pair']} | {r['lines']} | {r['hunks']} | {r['ms']:.1f} ms |"
        )
    out += [
        "",
        "Where `sgpatch apply` spends its time (cProfile, cumulative, sgpatch frames):",
        "",
        "```",
        res["profile"],
        "```",
        "",
    ]
    return "\n".join(out)


def update_doc(path: Path, section: str) -> None:
    begin, end = "<!-- speed:begin -->", "<!-- speed:end -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{section}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default="0.5.9")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sgpatch-speed-") as tmp:
        tmpd = Path(tmp)
        res = {
            "version": args.version,
            "repeat": args.repeat,
            "end_to_end": end_to_end(args.version, args.repeat, tmpd),
            "startup": startup(args.repeat),
            "engine": engine_scale(),
            "profile": profile(args.version, tmpd),
        }
        res["matrix"], res["matrix_releases"] = matrix_time()
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(markdown(res))
    if args.out:
        update_doc(args.out, markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
