"""A likelihood's notes for the laddu-dask page of the dashboard (on a cluster only).

On an execution with a ``distributed.Client``, every evaluation round notes its points'
-2 ln L and parameters (:func:`note_points`, called by
:func:`~laddu_dask.likelihood.likelihood.evaluate_together`), and every finished fit its
minimum, parameters and errors (:func:`note_result`), through
:func:`~laddu_dask.runtime.dashboard.record_fit_note`: a list append per point, sent in
the background. On a local execution nothing is done.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.5])})
>>> lik = ld.Likelihood([ld.NLL(ld.Model(ld.parameter("a", initial=1.0) * x * x + 1.0), data=data,
...                             accepted_mc=data, name="toy")])
>>> label(lik)
'toy'
>>> note_points(lik, [np.array([1.0])], [(3.0, None)])  # local: nothing to note
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["label", "note_points", "note_result"]


def label(likelihood: Any) -> str:
    """The page's name of a likelihood: its terms' names (as the Task Stream names its
    evaluations, and its datasets ``<term>/data``)."""
    terms = getattr(likelihood, "terms", ())
    return ", ".join(dict.fromkeys(str(getattr(t, "name", "likelihood")) for t in terms)) or "likelihood"


def _client(likelihood: Any) -> Any:
    execution = getattr(likelihood, "execution", None)
    return None if execution is None else getattr(execution, "client", None)


def note_points(likelihood: Any, points: list[np.ndarray], results: list[tuple[float, Any]]) -> None:
    """Note each point's value and parameters (the first note of a likelihood names them)."""
    client = _client(likelihood)
    if client is None:
        return
    from laddu_dask.runtime.dashboard import record_fit_note  # distributed: only with a client

    name = label(likelihood)
    for point, (value, _) in zip(points, results, strict=True):
        likelihood._dashboard_count = number = getattr(likelihood, "_dashboard_count", 0) + 1
        payload: dict[str, Any] = {"value": float(value), "parameters": point.tolist()}
        if number == 1:
            payload["names"] = list(likelihood.parameter_names)
        record_fit_note(client, name, "point", payload, number)


def note_result(likelihood: Any, result: Any, method: str) -> None:
    """Note a finished fit: its minimum, parameters, errors (NaN: unknown) and validity."""
    client = _client(likelihood)
    if client is None:
        return
    from laddu_dask.runtime.dashboard import record_fit_note  # distributed: only with a client

    names = list(result.parameter_names)
    record_fit_note(client, label(likelihood), "result", {
        "names": names, "parameters": [float(result.values[n]) if isinstance(result.values, dict)
                                       else float(v) for n, v in zip(names, result.values)],
        "errors": [float(result.errors[n]) for n in names], "value": float(result.fval),
        "valid": bool(result.valid), "method": str(method)})
