"""The allowed two-body partial waves under a rule set (laddu 0.28.1's ``SelectionRules``).

:class:`SelectionRules` couples the daughter spins, scans ``L = 0 .. max_l`` and keeps the
:class:`~laddu_dask.expr.rules.PartialWave` candidates that couple to the parent spin and
that no enforced rule of its :class:`~laddu_dask.expr.rules.RuleSet` rejects.

Examples
--------
>>> import laddu_dask as ld
>>> P = ld.particles
>>> waves = ld.SelectionRules.strong(2).allowed_partial_waves(
...     P.RHO_ZERO, daughter_a=P.PI_PLUS, daughter_b=P.PI_MINUS)
>>> [(w.wave.label, w.parity, w.c_parity) for w in waves]
[('1P1', Parity.NEGATIVE, Parity.NEGATIVE)]
"""

from __future__ import annotations

from typing import Any

from laddu_dask.expr.particles import Particle
from laddu_dask.expr.quantum import L, S
from laddu_dask.expr.rule_checks import as_instance, as_l, couples, final_c_parity, final_parity, properties
from laddu_dask.expr.rules import AllowedPartialWave, PartialWave, RuleSet, _slot, _Value

__all__ = ["SelectionRules"]


class SelectionRules(_Value):
    """The allowed two-body partial waves under a :class:`RuleSet` (laddu's ``SelectionRules``).

    The daughter spins couple to ``S = |j_a - j_b|, ..., j_a + j_b``; for each ``S`` and
    ``L = 0, ..., max_l`` the wave is kept when ``L`` and ``S`` couple to the parent spin and
    no enforced rule fails.

    Parameters
    ----------
    rules : RuleSet
        The rules that filter the candidates.
    max_l : L, int, float or fractions.Fraction
        The largest orbital angular momentum scanned: a non-negative integer.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> P = ld.particles
    >>> selection = ld.SelectionRules(ld.RuleSet.strong(), max_l=4)
    >>> [w.wave.label for w in selection.allowed_partial_waves(
    ...     P.J_PSI, daughter_a=P.PROTON, daughter_b=P.ANTIPROTON)]
    ['1P1', '3P1']
    """

    __slots__ = ("_rules", "_max_l")

    def __init__(self, rules: RuleSet, max_l: Any) -> None:
        self._rules, self._max_l = as_instance(rules, RuleSet), as_l(max_l)

    @staticmethod
    def strong(max_l: Any) -> SelectionRules:
        """Selection rules with :meth:`RuleSet.strong`."""
        return SelectionRules(RuleSet.strong(), max_l)

    @staticmethod
    def electromagnetic(max_l: Any) -> SelectionRules:
        """Selection rules with :meth:`RuleSet.electromagnetic`."""
        return SelectionRules(RuleSet.electromagnetic(), max_l)

    @staticmethod
    def weak(max_l: Any) -> SelectionRules:
        """Selection rules with :meth:`RuleSet.weak`."""
        return SelectionRules(RuleSet.weak(), max_l)

    rules = _slot("_rules", """RuleSet: The rule set (laddu-dask only).""")
    max_l = _slot("_max_l", """L: The largest orbital angular momentum scanned (laddu-dask only).""")

    def allowed_partial_waves(self, parent: Particle, *, daughter_a: Particle,
                              daughter_b: Particle) -> list[AllowedPartialWave]:
        """The allowed waves for ``parent -> daughter_a daughter_b``, ordered by ``S`` and then
        ``L``; empty when a spin is unknown."""
        trio = [properties(as_instance(p, Particle)) for p in (parent, daughter_a, daughter_b)]
        (j, ja, jb), (_, a, b) = (t["spin"] for t in trio), trio
        if j is None or ja is None or jb is None:
            return []
        allowed = []
        for s in map(S, ja.coupled_with(jb)):
            for l in map(L, range(self._max_l.value + 1)):  # noqa: E741
                if couples(j.doubled, l.doubled, s.doubled) and self._rules._evaluate(trio, l, s):
                    allowed.append(AllowedPartialWave(PartialWave(j, l, s), final_parity(a, b, l),
                                                      final_c_parity(a, b, l, s)))
        return allowed

    def __repr__(self) -> str:
        return f"SelectionRules({self._rules!r}, max_l={self._max_l.value})"

    def _key(self) -> tuple:
        return (self._rules, self._max_l)

    def _obj(self) -> dict[str, Any]:
        return {"rules": self._rules._obj(), "max_l": self._max_l.value}

    @classmethod
    def _from_obj(cls, obj: Any) -> SelectionRules:
        return cls(RuleSet._from_obj(obj["rules"]), obj["max_l"])

