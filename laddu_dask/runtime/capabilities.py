"""What this installation of laddu-dask can do (laddu's ``backend()`` and ``capabilities()``).

Examples
--------
>>> import laddu_dask as ld
>>> ld.backend()
'dask'
>>> caps = ld.capabilities()
>>> caps["backend"], caps["likelihood"], caps["fit"], caps["generation"], caps["mpi"]
('dask', True, True, True, False)
"""

from __future__ import annotations

import importlib.util

from laddu_dask.runtime.execution import _gpu_available


def backend() -> str:
    """The evaluation backend: ``"dask"`` (laddu says ``"local"`` or ``"mpi"``; here every
    evaluation is Dask work, embedded in the process or on a cluster)."""
    return "dask"


def capabilities() -> dict[str, bool | str]:
    """laddu's flags for this installation: ``backend``, ``jit`` (Numba kernels), ``gpu`` (CuPy
    with a CUDA device), ``mpi`` (never: clusters are Dask's), ``likelihood``, ``fit``,
    ``generation``; and laddu-dask's ``cluster`` (``distributed`` importable)."""
    return {
        "backend": backend(),
        "jit": importlib.util.find_spec("numba") is not None,
        "gpu": _gpu_available(),
        "mpi": False,
        "likelihood": True,
        "fit": True,
        "generation": True,
        "cluster": importlib.util.find_spec("distributed") is not None,
    }
