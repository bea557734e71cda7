"""examples/Dockerfile and examples/Dockerfile.source, built without a Docker engine.

No Docker engine runs on the machines this suite runs on, so each Dockerfile is parsed (`\\` line
continuations, comments inside them, `ARG` defaults, `ENV`) and its `RUN` lines are run in order,
as Docker's shell form does (`/bin/sh -c LINE`, stdout and stderr both captured, i.e. not a
terminal; `TERM=xterm-256color` is set anyway, so "no colour" cannot come from the terminal type),
stopping at the first non-zero exit as `docker build` does. What stands in for what:

- The base image `lmsysorg/sglang:vX.Y.Z-cu130` (examples/Dockerfile) is a temporary virtualenv
  (`python -m venv --system-site-packages`, so `pip`, `python` and `sgpatch` on PATH are the
  venv's) into which the real SGLang release of the tag is installed from the release cache with
  `pip install --no-deps --no-compile <cached wheel>`. It is a site-packages install; the real image
  has an editable checkout instead (docs/docker.md), which Dockerfile.source's test covers.
- The base image `nvidia/cuda:...` (examples/Dockerfile.source) is this machine: `git` and
  `python3` must be on PATH. The Dockerfile's own `python3 -m venv /opt/venv` runs for real.
- sgpatch's dependencies: a venv made with `--system-site-packages` from the test's Python sees the
  *base* interpreter's site-packages, not those of a virtualenv the test runs in (`make test`
  runs in `.venv`), so every venv a build makes also gets a `.pth` file listing the site-packages
  of the Python running the tests. `pip install` then finds typer, rich, ... already installed and
  needs no package index for them.
- The build context is a temp folder holding `dist/` with the wheel `make dist` builds, made once
  per session by the same script (`tools/dist.py`, from a clean copy of this working tree; it
  fetches the build backend, setuptools, through pip as usual). `COPY` copies from it as Docker
  does (a wildcard must match, and `.dockerignore` must not leave the file out of the context).
- Absolute paths the Dockerfiles use (`/root/sglang`, `/opt/venv`, `/opt/sgpatch`) are mapped
  under a temp dir.
- Lines that cannot run here are in `STAND_INS` below, each with its reason; a stand-in that no
  longer matches any line of its Dockerfile fails the test, so the list cannot rot:
  the FlashInfer upgrade (pulls torch and CUDA wheels; faked by a minimal dist-info of each pinned
  `name==version`, which is all sgpatch reads for its precondition check), `apt-get` (base-image
  packages), `git clone` of SGLang (replaced by a tagged git repository holding the release's
  checkout-shaped tree from the wheel, without the `_version.py` a clone lacks, so the version
  comes from `git describe` as in a real clone), and `pip install -e /root/sglang/python` (SGLang's
  own dependencies are torch and CUDA wheels).

Each Dockerfile is built twice: on a pristine tree (every RUN exits 0, `status --check` passes,
the tree passes the intent checks of tests/real/intent.py) and on a tree with one line edited
where a patch needs it (the sgpatch RUN exits 3, the build stops there, the log has one table row
per patch, no colour codes and no progress animation, and nothing was written).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sgpatch.releases import cache as releases

from .intent import CHECKS, COMM

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SET = "kimi-eagle3-sm120"
OPTIONAL = "sm120-symm-mem-two-shot-no-multicast"
# The line of srt/layers/communicator.py (0.5.9) that sm120-flashinfer-allreduce-fusion rewrites;
# the conflict builds edit it as a local change or a different base image would.
GATE = "(_is_sm90_supported or _is_sm100_supported)"
GATE_EDITED = "(_is_sm90_supported or _is_sm100_supported or _is_hopper_plus)"
ESC = re.compile(r"\x1b[\[\]()]")  # CSI / OSC / charset escape sequences


# ----------------------------------------------------------------------------- parsing
@dataclass
class Dockerfile:
    base: str  # FROM image
    args: dict[str, str]  # ARG name -> default ("" if none)
    steps: list[tuple[str, str]]  # ("RUN" | "ENV" | "COPY", text), in order


def _logical_lines(text: str) -> list[str]:
    """Instructions with `\\`-continuations joined; comment lines (also inside a continuation,
    as Docker drops them) and blank lines skipped."""
    out: list[str] = []
    buf: str | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (buf is None and not stripped):
            continue
        line = raw.rstrip()
        if line.endswith("\\"):
            buf = (buf or "") + line[:-1]
            continue
        out.append(((buf or "") + line).strip())
        buf = None
    if buf is not None:
        out.append(buf.strip())
    return out


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand(text: str, env: dict[str, str]) -> str:
    """`$VAR` / `${VAR}` substitution as Docker does it in ENV (unknown variables -> "")."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def parse_dockerfile(text: str) -> Dockerfile:
    base = ""
    args: dict[str, str] = {}
    steps: list[tuple[str, str]] = []
    for line in _logical_lines(text):
        instr, _, rest = line.partition(" ")
        instr, rest = instr.upper(), rest.strip()
        if instr == "FROM":
            base = rest.split()[0]
        elif instr == "ARG":
            name, eq, default = rest.partition("=")
            args[name.strip()] = shlex.split(default)[0] if eq and default else ""
        elif instr in ("RUN", "ENV", "COPY"):
            steps.append((instr, rest))
        else:
            raise AssertionError(f"unsupported Dockerfile instruction in the example: {line}")
    return Dockerfile(base, args, steps)


