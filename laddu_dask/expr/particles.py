"""Particle species and their properties (laddu's ``Particle`` and ``laddu.particles``).

A :class:`Particle` is metadata attached to an edge of a reaction :class:`~laddu_dask.Channel`:
every property is optional; the plain accessor raises ``ModelError`` (a ``ValueError``)
when it is absent, the ``*_checked`` accessor returns ``None``.  The module-level constants
(``PROTON``, ``K_SHORT``, ``PHOTON``, ...) carry the masses (GeV), spins, parities, charges and
PDG identifiers that laddu 0.28.1 gives them.

Examples
--------
>>> import laddu_dask as ld
>>> ld.particles.PROTON.mass, ld.particles.PROTON.spin, ld.particles.PROTON.charge
(0.93827208816, S(1/2), 1)
>>> ld.particles.K_SHORT.charge_checked is None
True
>>> ld.Particle("pi+", spin=0, parity="-", charge=1, mass=0.13957).parity
Parity.NEGATIVE
"""

from __future__ import annotations

import json as _json
import math
from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.isospin import Isospin
from laddu_dask.expr.quantum import Parity, S, Statistics, doubled

#: The optional integer and flag properties, in laddu's names.
_PLAIN = (
    "name", "species", "antiparticle_species", "self_conjugate", "spin", "parity", "c_parity",
    "g_parity", "charge", "isospin", "strangeness", "charm", "bottomness", "topness", "baryon_number",
    "electron_lepton_number", "muon_lepton_number", "tau_lepton_number", "statistics", "mass",
)
_INTEGERS = (
    "charge", "strangeness", "charm", "bottomness", "topness", "baryon_number",
    "electron_lepton_number", "muon_lepton_number", "tau_lepton_number",
)


def _spin(value: Any) -> S | None:
    """A spin as laddu's :class:`S`: from ``S``/``J``, an integer, a half-integer float or a Fraction."""
    if value is None:
        return None
    try:  # laddu's own S and J objects convert through float
        number = value if isinstance(value, int | float | Fraction | S) else float(value)
        twice = doubled(number, "a particle spin")
    except (ModelError, TypeError, ValueError):
        raise ModelError(f"a particle spin must be a non-negative integer or half-integer, "
                         f"got {value!r}") from None
    if twice < 0:
        raise ModelError(f"a particle spin must be a non-negative integer or half-integer, got {value!r}")
    return S(Fraction(twice, 2))


def _parity(value: Any, what: str) -> Parity | None:
    if value is None:
        return None
    try:
        return Parity(value)
    except ModelError:
        raise ModelError(f"a particle {what} must be a Parity, +1, -1, '+' or '-', got {value!r}") from None


