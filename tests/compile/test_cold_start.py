"""The first evaluation of a model (issue 10, item 5): what a physicist waits for.

* ``import laddu_dask`` does not import ``distributed`` (only a cluster needs it);
* the Numba helpers every kernel calls live in one prelude module of the kernel cache,
  compiled once per machine: a second model loads them from Numba's disk cache, and a
  changed prelude is a different kernel file (no stale machine code);
* the kernel the first evaluation calls is compiled on a background thread while the
  datasets are prepared, with exactly the argument types the evaluation passes (one
  compiled overload, not two), and a compilation longer than a second is announced;
  until it is ready the tier-0 kernel evaluates (tests/compile/test_tier0.py), with the same bits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.compile import fused, kernel_cache
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.runtime.compilations import numba_available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
needs_numba = pytest.mark.skipif(not numba_available(), reason="the fused kernels need Numba")
pytestmark = pytest.mark.usefixtures("tier0")  # the default start (the suite's conftest waits)


def _python(code: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT, **(env or {})}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_import_does_not_bring_in_distributed():
    """Nor the heavy optional parts: ROOT files, MCMC (emcee imports scipy.stats), dataframes."""
    out = _python("import sys, laddu_dask; print(sorted(m for m in ('distributed', 'numba', 'emcee', "
                  "'scipy.stats', 'uproot', 'awkward') if m in sys.modules))")
    assert out == "['numba']" or out == "[]"


def _toy(tag: float = 0.5) -> tuple[ld.Expr, np.ndarray, np.ndarray]:
    """The toy model, its data and its accepted MC (column x)."""
    rng = np.random.default_rng(5)
    x = ld.scalar("x")
    a, b = ld.parameter("a"), ld.parameter("b")
    return (a * ld.complex(x, b) + tag).norm_sqr(), rng.uniform(0.5, 2.0, 3000), rng.uniform(0.5, 2.0, 6000)


def _likelihood(execution: ld.Execution, tag: float = 0.5) -> ld.Likelihood:
    model, x_data, x_mc = _toy(tag)
    data = ld.Dataset.from_arrays(scalars={"x": x_data}, chunk_size=1000)
    mc = ld.Dataset.from_arrays(scalars={"x": x_mc}, chunk_size=3000)
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="toy")], execution=execution)


def _reducer(lik: ld.Likelihood):
    [prep] = lik.terms[0]._prepared.values()
    return prep.model.reducer


def _fused(lik: ld.Likelihood):
    return _reducer(lik).fused


@needs_numba
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_the_kernel_compiled_ahead_is_the_one_the_evaluation_calls(precision):
    lik = _likelihood(ld.Execution(precision=precision, kernel="fused", normalization="general"))
    value, grad = lik.value_and_gradient([0.7, 0.3])  # tier-0 (f64) or the fused kernel
    assert _reducer(lik).wait_compiled(600)
    assert lik.value_and_gradient([0.7, 0.3]) == (value, pytest.approx(grad, rel=0, abs=0))
    fk = _fused(lik)
    # one overload, with the ahead-of-time signature: the call found it compiled
    assert list(fk.gradient_sum.overloads) == [fk.signature(True)]
    ref = ld.Likelihood(lik.terms, execution=ld.Execution(precision=precision, kernel="numpy",
                                                           normalization="general"))
    v2, g2 = ref.value_and_gradient([0.7, 0.3])
    if precision == "f64":
        assert value == pytest.approx(v2, rel=1e-12) and np.allclose(grad, g2, rtol=1e-10)
    else:  # two f32 evaluations, each within the float32 bound of the exact value
        from tolerances import nll_f32_bound

        model, x_data, x_mc = _toy()
        bound, gbound = nll_f32_bound(CompiledModel.from_expr(model), ({"x": x_data}, np.ones(x_data.size)),
                                      ({"x": x_mc}, np.ones(x_mc.size)), [0.7, 0.3])
        assert abs(value - v2) <= 2 * bound and np.all(np.abs(grad - g2) <= 2 * gbound)


@needs_numba
def test_a_compilation_longer_than_a_second_is_announced(monkeypatch, capsys):
    real = fused.FusedKernels.compile_ahead

    def slow(self, with_gradient):
        # a long compilation holds Numba's compiler lock, so the evaluation's call waits
        from numba.core.compiler_lock import global_compiler_lock

        with global_compiler_lock:
            time.sleep(1.3)
            return real(self, with_gradient) or True

    monkeypatch.setattr(fused.FusedKernels, "compile_ahead", slow)
    lik = _likelihood(ld.Execution(progress=True, kernel="fused", normalization="general"), tag=0.625)
    lik.value_and_gradient([0.7, 0.3])
    assert _reducer(lik).wait_compiled(600)  # the tier-0 kernel served the evaluation meanwhile
    out = capsys.readouterr().out
    assert "laddu-dask: compiling the fused value+gradient kernel of 'toy'..." in out
    assert re.search(r"laddu-dask: compiled the fused value\+gradient kernel of 'toy' in \d+\.\d s", out)


@needs_numba
def test_a_quick_compilation_says_nothing(capsys):
    lik = _likelihood(ld.Execution(progress=True, kernel="fused", normalization="general"))
    lik.value_and_gradient([0.7, 0.3])  # compiled (or cached) by an earlier test: well under 1 s
    lik2 = _likelihood(ld.Execution(progress=True, kernel="fused", normalization="general"))
    capsys.readouterr()
    lik2.value_and_gradient([0.7, 0.3])
    assert "compil" not in capsys.readouterr().out


def test_a_kernel_names_the_prelude_it_imports(monkeypatch):
    split = CompiledModel.from_expr((ld.parameter("a") * ld.scalar("x")).norm_sqr()).split
    source, _, _ = fused.generate_fused_source(split)
    prelude = fused.prelude().__name__
    assert prelude == kernel_cache._module_name(fused.PRELUDE, "prelude")
    assert f"from {prelude} import " in source
    # a changed prelude (a new laddu-dask release) makes every kernel a different file
    monkeypatch.setattr(fused, "PRELUDE", fused.PRELUDE + "\n# changed\n")
    changed, _, _ = fused.generate_fused_source(split)
    assert kernel_cache._module_name(changed) != kernel_cache._module_name(source)


@needs_numba
@pytest.mark.slow  # two fresh processes compile a small model each (about 10 s)
def test_the_prelude_compiles_once_per_machine(tmp_path):
    env = {"LADDU_DASK_CACHE": str(tmp_path / "kernels"), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    code = """
        import json, numpy as np, laddu_dask as ld
        from laddu_dask.compile import fused
        x, a = ld.scalar("x"), ld.parameter("a")
        m = ld.CompiledModel.from_expr((a * x + {tag}).norm_sqr())
        fk = fused.fused_kernels(m.split)
        fk.compile_ahead(True)
        mod = fused.prelude()
        stats = {{n: [len(f.stats.cache_hits), len(f.stats.cache_misses)]
                  for n, f in vars(mod).items() if hasattr(f, "stats") and f.signatures}}
        print(json.dumps(stats))
    """
    first = json.loads(_python(code.format(tag=0.25), env))
    second = json.loads(_python(code.format(tag=0.375), env))
    assert first and all(hits == 0 and misses > 0 for hits, misses in first.values()), first
    # the second model compiled its own kernel but loaded the helpers it calls from the
    # cache (those they call in turn come inside their machine code)
    assert "_accumulate" in second and set(second) <= set(first)
    assert all(hits > 0 and misses == 0 for hits, misses in second.values()), second



def test_a_wait_for_the_compilations_never_meets_a_thread_that_has_not_started():
    """wait_compilations (a test's teardown, a benchmark) may run in another thread while an
    evaluation starts a compilation: the thread it finds has started (joining one before its
    start raises RuntimeError), and the wait lasts until the compilation ends."""
    import threading

    from laddu_dask.runtime.compilations import start_compilation, wait_compilations

    release = threading.Event()

    class WaitedOnAtStart(threading.Thread):
        def start(self) -> None:  # another thread's wait lands while this one starts
            assert wait_compilations(5.0)
            super().start()

    thread = start_compilation(WaitedOnAtStart(target=release.wait, args=(30,), daemon=True))
    assert thread.is_alive()
    assert not wait_compilations(0.05)  # it runs: the wait times out, False
    release.set()
    assert wait_compilations(5.0) and not thread.is_alive()
