"""Generation settings of a reaction :class:`~laddu_dask.Channel`, in laddu 0.28.1's names.

laddu attaches phase-space proposals to a channel's edges and vertices:
``Edge(initial_momentum=InitialMomentum...)`` for a beam or target,
``Edge(mass_proposal=MassProposal(...))`` for an intermediate state, and
``Vertex(generation=VertexProposal...)`` for how a vertex is sampled.  These classes hold
and check those settings with laddu's rules (finite limits, ``low < high``, a mixing fraction
in ``[0, 1]``, three-vector directions that are not zero), so a channel written for laddu's
generator builds unchanged.  :class:`laddu_dask.Generator` (in ``laddu_dask.results``) reads
them to draw events.  :class:`ScalarSource` is laddu's generated scalar column
(``Generator(channel, scalars=...)``).

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

import json as _json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr import channel_json as cj


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

    def to_json(self) -> str:
        """laddu's JSON text (see :mod:`laddu_dask.expr.channel_json`)."""
        return cj.dumps(cj.mass_proposal_dict(self))

    @staticmethod
    def from_json(json: str) -> MassProposal:
        """A proposal from laddu's (or :meth:`to_json`'s) JSON text."""
        return cj.read(json, "MassProposal", mass_proposal_from)

    def __repr__(self) -> str:
        return f"MassProposal({self.value!r})" if self.high is None else \
            f"MassProposal({self.value!r}, high={self.high!r})"


@dataclass(frozen=True)
class InitialMomentum:
    """An initial-state momentum prescription (laddu's ``InitialMomentum``).

    Build one with the static constructors: :meth:`p4`, :meth:`momentum`, :meth:`energy`,
    :meth:`uniform_energy` or :meth:`histogram_energy`.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.InitialMomentum.momentum([0.0, 0.0, 0.0]).values
    (0.0, 0.0, 0.0)
    """

    kind: str
    values: tuple[float, ...] = ()
    direction: tuple[float, float, float] | None = None
    weights: tuple[float, ...] = ()

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

    @staticmethod
    def histogram_energy(histogram: object, *, direction: Sequence[float]) -> InitialMomentum:
        """An energy drawn from a :class:`~laddu_dask.Histogram`'s piecewise-constant density
        (a bin with probability ``count / total``, uniformly within it) along ``direction``.

        Raises
        ------
        ModelError
            If the histogram has no valid sampling support (negative counts, zero total,
            edges that do not increase).
        """
        edges, counts = _histogram_bins(histogram, "an energy histogram")
        return InitialMomentum("histogram_energy", edges, _direction(direction), counts)

    def to_json(self) -> str:
        """laddu's JSON text (see :mod:`laddu_dask.expr.channel_json`)."""
        return cj.dumps(cj.initial_momentum_dict(self))

    @staticmethod
    def from_json(json: str) -> InitialMomentum:
        """A prescription from laddu's (or :meth:`to_json`'s) JSON text."""
        return cj.read(json, "InitialMomentum", initial_momentum_from)


@dataclass(frozen=True, repr=False)
class VertexProposal:
    """How a vertex is sampled in generation (laddu's ``VertexProposal``).

    Build one with :meth:`isotropic` (a two-body decay), :meth:`t_exchange` (a two-body
    scattering with a uniform, exponential or mixed momentum-transfer distribution),
    :meth:`t_exchange_histogram` (``t`` drawn from a histogram) or :meth:`t_exchange_pole`
    (``t`` drawn from ``(exchange_mass^2 - t)^-power``).

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
    exchange_mass: float | None = None
    power: float | None = None
    histogram: object = field(default=None, hash=False)  # laddu's JSON object of the histogram

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
        _edge_names(incoming, outgoing)
        fraction = _finite(uniform_fraction, "uniform_fraction")
        if not 0.0 <= fraction <= 1.0:
            raise ModelError(f"uniform_fraction must be between 0 and 1, got {uniform_fraction!r}")
        rate = None if slope is None else _finite(slope, "a t-exchange slope")
        low = None if t_min is None else _finite(t_min, "t_min")
        high = None if t_max is None else _finite(t_max, "t_max")
        if low is not None and high is not None and not low < high:
            raise ModelError(f"a t-exchange proposal requires t_min < t_max, got {t_min!r} and {t_max!r}")
        return VertexProposal("t_exchange", incoming, outgoing, rate, fraction, low, high)

    @staticmethod
    def t_exchange_histogram(*, incoming: str, outgoing: str, histogram: object) -> VertexProposal:
        """A two-body scattering whose ``t`` is drawn from ``histogram``'s piecewise-constant
        density (its bins over ``t``).

        Raises
        ------
        ModelError
            For a histogram without valid sampling support, or an edge name that is not one.
        """
        _edge_names(incoming, outgoing)
        _histogram_bins(histogram, "a t histogram")
        return VertexProposal("t_exchange_histogram", incoming, outgoing,
                              histogram=cj.histogram_dict(histogram))

    @staticmethod
    def t_exchange_pole(*, incoming: str, outgoing: str, exchange_mass: float,
                        power: float) -> VertexProposal:
        """A two-body scattering whose ``t`` is drawn from ``(exchange_mass^2 - t)^-power``
        (a t-channel exchange pole).

        Raises
        ------
        ModelError
            For a non-finite exchange mass or power, or an edge name that is not one.
        """
        _edge_names(incoming, outgoing)
        mass, exponent = _finite(exchange_mass, "exchange_mass"), _finite(power, "power")
        return VertexProposal("t_exchange_pole", incoming, outgoing, exchange_mass=mass, power=exponent)

    def to_json(self) -> str:
        """laddu's JSON text (see :mod:`laddu_dask.expr.channel_json`)."""
        return cj.dumps(cj.vertex_proposal_dict(self))

    @staticmethod
    def from_json(json: str) -> VertexProposal:
        """A proposal from laddu's (or :meth:`to_json`'s) JSON text."""
        return cj.read(json, "VertexProposal", vertex_proposal_from)

    def __repr__(self) -> str:
        if self.kind == "isotropic":
            return "VertexProposal.isotropic()"
        fields = [f"incoming={self.incoming!r}", f"outgoing={self.outgoing!r}"]
        if self.kind == "t_exchange_histogram":
            return f"VertexProposal.t_exchange_histogram({', '.join(fields)}, histogram=...)"
        names = ("exchange_mass", "power") if self.kind == "t_exchange_pole" else \
            ("slope", "uniform_fraction", "t_min", "t_max")
        fields += [f"{k}={getattr(self, k)!r}" for k in names if getattr(self, k) not in (None, 0.0)]
        return f"VertexProposal.{self.kind}({', '.join(fields)})"


