"""Core numbers pinned by independent references (issue 30, point 1).

Each test here was written against a deliberate regression in the core: put back, the
test fails; the reference is independent of the code under test (``math.fsum`` over
NumPy per-event terms, a closed form, a hand-computed case), never the function itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from laddu_dask.data.dataset import Dataset
from laddu_dask.expr import Model, parameter, scalar
from laddu_dask.likelihood import NLL, Likelihood
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.jobs import INLINE_EVENTS

A = parameter("a", initial=1.0, bounds=(0.0, 10.0))
B = parameter("b", initial=0.5, bounds=(0.01, 5.0))
X = scalar("x")
#: I(x) = a x^2 + b: per-event terms and their derivatives are one NumPy line each.
TOY = Model(A * X * X + B)


def _toy_nll_reference(a: float, b: float, xd, wd, xm, wm) -> tuple[float, np.ndarray]:
    """-2 ln L of the toy and its gradient from NumPy per-event terms and ``math.fsum``."""
    i_d, i_m = a * xd**2 + b, a * xm**2 + b
    s_data = math.fsum(wd * np.log(i_d))
    g_data = np.array([math.fsum(wd * xd**2 / i_d), math.fsum(wd / i_d)])
    s_mc = math.fsum(wm * i_m)
    g_mc = np.array([math.fsum(wm * xm**2), math.fsum(wm)])
    n_w = math.fsum(wd)
    return -2.0 * (s_data - n_w * math.log(s_mc)), -2.0 * (g_data - n_w * g_mc / s_mc)


# ---------------------------------------------------------------------------
# runtime/worker.py: every thread's share of a partition above the inline threshold
# ---------------------------------------------------------------------------
def test_worker_with_two_threads_sums_every_threads_share_of_a_large_partition():
    """One partition of data and one of MC, each above the worker's inline threshold, on one
    worker of two threads: the worker cuts each into one share per thread; the NLL and its
    gradient must hold every event (``math.fsum`` over the per-event terms)."""
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(30)
    n_data, n_mc = INLINE_EVENTS + 4_321, 2 * INLINE_EVENTS + 777
    xd = rng.uniform(0.0, 1.0, n_data) ** 0.4
    xm = rng.uniform(0.0, 1.0, n_mc)
    wd = rng.uniform(0.1, 3.0, n_data)
    wm = rng.normal(1.0, 1.0, n_mc)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        data = Dataset.from_arrays(scalars={"x": xd}, weights=wd, chunk_size=n_data)
        mc = Dataset.from_arrays(scalars={"x": xm}, weights=wm, chunk_size=n_mc)
        lik = Likelihood([NLL(TOY, data=data, accepted_mc=mc, name="threads")],
                         execution=Execution(client=client))
        for a, b in ((1.0, 0.5), (3.7, 0.02)):
            ref_value, ref_grad = _toy_nll_reference(a, b, xd, wd, xm, wm)
            value, grad = lik.value_and_gradient([a, b])
            assert value == pytest.approx(ref_value, rel=1e-12)
            np.testing.assert_allclose(grad, ref_grad, rtol=1e-11)
            assert lik.value([a, b]) == value
