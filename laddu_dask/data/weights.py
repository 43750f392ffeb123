"""The exact sum of a dataset's weights, read partition by partition as Dask tasks.

Examples
--------
>>> import numpy as np
>>> exact_partials(np.array([1e16, 1.0, -1e16]))
[1.0]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from dask.highlevelgraph import HighLevelGraph

from laddu_dask.cluster_waits import compute
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import split_rows
from laddu_dask.data.partition import Partition
from laddu_dask.errors import NonFiniteError


def exact_partials(values: np.ndarray) -> list[float]:
    """Floats whose exact sum equals the exact sum of ``values`` (repeated fsum residuals)."""
    vals = values.tolist()
    parts: list[float] = []
    while True:
        s = math.fsum(vals)
        if s == 0.0:
            return parts
        parts.append(s)
        vals.append(-s)


def _load_partials(*partitions: Partition) -> list[float]:
    """Floats whose exact sum is that of the weights of ``partitions`` (read one at a time)."""
    return [s for p in partitions for s in exact_partials(p.load([], np.float64).weights)]


def _batch_partials(batch: EventBatch) -> list[float]:
    return exact_partials(batch.weights)


def exact_weight_sum(partitions: Sequence[Partition],
                     loads: tuple[HighLevelGraph, list[Any]] | None, num_workers: int | None,
                     label: str) -> float:
    """Exact sum of the weights of ``partitions`` (``math.fsum`` of all of them).

    ``loads`` is the dataset's :meth:`~laddu_dask.data.dataset.Dataset.partition_graph` of
    the weights when its partitions depend on a Dask graph (a collection's, or persisted
    keys): the sums are tasks on it. Otherwise each task loads its partitions itself; with
    ``num_workers``, on Dask's threaded scheduler, two tasks a thread, each reading its
    partitions one at a time (a streamed dataset's memory plan).

    Raises
    ------
    NonFiniteError
        The sum overflows the float range (naming ``label``).
    """
    from dask import delayed
    from dask.delayed import Delayed

    bounded: dict[str, Any] = {}
    if num_workers is not None:
        bounded = {"scheduler": "threads", "num_workers": num_workers}
    if loads is not None:
        graph, keys = loads
        tasks = [delayed(_batch_partials)(Delayed(k, graph, layer=k[0])) for k in keys]
    elif num_workers is None:
        tasks = [delayed(_load_partials)(p) for p in partitions]
    else:
        size = -(-len(partitions) // (2 * num_workers))
        tasks = [delayed(_load_partials)(*partitions[a:b])
                 for a, b in split_rows(len(partitions), size)]
    try:
        partials = compute(*tasks, what=f"the sum of the weights of {label}", **bounded)
        total = math.fsum(itertools.chain.from_iterable(partials))
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise NonFiniteError(
            f"the weights of {label} sum to more than the largest double (the sum overflows)"
        )
    return total
