"""The K_S K_S likelihood in TensorWaves (JAX backend), the benchmark's second competitor.

Only imported when TensorWaves is installed (``pip install "tensorwaves[jax]"``; not a
dependency of laddu-dask).  The model is the one of :func:`laddu_dask.datasets.ksks.model` with
constant-width Breit-Wigners, written as one SymPy expression of the Parquet columns
(``beam_e, ..., kshort2_pz``): the K_S K_S frame, ``s``, ``costheta`` and ``phi`` are
computed inside it from the four-vectors, as laddu-dask's model does.  TensorWaves'
:func:`~tensorwaves.estimator.create_cached_function` splits off the
parameter-independent sub-expressions (the angles, the spherical harmonics, ``s``) and
evaluates them once per sample with its data transformer, as laddu-dask evaluates the
event-only part of a model once per partition.

The estimator is TensorWaves' ``UnbinnedNLL`` formula, ``-ln L = N_w ln(sum_mc w I /
n_mc) - sum_data w ln I`` (with unit data weights exactly ``UnbinnedNLL``; laddu's
``-2 ln L`` is :data:`SCALE` times it plus a constant), written as one JAX function,
jitted, so that :meth:`TensorWavesKsKs.value_and_gradient` is a single
``jax.value_and_grad`` call and :meth:`TensorWavesKsKs.value` a single jitted value.

Examples
--------
>>> from laddu_dask_bench.tensorwaves_ksks import tensorwaves_available
>>> isinstance(tensorwaves_available(), bool)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: laddu's -2 ln L = SCALE * (TensorWaves' -ln L) + a constant.
SCALE = 2.0
P4_NAMES = ("beam", "kshort1", "kshort2")
COMPONENTS = ("e", "px", "py", "pz")
COLUMNS = tuple(f"{n}_{c}" for n in P4_NAMES for c in COMPONENTS)


def tensorwaves_available() -> bool:
    """Whether TensorWaves and JAX can be imported."""
    try:
        import jax  # noqa: F401
        import tensorwaves  # noqa: F401
    except ImportError:
        return False
    return True


def kinematics(symbols: dict[str, Any]) -> tuple[Any, Any, Any]:
    """SymPy ``(s, costheta, phi)`` of ``kshort1`` in the K_S K_S frame
    (:func:`laddu_dask.datasets.ksks.angles`)."""
    import sympy as sp

    def p4(name: str) -> list[Any]:
        return [symbols[f"{name}_{c}"] for c in COMPONENTS]

    def dot(a: list[Any], b: list[Any]) -> Any:
        return sum(x * y for x, y in zip(a, b))

    def cross(a: list[Any], b: list[Any]) -> list[Any]:
        return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]

    def unit(a: list[Any]) -> list[Any]:
        norm = sp.sqrt(dot(a, a))
        return [x / norm for x in a]

    beam, k1, k2 = p4("beam"), p4("kshort1"), p4("kshort2")
    x = [a + b for a, b in zip(k1, k2)]
    beta = [-p / x[0] for p in x[1:]]                   # boost by -beta of X (laddu's boost)
    gamma = 1 / sp.sqrt(1 - dot(beta, beta))
    bp = dot(beta, k1[1:])
    k = [p + (gamma**2 / (gamma + 1) * bp + gamma * k1[0]) * b for p, b in zip(k1[1:], beta)]
    z = unit(x[1:])
    y = unit(cross(beam[1:], z))
    xaxis = cross(y, z)
    s = x[0] ** 2 - dot(x[1:], x[1:])
    costheta = dot(k, z) / sp.sqrt(dot(k, k))
    phi = sp.atan2(dot(k, y), dot(k, xaxis))
    return s, costheta, phi


def intensity_expression() -> tuple[Any, dict[str, Any]]:
    """The KsKs intensity as a SymPy expression of the columns; returns it and its parameter symbols."""
    import sympy as sp

    from laddu_dask import ksks

    columns = {c: sp.Symbol(c, real=True) for c in COLUMNS}
    par = {n: sp.Symbol(n, real=True) for n in ksks.TRUTH}
    s, ct, phi = kinematics(columns)

    def bw(mass: Any, width: Any) -> Any:
        return 1 / (mass**2 - s - sp.I * mass * width)

    st = sp.sqrt(1 - ct**2)
    eiphi = sp.cos(phi) + sp.I * sp.sin(phi)
    y00 = 1 / (2 * sp.sqrt(sp.pi))
    y20 = sp.sqrt(5 / (16 * sp.pi)) * (3 * ct**2 - 1)
    y21 = -sp.sqrt(15 / (8 * sp.pi)) * ct * st * eiphi   # Condon-Shortley phase
    y22 = sp.sqrt(15 / (32 * sp.pi)) * st**2 * eiphi**2
    c = [par[f"d{m}_re"] + sp.I * par[f"d{m}_im"] for m in range(3)]
    amp = (bw(par["s_mass"], par["s_width"]) * y00
           + bw(par["d_mass"], par["d_width"]) * (c[0] * y20 + c[1] * y21 + c[2] * y22))
    return sp.Abs(amp) ** 2, par


def _columns(path: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    weights = (table.column("weight").to_numpy() if "weight" in table.column_names
               else np.ones(table.num_rows))
    return {c: table.column(c).to_numpy() for c in COLUMNS}, np.asarray(weights, dtype=np.float64)


class TensorWavesKsKs:
    """TensorWaves' ``-ln L`` of the KsKs model with a laddu-dask-like interface.

    Parameters
    ----------
    data_path, mc_path : str
        Parquet files of data and accepted MC (laddu's column convention).

    Attributes
    ----------
    parameter_names : list of str
        The ten free parameters, in laddu-dask's order.
    """

    def __init__(self, data_path: str, mc_path: str) -> None:
        import jax
        import jax.numpy as jnp
        from tensorwaves.estimator import UnbinnedNLL, create_cached_function

        from laddu_dask import ksks

        expression, par = intensity_expression()
        self.parameter_names = list(ksks.TRUTH)
        function, transformer = create_cached_function(
            expression, {par[n]: v for n, v in ksks.TRUTH.items()}, backend="jax",
            free_parameters=list(par.values()))
        data, w_data = _columns(data_path)
        mc, w_mc = _columns(mc_path)
        data, mc = transformer(data), transformer(mc)   # the parameter-independent part, once
        self.data_weights_are_one = bool(np.all(w_data == 1.0))
        raw, order, names = function.function, function.argument_order, self.parameter_names
        n_w, n_mc = float(w_data.sum()), float(len(w_mc))
        w_data, w_mc = jnp.asarray(w_data), jnp.asarray(w_mc)

        def intensity(sample: dict[str, Any], p: Any) -> Any:
            arguments = {**sample, **{n: p[i] for i, n in enumerate(names)}}
            return raw(*(arguments[k] for k in order))

        def nll(p: Any) -> Any:
            norm = jnp.sum(w_mc * intensity(mc, p)) / n_mc
            return n_w * jnp.log(norm) - jnp.sum(w_data * jnp.log(intensity(data, p)))

        self._value = jax.jit(nll)
        self._value_and_grad = jax.jit(jax.value_and_grad(nll))
        self._unbinned = UnbinnedNLL(function, data, {**mc, "weights": w_mc}, backend="jax")
        self._jnp = jnp

    def value(self, p: Any) -> float:
        """TensorWaves' ``-ln L`` at ``p`` (laddu-dask's parameter order)."""
        return float(self._value(self._jnp.asarray(p, dtype=self._jnp.float64)))

    def value_and_gradient(self, p: Any) -> tuple[float, np.ndarray]:
        """Value and gradient in one jitted ``jax.value_and_grad`` call."""
        value, grad = self._value_and_grad(self._jnp.asarray(p, dtype=self._jnp.float64))
        return float(value), np.asarray(grad, dtype=np.float64)

    def unbinned_nll(self, p: Any) -> float:
        """TensorWaves' own ``UnbinnedNLL`` at ``p`` (equal to :meth:`value` when data weights are 1)."""
        return float(self._unbinned(dict(zip(self.parameter_names, map(float, p)))))
