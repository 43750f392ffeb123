"""``Execution``: where and how evaluations run.

An execution fixes the device, the floating-point precision, the memory plan, the
Dask scheduler (the local threaded scheduler, or a ``distributed.Client``) and the
fan-in of tree reductions.  It records the memory decisions made for every dataset
prepared under it.

Examples
--------
>>> import laddu_dask as ld
>>> ex = ld.Execution(precision="f64", memory=ld.MemoryPlan(host="2 GiB"))
>>> ex.device, ex.precision, ex.split_every
('cpu', 'f64', 8)
>>> ex.memory_decisions()
[]
"""

from __future__ import annotations

import json as _json
import logging
import os
from collections.abc import Hashable, Mapping
from typing import Any

from laddu_dask import config
from laddu_dask.memory_resources import MemoryState, process_memory, resource_row
from laddu_dask.options import (
    Autodiff,
    Backend,
    Device,
    Kernel,
    Normalization,
    Partitioning,
    Precision,
    Scheduler,
)
from laddu_dask.runtime.jobs import Runner
from laddu_dask.runtime.local import PoolRunner
from laddu_dask.runtime.memory import MemoryBudget, MemoryDecision, MemoryPlan, decisions_html
from laddu_dask.runtime.threaded import ThreadedRunner
from laddu_dask.validate import integer
from laddu_dask.views import bytes_text, key_values, link

DEVICES = Device.values()


def _check_gpu(index: int) -> None:
    """Raise a clear error unless CuPy sees GPU ``index``."""
    try:
        import cupy
    except ImportError:
        raise ValueError(
            "device='gpu' needs CuPy (pip install 'laddu-dask[gpu]') and a CUDA GPU; "
            "CuPy is not installed"
        ) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # noqa: BLE001 - driver errors
        raise ValueError(f"device='gpu': CuPy finds no usable CUDA device ({err})") from None
    if not 0 <= index < count:
        raise ValueError(f"device='gpu': GPU index {index} does not exist ({count} GPU(s) found)")


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any import or driver failure means no GPU
        return False


def _budget_text(budget: MemoryBudget, resolve: Any = None) -> str:
    """A budget as a size (``'2.00 GiB'``), a share (``'70% (44.80 GiB)'``) or ``'unlimited'``."""
    if budget.unlimited:
        return "unlimited"
    if not budget.needs_machine:
        return bytes_text(budget.resolve(0, 0))
    try:
        return f"{budget.spec} ({bytes_text(resolve())})" if resolve is not None else str(budget.spec)
    except Exception:  # noqa: BLE001 - a view shows what it can
        return str(budget.spec)


def _dashboard_link(client: Any, info: Mapping[str, Any]) -> str | None:
    """``client.dashboard_link`` without asking the scheduler (from its cluster or cached identity)."""
    try:
        cluster = getattr(client, "cluster", None)
        if cluster is not None:
            return cluster.dashboard_link
        port = info.get("services", {}).get("dashboard")
        protocol, _, rest = str(info.get("address", "")).rpartition("://")
        if port is None or not rest:
            return None
        from distributed.utils import format_dashboard_link

        return format_dashboard_link("localhost" if protocol == "inproc" else rest.rsplit(":", 1)[0], port)
    except Exception:  # noqa: BLE001 - a view shows what it can
        return None


