"""laddu's MCMC settings: the starting ensembles (``AIESInit``, ``ESSInit``), the moves
(``AIESMove``, ``ESSMove``), the sampler configurations (``AIESConfig``, ``ESSConfig``) and
what a chain keeps (``ChainStorage``), with laddu 0.28.1's names, keywords and defaults.

:meth:`~laddu_dask.Likelihood.sample` takes an init (which picks the sampler) and an optional
matching config. A bad value is a :class:`~laddu_dask.errors.GaneshConfigError` (a ``ValueError``)
naming the keyword, as laddu's.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.mcmc_configs import AIESConfig, AIESMove, ChainStorage
>>> config = AIESConfig(moves=[AIESMove.stretch(weight=0.75), AIESMove.walk(weight=0.25)],
...                     chain_storage=ChainStorage.sampled(10, max_samples=500))
>>> [(m.kind, m.weight) for m in config.moves], config.chain_storage.keeps(20)
([('stretch', 0.75), ('walk', 0.25)], True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError
from laddu_dask.validate import integer, number

#: The checks of every setting: a :class:`GaneshConfigError` naming it, as laddu's.
setting = partial(number, error=GaneshConfigError)
whole = partial(integer, error=GaneshConfigError)


def _walkers(walkers: Any, family: str, minimum: int) -> np.ndarray:
    """``walkers`` as a finite ``(n_walkers, n_parameters)`` float array of at least
    ``minimum`` rows (laddu's ``validate_walkers``, and finite, which laddu does not check)."""
    try:
        array = np.array(walkers, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2:
        raise GaneshConfigError(f"{family}Init: walkers must be a two-dimensional array (n_walkers, "
                                f"n_parameters) or a nested sequence, got {type(walkers).__name__}"
                                + ("" if array is None else f" of shape {array.shape}"))
    if len(array) < minimum:
        raise GaneshConfigError(f"{family}Init: {family} requires at least {minimum} walkers, "
                                f"got {len(array)}")
    if array.shape[1] == 0:
        raise GaneshConfigError(f"{family}Init: walker dimension must be at least 1")
    if not np.isfinite(array).all():
        row = int(np.argmin(np.isfinite(array).all(axis=1)))
        raise GaneshConfigError(f"{family}Init: walker {row} is not finite: {array[row].tolist()}")
    array.flags.writeable = False
    return array


class _Init:
    """A validated starting ensemble; :attr:`walkers` is ``(n_walkers, n_parameters)``."""

    family = ""
    minimum = 2

    def __init__(self, walkers: Any) -> None:
        self._walkers = _walkers(walkers, self.family, self.minimum)

    @property
    def walkers(self) -> np.ndarray:
        """The starting walkers, one row each (a read-only copy of what was given)."""
        return self._walkers

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._walkers.shape[0]} walkers, {self._walkers.shape[1]} parameters)"


class AIESInit(_Init):
    """The starting walkers of the affine-invariant ensemble sampler (laddu's ``AIESInit``):
    at least two (``Likelihood.sample`` asks for twice the parameters)."""

    family = "AIES"
    minimum = 2


class ESSInit(_Init):
    """The starting walkers of the ensemble slice sampler (laddu's ``ESSInit``): at least
    three (``Likelihood.sample`` asks for twice the parameters)."""

    family = "ESS"
    minimum = 3


def _weight(weight: Any, where: str) -> float:
    return setting(weight, f"{where} weight", minimum=0.0)


@dataclass(frozen=True)
class AIESMove:
    """One weighted move of the affine-invariant sampler: ``stretch`` (Goodman & Weare's
    stretch move of scale ``a > 1``) or ``walk``; each step uses one move, drawn by weight."""

    kind: str
    weight: float = 1.0
    scale: float = 2.0

    @staticmethod
    def stretch(*, scale: float = 2.0, weight: float = 1.0) -> AIESMove:
        """The stretch move ``z ~ g(z) ∝ 1/sqrt(z)`` on ``[1/scale, scale]``."""
        return AIESMove("stretch", _weight(weight, "AIESMove.stretch"),
                        setting(scale, "AIESMove.stretch scale", above=1.0))

    @staticmethod
    def walk(*, weight: float = 1.0) -> AIESMove:
        """The walk move: a Gaussian step with the complementary walkers' covariance."""
        return AIESMove("walk", _weight(weight, "AIESMove.walk"))


