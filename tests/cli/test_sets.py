"""apply / status / revert / list / show / probe on a small synthetic SGLang tree and set: every
state and transition, all-or-nothing writes, the ledger, and crash recovery.
(Real-release versions of these claims live in tests/real/.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import full_snapshot, lines, make_diff, numbered, sgpatch
from sgpatch.state import ledger as ledger_mod
from sgpatch.state.txn import FileChange, write_journal

SET = "demo-set"


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".sgpatch" not in p.parts
    }


MODEL = lines(
    "class Model:", *[f"    x{i} = {i}" for i in range(20)], "", "def helper():", "    pass"
)
GATE = lines(*numbered("gate", 20))
UP = lines(*numbered("up", 10))


def _manifest(extra: str = "") -> str:
    return f"""schema: 1
name: {SET}
summary: a demo set
sglang: ">=0.5.0,<0.6"
patches:
  - id: model-hook
    summary: add a hook to Model
    type: feature
    upstream: {{status: pending}}
    probe:
      any:
        - {{file: srt/model.py, regex: '^    def hook\\('}}
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0001-model-hook.patch}}
  - id: gate
    summary: change the gate
    type: portability
    upstream: {{status: pending}}
    requires: [model-hook]
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0002-gate.patch}}
  - id: already-upstream
    summary: upstream has this one
    type: bugfix
    upstream: {{status: merged, ref: "sgl-project/sglang#1", since: "0.5.0"}}
    probe: {{file: srt/up.py, regex: '^up3$'}}
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0003-up.patch}}
  - id: extra
    summary: an optional one
    type: feature
    optional: true
    upstream: {{status: pending}}
    requires: [gate]
    variants:
      - {{sglang: ">=0.5.0", patch: patches/0004-extra.patch}}
    environment:
      - {{package: definitely-not-installed-pkg, specifier: ">=1", why: "demo precondition"}}
{extra}"""


@pytest.fixture
def env(tmp_path: Path):
    pkg = tmp_path / "site" / "sglang"
    (pkg / "srt").mkdir(parents=True)
    (pkg / "_version.py").write_text("__version__ = version = '0.5.9'\n")
    (pkg / "srt" / "model.py").write_text(MODEL)
    (pkg / "srt" / "gate.py").write_text(GATE)
    (pkg / "srt" / "up.py").write_text(UP)
    sets = tmp_path / "sets" / SET
    (sets / "patches").mkdir(parents=True)
    (sets / "patchset.yaml").write_text(_manifest())
    hooked = MODEL.replace(
        "    x19 = 19\n", "    x19 = 19\n\n    def hook(self):\n        return 1\n"
    )
    (sets / "patches" / "0001-model-hook.patch").write_text(
        "Add a hook.\n\n" + make_diff(MODEL, hooked, "python/sglang/srt/model.py")
    )
    (sets / "patches" / "0002-gate.patch").write_text(
        make_diff(GATE, GATE.replace("gate10\n", "GATE10\n"), "python/sglang/srt/gate.py")
    )
    (sets / "patches" / "0003-up.patch").write_text(
        make_diff(UP, UP.replace("up3\n", "up3 patched\n"), "python/sglang/srt/up.py")
    )
    (sets / "patches" / "0004-extra.patch").write_text(
        make_diff(GATE, GATE.replace("gate2\n", "GATE2\n"), "python/sglang/srt/gate.py")
    )
    return pkg, tmp_path / "sets"


def status_json(pkg: Path, sets: Path, capsys, *extra: str) -> dict:
    capsys.readouterr()
    sgpatch(
        "status", "--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET, "--json", *extra
    )
    doc = json.loads(capsys.readouterr().out)
    return {p["id"]: p["state"] for p in doc["sets"][0]["patches"]}


def test_pristine_status_shows_pending_and_upstream(env, capsys):
    """Input: a tree where up.py already has the probe's line. Outcome: the two patches pending,
    already-upstream as upstream (probe), the optional one pending but not selected."""
    pkg, sets = env
    assert status_json(pkg, sets, capsys) == {
        "model-hook": "pending",
        "gate": "pending",
        "already-upstream": "upstream",
        "extra": "pending",
    }


def test_status_check_exits_1_while_pending_and_0_when_done(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("status", "--check", *args) == 1
    assert sgpatch("apply", *args) == 0
    assert sgpatch("status", "--check", *args) == 0


def test_apply_writes_patches_and_ledger_and_is_idempotent(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 0
    assert "def hook(self)" in (pkg / "srt" / "model.py").read_text()
    assert "GATE10" in (pkg / "srt" / "gate.py").read_text()
    assert (pkg / "srt" / "up.py").read_text() == UP  # upstream: never applied
    assert "GATE2" not in (pkg / "srt" / "gate.py").read_text()  # optional, not chosen
    record = ledger_mod.load(pkg).sets[SET]
    assert [p.id for p in record.patches] == ["model-hook", "gate"]
    assert record.files["srt/model.py"].before == ledger_mod.sha256(MODEL.encode())
    before = snapshot(pkg)
    assert sgpatch("apply", *args) == 0
    assert snapshot(pkg) == before
    assert status_json(pkg, sets, capsys)["model-hook"] == "applied"


def test_optional_patch_with_flag_and_requires(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args, "--with", "extra") == 0
    text = (pkg / "srt" / "gate.py").read_text()
    assert "GATE2" in text and "GATE10" in text
    assert sgpatch("apply", *args, "--with", "nope") == 2


def test_dry_run_writes_nothing(env, capsys):
    pkg, sets = env
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", "--dry-run", *args) == 0
    assert snapshot(pkg) == before
    assert not (pkg / ".sgpatch" / "ledger.json").exists()


def test_conflict_writes_nothing_and_exits_3(env, capsys):
    """Input: gate.py drifted so that the removed line is gone. Outcome: exit 3, model.py is not
    patched either (all or nothing), the note names the hunk."""
    pkg, sets = env
    (pkg / "srt" / "gate.py").write_text(GATE.replace("gate10\n", "gate ten\n"))
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 3
    assert snapshot(pkg) == before
    assert "hunk #1" in capsys.readouterr().err


def test_hand_applied_patch_is_present_not_pending(env, capsys):
    pkg, sets = env
    (pkg / "srt" / "gate.py").write_text(GATE.replace("gate10\n", "GATE10\n"))
    assert status_json(pkg, sets, capsys)["gate"] == "present"


def test_modified_after_apply_is_reported_and_revert_refuses_without_force(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 0
    gate = pkg / "srt" / "gate.py"
    gate.write_text(gate.read_text().replace("gate18\n", "gate18 edited\n"))
    assert status_json(pkg, sets, capsys)["gate"] == "modified"
    assert sgpatch("status", "--check", *args) == 1
    assert sgpatch("revert", *args) == 1
    assert "srt/gate.py" in capsys.readouterr().err
    assert sgpatch("revert", "--force", *args) == 0
    assert gate.read_text() == GATE.replace("gate18\n", "gate18 edited\n")  # edit kept
    assert (pkg / "srt" / "model.py").read_text() == MODEL


def test_revert_restores_exact_original_bytes(env, capsys):
    pkg, sets = env
    (pkg / "srt" / "model.py").write_bytes(MODEL.replace("\n", "\r\n").encode())
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 0
    assert b"def hook(self):\r\n" in (pkg / "srt" / "model.py").read_bytes()
    assert sgpatch("revert", *args) == 0
    assert snapshot(pkg) == before
    assert sgpatch("revert", *args) == 0  # nothing to revert


def test_probe_upstream_wins_over_a_patch_that_would_apply(env, capsys):
    """The Kimi trap in miniature: upstream added the hook in its own way; the patch would
    still apply with an offset and add a second copy. The probe says upstream, nothing written."""
    pkg, sets = env
    (pkg / "srt" / "model.py").write_text(
        MODEL.replace("class Model:\n", "class Model:\n    def hook(self):\n        return 2\n")
    )
    assert status_json(pkg, sets, capsys)["model-hook"] == "upstream"
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 0
    assert (pkg / "srt" / "model.py").read_text().count("def hook") == 1


def test_unsupported_version_is_exit_2(env, capsys):
    pkg, sets = env
    (pkg / "_version.py").write_text("__version__ = version = '0.4.0'\n")
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 2
    assert "supports sglang" in capsys.readouterr().err


def test_unknown_set_is_exit_2(env, capsys):
    pkg, sets = env
    assert sgpatch("apply", "--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", "x") == 2
    assert "unknown patch set" in capsys.readouterr().err


def test_no_sglang_tree_is_exit_2(tmp_path, capsys):
    assert sgpatch("status", "--sglang-dir", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("sgpatch: error:") and err.count("\n") == 1


def test_interrupted_run_is_rolled_back_by_the_next_command(env, capsys):
    """Input: a journal left by a run killed after it replaced model.py. Outcome: `status`
    (a reader) exits 4 naming `sgpatch recover` and touches nothing; the next writer
    (`apply`) restores the original bytes, says so, exits 4; the command after that works."""
    pkg, sets = env
    model = pkg / "srt" / "model.py"
    write_journal(pkg / ".sgpatch", [FileChange("srt/model.py", MODEL.encode(), b"x")], {})
    model.write_text("half-written\n")
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    before = full_snapshot(pkg, with_state=True)
    assert sgpatch("status", *args) == 4
    assert f"`sgpatch recover --sglang-dir {pkg}` rolls it back" in capsys.readouterr().err
    assert full_snapshot(pkg, with_state=True) == before
    assert sgpatch("apply", *args) == 4
    assert "rolled back" in capsys.readouterr().err
    assert model.read_text() == MODEL
    assert sgpatch("apply", *args) == 0


def test_corrupted_or_newer_ledger_is_a_clear_error(env, capsys):
    pkg, sets = env
    (pkg / ".sgpatch").mkdir()
    (pkg / ".sgpatch" / "ledger.json").write_text("{not json")
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("status", *args) == 2
    assert "ledger is unreadable" in capsys.readouterr().err
    (pkg / ".sgpatch" / "ledger.json").write_text('{"schema": 99, "sets": {}}')
    assert sgpatch("apply", *args) == 2
    assert "newer sgpatch" in capsys.readouterr().err


def test_read_only_file_fails_cleanly_and_changes_nothing(env, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can write read-only files")
    pkg, sets = env
    os.chmod(pkg / "srt" / "gate.py", 0o444)
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 2
    assert snapshot(pkg) == before


def test_list_show_probe_json(env, capsys):
    pkg, sets = env
    assert sgpatch("list", "--patchsets", str(sets), "--json") == 0
    names = [s["name"] for s in json.loads(capsys.readouterr().out)["sets"]]
    assert SET in names
    assert sgpatch("show", SET, "--patchsets", str(sets), "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert [p["id"] for p in shown["patches"]][:2] == ["model-hook", "gate"]
    assert (
        sgpatch("probe", "--set", SET, "--sglang-dir", str(pkg), "--patchsets", str(sets), "--json")
        == 0
    )
    probes = {p["id"]: p["upstream"] for p in json.loads(capsys.readouterr().out)["probes"]}
    assert probes == {"model-hook": False, "gate": None, "already-upstream": True, "extra": None}


def test_preconditions_are_reported_not_hidden(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    capsys.readouterr()
    assert sgpatch("status", *args, "--with", "extra", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    (pre,) = doc["sets"][0]["preconditions"]
    assert pre["package"] == "definitely-not-installed-pkg" and pre["verdict"] == "unknown"


def test_recover_command_rolls_back_explicitly_and_is_idempotent(env, capsys):
    """Input: a journal left by a killed run. Outcome: `sgpatch recover` restores the original
    bytes and exits 0; a second `recover` says there is nothing to do, exit 0."""
    pkg, _sets = env
    model = pkg / "srt" / "model.py"
    write_journal(pkg / ".sgpatch", [FileChange("srt/model.py", MODEL.encode(), b"x")], {})
    model.write_text("half-written\n")
    assert sgpatch("recover", "--sglang-dir", str(pkg), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["interrupted"] is True and doc["restored"] == ["srt/model.py"]
    assert model.read_text() == MODEL
    assert sgpatch("recover", "--sglang-dir", str(pkg)) == 0
    assert "nothing to do" in capsys.readouterr().err


def test_requires_on_a_later_patch_is_enforced(env, capsys):
    """Review finding: `requires` naming a patch listed *later* was not checked. Input: the
    demo set with model-hook requiring gate (listed after it), applied --without gate.
    Outcome: model-hook is a conflict "requires gate", exit 3, nothing written."""
    pkg, sets = env
    manifest = sets / SET / "patchset.yaml"
    text = manifest.read_text().replace(
        "    type: feature\n    upstream: {status: pending}\n    probe:",
        "    type: feature\n    upstream: {status: pending}\n    requires: [gate]\n    probe:",
        1,
    )
    text = text.replace("    requires: [model-hook]\n", "", 1)
    manifest.write_text(text)
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args, "--without", "gate") == 3
    assert "requires gate" in capsys.readouterr().err
    assert snapshot(pkg) == before


OTHER_SET = """schema: 1
name: other-set
summary: a second set, on another file
sglang: ">=0.5.0,<0.6"
patches:
  - id: other
    summary: change other.py
    type: feature
    upstream: {status: pending}
    variants:
      - {sglang: ">=0.5.0", patch: patches/0001-other.patch}
