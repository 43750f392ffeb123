"""The K_S K_S intensity in TensorWaves (JAX backend), the benchmark's second competitor.

Only imported when TensorWaves is installed.  The intensity is written as a SymPy
expression of ``s``, ``costheta`` and ``phi`` (the same model as
:func:`laddu_dask.ksks.model`), the angles are computed once from the four-vectors with
NumPy (:func:`laddu_dask.ksks.angles`), and TensorWaves' ``UnbinnedNLL`` evaluates the
likelihood and its gradient (JAX autodiff).  TensorWaves normalises differently from
laddu, so only times are compared, not values.

Examples
--------
>>> from laddu_dask.bench.tensorwaves_ksks import tensorwaves_available
>>> isinstance(tensorwaves_available(), bool)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np


def tensorwaves_available() -> bool:
    """Whether TensorWaves and JAX can be imported."""
    try:
        import jax  # noqa: F401
        import tensorwaves  # noqa: F401
    except ImportError:
        return False
    return True


def _kinematics(path: str) -> dict[str, np.ndarray]:
    import pyarrow.parquet as pq

    from laddu_dask import ksks

    columns = [f"{n}_{c}" for n in ("beam", "kshort1", "kshort2") for c in ("e", "px", "py", "pz")]
    table = pq.read_table(path, columns=columns)
    p4 = {n: np.column_stack([table.column(f"{n}_{c}").to_numpy() for c in ("e", "px", "py", "pz")])
          for n in ("beam", "kshort1", "kshort2")}
    s, costheta, phi = ksks.angles(p4)
    return {"s": s, "costheta": costheta, "phi": phi}


class TensorWavesKsKs:
    """TensorWaves ``UnbinnedNLL`` of the KsKs model with a laddu-dask-like interface.

    Parameters
    ----------
    data_path, mc_path : str
        Parquet files of data and accepted MC.
    """

    def __init__(self, data_path: str, mc_path: str) -> None:
        import sympy as sp
        from tensorwaves.estimator import UnbinnedNLL
        from tensorwaves.function.sympy import create_parametrized_function

        from laddu_dask import ksks

        s, ct, phi = sp.symbols("s costheta phi", real=True)
        par = {n: sp.Symbol(n, real=True) for n in ksks.TRUTH}

        def bw(m: Any, g: Any) -> Any:
            return 1 / (m**2 - s - sp.I * m * g)

        st = sp.sqrt(1 - ct**2)
        y00 = 1 / (2 * sp.sqrt(sp.pi))
        y20 = sp.sqrt(5 / (16 * sp.pi)) * (3 * ct**2 - 1)
        y21 = -sp.sqrt(15 / (8 * sp.pi)) * ct * st * sp.exp(sp.I * phi)
        y22 = sp.sqrt(15 / (32 * sp.pi)) * st**2 * sp.exp(2 * sp.I * phi)
        c = [par[f"d{m}_re"] + sp.I * par[f"d{m}_im"] for m in range(3)]
        amp = (bw(par["s_mass"], par["s_width"]) * y00
               + bw(par["d_mass"], par["d_width"]) * (c[0] * y20 + c[1] * y21 + c[2] * y22))
        function = create_parametrized_function(
            sp.re(amp) ** 2 + sp.im(amp) ** 2,
            parameters={par[n]: v for n, v in ksks.TRUTH.items()}, backend="jax",
        )
        self.parameter_names = list(ksks.TRUTH)
        self.estimator = UnbinnedNLL(function, _kinematics(data_path), _kinematics(mc_path),
                                     backend="jax")

    def _params(self, p: Any) -> dict[str, float]:
        return {n: float(v) for n, v in zip(self.parameter_names, p)}

    def value(self, p: Any) -> float:
        """TensorWaves' NLL at ``p`` (parameter-name order of laddu-dask)."""
        return float(self.estimator(self._params(p)))

    def value_and_gradient(self, p: Any) -> tuple[float, np.ndarray]:
        """Value and JAX gradient (two TensorWaves calls, as its API offers them)."""
        q = self._params(p)
        value = float(self.estimator(q))
        grad = self.estimator.gradient(q)
        return value, np.array([float(grad[n]) for n in self.parameter_names])
