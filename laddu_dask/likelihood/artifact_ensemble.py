"""``FitEnsembleArtifact``: the draws of an ensemble stored in a fit artifact (laddu's).

An artifact's ensemble keeps the draws (bootstrap refits, MCMC samples) without the data,
in order, with what pairs them with other ensembles (``source_id``), the bootstrap seed
when there is one, and the replicas that failed: replica ``k`` of the reconstructed
sequence is either a draw (``k`` in :attr:`~FitEnsembleArtifact.draw_ids`) or a failure
``(k, seed, message)``.

Examples
--------
>>> from laddu_dask.likelihood.ensemble import Ensemble
>>> e = FitEnsembleArtifact.from_ensemble(Ensemble([[1.0], [2.0]], ["a"], source_id=3))
>>> e.draw_ids, e.draws, e.source_id, e.bootstrap_seed
([0, 1], [[1.0], [2.0]], 3, None)
>>> e.with_failures([(1, None, "diverged")]).draw_ids
[0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import FitArtifactError
from laddu_dask.likelihood import artifact_fields as fields
from laddu_dask.likelihood.ensemble import Ensemble

__all__ = ["FitEnsembleArtifact"]

Failure = tuple[int, int | None, str]


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _failures(failures: Any, draws: int, where: str) -> list[Failure]:
    """The failed replicas, checked: ``(index, seed or None, message)`` with distinct indices
    inside the sequence of ``draws + len(failures)`` replicas."""
    if isinstance(failures, str | bytes) or not isinstance(failures, Sequence):
        raise FitArtifactError(f"{where}: failures must be a sequence of (index, seed, message), "
                               f"got {failures!r}")
    out: list[Failure] = []
    total = draws + len(failures)
    for item in failures:
        ok = (isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 3
              and _is_int(item[0]) and (item[1] is None or _is_int(item[1])) and isinstance(item[2], str))
        if not ok:
            raise FitArtifactError(f"{where}: a failed replica must be (index, seed or None, message), "
                                   f"got {item!r}")
        index = int(item[0])
        if not 0 <= index < total:
            raise FitArtifactError(f"{where}: failed replica index {index} is outside the {total} replicas "
                                   f"({draws} draws and {len(failures)} failures)")
        if any(index == f[0] for f in out):
            raise FitArtifactError(f"{where}: failed replica index {index} is given twice")
        out.append((index, None if item[1] is None else int(item[1]), item[2]))
    return out


class FitEnsembleArtifact:
    """Dataset-free ensemble contents of a :class:`~laddu_dask.FitArtifact` (laddu's).

    Attributes
    ----------
    parameter_names : list of str
    draws : list of list of float
        One row per successful replica, in :attr:`parameter_names` order.
    draw_ids : list of int
        The replica index of each draw.
    failures : list of (int, int or None, str)
        ``(replica index, seed, message)`` of each failed replica.
    source_id : int
        The ensemble's pairing identity (:attr:`Ensemble.source_id`).
    bootstrap_seed : int or None
        The ``seed`` of the ``bootstrap_fit`` that made the draws.
    requires_external_datasets : bool
        Whether the draws cannot be used without datasets not stored (always False: the
        draws are stored).
    """

    def __init__(self, *, parameter_names: Sequence[str], draws: Any, source_id: int,
                 bootstrap_seed: int | None = None, failures: Sequence[Failure] = (),
                 requires_external_datasets: bool = False, where: str = "FitEnsembleArtifact") -> None:
        self._names = list(parameter_names)
        self._draws = np.array(draws, dtype=np.float64).reshape(-1, len(self._names))
        self._draws.flags.writeable = False
        self._source_id = int(source_id)
        self._seed = None if bootstrap_seed is None else int(bootstrap_seed)
        self._failures = _failures(failures, len(self._draws), where)
        self._external = bool(requires_external_datasets)

    @classmethod
    def from_ensemble(cls, ensemble: Ensemble) -> FitEnsembleArtifact:
        """The ensemble's draws, names, ``source_id`` and bootstrap seed (no failures)."""
        return cls(parameter_names=ensemble.parameter_names, draws=ensemble.draws,
                   source_id=ensemble.source_id, bootstrap_seed=getattr(ensemble, "bootstrap_seed", None))

    def with_failures(self, failures: Sequence[Failure]) -> FitEnsembleArtifact:
        """This ensemble with ``failures`` in place of its failed replicas."""
        return FitEnsembleArtifact(parameter_names=self._names, draws=self._draws, source_id=self._source_id,
                                   bootstrap_seed=self._seed, failures=failures,
                                   requires_external_datasets=self._external, where="failures")

    @property
    def parameter_names(self) -> list[str]:
        return list(self._names)

    @property
    def draws(self) -> list[list[float]]:
        return self._draws.tolist()

    @property
    def draw_ids(self) -> list[int]:
        failed = {f[0] for f in self._failures}
        return [k for k in range(len(self._draws) + len(failed)) if k not in failed]

    @property
    def failures(self) -> list[Failure]:
        return list(self._failures)

    @property
    def source_id(self) -> int:
        return self._source_id

    @property
    def bootstrap_seed(self) -> int | None:
        return self._seed

    @property
    def requires_external_datasets(self) -> bool:
        return self._external

    def to_ensemble(self) -> Ensemble:
        """The draws as an :class:`~laddu_dask.Ensemble` with this ``source_id`` (so estimates
        from it pair with those from the original ensemble)."""
        ensemble = Ensemble(self._draws, self._names, source_id=self._source_id)
        ensemble.bootstrap_seed = self._seed
        return ensemble

    def __repr__(self) -> str:
        return (f"FitEnsembleArtifact({len(self._draws)} draws of {', '.join(self._names)}, "
                f"{len(self._failures)} failed; source_id={self._source_id})")

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self._source_id, "parameter_names": list(self._names), "draws": self.draws,
                "draw_ids": self.draw_ids, "bootstrap_seed": self._seed,
                "requires_external_datasets": self._external,
                "failures": [list(f) for f in self._failures]}

    @classmethod
    def from_dict(cls, record: Any, where: str) -> FitEnsembleArtifact:
        """The ensemble :meth:`to_dict` described; typed errors name ``where`` and the field."""
        record = fields.check_record(record, where)
        names = fields.names(record, "parameter_names", where)
        draws = fields.matrix(record, "draws", where, None, len(names))
        failures = record.get("failures")
        if not isinstance(failures, list):
            raise FitArtifactError(f"{where}: field 'failures' must be a list, found {failures!r}")
        made = cls(parameter_names=names, draws=draws, source_id=fields.integer(record, "source_id", where),
                   bootstrap_seed=fields.optional(fields.integer, record, "bootstrap_seed", where),
                   failures=[tuple(f) if isinstance(f, list) else f for f in failures],
                   requires_external_datasets=fields.boolean(record, "requires_external_datasets", where),
                   where=f"{where}: field 'failures'")
        if record.get("draw_ids") != made.draw_ids:
            raise FitArtifactError(f"{where}: field 'draw_ids' must be {made.draw_ids} (the replicas that "
                                   f"are not failures), found {record.get('draw_ids')!r}")
        return made
