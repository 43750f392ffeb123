"""Expressions, models and vectors as laddu 0.28.1's JSON (issue 24, point 4).

Each expression is written once against laddu's API (``lib`` is ``laddu`` or
``laddu_dask``) and checked three ways against laddu 0.28.1 itself: the text laddu writes,
read by laddu-dask, evaluates to laddu's values on the same events (1e-12); the text
laddu-dask writes, read by laddu, evaluates to laddu-dask's values; and laddu-dask's own
round trip gives the identical (interned) expression.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from laddu_reference import agreement, laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import to_json

N = 64
RNG = np.random.default_rng(24)
SCALARS = {
    "x": np.concatenate([RNG.uniform(-1.5, 1.5, N - 4), [-1.0, 1.0, 0.0, 2.0]]),
    "y": RNG.uniform(0.1, 3.0, N),
    "s": RNG.uniform(-0.5, 4.0, N),
}
_E = RNG.uniform(3.0, 5.0, N)
P4S = {
    "p": np.column_stack([_E, RNG.uniform(-1, 1, N), RNG.uniform(-1, 1, N), RNG.uniform(-1, 1, N)]),
    "k": np.column_stack([np.full(N, 1.2), RNG.uniform(-0.5, 0.5, N), RNG.uniform(-0.5, 0.5, N),
                          RNG.uniform(-0.5, 0.5, N)]),
}
PARAMS = {"a": 0.7, "b": -1.3, "c": 0.4, "d": 0.25, "m0": 1.4, "w0": 0.2, "z real": 0.3,
          "z imag": -0.8, "ph": 0.6}


def _param(lib):
    return lib.parameter("c", initial=0.3, bounds=(0.0, 1.0), scale=2.0, unit="GeV", latex=r"\gamma",
                         description="a coupling")


CASES = {
    "linear norm_sqr": lambda lib: (lib.parameter("a") * lib.scalar("x") + 1.0).norm_sqr(),
    "complex constants": lambda lib: lib.scalar("x") * 2j + (0.5 - 1.5j),
    "fixed and labelled parameters": lambda lib: (lib.parameter("b", fixed=2.0) * _param(lib)
                                                 + lib.parameter("d", initial=(0.1, 0.4), bounds=(0, 1))),
    "periodic parameter": lambda lib: lib.cis(lib.parameter("ph", bounds=(-3.0, 3.0), periodic=True)),
    "cparameter": lambda lib: lib.cparameter("z") * lib.scalar("y"),
    "unary": lambda lib: (lib.scalar("x").sin() * lib.scalar("y").cos() + lib.scalar("x").exp()
                          - (-lib.scalar("y")).conj() + (lib.scalar("x") * 1j).imag() + lib.scalar("y") ** 3),
    "negative power": lambda lib: lib.scalar("y") ** -2 + (lib.scalar("x") * 1j + 1.0) ** -3,
    "real parts": lambda lib: (lib.scalar("x") * (1 + 2j)).real() / lib.scalar("y"),
    "sqrt and log of a sign-changing scalar": lambda lib: lib.scalar("s").sqrt() + lib.scalar("s").log(),
    "sqrt of a square": lambda lib: (lib.scalar("x") * lib.scalar("x") + 1.0).sqrt(),
    "atan2": lambda lib: lib.atan2(lib.scalar("x"), lib.scalar("y")),
    "acos": lambda lib: lib.acos(lib.scalar("x")),
    "complex and polar": lambda lib: (lib.complex(lib.scalar("x"), lib.scalar("y"))
                                      * lib.polar_complex(lib.scalar("y"), lib.scalar("x"))),
    "tags": lambda lib: (lib.scalar("x").tagged("S") + (2.0 * lib.scalar("y")).tagged("D")).norm_sqr(),
    "tag on a shared node": lambda lib: lib.scalar("x").tagged("S") + lib.scalar("x") * 3.0,
    "projection": lambda lib: ((lib.scalar("x").tagged("S") + lib.scalar("y").tagged("D")).norm_sqr()
                               .project(["S"])),
    "four-vector components": lambda lib: (lib.Vec4.event("p").px() - 2.0 * lib.Vec4.event("p").py()
                                           + lib.Vec4.event("k").vec3().phi() * lib.Vec4.event("k").e()),
    "four-vector mass": lambda lib: (lib.Vec4.event("p") + lib.Vec4.event("k")).mass(),
    "boost and angles": lambda lib: (lib.Vec4.event("k").boost(-lib.Vec4.event("p").beta())
                                     .momentum().costheta()),
    "breit_wigner": lambda lib: lib.breit_wigner(lib.scalar("s"), mass=lib.parameter("m0"),
                                                 width=lib.parameter("w0")),
    "relativistic_breit_wigner": lambda lib: lib.relativistic_breit_wigner(
        lib.scalar("y") + 1.0, mass=lib.parameter("m0"), width=lib.parameter("w0"), mass1=0.14, mass2=0.14,
        l=2),
    "Wigner D and Ylm": lambda lib: (
        lib.WignerD(2, lib.M(1), 0).D(alpha=lib.scalar("y"), beta=0.5 * lib.scalar("y"),
                                      gamma=lib.scalar("s"))
        * lib.spherical_harmonic(lib.L(2), -1, costheta=lib.Vec4.event("k").vec3().costheta(),
                                 phi=lib.Vec4.event("k").vec3().phi())),
    "solve": lambda lib: lib.solve(lib.matrix([[lib.scalar("y") + 2.0, 1.0], [0.5, lib.scalar("y")]]),
                                   lib.vector([lib.scalar("x"), 1.0]))[1],
    "matvec, matmul and dot": lambda lib: (
        lib.dot(lib.matvec(lib.matmul(lib.matrix([[1.0, lib.scalar("x")], [2.0, 3.0]]),
                                      lib.matrix([[lib.scalar("y"), 0.5], [1.0, 2.0]])),
                           lib.vector([1.0, lib.scalar("y")])), lib.vector([lib.scalar("x"), 2.0]))
        + lib.matrix([[1.0, lib.scalar("x")], [2.0, 3.0]]).at(0, 1)),
}


def _values(lib, expr):
    data = lib.Dataset.from_arrays(p4s=P4S, scalars=SCALARS)
    model = lib.Model(expr)
    if lib is laddu and not model.parameter_names:  # laddu's Model.evaluate differs on branch cuts
        return np.asarray(data.evaluate(expr), dtype=complex)
    params = {name: PARAMS[name] for name in model.parameter_names}
    return np.asarray(model.evaluate(data, parameters=params), dtype=complex)


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_laddus_text_read_by_laddu_dask(name):
    theirs = CASES[name](laddu)
    ours = ld.Expr.from_json(theirs.to_json())
    assert isinstance(ours, ld.Expr)
    got, want = _values(ld, ours), _values(laddu, theirs)
    assert agreement(got, want) < 1e-12, (name, agreement(got, want))


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_laddu_dasks_text_read_by_laddu(name):
    ours = CASES[name](ld)
    theirs = laddu.Expr.from_json(json=ours.to_json())
    got, want = _values(laddu, theirs), _values(ld, ours)
    assert agreement(got, want) < 1e-12, (name, agreement(got, want))
    assert laddu.Model(theirs).parameter_names == ld.Model(ours).parameter_names


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_is_the_same_expression(name):
    expr = CASES[name](ld)
    assert ld.Expr.from_json(json=expr.to_json()) is expr
    model = ld.Model(expr)
    back = ld.Model.from_json(json=model.to_json(), exact_solver_seconds=1.0)
    assert back.source is expr and back.parameters == model.parameters


@needs_laddu
@pytest.mark.parametrize("name", ["linear norm_sqr", "complex constants", "fixed and labelled parameters",
                                  "cparameter", "tags", "atan2", "real parts"])
def test_text_is_laddus(name):
    """Where laddu-dask's graph is laddu's node for node, the text is laddu's byte for byte."""
    assert CASES[name](ld).to_json() == CASES[name](laddu).to_json()


