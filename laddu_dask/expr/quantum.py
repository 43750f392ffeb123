"""Typed quantum numbers as laddu 0.28.1 spells them: ``J``, ``S``, ``L``, ``M``, ``Parity``.

Each holds its value exactly (twice the value as an integer), so half-integers never round.
They are accepted wherever laddu accepts them (``WignerD``, ``clebsch_gordan``,
``spherical_harmonic``, ...), as are plain integers, half-integer floats and
``fractions.Fraction``.  Comparisons, hashing and the printed form follow laddu.

Examples
--------
>>> import laddu_dask as ld
>>> ld.J(1.5).multiplicity, ld.J(0.5).coupled_with(ld.S(1))
(4, [J(1/2), J(3/2)])
>>> str(ld.L(2)), ld.L(3).parity
('D', Parity.NEGATIVE)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError

#: Spectroscopic letters of L = 0..6 (laddu prints ``L7``, ``L8``, ... above).
_LETTERS = "SPDFGHI"
_MAX_DOUBLED = 2**32 - 1  # laddu stores doubled values as unsigned 32-bit integers


def doubled(value: Any, what: str) -> int:
    """Twice ``value`` as an exact integer; ``value`` must be an integer or half-integer.

    Accepts the quantum-number types, ``int``, ``float`` and ``Fraction``.

    Examples
    --------
    >>> doubled(1.5, "j"), doubled(Fraction(-1, 2), "m")
    (3, -1)
    """
    if isinstance(value, _Half):
        return value.doubled
    if isinstance(value, Parity) or not isinstance(value, int | float | Fraction):
        raise ModelError(
            f"{what} must be a quantum number, an integer, a half-integer float or a "
            f"fractions.Fraction, got {value!r}"
        )
    if isinstance(value, float) and not value == value:  # NaN
        raise ModelError(f"{what} must be an integer or half-integer, got {value!r}")
    try:
        twice = Fraction(value) * 2
    except (OverflowError, ValueError):
        raise ModelError(f"{what} must be an integer or half-integer, got {value!r}") from None
    if twice.denominator != 1:
        raise ModelError(f"{what} must be an integer or half-integer, got {value!r}")
    return int(twice)


def _text(twice: int) -> str:
    return str(twice // 2) if twice % 2 == 0 else f"{twice}/2"


class _Ordered:
    """Equality and order by an integer key; other operands are converted by ``_other``
    (``None`` when they are not comparable: unequal, and ordering raises ``TypeError``)."""

    __slots__ = ()

    def _key(self) -> int:
        raise NotImplementedError

    def _other(self, other: object) -> int | None:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        key = self._other(other)
        return key is not None and key == self._key()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def _order(self, other: object) -> int:
        key = self._other(other)
        if key is None:
            raise TypeError(f"cannot compare {self!r} with {other!r}")
        return self._key() - key

    def __lt__(self, other: object) -> bool:
        return self._order(other) < 0

    def __le__(self, other: object) -> bool:
        return self._order(other) <= 0

    def __gt__(self, other: object) -> bool:
        return self._order(other) > 0

    def __ge__(self, other: object) -> bool:
        return self._order(other) >= 0


class _Half(_Ordered):
    """An exact integer or half-integer (stored doubled); the common base of J, S, L, M."""

    __slots__ = ("_doubled",)
    _what = "value"
    _nonnegative = True

    def __init__(self, value: Any) -> None:
        twice = doubled(value, self._what)
        if self._nonnegative and twice < 0:
            raise ModelError(f"{self._what} must be nonnegative, got {value!r}")
        if abs(twice) > _MAX_DOUBLED:
            raise ModelError(f"{self._what} is too large for a quantum number, got {value!r}")
        self._doubled = twice

    @property
    def doubled(self) -> int:
        """Twice the value, exactly."""
        return self._doubled

    @property
    def value(self) -> float:
        """The value as a float."""
        return self._doubled / 2

    @property
    def is_integer(self) -> bool:
        """Whether the value is integral rather than half-integral."""
        return self._doubled % 2 == 0

    @property
    def fraction(self) -> Fraction:
        """The value as an exact ``Fraction``."""
        return Fraction(self._doubled, 2)

    def __float__(self) -> float:
        return self._doubled / 2

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_text(self._doubled)})"

    def __hash__(self) -> int:
        return hash(("laddu_dask.quantum", self._doubled))

    def _key(self) -> int:
        return self._doubled

    def _other(self, other: object) -> int | None:
        try:
            return doubled(other, "the other operand")
        except ModelError:
            return None

    def to_json(self) -> str:
        """The doubled value as JSON (laddu's serialization)."""
        return str(self._doubled)

    @classmethod
    def from_json(cls, json: str) -> Any:
        """The quantum number serialized by :meth:`to_json`."""
        return cls(Fraction(int(json), 2))


class _Spin(_Half):
    """Nonnegative integer or half-integer angular momentum (J and S)."""

    __slots__ = ()

    @property
    def multiplicity(self) -> int:
        """Number of projections, ``2 j + 1``."""
        return self._doubled + 1

    def projections(self) -> list[M]:
        """All projections from ``-j`` to ``+j``."""
        return [M(Fraction(k, 2)) for k in range(-self._doubled, self._doubled + 1, 2)]

    def coupled_with(self, other: Any) -> list[J]:
        """Every total angular momentum obtained by coupling with ``other``.

        Examples
        --------
        >>> J(1).coupled_with(1)
        [J(0), J(1), J(2)]
        """
        b = doubled(other, "the other angular momentum")
        if b < 0:
            raise ModelError(f"the other angular momentum must be nonnegative, got {other!r}")
        a = self._doubled
        return [J(Fraction(k, 2)) for k in range(abs(a - b), a + b + 1, 2)]

    def can_couple_to(self, first: Any, second: Any) -> bool:
        """Whether ``first`` and ``second`` couple to this angular momentum."""
        return self in J(first).coupled_with(second)

    def __add__(self, other: Any) -> Any:
        return type(self)(Fraction(self._doubled + doubled(other, "the other operand"), 2))

    __radd__ = __add__


class J(_Spin):
    """A nonnegative integer or half-integer total angular momentum (laddu's ``J``).

    Parameters
    ----------
    value : J, S, L, M, int, float or Fraction
        Floats must be exact integers or half-integers.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.J(1.5).projections()
    [M(-3/2), M(-1/2), M(1/2), M(3/2)]
    """

    __slots__ = ()
    _what = "angular momentum"


class S(_Spin):
    """A particle spin quantum number (laddu's ``S``): like :class:`J`, for intrinsic spin.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.S(0.5).multiplicity
    2
    """

    __slots__ = ()
    _what = "spin"


class L(_Half):
    """A nonnegative integral orbital angular momentum (laddu's ``L``).

    ``str`` gives spectroscopic notation (S, P, D, F, G, H, I, then L7, L8, ...).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.L(1).value, str(ld.L(1)), ld.L(1).parity
    (1, 'P', Parity.NEGATIVE)
    """

    __slots__ = ()
    _what = "orbital angular momentum"

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        if self._doubled % 2:
            raise ModelError(f"orbital angular momentum must be an integer, got {value!r}")

    @property
    def value(self) -> int:  # type: ignore[override]
        """The orbital angular momentum as an ``int``."""
        return self._doubled // 2

    @property
    def multiplicity(self) -> int:
        """Number of projections, ``2 L + 1``."""
        return self._doubled + 1

    @property
    def parity(self) -> Parity:
        """The orbital parity ``(-1)**L``."""
        return Parity(-1 if self.value % 2 else 1)

    def projections(self) -> list[M]:
        """The integral projections from ``-L`` to ``+L``."""
        return [M(k) for k in range(-self.value, self.value + 1)]

    def __str__(self) -> str:
        return _LETTERS[self.value] if self.value < len(_LETTERS) else f"L{self.value}"


class M(_Half):
    """An integer or half-integer angular-momentum projection (laddu's ``M``; may be negative).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> -ld.M(0.5), ld.M(1) - ld.M(0.5)
    (M(-1/2), M(1/2))
    """

    __slots__ = ()
    _what = "projection"
    _nonnegative = False

    def __neg__(self) -> M:
        return M(Fraction(-self._doubled, 2))

    def __add__(self, other: Any) -> M:
        return M(Fraction(self._doubled + doubled(other, "the other operand"), 2))

    __radd__ = __add__

    def __sub__(self, other: Any) -> M:
        return M(Fraction(self._doubled - doubled(other, "the other operand"), 2))


#: Parity names laddu accepts (case-insensitive).
_PARITY_NAMES = {"+": 1, "plus": 1, "pos": 1, "positive": 1,
                 "-": -1, "minus": -1, "neg": -1, "negative": -1}


class Parity(_Ordered):
    """A positive or negative parity eigenvalue (laddu's ``Parity``).

    Parameters
    ----------
    value : Parity, int or str
        ``+1``/``-1``, or a name: ``"+"``, ``"plus"``, ``"pos"``, ``"positive"`` and their
        negative counterparts (any case).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Parity("+") * ld.Parity(-1), int(ld.Parity.POSITIVE)
    (Parity.NEGATIVE, 1)
    """

    __slots__ = ("_value",)
    POSITIVE: Parity
    NEGATIVE: Parity

    def __init__(self, value: Parity | int | str) -> None:
        if isinstance(value, Parity):
            sign = value.value
        elif isinstance(value, str):
            sign = _PARITY_NAMES.get(value.strip().lower(), 0)
            if not sign:
                raise ModelError(f"{value!r} is not a parity (use +1, -1, '+', '-', 'positive' "
                                 "or 'negative')")
        elif isinstance(value, int) and not isinstance(value, bool):
            if value not in (1, -1):
                raise ModelError(f"parity must be +1 or -1, got {value!r}")
            sign = value
        else:
            raise ModelError(f"parity must be a Parity, +1, -1 or a parity name, got {value!r}")
        self._value = sign

    @property
    def value(self) -> int:
        """The eigenvalue, ``+1`` or ``-1``."""
        return self._value

    def __int__(self) -> int:
        return self._value

    def __repr__(self) -> str:
        return "Parity.POSITIVE" if self._value > 0 else "Parity.NEGATIVE"

    def __hash__(self) -> int:
        return hash(("laddu_dask.Parity", self._value))

    def _key(self) -> int:
        return self._value

    def _other(self, other: object) -> int | None:
        try:
            return Parity(other).value  # type: ignore[arg-type]
        except ModelError:
            return None

    def __mul__(self, other: object) -> Parity:
        sign = self._other(other)
        if sign is None:
            return NotImplemented
        return Parity(self._value * sign)

    __rmul__ = __mul__

    def __neg__(self) -> Parity:
        return Parity(-self._value)

    def to_json(self) -> str:
        """``"Positive"`` or ``"Negative"`` as JSON (laddu's serialization)."""
        return '"Positive"' if self._value > 0 else '"Negative"'

    @staticmethod
    def from_json(json: str) -> Parity:
        """The parity serialized by :meth:`to_json`."""
        return Parity(json.strip().strip('"'))


Parity.POSITIVE = Parity(1)
Parity.NEGATIVE = Parity(-1)


class Statistics(_Ordered):
    """Bose-Einstein or Fermi-Dirac statistics (laddu's ``Statistics``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Statistics.from_spin(ld.S(0.5)), ld.particles.PI_PLUS.statistics
    (Statistics.FERMION, Statistics.BOSON)
    """

    __slots__ = ("_fermion",)
    BOSON: Statistics
    FERMION: Statistics

    def __init__(self, value: Statistics | str) -> None:
        if isinstance(value, Statistics):
            self._fermion = value._fermion
            return
        name = value.strip().upper() if isinstance(value, str) else None
        if name not in ("BOSON", "FERMION"):
            raise ModelError(f"statistics must be Statistics.BOSON, Statistics.FERMION, 'boson' or "
                             f"'fermion', got {value!r}")
        self._fermion = name == "FERMION"

    @staticmethod
    def from_spin(spin: Any) -> Statistics:
        """Bosons for integer spin, fermions for half-integer spin (spin-statistics theorem)."""
        return Statistics.FERMION if doubled(spin, "spin") % 2 else Statistics.BOSON

    def __repr__(self) -> str:
        return "Statistics.FERMION" if self._fermion else "Statistics.BOSON"

    def to_json(self) -> str:
        """``"Fermion"`` or ``"Boson"`` as JSON (laddu's serialization)."""
        return '"Fermion"' if self._fermion else '"Boson"'

    @staticmethod
    def from_json(json: str) -> Statistics:
        """The statistics serialized by :meth:`to_json`."""
        return Statistics(json.strip().strip('"'))

    def __hash__(self) -> int:
        return hash(("laddu_dask.Statistics", self._fermion))

    def _key(self) -> int:
        return int(self._fermion)

    def _other(self, other: object) -> int | None:
        return int(other._fermion) if isinstance(other, Statistics) else None


Statistics.BOSON = Statistics("boson")
Statistics.FERMION = Statistics("fermion")