@dataclass(frozen=True)
class ESSMove:
    """One weighted move of the ensemble slice sampler: the direction of each walker's
    slice comes from the complementary walkers, as ``differential`` (the difference of two
    of them), ``gaussian`` (a draw from their covariance) or ``global`` (from a Gaussian
    mixture fitted to them, so that directions can join separated modes)."""

    kind: str
    weight: float = 1.0
    scale: float = 1.0
    rescale_covariance: float = 0.001
    components: int = 5

    @staticmethod
    def differential(*, weight: float = 1.0) -> ESSMove:
        """Directions ``x_j - x_k`` of two complementary walkers."""
        return ESSMove("differential", _weight(weight, "ESSMove.differential"))

    @staticmethod
    def gaussian(*, weight: float = 1.0) -> ESSMove:
        """Directions drawn from the complementary walkers' covariance."""
        return ESSMove("gaussian", _weight(weight, "ESSMove.gaussian"))

    @staticmethod
    def global_(*, scale: float = 1.0, rescale_covariance: float = 0.001, components: int = 5,
                weight: float = 1.0) -> ESSMove:
        """Directions from a ``components``-Gaussian mixture of the complementary walkers:
        within one component ``2 scale`` times a draw of its covariance, between two the
        difference of draws of their covariances times ``rescale_covariance`` (laddu's
        ``ESSMove.global``; ``global`` is a Python keyword, so write ``getattr(ESSMove,
        "global")`` or ``ESSMove.global_``)."""
        return ESSMove("global", _weight(weight, "ESSMove.global"),
                       setting(scale, "ESSMove.global scale", above=0.0),
                       setting(rescale_covariance, "ESSMove.global rescale_covariance", above=0.0),
                       whole(components, "ESSMove.global components", minimum=2))


setattr(ESSMove, "global", ESSMove.global_)  # laddu's name, a keyword in Python  # noqa: B010


def _moves(moves: Sequence[Any] | None, kind: type, where: str) -> tuple[Any, ...]:
    if moves is None:
        return ()
    if isinstance(moves, kind):
        moves = [moves]
    moves = tuple(moves)
    for i, move in enumerate(moves):
        if not isinstance(move, kind):
            raise TypeError(f"{where}: moves[{i}] must be a {kind.__name__}, got {type(move).__name__}")
    if not any(m.weight > 0 for m in moves):
        raise GaneshConfigError(f"{where}: move weights must be finite, non-negative, and include a "
                             f"positive entry, got {[m.weight for m in moves]}")
    return moves


@dataclass(frozen=True)
class ChainStorage:
    """Which steps a chain keeps (laddu's ``ChainStorage``). Step 0, the starting ensemble,
    is always kept first.

    ``full()`` keeps every step; ``rolling(window)`` the last ``window`` kept entries;
    ``sampled(keep_every, max_samples=)`` every ``keep_every``-th step (the last
    ``max_samples`` of them when given). The summary's chain holds what was kept.
    """

    mode: str = "full"
    window: int | None = None
    keep_every: int = 1
    max_samples: int | None = None

    @staticmethod
    def full() -> ChainStorage:
        """Keep every step."""
        return ChainStorage("full")

    @staticmethod
    def rolling(window: int) -> ChainStorage:
        """Keep the last ``window`` entries (at least one)."""
        return ChainStorage("rolling", window=whole(window, "ChainStorage.rolling window", minimum=1))

    @staticmethod
    def sampled(keep_every: int, *, max_samples: int | None = None) -> ChainStorage:
        """Keep steps ``keep_every, 2 keep_every, ...`` (after step 0); at most the last
        ``max_samples`` entries when given."""
        keep = whole(keep_every, "ChainStorage.sampled keep_every", minimum=1)
        limit = None if max_samples is None else whole(max_samples, "ChainStorage.sampled max_samples",
                                                         minimum=1)
        return ChainStorage("sampled", keep_every=keep, max_samples=limit)

    def keeps(self, step: int) -> bool:
        """Whether step ``step`` (1 is the first after the start) is kept."""
        return self.mode != "sampled" or step % self.keep_every == 0

    @property
    def limit(self) -> int | None:
        """The most entries kept (``None``: no limit)."""
        return self.window if self.mode == "rolling" else self.max_samples if self.mode == "sampled" else None


