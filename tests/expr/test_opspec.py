"""The operation spec (:mod:`laddu_dask.expr.ops`): every operation, every backend.

* Every operation of the spec, on real and complex operands, gives the value of an
  independent scalar reference (Python's ``math``/``cmath``, event by event) and the
  derivatives of central finite differences of that reference, through the array code and
  through the fused kernels, at random points where every operation is well-conditioned
  by construction (arguments in [0.3, 1], imaginary parts below 0.3: away from zeros,
  poles and branch cuts).  The CUDA printer's source of the same models compiles with nvcc.
  Where g++ exists, the CUDA source of every operation also runs on the host (the tests'
  emulation) against the same references.
* One call of the public extension hook (:func:`~laddu_dask.expr.extension.register_operation`)
  makes a toy operation usable in a model, differentiable, fused, and printed for CUDA.
"""

from __future__ import annotations

import cmath
import math
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.cuda import combine_sources, compile_with_nvcc, generate_cuda_source
from laddu_dask.errors import ModelError
from laddu_dask.expr import apply, register_operation, unregister_operation
from laddu_dask.expr.ops import COMPLEX, OPS, REAL, call, conj
from laddu_dask.runtime.compilations import numba_available
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.prepared import PreparedModel

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
N = 64
RNG = np.random.default_rng(20240610)
COLUMNS = {c: RNG.uniform(0.5, 1.0, N) for c in ("e1", "e2", "e3")}
POINT = RNG.uniform(0.4, 0.7, 3)  # random parameters
WEIGHTS = RNG.uniform(0.5, 1.5, N)
#: Distinct complex weights of the terms of a model: its real part mixes the real and the
#: imaginary parts of every term, so one real reduction checks both.
MIX = [0.6 - 0.8j, -0.3 + 0.9j, 0.8 + 0.5j, -0.7 - 0.4j]

#: Independent scalar references (per event, Python numbers).
REFERENCE = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "pow": lambda a, b: math.pow(a, b) if isinstance(a, float) and isinstance(b, float) else complex(a) ** b,
    "sin": lambda a: (math.sin if isinstance(a, float) else cmath.sin)(a),
    "cos": lambda a: (math.cos if isinstance(a, float) else cmath.cos)(a),
    "tan": lambda a: (math.tan if isinstance(a, float) else cmath.tan)(a),
    "exp": lambda a: (math.exp if isinstance(a, float) else cmath.exp)(a),
    "log": lambda a: (math.log if isinstance(a, float) else cmath.log)(a),
    "sqrt": lambda a: (math.sqrt if isinstance(a, float) else cmath.sqrt)(a),
    "abs": abs,
    "conj": lambda a: a.conjugate(),
    "real": lambda a: a.real,
    "imag": lambda a: a.imag,
    "norm_sqr": lambda a: a.real**2 + a.imag**2,
    "atan2": math.atan2,
    "complex": complex,
    "to_complex": complex,
    "acos": math.acos,
    "cis": lambda a: complex(math.cos(a), math.sin(a)),
}
POWERS = (2, 3, -1, -2)


def _real_arg(k: int, p, e):
    """Real, in [0.3, 1]: ``0.3 + 0.5 (p_a e_b + p_c e_d)`` (parameters and events mixed)."""
    a, b, c, d = k % 3, (k + 1) % 3, (k + 2) % 3, k % 3
    return 0.3 + 0.5 * (p[a] * e[b] + p[c] * e[d]) * 0.7


def _complex_arg(k: int, p, e, make):
    """Complex: the real argument plus ``i 0.5 (p_a e_b - p_c e_d)`` (|imag| < 0.2)."""
    a, b, c, d = (k + 1) % 3, (k + 2) % 3, k % 3, (k + 1) % 3
    return make(_real_arg(k, p, e), 0.5 * (p[a] * e[b] - p[c] * e[d]))


def _cases(op: str) -> list[tuple[tuple[str, ...], object]]:
    """(argument kinds, attribute) of every case of an operation."""
    spec = OPS[op]
    if spec.real_args:  # a unary one twice, so that its arguments reach every parameter
        kinds = [(REAL,) * spec.arity] * (2 if spec.arity == 1 else 1)
    else:
        kinds = [tuple(COMPLEX if (m >> i) & 1 else REAL for i in range(spec.arity))
                 for m in range(2**spec.arity)]
    attrs = POWERS if op == "powi" else (None,)
    return [(k, attr) for k in kinds for attr in attrs]


