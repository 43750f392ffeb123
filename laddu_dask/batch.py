"""Batch fits described by a TOML file: ``laddu-dask fit CONFIG.toml``.

A batch fit reads one TOML file that names the event samples, the model, the
likelihood terms, the start values, the minimiser settings, the execution settings
and (optionally) a Dask cluster; it runs the fit and writes the result as JSON.

Usage::

    laddu-dask fit CONFIG.toml [--scheduler ADDRESS] [--output result.json]
                               [--print-job-script] [--quiet]

``--scheduler`` runs on an existing Dask scheduler (``tcp://host:8786``), overriding
``[cluster]``; ``--output`` chooses the result file (default ``<config stem>.result.json``
beside the config); ``--print-job-script`` prints the batch script that the
``[cluster]`` table would submit for each worker job, submits nothing and exits.

Exit status: ``0`` valid fit; ``1`` the minimiser did not converge (the result is
still written, with ``"valid": false``); ``2`` bad input (a one-line message on stderr
names the file, table, key or value at fault; nothing is written); ``3`` the fit could
not run (the cluster did not start, an evaluation failed during the minimisation;
nothing is written).

TOML schema
-----------
Unknown keys are rejected in every table (naming the table, the key and the allowed
keys), so a typo never silently falls back to a default. Relative paths (data, model
files) are relative to the folder of the config file. In every string,
``${NAME}`` is replaced by the environment variable ``NAME`` (an error when it is not
set) and ``${NAME:-default}`` by its value or ``default``.

Top level

================ =============== ======== ============================================
key              type            default  meaning
================ =============== ======== ============================================
``description``  string          ``""``   free text, copied into the result
``model``        string or table none     the model of every term without its own
                                          (see *Models*)
``[models.N]``   table           none     named models, referred to as ``model = "N"``
``[data]``       table           none     the dataset named ``data``
``[accmc]``      table           none     the dataset named ``accmc``
``[[datasets]]`` array of tables none     more datasets, each with a ``name``
``[[terms]]``    array of tables one NLL  likelihood terms (see *Terms*)
``[start]``      table           none     ``parameter = value`` start values
``[fit]``        table           defaults minimiser settings
``[execution]``  table           defaults runtime settings
``[cluster]``    table           local    where to run
================ =============== ======== ============================================

Datasets (``[data]``, ``[accmc]``, each ``[[datasets]]`` entry)

================= ============================== ============= ========================================
key               type                           default       meaning
================= ============================== ============= ========================================
``name``          string                         (required)    only in ``[[datasets]]``; unique
``path``          string or list of strings      (required)    Parquet file, folder (its ``*.parquet``)
                                                               or glob, or a list of these
``chunk_size``    integer > 0                    automatic     events per partition
``memory_policy`` ``"fastest"``, ``"resident"``, ``"fastest"`` keep prepared columns in memory, stream
                  ``"streaming"``                              them, or decide by the memory budget
================= ============================== ============= ========================================

Terms (each ``[[terms]]`` entry; without any, one NLL of ``data`` and ``accmc``)

=============== ============================= ============= ===============================
key             type                          default       meaning
=============== ============================= ============= ===============================
``name``        string                        its ``data``  unique term name
``kind``        ``"nll"``, ``"extended_nll"`` ``"nll"``     ``NLL`` or ``ExtendedNLL``
``data``        string                        ``"data"``    dataset name of the data
``accepted_mc`` string                        ``"accmc"``   dataset name of the accepted MC
``model``       string or table               top ``model`` this term's model
=============== ============================= ============= ===============================

Models: a string names a ``[models.N]`` table or a built-in model (``"ksks"``); a table
is one of

* ``{ builtin = "ksks", lineshape = "bw" | "rbw", fixed_lineshapes = false }``: the
  KsKs S+D-wave intensity of :func:`laddu_dask.ksks.model` (defaults ``"bw"``,
  ``false``);
* ``{ file = "mymodel.py", function = "build", options = { ... } }``: the function
  ``function`` (default ``"build"``) of the Python file ``file``, called with the
  keyword arguments ``options`` (default none); it returns a :class:`~laddu_dask.Model`
  or an expression. The file's folder is on ``sys.path`` while it is imported.

``[start]``: ``name = number`` for any free parameter of the model(s); the others start
at their initial values. A name that is not a free parameter, or a value outside the
parameter's bounds, is an error.

``[fit]``

============= ========================== ============ ================================
key           type                       default      meaning
============= ========================== ============ ================================
``method``    ``"migrad"``, ``"lbfgsb"`` ``"migrad"`` iminuit MIGRAD or SciPy L-BFGS-B
                                                      (both followed by HESSE)
``tolerance`` number > 0                 ``0.1``      MIGRAD's EDM tolerance
``strategy``  0, 1 or 2                  ``1``        MIGRAD's strategy
``max_calls`` integer > 0                none         limit on likelihood evaluations
============= ========================== ============ ================================

``[execution]`` (see :class:`~laddu_dask.Execution`)

================= ==================================== ========== ====================================
key               type                                 default    meaning
================= ==================================== ========== ====================================
``device``        ``"cpu"``, ``"gpu"``, ``"auto"``     ``"cpu"``  where kernels run
``precision``     ``"f64"``, ``"f32"``                 ``"f64"``  kernel precision
``memory``        string or integer                    unlimited  host budget (``"4 GiB"``, ``"60%"``,
                                                                  bytes), per worker on a cluster
``device_memory`` string or integer                    unlimited  device budget
``kernel``        ``"auto"``, ``"fused"``, ``"numpy"`` ``"auto"`` per-partition kernels
``normalization`` ``"auto"``, ``"general"``,           ``"auto"`` how accepted-MC sums are computed
                  ``"verify"``
``split_every``   integer >= 2                         ``8``      tree-reduction fan-in
``num_workers``   integer > 0                          CPUs       threads of the local scheduler
================= ==================================== ========== ====================================

``[cluster]``: without it, the local threaded scheduler. Give at most one of
``scheduler``, ``scheduler_file`` and ``kind``.

==================== ====================== ======== ======================================
key                  type                   default  meaning
==================== ====================== ======== ======================================
``scheduler``        string                 none     address of a running Dask scheduler
                                                     (``tcp://host:8786``)
``scheduler_file``   string                 none     its scheduler file (e.g. dask-mpi)
``kind``             ``"slurm"``, ``"pbs"`` none     start the workers as batch jobs
                                                     (needs ``dask-jobqueue``)
``jobs``             integer > 0            ``1``    worker jobs to submit (with ``kind``)
``wait_for_workers`` integer >= 0           ``1``    workers to wait for before preparing
                                                     the data
``wait_timeout``     number > 0             ``3600`` seconds to wait for them (then exit 3)
==================== ====================== ======== ======================================

With ``kind``, these keys are passed to ``dask_jobqueue.SLURMCluster`` or
``PBSCluster``: ``cores`` (integer), ``memory`` (string, per job), ``processes``
(integer), ``walltime``, ``queue``, ``account``, ``project``, ``job_name``,
``interface``, ``local_directory``, ``log_directory``, ``python``, ``shebang``
(strings), ``death_timeout`` (number), ``job_extra_directives``,
``job_directives_skip``, ``job_script_prologue``, ``worker_extra_args`` (lists of
strings), ``scheduler_options`` (table), and for SLURM ``job_cpu`` (integer) and
``job_mem`` (string), for PBS ``resource_spec`` (string). Any other keyword argument of
those classes goes, unchecked, in the table ``[cluster.jobqueue_options]``.

Result file (JSON; non-finite numbers are written as ``null``): ``valid``, ``fval``,
``n_calls``, ``method``, ``message``, ``parameter_names``, ``values``, ``errors``,
``covariance`` (``{"parameters": [...], "matrix": [[...]]}`` or ``null``), ``start``,
``terms``, ``execution``, ``memory_decisions``, ``timings`` (seconds: ``read``,
``cluster``, ``prepare``, ``fit``, ``wall``), ``versions``, ``config`` (absolute path),
``config_sha256`` (of the file's bytes), ``description`` and ``created`` (UTC).
It is written to a temporary file in the same folder and moved into place.

Examples
--------
>>> import os, tempfile
>>> from laddu_dask import ksks
>>> from laddu_dask.batch import load_config, main
>>> folder = tempfile.mkdtemp()
>>> paths = ksks.write_sample(folder, n_data=500, n_mc=2000, seed=3)
>>> config = os.path.join(folder, "fit.toml")
>>> with open(config, "w") as f:
...     _ = f.write('model = { builtin = "ksks", fixed_lineshapes = true }\\n'
...                 '[data]\\npath = "data.parquet"\\n[accmc]\\npath = "accmc.parquet"\\n')
>>> load_config(config).terms[0].kind
'nll'
>>> main([config, "--quiet"])
0
>>> os.path.exists(os.path.join(folder, "fit.result.json"))
True
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import difflib
import hashlib
import importlib.util
import json
import math
import os
import platform
import re
import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from laddu_dask.errors import LadduDaskError
from laddu_dask.files import atomic_write

__all__ = [
    "ClusterSettings",
    "ConfigError",
    "DatasetSpec",
    "ExecutionSettings",
    "FitConfig",
    "FitRunError",
    "FitSettings",
    "ModelSpec",
    "TermSpec",
    "build_parser",
    "job_script",
    "load_config",
    "main",
    "run_fit",
]

EXIT_VALID, EXIT_INVALID, EXIT_BAD_INPUT, EXIT_FAILED = 0, 1, 2, 3


class ConfigError(LadduDaskError, ValueError):
    """A batch configuration is invalid; the message names the file, table and key."""


class FitRunError(LadduDaskError, RuntimeError):
    """A valid configuration could not be run (cluster start, failure during the fit)."""


# ----------------------------------------------------------------------------- schema

TOP_KEYS = ("description", "model", "models", "data", "accmc", "datasets", "terms", "start",
            "fit", "execution", "cluster")
DATASET_KEYS = ("path", "chunk_size", "memory_policy")
TERM_KEYS = ("name", "kind", "data", "accepted_mc", "model")
TERM_KINDS = ("nll", "extended_nll")
FIT_KEYS = ("method", "tolerance", "strategy", "max_calls")
EXECUTION_KEYS = ("device", "precision", "memory", "device_memory", "kernel", "normalization",
                  "split_every", "num_workers")
CLUSTER_KINDS = ("slurm", "pbs")
CLUSTER_KEYS = ("scheduler", "scheduler_file", "kind", "jobs", "wait_for_workers", "wait_timeout")
#: dask-jobqueue keyword arguments accepted in ``[cluster]`` (with ``kind``), by TOML type.
JOBQUEUE_KEYS: dict[str, str] = {
    "cores": "int", "memory": "str", "processes": "int", "walltime": "str", "queue": "str",
    "account": "str", "project": "str", "job_name": "str", "interface": "str",
    "local_directory": "str", "log_directory": "str", "python": "str", "shebang": "str",
    "death_timeout": "number", "job_extra_directives": "strlist",
    "job_directives_skip": "strlist", "job_script_prologue": "strlist",
    "worker_extra_args": "strlist", "scheduler_options": "table",
}
JOBQUEUE_KIND_KEYS: dict[str, dict[str, str]] = {
    "slurm": {"job_cpu": "int", "job_mem": "str"},
    "pbs": {"resource_spec": "str"},
}
JOBQUEUE_PASSTHROUGH = "jobqueue_options"
BUILTIN_MODELS: dict[str, tuple[str, ...]] = {"ksks": ("lineshape", "fixed_lineshapes")}
MODEL_FILE_KEYS = ("file", "function", "options")


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: ``name``, resolved ``paths``, ``chunk_size``, ``memory_policy``."""

    name: str
    paths: tuple[str, ...]
    chunk_size: int | None
    memory_policy: str
    where: str


