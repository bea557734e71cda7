"""Stacked sets on a small synthetic tree: a second set patching a file an earlier set patched
goes on top (planned on the bytes the lower set left), is recorded in the ledger's set order,
and comes off first. (The real-release version is tests/real/test_stacking_real.py.)

The lower set is called `zeta-base` and the top set `alpha-user` on purpose: the set order is
the order they were applied, not their names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import lines, make_diff, numbered
from helpers import run_cli as cli
from sgpatch.state import ledger as ledger_mod

LOW, TOP = "zeta-base", "alpha-user"
COMM = lines(*numbered("comm", 30))
OTHER = lines(*numbered("other", 10))
# the lower set: changes comm10 and inserts two lines at the top (so the top set's line
# numbers are off by two), and changes other.py
LOW_COMM = COMM.replace("comm0\n", "import x\nimport y\ncomm0\n").replace(
    "comm10\n", "COMM10 = base\n"
)


def _manifest(name: str, fuzz: int = 0) -> str:
    return f"""schema: 1
name: {name}
summary: set {name}
sglang: ">=0.5.0,<0.6"
fuzz: {fuzz}
patches:
  - id: {name}-p
    summary: change comm.py
    type: feature
    upstream: {{status: pending}}
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0001.patch}}
"""


def _write_set(sets: Path, name: str, diff: str, fuzz: int = 0) -> None:
    (sets / name / "patches").mkdir(parents=True, exist_ok=True)
    (sets / name / "patchset.yaml").write_text(_manifest(name, fuzz))
    (sets / name / "patches" / "0001.patch").write_text(diff)


def _diff(old: str, new: str, rel: str) -> str:
    return make_diff(old, new, f"python/sglang/{rel}")


@pytest.fixture
def env(tmp_path: Path):
    """A 0.5.9 tree with srt/comm.py and srt/other.py; the lower set on both files, the top
    set on comm.py, made (as `sgpatch import` would) from the tree the lower set leaves."""
    pkg = tmp_path / "site" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (pkg / "srt" / "comm.py").write_text(COMM)
    (pkg / "srt" / "other.py").write_text(OTHER)
    sets = tmp_path / "sets"
    low = _diff(COMM, LOW_COMM, "srt/comm.py")
    low += _diff(OTHER, OTHER.replace("other3\n", "OTHER3\n"), "srt/other.py")
    _write_set(sets, LOW, low)
    _write_set(sets, TOP, _diff(LOW_COMM, _top(LOW_COMM), "srt/comm.py"))
    return pkg, ("--sglang-dir", str(pkg), "--patchsets", str(sets))


def _top(text: str) -> str:
    return text.replace("comm20\n", "COMM20 = user\n")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under the package, sgpatch's state included."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def states(args, name: str) -> dict[str, str]:
    code, out, err = cli("status", *args, "--set", name, "--json")
    assert code in (0, 1), err
    return {p["id"]: p["state"] for p in json.loads(out)["sets"][0]["patches"]}


def test_apply_on_top_records_both_in_order(env):
    """Input: the lower set applied, then the top set on the same comm.py. Outcome: both exit 0,
    comm.py holds both changes, the ledger lists the sets in applied order (not by name), and
    the top set's 'before' of comm.py is the lower set's 'after'."""
    pkg, args = env
    assert cli("apply", *args, "--set", LOW)[0] == 0
    code, _, err = cli("apply", *args, "--set", TOP)
    assert code == 0, err
    assert (pkg / "srt/comm.py").read_text() == _top(LOW_COMM)
    ledger = ledger_mod.load(pkg)
    assert list(ledger.sets) == [LOW, TOP]
    low, top = ledger.sets[LOW].files["srt/comm.py"], ledger.sets[TOP].files["srt/comm.py"]
    assert low.before == ledger_mod.sha256(COMM.encode())
    assert top.before == low.after == ledger_mod.sha256(LOW_COMM.encode())
    assert top.after == ledger_mod.sha256(_top(LOW_COMM).encode())


def test_status_of_both_is_applied_and_an_edit_on_top_is_modified(env):
    """Input: both sets applied; then comm.py edited by hand. Outcome: first both `applied`
    (the lower set's file changed since it wrote it, but by the recorded top set); after the
    edit the top set is `modified`, and so is the lower one (the edit is on its file too)."""
    pkg, args = env
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    assert states(args, LOW) == {f"{LOW}-p": "applied"}
    assert states(args, TOP) == {f"{TOP}-p": "applied"}
    assert cli("status", *args, "--check")[0] == 0
    comm = pkg / "srt/comm.py"
    comm.write_text(comm.read_text().replace("comm25\n", "comm25 edited\n"))
    assert states(args, TOP) == {f"{TOP}-p": "modified"}
    assert states(args, LOW) == {f"{LOW}-p": "modified"}


def test_reapplying_the_lower_set_is_a_no_op(env):
    """Input: both sets applied, then `apply` of the lower set again. Outcome: exit 0, every
    byte under the package (ledger and store included) unchanged."""
    pkg, args = env
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    before = snapshot(pkg)
    code, _, err = cli("apply", *args, "--set", LOW)
    assert code == 0, err
    assert snapshot(pkg) == before


def test_revert_top_then_lower_restores_exact_bytes(env):
    """Input: both applied, then revert of the top set, then of the lower set. Outcome: after
    the first revert comm.py is exactly the bytes the lower set left and the lower set is
    still `applied`; after the second every file is as before the first apply and .sgpatch/
    is gone."""
    pkg, args = env
    pristine = snapshot(pkg)
    cli("apply", *args, "--set", LOW)
    lower_left = snapshot(pkg)
    cli("apply", *args, "--set", TOP)
    code, _, err = cli("revert", *args, "--set", TOP)
    assert code == 0, err
    assert (pkg / "srt/comm.py").read_bytes() == lower_left["srt/comm.py"]
    assert snapshot(pkg) == lower_left  # the ledger and store too: as the lower set left them
    assert states(args, LOW) == {f"{LOW}-p": "applied"}
    assert cli("revert", *args, "--set", LOW)[0] == 0
    assert snapshot(pkg) == pristine
    assert not (pkg / ".sgpatch").exists()


@pytest.mark.parametrize("force", [(), ("--force",)])
def test_reverting_the_lower_set_first_is_refused(env, force):
    """Input: both applied, then revert of the lower set (with and without --force). Outcome:
    exit 4, one line naming the shared file and the set to revert first, every byte under the
    package unchanged."""
    pkg, args = env
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    before = snapshot(pkg)
    code, _, err = cli("revert", *args, "--set", LOW, *force)
    assert code == 4
    msg = [line for line in err.splitlines() if line.strip()]
    assert msg == [
        f"sgpatch: error: srt/comm.py is also patched by set {TOP}, applied on top of {LOW}; "
        f"revert {TOP} first"
    ]
    assert snapshot(pkg) == before


def test_top_set_made_on_the_pristine_file_applies_with_offset_and_fuzz(env, tmp_path):
    """Input: a top set whose diff was made against the pristine comm.py (not the lower set's
    result): its context sees none of the lower set's two inserted lines (offset 2) and has
    the lower set's changed comm10 as its outermost context line (fuzz 1, allowed by the
    set). Outcome: it applies on top, both changes are in comm.py, and reverting it gives back
    exactly the lower set's bytes."""
    pkg, args = env
    sets = tmp_path / "sets"
    _write_set(
        sets, TOP, _diff(COMM, COMM.replace("comm13\n", "COMM13 = user\n"), "srt/comm.py"), 1
    )
    cli("apply", *args, "--set", LOW)
    lower_left = snapshot(pkg)
    code, out, err = cli("apply", *args, "--set", TOP)
    assert code == 0, err
    assert "fuzz" in out + err
    assert (pkg / "srt/comm.py").read_text() == LOW_COMM.replace("comm13\n", "COMM13 = user\n")
    assert states(args, LOW) == {f"{LOW}-p": "applied"}
    assert cli("revert", *args, "--set", TOP)[0] == 0
    assert snapshot(pkg) == lower_left


