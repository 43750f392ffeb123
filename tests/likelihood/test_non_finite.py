"""Non-finite intensities, terms, gradients and sums are errors that name the event and
its file, in every kernel, precision and storage (issue 8, item 8).

A model ``exp(a x)`` overflows at one event: ``x = 800`` overflows float64 (and float32),
``x = 100`` (``exp(100) = 2.7e43``) overflows only float32, inside the kernel.  The
reference for each expected error is the event index where the test put the bad value
and the Parquet file (with its row range) that holds it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.parquet import read_parquet
from laddu_dask.errors import NonFiniteError, NonPositiveIntensityError
from laddu_dask.likelihood import NLL, ExtendedNLL, Likelihood
from laddu_dask.runtime.compilations import numba_available
from laddu_dask.runtime.execution import Execution

KERNELS = ["fused", "numpy"] if numba_available() else ["numpy"]
A = ld.parameter("a", initial=1.0)
X = ld.scalar("x")
EXP = ld.Model((A * X).exp())  # not a sum of squares: the accepted MC goes through the event loop
N, BAD, CHUNK = 1300, 1037, 300  # the bad event is in the fourth partition, past a fused block


def _file(tmp_path, name: str, x: np.ndarray, weights: np.ndarray | None = None) -> str:
    path = tmp_path / name
    Dataset.from_arrays(scalars={"x": x}, weights=weights).write_parquet(path)
    return str(path)


def _x(bad_value: float | None = None) -> np.ndarray:
    x = np.linspace(0.1, 1.0, N)
    if bad_value is not None:
        x[BAD] = bad_value
    return x


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("precision", "bad_x"), [("f64", 800.0), ("f32", 800.0), ("f32", 100.0)],
                         ids=["f64", "f32", "f32-overflow-in-kernel"])
@pytest.mark.parametrize("where", ["data", "accepted_mc"])
def test_infinite_intensity_names_event_and_file(tmp_path, where, precision, bad_x, kernel):
    """Before: (-inf, [nan]) in f64, (-inf, -2.19) in f32, returned as a normal result."""
    bad = _file(tmp_path, f"{where}.parquet", _x(bad_x))
    good = _file(tmp_path, "good.parquet", _x())
    transform = "log_positive_real" if where == "data" else "real"
    message = (rf"non-finite intensity inf at event {BAD} \({bad} \[rows 900:1200\]\); "
               rf"a {transform} reduction needs finite values")
    for policy in ("resident", "streaming"):
        files = {"data": good, "accepted_mc": good, where: bad}
        data, mc = (read_parquet(files[k], chunk_size=CHUNK, memory_policy=policy)
                    for k in ("data", "accepted_mc"))
        for term in (NLL, ExtendedNLL):
            ex = Execution(kernel=kernel, precision=precision)
            lik = Likelihood([term(EXP, data=data, accepted_mc=mc)], execution=ex)
            for call in (lik.value, lik.value_and_gradient):
                with pytest.raises(NonFiniteError, match=message):
                    call([1.0])
            assert {d.strategy for d in ex.memory_decisions()} == {policy}


@pytest.mark.parametrize("kernel", KERNELS)
def test_finite_intensity_whose_derivative_overflows(tmp_path, kernel):
    """exp(709) = 8e307 is finite, its derivative in ``a``, 709 exp(709), is not: in the
    accepted-MC sum (its log in the data sum keeps it finite)."""
    mc = read_parquet(_file(tmp_path, "mc.parquet", _x(709.0)), chunk_size=CHUNK)
    data = read_parquet(_file(tmp_path, "data.parquet", _x()), chunk_size=CHUNK)
    lik = Likelihood([ExtendedNLL(EXP, data=data, accepted_mc=mc)],
                     execution=Execution(kernel=kernel))
    assert math.isfinite(lik.value([1.0]))
    with pytest.raises(NonFiniteError, match=rf"non-finite gradient term \(a derivative of w t\(I\)\) "
                                             rf"inf at event {BAD} \(.*mc.parquet \[rows 900:1200\]\)"):
        lik.value_and_gradient([1.0])


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_term_that_overflows_names_the_event(tmp_path, kernel):
    """A finite intensity times its weight beyond the float range."""
    w = np.ones(N)
    w[BAD] = 1e300
    mc = read_parquet(_file(tmp_path, "mc.parquet", _x(30.0), w), chunk_size=CHUNK)  # 1e300 e^30
    data = read_parquet(_file(tmp_path, "data.parquet", _x()), chunk_size=CHUNK)
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=mc)], execution=Execution(kernel=kernel))
    for call in (lik.value, lik.value_and_gradient):
        with pytest.raises(NonFiniteError, match=rf"non-finite term w t\(I\) inf at event {BAD} "
                                                 rf"\(.*mc.parquet \[rows 900:1200\]\)"):
            call([1.0])


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("policy", ["resident", "streaming"])
def test_nll_whose_sum_overflows(tmp_path, kernel, policy):
    """Finite terms (w ln I = 1e306 x 150) whose exact sum is beyond the float range."""
    w = np.full(4, 1e306)
    path = _file(tmp_path, "data.parquet", np.full(4, 150.0), w)
    data = read_parquet(path, chunk_size=2, memory_policy=policy)
    mc = read_parquet(_file(tmp_path, "mc.parquet", _x()), chunk_size=CHUNK)
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=mc, name="big")],
                     execution=Execution(kernel=kernel))
    for call in (lik.value, lik.value_and_gradient):
        with pytest.raises(NonFiniteError, match=rf"the sum of the per-event terms over big/data "
                                                 rf"\({path}\) is inf: it overflows the float range"):
            call([1.0])


def test_nll_that_overflows_after_the_sums():
    """Each sum is finite, N_w ln(sum_accmc w I) is not."""
    data = Dataset.from_arrays(scalars={"x": np.full(2, 1e-3)}, weights=np.full(2, 1e306))
    mc = Dataset.from_arrays(scalars={"x": np.full(3, 700.0)})
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=mc, name="huge")])
    with pytest.raises(NonFiniteError, match=r"term 'huge': the nll is inf, beyond the float range"):
        lik.value([1.0])


def test_data_weights_whose_sum_overflows():
    data = Dataset.from_arrays(scalars={"x": np.full(2, 1e-3)}, weights=np.full(2, 1e308))
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=Dataset.from_arrays(scalars={"x": _x()}),
                          name="w")])
    with pytest.raises(NonFiniteError, match=r"term 'w': the data weights \(arrays\) sum to inf"):
        lik.value([1.0])


def test_overflowing_data_weights_name_every_file_of_the_data(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = [tmp_path / f"part{i}.parquet" for i in range(2)]
    for path in paths:
        pq.write_table(pa.table({"x": np.full(2, 1e-3), "weight": np.full(2, 1e308)}), path)
    lik = Likelihood([NLL(EXP, data=ld.read_parquet([str(p) for p in paths]),
                          accepted_mc=Dataset.from_arrays(scalars={"x": _x()}), name="w")])
    with pytest.raises(NonFiniteError, match=rf"^term 'w': the data weights \({paths[0]}, {paths[1]}\) "
                                             r"sum to inf, beyond the float range$"):
        lik.value([1.0])


@pytest.mark.parametrize("kernel", KERNELS)
def test_zero_data_intensity_stays_a_non_positive_error(kernel):
    x = _x()
    x[BAD] = 0.0
    model = ld.Model(A * X)
    data = Dataset.from_arrays(scalars={"x": x}, chunk_size=CHUNK)
    lik = Likelihood([NLL(model, data=data, accepted_mc=Dataset.from_arrays(scalars={"x": _x()}))],
                     execution=Execution(kernel=kernel))
    with pytest.raises(NonPositiveIntensityError, match=rf"non-positive intensity 0\.0 at event {BAD}"):
        lik.value_and_gradient([1.0])


def test_streamed_data_weights_whose_sum_overflows(tmp_path):
    path = tmp_path / "heavy.parquet"
    Dataset.from_arrays(scalars={"x": np.full(2, 1e-3)}, weights=np.full(2, 1e308)).write_parquet(path)
    data = ld.read_parquet(path, memory_policy="streaming")
    with pytest.raises(NonFiniteError, match=r"the weights of .*heavy\.parquet sum to more than"):
        data.sum_weights()
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=Dataset.from_arrays(scalars={"x": _x()}),
                          name="w")])
    with pytest.raises(NonFiniteError, match=r"heavy\.parquet"):
        lik.value([1.0])


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_bad_event_in_a_threads_slice_of_one_partition(tmp_path, kernel):
    """A partition larger than its threads' shares is reduced as slices, one per thread:
    the value and gradient are the unsliced ones bit for bit, and a bad event in the second
    slice is still named by its index in the file."""
    import laddu_dask.runtime.jobs as jobs

    n, bad_at = 40_000, 31_234
    x = np.linspace(0.1, 1.0, n)
    good = _file(tmp_path, "good.parquet", x)
    x[bad_at] = 800.0
    bad = _file(tmp_path, "bad.parquet", x)

    def lik(path):
        data = read_parquet(path, chunk_size=n)
        return Likelihood([NLL(EXP, data=data, accepted_mc=read_parquet(good, chunk_size=n))],
                          execution=Execution(kernel=kernel, num_workers=2))

    groups, cut = [], jobs.thread_groups

    def recorded(parts, threads):
        groups.append(cut(parts, threads))
        return groups[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jobs, "thread_groups", recorded)
        sliced = lik(good).value_and_gradient([1.0])
        mp.setattr(jobs, "MIN_SLICE_EVENTS", 10**12)  # one task per partition
        whole = lik(good).value_and_gradient([1.0])
    assert [[p.n for p in g] for g in groups[0]] == [[20_000], [20_000]]  # the data, in two slices
    assert sliced[0] == whole[0] and np.array_equal(sliced[1], whole[1])
    with pytest.raises(NonFiniteError, match=rf"at event {bad_at} \({bad} \[rows 0:{n}\]\)"):
        lik(bad).value([1.0])


Y = ld.scalar("y")
#: I = a x y + a^2: with x y = O(1) but y = 1e200, the reverse sweep's adjoint of a x is
#: (w / I) y, which overflows for w = 1e300 although the gradient term w (x y + 2a) / I does not
SCALED_MODEL = ld.Model((A * X) * Y + A * A)
SX = np.array([1e-200, 2e-200, 1.0, 0.5])
SY = np.array([1e200, 3e200, 2.0, 0.25])
SW = np.array([1e300, 2e300, 1e300, 3e299])
MX, MY = np.array([0.5, 1.0, 2.0, 4.0]), np.array([1.0, 0.5, 3.0, 2.0])


def _mp_nll_and_gradient(a: float) -> tuple[float, float]:
    """The NLL and its derivative in ``a`` at 60 digits (mpmath), from the closed form."""
    import mpmath

    with mpmath.workdps(60):
        a = mpmath.mpf(a)
        xy = [mpmath.mpf(x) * mpmath.mpf(y) for x, y in zip(SX, SY, strict=True)]
        w = [mpmath.mpf(v) for v in SW]
        intensity = [a * v + a * a for v in xy]
        n_w = mpmath.fsum(w)
        mxy = [mpmath.mpf(x) * mpmath.mpf(y) for x, y in zip(MX, MY, strict=True)]
        s_mc = mpmath.fsum(a * v + a * a for v in mxy)
        g_mc = mpmath.fsum(v + 2 * a for v in mxy)
        value = -2 * (mpmath.fsum(wi * mpmath.log(i) for wi, i in zip(w, intensity, strict=True))
                      - n_w * mpmath.log(s_mc))
        grad = -2 * (mpmath.fsum(wi * (v + 2 * a) / i for wi, v, i in zip(w, xy, intensity, strict=True))
                     - n_w * g_mc / s_mc)
        return float(value), float(grad)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_gradient_term_whose_intermediate_overflows_is_computed_scaled(kernel):
    """The kernels' w dI/da overflows inside the reverse sweep for two events (issue 23,
    item 14): those entries are recomputed with the weight scaled by a power of two; the
    gradient is the mpmath one, the same bits for any partitioning, and the other kernel's."""
    def lik(chunk: int, k: str = kernel) -> Likelihood:
        data = Dataset.from_arrays(scalars={"x": SX, "y": SY}, weights=SW, chunk_size=chunk)
        mc = Dataset.from_arrays(scalars={"x": MX, "y": MY}, chunk_size=chunk)
        return Likelihood([NLL(SCALED_MODEL, data=data, accepted_mc=mc)], execution=Execution(kernel=k))

    value, grad = lik(4).value_and_gradient([1.5])
    ref_value, ref_grad = _mp_nll_and_gradient(1.5)
    assert value == pytest.approx(ref_value, rel=1e-14)
    assert grad[0] == pytest.approx(ref_grad, rel=1e-12)
    for chunk in (1, 3):
        v, g = lik(chunk).value_and_gradient([1.5])
        assert v == value and g.tobytes() == grad.tobytes()
    v, g = lik(4, "numpy" if kernel == "fused" else "fused").value_and_gradient([1.5])
    assert v == pytest.approx(value, rel=1e-14) and g == pytest.approx(grad, rel=1e-14)