def _storage(chain_storage: Any) -> ChainStorage:
    if chain_storage is None:
        return ChainStorage.full()
    if not isinstance(chain_storage, ChainStorage):
        raise TypeError(f"chain_storage must be a ChainStorage, got {type(chain_storage).__name__}")
    return chain_storage


def _names(parameter_names: Sequence[str] | None, where: str) -> list[str] | None:
    if parameter_names is None:
        return None
    if isinstance(parameter_names, str) or not all(isinstance(n, str) for n in parameter_names):
        raise TypeError(f"{where}: parameter_names must be a sequence of str, got {parameter_names!r}")
    return list(parameter_names)


class AIESConfig:
    """The affine-invariant ensemble sampler (laddu's ``AIESConfig``), run on emcee.

    Parameters
    ----------
    stretch_scale : float
        The stretch move's ``a`` (> 1) when ``moves`` is not given.
    moves : sequence of AIESMove, optional
        A weighted mixture of moves (default: the stretch move alone).
    chain_storage : ChainStorage, optional
        What the chain keeps (default: every step).
    parameter_names : sequence of str, optional
        Names of the summary's parameters when ``use_parameter_metadata=False``.
    transform : object, optional
        laddu's parameter transform; ``Likelihood.sample`` accepts none other than ``None``
        (see the README's difference table).
    """

    def __init__(self, *, stretch_scale: float = 2.0, moves: Sequence[AIESMove] | None = None,
                 chain_storage: ChainStorage | None = None, parameter_names: Sequence[str] | None = None,
                 transform: Any | None = None) -> None:
        self.stretch_scale = setting(stretch_scale, "AIESConfig stretch_scale", above=1.0)
        self.moves = _moves(moves, AIESMove, "AIESConfig") or (AIESMove.stretch(scale=self.stretch_scale),)
        self.chain_storage = _storage(chain_storage)
        self.parameter_names = _names(parameter_names, "AIESConfig")
        self.transform = transform

    def __repr__(self) -> str:
        return f"AIESConfig(moves={list(self.moves)!r}, chain_storage={self.chain_storage!r})"


class ESSConfig:
    """The ensemble slice sampler (laddu's ``ESSConfig``; Karamanis & Beutler 2021).

    Parameters
    ----------
    bracket_width : float
        The initial width of each slice interval, in units of the walker's direction.
    max_shrink_steps : int
        The most steps of stepping out a walker's interval (Neal's limit ``m``) and, again,
        of shrinking it; a walker whose shrinking runs out stays where it is.
    adaptive_steps : int
        Steps during which the direction scale is tuned (times ``2 expansions / (expansions
        + contractions)``), as zeus and laddu do; ``0``: never tuned.
    direction_scale : float
        The initial scale ``mu`` of the directions.
    moves : sequence of ESSMove, optional
        A weighted mixture (default: the differential move alone).
    chain_storage, parameter_names, transform
        As in :class:`AIESConfig`.
    """

    def __init__(self, *, bracket_width: float = 1.0, max_shrink_steps: int = 1000, adaptive_steps: int = 0,
                 direction_scale: float = 1.0, moves: Sequence[ESSMove] | None = None,
                 chain_storage: ChainStorage | None = None, parameter_names: Sequence[str] | None = None,
                 transform: Any | None = None) -> None:
        self.bracket_width = setting(bracket_width, "ESSConfig bracket_width", above=0.0)
        self.max_shrink_steps = whole(max_shrink_steps, "ESSConfig max_shrink_steps", minimum=1)
        self.adaptive_steps = whole(adaptive_steps, "ESSConfig adaptive_steps", minimum=0)
        self.direction_scale = setting(direction_scale, "ESSConfig direction_scale", above=0.0)
        self.moves = _moves(moves, ESSMove, "ESSConfig") or (ESSMove.differential(),)
        self.chain_storage = _storage(chain_storage)
        self.parameter_names = _names(parameter_names, "ESSConfig")
        self.transform = transform

    def __repr__(self) -> str:
        return (f"ESSConfig(bracket_width={self.bracket_width!r}, "
                f"max_shrink_steps={self.max_shrink_steps!r}, adaptive_steps={self.adaptive_steps!r}, "
                f"direction_scale={self.direction_scale!r}, "
                f"moves={list(self.moves)!r}, chain_storage={self.chain_storage!r})")