@needs_laddu
def test_parameter_specifications_survive_both_ways():
    theirs = laddu.Model.from_json(CASES["fixed and labelled parameters"](ld).to_json())
    ours = ld.Model.from_json(CASES["fixed and labelled parameters"](laddu).to_json())
    assert theirs.parameter_names == ours.parameter_names == ["c", "d"]
    spec = ours.parameters["c"]
    assert (spec.initial, spec.bounds, spec.scale, spec.unit, spec.latex, spec.description) == (
        0.3, (0.0, 1.0), 2.0, "GeV", r"\gamma", "a coupling")
    assert ours.parameters["d"].initial_range == (0.1, 0.4)
    assert ours.fixed_parameters == {"b": 2.0}
    periodic = ld.Expr.from_json(CASES["periodic parameter"](laddu).to_json())
    assert ld.Model(periodic).parameters["ph"].periodic


@needs_laddu
@pytest.mark.parametrize("cls", ["Vec3", "Vec4"])
def test_vectors_json_and_as_expr(cls):
    def build(lib):
        p = lib.Vec4(lib.scalar("y") + 3.0, lib.scalar("x"), 0.5, lib.parameter("a"))
        return p if cls == "Vec4" else p.momentum()

    ours, theirs = build(ld), build(laddu)
    assert ours.to_json() == theirs.to_json()
    back = getattr(ld, cls).from_json(json=theirs.to_json())
    assert [c is d for c, d in zip(back, ours)] == [True] * len(list(ours))
    vector = ours.as_expr()
    assert vector.shape == theirs.as_expr().shape
    assert vector[1] is list(ours)[1]
    for i in range(vector.shape[0]):  # laddu reads our vector's text; each entry is laddu's
        got = _values(laddu, laddu.Expr.from_json(vector[i].to_json()))
        assert agreement(got, _values(laddu, theirs.as_expr()[i])) == 0.0
    read = ld.Expr.from_json(theirs.as_expr().to_json())  # a vector-valued root gives a Vector
    assert read.shape == vector.shape and all(r is v for r, v in zip(read, vector))
    assert vector.to_json() == theirs.as_expr().to_json()


