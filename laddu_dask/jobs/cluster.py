"""Where a batch fit runs: the local scheduler, a running Dask scheduler, or SLURM/PBS worker jobs.

A SLURM or PBS cluster (``[cluster] kind``) runs its Dask scheduler in this process.
It listens on one address (``scheduler_host``, ``scheduler_interface``, the workers'
``interface``, or by default this machine's address on its default route), its
dashboard on ``127.0.0.1:8787`` unless ``dashboard_address`` asks for another, and it
speaks TLS by default: with temporary certificates (``Security.temporary()``, written
to a private folder in ``shared_temp_directory`` for the worker jobs) or the user's
(``tls_ca_file``, ``tls_cert``, ``tls_key``); ``tls = false`` turns TLS off.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import shutil
import tempfile
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from laddu_dask.errors import ClusterError, ClusterTimeoutError, LadduDaskError
from laddu_dask.files import atomic_write
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.interrupts import sigint_raises
from laddu_dask.jobs.schema import CLUSTER_KINDS, Checker, ConfigError, FitConfig, FitRunError, one_line

#: distributed's warning when the dashboard's port is taken and it listens on another
_PORT_TAKEN = re.compile(r"Port \d+ is already in use")

#: seconds between two "waiting for workers" lines
REPORT_EVERY = 5.0


@functools.cache
def _job_class(kind: str) -> Any:
    """dask-jobqueue's job class of ``kind``, keeping a failed submission on the job.

    dask-jobqueue submits jobs in its event loop, where a failing ``sbatch``/``qsub``
    only reaches tornado's log (a traceback) and the wait for workers runs to its
    timeout. These jobs keep the error (``submit_error``) for :func:`_wait_for_workers`,
    and are marked closed when cancelled.
    """
    import dask_jobqueue.pbs  # imported (SIGINT kept) by _jobqueue_class
    import dask_jobqueue.slurm
    from distributed.core import Status
    from distributed.deploy.spec import ProcessInterface

    base = {"slurm": dask_jobqueue.slurm.SLURMJob, "pbs": dask_jobqueue.pbs.PBSJob}[kind]

    class Job(base):  # type: ignore[misc, valid-type]
        submit_error: Exception | None = None

        async def start(self) -> None:
            try:
                await super().start()
            except Exception as exc:  # noqa: BLE001 - reported by the wait for workers
                self.submit_error = exc
                # a started process is "running" for distributed; there is no job to cancel
                self.status = Status.running

        async def close(self) -> None:
            await super().close()  # cancels the job
            # dask-jobqueue 0.9 leaves the status "running", and SpecCluster.close then fails
            # its check that every job is closed (and distributed retries at exit for 10 s)
            await ProcessInterface.close(self)

    Job.__name__ = Job.__qualname__ = base.__name__
    return Job


def _jobqueue_class(kind: str, check: Checker) -> tuple[Any, Any]:
    """``(cluster class, job class)`` of ``kind``."""
    try:
        with sigint_raises():  # dask_jobqueue's import makes SIGINT call sys.exit() (status 0)
            import dask_jobqueue
        job_cls = _job_class(kind)
    except ImportError as exc:
        raise check.error("[cluster] kind", f"kind = {kind!r} needs dask-jobqueue, which is not "
                                            "installed: pip install 'laddu-dask[jobqueue]'") from exc
    return {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind], job_cls


@contextlib.contextmanager
def _security(config: FitConfig, check: Checker) -> Iterator[Any]:
    """The Dask ``Security`` of ``[cluster]`` (the user's certificates, temporary ones, or
    ``None``), with every certificate in a file the worker jobs can read.

    Temporary certificates are written to a new private folder (``0o700``) in
    ``shared_temp_directory``, removed when the block ends.
    """
    settings = config.cluster
    if not settings.tls:
        yield None
        return
    from distributed.security import Security

    if settings.tls_files is not None:
        yield _security_of_files(Security, *settings.tls_files)
        return
    try:
        temporary = Security.temporary()
    except ImportError as exc:
        raise check.error("[cluster] tls", "temporary TLS certificates need the package "
                                           "'cryptography' (pip install cryptography); or give "
                                           "tls_ca_file, tls_cert and tls_key, or set tls = false") from exc
    import dask

    base = (settings.shared_temp_directory
            or dask.config.get(f"jobqueue.{settings.kind}.shared-temp-directory", None) or os.getcwd())
    base = os.path.abspath(os.path.expanduser(base))
    try:
        folder = tempfile.mkdtemp(prefix=".laddu-dask-tls-", dir=base)
    except OSError as exc:
        raise check.error("[cluster] shared_temp_directory",
                          f"cannot write the temporary TLS certificates for the worker jobs in "
                          f"{base}: {exc.strerror or exc}") from exc
    try:
        files = []
        for name, pem in (("ca.pem", temporary.tls_ca_file), ("cert.pem", temporary.tls_worker_cert),
                          ("key.pem", temporary.tls_worker_key)):
            files.append(os.path.join(folder, name))
            with atomic_write(files[-1]) as f:
                f.write(pem)
        yield _security_of_files(Security, *files)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _security_of_files(security_cls: Any, ca: str, cert: str, key: str) -> Any:
    """TLS required, one certificate and key for the client, the scheduler and the workers."""
    return security_cls(require_encryption=True, tls_ca_file=ca,
                        tls_client_cert=cert, tls_client_key=key,
                        tls_scheduler_cert=cert, tls_scheduler_key=key,
                        tls_worker_cert=cert, tls_worker_key=key)


def jobqueue_arguments(config: FitConfig, security: Any = None) -> dict[str, Any]:
    """The keyword arguments of ``SLURMCluster``/``PBSCluster`` for ``[cluster]``.

    Examples
    --------
    >>> import os, tempfile
    >>> cfg = os.path.join(tempfile.mkdtemp(), "fit.toml")
    >>> with open(cfg, "w") as f:
    ...     _ = f.write('model = "ksks"\\n[data]\\npath = "d.parquet"\\n[accmc]\\npath = "m.parquet"\\n'
    ...                 '[cluster]\\nkind = "slurm"\\nscheduler_host = "10.1.2.3"\\n')
    >>> jobqueue_arguments(load_config(cfg))["scheduler_options"]
    {'dashboard_address': '127.0.0.1:8787', 'host': '10.1.2.3'}
    """
    settings = config.cluster
    options = dict(settings.options)
    scheduler = dict(options.pop("scheduler_options", {}))
    scheduler["dashboard_address"] = settings.dashboard_address
    if settings.scheduler_host is not None:
        scheduler["host"] = settings.scheduler_host
    elif settings.scheduler_interface is not None:
        scheduler["interface"] = settings.scheduler_interface
    elif "interface" not in options:  # with `interface`, dask-jobqueue binds the scheduler to it
        from distributed.utils import get_ip

        scheduler["host"] = get_ip()  # the address the workers are told, instead of 0.0.0.0
    options["scheduler_options"] = scheduler
    options["security"] = security
    return options


@contextlib.contextmanager
def jobqueue_cluster(config: FitConfig, *, to_submit: bool = False) -> Iterator[Any]:
    """The configured SLURM/PBS cluster object, with no job submitted, closed (its jobs
    cancelled, its temporary certificates removed) when the block ends.

    ``to_submit``: first check that the submit command (``sbatch``, ``qsub``) is on PATH.
    """
    with _built_cluster(config, started=True, to_submit=to_submit) as cluster:
        try:
            yield cluster
        finally:
            _close_quietly(cluster)


@contextlib.contextmanager
def _built_cluster(config: FitConfig, *, started: bool, to_submit: bool = False) -> Iterator[Any]:
    """The SLURM/PBS cluster object of ``config`` (its scheduler running, or, not
    ``started``, an object of :func:`_unstarted` that starts nothing), inside the block of its
    TLS certificates."""
    check = Checker(config.path)
    cluster_cls, job_cls = _jobqueue_class(config.cluster.kind, check)
    if to_submit:
        _check_submit_command(config, job_cls)
    with _security(config, check) as security:
        try:
            make = cluster_cls if started else _unstarted(cluster_cls)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cluster = make(job_cls=job_cls, **jobqueue_arguments(config, security))
            for w in caught:  # a taken dashboard port is said on stdout (cluster_client), once
                if not _PORT_TAKEN.match(str(w.message)):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        except (TypeError, ValueError, LadduDaskError) as exc:
            raise check.error(f"[cluster] ({config.cluster.kind})",
                              f"{cluster_cls.__name__}: {exc}") from exc
        except OSError as exc:
            raise FitRunError(one_line(f"{config.path}: [cluster]: could not start the Dask "
                                       f"scheduler ({type(exc).__name__}: {exc})")) from exc
        yield cluster


@functools.cache
def _unstarted(cluster_cls: Any) -> Any:
    """``cluster_cls`` whose objects start nothing: no scheduler, no dashboard, no event loop.

    dask-jobqueue writes a job script from the cluster's settings
    (``JobQueueCluster.job_script()``, with ``tcp://<insert-scheduler-address-here>:8786``
    where no scheduler runs), but its constructor ends by calling ``SpecCluster``'s, which
    starts the scheduler.  This class puts a constructor that only marks the object closed
    between the two (``JobQueueCluster`` -> ``NotStarted`` -> ``SpecCluster`` in the method
    order), so every setting is checked and processed by dask-jobqueue itself.
    """
    from distributed.core import Status
    from distributed.deploy.spec import SpecCluster

    class NotStarted(SpecCluster):
        def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: ARG002 - SpecCluster's
            self.scheduler = None
            self.status = Status.closed  # nothing to close (Cluster.__del__ warns otherwise)

    class Unstarted(cluster_cls, NotStarted):  # type: ignore[misc, valid-type]
        pass

    Unstarted.__name__ = Unstarted.__qualname__ = cluster_cls.__name__
    return Unstarted


def _close_quietly(resource: Any) -> None:
    """Close a client or cluster; closing must not hide the outcome of the run."""
    with contextlib.suppress(Exception):
        resource.close()


def job_script(config: FitConfig | str | os.PathLike[str]) -> str:
    """The batch script of one worker job of the configured SLURM or PBS cluster.

    Nothing is submitted and nothing is started (no scheduler, no dashboard): dask-jobqueue
    builds the script from the cluster's settings, with
    ``tcp://<insert-scheduler-address-here>:8786`` where a run puts its scheduler's address.

    Parameters
    ----------
    config : FitConfig or path-like
        A loaded configuration, or the path of its TOML file.

    Raises
    ------
    ConfigError
        ``[cluster]`` has no ``kind = "slurm" | "pbs"``, dask-jobqueue is missing, or
        the cluster class rejects the options.

    Examples
    --------
    From the repository's root (``tests/jobs/test_batch_cluster.py`` checks the script)::

        print(job_script("examples/slurm_fit.toml"))   # #!/usr/bin/env bash, #SBATCH -J dask-worker, ...
    """
    if not isinstance(config, FitConfig):
        config = load_config(config)
    if config.cluster.kind not in CLUSTER_KINDS:
        raise Checker(config.path).error(
            "[cluster]", "no batch-job cluster is configured (set kind = \"slurm\" or \"pbs\")")
    with _built_cluster(config, started=False) as cluster:
        return str(cluster.job_script())


def _check_submit_command(config: FitConfig, job_cls: Any) -> None:
    """Fail at once when the batch system's submit command (``sbatch``, ``qsub``) is not on PATH."""
    command = shlex.split(job_cls.submit_command)[0]
    if shutil.which(command) is None:
        raise FitRunError(one_line(
            f"{config.path}: [cluster] kind = {config.cluster.kind!r}: the submit command "
            f"{command!r} is not on PATH; run the fit where the batch system's commands are "
            "(a login node, or inside a batch job)"))


