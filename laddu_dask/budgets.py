"""Memory sizes and budgets, shared by every layer: parsing ``"2 GiB"``/``"70% available"``.

A :class:`MemoryBudget` is a number of bytes (``1024``, ``"500 MB"``, ``"2 GiB"``), a share
of a resource's memory (``"70%"``, ``"70% total"``), a share of what is free when it is
resolved (``"70% available"``), or ``None`` for no limit. The runtime's
:class:`~laddu_dask.runtime.memory.MemoryPlan` holds one for the host and one for a device;
a dataset read with ``memory=`` keeps one for its own reads.

Examples
--------
>>> from laddu_dask.budgets import MemoryBudget, parse_bytes
>>> parse_bytes("1.5 GiB")
1610612736
>>> MemoryBudget("50% available").resolve(total=1000, available=400)
200
"""

from __future__ import annotations

import json as json_module
import math
import re

from dask.utils import format_bytes as dask_format_bytes
from dask.utils import parse_bytes as dask_parse_bytes

from laddu_dask.errors import BudgetError

__all__ = ["MemoryBudget", "format_bytes", "parse_bytes"]

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PERCENT_RE = re.compile(rf"^\s*({_NUMBER})\s*%\s*(?:of\s+)?(total|available)?\s*$", re.I)
_UNLIMITED = ("unlimited", "none")
_SIZE_HINT = "expected a number of bytes such as 1024, '500 MB', '1.5GB' or '2 GiB'"


def format_bytes(n: int) -> str:
    """Human-readable size with the exact count, e.g. ``'1.50 GiB (1610612736 bytes)'``.

    Examples
    --------
    >>> format_bytes(1610612736)
    '1.50 GiB (1610612736 bytes)'
    >>> format_bytes(512)
    '512 bytes'
    """
    n = int(n)
    return f"{n} bytes" if abs(n) < 1024 else f"{dask_format_bytes(n)} ({n} bytes)"


def parse_bytes(spec: int | float | str) -> int:
    """Parse a memory size into bytes (with :func:`dask.utils.parse_bytes`, as Dask's config does).

    Decimal units (``kB``, ``MB``, ``GB``, ``TB``, ``PB``; also ``k``, ``M``, ...)
    are powers of 1000, binary units (``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB``;
    also ``Ki``, ``Mi``, ...) powers of 1024; case and spaces do not matter.
    Fractional results are rounded down to whole bytes.

    Raises
    ------
    BudgetError
        For negative, non-finite or unparseable sizes; the message quotes the text.

    Examples
    --------
    >>> parse_bytes(1024), parse_bytes("500 MB"), parse_bytes("1.5GB"), parse_bytes("64 KiB")
    (1024, 500000000, 1500000000, 65536)
    """
    if isinstance(spec, bool):
        raise BudgetError(f"cannot parse memory size {spec!r}: {_SIZE_HINT}")
    if isinstance(spec, int):
        if spec < 0:
            raise BudgetError(f"memory size must be >= 0 bytes, got {spec!r}")
        return spec
    if isinstance(spec, float):
        if not math.isfinite(spec) or spec < 0:
            raise BudgetError(f"memory size must be a finite number >= 0, got {spec!r}")
        return int(spec)
    if not isinstance(spec, str):
        raise BudgetError(f"cannot parse memory size {spec!r} ({type(spec).__name__}): {_SIZE_HINT}")
    try:
        n = dask_parse_bytes(spec) if spec.strip() else -1  # dask reads "" as 1 byte
    except (ValueError, OverflowError):
        n = -1
    if n < 0:
        raise BudgetError(f"cannot parse memory size {spec!r}: {_SIZE_HINT}")
    return n


def _percent(percent: float) -> float:
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 < percent <= 100:
        raise BudgetError(f"a memory percentage must be a number in (0, 100], got {percent!r}")
    return float(percent)


def _parse_percent(spec: str) -> tuple[str, float] | None:
    match = _PERCENT_RE.match(spec)
    if match is None:
        return None
    pct = float(match.group(1))
    if not 0 < pct <= 100:
        raise BudgetError(f"memory percentage must be in (0, 100], got {spec!r}")
    base = (match.group(2) or "total").lower()
    return base, pct


