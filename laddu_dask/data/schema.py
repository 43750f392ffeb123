"""Column layout of an event sample, in laddu's Parquet convention.

Every four-vector ``NAME`` is stored as the four columns ``NAME_e``, ``NAME_px``,
``NAME_py`` and ``NAME_pz``; every scalar is one column under its own name; the
optional ``weight`` column holds the event weights (1 when absent).

Examples
--------
>>> from laddu_dask.data.schema import Schema
>>> s = Schema.from_column_names(["beam_e", "beam_px", "beam_py", "beam_pz", "pol"], "x.parquet")
>>> s.p4s, s.scalars, s.has_weight
(('beam',), ('pol',), False)
>>> s.flat_columns()
['beam_e', 'beam_px', 'beam_py', 'beam_pz', 'pol']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from laddu_dask.errors import SchemaError

P4_COMPONENTS: tuple[str, ...] = ("e", "px", "py", "pz")
"""Suffixes of the four columns of a four-vector, in (E, px, py, pz) order."""

WEIGHT_COLUMN = "weight"
"""Name of the optional event-weight column."""


def p4_columns(name: str) -> list[str]:
    """Return the four column names of four-vector ``name``.

    Examples
    --------
    >>> p4_columns("beam")
    ['beam_e', 'beam_px', 'beam_py', 'beam_pz']
    """
    return [f"{name}_{c}" for c in P4_COMPONENTS]


def _split_component(column: str) -> tuple[str, str] | None:
    """Split ``'NAME_px'`` into ``('NAME', 'px')``; None when not a component name."""
    head, sep, tail = column.rpartition("_")
    if sep and head and tail in P4_COMPONENTS:
        return head, tail
    return None


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)


def integer_dtype(kind: object, name: str) -> str:
    """The canonical name (``"int32"``) of an exact integer column's dtype.

    Raises
    ------
    SchemaError
        ``kind`` is no dtype, or not a signed or unsigned 8-, 16-, 32- or 64-bit integer
        (naming the column).

    Examples
    --------
    >>> integer_dtype("u1", "run")
    'uint8'
    """
    try:
        dt = np.dtype(kind)  # type: ignore[call-overload]
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "iu":
        raise SchemaError(f"column {name!r} must have an integer dtype (int8 to int64, uint8 to "
                          f"uint64), got {kind!r}")
    return dt.name


@dataclass(frozen=True, init=False)
class Schema:
    """Which four-vectors, scalars and weight an event sample holds.

    Parameters
    ----------
    p4s : tuple of str
        Four-vector names, in file column order.
    scalars : tuple of str
        Scalar column names, in file column order.
    has_weight : bool
        Whether a ``weight`` column is stored (otherwise every weight is 1).
    non_numeric : tuple of (column, type, file)
        Columns that exist but hold no numbers (strings, timestamps, dates), with
        their Arrow type and the file they were found in; a model cannot use them,
        and :meth:`require` says so. They play no part in comparing schemas.

    Examples
    --------
    >>> s = Schema(p4s=("beam",), scalars=(), has_weight=True)
    >>> s.flat_columns()
    ['beam_e', 'beam_px', 'beam_py', 'beam_pz']
    """

    p4s: tuple[str, ...]
    scalars: tuple[str, ...]
    has_weight: bool
    non_numeric: tuple[tuple[str, str, str], ...] = field(default=(), compare=False, repr=False)
    exact: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def __init__(self, p4s: Iterable[str] = (), scalars: Iterable[str] = (), has_weight: bool = False,
                 non_numeric: Iterable[tuple[str, str, str]] = (), *, weights: bool | None = None,
                 columns: Mapping[str, object] | None = None,
                 exact: Iterable[tuple[str, str]] = ()) -> None:
        """laddu's keywords too: ``Schema(p4s=[...], scalars=[...], weights=True, columns={...})``.

        ``weights`` is laddu's name of ``has_weight``; ``columns`` declares laddu's exact
        integer columns, name to an integer dtype (``"int32"``, ``np.uint8``, ...): their
        names are scalars here too (laddu-dask holds them as float64 scalars), and
        :attr:`columns` gives the declarations back with canonical dtype names.
        """
        if weights is not None:
            if not isinstance(weights, bool):
                raise TypeError(f"Schema(weights=) must be a bool, got {type(weights).__name__}")
            if has_weight and not weights:
                raise ValueError("Schema: has_weight=True and weights=False disagree (the same setting)")
            has_weight = weights
        if isinstance(p4s, str) or isinstance(scalars, str):
            raise TypeError("Schema(p4s=, scalars=) take sequences of names, not one string")
        if columns is not None and not isinstance(columns, Mapping):
            raise TypeError(f"Schema(columns=) takes a mapping of name to integer dtype, got "
                            f"{type(columns).__name__}")
        declared = tuple((name, integer_dtype(kind, name)) for name, kind in (columns or {}).items())
        exact = tuple(tuple(e) for e in exact) + declared  # type: ignore[misc]
        object.__setattr__(self, "p4s", tuple(p4s))
        object.__setattr__(self, "scalars", tuple(scalars) + tuple(n for n, _ in declared))
        object.__setattr__(self, "has_weight", bool(has_weight))
        object.__setattr__(self, "non_numeric", tuple(tuple(c) for c in non_numeric))
        object.__setattr__(self, "exact", exact)
        self.__post_init__()

    @property
    def weights(self) -> bool:
        """Whether weights are stored (laddu's name of :attr:`has_weight`)."""
        return self.has_weight

    @property
    def columns(self) -> dict[str, str]:
        """laddu's exact integer columns: name to canonical dtype name, in schema order.

        Examples
        --------
        >>> import numpy as np
        >>> Schema(p4s=["k"], columns={"run": np.int32}).columns
        {'run': 'int32'}
        >>> Schema(p4s=["k"], scalars=["s"]).columns
        {}
        """
        return dict(self.exact)

    def __post_init__(self) -> None:
        cols = self.flat_columns()
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise SchemaError(f"schema defines column(s) {_quoted(dup)} more than once")
        if WEIGHT_COLUMN in cols:
            raise SchemaError(
                f"{WEIGHT_COLUMN!r} is reserved for event weights and cannot be a scalar"
            )

    def flat_columns(self) -> list[str]:
        """Flat column names: four-vector columns, then scalars (never ``weight``).

        Examples
        --------
        >>> Schema(("k",), ("s",), True).flat_columns()
        ['k_e', 'k_px', 'k_py', 'k_pz', 's']
        """
        out: list[str] = []
        for name in self.p4s:
            out.extend(p4_columns(name))
        out.extend(self.scalars)
        return out

    @classmethod
    def from_column_names(cls, names: Iterable[str], source: str) -> Schema:
        """Infer the schema from a file's column names.

        Columns ``NAME_e``, ``NAME_px``, ``NAME_py``, ``NAME_pz`` form four-vector
        ``NAME``. A name with two or three of these four columns is an incomplete
        four-vector and raises :class:`SchemaError`; a lone ``NAME_e`` (say) is
        taken as a scalar. ``weight`` is the event weight; every other column is
        a scalar.

        Parameters
        ----------
        names : iterable of str
            Column names, in file order.
        source : str
            Where the names come from (a file path), for error messages.

        Raises
        ------
        SchemaError
            For an incomplete four-vector (naming it, its missing columns and
            ``source``) or a repeated column name.

        Examples
        --------
        >>> Schema.from_column_names(["k_e", "k_px", "k_py", "k_pz", "weight"], "f").p4s
        ('k',)
        """
        names = list(names)
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise SchemaError(f"column {n!r} appears more than once in {source}")
            seen.add(n)
        groups: dict[str, list[str]] = {}
        for n in names:
            split = _split_component(n)
            if split is not None:
                groups.setdefault(split[0], []).append(split[1])
        p4s: list[str] = []
        for head, comps in groups.items():
            if len(comps) == len(P4_COMPONENTS):
                p4s.append(head)
            elif len(comps) > 1:
                missing = [c for c in p4_columns(head) if c not in seen]
                raise SchemaError(
                    f"four-vector {head!r} in {source} is incomplete: it lacks column(s) "
                    f"{_quoted(missing)} (a four-vector needs {_quoted(p4_columns(head))})"
                )
        in_p4 = {c for p in p4s for c in p4_columns(p)}
        scalars = tuple(n for n in names if n not in in_p4 and n != WEIGHT_COLUMN)
        return cls(p4s=tuple(p4s), scalars=scalars, has_weight=WEIGHT_COLUMN in seen)

    @classmethod
    def from_typed_columns(cls, columns: Iterable[tuple[str, str, bool]], source: str) -> Schema:
        """Infer the schema from ``(name, type, is_number)`` of every column of a source.

        Columns that hold no numbers (strings, objects, dates) are kept in
        :attr:`non_numeric` with their type: an error only if a model needs one. A
        non-numeric ``weight`` or four-vector component is an error now.

        Raises
        ------
        SchemaError
            A non-numeric weight or four-vector column (naming it, its type and
            ``source``), a column name that is not a string, and the errors of
            :meth:`from_column_names`.

        Examples
        --------
        >>> s = Schema.from_typed_columns([("x", "double", True), ("run", "string", False)], "f")
        >>> s.scalars, s.non_numeric
        (('x',), (('run', 'string', 'f'),))
        >>> Schema.from_typed_columns([("weight", "string", False)], "f")
        Traceback (most recent call last):
        ...
        laddu_dask.errors.SchemaError: column 'weight' in f has type string; expected a number
        """
        columns = list(columns)
        for name, _, _ in columns:
            if not isinstance(name, str):
                raise SchemaError(f"column names must be strings; {source} has column {name!r}")
        numeric = [name for name, _, is_number in columns if is_number]
        heads = {split[0] for n in numeric if (split := _split_component(n)) is not None}
        other = []
        for name, kind, is_number in columns:
            if is_number:
                continue
            split = _split_component(name)
            if name == WEIGHT_COLUMN or (split is not None and split[0] in heads):
                raise SchemaError(f"column {name!r} in {source} has type {kind}; expected a number")
            other.append((name, kind, source))
        return replace(cls.from_column_names(numeric, source), non_numeric=tuple(other))

    def require(self, columns: Iterable[str], source: str, *, needed_by: str = "model") -> None:
        """Check that every column in ``columns`` exists and holds numbers.

        ``weight`` always counts as present (it defaults to 1).

        Parameters
        ----------
        columns : iterable of str
            Flat column names that are needed.
        source : str
            Where the data come from (a file path, or ``"arrays"``).
        needed_by : str, default "model"
            Who needs the columns, for the message.

        Raises
        ------
        SchemaError
            Naming every missing column and ``source``, and every needed column that
            exists but is not numeric with its type and file.

        Examples
        --------
        >>> s = Schema(("beam",), (), False, non_numeric=(("run", "string", "data.parquet"),))
        >>> s.require(["beam_e", "weight"], "data.parquet")
        >>> s.require(["kshort1_px"], "data.parquet")
        Traceback (most recent call last):
        ...
        laddu_dask.errors.SchemaError: model needs column 'kshort1_px' which data.parquet lacks ...
        >>> s.require(["run"], "data.parquet")
        Traceback (most recent call last):
        ...
        laddu_dask.errors.SchemaError: model needs column 'run', which in data.parquet has type string: ...
        """
        have = set(self.flat_columns())
        have.add(WEIGHT_COLUMN)
        typed = {name: (kind, path) for name, kind, path in self.non_numeric}
        missing: list[str] = []
        for c in columns:
            if c not in have and c not in missing:
                missing.append(c)
        if not missing:
            return
        problems = []
        absent = [c for c in missing if c not in typed]
        if absent:
            word = "column" if len(absent) == 1 else "columns"
            avail = _quoted(self.flat_columns()) or "none"
            problems.append(f"{needed_by} needs {word} {_quoted(absent)} which {source} lacks "
                            f"(available columns: {avail})")
        for c in missing:
            if c in typed:
                kind, path = typed[c]
                problems.append(
                    f"{needed_by} needs column {c!r}, which in {path} has type {kind}: not a "
                    "number (a column must hold floats, integers, booleans or decimals)"
                )
        raise SchemaError("; ".join(problems))

    def __contains__(self, column: object) -> bool:
        return column in self.flat_columns()
