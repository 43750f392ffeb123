"""The gamma p -> X p, X -> a b channel both tutorial modules declare (laddu 0.28.1's API)."""

from __future__ import annotations


def photoproduction(ld, name: str, daughters: tuple[tuple[str, str, str], ...], recoil: str = "recoil"):
    """``ld.Channel`` of gamma p -> X p, X -> a b.

    ``daughters`` holds ``(edge name, p4 column, ld.particles name)`` of the two decay
    products; the beam, target and recoil proton read the columns ``beam``, ``target`` and
    ``recoil``. The production vertex is ``"production"``, the decay vertex ``"decay"``.
    """
    photon, proton = ld.particles.PHOTON, ld.particles.PROTON
    return ld.Channel(
        name,
        edges=[
            ld.Edge("gamma", p4="beam", particle=photon),
            ld.Edge("target", p4="target", particle=proton),
            ld.Edge("X"),
            ld.Edge("recoil", p4=recoil, particle=proton),
            *(ld.Edge(edge, p4=column, particle=getattr(ld.particles, p)) for edge, column, p in daughters),
        ],
        vertices=[
            ld.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
            ld.Vertex("decay", incoming=["X"], outgoing=[edge for edge, _, _ in daughters]),
        ],
    )
