"""Uncertainties of derived quantities: a fit covariance propagated through the exact
gradient, and the spread over the draws of an ensemble.

A quantity ``f(p)`` of the fitted parameters ``p`` (an integral, a ratio of integrals)
gets the linear (delta-method) standard deviation ``sqrt(g^T C g)``, where ``g`` is the
exact gradient of ``f`` (from the runtime's exact gradients of the integrals: no finite
differences) and ``C`` the fit covariance (HESSE's, ``FitResult.covariance``).  Given an
ensemble (a :class:`~laddu_dask.analysis.FitEnsemble` of bootstrap refits, an MCMC
summary, or a ``(K, n)`` array) it is also evaluated at every draw, all draws in one
evaluation round.

Examples
--------
>>> import numpy as np
>>> linear_sigma(np.array([1.0, 2.0]), np.array([[0.04, 0.0], [0.0, 0.01]]))
0.282842712474619
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError


def covariance_matrix(likelihood: Any, covariance: Any) -> np.ndarray | None:
    """A covariance in the likelihood's free-parameter order.

    ``covariance`` is ``None``, a fit result (anything with ``covariance`` and
    ``parameter_names``, e.g. :class:`~laddu_dask.FitResult`), or an ``(n, n)`` array in
    :attr:`Likelihood.parameter_names` order.

    Raises
    ------
    ParameterError
        For a fit result without a covariance, one that lacks a free parameter of the
        likelihood, or an array of the wrong shape or with non-finite entries.
    """
    if covariance is None:
        return None
    names = likelihood.parameter_names
    if hasattr(covariance, "covariance") and hasattr(covariance, "parameter_names"):
        matrix = covariance.covariance
        if matrix is None:
            raise ParameterError("the fit result has no covariance (HESSE did not run or failed)")
        theirs = list(covariance.parameter_names)
        missing = [n for n in names if n not in theirs]
        if missing:
            raise ParameterError(f"the fit result's covariance lacks parameter(s) {', '.join(missing)}")
        order = [theirs.index(n) for n in names]
        matrix = np.asarray(matrix, dtype=np.float64)[np.ix_(order, order)]
    else:
        matrix = np.asarray(covariance, dtype=np.float64)
    if matrix.shape != (len(names), len(names)):
        raise ParameterError(f"covariance must be ({len(names)}, {len(names)}) in the order "
                             f"{', '.join(names)}, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ParameterError("covariance has non-finite entries")
    return matrix


def ensemble_points(likelihood: Any, ensemble: Any) -> tuple[np.ndarray, int | None] | None:
    """The ensemble's draws as ``(K, n)`` rows in the likelihood's order, and its source id.

    ``ensemble`` is ``None``, a :class:`~laddu_dask.analysis.FitEnsemble` (its valid fits'
    ``draws``), an MCMC summary (its ``flat()`` chain), or a ``(K, n)`` array.

    Raises
    ------
    ParameterError
        For draws that lack a free parameter, have the wrong shape, are none or are not finite.
    """
    if ensemble is None:
        return None
    names = likelihood.parameter_names
    source = getattr(ensemble, "source_id", None)
    theirs = list(getattr(ensemble, "parameter_names", None) or names)
    if hasattr(ensemble, "flat") and callable(ensemble.flat):
        rows = np.asarray(ensemble.flat(), dtype=np.float64)
    elif hasattr(ensemble, "draws"):
        rows = np.asarray(ensemble.draws, dtype=np.float64)
    else:
        rows = np.asarray(ensemble, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[1] != len(theirs):
        raise ParameterError(f"ensemble draws must be (K, {len(theirs)}), got shape {rows.shape}")
    if len(rows) == 0:
        raise ParameterError("the ensemble has no draws (bootstrap_fit keeps only its valid refits: "
                             "its .fits lists the failed ones and why)")
    missing = [n for n in names if n not in theirs]
    if missing:
        raise ParameterError(f"the ensemble lacks parameter(s) {', '.join(missing)}")
    rows = rows[:, [theirs.index(n) for n in names]]
    if not np.isfinite(rows).all():
        raise ParameterError("ensemble draws must be finite")
    return rows, (int(source) if isinstance(source, (int, np.integer)) else None)


def linear_sigma(gradient: np.ndarray, covariance: np.ndarray) -> float:
    """``sqrt(g^T C g)``: the linearly propagated standard deviation."""
    variance = float(gradient @ covariance @ gradient)
    if variance < 0:
        if variance > -1e-12 * float(np.abs(gradient) @ np.abs(covariance) @ np.abs(gradient)):
            return 0.0
        raise ParameterError(f"the covariance is not positive semi-definite (g^T C g = {variance!r})")
    return float(np.sqrt(variance))
