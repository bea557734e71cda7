"""diff.paths: a diff's paths mapped onto the SGLang package, and the files a patch touches."""

from __future__ import annotations

import pytest

from sgpatch.diff.paths import package_mapper, patch_files
from sgpatch.diff.unified import parse_patch
from sgpatch.errors import ExitCode, SgpatchError


@pytest.mark.parametrize(
    ("path", "rel"),
    [
        ("a/python/sglang/srt/models/kimi_k25.py", "srt/models/kimi_k25.py"),
        ("b/python/sglang/srt/models/kimi_k25.py", "srt/models/kimi_k25.py"),
        ("sglang/srt/layers/communicator.py", "srt/layers/communicator.py"),
        ("a/srt/layers/communicator.py", "srt/layers/communicator.py"),
        ("a/test/test_utils.py", "test/test_utils.py"),  # the package has a test/ too
        ("a/benchmark/x.py", "benchmark/x.py"),  # and, in some releases, a benchmark/
    ],
)
def test_upstream_and_package_relative_paths_map_onto_the_package(path: str, rel: str) -> None:
    assert package_mapper("p.patch")(path) == rel


@pytest.mark.parametrize(
    "path",
    [
        "a/sgl-kernel/csrc/allreduce/custom_all_reduce.cu",
        "a/docs/references/environment_variables.md",
        "a/python/pyproject.toml",
        "a/python/sglang_router/__init__.py",
        "b/.github/workflows/pr-test.yml",
        "a/docker/Dockerfile",
    ],
)
def test_paths_elsewhere_in_the_repository_are_refused(path: str) -> None:
    """Input: a path of an upstream pull request outside python/sglang/. Outcome: exit 2 naming
    it, instead of a file created or looked for inside the package."""
    with pytest.raises(SgpatchError) as info:
        package_mapper("0001-fix.patch")(path)
    assert info.value.code == ExitCode.BAD_INPUT
    assert "outside the SGLang package" in info.value.message
    assert info.value.message.startswith("0001-fix.patch: ")


def test_patch_files_lists_sources_and_targets_package_relative() -> None:
    """Input: a patch that renames one file and creates another, in upstream form. Outcome:
    both sides of the rename and the new file, package-relative, sorted; /dev/null never."""
    patch = parse_patch(
        "diff --git a/python/sglang/srt/old.py b/python/sglang/srt/new.py\n"
        "similarity index 100%\n"
        "rename from python/sglang/srt/old.py\n"
        "rename to python/sglang/srt/new.py\n"
        "diff --git a/python/sglang/srt/made.py b/python/sglang/srt/made.py\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/python/sglang/srt/made.py\n"
        "@@ -0,0 +1 @@\n"
        "+x = 1\n",
        "0001-move.patch",
    )
    assert patch_files(patch) == ["srt/made.py", "srt/new.py", "srt/old.py"]
