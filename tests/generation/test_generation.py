"""Monte Carlo generation (issue 13, item 3): ``Generator(channel).weighted/unweighted``.

References: closed forms (flat decay angles, the three-body phase-space mass density
``q(M; m, m_c) q(m; m_a, m_b) / m`` integrated by scipy), angular moments of a Zlm model by
quadrature with scipy's spherical harmonics, and laddu 0.28.1's ``Generator`` on the same
topology (its mean weight, the phase-space integral, and its distributions by two-sample
tests).  Goodness-of-fit tests use fixed seeds and p-values far from the 1e-3 threshold.
"""

from __future__ import annotations

import math
import os
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.integrate
import scipy.special
import scipy.stats

import laddu_dask as ld
from laddu_dask.errors import GenerationError, ModelError, NonPositiveIntensityError, ParameterError
from laddu_dask.files import OUTPUT_MARKER

try:
    from tests import laddu_reference as lr
except ImportError:  # pytest's default "prepend" import mode puts tests/ on sys.path
    import laddu_reference as lr

needs_laddu = pytest.mark.skipif(not lr.laddu_available(), reason="laddu is not installed")

M_KS = ld.particles.K_SHORT.mass
M_PARENT = 1.8
P_VALUE = 1e-3


def _columns(dataset: ld.Dataset, name: str) -> np.ndarray:
    return np.column_stack([dataset.column(f"{name}_{c}") for c in ("e", "px", "py", "pz")])


def _m2(p4: np.ndarray) -> np.ndarray:
    return p4[:, 0] ** 2 - (p4[:, 1:] ** 2).sum(axis=1)


