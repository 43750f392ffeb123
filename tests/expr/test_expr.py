"""Tests of the expression layer (``laddu_dask.expr``) and of ``CompiledModel`` values.

References: closed-form NumPy formulas (laddu's conventions, /tmp/laddu_conventions.md),
``scipy.special.sph_harm_y``, explicit Lorentz-boost matrices, and laddu itself (its
lineshapes, spherical harmonics and parameter order) when laddu is installed.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from laddu_reference import HAVE_LADDU, laddu, needs_laddu  # noqa: F401
from scipy.special import sph_harm_y

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.errors import ModelError, ParameterError
from laddu_dask.expr.graph import walk

Q_R = 0.1973
M_KS = 0.497611


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def evaluate(expr: ld.Expr, columns: dict[str, np.ndarray], params=(), n: int | None = None):
    """Values of ``expr`` on ``columns`` through the compiled kernels."""
    cm = CompiledModel.from_expr(expr)
    if n is None:
        n = len(next(iter(columns.values())))
    cache = cm.event_cache({c: columns[c] for c in cm.columns})
    return cm.values(cache, list(params), n=n)


def barrier_poly(z, l):
    """Squared full Blatt-Weisskopf factor P_l(z) (laddu's table)."""
    return {
        0: 1.0 + 0 * z,
        1: 2 * z / (z + 1),
        2: 13 * z**2 / ((z - 3) ** 2 + 9 * z),
        3: 277 * z**3 / (z**3 + 6 * z**2 + 45 * z + 225),
        4: 12746 * z**4 / (z**4 + 10 * z**3 + 135 * z**2 + 1575 * z + 11025),
    }[l]


def breakup(s, m1, m2):
    s = np.asarray(s) + 0j
    return np.sqrt((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2)) / (2 * np.sqrt(s))


def rbw_reference(s, mass, width, m1, m2, l):
    q, q0 = breakup(s, m1, m2), breakup(mass**2, m1, m2)
    ratio = barrier_poly(q**2 / Q_R**2, l) / barrier_poly(q0**2 / Q_R**2, l)
    gamma = width * (mass / np.sqrt(np.asarray(s) + 0j)) * (q / q0) * ratio
    return 1 / (mass**2 - s - 1j * mass * gamma)


def rel_err(a, b):
    return np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))


def random_p4(rng: np.random.Generator, n: int, mass: float, scale: float = 1.0) -> np.ndarray:
    p = rng.normal(0.0, scale, (n, 3))
    e = np.sqrt(mass**2 + (p**2).sum(axis=1))
    return np.column_stack([e, p])


def p4_columns(name: str, arr: np.ndarray) -> dict[str, np.ndarray]:
    return {f"{name}_{c}": arr[:, i] for i, c in enumerate(("e", "px", "py", "pz"))}


def laddu_eval(expr, scalars: dict[str, np.ndarray], params=None):
    """Evaluate a laddu expression on a scalars-only laddu dataset."""
    ds = laddu.Dataset.from_arrays(p4s={}, scalars=scalars)
    if params is None:
        return ds.evaluate(expr)
    return laddu.Model(expr).evaluate(ds, parameters=list(params))


# ---------------------------------------------------------------------------------------
# hash-consing, folding, identities, pickling
# ---------------------------------------------------------------------------------------
def test_equal_subexpressions_are_the_same_object():
    s, a = ld.scalar("s"), ld.parameter("a", initial=1.0)
    assert (s * 2 + 1) is (s * 2 + 1)
    assert ld.scalar("s") is s
    assert ld.parameter("a", initial=1.0) is a
    k1 = ld.Vec4.event("k1")
    assert ld.Vec4.event("k1").m2() is k1.m2()
    e1 = ld.breit_wigner(s, mass=a, width=0.1) * ld.spherical_harmonic(2, 1, costheta=s, phi=s)
    e2 = ld.breit_wigner(s, mass=a, width=0.1) * ld.spherical_harmonic(2, 1, costheta=s, phi=s)
    assert e1 is e2
    # a shared subexpression appears once in the graph
    x = k1.m2()
    nodes = walk(x.sin() + x.cos())
    assert sum(n is x for n in nodes) == 1
    # different operands give different nodes; operand order matters (no reordering)
    assert (s * a) is not (a * s)
    assert (s + 1.0) is not (s + 2.0)
    assert ld.scalar("t") is not s


def test_constant_folding():
    c = ld.constant(2.0) * 3.0
    assert c.op == "const" and c.attr == 6.0 and c.kind == "real"
    z = ld.complex(1.0, 2.0) * ld.complex(3.0, -1.0)
    assert z.op == "const" and complex(z.attr) == (1 + 2j) * (3 - 1j) and z.kind == "complex"
    assert ld.constant(0.5).sin().attr == math.sin(0.5)
    assert (ld.constant(2.0) ** 10).attr == 1024.0
    assert ld.atan2(-0.0, -1.0).attr == -math.pi
    assert ld.polar_complex(2.0, 0.0).attr == 2 + 0j
    assert complex(ld.breit_wigner(2.0, mass=1.0, width=1.0).attr) == 1 / (1 - 2 - 1j)
    # a subexpression of constants inside a larger one is folded, the rest is kept
    s = ld.scalar("s")
    e = s * (ld.constant(1.5) + 0.5)
    assert e.op == "mul" and e.args[1].op == "const" and e.args[1].attr == 2.0
    # folding of fixed parameters happens at compile time
    b = ld.parameter("b_fixed", fixed=3.0)
    cm = CompiledModel.from_expr(s * (b + 1.0))
    assert not any(n.op == "param" for n in walk(cm.split.root))
    assert any(n.op == "const" and n.attr == 4.0 for n in walk(cm.split.root))


