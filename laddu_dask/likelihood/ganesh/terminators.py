"""laddu's ``ganesh`` terminators: ``MaxSteps`` and the terminators of each method, with
laddu 0.28.1's keywords and defaults and ganesh's meanings. A step is one iteration of the
method (one line search, one simplex move, one generation), not one evaluation.

After every step the run asks each terminator (:meth:`Terminator.check`) whether to stop;
the first that answers with a text stops it: a method's convergence test as a success,
``MaxSteps`` as ``"Maximum number of steps reached (n)"``, not a success. A terminator of
another method than the one running is a ``TypeError`` (as in laddu).

Examples
--------
>>> import laddu_dask as ld
>>> ld.ganesh.MaxSteps(3).steps
3
>>> round(ld.ganesh.LBFGSBGTerminator().eps_abs, 12)  # eps ** (1/3)
6.055454e-06
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.validate import choice, count, number, positive

__all__ = [
    "AdamEMATerminator",
    "CMAESConditionCovTerminator",
    "CMAESEqualFunValuesTerminator",
    "CMAESNoEffectAxisTerminator",
    "CMAESNoEffectCoordTerminator",
    "CMAESSigmaTerminator",
    "CMAESStagnationTerminator",
    "CMAESTolFunTerminator",
    "CMAESTolXTerminator",
    "CMAESTolXUpTerminator",
    "ConjugateGradientGTerminator",
    "LBFGSBFTerminator",
    "LBFGSBGTerminator",
    "LBFGSBInfNormGTerminator",
    "MaxSteps",
    "NelderMeadFTerminator",
    "NelderMeadXTerminator",
    "SimulatedAnnealingTerminator",
    "Terminator",
    "TrustRegionGTerminator",
]

EPS = float(np.finfo(float).eps)
#: MaxSteps' value among a method's default terminators (ganesh's default).
DEFAULT_MAX_STEPS = 4000


class Terminator:
    """A stopping rule: ``method`` is the config class name it belongs to (``None``: any)."""

    method: str | None = None
    _fields: tuple[str, ...] = ()
    #: Whether stopping by this rule is a success (a convergence test) or not (a limit).
    succeeds = True

    def check(self, state: SimpleNamespace) -> str | None:
        """The status text when the run should stop after this step (``""``: stop without
        a text), else ``None``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._fields)})"


class MaxSteps(Terminator):
    """Stop after ``steps`` steps (iterations of the method, not evaluations).

    Examples
    --------
    >>> MaxSteps(0)
    Traceback (most recent call last):
    ...
    laddu_dask.errors.GaneshConfigError: steps must be an integer >= 1, got 0
    """

    _fields = ("steps",)
    succeeds = False

    def __init__(self, steps: int) -> None:
        self.steps = count("steps", steps, 1)

    def check(self, state: SimpleNamespace) -> str | None:
        return f"Maximum number of steps reached ({self.steps})" if state.step + 1 >= self.steps else None


class _GradientNorm(Terminator):
    """Stop when the Euclidean norm of the gradient is below ``eps_abs``."""

    _fields = ("eps_abs",)
    text = "GRADIENT CONVERGED"

    def __init__(self, *, eps_abs: float = EPS ** (1 / 3)) -> None:
        self.eps_abs = positive("eps_abs", eps_abs)

    def check(self, state: SimpleNamespace) -> str | None:
        return self.text if float(np.linalg.norm(state.gradient)) < self.eps_abs else None


class LBFGSBGTerminator(_GradientNorm):
    """L-BFGS-B: ``||g|| < eps_abs`` (default ``eps^(1/3)``)."""

    method = "LBFGSBConfig"


class ConjugateGradientGTerminator(_GradientNorm):
    """Conjugate gradient: ``||g|| < eps_abs`` (default ``eps^(1/3)``)."""

    method = "ConjugateGradientConfig"


class TrustRegionGTerminator(_GradientNorm):
    """Trust region: ``||g|| < eps_abs`` (default ``eps^(1/3)``)."""

    method = "TrustRegionConfig"


