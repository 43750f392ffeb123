"""The public ``Model`` and ``Channel``: the expression layer's classes with the methods
of the layers above (see :mod:`laddu_dask.facade`).

``Model.evaluate`` and ``Model.value_and_gradient`` run compiled kernels, so they are
:func:`laddu_dask.likelihood.events.evaluate_model`; ``Channel.validate_generation`` is
:func:`laddu_dask.generation.phase_space.validate_generation`.

Examples
--------
>>> import laddu_dask as ld
>>> model = ld.Model(ld.parameter("a", initial=2.0) * ld.parameter("b", initial=3.0))
>>> model.evaluate(), type(model.with_parameters({})) is Model
((6+0j), True)
"""

from __future__ import annotations

from functools import partial
from typing import Any

from laddu_dask.expr import channel_json
from laddu_dask.expr.model import Model as _Model
from laddu_dask.expr.topology import Channel as _Channel
from laddu_dask.expr.topology import channel_from
from laddu_dask.generation.phase_space import validate_generation
from laddu_dask.likelihood.events import evaluate_model

__all__ = ["Channel", "Model"]


class Model(_Model):
    __doc__ = _Model.__doc__

    def evaluate(self, dataset: Any = None, *, parameters: Any = None, execution: Any = None,
                 real: bool = False) -> Any:
        """The model's value for every event of ``dataset`` (laddu's ``Model.evaluate``).

        Parameters
        ----------
        dataset : Dataset or None
            The events; ``None`` for a model that reads no event columns (one value).
        parameters : sequence or dict, optional
            Free values in :attr:`parameter_names` order, or a (partial) mapping by name;
            omitted ones take their defaults.
        execution : Execution, optional
            Where and how to evaluate (device, precision, kernels); the default ``Execution()``.
        real : bool, default False
            Return the real parts (``float64``) instead of complex values.

        Returns
        -------
        numpy.ndarray or cupy.ndarray or complex or float
            ``(n_events,)`` values, ``complex128`` (``float64`` with ``real=True``), on
            the execution's device; one Python number without a dataset.

        Examples
        --------
        >>> import numpy as np
        >>> import laddu_dask as ld
        >>> model = ld.Model(ld.parameter("a", initial=2.0) * ld.scalar("x"))
        >>> events = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 3.0])})
        >>> model.evaluate(events, parameters=[0.5], real=True).tolist()
        [0.5, 1.5]
        """
        return evaluate_model(self, dataset, parameters, execution, real, False)

    def value_and_gradient(self, dataset: Any = None, *, parameters: Any = None,
                           execution: Any = None, real: bool = False) -> tuple[Any, Any]:
        """Per-event values and derivatives by every free parameter (laddu's
        ``Model.value_and_gradient``).

        Returns
        -------
        values : array or number
            As :meth:`evaluate`.
        gradient : array
            ``(n_events, n_free)`` (``(n_free,)`` without a dataset), the complex
            derivatives of the value by each real free parameter in :attr:`parameter_names`
            order (their real parts with ``real=True``).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> z = ld.complex(ld.parameter("x"), ld.parameter("y"))
        >>> value, gradient = ld.Model(z * z + 1.0).value_and_gradient(parameters={"x": 2.0, "y": 3.0})
        >>> value, gradient.tolist()
        ((-4+12j), [(4+6j), (-6+4j)])
        """
        return evaluate_model(self, dataset, parameters, execution, real, True)

    @staticmethod
    def from_json(json: str, *, exact_solver_seconds: float = 0.0) -> Model:
        """The model of laddu 0.28.1's JSON text (:meth:`laddu_dask.expr.Model.from_json`), a
        public ``Model``.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> m = ld.Model(ld.parameter("a", initial=2.0) * ld.scalar("x"))
        >>> type(ld.Model.from_json(m.to_json())) is ld.Model
        True
        """
        return Model(_Model.from_json(json, exact_solver_seconds=exact_solver_seconds),
                     exact_solver_seconds=exact_solver_seconds)


class Channel(_Channel):
    __doc__ = _Channel.__doc__
    __slots__ = ()

    def validate_generation(self) -> None:
        """Check everything generation needs from the channel (laddu's
        ``Channel.validate_generation``; :func:`laddu_dask.generation.phase_space.validate_generation`).

        Raises
        ------
        ModelError
            Naming the edge or vertex at fault.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> try:
        ...     ld.Channel("empty", edges=[ld.Edge("X")], vertices=[]).validate_generation()
        ... except ld.ModelError as error:
        ...     print(str(error).split(":")[0])
        channel 'empty'
        """
        validate_generation(self)

    @staticmethod
    def from_json(json: str) -> Channel:
        """The channel of laddu's (or :meth:`to_json`'s) JSON text, a public ``Channel``.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> channel = ld.Channel("c", edges=[ld.Edge("X")], vertices=[])
        >>> type(ld.Channel.from_json(channel.to_json())) is ld.Channel
        True
        """
        return channel_json.read(json, "Channel", partial(channel_from, channel=Channel))
