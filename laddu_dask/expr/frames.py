"""Vertex rest frames of a reaction channel: angles and Mandelstam invariants.

A :class:`VertexFrame` (from :meth:`Channel.vertex`) sees every edge of the channel in the
centre-of-momentum frame of one vertex, reached as laddu reaches it: from the laboratory to
the overall centre-of-momentum frame of the initial state, then through the rest frame of
each edge on the path of decays down to the vertex.  Angles are taken about axes the user
gives, so the frame convention is explicit:

- ``z_axis`` is the polar axis (normalised); ``costheta = p . z / |p|``;
- the y axis is ``y_hint`` with its component along z removed, normalised; x = y cross z;
  ``phi = atan2(p . y, p . x)``.

The helicity frame of a decay ``X -> a b`` in ``gamma p -> X p`` takes ``z_axis =
production.vec3("X")`` (the direction of X in the production frame, i.e. minus the recoil in
the X rest frame) and ``y_hint = beam x X``; the Gottfried-Jackson frame takes ``z_axis =
decay.vec3("gamma")`` (the beam in the X rest frame) with the same normal.

Examples
--------
>>> import laddu_dask as ld
>>> channel = ld.Channel(
...     "gamma p -> eta p, eta -> gamma gamma",
...     edges=[ld.Edge("beam", p4="beam"), ld.Edge("target", p4="target"), ld.Edge("eta"),
...            ld.Edge("recoil", p4="recoil"), ld.Edge("g1", p4="photon1"), ld.Edge("g2", p4="photon2")],
...     vertices=[ld.Vertex("production", incoming=["beam", "target"], outgoing=["eta", "recoil"]),
...               ld.Vertex("decay", incoming=["eta"], outgoing=["g1", "g2"])],
... )
>>> production, decay = channel.vertex("production"), channel.vertex("decay")
>>> normal = production.vec3("beam").cross(production.vec3("eta"))
>>> cos_hel = decay.costheta("g1", z_axis=production.vec3("eta"), y_hint=normal)
>>> phi_gj = decay.phi("g1", z_axis=decay.vec3("beam"), y_hint=normal)
>>> cos_hel.kind, phi_gj.kind, production.t().kind
('real', 'real', 'real')
"""

from __future__ import annotations

import enum
from typing import Protocol

from laddu_dask.errors import ModelError
from laddu_dask.expr.functions import acos, atan2
from laddu_dask.expr.node import Expr
from laddu_dask.expr.vectors import Vec3, Vec4


class Channel(Protocol):
    """A :class:`~laddu_dask.Channel` as a :class:`VertexFrame` reads it (the class builds on this
    module, so the frame names it by what it reads): its name, vertices and edge momenta."""

    name: str
    _vertices: dict

    def edge_p4(self, name: str) -> object: ...

    def _p4(self, edge: str) -> Vec4: ...

    def _p4_in_frame(self, vertex: str, edge: str) -> Vec4: ...


class MandelstamChannel(enum.Enum):
    """One of the Mandelstam ``s``, ``t``, ``u`` channels (laddu's ``MandelstamChannel``).

    ``MandelstamChannel("T")`` parses a name, in either case.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.MandelstamChannel("t") is ld.MandelstamChannel.T
    True
    """

    S = "s"
    T = "t"
    U = "u"

    @classmethod
    def _missing_(cls, value: object) -> MandelstamChannel:
        if isinstance(value, str) and value.lower() in ("s", "t", "u"):
            return cls(value.lower())
        raise ModelError(f"{value!r} is not a Mandelstam channel: use 's', 't' or 'u'")

    def __repr__(self) -> str:
        return f"MandelstamChannel.{self.name}"

    __str__ = __repr__

    def to_json(self) -> str:
        """laddu's JSON text: ``"S"``, ``"T"`` or ``"U"``."""
        return f'"{self.name}"'

    @staticmethod
    def from_json(json: str) -> MandelstamChannel:
        """The channel of laddu's JSON text (``'"T"'``)."""
        from laddu_dask.expr.channel_json import read

        def reader(body: object) -> MandelstamChannel:
            if body not in ("S", "T", "U"):
                raise ValueError(body)
            return MandelstamChannel[body]  # type: ignore[index]

        return read(json, "MandelstamChannel", reader)


def _axis(value: object, what: str) -> Vec3:
    if not isinstance(value, Vec3):
        raise ModelError(f"{what} must be a Vec3, got {type(value).__name__}")
    return value