def _env_pairs(rest: str) -> list[tuple[str, str]]:
    """`ENV A=1 B="x y"` or the legacy `ENV A 1`."""
    if "=" not in rest.split()[0]:
        name, _, value = rest.partition(" ")
        return [(name, value.strip())]
    return [tuple(tok.split("=", 1)) for tok in shlex.split(rest)]  # type: ignore[misc]


def test_parser_handles_continuations_args_and_env():
    df = parse_dockerfile(
        'FROM img:1\nARG A="x y"\nARG B\n# comment\nRUN one \\\n# inside\n && two \\\n'
        " && three\nENV P=/v/bin:$PATH Q=${A}\nENV R legacy value\n"
    )
    assert df.base == "img:1"
    assert df.args == {"A": "x y", "B": ""}
    assert df.steps[0] == ("RUN", "one  && two  && three")
    assert _env_pairs(df.steps[1][1]) == [("P", "/v/bin:$PATH"), ("Q", "${A}")]
    assert _env_pairs(df.steps[2][1]) == [("R", "legacy value")]
    assert expand("/v/bin:$PATH:${A}", {"PATH": "/usr/bin", "A": "a"}) == "/v/bin:/usr/bin:a"


# ----------------------------------------------------------------------------- the build
@dataclass
class Step:
    line: str  # the RUN line as written (after path mapping)
    how: str  # "run" or the stand-in's reason
    rc: int
    output: str  # stdout + stderr, interleaved as a build log shows them


@dataclass
class Build:
    tmp: Path
    context: Path  # the build context (`docker build ... CONTEXT`)
    path_map: dict[str, Path]
    env: dict[str, str]
    args: dict[str, str]
    version: str
    tamper: Callable[[Path], None] | None = None
    steps: list[Step] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    sglang_root: Path | None = None

    def map_paths(self, text: str) -> str:
        for old, new in self.path_map.items():
            text = re.sub(rf"(?<![\w/]){re.escape(old)}(?![\w-])", str(new), text)
        return text

    def sh(self, line: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["/bin/sh", "-c", line],
            cwd=cwd or self.tmp,
            env={**self.args, **self.env},  # build ARGs are environment variables of RUN
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
            check=False,
        )

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.rc != 0), None)


