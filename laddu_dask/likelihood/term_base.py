"""The machinery the model-backed likelihood terms share (:class:`_Term`): a term's model
and datasets, its preparation for an execution, its reductions and the sums they give.

:mod:`laddu_dask.likelihood.terms` defines the terms on it (``NLL``, ``ExtendedNLL``: how
the sums make a value) and the rules every event must satisfy;
:class:`~laddu_dask.likelihood.likelihood.Likelihood` sums any ``_Term``, so this module
sits below both and the terms can name the likelihood of themselves alone.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> nll = ld.NLL(ld.parameter("a", initial=1.0) * ld.scalar("x") + 1.0,
...              data=ld.Dataset.from_arrays(scalars={"x": np.array([0.5])}),
...              accepted_mc=ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 1.0])}))
>>> isinstance(nll, _Term), nll.kind
(True, 'nll')
"""

from __future__ import annotations

import copy
import math
import weakref
from typing import Any, ClassVar

import numpy as np

from laddu_dask.arrays import all_finite
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import DataError, NonFiniteError, NormalizationError
from laddu_dask.expr.model import Model
from laddu_dask.expr.node import Expr
from laddu_dask.likelihood.cost import MinuitCost
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.normalization import NormalizationStatistics, prepare_statistics
from laddu_dask.runtime.prepared import (
    PreparedDataset,
    PreparedModel,
    ReductionJob,
    reduce_many,
    reduction_job,
)
from laddu_dask.runtime.reduction import object_token

LOG = ReductionPlan.weighted_log_positive_real()
#: The accepted-MC sum: any finite intensity (see the module docstring).
ACCEPTED = ReductionPlan.weighted_real()


def _as_model(model: Model | Expr, model_class: type[Model]) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, Expr):
        return model_class(model)
    raise TypeError(f"a likelihood term needs a Model or an expression, got {type(model).__name__}")


def _as_dataset(ds: Any, what: str, term: str) -> Dataset:
    if not isinstance(ds, Dataset):
        raise TypeError(
            f"term {term!r}: {what} must be a laddu_dask Dataset (ld.read_parquet or "
            f"ld.Dataset.from_arrays), got {type(ds).__name__}"
        )
    return ds


class _Prepared:
    __slots__ = ("model", "data", "mc", "stats", "data_weight")

    def __init__(self, model: PreparedModel, data: PreparedDataset, mc: PreparedDataset | None,
                 stats: NormalizationStatistics | None) -> None:
        self.model = model
        self.data = data
        self.mc = mc
        self.stats = stats
        self.data_weight = data.stats.sum_weights