def test_own_node_kinds_for_what_laddu_lacks():
    x = ld.scalar("x")
    expr = x.abs() + x.tan() + x ** ld.scalar("y")
    text = expr.to_json()
    kinds = {next(iter(n)) for n in json.loads(text)["nodes"]}
    assert kinds == {"EventScalar", "LadduDaskOp", "Binary"}
    assert ld.Expr.from_json(text) is expr


@needs_laddu
def test_laddu_refuses_our_own_node_kind():
    with pytest.raises(ValueError, match="unknown variant `LadduDaskOp`"):
        laddu.Expr.from_json(ld.scalar("x").abs().to_json())


@pytest.mark.parametrize(("text", "message"), [
    ("{", r"Expr.from_json: not JSON: Expecting property name"),
    ('{"root":0,"nodes":[{"Foo":1}],"metadata":[]}',
     r"Expr.from_json: node 0 has the node kind 'Foo', which neither laddu 0.28.1 nor laddu-dask writes"),
    ('{"root":3,"nodes":[{"RealConst":1.0}],"metadata":[]}',
     r"Expr.from_json: the root node 3 is not one of the 1 nodes"),
    ('{"root":1,"nodes":[{"RealConst":1.0},{"Unary":{"op":"Sin","input":1}}],"metadata":[]}',
     r"Expr.from_json: node 1 refers to node 1, which is not an earlier node"),
    ('{"root":0,"nodes":[{"Unary":{"op":"Tanh","input":0}}],"metadata":[]}',
     r"Expr.from_json: node 0 has the unary operation 'Tanh', which neither library writes"),
    ('{"root":0,"nodes":[{"Binary":{"op":"Pow","lhs":0,"rhs":0}}],"metadata":[]}',
     r"Expr.from_json: node 0 has the binary operation 'Pow', which neither library writes"),
    ('{"root":1,"nodes":[{"RealConst":1.0},{"Binary":{"op":"Add","lhs":0}}],"metadata":[]}',
     r"Expr.from_json: node 1 \(Binary\) is malformed: KeyError 'rhs'"),
    ('{"root":0,"nodes":[{"LadduDaskOp":{"op":"sinh","inputs":[],"attr":null}}],"metadata":[]}',
     r"Expr.from_json: node 0 has the operation 'sinh', which laddu-dask does not know"),
])
def test_bad_text_is_a_model_error_naming_the_node(text, message):
    with pytest.raises(ModelError, match=message):
        ld.Expr.from_json(text)


