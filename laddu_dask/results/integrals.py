"""Intensity integrals and projections of one likelihood term (laddu's
``Likelihood.intensity_integrals`` -> ``IntensityIntegrals`` and ``Likelihood.projection``
-> ``LikelihoodProjection``).

A *selection* is a term's model, or the coherent part of it that some tagged waves make
(:meth:`~laddu_dask.Model.projection`), bound to the likelihood's parameters.  Its
integrals ``sum_accmc w I`` and ``sum_genmc w I`` are the runtime's exact reductions (the
same as the likelihood's own normalisation sum, with the exact gradient), at one point or
at many in one round; per-event weights ``w I`` and intensities are one Dask task per
partition (:mod:`laddu_dask.results.events`).  On a cluster, both run on the workers that
hold the partitions.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> s = (ld.parameter("a", initial=1.0) * x).tagged("S")
>>> model = ld.Model(s * s + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 1.0])})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="t")])
>>> lik.intensity_integrals("t", generated_mc=mc).generated_integral([2.0])
6.0
>>> lik.projection("t", generated_mc=mc, tags=["S"]).weights([2.0]).tolist()
[1.0, 5.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.layout import ParameterValues
from laddu_dask.compile.plan import ReductionPlan
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ModelError
from laddu_dask.results.events import event_arrays
from laddu_dask.runtime.jobs import ReductionJob
from laddu_dask.runtime.prepared import PreparedModel, reduction_job, run_jobs
from laddu_dask.sums import exact_sum

#: The integral of an intensity: any finite intensity, weighted and summed.
INTEGRAL = ReductionPlan.weighted_real()


def find_term(likelihood: Any, term_name: str) -> Any:
    """The model-backed term named ``term_name``.

    Raises
    ------
    ModelError
        If no term has that name (the message lists the terms).
    """
    for term in likelihood.terms:
        if term.name == term_name:
            return term
    raise ModelError(f"unknown likelihood term: no term named {term_name!r}; terms: "
                     f"{', '.join(repr(t.name) for t in likelihood.terms)}")


def check_tags(model: Any, tags: Sequence[str] | None, term_name: str) -> list[str] | None:
    """``tags`` as a list, checked against the tags ``model`` carries.

    Raises
    ------
    ModelError
        For a single string, an empty list, or a tag the model does not carry.
    """
    if tags is None:
        return None
    if isinstance(tags, str):
        raise ModelError(f"tags must be a sequence of tags, e.g. [{tags!r}], not a string")
    tags = list(tags)
    if not tags:
        raise ModelError(f"term {term_name!r}: tags is empty; pass None for the whole model")
    known = model.tags
    unknown = [t for t in tags if t not in known]
    if unknown:
        raise ModelError(f"term {term_name!r}: its model has no tag {', '.join(map(repr, unknown))}; "
                         f"its tags: {', '.join(map(repr, known)) or 'none'}")
    return tags


class Selection:
    """A term's model, or its tagged part, bound to a likelihood's parameters and execution.

    Parameters
    ----------
    likelihood : Likelihood
        The likelihood (its parameters and execution).
    term_name : str
        The term.
    tags : sequence of str, optional
        Waves to keep (``None``: the whole model).
    generated_mc : Dataset, optional
        The generated Monte Carlo (``None``: integrals of it are an error).
    """

    def __init__(self, likelihood: Any, term_name: str, tags: Sequence[str] | None = None,
                 generated_mc: Dataset | None = None) -> None:
        self.likelihood = likelihood
        self.term = find_term(likelihood, term_name)
        self.tags = check_tags(self.term.model, tags, term_name)
        if generated_mc is not None:
            if not isinstance(generated_mc, Dataset):
                raise TypeError(f"generated_mc must be a laddu_dask Dataset, got "
                                f"{type(generated_mc).__name__}")
            generated_mc.schema.require(self.term.compiled.columns, ", ".join(generated_mc.sources))
        self.generated_mc = generated_mc
        model = self.term.model if self.tags is None else self.term.model.projection(self.tags)
        self.compiled = self.term.compiled if self.tags is None else CompiledModel.from_expr(model)
        self.execution = likelihood.execution
        self.model = PreparedModel.prepare(self.compiled, self.execution)
        names = likelihood.parameter_names
        self.index = np.array([names.index(n) for n in self.compiled.parameter_names], dtype=int)
        self._prepared: dict[str, Any] = {}

    @property
    def name(self) -> str:
        """The term's name."""
        return self.term.name

    def dataset(self, role: str) -> Dataset:
        """``"accepted"`` (the term's accepted MC), ``"generated"`` or ``"data"``."""
        if role == "accepted":
            return self.term.accepted_mc
        if role == "data":
            return self.term.data
        if self.generated_mc is None:
            raise ModelError(f"term {self.name!r}: pass generated_mc= for generated-MC quantities")
        return self.generated_mc

    def _prepared_dataset(self, role: str) -> Any:
        if role not in self._prepared:
            label = f"{self.name}/{role}_mc/integrals"
            if self.tags is not None:
                label += f"[{','.join(self.tags)}]"
            self._prepared[role] = self.model.prepare_dataset(self.execution, self.dataset(role), name=label)
        return self._prepared[role]

    def local(self, params: ParameterValues) -> np.ndarray:
        """The selection's parameters from a likelihood point."""
        return self.likelihood.resolve(params)[self.index]

    def requests(self, role: str, points: Sequence[ParameterValues],
                 with_gradient: bool) -> ReductionJob:
        """The reduction of ``sum w I`` over one role's dataset at ``points``."""
        return reduction_job(self.model, [self.local(p) for p in points], self._prepared_dataset(role),
                             INTEGRAL, with_gradient)

    def full_gradient(self, grad: Any) -> np.ndarray:
        """A gradient by this selection's parameters as one by the likelihood's (the last
        axis of an array of gradients)."""
        grad = np.real(np.asarray(grad))
        full = np.zeros(grad.shape[:-1] + (len(self.likelihood.parameter_names),))
        full[..., self.index] = grad
        return full

    def integrals(self, roles: Sequence[str], points: Sequence[ParameterValues],
                  with_gradient: bool = False) -> list[list[tuple[float, np.ndarray | None]]]:
        """``sum w I`` over each role's dataset at each point (all in one round), with the
        gradient by the likelihood's free parameters: ``out[role][point]``."""
        return integrate([(self, role) for role in roles], points, with_gradient)

    def integral(self, role: str, params: ParameterValues) -> float:
        """``sum w I`` over one role's dataset at ``params``."""
        return self.integrals([role], [params])[0][0][0]

    def events(self, role: str, params: ParameterValues, dask: bool = False,
               rows: tuple[int, ...] = (0, 1)) -> tuple[Any, ...]:
        """Weights ``w I`` and intensities ``I`` of each event of a role's dataset (the
        ``rows`` of :func:`~laddu_dask.results.events.event_arrays` asked for)."""
        return event_arrays(self.execution, self.model, self.dataset(role), self.local(params), dask, rows)


