"""The synthetic release cache every port test shares (tests/helpers.port_cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import port_cache


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private release cache holding 1.0, 1.1, 1.2 and 1.3; downloads fail loudly."""
    return port_cache(tmp_path, monkeypatch)
