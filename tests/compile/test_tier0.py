"""Tier-0 kernels: the first evaluations run while Numba compiles, with the fused kernels' bits.

* every tier-0 helper computes what the Numba spelling of its operation computes, bit for
  bit, on random and special values (zeros of both signs, infinities, NaN, subnormals,
  overflow and domain edges), checked against Numba itself;
* the tier-0 kernel of a model writes the rows the fused ``value_terms`` /
  ``gradient_terms`` write, bit for bit (KsKs line shapes and a model of every operation);
* an evaluation while the fused kernel compiles runs the tier-0 kernel, and gives the same
  value and gradient as the fused kernel afterwards (and as the array code, to 1e-12);
* a rejected event is reported as the fused kernel reports it; a model without a tier-0
  form, or in float32, waits for the fused kernel;
* the compilation in a child process leaves machine code the parent loads.
"""

from __future__ import annotations

import math
import threading
import uuid

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.compile import precompile
from laddu_dask.compile import tier0_prelude as t0p
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.fused import fused_kernels, prelude
from laddu_dask.compile.tier0 import Tier0Printer, tier0_kernel
from laddu_dask.errors import NonPositiveIntensityError
from laddu_dask.expr.ops import _BUILTIN, COMPLEX, REAL, SPEC
from laddu_dask.runtime.compilations import numba_available

pytestmark = [pytest.mark.skipif(not numba_available(), reason="the reference is Numba"),
              pytest.mark.usefixtures("tier0")]

SPECIALS = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 5e-324, -1e-310, 1e308, -1e308,
            0.5, 1.0000000000000002, 0.9999999999999999, -0.9999999999999999, 709.9, -745.5,
            1e-8, 3.0, -2.5, 1e154, 1e-160]