def test_identities_are_removed():
    x = ld.scalar("x")
    z = ld.complex(x, ld.scalar("y"))
    assert (x + 0) is x
    assert (0 + x) is x
    assert (x - 0) is x
    assert (x * 1) is x
    assert (1 * x) is x
    assert (x / 1) is x
    neg = -x
    assert -neg is x
    assert (x * -1) is -x
    assert (0 - x) is -x
    assert +x is x
    assert x ** 1 is x
    assert (x**0).attr == 1.0
    neg_z = -z
    assert (z * 1) is z and (z + 0) is z and -neg_z is z
    assert x.conj() is x and x.real() is x
    assert x.imag().op == "const" and x.imag().attr == 0.0
    assert z.to_complex() is z
    # promotion is not an identity: x + 0j is complex
    assert (x + 0j).kind == "complex"
    assert (x + 0j) is not x


def test_pickle_round_trips_to_the_same_node():
    s, a = ld.scalar("s"), ld.parameter("pk_a", initial=1.5, bounds=(1.0, 2.0))
    k = ld.Vec4.event("k")
    e = (ld.relativistic_breit_wigner(s, mass=a, width=0.1, mass1=0.3, mass2=0.2, l=2)
         * ld.spherical_harmonic(2, -1, costheta=k.vec3().costheta(), phi=k.vec3().phi())
         + (1.5 - 0.5j)).norm_sqr() ** 0.5
    assert pickle.loads(pickle.dumps(e)) is e
    assert pickle.loads(pickle.dumps([e, a, s])) == [e, a, s]
    spec = pickle.loads(pickle.dumps(a)).attr
    assert spec.bounds == (1.0, 2.0) and spec.initial == 1.5


def test_pickle_into_a_fresh_process_rebuilds_an_equal_model(tmp_path):
    """A pickled model (as a Dask worker receives it) compiles to the same values there."""
    import subprocess
    import sys

    k = ld.Vec4.event("k")
    a = ld.parameter("fresh_a", initial=1.2, bounds=(0.5, 2.0))
    b = ld.parameter("fresh_b", fixed=0.3)
    expr = (ld.breit_wigner(k.m2(), mass=a, width=b)
            * ld.spherical_harmonic(2, 1, costheta=k.vec3().costheta(), phi=k.vec3().phi())
            ).norm_sqr()
    rng = np.random.default_rng(8)
    cols = p4_columns("k", random_p4(rng, 20, 1.1, 0.5))
    (tmp_path / "expr.pkl").write_bytes(pickle.dumps((expr, cols)))
    script = (
        "import pickle, sys, numpy as np\n"
        "from laddu_dask.compile.compiled import CompiledModel\n"
        "expr, cols = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "cm = CompiledModel.from_expr(expr)\n"
        "v = cm.values(cm.event_cache({c: cols[c] for c in cm.columns}), [1.3])\n"
        "np.save(sys.argv[2], v)\n"
        "print(cm.parameter_names, cm.model.fixed_parameters)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "expr.pkl"), str(tmp_path / "v.npy")],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "['fresh_a'] {'fresh_b': 0.3}"
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), evaluate(expr, cols, [1.3]))


def test_expression_misuse_errors():
    x = ld.scalar("x")
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)
    with pytest.raises(ModelError, match="boolean"):
        ld.constant(True)
    with pytest.raises(ModelError, match="cannot turn str"):
        x + "a"
    with pytest.raises(ModelError, match="atan2 needs real arguments"):
        ld.atan2(ld.complex(x, 1.0), 1.0)
    with pytest.raises(ModelError, match="complex needs real arguments"):
        ld.complex(x + 1j, 0.0)
    with pytest.raises(ModelError, match="column name must be a non-empty string"):
        ld.scalar("")
    with pytest.raises(ModelError, match="four-vector name"):
        ld.Vec4.event("")
    with pytest.raises(ModelError, match="Vec3.x must be real"):
        ld.Vec3(x + 1j, 0.0, 0.0)
    with pytest.raises(ModelError, match="mass must be real"):
        ld.breit_wigner(x, mass=ld.complex(1.0, x), width=0.1)


# ---------------------------------------------------------------------------------------
# spherical harmonics
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def angles():
    rng = np.random.default_rng(11)
    ct = np.concatenate([rng.uniform(-1.0, 1.0, 300), [1.0, -1.0, 0.0, 1.0, -1.0]])
    ph = np.concatenate([rng.uniform(-math.pi, math.pi, 300), [0.3, -2.0, 0.0, math.pi, -math.pi]])
    return ct, ph


@pytest.mark.parametrize("l", range(7))
def test_spherical_harmonic_matches_scipy(angles, l):
    ct, ph = angles
    x, phi = ld.scalar("ct"), ld.scalar("ph")
    for m in range(-l, l + 1):
        value = evaluate(ld.spherical_harmonic(l, m, costheta=x, phi=phi), {"ct": ct, "ph": ph})
        # scipy's order: (degree, order, polar angle theta, azimuth phi)
        ref = sph_harm_y(l, m, np.arccos(ct), ph)
        assert value.dtype == np.complex128 and value.shape == ct.shape
        np.testing.assert_allclose(value, ref, rtol=0, atol=1e-13, err_msg=f"l={l} m={m}")
        # exactly on the poles only m = 0 survives
        pole = np.abs(ct) == 1.0
        if m != 0:
            assert np.all(value[pole] == 0)


def test_spherical_harmonic_closed_forms(angles):
    ct, ph = angles
    x, phi = ld.scalar("ct"), ld.scalar("ph")
    cols = {"ct": ct, "ph": ph}
    st = np.sqrt(1 - ct**2)
    y00 = evaluate(ld.spherical_harmonic(0, 0, costheta=x, phi=phi), cols)
    np.testing.assert_allclose(y00, 1 / math.sqrt(4 * math.pi), rtol=1e-15)
    y21 = evaluate(ld.spherical_harmonic(2, 1, costheta=x, phi=phi), cols)
    np.testing.assert_allclose(y21, -math.sqrt(15 / (8 * math.pi)) * ct * st * np.exp(1j * ph),
                               atol=1e-14)
    y2m2 = evaluate(ld.spherical_harmonic(2, -2, costheta=x, phi=phi), cols)
    np.testing.assert_allclose(y2m2, math.sqrt(15 / (32 * math.pi)) * st**2 * np.exp(-2j * ph),
                               atol=1e-14)