def _submission_error(cluster: Any) -> str | None:
    """The first failed job submission of a dask-jobqueue cluster, as one line."""
    for job in list(cluster.workers.values()):
        error = getattr(job, "submit_error", None)
        if error is not None:
            return f"submitting a worker job failed: {type(error).__name__}: {error}"
    return None


def _wait_for_workers(client: Any, wanted: int, timeout: float, say: Callable[..., None],
                      failed: Callable[[], str | None] = lambda: None) -> None:
    """Wait for ``wanted`` workers, saying every :data:`REPORT_EVERY` seconds how many arrived.

    The scheduler is asked before every report and before the time-out, so that both say
    how many workers it has then, and a report comes before the time-out whenever
    ``timeout`` is past the first report's second, however slowly the asking goes.

    Raises
    ------
    ClusterError
        ``failed()`` reports a problem (a failed job submission).
    ClusterTimeoutError
        Fewer than ``wanted`` workers arrived within ``timeout`` seconds.
    """
    from distributed.exceptions import WorkerStartTimeoutError

    t0 = time.monotonic()
    next_report = t0 + 1.0
    while True:
        remaining = t0 + timeout - time.monotonic()
        try:  # a positive timeout: distributed waits forever on 0
            client.wait_for_workers(wanted, timeout=min(0.5, max(remaining, 0.01)))
            return
        except WorkerStartTimeoutError as exc:
            have = exc.available_workers
        problem = failed()
        if problem is not None:
            raise ClusterError(problem)
        now = time.monotonic()
        if now >= next_report:
            say(f"waiting for workers: {have} of {wanted} arrived after {now - t0:.0f} s "
                f"(wait_timeout = {timeout:g} s)")
            next_report = now + REPORT_EVERY
        if now >= t0 + timeout:
            raise ClusterTimeoutError(f"only {have} of {wanted} worker(s) arrived within "
                                      f"{timeout:g} s (wait_timeout)")


