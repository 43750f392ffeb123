"""Benchmark results files: what was measured, where, when, with what, and how.

Every benchmark writes one JSON file under ``benchmarks/results/``; the documentation's
Benchmarks page is rendered from these files (:mod:`laddu_dask_bench.readme`).
Each file carries a ``provenance`` record:

* ``machine``: CPU model, logical cores, memory, platform, and the load average
  (1, 5, 15 minutes) when the run started and when it ended;
* ``versions``: Python and the packages involved (only those installed);
* ``date`` (local time, ISO 8601), ``command`` (as typed) and ``parameters``.

Examples
--------
>>> from laddu_dask_bench.results import provenance
>>> p = provenance("python3 benchmarks/bench_streaming.py", {"events": 1000})
>>> sorted(p)
['command', 'date', 'machine', 'parameters', 'versions']
>>> p["machine"]["cores"] > 0 and "numpy" in p["versions"]
True
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from laddu_dask.files import atomic_write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Where the committed results files live.
RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results")

#: Distributions whose versions every results file records (when installed).
PACKAGES: tuple[str, ...] = ("numpy", "numba", "dask", "distributed", "pyarrow", "iminuit",
                             "laddu", "laddu-dask")
#: Recorded as well when a benchmark used TensorWaves.
TENSORWAVES_PACKAGES: tuple[str, ...] = ("jax", "jaxlib", "tensorwaves", "sympy")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`).

    Examples
    --------
    >>> isinstance(cpu_model(), str)
    True
    """
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the system has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Linux
        return None


def machine() -> dict[str, Any]:
    """CPU model, logical cores, memory (bytes), platform and the current load average."""
    import psutil

    return {"cpu": cpu_model(), "cores": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total,
            "platform": platform.platform(), "load_average_start": load_average()}


def versions(extra: Sequence[str] = ()) -> dict[str, str]:
    """Python's version and each installed distribution's of :data:`PACKAGES` and ``extra``."""
    out = {"python": platform.python_version()}
    for name in (*PACKAGES, *extra):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as a user would type it again (``laddu-dask bench ...`` or ``python3 FILE ...``)."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    head = argv[0]
    if os.path.basename(head) == "laddu-dask":
        return shlex.join(["laddu-dask", *argv[1:]])
    if os.path.isfile(head):
        path = os.path.abspath(head)
        if path.startswith(ROOT + os.sep):
            path = os.path.relpath(path, ROOT)
        return shlex.join(["python3", path, *argv[1:]])
    return shlex.join(argv)


def provenance(command: str, parameters: Mapping[str, Any],
               extra_packages: Sequence[str] = ()) -> dict[str, Any]:
    """The provenance record of a run starting now (see the module docstring)."""
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command,
            "parameters": dict(parameters), "machine": machine(), "versions": versions(extra_packages)}


def write_results(path: str, results: Mapping[str, Any]) -> str:
    """Record the end-of-run load average and write ``results`` as JSON, atomically.

    Returns the path written.
    """
    results = dict(results)
    prov = results.get("provenance")
    if isinstance(prov, dict):
        prov["machine"]["load_average_end"] = load_average()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with atomic_write(path) as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    return path


def read_results(name: str, folder: str = RESULTS_DIR) -> dict[str, Any]:
    """Read ``folder/name`` (for example ``"bench_ksks.json"``)."""
    with open(os.path.join(folder, name)) as f:
        return json.load(f)
