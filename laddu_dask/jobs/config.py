"""Reading and validating a batch-fit TOML file: :func:`load_config`."""

from __future__ import annotations

import hashlib
import math
import os
import tomllib
from collections.abc import Mapping
from typing import Any

from laddu_dask.errors import LadduDaskError
from laddu_dask.jobs.schema import (
    BINS_KEYS,
    BUILTIN_MODELS,
    CLUSTER_KEYS,
    CLUSTER_KINDS,
    DATASET_KEYS,
    DEFAULT_DASHBOARD,
    EXECUTION_KEYS,
    FIT_KEYS,
    JOBQUEUE_KEYS,
    JOBQUEUE_KIND_KEYS,
    JOBQUEUE_PASSTHROUGH,
    MODEL_FILE_KEYS,
    SCHEDULER_KEYS,
    SCHEDULER_OWNED,
    TERM_KEYS,
    TERM_KINDS,
    TOP_KEYS,
    BinSettings,
    Checker,
    ClusterSettings,
    ConfigError,
    DatasetSpec,
    ExecutionSettings,
    FitConfig,
    FitSettings,
    ModelSpec,
    TermSpec,
    expand_env,
    one_line,
    resolve_path,
)
from laddu_dask.options import Device, FitMethod, Kernel, MemoryPolicy, Normalization, Precision


def load_config(path: str | os.PathLike[str]) -> FitConfig:
    """Read and validate a batch-fit TOML file (nothing else is opened).

    Parameters
    ----------
    path : path-like
        The TOML file.

    Returns
    -------
    FitConfig

    Raises
    ------
    ConfigError
        The file is missing, not TOML, or breaks the schema; the message is one line
        naming the file, the table, the key and the value.

    Examples
    --------
    >>> import tempfile, os
    >>> cfg = os.path.join(tempfile.mkdtemp(), "fit.toml")
    >>> with open(cfg, "w") as f:
    ...     _ = f.write('model = "ksks"\\n[data]\\npath = "d.parquet"\\n[accmc]\\npath = "m.parquet"\\n'
    ...                 '[fit]\\ntolerence = 0.1\\n')
    >>> try:
    ...     load_config(cfg)
    ... except ConfigError as exc:
    ...     print(str(exc).split(": ", 1)[1].split(" (")[0])
    [fit]: unknown key 'tolerence'
    """
    path = os.path.abspath(os.fspath(path))
    check = Checker(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(one_line(f"{path}: cannot read the config file: "
                                    f"{exc.strerror or exc}")) from exc
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(one_line(f"{path}: not valid TOML: {exc}")) from exc
    check.keys(doc, "top level", TOP_KEYS)
    doc = expand_env(doc, (), check)
    folder = os.path.dirname(path)

    description = check.get(doc, "description", "top level", "str", default="")
    datasets = _load_datasets(doc, check, folder)
    models = {
        name: _load_model(value, f"[models.{name}]", check, folder, {})
        for name, value in check.table(doc.get("models", {}), "[models]").items()
    }
    default_model = None
    if "model" in doc:
        default_model = _load_model(doc["model"], "model", check, folder, models)
    terms = _load_terms(doc, check, folder, models, default_model, datasets)

    start, start_ranges = _load_start(doc, check)

    fit_table = check.table(doc.get("fit", {}), "[fit]")
    check.keys(fit_table, "[fit]", FIT_KEYS)
    fit = FitSettings(
        method=check.get(fit_table, "method", "[fit]", "str", "migrad", choices=FitMethod.values()),
        tolerance=check.get(fit_table, "tolerance", "[fit]", "number", 0.1, above=0.0),
        strategy=check.get(fit_table, "strategy", "[fit]", "int", 1, choices=(0, 1, 2)),
        max_calls=check.get(fit_table, "max_calls", "[fit]", "int", None, minimum=1),
        restarts=check.get(fit_table, "restarts", "[fit]", "int", 1, minimum=1),
        seed=check.get(fit_table, "seed", "[fit]", "int", 0, minimum=0),
        bootstrap=check.get(fit_table, "bootstrap", "[fit]", "int", 0, minimum=0),
    )

    execution = _load_execution(doc, check)
    cluster = _load_cluster(doc, check, folder)
    bins = _load_bins(doc, check, len(terms))
    return FitConfig(
        path=path, sha256=hashlib.sha256(raw).hexdigest(), description=description,
        datasets=datasets, terms=tuple(terms), start=start, fit=fit, execution=execution,
        cluster=cluster, bins=bins, start_ranges=start_ranges,
    )


def _load_start(doc: Mapping[str, Any], check: Checker) -> tuple[dict[str, float],
                                                                 dict[str, tuple[float, float]]]:
    """``[start]``: ``name = number``, a start value, or ``name = [minimum, maximum]``, a
    starting range (as ``parameter(name, initial=(minimum, maximum))``: the first fit starts
    at its middle, restarts sample their starts in it)."""
    table = check.table(doc.get("start", {}), "[start]")
    start: dict[str, float] = {}
    ranges: dict[str, tuple[float, float]] = {}
    for name, value in table.items():
        if not isinstance(value, list):
            start[name] = check.get(table, name, "[start]", "number")
            continue
        numbers = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)
                   and math.isfinite(v)]
        if len(value) != 2 or len(numbers) != 2 or not numbers[0] < numbers[1]:
            raise check.error(f"[start] {name}", "a starting range is [minimum, maximum], two finite "
                                                 f"numbers with minimum < maximum; got {value!r}")
        ranges[name] = (float(numbers[0]), float(numbers[1]))
    return start, ranges