def _runner_site_packages() -> list[str]:
    """site-packages of the Python running the tests (`.venv`'s under `make test`)."""
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    return sorted(p for p in paths if Path(p).is_dir())


def _venv_site(venv: Path) -> Path:
    out = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _seed_deps(venv: Path) -> None:
    """Make sgpatch's dependencies (installed for the test run) visible to a build's venv."""
    (_venv_site(venv) / "_sgpatch_test_deps.pth").write_text(
        "\n".join(_runner_site_packages()) + "\n"
    )


def _fake_dist_info(site: Path, name: str, version: str) -> None:
    d = site / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (d / "INSTALLER").write_text("sgpatch-test-stand-in\n")
    (d / "RECORD").write_text("")


# --- stand-ins: (regex on the RUN line, reason, handler(build, line) -> (rc, output))
def _flashinfer(b: Build, line: str) -> tuple[int, str]:
    pins = re.findall(r'"?([A-Za-z][\w.-]*)==([\w.]+)"?', line)
    assert pins and any(n == "flashinfer-python" for n, _ in pins), (
        "the FlashInfer line should pin flashinfer-python==X (the cubin package must match): "
        + line
    )
    site = _venv_site(Path(b.env["VIRTUAL_ENV"]))
    for name, version in pins:
        _fake_dist_info(site, name, version)
    return 0, "".join(f"(stand-in) {n} {v}: dist-info only\n" for n, v in pins)


def _apt_get(b: Build, line: str) -> tuple[int, str]:
    missing = [
        tool for tool in ("git", "python3") if shutil.which(tool, path=b.env["PATH"]) is None
    ]
    assert not missing, f"the stand-in for the base image needs {missing} on PATH"
    return 0, "(stand-in) base-image packages: git and python3 come from this machine\n"


def _git_clone(b: Build, line: str) -> tuple[int, str]:
    words = shlex.split(expand(line, {**b.env, **b.args}))
    ref = words[words.index("--branch") + 1]
    dest = Path(words[-1])
    assert ref == f"v{b.version}", f"clone of {ref}, expected v{b.version}"
    root = releases.copy_tree(b.version, dest, "checkout")
    (root / "_version.py").unlink()  # generated at build time upstream: not in a clone
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", ref], ["tag", ref]):
        subprocess.run([*git, *cmd], cwd=dest, check=True, capture_output=True)
    b.sglang_root = root
    if b.tamper:
        b.tamper(root)
    return 0, f"(stand-in) {dest}: sglang {b.version} checkout from the release wheel, tag {ref}\n"


def _skip_sglang_install(b: Build, line: str) -> tuple[int, str]:
    return 0, "(stand-in) not run: installs SGLang's dependencies (torch, CUDA wheels)\n"


STAND_INS: dict[str, list[tuple[str, str, Callable[[Build, str], tuple[int, str]]]]] = {
    "Dockerfile": [
        (r"pip install .*flashinfer", "FlashInfer upgrade: torch + CUDA wheels", _flashinfer),
    ],
    "Dockerfile.source": [
        (r"^apt-get ", "base-image packages", _apt_get),
        (r"^git clone .*sglang", "SGLang clone: the release's tree, tagged", _git_clone),
        (r"pip install .*-e .*sglang/python", "SGLang's own install", _skip_sglang_install),
    ],
}


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
    """A build context as `make dist` leaves the repository: `dist/sgpatch-V-py3-none-any.whl`."""
    ctx = tmp_path_factory.mktemp("context")
    wheel = make_dist(ctx / "dist")
    with zipfile.ZipFile(wheel) as zf:
        assert f"sgpatch/patchsets/{SET}/patchset.yaml" in zf.namelist(), (
            "the sgpatch wheel does not ship the bundled patch sets"
        )
    return ctx