@dataclass(frozen=True)
class ModelSpec:
    """A model: a built-in (``builtin`` and its ``options``) or a ``file`` and ``function``."""

    where: str
    builtin: str | None = None
    file: str | None = None
    function: str = "build"
    options: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """Identity of the model (terms with equal keys share one built model)."""
        return json.dumps([self.builtin, self.file, self.function, self.options],
                          sort_keys=True, default=str)


@dataclass(frozen=True)
class TermSpec:
    """One likelihood term."""

    name: str
    kind: str
    data: str
    accepted_mc: str
    model: ModelSpec
    where: str


@dataclass(frozen=True)
class FitSettings:
    """``[fit]``."""

    method: str = "migrad"
    tolerance: float = 0.1
    strategy: int = 1
    max_calls: int | None = None


@dataclass(frozen=True)
class ExecutionSettings:
    """``[execution]``: keyword arguments of :class:`~laddu_dask.Execution`."""

    device: str = "cpu"
    precision: str = "f64"
    memory: str | int | None = None
    device_memory: str | int | None = None
    kernel: str = "auto"
    normalization: str = "auto"
    split_every: int = 8
    num_workers: int | None = None

    def build(self, client: Any = None) -> Any:
        """The :class:`~laddu_dask.Execution` (with ``client``)."""
        from laddu_dask.runtime.execution import Execution
        from laddu_dask.runtime.memory import MemoryPlan

        return Execution(
            device=self.device, precision=self.precision,
            memory=MemoryPlan(host=self.memory, device=self.device_memory), client=client,
            split_every=self.split_every, num_workers=self.num_workers, kernel=self.kernel,
            normalization=self.normalization,
        )


