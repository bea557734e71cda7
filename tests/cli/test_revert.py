"""cli/revert: what `sgpatch revert` says and does, --dry-run included."""

from __future__ import annotations

import json

from helpers import full_snapshot, hint_commands, make_env, run_cli


def test_dry_run_on_an_edited_tree_shows_what_it_would_do_and_what_blocks_it(
    tmp_path, monkeypatch
) -> None:
    """Input: the set applied, srt/a.py edited since, then `revert --dry-run` (and --json).
    Outcome: exit 1 as the real revert's, the tree byte-identical; stderr says `would restore`
    for each other file the set touched, `blocked: srt/a.py was edited since`, and ends with the
    --force command, which run as typed (from tmp_path) exits 0 and keeps the edit."""
    monkeypatch.chdir(tmp_path)
    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    a = pkg / "srt" / "a.py"
    a.write_text(a.read_text() + "# my edit\n")
    before = full_snapshot(pkg, with_state=True)
    code, out, err = run_cli("revert", *args, "--dry-run")
    lines = err.splitlines()
    assert code == 1 and out == "" and full_snapshot(pkg, with_state=True) == before
    assert "would restore srt/layers/b.py" in lines and "would restore srt/extra/d.py" in lines
    assert "blocked: srt/a.py was edited since sgpatch patched it" in lines
    assert "would restore srt/a.py" not in lines
    assert lines[-1].startswith("sgpatch: safety-set: dry run, nothing written: a revert would "
                                "refuse (1 file(s) edited since); `sgpatch revert")  # fmt: skip
    code, out, _ = run_cli("revert", *args, "--dry-run", "--json")
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["blocked"]) == (1, 1, ["srt/a.py"])
    assert "srt/a.py" not in doc["restored"] and "srt/layers/b.py" in doc["restored"]
    assert run_cli("revert", *args)[0] == 1  # the real one refuses, as the dry run said
    ((*force,),) = hint_commands(lines[-1])
    assert force[-1] == "--force" and run_cli(*force)[0] == 0
    assert a.read_text().endswith("# my edit\n") and "ALPHA5" not in a.read_text()


def test_dry_run_on_an_unedited_tree_lists_what_it_would_restore(tmp_path) -> None:
    """Input: the set applied, nothing edited, `revert --dry-run`. Outcome: exit 0, one
    `would restore` line per file, the verdict `dry run, nothing written (4 file(s))`."""
    pkg, _sets, args = make_env(tmp_path)
    assert run_cli("apply", *args)[0] == 0
    before = full_snapshot(pkg, with_state=True)
    code, _, err = run_cli("revert", *args, "--dry-run")
    assert code == 0 and full_snapshot(pkg, with_state=True) == before
    assert err.splitlines()[-1] == "sgpatch: safety-set: dry run, nothing written (4 file(s))"
