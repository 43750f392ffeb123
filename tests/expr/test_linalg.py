"""Matrices, vectors and the unrolled linear solve of laddu_dask.expr.linalg.

References: NumPy (``np.linalg.solve`` and ``@`` per event), central finite differences of
the compiled values (array and fused kernels), and laddu 0.28.1's own ``solve``.
"""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import agreement, laddu, laddu_values, needs_laddu

import laddu_dask as ld
from laddu_dask.errors import ModelError

N = 40
RNG = np.random.default_rng(11)
X = {f"x{i}": RNG.uniform(-1.0, 1.0, N) for i in range(4)}
EVENTS = ld.Dataset.from_arrays(scalars=X)
PARAMS = {"p0": 0.7, "p1": -0.4, "p2": 1.3, "p3": 0.2}


def _system(n: int):
    """An ``n x n`` complex system whose entries mix event columns and parameters, with its
    per-event NumPy arrays at PARAMS."""
    cols = [ld.scalar(f"x{i}") for i in range(4)]
    ps = [ld.parameter(k, initial=v) for k, v in PARAMS.items()]
    a, a_np = [], np.zeros((N, n, n), complex)
    for i in range(n):
        row = []
        for j in range(n):
            c = cols[(i + 2 * j) % 4]
            p = ps[(3 * i + j) % 4]
            scale = 1.0 if i != j else 0.0 if (i, j) == (0, 0) else 2.0
            entry = c * p + ld.complex(scale, 0.3 * (i - j)) if (i, j) != (0, 0) else c * p
            row.append(entry)
            pv = PARAMS[f"p{(3 * i + j) % 4}"]
            cv = X[f"x{(i + 2 * j) % 4}"]
            a_np[:, i, j] = cv * pv + (0 if (i, j) == (0, 0) else complex(scale, 0.3 * (i - j)))
        a.append(row)
    b = [cols[k % 4] + ps[(k + 1) % 4] * 1j for k in range(n)]
    b_np = np.stack([X[f"x{k % 4}"] + 1j * PARAMS[f"p{(k + 1) % 4}"] for k in range(n)], axis=1)
    return ld.matrix(a), ld.vector(b), a_np, b_np


def _values(expr, kernel="numpy"):
    model = ld.Model(expr)
    used = {k: v for k, v in PARAMS.items() if k in model.parameter_names}
    return model.evaluate(EVENTS, parameters=used, execution=ld.Execution(kernel=kernel))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_solve_matches_numpy_per_event(n):
    a, b, a_np, b_np = _system(n)
    x = ld.solve(a, b)
    want = np.linalg.solve(a_np, b_np[..., None])[..., 0]
    assert x.shape == (n,)
    for i in range(n):
        got = _values(x[i])
        assert agreement(got, want[:, i]) < 1e-12
    # a matrix right-hand side solves column by column
    xm = ld.solve(a, ld.matrix([[e, 2.0 * e] for e in b]))
    assert xm.shape == (n, 2)
    assert agreement(_values(xm.at(n - 1, 1)), 2.0 * want[:, n - 1]) < 1e-12


def test_structural_zero_pivots_are_swapped_as_the_graph_is_built():
    x0, x1, x2 = (ld.scalar(f"x{i}") for i in range(3))
    a = ld.matrix([[0.0, x0, 1.0], [x1, 0.0, 0.0], [0.0, 2.0, x2]])
    x = ld.solve(a, ld.vector([1.0, 2j, x0]))
    a_np = np.zeros((N, 3, 3), complex)
    a_np[:, 0, 1], a_np[:, 0, 2], a_np[:, 1, 0] = X["x0"], 1.0, X["x1"]
    a_np[:, 2, 1], a_np[:, 2, 2] = 2.0, X["x2"]
    b_np = np.stack([np.ones(N), np.full(N, 2j), X["x0"]], axis=1)
    want = np.linalg.solve(a_np, b_np[..., None])[..., 0]
    for i in range(3):
        assert agreement(_values(x[i]), want[:, i]) < 1e-12


def test_products_match_numpy():
    a, b, a_np, b_np = _system(3)
    prod = a @ a
    mv = ld.matvec(a, b)
    want_mm = a_np @ a_np
    want_mv = np.einsum("nij,nj->ni", a_np, b_np)
    for i in range(3):
        assert agreement(_values(mv[i]), want_mv[:, i]) < 1e-12
        assert agreement(_values((a @ b)[i]), want_mv[:, i]) < 1e-12
        for j in range(3):
            assert agreement(_values(prod.at(i, j)), want_mm[:, i, j]) < 1e-12
            assert agreement(_values(ld.matmul(a, a).at(i, j)), want_mm[:, i, j]) < 1e-12
    assert agreement(_values(ld.dot(b, b)), (b_np * b_np).sum(1)) < 1e-12  # no conjugation
    assert agreement(_values((b @ b.conj()).real()), (abs(b_np) ** 2).sum(1)) < 1e-12
    assert agreement(_values((2.0 * a / 4.0).at(1, 2)), a_np[:, 1, 2] / 2) < 1e-12