def _build(op: str, p, e, make, apply_op):
    """The model of an operation: ``sum_k MIX_k op(args_k)`` over its cases (expression or
    reference numbers alike)."""
    total = 0.0
    for j, (kinds, attr) in enumerate(_cases(op)):
        args = [_complex_arg(j + i, p, e, make) if kind == COMPLEX else _real_arg(j + i, p, e)
                for i, kind in enumerate(kinds)]
        total = total + MIX[j % len(MIX)] * (1.0 + 0.1 * j) * apply_op(op, args, attr)
    return total


def _expr(op: str) -> ld.Expr:
    p = [ld.parameter(f"p{i}") for i in range(3)]
    e = [ld.scalar(c) for c in COLUMNS]
    return _build(op, p, e, ld.complex, lambda o, args, attr: apply(o, *args, attr=attr))


def _reference_values(op: str, params) -> np.ndarray:
    def one(i: int) -> complex:
        e = [float(COLUMNS[c][i]) for c in COLUMNS]
        return _build(op, [float(v) for v in params], e, complex,
                      lambda o, args, attr: args[0] ** attr if o == "powi" else REFERENCE[o](*args))

    return np.array([one(i) for i in range(N)])


def _reference_jacobian(op: str, params, h: float = 1e-5) -> np.ndarray:
    jac = np.zeros((N, len(params)), dtype=complex)
    for j in range(len(params)):
        up, down = params.copy(), params.copy()
        up[j] += h
        down[j] -= h
        jac[:, j] = (_reference_values(op, up) - _reference_values(op, down)) / (2 * h)
    return jac


def _expected(op: str):
    """The compiled model, its parameter point (in its layout order), the reference values
    and the reference jacobian (columns in that order)."""
    cm = CompiledModel.from_expr(_expr(op))
    order = [int(name[1:]) for name in cm.parameter_names]
    assert sorted(order) == [0, 1, 2]
    jac = _reference_jacobian(op, POINT.copy())[:, order]
    return cm, POINT[order], _reference_values(op, POINT.copy()), jac


def test_the_reference_covers_the_spec():
    """Every built-in operation has a reference here (a new one must add its own)."""
    assert set(OPS) == set(REFERENCE) | {"powi"}


