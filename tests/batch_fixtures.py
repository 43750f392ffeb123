"""Fixtures of the batch-fit tests (a pytest plugin: ``pytest_plugins = ["batch_fixtures"]``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from batch_helpers import make_sample


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A KsKs sample (3000 data, 20000 accepted-MC events) as data.parquet and accmc.parquet."""
    return make_sample(tmp_path_factory)


@pytest.fixture
def data_env(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``KSKS_DATA`` points the example configs at the sample."""
    monkeypatch.setenv("KSKS_DATA", str(sample))
    return sample