def test_more_of_the_lower_set_under_a_top_set_is_refused(env, tmp_path):
    """Input: both applied, then the lower set gains a second patch on comm.py and is applied
    again. Outcome: exit 4 naming the top set to revert first; nothing written."""
    pkg, args = env
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    low_dir = tmp_path / "sets" / LOW
    now = (pkg / "srt/comm.py").read_text()
    (low_dir / "patches" / "0002.patch").write_text(
        _diff(now, now.replace("comm5\n", "COMM5\n"), "srt/comm.py")
    )
    (low_dir / "patchset.yaml").write_text(
        _manifest(LOW)
        + """  - id: more
    summary: more of comm.py
    type: feature
    upstream: {status: pending}
    variants:
      - {sglang: ">=0.5.0", patch: patches/0002.patch}
"""
    )
    before = snapshot(pkg)
    code, _, err = cli("apply", *args, "--set", LOW)
    assert code == 4
    assert f"revert {TOP} first" in err
    assert snapshot(pkg) == before


def test_a_third_set_names_the_topmost_to_revert_first(env, tmp_path):
    """Input: three sets stacked on comm.py (lower, top, then a third). Outcome: reverting the
    middle one names the third; reverting in reverse order brings every file back."""
    pkg, args = env
    pristine = snapshot(pkg)
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    now = (pkg / "srt/comm.py").read_text()
    _write_set(
        tmp_path / "sets", "mid-third", _diff(now, now.replace("comm28\n", "X\n"), "srt/comm.py")
    )
    assert cli("apply", *args, "--set", "mid-third")[0] == 0
    code, _, err = cli("revert", *args, "--set", TOP)
    assert code == 4 and "revert mid-third first" in err
    for name in ("mid-third", TOP, LOW):
        assert cli("revert", *args, "--set", name)[0] == 0
    assert snapshot(pkg) == pristine