def _base_env(tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "PYTHONPATH",
            "PYTHONHOME",
            "VIRTUAL_ENV",
            "SGLANG_DIR",
            "SGPATCH_PATH",
            "COLUMNS",
            "LINES",
            "FORCE_COLOR",
            "NO_COLOR",
            "CLICOLOR_FORCE",
            "TTY_COMPATIBLE",
            "PIP_REQUIRE_VIRTUALENV",
        }
    }
    # no sgpatch from the test's own environment (.venv/bin) may answer for the image's
    path = [
        p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "sgpatch").exists()
    ]
    env.update(
        PATH=os.pathsep.join(path),
        TERM="xterm-256color",
        PIP_NO_INPUT="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        HOME=str(tmp / "home"),
    )
    (tmp / "home").mkdir()
    return env


def _image_from(b: Build, base: str) -> None:
    """Stand-in for the base image: a venv with the SGLang release of the tag pip-installed."""
    m = re.fullmatch(r"lmsysorg/sglang:v(\d+\.\d+\.\d+(?:\.post\d+)?)-cu\d+(?:@.*)?", base)
    if m is None:  # a plain OS/CUDA image: this machine
        assert base.startswith("nvidia/cuda:"), f"no stand-in for base image {base}"
        return
    assert m.group(1) == b.version
    venv = b.tmp / "image"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
        check=True,
        capture_output=True,
    )
    _seed_deps(venv)
    b.env["PATH"] = f"{venv / 'bin'}{os.pathsep}{b.env['PATH']}"
    b.env["VIRTUAL_ENV"] = str(venv)
    wheel = releases.wheel_path(b.version)
    proc = b.sh(f"pip install -q --no-deps --no-compile --no-cache-dir {shlex.quote(str(wheel))}")
    assert proc.returncode == 0, proc.stdout
    b.sglang_root = _venv_site(venv) / "sglang"
    assert (b.sglang_root / "srt").is_dir()
    if b.tamper:
        b.tamper(b.sglang_root)


def _dockerignored(rel: str) -> bool:
    """Whether the repository's .dockerignore leaves `rel` out of the build context (Docker's
    rules: patterns in order, the last one matching wins, `!` re-includes)."""
    ignore = REPO / ".dockerignore"
    out = False
    if not ignore.is_file():
        return out
    for raw in ignore.read_text().splitlines():
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        keep = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatchcase(p, pattern) for p in prefixes):
            out = not keep
    return out


def _copy(b: Build, text: str) -> tuple[int, str]:
    """`COPY SRC... DEST` from the build context, as Docker does it: every source (a wildcard
    too) must match a file in the context, and DEST ending in `/` is a folder."""
    *sources, dest = shlex.split(text)
    got = []
    for src in sources:
        matches = sorted(b.context.glob(src))
        matches = [m for m in matches if not _dockerignored(m.relative_to(b.context).as_posix())]
        if not matches:
            return 1, f"COPY failed: no source files were specified ({src} in the context)\n"
        got += matches
    target = Path(dest)
    if dest.endswith("/") or len(got) > 1:
        target.mkdir(parents=True, exist_ok=True)
    for m in got:
        shutil.copy2(m, target / m.name if target.is_dir() else target)
    return 0, "".join(f"COPY {m.relative_to(b.context)} -> {dest}\n" for m in got)