@needs_laddu
def test_spherical_harmonic_matches_laddu(angles):
    ct, ph = angles
    x, phi = ld.scalar("ct"), ld.scalar("ph")
    lx, lphi = laddu.scalar("ct"), laddu.scalar("ph")
    for l in range(5):
        for m in range(-l, l + 1):
            ours = evaluate(ld.spherical_harmonic(l, m, costheta=x, phi=phi), {"ct": ct, "ph": ph})
            theirs = laddu_eval(laddu.spherical_harmonic(l, m, costheta=lx, phi=lphi),
                                {"ct": ct, "ph": ph})
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-13, err_msg=f"l={l} m={m}")


@pytest.mark.parametrize(
    ("l", "m", "message"),
    [
        (-1, 0, r"l >= 0 and \|m\| <= l, got l = -1, m = 0"),
        (2, 3, r"l >= 0 and \|m\| <= l, got l = 2, m = 3"),
        (1, -2, r"got l = 1, m = -2"),
        (1.5, 0, r"l must be an integer, got 1.5"),
        (2, "a", r"m must be an integer, got 'a'"),
        (True, 0, r"l must be an integer, got True"),
    ],
)
def test_spherical_harmonic_bad_indices(l, m, message):
    with pytest.raises(ModelError, match=message):
        ld.spherical_harmonic(l, m, costheta=ld.scalar("ct"), phi=ld.scalar("ph"))


def test_spherical_harmonic_accepts_integral_floats():
    x, phi = ld.scalar("ct"), ld.scalar("ph")
    assert ld.spherical_harmonic(2.0, -1.0, costheta=x, phi=phi) is ld.spherical_harmonic(
        2, -1, costheta=x, phi=phi
    )


# ---------------------------------------------------------------------------------------
# lineshapes
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s_values():
    rng = np.random.default_rng(5)
    # from deep below threshold to far above, including s exactly at M^2
    return np.concatenate([rng.uniform(0.01, 4.0, 400), [1.3**2, 0.0625, 0.99, 1.0, 4.0]])


def test_breit_wigner_matches_formula(s_values):
    s = s_values
    for mass, width in [(1.3, 0.15), (0.77, 0.149), (1.5, 0.01)]:
        value = evaluate(ld.breit_wigner(ld.scalar("s"), mass=mass, width=width), {"s": s})
        ref = 1 / (mass**2 - s - 1j * mass * width)
        assert rel_err(value, ref) < 1e-14
    # at the pole: exactly i / (M G)
    at = evaluate(ld.breit_wigner(ld.scalar("s"), mass=1.3, width=0.15), {"s": np.array([1.69])})
    np.testing.assert_allclose(at, 1j / (1.3 * 0.15), rtol=1e-12)
    # with free parameters: the same numbers
    m, g = ld.parameter("bw_m", initial=1.3), ld.parameter("bw_g", initial=0.15)
    value = evaluate(ld.breit_wigner(ld.scalar("s"), mass=m, width=g), {"s": s}, [1.3, 0.15])
    assert rel_err(value, 1 / (1.3**2 - s - 1j * 1.3 * 0.15)) < 1e-14


@pytest.mark.parametrize("l", range(5))
@pytest.mark.parametrize("daughters", [(M_KS, M_KS), (0.13957, 0.7), (0.3, 0.2)])
def test_relativistic_breit_wigner_matches_formula(s_values, l, daughters):
    m1, m2 = daughters
    s = s_values
    mass, width = 1.3, 0.15
    expr = ld.relativistic_breit_wigner(ld.scalar("s"), mass=mass, width=width,
                                        mass1=m1, mass2=m2, l=l)
    value = evaluate(expr, {"s": s})
    ref = rbw_reference(s, mass, width, m1, m2, l)
    assert np.all(np.isfinite(value))
    above = s > (m1 + m2) ** 2
    assert above.any() and (~above).any()
    assert rel_err(value[above], ref[above]) < 1e-12
    # below threshold: complex momentum, finite values; barrier poles (negative z) make
    # the absolute scale vary, so compare relative to the size of the lineshape
    np.testing.assert_allclose(value[~above], ref[~above], rtol=1e-9, atol=1e-12)
    # at the pole the value is exactly i / (M Gamma0)
    at = evaluate(expr, {"s": np.array([mass**2])})
    np.testing.assert_allclose(at, 1j / (mass * width), rtol=1e-13)
    # the same with free mass and width parameters
    mp, wp = ld.parameter("rbw_m", initial=mass), ld.parameter("rbw_w", initial=width)
    pexpr = ld.relativistic_breit_wigner(ld.scalar("s"), mass=mp, width=wp, mass1=m1, mass2=m2, l=l)
    pvalue = evaluate(pexpr, {"s": s}, [mass, width])
    np.testing.assert_allclose(pvalue, value, rtol=1e-13, atol=1e-13)


def test_relativistic_breit_wigner_default_l_and_bad_l():
    s = ld.scalar("s")
    a = ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2)
    assert a is ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=0)
    with pytest.raises(ModelError, match=r"l = 0\.\.8, got l = 9"):
        ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=9)
    with pytest.raises(ModelError, match="l must be an integer, got 0.5"):
        ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=0.3, mass2=0.2, l=0.5)
    with pytest.raises(ModelError, match="mass1 must be real"):
        ld.relativistic_breit_wigner(s, mass=1.3, width=0.1, mass1=s + 1j, mass2=0.2)