class MemoryBudget:
    """A budget of one memory resource (host or device).

    Parameters
    ----------
    value : MemoryBudget, int, str or None
        laddu's name for the one argument. ``None`` (or ``"unlimited"``): no limit. A size in bytes (``1024``,
        ``"500 MB"``, ``"2 GiB"``; see :func:`parse_bytes`). ``"70%"`` (or
        ``"70% total"``): that share of the resource's total memory.
        ``"70% available"``: that share of the memory free when it is resolved.

    Raises
    ------
    BudgetError
        When ``value`` cannot be parsed (checked at construction).

    Examples
    --------
    >>> MemoryBudget("70%").resolve(total=1000, available=400)
    700
    >>> MemoryBudget("50% available").resolve(total=1000, available=400)
    200
    >>> MemoryBudget(None).resolve(total=1000, available=400) is None
    True
    """

    def __init__(self, value: MemoryBudget | int | str | None) -> None:
        spec = value.spec if isinstance(value, MemoryBudget) else value
        self.spec = spec
        self._base: str | None = None  # None: absolute bytes; "total" / "available": share
        self._value: float | int | None = None  # bytes, or percentage
        if spec is None or (isinstance(spec, str) and spec.strip().lower() in _UNLIMITED):
            self.spec = None
            return
        percent = _parse_percent(spec) if isinstance(spec, str) else None
        if percent is not None:
            self._base, self._value = percent
        else:
            self._value = parse_bytes(spec)

    @property
    def unlimited(self) -> bool:
        """Whether the budget sets no limit."""
        return self._value is None

    @property
    def needs_machine(self) -> bool:
        """Whether resolving needs the machine's memory sizes (a percentage)."""
        return self._base is not None

    def resolve(self, total: int, available: int) -> int | None:
        """Bytes allowed given the resource's ``total`` and ``available`` bytes.

        Returns ``None`` for an unlimited budget.

        Examples
        --------
        >>> MemoryBudget("1 KiB").resolve(total=10**9, available=0)
        1024
        """
        if self._value is None:
            return None
        if self._base is None:
            return int(self._value)
        for name, value in (("total", total), ("available", available)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BudgetError(f"{name} memory must be an integer >= 0 bytes, got {value!r}")
        base = total if self._base == "total" else available
        return int(base * self._value / 100)

    # -- laddu's constructors and JSON form ------------------------------------------------
    @staticmethod
    def bytes(bytes: int) -> MemoryBudget:  # noqa: A002 - laddu's keyword
        """A budget of ``bytes`` bytes (laddu's ``MemoryBudget.bytes``)."""
        if isinstance(bytes, bool) or not isinstance(bytes, int):
            raise TypeError(f"MemoryBudget.bytes takes an int, got {type(bytes).__name__}")
        return MemoryBudget(bytes)

    @staticmethod
    def percent_available(percent: float) -> MemoryBudget:
        """``percent`` % of the memory free when the budget is resolved."""
        return MemoryBudget(f"{_percent(percent)!r}% available")

    @staticmethod
    def percent_total(percent: float) -> MemoryBudget:
        """``percent`` % of the resource's total memory."""
        return MemoryBudget(f"{_percent(percent)!r}% total")

    def to_json(self) -> str:
        """laddu's JSON form: ``{"bytes": n}``, ``{"percent_total": f}``, ``{"percent_available": f}``
        (``f`` a fraction); an unlimited budget (laddu-dask's ``None``) is ``"unlimited"``.

        Examples
        --------
        >>> MemoryBudget("60% available").to_json(), MemoryBudget("2 KiB").to_json()
        ('{"percent_available": 0.6}', '{"bytes": 2048}')
        >>> MemoryBudget.from_json(json='{"percent_total": 0.5}')
        MemoryBudget('50.0% total')
        """
        if self._value is None:
            return json_module.dumps("unlimited")
        if self._base is None:
            return json_module.dumps({"bytes": int(self._value)})
        return json_module.dumps({f"percent_{self._base}": self._value / 100})

    @staticmethod
    def from_json(json: str) -> MemoryBudget:
        """The budget :meth:`to_json` (or laddu's) wrote; laddu's ``"auto"`` has no equivalent
        here (a :class:`~laddu_dask.errors.BudgetError`)."""
        try:
            data = json_module.loads(json)
        except (TypeError, ValueError):
            raise BudgetError(f"MemoryBudget.from_json needs JSON, got {json!r}") from None
        if data == "unlimited":
            return MemoryBudget(None)
        if isinstance(data, dict) and len(data) == 1:
            (key, value), = data.items()
            if key == "bytes" and isinstance(value, int) and not isinstance(value, bool):
                return MemoryBudget(value)
            if key in ("percent_total", "percent_available") and isinstance(value, (int, float)):
                base = key.removeprefix("percent_")
                percent = float(f"{100 * value:.12g}")  # 0.6 is 60 %, not 60.00000000000001 %
                return MemoryBudget(f"{_percent(percent)!r}% {base}")
        raise BudgetError(f"MemoryBudget.from_json: not a budget laddu-dask has: {json!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryBudget):
            return NotImplemented
        return (self._base, self._value) == (other._base, other._value)

    def __hash__(self) -> int:
        return hash((self._base, self._value))

    def __repr__(self) -> str:
        return f"MemoryBudget({self.spec!r})"