def build(name: str, tmp: Path, context: Path, tamper=None) -> Build:
    df = parse_dockerfile((EXAMPLES / name).read_text(encoding="utf-8"))
    m = re.search(r"v(\d+\.\d+\.\d+(?:\.post\d+)?)", df.args.get("SGLANG_REF", "") or df.base)
    assert m, f"{name}: no SGLang version in FROM {df.base} or ARG SGLANG_REF"
    root = tmp / "fs"
    b = Build(
        tmp=tmp,
        context=context,
        path_map={
            "/root/sglang": root / "root" / "sglang",
            "/opt/venv": root / "opt" / "venv",
            "/opt/sgpatch": root / "opt" / "sgpatch",
        },
        env=_base_env(tmp),
        args=dict(df.args),
        version=m.group(1),
        tamper=tamper,
    )
    copies = [text for instr, text in df.steps if instr == "COPY"]
    assert any(re.match(r"dist/sgpatch-\*\.whl ", c) for c in copies), (
        f"{name}: sgpatch should come from the wheel `make dist` writes: {copies}"
    )
    _image_from(b, df.base)
    stand_ins = STAND_INS[name]
    for instr, text in df.steps:
        text = b.map_paths(text)
        if instr == "ENV":
            for k, v in _env_pairs(text):
                b.env[k] = expand(v, {**b.args, **b.env})
                if k == "PATH":
                    b.env["VIRTUAL_ENV"] = b.env["PATH"].split(os.pathsep)[0].removesuffix("/bin")
            continue
        if instr == "COPY":
            rc, out = _copy(b, text)
            b.steps.append(Step(text, "copy", rc, out))
            if rc != 0:
                break
            continue
        for pattern, reason, handler in stand_ins:
            if re.search(pattern, text):
                b.used.add(pattern)
                rc, out = handler(b, text)
                b.steps.append(Step(text, reason, rc, out))
                break
        else:
            proc = b.sh(text, cwd=root if root.is_dir() else tmp)
            b.steps.append(Step(text, "run", proc.returncode, proc.stdout))
            venv = re.search(r"-m venv (\S+)", text)
            if proc.returncode == 0 and venv:
                _seed_deps(Path(venv.group(1)))
        if b.steps[-1].rc != 0:
            break  # docker build stops at the first failing RUN
    return b


def _sgpatch_step(b: Build) -> Step:
    steps = [s for s in b.steps if "sgpatch apply" in s.line]
    assert len(steps) == 1, [s.line for s in b.steps]
    return steps[0]


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


def _patch_ids() -> list[str]:
    return list(CHECKS)


def _install_location(b: Build, venv: Path) -> None:
    """The sgpatch that ran is the one the Dockerfile installed into the image's Python."""
    assert (venv / "bin" / "sgpatch").is_file()
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sgpatch; print(sgpatch.__file__)"],
        env=b.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(out.stdout.strip()).is_relative_to(_venv_site(venv)), out.stdout


