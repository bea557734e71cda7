"""The bad-input corpus: one row per bad input, each with the exit code and the fragment of the
one-line error it must produce. Every row also checks that no traceback was printed and that the
tree, the set folder and the ledger are byte-identical afterwards (rows that must *work* --
CRLF and non-UTF-8 targets -- check the exact patched bytes instead).

Rows run in-process through `sgpatch.cli.app.main`; a few run as real `python -m sgpatch`
subprocesses too (bottom of the file).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import SET, A, B, add_dist_info, make_diff, make_env, manifest, no_hang
from helpers import run_cli as cli
from helpers import tree_snapshot as snapshot
from sgpatch.fs import atomic
from sgpatch.state import folder as state_folder
from sgpatch.state import ledger as ledger_mod
from sgpatch.state import lock as state_lock
from sgpatch.state import txn
from sgpatch.state.folder import LEGACY_JOURNAL
from sgpatch.state.txn import FileChange, write_journal


@dataclass
class Ctx:
    tmp: Path
    pkg: Path
    sets: Path
    args: tuple[str, ...]

    @property
    def set_dir(self) -> Path:
        return self.sets / SET

    @property
    def patches(self) -> Path:
        return self.set_dir / "patches"

    def manifest(self, text: str) -> None:
        (self.set_dir / "patchset.yaml").write_text(text)

    def manifest_sub(self, old: str, new: str, count: int = 1) -> None:
        text = manifest()
        assert old in text, old
        self.manifest(text.replace(old, new, count))

    def patch_b(self, data: str | bytes) -> None:
        p = self.patches / "0002-pb.patch"
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    def apply(self) -> list[str]:
        return ["apply", *self.args]


GOOD_B = make_diff(B, B.replace("beta6\n", "BETA6\n"), "python/sglang/srt/layers/b.py")


@dataclass
class Case:
    id: str
    setup: Callable[[Ctx], None]
    code: int
    fragment: str
    argv: Callable[[Ctx], list[str]] = Ctx.apply
    oneline: bool = True  # click usage errors print their own two-line "Usage/Error" text
    bug: str = ""  # a known bug outside txn (reported to the lead): strict xfail until fixed
    check: Callable[[Ctx, dict], None] | None = None  # default: nothing changed
    env: dict[str, str] = field(default_factory=dict)
    monkey: Callable[[pytest.MonkeyPatch, Ctx], None] | None = None


def nothing(ctx: Ctx) -> None:
    pass


def _applied_first(ctx: Ctx) -> None:
    assert cli(*ctx.apply())[0] == 0


def _with_ledger(text: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        (ctx.pkg / ".sgpatch").mkdir(exist_ok=True)
        (ctx.pkg / ".sgpatch" / "ledger.json").write_text(text)

    return setup


def _no_tree(ctx: Ctx) -> None:
    (ctx.tmp / "empty").mkdir()


def _revert_with_missing_original(ctx: Ctx) -> None:
    _applied_first(ctx)
    digest = ledger_mod.sha256(A.encode())
    path = ctx.pkg / ledger_mod.original_rel(digest)
    path.chmod(0o644)
    path.unlink()


def _revert_with_corrupt_original(ctx: Ctx) -> None:
    _applied_first(ctx)
    path = ctx.pkg / ledger_mod.original_rel(ledger_mod.sha256(A.encode()))
    path.chmod(0o644)
    path.write_text("not what was there\n")


def _journal(ctx: Ctx) -> None:
    """What a run SIGKILLed half-way leaves: a journal and one file replaced."""
    write_journal(ctx.pkg / ".sgpatch", [FileChange("srt/a.py", A.encode(), b"x")], {})
    (ctx.pkg / "srt/a.py").write_text("half-patched\n")


def _journal_restored(ctx: Ctx, before: dict) -> None:
    assert (ctx.pkg / "srt/a.py").read_text() == A
    assert not (ctx.pkg / ".sgpatch" / state_folder.JOURNAL).exists()


def _crlf(ctx: Ctx) -> None:
    (ctx.pkg / "srt/layers/b.py").write_bytes(B.replace("\n", "\r\n").encode())


def _crlf_patched(ctx: Ctx, before: dict) -> None:
    want = B.replace("beta6\n", "BETA6\n").replace("\n", "\r\n").encode()
    assert (ctx.pkg / "srt/layers/b.py").read_bytes() == want
    assert cli("revert", *ctx.args)[0] == 0
    assert (ctx.pkg / "srt/layers/b.py").read_bytes() == B.replace("\n", "\r\n").encode()


LATIN1 = "# caf\xe9 na\xefve\n".encode("latin-1")


def _latin1(ctx: Ctx) -> None:
    (ctx.pkg / "srt/layers/b.py").write_bytes(LATIN1 + B.encode() + b"\xff\xfe tail\n")


def _latin1_patched(ctx: Ctx, before: dict) -> None:
    want = LATIN1 + B.replace("beta6\n", "BETA6\n").encode() + b"\xff\xfe tail\n"
    assert (ctx.pkg / "srt/layers/b.py").read_bytes() == want
    assert cli("revert", *ctx.args)[0] == 0
    assert (ctx.pkg / "srt/layers/b.py").read_bytes() == LATIN1 + B.encode() + b"\xff\xfe tail\n"


def _no_final_newline(ctx: Ctx) -> None:
    (ctx.pkg / "srt/layers/b.py").write_text(B.rstrip("\n"))


def _no_final_newline_patched(ctx: Ctx, before: dict) -> None:
    assert (ctx.pkg / "srt/layers/b.py").read_text() == B.replace("beta6\n", "BETA6\n").rstrip("\n")


def _read_only(ctx: Ctx) -> None:
    os.chmod(ctx.pkg / "srt/layers/b.py", 0o444)


def _bad_set(name: str, text: str) -> Callable[[Ctx], None]:
    def setup(ctx: Ctx) -> None:
        ctx.manifest(text)

    return setup


def _sub(old: str, new: str) -> Callable[[Ctx], None]:
    return lambda ctx: ctx.manifest_sub(old, new)


def _patch(data: str | bytes) -> Callable[[Ctx], None]:
    return lambda ctx: ctx.patch_b(data)


def _version_file(text: str) -> Callable[[Ctx], None]:
    return lambda ctx: (ctx.pkg / "_version.py").write_text(text)


def _patch_cmd(*extra: str, diff: str = GOOD_B) -> Callable[[Ctx], list[str]]:
    """`sgpatch patch` of a diff against srt/layers/b.py from the site folder."""

    def argv(ctx: Ctx) -> list[str]:
        p = ctx.tmp / "cmd.patch"
        p.write_text(diff)
        return ["patch", "-d", str(ctx.pkg.parent), str(p), *extra]

    return argv


HUNKLESS_BUG = (
    "diffs.parse_patch: a file section whose '@@' header is malformed parses as a file with no "
    "hunks; apply then records the patch as applied without changing the file (exit 0)"
)
PB = "  - id: pb\n"
CASES = [
    # ---------------------------------------------------------------- manifest: YAML and schema
    Case("yaml-malformed", _bad_set("x", "name: [unclosed\n"), 2, "patchset.yaml"),
    Case("yaml-tab-indent", _bad_set("x", "schema: 1\n\tname: x\n"), 2, "patchset.yaml"),
    Case("yaml-empty", _bad_set("x", ""), 2, "patchset.yaml"),
    Case("yaml-a-list", _bad_set("x", "- a\n- b\n"), 2, "must be a mapping"),
    Case(
        "yaml-not-utf8",
        lambda c: (c.set_dir / "patchset.yaml").write_bytes(b"name: \xff\xfe\n"),
        2,
        "patchset.yaml",
    ),
    Case("schema-newer", _sub("schema: 1", "schema: 99"), 2, "schema"),
    Case("schema-missing-id", _sub(PB, "  - summary: x\n    id_: pb\n"), 2, "id"),
    Case("schema-duplicate-id", _sub("  - id: pc\n", "  - id: pa\n"), 2, "pa"),
    Case(
        "schema-unknown-top-key",
        _sub("summary: safety demo\n", "summary: safety demo\nfuzzz: 1\n"),
        2,
        "unknown key",
    ),
    Case("schema-unknown-patch-key", _sub(PB, PB + "    requries: [pa]\n"), 2, "did you mean"),
    Case(
        "schema-bad-set-specifier",
        _sub('sglang: ">=0.5.0,<0.6"', 'sglang: "banana"'),
        2,
        "invalid specifier",
    ),
    Case(
        "schema-bare-version-specifier",
        _sub('sglang: ">=0.5.0,<0.6"', 'sglang: "0.5.9"'),
        2,
        "needs '=='",
    ),
    Case(
        "schema-bad-variant-specifier",
        _sub('{sglang: ">=0.5.0", patch: patches/0002', '{sglang: ">=x", patch: patches/0002'),
        2,
        "invalid specifier",
    ),
    Case(
        "schema-variant-file-missing",
        _sub("patches/0002-pb.patch", "patches/0002-nope.patch"),
        2,
        "0002-nope.patch",
    ),
    Case(
        "schema-requires-cycle",
        lambda c: c.manifest(
            manifest()
            .replace(PB, PB + "    requires: [pc]\n")
            .replace("  - id: pc\n", "  - id: pc\n    requires: [pb]\n")
        ),
        2,
        "cycle",
    ),
    Case("schema-requires-unknown", _sub(PB, PB + "    requires: [nope]\n"), 2, "nope"),
    Case("schema-bad-type", _sub("type: feature", "type: featur"), 2, "type"),
    Case(
        "schema-fuzz-out-of-range",
        _sub("summary: safety demo\n", "summary: safety demo\nfuzz: 7\n"),
        2,
        "fuzz",
    ),
    Case(
        "schema-patches-not-a-list",
        _bad_set(
            "x", "schema: 1\nname: safety-set\nsummary: s\nsglang: '>=0.5'\npatches: {a: 1}\n"
        ),
        2,
        "must be a list",
    ),
    Case("schema-optional-not-bool", _sub(PB, PB + "    optional: maybe\n"), 2, "true or false"),
    # ---------------------------------------------------------------- set selection and usage
    Case(
        "unknown-set",
        nothing,
        2,
        "unknown patch set",
        argv=lambda c: [
            "apply",
            "--sglang-dir",
            str(c.pkg),
            "--patchsets",
            str(c.sets),
            "--set",
            "no-such-set",
        ],
    ),
    Case(
        "patchsets-dir-missing",
        nothing,
        2,
        "not a directory",
        argv=lambda c: [
            "apply",
            "--sglang-dir",
            str(c.pkg),
            "--patchsets",
            str(c.tmp / "nope"),
            "--set",
            SET,
        ],
    ),
    Case(
        "unknown-with-id",
        nothing,
        2,
        "unknown patch id",
        argv=lambda c: [*c.apply(), "--with", "zz"],
    ),
    Case(
        "usage-missing-set",
        nothing,
        2,
        "--set",
        oneline=False,
        argv=lambda c: ["apply", "--sglang-dir", str(c.pkg)],
    ),
    Case(
        "usage-unknown-option",
        nothing,
        2,
        "--frobnicate",
        oneline=False,
        argv=lambda c: [*c.apply(), "--frobnicate"],
    ),
    Case(
        "lock-timeout-not-a-number",
        nothing,
        2,
        "SGPATCH_LOCK_TIMEOUT",
        env={state_lock.LOCK_TIMEOUT_ENV: "soon"},
    ),
    # ---------------------------------------------------------------- patch files
    Case("patch-empty", _patch(""), 2, "empty patch"),
    Case("patch-whitespace-only", _patch("\n  \n\n"), 2, "empty patch"),
    Case("patch-garbage-text", _patch("this is not a diff\njust words\n"), 2, "no diff found"),
    Case("patch-garbage-bytes", _patch(bytes(range(256)) * 4), 2, "0002-pb.patch"),
    Case(
        "patch-truncated-hunk",
        _patch("\n".join(GOOD_B.splitlines()[:6]) + "\n"),
        2,
        "0002-pb.patch",
    ),
    Case(
        "patch-hunk-longer-than-header",
        _patch(GOOD_B.replace("@@ -4,7 +4,7 @@", "@@ -4,3 +4,3 @@")),
        2,
        "longer than its @@ header",
    ),
    Case(
        "patch-bad-hunk-header",
        _patch(GOOD_B.replace("@@ -4,7 +4,7 @@", "@@ -x,7 +y @@")),
        2,
        "0002-pb.patch",
    ),
    Case(
        "patch-git-binary",
        _patch("diff --git a/x.bin b/x.bin\nGIT binary patch\nliteral 3\nzcmZ?wbYNg$\n\n"),
        2,
        "binary patches are not supported",
    ),
    Case(
        "patch-binary-files-differ",
        _patch("diff --git a/x b/x\nindex 1..2 100644\nBinary files a/x and b/x differ\n"),
        2,
        "binary",
    ),
    Case(
        "patch-for-missing-file",
        _patch(GOOD_B.replace("layers/b.py", "layers/nope.py")),
        3,
        "does not exist",
    ),
    Case("patch-does-not-apply", _patch(GOOD_B.replace(" beta5", " betaFIVE")), 3, "hunk #1"),
    Case(
        "patch-file-unreadable-dir",
        lambda c: ((c.patches / "0002-pb.patch").unlink(), (c.patches / "0002-pb.patch").mkdir()),
        2,
        "0002-pb.patch",
    ),
    # ---------------------------------------------------------------- `sgpatch patch`
    Case("patch-cmd-wrong-p-too-deep", nothing, 2, "wrong -p level", argv=_patch_cmd("-p9")),
    Case("patch-cmd-wrong-p-zero", nothing, 3, "does not exist", argv=_patch_cmd("-p0")),
    Case("patch-cmd-fuzz-out-of-range", nothing, 2, "--fuzz", argv=_patch_cmd("--fuzz", "7")),
    Case(
        "patch-cmd-missing-patch-file",
        nothing,
        2,
        "cannot read patch file",
        argv=lambda c: ["patch", "-d", str(c.pkg), str(c.tmp / "missing.patch")],
    ),
    Case(
        "patch-cmd-d-not-a-dir",
        nothing,
        2,
        "not a directory",
        argv=lambda c: ["patch", "-d", str(c.tmp / "nodir"), str(c.patches / "0001-pa.patch")],
    ),
    # ---------------------------------------------------------------- the target
    Case(
        "target-not-sglang",
        _no_tree,
        2,
        "",
        argv=lambda c: [
            "apply",
            "--sglang-dir",
            str(c.tmp / "empty"),
            "--patchsets",
            str(c.sets),
            "--set",
            SET,
        ],
    ),
    Case(
        "target-missing",
        nothing,
        2,
        "",
        argv=lambda c: [
            "apply",
            "--sglang-dir",
            str(c.tmp / "nowhere"),
            "--patchsets",
            str(c.sets),
            "--set",
            SET,
        ],
    ),
    Case("version-unreadable", _version_file("__version__ = compute()\n"), 2, "version"),
    Case("version-garbage", _version_file("__version__ = 'not a version'\n"), 2, "version"),
    Case(
        "version-override-garbage",
        nothing,
        2,
        "--sglang-version",
        argv=lambda c: [*c.apply(), "--sglang-version", "five"],
    ),
    Case("version-outside-set", _version_file("__version__ = '0.4.9'\n"), 2, "supports sglang"),
    Case(
        "version-outside-every-variant",
        _sub('{sglang: ">=0.5.0", patch: patches/0002', '{sglang: ">=0.5.10", patch: patches/0002'),
        2,
        "no variant of patch 'pb'",
    ),
    Case(
        "target-file-is-a-directory",
        lambda c: ((c.pkg / "srt/layers/b.py").unlink(), (c.pkg / "srt/layers/b.py").mkdir()),
        2,
        "is a directory",
    ),
    # ---------------------------------------------------------------- target files that must work
    Case("crlf-target-works", _crlf, 0, "", check=_crlf_patched),
    Case("non-utf8-target-works", _latin1, 0, "", check=_latin1_patched),
    Case("no-final-newline-works", _no_final_newline, 0, "", check=_no_final_newline_patched),
    # ---------------------------------------------------------------- state: ledger and journal
    Case("ledger-not-json", _with_ledger("{not json"), 2, "ledger is unreadable"),
    Case("ledger-newer", _with_ledger('{"schema": 99, "sets": {}}'), 2, "newer sgpatch"),
    Case("ledger-a-list", _with_ledger("[]"), 2, "not an sgpatch ledger"),
    Case(
        "ledger-missing-keys",
        _with_ledger('{"schema": 1, "sets": {"safety-set": {}}}'),
        2,
        "ledger is corrupted",
    ),
    Case(
        "ledger-not-utf8",
        lambda c: (
            _with_ledger("")(c),
            (c.pkg / ".sgpatch/ledger.json").write_bytes(b"\xff\xfe\x00"),
        ),
        2,
        "ledger",
    ),
    Case(
        "revert-original-missing",
        _revert_with_missing_original,
        4,
        "original bytes are missing",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "revert-original-corrupted",
        _revert_with_corrupt_original,
        4,
        "stored original is corrupted",
        argv=lambda c: ["revert", *c.args],
    ),
    Case("journal-left-behind", _journal, 4, "rolled back", check=_journal_restored),
    Case(
        "journal-corrupted",
        lambda c: (
            (c.pkg / ".sgpatch").mkdir()
            or (c.pkg / ".sgpatch" / state_folder.JOURNAL).write_text("{trunc")
        ),
        4,
        "unreadable journal",
    ),
]


def _as_if_not_root(mp: pytest.MonkeyPatch, ctx: Ctx) -> None:
    """root may write a 0444 file (as GNU patch does); make the check see what a user would."""
    if os.geteuid() == 0:
        real = txn.os.access
        ro = {str(ctx.pkg / "srt/layers/b.py")}
        mp.setattr(txn.os, "access", lambda p, m: False if str(p) in ro else real(p, m))


def _read_only_dir(ctx: Ctx) -> None:
    os.chmod(ctx.pkg / "srt/models", 0o555)


def _as_if_not_root_dir(mp: pytest.MonkeyPatch, ctx: Ctx) -> None:
    if os.geteuid() == 0:
        real = txn.os.access
        ro = {str(ctx.pkg / "srt/models")}
        mp.setattr(txn.os, "access", lambda p, m: False if str(p) in ro else real(p, m))


CASES += [
    Case("read-only-target", _read_only, 2, "read-only", monkey=_as_if_not_root),
    Case("read-only-folder", _read_only_dir, 2, "is not writable", monkey=_as_if_not_root_dir),
]


# ---------------------------------------------------------------- hardening (issue 13)


def _state_special(name: str, kind: str) -> Callable[[Ctx], None]:
    """A FIFO, a symlink to a file outside the tree, or a device at .sgpatch/<name>."""

    def setup(ctx: Ctx) -> None:
        state = ctx.pkg / ".sgpatch"
        state.mkdir(exist_ok=True)
        if kind == "fifo":
            os.mkfifo(state / name)
        elif kind == "symlink":
            outside = ctx.tmp / "outside.json"
            outside.write_text('{"schema": 1, "sets": {}}\n')
            (state / name).symlink_to(outside)
        else:
            (state / name).symlink_to("/dev/zero")  # a device behind a link

    return setup


def _outside_unchanged(ctx: Ctx, before: dict) -> None:
    assert (ctx.tmp / "outside.json").read_text() == '{"schema": 1, "sets": {}}\n'
    assert snapshot(ctx.pkg) == before


def _journal_doc(doc: dict) -> Callable[[Ctx], None]:
    """The journal an older sgpatch writes (`journal.json`, originals inline)."""

    def setup(ctx: Ctx) -> None:
        (ctx.pkg / ".sgpatch").mkdir(exist_ok=True)
        (ctx.pkg / ".sgpatch" / LEGACY_JOURNAL).write_text(json.dumps(doc))

    return setup


def _journal_lines(*lines: str) -> Callable[[Ctx], None]:
    """A line-form journal (`.sgpatch/journal`): its header line, `pid 1`, then these lines."""

    def setup(ctx: Ctx) -> None:
        (ctx.pkg / ".sgpatch").mkdir(exist_ok=True)
        text = "".join(f"{ln}\n" for ln in (lines[0], "pid 1", *lines[1:]))
        (ctx.pkg / ".sgpatch" / state_folder.JOURNAL).write_text(text)

    return setup


_SHA_A = hashlib.sha256(A.encode()).hexdigest()


def _a_entry(mode: object) -> dict:
    return {"path": "srt/a.py", "before": base64.b64encode(b"forged\n").decode(), "mode": mode}


def _state_diff(path: str) -> Callable[[Ctx], None]:
    """Patch pb also creates a file at `path` (a spelling of .sgpatch/ inside the package)."""
    extra = f"--- /dev/null\n+++ b/python/sglang/{path}\n@@ -0,0 +1 @@\n+forged\n"
    return _patch(GOOD_B + extra)


BILLION_LAUGHS = (
    'schema: 1\nname: safety-set\nsummary: x\nsglang: ">=0.5"\n'
    + 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 12))
    + "patches: *a11\n"
)
DEEP_YAML = (
    'schema: 1\nname: safety-set\nsummary: x\nsglang: ">=0.5"\nx: ' + "[" * 5000 + "]" * 5000
)
# data that contains itself: a probe whose `all` lists the probe (the checker would recurse
# for ever; before it was refused, composing it hung the C-parser path)
RECURSIVE_YAML = (
    'schema: 1\nname: safety-set\nsummary: x\nsglang: ">=0.5"\npatches:\n'
    "  - {id: a, summary: a, type: feature, upstream: {status: pending},\n"
    '     probe: &p {all: [*p]}, variants: [{sglang: ">=0", na: x}]}\n'
)


def _on_path_only(text: str) -> Callable[[Ctx], None]:
    """A hostile set that only sits on $SGPATCH_PATH (the command never names it)."""

    def setup(ctx: Ctx) -> None:
        d = ctx.tmp / "path-sets" / "evil"
        d.mkdir(parents=True)
        (d / "patchset.yaml").write_text(text.replace("name: safety-set", "name: evil"))

    return setup


def _probe(regex: str) -> Callable[[Ctx], None]:
    probe = f"    probe: {{file: srt/a.py, regex: '{regex}'}}\n"
    return _sub("  - id: pb\n", "  - id: pb\n" + probe)


CASES += [
    Case("ledger-fifo", _state_special("ledger.json", "fifo"), 4, "it is a FIFO"),
    Case("ledger-symlink", _state_special("ledger.json", "symlink"), 4, "it is a symlink"),
    Case("ledger-device", _state_special("ledger.json", "device"), 4, "it is a symlink"),
    Case(
        "ledger-fifo-status",
        _state_special("ledger.json", "fifo"),
        4,
        "it is a FIFO",
        argv=lambda c: ["status", *c.args],
    ),
    Case("journal-fifo", _state_special("journal", "fifo"), 4, "it is a FIFO"),
    Case("journal-json-fifo", _state_special("journal.json", "fifo"), 4, "it is a FIFO"),
    Case("journal-symlink", _state_special("journal.json", "symlink"), 4, "it is a symlink"),
    Case(
        "journal-fifo-status",
        _state_special("journal.json", "fifo"),
        4,
        "it is a FIFO",
        argv=lambda c: ["status", *c.args],
    ),
    Case(
        "lock-owner-symlink-is-replaced-not-followed",
        _state_special("lock.owner", "symlink"),
        0,
        "",
        check=lambda c, before: (
            (c.tmp / "outside.json").read_text() == '{"schema": 1, "sets": {}}\n' or 1 / 0
        ),
    ),
    Case(
        "original-fifo",
        lambda c: (
            _applied_first(c),
            (c.pkg / ".sgpatch/originals" / ledger_mod.sha256(A.encode())).chmod(0o644),
            (c.pkg / ".sgpatch/originals" / ledger_mod.sha256(A.encode())).unlink(),
            os.mkfifo(c.pkg / ".sgpatch/originals" / ledger_mod.sha256(A.encode())),
        ),
        4,
        "it is a FIFO",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "journal-mode-string",
        _journal_doc({"schema": 1, "files": [_a_entry("644")]}),
        4,
        "bad mode",
    ),
    Case(
        "journal-mode-huge", _journal_doc({"schema": 1, "files": [_a_entry(2**70)]}), 4, "bad mode"
    ),
    Case(
        "journal-mode-bool", _journal_doc({"schema": 1, "files": [_a_entry(True)]}), 4, "bad mode"
    ),
    Case(
        "journal-path-number",
        _journal_doc({"schema": 1, "files": [{**_a_entry(None), "path": 7}]}),
        4,
        "bad entry",
    ),
    Case(
        "journal-newer", _journal_doc({"schema": 2, "files": [_a_entry(None)]}), 4, "newer sgpatch"
    ),
    Case(
        "journal-dirs-not-list",
        _journal_doc({"schema": 1, "files": [], "dirs": "srt"}),
        4,
        "bad 'dirs'",
    ),
    Case(
        "journal-lines-newer",
        _journal_lines("sgpatch-journal 5"),
        4,
        "journal schema 5 is from a newer sgpatch",
    ),
    Case(
        "journal-lines-bad-mode",
        _journal_lines("sgpatch-journal 4", f"file 99999 2 {_SHA_A} srt/a.py"),
        4,
        "bad mode",
    ),
    Case(
        "journal-lines-bad-digest",
        _journal_lines("sgpatch-journal 4", "file 644 2 abc srt/a.py"),
        4,
        "bad digest",
    ),
    Case(
        "journal-lines-unknown-line",
        _journal_lines("sgpatch-journal 2", "exec rm -rf /"),
        4,
        "bad line",
    ),
    Case(
        "journal-lines-orphan-owner",
        _journal_lines("sgpatch-journal 3", "owner 0 0 srt/a.py"),
        4,
        "follows no file line",
    ),
    Case(
        "journal-lines-owner-of-another-file",
        _journal_lines("sgpatch-journal 3", f"file 644 {_SHA_A} srt/a.py", "owner 0 0 srt/b.py"),
        4,
        "follows no file line",
    ),
    Case(
        "journal-lines-bad-owner",
        _journal_lines("sgpatch-journal 3", f"file 644 {_SHA_A} srt/a.py", "owner -1 x srt/a.py"),
        4,
        "bad uid",
    ),
    Case(
        "journal-lines-original-missing",
        _journal_lines("sgpatch-journal 2", f"file 644 {_SHA_A} srt/a.py"),
        4,
        "lacks or holds damaged",
    ),
    Case(
        "diff-into-state-folder", _state_diff(".sgpatch/ledger.json"), 4, "sgpatch's state folder"
    ),
    Case("diff-into-state-folder-dot", _state_diff("./.sgpatch/journal.json"), 4, "state folder"),
    Case("diff-into-state-folder-case", _state_diff(".SGPATCH/x"), 4, "sgpatch's state folder"),
    Case("diff-into-state-folder-dotdot", _state_diff("srt/../.sgpatch/x"), 4, ".."),
    Case("diff-into-nested-state-folder", _state_diff("srt/.sgpatch/x"), 4, "state folder"),
    Case("yaml-billion-laughs", lambda c: c.manifest(BILLION_LAUGHS), 2, "aliases expand"),
    Case("yaml-too-deep", lambda c: c.manifest(DEEP_YAML), 2, "nested deeper than 64"),
    Case("yaml-recursive", lambda c: c.manifest(RECURSIVE_YAML), 2, "recursive data"),
    Case(
        "yaml-billion-laughs-on-path-list",
        _on_path_only(BILLION_LAUGHS),
        2,
        "aliases expand",
        argv=lambda c: ["list"],
        env={"SGPATCH_PATH": "{tmp}/path-sets"},
    ),
    Case(
        "yaml-billion-laughs-on-path-status",
        _on_path_only(BILLION_LAUGHS),
        2,
        "aliases expand",
        argv=lambda c: ["status", "--sglang-dir", str(c.pkg)],
        env={"SGPATCH_PATH": "{tmp}/path-sets"},
    ),
    Case(
        "version-deep-expression",
        _version_file("__version__ = " + "(" * 30_000 + "'0.5.9'" + ")" * 30_000 + "\n"),
        2,
        "sgpatch does not read a version from it",
    ),
    Case(
        "version-long-sum",
        _version_file("__version__ = " + " + ".join(["'0'"] * 50_000) + "\n"),
        2,
        "sgpatch does not read a version from it",
    ),
    Case("probe-lookbehind", _probe("(?<=def )a"), 2, "/(?<=def )a/ needs a construct"),
    # a probe kind sgpatch does not know is an error on every path that reads the set (it never
    # reads as "no files, so not upstream"), here one row per command family
    *(
        Case(
            f"probe-unknown-kind-{name}",
            _sub("  - id: pb\n", "  - id: pb\n    probe: {grep: alpha}\n"),
            2,
            "patches[1].probe: not a probe: unknown kind ('grep'); expected {file, regex}",
            argv=argv,
        )
        for name, argv in (
            ("apply", Ctx.apply),
            ("status", lambda c: ["status", *c.args]),
            ("lint", lambda c: ["lint", "--patchsets", str(c.sets), "--set", SET]),
            ("matrix", lambda c: ["matrix", "--patchsets", str(c.sets), "--set", SET]),
            (
                "port",
                lambda c: [
                    "port",
                    "--offline",
                    "--patchsets",
                    str(c.sets),
                    "--set",
                    SET,
                    "--to",
                    "0.5.10",
                    "--workspace",
                    str(c.tmp / "w"),
                ],
            ),
        )
    ),
    Case(
        "probe-unknown-kind-on-a-variant",
        _sub(
            '      - {sglang: ">=0.5.0", patch: patches/0002-pb.patch}',
            '      - {sglang: ">=0.5.0", patch: patches/0002-pb.patch, probe: {has: x}}',
        ),
        2,
        "variants[0].probe: not a probe: unknown kind ('has')",
        argv=lambda c: ["lint", "--patchsets", str(c.sets), "--set", SET],
    ),
    Case("probe-backreference", _probe(r"(alpha)\1"), 2, "RE2"),
    Case(
        "probe-catastrophic-backtracking-runs-in-linear-time",
        lambda c: (
            (c.pkg / "srt/a.py").write_text(A + "a" * 50_000 + "b\n"),
            _probe("^(a+)+$")(c),
        ),
        0,
        "",
        argv=lambda c: ["status", *c.args],
        check=lambda c, before: None,
    ),
]


# ---------------------------------------------------------------- hostile files beside a tree

BIG_VERSION = "0." + "1" * 5000  # over Python's 4,300-digit int() limit


def _special_version_file(kind: str) -> Callable[[Ctx], None]:
    """_version.py replaced by a FIFO, or by a symlink to /dev/zero (endless bytes)."""

    def setup(ctx: Ctx) -> None:
        (ctx.pkg / "_version.py").unlink()
        if kind == "fifo":
            os.mkfifo(ctx.pkg / "_version.py")
        else:
            (ctx.pkg / "_version.py").symlink_to("/dev/zero")

    return setup


def _dist_info_with(name: str, fifo: bool, version: str = "0.5.9") -> Callable[[Ctx], None]:
    """A site-packages tree (dist-info beside it, no _version.py) whose METADATA or RECORD is
    a FIFO, or whose METADATA says `version`."""

    def setup(ctx: Ctx) -> None:
        (ctx.pkg / "_version.py").unlink()
        info = add_dist_info(ctx.pkg)
        if fifo:
            (info / name).unlink()
            os.mkfifo(info / name)
        else:
            (info / "METADATA").write_text(f"Name: sglang\nVersion: {version}\n")

    return setup


def _precondition_fifo(ctx: Ctx) -> None:
    """Patch pa requires flashinfer-python; beside the tree, its egg-info's PKG-INFO a FIFO."""
    need = "    environment: [{package: flashinfer-python, specifier: '>=0.2', why: w}]\n"
    ctx.manifest_sub("  - id: pa\n", "  - id: pa\n" + need)
    add_dist_info(ctx.pkg)
    egg = ctx.pkg.parent / "flashinfer_python.egg-info"
    egg.mkdir()
    os.mkfifo(egg / "PKG-INFO")