def _load_bins(doc: Mapping[str, Any], check: Checker, n_terms: int) -> BinSettings | None:
    """``[bins]``: what is binned (``scalar`` or ``mass``) and the edges (``edges``, or
    ``count`` bins from ``low`` to ``high``)."""
    if "bins" not in doc:
        return None
    table = check.table(doc["bins"], "[bins]")
    check.keys(table, "[bins]", BINS_KEYS)
    if n_terms != 1:
        raise check.error("[bins]", f"a binned fit takes exactly one term, got {n_terms}")
    scalar = check.get(table, "scalar", "[bins]", "str")
    mass = check.get(table, "mass", "[bins]", "strlist", [])
    if (scalar is None) == (not mass):
        raise check.error("[bins]", "give either scalar = \"COLUMN\" or mass = [\"P4\", ...]")
    if "edges" in table:
        if any(k in table for k in ("count", "low", "high")):
            raise check.error("[bins]", "give either edges or count, low and high")
        raw = table["edges"]
        if not isinstance(raw, list) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                                for v in raw):
            raise check.error("[bins] edges", f"expected a list of numbers, got {raw!r}")
        edges = [float(v) for v in raw]
    else:
        count = check.get(table, "count", "[bins]", "int", required=True, minimum=1)
        low = check.get(table, "low", "[bins]", "number", required=True)
        high = check.get(table, "high", "[bins]", "number", required=True)
        edges = [low + i * (high - low) / count for i in range(count)] + [high]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])) or not all(map(math.isfinite, edges)):
        raise check.error("[bins] edges", f"need at least two finite, increasing edges, got {edges}")
    return BinSettings(tuple(edges), scalar, tuple(mass))


def _load_dataset(table: Any, name: str, where: str, check: Checker, folder: str) -> DatasetSpec:
    table = check.table(table, where)
    path = check.get(table, "path", where, "str_or_strlist", required=True)
    paths = [path] if isinstance(path, str) else list(path)
    return DatasetSpec(
        name=name,
        paths=tuple(resolve_path(folder, p) for p in paths),
        chunk_size=check.get(table, "chunk_size", where, "int", minimum=1),
        memory_policy=check.get(table, "memory_policy", where, "str", "fastest",
                                choices=MemoryPolicy.values()),
        where=where,
        format=check.get(table, "format", where, "str"),
    )


def _load_datasets(doc: Mapping[str, Any], check: Checker, folder: str) -> dict[str, DatasetSpec]:
    datasets: dict[str, DatasetSpec] = {}
    for name in ("data", "accmc"):
        if name in doc:
            table = check.table(doc[name], f"[{name}]")
            check.keys(table, f"[{name}]", DATASET_KEYS)
            datasets[name] = _load_dataset(table, name, f"[{name}]", check, folder)
    entries = doc.get("datasets", [])
    if not isinstance(entries, list):
        raise check.error("datasets", "expected an array of tables ([[datasets]])")
    for i, entry in enumerate(entries, 1):
        where = f"[[datasets]] #{i}"
        entry = check.table(entry, where)
        check.keys(entry, where, ("name",) + DATASET_KEYS)
        name = check.get(entry, "name", where, "str", required=True)
        where = f"[[datasets]] {name!r}"
        if name in datasets:
            raise check.error(where, f"a dataset named {name!r} is defined twice")
        datasets[name] = _load_dataset(entry, name, where, check, folder)
    return datasets


