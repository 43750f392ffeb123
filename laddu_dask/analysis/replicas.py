"""Bootstrap replicas of a likelihood: their seeds, the replica likelihoods (the observed
data reweighted by Poisson(1) counts, the accepted MC shared), and how much of the
source partitions many fits of selections of one dataset keep while they are prepared.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0, 0.9])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> [r.terms[0].data.n_events for r in replica_likelihoods(lik, replica_seeds(4, 2))]
[3, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.runtime.execution import Execution

__all__ = ["replica_likelihoods", "replica_seeds", "shared_load_limit"]


def replica_seeds(seed: int, n: int) -> list[int]:
    """The dataset seeds of ``n`` bootstrap replicas (from ``numpy.random.default_rng(seed)``)."""
    return [int(s) for s in np.random.default_rng(seed).integers(0, 2**63, size=n)]


def replica_likelihoods(likelihood: Likelihood, seeds: Sequence[int]) -> list[Likelihood]:
    """One likelihood per seed: every term's data a Poisson bootstrap of it with that seed
    (:meth:`~laddu_dask.Dataset.bootstrap`), its accepted MC the original's (prepared once,
    :meth:`~laddu_dask.NLL.with_data`), on the likelihood's execution, of its class."""
    return [type(likelihood)([*(t.with_data(t.data.bootstrap(seed=s)) for t in likelihood.terms),
                              *likelihood.penalties], execution=likelihood.execution)
            for s in seeds]


def shared_load_limit(execution: Any) -> int:
    """How many bytes of source partitions many fits of selections of one dataset (the bins
    of a binned analysis, bootstrap replicas) keep while preparing them
    (:func:`~laddu_dask.data.shared_loads.shared_parent_loads`): a quarter of the host
    budget (1 GiB when it is unlimited)."""
    budget = (execution if execution is not None else Execution()).host_budget_bytes()
    return budget // 4 if budget else 1 << 30
