"""Datasets read through a batch reader: a format's ``read_batches`` or ``Dataset.from_batches``.

A :class:`BatchOrigin` turns a reader (a callable taking a :class:`~laddu_dask.io.ReadPlan`
and returning a fresh iterable of batches) into partitions. When the reader promises
``"contiguous"`` partitioning and the source's length is known, partition ``i`` of ``k`` is
the reader's rank ``i`` of ``k``: the partitions read their own events, in parallel. Any
other reader is read serially: partition ``[a, b)`` traverses the stream up to event ``b``,
keeping ``[a, b)`` (a format without native partitioning pays one read of the events before
each partition, as laddu's fallback traversal does). Every batch is checked: its fields
against the declared schema, its size against the plan's ``chunk_size``, its values finite,
and the stream's length against the declared one, each error naming the reader and source.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data.dataset import Dataset
>>> from laddu_dask.data.schema import Schema
>>> def read(plan):
...     x = np.arange(5.0)
...     return [{"scalars": {"x": x[a:a + plan.chunk_size]}} for a in range(0, 5, plan.chunk_size)]
>>> ds = Dataset(BatchOrigin(read, Schema(scalars=["x"]), 5, "example reader"), chunk_size=2)
>>> [p.n_events for p in ds.partitions], ds.column("x").tolist()
([2, 2, 1], [0.0, 1.0, 2.0, 3.0, 4.0])
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import DEFAULT_CHUNK_SIZE, check_finite, split_rows
from laddu_dask.data.partition import Partition, load_from_file
from laddu_dask.data.plans import ReadPlan, assigned_rows
from laddu_dask.data.schema import Schema
from laddu_dask.errors import DataError, SchemaError

__all__ = ["BatchOrigin", "Reader", "as_batch", "read_plan_batches", "schema_from_mapping"]

Reader = Callable[[ReadPlan], Iterable[Any]]
"""A source's events for a plan: a fresh iterable of batches on every call."""

_BATCH_KEYS = ("p4s", "scalars", "weights", "columns", "length", "row_ids")


def as_batch(obj: Any, where: str) -> EventBatch:
    """A reader's item as an :class:`EventBatch`: one already, or laddu's dictionary form.

    Raises
    ------
    TypeError
        Neither a batch nor a mapping of laddu's batch keywords (naming ``where``).
    """
    if isinstance(obj, EventBatch):
        return obj
    if isinstance(obj, Mapping):
        unknown = sorted(set(obj) - set(_BATCH_KEYS))
        if unknown:
            raise TypeError(f"{where} yielded a batch dictionary with unknown key(s) {unknown}; "
                            f"a batch takes {list(_BATCH_KEYS)}")
        return EventBatch(**{k: obj[k] for k in _BATCH_KEYS if k in obj})
    raise TypeError(f"{where} yielded a {type(obj).__name__}; a batch is a laddu_dask.io.EventBatch or "
                    "a dictionary of 'p4s', 'scalars' and optional 'weights'")


def schema_from_mapping(schema: Any, where: str) -> Schema:
    """laddu's schema argument: a :class:`Schema`, or a mapping of ``p4s``, ``scalars``,
    optional ``columns`` and ``weights``.

    Raises
    ------
    TypeError
        Neither (naming ``where``).
    ValueError
        A mapping without ``p4s`` or ``scalars``, or with other keys.
    """
    if isinstance(schema, Schema):
        return schema
    if not isinstance(schema, Mapping):
        raise TypeError(f"{where}: schema must be a laddu_dask.io.Schema or a dict, got "
                        f"{type(schema).__name__}")
    for key in ("p4s", "scalars"):
        if key not in schema:
            raise ValueError(f"{where}: schema is missing {key!r}")
    unknown = sorted(set(schema) - {"p4s", "scalars", "columns", "weights"})
    if unknown:
        raise ValueError(f"{where}: schema has unknown key(s) {unknown}")
    return Schema(p4s=schema["p4s"], scalars=schema["scalars"], weights=bool(schema.get("weights", False)),
                  columns=schema.get("columns"))


def _check_batch(batch: EventBatch, schema: Schema, plan: ReadPlan, where: str) -> None:
    got = batch.schema
    if (got.p4s, got.scalars, got.has_weight, got.exact) != (schema.p4s, schema.scalars, schema.has_weight,
                                                            schema.exact):
        raise SchemaError(f"{where} yielded a batch of fields {got!r} (integer columns {got.columns}); "
                          f"the declared schema is {schema!r} (integer columns {schema.columns})")
    if plan.chunk_size is not None and batch.n_events > plan.chunk_size:
        raise DataError(f"{where} yielded a batch of {batch.n_events} events, more than the plan's "
                        f"chunk_size={plan.chunk_size}")


