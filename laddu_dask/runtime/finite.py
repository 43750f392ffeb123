"""Per-event terms of a reduction must be finite; an overflow of an intermediate is redone scaled.

A term ``w t(I)`` or a derivative of it (``w t'(I) dI/da``, through a reverse sweep) is
computed as a chain of products that starts with the weight. With weights near ``1e300``
a product along the chain can overflow although the term itself is a finite number: the
kernel returns ``inf`` (or ``nan``) for it. :func:`finite_terms` then recomputes the events
with such entries with their weights scaled down by an exact power of two ``2**-s`` (``s``
from :data:`SHIFTS`, the first that gives a finite entry) and scales the entry back up
exactly. Scaling by a power of two commutes with rounding, so the rescued entry is the
term the kernel would have computed with an unbounded exponent range; it depends on the
event alone, so sums stay exact and independent of the partitioning. An entry that is
beyond the float range itself is a :class:`~laddu_dask.errors.NonFiniteError` that says so,
with its magnitude.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.runtime.partition import PreparedPartition
>>> part = PreparedPartition([np.array([1e-200, 1.0])], np.array([1e300, 1.0]), 2, 0, "arrays")
>>> def rows(p):  # w * (x * 1e200) * 1e-200: the middle product overflows for event 0
...     with np.errstate(over="ignore"):
...         return (p.weights * (p.cache[0] * 1e200) * 1e-200)[None, :]
>>> float(finite_terms(rows(part), part, rows).to_floats()[0]) == 1e100 + 1.0
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from laddu_dask.errors import NonFiniteError
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.sums import ExactPartials

#: Powers of two (exponents) the weights of an event with a non-finite term are scaled
#: down by, in turn, to recompute it: the first that gives a finite entry is kept.
SHIFTS = (32, 128, 512, 1024)


def _host(rows: Any) -> np.ndarray:
    host = rows.get() if hasattr(rows, "get") else np.asarray(rows)
    return np.array(host.reshape(-1, host.shape[-1]), dtype=np.float64)


def _what(j: int) -> str:
    return "term w t(I)" if j == 0 else "gradient term (a derivative of w t(I))"


def _magnitude(value: float, shift: int) -> str:
    """``value * 2**shift`` in decimal, without overflowing (``'1.2e+310'``)."""
    exponent = math.log10(abs(value)) + shift * math.log10(2.0)
    whole = math.floor(exponent)
    return f"{math.copysign(10.0 ** (exponent - whole), value):.3g}e+{whole}"


def _rescue(host: np.ndarray, part: Any, redo: Callable[[Any], Any]) -> None:
    """Replace the non-finite entries of ``host`` that are finite numbers when the events'
    weights are scaled down (in place); raise for one beyond the float range."""
    todo = ~np.isfinite(host)
    weights = part.weights
    xp = array_module(weights)
    w_host = weights.get() if hasattr(weights, "get") else np.asarray(weights)
    tiny = np.finfo(w_host.dtype).tiny
    for shift in SHIFTS:
        factor = w_host.dtype.type(2.0 ** -shift)
        # scale only events whose weight stays a normal number (the scaling is exact)
        events = todo.any(axis=0) & (np.abs(w_host) * factor >= tiny)
        if not events.any():
            continue
        factors = np.where(events, factor, w_host.dtype.type(1.0)).astype(w_host.dtype)
        scaled = weights * xp.asarray(factors)  # exact: powers of two, normal results
        rows = _host(redo(type(part)(part.cache, scaled, part.n, part.offset, part.source)))
        fixed = todo & events[np.newaxis, :] & np.isfinite(rows)
        with np.errstate(over="ignore"):
            back = np.ldexp(rows[fixed], shift)
        beyond = ~np.isfinite(back)
        if beyond.any():
            j, i = (int(a[int(np.argmax(beyond))]) for a in np.nonzero(fixed))
            raise NonFiniteError(
                f"non-finite {_what(j)} {float(host[j, i])!r} at event {part.offset + i} "
                f"({part.source}); it is {_magnitude(float(rows[j, i]), shift)} (computed with "
                f"its weight {float(w_host[i])!r} scaled by 2**-{shift}), beyond the float "
                "range: the product with the weight overflows, an intermediate of the likelihood, "
                "which may itself be finite; scale the weights down (an NLL's gradient does not "
                "change when the accepted MC's weights are all scaled by one factor)"
            )
        host[fixed] = back
        todo &= ~fixed
        if not todo.any():
            return


def finite_terms(rows: Any, part: Any, redo: Callable[[Any], Any] | None = None) -> ExactPartials:
    """Exact sums of per-event terms (row 0: ``w t(I)``, further rows: derivatives), which
    must be finite.

    Parameters
    ----------
    rows : array
        Shape (K, n), NumPy or CuPy.
    part : PreparedPartition
        The partition the terms are of (its offset and source name events; its weights
        are scaled for a redo).
    redo : callable, optional
        ``redo(partition)`` gives the rows of the same partition with other weights; with
        it, an entry whose product overflowed is recomputed scaled (see the module).

    Raises
    ------
    NonFiniteError
        Naming the first event with an infinite or NaN term and its source (and, for a
        term beyond the float range, its magnitude).
    """
    partials = ExactPartials.from_terms(rows)
    if all(s == 0.0 for s in partials.special):  # the plain sum of any non-finite terms
        return partials
    host = _host(rows)
    original = host.copy()
    if redo is not None:
        _rescue(host, part, redo)
        if np.isfinite(host).all():
            return ExactPartials.from_terms(host)
    bad = ~np.isfinite(host)
    i = int(np.argmax(bad.any(axis=0)))
    j = int(np.argmax(bad[:, i]))
    raise NonFiniteError(
        f"non-finite {_what(j)} {float(original[j, i])!r} at event {part.offset + i} "
        f"({part.source}); a likelihood needs finite terms"
    )
