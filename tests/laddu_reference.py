"""The laddu oracle of the tests (it lives in the package, shared with the benchmarks)."""

from laddu_dask.bench.laddu_ksks import (  # noqa: F401 - re-exported for the tests
    BOUNDS,
    COEFFICIENT_NAMES,
    M_KS,
    PARAMETER_NAMES,
    TRUTH,
    LadduKsKsNLL,
    laddu_available,
    laddu_ksks_nll,
)
