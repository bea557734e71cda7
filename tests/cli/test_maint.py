"""cli/maint: `fetch`, `matrix` and `lint` as a user types them."""

from __future__ import annotations

import json

import pytest

from helpers import FLA_NEW, fla_cache, fla_set, offline_cache, run_cli


def test_lint_offline_on_a_partial_cache_says_what_it_skipped(tmp_path, monkeypatch) -> None:
    """Input: `lint --offline` of the shipped set with an empty release cache (the extreme of a
    partial one). Outcome: exit 0, no "never chosen" warning (a variant whose releases are not
    cached is not dead), and stderr names every variant it could not check; --json lists them
    under `skipped`."""
    offline_cache(tmp_path, monkeypatch)
    code, out, err = run_cli("lint", "--offline", "--set", "kimi-eagle3-sm120")
    assert code == 0 and "never chosen" not in out
    assert "judged on the 0 cached release(s) only" in err
    assert "  kimi-k25-eagle3-hooks: >=0.5.9,<0.5.10" in err.splitlines()
    code, out, _ = run_cli("lint", "--offline", "--set", "kimi-eagle3-sm120", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == []
    assert {"set": "kimi-eagle3-sm120", "patch": "kimi-k25-eagle3-hooks",
            "variant": ">=0.5.9,<0.5.10"} in doc["skipped"]  # fmt: skip


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_lint_offline_still_warns_about_a_variant_no_version_chooses(
    tmp_path, monkeypatch, fmt
) -> None:
    """Input: a set whose second variant (`>=0.5.1,<0.5.2`) lies inside its first (`<0.5.3`),
    linted --offline with an empty cache. Outcome: the "never chosen" warning, as with every
    release at hand."""
    offline_cache(tmp_path, monkeypatch)
    d = tmp_path / "sets" / "s"
    (d / "patches").mkdir(parents=True)
    (d / "patches" / "p.patch").write_text(
        "Subject: x\n\n--- a/python/sglang/srt/x.py\n+++ b/python/sglang/srt/x.py\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    (d / "patchset.yaml").write_text(
        'schema: 1\nname: s\nsummary: s\nsglang: ">=0.5.0,<0.6"\npatches:\n'
        "  - id: p\n    summary: p\n    type: bugfix\n    upstream: {status: pending}\n"
        "    variants:\n"
        '      - {sglang: "<0.5.3", patch: patches/p.patch}\n'
        '      - {sglang: ">=0.5.1,<0.5.2", patch: patches/p.patch}\n'
    )
    args = ("lint", "--offline", "--patchsets", str(tmp_path / "sets"), "--set", "s")
    code, out, _ = run_cli(*args, "--format", fmt)
    assert code == 0 and "variant >=0.5.1,<0.5.2 (p.patch) is never chosen" in out


def test_lint_names_an_import_the_set_adds_that_the_release_no_longer_has(tmp_path, monkeypatch):
    """Input: a set for 1.1 (upstream moved srt/layers/attention/fla/ to kernels/ops/attention/
    fla/) whose patch to the moved chunk.py still adds `from sglang.srt.layers.attention.fla.
    fused_recurrent import ...`; `lint --offline`. Outcome: exit 3, one error naming the file,
    line 2, the import, the module that is gone and where it is now; --json the same finding
    about the patch's variant."""
    fla_cache(tmp_path, monkeypatch)
    d = fla_set(tmp_path, FLA_NEW, "1.1")
    args = ("lint", "--offline", "--patchsets", str(d.parent), "--set", "demo")
    code, out, _ = run_cli(*args)
    assert code == 3
    assert (
        "error: demo/fla on sglang 1.1: import does not resolve: kernels/ops/attention/fla/"
        "chunk.py:2: from sglang.srt.layers.attention.fla.fused_recurrent import "
        "fused_recurrent_rule: no module sglang.srt.layers.attention.fla.fused_recurrent; "
        "now at sglang.kernels.ops.attention.fla.fused_recurrent"
    ) in out
    code, out, _ = run_cli(*args, "--json")
    (finding,) = json.loads(out)["findings"]
    assert (finding["level"], finding["patch"], finding["field"]) == (
        "error", "fla", "patches[0].variants[0]"
    )  # fmt: skip


def test_lint_of_the_same_import_on_the_release_that_has_it_is_clean(tmp_path, monkeypatch):
    """Input: the patch as its author wrote it for 1.0, where srt/layers/attention/fla/ is.
    Outcome: exit 0, no finding."""
    fla_cache(tmp_path, monkeypatch)
    d = fla_set(tmp_path)
    code, out, _ = run_cli("lint", "--offline", "--patchsets", str(d.parent), "--set", "demo",
                           "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["findings"] == []


def test_fetch_json_names_each_release_its_wheel_and_the_tree_written(tmp_path, monkeypatch):
    """Input: releases 1.0 and 1.1 in an offline cache; `fetch 1.0 --json`, then `fetch 1.0 1.1
    --dest D --layout checkout --json`. Outcome: exit 0 each; the documents, byte for byte: one
    entry per release in the order asked, its cached wheel, and the package root written under
    D/V (null when no --dest)."""
    from helpers import port_cache, printed_json

    cache = port_cache(tmp_path, monkeypatch, ("1.0", "1.1"))
    wheel = str(cache / "wheels" / "sglang-{}-py3-none-any.whl")
    code, out, err = run_cli("fetch", "1.0", "--json")
    assert code == 0, err
    one = {"version": "1.0", "wheel": wheel.format("1.0"), "root": None}
    assert out == printed_json({"command": "fetch", "exit_code": 0, "releases": [one]})
    dest = tmp_path / "trees"
    code, out, err = run_cli("fetch", "1.0", "1.1", "--dest", str(dest), "--layout", "checkout",
                             "--json")  # fmt: skip
    assert code == 0, err
    two = [
        {"version": v, "wheel": wheel.format(v), "root": str(dest / v / "python" / "sglang")}
        for v in ("1.0", "1.1")
    ]
    assert out == printed_json({"command": "fetch", "exit_code": 0, "releases": two})


def printed_json(doc: dict) -> str:
    """A command's --json document as sgpatch prints it: schema 1 first, indented by two."""
    return json.dumps({"schema": 1, **doc}, indent=2) + "\n"
