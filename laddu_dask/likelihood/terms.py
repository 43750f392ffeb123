"""Likelihood terms with laddu's conventions.

``NLL``          ``-2 ( sum_data w ln I  -  N_w ln sum_accmc w I )``, ``N_w = sum_data w``

``ExtendedNLL``  ``2 ( sum_accmc w I  -  sum_data w ln I )``

A term knows its model and datasets; it is prepared for an execution once, and then
evaluates its value and exact gradient with the runtime's reductions.

What each event must satisfy: a data event's intensity enters a logarithm, so it must be
positive and finite (:class:`~laddu_dask.errors.NonPositiveIntensityError`,
:class:`~laddu_dask.errors.NonFiniteError`, naming the event and its file).  An
accepted-MC event's intensity only enters the sum ``sum_accmc w I`` (as in laddu), so it
must be finite but may be zero (an event where the model vanishes) or of either sign;
the total must be positive (:class:`~laddu_dask.errors.NormalizationError`).  The
sufficient statistics of ``normalization="auto"`` never see one event's intensity, so
this is the one rule under which ``"auto"``, ``"general"`` and ``"verify"`` give the
same outcome on every sample.  A sum that overflows the float range (a weight sum, a
sum of terms, the likelihood or a gradient component) is a ``NonFiniteError``; a per-event
term that overflows only inside the kernel is recomputed scaled
(:mod:`laddu_dask.runtime.finite`).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0])})
>>> nll = ld.NLL(model, data=data, accepted_mc=mc)
>>> nll.parameter_names
['a']
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from laddu_dask.arrays import all_finite
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.term_base import _Prepared, _Term


class NLL(_Term):
    """Unbinned negative log-likelihood term, ``-2 ln L`` (laddu's ``NLL``).

    ``NLL = -2 ( sum_data w ln I  -  N_w ln sum_accmc w I )`` with ``N_w = sum_data w``.

    Parameters
    ----------
    model : Model or Expr
        The intensity (its real part must be positive on every event).
    data : Dataset
        Observed events.
    accepted_mc : Dataset
        Accepted Monte Carlo events normalising the intensity.
    name : str
        Unique term name.

    Raises
    ------
    DataError
        If the data or the accepted Monte Carlo has no events (naming the term and files).
    SchemaError
        If a dataset lacks a column the model needs, or holds it as non-numbers.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    >>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    >>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0])})
    >>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    >>> bool(round(lik.value([1.0]), 12) == round(-2 * (np.log(1.25) + np.log(2.0) - 2 * np.log(4.25)), 12))
    True
    """

    kind = "nll"
    likelihood_class: ClassVar[type] = Likelihood

    def combine_prepared(self, prep: _Prepared, params: Any, results: list,
                         with_gradient: bool, normalization: Any = None) -> tuple[float, np.ndarray | None]:
        """Value (and gradient) from the results of :meth:`requests` or :meth:`jobs`."""
        s_data, g_data, s_mc, g_mc = self._sums_prepared(prep, params, results, with_gradient, normalization)
        n_w = prep.data_weight
        value = -2.0 * (s_data - n_w * math.log(s_mc))
        if not with_gradient:
            return self._finite(value, None)
        return self._finite(value, _nll_gradient(g_data, n_w, g_mc, s_mc))

    def _batch_value(self, s_data: float, g_data: np.ndarray, s_mc: float, g_mc: Any,
                     n_w: float) -> tuple[float, np.ndarray]:
        """Value and gradient from the sums of a minibatch, the data sums scaled to the whole
        sample (:mod:`laddu_dask.likelihood.stochastic`)."""
        value = -2.0 * (s_data - n_w * np.log(s_mc))
        grad = -2.0 * (g_data - n_w * np.asarray(g_mc) / s_mc)
        return value, grad


def _nll_gradient(g_data: np.ndarray, n_w: float, g_mc: np.ndarray, s_mc: float) -> np.ndarray:
    """``-2 (g_data - N_w g_mc / s_mc)``; where ``N_w g_mc`` overflows (data weights near
    1e300) although the gradient does not, the same formula with ``N_w`` and ``g_data``
    scaled by the power of two of ``N_w``: exact scalings, so the bits are those of the
    formula with an unbounded exponent range.

    Examples
    --------
    >>> float(_nll_gradient(np.array([1e300]), 3e300, np.array([4e10]), 2e10)[0])
    1e+301
    """
    if s_mc != 0.0:
        # the same IEEE operations, element by element, on Python floats: no NumPy call per
        # operation, and an overflow or a NaN is as silent as under np.errstate
        grad = np.array([-2.0 * (d - n_w * m / s_mc) for d, m in zip(g_data.tolist(), g_mc.tolist())])
        if all_finite(grad):
            return grad
    with np.errstate(all="ignore"):
        grad = -2.0 * (g_data - n_w * g_mc / s_mc)
        if all_finite(grad) or not (all_finite(g_data) and all_finite(g_mc)):
            return grad
        e = math.frexp(n_w)[1]
        return np.ldexp(-2.0 * (np.ldexp(g_data, -e) - math.ldexp(n_w, -e) * g_mc / s_mc), e)


class ExtendedNLL(_Term):
    """Extended unbinned negative log-likelihood, ``2 ( sum_accmc w I - sum_data w ln I )``.

    Parameters are those of :class:`NLL`.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> x = ld.scalar("x")
    >>> model = ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0)
    >>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
    >>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([0.0, 0.5, 1.0])})
    >>> lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc)])
    >>> bool(round(lik.value([1.0]), 12) == round(2 * (4.25 - np.log(1.25) - np.log(2.0)), 12))
    True
    """

    kind = "extended_nll"
    likelihood_class: ClassVar[type] = Likelihood

    def combine_prepared(self, prep: _Prepared, params: Any, results: list,
                         with_gradient: bool, normalization: Any = None) -> tuple[float, np.ndarray | None]:
        """Value (and gradient) from the results of :meth:`requests` or :meth:`jobs`."""
        s_data, g_data, s_mc, g_mc = self._sums_prepared(prep, params, results, with_gradient, normalization)
        value = 2.0 * (s_mc - s_data)
        if not with_gradient:
            return self._finite(value, None)
        with np.errstate(all="ignore"):
            return self._finite(value, 2.0 * (g_mc - g_data))

    def _batch_value(self, s_data: float, g_data: np.ndarray, s_mc: float, g_mc: Any,
                     n_w: float) -> tuple[float, np.ndarray]:
        """Value and gradient from the sums of a minibatch, the data sums scaled to the whole
        sample (:mod:`laddu_dask.likelihood.stochastic`)."""
        return 2.0 * (s_mc - s_data), 2.0 * (np.asarray(g_mc) - g_data)