@needs_laddu
@pytest.mark.parametrize("bounds", [(None, None), (0.0, 1.0), (-2.0, -1.0), (None, 3.0)])
def test_default_initial_values_are_laddus(bounds):
    ours = ld.Model(ld.parameter("a", bounds=bounds) * ld.scalar("x"))
    theirs = laddu.Model.from_json(ours.to_json())
    assert theirs.default_parameters == ours.default_parameters  # ours: middle or bound, else 0
    if bounds != (-2.0, -1.0):  # laddu refuses its own default 0 outside the bounds
        want = laddu.Model(laddu.parameter("a", bounds=bounds) * laddu.scalar("x"))
        assert ld.Model.from_json(want.to_json()).default_parameters == want.default_parameters == [0.0]


@needs_laddu
def test_atan2_of_a_root_that_is_not_acos():
    """laddu's acos is atan2(sqrt(1 - x^2), x); with another argument under the root it is an
    atan2 of a complex value, which laddu cannot evaluate and laddu-dask refuses."""
    x, y = laddu.scalar("x"), laddu.scalar("y")
    text = laddu.atan2((1.0 - y ** 2).sqrt(), x).to_json()
    with pytest.raises(ModelError, match=r"Expr.from_json: node 6 \(Binary\): atan2 needs real arguments"):
        ld.Expr.from_json(text)
    assert ld.Expr.from_json(laddu.atan2((1.0 - x ** 2).sqrt(), x).to_json()) is ld.acos(ld.scalar("x"))


@needs_laddu
def test_nary_nodes_laddu_reads_are_read():
    text = json.dumps({"root": 4, "nodes": [
        {"EventScalar": "x"}, {"EventScalar": "y"}, {"RealConst": 2.5}, {"NaryAdd": {"terms": [0, 1, 2]}},
        {"NaryMul": {"factors": [3, 0, 1]}}],
        "metadata": [{"source": "Event", "name": None, "tags": []}] * 5})
    ours = ld.Expr.from_json(text)
    x, y = ld.scalar("x"), ld.scalar("y")
    assert ours is (x + y + 2.5) * x * y
    assert agreement(_values(ld, ours), _values(laddu, laddu.Expr.from_json(text))) < 1e-15


@needs_laddu
def test_matrix_json_both_ways():
    def build(lib):
        return lib.matrix([[lib.scalar("x"), 1.0], [2.0j, lib.parameter("a")]])

    ours, theirs = build(ld), build(laddu)
    assert ours.to_json() == theirs.to_json()
    read = ld.Expr.from_json(theirs.to_json())
    assert read.shape == (2, 2) and all(read.at(i, j) is ours.at(i, j) for i in range(2) for j in range(2))


def test_bad_vector_and_model_text():
    with pytest.raises(ModelError, match="exact_solver_seconds must be a non-negative number, got -1"):
        ld.Model.from_json(ld.scalar("x").to_json(), exact_solver_seconds=-1)
    keys = r"\['e', 'px', 'py', 'pz'\]"
    with pytest.raises(ModelError, match=rf"Vec4.from_json: expected an object with the keys {keys}"):
        ld.Vec4.from_json(ld.Vec3(1.0, 2.0, 3.0).to_json())
    with pytest.raises(ModelError, match="Model.from_json: a model is a scalar expression, got a Vector"):
        ld.Model.from_json(to_json(ld.Vec3(1.0, ld.scalar("x"), 3.0).as_expr()))


@needs_laddu
def test_k_matrix_intensity_both_ways():
    """laddu's K-matrix text (matrices, solves, barriers) read by laddu-dask and ours by laddu,
    on test_kmatrix's events and point."""
    from test_kmatrix import POINT, intensity, laddu_events, our_events

    def values(lib, expr):
        model = lib.Model(expr)
        data = our_events() if lib is ld else laddu_events()
        return np.asarray(model.evaluate(data, parameters={n: POINT[n] for n in model.parameter_names}))

    ours, theirs = intensity(ld), intensity(laddu)
    want = values(laddu, theirs)
    assert agreement(values(ld, ld.Expr.from_json(theirs.to_json())), want) < 1e-12
    assert agreement(values(laddu, laddu.Expr.from_json(ours.to_json())), want) < 1e-12
    assert ld.Expr.from_json(ours.to_json()) is ours


