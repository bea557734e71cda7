"""Speed of sgpatch measured against the floor of its own stack, side by side in one run.

    python bench/speed.py                        # table on stdout
    python bench/speed.py --out docs/benchmarks.md
    python bench/speed.py --against 25d6351      # also the same rows for an older commit

The floor is a process that only imports the required stack,
`python -c "import typer, yaml, unidiff, packaging.specifiers, packaging.version"`, in this venv.
Every command row is a whole process (the console script a user runs), measured in the same
rounds as the floor: each round runs the floor and every row once, in a rotating order, on the
same disk; trees are restored between runs outside the timing. The table shows medians and the
median over rounds of (row / floor of the same round), which keeps the ratio steady when the
machine's load changes during the run. Then: how many modules each command imports, the engine
alone on the largest real files with 1x/10x/100x synthesised hunk counts, and `matrix` over
real releases (the shipped set, and the big real stack from tests/data/stacks when present).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sgpatch.releases import cache as releases  # noqa: E402

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # bench/docsection.py, also when loaded by path

SET = "kimi-eagle3-sm120"
FLOOR = "import typer, yaml, unidiff, packaging.specifiers, packaging.version"
ONE_FILE_PATCH = ROOT / "patchsets" / SET / "patches/0.5.9/0001-kimi-k25-eagle3-hooks.patch"
ENGINE_FILES = ("srt/server_args.py", "srt/managers/scheduler.py", "srt/models/deepseek_v2.py")
STACKS = ROOT / "tests/data/stacks"
# what users run: the console script of this environment (python -m adds runpy's imports)
_SCRIPT = Path(sys.executable).with_name("sgpatch")
SGPATCH = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sgpatch"]


def _env(src: Path) -> dict[str, str]:
    """Environment of a run: sgpatch imported from `src`, no colour, no terminal, and bytecode
    cached as after `pip install` (with PYTHONDONTWRITEBYTECODE every run would compile
    sgpatch's modules from source while the stack's come compiled: tens of ms of difference)."""
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """(wall time, exit code, CPU time of the process and the children it waited for)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, proc.returncode, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


class Snapshot:
    """A tree's files (size, mtime) so a command's writes can be undone between runs."""

    def __init__(self, top: Path, pristine: Path) -> None:
        self.top, self.pristine = top, pristine
        self.files = self._scan()

    def _scan(self) -> dict[str, tuple[int, int]]:
        out = {}
        for dirpath, _dirs, files in os.walk(self.top):
            for f in files:
                p = os.path.join(dirpath, f)
                st = os.lstat(p)
                out[os.path.relpath(p, self.top)] = (st.st_size, st.st_mtime_ns)
        return out

    def changed(self) -> list[str]:
        now = self._scan()
        return sorted(k for k in now.keys() | self.files.keys() if now.get(k) != self.files.get(k))

    def restore(self) -> int:
        """Put back every changed file from the pristine copy; returns how many changed."""
        changed = self.changed()
        for rel in changed:
            dst, src = self.top / rel, self.pristine / rel
            if dst.exists():
                dst.chmod(0o644)
                dst.unlink()
            if rel in self.files:
                shutil.copy2(src, dst)
        for state in self.top.rglob(".sgpatch"):
            shutil.rmtree(state)
        self.files = self._scan()
        return len(changed)


@dataclass
class Row:
    """One command measured against the floor; `reset` runs after each timed run, untimed."""

    name: str
    argv: list[str]
    target: float | None
    expect_rc: int = 0
    reset: Callable[[], int] | None = None
    times: dict[str, list[float]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)
    cpu_ratios: dict[str, list[float]] = field(default_factory=dict)


def _trees(tmp: Path, version: str) -> dict[str, Path]:
    """The trees the rows run on: a pending site-packages tree for status and apply (one each,
    so status never sees apply's writes), and a checkout holding the one file `patch` edits."""
    pristine = tmp / "pristine"
    releases.copy_tree(version, pristine, "site-packages")
    out = {"pristine": pristine}
    for name in ("status", "apply"):
        shutil.copytree(pristine, tmp / name, symlinks=True)
        out[name] = tmp / name
    member = "sglang/srt/models/kimi_k25.py"
    releases.copy_tree(version, tmp / "patch", "checkout", members=lambda n: n == member)
    releases.copy_tree(version, tmp / "patch-pristine", "checkout", members=lambda n: n == member)
    out["patch"], out["patch-pristine"] = tmp / "patch", tmp / "patch-pristine"
    return out


