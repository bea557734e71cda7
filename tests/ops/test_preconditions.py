"""preconditions: finding installed versions without importlib.metadata, and the verdicts."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from sgpatch.ops.preconditions import check, installed_version
from sgpatch.patchset.manifest import EnvRequirement


def _dist_info(site: Path, dirname: str, version_header: str | None = None) -> None:
    info = site / dirname
    info.mkdir(parents=True)
    if version_header is not None:
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: x\nVersion: {version_header}\n"
        )


def test_agrees_with_importlib_metadata_for_every_installed_distribution() -> None:
    """The reference: for each distribution of the running environment, same version."""
    seen = 0
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name or metadata.version(name) != dist.version:
            continue  # shadowed by an earlier path entry; importlib's answer is the first
        assert installed_version(name, sys.path) == dist.version, name
        seen += 1
    assert seen >= 5  # pytest, packaging, typer, ... are installed


def test_name_is_normalised_and_first_path_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _dist_info(first, "flashinfer_python-0.6.17.dist-info")
    _dist_info(second, "flashinfer_python-0.5.0.dist-info")
    assert installed_version("FlashInfer.Python", [first, second]) == "0.6.17"
    assert installed_version("flashinfer-python", [second, first]) == "0.5.0"


def test_egg_info_directory_reads_pkg_info(tmp_path: Path) -> None:
    """A develop install: `name.egg-info` without a version in its name."""
    info = tmp_path / "flashinfer_python.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: flashinfer-python\nVersion: 0.7.0\n"
    )
    assert installed_version("flashinfer-python", [tmp_path]) == "0.7.0"


def test_old_egg_info_file_takes_version_from_its_name(tmp_path: Path) -> None:
    (tmp_path / "flashinfer_python-0.6.2-py3.11.egg-info").write_text("Version: 0.6.2\n")
    assert installed_version("flashinfer-python", [tmp_path]) == "0.6.2"


def test_missing_zip_and_file_entries_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "lib.zip").write_bytes(b"PK")
    site = tmp_path / "site"
    _dist_info(site, "torch-2.9.1.dist-info")
    paths = [tmp_path / "nope", tmp_path / "lib.zip", site]
    assert installed_version("torch", paths) == "2.9.1"
    assert installed_version("flashinfer-python", paths) is None


@pytest.mark.parametrize(
    ("installed", "verdict"),
    [("0.6.17", "ok"), ("0.6.3", "unmet"), (None, "unknown"), ("not.a.version!", "unknown")],
)
def test_verdict_beside_a_site_packages_target(tmp_path: Path, installed, verdict) -> None:
    """Input: flashinfer-python >= 0.6.17 and what site-packages holds; outcome: the verdict."""
    if installed is not None:
        _dist_info(tmp_path, f"flashinfer_python-{installed}.dist-info")
    req = EnvRequirement("flashinfer-python", SpecifierSet(">=0.6.17"), "fusion on SM12x")
    pre = check(req, tmp_path)
    assert (pre.found, pre.verdict, pre.where) == (installed, verdict, str(tmp_path))
