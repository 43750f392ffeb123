"""Generation settings of a reaction :class:`~laddu_dask.Channel`, in laddu 0.28.1's names.

laddu attaches phase-space proposals to a channel's edges and vertices:
``Edge(initial_momentum=InitialMomentum...)`` for a beam or target,
``Edge(mass_proposal=MassProposal(...))`` for an intermediate state, and
``Vertex(generation=VertexProposal...)`` for how a vertex is sampled.  These classes hold
and check those settings with laddu's rules (finite limits, ``low < high``, a mixing fraction
in ``[0, 1]``, three-vector directions that are not zero), so a channel written for laddu's
generator builds unchanged.  :class:`laddu_dask.Generator` (in ``laddu_dask.results``) reads
them to draw events.

Examples
--------
>>> import laddu_dask as ld
>>> ld.MassProposal(0.99, high=2.0)
MassProposal(0.99, high=2.0)
>>> ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 0, 1]).kind
'uniform_energy'
>>> ld.VertexProposal.t_exchange(incoming="gamma", outgoing="X", slope=4.0, uniform_fraction=0.2)
VertexProposal.t_exchange(incoming='gamma', outgoing='X', slope=4.0, uniform_fraction=0.2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from laddu_dask.errors import ModelError


def _finite(value: object, what: str) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ModelError(f"{what} must be finite, got {value!r}")
    return number


def _components(values: Sequence[float], size: int, what: str) -> tuple[float, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence) or len(values) != size:
        raise ModelError(f"{what} must be a sequence of {size} numbers, got {values!r}")
    return tuple(_finite(v, what) for v in values)


def _direction(values: Sequence[float]) -> tuple[float, float, float]:
    direction = _components(values, 3, "a direction")
    if not any(direction):
        raise ModelError("a direction must not be the zero vector")
    return direction  # type: ignore[return-value]


@dataclass(frozen=True, repr=False)
class MassProposal:
    """A fixed or uniformly sampled mass for a channel edge (laddu's ``MassProposal``).

    Parameters
    ----------
    value : float
        The fixed mass, or the lower limit when ``high`` is given.
    high : float, optional
        The exclusive upper limit of a uniform proposal; must exceed ``value``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.MassProposal(0.13957).is_fixed, ld.MassProposal(0.5, high=1.5).high
    (True, 1.5)
    """

    value: float
    high: float | None = None

    def __init__(self, value: float, *, high: float | None = None) -> None:
        low = _finite(value, "a mass proposal's mass")
        if high is None:
            if low < 0.0:
                raise ModelError(f"a fixed mass must be non-negative, got {value!r}")
        elif not _finite(high, "a mass proposal's upper limit") > low:
            raise ModelError(f"a uniform mass proposal requires value < high, got {value!r} and {high!r}")
        object.__setattr__(self, "value", low)
        object.__setattr__(self, "high", None if high is None else float(high))

    @property
    def is_fixed(self) -> bool:
        """Whether the mass is fixed (no ``high`` limit)."""
        return self.high is None

    def __repr__(self) -> str:
        return f"MassProposal({self.value!r})" if self.high is None else \
            f"MassProposal({self.value!r}, high={self.high!r})"


@dataclass(frozen=True)
class InitialMomentum:
    """An initial-state momentum prescription (laddu's ``InitialMomentum``).

    Build one with the static constructors: :meth:`p4`, :meth:`momentum`, :meth:`energy`
    or :meth:`uniform_energy`.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.InitialMomentum.momentum([0.0, 0.0, 0.0]).values
    (0.0, 0.0, 0.0)
    """

    kind: str
    values: tuple[float, ...] = ()
    direction: tuple[float, float, float] | None = None

    @staticmethod
    def p4(values: Sequence[float]) -> InitialMomentum:
        """A fixed four-vector in laddu's ``(E, px, py, pz)`` order."""
        return InitialMomentum("p4", _components(values, 4, "a four-momentum"))

    @staticmethod
    def momentum(values: Sequence[float]) -> InitialMomentum:
        """A fixed three-momentum; the energy follows from the edge's particle mass."""
        return InitialMomentum("momentum", _components(values, 3, "a three-momentum"))

    @staticmethod
    def energy(energy: float, *, direction: Sequence[float]) -> InitialMomentum:
        """A fixed energy along ``direction`` (normalized when used)."""
        value = _finite(energy, "an initial energy")
        if value < 0.0:
            raise ModelError(f"an initial energy must be non-negative, got {energy!r}")
        return InitialMomentum("energy", (value,), _direction(direction))

    @staticmethod
    def uniform_energy(*, low: float, high: float, direction: Sequence[float]) -> InitialMomentum:
        """An energy sampled uniformly in ``[low, high)`` along ``direction``."""
        a, b = _finite(low, "a uniform energy's low limit"), _finite(high, "a uniform energy's high limit")
        if not a < b:
            raise ModelError(f"a uniform energy requires finite low < high, got {low!r} and {high!r}")
        return InitialMomentum("uniform_energy", (a, b), _direction(direction))


@dataclass(frozen=True, repr=False)
class VertexProposal:
    """How a vertex is sampled in generation (laddu's ``VertexProposal``).

    Build one with :meth:`isotropic` (a two-body decay) or :meth:`t_exchange` (a two-body
    scattering with a uniform, exponential or mixed momentum-transfer distribution).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.VertexProposal.isotropic()
    VertexProposal.isotropic()
    """

    kind: str
    incoming: str | None = None
    outgoing: str | None = None
    slope: float | None = None
    uniform_fraction: float = 0.0
    t_min: float | None = None
    t_max: float | None = None

    @staticmethod
    def isotropic() -> VertexProposal:
        """An isotropic two-body decay."""
        return VertexProposal("isotropic")

    @staticmethod
    def t_exchange(*, incoming: str, outgoing: str, slope: float | None = None,
                   uniform_fraction: float = 0.0, t_min: float | None = None,
                   t_max: float | None = None) -> VertexProposal:
        """A two-body scattering whose momentum transfer between the edges ``incoming`` and
        ``outgoing`` is sampled from ``exp(-slope |t|)`` mixed with a uniform fraction
        (uniform only when ``slope`` is omitted), optionally limited to ``[t_min, t_max]``."""
        for name, what in ((incoming, "incoming"), (outgoing, "outgoing")):
            if not isinstance(name, str) or not name:
                raise ModelError(f"a t-exchange proposal's {what} must be an edge name, got {name!r}")
        fraction = _finite(uniform_fraction, "uniform_fraction")
        if not 0.0 <= fraction <= 1.0:
            raise ModelError(f"uniform_fraction must be between 0 and 1, got {uniform_fraction!r}")
        rate = None if slope is None else _finite(slope, "a t-exchange slope")
        low = None if t_min is None else _finite(t_min, "t_min")
        high = None if t_max is None else _finite(t_max, "t_max")
        if low is not None and high is not None and not low < high:
            raise ModelError(f"a t-exchange proposal requires t_min < t_max, got {t_min!r} and {t_max!r}")
        return VertexProposal("t_exchange", incoming, outgoing, rate, fraction, low, high)

    def __repr__(self) -> str:
        if self.kind == "isotropic":
            return "VertexProposal.isotropic()"
        fields = [f"incoming={self.incoming!r}", f"outgoing={self.outgoing!r}"]
        fields += [f"{k}={getattr(self, k)!r}" for k in ("slope", "uniform_fraction", "t_min", "t_max")
                   if getattr(self, k) not in (None, 0.0)]
        return f"VertexProposal.t_exchange({', '.join(fields)})"