def _laddu_backend(backend: str | None, device: str | int | None, kernel: str,
                   gpu: int | None) -> tuple[str, str, int]:
    """``(device, kernel, gpu)`` from laddu's ``backend`` and ``device`` and laddu-dask's own
    ``device`` (``"cpu"``/``"gpu"``/``"auto"``), ``kernel`` and ``gpu``."""
    if isinstance(device, int) and not isinstance(device, bool):  # laddu: the GPU adapter index
        if gpu is not None and gpu != device:
            raise ValueError(f"device={device!r} (laddu's GPU index) and gpu={gpu!r} disagree")
        gpu, device = device, "gpu" if backend in (None, "auto") else None
    elif device is not None and device not in Device.values():
        raise ValueError(f"device must be one of {', '.join(map(repr, Device.values()))} or a GPU index "
                         f"(an int), got {device!r}; laddu-dask selects GPUs by index, not by name "
                         "or PCI bus ID")
    if backend is not None:
        backend = Backend.check(backend, "backend")
        if backend == "auto":  # laddu's default: the CPU, compiled kernels where they help
            return device or "cpu", kernel, 0 if gpu is None else gpu  # device= (ours) decides
        wanted = {"cpu": "cpu", "jit": "cpu", "gpu": "gpu", "auto": "auto"}[backend]
        if device is not None and device != wanted:
            raise ValueError(f"backend {backend!r} runs on {wanted!r}, but device={device!r} was given")
        device = wanted
        if backend == "jit":
            if kernel not in ("auto", "fused"):
                raise ValueError(f"backend 'jit' means the fused compiled kernels, but kernel={kernel!r}")
            kernel = "fused"
    return device or "cpu", kernel, 0 if gpu is None else gpu


