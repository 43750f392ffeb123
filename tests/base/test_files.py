"""Atomic writing: umask permissions, no symlink following, nothing replaced on failure."""

from __future__ import annotations

import contextlib
import json
import os
import stat

import numpy as np
import pytest

from laddu_dask import ksks
from laddu_dask.data.dataset import Dataset
from laddu_dask.files import atomic_folder, atomic_path, atomic_write
from laddu_dask.jobs.run import write_json_atomic


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_outputs_get_the_umask_permissions(tmp_path, mask):
    ds = Dataset.from_arrays(scalars={"x": np.arange(4.0)})
    with umask(mask):
        ds.write_parquet(tmp_path / "x.parquet")
        write_json_atomic(str(tmp_path / "r.json"), {"a": 1.0})
        paths = ksks.write_sample(tmp_path / "s", n_data=20, n_mc=30, seed=1)
        folder = ksks.write_sample(tmp_path / "p", n_data=20, n_mc=30, seed=1, parts=2)
    want = 0o666 & ~mask
    for path in (tmp_path / "x.parquet", tmp_path / "r.json", paths["data"], paths["accmc"],
                 paths["truth"], os.path.join(folder["data"], "part-0000.parquet")):
        assert mode(path) == want, path
    assert mode(folder["data"]) == 0o777 & ~mask


def test_a_planted_symlink_is_never_followed(tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = tmp_path / "out.txt"
    planted = []

    import laddu_dask.files as files

    real = files.temporary_name

    def predictable(path, suffix=".tmp"):
        name = real(path, suffix)
        if not planted:  # the first guess is taken by an attacker's symlink
            os.symlink(victim, name)
            planted.append(name)
        return name

    monkeypatch.setattr(files, "temporary_name", predictable)
    with atomic_write(target) as f:
        f.write("new")
    assert target.read_text() == "new"
    assert victim.read_text() == "keep me"
    assert os.path.islink(planted[0])


def test_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "result.json"
    target.write_text('{"old": true}')
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(target) as f:
            f.write("partial")
            raise RuntimeError("disk full")
    assert json.loads(target.read_text()) == {"old": True}
    assert sorted(os.listdir(tmp_path)) == ["result.json"]
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target):
            raise KeyboardInterrupt
    with pytest.raises(ValueError):
        with atomic_folder(tmp_path / "folder"):
            raise ValueError("stop")
    assert sorted(os.listdir(tmp_path)) == ["result.json"]


def test_missing_folder_and_folder_target_are_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with atomic_write(tmp_path / "nope" / "x.txt"):
            pass
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        with atomic_write(tmp_path / "d"):
            pass