def _edge_names(incoming: object, outgoing: object) -> None:
    for name, what in ((incoming, "incoming"), (outgoing, "outgoing")):
        if not isinstance(name, str) or not name:
            raise ModelError(f"a t-exchange proposal's {what} must be an edge name, got {name!r}")


def _histogram_bins(histogram: object, what: str = "a histogram scalar source"
                    ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The edges and counts of a histogram (laddu-dask's or laddu's: ``bin_edges``, ``counts``)."""
    try:
        edges, counts = list(histogram.bin_edges), list(histogram.counts)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        raise ModelError(f"{what} needs a Histogram, got {type(histogram).__name__}") from None
    edges_t = tuple(_finite(e, f"{what}'s bin edge") for e in edges)
    counts_t = tuple(_finite(c, f"{what}'s count") for c in counts)
    if len(edges_t) != len(counts_t) + 1 or not counts_t:
        raise ModelError(f"{what} needs one more edge than counts, got {len(edges_t)} "
                         f"edges and {len(counts_t)} counts")
    if any(b <= a for a, b in zip(edges_t, edges_t[1:])):
        raise ModelError(f"{what} needs increasing bin edges, got {list(edges_t)}")
    if any(c < 0.0 for c in counts_t) or not math.fsum(counts_t) > 0.0:
        raise ModelError(f"{what} needs non-negative counts with a positive total, got "
                         f"{list(counts_t)}")
    return edges_t, counts_t


@dataclass(frozen=True, repr=False)
class ScalarSource:
    """A generated scalar column: a fixed value, a uniform draw or a histogram's distribution
    (laddu's ``ScalarSource``, given to ``Generator(channel, scalars={name: source})``).

    Each event's value is drawn independently of its kinematics; the event's proposal weight
    is multiplied by the inverse of the value's density (1 for a fixed value, ``high - low``
    for a uniform one, ``total * width / count`` of the drawn bin of a histogram, which is
    piecewise constant over its regular bins; its under- and overflow are not drawn).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.ScalarSource.uniform(0.0, 2.0)
    ScalarSource.uniform(0.0, 2.0)
    >>> ld.ScalarSource.from_json('{"kind": "fixed", "value": 0.35}').values
    (0.35,)
    """

    kind: str
    values: tuple[float, ...] = ()
    counts: tuple[float, ...] = ()

    @staticmethod
    def fixed(value: float) -> ScalarSource:
        """One fixed value for every event."""
        return ScalarSource("fixed", (_finite(value, "a fixed scalar source's value"),))

    @staticmethod
    def uniform(low: float, high: float) -> ScalarSource:
        """A value drawn uniformly from ``[low, high)``."""
        a, b = _finite(low, "a uniform scalar source's low"), _finite(high, "a uniform scalar source's high")
        if not a < b:
            raise ModelError(f"a uniform scalar source requires finite low < high, got {low!r} and {high!r}")
        return ScalarSource("uniform", (a, b))

    @staticmethod
    def histogram(histogram: object) -> ScalarSource:
        """A value drawn from a :class:`~laddu_dask.Histogram`'s piecewise-constant density
        (its regular bins: a bin with probability ``count / total``, uniformly within it)."""
        edges, counts = _histogram_bins(histogram)
        return ScalarSource("histogram", edges, counts)

    def to_json(self) -> str:
        """laddu's JSON form: ``{"kind": "fixed", "value"}``, ``{"kind": "uniform", "min", "max"}``
        or ``{"kind": "histogram", "edges", "weights"}``."""
        if self.kind == "fixed":
            body: dict[str, object] = {"kind": "fixed", "value": self.values[0]}
        elif self.kind == "uniform":
            body = {"kind": "uniform", "min": self.values[0], "max": self.values[1]}
        else:
            body = {"kind": "histogram", "edges": list(self.values), "weights": list(self.counts)}
        return _json.dumps(body, separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> ScalarSource:
        """A source from :meth:`to_json`'s (or laddu's) JSON text."""
        try:
            body = _json.loads(json)
            kind = body["kind"]
            if kind == "fixed" and set(body) == {"kind", "value"}:
                return ScalarSource.fixed(body["value"])
            if kind == "uniform" and set(body) == {"kind", "min", "max"}:
                return ScalarSource.uniform(body["min"], body["max"])
            if kind == "histogram" and set(body) == {"kind", "edges", "weights"}:
                return ScalarSource.histogram(_Bins(body["edges"], body["weights"]))
        except (TypeError, ValueError, KeyError):
            pass
        raise ModelError(f"not the JSON of a ScalarSource: {json!r}")

    def __repr__(self) -> str:
        if self.kind == "histogram":
            return f"ScalarSource.histogram(edges={list(self.values)!r}, counts={list(self.counts)!r})"
        return f"ScalarSource.{self.kind}({', '.join(repr(v) for v in self.values)})"


@dataclass(frozen=True)
class _Bins:
    """Edges and counts read from JSON (what :meth:`ScalarSource.histogram` reads of a histogram)."""

    bin_edges: Sequence[float]
    counts: Sequence[float]


# -- laddu's JSON objects, read back (written by laddu_dask.expr.channel_json) -------------------
def _back_xyz(body: Any) -> list[float]:
    return [body["x"], body["y"], body["z"]]


def mass_proposal_from(body: Any) -> MassProposal:
    """The mass proposal of laddu's parsed JSON object (see :mod:`laddu_dask.expr.channel_json`)."""
    if body["kind"] == "fixed" and set(body) == {"kind", "mass"}:
        return MassProposal(body["mass"])
    if body["kind"] == "uniform" and set(body) == {"kind", "low", "high"}:
        return MassProposal(body["low"], high=body["high"])
    raise KeyError(body["kind"])