@dataclass(frozen=True)
class ClusterSettings:
    """``[cluster]``: ``kind`` is ``"local"``, ``"scheduler"``, ``"slurm"`` or ``"pbs"``."""

    kind: str = "local"
    scheduler: str | None = None
    scheduler_file: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    jobs: int = 1
    wait_for_workers: int = 1
    wait_timeout: float = 3600.0


@dataclass(frozen=True)
class FitConfig:
    """A validated batch configuration (see the module docstring for the TOML schema)."""

    path: str
    sha256: str
    description: str
    datasets: Mapping[str, DatasetSpec]
    terms: tuple[TermSpec, ...]
    start: Mapping[str, float]
    fit: FitSettings
    execution: ExecutionSettings
    cluster: ClusterSettings

    @property
    def folder(self) -> str:
        """The folder of the config file (base of relative paths)."""
        return os.path.dirname(self.path)


# ----------------------------------------------------------------------------- checks


class _Checker:
    """Typed access to TOML tables, raising :class:`ConfigError` naming file, table and key."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(_one_line(f"{self.path}: {where}: {message}"))

    def table(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(where, f"expected a table, got {_toml_type(value)} {value!r}")
        return value

    def keys(self, table: Mapping[str, Any], where: str, allowed: Sequence[str]) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(
                    where, f"unknown key {key!r} (allowed keys: {', '.join(allowed)}){hint}"
                )

    def get(self, table: Mapping[str, Any], key: str, where: str, kind: str,
            default: Any = None, required: bool = False, choices: Sequence[Any] | None = None,
            minimum: float | None = None) -> Any:
        if key not in table:
            if required:
                raise self.error(where, f"missing required key {key!r}")
            return default
        value = table[key]
        ok = {
            "str": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "table": isinstance(value, dict),
            "strlist": isinstance(value, list) and all(isinstance(v, str) for v in value),
            "str_or_strlist": isinstance(value, str) or (
                isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)),
            "size": (isinstance(value, str) or isinstance(value, int))
            and not isinstance(value, bool),
        }[kind]
        if not ok:
            expected = {
                "str": "a string", "int": "an integer", "number": "a number",
                "bool": "true or false", "table": "a table", "strlist": "a list of strings",
                "str_or_strlist": "a string or a non-empty list of strings",
                "size": "a size string such as \"4 GiB\" or \"60%\", or a number of bytes",
            }[kind]
            raise self.error(f"{where} {key}", f"expected {expected}, got {_toml_type(value)} "
                                               f"{value!r}")
        if choices is not None and value not in choices:
            raise self.error(f"{where} {key}", f"expected one of "
                                               f"{', '.join(map(repr, choices))}, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(f"{where} {key}", f"must be >= {minimum:g}, got {value!r}")
        if kind == "number":
            value = float(value)
        return value


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _toml_type(value: Any) -> str:
    for t, name in ((bool, "boolean"), (int, "integer"), (float, "float"), (str, "string"),
                    (list, "array"), (dict, "table")):
        if isinstance(value, t):
            return name
    return type(value).__name__


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _key_name(path: tuple[str | int, ...]) -> str:
    """``("datasets", 0, "path")`` -> ``"[[datasets]] #1 path"``, ``("fit", "method")`` ->
    ``"[fit] method"``."""
    last = max(i for i, p in enumerate(path) if isinstance(p, str))
    tables, key, indices = path[:last], path[last], path[last + 1:]
    name = key + "".join(f"[{i}]" for i in indices)
    if not tables:
        return name
    parts: list[str] = []
    for i, part in enumerate(tables):
        if isinstance(part, int):
            parts[-1] = f"[[{parts[-1][1:-1]}]] #{part + 1}"
        elif i and not isinstance(tables[i - 1], int) and parts:
            parts[-1] = f"{parts[-1][:-1]}.{part}]"
        else:
            parts.append(f"[{part}]")
    return " ".join(parts + [name])


def _expand_env(value: Any, path: tuple[str | int, ...], check: _Checker) -> Any:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in every string of a parsed TOML value."""
    if isinstance(value, dict):
        return {k: _expand_env(v, path + (k,), check) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, path + (i,), check) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    where = _key_name(path)

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise check.error(where, f"environment variable {name!r} is not set "
                                 f"(write ${{{name}:-default}} to give a default)")

    return _ENV.sub(replace, value)


