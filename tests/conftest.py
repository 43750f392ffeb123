"""Shared fixtures: a small K_S K_S sample on disk, its arrays, and a default execution."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from laddu_dask import ksks
from laddu_dask.runtime.execution import Execution

# tests/ on sys.path, so that test modules can `import laddu_reference`, and benchmarks/, so
# that they can import the benchmarks' package (laddu_dask_bench, not part of the library).
# The tests live in one folder per package (tests/expr/, tests/runtime/, ...), each also on
# sys.path, so that a test module can import another's helpers by its name in any folder
# (`from test_gradients import LEAVES`): pytest's default "prepend" import mode names a test
# module by its file's name alone, so these names are unique across the folders (pytest fails
# the collection on a clash).
TESTS = Path(__file__).resolve().parent
TEST_FOLDERS = sorted(folder for folder in TESTS.iterdir()
                      if folder.is_dir() and any(folder.glob("test_*.py")))
for _folder in (*TEST_FOLDERS, TESTS.parent / "benchmarks", TESTS):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

#: Size and seed of the session K_S K_S sample (small: the tests must stay fast).
KSKS_N_DATA = 3000
KSKS_N_MC = 4000
KSKS_SEED = 20240611


@pytest.fixture(scope="session")
def ksks_sample(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``{"data": path, "accmc": path, "truth": path}`` of a deterministic K_S K_S sample."""
    out = tmp_path_factory.mktemp("ksks")
    return ksks.write_sample(out, n_data=KSKS_N_DATA, n_mc=KSKS_N_MC, seed=KSKS_SEED)


def read_p4s(path: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Four-vectors ``name -> (n, 4)`` and weights of a laddu-convention Parquet file."""
    table = pq.read_table(path)
    p4s = {
        name: np.column_stack(
            [table.column(f"{name}_{c}").to_numpy() for c in ("e", "px", "py", "pz")]
        )
        for name in ksks.P4_NAMES
    }
    return p4s, table.column("weight").to_numpy()


@pytest.fixture(scope="session")
def ksks_arrays(ksks_sample: dict[str, str]) -> dict[str, tuple[dict[str, np.ndarray], np.ndarray]]:
    """``{"data": (p4s, weights), "accmc": (p4s, weights)}`` of :func:`ksks_sample`."""
    return {key: read_p4s(ksks_sample[key]) for key in ("data", "accmc")}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The batch-fit tests' KsKs sample (3000 data, 20000 accepted MC): data.parquet, accmc.parquet."""
    from batch_helpers import make_sample

    return make_sample(tmp_path_factory)


@pytest.fixture
def data_env(sample: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``KSKS_DATA`` points the example configs at :func:`sample`."""
    monkeypatch.setenv("KSKS_DATA", str(sample))
    return sample


@pytest.fixture
def execution() -> Execution:
    """A fresh local f64 execution (no memory budget)."""
    return Execution()


# Hypothesis: a fixed example set and no example database by default (runs are the same on
# every machine, CI included); HYPOTHESIS_PROFILE=explore draws new random examples.
# No wall-clock checks (the per-example deadline, the too-slow health check): on a loaded
# machine they fail tests whose numbers are right; pytest-timeout bounds a hang.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# helper scripts run in subprocesses, not test modules
collect_ignore = ["scripts", "tutorials"]  # tutorials: the ports run only through test_tutorial_ports


# The suite compiles its kernels in the evaluation, as before the tier-0 start (a child
# compilation per kernel, each importing laddu-dask, made a fresh clone's suite 40% slower);
# tests/compile/test_tier0.py, test_cold_start.py and the fresh-process tests run the default.
import dask  # noqa: E402

dask.config.set({"laddu-dask.tier0": False})


@pytest.fixture
def tier0():
    """The default start: the tier-0 kernel evaluates while a child process compiles."""
    with dask.config.set({"laddu-dask.tier0": True}):
        yield


@pytest.fixture(autouse=True)
def _compilations_end_with_their_test():
    """A test's background kernel compilations (a child process each, while the tier-0
    kernel evaluates) finish before the next test starts, so that no test shares the cores
    with another's compilation (the cluster tests' timing depends on them)."""
    yield
    from laddu_dask.runtime.compilations import wait_compilations

    assert wait_compilations(600.0), "a kernel compilation ran for more than 10 minutes"


def pytest_configure(config):
    """Byte-compile laddu-dask once, before the test processes start, where Python is told not
    to write bytecode (``PYTHONDONTWRITEBYTECODE``, set on this project's machines): otherwise every
    process the suite starts (cluster workers, the command-line and fresh-process tests, some
    200 of them) compiles the package's 240 modules from source again, about 0.85 s each
    (runtime and jobs tests on 2 cores: 230 s without, 213 s with).  Only this run's own
    caches are written (``__pycache__``, ignored by git), and a module compiled already is
    skipped; pytest-xdist's workers leave it to the controller."""
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        import compileall

        root = TESTS.parent
        for package in (root / "laddu_dask", root / "benchmarks" / "laddu_dask_bench"):
            compileall.compile_dir(package, quiet=1)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the random test order's seed (pytest-randomly prints it only in the header, which
    ``-q`` hides), so that an order-dependent failure can be run again in the same order."""
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.has_plugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(f"test order: pytest-randomly seed {seed} "
                                    f"(the same order again: --randomly-seed={seed})")
