"""laddu's ``Ensemble``: named parameter draws (bootstrap refits, MCMC samples) that carry
an uncertainty into yields, cross sections and fit fractions.

``Likelihood.bootstrap_fit`` returns one (its :attr:`Ensemble.fits` keeps every refit);
:meth:`Ensemble.from_mcmc` takes an :class:`~laddu_dask.ganesh.MCMCSummary` after explicit
burn-in removal and thinning; :meth:`Ensemble.from_arrays` any ``(K, n)`` array. Each
ensemble has a ``source_id``, unique in the process unless given, that names where the
draws of an :class:`~laddu_dask.Estimate` come from.

Examples
--------
>>> from laddu_dask.likelihood.ensemble import Ensemble
>>> e = Ensemble.from_arrays([[1.0, 2.0], [1.5, 2.5]], parameter_names=["a", "b"], source_id=7)
>>> len(e), e.parameter_names, e.source_id, e.draws[:, 1].tolist()
(2, ['a', 'b'], 7, [2.0, 2.5])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.validate import integer

#: Source ids of the ensembles made in this process (laddu's are process-local too).
_SOURCE_IDS = itertools.count(1)


def _names(parameter_names: Any, columns: int) -> list[str]:
    if isinstance(parameter_names, str) or not all(isinstance(n, str) for n in parameter_names):
        raise TypeError(f"parameter_names must be a sequence of str, got {parameter_names!r}")
    names = list(parameter_names)
    if len(names) != columns:
        raise ParameterError(f"parameter_names: {len(names)} names for draws of {columns} parameters")
    if len(set(names)) != len(names):
        raise ParameterError(f"parameter_names must be distinct, got {names}")
    return names


class Ensemble:
    """Named parameter draws, one row each (laddu's ``Ensemble``).

    Attributes
    ----------
    draws : numpy.ndarray
        ``(K, n)``, read-only, in :attr:`parameter_names` order.
    parameter_names : list of str
    source_id : int
        Identifies the ensemble (unique in the process unless given).
    fits : FitEnsemble or None
        The refits behind a bootstrap ensemble, failed ones included (``None`` otherwise).
    bootstrap_seed : int or None
        The ``seed`` of the ``bootstrap_fit`` that made the draws (``None`` otherwise).
    """

    def __init__(self, draws: Any, parameter_names: Sequence[str], *, source_id: int | None = None,
                 fits: Any = None) -> None:
        rows = np.array(draws, dtype=np.float64)
        if rows.ndim != 2:
            raise ParameterError(f"ensemble draws must be two-dimensional (draws, parameters), got shape "
                                 f"{rows.shape}")
        self.parameter_names = _names(parameter_names, rows.shape[1])
        if not np.isfinite(rows).all():
            raise ParameterError("every ensemble draw must be finite")
        rows.flags.writeable = False
        self._draws = rows
        self.source_id = (next(_SOURCE_IDS) if source_id is None
                          else integer(source_id, "source_id", minimum=0))
        self.fits = fits
        self.bootstrap_seed: int | None = None

    @property
    def draws(self) -> np.ndarray:
        """The draws, ``(K, n)``."""
        return self._draws

    def __len__(self) -> int:
        return len(self._draws)

    @staticmethod
    def from_arrays(values: Any, *, parameter_names: Sequence[str], source_id: int | None = None) -> Ensemble:
        """An ensemble of the rows of a ``(K, n)`` array (at least one row, all finite).

        Raises
        ------
        ParameterError
            Not two-dimensional, no rows, a non-finite value, names that do not match the
            columns or repeat.
        """
        ensemble = Ensemble(values, parameter_names, source_id=source_id)
        if not len(ensemble):
            raise ParameterError("an ensemble must contain at least one draw")
        return ensemble

    @staticmethod
    def from_mcmc(summary: Any, *, discard: int, thin: int = 1) -> Ensemble:
        """The samples of an MCMC summary after explicit burn-in removal and thinning: of
        every walker, chain entries ``discard, discard + thin, ...`` (entry 0 is the starting
        ensemble), walker by walker, as laddu's.

        Raises
        ------
        ParameterError
            ``discard`` leaves no entry, ``thin < 1``, or the summary has no parameter names
            (``sample(..., use_parameter_metadata=False)`` without a config's names).
        """
        if summary.parameter_names is None:
            raise ParameterError("the MCMC summary has no parameter names: sample with "
                                 "use_parameter_metadata=True or give the config parameter_names")
        return Ensemble(summary.flat(discard, thin), summary.parameter_names)

    def __repr__(self) -> str:
        fits = "" if self.fits is None else f", from {len(self.fits)} fits"
        return (f"Ensemble({len(self)} draws of {', '.join(self.parameter_names)}; "
                f"source_id={self.source_id}{fits})")
