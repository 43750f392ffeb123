"""Accepted-MC normalization from sufficient statistics.

:func:`prepare_statistics` sums, once and exactly, the matrices ``M_j`` of a
:class:`~laddu_dask.compile.normalization.Decomposition` over a dataset (one task per
partition, a tree merge); :class:`NormalizationStatistics` then gives
``sum_accmc w I`` and its gradient in ``O(K^2)`` per evaluation.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.normalization import decompose
>>> from laddu_dask.runtime.normalization import prepare_statistics
>>> x = ld.scalar("x")
>>> c = ld.complex(ld.parameter("re", initial=1.0), ld.parameter("im"))
>>> d = decompose(ld.CompiledModel.from_expr((c * x).norm_sqr()).split)
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 2.0])})
>>> stats = prepare_statistics(ld.Execution(), d, mc, "mc")
>>> stats.value_and_gradient([1.0, 0.0], True)
(5.0, array([10.,  0.]))
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from laddu_dask.arrays import all_finite
from laddu_dask.compile.normalization import Decomposition
from laddu_dask.compile.point_code import pack, point_sources
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import LadduDaskError, NonFiniteError
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryDecision
from laddu_dask.runtime.point_programs import point_program
from laddu_dask.runtime.reduction import merge_list, tree_graph, unique_name
from laddu_dask.sums import ExactPartials


class NormalizationStatistics:
    """Summed weighted amplitude products of a dataset.

    Attributes
    ----------
    decomposition : Decomposition
        The model's ``(P, E)`` structure.
    matrices : list of numpy.ndarray
        The Hermitian ``M_j``.
    sum_weights : float
        Exact sum of the dataset's weights.
    """

    def __init__(self, decomposition: Decomposition, matrices: list[np.ndarray],
                 sum_weights: float) -> None:
        self.decomposition = decomposition
        self.matrices = matrices
        self.sum_weights = sum_weights
        self.program = point_program(point_sources(decomposition))

    @property
    def matrices(self) -> list[np.ndarray]:
        return self._matrices

    @matrices.setter
    def matrices(self, matrices: list[np.ndarray]) -> None:
        self._matrices = matrices
        self._packed = pack(matrices)  # the compiled normalization's argument

    @property
    def nbytes(self) -> int:
        """Bytes the statistics hold."""
        return int(sum(m.nbytes for m in self.matrices))

    def value_and_gradient(self, params: Any, with_gradient: bool) -> tuple[float, Any]:
        """``sum w I`` (and its gradient) at ``params`` (model order).

        Raises
        ------
        NonFiniteError
            The sum or a gradient component overflows the float range.
        """
        point = np.asarray(params, dtype=np.float64)[None, :]
        values, grads = self.values_and_gradients(point, with_gradient)
        return float(values[0]), None if grads is None else grads[0]

    def _run_program(self, points: np.ndarray, with_gradient: bool) -> tuple[Any, Any]:
        """The compiled normalization (:attr:`program`), or ``(None, None)`` without one."""
        if self.program is None:
            return None, None
        params = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)
        values = np.empty(params.shape[1])
        if not with_gradient:
            self.program.run("value_points", params, self._packed, values)
            return values, None
        grads = np.empty(params.shape)
        self.program.run("gradient_points", params, self._packed, values, grads)
        return values, grads.T

    def values_and_gradients(self, points: np.ndarray, with_gradient: bool) -> tuple[np.ndarray, Any]:
        """:meth:`value_and_gradient` at ``(K, n)`` points at once (each bitwise the same)."""
        with np.errstate(all="ignore"):
            try:
                values, grads = self._run_program(points, with_gradient)
            except ZeroDivisionError:  # Numba's complex division by zero: NumPy's infinity
                values = None
            if values is None:
                values, grads = self.decomposition.values_and_gradients(points, self.matrices,
                                                                        with_gradient)
        for k, value in enumerate(values.tolist()):
            if not math.isfinite(value):
                raise NonFiniteError(
                    f"the accepted-MC sum of w I from sufficient statistics is {value!r}: it overflows "
                    "the float range"
                )
            if grads is not None and not all_finite(grads[k]):
                raise NonFiniteError(
                    "the gradient of the accepted-MC sum of w I from sufficient statistics is not "
                    f"finite ({grads[k].tolist()})"
                )
        return values, grads


def _partition_terms(decomposition: Decomposition, dataset: Dataset, index: int) -> ExactPartials:
    return _terms(decomposition, dataset.load_partition(index, columns=decomposition.columns))


def _block_terms(decomposition: Decomposition, blocks: Any, index: int) -> tuple[int, ExactPartials]:
    """A block of unknown length read whole: its rows and its statistics' partial sums."""
    batch = blocks.load_block(index, list(decomposition.columns), np.dtype(np.float64))
    return batch.n_events, _terms(decomposition, batch)


