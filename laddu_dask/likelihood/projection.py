"""Fit projections: accepted-MC events weighted by the fitted intensity.

Histogramming any kinematic quantity of the accepted Monte Carlo with these
weights gives the fitted model's prediction for the same histogram of the data.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 1.0])})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> lik.project([1.0]).tolist()
[0.6666666666666666, 1.3333333333333333]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.likelihood.events import iter_event_values


def project(likelihood: Any, params: ParameterValues, term: str | None = None) -> np.ndarray:
    """Per-event weights ``w_i I_i`` of a term's accepted MC, scaled to its data's total weight.

    Parameters
    ----------
    likelihood : Likelihood
        The likelihood (its execution evaluates the model).
    params : sequence or mapping
        Parameter values (e.g. ``fit.values``).
    term : str, optional
        The term's name; required when the likelihood has several.

    Returns
    -------
    numpy.ndarray
        One weight per accepted-MC event, in dataset order; they sum to the data's
        total weight.
    """
    terms = likelihood.terms
    if term is None:
        if len(terms) != 1:
            raise ValueError(f"name the term to project: one of {', '.join(t.name for t in terms)}")
        chosen = terms[0]
    else:
        matches = [t for t in terms if t.name == term]
        if not matches:
            raise ValueError(f"no term named {term!r}; terms: {', '.join(t.name for t in terms)}")
        chosen = matches[0]
    p = likelihood.resolve(params)
    index = [likelihood.parameter_names.index(n) for n in chosen.parameter_names]
    local = p[index]
    pieces = [np.asarray(batch.weights, dtype=np.float64) * np.real(np.asarray(values))
              for batch, values, _ in iter_event_values(chosen.compiled, chosen.accepted_mc, local,
                                                        likelihood.execution)]
    weights = np.concatenate(pieces) if pieces else np.zeros(0)
    total = float(np.sum(weights))
    if total == 0:
        return weights
    return weights * (chosen.data.sum_weights() / total)
