"""What a cluster evaluation sends and receives besides its (cached) jobs: parameter
points as raw bytes, and the partial sums as one array of doubles.

Dask's protocol carries bytes and lists of integers in msgpack without pickling, so
the per-evaluation part of a worker call costs a few microseconds to encode and
decode however many jobs it has.  The jobs themselves (reducers, keys, plans) are
pickled once per worker and then named by a token.  Both codecs are exact: the bytes
are the doubles.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.runtime.accumulate import CertifiedPartials
>>> from laddu_dask.runtime.jobs import PointPartials
>>> sums = [PointPartials([CertifiedPartials(np.array([[1.0, 2.0**-60]]), np.array([0.5]))]), None]
>>> back = decode_partials(*encode_partials(sums))
>>> back[0][0].terms.tolist(), back[0][0].bound.tolist(), back[1]
([[1.0, 8.673617379884035e-19]], [0.5], None)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from laddu_dask.runtime.accumulate import CertifiedPartials
from laddu_dask.runtime.jobs import PointPartials
from laddu_dask.runtime.partition import Params


def encode_points(points: Sequence[Params]) -> bytes:
    """The points of one job, row after row, as the bytes of their arrays."""
    return b"".join(p.array.tobytes() for p in points)


def decode_points(raw: bytes, count: int, dtype: str) -> tuple[Params, ...]:
    """The ``count`` points that :func:`encode_points` wrote, in the precision ``dtype``."""
    rows = np.frombuffer(raw, dtype=dtype).reshape(count, -1) if count else ()
    return tuple(Params.from_array(row) for row in rows)


def encode_partials(results: Sequence[PointPartials | None]) -> tuple[list, bytes]:
    """The partial sums of every job (``None``: the worker held none of its partitions) as
    their shapes (``None``, or one ``[rows, width]`` per point) and one buffer of doubles;
    rows merged from many partitions travel as their short exact expansions
    (:meth:`~laddu_dask.runtime.accumulate.CertifiedPartials.compact`)."""
    shapes: list = []
    arrays: list[np.ndarray] = []
    for result in results:
        if result is None:
            shapes.append(None)
            continue
        compact = [p.compact() for p in result]  # as few doubles as the exact sums need
        shapes.append([list(p.terms.shape) for p in compact])
        for p in compact:
            arrays += [p.terms.ravel(), p.bound]
    data = np.concatenate(arrays).astype(np.float64, copy=False).tobytes() if arrays else b""
    return shapes, data


def decode_partials(shapes: list, data: bytes) -> list[PointPartials | None]:
    """What :func:`encode_partials` encoded, as partial sums (views of one array)."""
    flat = np.frombuffer(data, dtype=np.float64)
    out: list[PointPartials | None] = []
    at = 0
    for shape in shapes:
        if shape is None:
            out.append(None)
            continue
        sums = []
        for rows, width in shape:
            terms = flat[at:at + rows * width].reshape(rows, width)
            at += rows * width
            sums.append(CertifiedPartials(terms, flat[at:at + rows]))
            at += rows
        out.append(PointPartials(sums))
    return out