def _terms(decomposition: Decomposition, batch: Any) -> ExactPartials:
    cols = {c: batch.columns[c] for c in decomposition.columns}
    w = np.asarray(batch.weights, dtype=np.float64)
    with np.errstate(all="ignore"):
        terms = decomposition.matrix_terms(cols, w)
    finite = np.isfinite(terms).all(axis=0)
    if not finite.all():
        # an amplitude factor (or a product of two) is infinite or NaN: so is the intensity
        # at every parameter point, as the event loop would report
        i = int(np.argmin(finite))
        raise NonFiniteError(
            f"non-finite amplitude product at event {batch.offset + i} ({batch.source}): the "
            "intensity there is infinite or NaN; a likelihood needs finite values"
        )
    return ExactPartials.from_terms(np.vstack([terms, w[None, :]]))


def _learning_totals(execution: Execution, decomposition: Decomposition, blocks: Any,
                     token: str) -> np.ndarray | None:
    """The statistics of a dataset whose lengths Dask does not know, summed while each block
    is read once (its rows then recorded on ``blocks``); None when a block is rejected: the
    ordinary pass then names the event by its index in the whole dataset."""
    n = len(blocks.inputs)
    read = {(f"{token}-read", i): (_block_terms, decomposition, blocks, i) for i in range(n)}
    rows = {(f"{token}-rows", i): (operator.itemgetter(0), key) for i, key in enumerate(read)}
    leaves = {(token, i): (operator.itemgetter(1), key) for i, key in enumerate(read)}
    graph, root = tree_graph(leaves, execution.split_every, merge_list, f"{token}-merge")
    try:
        total, *lengths = execution.get({**read, **rows, **graph}, [root, *rows])
    except LadduDaskError:
        return None
    blocks.learn_lengths([int(r) for r in lengths])
    return total.to_floats()


def prepare_statistics(execution: Execution, decomposition: Decomposition, dataset: Dataset,
                       name: str) -> NormalizationStatistics:
    """Sum the statistics of ``dataset`` exactly (one graph, one task per partition)."""
    dataset.schema.require(decomposition.columns, ", ".join(dataset.sources))
    token = unique_name(f"statistics-{name}")
    totals = None
    if not dataset.lengths_known and dataset.blocks is not None:
        totals = _learning_totals(execution, decomposition, dataset.blocks, f"{token}-learning")
    if totals is None:
        # (.partitions: a lazy dataset's rows are counted here, not while a scheduler names
        # the tasks that hold it, which would wait on the scheduler from inside it)
        leaves = {(token, i): (_partition_terms, decomposition, dataset, i)
                  for i in range(len(dataset.partitions))}
        graph, root = tree_graph(leaves, execution.split_every, merge_list, f"{token}-merge")
        totals = execution.get(graph, root).to_floats()
    if not np.all(np.isfinite(totals)):
        what = "weights" if np.all(np.isfinite(totals[:-1])) else "amplitude products w E_k conj(E_l)"
        raise NonFiniteError(
            f"{name}: the {what} of {', '.join(dataset.sources)} sum beyond the float range"
        )
    matrices = decomposition.matrices(totals[:-1])
    size = sum(m.nbytes for m in matrices)
    decision = MemoryDecision(
        dataset=name, resource="host", strategy="statistics", requested_policy=dataset.memory_policy,
        chunk_size=dataset.chunk_size, partitions=dataset.n_partitions, estimated_bytes=size,
        peak_bytes=size, budget_bytes=execution.host_budget_bytes(),
        reason=(f"sufficient statistics: the normalization needs only {len(matrices)} amplitude "
                f"product matri{'ces' if len(matrices) > 1 else 'x'} of sizes "
                f"{', '.join(str(m.shape[0]) for m in matrices)} ({size} bytes), "
                "summed once over the events"),
    )
    execution.record(decision)
    dataset.note_memory_decision(decision.as_dict())
    return NormalizationStatistics(decomposition, matrices, float(totals[-1]))
