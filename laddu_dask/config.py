"""laddu-dask's settings in Dask's config, under the ``laddu-dask`` namespace.

Every default a Dask user may want to change lives here, and is read with
:func:`dask.config.get` when it is used, so ``dask.config.set``, a YAML file in
``~/.config/dask/`` or an environment variable (``DASK_LADDU_DASK__SPLIT_EVERY=16``)
change it. Dask treats ``-`` and ``_`` in keys alike (``laddu_dask.split-every`` works too).

=========================================== ================ ===========================================
key                                         default          meaning
=========================================== ================ ===========================================
``laddu-dask.split-every``                  ``8``            fan-in of the tree reductions that merge
                                                             partition sums
``laddu-dask.chunk-size``                   ``None``         events per partition of datasets read or
                                                             built without ``chunk_size`` (``None``: the
                                                             runtime chooses, two partitions a worker)
``laddu-dask.scheduler``                    ``"pool"``       local evaluations: the persistent thread pool
                                                             or Dask's threaded scheduler (``"dask"``)
``laddu-dask.kernel-cache``                 ``None``         folder of the compiled kernels (``None``:
                                                             ``$LADDU_DASK_CACHE``, else
                                                             ``~/.cache/laddu_dask/kernels``)
``laddu-dask.tier0``                        ``True``         evaluate with the tier-0 kernel (same bits)
                                                             while a child process compiles the fused
                                                             kernel; ``False``: wait for it
``laddu-dask.compile-timeout``              ``"30 minutes"`` a child compilation (then this process
                                                             compiles)
``laddu-dask.cluster.worker-timeout``       ``"60s"``        how long a cluster may have no worker
``laddu-dask.cluster.preparation-timeout``  ``"1 hour"``     preparing a dataset on a cluster
``laddu-dask.cluster.evaluation-timeout``   ``"10 minutes"`` one evaluation on a cluster
``laddu-dask.cluster.fit-timeout``          ``"1 hour"``     one fit run as a task on a worker
``laddu-dask.cluster.direct-calls``         ``True``         an evaluation calls the workers from its own
                                                             thread (``False``: through the client's
                                                             event loop, ``client.sync``)
``laddu-dask.cluster.fan-in``               ``4``            workers an evaluation's client calls at most:
                                                             beyond, each called worker forwards the
                                                             request to up to this many others and
                                                             merges their exact partial sums (a tree)
``laddu-dask.analysis.task-bytes``          ``"256 MiB"``    many fits on a cluster run as tasks, each
                                                             on one worker next to its data, when the
                                                             data of a fit take at most this much
``laddu-dask.analysis.tasks-per-thread``    ``2``            those tasks, at most this many per worker
                                                             thread: the likelihoods of one task (bins
                                                             of one analysis) read their sources once
``laddu-dask.disk.directory``               ``None``         folder of the disk tier's prepared partitions
                                                             (``None``: ``laddu-dask-<user id>`` in the
                                                             system's temporary folder); kept private
``laddu-dask.disk.budget``                  ``"50%           bytes the disk tier may fill: a size, a
                                            available"``     percentage of the disk, or of its free space
=========================================== ================ ===========================================

Examples
--------
>>> import dask
>>> from laddu_dask.config import get
>>> get("split-every")
8
>>> with dask.config.set({"laddu-dask.split-every": 16}):
...     get("split-every")
16
"""

from __future__ import annotations

from typing import Any

import dask
from dask.utils import parse_bytes

from laddu_dask.errors import ParameterError
from laddu_dask.validate import duration as _duration

__all__ = ["DEFAULTS", "count", "duration", "get", "nbytes"]

#: The defaults, as they are registered with Dask (``dask.config.update_defaults``).
DEFAULTS: dict[str, Any] = {
    "laddu-dask": {
        "split-every": 8,
        "chunk-size": None,
        "scheduler": "pool",
        "kernel-cache": None,
        "tier0": True,
        "compile-timeout": "30 minutes",
        "cluster": {
            "worker-timeout": "60s",
            "preparation-timeout": "1 hour",
            "evaluation-timeout": "10 minutes",
            "direct-calls": True,
            "fit-timeout": "1 hour",
            "fan-in": 4,
        },
        "analysis": {"task-bytes": "256 MiB", "tasks-per-thread": 2},
        "disk": {"directory": None, "budget": "50% available"},
    }
}

dask.config.update_defaults(DEFAULTS)


def get(key: str) -> Any:
    """The current value of ``laddu-dask.<key>`` (``"cluster.worker-timeout"``, ``"split-every"``)."""
    return dask.config.get(f"laddu-dask.{key}")


def duration(key: str) -> float:
    """Seconds of the duration ``laddu-dask.<key>`` (``"cluster.fit-timeout"``, ``"compile-timeout"``).

    Raises
    ------
    ParameterError
        Naming the key, unless it is a positive, finite duration (a NaN or an infinite
        timeout would make a wait unbounded).
    """
    return _duration(get(key), f"the Dask config laddu-dask.{key}")


def nbytes(key: str) -> int:
    """Bytes of the size ``laddu-dask.<key>`` (``"analysis.task-bytes"``): a number of bytes or a
    string such as ``"256 MiB"`` (Dask's :func:`~dask.utils.parse_bytes`).

    Raises
    ------
    ParameterError
        Naming the key, unless it is a finite size of at least 0 bytes.
    """
    value = get(key)
    try:
        out = parse_bytes(str(value)) if not isinstance(value, bool) else -1
    except (ValueError, TypeError, OverflowError):
        out = -1
    if out < 0:
        raise ParameterError(f"the Dask config laddu-dask.{key} must be a size such as '256 MiB' or a "
                             f"number of bytes >= 0, got {value!r}")
    return out


def count(key: str) -> int:
    """The positive integer ``laddu-dask.<key>`` (``"analysis.tasks-per-thread"``).

    Raises
    ------
    ParameterError
        Naming the key, unless it is an integer of at least 1.
    """
    value = get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"the Dask config laddu-dask.{key} must be an integer >= 1, got {value!r}")
    return value
