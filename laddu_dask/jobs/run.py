"""Running a batch fit: :func:`run_fit` and its JSON result."""

from __future__ import annotations

import contextlib
import datetime
import importlib.machinery
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from laddu_dask.data.paths import expand_paths
from laddu_dask.errors import ClusterError, KernelCacheError, LadduDaskError, ParameterError
from laddu_dask.files import atomic_write
from laddu_dask.jobs.cluster import cluster_client
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.models import build_model
from laddu_dask.jobs.schema import Checker, ConfigError, FitConfig, FitRunError, one_line
from laddu_dask.likelihood.fit_messages import nothing_free_message


@contextlib.contextmanager
def _bad_input(config: FitConfig, where: str) -> Iterator[None]:
    """Turn library errors about the user's data or model into :class:`ConfigError`, and
    failures of the machine or the cluster (an unusable kernel cache, a lost scheduler, a
    file system error) into :class:`FitRunError`."""
    try:
        yield
    except (ConfigError, FitRunError):
        raise
    except (KernelCacheError, ClusterError) as exc:
        raise FitRunError(one_line(f"{config.path}: {where}: {type(exc).__name__}: {exc}")) from exc
    except (LadduDaskError, ValueError, FileNotFoundError) as exc:
        raise ConfigError(one_line(f"{config.path}: {where}: {exc}")) from exc
    except OSError as exc:
        raise FitRunError(one_line(f"{config.path}: {where}: {type(exc).__name__}: {exc}")) from exc