def command_rows(trees: dict[str, Path]) -> list[Row]:
    status_dir, apply_dir = trees["status"] / "sglang", trees["apply"] / "sglang"
    applied = Snapshot(trees["apply"], trees["pristine"])
    patched = Snapshot(trees["patch"], trees["patch-pristine"])

    def reset(snap: Snapshot) -> Callable[[], int]:
        def go() -> int:
            n = snap.restore()
            if n == 0:
                raise SystemExit("bench: the timed command wrote nothing; tree not pending?")
            return n

        return go

    return [
        Row("`sgpatch --help`", [*SGPATCH, "--help"], 1.10),
        Row(
            f"`sgpatch status --set {SET}` (pending 0.5.9 tree)",
            [*SGPATCH, "status", "--set", SET, "--sglang-dir", str(status_dir)],
            1.60,  # issue 20: stdlib dataclasses; the old 1.25x needed records.py
        ),
        Row(
            f"`sgpatch apply --set {SET}` (pending tree, fsync'd journal)",
            [*SGPATCH, "apply", "--set", SET, "--sglang-dir", str(apply_dir)],
            1.80,
            reset=reset(applied),
        ),
        Row(
            "`sgpatch patch -p1` of one file (kimi_k25.py)",
            [*SGPATCH, "patch", "-p1", "-d", str(trees["patch"]), str(ONE_FILE_PATCH)],
            1.25,
            reset=reset(patched),
        ),
    ]


def interleaved(rows: list[Row], srcs: dict[str, Path], rounds: int) -> list[float]:
    """`rounds` rounds of floor + every (row, source) once, in a rotating order; the first
    round warms caches (pyc, page cache) and is not counted. Returns the floor's times."""
    floor_cmd = [sys.executable, "-c", FLOOR]
    env0 = _env(next(iter(srcs.values())))
    jobs: list[tuple[Row | None, str]] = [(None, "")]
    jobs += [(row, label) for row in rows for label in srcs]
    floor: list[float] = []
    for r in range(rounds + 1):
        k = r % len(jobs)
        this: dict[tuple[int, str], tuple[float, float]] = {}
        f = fc = 0.0
        for row, label in jobs[k:] + jobs[:k]:
            if row is None:
                f, rc, fc = _run(floor_cmd, env0)
                assert rc == 0, "the floor process failed"
                continue
            t, rc, c = _run(row.argv, _env(srcs[label]))
            if rc != row.expect_rc:
                raise SystemExit(f"bench: {row.name} [{label}] exited {rc}")
            if row.reset:
                row.reset()
            this[id(row), label] = (t, c)
        if r == 0:
            continue
        floor.append(f)
        for row in rows:
            for label in srcs:
                t, c = this[id(row), label]
                row.times.setdefault(label, []).append(t)
                row.ratios.setdefault(label, []).append(t / f)
                row.cpu_ratios.setdefault(label, []).append(c / fc)
    return floor


def imported_modules(
    cmd: list[str], src: Path, reset: Callable[[], int] | None = None
) -> tuple[int, int]:
    """(all modules, sgpatch's own modules) one run of `cmd` imports (`python -X importtime`)."""
    if cmd[0] == str(_SCRIPT):
        cmd = [sys.executable, *cmd]
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        env=_env(src),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if reset:
        reset()
    names = [
        ln.rsplit("|", 1)[1].strip()
        for ln in proc.stderr.splitlines()
        if ln.startswith("import time:") and "self [us]" not in ln
    ]
    return len(names), sum(1 for n in names if n == "sgpatch" or n.startswith("sgpatch."))


# --- the engine alone -----------------------------------------------------------------------