def test_a_term_beyond_the_float_range_says_so_with_its_magnitude():
    """A term that is itself beyond the float range (w e^x with w = 1e300, x = 30) stays an
    error, which now says it is the product with the weight that overflows and how large it is."""
    w = np.ones(4)
    w[2] = 1e300
    mc = Dataset.from_arrays(scalars={"x": np.array([0.1, 0.2, 30.0, 0.3])}, weights=w)
    data = Dataset.from_arrays(scalars={"x": np.array([0.1, 0.2])})
    lik = Likelihood([NLL(EXP, data=data, accepted_mc=mc)], execution=Execution(kernel="numpy"))
    with pytest.raises(NonFiniteError, match=r"non-finite term w t\(I\) inf at event 2 \(arrays.*\); it is "
                                             r"1\.07e\+313 \(computed with its weight 1e\+300 scaled by "
                                             r"2\*\*-32\), beyond the float range: the product with the "
                                             r"weight overflows, an intermediate of the likelihood"):
        lik.value([1.0])
    linear = ld.Model(A * X)  # w a x = 1e305 at a = 1e-10 is finite, its derivative w x = 1e315 is not
    mc = Dataset.from_arrays(scalars={"x": np.array([1.0, 1e15])}, weights=np.array([1.0, 1e300]))
    lik = Likelihood([NLL(linear, data=data, accepted_mc=mc)], execution=Execution(kernel="numpy"))
    assert math.isfinite(lik.value([1e-10]))
    with pytest.raises(NonFiniteError, match=r"non-finite gradient term \(a derivative of w t\(I\)\) inf at "
                                             r"event 1 \(arrays.*\); it is 1e\+315 .*an intermediate of "
                                             r"the likelihood, which may itself be finite"):
        lik.value_and_gradient([1e-10])


