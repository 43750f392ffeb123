"""``BoundFitState``: a stored fit checked against a likelihood and put in its parameter
order (laddu's), and :func:`bind`, the check.

Binding refuses (with :class:`~laddu_dask.errors.FitArtifactError`) a likelihood whose free
parameters are not the artifact's (after the parameter map, when one is given), or whose
structure differs (:func:`~laddu_dask.likelihood.fingerprint.likelihood_fingerprint`: the
models, their parameter definitions and constants, the terms' kinds and names; not the
events).

Examples
--------
>>> import numpy as np
>>> s = BoundFitState(["b", "a"], np.array([2.0, 1.0]), 3.5, "converged", [])
>>> s.parameter_names, s.values.tolist(), s.objective, s.outcome, s.migration
(['b', 'a'], [2.0, 1.0], 3.5, 'converged', [])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import FitArtifactError
from laddu_dask.likelihood.fingerprint import likelihood_fingerprint

__all__ = ["BoundFitState", "bind"]


class BoundFitState:
    """A fit's state validated and reordered for a likelihood (laddu's ``BoundFitState``).

    Attributes
    ----------
    parameter_names : list of str
        The likelihood's free parameters.
    values : numpy.ndarray
        The fitted values in :attr:`parameter_names` order (a fresh copy each time), ready
        for ``likelihood.value(state.values)``.
    objective : float
        The fit's stored minimum, ``-2 ln L`` (not re-evaluated).
    outcome : str
        The fit's outcome (``"converged"``, ``"not_converged"``, ``"failed"``).
    migration : list of (str, str)
        ``(artifact name, likelihood name)`` of each parameter when bound with a parameter
        map, in the artifact's order; empty when bound by name.
    """

    def __init__(self, parameter_names: Sequence[str], values: np.ndarray, objective: float, outcome: str,
                 migration: Sequence[tuple[str, str]]) -> None:
        self._names = list(parameter_names)
        self._values = np.array(values, dtype=np.float64)
        self._objective = float(objective)
        self._outcome = str(outcome)
        self._migration = [(str(a), str(b)) for a, b in migration]

    @property
    def parameter_names(self) -> list[str]:
        return list(self._names)

    @property
    def values(self) -> np.ndarray:
        return self._values.copy()

    @property
    def objective(self) -> float:
        return self._objective

    @property
    def outcome(self) -> str:
        return self._outcome

    @property
    def migration(self) -> list[tuple[str, str]]:
        return list(self._migration)

    def __repr__(self) -> str:
        pairs = ", ".join(f"{n}={v:.6g}" for n, v in zip(self._names, self._values))
        return f"BoundFitState({pairs}; objective={self._objective:.10g}, {self._outcome})"


def _check_mapping(artifact_names: list[str], mapping: Any, likelihood_names: list[str]) -> dict[str, str]:
    if not isinstance(mapping, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in mapping.items()):
        raise TypeError(f"mapping must be a dict of artifact parameter name -> likelihood parameter name, "
                        f"got {mapping!r}")
    if set(mapping) != set(artifact_names):
        unmapped = [n for n in artifact_names if n not in mapping]
        unknown = [n for n in mapping if n not in artifact_names]
        raise FitArtifactError(f"mapping must map every artifact parameter exactly once: unmapped "
                               f"{unmapped}, not in the artifact {unknown} (artifact: {artifact_names})")
    targets = list(mapping.values())
    if len(set(targets)) != len(targets) or set(targets) != set(likelihood_names):
        raise FitArtifactError(f"mapping's targets {sorted(targets)} must be the likelihood's free "
                               f"parameters {likelihood_names}, each once")
    return dict(mapping)


def bind(artifact: Any, likelihood: Any, mapping: Mapping[str, str] | None = None) -> BoundFitState:
    """Check ``artifact`` (a :class:`~laddu_dask.FitArtifact`) against ``likelihood`` and put
    its values in the likelihood's order; ``mapping`` renames artifact parameters
    (``{artifact name: likelihood name}``, every artifact parameter once).

    Raises
    ------
    FitArtifactError
        Parameters that differ (naming those missing on either side), a mapping that does not
        map every parameter once onto the likelihood's, or a different structure (fingerprint).
    TypeError
        ``mapping`` is not a dict of str to str.
    """
    names = artifact.parameter_names
    target = list(likelihood.parameter_names)
    if mapping is None:
        to_likelihood = {n: n for n in names}
        if set(names) != set(target):
            missing = [n for n in target if n not in names]
            extra = [n for n in names if n not in target]
            raise FitArtifactError(
                f"fit artifact does not fit this likelihood: its free parameters differ; the likelihood's "
                f"{missing} are not in the artifact, the artifact's {extra} are not in the likelihood "
                "(bind_with_parameter_map renames parameters)")
        migration: list[tuple[str, str]] = []
    else:
        to_likelihood = _check_mapping(names, mapping, target)
        migration = [(n, to_likelihood[n]) for n in names]
    back = {v: k for k, v in to_likelihood.items()}
    rename = {k: v for k, v in back.items() if k != v}
    found = likelihood_fingerprint(likelihood, rename)
    if found != artifact.likelihood_fingerprint:
        raise FitArtifactError(
            f"fit artifact does not fit this likelihood: its structural fingerprint is {found}, the "
            f"artifact's {artifact.likelihood_fingerprint} (a model, a parameter's definition, a term's "
            "kind or name differs)")
    by_name = dict(zip(names, artifact.values))
    values = np.array([by_name[back[n]] for n in target], dtype=np.float64)
    return BoundFitState(target, values, artifact.objective, artifact.outcome, migration)
