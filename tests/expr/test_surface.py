"""The expression surface of laddu 0.28.1 (issue 11, item 1), against laddu itself.

Every case is written once against laddu's API (``lib`` is ``laddu`` or ``laddu_dask``),
built with both libraries and evaluated on the same random events (time-like and
space-like four-vectors, scalars of both signs): the per-event values agree to a relative
1e-12.  The new operations' derivatives are checked against central finite differences on
the array code and the fused kernels by ``tests/expr/test_opspec.py``, which enumerates every
operation of the spec (``acos`` and ``cis`` included).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from laddu_reference import agreement, compiled_values, laddu, laddu_values, needs_laddu

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.errors import ModelError, ParameterError

N = 200
RNG = np.random.default_rng(11)


def _p4(mass2: np.ndarray) -> np.ndarray:
    p = RNG.normal(0.0, 1.0, (N, 3))
    return np.column_stack([np.sqrt(np.abs(mass2 + (p**2).sum(axis=1))), p])


#: Two time-like four-vectors (masses 0.14 and 0.5) and one that is space-like for about a
#: third of the events; scalars of both signs, and one spread over [-1.5, 1.5] for acos.
P4S = {"a": _p4(np.full(N, 0.14**2)), "b": _p4(np.full(N, 0.25)), "s": _p4(RNG.uniform(-1.0, 2.0, N))}
SCALARS = {"x": RNG.uniform(-3.0, 3.0, N), "c": RNG.uniform(-1.5, 1.5, N), "w": RNG.uniform(0.2, 2.0, N)}
COLUMNS = {**{f"{k}_{c}": v[:, i] for k, v in P4S.items() for i, c in enumerate(("e", "px", "py", "pz"))},
           **SCALARS}


def ours(expr, params=()) -> np.ndarray:
    return compiled_values(expr, COLUMNS, params, n=N)


def theirs(expr, params=None) -> np.ndarray:
    return laddu_values(expr, P4S, SCALARS, params)


#: name -> f(lib): one expression, in laddu's spelling.
CASES = {
    "Vec4.e": lambda lib: lib.Vec4.event("a").e(),
    "Vec4.px": lambda lib: lib.Vec4.event("a").px(),
    "Vec4.py": lambda lib: lib.Vec4.event("b").py(),
    "Vec4.pz": lambda lib: lib.Vec4.event("b").pz(),
    "Vec4.mass": lambda lib: (lib.Vec4.event("a") + lib.Vec4.event("b")).mass(),
    "Vec4.m space-like": lambda lib: lib.Vec4.event("s").m(),
    "Vec4.mag": lambda lib: lib.Vec4.event("s").mag(),
    "Vec4.m2": lambda lib: lib.Vec4.event("s").m2(),
    "Vec4.mag2": lambda lib: (lib.Vec4.event("a") - lib.Vec4.event("b")).mag2(),
    "Vec4.gamma": lambda lib: (lib.Vec4.event("a") + lib.Vec4.event("b")).gamma(),
    "Vec4.gamma space-like": lambda lib: lib.Vec4.event("s").gamma(),
    "Vec4.momentum": lambda lib: lib.Vec4.event("a").momentum().mag(),
    "Vec4.vec3": lambda lib: lib.Vec4.event("b").vec3().costheta(),
    "Vec4.beta": lambda lib: (lib.Vec4.event("a") + lib.Vec4.event("b")).beta().pz(),
    "Vec4.dot": lambda lib: lib.Vec4.event("a").dot(lib.Vec4.event("b")),
    "Vec4 @": lambda lib: lib.Vec4.event("a") @ lib.Vec4.event("s"),
    "Vec4.boost": lambda lib: lib.Vec4.event("a").boost(
        -(lib.Vec4.event("a") + lib.Vec4.event("b")).beta()).e(),
    "Vec3.event": lambda lib: lib.Vec3.event("a").px() + lib.Vec3.event("b").mag(),
    "Vec3.x_axis": lambda lib: lib.Vec3.event("a").dot(lib.Vec3.x_axis()),
    "Vec3.y_axis": lambda lib: lib.Vec3.event("a") @ lib.Vec3.y_axis(),
    "Vec3.z_axis": lambda lib: lib.Vec3.event("b").cross(lib.Vec3.z_axis()).px(),
    "Vec3.x/y/z": lambda lib: (lib.Vec3.x() * 2.0 + lib.Vec3.y() - lib.Vec3.z() / 4.0).dot(
        lib.Vec3.event("s")),
    "Vec3.zero": lambda lib: (lib.Vec3.event("a") + lib.Vec3.zero()).py(),
    "Vec3.mag": lambda lib: lib.Vec3.event("s").mag(),
    "Vec3.phi": lambda lib: lib.Vec3.event("s").unit().phi(),
    "Vec3.with_mass": lambda lib: lib.Vec3.event("a").with_mass(lib.scalar("x")).e(),
    "Vec3.with_mass m2": lambda lib: lib.Vec3.event("b").with_mass(0.5).m2(),
    "Vec3.with_energy": lambda lib: lib.Vec3.event("a").with_energy(lib.scalar("x")).m2(),
    "Vec3.with_energy mass": lambda lib: lib.Vec3.event("a").with_energy(lib.scalar("w")).mass(),
    "Vec3 @": lambda lib: lib.Vec3.event("a") @ lib.Vec3.event("b"),
    "acos": lambda lib: lib.acos(lib.scalar("c")),
    "Expr.acos": lambda lib: (lib.scalar("c") * 0.5).acos() * lib.scalar("x"),
    "cis": lambda lib: lib.cis(lib.scalar("x")),
    "cis of a product": lambda lib: lib.cis(lib.scalar("x") * lib.scalar("c")) * lib.scalar("w"),
    "Expr(real)": lambda lib: lib.Expr(2.5) * lib.scalar("x"),
    "Expr(complex)": lambda lib: lib.Expr(1.5 - 0.5j) * lib.scalar("x"),
    "Expr(Expr)": lambda lib: lib.Expr(lib.scalar("x")) + 1.0,
    "scalar": lambda lib: lib.scalar("w"),
    "sqrt of negative reals": lambda lib: lib.scalar("x").sqrt(),
    "log of negative reals": lambda lib: lib.scalar("x").log(),
    "sqrt of a square sum": lambda lib: (lib.scalar("x") * lib.scalar("x") + 1.0).sqrt(),
    "log of m2": lambda lib: lib.Vec4.event("s").m2().log(),
}


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_laddu(name):
    build = CASES[name]
    got, want = ours(build(ld)), theirs(build(laddu))
    assert agreement(got, want) < 1e-12, (name, agreement(got, want))


@needs_laddu
def test_space_like_mass_is_imaginary_as_in_laddu():
    space = P4S["s"][:, 0] ** 2 - (P4S["s"][:, 1:] ** 2).sum(axis=1) < 0
    assert 20 < space.sum() < N - 20  # both kinds of events are in the sample
    m = ours(ld.Vec4.event("s").m())
    np.testing.assert_array_equal(m.real[space], 0.0)
    assert np.all(m.imag[space] > 0)
    assert ld.Vec4(1.0, 2.0, 0.0, 0.0).m().attr == 1j * math.sqrt(3.0)


@needs_laddu
def test_parameters_and_cparameters_match_laddu():
    def build(lib):
        p = lib.parameter("sf_p", initial=0.3, bounds=(-1.0, 1.0), periodic=True, scale=0.1, unit="rad",
                          latex=r"\phi", description="a phase")
        c = lib.cparameter("sf_c", initial=1.0 + 2.0j)
        g = lib.cparameter("sf_g", initial=(1.5, 0.2), coordinates="polar", bounds=((0.0, None), (-4.0, 4.0)))
        return (c * lib.cis(p * lib.scalar("x")) + g * lib.scalar("w")).norm_sqr()

    values = [0.4, 0.7, -1.1, 1.3, 2.5]
    mine, ref = ld.Model(build(ld)), laddu.Model(build(laddu))
    assert mine.parameter_names == list(ref.parameter_names)
    assert sorted(mine.parameter_names) == ["sf_c imag", "sf_c real", "sf_g magnitude", "sf_g phase", "sf_p"]
    assert agreement(ours(build(ld), values), theirs(build(laddu), values)) < 1e-12
    starts = {"sf_p": 0.3, "sf_c real": 1.0, "sf_c imag": 2.0, "sf_g magnitude": 1.5, "sf_g phase": 0.2}
    assert mine.default_parameters == [starts[n] for n in mine.parameter_names]
    for name, spec in ref.parameter_specs.items():
        have = mine.parameters[name]
        for key in ("periodic", "scale", "unit", "latex", "description", "fixed"):
            assert getattr(have, key) == getattr(spec, key), (name, key)
        assert have.bounds == (spec.bounds or (None, None)), name


@needs_laddu
def test_fixed_and_polar_cparameters_match_laddu():
    def build(lib):
        a = lib.cparameter("fx_a", fixed=(1.0, None), suffixes=("_re", "_im"), scale=0.5, unit="GeV")
        b = lib.cparameter("fx_b", fixed=-1.0 + 0j, coordinates="polar")
        return a * lib.scalar("x") + b

    mine, ref = ld.Model(build(ld)), laddu.Model(build(laddu))
    assert mine.parameter_names == list(ref.parameter_names) == ["fx_a_im"]
    assert mine.fixed_parameters == {"fx_a_re": 1.0, "fx_b magnitude": 1.0, "fx_b phase": math.pi}
    assert mine.parameters["fx_a_im"].scale == 0.5 and mine.parameters["fx_a_re"].unit == "GeV"
    assert agreement(ours(build(ld), [0.7]), theirs(build(laddu), [0.7])) < 1e-12


def test_real_sqrt_and_log_stay_real_where_non_negative():
    x, y = ld.scalar("x"), ld.scalar("y")
    for e in ((x * x + y * y).sqrt(), ld.Vec3.event("a").mag(), (x.abs() + 2.0).log(), (x**4).sqrt(),
              (x.exp() * (y * y)).sqrt(), ld.complex(x, y).norm_sqr().sqrt()):
        assert e.kind == "real" and e.op in ("sqrt", "log"), e
    for e in (x.sqrt(), (x * y).sqrt(), (x - 1.0).log(), (x**3).sqrt(), ld.Vec4.event("a").m()):
        assert e.kind == "complex" and e.args[0].op == "to_complex", e


def test_components_are_methods_and_axes_are_static():
    p = ld.Vec4(5.0, 1.0, 2.0, 3.0)
    assert [c.attr for c in (p.e(), p.px(), p.py(), p.pz())] == [5.0, 1.0, 2.0, 3.0]
    assert p.momentum().pz().attr == 3.0 and p.vec3().px().attr == 1.0
    assert [c.attr for c in ld.Vec3.x_axis()] == [1.0, 0.0, 0.0]
    assert [c.attr for c in ld.Vec3.z()] == [0.0, 0.0, 1.0]
    assert (p @ p).attr == 25.0 - 14.0 and (p.momentum() @ ld.Vec3.y_axis()).attr == 2.0
    assert ld.Expr(2.0) is ld.constant(2.0) and ld.Expr(1j).kind == "complex"
    x = ld.scalar("x")
    assert ld.Expr(x) is x
    assert ld.acos(-1.0).attr == math.pi and ld.acos(1.5).attr == 0.0 and ld.acos(-2.0).attr == math.pi
    assert ld.cis(0.5).attr == complex(math.cos(0.5), math.sin(0.5))
    assert ld.cis(ld.complex(x, 0.5)).kind == "complex"  # exp(i z) of a complex phase


def test_acos_clips_and_keeps_nan():
    c = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, np.nan])
    cm = CompiledModel.from_expr(ld.acos(ld.scalar("c")))
    got = cm.values(cm.event_cache({"c": c}), [], n=len(c))
    np.testing.assert_array_equal(got[:-1], np.arccos(np.clip(c[:-1], -1.0, 1.0)))
    assert np.isnan(got[-1])


def test_bad_keywords_are_typed_errors():
    with pytest.raises(ParameterError,
                       match="'bk_c'.*coordinates must be 'cartesian' or 'polar', got 'spherical'"):
        ld.cparameter("bk_c", coordinates="spherical")
    with pytest.raises(ParameterError, match="'bk_p'.*periodic parameter needs finite bounds"):
        ld.parameter("bk_p", periodic=True, bounds=(0.0, None))
    with pytest.raises(ParameterError, match="'bk_q'.*scale must be positive and finite, got -1.0"):
        ld.parameter("bk_q", scale=-1.0)
    with pytest.raises(ParameterError, match="'bk_q'.*scale must be positive and finite, got 0.0"):
        ld.parameter("bk_q", scale=0.0)
    with pytest.raises(ParameterError, match="'bk_u'.*unit must be a string, got 3"):
        ld.parameter("bk_u", unit=3)
    with pytest.raises(ParameterError, match="'bk_c'.*suffixes must be two different strings"):
        ld.cparameter("bk_c", suffixes=("a",))
    with pytest.raises(ParameterError, match="'bk_c'.*initial must be a complex number or a pair"):
        ld.cparameter("bk_c", initial="a")
    with pytest.raises(ParameterError, match="'bk_c'.*bounds must be one value for both components"):
        ld.cparameter("bk_c", bounds=((0.0, 1.0),))
    with pytest.raises(ParameterError, match="'bk_c real'.*periodic parameter needs finite bounds"):
        ld.cparameter("bk_c", periodic=True)
    with pytest.raises(ModelError, match="cannot turn str 'a' into an expression"):
        ld.Expr("a")
    with pytest.raises(ModelError, match="expected a Vec4, got Vec3"):
        ld.Vec4.event("a") + ld.Vec3.event("b")
    with pytest.raises(ModelError, match="acos needs real arguments"):
        ld.acos(ld.complex(ld.scalar("x"), 1.0))
    with pytest.raises(ModelError, match="energy must be real"):
        ld.Vec3.event("a").with_energy(ld.cis(ld.scalar("x")))
