"""The laddu oracle of the tests (it lives in the package, shared with the benchmarks)."""

import pytest

from laddu_dask_bench.laddu_ksks import (  # noqa: F401 - re-exported for the tests
    BOUNDS,
    COEFFICIENT_NAMES,
    M_KS,
    PARAMETER_NAMES,
    TRUTH,
    LadduKsKsNLL,
    laddu_available,
    laddu_ksks_nll,
)

try:
    import laddu

    HAVE_LADDU = all(hasattr(laddu, n) for n in ("Dataset", "relativistic_breit_wigner", "Model"))
except ImportError:  # pragma: no cover - laddu is a test dependency
    laddu = None
    HAVE_LADDU = False

#: Marks a test that compares against laddu itself.
needs_laddu = pytest.mark.skipif(not HAVE_LADDU, reason="laddu is not installed")


def compiled_values(expr, columns, params=(), n=None):
    """Per-event values of ``expr`` compiled by laddu-dask on ``columns`` (name -> array)."""
    import numpy as np

    from laddu_dask.compile.compiled import CompiledModel

    cm = CompiledModel.from_expr(expr)
    cache = cm.event_cache({c: columns[c] for c in cm.columns})
    return np.asarray(cm.values(cache, list(params), n=n))


def laddu_values(expr, p4s, scalars, params=None):
    """Per-event values of a laddu expression on the same events (``Dataset.from_arrays``)."""
    import numpy as np

    ds = laddu.Dataset.from_arrays(p4s=p4s, scalars=scalars)
    if params is None:
        return np.asarray(ds.evaluate(expr))
    return np.asarray(laddu.Model(expr).evaluate(ds, parameters=list(params)))


def agreement(got, want) -> float:
    """The largest relative difference (absolute where the value is below 1e-12)."""
    import numpy as np

    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-12)))