def _versions() -> dict[str, str]:
    from importlib import metadata

    import laddu_dask

    out = {"laddu_dask": getattr(laddu_dask, "__version__", "unknown")}
    for dist in ("dask", "distributed", "numpy", "iminuit", "scipy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    out["python"] = platform.python_version()
    return out


def _finite(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _ensemble_summary(fits: Any) -> dict[str, Any]:
    """What the result file says of many fits: each one's fval and validity, the failed
    ones with their reason, where each started, the ensemble's message (such as restarts
    that all start at one point) and which was best."""
    best = fits.best
    return {"n": len(fits), "valid": len(fits.valid),
            "fvals": [r.fval for r in fits], "failed": [{"index": i, "message": m} for i, m in fits.failed],
            "message": fits.message, "starts": None if fits.starts is None else fits.starts.tolist(),
            "best_index": None if best is None else next(i for i, r in enumerate(fits) if r is best)}


def fit_settings(fit: Any) -> dict[str, Any]:
    """The fit keywords of a job's ``[fit]`` table: ``strategy`` and ``tolerance`` are
    MIGRAD's, given only with ``method = "migrad"``."""
    settings: dict[str, Any] = {"method": fit.method, "max_calls": fit.max_calls}
    if fit.method == "migrad":
        settings.update(strategy=fit.strategy, tolerance=fit.tolerance)
    return settings


def write_json_atomic(path: str, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as JSON to a temporary file beside ``path``, then move it into place."""
    with atomic_write(path) as f:
        json.dump(_finite(dict(payload)), f, indent=2, allow_nan=False)
        f.write("\n")


def default_output(config_path: str) -> str:
    """``<config stem>.result.json`` beside the config."""
    stem, _ = os.path.splitext(os.path.abspath(config_path))
    return stem + ".result.json"


def _inputs(config: FitConfig) -> Iterator[tuple[str, str]]:
    """``(what, path)`` of every file the job reads: config, model files, data, certificates."""
    yield "the config file", config.path
    for term in config.terms:
        if term.model.file is not None:
            yield f"the model file of {term.model.where}", term.model.file
    for ds in config.datasets.values():
        for path in ds.paths:
            try:
                files = expand_paths(path)
            except (OSError, ValueError):  # reported when the data are read
                files = [path]
            for file in files:
                yield f"a data file of {ds.where}", file
    if config.cluster.scheduler_file is not None:
        yield "the scheduler file of [cluster]", config.cluster.scheduler_file
    for path in config.cluster.tls_files or ():
        yield "a TLS file of [cluster]", path


def _with_ranges(model: Any, ranges: Mapping[str, tuple[float, float]], check: Checker) -> Any:
    """``model`` with the starting ranges of ``[start]`` (``name = [minimum, maximum]``)."""
    from laddu_dask.expr.updates import ParameterUpdate

    updates = {n: ParameterUpdate(initial=r) for n, r in ranges.items()
               if n in model.parameters and not model.parameters[n].is_fixed}
    try:
        return model.with_parameters(updates) if updates else model
    except ParameterError as exc:
        raise check.error("[start]", str(exc)) from exc


def _same_file(a: str, b: str) -> bool:
    """Whether two spellings name one file (symlinks, ``..``, hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _import_folders(config: FitConfig) -> Iterator[tuple[str, str]]:
    """``(what, folder)`` of every folder the job imports Python modules from: each model
    file's folder (on ``sys.path`` while the file loads) and this process's ``sys.path``."""
    for term in config.terms:
        if term.model.file is not None:
            yield (f"the folder of the model file of {term.model.where}",
                   os.path.dirname(os.path.abspath(term.model.file)))
    for entry in sys.path:
        if isinstance(entry, str) and os.path.isdir(entry or "."):
            yield "a folder on the Python import path", os.path.abspath(entry or ".")


def _is_within(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


def _check_output(config: FitConfig, output: str) -> str:
    output = os.path.abspath(output)
    folder = os.path.dirname(output)
    for what, path in _inputs(config):
        if _same_file(output, path):
            raise ConfigError(f"--output {output}: is {what} ({path}); writing the result "
                              "there would overwrite it")
    if output.endswith(tuple(importlib.machinery.all_suffixes())):
        for what, where in _import_folders(config):
            if not _is_within(output, where):
                continue
            module = f"a Python module the fit can import from {where} ({what})"
            if os.path.lexists(output):
                raise ConfigError(f"--output {output}: is {module}; writing the result there "
                                  "would overwrite it")
            raise ConfigError(f"--output {output}: would be {module}, shadowing any module of "
                              "that name; write the result to a .json file")
    if not os.path.isdir(folder):
        raise ConfigError(f"--output {output}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"--output {output}: folder {folder} is not writable")
    if os.path.isdir(output):
        raise ConfigError(f"--output {output}: is a folder")
    return output


def run_fit(config: FitConfig | str | os.PathLike[str], *, scheduler: str | None = None,
            output: str | None = None, say: Callable[..., None] | None = None) -> dict[str, Any]:
    """Run the fit a configuration describes; return (and write) the result.

    Parameters
    ----------
    config : FitConfig or path-like
        The configuration, or its TOML file.
    scheduler : str, optional
        Address of a running Dask scheduler; overrides ``[cluster]``.
    output : str, optional
        Write the result JSON here (atomically); ``None`` writes nothing.
    say : callable, optional
        Receives progress lines (``print`` for a log); default silent.

    Returns
    -------
    dict
        The JSON-ready result (see the module docstring).

    Raises
    ------
    ConfigError
        Bad input (configuration, model, data, start values); nothing is written.
    FitRunError
        The cluster could not be reached or the minimisation failed; nothing is written.
    """
    wall0 = time.perf_counter()
    say = say or (lambda *a, **k: None)
    if not isinstance(config, FitConfig):
        config = load_config(config)
    if output is not None:
        output = _check_output(config, output)
    check = Checker(config.path)

    import laddu_dask as ld

    # models (user code runs here), then the start values against their parameters
    built: dict[str, Any] = {}
    term_models = []
    for term in config.terms:
        key = term.model.key()
        if key not in built:
            built[key] = build_model(term.model, check)
        term_models.append(built[key])
    free: dict[str, Any] = {}
    fixed: dict[str, float] = {}
    for model in term_models:
        for name, spec in model.parameters.items():
            if spec.is_fixed:
                fixed[name] = spec.fixed
            else:
                free.setdefault(name, spec)
    if not free:
        raise check.error("model", nothing_free_message(fixed))
    for name, value in [*config.start.items(), *config.start_ranges.items()]:
        if name not in free:
            why = "is fixed in the model" if name in fixed else "is not a parameter of the model"
            raise check.error(f"[start] {name}", f"{why} (free parameters: {', '.join(free)})")
        lo, hi = free[name].bounds
        ends = value if isinstance(value, tuple) else (value, value)
        if (lo is not None and ends[0] < lo) or (hi is not None and ends[1] > hi):
            what = f"starting range {list(value)}" if isinstance(value, tuple) else f"start value {value!r}"
            raise check.error(f"[start] {name}", f"{what} lies outside the parameter's bounds [{lo}, {hi}]")
    if config.start_ranges:
        ranged = {id(m): _with_ranges(m, config.start_ranges, check) for m in term_models}
        term_models = [ranged[id(m)] for m in term_models]

    # datasets: only metadata is read here
    t0 = time.perf_counter()
    used = {n for t in config.terms for n in (t.data, t.accepted_mc)}
    datasets = {}
    for name, ds in config.datasets.items():
        if name in used:
            with _bad_input(config, f"{ds.where} path"):
                datasets[name] = ld.io.read(list(ds.paths), format=ds.format, chunk_size=ds.chunk_size,
                                            cache=ds.memory_policy)
    t_read = time.perf_counter() - t0
    say(f"read: {', '.join(f'{n} ({d.n_events} events)' for n, d in datasets.items())} "
        f"in {t_read:.2f} s")

    terms = []
    for term, model in zip(config.terms, term_models):
        cls = ld.NLL if term.kind == "nll" else ld.ExtendedNLL
        with _bad_input(config, term.where):
            terms.append(cls(model, data=datasets[term.data],
                             accepted_mc=datasets[term.accepted_mc], name=term.name))

    t0 = time.perf_counter()
    with cluster_client(config, scheduler, say) as (client, where):
        t_cluster = time.perf_counter() - t0
        execution = config.execution.build(client)
        say(f"running on the {where}" if client is None else f"running on {where}")
        if config.bins is not None:
            payload = _fit_bins(config, terms[0], execution, say)
            payload.update(_provenance(config, where, execution, wall0, t_read, t_cluster))
            if output is not None:
                _write(output, payload)
            return payload
        t0 = time.perf_counter()
        with _bad_input(config, "preparing the likelihood"):
            likelihood = ld.Likelihood(terms, execution=execution)
            start = likelihood.resolve(dict(config.start))
            value0 = likelihood.value(start)  # prepares every dataset
            if not math.isfinite(value0):
                raise ld.ParameterError(f"the likelihood at the start values is {value0!r}")
        t_prepare = time.perf_counter() - t0
        names = likelihood.parameter_names
        say(f"prepared in {t_prepare:.2f} s; fitting {len(names)} parameters with "
            f"{config.fit.method} from -2 ln L = {value0:.10g}")
        t0 = time.perf_counter()
        settings = fit_settings(config.fit)
        extra: dict[str, Any] = {}
        try:
            if config.fit.restarts == 1:
                result = likelihood.fit(initial=start, **settings)
            else:
                fits = likelihood.fit_restarts(config.fit.restarts, start, seed=config.fit.seed, **settings)
                extra["restarts"] = _ensemble_summary(fits)
                result = fits.best
                if result is None:
                    raise FitRunError(f"every one of the {len(fits)} restarts failed; the first: "
                                      f"{fits.failed[0][1]}")
            if config.fit.bootstrap:
                replicas = likelihood.bootstrap_fit(config.fit.bootstrap, result.values, seed=config.fit.seed,
                                                    **settings).fits
                extra["bootstrap"] = {**_ensemble_summary(replicas), "errors": replicas.spread()}
        except Exception as exc:
            raise FitRunError(one_line(f"{config.path}: the fit failed: "
                                        f"{type(exc).__name__}: {exc}")) from exc
        t_fit = time.perf_counter() - t0
        workers = execution.workers
        decisions = [str(d) for d in execution.memory_decisions()]

    cov = corr = None
    if result.covariance is not None:
        cov = {"parameters": list(names), "matrix": result.covariance.tolist()}
    if result.correlation is not None:
        corr = {"parameters": list(names), "matrix": result.correlation.tolist()}
    payload: dict[str, Any] = {
        "valid": result.valid,
        "fval": result.fval,
        "edm": result.edm,
        "n_calls": result.n_calls,
        "method": result.method,
        "message": result.message,
        "parameter_names": list(names),
        "values": result.named_parameters,
        "errors": result.errors,
        "covariance": cov,
        "correlation": corr,
        "start": dict(zip(names, map(float, start))),
        "terms": [
            {"name": t.name, "kind": t.kind, "data": t.data, "accepted_mc": t.accepted_mc,
             "data_events": datasets[t.data].n_events,
             "accepted_mc_events": datasets[t.accepted_mc].n_events}
            for t in config.terms
        ],
        "fit": {"method": config.fit.method, "tolerance": config.fit.tolerance,
                "strategy": config.fit.strategy, "max_calls": config.fit.max_calls,
                "restarts": config.fit.restarts, "seed": config.fit.seed,
                "bootstrap": config.fit.bootstrap},
        **extra,
        "execution": {"scheduler": where, "workers": workers,
                      "precision": execution.precision, "device": execution.device,
                      "kernel": execution.kernel, "normalization": execution.normalization,
                      "split_every": execution.split_every},
        "memory_decisions": decisions,
        "timings": {"read": t_read, "cluster": t_cluster, "prepare": t_prepare, "fit": t_fit,
                    "wall": time.perf_counter() - wall0},
        "versions": _versions(),
        "config": config.path,
        "config_sha256": config.sha256,
        "description": config.description,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    if output is not None:
        _write(output, payload)
    return payload


def _write(output: str, payload: Mapping[str, Any]) -> None:
    try:
        write_json_atomic(output, payload)
    except OSError as exc:
        raise FitRunError(one_line(f"{output}: cannot write the result: "
                                   f"{exc.strerror or exc}; nothing was written")) from exc


def _provenance(config: FitConfig, where: str, execution: Any, wall0: float, t_read: float,
                t_cluster: float) -> dict[str, Any]:
    """The fields of a binned result that say where, when and with what it ran."""
    return {
        "execution": {"scheduler": where, "workers": execution.workers, "precision": execution.precision,
                      "device": execution.device, "kernel": execution.kernel,
                      "normalization": execution.normalization},
        "timings": {"read": t_read, "cluster": t_cluster, "wall": time.perf_counter() - wall0},
        "versions": _versions(), "config": config.path, "config_sha256": config.sha256,
        "description": config.description,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _fit_bins(config: FitConfig, term: Any, execution: Any, say: Callable[..., None]) -> dict[str, Any]:
    """``[bins]``: every bin fitted ``[fit] restarts`` times; ``valid`` when every bin has a
    valid fit."""
    import laddu_dask as ld

    bins = config.bins
    assert bins is not None
    t0 = time.perf_counter()
    try:
        fits = ld.fit_bins(term.model, data=term.data, accepted_mc=term.accepted_mc, by=bins.expression(),
                           bins=ld.Bin(list(bins.edges)), restarts=config.fit.restarts,
                           initial=dict(config.start) or None, seed=config.fit.seed, execution=execution,
                           extended=isinstance(term, ld.ExtendedNLL), **fit_settings(config.fit))
    except Exception as exc:
        raise FitRunError(one_line(f"{config.path}: the binned fit failed: "
                                   f"{type(exc).__name__}: {exc}")) from exc
    out = []
    for f in fits:
        best = f.best
        out.append({"index": f.index, "low": f.low, "high": f.high, "valid": best is not None,
                    "fval": None if best is None else best.fval,
                    "values": None if best is None else best.named_parameters,
                    "errors": None if best is None else best.errors,
                    "data_events": None if f.likelihood is None else f.likelihood.terms[0].data.n_events,
                    "restarts": _ensemble_summary(f.ensemble)})
        say(f"bin {f.index} [{f.low:g}, {f.high:g}]: " + (f"-2 ln L = {best.fval:.10g}" if best else
                                                         f"no valid fit ({f.ensemble.failed[0][1]})"))
    return {"valid": all(b["valid"] for b in out), "binned": bins.scalar or f"m({' + '.join(bins.mass)})",
            "bins": out, "parameter_names": list(term.model.parameter_names),
            "fit": {"method": config.fit.method, "tolerance": config.fit.tolerance,
                    "strategy": config.fit.strategy, "max_calls": config.fit.max_calls,
                    "restarts": config.fit.restarts, "seed": config.fit.seed},
            "fit_seconds": time.perf_counter() - t0}


def print_summary(result: Mapping[str, Any], output: str | None, say: Callable[..., None]) -> None:
    if "bins" in result:
        good = sum(b["valid"] for b in result["bins"])
        say(f"binned fit of {result['binned']}: {good} of {len(result['bins'])} bins with a valid fit, "
            f"wall {result['timings']['wall']:.2f} s")
        if output is not None:
            say(f"result written to {output}")
        return
    say("")
    say(f"{'parameter':>14s} {'start':>11s} {'value':>12s} {'error':>10s}")
    for name in result["parameter_names"]:
        err = result["errors"][name]
        say(f"{name:>14s} {result['start'][name]:11.5g} {result['values'][name]:12.6g} "
            f"{err if err is not None else float('nan'):10.3g}")
    say("")
    t = result["timings"]
    say(f"fit {'valid' if result['valid'] else 'INVALID'} ({result['method']}): "
        f"-2 ln L = {result['fval']:.10g}, {result['n_calls']} evaluations; "
        f"read {t['read']:.2f} s, prepare {t['prepare']:.2f} s, fit {t['fit']:.2f} s, "
        f"wall {t['wall']:.2f} s")
    if output is not None:
        say(f"result written to {output}")
