"""Per-event values and gradients of a model on a dataset: :func:`evaluate_model`, what the
public ``ld.Model.evaluate`` and ``ld.Model.value_and_gradient`` return (the model is
assembled with them in :mod:`laddu_dask.facade`; the results layer's projections are Dask
tasks of their own, :mod:`laddu_dask.results.events`).

Each partition is loaded with the columns the model reads, prepared and evaluated with
the execution's kernels (:meth:`PreparedModel.evaluate_batch`, the reductions' own value
kernel; :meth:`PreparedModel.evaluate_batch_with_gradient` for derivatives), on its
device: the arrays come back as NumPy or CuPy arrays, in dataset order.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile import CompiledModel
>>> model = ld.Model(ld.parameter("a", initial=2.0) * ld.scalar("x"))
>>> events = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 3.0])})
>>> values, grads = event_values(CompiledModel.from_expr(model), events, [2.0], ld.Execution(), True)
>>> values.tolist(), grads.real.tolist()
([2.0, 6.0], [[1.0], [3.0]])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.dtypes import complex_dtype, real_dtype
from laddu_dask.compile.layout import ParameterValues, resolve_parameters
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ModelError
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.expr.model import Model
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import PreparedModel


def iter_event_values(compiled: CompiledModel, dataset: Dataset, params: ParameterValues,
                      execution: Execution, gradient: bool = False) -> Iterator[tuple[EventBatch, Any, Any]]:
    """For each partition of ``dataset`` in order: its batch, the values ``(n,)`` of
    ``compiled`` for its events and with ``gradient`` their derivatives ``(n, n_free)`` by
    the free parameters (else ``None``).

    ``params`` are in ``compiled.parameter_names`` order (or a mapping by name).  Values are
    complex for a complex model, real otherwise, in the execution's precision and on its
    device (NumPy or CuPy arrays).
    """
    pm = PreparedModel.prepare(compiled, execution)
    for i in range(dataset.n_partitions):
        batch = dataset.load_partition(i, columns=compiled.columns, dtype=real_dtype(execution.precision))
        if gradient:
            yield (batch, *pm.evaluate_batch_with_gradient(params, batch))
        else:
            yield batch, pm.evaluate_batch(params, batch), None


def event_values(compiled: CompiledModel, dataset: Dataset, params: ParameterValues,
                 execution: Execution, gradient: bool = False) -> tuple[Any, Any]:
    """:func:`iter_event_values` of every partition, concatenated: values ``(n,)`` and the
    derivatives ``(n, n_free)`` (``None`` without ``gradient``)."""
    parts = list(iter_event_values(compiled, dataset, params, execution, gradient))
    if not parts:
        dt = real_dtype(execution.precision)
        kind = complex_dtype(dt) if compiled.split.root.kind == "complex" else dt
        k = len(compiled.parameter_names)
        return np.zeros(0, dtype=kind), (np.zeros((0, k), dtype=complex_dtype(dt)) if gradient else None)
    xp = array_module(parts[0][1])
    values = xp.concatenate([xp.asarray(v) for _, v, _ in parts])
    return values, (xp.concatenate([g for _, _, g in parts], axis=0) if gradient else None)


def evaluate_model(model: Model, dataset: Dataset | None, parameters: ParameterValues | None,
                   execution: Execution | None, real: bool, gradient: bool) -> Any:
    """What :meth:`Model.evaluate` (``gradient=False``) and :meth:`Model.value_and_gradient`
    return: laddu's shapes and dtypes (complex unless ``real``), in ``model.parameter_names``
    order, one Python number (and a ``(n_free,)`` gradient) without a dataset.

    Raises
    ------
    ModelError
        Without a dataset for a model that reads event columns, or for a dataset that is
        not a :class:`Dataset`.
    ParameterError
        For parameter values of the wrong length, unknown names or non-finite values.
    """
    execution = execution if execution is not None else Execution()
    names = model.parameter_names
    values = resolve_parameters(names, model.default_parameters if parameters is None else parameters,
                                defaults=dict(zip(names, model.default_parameters)))
    compiled = CompiledModel.from_expr(model)
    local = [values[names.index(n)] for n in compiled.parameter_names]
    single = dataset is None
    if single:
        if model.columns:
            raise ModelError(f"Model.evaluate needs a dataset: the model reads the columns "
                             f"{', '.join(model.columns)}")
        dataset = Dataset.from_arrays(scalars={"laddu-dask no columns": np.zeros(1)})
    elif not isinstance(dataset, Dataset):
        raise ModelError(f"Model.evaluate takes a laddu_dask Dataset, got {type(dataset).__name__}")
    value, grad = event_values(compiled, dataset, local, execution, gradient)
    xp = array_module(value)
    dt = real_dtype(execution.precision)
    value = xp.real(value).astype(dt) if real else value.astype(complex_dtype(dt))
    if gradient:
        full = xp.zeros((len(value), len(names)), dtype=dt if real else complex_dtype(dt))
        for j, n in enumerate(compiled.parameter_names):
            full[:, names.index(n)] = xp.real(grad[:, j]) if real else grad[:, j]
        grad = full
    if single:
        number = float(value[0]) if real else complex(value[0])
        return (number, grad[0]) if gradient else number
    return (value, grad) if gradient else value