@pytest.mark.skipif(not numba_available(), reason="the tier-0 start needs Numba")
@pytest.mark.usefixtures("tier0")
def test_the_scaled_redo_under_tier0_gives_the_fused_bits(monkeypatch):
    """While the fused kernel compiles, the tier-0 kernel serves the evaluation and redoes
    the overflowing entries itself: the same bits as the compiled fused kernel's redo."""
    import threading
    import uuid

    from laddu_dask.compile import precompile

    release = threading.Event()
    monkeypatch.setattr(precompile, "compile_in_child", lambda *a, **k: release.wait(60) and False)
    tag = 1.0 + uuid.uuid4().int % 2**40 / 2**42  # a model no earlier process compiled
    model = ld.Model((A * X) * Y + A * A * tag)

    def lik(kernel: str) -> Likelihood:
        data = Dataset.from_arrays(scalars={"x": SX, "y": SY}, weights=SW)
        mc = Dataset.from_arrays(scalars={"x": MX, "y": MY})
        return Likelihood([NLL(model, data=data, accepted_mc=mc)], execution=Execution(kernel=kernel))

    fused = lik("fused")
    value, grad = fused.value_and_gradient([1.5])
    [prep] = fused.terms[0]._prepared.values()
    assert prep.model.reducer._compiling[True].is_alive()  # tier-0 served it
    release.set()
    assert prep.model.reducer.wait_compiled(600)
    v, g = fused.value_and_gradient([1.5])  # the fused kernel's own redo
    assert prep.model.reducer._ready[True]
    assert math.isfinite(value) and v == value and g.tobytes() == grad.tobytes()
    v, g = lik("numpy").value_and_gradient([1.5])
    assert v == pytest.approx(value, rel=1e-14) and g == pytest.approx(grad, rel=1e-14)


