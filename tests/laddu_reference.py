"""The laddu oracle of the tests (it lives in the package, shared with the benchmarks)."""

import pytest

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

try:
    import laddu

    HAVE_LADDU = all(hasattr(laddu, n) for n in ("Dataset", "relativistic_breit_wigner", "Model"))
except ImportError:  # pragma: no cover - laddu is a test dependency
    laddu = None
    HAVE_LADDU = False

#: Marks a test that compares against laddu itself.
needs_laddu = pytest.mark.skipif(not HAVE_LADDU, reason="laddu is not installed")