@pytest.mark.parametrize("op", sorted(OPS))
def test_array_code_of_every_operation(op):
    cm, point, value, jac = _expected(op)
    cache = cm.event_cache(COLUMNS)
    v, j = cm.values_and_jacobian(cache, list(point))
    np.testing.assert_allclose(v, value, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(j, jac, rtol=1e-7, atol=1e-8)
    # f32 arithmetic: within the float32 error bound of tests/tolerances.py (u D (1 + cond))
    from tolerances import condition, f32_bound

    v32 = cm.values(cm.event_cache(COLUMNS, "f32"), list(point), precision="f32")
    bound = f32_bound(value, condition(cm, COLUMNS, list(point)), axis=None)
    assert np.all(np.abs(v32 - value) <= bound), (op, np.abs(v32 - value) / bound)


@pytest.mark.slow  # one Numba compilation per operation (about 2 s each on a cold cache)
@pytest.mark.skipif(not numba_available(), reason="the fused kernels need Numba")
@pytest.mark.parametrize("op", sorted(OPS))
def test_fused_kernels_of_every_operation(op):
    from laddu_dask.compile.fused import TRANSFORM_CODES, fused_kernels

    cm, p, value, jac = _expected(op)
    fk = fused_kernels(cm.split, "f64")
    cache = cm.event_cache(COLUMNS)
    out = np.empty(N, dtype=np.complex128 if cm.split.root.kind == COMPLEX else np.float64)
    fk.values(*cache, p, out)
    np.testing.assert_allclose(out, value, rtol=1e-13, atol=1e-14)
    # the gradient of sum_i w_i Re(v_i): boundary adjoints per event, then the chain rule
    terms = np.zeros((1 + fk.boundary_size, N))
    assert fk.gradient_terms(*cache, WEIGHTS, p, TRANSFORM_CODES["real"], terms, np.zeros(1)) == -1
    grad = fk.backprop(p, np.array([math.fsum(row) for row in terms[1:]]))
    np.testing.assert_allclose(math.fsum(terms[0]), WEIGHTS @ value.real, rtol=1e-13)
    np.testing.assert_allclose(grad, WEIGHTS @ jac.real, rtol=1e-7, atol=1e-8)


@pytest.mark.slow  # nvcc, two translation units (a few seconds)
@pytest.mark.skipif(NVCC is None, reason="nvcc not found on PATH (CUDA toolkit)")
def test_cuda_source_of_every_operation_compiles(tmp_path):
    models = {op: CompiledModel.from_expr(_expr(op)) for op in sorted(OPS)}
    jobs = []
    for precision in ("f64", "f32"):
        sources = [generate_cuda_source(cm.split, precision, f"{op}_") for op, cm in models.items()]
        jobs.append((combine_sources(sources), tmp_path / f"ops_{precision}.ptx"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        outputs = list(pool.map(lambda j: compile_with_nvcc(j[0], "sm_90", output=j[1], ptx=True), jobs))
    for path in outputs:
        ptx = path.read_text()
        for op in models:
            assert f".entry {op}_gradient_sum" in ptx, op


@pytest.mark.slow  # one g++ compilation (a few seconds)
@pytest.mark.skipif(GXX is None, reason="the host emulation of the CUDA source needs g++")
def test_cuda_source_of_every_operation_on_the_host(tmp_path):
    """Every operation's CUDA spelling and derivative rule, printed into one model (each
    operation's cases with its own coefficient), run on the host: the values and the
    gradient of ``sum_i w_i Re(v_i)`` against the references."""
    from cuda_emulation import HostEmulation

    from laddu_dask.runtime.cuda_backend import CudaKernels

    ops = sorted(OPS)
    coefficient = {op: 1.0 + 0.05 * k for k, op in enumerate(ops)}
    total = None
    for op in ops:
        term = coefficient[op] * _expr(op)
        total = term if total is None else total + term
    cm = CompiledModel.from_expr(total)
    order = [int(name[1:]) for name in cm.parameter_names]
    value = sum(coefficient[op] * _reference_values(op, POINT.copy()) for op in ops)
    jac = sum(coefficient[op] * _reference_jacobian(op, POINT.copy()) for op in ops)[:, order]
    p = POINT[order]
    emu = HostEmulation(generate_cuda_source(cm.split, "f64", prefix="all_"), tmp_path)
    cache = cm.event_cache(COLUMNS)
    np.testing.assert_allclose(emu.values(cache, p, N), value, rtol=1e-12, atol=1e-13)
    terms, bad = emu.terms(cache, WEIGHTS, p, "real", True)
    assert bad == -1
    totals = np.array([math.fsum(row) for row in terms])
    assert totals[0] == pytest.approx(WEIGHTS @ value.real, rel=1e-12)
    grad = CudaKernels(cm.split, "f64").backprop(p, totals[1:])
    np.testing.assert_allclose(grad, WEIGHTS @ jac.real, rtol=1e-7, atol=1e-8)


# ---------------------------------------------------------------------------------------
# the extension hook
# ---------------------------------------------------------------------------------------
@pytest.fixture
def cube():
    """``cube(z) = z^3``, added in one place: value, derivative rule, CUDA spelling."""
    build = register_operation(
        "toy_cube", 1, "({0} * {0} * {0})",
        lambda r: (r.g * conj(3.0 * r.args[0] * r.args[0]),),
        cuda="({0} * {0} * {0})",
    )
    yield build
    unregister_operation("toy_cube")


def test_a_registered_operation_is_usable_differentiable_and_fused(cube, tmp_path):
    x, a, b = ld.scalar("x"), ld.parameter("a"), ld.parameter("b")
    z = ld.complex(a * x, b)
    model = ld.Model((cube(z) + cube(a * x + 0.5)).norm_sqr())
    xs = np.linspace(0.2, 1.2, 700)
    point = [0.8, -0.3]

    def reference(p):  # |(a x + i b)^3 + (a x + 0.5)^3|^2
        return np.abs((p[0] * xs + 1j * p[1]) ** 3 + (p[0] * xs + 0.5) ** 3) ** 2

    assert cube(ld.constant(2.0)) is ld.constant(8.0)  # folded like a built-in
    cm = CompiledModel.from_expr(model)
    value, jac = cm.values_and_jacobian(cm.event_cache({"x": xs}), point)
    np.testing.assert_allclose(value, reference(point), rtol=1e-13)
    h = 1e-6
    fd = np.column_stack([(reference(np.add(point, d)) - reference(np.subtract(point, d))) / (2 * h)
                          for d in np.eye(2) * h])
    np.testing.assert_allclose(jac.real, fd, rtol=1e-7, atol=1e-7)
    # through the fused kernels (and the array code), a weighted reduction and its gradient
    ds = ld.Dataset.from_arrays(scalars={"x": xs})
    results = {}
    for kernel in ("numpy", "fused") if numba_available() else ("numpy",):
        ex = Execution(kernel=kernel)
        pm = PreparedModel.prepare(cm, ex)
        assert pm.kernel == kernel
        results[kernel] = pm.reduce_with_gradient(ex, point, pm.prepare_dataset(ex, ds),
                                                  ld.ReductionPlan.weighted_real())
    for r in results.values():
        assert r.value == pytest.approx(math.fsum(reference(point)), rel=1e-13)
        np.testing.assert_allclose(r.gradient, fd.sum(axis=0), rtol=1e-7)
    # printed for CUDA from its one spelling
    src = generate_cuda_source(cm.split, "f64")
    assert re.search(r"= \((v\d+) \* \1 \* \1\);", src.body)
    if NVCC is not None:
        compile_with_nvcc(src.text, ptx=True, output=tmp_path / "cube.ptx")


def test_registration_errors_and_missing_spellings():
    with pytest.raises(ModelError, match="operation 'sin' is already defined"):
        register_operation("sin", 1, "xp.sin({0})", lambda r: (r.g,))
    with pytest.raises(ModelError, match=r"the template '\(\{0\} \+ \{1\}\)' does not fit 1 argument"):
        register_operation("toy_bad", 1, "({0} + {1})", lambda r: (r.g,))
    with pytest.raises(ModelError, match="derivative rule of 'toy_bad' must return one Term"):
        register_operation("toy_bad", 1, "({0} * 2.0)", lambda r: (r.g, r.g))
    with pytest.raises(ModelError, match="built-in operation 'mul' cannot be removed"):
        unregister_operation("mul")
    assert "toy_bad" not in OPS
    # an operation without a CUDA spelling: usable on the CPU, refused by the CUDA printer
    # with its name
    twice = register_operation("toy_twice", 1, "({0} * 2.0)", lambda r: (r.g * 2.0,))
    try:
        cm = CompiledModel.from_expr(twice(ld.parameter("a") * ld.scalar("x")))
        assert cm.values(cm.event_cache({"x": np.array([1.5])}), [2.0])[0] == 6.0
        assert str(call("toy_twice", 1.5)) == "(1.5 * 2.0)"
        with pytest.raises(ModelError, match="operation 'toy_twice' has no CUDA spelling"):
            generate_cuda_source(cm.split, "f64")
    finally:
        unregister_operation("toy_twice")
    with pytest.raises(ModelError, match="unknown operation 'toy_twice'"):
        apply("toy_twice", ld.scalar("x"))


# ---------------------------------------------------------------------------------------
# the preludes are files of the package
# ---------------------------------------------------------------------------------------
def test_the_preludes_are_shipped_with_the_package(tmp_path):
    """A built package holds both preludes the printers read (the ``.cuh`` is package data)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    tree = tmp_path / "src"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(root / "laddu_dask", tree / "laddu_dask", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, tree / name)
    proc = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib",
         str(tmp_path / "lib")],
        cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    shipped = tmp_path / "lib" / "laddu_dask" / "compile"
    for name in ("cuda_prelude.cuh", "numba_prelude.py"):
        assert (shipped / name).read_text() == (root / "laddu_dask" / "compile" / name).read_text()
