"""Parameter transforms of laddu's ``ganesh``: smooth ``Bounds``, ``ScaleTransform``,
``PeriodicTransform`` and their ``TransformChain``, and the validated ``VectorInit``.

A minimizer works on *internal* coordinates ``y``; the objective sees *external* ones
``x = to_external(y)``. Every transform here acts on each parameter separately, so its
Jacobian is the diagonal ``derivative(y) = dx/dy`` and an exact gradient maps as
``dF/dy = dF/dx * dx/dy``.

- ``Bounds``: ``x = lo + (hi - lo) (sin y + 1) / 2`` for two finite ends,
  ``x = lo - 1 + sqrt(y^2 + 1)`` for a lower end only, ``x = hi + 1 - sqrt(y^2 + 1)`` for an
  upper end only (the smooth bounds of MINUIT), so an unconstrained method never leaves them.
- ``ScaleTransform``: ``y = x / scale``, a parameter's characteristic scale becomes one.
- ``PeriodicTransform``: ``x`` is ``y`` wrapped into ``[a, b)``.
- ``TransformChain``: applied from external to internal in the order given.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.transforms import Bounds, ScaleTransform, TransformChain
>>> chain = TransformChain([Bounds([(0.0, 2.0)]), ScaleTransform([0.5])])
>>> y = chain.to_internal(np.array([1.5]))
>>> chain.to_external(y).round(12)
array([1.5])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError
from laddu_dask.likelihood.ganesh.validate import intervals as _pairs

__all__ = [
    "Bounds",
    "PeriodicTransform",
    "ScaleTransform",
    "Transform",
    "TransformChain",
    "VectorInit",
    "check_transform",
]


class Transform:
    """An element-wise map between external ``x`` and internal ``y`` coordinates."""

    size: int

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def to_external(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def derivative(self, y: np.ndarray) -> np.ndarray:
        """``dx/dy`` at internal ``y``, element by element."""
        raise NotImplementedError


class Bounds(Transform):
    """Smooth parameter bounds: ``(low, high)`` per parameter, ``None`` or an infinity for
    an open end.

    Examples
    --------
    >>> import numpy as np
    >>> b = Bounds([(0.0, 1.0), (None, None)])
    >>> bool(b.to_external(np.array([10.0, 10.0]))[0] <= 1.0)
    True
    """

    def __init__(self, bounds: Sequence[tuple[float | None, float | None]]) -> None:
        self.bounds = _pairs("bounds", bounds, finite=False)
        self.size = len(self.bounds)
        lo, hi = np.array(self.bounds, dtype=float).reshape(-1, 2).T
        self._lo, self._hi = lo, hi
        self._both = np.flatnonzero(np.isfinite(lo) & np.isfinite(hi))
        self._low = np.flatnonzero(np.isfinite(lo) & ~np.isfinite(hi))
        self._high = np.flatnonzero(~np.isfinite(lo) & np.isfinite(hi))

    def __repr__(self) -> str:
        return f"Bounds({list(self.bounds)!r})"

    # ganesh's smooth bounds (algebraic, not MINUIT's sin/sqrt): two-sided
    # x = c + w y / sqrt(1 + y^2) (c, w the centre and half-width), one-sided
    # x = low + sqrt(1 + y^2) + y or x = high - sqrt(1 + y^2) + y; the same internal
    # coordinates as laddu's, so a method's path from a start is laddu's path.
    def to_internal(self, x: np.ndarray) -> np.ndarray:
        lo, hi = self._lo, self._hi
        x = np.clip(np.asarray(x, dtype=float), lo, hi)
        y = x.copy()
        both, low, high = self._both, self._low, self._high
        centre, half = 0.5 * (lo[both] + hi[both]), 0.5 * (hi[both] - lo[both])
        limit = 1.0 - math.sqrt(np.finfo(float).eps)
        with np.errstate(all="ignore"):
            unit = np.clip((x[both] - centre) / half, -limit, limit)
            y[both] = unit / np.sqrt(1.0 - unit * unit)
            d = x[low] - lo[low]
            y[low] = (d - 1.0 / d) / 2.0
            d = hi[high] - x[high]
            y[high] = (1.0 / d - d) / 2.0
        return y

    def to_external(self, y: np.ndarray) -> np.ndarray:
        lo, hi = self._lo, self._hi
        y = np.asarray(y, dtype=float)
        x = y.copy()
        both, low, high = self._both, self._low, self._high
        root = np.sqrt(y * y + 1.0)
        x[both] = 0.5 * (lo[both] + hi[both]) + 0.5 * (hi[both] - lo[both]) * y[both] / root[both]
        x[low] = lo[low] + root[low] + y[low]
        x[high] = hi[high] - root[high] + y[high]
        return np.clip(x, lo, hi)

    def derivative(self, y: np.ndarray) -> np.ndarray:
        lo, hi = self._lo, self._hi
        y = np.asarray(y, dtype=float)
        d = np.ones_like(y)
        both, low, high = self._both, self._low, self._high
        base = y * y + 1.0
        root = np.sqrt(base)
        d[both] = 0.5 * (hi[both] - lo[both]) / (base[both] * root[both])
        d[low] = 1.0 + y[low] / root[low]
        d[high] = 1.0 - y[high] / root[high]
        return d


class ScaleTransform(Transform):
    """Per-parameter characteristic scales: the minimizer sees ``x / scale``.

    Examples
    --------
    >>> import numpy as np
    >>> ScaleTransform([2.0, 0.5]).to_internal(np.array([1.0, 1.0]))
    array([0.5, 2. ])
    """

    def __init__(self, scales: Sequence[float]) -> None:
        s = np.asarray(list(scales), dtype=float)
        if s.ndim != 1 or not len(s) or not np.isfinite(s).all() or (s == 0).any():
            raise GaneshConfigError(
                f"scales must be a non-empty sequence of finite, nonzero numbers, got {list(scales)!r}"
            )
        self.scales, self.size = s, len(s)

    def __repr__(self) -> str:
        return f"ScaleTransform({self.scales.tolist()!r})"

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=float) / self.scales

    def to_external(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(y, dtype=float) * self.scales

    def derivative(self, y: np.ndarray) -> np.ndarray:
        return self.scales.copy()


class PeriodicTransform(Transform):
    """Per-parameter optional periodic intervals ``(a, b)``: the objective sees the value
    wrapped into ``[a, b)``; ``None`` leaves a parameter as it is.

    Examples
    --------
    >>> import numpy as np
    >>> PeriodicTransform([(0.0, 2.0), None]).to_external(np.array([5.0, 5.0]))
    array([1., 5.])
    """

    def __init__(self, intervals: Sequence[tuple[float, float] | None]) -> None:
        items = list(intervals)
        given = [(i, p) for i, p in enumerate(items) if p is not None]
        checked = _pairs("intervals", [p for _, p in given], finite=True)
        self.intervals = [None] * len(items)
        for (i, _), pair in zip(given, checked):
            self.intervals[i] = pair
        self.size = len(items)

    def __repr__(self) -> str:
        return f"PeriodicTransform({self.intervals!r})"

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        return self.to_external(x)

    def to_external(self, y: np.ndarray) -> np.ndarray:
        x = np.array(y, dtype=float)
        for i, pair in enumerate(self.intervals):
            if pair is not None and math.isfinite(x[i]):
                a, b = pair
                x[i] = a + math.fmod(math.fmod(x[i] - a, b - a) + (b - a), b - a)
        return x

    def derivative(self, y: np.ndarray) -> np.ndarray:
        return np.ones(len(y))


class TransformChain(Transform):
    """Transforms applied in the order given (external to internal).

    Examples
    --------
    >>> import numpy as np
    >>> c = TransformChain([ScaleTransform([2.0]), ScaleTransform([4.0])])
    >>> c.to_internal(np.array([8.0])), c.derivative(np.array([1.0]))
    (array([1.]), array([8.]))
    """

    def __init__(self, transforms: Any) -> None:
        items = list(transforms) if not isinstance(transforms, Transform) else [transforms]
        for t in items:
            if not isinstance(t, Transform):
                raise GaneshConfigError(
                    "transforms must hold Bounds, ScaleTransform, PeriodicTransform or "
                    f"TransformChain objects, got {type(t).__name__}"
                )
        self.transforms = items
        sizes = {t.size for t in items if t.size}
        if len(sizes) > 1:
            raise GaneshConfigError(f"transforms must all have the same length, got {sorted(sizes)}")
        self.size = sizes.pop() if sizes else 0

    def __repr__(self) -> str:
        return f"TransformChain({self.transforms!r})"

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        for t in self.transforms:
            x = t.to_internal(x)
        return np.asarray(x, dtype=float)

    def to_external(self, y: np.ndarray) -> np.ndarray:
        for t in reversed(self.transforms):
            y = t.to_external(y)
        return np.asarray(y, dtype=float)

    def derivative(self, y: np.ndarray) -> np.ndarray:
        d = np.ones(len(y))
        for t in reversed(self.transforms):
            d = d * t.derivative(y)
            y = t.to_external(y)
        return d


def check_transform(transform: Any, n: int | None = None) -> Transform | None:
    """``transform`` (``None`` or one of this module's types) for ``n`` parameters."""
    if transform is None:
        return None
    if not isinstance(transform, Transform):
        raise GaneshConfigError(
            "transform must be Bounds, ScaleTransform, PeriodicTransform, "
            f"TransformChain or None, got {type(transform).__name__}"
        )
    if n is not None and transform.size != n:
        raise GaneshConfigError(f"transform has {transform.size} entries, the problem has {n} parameters")
    return transform


class VectorInit:
    """A validated starting vector: non-empty, finite.

    Examples
    --------
    >>> VectorInit([1.0, 2.0]).values
    array([1., 2.])
    """

    def __init__(self, values: Any) -> None:
        v = np.asarray(values, dtype=float).ravel() if np.size(values) else np.zeros(0)
        if not len(v) or not np.isfinite(v).all():
            raise GaneshConfigError(f"values must be non-empty and finite, got {values!r}")
        self.values = v

    def __repr__(self) -> str:
        return f"VectorInit({self.values.tolist()!r})"
