"""The public classes are assembled in ``laddu_dask.facade``, above the layers whose methods
they carry; nothing below registers into a class, so no class depends on what was imported.

* Each lower package, imported alone or with the others in any order (in a fresh process,
  without ``laddu_dask/__init__``), leaves every layer's class exactly as it is defined, and
  no registry exists.
* The objects the lower layers build for a user (a sum ``a + b``, ``sum``, a term's own
  likelihood, each bin of ``fit_bins``, a bootstrap replica, a model's projection, a parsed
  model or channel) are of the public classes and carry every method.
* They pickle (cloudpickle, as Dask sends them), keep iminuit's cost protocol, and each
  public method is its layer's function, bitwise.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import analysis, results
from laddu_dask.analysis.replicas import replica_likelihoods
from laddu_dask.analysis.tasks import FitRecipe
from laddu_dask.expr.model import Model as LayerModel
from laddu_dask.likelihood import NLL as LayerNLL
from laddu_dask.likelihood import Likelihood as LayerLikelihood
from laddu_dask.likelihood.events import evaluate_model

ROOT = Path(__file__).resolve().parents[2]

#: The methods the facade adds to each layer's class, by the layer that implements them.
ADDED = {
    "Likelihood": ["fit_restarts", "bootstrap_fit", "sample", "walker_positions",  # analysis
                   "project", "projection", "intensity_integrals", "yield_context", "cross_section",
                   "fit_fractions"],  # results
    "Model": ["evaluate", "value_and_gradient"],
    "Channel": ["validate_generation"],
}

#: Run in a fresh interpreter: import the given modules in order with ``laddu_dask`` an empty
#: package (its ``__init__``, which imports every layer, does not run), then describe every
#: layer's class by its own members, and list any registry left in the layers.
_PROBE = """
import importlib, json, sys, types
package = types.ModuleType("laddu_dask")
package.__path__ = [sys.argv[1]]
sys.modules["laddu_dask"] = package
for name in sys.argv[2:]:
    importlib.import_module(name)