"""


def test_revert_keeps_what_other_sets_need_and_the_last_leaves_no_state(env, capsys):
    """Input: the demo set and a second set on another file, both applied, then reverted one
    after the other. Outcome: the first revert drops the stored originals only the first set
    needed; the last revert removes `.sgpatch/` too, so every path under the package (folders
    included) is exactly as before the first apply."""
    pkg, sets = env
    other_py = lines(*numbered("other", 8))
    (pkg / "srt" / "other.py").write_text(other_py)
    other = sets / "other-set"
    (other / "patches").mkdir(parents=True)
    (other / "patchset.yaml").write_text(OTHER_SET)
    (other / "patches" / "0001-other.patch").write_text(
        make_diff(other_py, other_py.replace("other3\n", "OTHER3\n"), "python/sglang/srt/other.py")
    )
    everything = {p.relative_to(pkg): p.is_dir() or p.read_bytes() for p in pkg.rglob("*")}
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets))
    assert sgpatch("apply", *args, "--set", SET) == 0
    assert sgpatch("apply", *args, "--set", "other-set") == 0
    store = pkg / ".sgpatch" / "originals"
    # the bytes before and after of model.py, gate.py and other.py
    assert sorted(p.name for p in store.iterdir()) == sorted(
        ledger_mod.referenced(ledger_mod.load(pkg))
    )
    assert len(list(store.iterdir())) == 6
    other_after = (pkg / "srt" / "other.py").read_bytes()
    assert sgpatch("revert", *args, "--set", SET) == 0
    assert sorted(p.name for p in store.iterdir()) == sorted(
        ledger_mod.sha256(x) for x in (other_py.encode(), other_after)
    )
    assert list(ledger_mod.load(pkg).sets) == ["other-set"]
    assert sgpatch("revert", *args, "--set", "other-set") == 0
    assert not (pkg / ".sgpatch").exists()
    assert {p.relative_to(pkg): p.is_dir() or p.read_bytes() for p in pkg.rglob("*")} == everything


def test_a_patch_reaching_outside_the_package_is_exit_2_and_writes_nothing(env, capsys):
    """Input: the gate patch of the set also adds a docs page (as an upstream pull request
    would). Outcome: apply exits 2 with one line naming the path; nothing is written, and no
    docs/ folder appears inside the package."""
    pkg, sets = env
    gate_patch = sets / SET / "patches" / "0002-gate.patch"
    gate_patch.write_text(
        gate_patch.read_text()
        + make_diff("", "How to gate.\n", "docs/gate.md").replace(
            "--- a/docs/gate.md", "--- /dev/null"
        )
    )
    before = snapshot(pkg)
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    assert sgpatch("apply", *args) == 2
    err = capsys.readouterr().err
    assert "docs/gate.md is outside the SGLang package" in err and "Traceback" not in err
    assert snapshot(pkg) == before and not (pkg / "docs").exists()


def test_revert_json_of_a_set_not_applied_prints_only_the_document(env, capsys):
    """Input: `revert --json` of a known set that is not applied. Outcome: exit 0, the JSON
    document on stdout and nothing on stderr (with --json no human summary is printed)."""
    pkg, sets = env
    capsys.readouterr()
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET, "--json")
    assert sgpatch("revert", *args) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["restored"] == [] and err == ""


def test_revert_of_an_unknown_set_is_exit_2_and_writes_nothing(env, capsys):
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets))
    assert sgpatch("revert", *args, "--set", "no-such-set") == 2
    assert not (pkg / ".sgpatch").exists()
    assert sgpatch("revert", *args, "--set", SET, "--dry-run") == 0
    assert not (pkg / ".sgpatch").exists()


def test_products_go_to_stdout_messages_and_verdicts_to_stderr(env, capsys):
    """Input: list, show, probe and status (human output) on the demo set. Outcome: each
    command's product is on stdout (pipeable: `| grep`); status and probe end with one verdict
    line on stderr naming the set; nothing else on stderr."""
    pkg, sets = env
    where = ("--patchsets", str(sets))
    tree = ("--sglang-dir", str(pkg), *where)
    capsys.readouterr()
    assert sgpatch("list", *where) == 0
    out, err = capsys.readouterr()
    assert SET in out and err == ""
    assert sgpatch("show", SET, *where) == 0
    out, err = capsys.readouterr()
    assert "model-hook" in out and err == ""
    assert sgpatch("probe", "--set", SET, *tree) == 0
    out, err = capsys.readouterr()
    assert "already-upstream: upstream has it" in out
    assert err == f"sgpatch: {SET}: 1 of 4 upstream on sglang 0.5.9, 2 without a probe\n"
    assert sgpatch("status", "--set", SET, *tree) == 0
    out, err = capsys.readouterr()
    assert "model-hook" in out and "pending" in out
    assert (
        err.splitlines()[-1]
        == f"sgpatch: {SET}: 2 pending, 1 upstream; 1 optional not chosen; not done"
    )


def test_status_check_ends_with_a_verdict_line(env, capsys):
    """Input: `status --check` before and after apply. Outcome: exit 1 then 0, and the last line
    on stderr says 'not done' then 'done' with the counts."""
    pkg, sets = env
    args = ("--sglang-dir", str(pkg), "--patchsets", str(sets), "--set", SET)
    capsys.readouterr()
    assert sgpatch("status", "--check", *args) == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith("; not done")
    assert sgpatch("apply", *args) == 0
    capsys.readouterr()
    assert sgpatch("status", "--check", *args) == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"sgpatch: {SET}: 2 applied, 1 upstream; 1 optional not chosen; done"


# ------------------------------------------------------------------ revert works from the ledger


def _safety_env(tmp_path):
    from helpers import A, make_env

    pkg, sets, args = make_env(tmp_path)
    eof = make_diff(A, A.replace("alpha11\n", "ALPHA11\n"), "python/sglang/srt/a.py")
    (sets / "safety-set" / "patches" / "0001-pa.patch").write_text(eof)
    return pkg, sets, args, A


def test_revert_force_after_a_line_appended_at_eof_keeps_it(tmp_path, capsys):
    """Input: patch pa changes the last line of srt/a.py; after apply the user appends a line
    at the end; `revert` refuses (exit 1), `revert --force` (which used to exit 3). Outcome:
    exit 0; a.py is the original plus the appended line; every other file byte-identical to
    pristine; no .sgpatch/ left."""
    from helpers import tree_snapshot as full_snapshot

    pkg, _, args, a = _safety_env(tmp_path)
    pristine = full_snapshot(pkg)
    assert sgpatch("apply", *args) == 0
    with (pkg / "srt/a.py").open("a") as fh:
        fh.write("appended by hand\n")
    assert sgpatch("revert", *args) == 1
    assert sgpatch("revert", *args, "--force") == 0
    assert (pkg / "srt/a.py").read_text() == a + "appended by hand\n"
    now = full_snapshot(pkg)
    assert {k: v for k, v in now.items() if k != "srt/a.py"} == {
        k: v for k, v in pristine.items() if k != "srt/a.py"
    }
    assert not (pkg / ".sgpatch").exists()
    assert "merged with your edit" in capsys.readouterr().err


def test_revert_force_works_when_the_set_changed_since(tmp_path, capsys):
    """Input: applied, then the set upgraded (pa's patch file rewritten, pb's deleted) and a.py
    edited. Outcome: `revert --force` still restores every original from the ledger's store
    (exit 0, a.py = original + the edit), without reading the patch files."""
    from helpers import tree_snapshot as full_snapshot

    pkg, sets, args, a = _safety_env(tmp_path)
    pristine = full_snapshot(pkg)
    assert sgpatch("apply", *args) == 0
    (sets / "safety-set" / "patches" / "0001-pa.patch").write_text("rewritten\n")
    (pkg / "srt/a.py").write_text("# mine\n" + (pkg / "srt/a.py").read_text())
    assert sgpatch("revert", *args, "--force") == 0, capsys.readouterr().err
    assert (pkg / "srt/a.py").read_text() == "# mine\n" + a
    assert {k: v for k, v in full_snapshot(pkg).items() if k != "srt/a.py"} == {
        k: v for k, v in pristine.items() if k != "srt/a.py"
    }


def test_revert_force_refuses_an_edit_of_the_changed_line_in_one_line(tmp_path, capsys):
    """Input: the user edited the very line the set changed. Outcome: exit 3, one line naming
    the file and the line, nothing written (the tree byte-identical, ledger kept)."""
    from helpers import tree_snapshot as full_snapshot

    pkg, _, args, _ = _safety_env(tmp_path)
    assert sgpatch("apply", *args) == 0
    (pkg / "srt/a.py").write_text((pkg / "srt/a.py").read_text().replace("ALPHA11", "MINE"))
    before = full_snapshot(pkg)
    ledger_before = (pkg / ".sgpatch/ledger.json").read_bytes()
    capsys.readouterr()
    assert sgpatch("revert", *args, "--force") == 3
    err = capsys.readouterr().err
    assert (
        err.startswith("sgpatch: error: srt/a.py: cannot revert with --force")
        and err.count("\n") == 1
    )
    assert "line 12" in err
    assert full_snapshot(pkg) == before
    assert (pkg / ".sgpatch/ledger.json").read_bytes() == ledger_before


def test_revert_restores_a_mode_the_patch_changed(tmp_path, capsys):
    """Input: a set whose patch makes srt/a.py executable (git 'old mode/new mode'), applied
    then reverted. Outcome: the ledger records mode 0644 -> 0755 and revert puts 0644 back."""
    from helpers import A, make_env

    pkg, sets, args = make_env(tmp_path)
    diff = make_diff(A, A.replace("alpha5\n", "ALPHA5\n"), "python/sglang/srt/a.py")
    diff = (
        "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\n"
        "old mode 100644\nnew mode 100755\n" + diff
    )
    (sets / "safety-set" / "patches" / "0001-pa.patch").write_text(diff)
    os.chmod(pkg / "srt/a.py", 0o644)
    assert sgpatch("apply", *args) == 0, capsys.readouterr().err
    rec = ledger_mod.load(pkg).sets["safety-set"].files["srt/a.py"]
    assert (rec.mode_before, rec.mode_after) == (0o644, 0o755)
    assert (pkg / "srt/a.py").stat().st_mode & 0o777 == 0o755
    assert sgpatch("revert", *args) == 0
    assert (pkg / "srt/a.py").stat().st_mode & 0o777 == 0o644
    assert (pkg / "srt/a.py").read_text() == A


# --- a recorded set this run cannot find (issue 22, item 6)


def test_status_reports_a_recorded_set_it_cannot_find_and_shows_the_others(tmp_path):
    """Input: safety-set applied from one folder and a set `mine` (creating srt/mine.py)
    applied from another passed only then with --patchsets; `status` with the first folder
    only, `--check` with and without `--set safety-set`, `--json`. Outcome: status exits 0
    with one line naming `mine` and the hint (--patchsets or $SGPATCH_PATH) and still the
    table of safety-set; `--check --set safety-set` judges that set alone: 0; `--check` of
    every recorded set cannot judge `mine`: 2, after the table and the line; the JSON lists
    it under `unknown_sets`; nothing is written."""
    from helpers import full_snapshot, make_env, run_cli

    pkg, sets, args = make_env(tmp_path)
    mine = tmp_path / "mine-sets" / "mine"
    (mine / "patches").mkdir(parents=True)
    (mine / "patches" / "0001-mine.patch").write_text(
        "--- /dev/null\n+++ b/python/sglang/srt/mine.py\n@@ -0,0 +1 @@\n+mine = 1\n"
    )
    (mine / "patchset.yaml").write_text(
        'schema: 1\nname: mine\nsummary: mine\nsglang: ">=0.5.0,<0.6"\npatches:\n'
        "  - id: m\n    summary: m\n    type: feature\n    upstream: {status: pending}\n"
        '    variants:\n      - {sglang: ">=0.5.0", patch: patches/0001-mine.patch}\n'
    )
    assert run_cli("apply", *args)[0] == 0
    assert run_cli("apply", "--sglang-dir", str(pkg), "--patchsets", str(mine.parent),
                   "--set", "mine")[0] == 0  # fmt: skip
    before = full_snapshot(pkg, with_state=True)
    base = ("--sglang-dir", str(pkg), "--patchsets", str(sets))
    note = (
        "sgpatch: set mine is recorded in the ledger, but this run cannot find it: pass "
        "--patchsets DIR (the folder it was applied from) or add that folder to $SGPATCH_PATH"
    )
    code, out, err = run_cli("status", *base)
    assert code == 0 and note in err.splitlines() and "patch set safety-set" in out
    code, out, err = run_cli("status", *base, "--check", "--set", "safety-set")
    assert code == 0 and "mine" not in err and "patch set safety-set" in out
    code, out, err = run_cli("status", *base, "--check")
    assert code == 2 and note in err.splitlines() and "patch set safety-set" in out
    code, out, _ = run_cli("status", *base, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["unknown_sets"] == ["mine"]
    assert [s["set"] for s in doc["sets"]] == ["safety-set"]
    assert full_snapshot(pkg, with_state=True) == before


# --- apply's last line matches what it did (issue 22, item 9)

OPTIONAL_PE = """  - id: pe
    summary: pe
    type: feature
    optional: true
    upstream: {status: pending}
    variants:
      - {sglang: ">=0.5.0", patch: patches/0005-pe.patch}
