"""Reaction topology: particle lines (:class:`Edge`), vertices and the :class:`Channel` graph.

A channel is laddu's declared reaction graph: edges are particle lines, vertices are
production or decay processes with incoming and outgoing edges.  An edge's four-momentum is
an event four-vector (``p4="beam"`` reads ``beam_e, beam_px, ...``), any :class:`Vec4`
expression, or, when it is not given, inferred by momentum conservation at a vertex where
it is the one missing momentum (a parent from its daughters first, then a single child from
its parents, then any vertex).  :meth:`Channel.vertex` gives the :class:`VertexFrame` of a
vertex, whose angles and invariants are event-only expressions (computed once per event
and cached by the compiler).

Errors follow laddu: a malformed edge, vertex or duplicate name is refused at
construction, a momentum that cannot be resolved or a frame that cannot be reached when
the expression is asked for; all are :class:`~laddu_dask.errors.ModelError` (a ``ValueError``)
naming the channel and the edge or vertex.

Examples
--------
>>> import laddu_dask as ld
>>> channel = ld.Channel(
...     "gamma p -> K_S K_S p",
...     edges=[ld.Edge("gamma", p4="beam"), ld.Edge("target", p4="target"), ld.Edge("X"),
...            ld.Edge("recoil", p4="recoil"), ld.Edge("ks1", p4="kshort1"), ld.Edge("ks2", p4="kshort2")],
...     vertices=[ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
...               ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])],
... )
>>> channel.mass("X").kind, channel.vertex_names
('complex', ['production', 'decay'])
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr import channel_json as cj
from laddu_dask.expr.exprjson_read import from_dict
from laddu_dask.expr.frames import VertexFrame
from laddu_dask.expr.node import Expr
from laddu_dask.expr.particles import Particle
from laddu_dask.expr.proposals import (
    InitialMomentum,
    MassProposal,
    VertexProposal,
    initial_momentum_from,
    mass_proposal_from,
    vertex_proposal_from,
)
from laddu_dask.expr.vectors import Vec3, Vec4

#: The order in which a missing momentum is inferred at a vertex (laddu's priorities).
_PARENT, _CHILD, _ANY = "parent from daughters", "child from parents", "any single missing"


def _name(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ModelError(f"{what} name must be a string, got {type(value).__name__}")
    if not value:
        raise ModelError(f"{what} name cannot be empty")
    return value


class Edge:
    """An edge (particle line) of a reaction :class:`Channel` (laddu's ``Edge``).

    Parameters
    ----------
    name : str
        Unique edge name.
    p4 : str or Vec4, optional
        The event four-vector name (columns ``p4_e, p4_px, ...``) or a four-vector expression;
        omitted, the momentum is inferred from the channel by momentum conservation.
    particle : Particle, optional
        Particle properties (mass, spin, ...).
    output : bool, default True
        Whether generated datasets include this edge.
    mass_proposal : MassProposal, optional
        The mass sampled for this edge in generation.
    initial_momentum : InitialMomentum, optional
        The momentum of an initial-state edge in generation.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Edge("beam", p4="beam", particle=ld.particles.PHOTON)
    Edge("beam", p4='beam')
    """

    __slots__ = ("_name", "_p4", "_particle", "_output", "mass_proposal", "initial_momentum")

    def __init__(
        self, name: str, *, p4: str | Vec4 | None = None, particle: Particle | None = None,
        output: bool = True, mass_proposal: Any = None, initial_momentum: Any = None,
    ) -> None:
        self._name = _name(name, "an edge")
        if p4 is not None and not isinstance(p4, (str, Vec4)):
            raise ModelError(f"edge {name!r}: p4 must be a four-vector name or a Vec4, "
                             f"got {type(p4).__name__}")
        if isinstance(p4, str):
            Vec4.event(p4)  # the same check of the name as everywhere else
        if particle is not None and not isinstance(particle, Particle):
            raise ModelError(f"edge {name!r}: particle must be a Particle, got {type(particle).__name__}")
        for value, kind, what in ((mass_proposal, MassProposal, "mass_proposal"),
                                  (initial_momentum, InitialMomentum, "initial_momentum")):
            if value is not None and not isinstance(value, kind):
                raise ModelError(f"edge {name!r}: {what} must be a {kind.__name__}, "
                                 f"got {type(value).__name__}")
        self._p4, self._particle, self._output = p4, particle, bool(output)
        self.mass_proposal, self.initial_momentum = mass_proposal, initial_momentum

    @property
    def name(self) -> str:
        """The unique edge name."""
        return self._name

    @property
    def p4(self) -> str | Vec4 | None:
        """The event four-vector name or expression given, or ``None`` (inferred)."""
        return self._p4

    @property
    def particle(self) -> Particle | None:
        """The particle properties given, or ``None``."""
        return self._particle

    @property
    def output(self) -> bool:
        """Whether generated datasets include this edge."""
        return self._output

    def _vec4(self) -> Vec4 | None:
        return Vec4.event(self._p4) if isinstance(self._p4, str) else self._p4

    def __repr__(self) -> str:
        p4 = self._p4 if not isinstance(self._p4, Vec4) else "Vec4(...)"
        return f'Edge("{self._name}", p4={p4!r})'


class Vertex:
    """A directed production or decay vertex of a :class:`Channel` (laddu's ``Vertex``).

    Parameters
    ----------
    name : str
        Unique vertex name.
    incoming, outgoing : sequence of str
        Names of the edges entering and leaving the vertex; each edge at most once.
    generation : VertexProposal, optional
        How the vertex is sampled in generation; a t-exchange names one incoming and one
        outgoing edge of this vertex.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"]).outgoing
    ['ks1', 'ks2']
    """

    __slots__ = ("_name", "_incoming", "_outgoing", "generation")

    def __init__(
        self, name: str, *, incoming: Sequence[str], outgoing: Sequence[str], generation: Any = None
    ) -> None:
        self._name = _name(name, "a vertex")
        if isinstance(incoming, str) or isinstance(outgoing, str):
            raise ModelError(f"vertex {name!r}: incoming and outgoing are sequences of edge names, "
                             "not strings")
        self._incoming = [_name(e, f"vertex {name!r}: an edge") for e in incoming]
        self._outgoing = [_name(e, f"vertex {name!r}: an edge") for e in outgoing]
        if not self._incoming or not self._outgoing:
            raise ModelError(f"vertex {name!r}: a vertex requires at least one incoming and one "
                             "outgoing edge")
        both = self._incoming + self._outgoing
        repeated = sorted({e for e in both if both.count(e) > 1})
        if repeated:
            raise ModelError(f"vertex {name!r}: an edge cannot appear more than once in a vertex "
                             f"(edge {repeated[0]!r})")
        if generation is not None:
            if not isinstance(generation, VertexProposal):
                raise ModelError(f"vertex {name!r}: generation must be a VertexProposal, "
                                 f"got {type(generation).__name__}")
            if generation.kind == "t_exchange" and (generation.incoming not in self._incoming
                                                    or generation.outgoing not in self._outgoing):
                raise ModelError(f"vertex {name!r}: its t-exchange proposal names "
                                 f"{generation.incoming!r} -> {generation.outgoing!r}, which are not "
                                 f"an incoming and an outgoing edge of the vertex")
        self.generation = generation

    @property
    def name(self) -> str:
        """The unique vertex name."""
        return self._name

    @property
    def incoming(self) -> list[str]:
        """The incoming edge names."""
        return list(self._incoming)

    @property
    def outgoing(self) -> list[str]:
        """The outgoing edge names."""
        return list(self._outgoing)

    def _edges(self) -> list[str]:
        return self._incoming + self._outgoing

    def _matches(self, edge: str, priority: str) -> bool:
        if priority == _PARENT:
            return self._incoming == [edge]
        if priority == _CHILD:
            return self._outgoing == [edge]
        return True

    def __repr__(self) -> str:
        return f'Vertex("{self._name}")'


class _Unavailable(ModelError):
    """An edge has no momentum and none can be inferred (tried quietly by the inference)."""


class Channel:
    """A validated reaction topology (laddu's ``Channel``): edges joined by vertices.

    Parameters
    ----------
    name : str
        Channel name.
    edges : sequence of Edge
        Particle lines with unique names.
    vertices : sequence of Vertex
        Vertices with unique names, referring to those edges.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> beam = ld.Edge("beam", p4="beam", particle=ld.particles.PHOTON)
    >>> target = ld.Edge("target", p4="target", particle=ld.particles.PROTON)
    >>> recoil = ld.Edge("recoil", p4="recoil", particle=ld.particles.PROTON)
    >>> meson = ld.Edge("X")
    >>> production = ld.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"])
    >>> channel = ld.Channel("gamma p", edges=[beam, target, meson, recoil], vertices=[production])
    >>> channel.particle("recoil").mass
    0.93827208816
    >>> channel.vertex("production").t().kind
    'real'
    """

    __slots__ = ("_name", "_edges", "_vertices")

    def __init__(self, name: str, *, edges: Sequence[Edge], vertices: Sequence[Vertex]) -> None:
        self._name = _name(name, "a channel")
        self._edges: dict[str, Edge] = {}
        self._vertices: dict[str, Vertex] = {}
        for edge in edges:
            if not isinstance(edge, Edge):
                raise ModelError(f"channel {name!r}: edges must be Edge objects, got {type(edge).__name__}")
            if edge.name in self._edges:
                raise ModelError(f"channel {name!r}: duplicate edge name {edge.name!r}")
            self._edges[edge.name] = edge
        for vertex in vertices:
            if not isinstance(vertex, Vertex):
                raise ModelError(f"channel {name!r}: vertices must be Vertex objects, "
                                 f"got {type(vertex).__name__}")
            if vertex.name in self._vertices:
                raise ModelError(f"channel {name!r}: duplicate vertex name {vertex.name!r}")
            for edge_name in vertex._edges():
                if edge_name not in self._edges:
                    raise ModelError(f"channel {name!r}: vertex {vertex.name!r} refers to unknown "
                                     f"edge {edge_name!r}")
            self._vertices[vertex.name] = vertex

    @property
    def name(self) -> str:
        """The channel name."""
        return self._name

    @property
    def edge_names(self) -> list[str]:
        """Edge names in channel order."""
        return list(self._edges)

    @property
    def vertex_names(self) -> list[str]:
        """Vertex names in channel order."""
        return list(self._vertices)

    def __repr__(self) -> str:
        return f'Channel("{self._name}", edges={len(self._edges)}, vertices={len(self._vertices)})'

    def _edge(self, name: str) -> Edge:
        if name not in self._edges:
            raise ModelError(f"channel {self._name!r}: unknown edge {name!r}")
        return self._edges[name]

    def to_json(self) -> str:
        """laddu's JSON text of the channel (see :mod:`laddu_dask.expr.channel_json`)."""
        return cj.dumps(cj.channel_dict(self))

    @staticmethod
    def from_json(json: str) -> Channel:
        """The channel of laddu's (or :meth:`to_json`'s) JSON text."""
        return cj.read(json, "Channel", channel_from)

    def edge_p4(self, name: str) -> str | Vec4 | None:
        """The four-momentum source given for edge ``name`` (a name, a ``Vec4``, or ``None``)."""
        return self._edge(name).p4

    def particle(self, edge: str) -> Particle:
        """The particle properties of ``edge``; ``ModelError`` if it has none."""
        particle = self._edge(edge).particle
        if particle is None:
            raise ModelError(f"channel {self._name!r}: edge {edge!r} has no particle properties")
        return particle

    def vertex(self, name: str) -> VertexFrame:
        """The centre-of-momentum frame of the vertex ``name`` (see :class:`VertexFrame`)."""
        if name not in self._vertices:
            raise ModelError(f"channel {self._name!r}: unknown vertex {name!r}")
        return VertexFrame(self, name)

    def mass(self, edge: str) -> Expr:
        """The invariant mass of ``edge``, ``Vec4.m()`` of its momentum (complex, as in laddu)."""
        return self._p4(edge).m()

    def s(self, edge: str) -> Expr:
        """The invariant mass squared of ``edge`` (real)."""
        return self._p4(edge).m2()

    # -- momentum resolution -------------------------------------------------------------

    def _p4(self, edge: str) -> Vec4:
        try:
            return self._resolve(edge, [])
        except _Unavailable as exc:
            raise ModelError(str(exc)) from None

    def _resolve(self, edge: str, stack: list[str]) -> Vec4:
        given = self._edge(edge)._vec4()
        if given is not None:
            return given
        if edge in stack:
            raise ModelError(f"channel {self._name!r}: cyclic momentum inference involving edge {edge!r}")
        stack.append(edge)
        try:
            for priority in (_PARENT, _CHILD, _ANY):
                vertices = [v for v in self._vertices.values()
                            if edge in v._edges() and v._matches(edge, priority)]
                found = [p4 for p4 in (self._infer(edge, v, stack) for v in vertices) if p4 is not None]
                if len(found) > 1:
                    raise ModelError(f"channel {self._name!r}: ambiguous momentum inference for "
                                     f"edge {edge!r}")
                if found:
                    return found[0]
        finally:
            stack.pop()
        raise _Unavailable(f"channel {self._name!r}: edge {edge!r} has no p4 and could not be inferred")

    def _infer(self, edge: str, vertex: Vertex, stack: list[str]) -> Vec4 | None:
        try:
            incoming = self._sum(vertex._incoming, edge, stack)
            outgoing = self._sum(vertex._outgoing, edge, stack)
        except _Unavailable:
            return None
        return outgoing - incoming if edge in vertex._incoming else incoming - outgoing

    def _sum(self, edges: list[str], skip: str, stack: list[str]) -> Vec4:
        total = Vec4(0.0, 0.0, 0.0, 0.0)
        for name in edges:
            if name != skip:
                total = total + self._resolve(name, stack)
        return total

    # -- frames --------------------------------------------------------------------------

    def _frame_path(self, target: str) -> tuple[Vertex, list[str]]:
        """The root vertex and the edges whose rest frames lead from it to ``target``."""
        produced = {e for v in self._vertices.values() for e in v._outgoing}
        roots = [v for v in self._vertices.values() if not any(e in produced for e in v._incoming)]
        if not roots:
            raise ModelError(f"channel {self._name!r}: could not find a root vertex for {target!r}")
        children = {name: [(e, c) for e in v._outgoing for c in self._vertices.values() if e in c._incoming]
                    for name, v in self._vertices.items()}
        matches: list[tuple[Vertex, list[str]]] = []
        for root in roots:
            queue = deque([(root.name, [], {root.name})])
            while queue:
                name, path, seen = queue.popleft()
                if name == target:
                    matches.append((root, path))
                    continue
                for edge, child in children[name]:
                    if child.name not in seen:
                        queue.append((child.name, [*path, edge], seen | {child.name}))
            if len(matches) > 1:
                raise ModelError(f"channel {self._name!r}: ambiguous frame path to vertex {target!r}")
        if not matches:
            raise ModelError(f"channel {self._name!r}: vertex {target!r} is not reachable from a root vertex")
        return matches[0]

    def _p4_in_frame(self, vertex: str, edge: str) -> Vec4:
        """``edge``'s momentum in the rest frame of ``vertex``: boosted to the overall
        centre-of-momentum frame, then along the frame path one rest frame at a time."""
        root, path = self._frame_path(vertex)
        try:
            boosts: list[Vec3] = [-self._sum(root._incoming, "", []).beta()]
        except _Unavailable as exc:
            raise ModelError(str(exc)) from None
        p4 = self._p4(edge).boost(boosts[0])
        for frame_edge in path:
            frame = self._p4(frame_edge)
            for beta in boosts:
                frame = frame.boost(beta)
            beta = -frame.beta()
            p4 = p4.boost(beta)
            boosts.append(beta)
        return p4


def channel_from(body: Any, channel: type | None = None) -> Any:
    """The channel of a parsed JSON body, of the class ``channel`` (default :class:`Channel`;
    the public ``ld.Channel.from_json`` passes its own)."""
    edges = []
    for e in body["edges"].values():
        p4 = e["p4"]
        if isinstance(p4, dict):
            p4 = Vec4(*(from_dict(p4[k], "Channel.from_json") for k in ("e", "px", "py", "pz")))
        props = e["properties"]
        edges.append(
            Edge(
                e["name"],
                p4=p4,
                output=e["output"],
                particle=None if props is None else Particle.from_json(cj.dumps(props)),
                mass_proposal=None if e["mass_proposal"] is None else mass_proposal_from(e["mass_proposal"]),
                initial_momentum=None
                if e["initial_momentum"] is None
                else initial_momentum_from(e["initial_momentum"]),
            )
        )
    vertices = [
        Vertex(
            v["name"],
            incoming=v["incoming"],
            outgoing=v["outgoing"],
            generation=None if v["generation"] is None else vertex_proposal_from(v["generation"]),
        )
        for v in body["vertices"].values()
    ]
    return (channel or Channel)(body["name"], edges=edges, vertices=vertices)
