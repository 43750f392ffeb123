"""The structural fingerprint of a likelihood, which a fit artifact records and checks on
:meth:`~laddu_dask.FitArtifact.bind`.

laddu 0.28.1 hashes its own internal structures; laddu-dask's fingerprint (version
:data:`FINGERPRINT_VERSION`) is the first 16 hex digits of the SHA-256 of a canonical JSON
description of everything but the data: every term's kind, name and model (its expression
in laddu's JSON, parameter definitions included: initial values, bounds, fixed values) and
every penalty's kind, name, strength and parameters.  The events are not in it, so a fit
binds onto the same likelihood built on other (or bootstrapped) samples, as laddu's does.

Free parameters enter by the name the *artifact* gives them: binding with a parameter map
renames the likelihood's parameters back first, so a likelihood whose parameters were only
renamed has the fingerprint of the original, while one whose parameters trade places has not.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> data = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.1, 1, 5)})
>>> def lik(name):
...     model = ld.Model(ld.parameter(name, initial=1.0) * x * x + 1.0)
...     return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=data)])
>>> len(likelihood_fingerprint(lik("a")))
16
>>> likelihood_fingerprint(lik("b"), rename={"b": "a"}) == likelihood_fingerprint(lik("a"))
True
>>> likelihood_fingerprint(lik("b")) == likelihood_fingerprint(lik("a"))
False
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["FINGERPRINT_VERSION", "likelihood_fingerprint"]

#: The version of the description hashed by :func:`likelihood_fingerprint`.
FINGERPRINT_VERSION = 1


def _renamed(node: Any, rename: Mapping[str, str]) -> Any:
    """A model's JSON with every ``ScalarParam`` named in ``rename`` given its new name."""
    if isinstance(node, dict):
        out = {k: _renamed(v, rename) for k, v in node.items()}
        param = out.get("ScalarParam")
        if isinstance(param, dict) and param.get("name") in rename:
            out["ScalarParam"] = {**param, "name": rename[param["name"]]}
        return out
    if isinstance(node, list):
        return [_renamed(v, rename) for v in node]
    return node


def likelihood_fingerprint(likelihood: Any, rename: Mapping[str, str] | None = None) -> str:
    """The fingerprint of ``likelihood``, its parameters first renamed by ``rename``.

    Parameters
    ----------
    likelihood : Likelihood
    rename : mapping of str to str, optional
        Likelihood parameter name -> the name it has in the artifact.

    Returns
    -------
    str
        16 lowercase hex digits.
    """
    rename = dict(rename or {})
    if not rename:
        cached = getattr(likelihood, "_fingerprint", None)
        if cached is not None:
            return cached
    description = {
        "version": FINGERPRINT_VERSION,
        "terms": [{"kind": type(t).__name__, "name": t.name,
                   "model": _renamed(json.loads(t.model.to_json()), rename)} for t in likelihood.terms],
        "penalties": [{"kind": type(p).__name__, "name": p.name, "lambda": p.lambda_,
                       "parameters": [rename.get(n, n) for n in p.parameter_names]}
                      for p in likelihood.penalties],
    }
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), allow_nan=True)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    if not rename:
        likelihood._fingerprint = digest
    return digest
