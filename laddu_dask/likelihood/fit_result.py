"""``FitResult``: what a fit returns, in laddu 0.28.1's shape with laddu-dask's extras.

laddu's attributes: :attr:`~FitResult.values` (an array in :attr:`~FitResult.parameter_names`
order), :attr:`~FitResult.objective` (``-2 ln L``), :attr:`~FitResult.standard_errors`,
:attr:`~FitResult.covariance`, :attr:`~FitResult.converged`, :attr:`~FitResult.outcome`,
:attr:`~FitResult.terminal_message`, :attr:`~FitResult.diagnostics`,
:attr:`~FitResult.named_parameters` and :attr:`~FitResult.raw_ganesh_summary`.  laddu-dask
adds the errors by name, ``valid`` (converged *and* an accurate covariance), the method, the
iminuit object of a MIGRAD fit, a plain-sentence message, the EDM, the correlation matrix, the
bounds, and JSON ``save``/``load``.

Examples
--------
>>> r = FitResult({"a": 1.0, "b": -2.0}, {"a": 0.1, "b": 0.2}, 3.0, True, 12, "migrad", None, ["a", "b"])
>>> r.values, r.objective, r.named_parameters
(array([ 1., -2.]), 3.0, {'a': 1.0, 'b': -2.0})
>>> dict(zip(["a", "b"], r.values.tolist()))
{'a': 1.0, 'b': -2.0}
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood.artifact import FitArtifact
from laddu_dask.views import format_bounds, table

__all__ = ["FitResult", "correlation_of"]


def correlation_of(covariance: np.ndarray | None) -> np.ndarray | None:
    """``covariance / (sigma sigma^T)`` (NaN where a variance is not positive)."""
    if covariance is None:
        return None
    d = np.diag(covariance)
    with np.errstate(all="ignore"):
        sigma = np.sqrt(np.where(d > 0, d, np.nan))
        return covariance / np.outer(sigma, sigma)


def _by_name(given: Any, names: list[str], what: str) -> Any:
    """``given`` (a mapping by name, or a sequence in ``names`` order) as a float array."""
    if isinstance(given, Mapping):
        missing = [n for n in names if n not in given]
        if missing:
            raise ValueError(f"FitResult {what} name no value for {', '.join(map(repr, missing))}")
        given = [given[n] for n in names]
    out = np.array(given, dtype=np.float64).reshape(-1)
    if len(out) != len(names):
        raise ValueError(f"FitResult {what} has {len(out)} entries for {len(names)} parameters")
    return out


@dataclass(eq=False)
class FitResult:
    """The outcome of a fit (laddu's ``FitResult``, with laddu-dask's extras).

    Attributes
    ----------
    values : numpy.ndarray
        Best-fit values in :attr:`parameter_names` order (laddu's); by name:
        :attr:`named_parameters`. The constructor also takes a mapping by name.
    errors : dict[str, float]
        Standard errors by name (:attr:`standard_errors` as a mapping).
    fval : float
        Minimum of the likelihood, ``-2 ln L`` (laddu's :attr:`objective`).
    valid : bool
        :attr:`converged`, and the covariance is accurate (positive-definite, not forced).
    n_calls : int
        Likelihood evaluations used (each point of a Hessian counts).
    method : str
        ``"lbfgsb"`` (laddu's default), ``"migrad"``, or a ganesh configuration's method.
    covariance : numpy.ndarray or None
        Covariance of the parameters for ``-2 ln L`` (twice the inverse Hessian),
        :attr:`parameter_names` order; None when the method gives none.
    parameter_names : list of str
        Order of :attr:`values`, :attr:`covariance` and :attr:`correlation`.
    minuit : iminuit.Minuit or None
        The minimiser of a MIGRAD fit (None otherwise).
    message : str
        One plain sentence: ``"valid minimum; EDM 1.2e-05 < goal 0.0002"``, or
        ``"invalid minimum: "`` and what failed.
    wall_time : float
        Seconds spent.
    edm : float
        Estimated distance to the minimum, ``g^T H^-1 g / 2`` (iminuit's after HESSE).
    correlation : numpy.ndarray or None
        ``covariance / (sigma sigma^T)``, :attr:`parameter_names` order.
    bounds : dict[str, tuple]
        Each parameter's limits (``None``: none on that side).
    converged : bool or None
        Whether the minimiser reports convergence (laddu's); None: the same as :attr:`valid`.
    terminal_message : str
        laddu's ``"Success: ..."`` or ``"Message: ..."``; empty: :attr:`message`.
    diagnostics : dict
        ``function_evaluations``, ``gradient_evaluations``, ``hessian_evaluations`` (laddu's).
    raw_ganesh_summary : MinimizationSummary or None
        The ganesh summary of a fit run on a ganesh configuration (None on MIGRAD's path).
    likelihood_fingerprint : str or None
        The fitted likelihood's structural fingerprint, which :meth:`artifact` records
        (set by ``Likelihood.fit``; None for a result built by hand).
    """

    values: Any
    errors: Any
    fval: float
    valid: bool
    n_calls: int
    method: str
    covariance: np.ndarray | None
    parameter_names: list[str]
    minuit: Any = field(default=None, repr=False)
    message: str = ""
    wall_time: float = 0.0
    edm: float = math.nan
    correlation: np.ndarray | None = None
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    converged: bool | None = None
    terminal_message: str = ""
    diagnostics: dict[str, int] = field(default_factory=dict)
    raw_ganesh_summary: Any = field(default=None, repr=False)
    likelihood_fingerprint: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.parameter_names = [str(n) for n in self.parameter_names]
        self.values = _by_name(self.values, self.parameter_names, "values")
        self.errors = dict(zip(self.parameter_names,
                               map(float, _by_name(self.errors, self.parameter_names, "errors"))))
        if self.converged is None:
            self.converged = bool(self.valid)
        if not self.terminal_message:
            self.terminal_message = self.message
        if not self.diagnostics:
            self.diagnostics = {"function_evaluations": int(self.n_calls), "gradient_evaluations": 0,
                                "hessian_evaluations": 0}

    # -- laddu's names ------------------------------------------------------------------
    @property
    def objective(self) -> float:
        """The minimum, ``-2 ln L`` (laddu's name for :attr:`fval`)."""
        return self.fval

    @property
    def standard_errors(self) -> np.ndarray | None:
        """Standard errors in :attr:`parameter_names` order; None without a covariance."""
        if self.covariance is None:
            return None
        return np.array([self.errors[n] for n in self.parameter_names])

    @property
    def named_parameters(self) -> dict[str, float]:
        """``{name: value}`` (laddu's)."""
        return dict(zip(self.parameter_names, map(float, self.values), strict=True))

    @property
    def outcome(self) -> str:
        """``"converged"``, ``"not_converged"``, or ``"failed"`` (the fit raised)."""
        if self.message.startswith("failed:"):
            return "failed"
        return "converged" if self.converged else "not_converged"

    @classmethod
    def from_summary(cls, summary: Any, *, method: str, bounds: Any = None, parameter_names: Any = None,
                     wall_time: float = 0.0) -> FitResult:
        """The result of a ganesh minimizer's ``MinimizationSummary``.

        The summary holds ganesh's raw covariance, the inverse Hessian of ``-2 ln L``; the
        result's :attr:`covariance` is twice it, the covariance of the parameters (as
        laddu's ``FitResult``). A summary without a Hessian (``evals.h == 0``: a method that
        gives no errors) has no covariance and no standard errors, and so has one whose
        covariance is not positive-definite (then the result is not ``valid``).

        Parameters
        ----------
        summary : MinimizationSummary
            Its ``x``, ``fx``, ``std``, ``covariance``, ``evals`` (``f``, ``g``, ``h``),
            ``message`` (``success``, ``text``) and ``parameter_names``.
        method : str
            The method's name.
        bounds : sequence of (low, high), optional
            The parameters' bounds, in order.
        parameter_names : sequence of str, optional
            The names, when the summary has none.
        wall_time : float
            Seconds the fit took.
        """
        names = [str(n) for n in (summary.parameter_names or parameter_names)]
        x = np.asarray(summary.x, dtype=np.float64)
        evals = summary.evals
        cov = None
        if int(evals.h) > 0 and summary.covariance is not None:
            cov = 2.0 * np.asarray(summary.covariance, dtype=np.float64)
            if not (np.isfinite(cov).all() and _positive_definite(cov)):
                cov = None  # as laddu's: no covariance and no errors from a Hessian that is not
        errors = np.full(len(names), math.nan) if cov is None else np.sqrt(np.diag(cov))
        success, text = bool(summary.message.success), summary.message.text
        terminal = f"{'Success' if success else 'Message'}: {text}"
        failed = int(evals.h) > 0 and cov is None
        message = (("valid minimum; " if success and not failed else "invalid minimum: ") + (text or "")
                   + ("; Hessian not positive-definite" if failed else ""))
        return cls(
            values=x, errors=errors, fval=float(summary.fx), valid=success and not failed,
            n_calls=int(evals.f), method=method, covariance=cov,
            parameter_names=names, message=message, wall_time=wall_time, correlation=correlation_of(cov),
            bounds={} if bounds is None else dict(zip(names, (tuple(b) for b in bounds))),
            converged=success, terminal_message=terminal,
            diagnostics={"function_evaluations": int(evals.f), "gradient_evaluations": int(evals.g),
                         "hessian_evaluations": int(evals.h)},
            raw_ganesh_summary=summary,
        )

    # -- display ------------------------------------------------------------------------
    def _bounds_text(self, name: str) -> str:
        return format_bounds(*self.bounds.get(name, (None, None)))

    def _headline(self) -> str:
        return (
            f"{self.method}: {'valid' if self.valid else 'INVALID'}, fval = {self.fval:.10g}, "
            f"edm = {self.edm:.3g}, {self.n_calls} calls, {self.wall_time:.2f} s"
        )

    def __repr__(self) -> str:
        lines = [f"FitResult({self._headline()})", f"  {self.message}"]
        for name, value in zip(self.parameter_names, self.values):
            lines.append(f"  {name:>14s} = {value: .6g} +- {self.errors[name]:.3g}"
                         f"  {self._bounds_text(name)}")
        if self.correlation is not None:
            lines.append("  correlation:")
            for name, row in zip(self.parameter_names, self.correlation):
                lines.append(f"  {name:>14s} " + " ".join(f"{c:+.2f}" for c in row))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        names = self.parameter_names
        params = table(
            ["parameter", "value", "error", "bounds"],
            [[n, f"{v:.6g}", f"{self.errors[n]:.3g}", self._bounds_text(n)]
             for n, v in zip(names, self.values)],
        )
        corr = ""
        if self.correlation is not None:
            corr = table(["correlation", *names],
                         [[n, *(f"{c:+.2f}" for c in row)] for n, row in zip(names, self.correlation)])
        return (
            f"<b>FitResult</b> ({html.escape(self._headline())})"
            f"<p>{html.escape(self.message)}</p>{params}{corr}"
        )

    # -- results that last --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (every field but :attr:`minuit` and :attr:`raw_ganesh_summary`);
        :meth:`from_dict` reverses it."""
        return {
            "kind": "laddu_dask.FitResult",
            "method": self.method,
            "valid": self.valid,
            "converged": self.converged,
            "fval": self.fval,
            "edm": self.edm,
            "n_calls": self.n_calls,
            "parameter_names": list(self.parameter_names),
            "values": [float(v) for v in self.values],
            "errors": dict(self.errors),
            "covariance": None if self.covariance is None else self.covariance.tolist(),
            "correlation": None if self.correlation is None else self.correlation.tolist(),
            "message": self.message,
            "terminal_message": self.terminal_message,
            "diagnostics": dict(self.diagnostics),
            "wall_time": self.wall_time,
            "bounds": {n: list(b) for n, b in self.bounds.items()},
            "likelihood_fingerprint": self.likelihood_fingerprint,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FitResult:
        """The result :meth:`to_dict` described (:attr:`minuit` is ``None``); also a file
        written before 0.28's shape, with ``values`` a mapping by name.

        Raises
        ------
        ValueError
            If ``d`` is not a fit result's dictionary (a missing or mistyped field, named).
        """
        try:
            names = [str(n) for n in d["parameter_names"]]
            matrix = (lambda m: None if m is None else np.array(m, dtype=np.float64))  # noqa: E731
            return cls(
                values=d["values"], errors=d["errors"],
                fval=float(d["fval"]), valid=bool(d["valid"]), n_calls=int(d["n_calls"]),
                method=str(d["method"]), covariance=matrix(d["covariance"]), parameter_names=names,
                message=str(d.get("message", "")), wall_time=float(d.get("wall_time", 0.0)),
                edm=float(d.get("edm", math.nan)), correlation=matrix(d.get("correlation")),
                bounds={n: tuple(b) for n, b in d.get("bounds", {}).items()},
                converged=d.get("converged"), terminal_message=str(d.get("terminal_message", "")),
                diagnostics=dict(d.get("diagnostics", {})),
                likelihood_fingerprint=d.get("likelihood_fingerprint"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a fit result: {type(exc).__name__}: {exc}") from None

    def artifact(self) -> FitArtifact:
        """The dataset-free :class:`~laddu_dask.FitArtifact` of this fit (laddu's), to save and
        bind onto the likelihood built again.

        Raises
        ------
        FitArtifactError
            The result did not come from ``Likelihood.fit`` (it records no fingerprint).
        """
        return FitArtifact.from_fit(self)

    def save(self, path: str | Any) -> None:
        """Write the result as JSON (atomically: a temporary file renamed over ``path``),
        with the laddu-dask version and the time it was written."""
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Any) -> FitResult:
        """The result :meth:`save` wrote.

        Examples
        --------
        >>> import tempfile, os
        >>> r = FitResult([1.0], [0.1], 3.0, True, 12, "migrad", None, ["a"])
        >>> path = os.path.join(tempfile.mkdtemp(), "fit.json")
        >>> r.save(path); FitResult.load(path).values
        array([1.])
        """
        return cls.from_dict(read_json(path, "laddu_dask.FitResult"))


def _positive_definite(matrix: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True