from laddu_dask.expr import model, topology
from laddu_dask.likelihood import likelihood, terms
classes = (likelihood.Likelihood, terms.NLL, terms.ExtendedNLL, terms._Term, model.Model, topology.Channel)
hooks = ("_METHODS", "register_method", "_method", "_EVALUATORS", "install_evaluator", "_evaluator")
print(json.dumps({
    "classes": {c.__module__ + "." + c.__qualname__: sorted(vars(c)) for c in classes},
    "registries": sorted(m.__name__ + "." + h for m in (likelihood, terms, model) for h in hooks
                         if hasattr(m, h)),
    "loaded": sorted(n for n in sys.modules if n.split(".")[:2] == ["laddu_dask", "facade"]),
}))
"""

ORDERS = [
    ["laddu_dask.likelihood"],
    ["laddu_dask.expr.model"],
    ["laddu_dask.likelihood", "laddu_dask.analysis", "laddu_dask.results"],
    ["laddu_dask.results", "laddu_dask.analysis", "laddu_dask.likelihood"],
    ["laddu_dask.analysis", "laddu_dask.likelihood.events", "laddu_dask.results"],
    ["laddu_dask.facade", "laddu_dask.likelihood"],
    ["laddu_dask.likelihood", "laddu_dask.results", "laddu_dask.facade"],
]


def _probe(order: list[str]) -> dict:
    run = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT / "laddu_dask"), *order],
                         capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_importing_the_layers_in_any_order_changes_no_class_and_leaves_no_registry():
    seen = [_probe(order) for order in ORDERS]
    for order, probe in zip(ORDERS, seen, strict=True):
        assert probe["registries"] == [], order
        assert probe["classes"] == seen[0]["classes"], order
        # only importing the facade loads it: the layers below never do
        assert bool(probe["loaded"]) == ("laddu_dask.facade" in order), (order, probe["loaded"])
    # and the layers' classes are the ones this process, with all of laddu_dask imported, has
    from laddu_dask.expr import topology
    from laddu_dask.likelihood import terms

    here = (LayerLikelihood, terms.NLL, terms.ExtendedNLL, terms._Term, LayerModel, topology.Channel)
    # (less __slotnames__, the cache copyreg leaves on a class once one of its objects is pickled
    # or copied, as earlier tests in this process may have done)
    mine = {c.__module__ + "." + c.__qualname__: sorted(set(vars(c)) - {"__slotnames__"}) for c in here}
    assert seen[0]["classes"] == mine
    for name, methods in ADDED.items():
        layer = next(members for key, members in seen[0]["classes"].items() if key.endswith("." + name))
        assert not set(methods) & set(layer), name  # the layer's class does not have them


@pytest.mark.parametrize("name", sorted(ADDED))
def test_the_public_classes_carry_the_methods_of_the_layers_above(name):
    public = getattr(ld, name)
    assert public.__module__.startswith("laddu_dask.facade.")
    for method in ADDED[name]:
        assert callable(vars(public).get(method)), f"ld.{name}.{method}"
    layer = public.__mro__[1]
    assert layer.__name__ == name and not any(hasattr(layer, m) for m in ADDED[name])


def test_the_public_names_stay_laddus():
    """Every method the facade adds is laddu 0.28.1's name for it, but for laddu-dask's two
    extras (``project``, ``fit_fractions``, which laddu does not have)."""
    laddu = pytest.importorskip("laddu")
    extras = {"project", "fit_fractions"}
    for name, methods in ADDED.items():
        assert hasattr(laddu, name)
        missing = [m for m in methods if not hasattr(getattr(laddu, name), m)]
        assert set(missing) <= extras, (name, missing)
    for name in ("NLL", "ExtendedNLL", "Likelihood", "Model", "Channel", "fit_bins", "binned_likelihoods"):
        assert getattr(ld, name) is getattr(ld.facade, name)


def test_no_layer_assigns_to_a_class_of_another_package():
    """The old hooks were ``register_method(...)``, ``install_evaluator(...)`` and
    ``Channel.validate_generation = ...``: a module-level assignment (or ``setattr``) to an
    attribute of a class that another package of laddu_dask defines."""
    found = []
    for path in sorted((ROOT / "laddu_dask").rglob("*.py")):
        module = path.relative_to(ROOT).with_suffix("").parts
        tree = ast.parse(path.read_text())
        foreign = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                   and (node.module or "").split(".")[:2] != list(module[:2])
                   and (node.module or "").startswith("laddu_dask") for alias in node.names}
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.value.args[0]] if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                       and getattr(node.value.func, "id", "") == "setattr" else [])
            for target in targets:
                base = target.value if isinstance(target, ast.Attribute) else target
                if isinstance(base, ast.Name) and base.id in foreign and base is not target or (
                        isinstance(target, ast.Name) and target.id in foreign and isinstance(node, ast.Expr)):
                    found.append(f"{'/'.join(module)}.py:{node.lineno}")
        text = path.read_text()
        found += [f"{'/'.join(module)}.py: {hook}" for hook in ("register_method(", "install_evaluator(")
                  if hook in text]
    assert found == []


@pytest.fixture(scope="module")
def toy():
    x, m = ld.scalar("x"), ld.scalar("m")
    a = ld.parameter("a", initial=(0.5, 5.0), bounds=(0.0, 10.0))
    model = ld.Model((a * x * x).tagged("S") + ld.constant(1.0).tagged("B"))
    rng = np.random.default_rng(5)
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 400) ** 0.5, "m": rng.uniform(0, 1, 400)})
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 2000), "m": rng.uniform(0, 1, 2000)})
    return model, data, mc, m


def _carries(lik: object) -> None:
    assert type(lik) is ld.Likelihood
    for method in ADDED["Likelihood"]:
        assert callable(getattr(lik, method)), method


def test_sums_and_a_terms_own_likelihood_are_public(toy):
    model, data, mc, _ = toy
    one = ld.NLL(model.expr, data=data, accepted_mc=mc)  # an expression: the term builds the model
    two = ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="ext")
    assert type(one.model) is ld.Model
    for lik in (one + two, sum([one, two]), one._cost_likelihood(), ld.Likelihood([one]) + two,
                two + ld.Likelihood([one]), LayerLikelihood([LayerNLL(model, data=data, accepted_mc=mc,
                                                                      name="layer")]) + two):
        _carries(lik)
    layer = LayerNLL(model, data=data, accepted_mc=mc)
    other = LayerNLL(model, data=data, accepted_mc=mc, name="other")
    assert type(layer + other) is LayerLikelihood  # the layer's own stay its own
    assert type(one.with_data(data)) is ld.NLL


def test_each_bin_and_each_replica_is_public(toy):
    model, data, mc, m = toy
    fits = ld.fit_bins(model, data=data, accepted_mc=mc, by=m, bins=[0.0, 0.5, 1.0], seed=1)
    for fit in fits:
        _carries(fit.likelihood)
        assert type(fit.likelihood.terms[0]) is ld.NLL
    first, values = fits[0].likelihood, fits[0].ensemble.best.values
    assert first.project(values).tobytes() == results.project(first, values).tobytes()
    built = ld.binned_likelihoods(model, data=data, accepted_mc=mc, by=m, bins=[0.0, 1.0], extended=True)
    _carries(built[0][1])
    assert type(built[0][1].terms[0]) is ld.ExtendedNLL
    # the analysis layer's own functions build its own classes
    layer = analysis.binned_likelihoods(model, data=data, accepted_mc=mc, by=m, bins=[0.0, 1.0])
    assert type(layer[0][1]) is LayerLikelihood
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    for replica in replica_likelihoods(lik, [1, 2]):
        _carries(replica)
    # a fit task's likelihood, built again on a worker, keeps the classes it was given
    both = lik + ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="ext")
    rebuilt = FitRecipe.of(both).likelihood()
    _carries(rebuilt)
    assert [type(t) for t in rebuilt.terms] == [ld.NLL, ld.ExtendedNLL]
    assert rebuilt.value([2.0]) == both.value([2.0])
    layer = FitRecipe.of(LayerLikelihood([LayerNLL(model, data=data, accepted_mc=mc)])).likelihood()
    assert type(layer) is LayerLikelihood and type(layer.terms[0]) is LayerNLL


def test_models_and_channels_made_below_are_public(toy):
    model = toy[0]
    for made in (model.projection(["S"]), model.with_parameters({}), ld.Model.from_json(model.to_json())):
        assert type(made) is ld.Model
    assert type(LayerModel(model.expr).projection(["S"])) is LayerModel
    both = model.projection(["S", "B"]).evaluate(toy[1], parameters=[2.0])
    assert both.tobytes() == model.evaluate(toy[1], parameters=[2.0]).tobytes()
    channel = ld.Channel("c", edges=[ld.Edge("X")], vertices=[])
    assert type(ld.Channel.from_json(channel.to_json())) is ld.Channel
    assert ld.Channel.from_json(channel.to_json()).to_json() == channel.to_json()


def test_public_objects_pickle_and_are_iminuit_costs(toy):
    from iminuit import Minuit

    model, data, mc, _ = toy
    nll = ld.NLL(model, data=data, accepted_mc=mc)
    lik = nll + ld.ExtendedNLL(model, data=data, accepted_mc=mc, name="ext")
    for obj in (nll, lik, model):
        back = cloudpickle.loads(cloudpickle.dumps(obj))
        assert type(back) is type(obj)
    back = cloudpickle.loads(cloudpickle.dumps(lik))
    assert back.value_and_gradient([2.0])[1].tobytes() == lik.value_and_gradient([2.0])[1].tobytes()
    assert back.value([2.0]) == lik.value([2.0])
    _carries(back)
    model_back = cloudpickle.loads(cloudpickle.dumps(model))
    assert model_back.evaluate(data).tobytes() == model.evaluate(data).tobytes()
    m = Minuit(nll, a=1.0)
    assert m.migrad().valid
    assert m.values["a"] == Minuit(LayerNLL(model, data=data, accepted_mc=mc), a=1.0).migrad().values["a"]


def test_each_public_method_is_its_layers_function_bitwise(toy):
    model, data, mc, _ = toy
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    p = [2.5]
    assert lik.project(p).tobytes() == results.project(lik, p).tobytes()
    assert repr(lik.fit_fractions("nll", p, waves=["S", "B"])) == \
        repr(results.fit_fractions(lik, "nll", p, waves=["S", "B"]))
    assert repr(lik.intensity_integrals("nll")) == repr(results.intensity_integrals(lik, "nll"))
    assert [f.values for f in lik.fit_restarts(2, p, seed=4)] == \
        [f.values for f in analysis.fit_restarts(lik, 2, p, seed=4)]
    walkers = analysis.walker_positions(lik, p, 4, seed=1)
    assert lik.walker_positions(p, 4, seed=1).tobytes() == walkers.tobytes()
    assert model.evaluate(data, parameters=p).tobytes() == \
        evaluate_model(model, data, p, None, False, False).tobytes()