class LBFGSBInfNormGTerminator(Terminator):
    """L-BFGS-B: the largest component of the projected gradient ``x - clip(x - g)`` is
    below ``eps_abs`` (default ``eps^(1/3)``); a component pushing out of an active bound
    counts zero."""

    method, _fields = "LBFGSBConfig", ("eps_abs",)

    def __init__(self, *, eps_abs: float = EPS ** (1 / 3)) -> None:
        self.eps_abs = positive("eps_abs", eps_abs)

    def check(self, state: SimpleNamespace) -> str | None:
        lo, hi = state.bounds  # arrays, infinite where open: projected_gradient's ends
        projected = state.y - np.clip(state.y - state.gradient, lo, hi)
        return (
            "PROJECTED GRADIENT WITHIN TOLERANCE" if float(np.max(np.abs(projected))) < self.eps_abs else None
        )


class LBFGSBFTerminator(Terminator):
    """L-BFGS-B: ``|f_previous - f| < eps_abs`` between steps (default ``sqrt(eps)``)."""

    method, _fields = "LBFGSBConfig", ("eps_abs",)

    def __init__(self, *, eps_abs: float = EPS**0.5) -> None:
        self.eps_abs = positive("eps_abs", eps_abs)

    def check(self, state: SimpleNamespace) -> str | None:
        return "F_EVAL CONVERGED" if abs(state.f_previous - state.fx) < self.eps_abs else None


class NelderMeadFTerminator(Terminator):
    """Nelder-Mead on the simplex's values ``f_best .. f_worst``: ``kind="stddev"``
    (their population standard deviation), ``"absolute"`` (``f_worst - f_best``) or
    ``"amoeba"`` (``2 (f_worst - f_best) / (|f_worst| + |f_best|)``) at most ``tolerance``
    (default ``eps^(1/4)``)."""

    method, _fields = "NelderMeadConfig", ("kind", "tolerance")

    def __init__(self, *, kind: str = "stddev", tolerance: float = EPS**0.25) -> None:
        self.kind = choice("kind", kind, ("amoeba", "absolute", "stddev"))
        self.tolerance = positive("tolerance", tolerance)

    def check(self, state: SimpleNamespace) -> str | None:
        f = state.simplex_f
        spread = {
            "stddev": lambda: float(np.std(f)),
            "absolute": lambda: float(f[-1] - f[0]),
            "amoeba": lambda: float(2 * (f[-1] - f[0]) / (abs(f[-1]) + abs(f[0]))),
        }[self.kind]()
        return f"term_f = {self.kind.upper()}" if spread <= self.tolerance else None


class NelderMeadXTerminator(Terminator):
    """Nelder-Mead on the simplex's points: ``kind="singer"`` (its volume relative to the
    initial one ``<= tolerance^n``), ``"diameter"`` (largest max-norm distance from the best
    point), ``"higham"`` (largest 1-norm distance over ``max(1, |best|_1)``) or ``"rowan"``
    (``|worst - best|`` relative to the initial simplex's), at most ``tolerance`` (default
    ``eps^(1/4)``)."""

    method, _fields = "NelderMeadConfig", ("kind", "tolerance")

    def __init__(self, *, kind: str = "singer", tolerance: float = EPS**0.25) -> None:
        self.kind = choice("kind", kind, ("diameter", "higham", "rowan", "singer"))
        self.tolerance = positive("tolerance", tolerance)

    def check(self, state: SimpleNamespace) -> str | None:
        s, tol = state.simplex_x, self.tolerance
        d = s[1:] - s[0]
        ok = {
            "diameter": lambda: np.max(np.abs(d)) <= tol,
            "higham": lambda: np.max(np.abs(d).sum(axis=1)) / max(1.0, float(np.abs(s[0]).sum())) <= tol,
            "rowan": lambda: np.linalg.norm(s[-1] - s[0]) <= tol * state.initial_spread,
            "singer": lambda: state.relative_volume <= tol ** s.shape[1],
        }[self.kind]()
        return f"term_x = {self.kind.upper()}" if ok else None