def test_n_w_times_the_mc_gradient_overflowing_is_computed_scaled():
    """Data weights near 1e300 make N_w * sum_accmc w dI/da overflow although the NLL's
    gradient -2 (g_data - N_w g_mc / s_mc) is finite (issue 23, item 14): the mpmath value."""
    import mpmath

    model = ld.Model(A * X + 1.0)
    xd, wd, xm = [1.0, 2.0], [1e300, 2e300], [1e10, 3e10]
    data = Dataset.from_arrays(scalars={"x": np.array(xd)}, weights=np.array(wd))
    mc = Dataset.from_arrays(scalars={"x": np.array(xm)})
    for normalization in ("general", "auto"):
        lik = Likelihood([NLL(model, data=data, accepted_mc=mc)],
                         execution=Execution(normalization=normalization))
        value, grad = lik.value_and_gradient([1.5])
        with mpmath.workdps(50):
            a = mpmath.mpf(1.5)
            g_data = mpmath.fsum(mpmath.mpf(w) * x / (a * x + 1) for w, x in zip(wd, xd, strict=True))
            n_w, s_mc, g_mc = mpmath.fsum(wd), mpmath.fsum(a * x + 1 for x in xm), mpmath.fsum(xm)
            ref = -2 * (g_data - n_w * g_mc / s_mc)
        assert math.isfinite(value) and grad[0] == pytest.approx(float(ref), rel=1e-12)