def _typed(value: Any, kind: type, what: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise ModelError(f"a particle {what} must be a {kind.__name__}, got {value!r}")
    return value


def _statistics(value: Any) -> Statistics | None:
    return None if value is None else Statistics(value)


class Particle:
    """Physical and quantum-number metadata for a particle species (laddu's ``Particle``).

    Parameters
    ----------
    name : str, optional
        Display name.
    species, antiparticle_species : str, optional
        Particle and antiparticle species names.
    self_conjugate : bool, optional
        Whether particle and antiparticle are the same.
    spin : S, J, int, float or fractions.Fraction, optional
        Non-negative integer or half-integer spin (kept as laddu's :class:`~laddu_dask.S`).
    parity, c_parity, g_parity : Parity, int or str, optional
        Intrinsic, charge-conjugation and G parities: a :class:`~laddu_dask.Parity`,
        ``+1``/``-1`` or ``"+"``/``"-"`` (kept as ``Parity``).
    charge, strangeness, charm, bottomness, topness, baryon_number : int, optional
        Charge in units of the positron charge, and flavour quantum numbers.
    electron_lepton_number, muon_lepton_number, tau_lepton_number : int, optional
        Lepton numbers.
    isospin : Isospin, optional
        Total isospin and, optionally, its third component.
    statistics : Statistics, optional
        ``Statistics.BOSON`` or ``Statistics.FERMION`` (laddu's ``Statistics``).
    mass : float, optional
        Non-negative mass, in the units of the event four-vectors.
    ids : dict[str, int], optional
        External identifiers, e.g. ``{"pdg": 211}``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> pion = ld.Particle("pi+", spin=0, parity="-", charge=1, mass=0.13957)
    >>> pion.charge, pion.c_parity_checked is None
    (1, True)
    """

    __slots__ = ("_props", "_ids")

    def __init__(
        self, name: str | None = None, *, species: str | None = None, antiparticle_species: str | None = None,
        self_conjugate: bool | None = None, spin: Any = None, parity: Any = None, c_parity: Any = None,
        g_parity: Any = None, charge: int | None = None, isospin: Any = None, strangeness: int | None = None,
        charm: int | None = None, bottomness: int | None = None, topness: int | None = None,
        baryon_number: int | None = None, electron_lepton_number: int | None = None,
        muon_lepton_number: int | None = None, tau_lepton_number: int | None = None,
        statistics: Any = None, mass: float | None = None, ids: dict[str, int] | None = None,
    ) -> None:
        props: dict[str, Any] = dict(
            name=name, species=species, antiparticle_species=antiparticle_species,
            self_conjugate=self_conjugate, spin=_spin(spin), parity=_parity(parity, "parity"),
            c_parity=_parity(c_parity, "c_parity"), g_parity=_parity(g_parity, "g_parity"),
            isospin=_typed(isospin, Isospin, "isospin"), statistics=_statistics(statistics), mass=None,
        )
        for key in _INTEGERS:
            value = locals()[key]
            if value is not None and (isinstance(value, bool) or int(value) != value):
                raise ModelError(f"a particle {key} must be an integer, got {value!r}")
            props[key] = None if value is None else int(value)
        if mass is not None:
            if not math.isfinite(float(mass)) or float(mass) < 0.0:
                raise ModelError(f"a particle mass must be finite and non-negative, got {mass!r}")
            props["mass"] = float(mass)
        self._props = props
        self._ids = dict(ids or {})

    @property
    def ids(self) -> dict[str, int]:
        """External identifiers keyed by namespace, such as ``{"pdg": 211}``."""
        return dict(self._ids)

    def __repr__(self) -> str:
        name = self._props["name"]
        return f'Particle("{name}")' if name is not None else "Particle()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Particle) and (self._props, self._ids) == (other._props, other._ids)

    def __hash__(self) -> int:
        return hash((self._props["name"], self._props["mass"]))

    # laddu's partial descriptions: a selection rule compares only what a description defines

    @staticmethod
    def unknown() -> Particle:
        """A particle with no property defined."""
        return Particle()

    @staticmethod
    def hadron() -> Particle:
        """A generic hadron: every lepton number 0."""
        return Particle(**dict.fromkeys(_LEPTON_NUMBERS, 0))

    @staticmethod
    def meson() -> Particle:
        """A generic meson: baryon number and every lepton number 0."""
        return Particle(baryon_number=0, **dict.fromkeys(_LEPTON_NUMBERS, 0))

    @staticmethod
    def baryon(baryon_number: int = 1) -> Particle:
        """A generic baryon: ``baryon_number`` (1), every lepton number 0."""
        return Particle(baryon_number=baryon_number, **dict.fromkeys(_LEPTON_NUMBERS, 0))

    @staticmethod
    def boson(j: Any) -> Particle:
        """A boson of integer spin ``j``: baryon and lepton numbers 0.

        Raises
        ------
        ModelError
            When ``j`` is not a non-negative integer.
        """
        spin = _spin(j)
        if spin.doubled % 2:
            raise ModelError(f"a boson's spin must be a non-negative integer, got {j!r}")
        return Particle(spin=spin, statistics=Statistics.BOSON, baryon_number=0,
                        **dict.fromkeys(_LEPTON_NUMBERS, 0))

    @staticmethod
    def lepton(*, electron: int = 0, muon: int = 0, tau: int = 0) -> Particle:
        """A lepton of the given lepton numbers: baryon number and every quark flavour 0
        (its statistics stay undefined, as in laddu)."""
        return Particle(electron_lepton_number=electron, muon_lepton_number=muon, tau_lepton_number=tau,
                        baryon_number=0, strangeness=0, charm=0, bottomness=0, topness=0)

    @staticmethod
    def jp(j: Any, *, parity: Any) -> Particle:
        """A particle of spin ``j`` and intrinsic ``parity`` (statistics from the spin).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> rho_like = ld.Particle.jp(1, parity="-")
        >>> rho_like.spin, rho_like.parity, rho_like.statistics
        (S(1), Parity.NEGATIVE, Statistics.BOSON)
        """
        spin = _spin(j)
        return Particle(spin=spin, parity=parity, statistics=Statistics.from_spin(spin))

    @staticmethod
    def jpc(j: Any, *, parity: Any, c_parity: Any) -> Particle:
        """A particle of spin ``j``, ``parity`` and ``c_parity`` (statistics from the spin)."""
        spin = _spin(j)
        return Particle(spin=spin, parity=parity, c_parity=c_parity, statistics=Statistics.from_spin(spin))

    def to_json(self) -> str:
        """The particle in laddu's JSON (doubled spins and isospins, parities by name)."""
        body = {key: _to_json_value(key, self._props[key]) for key in _PLAIN}
        body["ids"] = {ns: {"Code": {"value": n}} for ns, n in sorted(self._ids.items())}
        return _json.dumps(body, separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> Particle:
        """The particle :meth:`to_json` (or laddu) wrote.

        Raises
        ------
        ModelError
            When the text is not a particle's JSON (naming the field at fault).
        """
        try:
            body = _json.loads(json)
            missing = [key for key in (*_PLAIN, "ids") if key not in body]
            if missing:
                raise ModelError(f"not a Particle in JSON: it has no {', '.join(missing)}")
            fields = {key: _from_json_value(key, body[key]) for key in _PLAIN}
            ids = {ns: int(code["Code"]["value"]) for ns, code in body["ids"].items()}
        except (TypeError, ValueError, KeyError) as err:
            if isinstance(err, ModelError):
                raise
            raise ModelError(f"not a Particle in JSON ({type(err).__name__}: {err})") from None
        return Particle(fields.pop("name"), ids=ids, **fields)


_LEPTON_NUMBERS = ("electron_lepton_number", "muon_lepton_number", "tau_lepton_number")


def _to_json_value(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key == "spin":
        return value.doubled
    if key == "isospin":
        return _json.loads(value.to_json())
    if key in ("parity", "c_parity", "g_parity", "statistics"):
        return _json.loads(value.to_json())
    return value


def _from_json_value(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key == "spin":
        return Fraction(int(value), 2)
    if key == "isospin":
        return Isospin.from_json(_json.dumps(value))
    if key in ("parity", "c_parity", "g_parity"):
        return Parity.from_json(_json.dumps(value))
    if key == "statistics":
        return Statistics.from_json(_json.dumps(value))
    return value


def _accessors(key: str) -> tuple[property, property]:
    def plain(self: Particle) -> Any:
        value = self._props[key]
        if value is None:
            raise ModelError(f"particle {self._props['name'] or '(unnamed)'} does not define `{key}`")
        return value

    def checked(self: Particle) -> Any:
        return self._props[key]

    plain.__doc__ = f"The {key.replace('_', ' ')}; ``ModelError`` if it is not defined."
    checked.__doc__ = f"The {key.replace('_', ' ')}, or ``None`` if it is not defined."
    return property(plain), property(checked)


for _key in _PLAIN:
    _plain, _checked = _accessors(_key)
    setattr(Particle, _key, _plain)
    setattr(Particle, f"{_key}_checked", _checked)
del _key, _plain, _checked

#: (constant, name, species, mass, spin, parity, C parity, charge, PDG id), as laddu 0.28.1 has them.
_TABLE = (
    ('ANTILAMBDA', 'Lambda0_bar', 'Lambda0_bar', 1.115683, '1/2', '+', None, 0, -3122),
    ('ANTIMUON', 'mu+', 'antimuon', 0.1056583755, '1/2', None, None, 1, -13),
    ('ANTINEUTRON', 'n_bar', 'antineutron', 0.93956542052, '1/2', '+', None, 0, -2112),
    ('ANTIPROTON', 'p_bar', 'antiproton', 0.93827208816, '1/2', '+', None, -1, -2212),
    ('ANTISIGMA_MINUS', 'Sigma-_bar', 'Sigma-_bar', 1.18937, '1/2', '+', None, -1, -3222),
    ('ANTISIGMA_PLUS', 'Sigma+_bar', 'Sigma+_bar', 1.197449, '1/2', '+', None, 1, -3112),
    ('ANTISIGMA_ZERO', 'Sigma0_bar', 'Sigma0_bar', 1.192642, '1/2', '+', None, 0, -3212),
    ('ANTITAU', 'tau+', 'antitau', 1.77693, '1/2', None, None, 1, -15),
    ('ANTI_OMEGA_PLUS', 'Omega+_bar', 'Omega+_bar', 1.67245, '3/2', '+', None, 1, -3334),
    ('ANTI_XI_PLUS', 'Xi+_bar', 'Xi+_bar', 1.32171, '1/2', '+', None, 1, -3312),
    ('ANTI_XI_ZERO', 'Xi0_bar', 'Xi0_bar', 1.31486, '1/2', '+', None, 0, -3322),
    ('B_MINUS', 'B-', 'B-', 5.27941, '0', '-', None, -1, -521),
    ('B_PLUS', 'B+', 'B+', 5.27941, '0', '-', None, 1, 521),
    ('B_S_ZERO', 'B_s0', 'B_s0', 5.36693, '0', '-', None, 0, 531),
    ('B_S_ZERO_BAR', 'B_s0_bar', 'B_s0_bar', 5.36693, '0', '-', None, 0, -531),
    ('B_ZERO', 'B0', 'B0', 5.27972, '0', '-', None, 0, 511),
    ('B_ZERO_BAR', 'B0_bar', 'B0_bar', 5.27972, '0', '-', None, 0, -511),
    ('D_MINUS', 'D-', 'D-', 1.86966, '0', '-', None, -1, -411),
    ('D_PLUS', 'D+', 'D+', 1.86966, '0', '-', None, 1, 411),
    ('D_S_MINUS', 'D_s-', 'D_s-', 1.96835, '0', '-', None, -1, -431),
    ('D_S_PLUS', 'D_s+', 'D_s+', 1.96835, '0', '-', None, 1, 431),
    ('D_ZERO', 'D0', 'D0', 1.86484, '0', '-', None, 0, 421),
    ('D_ZERO_BAR', 'D0_bar', 'D0_bar', 1.86484, '0', '-', None, 0, -421),
    ('ELECTRON', 'e-', 'electron', 0.00051099895, '1/2', None, None, -1, 11),
    ('ELECTRON_ANTINEUTRINO', 'nubar_e', 'nubar_e', None, '1/2', None, None, 0, -12),
    ('ELECTRON_NEUTRINO', 'nu_e', 'nu_e', None, '1/2', None, None, 0, 12),
    ('ETA', 'eta', 'eta', 0.547862, '0', '-', '+', None, 221),
    ('ETA_PRIME', "eta'", "eta'", 0.95778, '0', '-', '+', None, 331),
    ('HIGGS', 'H', 'Higgs', 125.2, '0', '+', '+', None, 25),
    ('J_PSI', 'J/psi', 'J/psi', 3.0969, '1', '-', '-', None, 443),
    ('K_LONG', 'K_L0', 'K_L0', 0.497611, '0', '-', None, None, 130),
    ('K_MINUS', 'K-', 'K-', 0.493677, '0', '-', None, -1, -321),
    ('K_PLUS', 'K+', 'K+', 0.493677, '0', '-', None, 1, 321),
    ('K_SHORT', 'K_S0', 'K_S0', 0.497611, '0', '-', None, None, 310),
    ('K_ZERO', 'K0', 'K0', 0.497611, '0', '-', None, 0, 311),
    ('K_ZERO_BAR', 'K0_bar', 'K0_bar', 0.497611, '0', '-', None, 0, -311),
    ('LAMBDA', 'Lambda0', 'Lambda0', 1.115683, '1/2', '+', None, 0, 3122),
    ('MUON', 'mu-', 'muon', 0.1056583755, '1/2', None, None, -1, 13),
    ('MUON_ANTINEUTRINO', 'nubar_mu', 'nubar_mu', None, '1/2', None, None, 0, -14),
    ('MUON_NEUTRINO', 'nu_mu', 'nu_mu', None, '1/2', None, None, 0, 14),
    ('NEUTRON', 'n', 'neutron', 0.93956542052, '1/2', '+', None, 0, 2112),
    ('OMEGA', 'omega', 'omega', 0.78266, '1', '-', '-', None, 223),
    ('OMEGA_MINUS', 'Omega-', 'Omega-', 1.67245, '3/2', '+', None, -1, 3334),
    ('PHI', 'phi', 'phi', 1.019461, '1', '-', '-', None, 333),
    ('PHOTON', 'gamma', 'photon', 0.0, '1', '-', '-', None, 22),
    ('PI_MINUS', 'pi-', 'pi-', 0.13957039, '0', '-', None, -1, -211),
    ('PI_PLUS', 'pi+', 'pi+', 0.13957039, '0', '-', None, 1, 211),
    ('PI_ZERO', 'pi0', 'pi0', 0.1349768, '0', '-', '+', 0, 111),
    ('POSITRON', 'e+', 'positron', 0.00051099895, '1/2', None, None, 1, -11),
    ('PROTON', 'p', 'proton', 0.93827208816, '1/2', '+', None, 1, 2212),
    ('RHO_MINUS', 'rho-', 'rho-', 0.77511, '1', '-', None, -1, -213),
    ('RHO_PLUS', 'rho+', 'rho+', 0.77511, '1', '-', None, 1, 213),
    ('RHO_ZERO', 'rho0', 'rho0', 0.77511, '1', '-', '-', None, 113),
    ('SIGMA_MINUS', 'Sigma-', 'Sigma-', 1.197449, '1/2', '+', None, -1, 3112),
    ('SIGMA_PLUS', 'Sigma+', 'Sigma+', 1.18937, '1/2', '+', None, 1, 3222),
    ('SIGMA_ZERO', 'Sigma0', 'Sigma0', 1.192642, '1/2', '+', None, 0, 3212),
    ('TAU', 'tau-', 'tau', 1.77693, '1/2', None, None, -1, 15),
    ('TAU_ANTINEUTRINO', 'nu_tau_bar', 'nubar_tau', None, '1/2', None, None, 0, -16),
    ('TAU_NEUTRINO', 'nu_tau', 'nu_tau', None, '1/2', None, None, 0, 16),
    ('W_MINUS', 'W-', 'W-', 80.369, '1', None, None, -1, -24),
    ('W_PLUS', 'W+', 'W+', 80.369, '1', None, None, 1, 24),
    ('XI_MINUS', 'Xi-', 'Xi-', 1.32171, '1/2', '+', None, -1, 3312),
    ('XI_ZERO', 'Xi0', 'Xi0', 1.31486, '1/2', '+', None, 0, 3322),
    ('Z_BOSON', 'Z0', 'Z', 91.188, '1', None, None, None, 23),
)

#: (constant, doubled isospin, doubled I3, G parity, self-conjugate, antiparticle species, strangeness,
#: charm, bottomness, topness, baryon number, e, mu and tau lepton numbers), as laddu 0.28.1 has them.
_QUANTUM = (
    ('ANTILAMBDA', 0, None, None, False, 'Lambda0', 1, 0, 0, 0, -1, 0, 0, 0),
    ('ANTIMUON', 0, None, None, False, 'muon', 0, 0, 0, 0, 0, 0, -1, 0),
    ('ANTINEUTRON', 1, None, None, False, 'neutron', 0, 0, 0, 0, -1, 0, 0, 0),
    ('ANTIPROTON', 1, None, None, False, 'proton', 0, 0, 0, 0, -1, 0, 0, 0),
    ('ANTISIGMA_MINUS', 2, None, None, False, 'Sigma+', 1, 0, 0, 0, -1, 0, 0, 0),
    ('ANTISIGMA_PLUS', 2, None, None, False, 'Sigma-', 1, 0, 0, 0, -1, 0, 0, 0),
    ('ANTISIGMA_ZERO', 2, None, None, False, 'Sigma0', 1, 0, 0, 0, -1, 0, 0, 0),
    ('ANTITAU', 0, None, None, False, 'tau', 0, 0, 0, 0, 0, 0, 0, -1),
    ('ANTI_OMEGA_PLUS', 0, None, None, False, 'Omega-', 3, 0, 0, 0, -1, 0, 0, 0),
    ('ANTI_XI_PLUS', 1, None, None, False, 'Xi-', 2, 0, 0, 0, -1, 0, 0, 0),
    ('ANTI_XI_ZERO', 1, None, None, False, 'Xi0', 2, 0, 0, 0, -1, 0, 0, 0),
    ('B_MINUS', 1, None, None, False, 'B+', 0, 0, -1, 0, 0, 0, 0, 0),
    ('B_PLUS', 1, None, None, False, 'B-', 0, 0, 1, 0, 0, 0, 0, 0),
    ('B_S_ZERO', 0, None, None, False, 'B_s0_bar', -1, 0, 1, 0, 0, 0, 0, 0),
    ('B_S_ZERO_BAR', 0, None, None, False, 'B_s0', 1, 0, -1, 0, 0, 0, 0, 0),
    ('B_ZERO', 1, None, None, False, 'B0_bar', 0, 0, 1, 0, 0, 0, 0, 0),
    ('B_ZERO_BAR', 1, None, None, False, 'B0', 0, 0, -1, 0, 0, 0, 0, 0),
    ('D_MINUS', 1, None, None, False, 'D+', 0, -1, 0, 0, 0, 0, 0, 0),
    ('D_PLUS', 1, None, None, False, 'D-', 0, 1, 0, 0, 0, 0, 0, 0),
    ('D_S_MINUS', 0, None, None, False, 'D_s+', -1, -1, 0, 0, 0, 0, 0, 0),
    ('D_S_PLUS', 0, None, None, False, 'D_s-', 1, 1, 0, 0, 0, 0, 0, 0),
    ('D_ZERO', 1, None, None, False, 'D0_bar', 0, 1, 0, 0, 0, 0, 0, 0),
    ('D_ZERO_BAR', 1, None, None, False, 'D0', 0, -1, 0, 0, 0, 0, 0, 0),
    ('ELECTRON', 0, None, None, False, 'positron', 0, 0, 0, 0, 0, 1, 0, 0),
    ('ELECTRON_ANTINEUTRINO', 0, None, None, False, 'nu_e', 0, 0, 0, 0, 0, -1, 0, 0),
    ('ELECTRON_NEUTRINO', 0, None, None, False, 'nubar_e', 0, 0, 0, 0, 0, 1, 0, 0),
    ('ETA', 0, None, 1, True, 'eta', None, None, None, None, 0, 0, 0, 0),
    ('ETA_PRIME', 0, None, 1, True, "eta'", None, None, None, None, 0, 0, 0, 0),
    ('HIGGS', 0, None, None, True, 'Higgs', None, None, None, None, 0, 0, 0, 0),
    ('J_PSI', 0, None, None, True, 'J/psi', None, None, None, None, 0, 0, 0, 0),
    ('K_LONG', None, None, None, True, 'K_L0', None, None, None, None, 0, 0, 0, 0),
    ('K_MINUS', 1, None, None, False, 'K+', -1, 0, 0, 0, 0, 0, 0, 0),
    ('K_PLUS', 1, None, None, False, 'K-', 1, 0, 0, 0, 0, 0, 0, 0),
    ('K_SHORT', None, None, None, True, 'K_S0', None, None, None, None, 0, 0, 0, 0),
    ('K_ZERO', 1, None, None, False, 'K0_bar', 1, 0, 0, 0, 0, 0, 0, 0),
    ('K_ZERO_BAR', 1, None, None, False, 'K0', -1, 0, 0, 0, 0, 0, 0, 0),
    ('LAMBDA', 0, None, None, False, 'Lambda0_bar', -1, 0, 0, 0, 1, 0, 0, 0),
    ('MUON', 0, None, None, False, 'antimuon', 0, 0, 0, 0, 0, 0, 1, 0),
    ('MUON_ANTINEUTRINO', 0, None, None, False, 'nu_mu', 0, 0, 0, 0, 0, 0, -1, 0),
    ('MUON_NEUTRINO', 0, None, None, False, 'nubar_mu', 0, 0, 0, 0, 0, 0, 1, 0),
    ('NEUTRON', 1, None, None, False, 'antineutron', 0, 0, 0, 0, 1, 0, 0, 0),
    ('OMEGA', 0, None, -1, True, 'omega', None, None, None, None, 0, 0, 0, 0),
    ('OMEGA_MINUS', 0, None, None, False, 'Omega+_bar', -3, 0, 0, 0, 1, 0, 0, 0),
    ('PHI', 0, None, -1, True, 'phi', None, None, None, None, 0, 0, 0, 0),
    ('PHOTON', None, None, None, True, 'photon', None, None, None, None, 0, 0, 0, 0),
    ('PI_MINUS', 2, None, None, False, 'pi+', 0, 0, 0, 0, 0, 0, 0, 0),
    ('PI_PLUS', 2, None, None, False, 'pi-', 0, 0, 0, 0, 0, 0, 0, 0),
    ('PI_ZERO', 2, None, -1, True, 'pi0', 0, 0, 0, 0, 0, 0, 0, 0),
    ('POSITRON', 0, None, None, False, 'electron', 0, 0, 0, 0, 0, -1, 0, 0),
    ('PROTON', 1, None, None, False, 'antiproton', 0, 0, 0, 0, 1, 0, 0, 0),
    ('RHO_MINUS', 2, None, None, False, 'rho+', None, None, None, None, 0, 0, 0, 0),
    ('RHO_PLUS', 2, None, None, False, 'rho-', None, None, None, None, 0, 0, 0, 0),
    ('RHO_ZERO', 2, None, 1, True, 'rho0', None, None, None, None, 0, 0, 0, 0),
    ('SIGMA_MINUS', 2, None, None, False, 'Sigma+_bar', -1, 0, 0, 0, 1, 0, 0, 0),
    ('SIGMA_PLUS', 2, None, None, False, 'Sigma-_bar', -1, 0, 0, 0, 1, 0, 0, 0),
    ('SIGMA_ZERO', 2, None, None, False, 'Sigma0_bar', -1, 0, 0, 0, 1, 0, 0, 0),
    ('TAU', 0, None, None, False, 'antitau', 0, 0, 0, 0, 0, 0, 0, 1),
    ('TAU_ANTINEUTRINO', 0, None, None, False, 'nu_tau', 0, 0, 0, 0, 0, 0, 0, -1),
    ('TAU_NEUTRINO', 0, None, None, False, 'nubar_tau', 0, 0, 0, 0, 0, 0, 0, 1),
    ('W_MINUS', 0, None, None, False, 'W+', None, None, None, None, 0, 0, 0, 0),
    ('W_PLUS', 0, None, None, False, 'W-', None, None, None, None, 0, 0, 0, 0),
    ('XI_MINUS', 1, None, None, False, 'Xi+_bar', -2, 0, 0, 0, 1, 0, 0, 0),
    ('XI_ZERO', 1, None, None, False, 'Xi0_bar', -2, 0, 0, 0, 1, 0, 0, 0),
    ('Z_BOSON', 0, None, None, True, 'Z', None, None, None, None, 0, 0, 0, 0),
)

_SIGN = {"+": 1, "-": -1, None: None}
_NUMBERS = ("strangeness", "charm", "bottomness", "topness", "baryon_number", "electron_lepton_number",
            "muon_lepton_number", "tau_lepton_number")


def _builtin(row: tuple, quantum: tuple) -> Particle:
    _, name, species, mass, spin, parity, c_parity, charge, pdg = row
    _, isospin, i3, g_parity, self_conjugate, anti, *numbers = quantum
    return Particle(
        name, species=species, mass=mass, spin=Fraction(spin), parity=_SIGN[parity],
        c_parity=_SIGN[c_parity], g_parity=g_parity, charge=charge, ids={"pdg": pdg},
        isospin=None if isospin is None else Isospin(Fraction(isospin, 2),
                                                     projection=None if i3 is None else Fraction(i3, 2)),
        statistics=Statistics.from_spin(Fraction(spin)), self_conjugate=self_conjugate,
        antiparticle_species=anti, **dict(zip(_NUMBERS, numbers, strict=True)),
    )


_EXTRA = {q[0]: q for q in _QUANTUM}
BUILTIN: dict[str, Particle] = {row[0]: _builtin(row, _EXTRA[row[0]]) for row in _TABLE}
globals().update(BUILTIN)
__all__ = ["BUILTIN", "Particle", *BUILTIN]
