"""The exact sum of a dataset's weights, read partition by partition as Dask tasks.

Each task is the ``chunk`` step of the exact reduction of :mod:`laddu_dask.sums` (the
:class:`~laddu_dask.sums.ExactPartials` of its partitions' weights); the partials are merged
exactly and rounded once, so the total does not depend on the partitioning.

Examples
--------
>>> import numpy as np
>>> _batch_partials(EventBatch({}, np.array([1e16, 1.0, -1e16]))).to_floats().tolist()
[1.0]
"""

from __future__ import annotations

import functools
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
from laddu_dask.sums import ExactPartials, combine_tree, exact_aggregate, exact_chunk

#: The ``combine`` step of a weight sum: the exact merge of one quantity's partials.
_combine = functools.partial(ExactPartials.merge, k=1)


def _load_partials(*partitions: Partition) -> ExactPartials:
    """The exact partial sum of the weights of ``partitions`` (read one at a time)."""
    return _combine([exact_chunk(p.load([], np.float64).weights) for p in partitions])


def _batch_partials(batch: EventBatch) -> ExactPartials:
    return exact_chunk(batch.weights)


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
    partials = compute(*tasks, what=f"the sum of the weights of {label}", **bounded)
    total = exact_aggregate(combine_tree(partials, _combine))
    if not math.isfinite(total):
        raise NonFiniteError(
            f"the weights of {label} sum to more than the largest double (the sum overflows)"
        )
    return total
