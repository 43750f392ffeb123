"""Tolerances of float32 results, derived from the float32 error of the computation.

A float32 evaluation is compared with its float64 reference within a bound derived here,
not within a constant picked to pass. The derivation (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., sections 1.6 and 3.1):

* **Per event.** The model's value ``f`` at an event is computed by a graph of elementary
  operations whose longest chain from a leaf (a column, a parameter) to the root is ``D``
  operations (:func:`rounding_depth`). Each operation rounds its result to float32 with a
  relative error of at most ``u = 2**-24``, so the computed value is the exact value at
  leaves perturbed by at most ``gamma_D ~ D u`` relatively (the backward error). The
  forward error is the backward error times the condition of ``f`` in its leaves,
  ``cond = sum_k |x_k df/dx_k| / |f|`` (over every column and parameter), plus the final
  rounding of ``f`` itself::

      |f32(f) - f| <= u D (1 + cond) |f|                                       (1)

  :func:`condition` gives ``kappa = D (1 + cond)`` per event, computed in float64 with the
  library's compiled Jacobian for the parameters and central differences for the columns.
* **Sums.** The project sums the (float64-widened) float32 terms exactly (correctly rounded),
  so the error of a sum is the sum of the terms' errors, plus one float64 rounding::

      |sum_i t_i(f32) - sum_i t_i| <= u sum_i kappa_i |s_i| + 2**-53 |sum_i t_i|     (2)

  where ``s_i`` is the sensitivity of the term to a relative change of the event's value:
  ``w_i f_i`` for a weighted sum of values, ``w_i`` for a weighted sum of ``log f_i``, and
  per parameter ``w_i df_i/dp`` (or ``w_i (df_i/dp) / f_i`` under the log) for gradients,
  with the derivative's own ``kappa``.
  A sum accumulated in float32 instead of exactly would add ``(n - 1) u sum_i |t_i|``
  (``n`` events): the "events times epsilon times the condition" of recursive summation.

(1) and (2) are first-order bounds: the ``O(u**2)`` terms are far below them at the
conditions met here (``kappa u << 1``). A derivative ``df/dp`` has its own condition
(``condition(..., gradient=True)``); a quotient ``(df/dp) / f`` the sum of both.

Limit of the model: a quantity that vanishes identically at the point (a derivative in a
parameter at 0, zero by symmetry) is computed as a cancellation of intermediate terms whose
rounding no leaf sees; its condition here is 0. Compare such gradients normwise (against
the largest component's bound), as tests/compile/test_fused.py does for random models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

#: Unit roundoff of float32 (half its machine epsilon).
U32 = 2.0**-24
#: Unit roundoff of float64.
U64 = 2.0**-53
#: Relative step of the central differences in :func:`condition` (their truncation error
#: is O(step**2) relative, their rounding error ~1e-16 / step: both far below 1 %).
_STEP = 2.0**-20


def rounding_depth(compiled) -> int:
    """The longest chain of operations from a leaf to the root of a compiled model."""
    depth: dict[int, int] = {}
    for node in compiled.split.nodes:
        depth[node.serial] = 1 + max((depth.get(a.serial, 0) for a in node.args if hasattr(a, "serial")),
                                     default=0)
    return depth[compiled.split.root.serial]


def condition(compiled, columns: Mapping[str, np.ndarray], params: Sequence[float], *,
              gradient: bool = False) -> np.ndarray:
    """``kappa_i = D (1 + cond_i)`` of bound (1) at every event, computed in float64.

    ``cond_i`` sums ``|x df/dx| / |f|`` over the model's parameters and its columns:
    the compiled float64 Jacobian for the parameters, central differences (relative step
    2**-20) for the columns. With ``gradient=True`` the quantity is the Jacobian ``df/dp_j``
    instead (the reverse sweep's result, shape ``(n, k)``), whose condition comes from central
    differences of the Jacobian in the columns and the parameters, and whose chain of
    roundings is ``2 D`` long (the forward sweep, then the reverse sweep along it).
    """
    cols = {c: np.asarray(columns[c], dtype=np.float64) for c in compiled.columns}
    p = np.asarray(compiled.parameter_vector(list(params)), dtype=np.float64)

    def f(cols_: dict, p_: np.ndarray) -> np.ndarray:
        cache = compiled.event_cache(cols_)
        if gradient:
            return compiled.values_and_jacobian(cache, tuple(p_))[1]
        return compiled.values(cache, tuple(p_))

    size = np.abs(f(cols, p))
    if gradient:
        sens = np.zeros(size.shape)
    else:
        sens = np.abs(compiled.values_and_jacobian(compiled.event_cache(cols), tuple(p))[1] * p).sum(axis=1)
    for name, x in cols.items():
        up, down = dict(cols), dict(cols)
        up[name], down[name] = x * (1 + _STEP), x * (1 - _STEP)
        sens = sens + np.abs(f(up, p) - f(down, p)) / (2 * _STEP)
    for j in range(len(p) if gradient else 0):
        up, down = p.copy(), p.copy()
        up[j], down[j] = p[j] * (1 + _STEP), p[j] * (1 - _STEP)
        sens = sens + np.abs(f(cols, up) - f(cols, down)) / (2 * _STEP)
    with np.errstate(divide="ignore", invalid="ignore"):
        # a value exactly zero with no sensitivity is computed exactly; one with a
        # sensitivity has an infinite relative condition (and f32_bound a bound of 0: such
        # an event must be left out of an elementwise comparison)
        cond = np.where(sens == 0, 0.0, sens / size)
    # the reverse sweep rounds along the forward chain and back: twice the depth
    return (2 if gradient else 1) * rounding_depth(compiled) * (1.0 + cond)


def f32_bound(sensitivity, kappa, *, axis: int | None = 0, total: float = 0.0):
    """Bound (2): ``u32 sum_i kappa_i |s_i| + u64 |total|`` over ``axis`` (events).

    ``sensitivity`` holds ``s_i`` (shape ``(n,)`` or ``(n, k)``: one column per summed
    quantity); ``kappa`` the events' ``kappa_i`` (:func:`condition`). ``axis=None`` gives
    the per-event bound (1) elementwise instead of a sum. ``total`` is the float64 sum the
    bound is for (its own final rounding).
    """
    s = np.abs(np.asarray(sensitivity, dtype=np.complex128))
    k = np.asarray(kappa, dtype=np.float64)
    k = k.reshape(k.shape + (1,) * (s.ndim - k.ndim))
    if axis is None:
        return U32 * k * s
    with np.errstate(invalid="ignore"):
        per = np.where(s == 0, 0.0, k * s)
    if per.ndim == 1:
        return U32 * math.fsum(per.tolist()) + U64 * abs(total)
    return np.array([math.fsum(col) for col in per.T.tolist()]) * U32 + U64 * np.abs(total)


def nll_f32_bound(compiled, data, accmc, point) -> tuple[float, np.ndarray]:
    """The float32 error bound of ``NLL = -2 (S_d - N_w ln S_m)`` and its gradient at
    ``point``: bound (2) of the exact sums ``S_d = sum_data w ln I`` (sensitivities ``w``,
    and ``w I'/I`` for the gradient) and ``S_m = sum_accmc w I`` (``w I``, ``w I'``)
    propagated to first order, plus the float64 roundings of the combination (fewer than 8
    operations, each within u64 of its result, itself below ``2 (|S_d| + |N_w ln S_m|)``).
    ``data`` and ``accmc`` are ``(columns, weights)``.
    """
    params = compiled.parameter_vector(point)
    sums, bounds = [], []
    for (cols, w), log in ((data, True), (accmc, False)):
        kappa, gkappa = condition(compiled, cols, params), condition(compiled, cols, params, gradient=True)
        value, jac = compiled.values_and_jacobian(
            compiled.event_cache({c: cols[c] for c in compiled.columns}), params)
        f, g = value.real, jac.real
        s, sg = (w, w[:, None] * g / f[:, None]) if log else (w * f, w[:, None] * g)
        sums.append((math.fsum((w * np.log(f) if log else s).tolist()), sg.sum(axis=0)))
        # I'/I: the relative errors of I' and of I add
        bounds.append((f32_bound(s, kappa), f32_bound(sg, gkappa + kappa[:, None] if log else gkappa)))
    n_w = math.fsum(data[1].tolist())
    (s_d, g_d), (s_m, g_m) = sums
    (b_d, bg_d), (b_m, bg_m) = bounds
    value = 2 * (b_d + n_w * b_m / s_m) + 8 * U64 * 2 * (abs(s_d) + abs(n_w * math.log(s_m)))
    grad = (2 * (bg_d + n_w * (bg_m + np.abs(g_m) * b_m / s_m) / s_m)
            + 8 * U64 * 2 * (np.abs(g_d) + np.abs(n_w * g_m / s_m)))
    return value, grad
