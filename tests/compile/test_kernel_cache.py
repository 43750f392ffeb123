"""The on-disk kernel cache is safe in a shared folder (issue 8, item 2).

``LADDU_DASK_CACHE`` names a folder laddu-dask runs code from: a folder others may write is
refused, a kernel file is run only as the source generated in this process (a planted,
truncated or otherwise different file is rewritten, never imported), and files are written
through exclusive temporaries that never follow a planted symlink.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.compile import fused, kernel_cache
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.errors import KernelCacheError
from laddu_dask.runtime.compilations import numba_available
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import PreparedModel

pytestmark = pytest.mark.skipif(not numba_available(), reason="the fused kernels need Numba")

XS = np.linspace(0.5, 2.0, 50)


def _model(tag: float) -> ld.Expr:
    """A small model of its own (``tag`` makes its kernel source unique to the test)."""
    return ld.parameter("a") * ld.scalar("x") + tag


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh private cache folder, and no kernel module loaded in this process yet."""
    folder = tmp_path / "kernels"
    monkeypatch.setenv("LADDU_DASK_CACHE", str(folder))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kernel_cache, "_LOADED", {})
    return folder


def _kernel_path(model: ld.Expr, folder, monkeypatch) -> tuple[str, str]:
    """The generated source of ``model`` and its file in the cache folder (written by a first
    load, which compiles nothing: Numba compiles on the first call)."""
    split = CompiledModel.from_expr(model).split
    fused.fused_kernels(split, "f64")
    source, _, _ = fused.generate_fused_source(split, "f64")
    [path] = [str(p) for p in folder.glob("laddu_dask_kernel_*.py")]
    with open(path) as f:
        assert f.read() == source
    monkeypatch.setattr(kernel_cache, "_LOADED", {})  # as in a new process
    return source, path


def _reduce(model: ld.Expr) -> float:
    """Load the kernels (through the cache) and sum a x + tag over XS."""
    ex = Execution(kernel="fused")
    pm = PreparedModel.prepare(CompiledModel.from_expr(model), ex)
    pd = pm.prepare_dataset(ex, ld.Dataset.from_arrays(scalars={"x": XS}))
    assert pm.kernel == "fused"
    return pm.reduce(ex, [2.0], pd, ld.ReductionPlan.weighted_real())


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o722])
def test_a_folder_others_may_write_is_refused(cache, mode):
    cache.mkdir()
    os.chmod(cache, mode)
    with pytest.raises(KernelCacheError, match=rf"the kernel cache folder {cache} is writable by its "
                       rf"group or others \(mode {mode:#o}\).*chmod go-w {cache}.*LADDU_DASK_CACHE"):
        fused.fused_kernels(CompiledModel.from_expr(_model(0.125)).split)
    # Numba's folder inside too
    os.chmod(cache, 0o700)
    (cache / "__pycache__").mkdir(mode=0o700)
    os.chmod(cache / "__pycache__", mode)
    with pytest.raises(KernelCacheError, match=rf"folder {cache / '__pycache__'} is writable"):
        fused.fused_kernels(CompiledModel.from_expr(_model(0.125)).split)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown needs root")
def test_a_folder_of_another_user_is_refused(cache):
    cache.mkdir(mode=0o700)
    os.chown(cache, 4242, -1)
    with pytest.raises(KernelCacheError, match=rf"the kernel cache folder {cache} belongs to user id "
                                               r"4242, not to you \(user id 0\)"):
        fused.fused_kernels(CompiledModel.from_expr(_model(0.125)).split)


def test_a_cache_folder_that_cannot_be_created(cache, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LADDU_DASK_CACHE", str(blocker / "kernels"))
    with pytest.raises(KernelCacheError, match=rf"cannot create the kernel cache folder {blocker}"
                                               r"/kernels: .*; set LADDU_DASK_CACHE"):
        fused.fused_kernels(CompiledModel.from_expr(_model(0.125)).split)


def test_a_new_cache_folder_is_private(cache):
    fused.fused_kernels(CompiledModel.from_expr(_model(0.125)).split)
    assert cache.stat().st_mode & 0o777 == 0o700
    assert (cache / "__pycache__").stat().st_mode & 0o777 == 0o700


@pytest.mark.slow  # compiles kernels (a few seconds)
def test_a_planted_kernel_file_is_not_run_and_is_regenerated(cache, tmp_path, monkeypatch):
    model = _model(0.25)
    source, path = _kernel_path(model, cache, monkeypatch)
    marker = tmp_path / "planted-code-ran"
    with open(path, "w") as f:  # the right name, other content
        f.write(f"open({str(marker)!r}, 'w').close()\nraise RuntimeError('planted code ran')\n")
    assert _reduce(model) == math.fsum((2.0 * XS + 0.25).tolist())
    assert not marker.exists()
    with open(path) as f:
        assert f.read() == source


@pytest.mark.slow  # compiles kernels (a few seconds)
def test_a_truncated_kernel_file_is_regenerated(cache, monkeypatch):
    model = _model(0.375)
    source, path = _kernel_path(model, cache, monkeypatch)
    with open(path, "w") as f:
        f.write(source[: len(source) // 2])  # an interrupted write: a syntax error on import
    assert _reduce(model) == math.fsum((2.0 * XS + 0.375).tolist())
    with open(path) as f:
        assert f.read() == source


@pytest.mark.slow  # compiles kernels (a few seconds)
@pytest.mark.parametrize("where", ["temporary", "kernel file"])
def test_planted_symlinks_are_not_followed(cache, tmp_path, monkeypatch, where):
    model = _model(0.625 if where == "temporary" else 0.875)
    source, path = _kernel_path(model, cache, monkeypatch)
    os.unlink(path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # the temporary name the cache used to write through (pid and thread id), or the kernel
    # file's own name, pointing at the victim
    link = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp" if where == "temporary" else path
    os.symlink(victim, link)
    assert _reduce(model) == math.fsum((2.0 * XS + (0.625 if where == "temporary" else 0.875)).tolist())
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(path)
    with open(path) as f:
        assert f.read() == source