def integrate(pairs: Sequence[tuple[Selection, str]], points: Sequence[ParameterValues],
              with_gradient: bool = False) -> list[list[tuple[float, np.ndarray | None]]]:
    """``sum w I`` of each ``(selection, role)`` at each point, all in ONE round of the
    execution (every partition read once), with gradients by the likelihood's free
    parameters: ``out[pair][point] = (value, gradient or None)``."""
    if not pairs:
        return []
    execution = pairs[0][0].execution
    requests = [sel.requests(role, points, with_gradient) for sel, role in pairs]
    out = []
    for (sel, _), per_point in zip(pairs, run_jobs(execution, requests), strict=True):
        out.append([(float(v), sel.full_gradient(g) if with_gradient else None) for v, g in per_point])
    return out


class IntensityIntegrals:
    """Accepted and generated Monte Carlo intensity integrals of one term (laddu's
    ``IntensityIntegrals``), for the whole model or the tagged waves."""

    def __init__(self, selection: Selection) -> None:
        self._selection = selection

    @property
    def name(self) -> str:
        """The term's name."""
        return self._selection.name

    @property
    def tags(self) -> list[str] | None:
        """The waves kept (``None``: the whole model)."""
        return self._selection.tags

    @property
    def data_weight_sum(self) -> float:
        """The total observed weight ``sum_data w`` (exact)."""
        return self._selection.term.data.sum_weights()

    def accepted_integral(self, parameters: ParameterValues) -> float:
        """``sum_accmc w I`` at ``parameters`` (likelihood order, or a mapping by name)."""
        return self._selection.integral("accepted", parameters)

    def generated_integral(self, parameters: ParameterValues) -> float:
        """``sum_genmc w I`` at ``parameters``."""
        return self._selection.integral("generated", parameters)

    def integrals_and_gradients(self, parameters: ParameterValues) -> dict[str, tuple[float, np.ndarray]]:
        """Both integrals and their exact gradients by the likelihood's free parameters,
        in one round: ``{"accepted": (value, gradient), "generated": ...}``."""
        roles = ["accepted"] + (["generated"] if self._selection.generated_mc is not None else [])
        out = self._selection.integrals(roles, [parameters], with_gradient=True)
        return {role: out[i][0] for i, role in enumerate(roles)}

    def __repr__(self) -> str:
        which = "all waves" if self.tags is None else f"tags {self.tags}"
        return f"IntensityIntegrals({self.name!r}, {which})"