"""


def _with_optional(tmp_path):
    from helpers import make_env, manifest, write_set

    pkg, sets, args = make_env(tmp_path)
    write_set(sets, manifest(OPTIONAL_PE))
    (sets / "safety-set" / "patches" / "0005-pe.patch").write_text(
        "--- /dev/null\n+++ b/python/sglang/srt/extra/e.py\n@@ -0,0 +1 @@\n+e = 1\n"
    )
    return pkg, args


def test_apply_with_an_edited_file_says_the_next_step(tmp_path, monkeypatch):
    """Input: the set applied, a line appended to srt/a.py by hand, then `apply --with pe`.
    Outcome: exit 1, nothing written, and the last line names the edited patch and the next
    step (`sgpatch revert --set safety-set --force`, then apply again); following it works:
    revert --force exits 0 keeping the edit, and the apply exits 0."""
    from helpers import full_snapshot, run_cli

    monkeypatch.chdir(tmp_path)  # the advice is run as typed: from tmp_path

    pkg, args = _with_optional(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    a = pkg / "srt" / "a.py"
    a.write_text(a.read_text() + "# my edit\n")
    before = full_snapshot(pkg, with_state=True)
    code, _, err = run_cli("apply", *args, "--with", "pe")
    assert code == 1 and full_snapshot(pkg, with_state=True) == before
    sets = args[args.index("--patchsets") + 1]
    assert err.splitlines()[-1] == (
        "sgpatch: safety-set: not applied (3 applied, 1 modified, 1 pending); nothing was "
        "written: pa was edited since sgpatch applied it; `sgpatch revert --set safety-set "
        f"--sglang-dir {pkg} --patchsets {sets} --force` takes the set out and keeps the edit, "
        "then apply again"
    )
    from helpers import hint_commands

    ((*force,),) = hint_commands(err.splitlines()[-1])  # as typed
    assert run_cli(*force)[0] == 0 and "# my edit" in a.read_text()
    assert run_cli("apply", *args, "--with", "pe")[0] == 0 and "ALPHA5" in a.read_text()


def test_apply_without_an_applied_patch_counts_it_as_applied(tmp_path):
    """Input: the set applied (pa..pd), then `apply --without pb`, `apply --with pe --without
    pb`. Outcome: each exits 0; the counts in the last line match
    the table: pb is still applied (leaving it out does not revert it), so `4 applied; 1
    optional not chosen`, then `5 applied` once pe is applied too."""
    from helpers import run_cli

    _, args = _with_optional(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    code, _, err = run_cli("apply", *args, "--without", "pb")
    assert code == 0 and "\npb             applied" in err
    assert err.splitlines()[-1] == (
        "sgpatch: safety-set: nothing to do (4 applied; 1 optional not chosen)"
    )
    code, _, err = run_cli("apply", *args, "--with", "pe", "--without", "pb")
    assert code == 0
    assert err.splitlines()[-1] == "sgpatch: safety-set: applied; 1 file(s) written (5 applied)"


# --- symlinks and file kinds a set carries (issue 42, item 1)

LINKS = (
    "diff --git a/python/sglang/srt/cfg/E=1.json b/python/sglang/srt/cfg/E=1.json\n"
    "new file mode 100644\n--- /dev/null\n+++ b/python/sglang/srt/cfg/E=1.json\n"
    '@@ -0,0 +1,3 @@\n+{\n+  "a": 1\n+}\n'
    "diff --git a/python/sglang/srt/cfg/latest.json b/python/sglang/srt/cfg/latest.json\n"
    "new file mode 120000\n--- /dev/null\n+++ b/python/sglang/srt/cfg/latest.json\n"
    "@@ -0,0 +1 @@\n+E=1.json\n\\ No newline at end of file\n"
    "diff --git a/python/sglang/srt/run.sh b/python/sglang/srt/run.sh\n"
    "new file mode 100755\n--- /dev/null\n+++ b/python/sglang/srt/run.sh\n"
    "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo tune\n"
)


def test_a_set_makes_a_symlink_and_an_executable_and_reverts_them(tmp_path, capsys):
    """Input: a set whose patch adds srt/cfg/E=1.json, a symlink srt/cfg/latest.json ->
    E=1.json and an executable srt/run.sh; apply, status, the link edited by hand, status,
    the link put back, revert. Outcome: apply makes a real symlink (never a file holding the
    target) and a 0755 file; the ledger records the link's target; status says applied, then
    modified naming the link once it points elsewhere, applied again once put back; revert
    leaves the tree as it was (no cfg/ folder, no run.sh)."""
    from helpers import make_env, tree_snapshot

    pkg, sets, args = make_env(tmp_path)
    (sets / "safety-set" / "patches" / "0001-pa.patch").write_text(LINKS)
    before = tree_snapshot(pkg)
    assert sgpatch("apply", *args) == 0, capsys.readouterr().err
    link = pkg / "srt/cfg/latest.json"
    assert link.is_symlink() and os.readlink(link) == "E=1.json"
    assert (pkg / "srt/run.sh").stat().st_mode & 0o777 == 0o755
    rec = ledger_mod.load(pkg).sets["safety-set"].files["srt/cfg/latest.json"]
    assert (rec.link_before, rec.link_after) == (None, "E=1.json")
    capsys.readouterr()
    assert sgpatch("status", *args, "--json") == 0
    assert json.loads(capsys.readouterr().out)["sets"][0]["patches"][0]["state"] == "applied"
    link.unlink()
    link.symlink_to("../a.py")
    sgpatch("status", *args, "--json")
    doc = json.loads(capsys.readouterr().out)["sets"][0]["patches"][0]
    assert doc["state"] == "modified" and "srt/cfg/latest.json" in doc["note"]
    link.unlink()
    link.symlink_to("E=1.json")
    assert sgpatch("revert", *args) == 0
    assert tree_snapshot(pkg) == before and not (pkg / "srt/cfg").exists()


def test_a_file_where_the_set_makes_a_symlink_is_a_conflict(tmp_path, capsys):
    """Input: the same set, on a tree where srt/cfg/latest.json is already a regular file.
    Outcome: exit 3 naming it ("file to create already exists"), nothing written."""
    from helpers import make_env, tree_snapshot

    pkg, sets, args = make_env(tmp_path)
    (sets / "safety-set" / "patches" / "0001-pa.patch").write_text(LINKS)
    (pkg / "srt/cfg").mkdir()
    (pkg / "srt/cfg/latest.json").write_text("E=1.json")
    before = tree_snapshot(pkg)
    assert sgpatch("apply", *args) == 3
    assert "srt/cfg/latest.json" in capsys.readouterr().err
    assert tree_snapshot(pkg) == before