class VertexFrame:
    """Kinematics in the centre-of-momentum frame of one vertex (laddu's ``VertexFrame``).

    Obtain one from :meth:`Channel.vertex`.  Every method returns event-only expressions.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> channel = ld.Channel("a b -> c d", edges=[ld.Edge(n, p4=n) for n in "abcd"],
    ...                      vertices=[ld.Vertex("v", incoming=["a", "b"], outgoing=["c", "d"])])
    >>> frame = channel.vertex("v")
    >>> frame.name, frame.theta("c", z_axis=frame.vec3("a"), y_hint=ld.Vec3.y_axis()).kind
    ('v', 'real')
    """

    __slots__ = ("_channel", "_name")

    def __init__(self, channel: Channel, name: str) -> None:
        self._channel, self._name = channel, name

    @property
    def name(self) -> str:
        """The name of the vertex."""
        return self._name

    def __repr__(self) -> str:
        return f'VertexFrame("{self._name}")'

    def p4(self, edge: str) -> Vec4:
        """The four-momentum of ``edge`` in this frame."""
        return self._channel._p4_in_frame(self._name, edge)

    def vec3(self, edge: str) -> Vec3:
        """The three-momentum of ``edge`` in this frame."""
        return self.p4(edge).momentum()

    def costheta(self, edge: str, *, z_axis: Vec3, y_hint: Vec3) -> Expr:
        """The cosine of the polar angle of ``edge`` about ``z_axis``."""
        _axis(y_hint, "y_hint")
        p = self.vec3(edge)
        return p.dot(_axis(z_axis, "z_axis").unit()) / p.mag()

    def theta(self, edge: str, *, z_axis: Vec3, y_hint: Vec3) -> Expr:
        """The polar angle of ``edge`` about ``z_axis`` (``acos`` of :meth:`costheta`)."""
        return acos(self.costheta(edge, z_axis=z_axis, y_hint=y_hint))

    def phi(self, edge: str, *, z_axis: Vec3, y_hint: Vec3) -> Expr:
        """The azimuth of ``edge``: y is ``y_hint`` made orthogonal to ``z_axis``, x = y x z."""
        p = self.vec3(edge)
        z = _axis(z_axis, "z_axis").unit()
        hint = _axis(y_hint, "y_hint")
        y = (hint - z * hint.dot(z)).unit()
        x = y.cross(z)
        return atan2(p.dot(y), p.dot(x))

    def mandelstam(self, channel: MandelstamChannel | str) -> Expr:
        """The Mandelstam invariant ``channel`` (``S``, ``T`` or ``U``) of this 2 -> 2 vertex.

        Of the two equivalent forms (``t = (a - c)^2 = (b - d)^2``) the one built from more
        explicitly given momenta is taken, the first on a tie, as laddu does.
        """
        which = MandelstamChannel(channel)
        vertex = self._channel._vertices[self._name]
        if len(vertex.incoming) != 2 or len(vertex.outgoing) != 2:
            raise ModelError(f"channel {self._channel.name!r}: vertex {self._name!r} is not 2-to-2, "
                             f"so it has no Mandelstam {which.value}")
        (a, b), (c, d) = vertex.incoming, vertex.outgoing
        pairs = {MandelstamChannel.S: ((a, b, 1.0), (c, d, 1.0)),
                 MandelstamChannel.T: ((a, c, -1.0), (b, d, -1.0)),
                 MandelstamChannel.U: ((a, d, -1.0), (b, c, -1.0))}[which]
        best: tuple[int, Expr] | None = None
        for lhs, rhs, sign in pairs:
            try:
                p, q = self._channel._p4(lhs), self._channel._p4(rhs)
            except ModelError:
                continue
            value = (p + q).m2() if sign > 0 else (p - q).m2()
            score = sum(self._channel.edge_p4(e) is not None for e in (lhs, rhs))
            if best is None or score > best[0]:
                best = (score, value)
        if best is None:
            raise ModelError(f"channel {self._channel.name!r}: could not construct Mandelstam {which.value} "
                             f"for vertex {self._name!r}")
        return best[1]

    def s(self) -> Expr:
        """The Mandelstam ``s`` of this 2 -> 2 vertex."""
        return self.mandelstam(MandelstamChannel.S)

    def t(self) -> Expr:
        """The Mandelstam ``t`` of this 2 -> 2 vertex."""
        return self.mandelstam(MandelstamChannel.T)

    def u(self) -> Expr:
        """The Mandelstam ``u`` of this 2 -> 2 vertex."""
        return self.mandelstam(MandelstamChannel.U)