class SimulatedAnnealingTerminator(Terminator):
    """Simulated annealing: stop once the temperature is below ``min_temperature``. As in
    laddu, this ends the walk without a status text and not as a success (the status reads
    ``"Step"``): a cooled walk is no convergence test."""

    method, _fields = "SimulatedAnnealingConfig", ("min_temperature",)
    succeeds = False

    def __init__(self, *, min_temperature: float = 1e-3) -> None:
        self.min_temperature = positive("min_temperature", min_temperature)

    def check(self, state: SimpleNamespace) -> str | None:
        return "" if state.temperature < self.min_temperature else None


class AdamEMATerminator(Terminator):
    """Adam: an exponential moving average of the loss, ``ema = beta_c ema + (1 - beta_c) f``
    from zero; stop once it changed by less than ``eps_loss`` (default ``sqrt(eps)``) in
    ``patience`` consecutive steps."""

    method, _fields = "AdamConfig", ("beta_c", "eps_loss", "patience")

    def __init__(self, *, beta_c: float = 0.9, eps_loss: float = EPS**0.5, patience: int = 1) -> None:
        beta = number("beta_c", beta_c)
        if not 0 <= beta < 1:
            raise GaneshConfigError(f"beta_c must be in [0, 1), got {beta_c!r}")
        self.beta_c, self.eps_loss, self.patience = (
            beta,
            positive("eps_loss", eps_loss),
            count("patience", patience, 1),
        )

    def check(self, state: SimpleNamespace) -> str | None:
        ema, counter = state.memory.get(id(self), (0.0, 0))
        new = self.beta_c * ema + (1 - self.beta_c) * state.fx
        counter = counter + 1 if abs(new - ema) < self.eps_loss else 0
        state.memory[id(self)] = (new, counter)
        return f"EMA LOSS HAS NOT IMPROVED IN {counter} STEPS" if counter >= self.patience else None


class _CMAES(Terminator):
    """A CMA-ES stopping rule run by ``cma`` itself: ``option`` is its ``cma`` option, set
    to ``value``; ``key`` the entry of ``CMAEvolutionStrategy.stop()`` that reports it."""

    method = "CMAESConfig"
    option: str | None = None
    key = ""
    text = ""

    def option_value(self, dimension: int, population: int) -> Any:
        return getattr(self, "value", None)

    def check(self, state: SimpleNamespace) -> str | None:
        return self.text if self.key in state.cma_stop else None


def _valued(name: str, option: str, key: str, text: str, default: float, doc: str) -> type:
    def __init__(self, *, value: float = default) -> None:
        self.value = positive("value", value) if default else number("value", value)
        if self.value < 0:
            raise GaneshConfigError(f"value must be a finite number >= 0, got {value!r}")

    return type(
        name,
        (_CMAES,),
        {
            "__init__": __init__,
            "option": option,
            "key": key,
            "text": text,
            "_fields": ("value",),
            "__doc__": doc,
            "__module__": __name__,
        },
    )


CMAESTolFunTerminator = _valued(
    "CMAESTolFunTerminator",
    "tolfun",
    "tolfun",
    "TOLFUN",
    1e-12,
    "CMA-ES: recent function values all within ``value`` (``cma``'s ``tolfun``).",
)
CMAESTolXTerminator = _valued(
    "CMAESTolXTerminator",
    "tolx",
    "tolx",
    "TOLX",
    0.0,
    "CMA-ES: every coordinate's step below ``value`` (``cma``'s ``tolx``; 0: off).",
)
CMAESTolXUpTerminator = _valued(
    "CMAESTolXUpTerminator",
    "tolfacupx",
    "tolfacupx",
    "TOLXUP",
    1e4,
    "CMA-ES: the step size grew by more than ``value`` (``cma``'s ``tolfacupx``).",
)
CMAESConditionCovTerminator = _valued(
    "CMAESConditionCovTerminator",
    "tolconditioncov",
    "tolconditioncov",
    "CONDITION COVARIANCE",
    1e14,
    "CMA-ES: the covariance's condition number exceeds ``value``.",
)