class _Term(MinuitCost):
    """Shared machinery of the model-backed terms; each term is an iminuit cost.

    A term builds two objects for its user: the :class:`Model` of an expression it is given,
    and the likelihood of itself alone (for iminuit and ``+``). Their classes are class
    attributes: this layer's own here, the public ones on the public terms that
    :mod:`laddu_dask.facade` assembles (``ld.NLL``), so that ``ld.NLL(...) + ld.NLL(...)`` is
    an ``ld.Likelihood`` without this layer knowing the layers above it.
    """

    kind = "term"
    #: The class of the model built from an expression.
    model_class: ClassVar[type[Model]] = Model
    #: The class of the likelihood of this term alone and of its sums: the concrete terms
    #: name it (this layer's :class:`~laddu_dask.likelihood.terms.NLL` and ``ExtendedNLL``
    #: name this layer's :class:`~laddu_dask.likelihood.likelihood.Likelihood`).
    likelihood_class: ClassVar[type | None] = None

    def __init__(self, model: Model | Expr, *, data: Dataset, accepted_mc: Dataset,
                 name: str = "nll") -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a term name must be a non-empty string, got {name!r}")
        self.name = name
        self.model = _as_model(model, self.model_class)
        self.data = _as_dataset(data, "data", name)
        self.accepted_mc = _as_dataset(accepted_mc, "accepted_mc", name)
        self._require_events(known_only=True)  # a lazy Dask input: when prepared
        self.compiled = CompiledModel.from_expr(self.model)
        # a missing column is reported now, naming the file, not at the first evaluation
        for ds in (self.data, self.accepted_mc):
            ds.schema.require(self.compiled.columns, ", ".join(ds.sources))
        # by the execution's object_token: an id() would be that of a new execution once the
        # old one is collected, which would then get the old one's preparation
        self._prepared: dict[str, _Prepared] = {}
        # the same preparation by the execution itself (a weak reference), for the lean path
        self._last: tuple[weakref.ref, _Prepared] | None = None
        self._alone: Any = None
        self._mc_from: _Term | None = None
        self._statistics: tuple[list[np.ndarray], float] | None = None  # see adopt_statistics

    def with_data(self, data: Dataset) -> _Term:
        """This term with other data (a bootstrap replica, a subsample): the same model and
        accepted MC, whose preparation (done, or still to come) is shared, so only ``data``
        is prepared anew.

        Raises
        ------
        DataError
            If ``data`` has no events; SchemaError if it lacks a column the model reads.
        """
        twin = copy.copy(self)
        twin.data = _as_dataset(data, "data", self.name)
        if twin.data.n_events == 0:
            raise DataError(f"term {self.name!r}: its data has no events ({', '.join(twin.data.sources)})")
        twin.data.schema.require(self.compiled.columns, ", ".join(twin.data.sources))
        twin._prepared, twin._last, twin._alone = {}, None, None
        twin._mc_from = self._mc_from or self
        return twin

    def prepared_statistics(self, execution: Execution) -> tuple[list[np.ndarray], float] | None:
        """The accepted MC's sufficient statistics (``(matrices, sum of weights)``) when this
        term was prepared for ``execution`` with its normalization from them, else None
        (nothing is prepared here)."""
        prep = self._prepared.get(object_token(execution))
        if prep is None or prep.stats is None:
            return None
        return prep.stats.matrices, prep.stats.sum_weights

    def adopt_statistics(self, statistics: tuple[list[np.ndarray], float]) -> None:
        """Take the accepted MC's sufficient statistics from :meth:`prepared_statistics` of
        the same term elsewhere (a fit task on a worker, from the client's preparation): a
        preparation here then sums them no more (they are exact sums, so the same numbers)."""
        self._statistics = statistics

    @classmethod
    def likelihood_type(cls) -> type:
        """The class of this term's likelihoods, :attr:`likelihood_class` (this layer's
        ``Likelihood`` for this layer's terms, the public one for the public terms).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> from laddu_dask.likelihood.terms import NLL
        >>> ld.NLL.likelihood_type() is ld.Likelihood, NLL.likelihood_type() is ld.Likelihood
        (True, False)
        """
        return cls.likelihood_class

    def _cost_likelihood(self) -> Any:
        """The likelihood of this term alone, on the default execution (for iminuit and ``+``)."""
        if self._alone is None:
            self._alone = self.likelihood_type()([self])
            self._alone._execution_given = False
        return self._alone

    @property
    def parameter_names(self) -> list[str]:
        """The term's free parameters."""
        return self.compiled.parameter_names

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}: {self.data.n_events} data events, "
            f"{self.accepted_mc.n_events} accepted-MC events, "
            f"{len(self.parameter_names)} free parameters)"
        )

    def _require_events(self, known_only: bool = False) -> None:
        """DataError when the data or the accepted MC has no events (``known_only``: only
        for datasets whose lengths are known without computing: a lazy Dask collection's
        are learned while it is prepared, and checked then)."""
        for role, ds in (("data", self.data), ("accepted Monte Carlo (accepted_mc)", self.accepted_mc)):
            if (ds.lengths_known or not known_only) and ds.n_events == 0:
                raise DataError(
                    f"term {self.name!r}: its {role} has no events ({', '.join(ds.sources)}); a "
                    "likelihood needs at least one event in its data and its accepted Monte Carlo"
                )

    def prepare(self, execution: Execution, with_gradient: bool | None = None) -> _Prepared:
        """Prepare the datasets for ``execution`` (done once per execution).

        With ``with_gradient`` (what the first evaluation asks for), the kernel it calls
        compiles on a background thread while the datasets are prepared.
        """
        last = self._last
        if last is not None and last[0]() is execution:
            return last[1]
        hit = self._prepared.get(object_token(execution))
        if hit is not None:
            self._last = (weakref.ref(execution), hit)
            return hit
        if self._mc_from is not None:  # a twin of with_data: only its data is new
            source = self._mc_from.prepare(execution, with_gradient)
            pd = source.model.prepare_dataset(execution, self.data, name=f"{self.name}/data")
            self._require_events()
            hit = _Prepared(source.model, pd, source.mc, source.stats)
            self._prepared = {object_token(execution): hit}
            self._last = (weakref.ref(execution), hit)
            return hit
        pm = PreparedModel.prepare(self.compiled, execution)
        if with_gradient is not None:
            pm.compile_ahead(execution, with_gradient, repr(self.name))
        pd = pm.prepare_dataset(execution, self.data, name=f"{self.name}/data")
        mc_name = f"{self.name}/accepted_mc"
        decomposition = None if execution.normalization == "general" else self.compiled.decomposition
        stats = pmc = None
        if decomposition is not None:
            if self._statistics is not None:  # summed elsewhere (adopt_statistics)
                stats = NormalizationStatistics(decomposition, *self._statistics)
            else:
                stats = prepare_statistics(execution, decomposition, self.accepted_mc, mc_name)
            total_weight = stats.sum_weights
        if decomposition is None or execution.normalization == "verify":
            pmc = pm.prepare_dataset(execution, self.accepted_mc, name=mc_name)
            total_weight = pmc.stats.sum_weights
        self._require_events()
        if total_weight == 0.0:
            raise NormalizationError(
                f"term {self.name!r}: the accepted Monte Carlo ({', '.join(self.accepted_mc.sources)}) "
                "has zero total weight, so the intensity cannot be normalised"
            )
        prepared = _Prepared(pm, pd, pmc, stats)
        self._prepared = {object_token(execution): prepared}
        self._last = (weakref.ref(execution), prepared)
        return prepared

    def requests(self, execution: Execution, params: Any, with_gradient: bool) -> list[ReductionJob]:
        """The reductions an evaluation at the point ``params`` needs (the data's, and the
        accepted MC's unless its sum comes from sufficient statistics), as the runners'
        jobs; a :class:`Likelihood` runs those of all its terms in one round."""
        prep = self._checked(execution, with_gradient)
        requests = [reduction_job(prep.model, [params], prep.data, LOG, with_gradient)]
        if prep.mc is not None:
            requests.append(reduction_job(prep.model, [params], prep.mc, ACCEPTED, with_gradient))
        return requests

    def _checked(self, execution: Execution, with_gradient: bool) -> _Prepared:
        """The preparation for ``execution``, its data weights' sum checked."""
        prep = self.prepare(execution, with_gradient)
        if not math.isfinite(prep.data_weight):
            raise NonFiniteError(
                f"term {self.name!r}: the data weights ({', '.join(self.data.sources)}) sum to "
                f"{prep.data_weight!r}, beyond the float range"
            )
        return prep

    def jobs(self, execution: Execution, points: list[np.ndarray],
             with_gradient: bool) -> tuple[_Prepared, list[ReductionJob]]:
        """:meth:`requests` as the runtime's jobs, for points that were checked already (float64
        arrays in this term's parameter order, as :class:`Likelihood` resolves them): the
        likelihood's lean path, which passes the preparation on to :meth:`combine_prepared`."""
        prep = self._checked(execution, with_gradient)
        reducer = prep.model.reducer
        params = prep.model.trusted_points(points)
        jobs = [ReductionJob(reducer, prep.data, params, LOG, with_gradient)]
        if prep.mc is not None:
            jobs.append(ReductionJob(reducer, prep.mc, params, ACCEPTED, with_gradient))
        return prep, jobs

    def combine(self, execution: Execution, params: Any, results: list,
                with_gradient: bool) -> tuple[float, np.ndarray | None]:
        """Value (and gradient) from the results of :meth:`requests`."""
        return self.combine_prepared(self.prepare(execution), params, results, with_gradient)

    def _sums(self, execution: Execution, params: Any, results: list, with_gradient: bool):
        """``(sum_data w ln I, its gradient, sum_accmc w I, its gradient)`` from the results
        of :meth:`requests`."""
        return self._sums_prepared(self.prepare(execution), params, results, with_gradient)

    def combine_points(self, prep: _Prepared, points: list[np.ndarray], per_job: list[list],
                       with_gradient: bool) -> list[tuple[float, np.ndarray | None]]:
        """:meth:`combine_prepared` at every point of a round (``per_job[j][k]``: job ``j``'s
        result at point ``k``), the normalization from sufficient statistics for all of them
        at once."""
        normalization: list[Any] = [None] * len(points)
        if prep.stats is not None and points:
            values, grads = prep.stats.values_and_gradients(np.array(points), with_gradient)
            normalization = [(v, None if grads is None else grads[k]) for k, v in enumerate(values.tolist())]
        return [self.combine_prepared(prep, p, [r[k] for r in per_job], with_gradient, normalization[k])
                for k, p in enumerate(points)]

    def _sums_prepared(self, prep: _Prepared, params: Any, results: list, with_gradient: bool,
                       normalization: Any = None):
        """:meth:`_sums` with the preparation given (and the normalization, when computed)."""
        s_data, g_data = results[0]
        if prep.stats is not None:
            s_mc, g_mc = (prep.stats.value_and_gradient(params, with_gradient) if normalization is None
                          else normalization)
            if prep.mc is not None:
                self._verify(results[1], (s_mc, g_mc))
        else:
            s_mc, g_mc = results[1]
        if not (s_mc > 0 and math.isfinite(s_mc)):
            raise NormalizationError(
                f"term {self.name!r}: the accepted-MC normalisation sum_accmc w I is {s_mc!r}; "
                "it must be positive and finite"
            )
        return s_data, g_data, s_mc, g_mc

    def evaluate(self, execution: Execution, params: Any,
                 with_gradient: bool) -> tuple[float, np.ndarray | None]:
        """Value (and gradient) at ``params`` in this term's parameter order."""
        results = reduce_many(execution, self.requests(execution, params, with_gradient))
        return self.combine(execution, params, results, with_gradient)

    def _finite(self, value: float, grad: np.ndarray | None) -> tuple[float, np.ndarray | None]:
        """``(value, grad)``, or a :class:`NonFiniteError` when either overflowed."""
        if not math.isfinite(value):
            raise NonFiniteError(f"term {self.name!r}: the {self.kind} is {value!r}, beyond the "
                                 "float range")
        if grad is not None and not all_finite(grad):
            j = int(np.argmin(np.isfinite(grad)))
            raise NonFiniteError(
                f"term {self.name!r}: the gradient of the {self.kind} is {float(grad[j])!r} in parameter "
                f"{self.parameter_names[j]!r}, beyond the float range"
            )
        return value, grad

    def _verify(self, general: tuple, statistics: tuple) -> None:
        """``normalization="verify"``: the event loop and the statistics must agree."""
        (v1, g1), (v2, g2) = general, statistics
        ok = abs(v1 - v2) <= 1e-10 * abs(v1)
        if ok and g1 is not None:
            scale = max(float(np.max(np.abs(g1))), 1e-300)
            ok = float(np.max(np.abs(g1 - g2))) <= 1e-8 * scale
        if not ok:
            raise NormalizationError(
                f"term {self.name!r}: the accepted-MC normalisation from sufficient statistics "
                f"({v2!r}) disagrees with the event loop ({v1!r})"
            )