def _resolve_path(folder: str, path: str) -> str:
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(folder, path))


# ----------------------------------------------------------------------------- loading


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
    check = _Checker(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise ConfigError(_one_line(f"{path}: cannot read the config file: "
                                    f"{exc.strerror or exc}")) from exc
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(_one_line(f"{path}: not valid TOML: {exc}")) from exc
    check.keys(doc, "top level", TOP_KEYS)
    doc = _expand_env(doc, (), check)
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

    start_table = check.table(doc.get("start", {}), "[start]")
    start = {name: check.get(start_table, name, "[start]", "number") for name in start_table}

    fit_table = check.table(doc.get("fit", {}), "[fit]")
    check.keys(fit_table, "[fit]", FIT_KEYS)
    from laddu_dask.likelihood.fit import METHODS

    fit = FitSettings(
        method=check.get(fit_table, "method", "[fit]", "str", "migrad", choices=METHODS),
        tolerance=check.get(fit_table, "tolerance", "[fit]", "number", 0.1, minimum=0.0),
        strategy=check.get(fit_table, "strategy", "[fit]", "int", 1, choices=(0, 1, 2)),
        max_calls=check.get(fit_table, "max_calls", "[fit]", "int", None, minimum=1),
    )
    if fit.tolerance <= 0:
        raise check.error("[fit] tolerance", f"must be > 0, got {fit_table['tolerance']!r}")

    execution = _load_execution(doc, check)
    cluster = _load_cluster(doc, check, folder)
    return FitConfig(
        path=path, sha256=hashlib.sha256(raw).hexdigest(), description=description,
        datasets=datasets, terms=tuple(terms), start=start, fit=fit, execution=execution,
        cluster=cluster,
    )


def _load_dataset(table: Any, name: str, where: str, check: _Checker, folder: str) -> DatasetSpec:
    from laddu_dask.data.dataset import MEMORY_POLICIES

    table = check.table(table, where)
    path = check.get(table, "path", where, "str_or_strlist", required=True)
    paths = [path] if isinstance(path, str) else list(path)
    return DatasetSpec(
        name=name,
        paths=tuple(_resolve_path(folder, p) for p in paths),
        chunk_size=check.get(table, "chunk_size", where, "int", minimum=1),
        memory_policy=check.get(table, "memory_policy", where, "str", "fastest",
                                choices=MEMORY_POLICIES),
        where=where,
    )


def _load_datasets(doc: Mapping[str, Any], check: _Checker, folder: str) -> dict[str, DatasetSpec]:
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


def _load_model(value: Any, where: str, check: _Checker, folder: str,
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
            where=where, file=_resolve_path(folder, file),
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


def _load_terms(doc: Mapping[str, Any], check: _Checker, folder: str,
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


def _load_execution(doc: Mapping[str, Any], check: _Checker) -> ExecutionSettings:
    where = "[execution]"
    table = check.table(doc.get("execution", {}), where)
    check.keys(table, where, EXECUTION_KEYS)
    settings = ExecutionSettings(
        device=check.get(table, "device", where, "str", "cpu", choices=("cpu", "gpu", "auto")),
        precision=check.get(table, "precision", where, "str", "f64", choices=("f64", "f32")),
        memory=check.get(table, "memory", where, "size"),
        device_memory=check.get(table, "device_memory", where, "size"),
        kernel=check.get(table, "kernel", where, "str", "auto", choices=("auto", "fused", "numpy")),
        normalization=check.get(table, "normalization", where, "str", "auto",
                                choices=("auto", "general", "verify")),
        split_every=check.get(table, "split_every", where, "int", 8, minimum=2),
        num_workers=check.get(table, "num_workers", where, "int", None, minimum=1),
    )
    try:
        settings.build()  # validates budgets and the device now, not after the data are read
    except (LadduDaskError, ValueError) as exc:
        raise check.error(where, str(exc)) from exc
    return settings


def _load_cluster(doc: Mapping[str, Any], check: _Checker, folder: str) -> ClusterSettings:
    where = "[cluster]"
    table = check.table(doc.get("cluster", {}), where)
    kind = check.get(table, "kind", where, "str", None, choices=CLUSTER_KINDS)
    jobqueue = dict(JOBQUEUE_KEYS)
    if kind is not None:
        jobqueue.update(JOBQUEUE_KIND_KEYS[kind])
    else:
        for extra in JOBQUEUE_KIND_KEYS.values():
            jobqueue.update(extra)
    check.keys(table, where, CLUSTER_KEYS + tuple(jobqueue) + (JOBQUEUE_PASSTHROUGH,))
    given = [k for k in ("scheduler", "scheduler_file", "kind") if k in table]
    if len(given) > 1:
        raise check.error(where, f"give only one of scheduler, scheduler_file and kind "
                                 f"(got {', '.join(given)})")
    options: dict[str, Any] = {}
    for key, kind_of_value in jobqueue.items():
        if key in table:
            if kind is None:
                raise check.error(f"{where} {key}",
                                  "is a batch-job setting: it needs kind = \"slurm\" or \"pbs\"")
            options[key] = check.get(table, key, where, kind_of_value)
    if JOBQUEUE_PASSTHROUGH in table:
        if kind is None:
            raise check.error(f"{where} {JOBQUEUE_PASSTHROUGH}",
                              "is a batch-job setting: it needs kind = \"slurm\" or \"pbs\"")
        extra = check.get(table, JOBQUEUE_PASSTHROUGH, where, "table")
        for key in ("n_workers",):
            if key in extra:
                raise check.error(f"{where}.{JOBQUEUE_PASSTHROUGH} {key}",
                                  "is not allowed here: use jobs = N in [cluster]")
        options.update(extra)
    jobs = check.get(table, "jobs", where, "int", 1, minimum=1)
    if "jobs" in table and kind is None:
        raise check.error(f"{where} jobs", "needs kind = \"slurm\" or \"pbs\"")
    scheduler_file = check.get(table, "scheduler_file", where, "str")
    settings = ClusterSettings(
        kind=kind or ("scheduler" if given else "local"),
        scheduler=check.get(table, "scheduler", where, "str"),
        scheduler_file=None if scheduler_file is None else _resolve_path(folder, scheduler_file),
        options=options,
        jobs=jobs,
        wait_for_workers=check.get(table, "wait_for_workers", where, "int", 1, minimum=0),
        wait_timeout=check.get(table, "wait_timeout", where, "number", 3600.0, minimum=0.0),
    )
    if settings.wait_timeout <= 0:
        raise check.error(f"{where} wait_timeout", f"must be > 0, got {table['wait_timeout']!r}")
    if settings.scheduler is not None and not settings.scheduler.strip():
        raise check.error(f"{where} scheduler", "is empty")
    return settings


# ----------------------------------------------------------------------------- models


def _import_file(path: str, where: str, check: _Checker) -> Any:
    if not os.path.isfile(path):
        raise check.error(f"{where} file", f"not found: {path}")
    digest = hashlib.sha256(path.encode()).hexdigest()[:12]
    module_name = f"_laddu_dask_model_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise check.error(f"{where} file", f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of user code is bad input
        del sys.modules[module_name]
        raise check.error(f"{where} file", f"importing {path} failed: "
                                           f"{_describe_user_error(exc, path)}") from exc
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    return module


def _describe_user_error(exc: BaseException, path: str) -> str:
    """``Type: message (file line N)`` of an exception raised in a user's model file."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    at = f" ({os.path.basename(path)} line {line})" if line else ""
    return f"{type(exc).__name__}: {exc}{at}"


def _build_model(spec: ModelSpec, check: _Checker) -> Any:
    from laddu_dask.expr.model import Model
    from laddu_dask.expr.node import Expr

    if spec.builtin == "ksks":
        from laddu_dask import ksks

        return ksks.model(spec.options["lineshape"],
                          fixed_lineshapes=spec.options["fixed_lineshapes"])
    assert spec.file is not None
    module = _import_file(spec.file, spec.where, check)
    function = getattr(module, spec.function, None)
    if function is None or not callable(function):
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and not n.startswith("_")
                         and getattr(v, "__module__", None) == module.__name__)
        what = "has no function" if function is None else "has a non-callable"
        raise check.error(f"{spec.where} function", f"{spec.file} {what} {spec.function!r} "
                                                    f"(functions defined: {', '.join(defined) or 'none'})")
    try:
        built = function(**dict(spec.options))
    except Exception as exc:  # noqa: BLE001 - any failure of user code is bad input
        raise check.error(spec.where, f"{spec.function}(**options) of {spec.file} failed: "
                                      f"{_describe_user_error(exc, spec.file)}") from exc
    if isinstance(built, Expr):
        built = Model(built)
    if not isinstance(built, Model):
        raise check.error(spec.where, f"{spec.function}() of {spec.file} returned "
                                      f"{type(built).__name__}; it must return a laddu_dask "
                                      "Model or expression")
    return built


# ----------------------------------------------------------------------------- cluster


def _jobqueue_class(kind: str, check: _Checker) -> Any:
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise check.error("[cluster] kind", f"kind = {kind!r} needs dask-jobqueue, which is not "
                                            "installed: pip install 'laddu-dask[jobqueue]'") from exc
    return {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]


def _make_jobqueue_cluster(config: FitConfig) -> Any:
    """The configured SLURM/PBS cluster object, with no job submitted."""
    check = _Checker(config.path)
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
        raise _Checker(config.path).error(
            "[cluster]", "no batch-job cluster is configured (set kind = \"slurm\" or \"pbs\")")
    cluster = _make_jobqueue_cluster(config)
    try:
        return str(cluster.job_script())
    finally:
        cluster.close()


@contextlib.contextmanager
def _cluster_client(config: FitConfig, scheduler: str | None) -> Iterator[tuple[Any, str]]:
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
            raise FitRunError(_one_line(
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


# ----------------------------------------------------------------------------- running


@contextlib.contextmanager
def _bad_input(config: FitConfig, where: str) -> Iterator[None]:
    """Turn library errors about the user's data or model into :class:`ConfigError`."""
    try:
        yield
    except ConfigError:
        raise
    except (LadduDaskError, ValueError, FileNotFoundError) as exc:
        raise ConfigError(_one_line(f"{config.path}: {where}: {exc}")) from exc


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


def write_json_atomic(path: str, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as JSON to a temporary file beside ``path``, then move it into place."""
    with atomic_write(path) as f:
        json.dump(_finite(dict(payload)), f, indent=2, allow_nan=False)
        f.write("\n")


def default_output(config_path: str) -> str:
    """``<config stem>.result.json`` beside the config."""
    stem, _ = os.path.splitext(os.path.abspath(config_path))
    return stem + ".result.json"


def _check_output(config: FitConfig, output: str) -> str:
    output = os.path.abspath(output)
    folder = os.path.dirname(output)
    if os.path.abspath(output) == config.path:
        raise ConfigError(f"--output {output}: is the config file itself")
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
    check = _Checker(config.path)

    import laddu_dask as ld

    # models (user code runs here), then the start values against their parameters
    built: dict[str, Any] = {}
    term_models = []
    for term in config.terms:
        key = term.model.key()
        if key not in built:
            built[key] = _build_model(term.model, check)
        term_models.append(built[key])
    free: dict[str, Any] = {}
    fixed: set[str] = set()
    for model in term_models:
        for name, spec in model.parameters.items():
            if spec.is_fixed:
                fixed.add(name)
            else:
                free.setdefault(name, spec)
    for name, value in config.start.items():
        if name not in free:
            why = "is fixed in the model" if name in fixed else "is not a parameter of the model"
            raise check.error(f"[start] {name}", f"{why} (free parameters: {', '.join(free)})")
        lo, hi = free[name].bounds
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise check.error(f"[start] {name}", f"start value {value!r} lies outside the "
                                                 f"parameter's bounds [{lo}, {hi}]")

    # datasets: only metadata is read here
    t0 = time.perf_counter()
    used = {n for t in config.terms for n in (t.data, t.accepted_mc)}
    datasets = {}
    for name, ds in config.datasets.items():
        if name in used:
            with _bad_input(config, f"{ds.where} path"):
                datasets[name] = ld.read_parquet(list(ds.paths), chunk_size=ds.chunk_size,
                                                 memory_policy=ds.memory_policy)
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
    with _cluster_client(config, scheduler) as (client, where):
        t_cluster = time.perf_counter() - t0
        execution = config.execution.build(client)
        say(f"running on the {where}" if client is None else f"running on {where}")
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
        try:
            result = likelihood.fit(
                initial=start, method=config.fit.method, strategy=config.fit.strategy,
                tolerance=config.fit.tolerance, max_calls=config.fit.max_calls,
            )
        except Exception as exc:
            raise FitRunError(_one_line(f"{config.path}: the fit failed: "
                                        f"{type(exc).__name__}: {exc}")) from exc
        t_fit = time.perf_counter() - t0
        workers = execution.workers
        decisions = [str(d) for d in execution.memory_decisions()]

    cov = None
    if result.covariance is not None:
        cov = {"parameters": list(names), "matrix": result.covariance.tolist()}
    payload: dict[str, Any] = {
        "valid": result.valid,
        "fval": result.fval,
        "n_calls": result.n_calls,
        "method": result.method,
        "message": result.message,
        "parameter_names": list(names),
        "values": result.values,
        "errors": result.errors,
        "covariance": cov,
        "start": dict(zip(names, map(float, start))),
        "terms": [
            {"name": t.name, "kind": t.kind, "data": t.data, "accepted_mc": t.accepted_mc,
             "data_events": datasets[t.data].n_events,
             "accepted_mc_events": datasets[t.accepted_mc].n_events}
            for t in config.terms
        ],
        "fit": {"method": config.fit.method, "tolerance": config.fit.tolerance,
                "strategy": config.fit.strategy, "max_calls": config.fit.max_calls},
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
        write_json_atomic(output, payload)
    return payload


def _summary(result: Mapping[str, Any], output: str | None, say: Callable[..., None]) -> None:
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


# ----------------------------------------------------------------------------- command


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``laddu-dask fit``."""
    parser = argparse.ArgumentParser(
        prog="laddu-dask fit",
        description="Run the fit described by a TOML file and write the result as JSON "
                    "(schema: the docstring of laddu_dask.batch). Exit status: 0 valid fit, "
                    "1 invalid fit (result written), 2 bad input, 3 the fit could not run.",
    )
    parser.add_argument("config", help="the TOML file")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on this Dask scheduler (tcp://host:port), overriding [cluster]")
    parser.add_argument("--output", metavar="PATH",
                        help="result file (default: <config stem>.result.json beside the config)")
    parser.add_argument("--print-job-script", action="store_true",
                        help="print the worker job script of the [cluster] table and exit")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    return parser


def _fail(message: str) -> None:
    print(f"laddu-dask fit: error: {_one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """``laddu-dask fit``; returns the exit status (0 valid, 1 invalid, 2 bad input, 3 failed).

    ``argv`` are the arguments after ``fit`` (default: ``sys.argv[1:]``).
    """
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error argparse already reported
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    say = (lambda *a, **k: None) if args.quiet else print
    try:
        config = load_config(args.config)
        if args.print_job_script:
            print(job_script(config), end="")
            return EXIT_VALID
        output = args.output if args.output is not None else default_output(config.path)
        result = run_fit(config, scheduler=args.scheduler, output=output, say=say)
    except ConfigError as exc:
        _fail(str(exc))
        return EXIT_BAD_INPUT
    except FitRunError as exc:
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, LadduDaskError | OSError):
            traceback.print_exception(cause, file=sys.stderr)
        _fail(str(exc))
        return EXIT_FAILED
    _summary(result, os.path.abspath(output), say)
    return EXIT_VALID if result["valid"] else EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