class CMAESSigmaTerminator(_CMAES):
    """CMA-ES: the global step size ``sigma`` fell below ``value`` (default ``1e-10``)."""

    _fields, text = ("value",), "SIGMA"

    def __init__(self, *, value: float = 1e-10) -> None:
        self.value = positive("value", value)

    def check(self, state: SimpleNamespace) -> str | None:
        return self.text if state.sigma < self.value else None


def _flag(name: str, option: str | None, key: str, text: str, doc: str) -> type:
    return type(
        name,
        (_CMAES,),
        {
            "option": option,
            "key": key,
            "text": text,
            "__doc__": doc,
            "__module__": __name__,
            "option_value": lambda self, n, lam: _FLAG_VALUES[key](n, lam),
        },
    )


_FLAG_VALUES = {
    "tolflatfitness": lambda n, lam: 1,
    "tolstagnation": lambda n, lam: int(100 + 100 * n**1.5 / lam),
    "noeffectaxis": lambda n, lam: None,
    "noeffectcoord": lambda n, lam: None,
}
CMAESEqualFunValuesTerminator = _flag(
    "CMAESEqualFunValuesTerminator",
    "tolflatfitness",
    "tolflatfitness",
    "EQUAL FUNCTION VALUES",
    "CMA-ES: a generation of equal function values.",
)
CMAESStagnationTerminator = _flag(
    "CMAESStagnationTerminator",
    "tolstagnation",
    "tolstagnation",
    "STAGNATION",
    "CMA-ES: no improvement of the median in ``100 + 100 n^1.5 / lambda`` steps.",
)
CMAESNoEffectAxisTerminator = _flag(
    "CMAESNoEffectAxisTerminator",
    None,
    "noeffectaxis",
    "NO EFFECT AXIS",
    "CMA-ES: a step of 0.1 sigma along a principal axis leaves the mean unchanged.",
)
CMAESNoEffectCoordTerminator = _flag(
    "CMAESNoEffectCoordTerminator",
    None,
    "noeffectcoord",
    "NO EFFECT COORD",
    "CMA-ES: a step of 0.2 sigma in a coordinate leaves the mean unchanged.",
)

#: Each method's terminators when ``default_callbacks=True`` (ganesh's defaults).
DEFAULTS: dict[str, tuple[type, ...]] = {
    "LBFGSBConfig": (LBFGSBFTerminator, LBFGSBGTerminator, LBFGSBInfNormGTerminator),
    "ConjugateGradientConfig": (ConjugateGradientGTerminator, lambda: MaxSteps(DEFAULT_MAX_STEPS)),
    "TrustRegionConfig": (TrustRegionGTerminator,),
    "NelderMeadConfig": (NelderMeadFTerminator, NelderMeadXTerminator),
    "CMAESConfig": (
        CMAESSigmaTerminator,
        CMAESNoEffectAxisTerminator,
        CMAESNoEffectCoordTerminator,
        CMAESConditionCovTerminator,
        CMAESEqualFunValuesTerminator,
        CMAESStagnationTerminator,
        CMAESTolXUpTerminator,
        CMAESTolFunTerminator,
        CMAESTolXTerminator,
        lambda: MaxSteps(DEFAULT_MAX_STEPS),
    ),
    "DifferentialEvolutionConfig": (lambda: MaxSteps(DEFAULT_MAX_STEPS),),
    "SimulatedAnnealingConfig": (SimulatedAnnealingTerminator,),
    "PSOConfig": (),
    "AdamConfig": (AdamEMATerminator,),
}


def default_terminators(method: str) -> list[Terminator]:
    """Fresh instances of ``method``'s default terminators."""
    return [make() for make in DEFAULTS[method]]