def _ledger_edit(old: str, new: str) -> Callable[[Ctx], None]:
    """The set applied, then one value of its ledger rewritten by hand."""

    def setup(ctx: Ctx) -> None:
        _applied_first(ctx)
        path = ctx.pkg / ".sgpatch" / "ledger.json"
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))

    return setup


def _status(ctx: Ctx) -> list[str]:
    return ["status", *ctx.args]


CASES += [
    Case(
        "version-file-fifo",
        _special_version_file("fifo"),
        2,
        "no readable _version.py",
        argv=_status,
    ),
    Case(
        "version-file-dev-zero",
        _special_version_file("zero"),
        2,
        "no readable _version.py",
        argv=_status,
    ),
    Case(
        "metadata-fifo",
        _dist_info_with("METADATA", True),
        2,
        "cannot tell the SGLang version",
        argv=_status,
    ),
    Case("record-fifo-is-no-record", _dist_info_with("RECORD", True), 0, "4 pending", argv=_status),
    Case(
        "metadata-version-too-long",
        _dist_info_with("METADATA", False, BIG_VERSION),
        2,
        "is not a PEP 440 version",
        argv=_status,
    ),
    Case("precondition-pkg-info-fifo", _precondition_fifo, 0, "4 pending", argv=_status),
    Case(
        "sglang-version-too-long",
        nothing,
        2,
        "--sglang-version",
        argv=lambda c: ["status", *c.args, "--sglang-version", BIG_VERSION],
    ),
    Case(
        "manifest-specifier-too-long",
        _sub('sglang: ">=0.5.0,<0.6"', f'sglang: "<{BIG_VERSION}"'),
        2,
        "invalid specifier",
    ),
    Case("ledger-nested-too-deep", _with_ledger("[" * 200_000), 2, "nested too deeply"),
    Case(
        "ledger-nested-too-deep-revert",
        _with_ledger("[" * 200_000),
        2,
        "nested too deeply",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "ledger-mode-negative",
        _ledger_edit('"mode_before": 420', '"mode_before": -1'),
        2,
        "a mode 0..0o7777, got -1",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "ledger-mode-setuid-range",
        _ledger_edit('"mode_before": 420', '"mode_before": 99999'),
        2,
        "a mode 0..0o7777",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "ledger-mode-huge",
        _ledger_edit('"mode_before": 420', '"mode_before": ' + "9" * 40),
        2,
        "a mode 0..0o7777",
        argv=lambda c: ["revert", *c.args],
    ),
    Case(
        "ledger-version-too-long",
        _ledger_edit('"sglang_version": "0.5.9"', f'"sglang_version": "{BIG_VERSION}"'),
        0,
        "",
        argv=_status,
    ),
    Case(
        "journal-nested-too-deep",
        lambda c: (
            (c.pkg / ".sgpatch").mkdir(),
            (c.pkg / ".sgpatch" / LEGACY_JOURNAL).write_text("[" * 100_000),
        ),
        4,
        "nested too deeply",
    ),
    Case(
        "journal-pid-infinite",
        lambda c: (
            (c.pkg / ".sgpatch").mkdir(),
            (c.pkg / ".sgpatch" / LEGACY_JOURNAL).write_text(
                '{"schema": 1, "files": [], "dirs": [], "pid": 1e400}'
            ),
        ),
        4,
        "bad pid",
    ),
    Case(
        "tree-path-with-newline-and-escape",
        nothing,
        2,
        "x\\nb\\x1b[31m",
        argv=lambda c: ["status", "--sglang-dir", str(c.tmp / "x\nb\x1b[31m")],
    ),
]