def synth_patch(lines: list[str], n: int) -> str:
    """A diff adding one line after `n` evenly spaced lines, 3 lines of context each side."""
    total = len(lines)
    step = total // (n + 1)
    if step < 7:
        raise ValueError(f"{n} hunks do not fit in {total} lines")
    out = ["--- a/f\n", "+++ b/f\n"]
    for added, i in enumerate(range(1, n + 1)):
        at = i * step  # insert after line `at` (1-based)
        ctx_before = lines[at - 3 : at]
        ctx_after = lines[at : at + 3]
        old_start = at - 2
        out.append(f"@@ -{old_start},6 +{old_start + added},7 @@\n")
        out += [" " + ln for ln in ctx_before]
        out.append(f"+# sgpatch bench {i}\n")
        out += [" " + ln for ln in ctx_after]
    return "".join(out)


def _best(fn: Callable[[], object], budget: float = 0.3) -> float:
    """Median of repeated runs within about `budget` seconds (at least 3)."""
    times: list[float] = []
    t_end = time.perf_counter() + budget
    while len(times) < 3 or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 50:
            break
    return statistics.median(times)


def engine_scale(version: str, base: int) -> list[dict[str, object]]:
    """apply_hunks on the largest real files, with base x 1, 10, 100 synthesised hunks, on the
    file as released and on it repeated 10 times (every copy made distinct)."""
    from sgpatch.diff.unified import parse_patch, split_lines
    from sgpatch.placement.engine import apply_hunks

    rows = []
    for f in ENGINE_FILES:
        real = split_lines(releases.read_member(version, f).decode("utf-8", "surrogateescape"))
        for size in (1, 10):
            lines = [
                ln if k == 0 else ln.rstrip("\n") + f"  # copy {k}\n"
                for k in range(size)
                for ln in real
            ]
            cells = {}
            for mult in (1, 10, 100):
                hunks = parse_patch(synth_patch(lines, base * mult), "bench").files[0].hunks
                res = apply_hunks(lines, hunks)
                assert res.ok and len(res.lines) == len(lines) + len(hunks), f"{f}: not applied"
                cells[mult] = _best(lambda h=hunks, ls=lines: apply_hunks(ls, h))
            rows.append({"file": f, "size": size, "lines": len(lines), "ms": cells})
    return rows


# --- matrix ---------------------------------------------------------------------------------


def _count_hunks(set_dir: Path) -> tuple[int, int]:
    files, hunks = set(), 0
    for p in set_dir.rglob("*.patch"):
        for ln in p.read_text(errors="replace").splitlines():
            if ln.startswith("+++ "):
                files.add(ln[4:].split("\t")[0])
            elif ln.startswith("@@ "):
                hunks += 1
    return len(files), hunks


def _matrix(args: list[str], repeat: int, src: Path) -> tuple[float, int, float, float]:
    """Median wall time of `sgpatch matrix ... --format json --offline` after one untimed run
    (pristine trees and page cache warm), how many cached releases it covered, the CPU time
    of the run with its workers (wall ~ CPU / cores on an otherwise idle machine), and the
    peak resident memory (MB) of the untimed run (peak_rss)."""
    env = _env(src)
    cmd = [*SGPATCH, "matrix", *args, "--format", "json", "--offline"]
    proc, peak = peak_rss(cmd, env)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"bench: matrix {args} exited {proc.returncode}: {proc.stderr[-500:]}")
    n = len(json.loads(proc.stdout)["releases"])
    runs = [_run(cmd, env) for _ in range(repeat)]
    wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[2] for r in runs)
    return wall, n, cpu, peak


_PEAK = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(p.returncode)\n"
)