def _status_json(b: Build, extra: str = "") -> dict:
    proc = subprocess.run(
        ["/bin/sh", "-c", f"sgpatch status --json --set {SET} {extra}"],
        env=b.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert not proc.stderr, proc.stderr
    return json.loads(proc.stdout)


DOCKERFILES = ["Dockerfile", "Dockerfile.source"]


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_builds_and_patches(name, tmp_path, context):
    b = build(name, tmp_path, context)
    log = "\n".join(f"RUN {s.line}\n{s.output}" for s in b.steps)
    assert b.failed is None, f"{name}: build failed:\n{log}"
    assert b.used == {p for p, _, _ in STAND_INS[name]}, "a stand-in matches no line any more"
    step = _sgpatch_step(b)
    assert step.how == "run"
    out = step.output
    _assert_plain_log(out)
    venv = Path(b.env["VIRTUAL_ENV"])
    _install_location(b, venv)
    root = b.sglang_root
    assert root is not None
    layout = "site-packages" if name == "Dockerfile" else "checkout"
    source = "_version.py" if name == "Dockerfile" else "git describe"
    assert f"sglang {b.version} ({layout}, version from {source}) at {root}\n" in out, out
    assert f"sgpatch: {SET}: applied; 5 file(s) written (5 applied; 1 optional not chosen)" in out
    # apply's table, then status --check's: one row per patch in each
    rows = _table_rows(out)
    assert sorted(rows) == sorted(_patch_ids()), rows
    for pid, states in rows.items():
        want = "pending" if pid == OPTIONAL else "applied"
        assert states == [want, want], (pid, states)
    if name == "Dockerfile":  # the FlashInfer stand-in put 0.6.17 into the image's site-packages
        assert "precondition flashinfer-python>=0.6.17: ok (0.6.17 in " in out, out
    # the tree is patched, and means it
    for pid, checks in CHECKS.items():
        for check in checks:
            if pid == OPTIONAL:
                with pytest.raises(AssertionError):
                    check(root)
            else:
                check(root)
    dir_opt = "" if name == "Dockerfile" else f"--sglang-dir {root}"
    doc = _status_json(b, f"--check {dir_opt}")
    assert doc["exit_code"] == 0 and doc["sets"][0]["done"] is True, doc
    assert doc["target"]["root"] == str(root)


def _edit_gate(root: Path) -> None:
    path = root / COMM
    text = path.read_text(encoding="utf-8")
    assert text.count(GATE) >= 1
    path.write_text(text.replace(GATE, GATE_EDITED, 1), encoding="utf-8")


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_build_stops_on_a_conflict(name, tmp_path, context):
    b = build(name, tmp_path, context, tamper=_edit_gate)
    failed = b.failed
    log = "\n".join(f"RUN {s.line}\n{s.output}" for s in b.steps)
    assert failed is not None, f"{name}: the build did not fail:\n{log}"
    assert failed is _sgpatch_step(b) and failed is b.steps[-1], log
    assert failed.rc == 3, log  # the `&&` chain passes apply's exit code to RUN
    out = failed.output
    _assert_plain_log(out)
    assert "sgpatch status" not in out  # status --check did not run after the failed apply
    assert re.search(
        rf"^sgpatch: {SET}: not applied \(1 conflict, 4 pending; 1 optional not chosen\); "
        r"nothing was written$",
        out,
        re.M,
    ), out
    rows = _table_rows(out)
    assert sorted(rows) == sorted(_patch_ids()), rows
    assert all(len(states) == 1 for states in rows.values()), rows  # one table: apply's
    assert rows["sm120-flashinfer-allreduce-fusion"] == ["conflict"]
    assert "srt/layers/communicator.py hunk #2" in out
    # nothing was written: every file of the tree is the release's, but the edited one
    root = b.sglang_root
    assert root is not None
    record = {
        n.removeprefix("sglang/"): h
        for n, h in releases.record(b.version).items()
        if n.startswith("sglang/")
    }
    changed = []
    for rel, h in record.items():
        p = root / rel
        if not p.is_file():
            if rel == "_version.py" and name == "Dockerfile.source":
                continue
            changed.append(rel)
            continue
        digest = base64.urlsafe_b64encode(hashlib.sha256(p.read_bytes()).digest()).rstrip(b"=")
        if f"sha256={digest.decode()}" != h:
            changed.append(rel)
    assert changed == [COMM], changed
    ledger = root / ".sgpatch" / "ledger.json"
    assert not ledger.exists() or SET not in ledger.read_text(), ledger.read_text()


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
        assert (target / "sgpatch" / "cli" / "app.py").is_file() is ok
        if not ok:
            assert "DO NOT MATCH THE HASHES" in proc.stderr, proc.stderr
        req = tmp_path / f"requirements-{ok}.txt"
        req.write_text(f"sgpatch @ {url} --hash=sha256:{digest}\n")
        target = tmp_path / f"require-hashes-{ok}"
        proc = _pip_install(target, "--require-hashes", "-r", str(req))
        assert (proc.returncode == 0) is ok, proc.stderr
        assert (target / "sgpatch" / "cli" / "app.py").is_file() is ok


def test_make_dist_builds_the_same_bytes_again(tmp_path, context):
    """Input: `make dist` run a second time on the same working tree, into another folder.
    Outcome: the same sha256 (timestamps come from the last commit), so a hash pin of the
    wheel survives a rebuild of the same commit."""
    (first,) = (context / "dist").glob("sgpatch-*.whl")
    again = make_dist(tmp_path / "dist")
    assert again.name == first.name
    assert again.read_bytes() == first.read_bytes()