def test_corpus_is_big_enough():
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=case.bug)] if case.bug else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input(case: Case, tmp_path, monkeypatch):
    pkg, sets, args = make_env(tmp_path)
    ctx = Ctx(tmp_path, pkg, sets, args)
    case.setup(ctx)
    for k, v in case.env.items():
        monkeypatch.setenv(k, v.replace("{tmp}", str(tmp_path)))
    if case.monkey is not None:
        case.monkey(monkeypatch, ctx)
    argv = case.argv(ctx)
    before_tree, before_sets = snapshot(pkg), snapshot(sets)
    ledger_path = pkg / ".sgpatch" / "ledger.json"
    ledger_before = ledger_path.read_bytes() if ledger_path.is_file() else None
    with no_hang():  # a FIFO read would block the suite, not fail it
        code, out, err = cli(*argv)
    assert "Traceback" not in err and "Traceback" not in out, err
    assert code == case.code, err
    if case.fragment:
        assert case.fragment in err, err
    if code not in (0, 3) and case.oneline:  # 3: a conflict is a report, not an error line
        assert err.startswith("sgpatch: error:") and err.count("\n") == 1, err
    if case.check is not None:
        case.check(ctx, before_tree)
        return
    assert snapshot(pkg) == before_tree
    assert snapshot(sets) == before_sets
    assert (ledger_path.read_bytes() if ledger_path.is_file() else None) == ledger_before
    assert not list(pkg.rglob(f"*{atomic.TMP_SUFFIX}"))


@pytest.mark.parametrize("case_id", ["yaml-malformed", "patch-git-binary", "journal-left-behind"])
def test_bad_input_through_a_real_process(case_id, tmp_path):
    """The same rows through `python -m sgpatch`: exit code and one line on stderr."""
    case = next(c for c in CASES if c.id == case_id)
    pkg, sets, args = make_env(tmp_path)
    ctx = Ctx(tmp_path, pkg, sets, args)
    case.setup(ctx)
    env = {**os.environ, "PYTHONPATH": str(Path(txn.__file__).parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "sgpatch", *case.argv(ctx)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == case.code
    assert proc.stderr.startswith("sgpatch: error:") and proc.stderr.count("\n") == 1
    assert case.fragment in proc.stderr and "Traceback" not in proc.stderr
