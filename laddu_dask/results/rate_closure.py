"""Rate closure of an extended fit (laddu's ``RateClosure``): does the accepted fitted
yield ``A = sum_accmc w I`` reproduce the observed yield ``D = sum_data w``?

After an unconstrained, converged extended fit ``A`` equals ``D`` (the extended likelihood's
stationarity in the overall scale); constraints, penalties or a point away from the
optimum leave a residual ``A - D``.  The closure is ``"closed"`` when
``|A - D| <= atol + rtol |D|`` (both ``1e-9``, laddu's), ``"failed"`` otherwise, and
``"not_applicable"`` for a shape-only term.  It reports and never rescales.

Examples
--------
>>> from laddu_dask.results.estimate import Estimate
>>> rc = RateClosure(Estimate(3.0), Estimate(3.0), Estimate(4.5))
>>> rc.status, rc.is_closed(), rc.accepted_residual
('closed', True, 0.0)
>>> rc = RateClosure(Estimate(3.0), Estimate(1.0), Estimate(1.5))
>>> rc.status, rc.accepted_residual, round(rc.accepted_relative_residual, 6)
('failed', -2.0, 0.666667)
"""

from __future__ import annotations

from laddu_dask.results.estimate import Estimate

#: laddu's closure tolerances.
ABSOLUTE_TOLERANCE = 1e-9
RELATIVE_TOLERANCE = 1e-9


class RateClosure:
    """The comparison of the accepted fitted yield with the observed yield (see the module
    docstring); build it with :meth:`Yield.rate_closure` or :attr:`CrossSection.rate_closure`.

    Parameters
    ----------
    selected : Estimate
        The observed yield ``D``.
    accepted, generated : Estimate or None
        The accepted and generated fitted yields (``None`` for a shape-only term).
    """

    def __init__(self, selected: Estimate, accepted: Estimate | None, generated: Estimate | None) -> None:
        self._selected, self._accepted, self._generated = selected, accepted, generated

    @property
    def selected_yield(self) -> Estimate:
        """``D``."""
        return self._selected

    @property
    def accepted_fitted_yield(self) -> Estimate | None:
        """``A`` (``None`` for a shape-only term)."""
        return self._accepted

    @property
    def generated_fitted_yield(self) -> Estimate | None:
        """``sum_genmc w I`` (``None`` for a shape-only term)."""
        return self._generated

    @property
    def accepted_residual(self) -> float | None:
        """``A - D``."""
        return None if self._accepted is None else self._accepted.central - self._selected.central

    @property
    def accepted_absolute_residual(self) -> float | None:
        """``|A - D|``."""
        r = self.accepted_residual
        return None if r is None else abs(r)

    @property
    def accepted_relative_residual(self) -> float | None:
        """``|A - D| / |D|`` (``None`` when ``D`` is zero)."""
        r = self.accepted_residual
        return None if r is None or self._selected.central == 0 else abs(r) / abs(self._selected.central)

    @property
    def accepted_residual_draws(self) -> list[float]:
        """``A - D`` at each ensemble draw."""
        if self._accepted is None or self._accepted.draws is None:
            return []
        d = self._selected.draws
        selected = d if d is not None and len(d) == len(self._accepted.draws) else self._selected.central
        return (self._accepted.draws - selected).tolist()

    @property
    def absolute_tolerance(self) -> float:
        """The absolute tolerance of the comparison."""
        return ABSOLUTE_TOLERANCE

    @property
    def relative_tolerance(self) -> float:
        """The relative tolerance of the comparison (times ``|D|``)."""
        return RELATIVE_TOLERANCE

    @property
    def status(self) -> str:
        """``"closed"``, ``"failed"`` or ``"not_applicable"``."""
        r = self.accepted_residual
        if r is None:
            return "not_applicable"
        return "closed" if abs(r) <= ABSOLUTE_TOLERANCE + RELATIVE_TOLERANCE * abs(self._selected.central) \
            else "failed"

    @property
    def reason(self) -> str | None:
        """Why the closure is not closed (``None`` when it is)."""
        return {"closed": None, "failed": "closure residual exceeds the configured tolerance",
                "not_applicable": "likelihood term does not determine an absolute rate"}[self.status]

    def is_closed(self) -> bool:
        """Whether the central values close."""
        return self.status == "closed"

    def __repr__(self) -> str:
        return f"RateClosure({self.status}, residual {self.accepted_residual!r})"