@needs_laddu
@pytest.mark.parametrize("l", range(5))
def test_lineshapes_match_laddu(s_values, l):
    s = s_values
    ls = laddu.scalar("s")
    for m1, m2 in [(M_KS, M_KS), (0.13957, 0.7)]:
        ours = evaluate(ld.relativistic_breit_wigner(ld.scalar("s"), mass=1.3, width=0.15,
                                                     mass1=m1, mass2=m2, l=l), {"s": s})
        theirs = laddu_eval(laddu.relativistic_breit_wigner(ls, mass=1.3, width=0.15,
                                                            mass1=m1, mass2=m2, l=l), {"s": s})
        above = s > (m1 + m2) ** 2
        assert rel_err(ours[above], theirs[above]) < 1e-12
        np.testing.assert_allclose(ours[~above], theirs[~above], rtol=1e-9, atol=1e-12)
    if l == 0:
        ours = evaluate(ld.breit_wigner(ld.scalar("s"), mass=1.3, width=0.15), {"s": s})
        theirs = laddu_eval(laddu.breit_wigner(ls, mass=1.3, width=0.15), {"s": s})
        assert rel_err(ours, theirs) < 1e-14


@needs_laddu
def test_parametrised_lineshape_matches_laddu(s_values):
    """Same model, same parameter order and values as laddu (free mass, width, coefficient)."""
    s = s_values
    ours = (ld.relativistic_breit_wigner(ld.scalar("s"), mass=ld.parameter("lm", initial=1.3),
                                         width=ld.parameter("lw", initial=0.1),
                                         mass1=M_KS, mass2=M_KS, l=2)
            * ld.complex(ld.parameter("lre"), ld.parameter("lim")))
    lm, lw = laddu.parameter("lm"), laddu.parameter("lw")
    theirs = (laddu.relativistic_breit_wigner(laddu.scalar("s"), mass=lm, width=lw,
                                              mass1=M_KS, mass2=M_KS, l=2)
              * laddu.complex(laddu.parameter("lre"), laddu.parameter("lim")))
    assert ld.Model(ours).parameter_names == list(laddu.Model(theirs).parameter_names)
    p = [1.52, 0.12, 0.7, -0.4]
    above = s > 4 * M_KS**2
    a, b = evaluate(ours, {"s": s}, p), laddu_eval(theirs, {"s": s}, p)
    assert rel_err(a[above], b[above]) < 1e-12


def test_breakup_momentum_and_barrier_factors(s_values):
    s = s_values
    m1, m2 = 0.3, 0.2
    q = evaluate(ld.breakup_momentum(ld.scalar("s"), 0.3, 0.2), {"s": s})
    np.testing.assert_allclose(q, breakup(s, m1, m2), rtol=1e-13, atol=1e-15)
    below = (s > (m1 - m2) ** 2) & (s < (m1 + m2) ** 2)
    assert below.any()
    assert np.all(q[below].real == 0) and np.all(q[below].imag > 0)
    # closed form above threshold, real q
    sq = 2.0**2
    expected = math.sqrt((sq - 0.25) * (sq - 0.01)) / (2 * 2.0)
    assert complex(ld.breakup_momentum(sq, 0.3, 0.2).attr) == pytest.approx(expected, rel=1e-15)
    for l in range(5):
        qq = ld.scalar("q")
        b = evaluate(ld.blatt_weisskopf(qq, l), {"q": np.array([0.05, Q_R, 0.5, 3.0])})
        z = np.array([0.05, Q_R, 0.5, 3.0]) ** 2 / Q_R**2
        np.testing.assert_allclose(b, np.sqrt(barrier_poly(z, l)), rtol=1e-13)
    with pytest.raises(ModelError, match=r"l = 0\.\.8, got l = 9"):
        ld.blatt_weisskopf(ld.scalar("q"), 9)


# ---------------------------------------------------------------------------------------
# vectors
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def p4_sample():
    rng = np.random.default_rng(3)
    n = 200
    a, b = random_p4(rng, n, 0.497611), random_p4(rng, n, 0.938272, 2.0)
    cols = {**p4_columns("a", a), **p4_columns("b", b)}
    beta = rng.normal(0.0, 1.0, (n, 3))
    beta *= (rng.uniform(0.0, 0.95, n) / np.linalg.norm(beta, axis=1))[:, None]
    cols.update({"bx": beta[:, 0], "by": beta[:, 1], "bz": beta[:, 2]})
    return a, b, beta, cols


def boost_matrix(beta: np.ndarray) -> np.ndarray:
    """Active Lorentz boost by velocity ``beta`` (one 4x4 matrix per event)."""
    b2 = (beta**2).sum(axis=1)
    g = 1 / np.sqrt(1 - b2)
    out = np.zeros((len(beta), 4, 4))
    out[:, 0, 0] = g
    out[:, 0, 1:] = g[:, None] * beta
    out[:, 1:, 0] = g[:, None] * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(b2 > 0, (g - 1) / b2, 0.0)
    out[:, 1:, 1:] = np.eye(3) + k[:, None, None] * beta[:, :, None] * beta[:, None, :]
    return out


def test_vec4_kinematics_match_numpy(p4_sample):
    a, b, beta, cols = p4_sample
    A, B = ld.Vec4.event("a"), ld.Vec4.event("b")
    X = A + B
    x = a + b
    mink = np.array([1.0, -1.0, -1.0, -1.0])

    def ev(e):
        return evaluate(e, cols)

    np.testing.assert_allclose(ev(X.m2()), (x**2 * mink).sum(1), rtol=1e-13)
    np.testing.assert_allclose(ev(X.m()), np.sqrt((x**2 * mink).sum(1)), rtol=1e-13)
    np.testing.assert_allclose(ev(A.dot(B)), (a * b * mink).sum(1), rtol=1e-13)
    np.testing.assert_allclose(ev(A.m()), 0.497611, rtol=1e-10)
    d = A - B
    np.testing.assert_allclose(ev(d.e()), a[:, 0] - b[:, 0], rtol=1e-15)
    np.testing.assert_allclose(ev((-A).pz()), -a[:, 3], rtol=0)
    np.testing.assert_allclose(ev(X.gamma()), x[:, 0] / np.sqrt((x**2 * mink).sum(1)), rtol=1e-13)
    bx = X.beta()
    for i, comp in enumerate(bx):
        np.testing.assert_allclose(ev(comp), x[:, i + 1] / x[:, 0], rtol=1e-15)