def _load_model(value: Any, where: str, check: Checker, folder: str,
                named: Mapping[str, ModelSpec]) -> ModelSpec:
    if isinstance(value, str):
        if value in named:
            return named[value]
        if value in BUILTIN_MODELS:
            return _load_model({"builtin": value}, where, check, folder, named)
        known = ", ".join(sorted(BUILTIN_MODELS))
        names = f"; named models: {', '.join(named)}" if named else ""
        raise check.error(where, f"unknown model {value!r} (built-in models: {known}{names}; "
                                 "or give a table { file = \"model.py\", function = \"build\" })")
    table = check.table(value, where)
    if "file" in table and "builtin" in table:
        raise check.error(where, "give either 'builtin' or 'file', not both")
    if "file" in table:
        check.keys(table, where, MODEL_FILE_KEYS)
        file = check.get(table, "file", where, "str")
        return ModelSpec(
            where=where, file=resolve_path(folder, file),
            function=check.get(table, "function", where, "str", "build"),
            options=check.get(table, "options", where, "table", {}),
        )
    if "builtin" not in table:
        raise check.error(where, "a model table needs 'builtin' (\"ksks\") or 'file' "
                                 "(a Python file with a model function)")
    builtin = check.get(table, "builtin", where, "str", choices=tuple(BUILTIN_MODELS))
    check.keys(table, where, ("builtin",) + BUILTIN_MODELS[builtin])
    options = {
        "lineshape": check.get(table, "lineshape", where, "str", "bw", choices=("bw", "rbw")),
        "fixed_lineshapes": check.get(table, "fixed_lineshapes", where, "bool", False),
    }
    return ModelSpec(where=where, builtin=builtin, options=options)


def _load_terms(doc: Mapping[str, Any], check: Checker, folder: str,
                models: Mapping[str, ModelSpec], default_model: ModelSpec | None,
                datasets: Mapping[str, DatasetSpec]) -> list[TermSpec]:
    entries = doc.get("terms")
    implicit = entries is None
    if implicit:
        entries = [{}]
    elif not isinstance(entries, list) or not entries:
        raise check.error("terms", "expected a non-empty array of tables ([[terms]])")
    terms: list[TermSpec] = []
    names: set[str] = set()
    for i, entry in enumerate(entries, 1):
        where = "the default term (no [[terms]])" if implicit else f"[[terms]] #{i}"
        entry = check.table(entry, where)
        check.keys(entry, where, TERM_KEYS)
        data = check.get(entry, "data", where, "str", "data")
        name = check.get(entry, "name", where, "str", data)
        if not implicit:
            where = f"[[terms]] {name!r}"
        if name in names:
            raise check.error(where, f"two terms are named {name!r}; give each a unique name")
        names.add(name)
        kind = check.get(entry, "kind", where, "str", "nll", choices=TERM_KINDS)
        accepted_mc = check.get(entry, "accepted_mc", where, "str", "accmc")
        for key, ds in (("data", data), ("accepted_mc", accepted_mc)):
            if ds not in datasets:
                have = ", ".join(datasets) or "none"
                table = f"[{ds}] or " if ds in ("data", "accmc") else ""
                raise check.error(f"{where} {key}", f"no dataset named {ds!r} (define it in "
                                                    f"{table}[[datasets]]; defined: {have})")
        if "model" in entry:
            model = _load_model(entry["model"], f"{where} model", check, folder, models)
        elif default_model is not None:
            model = default_model
        else:
            raise check.error(where, "no model: set model = ... at the top level or in the term")
        terms.append(TermSpec(name=name, kind=kind, data=data, accepted_mc=accepted_mc,
                              model=model, where=where))
    return terms


def _load_execution(doc: Mapping[str, Any], check: Checker) -> ExecutionSettings:
    where = "[execution]"
    table = check.table(doc.get("execution", {}), where)
    check.keys(table, where, EXECUTION_KEYS)
    settings = ExecutionSettings(
        device=check.get(table, "device", where, "str", "cpu", choices=Device.values()),
        precision=check.get(table, "precision", where, "str", "f64", choices=Precision.values()),
        memory=check.get(table, "memory", where, "size"),
        device_memory=check.get(table, "device_memory", where, "size"),
        kernel=check.get(table, "kernel", where, "str", "auto", choices=Kernel.values()),
        normalization=check.get(table, "normalization", where, "str", "auto",
                                choices=Normalization.values()),
        split_every=check.get(table, "split_every", where, "int", 8, minimum=2),
        num_workers=check.get(table, "num_workers", where, "int", None, minimum=1),
    )
    try:
        settings.build()  # validates budgets and the device now, not after the data are read
    except (LadduDaskError, ValueError) as exc:
        raise check.error(where, str(exc)) from exc
    return settings


