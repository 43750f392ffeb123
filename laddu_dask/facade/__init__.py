"""The public classes of laddu-dask, assembled above the layers whose methods they carry.

laddu's Python crate assembles its core crates: the classes a user gets are defined in
the one crate above the others, each a thin layer over the core type it presents. This
package does the same for laddu-dask. Each layer defines its own class and nothing in it
knows the layers above; the public class is the subclass here that adds the methods those
layers implement, each a one-line delegation to a plain function of that layer:

==================  =========================================  ==========================================
public class        the layer's class                          methods added here, from
==================  =========================================  ==========================================
``ld.Likelihood``   :class:`laddu_dask.likelihood.Likelihood`  ``fit_restarts``, ``bootstrap_fit``,
                                                               ``sample``, ``walker_positions``
                                                               (analysis); ``project``, ``projection``,
                                                               ``intensity_integrals``, ``yield_context``,
                                                               ``cross_section``, ``fit_fractions``
                                                               (results)
``ld.NLL``,         :class:`laddu_dask.likelihood.NLL`,        none: they name the public ``Model`` and
``ld.ExtendedNLL``  :class:`~laddu_dask.likelihood.ExtendedNLL`  ``Likelihood`` as the classes they build
``ld.Model``        :class:`laddu_dask.expr.Model`             ``evaluate``, ``value_and_gradient``
                                                               (likelihood.events)
``ld.Channel``      :class:`laddu_dask.expr.topology.Channel`  ``validate_generation`` (results)
==================  =========================================  ==========================================

Why subclasses, and how objects made inside the lower layers get the public class. Before
this package, the analysis and results layers registered methods into ``Likelihood``
(``register_method``) and the likelihood layer installed ``Model.evaluate``
(``install_evaluator``) when they were imported, so a class behaved according to which
packages had been imported. Now no class is changed after its definition and nothing
registers anything; importing any package in any order gives the same classes. A lower
layer that builds an object for the user builds it with a class it was given, never by
naming a class of its own:

* a sum ``a + b`` (:meth:`Likelihood.combined`) has the class of its more derived side, a
  bootstrap replica the class of the likelihood it replicates, a model's
  :meth:`~laddu_dask.Model.projection` and ``with_parameters`` the class of the model;
* a term names the classes it builds (``model_class``, ``likelihood_class``): the
  public terms here name the public ``Model`` and ``Likelihood``, so ``ld.NLL(expr, ...)``
  holds an ``ld.Model`` and ``ld.NLL(...) + ld.NLL(...)`` is an ``ld.Likelihood``;
* a function that builds terms from a model (:func:`fit_bins`,
  :func:`binned_likelihoods`) takes the term classes as its ``kinds``; the public
  functions here pass the public ones.

The alternatives were weighed. Methods delegating to functions passed at construction
would put a table of functions in every object (pickled with it) and still need the
public constructor here. Moving ``Likelihood`` up would take the evaluation it owns with
it. Subclasses keep ``isinstance`` true at both levels (every check in the layers is
against the layer's class, which the public one extends), pickle by reference like any
module-level class (cloudpickle, Dask), keep iminuit's cost protocol (inherited), and keep
the names laddu's. Lower layers never call a method defined here; where they evaluate a
model they call :func:`laddu_dask.likelihood.events.evaluate_model` themselves.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.likelihood import Likelihood as LayerLikelihood
>>> x = ld.scalar("x")
>>> data = ld.Dataset.from_arrays(scalars={"x": np.array([0.2, 0.9])})
>>> mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 11)})
>>> nll = ld.NLL(ld.parameter("a", initial=1.0) * x * x + 1.0, data=data, accepted_mc=mc)
>>> total = nll + ld.NLL(nll.model, data=data, accepted_mc=mc, name="other")
>>> type(total) is ld.Likelihood, isinstance(total, LayerLikelihood), type(nll.model) is ld.Model
(True, True, True)
>>> callable(total.fit_restarts), callable(total.projection)
(True, True)
"""

from laddu_dask.facade.binned import binned_likelihoods, fit_bins
from laddu_dask.facade.likelihoods import NLL, ExtendedNLL, Likelihood
from laddu_dask.facade.models import Channel, Model

__all__ = ["NLL", "Channel", "ExtendedNLL", "Likelihood", "Model", "binned_likelihoods", "fit_bins"]