def _reals(rng: np.random.Generator, n: int) -> np.ndarray:
    body = rng.normal(size=n) * np.exp(rng.normal(scale=3.0, size=n))
    body[: n // 4] = rng.uniform(-1.2, 1.2, n // 4)  # acos's domain and its edges
    picks = rng.choice(np.array(SPECIALS), size=n // 4)
    body[n // 4: n // 2] = picks
    return body


def _complexes(rng: np.random.Generator, n: int) -> np.ndarray:
    z = np.empty(n, dtype=np.complex128)
    z.real, z.imag = _reals(rng, n), _reals(rng, n)
    return z


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return (a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))


def _forms() -> list[tuple[str, tuple[str, ...], bool, int | None]]:
    """Every (operation, operand kinds, forward, exponent) of the built-in spec."""
    out = []
    for op in sorted(_BUILTIN):
        spec = SPEC[op]
        combos = [(REAL,) * spec.arity] if spec.real_args else [
            tuple(COMPLEX if (k >> i) & 1 else REAL for i in range(spec.arity))
            for k in range(2 ** spec.arity)]
        for kinds in combos:
            for forward in ((True, False) if op == "div" else (False,)):
                for attr in ((-3, -1, 2, 3, 4, 7) if op == "powi" else (None,)):
                    out.append((op, kinds, forward, attr))
    return out


#: Forms with no tier-0 helper: Numba computes them through its own complex library (cpow,
#: complex transcendental functions); a model using one waits for the fused kernel.
#: (``to_complex`` of a complex value is never built: the graph promotes real values only.)
WITHOUT_TIER0 = {("exp", "c"), ("log", "c"), ("sin", "c"), ("cos", "c"), ("tan", "c"),
                 ("pow", "rc"), ("pow", "cr"), ("pow", "cc"), ("to_complex", "c")}


def _letters(kinds: tuple[str, ...]) -> str:
    return "".join("c" if k == COMPLEX else "r" for k in kinds)


def test_the_forms_without_a_tier0_helper_are_the_known_ones():
    pr = Tier0Printer([])
    missing = {(op, _letters(k)) for op, k, fw, _ in _forms() if pr.form(op, k, fw) is None}
    assert missing == WITHOUT_TIER0


def test_every_tier0_helper_is_numba_bit_for_bit():
    import numba

    rng = np.random.default_rng(20261201)
    n = 4000
    r = [_reals(rng, n), _reals(rng, n)]
    c = [_complexes(rng, n), _complexes(rng, n)]
    pr = Tier0Printer([])
    forms = [f for f in _forms() if pr.form(f[0], f[1], f[2]) is not None and f[0] != "to_complex"
             or f[:2] == ("to_complex", (REAL,))]
    forms = [f for f in forms if not (f[0] == "powi" and f[1] == (COMPLEX,) and f[3] != 2)]
    lines, checks = [], []
    for k, (op, kinds, forward, attr) in enumerate(forms):
        args = [f"{'c' if kd == COMPLEX else 'r'}{i}[i]" for i, kd in enumerate(kinds)]
        if op == "powi" and attr < 0 and kinds == (REAL,):
            args = ["rp[i]"]  # Numba raises for a negative power of zero (or of an underflow)
        if op == "sqrt" and kinds == (COMPLEX,):
            args = ["cs[i]"]  # Numba raises where (|a| + hypot(a, b)) / 2 underflows to 0
        nb = SPEC[op].numba_form(kinds, forward).format(*args, attr=attr)
        result = SPEC[op].kind(kinds)
        lines.append(f"        out_{'c' if result == COMPLEX else 'r'}[{k}, i] = {nb}")
        checks.append((op, kinds, forward, attr, result))
    mod = prelude()
    env = {"np": np, "math": math, **{k: v for k, v in vars(mod).items() if k.startswith("_")}}
    head = "def run(r0, r1, rp, c0, c1, cs, out_r, out_c):\n    for i in range(r0.shape[0]):\n"
    src = head + "\n".join(lines)
    exec(src, env)  # noqa: S102 - the spec's Numba spellings, printed here
    run = numba.njit(error_model="numpy")(env["run"])

    # Numba raises ZeroDivisionError for a complex quotient by zero: divisors are not zero
    c1 = np.where(c[1] == 0, 1.0 + 0j, c[1])
    r1 = np.where(r[1] == 0, 1.0, r[1])
    rp = np.where(np.abs(r[0]) < 1e-30, 1.0, r[0])
    tiny = (np.abs(c[0].real) < 1e-300) & (np.abs(c[0].imag) < 1e-300) & (c[0] != 0)
    cs = np.where(tiny, 1.0 + 0j, c[0])
    orr = np.zeros((len(forms), n))
    oc = np.zeros((len(forms), n), dtype=np.complex128)
    with np.errstate(all="ignore"):
        run(r[0], r1, rp, c[0], c1, cs, orr, oc)
    failures = []
    for k, (op, kinds, forward, attr, result) in enumerate(checks):
        operands = []
        for i, kd in enumerate(kinds):
            if kd == COMPLEX:
                z = (cs if op == "sqrt" else c[0]) if i == 0 else c1
                operands.append((z.real.copy(), z.imag.copy()))
            elif op == "powi" and attr < 0:
                operands.append(rp)
            else:
                operands.append(r[0] if i == 0 else r1)
        template = pr.form(op, kinds, forward)
        src = template.format(*[f"a{i}" for i in range(len(kinds))], attr=attr)
        with np.errstate(all="ignore"):
            got = eval(src, {**vars(t0p), **{f"a{i}": v for i, v in enumerate(operands)}})  # noqa: S307
        if result == COMPLEX:
            ok = _same_bits(got[0], oc[k].real) & _same_bits(got[1], oc[k].imag)
        else:
            ok = _same_bits(got, orr[k])
        if not ok.all():
            j = int(np.argmin(ok))
            first = operands[0][0] if isinstance(operands[0], tuple) else operands[0]
            failures.append(f"{op}{kinds} forward={forward} attr={attr}: at {first[j]!r}")
    assert not failures, failures


def test_a_complex_division_by_zero_leaves_the_evaluation_to_the_fused_kernel():
    with pytest.raises(t0p.Tier0Fallback, match="division by zero"):
        t0p.div_cc((np.array([1.0]), np.array([1.0])), (np.array([0.0]), np.array([-0.0])))
    with pytest.raises(t0p.Tier0Fallback, match="cpow"):
        t0p.powi_c((np.array([1.0]), np.array([1.0])), 3)
    z = ld.complex(ld.scalar("x"), ld.parameter("a"))
    assert tier0_kernel(CompiledModel.from_expr((z ** 3).norm_sqr()).split) is None
    with pytest.raises(t0p.Tier0Fallback, match="square root"):
        t0p.sqrt_c((np.array([0.0]), np.array([5e-324])))
    with pytest.raises(t0p.Tier0Fallback, match="negative power of zero"):
        t0p.powi_r(np.array([2.0, 1e-200]), -3)


def _random_caches(split, rng, n):
    caches = []
    for node in split.cache:
        if node.kind == COMPLEX:
            caches.append(rng.normal(size=n) + 1j * rng.normal(size=n))
        else:
            caches.append(rng.uniform(0.5, 2.0, size=n))
    return caches


def _every_operation_model():
    x, y = ld.scalar("x"), ld.scalar("y")
    a, b = ld.parameter("a"), ld.parameter("b")
    z = ld.complex(x, a * y)
    w = ld.polar_complex(b, x * a)
    parts = [
        (z * w / (w + 2.0)).norm_sqr(),
        ld.expr.apply("sqrt", a * x + 3.0) * ld.expr.apply("log", b * y + 1.5),
        ld.expr.apply("exp", -a * x) + ld.expr.apply("sin", b * y) ** 2 + ld.expr.apply("cos", a * x),
        ld.expr.apply("atan2", a * y, x) + ld.expr.apply("acos", (a * x) / 3.0),
        ld.expr.apply("pow", a * x + 1.0, b) + (a * x) ** 3 + 1.0 / ((b * y) ** 2 + 1.0),
        ld.expr.apply("abs", z - w) + ld.expr.apply("tan", a * x / 4.0) ** 2,
        (ld.expr.apply("conj", z) * w).real() ** 2 + (z * w).imag() ** 2,
        (ld.expr.apply("cis", a * x) * z).norm_sqr(),
        (ld.expr.apply("sqrt", z * w - 0.5)).norm_sqr(),
    ]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


@pytest.mark.parametrize("model", ["rbw", "bw", "every"])
def test_a_tier0_kernel_writes_the_fused_kernels_rows_bit_for_bit(model):
    expr = _every_operation_model() if model == "every" else ksks.model(model)
    split = CompiledModel.from_expr(expr).split
    t0 = tier0_kernel(split)
    assert t0 is not None
    fk = fused_kernels(split)
    rng = np.random.default_rng(7)
    n = 20000 + 37  # more than one tier-0 block, and a partial one
    caches = _random_caches(split, rng, n)
    w = rng.uniform(0.5, 1.5, n)
    p = rng.uniform(0.6, 1.4, len(split.free))
    for transform in (0, 2):
        for with_gradient in (False, True):
            rows = 1 + fk.boundary_size if with_gradient else 1
            out, bad = np.zeros((rows, n)), np.zeros(1)
            fn = fk.gradient_terms if with_gradient else fk.value_terms
            index = fn(*caches, w, p, transform, out, bad)
            with np.errstate(all="ignore"):
                got, index0, _ = t0(*caches, w, p, transform, with_gradient)
            assert index == index0 == -1
            assert _same_bits(got, out).all(), (transform, with_gradient)


def test_a_rejected_event_is_the_one_the_fused_kernel_names():
    x, a = ld.scalar("x"), ld.parameter("a")
    split = CompiledModel.from_expr((a * x - 1.0) * 1.0 + a * 0.0).split
    t0 = tier0_kernel(split)
    fk = fused_kernels(split)
    xs = np.linspace(0.5, 3.0, 50000)
    w = np.ones_like(xs)
    p = np.array([0.5])  # a x - 1 <= 0 for x <= 2: the first event is rejected under the log
    out, bad = np.zeros((1, xs.size)), np.zeros(1)
    index = fk.value_terms(xs, w, p, 2, out, bad)
    got, index0, value0 = t0(xs, w, p, 2, False)
    assert index0 == index == 0 and value0 == bad[0]
    xs2 = xs[::-1].copy()  # the first rejected event late in the partition, in a later block
    index = fk.value_terms(xs2, w, p, 2, out, bad)
    got, index0, value0 = t0(xs2, w, p, 2, False)
    assert index0 == index > 16384 and value0 == bad[0]


def test_a_model_without_a_tier0_form_or_in_float32_has_no_tier0_kernel():
    z = ld.complex(ld.scalar("x"), ld.parameter("a"))
    split = CompiledModel.from_expr(ld.expr.apply("exp", z).norm_sqr()).split
    assert tier0_kernel(split) is None  # complex exp: Numba's own complex library
    ok = CompiledModel.from_expr((z * z).norm_sqr()).split
    assert tier0_kernel(ok) is not None and tier0_kernel(ok, "f32") is None


def _likelihood(tag: float, execution: ld.Execution) -> ld.Likelihood:
    rng = np.random.default_rng(11)
    x = ld.scalar("x")
    a, b = ld.parameter("a"), ld.parameter("b")
    model = (ld.complex(a * x, b) / (x + a * tag)).norm_sqr() + 0.25  # tag: in the fused kernel
    data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.5, 2.0, 5000)}, chunk_size=2000)
    mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.5, 2.0, 9000)}, chunk_size=3000)
    return ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="toy")], execution=execution)


