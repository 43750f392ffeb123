"""The public ``fit_bins`` and ``binned_likelihoods``: the analysis layer's, building the
public ``NLL`` or ``ExtendedNLL`` in every bin, so that each bin's likelihood is an
``ld.Likelihood`` with every method (see :mod:`laddu_dask.facade`).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x, m = ld.scalar("x"), ld.scalar("m")
>>> model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, 10.0)) * x * x + 1.0)
>>> events = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1.0, 40), "m": np.linspace(0.0, 1.0, 40)})
>>> built = binned_likelihoods(model, data=events, accepted_mc=events, by=m, bins=[0.0, 0.5, 1.0])
>>> [type(lik) is ld.Likelihood for _, lik in built]
[True, True]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from laddu_dask.analysis import binned
from laddu_dask.analysis.binned import BinFit
from laddu_dask.data.operations import Bin
from laddu_dask.expr.node import Expr
from laddu_dask.facade.likelihoods import NLL, ExtendedNLL, Likelihood

__all__ = ["binned_likelihoods", "fit_bins"]

#: The term classes the public functions build.
KINDS: binned.TermKinds = (NLL, ExtendedNLL)


def binned_likelihoods(model: Any, *, data: Any, accepted_mc: Any, by: Expr, bins: Bin | Sequence[float],
                       execution: Any = None, extended: bool = False,
                       name: str = "bin") -> list[tuple[Any, Likelihood | Exception]]:
    return binned.binned_likelihoods(model, data=data, accepted_mc=accepted_mc, by=by, bins=bins,
                                     execution=execution, extended=extended, name=name, kinds=KINDS)


def fit_bins(model: Any, *, data: Any, accepted_mc: Any, by: Expr, bins: Bin | Sequence[float],
             restarts: int = 1, initial: Any = None, seed: int = 0, execution: Any = None,
             extended: bool = False, method: str | None = None, progress: bool | Callable = False,
             **options: Any) -> list[BinFit]:
    return binned.fit_bins(model, data=data, accepted_mc=accepted_mc, by=by, bins=bins, restarts=restarts,
                           initial=initial, seed=seed, execution=execution, extended=extended, method=method,
                           progress=progress, kinds=KINDS, **options)


# the analysis layer's documentation, which is the public one (they differ only in ``kinds``)
binned_likelihoods.__doc__ = binned.binned_likelihoods.__doc__
fit_bins.__doc__ = binned.fit_bins.__doc__