def test_boost_matches_lorentz_matrix_and_reaches_rest_frame(p4_sample):
    a, b, beta, cols = p4_sample
    A, B = ld.Vec4.event("a"), ld.Vec4.event("b")
    bvec = ld.Vec3(ld.scalar("bx"), ld.scalar("by"), ld.scalar("bz"))
    boosted = A.boost(bvec)
    ref = np.einsum("nij,nj->ni", boost_matrix(beta), a)
    for i, comp in enumerate(boosted):
        np.testing.assert_allclose(evaluate(comp, cols), ref[:, i], rtol=1e-12, atol=1e-12)
    # m^2 is invariant under boosts
    np.testing.assert_allclose(evaluate(boosted.m2(), cols), evaluate(A.m2(), cols),
                               rtol=1e-11)
    # boosting X by -beta(X) takes it to its rest frame: zero momentum, energy = mass
    X = A + B
    rest = X.boost(-X.beta())
    for comp in rest.vec3():
        assert np.max(np.abs(evaluate(comp, cols))) < 1e-12
    np.testing.assert_allclose(evaluate(rest.e(), cols), evaluate(X.m(), cols), rtol=1e-12)
    # the daughters are back to back in that frame
    ka, kb = A.boost(-X.beta()), B.boost(-X.beta())
    for ca, cb in zip(ka.vec3(), kb.vec3()):
        np.testing.assert_allclose(evaluate(ca + cb, cols), 0.0, atol=1e-12)
    # beta = 0 is the identity
    still = A.boost(ld.Vec3(0.0, 0.0, 0.0))
    for got, want in zip(still, A):
        np.testing.assert_allclose(evaluate(got, cols), evaluate(want, cols), rtol=1e-15)