class LikelihoodProjection(IntensityIntegrals):
    """Per-event weights of a (tagged) projection of one term on its generated Monte
    Carlo (laddu's ``LikelihoodProjection``); the accepted Monte Carlo when built without
    ``generated_mc``.  Histogramming any quantity of those events with :meth:`weights`
    gives the model's prediction for it."""

    def _role(self) -> str:
        return "accepted" if self._selection.generated_mc is None else "generated"

    def weights(self, parameters: ParameterValues, *, dask: bool = False) -> Any:
        """``w I`` of every event (NumPy, or a lazy Dask array with ``dask=True``)."""
        return self._selection.events(self._role(), parameters, dask, rows=(0,))[0]

    def intensities(self, parameters: ParameterValues, *, dask: bool = False) -> Any:
        """``I`` of every event (NumPy, or a lazy Dask array with ``dask=True``)."""
        return self._selection.events(self._role(), parameters, dask, rows=(1,))[0]

    def weights_and_intensities(self, parameters: ParameterValues, *, dask: bool = False) -> tuple[Any, Any]:
        """Both, from one evaluation of each partition."""
        return self._selection.events(self._role(), parameters, dask)

    def generated_integral(self, parameters: ParameterValues) -> float:
        """``sum w I`` over the events of :meth:`weights`."""
        return self._selection.integral(self._role(), parameters)


def intensity_integrals(likelihood: Any, term_name: str, *, generated_mc: Dataset | None = None,
                        tags: Sequence[str] | None = None) -> IntensityIntegrals:
    """laddu's ``Likelihood.intensity_integrals``: see :class:`IntensityIntegrals`.

    Raises
    ------
    ModelError
        For an unknown term or a tag its model does not carry.
    SchemaError
        If ``generated_mc`` lacks a column the model reads.
    """
    return IntensityIntegrals(Selection(likelihood, term_name, tags, generated_mc))


def projection(likelihood: Any, term_name: str, *, generated_mc: Dataset | None = None,
               tags: Sequence[str] | None = None) -> LikelihoodProjection:
    """laddu's ``Likelihood.projection``: see :class:`LikelihoodProjection`.

    Raises
    ------
    ModelError
        For an unknown term or a tag its model does not carry.
    """
    return LikelihoodProjection(Selection(likelihood, term_name, tags, generated_mc))


def project(likelihood: Any, params: ParameterValues, term: str | None = None) -> np.ndarray:
    """``Likelihood.project``: accepted-MC weights ``w I`` of a term's whole model, scaled
    to its data's total weight (what a fit projection histograms).

    Raises
    ------
    ValueError
        Without ``term`` for a likelihood of several terms.
    ModelError
        For an unknown term.
    """
    if term is None:
        if len(likelihood.terms) != 1:
            raise ValueError("name the term to project: one of "
                             f"{', '.join(t.name for t in likelihood.terms)}")
        term = likelihood.terms[0].name
    selection = Selection(likelihood, term)
    [weights] = selection.events("accepted", params, rows=(0,))
    total = exact_sum(weights)  # the correctly rounded sum_accmc w I, as the integral's
    if total == 0:
        return weights
    return weights * (selection.term.data.sum_weights() / total)