def initial_momentum_from(body: Any) -> InitialMomentum:
    """The initial momentum of laddu's parsed JSON object."""
    ((kind, inner),) = body.items()
    if kind == "P4":
        return InitialMomentum.p4([inner[k] for k in ("e", "px", "py", "pz")])
    if kind == "Momentum":
        return InitialMomentum.momentum(_back_xyz(inner))
    if kind != "EnergyDirection":
        raise KeyError(kind)
    energy, direction = inner["energy"], _back_xyz(inner["direction"])
    if energy["kind"] == "fixed":
        return InitialMomentum.energy(energy["value"], direction=direction)
    if energy["kind"] == "uniform":
        return InitialMomentum.uniform_energy(low=energy["min"], high=energy["max"], direction=direction)
    if energy["kind"] == "histogram":
        return InitialMomentum.histogram_energy(
            _Bins(energy["edges"], energy["weights"]), direction=direction
        )
    raise KeyError(energy["kind"])


def vertex_proposal_from(body: Any) -> VertexProposal:
    """The vertex proposal of laddu's parsed JSON object."""
    if body == {"kind": "two_body_decay"}:
        return VertexProposal.isotropic()
    if body["kind"] != "two_body_scattering":
        raise KeyError(body["kind"])
    inner = body["proposal"]
    edges = {"incoming": inner["incoming_edge"], "outgoing": inner["outgoing_edge"]}
    dist = inner["distribution"]
    limits = {"t_min": dist["t_min"], "t_max": dist["t_max"]}
    parts = {("Uniform" if c == "Uniform" else next(iter(c))): (w, c) for w, c in dist["components"]}
    if "Histogram" in parts and len(parts) == 1:
        return VertexProposal.t_exchange_histogram(
            **edges, histogram=cj.RecordedHistogram(parts["Histogram"][1]["Histogram"]["histogram"])
        )
    if "Pole" in parts and len(parts) == 1:
        pole = parts["Pole"][1]["Pole"]
        return VertexProposal.t_exchange_pole(
            **edges, exchange_mass=pole["exchange_mass"], power=pole["power"]
        )
    if set(parts) == {"Uniform"}:
        return VertexProposal.t_exchange(**edges, **limits)
    if set(parts) <= {"Uniform", "Exponential"} and "Exponential" in parts:
        fraction = parts["Uniform"][0] if "Uniform" in parts else 0.0
        return VertexProposal.t_exchange(
            **edges,
            slope=parts["Exponential"][1]["Exponential"]["slope"],
            uniform_fraction=fraction,
            **limits,
        )
    raise KeyError(", ".join(parts))