def _rest_frame(p4: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``p4`` in the rest frame of ``parent`` (independent of the generator's boost)."""
    beta = parent[:, 1:] / parent[:, :1]
    b2 = (beta**2).sum(axis=1)
    gamma = 1.0 / np.sqrt(1.0 - b2)
    bp = -(beta * p4[:, 1:]).sum(axis=1)
    e = gamma * (p4[:, 0] + bp)
    p3 = p4[:, 1:] - beta * ((gamma - 1.0) * bp / b2 + gamma * p4[:, 0])[:, None]
    return np.column_stack([e, p3])


def decay_channel(momentum=(0.0, 0.0, 0.0)):
    """A parent of mass 1.8 with a given momentum decaying isotropically to K_S K_S."""
    return ld.Channel("X -> K_S K_S", edges=[
        ld.Edge("X", particle=ld.Particle(mass=M_PARENT),
                initial_momentum=ld.InitialMomentum.momentum(list(momentum))),
        ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"],
                            generation=ld.VertexProposal.isotropic())])


def three_body_channel(lib=ld):
    """A parent at rest (mass 2.5) -> X pi0, X (uniform mass in [1, 2]) -> K_S K_S, in ``lib``
    (``laddu_dask`` or ``laddu``)."""
    return lib.Channel("P -> X pi0, X -> K_S K_S", edges=[
        lib.Edge("P", initial_momentum=lib.InitialMomentum.p4([2.5, 0.0, 0.0, 0.0]), output=False,
                 particle=lib.Particle(mass=2.5)),
        lib.Edge("X", mass_proposal=lib.MassProposal(1.0, high=2.0)),
        lib.Edge("pion", particle=lib.particles.PI_ZERO),
        lib.Edge("ks1", particle=lib.particles.K_SHORT), lib.Edge("ks2", particle=lib.particles.K_SHORT)],
        vertices=[lib.Vertex("first", incoming=["P"], outgoing=["X", "pion"]),
                  lib.Vertex("second", incoming=["X"], outgoing=["ks1", "ks2"])])


def photoproduction(lib, uniform_fraction=0.2):
    """laddu's gamma p -> X p, X -> K_S K_S tutorial channel (beam energy uniform in [8, 9]),
    the benchmark's own."""
    from laddu_dask_bench.generation_bench import channel

    return channel(lib, uniform_fraction)


# -- phase-space distributions ------------------------------------------------------------


def test_two_body_decay_angles_are_flat_in_the_rest_frame():
    events, report = ld.Generator(decay_channel(momentum=(0.3, -0.4, 2.0))).weighted(20_000, seed=3)
    parent, k1, k2 = (_columns(events, n) for n in ("X", "ks1", "ks2"))
    np.testing.assert_allclose(k1 + k2, parent, rtol=0, atol=1e-12)
    np.testing.assert_allclose(_m2(k1), M_KS**2, rtol=0, atol=1e-12)
    rest = _rest_frame(k1, parent)
    q = math.sqrt(M_PARENT**2 / 4 - M_KS**2)
    np.testing.assert_allclose(np.linalg.norm(rest[:, 1:], axis=1), q, rtol=1e-10)
    costheta = rest[:, 3] / np.linalg.norm(rest[:, 1:], axis=1)
    phi = np.arctan2(rest[:, 2], rest[:, 1])
    assert scipy.stats.kstest(costheta, scipy.stats.uniform(-1, 2).cdf).pvalue > P_VALUE
    assert scipy.stats.kstest(phi, scipy.stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > P_VALUE
    # every weight is the two-body phase space q / (4 pi m), the mean weight its integral
    np.testing.assert_allclose(events.weights(), q / (4 * math.pi * M_PARENT), rtol=1e-12)
    assert report.produced == report.proposals == 20_000 and report.envelope is None


def _breakup(parent, first, second):
    """Closed-form two-body breakup momentum."""
    return np.sqrt((parent**2 - (first + second) ** 2) * (parent**2 - (first - second) ** 2)) / (2 * parent)


def _three_body_density(m: np.ndarray | float) -> np.ndarray:
    m = np.atleast_1d(m)
    return _breakup(2.5, m, ld.particles.PI_ZERO.mass) * _breakup(m, M_KS, M_KS) / m


def test_mass_proposal_gives_the_phase_space_mass_spectrum():
    generator = ld.Generator(three_body_channel())
    grid = np.linspace(1.0, 2.0, 200_001)  # the CDF by the trapezoid rule on a fine grid
    table = scipy.integrate.cumulative_trapezoid(_three_body_density(grid), grid, initial=0.0)
    norm = table[-1]
    assert math.isclose(norm, scipy.integrate.quad(lambda m: _three_body_density(m)[0], 1.0, 2.0)[0],
                        rel_tol=1e-9)

    def cdf(x):
        return np.interp(x, grid, table / norm)

    # unweighted phase space (no model): masses follow q1 q2 / m by accept-reject
    events, report = generator.unweighted(4000, seed=11)
    masses = np.sqrt(_m2(_columns(events, "X")))
    assert scipy.stats.kstest(masses, cdf).pvalue > P_VALUE
    assert report.produced == 4000 and 0.2 < report.acceptance_rate < 1.0
    # weighted: the weights are width x q1/(4 pi M) x q2/(4 pi m); binned, a chi-square test
    weighted, _ = generator.weighted(40_000, seed=12)
    masses, weights = np.sqrt(_m2(_columns(weighted, "X"))), weighted.weights()
    expected = _three_body_density(masses) / (16 * math.pi**2 * 2.5)
    np.testing.assert_allclose(weights, expected, rtol=1e-10)
    counts, edges = np.histogram(masses, bins=20, range=(1.0, 2.0))
    assert scipy.stats.chisquare(counts).pvalue > P_VALUE  # the proposal is flat in the mass
    # the mean weight estimates the phase-space integral
    integral = norm / (16 * math.pi**2 * 2.5)
    assert abs(weights.mean() - integral) < 4 * weights.std() / math.sqrt(len(weights))


# -- accept-reject against a model ------------------------------------------------------------


def _zlm_model():
    k1 = ld.Vec4.event("ks1").vec3()
    costheta, phi = k1.costheta(), k1.phi()
    s = ld.spherical_harmonic(0, 0, costheta=costheta, phi=phi)
    d0 = ld.spherical_harmonic(2, 0, costheta=costheta, phi=phi)
    d1 = ld.spherical_harmonic(2, 1, costheta=costheta, phi=phi)
    amp = s + ld.complex(ld.parameter("d0_re"), ld.parameter("d0_im")) * d0 \
        + ld.complex(ld.parameter("d1_re"), ld.parameter("d1_im")) * d1
    return ld.Model(amp.norm_sqr())


ZLM = {"d0_re": 0.8, "d0_im": 0.3, "d1_re": -0.4, "d1_im": 0.5}


def _moments_by_quadrature(lm: list[tuple[int, int]]) -> dict[tuple[int, int], complex]:
    theta = np.linspace(0, math.pi, 801)
    phi = np.linspace(0, 2 * math.pi, 801)
    t, p = np.meshgrid(theta, phi, indexing="ij")

    def y(l, m):  # noqa: E741
        return scipy.special.sph_harm_y(l, m, t, p)

    d0, d1 = complex(ZLM["d0_re"], ZLM["d0_im"]), complex(ZLM["d1_re"], ZLM["d1_im"])
    amp = y(0, 0) + d0 * y(2, 0) + d1 * y(2, 1)
    density = np.abs(amp) ** 2 * np.sin(t)

    def integrate(f):
        return scipy.integrate.trapezoid(scipy.integrate.trapezoid(f, phi, axis=1), theta)

    norm = integrate(density)
    return {k: integrate(density * np.conj(y(*k)).real) / norm
            + 1j * integrate(density * np.conj(y(*k)).imag) / norm for k in lm}


def test_unweighted_events_reproduce_the_models_angular_moments():
    model = _zlm_model()
    n = 20_000
    events, report = ld.Generator(decay_channel()).unweighted(n, model, parameters=ZLM, seed=5)
    assert report.produced == n and np.all(events.weights() == 1.0)
    k1 = _columns(events, "ks1")
    costheta = k1[:, 3] / np.linalg.norm(k1[:, 1:], axis=1)
    theta, phi = np.arccos(costheta), np.arctan2(k1[:, 2], k1[:, 1])
    lm = [(1, 0), (2, 0), (2, 1), (3, 1), (4, 0), (4, 1), (4, 2)]
    expected = _moments_by_quadrature(lm)
    for key in lm:
        values = np.conj(scipy.special.sph_harm_y(*key, theta, phi))
        for part in (np.real, np.imag):
            sample = part(values)
            error = sample.std() / math.sqrt(n)
            assert abs(sample.mean() - part(expected[key])) < 4 * error + 1e-12, (key, part.__name__)
    assert abs(expected[(2, 0)]) > 0.05  # the model has visible D-wave moments


def test_weighted_with_a_model_multiplies_the_intensity():
    model = _zlm_model()
    channel = decay_channel(momentum=(0.0, 0.0, 1.0))
    plain, _ = ld.Generator(channel).weighted(500, seed=2)
    weighted, report = ld.Generator(channel).weighted(500, model=model, parameters=ZLM, seed=2)
    intensity = model.evaluate(plain, parameters=ZLM, real=True)
    np.testing.assert_array_equal(_columns(plain, "ks1"), _columns(weighted, "ks1"))
    np.testing.assert_allclose(weighted.weights(), plain.weights() * intensity, rtol=1e-15)
    assert report.sum_weights == math.fsum(weighted.weights().tolist())


# -- reproducibility ------------------------------------------------------------------------


def _sample(dataset: ld.Dataset) -> np.ndarray:
    return np.column_stack([dataset.column(c) for c in dataset.schema.flat_columns()] + [dataset.weights()])


def test_same_seed_gives_bitwise_identical_samples_for_any_worker_count(tmp_path):
    generator = ld.Generator(photoproduction(ld, uniform_fraction=0.5))
    runs = {}
    for workers in (1, 2, 4):
        execution = ld.Execution(num_workers=workers)
        weighted, _ = generator.weighted(6000, seed=9, execution=execution, partition_events=1000)
        unweighted, report = generator.unweighted(1500, seed=9, execution=execution, partition_events=400,
                                                  path=tmp_path / f"unweighted-{workers}")
        budgeted, budget_report = generator.weighted(6000, seed=9, execution=execution, memory="1 MiB")
        runs[workers] = (_sample(weighted), _sample(unweighted), report, _sample(budgeted), budget_report)
        assert unweighted.n_partitions == 4 and report.partitions == 4 and budget_report.partitions > 4
    for workers in (2, 4):
        assert np.array_equal(runs[1][0], runs[workers][0])
        assert np.array_equal(runs[1][1], runs[workers][1])
        assert runs[1][2] == runs[workers][2]
        # the budget sizes the partitions alone (it limits the threads in use, not the layout)
        assert np.array_equal(runs[1][3], runs[workers][3]) and runs[1][4] == runs[workers][4]
    other, _ = generator.weighted(6000, seed=10, partition_events=1000)
    assert not np.array_equal(_sample(other), runs[1][0])
    # a partition's events are its own stream's: the first 1000 events do not depend on the total
    first, _ = generator.weighted(1000, seed=9, partition_events=1000)
    assert np.array_equal(_sample(first), runs[1][0][:1000])


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_distributed_cluster_gives_the_same_events(tmp_path, processes):
    distributed = pytest.importorskip("distributed")
    generator = ld.Generator(photoproduction(ld, uniform_fraction=0.5))
    model = _zlm_model()
    local, _ = generator.unweighted(800, model, parameters=ZLM, seed=4, partition_events=200)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        remote, report = generator.unweighted(800, model, parameters=ZLM, seed=4, partition_events=200,
                                              execution=ld.Execution(client=client), path=tmp_path / "mc")
    assert np.array_equal(_sample(local), _sample(remote)) and report.produced == 800


# -- streaming to disk within a memory budget ----------------------------------------------


def test_a_sample_larger_than_the_budget_streams_to_disk_within_it(tmp_path):
    budget = 2 * 2**20
    generator = ld.Generator(photoproduction(ld))
    n = 120_000
    generator.weighted(1000, seed=1, path=tmp_path / "warm-up")  # imports and first-call caches
    tracemalloc.start()
    try:
        dataset, report = generator.weighted(n, seed=1, memory=budget, path=tmp_path / "mc",
                                             execution=ld.Execution(num_workers=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    sample_bytes = n * (4 * 5 + 1) * 8
    assert sample_bytes > 4 * budget
    assert peak < budget, f"peak {peak} bytes over the budget {budget}"
    assert report.estimated_peak_bytes <= budget and report.partitions == dataset.n_partitions > 4
    files = sorted(os.listdir(tmp_path / "mc"))  # the partitions and laddu-dask's output marker
    assert files[0] == OUTPUT_MARKER and len(files) == report.partitions + 1
    assert files[1] == "part-00000.parquet"
    again = ld.read_parquet(tmp_path / "mc")
    assert again.n_events == n and again.p4_names() == ["beam", "target", "recoil", "ks1", "ks2"]
    assert math.fsum(again.weights().tolist()) == report.sum_weights
    # unweighted: the accepted events and one chunk of proposals stay within the budget too
    tracemalloc.start()
    try:
        unweighted, report = generator.unweighted(12_000, seed=1, memory=budget, path=tmp_path / "unit",
                                                  execution=ld.Execution(num_workers=1))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < budget, f"unweighted peak {peak} bytes over the budget {budget}"
    # the proposals drawn, held at once, would need more than twice the budget
    assert report.estimated_peak_bytes <= budget and report.proposals * (4 * 5 + 1) * 8 > 2 * budget
    assert unweighted.n_events == 12_000 and unweighted.n_partitions == report.partitions > 4


# -- typed errors ---------------------------------------------------------------------------


def test_bad_input_is_a_typed_error_naming_it(tmp_path):
    generator = ld.Generator(photoproduction(ld))
    with pytest.raises(ParameterError, match="events must be an integer >= 0"):
        generator.weighted(-1)
    with pytest.raises(ParameterError, match="seed"):
        generator.weighted(10, seed=1.5)
    with pytest.raises(ParameterError, match="partition_events"):
        generator.weighted(10, partition_events=0)
    with pytest.raises(ParameterError, match="without a model"):
        generator.weighted(10, parameters=[1.0])
    with pytest.raises(ParameterError, match="model must be a laddu_dask Model"):
        generator.weighted(10, model="I")
    with pytest.raises(ParameterError, match="proven_envelope=True cannot be combined with a model"):
        generator.unweighted(10, _zlm_model(), parameters=ZLM, proven_envelope=True)
    with pytest.raises(ParameterError, match="index_column='ks1_e' is empty or the name of another"):
        generator.weighted(10, index_column="ks1_e")
    with pytest.raises(ParameterError, match="safety_factor"):
        generator.unweighted(10, safety_factor=0.5)
    with pytest.raises(ParameterError, match="d0_re"):
        ld.Generator(decay_channel()).unweighted(10, _zlm_model(), parameters={"d0_re": math.nan})
    with pytest.raises(ModelError, match="no edge has an initial_momentum"):
        ld.Generator(ld.Channel("c", edges=[ld.Edge("a", particle=ld.particles.PROTON),
                                            ld.Edge("b", particle=ld.particles.PROTON),
                                            ld.Edge("c", particle=ld.particles.PROTON)],
                                vertices=[ld.Vertex("v", incoming=["a"], outgoing=["b", "c"])]))
    with pytest.raises(ModelError, match="edge 'X' has neither particle properties"):
        ld.Generator(ld.Channel("c", edges=[
            ld.Edge("P", particle=ld.particles.PROTON,
                    initial_momentum=ld.InitialMomentum.momentum([0, 0, 0])),
            ld.Edge("X"), ld.Edge("b", particle=ld.particles.PI_ZERO)],
            vertices=[ld.Vertex("v", incoming=["P"], outgoing=["X", "b"])]))
    closed = ld.Channel("c", edges=[
        ld.Edge("P", particle=ld.Particle(mass=0.8), initial_momentum=ld.InitialMomentum.momentum([0, 0, 0])),
        ld.Edge("a", particle=ld.particles.K_SHORT), ld.Edge("b", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("decay", incoming=["P"], outgoing=["a", "b"])])
    with pytest.raises(ModelError, match="vertex 'decay': two-body threshold is closed"):
        ld.Generator(closed).weighted(5, path=tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_envelope_and_proposal_limits():
    generator = ld.Generator(three_body_channel())
    with pytest.raises(GenerationError, match="exceeds the unweighting envelope"):
        generator.unweighted(500, max_weight=1e-6)
    with pytest.raises(GenerationError, match="max_proposals"):
        generator.unweighted(500, max_proposals=100)
    grown, report = generator.unweighted(500, max_weight=1e-6, grow_envelope=True, seed=2)
    assert grown.n_events == 500 and report.envelope > 1e-6 and report.envelope >= report.maximum_weight
    negative = ld.Model(ld.parameter("a") + ld.Vec4.event("ks1").e() * 0.0)
    with pytest.raises(NonPositiveIntensityError, match="negative"):
        generator.unweighted(10, negative, parameters=[-1.0])


# -- agreement with laddu's generator -------------------------------------------------------


@needs_laddu
def test_phase_space_agrees_with_laddus_generator(tmp_path):
    laddu = lr.laddu
    n = 60_000
    ours, _ = ld.Generator(photoproduction(ld)).weighted(n, seed=21)
    generated, _ = laddu.Generator(photoproduction(laddu)).weighted(n, seed=21)
    generated.write_to(laddu.ParquetSink(str(tmp_path / "laddu.parquet")))
    theirs = ld.read_parquet(tmp_path / "laddu.parquet")
    w_ours, w_theirs = ours.weights(), theirs.weights()
    # the mean weight (the phase-space integral) within the combined statistical error
    error = math.hypot(w_ours.std(), w_theirs.std()) / math.sqrt(n)
    assert abs(w_ours.mean() - w_theirs.mean()) < 4 * error
    # the proposed distributions of t, the X mass and the beam energy, by two-sample tests
    def observables(beam, k1, k2):
        x = k1 + k2
        return {"t": _m2(beam - x), "m": np.sqrt(_m2(x)), "e": beam[:, 0]}

    mine = observables(*(_columns(ours, k) for k in ("beam", "ks1", "ks2")))
    laddus = observables(*(_columns(theirs, k) for k in ("beam", "ks1", "ks2")))
    for key in mine:
        assert scipy.stats.ks_2samp(mine[key], laddus[key]).pvalue > P_VALUE, key
    # the weights' distribution too
    assert scipy.stats.ks_2samp(w_ours, w_theirs).pvalue > P_VALUE


# -- laddu's extra columns: the event index and generated scalars ---------------------------


@pytest.mark.parametrize("kind", ["weighted", "unweighted"])
def test_the_index_column_counts_the_rows_from_index_start_over_every_partition(tmp_path, kind):
    generator = ld.Generator(three_body_channel())
    call = getattr(generator, kind)
    plain, _ = call(2500, seed=3, partition_events=600)
    indexed, _ = call(2500, seed=3, partition_events=600, index_column="event", index_start=1000)
    top = 2**32 - 2500  # the last index is the largest uint32
    written, _ = call(2500, seed=3, partition_events=600, index_column="event", index_dtype="u32",
                      index_start=top, path=tmp_path / "mc")
    assert indexed.n_partitions == written.n_partitions == 5
    np.testing.assert_array_equal(indexed.column("event"), np.arange(1000, 3500))
    np.testing.assert_array_equal(written.column("event"), np.arange(top, 2**32))
    # each file holds its partition's run of indices, stored as uint32 (laddu's dtype)
    first = []
    for name in sorted(n for n in os.listdir(tmp_path / "mc") if n.endswith(".parquet")):
        table = pq.read_table(tmp_path / "mc" / name)
        assert table.schema.field("event").type == pa.uint32()
        assert table.column_names[-2:] == ["event", "weight"]
        values = table.column("event").to_numpy()
        np.testing.assert_array_equal(np.diff(values.astype(np.int64)), 1)
        first.append(int(values[0]))
    assert first == [top + 600 * i for i in range(5)]
    # the index changes no event
    assert np.array_equal(_sample(plain), np.delete(_sample(indexed), -2, axis=1))


@needs_laddu
def test_the_index_keywords_follow_laddus(tmp_path):
    laddu = lr.laddu
    theirs, _ = laddu.Generator(three_body_channel(laddu)).unweighted(
        300, seed=1, index_column="event", index_dtype="uint16", index_start=65_000)
    theirs.write_to(laddu.ParquetSink(str(tmp_path / "laddu.parquet")))
    ours, _ = ld.Generator(three_body_channel()).unweighted(
        300, seed=1, index_column="event", index_dtype=np.uint16, index_start=65_000, partition_events=70,
        path=tmp_path / "ours")
    expected = pq.read_table(tmp_path / "laddu.parquet").column("event")
    assert expected.type == pa.uint16()
    np.testing.assert_array_equal(ours.column("event"), expected.to_numpy())
    assert pq.read_table(tmp_path / "ours").schema.field("event").type == pa.uint16()
    # the inputs laddu refuses are refused here, with a ParameterError naming the keyword
    bad = [({"index_dtype": "int64"}, "must be an unsigned"), ({"index_dtype": "uint"}, "laddu's unsigned"),
           ({"index_dtype": "u8", "index_start": 250}, "exceeds index_dtype uint8"),
           ({"index_start": -1}, "index_start"), ({"index_column": "ks1_px"}, "another output column"),
           ({"index_column": "weight"}, "another output column"), ({"index_column": ""}, "empty")]
    for extra, message in bad:
        keywords = {"index_column": "event", **extra}
        with pytest.raises(Exception):  # noqa: B017 - laddu raises LadduError, ValueError or OverflowError
            laddu.Generator(three_body_channel(laddu)).weighted(10, **keywords)
        with pytest.raises(ParameterError, match=message):
            ld.Generator(three_body_channel()).weighted(10, **keywords)


def _histogram_cdf(x: np.ndarray) -> np.ndarray:
    """The CDF of counts [1, 0, 3] over edges [0, 1, 1.5, 2], piecewise constant."""
    return np.clip(np.where(x < 1.0, 0.25 * x, 0.25 + 0.75 * np.clip(x - 1.5, 0.0, None) / 0.5), 0.0, 1.0)


def test_generated_scalars_weigh_by_their_inverse_density_and_leave_the_events_as_they_were():
    histogram = ld.Histogram([1.0, 0.0, 3.0], bin_edges=[0.0, 1.0, 1.5, 2.0])
    scalars = {"pol": ld.ScalarSource.uniform(0.0, 2.0), "run": ld.ScalarSource.fixed(7.0),
               "h": ld.ScalarSource.histogram(histogram)}
    plain, _ = ld.Generator(three_body_channel()).weighted(40_000, seed=4, partition_events=10_000)
    extra, _ = ld.Generator(three_body_channel(), scalars=scalars).weighted(40_000, seed=4,
                                                                            partition_events=10_000)
    for name in ("X", "pion", "ks1", "ks2"):
        assert np.array_equal(_columns(plain, name), _columns(extra, name))
    assert extra.schema.scalars == ("pol", "run", "h") and (extra.column("run") == 7.0).all()
    h = extra.column("h")
    # the inverse densities: 2 for pol, total * width / count for h's bin
    inverse = np.where(h < 1.0, 4.0 * 1.0 / 1.0, 4.0 * 0.5 / 3.0)
    np.testing.assert_allclose(extra.weights(), plain.weights() * 2.0 * inverse, rtol=1e-15)
    assert not ((h >= 1.0) & (h < 1.5)).any()
    assert scipy.stats.kstest(extra.column("pol"), scipy.stats.uniform(0.0, 2.0).cdf).pvalue > P_VALUE
    assert scipy.stats.kstest(h, _histogram_cdf).pvalue > P_VALUE
    # a model reading a scalar: accept-reject against I = pol gives a density 2 pol / 4 on [0, 2]
    unit, _ = ld.Generator(three_body_channel(), scalars=scalars).unweighted(
        4000, ld.Model(ld.scalar("pol")), seed=5, partition_events=1000)
    assert scipy.stats.kstest(unit.column("pol"), lambda x: np.clip(x, 0, 2) ** 2 / 4).pvalue > P_VALUE
    # the same seed gives the same scalars on one or two threads
    again, _ = ld.Generator(three_body_channel(), scalars=scalars).unweighted(
        4000, ld.Model(ld.scalar("pol")), seed=5, partition_events=1000,
        execution=ld.Execution(num_workers=1))
    assert np.array_equal(_sample(unit), _sample(again))


@needs_laddu
def test_generated_scalars_follow_laddus():
    laddu = lr.laddu

    def sources(lib):
        histogram = lib.Histogram([1.0, 0.0, 3.0], bin_edges=[0.0, 1.0, 1.5, 2.0])
        return {"pol": lib.ScalarSource.uniform(0.0, 2.0), "h": lib.ScalarSource.histogram(histogram)}

    n = 20_000
    theirs, _ = laddu.Generator(three_body_channel(laddu), scalars=sources(laddu)).weighted(n, seed=6)
    theirs_plain, _ = laddu.Generator(three_body_channel(laddu)).weighted(n, seed=6)
    ours, _ = ld.Generator(three_body_channel(), scalars=sources(ld)).weighted(n, seed=6)
    ours_plain, _ = ld.Generator(three_body_channel()).weighted(n, seed=6)
    for name in ("pol", "h"):
        assert scipy.stats.ks_2samp(np.asarray(theirs.column(name)), ours.column(name)).pvalue > P_VALUE
    # the same weight factor per value: laddu's scalars leave its events too
    runs = ((theirs.weights(), theirs_plain.weights(), theirs.column("h")),
            (ours.weights(), ours_plain.weights(), ours.column("h")))
    for extra, plain, h in (tuple(np.asarray(a) for a in run) for run in runs):
        np.testing.assert_allclose(extra / plain, 2.0 * np.where(h < 1.0, 4.0, 2.0 / 3.0), rtol=1e-14)
    # the JSON forms are laddu's
    for name, source in sources(ld).items():
        assert laddu.ScalarSource.from_json(source.to_json()).to_json() == sources(laddu)[name].to_json()
        assert ld.ScalarSource.from_json(sources(laddu)[name].to_json()) == source


def test_bad_scalar_sources_are_typed_errors_naming_them():
    with pytest.raises(ParameterError, match="scalar column name 'X' is empty, an edge's name"):
        ld.Generator(three_body_channel(), scalars={"X": ld.ScalarSource.fixed(1.0)})
    with pytest.raises(ParameterError, match="scalar column name 'ks1_e'"):
        ld.Generator(three_body_channel(), scalars={"ks1_e": ld.ScalarSource.fixed(1.0)})
    with pytest.raises(ParameterError, match=r"scalars\['pol'\] must be a ScalarSource, got float"):
        ld.Generator(three_body_channel(), scalars={"pol": 0.3})
    with pytest.raises(ModelError, match="requires finite low < high"):
        ld.ScalarSource.uniform(2.0, 1.0)
    with pytest.raises(ModelError, match="non-negative counts with a positive total"):
        ld.ScalarSource.histogram(ld.Histogram([1.0, -1.0], bin_edges=[0.0, 1.0, 2.0]))
    with pytest.raises(ModelError, match="not the JSON of a ScalarSource"):
        ld.ScalarSource.from_json('{"kind": "uniform", "low": 0, "high": 1}')