def read_plan_batches(read: Reader, schema: Schema, plan: ReadPlan, where: str) -> Iterator[EventBatch]:
    """The reader's batches for ``plan``, each checked against ``schema`` and the plan."""
    for item in read(plan):
        batch = as_batch(item, where)
        _check_batch(batch, schema, plan, where)
        yield batch


def _serial(chunk_size: int) -> ReadPlan:
    return ReadPlan(rank=0, nranks=1, chunk_size=chunk_size, partitioning="contiguous")


@dataclass(frozen=True)
class StreamPartition(Partition):
    """Events ``skip : skip + n_events`` of the reader's stream for ``plan``."""

    read: Reader = field(repr=False)
    schema: Schema = field(repr=False)
    plan: ReadPlan = field(repr=False)
    skip: int = 0
    last: bool = False  # the stream must end with this partition's events
    where: str = ""

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        """Load the events (see :meth:`Partition.load`); DataError if the stream disagrees with
        the declared length, SchemaError for a batch of other fields."""
        return load_from_file(self, self.schema, columns, dtype, self.where, self._read)

    def _read(self, columns: list[str], dt: np.dtype) -> dict[str, np.ndarray]:
        out = {c: np.empty(self.n_events, dtype=dt) for c in columns}
        seen, stop, filled = 0, self.skip + self.n_events, 0
        stream = read_plan_batches(self.read, self.schema, self.plan, self.where)
        for batch in stream:
            a, b = max(self.skip - seen, 0), min(stop - seen, batch.n_events)
            if b > a:
                for c in columns:
                    source = batch.weights if c == "weight" else batch.columns[c]
                    out[c][filled:filled + b - a] = source[a:b]
                filled += b - a
            seen += batch.n_events
            if seen >= stop and not self.last:
                break
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        if filled != self.n_events or (self.last and seen != stop):
            raise DataError(f"{self.where} gave {seen} events for plan rank {self.plan.rank} of "
                            f"{self.plan.nranks}; {stop} were declared (its length or count changed)")
        for c in columns:
            check_finite(out[c], c, self.offset, self.source)
        return out


class BatchOrigin:
    """Events from a batch reader, cut into partitions (natively, or along a serial stream).

    Parameters
    ----------
    read : callable
        ``read(plan)`` returns a fresh iterable of batches (EventBatch or laddu's dicts).
    schema : Schema
        The declared fields; every batch must hold exactly these.
    length : int or None
        The exact number of events; None counts them with one serial traversal.
    where : str
        The reader and source, for messages (``"format 'toy' source 'events.toy'"``).
    native : bool
        Whether ``read`` honours contiguous plans of several ranks.
    """

    has_blocks = False
    chosen_by_user = False

    def __init__(self, read: Reader, schema: Schema, length: int | None, where: str,
                 native: bool = False) -> None:
        self.read, self.schema, self.where, self.native = read, schema, where, native
        self._length = length
        self.sources = (where,)
        self.token = f"batches-{uuid.uuid4().hex}"

    @property
    def n_events(self) -> int:
        """The number of events (counted once by a serial traversal when not declared)."""
        if self._length is None:
            plan = _serial(DEFAULT_CHUNK_SIZE)
            batches = read_plan_batches(self.read, self.schema, plan, self.where)
            self._length = sum(b.n_events for b in batches)
        return self._length

    def graph(self) -> None:
        return None

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        assert chunk_size is not None
        n = self.n_events
        if self.native and n:
            k = -(-n // chunk_size)  # ranks of at most ceil(n / k) <= chunk_size events
            parts = []
            for r in range(k):
                rows = assigned_rows(n, r, k, "contiguous")
                label = f"{self.where} [rank {r} of {k}: rows {rows.start}:{rows.stop}]"
                plan = ReadPlan(rank=r, nranks=k, chunk_size=chunk_size, partitioning="contiguous")
                parts.append(StreamPartition(n_events=len(rows), offset=rows.start,
                                             source=label,
                                             read=self.read, schema=self.schema, plan=plan, last=True,
                                             where=self.where))
            return tuple(parts)
        plan = _serial(chunk_size)
        cuts = split_rows(n, chunk_size) or [(0, 0)]
        return tuple(StreamPartition(n_events=b - a, offset=a, source=f"{self.where} [rows {a}:{b}]",
                                     read=self.read, schema=self.schema, plan=plan, skip=a,
                                     last=b == n, where=self.where)
                     for a, b in cuts)
