"""Integrated luminosity and the area units of cross sections (laddu's ``AreaUnit``,
``Luminosity``).

Examples
--------
>>> lum = Luminosity(2.0, AreaUnit.PICOBARN)      # 2 pb^-1
>>> round(lum.to_unit(AreaUnit.NANOBARN).value, 9)
2000.0
>>> lum.with_relative_uncertainty(0.05, 1).relative_uncertainty
0.05
"""

from __future__ import annotations

import enum
import math

from laddu_dask.errors import ParameterError


class AreaUnit(enum.IntEnum):
    """Area prefix of cross sections and reciprocal luminosities (laddu's values)."""

    BARN = 0
    MILLIBARN = 1
    MICROBARN = 2
    NANOBARN = 3
    PICOBARN = 4
    FEMTOBARN = 5

    @property
    def exponent(self) -> int:
        """The power of ten of one unit in barn (``PICOBARN``: -12)."""
        return -3 * int(self)

    def __repr__(self) -> str:
        return f"AreaUnit.{self.name}"

    __str__ = __repr__


class Luminosity:
    """A positive integrated luminosity in inverse ``unit`` (``Luminosity(2.0, PICOBARN)``
    is 2 pb^-1).

    Raises
    ------
    ParameterError
        If ``value`` is not finite and positive, or ``unit`` is not an :class:`AreaUnit`.
    """

    def __init__(self, value: float, unit: AreaUnit) -> None:
        if not isinstance(unit, AreaUnit):
            raise ParameterError(f"unit must be an AreaUnit, got {unit!r}")
        value = float(value)
        if not (math.isfinite(value) and value > 0):
            raise ParameterError(f"luminosity must be finite and positive, got {value!r}")
        self._value, self._unit = value, unit
        self._relative: float | None = None
        self._source: int | None = None

    @property
    def value(self) -> float:
        """The luminosity in inverse :attr:`unit`."""
        return self._value

    @property
    def unit(self) -> AreaUnit:
        """Its area unit."""
        return self._unit

    @property
    def relative_uncertainty(self) -> float | None:
        """Its relative uncertainty, when given."""
        return self._relative

    @property
    def source_id(self) -> int | None:
        """Identifies the uncertainty (luminosities with one id are fully correlated)."""
        return self._source

    def to_unit(self, unit: AreaUnit) -> Luminosity:
        """The same luminosity in inverse ``unit``."""
        if not isinstance(unit, AreaUnit):
            raise ParameterError(f"unit must be an AreaUnit, got {unit!r}")
        out = Luminosity(self._value * 10.0 ** (unit.exponent - self._unit.exponent), unit)
        out._relative, out._source = self._relative, self._source
        return out

    def with_relative_uncertainty(self, uncertainty: float, source_id: int) -> Luminosity:
        """This luminosity with a relative uncertainty (identified by ``source_id``)."""
        if not (math.isfinite(uncertainty) and uncertainty >= 0):
            raise ParameterError(f"a relative uncertainty must be finite and >= 0, got {uncertainty!r}")
        out = Luminosity(self._value, self._unit)
        out._relative, out._source = float(uncertainty), int(source_id)
        return out

    def __repr__(self) -> str:
        rel = f" +- {100 * self._relative:.3g}%" if self._relative is not None else ""
        return f"Luminosity({self._value:.6g} / {self._unit.name.lower()}{rel})"
