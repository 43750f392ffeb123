"""The generic reduction of every sum: ``dask.array.reduction``'s ``chunk`` / ``combine`` /
``aggregate``, eagerly on a list (:func:`reduction`) or over partials computed elsewhere
(:func:`combine_tree`), with the exact merge of one type of partials as the default
``combine`` (:func:`merge`).

Examples
--------
>>> combine_tree([[1], [2], [3]], lambda p: [sum(x[0] for x in p)], split_every=2)
[6]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["combine_tree", "merge", "reduction"]

Chunk = TypeVar("Chunk")
Partial = TypeVar("Partial")
Result = TypeVar("Result")


def merge(parts: Sequence[Any]) -> Any:
    """The default ``combine``: the exact merge of partials of one type (``type.merge``)."""
    return type(parts[0]).merge(parts)


def combine_tree(parts: Iterable[Partial], combine: Callable[[list[Partial]], Partial] = merge,
                 split_every: int | None = None) -> Partial:
    """Merge ``parts`` with ``combine``, ``split_every`` at a time level by level (a tree, in
    order), or all at once without ``split_every``.  One part is still combined once, and
    no part at all is ``combine([])`` (the empty sum, where ``combine`` knows its size).

    Examples
    --------
    >>> combine_tree([[1], [2], [3], [4], [5]], lambda p: [sum(x[0] for x in p)], split_every=2)
    [15]
    """
    level = list(parts)
    if split_every is None or len(level) <= 1:
        return combine(level)
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    while len(level) > 1:
        level = [combine(level[j : j + split_every]) for j in range(0, len(level), split_every)]
    return level[0]


def reduction(chunks: Iterable[Chunk], chunk: Callable[[Chunk], Partial],
              combine: Callable[[list[Partial]], Partial], aggregate: Callable[[Partial], Result], *,
              split_every: int | None = None) -> Result:
    """``aggregate(combine(...(chunk(c) for c in chunks)))``: a tree reduction, eagerly.

    Parameters
    ----------
    chunks : iterable
        The pieces of the data (partitions, batches, arrays of terms).
    chunk : callable
        One piece to its partial result (:meth:`~laddu_dask.sums.ExactPartials.from_terms`).
    combine : callable
        A list of partials to one (:meth:`~laddu_dask.sums.ExactPartials.merge`); exact, so the tree's shape
        does not change the result.
    aggregate : callable
        The last partial to the result (:meth:`~laddu_dask.sums.ExactPartials.to_floats`).
    split_every : int, optional
        Partials merged per ``combine`` call (>= 2); default all at once.

    Examples
    --------
    >>> import math
    >>> from laddu_dask.sums import ExactPartials, exact_aggregate, exact_chunk
    >>> terms = [1e100, 1.0, -1e100, 2.0**-60]
    >>> total = reduction([terms[:1], terms[1:3], terms[3:]], exact_chunk, ExactPartials.merge,
    ...                   exact_aggregate)
    >>> total == math.fsum(terms) == 1.0 + 2.0**-60
    True
    """
    return aggregate(combine_tree([chunk(c) for c in chunks], combine, split_every))
