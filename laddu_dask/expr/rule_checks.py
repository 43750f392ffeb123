"""The physics of laddu's selection rules: one check per rule, on laddu's view of a particle.

Each check takes the parent's and the two daughters' properties (:func:`properties`), the
orbital angular momentum ``L`` and the coupled spin ``S``, and returns a raw outcome
``("pass" | "fail" | "unknown", message, missing inputs)`` with laddu's wording;
:mod:`laddu_dask.expr.rules` applies the rule's policy to it.  :data:`RULES` lists the
checks in laddu's report order.

Examples
--------
>>> from laddu_dask.expr import L, S, particles
>>> pions = [properties(p) for p in (particles.RHO_ZERO, particles.PI_ZERO, particles.PI_ZERO)]
>>> RULES["IdenticalParticleSymmetry"](*pions, L(1), S(0))
('fail', 'identical-particle exchange symmetry is violated', ())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.particles import BUILTIN, Particle
from laddu_dask.expr.quantum import J, L, M, Parity, S, Statistics

__all__ = ["ORDER", "RULES", "Props", "Raw", "as_instance", "as_j", "as_l", "as_number", "as_s", "couples",
           "final_c_parity", "final_parity", "half_text", "parity_name", "properties", "rule_name"]

Props = dict[str, Any]
Raw = tuple[str, str, tuple[str, ...]]  # ("pass" | "fail" | "unknown", message, missing inputs)


# ------------------------------------------------ laddu's argument conversion


def as_number(value: Any, expected: str) -> Any:
    """``value`` in a form the quantum-number types accept; ``TypeError`` for other types."""
    if isinstance(value, J | S | L | M | int | float | Fraction):
        return value
    numerator, denominator = getattr(value, "numerator", None), getattr(value, "denominator", None)
    if isinstance(numerator, int) and isinstance(denominator, int) and denominator:
        return Fraction(numerator, denominator)
    if not isinstance(value, str | bytes | Parity) and hasattr(value, "__float__"):
        return float(value)  # e.g. laddu's own J, S and L
    raise TypeError(f"expected {expected}")


_HALF = "J, S, L, an integer, a half-integer float, or fractions.Fraction"


def as_j(value: Any) -> J:
    """``value`` as a total angular momentum, converted as laddu converts it."""
    return value if isinstance(value, J) else J(as_number(value, _HALF))


def as_s(value: Any) -> S:
    """``value`` as a spin, converted as laddu converts it."""
    return value if isinstance(value, S) else S(as_number(value, _HALF))


def as_l(value: Any) -> L:
    """``value`` as an orbital angular momentum, converted as laddu converts it."""
    return value if isinstance(value, L) else L(as_number(
        value, "L, an integer, an integer-valued float, or fractions.Fraction"))


def as_instance(value: Any, kind: type) -> Any:
    """``value``, which must be a ``kind`` (``TypeError`` with laddu's wording otherwise)."""
    if not isinstance(value, kind):
        raise TypeError(f"'{type(value).__name__}' object is not an instance of '{kind.__name__}'")
    return value


def half_text(twice: int) -> str:
    """An integer or half-integer, given doubled, as laddu prints it: ``1`` or ``3/2``."""
    return str(twice // 2) if twice % 2 == 0 else f"{twice}/2"


def parity_name(p: Parity | None) -> str | None:
    """laddu's spelling of a parity in messages and JSON."""
    return None if p is None else "Positive" if p.value > 0 else "Negative"


# ----------------------------------------------------------- particle properties

_ADDITIVE = ("charge", "strangeness", "charm", "bottomness", "topness", "baryon_number",
             "electron_lepton_number", "muon_lepton_number", "tau_lepton_number")
_FIELDS = ("spin", "parity", "c_parity", "g_parity", "isospin", "statistics", *_ADDITIVE)
_BUILTIN: dict[int, Props] = {}


def _stored(particle: Particle) -> Props:
    props = {key: getattr(particle, f"{key}_checked") for key in _FIELDS}
    return {**props, "species": particle.species_checked, "anti": particle.antiparticle_species_checked}


def properties(particle: Particle) -> Props:
    """The properties laddu's rules see for ``particle``.

    laddu's ``Particle`` constructor completes what it is given: a spin implies the
    statistics; equal species names, ``self_conjugate=True`` or a C-parity make a particle
    self-conjugate, copy a lone species name to the other and set the additive quantum
    numbers left out to 0.  laddu-dask's ``Particle`` keeps what it is given, so that
    completion is done here.  Built-in particles are used as they are, as in laddu.
    """
    if id(particle) in _BUILTIN:
        return _BUILTIN[id(particle)]
    props = _stored(particle)
    species, anti = props["species"], props["anti"]
    conjugate = fill = None if species is None or anti is None else species == anti
    flag = particle.self_conjugate_checked
    if flag is False:
        conjugate = False
    elif flag or (props["c_parity"] is not None and conjugate is None):
        props["species"] = species if species is not None else anti
        props["anti"] = anti if anti is not None else species
        conjugate = fill = True
    if fill:
        props.update({key: 0 for key in _ADDITIVE if props[key] is None})
    if props["statistics"] is None and props["spin"] is not None:
        props["statistics"] = Statistics.from_spin(props["spin"])
    return props


_BUILTIN.update({id(p): _stored(p) for p in BUILTIN.values()})


def _conjugates(a: Props, b: Props) -> bool:
    """Whether ``a`` is the antiparticle of ``b`` (laddu's ``is_antiparticle_of``)."""
    if a["species"] is None or b["species"] is None or (a["anti"] is None and b["anti"] is None):
        return False
    return (a["anti"] in (None, b["species"])) and (b["anti"] in (None, a["species"]))


def couples(total: int, first: int, second: int) -> bool:
    """Whether doubled angular momenta ``first`` and ``second`` couple to doubled ``total``."""
    low = abs(first - second)
    return low <= total <= first + second and (total - low) % 2 == 0


def _sign(exponent: int) -> Parity:
    return Parity.NEGATIVE if exponent % 2 else Parity.POSITIVE


def final_parity(a: Props, b: Props, l: L) -> Parity | None:
    """The final-state parity ``P_a P_b (-1)^L``, or ``None`` if a daughter parity is unknown."""
    if a["parity"] is None or b["parity"] is None:
        return None
    return _sign((a["parity"].value < 0) + (b["parity"].value < 0) + l.value)


def final_c_parity(a: Props, b: Props, l: L, s: S) -> Parity | None:
    """``(-1)^(L+S)`` for a particle-antiparticle pair with integral ``S``, else ``None``."""
    if not _conjugates(a, b) or s.doubled % 2:
        return None
    return _sign(l.value + s.doubled // 2)


# --------------------------------------------------------------------- the rules

_WHO = (("parent", "parent"), ("daughter_a", "first daughter"), ("daughter_b", "second daughter"))


def _pass(message: str) -> Raw:
    return ("pass", message, ())


def _fail(message: str) -> Raw:
    return ("fail", message, ())


def _first_unknown(trio: Iterable[Props], key: str, noun: str, *, daughters: bool = False,
                   get: Callable[[Any], Any] = lambda v: v, field: str = "") -> Raw | None:
    """The unknown outcome for the first of parent, a, b (or a, b) lacking ``key``, if any."""
    for (who, text), props in zip(_WHO[1:] if daughters else _WHO, trio, strict=True):
        if props[key] is None or get(props[key]) is None:
            return ("unknown", f"{text} {noun} unknown", (f"{who}.{field or key}",))
    return None


def _rule_parity(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    if parent["parity"] is None:
        return ("unknown", "parent parity is unknown", ("parent.parity",))
    absent = tuple(f"{who}.parity" for (who, _), d in zip(_WHO[1:], (a, b)) if d["parity"] is None)
    if absent:
        return ("unknown", "final-state parity cannot be inferred because one or both daughter "
                "parities are unknown", absent)
    final = final_parity(a, b, l)
    if parent["parity"] == final:
        return _pass(f"parity is conserved for L = {l.value} with final parity {parity_name(final)}")
    return _fail(f"parity is not conserved for L = {l.value}: parent parity is "
                 f"{parity_name(parent['parity'])}, final parity is {parity_name(final)}")


def _rule_isospin(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    missing = _first_unknown((parent, a, b), "isospin", "isospin is")
    if missing:
        return missing
    if couples(parent["isospin"].isospin.doubled, a["isospin"].isospin.doubled,
                b["isospin"].isospin.doubled):
        return _pass("daughter isospins can couple to parent isospin")
    return _fail("daughter isospins cannot couple to parent isospin")


def _rule_isospin_projection(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    trio = (parent, a, b)
    missing = _first_unknown(trio, "isospin", "isospin is") or _first_unknown(
        trio, "isospin", "isospin projection is", get=lambda i: i.projection_checked,
        field="isospin.projection")
    if missing:
        return missing
    parent3, a3, b3 = (d["isospin"].projection.doubled for d in trio)
    if parent3 == a3 + b3:
        return _pass("isospin projection is conserved")
    return _fail("isospin projection is not conserved")


_C_NOTE = "assumes a C-eigenstate particle-antiparticle combination"


def _rule_c_parity(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    if parent["c_parity"] is None:
        return ("unknown", "parent C-parity is unknown or not applicable", ("parent.c_parity",))
    final = final_c_parity(a, b, l, s)
    if final is None:
        return ("unknown", f"final-state C-parity cannot be inferred; this check currently {_C_NOTE}",
                ("daughter_a.species", "daughter_a.antiparticle_species", "daughter_b.species",
                 "daughter_b.antiparticle_species"))
    if parent["c_parity"] == final:
        return _pass(f"C-parity is conserved with inferred C_final = {parity_name(final)}; {_C_NOTE}")
    return _fail(f"C-parity is not conserved: parent C = {parity_name(parent['c_parity'])}, inferred final "
                 f"C = {parity_name(final)}; {_C_NOTE}")


def _rule_g_parity(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    missing = _first_unknown((parent, a, b), "g_parity", "G-parity is")
    if missing:
        return ("unknown", f"{missing[1]} or not applicable", missing[2])
    product = a["g_parity"].value * b["g_parity"].value
    if parent["g_parity"].value == product:
        return _pass("G-parity product check passes")
    return _fail(f"G-parity product check fails: parent G = {parity_name(parent['g_parity'])}, "
                 f"daughter product = {product}")


def _additive(field: str, display: str, symbol: str) -> Callable[..., Raw]:
    def rule(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
        values = [d[field] for d in (parent, a, b)]
        if None in values:
            return ("unknown", f"{display} cannot be checked because required values are unknown",
                    tuple(f"{who}.{field}" for (who, _), v in zip(_WHO, values) if v is None))
        if values[0] == values[1] + values[2]:
            return _pass(f"{display} is conserved")
        return _fail(f"{display} is not conserved: parent {symbol} = {values[0]}, "
                     f"final {symbol} = {values[1] + values[2]}")
    return rule


_LEPTONS = ("electron_lepton_number", "muon_lepton_number", "tau_lepton_number")


def _rule_lepton_number(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    trio = (parent, a, b)
    missing = tuple(f"{who}.{f}" for (who, _), d in zip(_WHO, trio) for f in _LEPTONS if d[f] is None)
    if missing:
        return ("unknown", "total lepton number cannot be checked because required values are unknown",
                missing)
    total = [sum(d[f] for f in _LEPTONS) for d in trio]
    if total[0] == total[1] + total[2]:
        return _pass("total lepton number is conserved")
    return _fail(f"total lepton number is not conserved: parent L = {total[0]}, "
                 f"final L = {total[1] + total[2]}")


def _rule_identical(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    missing = _first_unknown((a, b), "species", "species is", daughters=True)
    if missing or a["species"] != b["species"]:
        return missing or _pass("daughters are not identical particles")
    missing = _first_unknown((a, b), "statistics", "statistics are", daughters=True)
    if missing or a["statistics"] != b["statistics"]:
        return missing or _fail("identical particles have inconsistent statistics assignments")
    missing = _first_unknown((a, b), "spin", "spin is", daughters=True)
    if missing or a["spin"] != b["spin"]:
        return missing or _fail("identical particles have inconsistent spin assignments")
    if s.doubled % 2:
        return _fail("two identical particles cannot couple to half-integer total spin")
    coupled, twice_j = s.doubled // 2, a["spin"].doubled
    if coupled > twice_j:
        return _fail("coupled spin is incompatible with two identical daughter spins")
    if ((l.value + twice_j - coupled) % 2 == 0) == (a["statistics"] == Statistics.BOSON):
        return _pass("identical-particle exchange symmetry is satisfied")
    return _fail("identical-particle exchange symmetry is violated")


def _rule_meson_jpc(parent: Props, a: Props, b: Props, l: L, s: S) -> Raw:
    j, p, c = parent["spin"], parent["parity"], parent["c_parity"]
    for value, key, text in ((j, "spin", "spin is unknown"), (p, "parity", "parity is unknown"),
                             (c, "c_parity", "C-parity is unknown or not applicable")):
        if value is None:
            return ("unknown", f"parent {text}", (f"parent.{key}",))
    if j.doubled % 2:
        return _fail("half-integer J is not compatible with a conventional meson assignment")
    total = j.doubled // 2
    if any(abs(lq - sq) <= total <= lq + sq and p == _sign(lq + 1) and c == _sign(lq + sq)
           for lq in range(total + 2) for sq in (0, 1)):
        return _pass("J^PC is compatible with a conventional q qbar meson assignment")
    return _fail(f"J^PC = {total}{parity_name(p)}{parity_name(c)} is exotic for a conventional q qbar meson "
                 "assignment")


#: Every rule, in laddu's (deterministic) report order: name -> evaluator.
RULES: dict[str, Callable[..., Raw]] = {
    "Parity": _rule_parity,
    "Isospin": _rule_isospin,
    "IsospinProjection": _rule_isospin_projection,
    "CParity": _rule_c_parity,
    "GParity": _rule_g_parity,
    "Charge": _additive("charge", "charge", "Q"),
    "Strangeness": _additive("strangeness", "strangeness", "S"),
    "Charm": _additive("charm", "charm", "C"),
    "Bottomness": _additive("bottomness", "bottomness", "B'"),
    "Topness": _additive("topness", "topness", "T"),
    "BaryonNumber": _additive("baryon_number", "baryon number", "B"),
    "ElectronLeptonNumber": _additive("electron_lepton_number", "electron-family lepton number", "L_e"),
    "MuonLeptonNumber": _additive("muon_lepton_number", "muon-family lepton number", "L_mu"),
    "TauLeptonNumber": _additive("tau_lepton_number", "tau-family lepton number", "L_tau"),
    "LeptonNumber": _rule_lepton_number,
    "IdenticalParticleSymmetry": _rule_identical,
    "ConventionalMesonJpc": _rule_meson_jpc,
}
ORDER = {name: i for i, name in enumerate(RULES)}
_SPELLINGS = {name.lower(): name for name in RULES} | {"i3": "IsospinProjection"}


def rule_name(rule: Any) -> str:
    """laddu's name of ``rule``; case and characters other than letters and digits are ignored."""
    if rule in RULES:
        return rule
    if not isinstance(rule, str):
        raise TypeError(f"a rule name must be a str, got {type(rule).__name__}")
    key = "".join(ch for ch in rule if ch.isascii() and ch.isalnum()).lower()
    if key not in _SPELLINGS:
        raise ModelError(f"unknown quantum rule `{rule}`")
    return _SPELLINGS[key]
