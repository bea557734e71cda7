"""Real cases of code upstream moved between files, built from the releases themselves.

Used by tests/real/test_port_moved_real.py and bench/port.py. Each case is a one-patch set
made on release A from A's own file (nothing of SGLang is committed here: the patch is made
from the wheel at run time), ported to later releases, and a scripted person's fix at a stop:

- `server-args` (made on 0.5.18): a field added to ServerArgs (plain, not annotated, so it
  is registered by hand) and its `parser.add_argument` in `add_cli_args`, as RL stacks add
  flags (slime's pull-weights hook). 0.5.19 keeps both in server_args.py; 0.5.20 and 0.5.23
  moved the fields into `arg_groups/fields/*.py` (each field without its `NS(...)`), so the
  field's hunk has no certain place there; the person adds it to fields/model.py.
- `output-processor` (made on 0.5.12): three changes in
  `managers/scheduler_output_processor_mixin.py`, which 0.5.13 split into
  `managers/scheduler_components/`: two methods moved (their class renamed), one refactored
  into `_GenerationStreamAccumulator.to_payload` (slime's own change there, as slime made it
  by hand in its 0.5.13 stack).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SA = "srt/server_args.py"
SA_FIELD_AT = '            nargs="*",\n        ),\n        NS("model"),\n    ] = None\n'
SA_FIELD = "    custom_pull_weights_pre_read_hook: Optional[str] = None\n"
SA_CLI_AT = "        # --- Configuration file support ---\n"
SA_CLI = (
    "        parser.add_argument(\n"
    '            "--custom-pull-weights-pre-read-hook",\n'
    "            type=str,\n"
    "            default=ServerArgs.custom_pull_weights_pre_read_hook,\n"
    '            help="Import path of a hook(source_dir, target_version) that /pull_weights '
    'calls before reading the published weights.",\n'
    "        )\n\n"
)
FIELDS = "srt/arg_groups/fields/model.py"
FIELD_AT = '            nargs="*",\n        ),\n    ] = None\n'

OUT = "srt/managers/scheduler_output_processor_mixin.py"
STREAMER = "srt/managers/scheduler_components/output_streamer.py"
LOGPROB = "srt/managers/scheduler_components/logprob_result_processor.py"
OUT_EDITS = (
    (
        "                storage_backend_type = type(storage_backend).__name__\n",
        "                storage_backend_type = getattr(\n"
        '                    storage_backend, "backend_name", type(storage_backend).__name__\n'
        "                )\n",
    ),
    (
        "            return len(req.origin_input_ids[req.logprob_start_len :])\n",
        "            return max(0, len(req.origin_input_ids) - req.logprob_start_len)\n",
    ),
    ("        if reqs or is_idle_batch:\n", "        if rids or is_idle_batch:\n"),
)
SLIME_013 = (  # slime's 0.5.13 stack makes the third change here, by hand
    "        if not (has_reqs or is_idle_batch):\n",
    "        if not (self.rids or is_idle_batch):\n",
)


def release_text(version: str, rel: str) -> str:
    from sgpatch.releases import cache as releases

    return releases.read_member(version, rel).decode("utf-8")


def _once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"not once: {old!r}"
    return text.replace(old, new)


def make_set(dest: Path, name: str, pid: str, version: str, rel: str, new: str) -> Path:
    """A set `name` of one patch `pid`, made on `version`: the release's `rel` -> `new`."""
    from sgpatch.diff.canonical import FileDiff, canonical_diff, render

    old = release_text(version, rel)
    diff = canonical_diff([FileDiff(rel, old.encode(), new.encode())])
    d = dest / name
    (d / "patches" / version).mkdir(parents=True)
    header = f"Subject: {pid}\n\nA real case of code upstream moved (tests/real/moved.py).\n"
    (d / f"patches/{version}/0001-{pid}.patch").write_bytes(render(header, diff))
    (d / "patchset.yaml").write_text(
        f'schema: 1\nname: {name}\nsummary: {name}\nsglang: "=={version}"\npatches:\n'
        f"  - id: {pid}\n    summary: {pid}\n    type: feature\n    upstream: {{status: pending}}\n"
        f'    variants:\n      - {{sglang: "=={version}", '
        f"patch: patches/{version}/0001-{pid}.patch}}\n"
    )
    return d


def server_args_set(dest: Path) -> Path:
    text = release_text("0.5.18", SA)
    new = _once(text, SA_FIELD_AT, SA_FIELD_AT + SA_FIELD)
    new = _once(new, SA_CLI_AT, SA_CLI + SA_CLI_AT)
    return make_set(dest, "server-args", "pull-weights-hook", "0.5.18", SA, new)


def output_set(dest: Path) -> Path:
    new = release_text("0.5.12", OUT)
    for old, changed in OUT_EDITS:
        new = _once(new, old, changed)
    return make_set(dest, "output-processor", "output-fixes", "0.5.12", OUT, new)


def fix_server_args(w: Path) -> None:
    """The person at the stop on 0.5.20 or 0.5.23: the field into fields/model.py after
    custom_weight_loader (the fields there have no NS), the block in server_args.py gone."""
    pkg = w / "sglang"
    model = pkg / FIELDS
    model.write_text(_once(model.read_text(), FIELD_AT, FIELD_AT + SA_FIELD))
    (pkg / SA).write_text(drop_blocks((pkg / SA).read_text()))


def fix_output(w: Path) -> None:
    """The person at the stop on 0.5.13: slime's change in output_streamer.py, the marker
    file at the old path deleted."""
    pkg = w / "sglang"
    streamer = pkg / STREAMER
    streamer.write_text(_once(streamer.read_text(), *SLIME_013))
    (pkg / OUT).unlink()


def drop_blocks(text: str) -> str:
    """`text` without its conflict blocks (the ones port left for moved code: nothing on
    the release's side to keep)."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("<<<<<<< "):
            inside = True
        elif inside and line.startswith(">>>>>>> "):
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def expected(version: str, rel: str, edits: tuple[tuple[str, str], ...]) -> str:
    """The release's file with `edits` made once each: what the right place gives."""
    text = release_text(version, rel)
    for old, new in edits:
        text = _once(text, old, new)
    return text


@dataclass(frozen=True)
class Case:
    """One real step: the set, the release, what port should carry by itself (file ->
    the right bytes, by the edits), and the person's fix at the stop (None: no stop)."""

    name: str
    make: Callable[[Path], Path]
    to: str
    carried: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    fix: Callable[[Path], None] | None
    moved: int  # hunks port carries into moved code by itself


CASES = (
    Case("server-args", server_args_set, "0.5.19",
         ((SA, ((SA_FIELD_AT, SA_FIELD_AT + SA_FIELD), (SA_CLI_AT, SA_CLI + SA_CLI_AT))),),
         None, 0),
    Case("server-args", server_args_set, "0.5.20", ((SA, ((SA_CLI_AT, SA_CLI + SA_CLI_AT),)),),
         fix_server_args, 0),
    Case("server-args", server_args_set, "0.5.23", ((SA, ((SA_CLI_AT, SA_CLI + SA_CLI_AT),)),),
         fix_server_args, 0),
    Case("output-processor", output_set, "0.5.13",
         ((STREAMER, (OUT_EDITS[0],)), (LOGPROB, (OUT_EDITS[1],))), fix_output, 2),
)  # fmt: skip