def _load_cluster(doc: Mapping[str, Any], check: Checker, folder: str) -> ClusterSettings:
    where = "[cluster]"
    table = check.table(doc.get("cluster", {}), where)
    kind = check.get(table, "kind", where, "str", None, choices=CLUSTER_KINDS)
    jobqueue = dict(JOBQUEUE_KEYS)
    if kind is not None:
        jobqueue.update(JOBQUEUE_KIND_KEYS[kind])
    else:
        for extra in JOBQUEUE_KIND_KEYS.values():
            jobqueue.update(extra)
    check.keys(table, where, CLUSTER_KEYS + tuple(jobqueue) + tuple(SCHEDULER_KEYS)
               + (JOBQUEUE_PASSTHROUGH,))
    given = [k for k in ("scheduler", "scheduler_file", "kind") if k in table]
    if len(given) > 1:
        raise check.error(where, f"give only one of scheduler, scheduler_file and kind "
                                 f"(got {', '.join(given)})")
    for key in (*jobqueue, *SCHEDULER_KEYS, JOBQUEUE_PASSTHROUGH, "jobs"):
        if key in table and kind is None:
            raise check.error(f"{where} {key}",
                              "is a batch-job setting: it needs kind = \"slurm\" or \"pbs\"")
    options = {key: check.get(table, key, where, kind_of_value)
               for key, kind_of_value in jobqueue.items() if key in table}
    _refuse_owned(options.get("scheduler_options", {}), f"{where} scheduler_options", check)
    if JOBQUEUE_PASSTHROUGH in table:
        extra = check.get(table, JOBQUEUE_PASSTHROUGH, where, "table")
        inner = f"{where}.{JOBQUEUE_PASSTHROUGH}"
        _refuse_owned(extra, inner, check)
        for key in extra:
            if key == "n_workers":
                raise check.error(f"{inner} {key}", "is not allowed here: use jobs = N in [cluster]")
            if key in jobqueue:
                raise check.error(f"{inner} {key}", f"is a [cluster] key: set {key} in [cluster]")
        options.update(extra)
    network = {key: check.get(table, key, where, kind_of_value)
               for key, kind_of_value in SCHEDULER_KEYS.items() if key in table}
    if "scheduler_host" in network and "scheduler_interface" in network:
        raise check.error(where, "give only one of scheduler_host and scheduler_interface")
    tls = network.get("tls", True)
    tls_keys = ("tls_ca_file", "tls_cert", "tls_key")
    tls_given = [k for k in tls_keys if k in network]
    if tls_given and not tls:
        raise check.error(f"{where} {tls_given[0]}", "is given with tls = false")
    if tls_given and len(tls_given) < len(tls_keys):
        missing = ", ".join(k for k in tls_keys if k not in network)
        raise check.error(where, f"user certificates need all of tls_ca_file, tls_cert and tls_key "
                                 f"(missing: {missing})")
    tls_files = None
    if tls_given:
        tls_files = tuple(resolve_path(folder, network[k]) for k in tls_keys)
        for key, path in zip(tls_keys, tls_files):
            if not os.path.isfile(path):
                raise check.error(f"{where} {key}", f"no such file: {path}")
    scheduler_file = check.get(table, "scheduler_file", where, "str")
    settings = ClusterSettings(
        kind=kind or ("scheduler" if given else "local"),
        scheduler=check.get(table, "scheduler", where, "str"),
        scheduler_file=None if scheduler_file is None else resolve_path(folder, scheduler_file),
        options=options,
        jobs=check.get(table, "jobs", where, "int", 1, minimum=1),
        wait_for_workers=check.get(table, "wait_for_workers", where, "int", 1, minimum=0),
        wait_timeout=check.get(table, "wait_timeout", where, "number", 3600.0, above=0.0),
        scheduler_host=network.get("scheduler_host"),
        scheduler_interface=network.get("scheduler_interface"),
        dashboard_address=network.get("dashboard_address", DEFAULT_DASHBOARD),
        tls=tls,
        tls_files=tls_files,
        shared_temp_directory=network.get("shared_temp_directory"),
    )
    if settings.scheduler is not None and not settings.scheduler.strip():
        raise check.error(f"{where} scheduler", "is empty")
    return settings


def _refuse_owned(table: Mapping[str, Any], where: str, check: Checker) -> None:
    """Scheduler keywords with a ``[cluster]`` key of their own are not set around it."""
    for key, instead in SCHEDULER_OWNED.items():
        if key in table:
            raise check.error(f"{where} {key}", f"is set by [cluster] {instead}; give it there")