def dashboard_line(asked: str, link: str) -> str:
    """Where the scheduler's dashboard is: on the host it was asked to listen on (distributed's
    link names the scheduler's address instead), and on the port it got, with the reason when
    that is not the one asked (taken by another process).

    >>> dashboard_line("127.0.0.1:8787", "http://10.1.2.3:8787/status")
    'dashboard: http://127.0.0.1:8787/status'
    >>> dashboard_line("127.0.0.1:8787", "http://10.1.2.3:40123/status")
    'dashboard: http://127.0.0.1:40123/status (port 8787 was in use)'
    """
    url = urllib.parse.urlsplit(link)
    host, _, port = asked.rpartition(":")
    where = f"{url.scheme}://{host or url.hostname}:{url.port}{url.path}"
    taken = port.isdigit() and int(port) > 0 and int(port) != url.port
    return f"dashboard: {where}" + (f" (port {int(port)} was in use)" if taken else "")


@contextlib.contextmanager
def cluster_client(config: FitConfig, scheduler: str | None,
                   say: Callable[..., None] = lambda *a, **k: None) -> Iterator[tuple[Any, str]]:
    """``(client or None, description)`` for the run; closes what it started.

    Raises
    ------
    FitRunError
        The cluster could not be started or reached, a job submission failed, or the
        workers did not arrive within ``wait_timeout``.
    """
    settings = config.cluster
    if scheduler is None and settings.kind == "local":
        yield None, "local threaded scheduler"
        return
    from distributed import Client

    failed: Callable[[], str | None] = lambda: None  # noqa: E731
    with contextlib.ExitStack() as stack:
        try:
            if scheduler is not None:
                client = Client(scheduler)
                where = scheduler
            elif settings.kind == "scheduler" and settings.scheduler_file is not None:
                client = Client(scheduler_file=settings.scheduler_file)
                where = f"scheduler file {settings.scheduler_file}"
            elif settings.kind == "scheduler":
                client = Client(settings.scheduler)
                where = str(settings.scheduler)
            else:
                cluster = stack.enter_context(jobqueue_cluster(config, to_submit=True))
                say(dashboard_line(settings.dashboard_address, cluster.dashboard_link))
                cluster.scale(jobs=settings.jobs)
                client = Client(cluster)
                where = f"{settings.kind} ({settings.jobs} job(s), scheduler {cluster.scheduler_address})"
                failed = functools.partial(_submission_error, cluster)
            stack.callback(_close_quietly, client)
            if settings.wait_for_workers:
                _wait_for_workers(client, settings.wait_for_workers, settings.wait_timeout, say,
                                  failed)
        except (ConfigError, FitRunError):
            raise
        except (ClusterError, OSError, TimeoutError, ValueError) as exc:
            raise FitRunError(one_line(
                f"{config.path}: [cluster]: could not start or reach the Dask cluster "
                f"({type(exc).__name__}: {exc})")) from exc
        yield client, where