def _install_record(pkg: Path) -> None:
    """A dist-info beside the tree whose RECORD lists the pristine files (as pip writes it)."""
    import base64
    import hashlib

    info = pkg.parent / "sglang-0.5.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.9\n")
    rows = []
    for rel in ("_version.py", "srt/comm.py", "srt/other.py"):
        data = (pkg / rel).read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"sglang/{rel},sha256={digest},{len(data)}\n")
    (info / "RECORD").write_text("".join(rows))


def test_stacked_sets_are_no_drift_and_a_reinstall_drops_both(env):
    """Input: a tree with the wheel's RECORD; both sets applied; then the same release
    reinstalled (pristine comm.py and other.py back). Outcome: with both applied, status
    reports no drift (each file judged by its bytes before the lower set); after the
    reinstall, one 'reinstalled' line per set, both sets' patches `pending` (never
    `modified`), and both apply again in order."""
    pkg, args = env
    _install_record(pkg)
    pristine = {rel: (pkg / rel).read_bytes() for rel in ("srt/comm.py", "srt/other.py")}
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    code, out, err = cli("status", *args, "--json")
    assert code == 0, err
    assert json.loads(out)["drift"] == []
    for rel, data in pristine.items():
        (pkg / rel).write_bytes(data)
    code, _, err = cli("status", *args, "--set", LOW)
    assert err.count("reinstalled") == 2, err
    assert states(args, LOW) == {f"{LOW}-p": "pending"}
    assert states(args, TOP) == {f"{TOP}-p": "pending"}
    assert cli("apply", *args, "--set", LOW)[0] == 0
    assert cli("apply", *args, "--set", TOP)[0] == 0
    assert (pkg / "srt/comm.py").read_text() == _top(LOW_COMM)


def test_revert_force_of_the_top_set_keeps_the_lower_sets_change(env):
    """Input: both applied, a line appended to comm.py by hand, then `revert --force` of the
    top set. Outcome: exit 0; comm.py holds the lower set's change and the edit, not the top
    set's; the lower set is `modified` (the kept edit), and reverting it needs --force too."""
    pkg, args = env
    cli("apply", *args, "--set", LOW)
    cli("apply", *args, "--set", TOP)
    comm = pkg / "srt/comm.py"
    comm.write_text(comm.read_text() + "# mine\n")
    assert cli("revert", *args, "--set", TOP)[0] == 1
    code, _, err = cli("revert", *args, "--set", TOP, "--force")
    assert code == 0, err
    assert comm.read_text() == LOW_COMM + "# mine\n"
    assert states(args, LOW) == {f"{LOW}-p": "modified"}
    assert cli("revert", *args, "--set", LOW)[0] == 1
    assert cli("revert", *args, "--set", LOW, "--force")[0] == 0
    assert comm.read_text() == COMM + "# mine\n"


def test_git_mode_stacks_commits_and_reverts_them_in_order(env):
    """Input: the tree in a git repository; the lower then the top set applied with --commit,
    then reverted with --commit (the lower one first, then in order). Outcome: one commit per
    patch; reverting the lower set first is exit 4 with HEAD and the work tree unchanged;
    reverting top then lower leaves comm.py and other.py as first committed, nothing left
    uncommitted in them."""
    import shutil

    from helpers import git

    site, args = env
    repo = site.parent.parent / "repo"
    pkg = repo / "python" / "sglang"
    shutil.copytree(site, pkg)
    args = ("--sglang-dir", str(pkg), *args[2:])
    for cmd in (("init", "-q"), ("add", "."), ("commit", "-q", "-m", "pristine")):
        git(repo, *cmd)
    code, _, err = cli("apply", *args, "--set", LOW, "--commit")
    assert code == 0, err
    code, _, err = cli("apply", *args, "--set", TOP, "--commit")
    assert code == 0, err
    assert len(git(repo, "log", "--format=%H").split()) == 3
    head, before = git(repo, "rev-parse", "HEAD"), snapshot(pkg)
    assert cli("revert", *args, "--set", LOW, "--commit")[0] == 4
    assert git(repo, "rev-parse", "HEAD") == head and snapshot(pkg) == before
    for name in (TOP, LOW):
        code, _, err = cli("revert", *args, "--set", name, "--commit")
        assert code == 0, err
    assert (pkg / "srt/comm.py").read_text() == COMM
    assert (pkg / "srt/other.py").read_text() == OTHER
    assert git(repo, "status", "--porcelain", "--", "python/sglang/srt") == ""
