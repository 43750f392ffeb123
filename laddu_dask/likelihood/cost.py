"""iminuit's cost protocol for likelihoods and their terms.

:class:`~laddu_dask.likelihood.NLL`, :class:`~laddu_dask.likelihood.ExtendedNLL` and
:class:`~laddu_dask.likelihood.Likelihood` are iminuit costs: callable with the free
parameters (positionally, as one array, or as a mapping), with an exact ``grad``,
``errordef = 1`` (they are ``-2 ln L``), and parameter names and limits that
:class:`iminuit.Minuit` reads itself. Terms and likelihoods add up with ``+`` (and
``sum``) into a :class:`~laddu_dask.likelihood.Likelihood`; parameters with one name are
one parameter.

A minimiser that asks for the value at the point where it just asked for the gradient
gets that evaluation's value without a second pass over the data.

They also add to iminuit's own costs: ``lik + iminuit.cost.NormalConstraint("a", 1.0, 0.1)``
is iminuit's ``CostSum`` (a Gaussian nuisance constraint on ``a``, here), whose value is
the likelihood's plus the constraint's in units where ``errordef`` is 1, and whose gradient
is exact when every part's is. ``verbose = 1`` prints each call and its value, as iminuit's
costs do.

The costs also give iminuit a ``hessian`` (and its diagonal, ``g2``): central differences
of the exact gradient, all ``2 n`` points in one evaluation round
(:mod:`laddu_dask.likelihood.hessian`). :func:`laddu_dask.fit` hands them to MIGRAD's seed
and HESSE instead of second derivatives from function values (typically 40 evaluations
for 6 parameters, each its own round). A plain ``Minuit(cost)`` keeps Minuit's numerical
ones (``has_hessian`` and ``has_g2`` are False) unless given
``Minuit(cost, hessian=cost.hessian, g2=cost.g2)``.

Examples
--------
>>> import numpy as np
>>> from iminuit import Minuit
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 500) ** 0.5})
>>> mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 5000)})
>>> nll = ld.NLL(model, data=data, accepted_mc=mc)
>>> m = Minuit(nll, a=1.0)
>>> m.errordef, m.limits["a"]
(1.0, (0.0, 10.0))
>>> bool(m.migrad().valid)
True
>>> from iminuit.cost import NormalConstraint
>>> constrained = nll + NormalConstraint("a", 1.0, 0.5)  # iminuit's CostSum
>>> bool(Minuit(constrained, a=1.0).migrad().valid)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from laddu_dask.likelihood.hessian import gradient_hessian

__all__ = ["MinuitCost"]


class MinuitCost:
    """iminuit's ``Cost`` interface on top of a likelihood's exact value and gradient.

    A subclass provides ``_cost_likelihood()``, the
    :class:`~laddu_dask.likelihood.Likelihood` that evaluates it (a likelihood is its own;
    a term has a likelihood of one term on the default execution).

    Attributes
    ----------
    errordef : float
        1.0: the costs are ``-2 ln L``, so one standard error is where they rise by 1.
    has_grad : bool
        True: :meth:`grad` is exact.
    has_hessian, has_g2 : bool
        False: a plain ``Minuit(cost)`` computes second derivatives itself; pass
        ``hessian=cost.hessian, g2=cost.g2`` (both: iminuit 2.33 calls ``g2`` even when it
        has a Hessian) to use :meth:`hessian`.
    verbose : int
        0; at 1 or more every call prints its arguments and value (iminuit's meaning).
    """

    errordef: float = 1.0
    has_grad: bool = True
    has_hessian: bool = False
    has_g2: bool = False
    verbose: int = 0

    def _cost_likelihood(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    # -- what iminuit reads -------------------------------------------------------------

    @property
    def _parameters(self) -> dict[str, tuple[float, float] | None]:
        """Free parameters and their limits (``None`` for unbounded), as iminuit reads them."""
        lik = self._cost_likelihood()
        return {
            name: None if lo is None and hi is None
            else (-math.inf if lo is None else lo, math.inf if hi is None else hi)
            for name, (lo, hi) in zip(lik.parameter_names, lik.bounds())
        }

    @property
    def npar(self) -> int:
        """Number of free parameters."""
        return len(self._cost_likelihood().parameter_names)

    @property
    def ndata(self) -> float:
        """Infinite: an unbinned likelihood has no number of degrees of freedom (as iminuit's)."""
        return math.inf

    def __call__(self, *args: Any) -> float:
        """``-2 ln L`` at the free parameters: ``cost(a, b)``, ``cost([a, b])`` or ``cost({"a": a})``."""
        value = self._value(args)
        if self.verbose >= 1:
            print(f"{self.__class__.__name__}{tuple(args)!r} = {value!r}")
        return value

    def grad(self, *args: Any) -> np.ndarray:
        """The exact gradient, in the order of the free parameters (arguments as for a call)."""
        return self._both(*args)[1].copy()

    def hessian(self, *args: Any) -> np.ndarray:
        """The Hessian from central differences of the exact gradient (arguments as for a
        call), its points evaluated in one round; see :mod:`laddu_dask.likelihood.hessian`."""
        x = self._point(args)
        last = getattr(self, "_last_hessian", None)
        if last is not None and np.array_equal(last[0], x):
            return last[1].copy()
        lik = self._cost_likelihood()
        hessian = gradient_hessian(self._points, x, lik.bounds(), lik.parameter_names)
        self._last_hessian = (x.copy(), hessian)
        return hessian.copy()

    def g2(self, *args: Any) -> np.ndarray:
        """The diagonal of :meth:`hessian` (iminuit's ``g2``)."""
        return np.diag(self.hessian(*args)).copy()

    # -- what iminuit's CostSum calls on its parts ------------------------------------

    def _value(self, args: Any) -> float:
        x = self._point(tuple(args))
        cached = self._cached(x)
        if cached is not None:
            return cached[0]
        return self._compute(x, False)[0]

    def _grad(self, args: Any) -> np.ndarray:
        return self.grad(*args)

    # -- the sum of costs ---------------------------------------------------------------

    def __add__(self, other: Any) -> Any:
        """``self + other``: a :class:`~laddu_dask.likelihood.Likelihood` of both sets of
        terms when ``other`` is one of ours, iminuit's ``CostSum`` when it is an iminuit cost."""
        if isinstance(other, MinuitCost):
            return self._cost_likelihood().combined(other._cost_likelihood())
        from iminuit.cost import Cost, CostSum

        return CostSum(self, other) if isinstance(other, Cost) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        # sum([...]) starts from 0; an iminuit cost on the left makes the CostSum itself
        if isinstance(other, int) and other == 0:
            return self._cost_likelihood()
        return NotImplemented

    # -- evaluation ---------------------------------------------------------------------

    def _point(self, args: tuple) -> np.ndarray:
        lik = self._cost_likelihood()
        if len(args) == 1 and (isinstance(args[0], Mapping) or np.ndim(args[0]) == 1):
            return lik.resolve(args[0])
        return lik.resolve(list(args))

    def _cached(self, x: np.ndarray) -> tuple[float, np.ndarray] | None:
        last = getattr(self, "_last_gradient", None)
        if last is not None and np.array_equal(last[0], x):
            return last[1], last[2]
        return None

    def _both(self, *args: Any) -> tuple[float, np.ndarray]:
        """Value and gradient (arguments as for a call), from the cache at its point."""
        x = self._point(args)
        cached = self._cached(x)
        if cached is not None:
            return cached
        value, grad = self._compute(x, True)
        self._last_gradient = (x.copy(), value, grad)
        return value, grad

    def _compute(self, x: np.ndarray, with_gradient: bool) -> tuple[float, Any]:
        """One evaluation; the one place a subclass may watch them."""
        lik = self._cost_likelihood()
        return lik.value_and_gradient(x) if with_gradient else (lik.value(x), None)

    def _points(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and gradients at K points in one round (the Hessian's); a subclass may
        watch them too."""
        return self._cost_likelihood().values_and_gradients(points)

