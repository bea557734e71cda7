"""A patch's paths, package-relative: the one mapping from the paths a diff names (upstream
`a/python/sglang/x`, site-packages `sglang/x`, bare `x`) to the SGLang package's own.

Pure (no I/O), so every layer above reads a patch's files the same way: the planner, refresh,
port, git mode's status check and the matrix.
"""

from __future__ import annotations

from collections.abc import Callable

from sgpatch.diff.unified import DEV_NULL, Patch, strip_path
from sgpatch.errors import SgpatchError

PathMapper = Callable[[str], str]


# Top-level folders of the SGLang repository that are never inside the package: a diff made
# from an upstream pull request often touches them (kernels, docs, CI), and read as package-
# relative they would land inside python/sglang/ (a new file would be created there silently).
# `test/` and `benchmark/` are not listed: some releases' packages have their own (checked on
# every cached release by tests/real/test_fileplan_real.py).
REPO_ONLY = frozenset(
    {
        "sgl-kernel",
        "sgl-router",
        "sgl-model-gateway",
        "docs",
        "examples",
        "scripts",
        "docker",
        "3rdparty",
        "assets",
        ".github",
        ".devcontainer",
    }
)


def package_mapper(name: str) -> PathMapper:
    """Upstream-form paths (a/python/sglang/x) or bare ones (sglang/x, x) -> package-relative.
    A path that is clearly elsewhere in the repository (python/<not sglang>/..., sgl-kernel/,
    docs/, ...) is refused (exit 2): a patch set patches the package only."""

    def mapper(path: str) -> str:
        rel = strip_path(path, 1 if path.startswith(("a/", "b/")) else 0, name)
        for prefix in ("python/sglang/", "sglang/"):
            if rel.startswith(prefix):
                return rel[len(prefix) :]
        top = rel.split("/", 1)[0]
        if top in REPO_ONLY or (top == "python" and "/" in rel):
            raise SgpatchError(
                f"{name}: {rel} is outside the SGLang package (python/sglang/); a patch set "
                "patches the package only: drop that file from the patch"
            )
        return rel

    return mapper


def patch_files(patch: Patch) -> list[str]:
    """Package-relative paths a parsed patch touches (sources and targets)."""
    mapper = package_mapper(patch.name)
    out: set[str] = set()
    for fp in patch.files:
        for p in (fp.source, fp.target):
            if p != DEV_NULL:
                out.add(mapper(p))
    return sorted(out)