def _reducer(lik: ld.Likelihood):
    [prep] = lik.terms[0]._prepared.values()
    return prep.model.reducer


def test_evaluations_while_the_kernel_compiles_run_tier0_with_the_fused_bits(monkeypatch):
    release = threading.Event()
    real = precompile.compile_in_child

    def held(fused, with_gradient, timeout=None):
        release.wait(60)  # the compilation is still running while the fit evaluates
        return real(fused, with_gradient, timeout)

    monkeypatch.setattr(precompile, "compile_in_child", held)
    tag = 1.0 + uuid.uuid4().int % 2**40 / 2**42  # a model no earlier process compiled
    lik = _likelihood(tag, ld.Execution(kernel="fused", normalization="general"))
    point = [0.7, 0.3]
    first = [lik.value_and_gradient(point) for _ in range(3)]
    reducer = _reducer(lik)
    assert not reducer._ready[True] and reducer._compiling[True].is_alive()  # tier-0 served them
    release.set()
    assert reducer.wait_compiled(600)
    fused = lik.value_and_gradient(point)
    assert reducer._ready[True]
    for value, grad in first:
        assert value == fused[0] and grad.tobytes() == fused[1].tobytes()
    ref = ld.Likelihood(lik.terms, execution=ld.Execution(kernel="numpy", normalization="general"))
    v2, g2 = ref.value_and_gradient(point)
    assert fused[0] == pytest.approx(v2, rel=1e-12) and np.allclose(fused[1], g2, rtol=1e-10)