@pytest.mark.parametrize("kernel", ["numpy", "fused"])
def test_solve_gradient_matches_finite_differences(kernel):
    a, b, _, _ = _system(3)
    x = ld.solve(a, b)
    model = ld.Model((x[0] * x[2].conj() + x[1]).norm_sqr())
    ex = ld.Execution(kernel=kernel)
    assert sorted(model.parameter_names) == sorted(PARAMS)
    values, grad = model.value_and_gradient(EVENTS, parameters=PARAMS, execution=ex, real=True)
    assert agreement(values, model.evaluate(EVENTS, parameters=PARAMS, real=True)) < 1e-12
    for k, name in enumerate(model.parameter_names):
        h = 1e-6 * max(1.0, abs(PARAMS[name]))
        up, down = dict(PARAMS), dict(PARAMS)
        up[name] += h
        down[name] -= h
        fd = (model.evaluate(EVENTS, parameters=up, real=True, execution=ex)
              - model.evaluate(EVENTS, parameters=down, real=True, execution=ex)) / (2 * h)
        assert np.all(np.abs(grad[:, k] - fd) <= 1e-6 * (1 + np.abs(fd))), name


@needs_laddu
def test_solve_matches_laddu():
    rows = [[1.0, 2.0, 0.5j], [3.0, 4.0 + 1j, 1.0], [0.0, 1.0, 2.0]]
    rhs = [1.0, 0.5, -1j]
    ours = ld.solve(ld.matrix(rows), ld.vector(rhs))
    theirs = laddu.solve(laddu.matrix(rows), laddu.vector(rhs))
    for i in range(3):
        want = laddu_values(theirs[i], {"a": np.array([[1.0, 0, 0, 0]])}, {})
        assert agreement(np.array([complex(ours[i].attr)]), want) < 1e-12


def test_shape_errors_are_model_errors():
    m2 = ld.matrix([[1.0, 2.0], [3.0, 4.0]])
    v2, v3 = ld.vector([1.0, 2.0]), ld.vector([1.0, 2.0, 3.0])
    with pytest.raises(ModelError, match="dot: vector lengths differ: 2 and 3"):
        ld.dot(v2, v3)
    with pytest.raises(ModelError, match=r"matvec: cannot multiply Matrix\[2x2\] by Vector\[3\]"):
        ld.matvec(m2, v3)
    with pytest.raises(ModelError, match="matmul: the right operand .use matvec"):
        ld.matmul(m2, v2)
    with pytest.raises(ModelError, match=r"matmul: cannot multiply Matrix\[2x2\] by Matrix\[1x2\]"):
        m2 @ ld.matrix([[1.0, 2.0]])
    with pytest.raises(ModelError, match=r"solve: the coefficient matrix must be square, got Matrix\[1x2\]"):
        ld.solve(ld.matrix([[1.0, 2.0]]), v2)
    with pytest.raises(ModelError, match=r"solve: cannot solve Matrix\[2x2\] against Vector\[3\]"):
        ld.solve(m2, v3)
    with pytest.raises(ModelError, match="solve unrolls systems up to 8x8"):
        ld.solve(ld.matrix(np.eye(9).tolist()), ld.vector([1.0] * 9))
    with pytest.raises(ModelError, match="the coefficient matrix is singular .column 1 is zero"):
        ld.solve(ld.matrix([[1.0, 0.0], [ld.scalar("x0"), 0.0]]), v2)
    with pytest.raises(ModelError, match="row 0 has 1, row 1 has 2"):
        ld.matrix([[1.0], [1.0, 2.0]])
    with pytest.raises(ModelError, match="at least one row and one column"):
        ld.matrix([[]])
    with pytest.raises(ModelError, match=r"vector element 0 must be a scalar expression, got a Vector\[2\]"):
        ld.vector([v2])
    with pytest.raises(ModelError, match=r"index \(2, 0\) is out of bounds for Matrix\[2x2\]"):
        m2.at(2, 0)
    with pytest.raises(ModelError, match=r"index 5 is out of bounds for Vector\[2\]"):
        v2[5]
    with pytest.raises(ModelError, match=r"select an entry of a Matrix\[2x2\] with .at"):
        m2[0]
    with pytest.raises(ModelError, match="Matrix"):
        ld.Model(m2)


def test_a_zero_pivot_on_an_event_is_a_likelihood_error_naming_the_event():
    x = ld.scalar("x0")
    sol = ld.solve(ld.matrix([[x, 1.0], [1.0, 2.0]]), ld.vector([ld.parameter("p", initial=1.0), 1.0]))
    model = ld.Model(sol[0].norm_sqr() + 1.0)
    data = ld.Dataset.from_arrays(scalars={"x0": np.array([1.0, 0.0, 2.0])})
    mc = ld.Dataset.from_arrays(scalars={"x0": np.array([1.0, 3.0])})
    with pytest.raises(ld.NonFiniteError, match="non-finite intensity nan at event 1"):
        ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)]).value_and_gradient([1.0])