def test_vec3_operations_match_numpy(p4_sample):
    a, b, beta, cols = p4_sample
    va, vb = ld.Vec4.event("a").vec3(), ld.Vec4.event("b").vec3()
    pa, pb = a[:, 1:], b[:, 1:]

    def ev(e):
        return evaluate(e, cols)

    cross = va.cross(vb)
    ref = np.cross(pa, pb)
    for i, comp in enumerate(cross):
        np.testing.assert_allclose(ev(comp), ref[:, i], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ev(va.dot(vb)), (pa * pb).sum(1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ev(va.mag()), np.linalg.norm(pa, axis=1), rtol=1e-14)
    unit = va.unit()
    np.testing.assert_allclose(ev(unit.mag()), 1.0, rtol=1e-14)
    np.testing.assert_allclose(ev(unit.py()), pa[:, 1] / np.linalg.norm(pa, axis=1), rtol=1e-14)
    np.testing.assert_allclose(ev(va.costheta()), pa[:, 2] / np.linalg.norm(pa, axis=1),
                               rtol=1e-14)
    np.testing.assert_allclose(ev(va.phi()), np.arctan2(pa[:, 1], pa[:, 0]), rtol=1e-15)
    w = (va + vb) * 2.0 - vb / 4.0
    np.testing.assert_allclose(ev(w.pz()), (pa[:, 2] + pb[:, 2]) * 2.0 - pb[:, 2] / 4.0, rtol=1e-14)
    np.testing.assert_allclose(ev((-va).px()), -pa[:, 0], rtol=0)
    assert (2.0 * va).px() is (va * 2.0).px()
    # constants fold all the way
    assert ld.Vec3(1.0, 2.0, 2.0).mag().attr == 3.0
    assert ld.Vec4(5.0, 0.0, 0.0, 3.0).m().attr == 4.0


def test_ksks_angles_match_numpy():
    """The helicity angles built from expressions equal the NumPy ones of ``ksks.angles``."""
    from laddu_dask import ksks

    data, _ = ksks.generate(n_data=300, n_mc=0, seed=7)
    cols = {}
    for name in ("beam", "kshort1", "kshort2"):
        cols.update(p4_columns(name, data[name]))
    beam, k1, k2 = (ld.Vec4.event(n) for n in ("beam", "kshort1", "kshort2"))
    X = k1 + k2
    k = k1.boost(-X.beta()).vec3()
    z = X.vec3().unit()
    y = beam.vec3().cross(z).unit()
    x = y.cross(z)
    s_ref, ct_ref, phi_ref = ksks.angles(data)
    np.testing.assert_allclose(evaluate(X.m2(), cols), s_ref, rtol=1e-12)
    np.testing.assert_allclose(evaluate(k.dot(z) / k.mag(), cols), ct_ref, atol=1e-12)
    np.testing.assert_allclose(evaluate(ld.atan2(k.dot(y), k.dot(x)), cols), phi_ref, atol=1e-11)


def test_atan2_quadrants_and_signed_zero():
    ys = np.array([1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 0.0, -0.0])
    xs = np.array([1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 0.0, 2.0, 0.0])
    value = evaluate(ld.atan2(ld.scalar("y"), ld.scalar("x")), {"y": ys, "x": xs})
    np.testing.assert_array_equal(value, np.arctan2(ys, xs))
    assert ld.atan2(-0.0, -1.0).attr == -math.pi and ld.atan2(0.0, -1.0).attr == math.pi


# ---------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------
def test_parameter_order_is_first_appearance():
    p1, p2, p3 = (ld.parameter(f"order_p{i}") for i in (1, 2, 3))
    assert ld.Model(p3 + p2 * p1).parameter_names == ["order_p3", "order_p2", "order_p1"]
    assert ld.Model(p2 * p1 + p3).parameter_names == ["order_p2", "order_p1", "order_p3"]
    assert ld.Model(p3 * (p1 + p2)).parameter_names == ["order_p3", "order_p1", "order_p2"]
    shared = p2 * p1
    assert ld.Model(shared + (p3 + shared)).parameter_names == ["order_p2", "order_p1", "order_p3"]
    s = ld.scalar("s")
    bw = ld.breit_wigner(s, mass=ld.parameter("order_m"), width=ld.parameter("order_w"))
    assert ld.Model((p1 * bw).norm_sqr()).parameter_names == ["order_p1", "order_m", "order_w"]
    # the compiled layout agrees with the model
    assert CompiledModel.from_expr(p3 + p2 * p1).parameter_names == [
        "order_p3", "order_p2", "order_p1"]


@needs_laddu
def test_parameter_order_matches_laddu():
    names = ("lo_a", "lo_b", "lo_c", "lo_d")

    def build(lib):
        a, b, c, d = (lib.parameter(n) for n in names)
        s = lib.scalar("s")
        return (c * lib.breit_wigner(s, mass=b, width=d) + a * lib.complex(d, c)).norm_sqr()

    assert ld.Model(build(ld)).parameter_names == list(laddu.Model(build(laddu)).parameter_names)


def test_ksks_model_parameter_order():
    from laddu_dask import ksks

    assert ksks.model().parameter_names == [
        "s_mass", "s_width", "d_mass", "d_width",
        "d0_re", "d0_im", "d1_re", "d1_im", "d2_re", "d2_im",
    ]


def test_fixed_parameters_are_excluded_and_folded():
    x = ld.scalar("x")
    a = ld.parameter("fx_a", initial=2.0, bounds=(0.0, 5.0))
    b = ld.parameter("fx_b", fixed=3.0)
    c = ld.parameter("fx_c", initial=-1.0)
    model = ld.Model(b * x + a * x * x + c)
    assert model.parameter_names == ["fx_a", "fx_c"]
    assert model.default_parameters == [2.0, -1.0]
    assert model.fixed_parameters == {"fx_b": 3.0}
    assert model.columns == ["x"]
    assert list(model.parameters) == ["fx_b", "fx_a", "fx_c"]
    cm = CompiledModel.from_expr(model)
    assert cm.parameter_names == ["fx_a", "fx_c"]
    xs = np.linspace(-2.0, 2.0, 9)
    np.testing.assert_allclose(cm.values(cm.event_cache({"x": xs}), [1.5, 0.25]),
                               3.0 * xs + 1.5 * xs * xs + 0.25, rtol=1e-15)
    # a model of fixed parameters only has no free parameters
    assert ld.Model(b * x).parameter_names == []


def test_parameter_defaults():
    assert ld.parameter("df_1", bounds=(1.0, 3.0)).attr.initial == 2.0
    assert ld.parameter("df_2", bounds=(1.0, None)).attr.initial == 1.0
    assert ld.parameter("df_3", bounds=(None, -1.0)).attr.initial == -1.0
    assert ld.parameter("df_4").attr.initial == 0.0
    assert ld.parameter("df_5", bounds=(-math.inf, math.inf)).attr.bounds == (None, None)
    spec = ld.parameter("df_6", fixed=2.5).attr
    assert spec.is_fixed and spec.fixed == 2.5 and spec.initial == 2.5


def test_conflicting_parameter_definitions():
    x = ld.scalar("x")
    a1 = ld.parameter("conflict_a", initial=1.0)
    a2 = ld.parameter("conflict_a", initial=2.0)
    with pytest.raises(ParameterError, match=r"two parameters are named 'conflict_a' but differ: "
                       r"conflict_a = 1.0 unbounded vs conflict_a = 2.0 unbounded"):
        ld.Model(a1 * x + a2)
    b1 = ld.parameter("conflict_b", bounds=(0.0, 1.0))
    b2 = ld.parameter("conflict_b", bounds=(0.0, 2.0), initial=0.5)
    with pytest.raises(ParameterError, match="'conflict_b'"):
        ld.Model(b1 + b2 * x)
    c1 = ld.parameter("conflict_c", fixed=1.0)
    c2 = ld.parameter("conflict_c", initial=1.0)
    with pytest.raises(ParameterError, match=r"conflict_c = 1.0 \(fixed\)"):
        CompiledModel.from_expr(c1 * x + c2)
    # the same definition twice is the same parameter
    assert ld.Model(ld.parameter("same", initial=1.0) * x + ld.parameter("same", initial=1.0)
                    ).parameter_names == ["same"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bounds": (2.0, 1.0)}, r"'bp': lower bound 2.0 is not below upper bound 1.0"),
        ({"bounds": (1.0, 1.0)}, r"'bp': lower bound 1.0 is not below upper bound 1.0"),
        ({"bounds": (0.0, 1.0), "initial": 3.0}, r"'bp': initial value 3.0 lies outside"),
        ({"bounds": ("a", 1.0)}, r"'bp': lower bound must be a number, got 'a'"),
        ({"bounds": (0.0, math.nan)}, r"'bp': upper bound is NaN"),
        ({"initial": math.nan}, r"'bp': initial value is NaN"),
        ({"fixed": "x"}, r"'bp': fixed value must be a number"),
        ({"initial": math.inf}, r"'bp': initial value inf is not finite"),
        ({"initial": -math.inf, "bounds": (None, 0.0)}, r"'bp': initial value -inf is not finite"),
        ({"initial": np.float32("inf")}, r"'bp': initial value inf is not finite"),
        ({"fixed": math.inf}, r"'bp': fixed value inf is not finite"),
        ({"fixed": math.nan}, r"'bp': fixed value is NaN"),
        ({"bounds": (math.nan, 1.0)}, r"'bp': lower bound is NaN"),
        ({"bounds": (math.inf, None)}, r"'bp': lower bound inf leaves no allowed value"),
        ({"bounds": (None, -math.inf)}, r"'bp': upper bound -inf leaves no allowed value"),
    ],
)
def test_bad_parameter_definitions(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        ld.parameter("bp", **kwargs)


def test_infinite_bounds_mean_unbounded_as_in_laddu():
    spec = ld.parameter("ub", bounds=(-math.inf, np.float32("inf"))).attr
    assert spec.bounds == (None, None) and spec.initial == 0.0
    spec = ld.parameter("ub1", bounds=(np.float64(0.5), math.inf)).attr
    assert spec.bounds == (0.5, None) and spec.initial == 0.5


def test_bad_parameter_names_and_values():
    with pytest.raises(ParameterError, match="non-empty string"):
        ld.parameter("")
    with pytest.raises(ParameterError, match="non-empty string"):
        ld.parameter(3)
    cm = CompiledModel.from_expr(ld.parameter("bv_a") * ld.scalar("x") + ld.parameter("bv_b"))
    with pytest.raises(ParameterError, match=r"expected 2 parameter values \(bv_a, bv_b\), got 1"):
        cm.parameter_vector([1.0])
    with pytest.raises(ParameterError, match="unknown parameter 'bogus'"):
        cm.parameter_vector({"bv_a": 1.0, "bogus": 2.0})
    with pytest.raises(ParameterError, match="no value given for parameter.*bv_b"):
        cm.parameter_vector({"bv_a": 1.0})
    with pytest.raises(ParameterError, match="'bv_b': value inf is not finite"):
        cm.parameter_vector([1.0, math.inf])
    assert cm.parameter_vector({"bv_b": 2.0, "bv_a": 1.0}) == (1.0, 2.0)


# ---------------------------------------------------------------------------------------
# compiled model: cache contents and values
# ---------------------------------------------------------------------------------------
def test_cache_holds_only_event_only_values():
    x, y = ld.scalar("cx"), ld.scalar("cy")
    a, b = ld.parameter("ca"), ld.parameter("cb")
    ev = (x.sin() * y.cos() + x * x).exp()
    cm = CompiledModel.from_expr(a * ev + b * b)
    # the whole event-only subgraph collapses into one cached array
    assert len(cm.split.cache) == 1 and cm.split.cache[0] is ev
    assert cm.columns == ["cx", "cy"]
    xs, ys = np.linspace(-1, 1, 7), np.linspace(0, 2, 7)
    cache = cm.event_cache({"cx": xs, "cy": ys})
    assert len(cache) == 1
    expected = np.exp(np.sin(xs) * np.cos(ys) + xs * xs)
    np.testing.assert_allclose(cache[0], expected, rtol=1e-15)
    np.testing.assert_allclose(cm.values(cache, [2.0, 3.0]), 2.0 * expected + 9.0, rtol=1e-15)
    assert cm.cache_bytes_per_event() == 8 and cm.cache_bytes_per_event("f32") == 4

    # a model whose parameter part reads no event column caches nothing
    pure = CompiledModel.from_expr(ld.breit_wigner(2.0, mass=a, width=b).norm_sqr())
    assert pure.columns == [] and pure.event_cache({}) == []
    v = pure.values([], [1.3, 0.2], n=4)
    np.testing.assert_allclose(v, abs(1 / (1.69 - 2.0 - 1j * 1.3 * 0.2)) ** 2, rtol=1e-14)
    assert v.shape == (4,)
    with pytest.raises(ValueError, match="needs the event count n"):
        pure.values([], [1.3, 0.2])

    # a model without free parameters caches its own value
    fixed = CompiledModel.from_expr(ld.complex(x, y).exp())
    assert fixed.parameter_names == [] and len(fixed.split.cache) == 1
    np.testing.assert_allclose(fixed.values(fixed.event_cache({"cx": xs, "cy": ys}), []),
                               np.exp(xs + 1j * ys), rtol=1e-15)

    # complex cached values are complex and count twice
    cz = CompiledModel.from_expr(a * ld.complex(x, y).exp())
    cache = cz.event_cache({"cx": xs, "cy": ys})
    assert cache[0].dtype == np.complex128 and cz.cache_bytes_per_event() == 16


def test_compiled_values_match_numpy():
    rng = np.random.default_rng(2)
    n = 500
    ct, ph = rng.uniform(-1, 1, n), rng.uniform(-math.pi, math.pi, n)
    s = rng.uniform(0.5, 3.0, n)
    m, w = ld.parameter("cv_m", initial=1.4), ld.parameter("cv_w", initial=0.2)
    re, im = ld.parameter("cv_re"), ld.parameter("cv_im")
    S, CT, PH = ld.scalar("s"), ld.scalar("ct"), ld.scalar("ph")
    amp = (ld.breit_wigner(S, mass=m, width=w) * ld.spherical_harmonic(0, 0, costheta=CT, phi=PH)
           + ld.complex(re, im) * ld.spherical_harmonic(2, 1, costheta=CT, phi=PH)
           * ld.polar_complex(S.sqrt(), PH * 0.5))
    cm = CompiledModel.from_expr(amp.norm_sqr())
    assert cm.parameter_names == ["cv_m", "cv_w", "cv_re", "cv_im"]
    params = [1.45, 0.18, 0.6, -0.3]
    cache = cm.event_cache({"s": s, "ct": ct, "ph": ph})
    value = cm.values(cache, params)
    ref_amp = (1 / (1.45**2 - s - 1j * 1.45 * 0.18) * sph_harm_y(0, 0, np.arccos(ct), ph)
               + (0.6 - 0.3j) * sph_harm_y(2, 1, np.arccos(ct), ph)
               * np.sqrt(s) * np.exp(0.5j * ph))
    assert value.dtype == np.float64
    np.testing.assert_allclose(value, np.abs(ref_amp) ** 2, rtol=1e-12)
    # by-name parameters give the same numbers
    named = dict(zip(cm.parameter_names, params))
    np.testing.assert_array_equal(cm.values(cache, named), value)
    # compiling the same expression again returns the same compiled model
    assert CompiledModel.from_expr(amp.norm_sqr()) is cm


def test_elementwise_functions_match_numpy():
    rng = np.random.default_rng(4)
    xs, ys = rng.uniform(0.2, 2.0, 50), rng.uniform(-2.0, 2.0, 50)
    x, y = ld.scalar("ex"), ld.scalar("ey")
    a = ld.parameter("ef_a", initial=0.7)
    cols = {"ex": xs, "ey": ys}
    z = ld.complex(x, y)
    zs = xs + 1j * ys
    cases = [
        (x.sin() * a, np.sin(xs) * 0.7),
        (x.cos() + a, np.cos(xs) + 0.7),
        (x.tan() * a, np.tan(xs) * 0.7),
        (y.exp() * a, np.exp(ys) * 0.7),
        (x.log() * a, np.log(xs + 0j) * 0.7),  # laddu: principal, complex
        (x.sqrt() * a, np.sqrt(xs + 0j) * 0.7),
        ((x * x).log() * a, np.log(xs * xs) * 0.7),  # non-negative: real
        ((y * y + x).sqrt() * a, np.sqrt(ys * ys + xs + 0j) * 0.7),
        ((y * y + 0.5).sqrt() * a, np.sqrt(ys * ys + 0.5) * 0.7),
        (y.abs() * a, np.abs(ys) * 0.7),
        (z.abs() * a, np.abs(zs) * 0.7),
        (z.conj() * a, np.conj(zs) * 0.7),
        ((z * a).real(), zs.real * 0.7),
        ((z * a).imag(), zs.imag * 0.7),
        ((z * a).norm_sqr(), np.abs(zs * 0.7) ** 2),
        ((y * a).to_complex().sqrt(), np.sqrt(ys * 0.7 + 0j)),
        ((y * a).to_complex().log(), np.log(ys * 0.7 + 0j)),
        ((z * a).log(), np.log(zs * 0.7)),
        ((z * a).sqrt(), np.sqrt(zs * 0.7)),
        (z ** 3 * a, zs**3 * 0.7),
        ((z * a) ** -2, (zs * 0.7) ** -2.0),
        (x ** a, xs**0.7),
        (x ** 2.5 * a, xs**2.5 * 0.7),
        (a ** y, 0.7**ys),
        (z ** a, zs**0.7),
        (ld.atan2(y * a, x - 1.0), np.arctan2(ys * 0.7, xs - 1.0)),
        (ld.polar_complex(x, y * a), xs * np.exp(1j * ys * 0.7)),
        ((y * a).sqrt(), np.sqrt(ys * 0.7 + 0j)),  # sqrt(-4) = 2i, as in laddu
        (z / ld.complex(y, x * a), zs / (ys + 1j * xs * 0.7)),
    ]
    for expr, ref in cases:
        with np.errstate(invalid="ignore"):
            got = evaluate(expr, cols, [0.7])
        assert np.iscomplexobj(got) == np.iscomplexobj(ref), expr
        np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-15, equal_nan=True)


