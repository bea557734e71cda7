"""How `sgpatch patch` scales with the number of hunks, side by side with GNU patch in one run.

    python bench/scale.py                          # table on stdout
    python bench/scale.py --out docs/benchmarks.md
    python bench/scale.py --hunks 1000 10000 --rounds 1

Input: a generated file of 4 distinct lines per hunk (400,000 lines for 100,000 hunks) and a
clean diff that changes the second line of every 4 (one line of context each side, so every
hunk is at its stated line). Each row applies that diff with `sgpatch patch -p1` (the console
script of this environment) and with GNU `patch -p1`, each on a fresh copy of the file, the two
alternating in every round; both results are checked against the expected bytes. The table
shows the median wall time, sgpatch / GNU, and the time per hunk: (wall - the start-up
floor) / hunks, the floor being the same tool on a 1-hunk diff from the same generator,
measured in the same rounds (a process's start-up is no part of a per-hunk cost). Targets
(issue 22): the largest row within 10x of GNU, and time per hunk within 2x from row to row.

A module of its own, not part of bench/speed.py: speed.py needs a real release in the cache
and takes minutes of interleaved rounds; this needs nothing but GNU patch and runs in about a
minute, so it can be re-run alone while working on the engine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent)
)  # bench/docsection.py, also when loaded by path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
HUNKS = (1_000, 10_000, 100_000)
RATIO_TARGET = 10.0  # largest row: sgpatch within this many times GNU patch
LINEAR_TARGET = 2.0  # time per hunk: largest / smallest over the rows
_SCRIPT = Path(sys.executable).with_name("sgpatch")
SGPATCH = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "sgpatch"]


@dataclass(frozen=True)
class Case:
    """One generated input: the file before, the diff, and the file after."""

    hunks: int
    before: bytes
    diff: bytes
    after: bytes

    @property
    def lines(self) -> int:
        return 4 * self.hunks


def generate(hunks: int) -> Case:
    """A file of 4 distinct lines per hunk and a clean diff changing the second of each 4."""
    before, after, diff = [], [], ["--- a/f.txt\n", "+++ b/f.txt\n"]
    for i in range(hunks):
        a, b, c, d = (f"line {4 * i + k} of the generated file\n" for k in range(4))
        before += [a, b, c, d]
        after += [a, "changed " + b, c, d]
        diff += [f"@@ -{4 * i + 1},3 +{4 * i + 1},3 @@\n", " " + a, "-" + b, "+changed " + b]
        diff.append(" " + c)
    return Case(hunks, "".join(before).encode(), "".join(diff).encode(), "".join(after).encode())


@dataclass(frozen=True)
class Row:
    """One hunk count: median wall times of both tools over the rounds."""

    hunks: int
    lines: int
    sgpatch: float
    gnu: float
    floor: float  # sgpatch on a 1-hunk diff, same rounds
    per_hunk: float  # median over rounds of (sgpatch - that round's floor) / hunks
    rounds: int
    sgpatch_cpu: float = 0.0  # median CPU time (user + system) of the sgpatch runs
    gnu_cpu: float = 0.0

    @property
    def ratio(self) -> float:
        return self.sgpatch / self.gnu if self.gnu else float("inf")


def _commands(work: Path, diff: Path) -> dict[str, list[str]]:
    return {
        "sgpatch": [*SGPATCH, "patch", "-p1", "-d", str(work), "-i", str(diff)],
        "gnu": ["patch", "-p1", "-s", "-d", str(work), "-i", str(diff)],
    }


def _timed(cmd: list[str], work: Path, case: Case) -> tuple[float, float]:
    """Wall and CPU (user + system) time of one run on a fresh copy of the file; the result
    must be the expected one. CPU time says what the run cost when the shared machine's load
    stretches the wall time."""
    target = work / "f.txt"
    target.write_bytes(case.before)
    for junk in ("f.txt.orig", "f.txt.rej"):
        (work / junk).unlink(missing_ok=True)
    c0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    if proc.returncode != 0 or target.read_bytes() != case.after:
        err = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["wrong bytes"]
        raise SystemExit(f"{cmd[0]} on {case.hunks} hunks: exit {proc.returncode}: {err[0]}")
    return wall, cpu


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rounds_for(hunks: int, rounds: int) -> int:
    """More rounds for a small row: its per-hunk time is a difference of two ~0.1 s process
    times, so a few ms of the machine's noise would be a large part of it; ten times the
    rounds (still seconds) make its median steady."""
    return rounds * max(1, min(10, 10_000 // max(hunks, 1)))


def measure(case: Case, rounds: int, tmp: Path) -> Row:
    """Both tools on `case` and sgpatch on a 1-hunk case (the floor), alternating which goes
    first, `rounds` times each; the per-hunk time pairs each run with its own round's floor,
    so a slow stretch of the machine moves both sides of the difference."""
    one = generate(1)
    runs = {}
    for name, c in (("n", case), ("one", one)):
        work = tmp / f"{name}{case.hunks}"
        work.mkdir()
        diff = tmp / f"{name}{case.hunks}.diff"
        diff.write_bytes(c.diff)
        cmds = _commands(work, diff)
        runs[name] = (cmds["sgpatch"], work, c)
        if name == "n":
            runs["gnu"] = (cmds["gnu"], work, c)
    times: dict[str, list[float]] = {k: [] for k in runs}
    cpus: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(rounds):
        for name in sorted(runs, reverse=bool(r % 2)):
            wall, cpu = _timed(*runs[name])
            times[name].append(wall)
            cpus[name].append(cpu)
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    pairs = zip(times["n"], times["one"], strict=True)
    paired = [max(n - one, 0.0) / case.hunks for n, one in pairs]
    return Row(case.hunks, case.lines, med["n"], med["gnu"], med["one"],
               statistics.median(paired), rounds, cpu["n"], cpu["gnu"])  # fmt: skip


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def render(rows: list[Row], rounds: int) -> str:
    """The Markdown section: the rows, the two targets judged, and how to read them."""
    per = [r.per_hunk for r in rows]
    spread = max(per) / min(per) if per and min(per) > 0 else float("inf")
    big = max(rows, key=lambda r: r.hunks)
    out = [
        "## Scale: hunks per diff",
        "",
        f"Generated by `python bench/scale.py`: a clean N-hunk diff of a generated file (4 "
        f"lines per hunk), applied by `sgpatch patch -p1` and by GNU `patch -p1 -s` on the "
        f"same input in the same run, median of the alternating *rounds* ({rounds}, more for a "
        f"small row, whose per-hunk time is a small difference), whole processes "
        f"(wall time; the last column is their CPU time, user + system). *per hunk*: the "
        f"median over rounds of (sgpatch - the same round's 1-hunk floor) / hunks.",
        "",
        "| hunks | file lines | sgpatch | GNU patch | sgpatch / GNU | sgpatch 1-hunk floor "
        "| per hunk | CPU: sgpatch / GNU | rounds |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.hunks:,} | {r.lines:,} | {_ms(r.sgpatch)} | {_ms(r.gnu)} | {r.ratio:.1f}x | "
            f"{_ms(r.floor)} | {r.per_hunk * 1e6:.0f} us | {_ms(r.sgpatch_cpu)} / "
            f"{_ms(r.gnu_cpu)} | {r.rounds} |"
        )
    ok_ratio = "pass" if big.ratio <= RATIO_TARGET else "FAIL"
    ok_linear = "pass" if spread <= LINEAR_TARGET else "FAIL"
    out += [
        "",
        f"Targets: {big.hunks:,} hunks within {RATIO_TARGET:.0f}x of GNU patch: "
        f"{big.ratio:.1f}x, **{ok_ratio}**; time per hunk within {LINEAR_TARGET:.0f}x from row "
        f"to row: {spread:.2f}x, **{ok_linear}**.",
        "",
    ]
    return "\n".join(out) + "\n"


def update_doc(path: Path, section: str) -> None:
    from docsection import update_section

    update_section(path, "scale", section)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hunks", type=int, nargs="+", default=list(HUNKS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="update the scale section of this Markdown file")
    args = ap.parse_args(argv)
    if shutil.which("patch") is None:
        print("scale: GNU patch not found; skipped", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="sgpatch-scale-") as tmp:
        rows = [measure(generate(n), rounds_for(n, args.rounds), Path(tmp)) for n in args.hunks]
    section = render(rows, args.rounds)
    print(section, end="")
    if args.out:
        update_doc(args.out, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
