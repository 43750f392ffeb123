"""Reaction channels and their generation settings as laddu 0.28.1's JSON: the writers, and
:func:`read` (the readers live beside the classes they build, in
:mod:`laddu_dask.expr.proposals` and :mod:`laddu_dask.expr.topology`).

laddu writes compact JSON (no spaces), keys in its own order, floats as Python's ``repr``
except that a negative exponent has no leading zero (``1e-7``, not ``1e-07``). The layouts:

* ``MandelstamChannel``: ``"S"``, ``"T"``, ``"U"``;
* ``MassProposal``: ``{"kind":"fixed","mass":m}`` or ``{"kind":"uniform","low":a,"high":b}``;
* ``InitialMomentum``: ``{"P4":{"e","px","py","pz"}}``, ``{"Momentum":{"x","y","z"}}`` or
  ``{"EnergyDirection":{"energy":SOURCE,"direction":{"x","y","z"}}}`` with ``SOURCE`` a
  scalar source's object (``fixed`` ``value``, ``uniform`` ``min``/``max``, ``histogram``
  ``edges``/``weights``);
* ``VertexProposal``: ``{"kind":"two_body_decay"}`` or ``{"kind":"two_body_scattering",
  "proposal":{"incoming_edge","outgoing_edge","distribution":{"components":[[w, C], ...],
  "t_min","t_max"}}}`` with ``C`` one of ``"Uniform"``, ``{"Exponential":{"slope"}}``,
  ``{"Histogram":{"histogram":H}}`` (``H`` laddu's histogram object) and
  ``{"Pole":{"exchange_mass","power"}}``;
* ``Channel``: ``{"name","edges":{name: EDGE},"vertices":{name: VERTEX}}``, an edge's ``p4``
  a name, a ``Vec4``'s JSON object or ``null``, its ``properties`` a particle's JSON object.

Examples
--------
>>> import laddu_dask as ld
>>> ld.MassProposal(1e-7, high=2.0).to_json()
'{"kind":"uniform","low":1e-7,"high":2.0}'
>>> ld.MassProposal.from_json('{"kind":"fixed","mass":0.5}')
MassProposal(0.5)
"""

from __future__ import annotations

import json as _json
import math
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import parse_json, to_dict
from laddu_dask.expr.vectors import Vec4

__all__ = ["dumps", "histogram_dict"]


def dumps(value: Any) -> str:
    """``value`` (dicts, lists, str, float, int, bool, None) as laddu's compact JSON text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        x = float(value)
        if not math.isfinite(x):
            return "null"
        text = repr(x)
        if "e-0" in text:
            text = text.replace("e-0", "e-")
        return text
    if isinstance(value, str):
        return _json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{_json.dumps(str(k), ensure_ascii=False)}:{dumps(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _xyz(values: Any) -> dict[str, float]:
    return {"x": float(values[0]), "y": float(values[1]), "z": float(values[2])}


class RecordedHistogram:
    """A histogram read from laddu's JSON object, kept as that object."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.bin_edges, self.counts = body["bin_edges"], body["counts"]


def histogram_dict(histogram: Any) -> dict[str, Any]:
    """laddu's JSON object of a histogram (laddu-dask's or laddu's ``Histogram``).

    laddu-dask's histogram keeps its errors, not the sums of squared weights behind them: the
    squares are the counts for default errors (``sqrt |count|``) and the squared errors
    otherwise, which is laddu's number unless squaring the rounded root is inexact."""
    if isinstance(histogram, RecordedHistogram):
        return dict(histogram.body)
    if hasattr(histogram, "squared_weight_constituents") and hasattr(histogram, "_flow_squares"):
        counts = np.asarray(histogram.counts, dtype=float)
        errors = np.asarray(histogram.errors, dtype=float)
        # default errors are sqrt(|count|): their squares are the counts themselves
        squares = np.where(errors == np.sqrt(np.abs(counts)), np.abs(counts), errors**2)
        flows = histogram._flow_squares
        return {
            "fill_kind": "manual" if flows is None else "empirical",
            "counts": counts.tolist(),
            "bin_edges": list(histogram.bin_edges),
            "underflow": histogram.underflow,
            "overflow": histogram.overflow,
            "errors": errors.tolist(),
            "sum_squared_weights": squares.tolist(),
            "underflow_sum_squared_weights": None if flows is None else flows[0],
            "overflow_sum_squared_weights": None if flows is None else flows[1],
        }
    return dict(parse_json(histogram.to_json(), "a histogram's JSON"))


