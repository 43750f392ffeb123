"""Memory budgets and the resident, disk or streaming decision for prepared datasets.

A :class:`MemoryPlan` holds one :class:`MemoryBudget` for host memory and one for
device (GPU) memory. A budget is a number of bytes (``1024``, ``"500 MB"``,
``"2 GiB"``), a share of the machine's memory (``"70%"``), a share of the memory
free right now (``"70% available"``), or ``None`` for no limit.
:func:`decide_storage` turns a budget and the sizes of a dataset into a
:class:`MemoryDecision`: keep the prepared dataset resident, on the local disk
(:mod:`~laddu_dask.runtime.disk_tier`), or stream it from its source one chunk at a
time; the decision records its numbers and one sentence saying why.

Examples
--------
>>> from laddu_dask.runtime.memory import MemoryPlan, decide_storage, parse_bytes
>>> parse_bytes("1.5 GiB")
1610612736
>>> plan = MemoryPlan(host="2 GiB", device="70%")
>>> plan.host_bytes()
2147483648
>>> d = decide_storage("signal/data", "fastest", resident_bytes=3 * 2**30,
...                    partition_bytes=2**20, chunk_size=10_000, partitions=300,
...                    budget_bytes=plan.host_bytes())
>>> d.strategy
'streaming'
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass
from typing import Any

from laddu_dask.budgets import MemoryBudget, format_bytes, parse_bytes
from laddu_dask.errors import BudgetError
from laddu_dask.memory_resources import device_memory, host_memory
from laddu_dask.options import MemoryPolicy
from laddu_dask.validate import integer
from laddu_dask.views import bytes_text, table

__all__ = [
    "POLICIES",
    "MemoryBudget",
    "MemoryDecision",
    "MemoryPlan",
    "decide_storage",
    "decisions_html",
    "format_bytes",
    "parse_bytes",
]

#: Allowed values of ``policy`` in :func:`decide_storage`.
POLICIES = MemoryPolicy.values()
_RESOURCES = ("host", "device")


def _as_budget(value: MemoryBudget | int | str | None) -> MemoryBudget:
    return value if isinstance(value, MemoryBudget) else MemoryBudget(value)


class MemoryPlan:
    """Host and device memory budgets of an execution.

    Parameters
    ----------
    host, device : MemoryBudget, int, str or None
        Budgets (see :class:`MemoryBudget`); ``None`` means unlimited.

    Examples
    --------
    >>> plan = MemoryPlan(host="512 MiB")
    >>> plan.host_bytes(), plan.device
    (536870912, MemoryBudget(None))
    """

    def __init__(
        self,
        host: MemoryBudget | int | str | None = None,
        device: MemoryBudget | int | str | None = None,
    ) -> None:
        self.host = _as_budget(host)
        self.device = _as_budget(device)

    def to_json(self) -> str:
        """laddu's JSON form, ``{"host": budget, "device": budget or null}`` (see
        :meth:`MemoryBudget.to_json <laddu_dask.budgets.MemoryBudget.to_json>`); an unlimited
        device budget is ``null``, as laddu's absent one.

        Examples
        --------
        >>> plan = MemoryPlan(host="2 GiB", device="50%")
        >>> plan.to_json()
        '{"host": {"bytes": 2147483648}, "device": {"percent_total": 0.5}}'
        >>> MemoryPlan.from_json(json=plan.to_json()) == plan
        True
        """
        device = None if self.device.unlimited else _json.loads(self.device.to_json())
        return _json.dumps({"host": _json.loads(self.host.to_json()), "device": device})

    @staticmethod
    def from_json(json: str) -> MemoryPlan:
        """The plan :meth:`to_json` (or laddu's) wrote."""
        try:
            data = _json.loads(json)
        except (TypeError, ValueError):
            raise BudgetError(f"MemoryPlan.from_json needs JSON, got {json!r}") from None
        if not isinstance(data, dict) or set(data) != {"host", "device"}:
            raise BudgetError(f"MemoryPlan.from_json needs {{'host': ..., 'device': ...}}, got {json!r}")
        device = None if data["device"] is None else MemoryBudget.from_json(_json.dumps(data["device"]))
        return MemoryPlan(host=MemoryBudget.from_json(_json.dumps(data["host"])), device=device)

    def host_bytes(self) -> int | None:
        """The host budget in bytes on this machine (``None``: unlimited)."""
        if not self.host.needs_machine:
            return self.host.resolve(0, 0)
        return self.host.resolve(*host_memory())

    def device_bytes(self, total: int | None = None, available: int | None = None) -> int | None:
        """The device budget in bytes (``None``: unlimited).

        ``total`` and ``available`` default to what CuPy reports for the current
        device; they are only needed for a percentage budget.
        """
        if not self.device.needs_machine:
            return self.device.resolve(0, 0)
        if total is None or available is None:
            total, available = device_memory()
        return self.device.resolve(total, available)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryPlan):
            return NotImplemented
        return (self.host, self.device) == (other.host, other.device)

    def __hash__(self) -> int:
        return hash((self.host, self.device))

    def __repr__(self) -> str:
        return f"MemoryPlan(host={self.host.spec!r}, device={self.device.spec!r})"


