"""Tags and sub-models: ``Expr.tagged``/``Expr.project``, ``Model.projection``,
``Model.with_parameters(ParameterUpdate)``, ``Model.parameter_specs`` and the per-event
``Model.evaluate``/``Model.value_and_gradient``.

References: laddu 0.28.1 on the same events and parameters (the model is written once, in
laddu's spelling, and built with both libraries); the same expression written by hand
with the deactivated terms replaced by zero (bitwise); the untagged model (bitwise); and
the interference term computed with NumPy from the per-event amplitudes.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_reference import needs_gpu
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.compile.selection import predicate_mask
from laddu_dask.errors import ModelError, ParameterError

N = 300
RNG = np.random.default_rng(1105)
SCALARS = {"s": RNG.uniform(0.8, 4.0, N), "c": RNG.uniform(-1.0, 1.0, N), "phi": RNG.uniform(-3.1, 3.1, N)}
#: Parameter values away from the defaults (in the free-parameter order of both libraries).
POINT = {"S real": 0.9, "S imag": 0.4, "m0": 1.45, "w0": 0.18, "D real": -0.35, "D imag": 0.25,
         "m2": 1.32, "w2": 0.09, "bkg": 0.6}


def waves(lib, tagged: bool = True):
    """A coherent S + D pair, an incoherent background and an untagged flat term."""
    def tag(e, name):
        return e.tagged(name) if tagged else e

    s, c, phi = lib.scalar("s"), lib.scalar("c"), lib.scalar("phi")
    bw0 = lib.breit_wigner(s, mass=lib.parameter("m0", initial=1.5, bounds=(1.0, 2.0)),
                           width=lib.parameter("w0", initial=0.2))
    bw2 = lib.breit_wigner(s, mass=lib.parameter("m2", initial=1.3), width=lib.parameter("w2", initial=0.1))
    S = tag(lib.cparameter("S", initial=1.0 + 0.5j) * bw0, "S")
    D = tag(lib.cparameter("D", initial=0.3 - 0.2j) * bw2 * (1.5 * c * c - 0.5) * lib.cis(phi), "D")
    B = tag(lib.parameter("bkg", initial=0.4) * c, "B")
    return S, D, B


def intensity(lib, tagged: bool = True):
    S, D, B = waves(lib, tagged)
    return (S + D).norm_sqr() + B.norm_sqr() + 0.1


#: laddu's datasets need a four-vector; the models do not read it.
P4S = {"beam": np.column_stack([np.full(N, 8.0), np.zeros(N), np.zeros(N), np.full(N, 8.0)])}


def laddu_events():
    return laddu.Dataset.from_arrays(p4s=P4S, scalars=SCALARS)


def our_events(chunk_size: int | None = None):
    return ld.Dataset.from_arrays(scalars=SCALARS, chunk_size=chunk_size)


def rel(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-300), initial=0.0))


def grad_rel(got, want) -> float:
    """The largest difference relative to the largest derivative of its parameter."""
    got, want = np.asarray(got), np.asarray(want)
    scale = np.maximum(np.max(np.abs(want), axis=0), 1e-300)
    return float(np.max(np.abs(got - want) / scale, initial=0.0))


SELECTIONS = [["S"], ["D"], ["B"], ["S", "D"], ["S", "B"], [], ["unknown"]]


# -- against laddu ----------------------------------------------------------------------------
@needs_laddu
@pytest.mark.parametrize("tags", [None, *SELECTIONS],
                         ids=lambda t: "full" if t is None else "+".join(t) or "none")
def test_projections_match_laddu_per_event(tags):
    ours, theirs = ld.Model(intensity(ld)), laddu.Model(intensity(laddu))
    if tags is not None:
        ours, theirs = ours.projection(tags), theirs.projection(tags)
    assert ours.parameter_names == theirs.parameter_names
    assert list(ours.parameter_specs) == list(theirs.parameter_specs)
    params = [POINT[n] for n in ours.parameter_names]
    want = theirs.evaluate(laddu_events(), parameters=params)
    got = ours.evaluate(our_events(), parameters=params)
    assert got.dtype == np.complex128 and got.shape == (N,)
    assert rel(got, want) < 1e-12
    value, grad = ours.value_and_gradient(our_events(chunk_size=70), parameters=params)
    want_value, want_grad = theirs.value_and_gradient(laddu_events(), parameters=params)
    assert grad.shape == want_grad.shape == (N, len(params))
    assert rel(value, want_value) < 1e-12
    assert grad_rel(grad, want_grad) < 1e-10
    real_value, real_grad = ours.value_and_gradient(our_events(), parameters=params, real=True)
    assert real_value.dtype == real_grad.dtype == np.float64
    np.testing.assert_array_equal(real_value, value.real)
    np.testing.assert_array_equal(real_grad, grad.real)


@needs_laddu
def test_expr_project_matches_laddu_and_keeps_selected_nodes_whole():
    def cases(lib):
        a, b, c = (lib.parameter(n, initial=v) for n, v in (("a", 2.0), ("b", 3.0), ("c", 5.0)))
        A, B = a.tagged("A"), b.tagged("B")
        return [
            (A + B).project(["A"]),
            (A * c + B).project(["B"]),
            (A + a).project(["B"]),  # the tag is on a node of its own: the untagged ``a`` stays
            (A + B).tagged("T").project(["T"]),  # a kept node is kept whole, inner tags too
            (A + B).tagged("T").project(["A"]),  # a dropped node drops what is inside it
            (a.tagged("A").tagged("X") + B).project(["A"]),  # kept by any of its tags
            (A.exp() + c).project(["B"]),
            (A - B).norm_sqr().project(["B"]),
        ]

    got = [ld.Model(e).evaluate() for e in cases(ld)]
    want = [laddu.Model(e).evaluate() for e in cases(laddu)]
    assert got == pytest.approx(want, rel=1e-15, abs=0.0)
    assert got == [2.0, 3.0, 2.0, 5.0, 0.0, 2.0, 6.0, 9.0]


@needs_laddu
def test_evaluate_without_a_dataset_matches_laddu():
    def build(lib):
        z = lib.complex(lib.parameter("x", initial=1.0), lib.parameter("y", fixed=3.0))
        return lib.Model((z * z + 1.0).tagged("Z") + lib.parameter("k", initial=0.5))

    ours, theirs = build(ld), build(laddu)
    for params in (None, [2.0, -1.5], {"k": 4.0}):
        assert ours.evaluate(parameters=params) == theirs.evaluate(parameters=params)
        value, grad = ours.value_and_gradient(parameters=params)
        want_value, want_grad = theirs.value_and_gradient(parameters=params)
        assert value == want_value and grad.tolist() == want_grad.tolist()
    assert isinstance(ours.evaluate(real=True), float)
    assert ours.projection(["Z"]).evaluate(parameters=[2.0, 0.5]) == theirs.projection(["Z"]).evaluate(
        parameters=[2.0, 0.5]) == (2.0 + 3.0j) ** 2 + 1.0 + 0.5
    assert ours.projection([]).evaluate(parameters=[0.5]) == theirs.projection([]).evaluate(
        parameters=[0.5]) == 0.5


# -- exactness: tags are metadata, a projection is the model with terms zeroed -----------------
def test_tags_do_not_change_a_bit_of_the_full_model():
    tagged, plain = ld.Model(intensity(ld)), ld.Model(intensity(ld, tagged=False))
    assert tagged.expr is plain.expr  # the compiled graph is the untagged one
    assert tagged.tags == ["B", "D", "S"] and plain.tags == []
    params = [POINT[n] for n in plain.parameter_names]
    for kernel in ("auto", "numpy"):
        ex = ld.Execution(kernel=kernel)
        np.testing.assert_array_equal(tagged.evaluate(our_events(), parameters=params, execution=ex),
                                      plain.evaluate(our_events(), parameters=params, execution=ex))
    data = ld.Dataset.from_arrays(scalars={k: v[:100] for k, v in SCALARS.items()})
    nll = [ld.Likelihood([ld.NLL(m, data=data, accepted_mc=our_events())]).value_and_gradient(params)
           for m in (tagged, plain)]
    assert nll[0][0] == nll[1][0]
    np.testing.assert_array_equal(nll[0][1], nll[1][1])


def test_projection_is_the_model_with_the_deactivated_terms_zeroed():
    S, D, B = waves(ld, tagged=False)
    zero_c, zero_r = ld.constant(0j), ld.constant(0.0)
    by_hand = {
        ("S",): (S + zero_c).norm_sqr() + zero_r.norm_sqr() + 0.1,
        ("D", "B"): (zero_c + D).norm_sqr() + B.norm_sqr() + 0.1,
        (): (zero_c + zero_c).norm_sqr() + zero_r.norm_sqr() + 0.1,
    }
    full = ld.Model(intensity(ld))
    for tags, expr in by_hand.items():
        projected = full.projection(list(tags))
        assert projected.expr is ld.Model(expr).expr
        params = {n: POINT[n] for n in projected.parameter_names}
        np.testing.assert_array_equal(projected.evaluate(our_events(), parameters=params),
                                      ld.Model(expr).evaluate(our_events(), parameters=params))
    assert full.projection([]).parameter_names == []
    np.testing.assert_array_equal(full.projection([]).evaluate(our_events(), real=True), np.full(N, 0.1))


def test_fit_fractions_add_up_without_interference_and_differ_by_it_with():
    model = ld.Model(intensity(ld))
    params = [POINT[n] for n in model.parameter_names]

    def values(tags):
        proj = model.projection(tags)
        return proj.evaluate(our_events(), parameters={n: POINT[n] for n in proj.parameter_names}, real=True)

    total = model.evaluate(our_events(), parameters=params, real=True)
    flat = 0.1
    # S+D and B are incoherent: the two projections (each with the flat term) add up to the total
    np.testing.assert_allclose(values(["S", "D"]) + values(["B"]) - flat, total, rtol=1e-15, atol=0)
    # S and D interfere: |S + D|^2 - |S|^2 - |D|^2 is 2 Re(S conj(D)), from the amplitudes
    S, D, _ = waves(ld, tagged=False)
    amp_s = ld.Model(S).evaluate(our_events(), parameters={n: POINT[n] for n in ld.Model(S).parameter_names})
    amp_d = ld.Model(D).evaluate(our_events(), parameters={n: POINT[n] for n in ld.Model(D).parameter_names})
    interference = values(["S", "D"]) - values(["S"]) - values(["D"]) + flat
    np.testing.assert_allclose(interference, 2.0 * np.real(amp_s * np.conj(amp_d)), rtol=1e-9, atol=1e-12)
    assert np.max(np.abs(interference)) > 0.1  # the test model does interfere


def test_evaluate_is_in_dataset_order_and_independent_of_partitioning():
    model = ld.Model(intensity(ld))
    params = [POINT[n] for n in model.parameter_names]
    one = model.value_and_gradient(our_events(), parameters=params)
    many = model.value_and_gradient(our_events(chunk_size=41), parameters=params)
    np.testing.assert_array_equal(one[0], many[0])
    np.testing.assert_array_equal(one[1], many[1])
    empty = ld.Dataset.from_arrays(scalars={k: v[:0] for k, v in SCALARS.items()})
    value, grad = model.value_and_gradient(empty, parameters=params)
    assert value.shape == (0,) and grad.shape == (0, len(params))


def test_predicates_accept_tagged_expressions():
    x = ld.scalar("c").tagged("X")
    for predicate in (x > 0.0, (x * x).sqrt() >= 0.5, x == 0.25):
        want = predicate_mask(strip_tags_of(predicate), SCALARS)
        np.testing.assert_array_equal(predicate_mask(predicate, SCALARS), want)
    np.testing.assert_array_equal(predicate_mask(x > 0.0, SCALARS), SCALARS["c"] > 0.0)
    assert (x * x).sqrt().kind == "real"  # a tag keeps what is non-negative by construction


def strip_tags_of(predicate):
    left, right = (ld.expr.strip_tags(side) for side in predicate.args)
    return {">": left > right, ">=": left >= right, "==": left == right}[predicate.op]


# -- with_parameters and ParameterUpdate ----------------------------------------------------------
@needs_laddu
def test_with_parameters_fixes_and_frees_as_laddu():
    updates = {"m0": dict(fixed=1.47), "w2": dict(fixed=0.11), "bkg": dict(initial=0.7, bounds=(0.0, 2.0)),
               "S imag": dict(unit="GeV", latex="S_i", description="imaginary part")}
    ours = ld.Model(intensity(ld)).with_parameters({k: ld.ParameterUpdate(**v) for k, v in updates.items()})
    theirs = laddu.Model(intensity(laddu)).with_parameters(
        {k: laddu.ParameterUpdate(**v) for k, v in updates.items()})
    assert ours.parameter_names == theirs.parameter_names
    assert ours.default_parameters == theirs.default_parameters
    assert ours.fixed_parameters == theirs.fixed_parameters == {"m0": 1.47, "w2": 0.11}
    for name, spec in theirs.parameter_specs.items():
        mine = ours.parameter_specs[name]
        assert (mine.fixed, mine.initial, mine.unit, mine.latex, mine.description) == (
            spec.fixed, spec.initial, spec.unit, spec.latex, spec.description)
        assert mine.bounds == (spec.bounds if spec.bounds is not None else (None, None))
    params = [POINT[n] for n in ours.parameter_names]
    assert rel(ours.evaluate(our_events(), parameters=params),
               theirs.evaluate(laddu_events(), parameters=params)) < 1e-12
    # freeing again restores the original layout; the models it came from are unchanged
    freed = ours.with_parameters({"m0": ld.ParameterUpdate(fixed=None), "w2": ld.ParameterUpdate(fixed=None)})
    theirs_freed = theirs.with_parameters({"m0": laddu.ParameterUpdate(fixed=None),
                                           "w2": laddu.ParameterUpdate(fixed=None)})
    assert freed.parameter_names == theirs_freed.parameter_names
    assert freed.default_parameters == theirs_freed.default_parameters
    assert ours.fixed_parameters == {"m0": 1.47, "w2": 0.11}
    # tags survive: the updated model still projects
    assert ours.projection(["B"]).parameter_names == theirs.projection(["B"]).parameter_names == ["bkg"]


def test_with_parameters_renames_every_occurrence():
    model = ld.Model(intensity(ld))
    renamed = model.with_parameters({"m0": ld.ParameterUpdate(name="f0 mass"),
                                     "S real": ld.ParameterUpdate(name="S re", fixed=0.9)})
    assert renamed.parameter_names == [
        "f0 mass" if n == "m0" else n for n in model.parameter_names if n != "S real"]
    assert renamed.parameter_specs["f0 mass"].bounds == (1.0, 2.0)
    assert renamed.fixed_parameters == {"S re": 0.9}
    params = {n: POINT[n] for n in model.parameter_names}
    moved = {("f0 mass" if n == "m0" else n): v for n, v in params.items() if n != "S real"}
    np.testing.assert_array_equal(renamed.evaluate(our_events(), parameters=moved),
                                  model.evaluate(our_events(), parameters=params))
    swapped = model.with_parameters({"m0": ld.ParameterUpdate(name="m2"),
                                     "m2": ld.ParameterUpdate(name="m0")})
    assert set(swapped.parameter_names) == set(model.parameter_names)


U = ld.ParameterUpdate


@pytest.mark.parametrize(("updates", "message"), [
    ({"nope": U(fixed=1.0)}, r"unknown parameter 'nope'; the model's parameters are D imag, D real, S imag"),
    ({"m0": 1.5}, r"the update of 'm0' must be a ParameterUpdate, got float"),
    ({3: U()}, r"a parameter name must be a string, got 3"),
    ({"m0": U(name="w0")}, r"two parameters the name 'w0' \('m0' and 'w0'\)"),
    ({"m0": U(name="x"), "w0": U(name="x")}, r"the name 'x' \('m0' and 'w0'\)"),
    ({"m0": U(fixed=2.5)}, r"parameter 'm0': fixed value 2.5 lies outside its bounds \[1.0, 2.0\]"),
    ({"m0": U(bounds=(1.6, 2.0))}, r"parameter 'm0': initial value 1.5 lies outside its bounds"),
    ({"w0": U(periodic=True)}, r"parameter 'w0': a periodic parameter needs finite bounds"),
])
def test_with_parameters_errors_name_the_parameter(updates, message):
    model = ld.Model(intensity(ld))
    with pytest.raises(ParameterError, match=message):
        model.with_parameters(updates)
    with pytest.raises(ParameterError, match="takes a dict of parameter name -> ParameterUpdate, got list"):
        model.with_parameters([("m0", ld.ParameterUpdate(fixed=1.0))])


@pytest.mark.parametrize(("keywords", "message"), [
    (dict(fixed=float("nan")), "fixed must be finite, got nan"),
    (dict(fixed="1"), "fixed must be a number or None, got '1'"),
    (dict(bounds=(1.0,)), r"bounds must be a pair \(lo, hi\) or None, got \(1.0,\)"),
    (dict(scale=-1.0), "scale must be positive and finite, got -1.0"),
    (dict(periodic=None), "periodic must be True or False, got None"),
    (dict(initial=(0.0, 1.0, 2.0)), r"an initial range must be \(minimum, maximum\), got \(0.0, 1.0, 2.0\)"),
    (dict(unit=3), "unit must be a string or None, got 3"),
    (dict(name=""), "name must be a non-empty string"),
])
def test_parameter_update_checks_its_values(keywords, message):
    with pytest.raises(ParameterError, match=message):
        ld.ParameterUpdate(**keywords)
    with pytest.raises(TypeError, match="unexpected keyword argument 'value'"):
        ld.ParameterUpdate(value=1.0)


def test_bad_tags_and_evaluations_are_typed_errors():
    x = ld.scalar("c")
    with pytest.raises(ModelError, match=r"a tag must be a string, got int 3"):
        x.tagged(3)
    with pytest.raises(ModelError, match=r"project takes a sequence of tags, e.g. \['S'\], got str"):
        x.tagged("S").project("S")
    with pytest.raises(ModelError, match=r"a tag must be a string, got NoneType"):
        ld.Model(x).projection(["S", None])
    with pytest.raises(ModelError, match="Model.evaluate needs a dataset: the model reads the columns c"):
        ld.Model(x).evaluate()
    with pytest.raises(ModelError, match="takes a laddu_dask Dataset, got dict"):
        ld.Model(x).evaluate(SCALARS)
    with pytest.raises(ParameterError, match="unknown parameter 'z'"):
        ld.Model(x * ld.parameter("a")).evaluate(our_events(), parameters={"z": 1.0})
    with pytest.raises(ModelError, match="exact_solver_seconds must be a non-negative number"):
        ld.Model(x).projection([], exact_solver_seconds=-1.0)


def test_evaluate_follows_the_execution_precision():
    model = ld.Model(intensity(ld))
    params = [POINT[n] for n in model.parameter_names]
    f64 = model.evaluate(our_events(), parameters=params)
    value, grad = model.value_and_gradient(our_events(), parameters=params,
                                           execution=ld.Execution(precision="f32"))
    assert value.dtype == grad.dtype == np.complex64
    # within the float32 error bound of tests/tolerances.py, values and derivatives
    from tolerances import condition, f32_bound

    cm = ld.CompiledModel.from_expr(intensity(ld))
    assert cm.parameter_names == model.parameter_names
    _, g64 = model.value_and_gradient(our_events(), parameters=params)
    assert np.all(np.abs(value - f64) <= f32_bound(f64, condition(cm, SCALARS, params), axis=None))
    assert np.all(np.abs(grad - g64) <= f32_bound(g64, condition(cm, SCALARS, params, gradient=True),
                                                  axis=None))


@needs_gpu
def test_evaluate_on_the_gpu_returns_cupy_arrays_with_the_cpu_numbers():
    import cupy

    model = ld.Model(intensity(ld)).projection(["S", "D"])
    params = [POINT[n] for n in model.parameter_names]
    cpu = model.value_and_gradient(our_events(chunk_size=90), parameters=params)
    gpu = model.value_and_gradient(our_events(chunk_size=90), parameters=params,
                                   execution=ld.Execution(device="gpu"))
    assert isinstance(gpu[0], cupy.ndarray) and isinstance(gpu[1], cupy.ndarray)
    assert gpu[0].shape == (N,) and gpu[1].shape == (N, len(params))
    assert rel(gpu[0].get(), cpu[0]) < 1e-12
    assert grad_rel(gpu[1].get(), cpu[1]) < 1e-10
    values = model.evaluate(our_events(), parameters=params, execution=ld.Execution(device="gpu"), real=True)
    assert isinstance(values, cupy.ndarray) and values.dtype == np.float64


def test_a_projection_is_compiled_once_per_selection():
    model = ld.Model(intensity(ld))
    first = model.projection(["S", "D"])
    assert model.projection(["D", "S"]) is first
    assert ld.CompiledModel.from_expr(model.projection(["D", "S"])) is ld.CompiledModel.from_expr(first)
    assert model.projection(["S"]) is not first