# -- the proposals -------------------------------------------------------------------------
def mass_proposal_dict(p: Any) -> dict[str, Any]:
    if p.high is None:
        return {"kind": "fixed", "mass": p.value}
    return {"kind": "uniform", "low": p.value, "high": p.high}


def initial_momentum_dict(p: Any) -> dict[str, Any]:
    if p.kind == "p4":
        return {"P4": dict(zip(("e", "px", "py", "pz"), p.values, strict=True))}
    if p.kind == "momentum":
        return {"Momentum": _xyz(p.values)}
    if p.kind == "energy":
        energy: dict[str, Any] = {"kind": "fixed", "value": p.values[0]}
    elif p.kind == "uniform_energy":
        energy = {"kind": "uniform", "min": p.values[0], "max": p.values[1]}
    else:
        energy = {"kind": "histogram", "edges": list(p.values), "weights": list(p.weights)}
    return {"EnergyDirection": {"energy": energy, "direction": _xyz(p.direction)}}


def vertex_proposal_dict(p: Any) -> dict[str, Any]:
    if p.kind == "isotropic":
        return {"kind": "two_body_decay"}
    if p.kind == "t_exchange_histogram":
        components: list[Any] = [[1.0, {"Histogram": {"histogram": p.histogram}}]]
    elif p.kind == "t_exchange_pole":
        components = [[1.0, {"Pole": {"exchange_mass": p.exchange_mass, "power": p.power}}]]
    elif p.slope is None:
        components = [[1.0, "Uniform"]]
    else:
        f = p.uniform_fraction
        components = ([[f, "Uniform"]] if f > 0.0 else []) + [[1.0 - f, {"Exponential": {"slope": p.slope}}]]
    return {
        "kind": "two_body_scattering",
        "proposal": {
            "incoming_edge": p.incoming,
            "outgoing_edge": p.outgoing,
            "distribution": {"components": components, "t_min": p.t_min, "t_max": p.t_max},
        },
    }


def read(text: Any, what: str, reader: Any) -> Any:
    """``reader(parsed text)``, or a :class:`ModelError` naming ``what`` for text that is not
    the JSON of one."""
    body = parse_json(text, f"{what}.from_json")
    try:
        return reader(body)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        raise ModelError(f"{what}.from_json: not the JSON of a {what}: {str(text)[:120]!r}") from None


# -- channels --------------------------------------------------------------------------------
def channel_dict(channel: Any) -> dict[str, Any]:
    edges = {}
    for name in channel.edge_names:
        e = channel._edges[name]
        p4: Any = e.p4
        if isinstance(p4, Vec4):
            p4 = {k: to_dict(c) for k, c in zip(("e", "px", "py", "pz"), p4, strict=True)}
        edges[name] = {
            "name": name,
            "p4": p4,
            "properties": None if e.particle is None else parse_json(e.particle.to_json(), "particle"),
            "output": e.output,
            "mass_proposal": None if e.mass_proposal is None else mass_proposal_dict(e.mass_proposal),
            "initial_momentum": None
            if e.initial_momentum is None
            else initial_momentum_dict(e.initial_momentum),
        }
    vertices = {}
    for name in channel.vertex_names:
        v = channel._vertices[name]
        vertices[name] = {
            "name": name,
            "incoming": v.incoming,
            "outgoing": v.outgoing,
            "generation": None if v.generation is None else vertex_proposal_dict(v.generation),
        }
    return {"name": channel.name, "edges": edges, "vertices": vertices}