@dataclass(frozen=True)
class MemoryDecision:
    """How a prepared dataset is stored, with the numbers behind the choice.

    Examples
    --------
    >>> d = decide_storage("mc", "fastest", 100, 10, 5, 20, budget_bytes=None)
    >>> d.strategy
    'resident'
    >>> d.reason
    'resident: no host memory budget is set, so the prepared data (100 bytes) stay in memory'
    """

    dataset: str
    resource: str
    strategy: str
    requested_policy: str
    chunk_size: int
    partitions: int
    estimated_bytes: int
    peak_bytes: int
    budget_bytes: int | None
    reason: str

    def __str__(self) -> str:
        return f"{self.dataset}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        """The decision as laddu's dictionary: laddu's keys where the figure means the same
        (``label``, ``strategy``, ``chunk_events``, ``estimated_peak_bytes``;
        ``actual_high_water_bytes`` is ``None``, not measured, as in laddu), then the others.

        Examples
        --------
        >>> d = decide_storage("mc", "fastest", 100, 10, 5, 20, budget_bytes=None).as_dict()
        >>> d["label"], d["chunk_events"], d["estimated_peak_bytes"], d["strategy"]
        ('mc', 5, 100, 'resident')
        """
        return {"label": self.dataset, "strategy": self.strategy, "chunk_events": self.chunk_size,
                "estimated_peak_bytes": self.peak_bytes, "actual_high_water_bytes": None,
                "resource": self.resource, "requested_policy": self.requested_policy,
                "partitions": self.partitions, "estimated_bytes": self.estimated_bytes,
                "budget_bytes": self.budget_bytes, "reason": self.reason}

    def _repr_html_(self) -> str:
        return decisions_html([self])


_DECISION_HEADERS = ("dataset", "resource", "storage", "policy", "chunk size", "partitions",
                     "estimated", "peak", "budget", "why")


def decisions_html(decisions: list[MemoryDecision], caption: str | None = None) -> str:
    """An HTML table of memory decisions, byte counts as ``'1.53 MiB'``.

    Examples
    --------
    >>> d = decide_storage("mc", "fastest", 2**21, 10, 5, 20, budget_bytes=None)
    >>> "<td>2.00 MiB</td>" in decisions_html([d])
    True
    """
    rows = [
        [d.dataset, d.resource, d.strategy, d.requested_policy, f"{d.chunk_size:,}", d.partitions,
         bytes_text(d.estimated_bytes), bytes_text(d.peak_bytes), bytes_text(d.budget_bytes), d.reason]
        for d in decisions
    ]
    return table(_DECISION_HEADERS, rows, caption=caption)


def _check_count(name: str, value: int, minimum: int = 0) -> int:
    return integer(value, name, minimum=minimum)


def decide_storage(
    dataset: str,
    policy: str,
    resident_bytes: int,
    partition_bytes: int,
    chunk_size: int,
    partitions: int,
    budget_bytes: int | None,
    workers: int = 1,
    resource: str = "host",
    chunk_keyword: str = "chunk_size",
    disk_bytes: int | None = 0,
) -> MemoryDecision:
    """Choose resident, disk or streaming storage for a prepared dataset.

    Parameters
    ----------
    dataset : str
        Name of the prepared dataset, for messages (e.g. ``"signal/data"``).
    policy : {"resident", "disk", "streaming", "fastest"}
        What the user asked for; ``"fastest"`` keeps the data resident when they fit the
        budget, else on the local disk when they fit the disk budget, else streams them.
    resident_bytes : int
        Bytes the prepared dataset needs when held in memory.
    partition_bytes : int
        Peak bytes of one chunk while it is streamed through an evaluation.
    chunk_size, partitions : int
        Events per partition and number of partitions.
    budget_bytes : int or None
        The budget of ``resource`` in bytes; ``None`` means unlimited.
    workers : int
        Chunks processed at once when streaming (at most ``partitions`` of them).
    resource : {"host", "device"}
        Which memory the budget is for.
    chunk_keyword : str
        The keyword that sets the chunk size, named in the hint of a ``BudgetError``.
    disk_bytes : int or None
        What the disk tier may hold (``laddu-dask.disk.budget``); ``None``: unlimited, ``0``:
        no disk tier (a device's data, or a caller that offers none).  The disk tier holds
        the prepared data (``resident_bytes``) on disk and, in memory, the partitions being
        reduced (as streaming does).

    Raises
    ------
    BudgetError
        When the requested strategy (or, for ``"fastest"``, even streaming) does
        not fit the budget; the message gives the bytes needed and the budget.
    ValueError
        For an unknown policy or resource, or negative sizes.

    Examples
    --------
    >>> d = decide_storage("signal/data", "fastest", resident_bytes=2**31,
    ...                    partition_bytes=2**20, chunk_size=4096, partitions=2048,
    ...                    budget_bytes=2**30, workers=4)
    >>> d.strategy, d.peak_bytes
    ('streaming', 4194304)
    >>> decide_storage("signal/data", "fastest", resident_bytes=2**31, partition_bytes=2**20,
    ...                chunk_size=4096, partitions=2048, budget_bytes=2**30, workers=4,
    ...                disk_bytes=2**33).strategy
    'disk'
    """
    policy = MemoryPolicy.check(policy, "memory policy")
    if resource not in _RESOURCES:
        allowed = ", ".join(repr(r) for r in _RESOURCES)
        raise ValueError(f"memory resource must be one of {allowed}, got {resource!r}")
    _check_count("resident_bytes", resident_bytes)
    _check_count("partition_bytes", partition_bytes)
    _check_count("chunk_size", chunk_size)
    _check_count("partitions", partitions)
    _check_count("workers", workers, minimum=1)
    if budget_bytes is not None:
        _check_count("budget_bytes", budget_bytes)
    if disk_bytes is not None:
        _check_count("disk_bytes", disk_bytes)

    concurrent = max(1, min(workers, partitions))
    stream_peak = concurrent * partition_bytes

    def decision(strategy: str, reason: str) -> MemoryDecision:
        peak = resident_bytes if strategy == "resident" else stream_peak
        return MemoryDecision(
            dataset=dataset,
            resource=resource,
            strategy=strategy,
            requested_policy=policy,
            chunk_size=chunk_size,
            partitions=partitions,
            estimated_bytes=resident_bytes,
            peak_bytes=peak,
            budget_bytes=budget_bytes,
            reason=reason,
        )

    disk_fits = disk_bytes is None or resident_bytes <= disk_bytes
    disk_text = ("no disk budget" if disk_bytes is None
                 else f"the disk budget of {format_bytes(disk_bytes)} (laddu-dask.disk.budget)")
    if policy == "disk" and not disk_fits:
        why = (f"{resource} data have no disk tier" if disk_bytes == 0 else f"{disk_text} is smaller")
        raise BudgetError(
            f"dataset {dataset!r} needs {format_bytes(resident_bytes)} of disk to keep its "
            f"prepared partitions there, but {why}; raise the disk budget or use "
            f"memory_policy='streaming'"
        )
    if budget_bytes is None:
        if policy == "disk":
            return decision("disk", f"disk as requested: the prepared data ({format_bytes(resident_bytes)}) "
                                    f"fit {disk_text}; no {resource} memory budget is set")
        strategy = "streaming" if policy == "streaming" else "resident"
        kept = (
            f"the prepared data ({format_bytes(resident_bytes)}) stay in memory"
            if strategy == "resident"
            else f"chunks of {chunk_size} events are streamed as requested"
        )
        return decision(strategy, f"{strategy}: no {resource} memory budget is set, so {kept}")

    budget_text = f"the {resource} budget of {format_bytes(budget_bytes)}"
    resident_fits = resident_bytes <= budget_bytes
    stream_fits = stream_peak <= budget_bytes

    if policy == "resident" or (policy == "fastest" and resident_fits):
        if not resident_fits:
            raise BudgetError(
                f"dataset {dataset!r} needs {format_bytes(resident_bytes)} of {resource} "
                f"memory to stay resident, but {budget_text} is smaller; raise the budget "
                f"or use memory_policy='streaming'"
            )
        return decision(
            "resident",
            f"resident: the prepared data ({format_bytes(resident_bytes)}) fit in {budget_text}",
        )

    if not stream_fits:
        per_event = partition_bytes / chunk_size if chunk_size else partition_bytes
        fitting = int(budget_bytes // (concurrent * per_event)) if per_event else chunk_size
        hint = (
            f"use a smaller {chunk_keyword} (about {fitting} events would fit) or raise the budget"
            if fitting >= 1
            else "raise the budget: not even one event per chunk fits"
        )
        prefix = ""
        if policy == "fastest":
            prefix = (
                f"dataset {dataset!r} does not fit resident ({format_bytes(resident_bytes)}) "
                f"and streaming fails too: "
            )
        raise BudgetError(
            f"{prefix}{resource} memory budget too small for one chunk: dataset {dataset!r} "
            f"streams {concurrent} chunk(s) of {chunk_size} events at once, "
            f"{format_bytes(partition_bytes)} each ({format_bytes(stream_peak)} in all), "
            f"but {budget_text} is smaller; {hint}"
        )

    working_set = f"{concurrent} chunk(s) of {chunk_size} events at once need {format_bytes(stream_peak)}"
    on_disk = f"the prepared data ({format_bytes(resident_bytes)}) fit {disk_text}"
    if policy == "disk":
        return decision("disk", f"disk as requested: {on_disk}, read back each evaluation: "
                                f"{working_set}, within {budget_text}")
    if policy == "fastest" and disk_fits:
        return decision("disk", f"disk: resident storage would need {format_bytes(resident_bytes)}, "
                                f"more than {budget_text}; {on_disk}, read back each evaluation: "
                                f"{working_set}")
    if policy == "streaming":
        reason = f"streaming as requested: {working_set}, within {budget_text}"
    else:
        beyond_disk = "" if disk_bytes == 0 else f", and {disk_text} is smaller too"
        reason = (
            f"streaming: resident storage would need {format_bytes(resident_bytes)}, more than "
            f"{budget_text}{beyond_disk}; {working_set}"
        )
    return decision("streaming", reason)
