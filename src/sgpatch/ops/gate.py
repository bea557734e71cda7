"""The lint gate in front of every rewrite of a set's files (`fold`, `split`): the set is staged
with its new files in a temporary copy, loaded back and linted on the releases the rewrite was
checked on, and only a set that passes has its files replaced, each atomically. A lint error
writes nothing (exit 3), so a rewrite can never leave a set that fails where it was checked."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from sgpatch.errors import ExitCode, SgpatchError
from sgpatch.ops.lint import Finding
from sgpatch.patchset.manifest import SetManifest


def write_linted(
    manifest: SetManifest, files: Mapping[Path, bytes], releases: Sequence[Version], what: str
) -> list[Finding]:
    """Replace `files` (paths in the set's folder -> their new bytes) once the set holding them
    passes lint on `releases`; refuse at the first error (`the {what} set fails lint ...`).
    Lint's warnings are returned, naming the set's own folder, never the staged copy."""
    from sgpatch.ops import lint, matrix
    from sgpatch.patchset.manifest import load_manifest
    from sgpatch.state.folder import write_state

    base = manifest.base_dir
    with tempfile.TemporaryDirectory(prefix=f"sgpatch-{what}-") as tmp:
        staged = Path(tmp) / base.name
        shutil.copytree(base, staged, symlinks=True)
        for path, data in files.items():
            (staged / path.relative_to(base)).write_bytes(data)
        edited = load_manifest(staged / manifest.path.name)
        findings = lint.check(edited, matrix.compute(edited, sorted(set(releases)), workers=1))
        first = next((x for x in findings if x.level == "error"), None)
        if first is not None:
            raise SgpatchError(
                f"the {what} set fails lint on sglang {first.release}: {first.patch}: "
                f"{first.message}; nothing written",
                ExitCode.CONFLICT,
            )
        for path, data in files.items():
            write_state(path, data, None)  # unpredictable temp name, never through a link
    return [replace(x, message=x.message.replace(str(staged), str(base))) for x in findings]