class Execution:
    """Runtime configuration of evaluations.

    Parameters
    ----------
    backend : {"auto", "cpu", "jit", "gpu"}
        laddu's first argument, positional only: ``"jit"`` is the CPU with the fused
        kernels; ``"auto"`` (the default, as in laddu) is the CPU with ``kernel``'s choice,
        or wherever ``device=`` says (laddu-dask's spelling, ``device="auto"`` taking a GPU
        when CuPy sees one).
    device : {"cpu", "gpu", "auto"} or int, optional
        Where kernels run (laddu-dask's spelling of ``backend``), or, as in laddu, the
        index of the GPU to use (then the backend is ``"gpu"``).
    precision : {"auto", "f64", "f32"}
        Arithmetic precision of the kernels (sums are always accumulated exactly);
        ``"auto"`` (the default, as in laddu) is ``"f64"``.
    memory : MemoryPlan, MemoryBudget, int or str, optional
        Host (and device) budgets; a single budget applies to the host.
    client : distributed.Client, optional
        Run on this cluster; ``None`` uses the local threaded scheduler.  Every wait on
        the cluster is bounded by a Dask config key, read when the wait starts:
        ``laddu-dask.cluster.worker-timeout`` (default ``"60s"``: for a worker to join
        a cluster that has none, at its start or after all workers died; and for the
        scheduler to answer), ``laddu-dask.cluster.preparation-timeout`` (``"1 hour"``:
        preparing one dataset) and ``laddu-dask.cluster.evaluation-timeout``
        (``"10 minutes"``: one evaluation).  Set them with
        ``dask.config.set({"laddu-dask.cluster.worker-timeout": "5 minutes"})``.  Past
        one, :class:`~laddu_dask.errors.ClusterTimeoutError` says what was waited for;
        a scheduler that went away raises :class:`~laddu_dask.errors.SchedulerLostError`
        at once.  Workers lost during a preparation or an evaluation cost only a rebuild
        of their partitions on the others (or on workers that replace them).
    split_every : int, optional
        Fan-in of the tree reduction that merges partition sums (default: the Dask config
        ``laddu-dask.split-every``, 8; see :mod:`laddu_dask.config`).
    num_workers, threads : int, optional
        Threads of the local scheduler (default: the number of CPUs); ``threads`` is
        laddu's name.
    kernel : {"auto", "fused", "numpy"}
        Per-partition kernels: fused compiled loops (Numba) or whole-array NumPy code;
        ``"auto"`` takes the fused ones when Numba is installed.
    normalization : {"auto", "general", "verify"}
        How accepted-MC sums are computed: from sufficient statistics (amplitude product
        matrices summed once) when the model allows it (``"auto"``), always by the event
        loop (``"general"``), or both, checking that they agree (``"verify"``).
    scheduler : {"pool", "dask"}, optional
        How local evaluations run their partition tasks: on a persistent thread pool with
        the merges in the calling thread (``"pool"``, the lowest latency), or as a Dask
        graph on the threaded scheduler (``"dask"``); default: the Dask config
        ``laddu-dask.scheduler`` (``"pool"``).  Preparation, streaming and clusters always
        use Dask.
    gpu : int, optional
        Index of the GPU to use with ``device="gpu"`` (default 0; one Dask worker per GPU
        on a cluster: see the README).
    autodiff : {"auto", "forward", "reverse"}
        laddu's differentiation mode, accepted and kept: laddu-dask's gradients are exact
        reverse mode (one backward sweep per event) whichever is asked for.
    mpi : bool, optional
        laddu's MPI switch: ``False``/``None`` only; laddu-dask distributes with ``client``.
    partitioning : {"auto", "contiguous", "file_groups", "rows"}
        laddu's MPI work split, accepted and kept: Dask's partitions are the dataset's, and
        results are bitwise the same for any partitioning.
    progress : bool
        Show progress while datasets are prepared (Dask's progress bar locally; a
        count of worker stores on a cluster; in a file or a pipe, one line each).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Execution(memory="1 GiB").memory.host.spec
    '1 GiB'
    >>> ex = ld.Execution("jit", precision="f64", autodiff="forward", threads=2)  # laddu's spelling
    >>> ex.device, ex.kernel, ex.num_workers, ex.backend
    ('cpu', 'fused', 2, 'jit')
    """

    def __init__(
        self,
        backend: str | None = "auto",
        *,
        device: str | int | None = None,
        precision: str = "auto",
        memory: MemoryPlan | MemoryBudget | int | str | None = None,
        client: Any = None,
        split_every: int | None = None,
        num_workers: int | None = None,
        threads: int | None = None,
        kernel: str = "auto",
        normalization: str = "auto",
        autodiff: str = "auto",
        progress: bool = False,
        gpu: int | None = None,
        scheduler: str | None = None,
        mpi: bool | None = None,
        partitioning: str = "auto",
    ) -> None:
        device, kernel, gpu = _laddu_backend(backend, device, kernel, gpu)
        if threads is not None:
            if num_workers is not None and num_workers != threads:
                raise ValueError(f"threads={threads!r} and num_workers={num_workers!r} disagree; "
                                 "they are the same setting (laddu's and Dask's name)")
            num_workers = threads
        if mpi:
            raise ValueError("laddu-dask distributes with Dask, not MPI: pass client=distributed.Client(...) "
                             "(see the README's cluster section)")
        self.autodiff = Autodiff.check(autodiff, "autodiff")
        self.partitioning = Partitioning.check(partitioning, "partitioning")
        if precision == "auto":  # laddu's default: double precision
            precision = "f64"
        device = Device.check(device, "device")
        if device == "auto":
            device = "gpu" if _gpu_available() else "cpu"
        if device == "gpu" and client is None:
            _check_gpu(gpu)  # on a cluster, the workers' GPUs are what counts
        precision = Precision.check(precision, "precision")
        if split_every is None:
            split_every = integer(config.get("split-every"), "the Dask config laddu-dask.split-every",
                                  minimum=2)
        if scheduler is None:
            scheduler = config.get("scheduler")
        split_every = integer(split_every, "split_every", minimum=2)
        kernel = Kernel.check(kernel, "kernel")
        normalization = Normalization.check(normalization, "normalization")
        scheduler = Scheduler.check(scheduler, "scheduler")
        if num_workers is not None:
            num_workers = integer(num_workers, "num_workers", minimum=1)
        if isinstance(memory, MemoryPlan):
            plan = memory
        elif memory is None:
            plan = MemoryPlan()
        else:
            plan = MemoryPlan(host=memory)
        self.device = device
        self.backend = Backend.check(backend, "backend") if backend is not None else device
        self.precision = precision
        self.memory = plan
        self.client = client
        self.split_every = split_every
        self.kernel = kernel
        self.normalization = normalization
        self.progress = bool(progress)
        self.gpu = int(gpu)
        self.scheduler = scheduler
        self.num_workers = num_workers or os.cpu_count() or 1
        self._decisions: list[MemoryDecision] = []
        self._runner: Runner | None = None

    @property
    def is_distributed(self) -> bool:
        """Whether evaluations run on a Dask cluster (laddu: on more than one MPI rank)."""
        return self.client is not None

    def __repr__(self) -> str:
        where = "local threaded scheduler" if self.client is None else f"client {self.client!r}"
        return (
            f"Execution(device={self.device!r}, precision={self.precision!r}, kernel={self.kernel!r}, "
            f"normalization={self.normalization!r}, memory={self.memory!r}, {where}, "
            f"split_every={self.split_every})"
        )

    def _scheduler_rows(self) -> list[tuple[str, Any]]:
        if self.client is None:
            how = "persistent thread pool" if self.scheduler == "pool" else "Dask threaded scheduler"
            return [("Scheduler", f"local: {how}, {self.num_workers} threads")]
        # the client's cached identity: a view does no I/O (and cannot hang on a lost scheduler)
        info = getattr(self.client, "_scheduler_identity", None) or {}
        address = info.get("address") or getattr(getattr(self.client, "scheduler", None), "address", None)
        rows: list[tuple[str, Any]] = [("Scheduler", f"distributed: {address or 'not connected'}")]
        if "n_workers" in info:
            rows.append(("Workers", f"{info['n_workers']} ({info.get('total_threads', 0)} threads, "
                                    f"{bytes_text(info.get('total_memory', 0))} memory)"))
        dashboard = _dashboard_link(self.client, info)
        if dashboard:
            rows.append(("Dashboard", link(dashboard)))
        return rows

    def _repr_html_(self) -> str:
        device = self.device if self.device == "cpu" else f"{self.device} {self.gpu}"
        rows: list[tuple[str, Any]] = [
            ("Device", device),
            ("Precision", self.precision),
            ("Kernel", self.kernel),
            ("Normalization", self.normalization),
            ("Host memory budget", _budget_text(self.memory.host, self.memory.host_bytes)),
            ("Device memory budget", _budget_text(self.memory.device)),
            *self._scheduler_rows(),
            ("Reduction fan-in", self.split_every),
        ]
        out = key_values(rows, caption="laddu_dask.Execution")
        if self._decisions:
            out += decisions_html(self._decisions, caption="memory decisions")
        return out

    # -- memory -------------------------------------------------------------------
    def host_budget_bytes(self) -> int | None:
        """The host budget in bytes on this machine (``None``: unlimited)."""
        return self.memory.host_bytes()

    def record(self, decision: MemoryDecision) -> None:
        """Remember a memory decision (and, on a cluster, note it for the laddu-dask page)."""
        self._decisions.append(decision)
        if self.client is not None:
            from laddu_dask.runtime.dashboard import record_fit_note  # distributed: with a client only

            record_fit_note(self.client, str(decision.dataset).split("/")[0], "decision", decision.as_dict())

    def memory_decisions(self) -> list[MemoryDecision]:
        """What the planner chose for each prepared dataset, and why."""
        return list(self._decisions)

    def memory_report(self) -> dict[str, Any]:
        """The machine's memory and what this execution planned (laddu's keys).

        ``resources``: the host and the devices (:class:`~laddu_dask.memory_resources.MemoryState`),
        each with ``reserved_bytes``, the planned peak bytes of this execution's memory
        decisions on it (its ``high_water_bytes`` too: a decision is never released);
        ``process``: this process's resident, virtual and peak resident bytes; ``pools``: per
        budgeted resource (the host, and the GPU of a ``device="gpu"`` execution) the
        ``requested`` budget (its JSON form), its ``effective_bytes`` here (``None``:
        unlimited), ``reserved_bytes``, ``remaining_bytes`` and ``high_water_bytes``. On a
        cluster, ``workers`` adds each worker's ``memory_limit`` and the bytes of Dask data it
        holds (``managed_bytes``), as the scheduler reports them.

        Examples
        --------
        >>> report = Execution(memory="1 GiB").memory_report()
        >>> sorted(report), report["pools"][0]["effective_bytes"]
        (['pools', 'process', 'resources'], 1073741824)
        """
        state = MemoryState.current()
        state.refresh()
        device_id = f"cuda:{self.gpu}"
        reserved = {"host": 0, device_id: 0}
        for d in self._decisions:
            key = "host" if d.resource == "host" else device_id
            reserved[key] += d.peak_bytes
        resources = [resource_row(r, reserved.get(r.id, 0), reserved.get(r.id, 0)) for r in state.resources()]
        budgets = [("host", self.memory.host, self.memory.host_bytes)]
        if self.device == "gpu":
            budgets.append((device_id, self.memory.device, self.memory.device_bytes))
        pools = []
        for rid, budget, resolve in budgets:
            effective = resolve()
            pools.append({"resource_id": rid, "requested": _json.loads(budget.to_json()),
                          "effective_bytes": effective, "reserved_bytes": reserved[rid],
                          "remaining_bytes": None if effective is None else max(0, effective - reserved[rid]),
                          "high_water_bytes": reserved[rid]})
        report = {"resources": resources, "process": process_memory(), "pools": pools}
        if self.client is not None:
            from laddu_dask.cluster_waits import scheduler_workers

            report["workers"] = [
                {"address": addr, "memory_limit": w.get("memory_limit"),
                 "managed_bytes": w.get("metrics", {}).get("managed_bytes")}
                for addr, w in scheduler_workers(self.client).items()]
        return report

    @property
    def rank(self) -> int:
        """laddu's MPI rank of this process: always 0. A Dask execution has one driving process
        (this one, which sends every evaluation and receives every result, as laddu's rank 0).

        Examples
        --------
        >>> Execution().rank, Execution().world_size
        (0, 1)
        """
        return 0

    @property
    def world_size(self) -> int:
        """The processes evaluating: 1 locally, the number of running Dask workers on a cluster
        (asked of the scheduler, within ``laddu-dask.cluster.worker-timeout``)."""
        if self.client is None:
            return 1
        from laddu_dask.cluster_waits import running_workers

        return len(running_workers(self.client))

    def notify(self, message: str) -> None:
        """Report a step the user waits for (a kernel compilation of more than a second):
        printed beside the preparation progress when ``progress`` is on, else logged at
        INFO level by the ``laddu_dask`` logger.

        Examples
        --------
        >>> Execution(progress=True).notify("compiling the fused kernel of ksks...")
        laddu-dask: compiling the fused kernel of ksks...
        """
        if self.progress:
            print(f"laddu-dask: {message}", flush=True)
        else:
            logging.getLogger("laddu_dask").info(message)

    # -- scheduling ----------------------------------------------------------------------
    @property
    def runner(self) -> Runner:
        """Where evaluations run, chosen once: the persistent thread pool, Dask's threaded
        scheduler or the cluster (see :mod:`laddu_dask.runtime.jobs`)."""
        if self._runner is None:
            if self.client is not None:
                # imported here: it brings in distributed, which a local session never needs
                from laddu_dask.runtime.cluster import ClusterRunner

                self._runner = ClusterRunner(self.client, self.split_every, self.progress)
            elif self.scheduler == "pool":
                self._runner = PoolRunner(self.num_workers, self.split_every, self.progress)
            else:
                self._runner = ThreadedRunner(self.num_workers, self.split_every, self.progress)
        return self._runner

    @property
    def workers(self) -> int:
        """How many tasks run at once (local threads, or cluster worker threads)."""
        return self.runner.workers

    def get(self, graph: Mapping[Hashable, Any], keys: Any, num_workers: int | None = None,
            progress: str | None = None) -> Any:
        """Run a hand-built task graph and return the values of ``keys``.

        ``progress`` (a label) shows Dask's progress bar when the execution asks for it.
        On a cluster the wait is bounded by ``laddu-dask.cluster.preparation-timeout``.
        """
        return self.runner.get(graph, keys, num_workers=num_workers, progress=progress)
