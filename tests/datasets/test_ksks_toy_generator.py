"""The KsKs toy drawn by laddu-dask's Generator (``ksks.channel``, ``ksks.generate_datasets``).

References: the hand-written sampler ``ksks.generate`` (the distributions of
``shared/bench/ksks.py``, not its draws), by two-sample Kolmogorov-Smirnov tests of m, cos(theta),
phi and |t| on independent samples with fixed seeds (p-values far from the 1e-3 threshold:
data 0.69 0.96 0.96 0.79, accepted MC 0.59 0.22 0.64 0.71 when written); laddu 0.28.1's
Generator on the same channel (its proposal weights are the inverse of
``ksks.inverse_proposal_weight`` too); the truth of the toy for a fit.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.stats

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.cli import main
from laddu_dask.errors import ParameterError

try:
    from tests import laddu_reference as lr
except ImportError:  # pytest's default "prepend" import mode puts tests/ on sys.path
    import laddu_reference as lr

P_VALUE = 1e-3


def _p4s(dataset: ld.Dataset) -> dict[str, np.ndarray]:
    return {n: np.column_stack([dataset.column(f"{n}_{c}") for c in ("e", "px", "py", "pz")])
            for n in dataset.p4_names()}


def _observables(p4: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    s, costheta, phi = ksks.angles(p4)
    q = p4["beam"] - p4["kshort1"] - p4["kshort2"]
    return {"m": np.sqrt(s), "costheta": costheta, "phi": phi,
            "|t|": -(q[:, 0] ** 2 - (q[:, 1:] ** 2).sum(axis=1))}


def _columns(dataset: ld.Dataset) -> np.ndarray:
    return np.column_stack([dataset.column(c) for c in dataset.schema.flat_columns()] + [dataset.weights()])


def test_the_channels_events_are_the_toys_and_its_weight_is_the_inverse_correction():
    events, report = ld.Generator(ksks.channel()).weighted(20_000, seed=3)
    p4 = _p4s(events)
    assert events.p4_names() == list(ksks.P4_NAMES)
    np.testing.assert_array_equal(p4["beam"], np.tile([ksks.E_BEAM, 0.0, 0.0, ksks.E_BEAM], (20_000, 1)))
    for name, mass in (("proton", ksks.M_PROTON), ("kshort1", ksks.M_KS), ("kshort2", ksks.M_KS)):
        m2 = p4[name][:, 0] ** 2 - (p4[name][:, 1:] ** 2).sum(axis=1)
        np.testing.assert_allclose(m2, mass**2, rtol=0, atol=1e-11)
    # four-momentum conservation with the target at rest
    total = p4["proton"] + p4["kshort1"] + p4["kshort2"] - p4["beam"]
    np.testing.assert_allclose(total, np.tile([ksks.M_PROTON, 0, 0, 0], (20_000, 1)), rtol=0, atol=1e-11)
    # the Generator's proposal weight (laddu's dPhi / q, phase_space.py) times the closed-form
    # correction, an expression of the four-vectors, is 1
    correction = ld.Model(ksks.inverse_proposal_weight()).evaluate(events, real=True)
    np.testing.assert_allclose(events.weights() * correction, 1.0, rtol=1e-9, atol=0)
    # the proposals are the toy's phase space: m flat in [1, 2], isotropic decay angles
    obs = _observables(p4)
    assert scipy.stats.kstest(obs["m"], scipy.stats.uniform(1.0, 1.0).cdf).pvalue > P_VALUE
    assert scipy.stats.kstest(obs["costheta"], scipy.stats.uniform(-1.0, 2.0).cdf).pvalue > P_VALUE
    assert scipy.stats.kstest(obs["phi"], scipy.stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > P_VALUE
    # the acceptance expression is ksks.acceptance on the same events
    s, costheta, phi = ksks.angles(p4)
    np.testing.assert_allclose(ld.Model(ksks.acceptance_expression()).evaluate(events, real=True),
                               ksks.acceptance(costheta, phi, np.sqrt(s)), rtol=1e-12, atol=0)


@lr.needs_laddu
def test_laddus_generator_gives_the_same_proposal_weights_on_the_toys_channel(tmp_path):
    laddu = lr.laddu

    def edge(name, mass, **settings):
        return laddu.Edge(name, particle=laddu.Particle(mass=mass), **settings)

    channel = laddu.Channel("toy", edges=[
        edge("beam", 0.0, initial_momentum=laddu.InitialMomentum.energy(ksks.E_BEAM, direction=[0, 0, 1])),
        edge("target", ksks.M_PROTON, initial_momentum=laddu.InitialMomentum.momentum([0, 0, 0]),
             output=False),
        laddu.Edge("X", mass_proposal=laddu.MassProposal(1.0, high=2.0), output=False),
        edge("proton", ksks.M_PROTON), edge("kshort1", ksks.M_KS), edge("kshort2", ksks.M_KS)],
        vertices=[laddu.Vertex("production", incoming=["beam", "target"], outgoing=["X", "proton"],
                               generation=laddu.VertexProposal.t_exchange(incoming="beam", outgoing="X",
                                                                          slope=3.0, uniform_fraction=0.0)),
                  laddu.Vertex("decay", incoming=["X"], outgoing=["kshort1", "kshort2"])])
    events, _ = laddu.Generator(channel).weighted(5000, seed=4)
    events.write_to(laddu.ParquetSink(str(tmp_path / "laddu.parquet")))
    theirs = ld.read_parquet(tmp_path / "laddu.parquet")
    correction = ld.Model(ksks.inverse_proposal_weight()).evaluate(theirs, real=True)
    np.testing.assert_allclose(theirs.weights() * correction, 1.0, rtol=1e-9, atol=0)
    ours, _ = ld.Generator(ksks.channel()).weighted(5000, seed=4)
    for key, values in _observables(_p4s(ours)).items():
        assert scipy.stats.ks_2samp(values, _observables(_p4s(theirs))[key]).pvalue > P_VALUE, key


@pytest.mark.parametrize("sample", ["data", "accepted_mc"])
def test_generator_toy_agrees_in_distribution_with_the_reference_sampler(sample):
    data, mc = ksks.generate_datasets(n_data=20_000, n_mc=60_000, seed=5)
    reference = ksks.generate(n_data=20_000, n_mc=60_000, seed=5)
    ours = _observables(_p4s(data if sample == "data" else mc))
    theirs = _observables(reference[0] if sample == "data" else reference[1])
    pvalues = {key: scipy.stats.ks_2samp(ours[key], theirs[key]).pvalue for key in ours}
    print(sample, {k: round(float(p), 3) for k, p in pvalues.items()})
    assert all(p > P_VALUE for p in pvalues.values()), pvalues
    # and both differ from the other sample (the test can tell data from accepted MC)
    other = _observables(reference[1] if sample == "data" else reference[0])
    assert scipy.stats.ks_2samp(ours["m"], other["m"]).pvalue < 1e-6


def test_same_seed_gives_the_same_events_for_one_and_two_threads(tmp_path):
    runs = {}
    for threads in (1, 2):
        data, mc = ksks.generate_datasets(n_data=1500, n_mc=3000, seed=9, partition_events=400,
                                          execution=ld.Execution(num_workers=threads),
                                          path=tmp_path / f"t{threads}" if threads == 2 else None)
        runs[threads] = (_columns(data), _columns(mc))
    assert np.array_equal(runs[1][0], runs[2][0]) and np.array_equal(runs[1][1], runs[2][1])
    assert runs[1][0].shape == (1500, 17) and runs[1][1].shape == (3000, 17)
    assert sorted(os.listdir(tmp_path / "t2" / "data"))[1:3] == ["part-00000.parquet", "part-00001.parquet"]
    assert json.loads((tmp_path / "t2" / "truth.json").read_text()) == ksks.TRUTH
    # the two samples come from independent streams, and another seed gives other events
    assert not np.isin(runs[1][0][:, 8], runs[1][1][:, 8]).any()
    other, _ = ksks.generate_datasets(n_data=1500, n_mc=0, seed=10, partition_events=400)
    assert not np.array_equal(_columns(other), runs[1][0])


def test_a_fit_to_a_generator_made_toy_recovers_the_truth():
    data, mc = ksks.generate_datasets(n_data=20_000, n_mc=100_000, seed=11)
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc, name="ksks")])
    fit = lik.fit(initial=ksks.displaced_start(), method="migrad")
    assert fit.valid
    for name, truth in ksks.TRUTH.items():
        pull = (fit.named_parameters[name] - truth) / fit.errors[name]
        assert abs(pull) < 4.0, f"{name}: pull {pull:.2f}"


def test_demo_draws_its_sample_with_the_generator_on_request(tmp_path, capsys):
    code = main(["demo", "--generator", "--data", "3000", "--mc", "30000", "--seed", "5",
                 "--outdir", str(tmp_path / "sample")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "with laddu-dask's Generator" in printed
    assert ld.read_parquet(tmp_path / "sample" / "data").n_events == 3000
    assert ld.read_parquet(tmp_path / "sample" / "accmc").n_events == 30000


def test_bad_counts_and_seeds_are_typed_errors_naming_them():
    with pytest.raises(ParameterError, match="n_data must be a non-negative integer"):
        ksks.generate_datasets(n_data=-1, n_mc=10)
    with pytest.raises(ParameterError, match="n_mc must be a non-negative integer"):
        ksks.generate_datasets(n_data=10, n_mc=2.5)
    with pytest.raises(ParameterError, match="seed must be an integer >= 0"):
        ksks.generate_datasets(n_data=10, n_mc=10, seed=-3)
