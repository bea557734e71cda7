"""cli/apply: what `sgpatch apply` says and does for the options a user combines."""

from __future__ import annotations

from pathlib import Path

from helpers import (
    add_dist_info,
    hint_commands,
    make_env,
    manifest,
    run_cli,
    tree_snapshot,
    write_set,
)

NEED = "    environment: [{package: flashinfer-python, specifier: '>=0.6.17', why: w}]\n"


def _with_precondition(tmp_path: Path, found: str) -> tuple[Path, tuple[str, ...]]:
    """The synthetic tree and set, patch pa needing flashinfer-python>=0.6.17, and `found`
    installed beside the tree (a site-packages layout)."""
    pkg, sets, args = make_env(tmp_path)
    write_set(sets, manifest().replace("  - id: pa\n", "  - id: pa\n" + NEED))
    add_dist_info(pkg)  # a site-packages tree: preconditions are looked up beside it
    info = pkg.parent / f"flashinfer_python-{found}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: flashinfer-python\nVersion: {found}\n"
    )
    return pkg, args


def test_strict_apply_says_the_unmet_precondition_is_why_it_stopped(tmp_path) -> None:
    """Input: `apply --strict` (and with --dry-run) where flashinfer-python 0.6.0 is installed
    and a patch needs >=0.6.17. Outcome: exit 1, the tree unchanged, and the verdict line says
    the precondition is why: `not applied: --strict and unmet precondition(s)
    flashinfer-python>=0.6.17 (found 0.6.0)`; without --strict it applies (exit 0)."""
    pkg, args = _with_precondition(tmp_path, "0.6.0")
    before = tree_snapshot(pkg)
    for extra in ((), ("--dry-run",)):
        code, _, err = run_cli("apply", *args, "--strict", *extra)
        verdict = err.strip().splitlines()[-1]
        assert code == 1 and tree_snapshot(pkg) == before
        said = "not applied: --strict and unmet precondition(s) flashinfer-python>=0.6.17 (found"
        assert verdict.startswith(f"sgpatch: safety-set: {said} 0.6.0) (")
        assert err.count("flashinfer-python>=0.6.17 (found 0.6.0)") == 1
    code, _, err = run_cli("apply", *args)
    assert code == 0 and "applied;" in err.splitlines()[-1]


def test_strict_apply_with_the_precondition_met_applies(tmp_path) -> None:
    """Input: `apply --strict` with flashinfer-python 0.6.17 installed. Outcome: exit 0,
    applied; the verdict names no precondition."""
    _pkg, args = _with_precondition(tmp_path, "0.6.17")
    code, _, err = run_cli("apply", *args, "--strict")
    assert code == 0 and "precondition" not in err.splitlines()[-1]


def test_without_an_applied_patch_says_so_and_its_advice_takes_it_out(
    tmp_path, monkeypatch
) -> None:
    """Input: the set applied, then `apply --without pb`. Outcome: exit 0 (apply takes no
    patch out, and the others still apply), with a warning naming pb and two commands; run as
    typed, the first (revert) exits 0 and the second leaves pb out: exit 0, pb's file is as
    the release has it, the others applied."""
    monkeypatch.chdir(tmp_path)  # the advice is run as typed: from tmp_path, never the checkout
    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    code, _, err = run_cli("apply", *args, "--without", "pb")
    (warning,) = [ln for ln in err.splitlines() if "warning: --without" in ln]
    assert code == 0 and "--without pb: applied in this tree already" in warning
    revert, again = hint_commands(warning)
    assert revert[:2] == ["revert", "--set"] and again[:2] == ["apply", "--set"]
    assert run_cli(*revert)[0] == 0
    code, _, err = run_cli(*again)
    assert code == 0 and "warning" not in err
    assert "BETA6" not in (pkg / "srt/layers/b.py").read_text()
    assert "ALPHA5" in (pkg / "srt/a.py").read_text()


def test_in_a_git_checkout_apply_says_how_to_ignore_the_state_folder(tmp_path) -> None:
    """Input: the synthetic set applied to a git checkout (python/sglang committed), where
    git would list `python/sglang/.sgpatch/` as untracked. Outcome: one note naming it and the
    command that hides it (`echo .sgpatch/ >> .git/info/exclude`, sgpatch writes nothing in
    .git itself: the exclude file is as git made it); run as typed in a shell, git status no
    longer lists it, and the next writing apply says nothing more."""
    import shutil
    import subprocess

    from helpers import git

    pkg, sets, _args = make_env(tmp_path)
    repo = tmp_path / "repo"
    shutil.copytree(pkg, repo / "python" / "sglang")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "release")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    where = ("--sglang-dir", str(repo / "python" / "sglang"), "--patchsets", str(sets))
    code, _, err = run_cli("apply", "--set", "safety-set", *where)
    (note,) = [ln for ln in err.splitlines() if "note: git shows" in ln]
    assert code == 0 and "python/sglang/.sgpatch/ (what sgpatch applied" in note
    assert exclude.read_bytes() == before
    assert "python/sglang/.sgpatch/" in git(repo, "status", "--porcelain")
    typed = note.split("to hide it: ", 1)[1]
    assert typed == f"echo .sgpatch/ >> {exclude}"
    subprocess.run(["bash", "-c", typed], check=True)
    assert ".sgpatch" not in git(repo, "status", "--porcelain", "--untracked-files=all")
    assert run_cli("revert", "--set", "safety-set", *where)[0] == 0
    code, _, err = run_cli("apply", "--set", "safety-set", *where)
    assert code == 0 and "note: git shows" not in err


def test_outside_git_apply_says_nothing_about_ignoring(tmp_path) -> None:
    """Input: the synthetic set applied to a site-packages-like tree (no git). Outcome: no
    note about git."""
    _pkg, _sets, args = make_env(tmp_path)
    code, _, err = run_cli("apply", *args)
    assert code == 0 and "note: git shows" not in err