def test_initial_ranges_and_sampled_starts_follow_laddu():
    """laddu's ``initial=(min, max)``: the same checks; starts drawn in the range, else the
    initial value (laddu's rule); reproducible."""
    import laddu_dask as ld

    def shared(lib):  # what laddu and laddu-dask treat alike
        return (lib.parameter("a", initial=(1.0, 2.0)) + lib.parameter("b", initial=0.3, bounds=(0, 1))
                + lib.parameter("c") + lib.parameter("d", initial=(1.2, 1.5), bounds=(1.0, 2.0)))

    model = ld.Model(shared(ld) + ld.parameter("e", bounds=(-5.0, 5.0))
                     + ld.cparameter("f", initial=((0.0, 1.0), 2.0)))
    assert model.parameter_names == ["a", "b", "c", "d", "e", "f real", "f imag"]
    assert model.default_parameters[:4] == [1.5, 0.3, 0.0, 1.35]  # a range starts a fit at its middle
    starts = np.array(model.sample_parameters(seed=11, n=200))
    assert starts.shape == (200, 7)
    inside = [((starts[:, k] >= lo) & (starts[:, k] < hi)).all()
              for k, lo, hi in ((0, 1.0, 2.0), (3, 1.2, 1.5), (5, 0.0, 1.0))]
    assert all(inside) and starts[:, 0].std() > 0.2 and starts[:, 5].std() > 0.2  # drawn, not constant
    assert [set(starts[:, k]) for k in (1, 2, 4, 6)] == [{0.3}, {0.0}, {0.0}, {2.0}]  # initial values
    assert np.array_equal(model.sample_parameters(seed=11, n=200), starts)  # reproducible
    assert model.sample_parameters(seed=11) == starts[0].tolist()
    updated = model.with_parameters({"a": ld.ParameterUpdate(initial=(0.5, 0.7))})
    spec = updated.parameters["a"]
    assert (spec.initial_range, spec.initial) == ((0.5, 0.7), 0.6)
    with pytest.raises(ParameterError, match=r"initial range \[0.0, 3.0\] is outside its bounds"):
        ld.parameter("f", initial=(0.0, 3.0), bounds=(1.0, 2.0))
    with pytest.raises(ParameterError, match=r"initial range \[2.0, 1.0\] is empty"):
        ld.parameter("g", initial=(2.0, 1.0))
    with pytest.raises(ParameterError, match="seed must be a non-negative integer, got -1"):
        model.sample_parameters(seed=-1)
    try:
        import laddu
    except ImportError:  # pragma: no cover - laddu is a test dependency
        return
    with pytest.raises(Exception, match="outside parameter bounds"):
        laddu.parameter("f", initial=(0.0, 3.0), bounds=(1.0, 2.0))
    ref = np.array([laddu.Model(shared(laddu)).sample_parameters(seed=s) for s in range(50)])
    assert (ref[:, 1] == 0.3).all() and (ref[:, 2] == 0.0).all()  # laddu's rule, where we agree
    assert ((ref[:, 0] >= 1.0) & (ref[:, 0] < 2.0)).all() and ((ref[:, 3] >= 1.2) & (ref[:, 3] < 1.5)).all()
