"""laddu's keywords of ``read_parquet`` and ``read_root``: ``memory``, ``cache``, ``nulls``,
``validate`` and ``schema``, checked once for both readers.

Examples
--------
>>> from laddu_dask.data.read_options import check_cache, check_nulls
>>> check_cache(" Auto ", None), check_nulls("nan")
('fastest', 'nan')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema
from laddu_dask.errors import BudgetError, SchemaError
from laddu_dask.options import MemoryPolicy

__all__ = ["NULLS", "check_cache", "check_memory", "check_nulls", "check_validate", "select_schema"]

#: Values of ``nulls``: a null is an error, or read as NaN.
NULLS = ("error", "nan")


def check_cache(cache: Any, memory_policy: Any) -> str:
    """The memory policy from laddu's ``cache`` or laddu-dask's ``memory_policy`` (an alias).

    Like laddu, ``cache`` ignores case and surrounding spaces and takes ``"auto"`` for
    ``"fastest"``; both default to ``"fastest"``.

    Raises
    ------
    TypeError
        ``cache`` is not a string.
    ValueError
        An unknown value (naming the keyword), or ``cache`` and ``memory_policy`` disagree.

    Examples
    --------
    >>> check_cache("RESIDENT", None), check_cache(None, "streaming"), check_cache(None, None)
    ('resident', 'streaming', 'fastest')
    """
    policy = None if memory_policy is None else MemoryPolicy.check(memory_policy, "memory_policy")
    if cache is None:
        return policy or MemoryPolicy.FASTEST.value
    if not isinstance(cache, str):
        raise TypeError(f"cache must be a str ('fastest', 'resident', 'disk' or 'streaming'), got "
                        f"{type(cache).__name__}")
    word = cache.strip().lower()
    word = MemoryPolicy.FASTEST.value if word == "auto" else word
    checked = MemoryPolicy.check(word, "cache")
    if policy is not None and policy != checked:
        raise ValueError(f"cache={cache!r} and memory_policy={memory_policy!r} disagree; they are the "
                         "same setting (laddu's and laddu-dask's name)")
    return checked


def check_memory(memory: Any) -> MemoryBudget | None:
    """laddu's ``memory=`` of a read: ``None`` (the execution's budget alone), a
    :class:`~laddu_dask.MemoryBudget`, a byte count or a text such as ``"8 GiB"`` or
    ``"60% available"``.

    Raises
    ------
    TypeError
        Another type (naming ``memory``).
    BudgetError
        A text that is no size, a negative count, or a budget of zero bytes.

    Examples
    --------
    >>> check_memory("2 GiB").resolve(0, 0)
    2147483648
    >>> check_memory(None) is None
    True
    """
    if memory is None:
        return None
    if isinstance(memory, bool) or not isinstance(memory, (MemoryBudget, int, str)):
        raise TypeError(f"memory must be a MemoryBudget, a byte count (int) or a string such as '8 GiB' "
                        f"or '60% available', got {type(memory).__name__}")
    try:
        budget = MemoryBudget(memory)
    except BudgetError as err:
        raise BudgetError(f"memory={memory!r}: {err}") from None
    if not budget.needs_machine and budget.resolve(0, 0) == 0:
        raise BudgetError(f"memory={memory!r}: a read's memory budget must be greater than zero bytes")
    return budget


def check_nulls(nulls: Any) -> str:
    """``"error"`` (a null value is a :class:`~laddu_dask.errors.DataError` naming its event)
    or ``"nan"`` (read as NaN), as laddu's ``nulls=``.

    Examples
    --------
    >>> check_nulls("fill")
    Traceback (most recent call last):
    ...
    ValueError: nulls must be 'error' or 'nan', got 'fill'
    """
    if not isinstance(nulls, str):
        raise TypeError(f"nulls must be a str ('error' or 'nan'), got {type(nulls).__name__}")
    if nulls not in NULLS:
        raise ValueError(f"nulls must be 'error' or 'nan', got {nulls!r}")
    return nulls


def check_validate(validate: Any) -> bool:
    """laddu's ``validate=``: a bool (laddu-dask reads and checks every file's metadata either way).

    Examples
    --------
    >>> check_validate(False)
    False
    """
    if not isinstance(validate, bool):
        raise TypeError(f"validate must be a bool, got {type(validate).__name__}")
    return validate


def reader_options(options: Any, known: tuple[str, ...], name: str) -> dict[str, Any]:
    """A registered format's ``options``: None, or a mapping of the keywords it knows.

    Raises
    ------
    TypeError
        ``options`` is not a mapping, or holds a keyword the format does not take (naming it
        and the format).

    Examples
    --------
    >>> reader_options({"nulls": "nan"}, ("nulls", "schema"), "parquet")
    {'nulls': 'nan'}
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"format {name!r} takes options as a dict of {', '.join(known)}, got "
                        f"{type(options).__name__}")
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"format {name!r} has no option(s) {', '.join(map(repr, unknown))} (it takes "
                        f"{', '.join(known)})")
    return dict(options)


def select_schema(found: Schema, wanted: Schema | None, where: str) -> Schema:
    """The fields of ``found`` (the files' schema) that ``wanted`` selects, in its order.

    As laddu's ``schema=``: only the four-vectors and scalars named are read; weights are
    read only with ``weights=True`` (which needs a ``weight`` column), else every weight is 1.

    Raises
    ------
    TypeError
        ``wanted`` is not a :class:`~laddu_dask.Schema`.
    SchemaError
        A selected field the files lack, or one not numeric (naming it and ``where``).

    Examples
    --------
    >>> found = Schema(("beam", "k"), ("s",), True)
    >>> select_schema(found, Schema(p4s=["k"], weights=True), "a.parquet")
    Schema(p4s=('k',), scalars=(), has_weight=True)
    """
    if wanted is None:
        return found
    if not isinstance(wanted, Schema):
        raise TypeError(f"schema must be a laddu_dask.Schema (ld.Schema(p4s=..., scalars=..., weights=...)), "
                        f"got {type(wanted).__name__}")
    found.require(wanted.flat_columns(), where, needed_by="schema=")
    if wanted.has_weight and not found.has_weight:
        raise SchemaError(f"schema= asks for weights (weights=True), but {where} has no "
                          f"{WEIGHT_COLUMN!r} column")
    return Schema(wanted.p4s, wanted.scalars, wanted.has_weight)
