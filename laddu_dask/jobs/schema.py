"""The batch-fit schema declared once: tables, keys, their types, and the validated settings.

The TOML schema itself is documented in :mod:`laddu_dask.jobs`.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from laddu_dask.errors import LadduDaskError, ParameterError
from laddu_dask.validate import integer, number


class ConfigError(LadduDaskError, ValueError):
    """A batch configuration is invalid; the message names the file, table and key."""


class FitRunError(LadduDaskError, RuntimeError):
    """A valid configuration could not be run (cluster start, failure during the fit)."""


TOP_KEYS = ("description", "model", "models", "data", "accmc", "datasets", "terms", "start",
            "fit", "bins", "execution", "cluster")
BINS_KEYS = ("scalar", "mass", "edges", "count", "low", "high")
DATASET_KEYS = ("path", "chunk_size", "memory_policy", "format")
TERM_KEYS = ("name", "kind", "data", "accepted_mc", "model")
TERM_KINDS = ("nll", "extended_nll")
FIT_KEYS = ("method", "tolerance", "strategy", "max_calls", "restarts", "seed", "bootstrap")
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
#: ``[cluster]`` keys (with ``kind``) for the network and security of the scheduler, by TOML type.
SCHEDULER_KEYS: dict[str, str] = {
    "scheduler_host": "str", "scheduler_interface": "str", "dashboard_address": "str",
    "tls": "bool", "tls_ca_file": "str", "tls_cert": "str", "tls_key": "str",
    "shared_temp_directory": "str",
}
#: scheduler/cluster keywords that those keys set: refused in ``scheduler_options`` and
#: ``jobqueue_options`` (value: the ``[cluster]`` key to use instead).
SCHEDULER_OWNED: dict[str, str] = {
    "host": "scheduler_host", "interface": "scheduler_interface",
    "dashboard_address": "dashboard_address", "security": "tls", "protocol": "tls",
    "shared_temp_directory": "shared_temp_directory",
}
#: where the scheduler's dashboard listens unless ``dashboard_address`` says otherwise
DEFAULT_DASHBOARD = "127.0.0.1:8787"
BUILTIN_MODELS: dict[str, tuple[str, ...]] = {"ksks": ("lineshape", "fixed_lineshapes")}
MODEL_FILE_KEYS = ("file", "function", "options")


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: ``name``, resolved ``paths``, ``chunk_size``, ``memory_policy``, the
    registered ``format`` that reads it (None: by the paths' suffix)."""

    name: str
    paths: tuple[str, ...]
    chunk_size: int | None
    memory_policy: str
    where: str
    format: str | None = None


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
    restarts: int = 1
    seed: int = 0
    bootstrap: int = 0


@dataclass(frozen=True)
class BinSettings:
    """``[bins]``: a mass-independent fit, one in each bin of a scalar column or of the
    invariant mass of the sum of some four-vectors."""

    edges: tuple[float, ...]
    scalar: str | None = None
    mass: tuple[str, ...] = ()

    def expression(self) -> Any:
        """The binned expression."""
        import laddu_dask as ld

        if self.scalar is not None:
            return ld.scalar(self.scalar)
        total = ld.Vec4.event(self.mass[0])
        for name in self.mass[1:]:
            total = total + ld.Vec4.event(name)
        return total.m().real()


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
    scheduler_host: str | None = None
    scheduler_interface: str | None = None
    dashboard_address: str = DEFAULT_DASHBOARD
    tls: bool = True
    tls_files: tuple[str, str, str] | None = None  # (CA file, certificate, private key)
    shared_temp_directory: str | None = None


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
    bins: BinSettings | None = None
    start_ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        """The folder of the config file (base of relative paths)."""
        return os.path.dirname(self.path)


class Checker:
    """Typed access to TOML tables, raising :class:`ConfigError` naming file, table and key."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(one_line(f"{self.path}: {where}: {message}"))

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
            minimum: float | None = None, above: float | None = None) -> Any:
        """``table[key]`` checked to be of ``kind`` (a TOML number is finite, never NaN or an
        infinity, and within ``minimum`` and ``above`` when given)."""
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
        if kind in ("int", "number"):
            try:
                value = (number(value, "the value", minimum=minimum, above=above) if kind == "number"
                         else integer(value, "the value", minimum=None if minimum is None else int(minimum)))
            except ParameterError as err:
                raise self.error(f"{where} {key}", str(err).replace("the value ", "", 1)) from None
        elif minimum is not None and value < minimum:
            raise self.error(f"{where} {key}", f"must be >= {minimum:g}, got {value!r}")
        return value


def one_line(text: str) -> str:
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


def expand_env(value: Any, path: tuple[str | int, ...], check: Checker) -> Any:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in every string of a parsed TOML value."""
    if isinstance(value, dict):
        return {k: expand_env(v, path + (k,), check) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, path + (i,), check) for i, v in enumerate(value)]
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


def resolve_path(folder: str, path: str) -> str:
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(folder, path))