def peak_rss(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run `cmd` once under a small parent that reports the peak resident memory of the
    largest process it waited for (sgpatch or one of its workers), in MB."""
    proc = subprocess.run([sys.executable, "-c", _PEAK, *cmd], env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)  # fmt: skip
    head, _, last = proc.stderr.rstrip("\n").rpartition("\n")
    proc.stderr = head
    return proc, int(last) / 1024


def stack_set(stack: str, tmp: Path) -> Path:
    """A patch set made from a real stack folder (tests/data/stacks/<project>/<release>: patch
    files in `series` order), one patch per file, each a variant for every release: the set
    `import` would make, written here so the bench needs no importer. Returns the set's dir."""
    src = STACKS / stack
    name = "stack-" + stack.replace("/", "-").replace(".", "-").lower()
    dest = tmp / "stacks" / name
    (dest / "patches").mkdir(parents=True)
    lines = ["schema: 1", f"name: {name}", f"summary: {stack} (bench)", 'sglang: ">=0"']
    lines.append("patches:")
    for i, fname in enumerate((src / "series").read_text().split(), 1):
        shutil.copyfile(src / fname, dest / "patches" / fname)
        lines += [
            f"  - id: p{i}-" + "".join(c if c.isalnum() else "-" for c in fname.lower()),
            f"    summary: {fname}",
            "    type: feature",
            "    upstream: {status: pending}",
            f'    variants: [{{sglang: ">=0", patch: patches/{fname}}}]',
        ]
    (dest / "patchset.yaml").write_text("\n".join(lines) + "\n")
    return dest


def matrix_rows(
    repeat: int, shipped: str, stack: str, stack_releases: str, tmp: Path, srcs: dict[str, Path]
) -> list:
    """One row per set and source (this tree, and --against's commit when given)."""
    out = []
    for label, src in srcs.items():
        t, n, cpu, mb = _matrix(["--set", SET, "--releases", shipped], repeat, src)
        what = f"shipped set {SET}, `--releases '{shipped}'`"
        out.append({"what": what, "src": label, "releases": n, "s": t, "cpu": cpu, "mb": mb})
    if not (STACKS / stack / "series").is_file():
        out.append({"what": f"real stack {stack}", "skipped": f"no {STACKS.name}/{stack}/series"})
        return out
    set_dir = stack_set(stack, tmp)
    files, hunks = _count_hunks(set_dir)
    args = ["--set", set_dir.name, "--patchsets", str(set_dir.parent), "--releases"]
    what = f"real stack {stack} ({hunks} hunks, {files} files), `--releases '{stack_releases}'`"
    for label, src in srcs.items():
        t, n, cpu, mb = _matrix([*args, stack_releases], repeat, src)
        out.append({"what": what, "src": label, "releases": n, "s": t, "cpu": cpu, "mb": mb,
                    "target": 5.0})  # fmt: skip
    # every cached release (42 in a full cache): issue 23's "matrix over everything"
    what = f"real stack {stack} ({hunks} hunks, {files} files), every cached release"
    for label, src in srcs.items():
        t, n, cpu, mb = _matrix([*args, ">=0"], repeat, src)
        out.append({"what": what, "src": label, "releases": n, "s": t, "cpu": cpu, "mb": mb,
                    "target": 10.0})  # fmt: skip
    return out


# --- output ---------------------------------------------------------------------------------


def _ms(t: float) -> str:
    return f"{t * 1000:.0f} ms"


def markdown(res: dict) -> str:
    labels = res["labels"]
    rounds = res["rounds"]
    out = [
        "## Speed",
        "",
        f"Generated by `python bench/speed.py{res['argline']}`: sglang {res['version']}, "
        f"{rounds} interleaved rounds (after one warm-up), median, whole processes, "
        f"{os.cpu_count()} cores; trees in `{res['tmp_fs']}`.",
        "",
        "The floor: `python -c "
        f'"{FLOOR}"` in the same venv, run in every round. *x floor* is the median over '
        "rounds of (row / that round's floor), by wall time (the target's measure) and by CPU "
        "time (user + system: steadier when the machine is shared).",
        "",
    ]
    head = "| process | " + " | ".join(
        f"{lbl} time | {lbl} x floor | {lbl} CPU x floor"
        if len(labels) > 1
        else "time | x floor | CPU x floor"
        for lbl in labels
    )
    out.append(head + " | target | " + " | ".join(f"{lbl} modules" for lbl in labels) + " |")
    ncols = 3 * len(labels) + 2 + len(labels)
    out.append("|---|" + "---:|" * (ncols - 1))
    fl = "| floor: the stack's imports | " + " | ".join(
        f"{_ms(statistics.median(res['floor']))} | 1.00x | 1.00x" for _ in labels
    )
    out.append(fl + " | | " + " | ".join(res["floor_modules"] for _ in labels) + " |")
    for row in res["rows"]:
        cells = []
        for lbl in labels:
            ratio = statistics.median(row["ratios"][lbl])
            ok = "pass" if ratio <= row["target"] else "FAIL"
            cpu = statistics.median(row["cpu_ratios"][lbl])
            cells.append(
                f"{_ms(statistics.median(row['times'][lbl]))} | {ratio:.2f}x {ok} | {cpu:.2f}x"
            )
        mods = [f"{row['modules'][lbl][0]} ({row['modules'][lbl][1]} sgpatch)" for lbl in labels]
        out.append(
            f"| {row['name']} | "
            + " | ".join(cells)
            + f" | <= {row['target']:.2f}x | "
            + " | ".join(mods)
            + " |"
        )
    out += _engine_md(res)
    if res["matrix"]:
        out += [
            "",
            f"<!-- {MATRIX_TAG}:begin -->",
            *_matrix_md(res)[1:],
            f"<!-- {MATRIX_TAG}:end -->",
        ]
    return "\n".join(out)


def _engine_md(res: dict) -> list[str]:
    if not res["engine"]:
        return []
    out = [
        "",
        f"Engine alone (`apply_hunks`, in-process, median) on the largest files of sglang "
        f"{res['version']}: hunks that each add one line after evenly spaced lines (3 lines of "
        "context), the base count and 10x and 100x of it; `x10` is the file repeated 10 times "
        "(each copy's lines made distinct). *per added hunk* = (time at 100x - time at 1x) / "
        "the hunks added; *per 1000 lines* = time at 1x / lines. Linear in both means each "
        "stays about the same from row to row.",
        "",
    ]
    base = res["engine_base"]
    out.append(
        "| file | lines | "
        + " | ".join(f"{base * m} hunks" for m in (1, 10, 100))
        + " | per added hunk | per 1000 lines |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in res["engine"]:
        ms = r["ms"]
        cells = " | ".join(f"{ms[m] * 1000:.1f} ms" for m in (1, 10, 100))
        per_hunk = (ms[100] - ms[1]) / (base * 99) * 1e6
        per_kline = ms[1] / r["lines"] * 1e6
        name = r["file"] + (f" x{r['size']}" if r["size"] > 1 else "")
        out.append(f"| {name} | {r['lines']} | {cells} | {per_hunk:.0f} us | {per_kline:.2f} ms |")
    return out


def _matrix_md(res: dict) -> list[str]:
    if not res["matrix"]:
        return []
    out = [
        "",
        "`sgpatch matrix` with a warm cache (`--offline`, median of "
        f"{res['matrix_repeat']}, both cores{res.get('matrix_how', '')}; *peak memory*: the "
        "resident memory of its largest process, sgpatch or a worker, in the untimed run):",
        "",
        "| set | code | releases | time | CPU (all workers) | peak memory | target |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for m in res["matrix"]:
        if "skipped" in m:
            out.append(f"| {m['what']} | | | skipped: {m['skipped']} | | | < 5 s |")
            continue
        tgt = f"< {m['target']:.0f} s" if m.get("target") else ""
        verdict = ""
        if m.get("target"):
            verdict = " pass" if m["s"] < m["target"] else " FAIL"
        out.append(
            f"| {m['what']} | {m['src']} | {m['releases']} | {m['s']:.2f} s{verdict} | "
            f"{m['cpu']:.2f} s | {m['mb']:.0f} MB "
            f"| {tgt} |"
        )
    out.append("")
    return out


MATRIX_TAG = "speed-matrix"  # the matrix table's own block inside the speed section


def update_doc(path: Path, section: str) -> None:
    from docsection import update_section

    update_section(path, "speed", section + "\n")


def update_matrix_doc(path: Path, res: dict) -> None:
    """`--skip rows engine --out`: only the matrix table of the speed section is rewritten
    (its block `speed-matrix`; a section written before the block existed has its matrix
    table, from its first line to the section's end, marked as that block first)."""
    from docsection import update_section

    text = path.read_text()
    begin, head = f"<!-- {MATRIX_TAG}:begin -->", "`sgpatch matrix` with a warm cache"
    if begin not in text and head in text and "<!-- speed:end -->" in text:
        at, end = text.index(head), text.index("<!-- speed:end -->")
        if at < end:
            old = text[at:end].rstrip("\n")
            text = text[:at] + f"{begin}\n{old}\n<!-- {MATRIX_TAG}:end -->\n\n" + text[end:]
            path.write_text(text)
    update_section(path, MATRIX_TAG, "\n".join(_matrix_md(res)).strip("\n") + "\n")


def _checkout(rev: str, tmp: Path) -> Path:
    """`src/` (and the patch sets it links to) of an older commit, unpacked from git."""
    dest = tmp / f"rev-{rev}"
    dest.mkdir()
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src", "patchsets"],
        capture_output=True,
        check=True,
    ).stdout
    tar = dest / "src.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest / "src"


def _fs_of(path: Path) -> str:
    proc = subprocess.run(["df", "--output=fstype", str(path)], capture_output=True, text=True)
    kind = proc.stdout.split()[-1] if proc.returncode == 0 and proc.stdout.split() else "?"
    return f"{tempfile.gettempdir()}, {kind}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default="0.5.9", help="SGLang release the rows run on")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    ap.add_argument("--against", metavar="REV", help="also time the rows for this commit")
    ap.add_argument("--engine-base", type=int, default=3, help="base hunk count (x1, x10, x100)")
    ap.add_argument("--matrix-repeat", type=int, default=3)
    ap.add_argument("--shipped-releases", default=">=0.5.5,<0.5.11")
    ap.add_argument("--stack", default="slime/0.5.9", help="tests/data/stacks/<project>/<rel>")
    ap.add_argument("--stack-releases", default=">=0.5.9,<0.5.22", help="17 cached releases")
    ap.add_argument("--skip", nargs="*", default=[], choices=["rows", "engine", "matrix"])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    argline = f" --against {args.against}" if args.against else ""
    with tempfile.TemporaryDirectory(prefix="sgpatch-speed-") as tmp:
        tmpd = Path(tmp)
        srcs = {"this": ROOT / "src"}
        if args.against:
            srcs = {args.against: _checkout(args.against, tmpd), "this": ROOT / "src"}
        trees = _trees(tmpd, args.version)
        rows = [] if "rows" in args.skip else command_rows(trees)
        floor = interleaved(rows, srcs, args.rounds) if rows else [float("nan")]
        floor_mods = imported_modules([sys.executable, "-c", FLOOR], ROOT / "src")[0]
        res = {
            "version": args.version,
            "rounds": args.rounds,
            "argline": argline,
            "tmp_fs": _fs_of(tmpd),
            "labels": list(srcs),
            "floor": floor,
            "floor_modules": str(floor_mods),
            "rows": [
                {
                    "name": r.name,
                    "target": r.target,
                    "times": r.times,
                    "ratios": r.ratios,
                    "cpu_ratios": r.cpu_ratios,
                    "modules": {
                        lbl: imported_modules(r.argv, src, r.reset) for lbl, src in srcs.items()
                    },
                }
                for r in rows
            ],
            "engine_base": args.engine_base,
            "engine": [] if "engine" in args.skip else engine_scale(args.version, args.engine_base),
            "matrix_repeat": args.matrix_repeat,
            "matrix_how": f"; `python bench/speed.py --skip rows engine{argline}`, load "
            f"{os.getloadavg()[0]:.1f} at the start"
            if {"rows", "engine"} <= set(args.skip)
            else "",
            "matrix": []
            if "matrix" in args.skip
            else matrix_rows(
                args.matrix_repeat,
                args.shipped_releases,
                args.stack,
                args.stack_releases,
                tmpd,
                srcs,
            ),
        }
    text = markdown(res)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(text)
    if args.out and {"rows", "engine"} <= set(args.skip):
        update_matrix_doc(args.out, res)
    elif args.out:
        update_doc(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
