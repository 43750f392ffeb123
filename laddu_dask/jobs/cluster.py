"""Where a batch fit runs: the local scheduler, a running Dask scheduler, or SLURM/PBS worker jobs."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from laddu_dask.errors import LadduDaskError
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.schema import CLUSTER_KINDS, Checker, ConfigError, FitConfig, FitRunError, one_line


def _jobqueue_class(kind: str, check: Checker) -> Any:
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise check.error("[cluster] kind", f"kind = {kind!r} needs dask-jobqueue, which is not "
                                            "installed: pip install 'laddu-dask[jobqueue]'") from exc
    return {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]


def _make_jobqueue_cluster(config: FitConfig) -> Any:
    """The configured SLURM/PBS cluster object, with no job submitted."""
    check = Checker(config.path)
    cluster_cls = _jobqueue_class(config.cluster.kind, check)
    options = dict(config.cluster.options)
    options.setdefault("dashboard_address", None)
    try:
        return cluster_cls(**options)
    except (TypeError, ValueError, LadduDaskError) as exc:
        raise check.error(f"[cluster] ({config.cluster.kind})",
                          f"{cluster_cls.__name__}: {exc}") from exc


def job_script(config: FitConfig | str | os.PathLike[str]) -> str:
    """The batch script of one worker job of the configured SLURM or PBS cluster.

    Nothing is submitted: the cluster object is built (its scheduler starts and stops
    in this process) without scaling it, and closed again.

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
    >>> print(job_script("examples/slurm_fit.toml"))  # doctest: +SKIP
    #!/usr/bin/env bash
    #SBATCH -J dask-worker
    ...
    """
    if not isinstance(config, FitConfig):
        config = load_config(config)
    if config.cluster.kind not in CLUSTER_KINDS:
        raise Checker(config.path).error(
            "[cluster]", "no batch-job cluster is configured (set kind = \"slurm\" or \"pbs\")")
    cluster = _make_jobqueue_cluster(config)
    try:
        return str(cluster.job_script())
    finally:
        cluster.close()


@contextlib.contextmanager
def cluster_client(config: FitConfig, scheduler: str | None) -> Iterator[tuple[Any, str]]:
    """``(client or None, description)`` for the run; closes what it started."""
    settings = config.cluster
    if scheduler is None and settings.kind == "local":
        yield None, "local threaded scheduler"
        return
    from distributed import Client

    cluster = None
    client = None
    try:
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
                cluster = _make_jobqueue_cluster(config)
                cluster.scale(jobs=settings.jobs)
                client = Client(cluster)
                where = f"{settings.kind} ({settings.jobs} job(s), scheduler {cluster.scheduler_address})"
            if settings.wait_for_workers:
                client.wait_for_workers(settings.wait_for_workers, timeout=settings.wait_timeout)
        except ConfigError:
            raise
        except (OSError, TimeoutError) as exc:
            raise FitRunError(one_line(
                f"{config.path}: [cluster]: could not start or reach the Dask cluster "
                f"({type(exc).__name__}: {exc})")) from exc
        yield client, where
    finally:
        # closing must not hide the outcome (dask-jobqueue can fail to close a cluster whose
        # job submission failed)
        for resource in (client, cluster):
            if resource is not None:
                with contextlib.suppress(Exception):
                    resource.close()
