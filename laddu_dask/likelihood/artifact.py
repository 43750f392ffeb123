"""``FitArtifact``: a fit kept without its data, to save, load and bind onto a likelihood
built again (laddu 0.28.1's ``FitArtifact``, from ``FitResult.artifact()``).

It holds the fitted values, minimum, covariance and standard errors, the outcome and
diagnostics, the likelihood's structural fingerprint
(:mod:`~laddu_dask.likelihood.fingerprint`) and optionally an ensemble
(:class:`~laddu_dask.likelihood.artifact_ensemble.FitEnsembleArtifact`). ``save`` writes
JSON atomically and, as laddu's, refuses to replace an existing file unless
``overwrite=True``; ``load`` checks every field and names the file and field at fault.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=0.5, bounds=(0.0, 5.0)) * x * x + 1.0)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.5, 1.0, 0.9])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0, 1, 101)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> art = lik.fit().artifact()
>>> path = os.path.join(tempfile.mkdtemp(), "fit.json")
>>> art.save(path)
>>> state = ld.FitArtifact.load(path).bind(lik)
>>> bool(lik.value(state.values) == art.objective)
True
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import FitArtifactError
from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood import artifact_fields as fields
from laddu_dask.likelihood.artifact_ensemble import Failure, FitEnsembleArtifact
from laddu_dask.likelihood.bound_state import BoundFitState, bind
from laddu_dask.likelihood.fingerprint import FINGERPRINT_VERSION

__all__ = ["ARTIFACT_KIND", "LADDU_VERSION", "SCHEMA_VERSION", "FitArtifact"]

#: laddu's kind of a fit artifact.
ARTIFACT_KIND = "laddu.fit"
#: The version of the artifact's fields (laddu 0.28.1's is 1 too).
SCHEMA_VERSION = 1
#: The laddu release whose artifact this follows.
LADDU_VERSION = "0.28.1"
#: The ``"kind"`` of a fit artifact's JSON file.
FILE_KIND = "laddu_dask.FitArtifact"
_OUTCOMES = ("converged", "not_converged", "failed")


class FitArtifact:
    """A dataset-free, versioned fit (laddu's ``FitArtifact``); make one with
    ``FitResult.artifact()`` or :meth:`load`.

    Attributes
    ----------
    parameter_names : list of str
    values : numpy.ndarray
        The fitted values, :attr:`parameter_names` order (a fresh copy each time).
    objective : float
        The minimum, ``-2 ln L``.
    covariance, standard_errors : numpy.ndarray or None
        As the fit's (``None`` when it had none).
    outcome, terminal_message : str
    diagnostics : dict
        ``function_evaluations``, ``gradient_evaluations``, ``hessian_evaluations``.
    likelihood_fingerprint : str
        The fitted likelihood's structural fingerprint (laddu-dask's own, version
        :attr:`fingerprint_version`; laddu's hashes its internal structures).
    ensemble : FitEnsembleArtifact or None
        Draws attached with :meth:`with_ensemble`.
    artifact_kind, schema_version, laddu_version, fingerprint_version, strong_compatibility
        ``"laddu.fit"``, 1, ``"0.28.1"``, 1, True (the fingerprint covers the whole
        likelihood but its events).
    """

    def __init__(self, *, parameter_names: Sequence[str], values: Any, objective: float, outcome: str,
                 terminal_message: str, diagnostics: Mapping[str, int], covariance: Any,
                 standard_errors: Any, likelihood_fingerprint: str,
                 ensemble: FitEnsembleArtifact | None = None) -> None:
        self._names = list(parameter_names)
        self._values = np.array(values, dtype=np.float64)
        self._objective = float(objective)
        self._outcome = str(outcome)
        self._terminal = str(terminal_message)
        self._diagnostics = {str(k): int(v) for k, v in diagnostics.items()}
        self._covariance = None if covariance is None else np.array(covariance, dtype=np.float64)
        self._errors = None if standard_errors is None else np.array(standard_errors, dtype=np.float64)
        self._fingerprint = str(likelihood_fingerprint)
        self._ensemble = ensemble

    @classmethod
    def from_fit(cls, fit: Any) -> FitArtifact:
        """The artifact of a :class:`~laddu_dask.likelihood.FitResult` (``fit.artifact()``).

        Raises
        ------
        FitArtifactError
            The result records no likelihood fingerprint (built by hand, or loaded from a
            file written before fit artifacts existed).
        """
        if not getattr(fit, "likelihood_fingerprint", None):
            raise FitArtifactError("this FitResult records no likelihood fingerprint (it did not come from "
                                   "Likelihood.fit); refit to make an artifact")
        return cls(parameter_names=fit.parameter_names, values=fit.values, objective=fit.objective,
                   outcome=fit.outcome, terminal_message=fit.terminal_message, diagnostics=fit.diagnostics,
                   covariance=fit.covariance, standard_errors=fit.standard_errors,
                   likelihood_fingerprint=fit.likelihood_fingerprint)

    def _replace(self, ensemble: FitEnsembleArtifact | None) -> FitArtifact:
        return FitArtifact(parameter_names=self._names, values=self._values, objective=self._objective,
                           outcome=self._outcome, terminal_message=self._terminal,
                           diagnostics=self._diagnostics,
                           covariance=self._covariance, standard_errors=self._errors,
                           likelihood_fingerprint=self._fingerprint, ensemble=ensemble)

    # -- laddu's fields -----------------------------------------------------------------
    @property
    def artifact_kind(self) -> str:
        return ARTIFACT_KIND

    @property
    def schema_version(self) -> int:
        return SCHEMA_VERSION

    @property
    def laddu_version(self) -> str:
        return LADDU_VERSION

    @property
    def fingerprint_version(self) -> int:
        return FINGERPRINT_VERSION

    @property
    def likelihood_fingerprint(self) -> str:
        return self._fingerprint

    @property
    def strong_compatibility(self) -> bool:
        return True

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
    def terminal_message(self) -> str:
        return self._terminal

    @property
    def diagnostics(self) -> dict[str, int]:
        return dict(self._diagnostics)

    @property
    def covariance(self) -> np.ndarray | None:
        return None if self._covariance is None else self._covariance.copy()

    @property
    def standard_errors(self) -> np.ndarray | None:
        return None if self._errors is None else self._errors.copy()

    @property
    def ensemble(self) -> FitEnsembleArtifact | None:
        return self._ensemble

    # -- binding ------------------------------------------------------------------------
    def bind(self, likelihood: Any) -> BoundFitState:
        """The fit checked against ``likelihood`` (same free parameters by name, same
        structure) with its values in the likelihood's order.

        Raises
        ------
        FitArtifactError
            The parameters or the structure differ (the message says which).
        """
        return bind(self, likelihood)

    def bind_with_parameter_map(self, likelihood: Any, mapping: dict[str, str]) -> BoundFitState:
        """:meth:`bind` onto a likelihood whose parameters were renamed: ``mapping`` takes
        every artifact parameter name to the likelihood's name for it.

        Raises
        ------
        FitArtifactError
            ``mapping`` leaves an artifact parameter out, names one the artifact lacks, or does
            not land on the likelihood's parameters once each; or the structure differs.
        """
        return bind(self, likelihood, mapping)

    def yield_context(self, likelihood: Any, term_name: str, *, generated_mc: Any) -> Any:
        """:meth:`bind`, then the term's yields at the stored values, with the stored ensemble's
        draws when one is attached (laddu's): ``likelihood.yield_context`` without a fit."""
        state = self.bind(likelihood)
        return likelihood.yield_context(term_name, generated_mc=generated_mc, parameters=state.values,
                                        ensemble=self._stored_ensemble())

    def cross_section(self, likelihood: Any, term_name: str, *, generated_mc: Any, luminosity: Any) -> Any:
        """:meth:`bind`, then the term's fitted generated-MC cross section at the stored values,
        with the stored ensemble's draws when one is attached (laddu's)."""
        state = self.bind(likelihood)
        return likelihood.cross_section(term_name, generated_mc, luminosity, state.values,
                                        ensemble=self._stored_ensemble())

    def _stored_ensemble(self) -> Any:
        """The stored ensemble, if any, for a likelihood bound by name (whose parameters are
        the artifact's in the same order, since their fingerprints agree)."""
        return None if self._ensemble is None else self._ensemble.to_ensemble()

    # -- ensembles ----------------------------------------------------------------------
    def with_ensemble(self, ensemble: Any) -> FitArtifact:
        """A copy holding ``ensemble``'s draws (an :class:`~laddu_dask.Ensemble` over the same
        parameters in the same order).

        Raises
        ------
        FitArtifactError
            The ensemble's parameters are not the fit's, in order.
        """
        if list(ensemble.parameter_names) != self._names:
            raise FitArtifactError(f"the ensemble's parameters {list(ensemble.parameter_names)} are not the "
                                   f"fit's {self._names} (in order)")
        return self._replace(FitEnsembleArtifact.from_ensemble(ensemble))

    def with_failed_replicas(self, failures: Sequence[Failure]) -> FitArtifact:
        """A copy whose ensemble records ``failures``, ``(replica index, seed or None,
        message)`` each, in place of any it had; a failure's index is its place among all
        replicas (draws and failures).

        Raises
        ------
        FitArtifactError
            No ensemble is attached, an index repeats or lies outside the replicas.
        """
        if self._ensemble is None:
            raise FitArtifactError("failed replicas need an ensemble: call with_ensemble first")
        return self._replace(self._ensemble.with_failures(failures))

    # -- files --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready fields (:meth:`from_dict` reverses it)."""
        return {
            "artifact_kind": ARTIFACT_KIND, "schema_version": SCHEMA_VERSION, "laddu_version": LADDU_VERSION,
            "fingerprint_version": FINGERPRINT_VERSION, "likelihood_fingerprint": self._fingerprint,
            "parameter_names": list(self._names), "values": self._values.tolist(),
            "objective": self._objective, "outcome": self._outcome, "terminal_message": self._terminal,
            "diagnostics": dict(self._diagnostics),
            "covariance": None if self._covariance is None else self._covariance.tolist(),
            "standard_errors": None if self._errors is None else self._errors.tolist(),
            "ensemble": None if self._ensemble is None else self._ensemble.to_dict(),
            "strong_compatibility": True,
        }

    @classmethod
    def from_dict(cls, record: Any, where: str) -> FitArtifact:
        """The artifact :meth:`to_dict` described; errors name ``where`` and the field."""
        record = fields.check_record(record, where)
        for name, want in (("artifact_kind", ARTIFACT_KIND), ("schema_version", SCHEMA_VERSION),
                           ("fingerprint_version", FINGERPRINT_VERSION)):
            if record.get(name) != want:
                raise FitArtifactError(f"{where}: field {name!r} is {record.get(name)!r}; this laddu-dask "
                                       f"reads {want!r}")
        names = fields.names(record, "parameter_names", where)
        n = len(names)
        outcome = fields.text(record, "outcome", where)
        if outcome not in _OUTCOMES:
            raise FitArtifactError(f"{where}: field 'outcome' must be one of {_OUTCOMES}, found {outcome!r}")
        diagnostics = fields.check_record(record.get("diagnostics"), f"{where}: field 'diagnostics'")
        for key in diagnostics:
            fields.integer(diagnostics, key, f"{where}: field 'diagnostics'")
        ensemble = fields.optional(lambda r, k, w: FitEnsembleArtifact.from_dict(r[k], f"{w}: field {k!r}"),
                                   record, "ensemble", where)
        if ensemble is not None and ensemble.parameter_names != names:
            raise FitArtifactError(f"{where}: field 'ensemble' is over {ensemble.parameter_names}, the fit "
                                   f"over {names}")
        fingerprint = fields.text(record, "likelihood_fingerprint", where)
        values = fields.vector(record, "values", where, n)
        objective = fields.number(record, "objective", where)
        if not (np.isfinite(values).all() and math.isfinite(objective)):
            raise FitArtifactError(f"{where}: fields 'values' and 'objective' must be finite")
        return cls(parameter_names=names, values=values, objective=objective, outcome=outcome,
                   terminal_message=fields.text(record, "terminal_message", where), diagnostics=diagnostics,
                   covariance=fields.optional(lambda r, k, w: fields.matrix(r, k, w, n, n), record,
                                              "covariance", where),
                   standard_errors=fields.optional(lambda r, k, w: fields.vector(r, k, w, n), record,
                                                   "standard_errors", where),
                   likelihood_fingerprint=fingerprint, ensemble=ensemble)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the artifact as JSON, atomically (laddu's ``save``).

        Raises
        ------
        UnsafeOutputError
            ``path`` exists and ``overwrite`` is False (the message names it).
        """
        write_json(path, {"kind": FILE_KIND, **self.to_dict()}, overwrite=overwrite)

    @staticmethod
    def load(path: str | os.PathLike[str]) -> FitArtifact:
        """The artifact :meth:`save` wrote.

        Raises
        ------
        FitArtifactError
            The file is not JSON, not a fit artifact, or a field is missing or mistyped
            (the message names the file and the field).
        FileNotFoundError
            No file at ``path``.
        """
        try:
            record = read_json(path, FILE_KIND)
        except ValueError as exc:
            raise FitArtifactError(str(exc)) from None
        return FitArtifact.from_dict(record, os.fspath(path))

    def __repr__(self) -> str:
        pairs = ", ".join(f"{n}={v:.6g}" for n, v in zip(self._names, self._values))
        extra = "" if self._ensemble is None else f", ensemble of {len(self._ensemble.draws)} draws"
        return (f"FitArtifact({pairs}; objective={self._objective:.10g}, {self._outcome}, "
                f"fingerprint {self._fingerprint}{extra})")