def _shown(lib):
    x, y, a = lib.scalar("x"), lib.scalar("y"), lib.parameter("a")
    s = x * x + y
    return [(a * x + 1.0).norm_sqr(), s + s.sin(), x.sin() / y, x ** 3, x * 2j, lib.Vec4.event("p").e(), -x,
            lib.atan2(x, y), x - (x - y), x / (x * y), -(x + y), (x + y) ** 2, x * 0.25 + 1e-20,
            x * (1 / 3) - 4e-13 * y, x * 1e300 + (-0.0 * y), x * (2.5 - 1e-9j),
            lib.complex(x, y) * (0.5 - 1.5j), x.tagged("D").tagged("S"),  # our tags are sorted
            lib.parameter("c", latex=r"\gamma") * x, x.exp().log()]


@needs_laddu
@pytest.mark.parametrize("what", ["equation", "latex", "tree", "dot", "tree shared", "dot shared"])
def test_display_is_laddus(what):
    """Where the graphs agree node for node, the equation, LaTeX, tree and DOT text are laddu's."""
    method, _, shared = what.partition(" ")
    options = {"expand_repeated": False} if shared else {}
    for ours, theirs in zip(_shown(ld), _shown(laddu), strict=True):
        assert getattr(ours, method)(**options) == getattr(theirs, method)(**options)
        model = ld.Model(ours)
        assert getattr(model, method)(**options) == getattr(ours, method)(**options)
        assert str(ours) == str(theirs)


def test_svg_names_shape_and_scalar_errors(tmp_path):
    e = (ld.parameter("a") * ld.scalar("x")).named("amp")
    assert e is ld.parameter("a") * ld.scalar("x") and e.shape == ()
    e.svg(tmp_path / "e.svg")
    ld.Model(e).svg(tmp_path / "m.svg", expand_repeated=False)
    for name in ("e.svg", "m.svg"):
        text = (tmp_path / name).read_text()
        assert "<svg" in text and "ScalarParam(a)" in text
    with pytest.raises(ModelError, match=r"at\(0, 1\): a scalar expression has no matrix elements"):
        e.at(0, 1)
    with pytest.raises(ModelError, match=r"\[2\]: a scalar expression has no vector components"):
        e[2]
    with pytest.raises(TypeError, match="got a scalar expression @ Expr"):
        e @ e
    with pytest.raises(ModelError, match="colors must be 'light', 'dark', 'none', or None, got 'pink'"):
        e.tree(colors="pink")
    v = ld.Vec4.event("p").as_expr()
    assert (v @ v) is ld.dot(v, v) and (v @ v).shape == ()


@needs_laddu
def test_node_kinds_are_laddus():
    names = [n for n in dir(laddu.ExprNodeKind) if n.isupper()]
    assert names == [n for n in dir(ld.ExprNodeKind) if n.isupper()]
    for name in names:
        ours, theirs = getattr(ld.ExprNodeKind, name), getattr(laddu.ExprNodeKind, name)
        assert (int(ours), repr(ours)) == (int(theirs), repr(theirs))
    assert ld.ExprNodeKind.BINARY != ld.ExprNodeKind.UNARY and ld.ExprNodeKind.BINARY != 6
    nodes = json.loads(CASES["solve"](laddu).to_json())["nodes"]
    assert {repr(ld.ExprNodeKind.of(n)) for n in nodes} >= {"ExprNodeKind.MATRIX", "ExprNodeKind.SOLVE",
                                                            "ExprNodeKind.COMPONENT"}
    with pytest.raises(ModelError, match="ExprNodeKind.of: .* is not a node of laddu's kinds"):
        ld.ExprNodeKind.of({"Foo": 1})


@needs_laddu
def test_optimization_diagnostics_and_pow_keywords():
    x = ld.scalar("x")
    ours = ld.Model((x * x + 1.0).sin()).optimization_diagnostics
    assert set(ours) == set(laddu.Model(laddu.scalar("x")).optimization_diagnostics)
    assert ours["rounds"] == 0 and ours["explored_nodes"] == 5 and ours["execution_exact"] is False
    assert pow(x, 2) is x ** 2
    with pytest.raises(TypeError, match="pow\\(\\) of an expression takes no modulo"):
        pow(x, 2, 3)
