"""Fit fractions and interference terms of tagged waves.

For waves ``a, b, ...`` tagged in a term's model, on the generated Monte Carlo (the
acceptance-corrected fractions; on the accepted Monte Carlo without ``generated_mc``):

``fraction[a]``             ``sum w I_a / sum w I``, with ``I_a`` the model projected onto ``[a]``
``interference[(a, b)]``    ``(sum w I_ab - sum w I_a - sum w I_b) / sum w I``,
                            ``I_ab`` the projection onto ``[a, b]``

so the fractions and the interference terms add up to one when the waves make the whole
model.  Each is an :class:`~laddu_dask.results.Estimate` with the fit covariance propagated
through the exact gradients of the integrals and, with an ensemble, its draws.  The
``1 + W + W(W-1)/2`` integrals of W waves, their gradients and their values at every draw
come from one pass over the Monte Carlo (:mod:`laddu_dask.results.fitted_integrals`), which
keeps no prepared copy of it.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> s = ld.parameter("s", initial=1.0).tagged("S")
>>> d = (ld.parameter("d", initial=1.0) * x).tagged("D")
>>> model = ld.Model((s + d) * (s + d))
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.array([-1.0, 1.0])})
>>> lik = ld.Likelihood([ld.ExtendedNLL(model, data=data, accepted_mc=mc)])
>>> ff = lik.fit_fractions("nll", [1.0, 1.0])
>>> ff["S"].central, ff["D"].central, ff["S", "D"].central
(0.5, 0.5, 0.0)
>>> ff.integral(), ff.integral("S"), ff.integral("D", "S")
(4.0, 2.0, 4.0)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.compile.layout import ParameterValues
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ModelError
from laddu_dask.results.estimate import Estimate
from laddu_dask.results.fitted_integrals import Integrals
from laddu_dask.results.integrals import Selection, check_tags, find_term


class FitFractions:
    """Fit fractions (``ff["S"]``) and interference terms (``ff["S", "D"]``) of a term's waves.

    Attributes
    ----------
    waves : list of str
        The waves, in the order given.
    sample : {"generated", "accepted"}
        The Monte Carlo the integrals run over.
    fractions : dict of str to Estimate
    interference : dict of (str, str) to Estimate
    total : float
        The whole model's integral (see :meth:`integral`).
    """

    def __init__(self, likelihood: Any, term_name: str, parameters: ParameterValues, *,
                 waves: Sequence[str] | None = None, generated_mc: Dataset | None = None,
                 ensemble: Any = None, covariance: Any = None) -> None:
        term = find_term(likelihood, term_name)
        waves = term.model.tags if waves is None else check_tags(term.model, waves, term_name)
        if not waves:
            raise ModelError(f"term {term_name!r}: its model has no tagged waves (tag them with Expr.tagged)")
        if len(set(waves)) != len(waves):
            raise ModelError(f"term {term_name!r}: a wave is named twice in {waves}")
        self.waves = list(waves)
        self.sample = "accepted" if generated_mc is None else "generated"
        pairs = list(itertools.combinations(self.waves, 2))
        selections = [Selection(likelihood, term_name, None, generated_mc)]
        selections += [Selection(likelihood, term_name, [w], generated_mc) for w in self.waves]
        selections += [Selection(likelihood, term_name, list(p), generated_mc) for p in pairs]
        ints = Integrals(likelihood, [(s, self.sample) for s in selections], parameters, covariance, ensemble)
        m = len(selections)
        self.fractions: dict[str, Estimate] = {}
        for i, wave in enumerate(self.waves, start=1):
            self.fractions[wave] = ints.estimate(*_ratio(m, [(i, 1.0)]), what=f"fit fraction of {wave!r}")
        self.interference: dict[tuple[str, str], Estimate] = {}
        for k, (a, b) in enumerate(pairs, start=1 + len(self.waves)):
            ia, ib = 1 + self.waves.index(a), 1 + self.waves.index(b)
            self.interference[(a, b)] = ints.estimate(*_ratio(m, [(k, 1.0), (ia, -1.0), (ib, -1.0)]),
                                                      what=f"interference of {a!r} and {b!r}")
        self.total = float(ints.values[0])
        subsets = [(), *((w,) for w in self.waves), *pairs]
        self._integrals = {frozenset(t): float(v) for t, v in zip(subsets, ints.values, strict=True)}

    def integral(self, *waves: str) -> float:
        """``sum w I`` over the sample at the fitted point of the waves' coherent part (of
        one wave or two; the whole model with none): a fraction's numerator or denominator.

        Raises
        ------
        KeyError
            For waves whose integral the fractions do not use.
        """
        key = frozenset(waves)
        if len(key) != len(waves) or key not in self._integrals:
            raise KeyError(f"no integral of {', '.join(map(repr, waves))}: the fit fractions have those of "
                           f"one wave or two of {', '.join(self.waves)}, and of the whole model")
        return self._integrals[key]

    def __getitem__(self, key: str | tuple[str, str]) -> Estimate:
        if isinstance(key, str):
            if key not in self.fractions:
                raise KeyError(f"no wave {key!r}; waves: {', '.join(self.waves)}")
            return self.fractions[key]
        a, b = key
        if (a, b) in self.interference:
            return self.interference[(a, b)]
        if (b, a) in self.interference:
            return self.interference[(b, a)]
        raise KeyError(f"no interference term of {a!r} and {b!r}; waves: {', '.join(self.waves)}")

    def sum(self) -> float:
        """The fractions plus the interference terms (one when the waves make the model)."""
        return float(sum(e.central for e in self.fractions.values())
                     + sum(e.central for e in self.interference.values()))

    def to_dict(self) -> dict[str, tuple[float, float | None]]:
        """``{"S": (fraction, error), "S x D": (interference, error), ...}`` (fit-covariance errors)."""
        out = {w: (e.central, e.standard_error) for w, e in self.fractions.items()}
        out.update({f"{a} x {b}": (e.central, e.standard_error) for (a, b), e in self.interference.items()})
        return out

    def __repr__(self) -> str:
        rows = [f"FitFractions ({self.sample} MC)"]
        for label, (value, err) in self.to_dict().items():
            rows.append(f"  {label:>12s}  {value: .5f}" + ("" if err is None else f" +- {err:.5f}"))
        return "\n".join(rows)


def _ratio(m: int, numerator: list[tuple[int, float]]) -> tuple[Any, Any]:
    """``f(v) = sum_i c_i v_i / v_0`` and its partial derivatives."""
    c = np.zeros(m)
    for i, ci in numerator:
        c[i] += ci

    def f(v: np.ndarray) -> float:
        return float(c @ v / v[0])

    def df(v: np.ndarray) -> np.ndarray:
        out = c / v[0]
        out[0] -= float(c @ v) / v[0] ** 2
        return out

    return f, df


def fit_fractions(likelihood: Any, term_name: str, parameters: ParameterValues, *,
                  waves: Sequence[str] | None = None, generated_mc: Dataset | None = None,
                  ensemble: Any = None, covariance: Any = None) -> FitFractions:
    """The fit fractions and interference terms of a term's tagged waves.

    Parameters
    ----------
    likelihood : Likelihood
    term_name : str
        The term whose model is tagged.
    parameters : sequence or mapping
        The fitted point (e.g. ``fit.values``).
    waves : sequence of str, optional
        The waves (default: every tag of the model).
    generated_mc : Dataset, optional
        Integrate over it (acceptance-corrected fractions); default the accepted MC.
    ensemble : FitEnsemble, MCMC summary or (K, n) array, optional
        Draws at which to evaluate the fractions as well.
    covariance : FitResult or (n, n) array, optional
        The fit covariance to propagate.

    Raises
    ------
    ModelError
        For an unknown term, a wave that is not a tag of its model, or a zero total.
    """
    return FitFractions(likelihood, term_name, parameters, waves=waves, generated_mc=generated_mc,
                        ensemble=ensemble, covariance=covariance)
