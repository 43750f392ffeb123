"""laddu's ``ganesh`` line searches: ``MoreThuenteLineSearch`` and
``HagerZhangLineSearch``, accepted by ``LBFGSBConfig`` and ``ConjugateGradientConfig``.

Examples
--------
>>> import laddu_dask as ld
>>> ld.ganesh.MoreThuenteLineSearch(c1=0.5, c2=0.4)
Traceback (most recent call last):
...
laddu_dask.errors.GaneshConfigError: MoreThuenteLineSearch needs 0 < c1 < c2 < 1, got c1=0.5, c2=0.4
"""

from __future__ import annotations

from typing import Any

from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.validate import Settings, count, number, positive, within

__all__ = ["HagerZhangLineSearch", "MoreThuenteLineSearch", "line_search"]


class MoreThuenteLineSearch(Settings):
    """Moré–Thuente strong-Wolfe line-search settings (``0 < c1 < c2 < 1``).

    What SciPy runs instead: the conjugate-gradient loop uses SciPy's public strong-Wolfe
    search ``scipy.optimize.line_search`` (Nocedal & Wright's bracketing and zoom, the same
    Wolfe conditions) with ``c1``, ``c2`` and ``max_iterations``; ``max_zoom`` is recorded.
    L-BFGS-B always uses the line search inside SciPy's L-BFGS-B (MINPACK's ``dcsrch``, a
    Moré–Thuente search with its own constants), so there the settings are recorded only.

    Examples
    --------
    >>> MoreThuenteLineSearch(c1=1e-4, c2=0.4).c2
    0.4
    """

    _fields = ("c1", "c2", "max_iterations", "max_zoom")

    def __init__(
        self, *, c1: float = 1e-4, c2: float = 0.9, max_iterations: int = 20, max_zoom: int = 20
    ) -> None:
        self.c1, self.c2 = number("c1", c1), number("c2", c2)
        if not 0 < self.c1 < self.c2 < 1:
            raise GaneshConfigError(f"MoreThuenteLineSearch needs 0 < c1 < c2 < 1, got c1={c1!r}, c2={c2!r}")
        self.max_iterations = count("max_iterations", max_iterations, 1)
        self.max_zoom = count("max_zoom", max_zoom, 1)


class HagerZhangLineSearch(Settings):
    """Hager–Zhang strong-Wolfe line-search settings (``0 < delta < sigma < 1``).

    What SciPy runs instead: SciPy has no Hager–Zhang search, so the conjugate-gradient loop
    uses SciPy's strong-Wolfe ``scipy.optimize.line_search`` with ``c1 = delta``,
    ``c2 = sigma`` and ``max_iterations``; ``epsilon``, ``theta``, ``gamma`` and
    ``max_bisects`` are accepted and recorded. L-BFGS-B records the settings only (SciPy's
    L-BFGS-B has its own line search).

    Examples
    --------
    >>> HagerZhangLineSearch().sigma
    0.9
    """

    _fields = ("delta", "sigma", "epsilon", "theta", "gamma", "max_iterations", "max_bisects")

    def __init__(
        self,
        *,
        delta: float = 0.1,
        sigma: float = 0.9,
        epsilon: float = 1e-6,
        theta: float = 0.5,
        gamma: float = 0.66,
        max_iterations: int = 100,
        max_bisects: int = 50,
    ) -> None:
        self.delta, self.sigma = number("delta", delta), number("sigma", sigma)
        if not 0 < self.delta < self.sigma < 1:
            raise GaneshConfigError(
                f"HagerZhangLineSearch needs 0 < delta < sigma < 1, got delta={delta!r}, sigma={sigma!r}"
            )
        self.epsilon = positive("epsilon", epsilon)
        self.theta = within("theta", theta, 0.0, 1.0)
        self.gamma = within("gamma", gamma, 0.0, 1.0)
        self.max_iterations = count("max_iterations", max_iterations, 1)
        self.max_bisects = count("max_bisects", max_bisects, 1)


def line_search(value: Any) -> MoreThuenteLineSearch | HagerZhangLineSearch | None:
    if value is None or isinstance(value, MoreThuenteLineSearch | HagerZhangLineSearch):
        return value
    raise GaneshConfigError(
        "line_search must be a MoreThuenteLineSearch, a HagerZhangLineSearch or None, "
        f"got {type(value).__name__}"
    )