def test_a_rejected_event_under_tier0_is_reported_as_the_fused_kernel_reports_it(monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(precompile, "compile_in_child", lambda *a, **k: release.wait(60) and False)
    x, a = ld.scalar("x"), ld.parameter("a")
    tag = 1.0 + uuid.uuid4().int % 2**40 / 2**42
    model = a * x - tag
    data = ld.Dataset.from_arrays(scalars={"x": np.linspace(0.5, 3.0, 3000)}, chunk_size=1000)
    mc = ld.Dataset.from_arrays(scalars={"x": np.linspace(2.5, 3.0, 3000)}, chunk_size=1000)
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="line")],
                        execution=ld.Execution(kernel="fused", normalization="general"))
    with pytest.raises(NonPositiveIntensityError) as tier0_err:
        lik.value_and_gradient([1.0])
    reducer = _reducer(lik)
    assert reducer._compiling[True].is_alive()
    release.set()
    assert reducer.wait_compiled(600)
    with pytest.raises(NonPositiveIntensityError) as fused_err:
        lik.value_and_gradient([1.0])
    assert str(tier0_err.value) == str(fused_err.value)
    assert "event 0" in str(fused_err.value)


def test_a_child_compilation_leaves_machine_code_the_parent_loads():
    tag = 2.0 + uuid.uuid4().int % 2**40 / 2**42
    x, a = ld.scalar("x"), ld.parameter("a")
    fk = fused_kernels(CompiledModel.from_expr((a * x + tag).norm_sqr()).split)
    assert not fk.on_disk(True)
    assert precompile.compile_in_child(fk, True)
    assert fk.on_disk(True)
    assert fk.compile_ahead(True)
    assert sum(fk.gradient_sum.stats.cache_hits.values()) == 1  # loaded, not compiled here
    assert sum(fk.gradient_sum.stats.cache_misses.values()) == 0
