"""laddu-dask's defaults live in Dask's config (``laddu-dask.*``) and are read when used."""

from __future__ import annotations

import os

import dask
import pytest

import laddu_dask as ld
from laddu_dask.compile.kernel_cache import cache_dir
from laddu_dask.config import DEFAULTS, get


def test_defaults_are_registered_with_dask():
    assert dask.config.get("laddu-dask.split-every") == 8
    assert dask.config.get("laddu_dask.cluster.worker-timeout") == "60s"  # _ and - alike
    assert get("scheduler") == "pool" and get("chunk-size") is None
    assert set(DEFAULTS["laddu-dask"]) >= {"split-every", "chunk-size", "scheduler", "kernel-cache",
                                           "cluster"}


def test_execution_takes_split_every_and_scheduler_from_the_config():
    assert ld.Execution().split_every == 8 and ld.Execution().scheduler == "pool"
    with dask.config.set({"laddu-dask.split-every": 3, "laddu-dask.scheduler": "dask"}):
        ex = ld.Execution()
        assert ex.split_every == 3 and ex.scheduler == "dask"
        assert ld.Execution(split_every=5, scheduler="pool").split_every == 5  # arguments win
    with dask.config.set({"laddu-dask.split-every": 1}):
        with pytest.raises(ld.ParameterError,
                           match="Dask config laddu-dask.split-every must be an integer >= 2, got 1"):
            ld.Execution()


def test_kernel_cache_folder_from_the_config(monkeypatch, tmp_path):
    monkeypatch.delenv("LADDU_DASK_CACHE", raising=False)
    assert cache_dir() == os.path.expanduser("~/.cache/laddu_dask/kernels")
    with dask.config.set({"laddu-dask.kernel-cache": str(tmp_path / "k")}):
        assert cache_dir() == str(tmp_path / "k")
        monkeypatch.setenv("LADDU_DASK_CACHE", str(tmp_path / "env"))
        assert cache_dir() == str(tmp_path / "env")  # the environment variable wins


def test_environment_variables_reach_the_config(monkeypatch):
    monkeypatch.setenv("DASK_LADDU_DASK__SPLIT_EVERY", "12")
    dask.config.refresh()
    try:
        assert ld.Execution().split_every == 12
    finally:
        monkeypatch.delenv("DASK_LADDU_DASK__SPLIT_EVERY")
        dask.config.refresh()
    assert ld.Execution().split_every == 8
