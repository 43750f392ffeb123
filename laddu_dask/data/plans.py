"""What a format's callbacks are told: the read and write plans, and what a source holds.

laddu's ``io.ReadPlan``, ``io.WritePlan`` and ``io.SourceInfo``. A plan says which events a
call reads or writes: rank ``rank`` of ``nranks`` under a ``partitioning`` strategy, in
batches of at most ``chunk_size`` events. :func:`assigned_rows` is the one definition of
which events of a source of ``n`` a rank holds under each strategy (laddu's: rank ``r`` holds
events ``r n // nranks`` up to ``(r + 1) n // nranks`` for ``"contiguous"``, every
``nranks``-th event from ``rank`` for ``"rows"``).

Examples
--------
>>> [assigned_rows(10, r, 3, "contiguous") for r in range(3)]
[range(0, 3), range(3, 6), range(6, 10)]
>>> [len(assigned_rows(23, r, 3, "contiguous")) for r in range(3)]
[7, 8, 8]
>>> [list(assigned_rows(7, r, 3, "rows")) for r in range(3)]
[[0, 3, 6], [1, 4], [2, 5]]
"""

from __future__ import annotations

from dataclasses import dataclass

from laddu_dask.data.schema import Schema

__all__ = ["PARTITIONINGS", "ReadPlan", "SourceInfo", "WritePlan", "assigned_rows", "check_partitionings"]

#: laddu's partitioning strategies: contiguous blocks, round-robin rows, groups of files.
PARTITIONINGS = ("contiguous", "rows", "file_groups")


def check_partitionings(strategies: object, where: str) -> tuple[str, ...]:
    """The declared strategies as a tuple, in order, each once.

    Raises
    ------
    TypeError
        ``strategies`` is one string or not iterable.
    ValueError
        A strategy that is not one of :data:`PARTITIONINGS` (naming it and ``where``).
    """
    if strategies is None:
        return ()
    if isinstance(strategies, str) or not hasattr(strategies, "__iter__"):
        raise TypeError(f"{where} takes a sequence of strategies, got {strategies!r}")
    out: list[str] = []
    for s in strategies:  # type: ignore[attr-defined]
        if s not in PARTITIONINGS:
            raise ValueError(f"{where}: partitioning must be 'contiguous', 'rows', or 'file_groups', "
                             f"got {s!r}")
        if s not in out:
            out.append(s)
    return tuple(out)


def assigned_rows(n: int, rank: int, nranks: int, partitioning: str) -> range:
    """The events of a source of ``n`` that rank ``rank`` of ``nranks`` reads.

    ``"contiguous"``: events ``rank * n // nranks`` up to ``(rank + 1) * n // nranks`` (blocks
    differing by at most one event, the larger ones last); ``"rows"``: events ``rank, rank +
    nranks, ...``. ``"file_groups"`` has no fixed
    assignment (a format says which files a rank reads), so it is a ValueError here.

    Examples
    --------
    >>> assigned_rows(5, 1, 2, "contiguous")
    range(2, 5)
    >>> assigned_rows(5, 0, 2, "rows")
    range(0, 5, 2)
    """
    if partitioning == "rows":
        return range(rank, n, nranks)
    if partitioning != "contiguous":
        raise ValueError(f"no fixed assignment of rows for partitioning {partitioning!r}")
    return range(rank * n // nranks, (rank + 1) * n // nranks)


@dataclass(frozen=True)
class ReadPlan:
    """The events one call of a format's ``read_batches`` reads (laddu's ``io.ReadPlan``).

    Attributes
    ----------
    rank, nranks : int
        This reader's part and the number of parts (0 of 1 for a serial traversal).
    chunk_size : int or None
        The largest batch the call may yield.
    partitioning : str
        ``"contiguous"``, ``"rows"`` or ``"file_groups"`` (a serial plan is contiguous).

    Examples
    --------
    >>> ReadPlan(rank=0, nranks=1, chunk_size=1024, partitioning="contiguous").nranks
    1
    """

    rank: int
    nranks: int
    chunk_size: int | None
    partitioning: str


@dataclass(frozen=True)
class WritePlan:
    """Where and how a format's ``write_batches`` writes (laddu's ``io.WritePlan``).

    Attributes
    ----------
    rank, nranks : int
        The writing rank (laddu-dask writes as rank 0 of 1).
    chunk_size : int or None
        The largest batch it receives.
    output : str
        ``"single"`` (one file) or ``"sharded"`` (this rank's shard).
    partitioning : str
        How the input events were assigned (``"contiguous"``).

    Examples
    --------
    >>> WritePlan(rank=0, nranks=1, chunk_size=65536, output="single", partitioning="contiguous").output
    'single'
    """

    rank: int
    nranks: int
    chunk_size: int | None
    output: str
    partitioning: str


class SourceInfo:
    """What a format's ``describe`` returns: the source's schema and, when known, its event count.

    Parameters
    ----------
    schema : Schema
        The fields every batch holds.
    length : int, optional
        The exact number of events (None: counted by one serial traversal when needed).

    Raises
    ------
    TypeError
        ``schema`` is not a :class:`~laddu_dask.io.Schema`, or ``length`` not an integer.
    ValueError
        A negative ``length``.

    Examples
    --------
    >>> info = SourceInfo(Schema(scalars=["x"]), length=3)
    >>> info.schema.scalars, info.length
    (('x',), 3)
    """

    __slots__ = ("_length", "_schema")

    def __init__(self, schema: Schema, *, length: int | None = None) -> None:
        if not isinstance(schema, Schema):
            raise TypeError(f"SourceInfo(schema=) must be a laddu_dask.io.Schema, got "
                            f"{type(schema).__name__}")
        if length is not None:
            if isinstance(length, bool) or not isinstance(length, int):
                raise TypeError(f"SourceInfo(length=) must be an int or None, got {type(length).__name__}")
            if length < 0:
                raise ValueError(f"SourceInfo(length=) must be non-negative, got {length}")
        self._schema = schema
        self._length = length

    @property
    def schema(self) -> Schema:
        """The source's fields."""
        return self._schema

    @property
    def length(self) -> int | None:
        """The exact number of events, or None when not known without reading."""
        return self._length

    def __repr__(self) -> str:
        return f"SourceInfo(schema={self._schema!r}, length={self._length!r})"
