"""laddu 0.28.1's fit artifacts: ``FitResult.artifact()``, ``FitArtifact`` (save, load, bind,
bind_with_parameter_map, ensembles, failed replicas, yields and cross sections),
``BoundFitState`` and ``AnalysisSnapshot`` (issue 24).

The reference is laddu itself: the same likelihood built in both libraries, the same
artifact operations asked of both; what laddu refuses, ours refuses (with a typed error),
what laddu binds, ours binds to the same values.  laddu's file format (a binary header and
payloads) and its fingerprint (a hash of its internal structures) are its own: ours are JSON
and a hash of the likelihood's description (README difference table).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_fit_laddu_api import _columns

import laddu_dask as ld
from laddu_dask.errors import FitArtifactError, UnsafeOutputError
from laddu_dask.likelihood.fit_result import FitResult

ARTIFACT_FIELDS = ("artifact_kind", "schema_version", "laddu_version", "fingerprint_version",
                   "parameter_names", "outcome", "terminal_message", "strong_compatibility")


def _likelihood(lib, *, names=("c1", "c2"), extra=False, const=0.05, init=0.2, bounds=(-5.0, 5.0), fixed=1.0,
                term="nll", extended=False, n_mc=3000, scale=1.0):
    """One likelihood in laddu or laddu-dask; each keyword changes one thing of the fitted one."""
    data, mc = _columns()
    x = lib.scalar("x")
    expr = (lib.parameter("c0", fixed=fixed) + lib.parameter(names[0], initial=init, bounds=bounds) * x
            + lib.parameter(names[1], initial=-0.1) * x * x)
    if extra:
        expr = expr + lib.parameter("c3") * x * x * x
    model = lib.Model(scale * expr.norm_sqr() + const)

    def dataset(values):
        beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(values), 1))
        return lib.Dataset.from_arrays(p4s={"beam": beam}, scalars={"x": values})

    kind = lib.ExtendedNLL if extended else lib.NLL
    term = kind(model, data=dataset(data["x"]), accepted_mc=dataset(mc["x"][:n_mc]), name=term)
    return lib.Likelihood([term])


@pytest.fixture(scope="module")
def ours():
    lik = _likelihood(ld)
    return lik, lik.fit().artifact()


@pytest.fixture(scope="module")
def theirs():
    if laddu is None:  # pragma: no cover - laddu is a test dependency
        pytest.skip("laddu is not installed")
    lik = _likelihood(laddu)
    return lik, lik.fit().artifact()


@needs_laddu
def test_artifact_has_laddus_fields_types_and_values(ours, theirs):
    (_, art), (_, want) = ours, theirs
    for name in ARTIFACT_FIELDS:
        got, expected = getattr(art, name), getattr(want, name)
        assert type(got) is type(expected) and got == expected, name
    np.testing.assert_allclose(art.values, want.values, rtol=1e-6)
    assert art.objective == pytest.approx(want.objective, rel=1e-9)
    np.testing.assert_allclose(art.standard_errors, want.standard_errors, rtol=1e-4)
    np.testing.assert_allclose(art.covariance, want.covariance, rtol=1e-4)
    assert set(art.diagnostics) == set(want.diagnostics) and art.diagnostics["hessian_evaluations"] == 1
    assert art.ensemble is None is want.ensemble
    for got in (art.values, art.covariance, art.standard_errors):
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
    # laddu's fingerprint shape (16 hex digits); its value hashes laddu's own structures
    assert len(art.likelihood_fingerprint) == len(want.likelihood_fingerprint) == 16
    int(art.likelihood_fingerprint, 16)


def test_artifact_values_are_copies_and_the_fit_results(ours):
    lik, art = ours
    art.values[0] = 99.0
    assert art.values[0] != 99.0
    fit = lik.fit()
    np.testing.assert_array_equal(fit.artifact().values, fit.values)
    assert fit.artifact().objective == fit.objective


def test_a_saved_fit_result_still_gives_its_artifact(ours, tmp_path):
    lik, art = ours
    fit = lik.fit()
    fit.save(tmp_path / "result.json")
    _same(FitResult.load(tmp_path / "result.json").artifact(), art)


def test_a_fit_result_made_by_hand_has_no_artifact():
    result = FitResult([1.0], [0.1], 3.0, True, 12, "migrad", None, ["a"])
    with pytest.raises(FitArtifactError, match="records no likelihood fingerprint"):
        result.artifact()


def _same(a, b):
    assert a.parameter_names == b.parameter_names
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.covariance, b.covariance)
    np.testing.assert_array_equal(a.standard_errors, b.standard_errors)
    for name in (*ARTIFACT_FIELDS, "objective", "diagnostics", "likelihood_fingerprint"):
        assert getattr(a, name) == getattr(b, name), name


def test_save_load_round_trip_bit_for_bit_with_an_ensemble(ours, tmp_path):
    lik, art = ours
    ensemble = ld.Ensemble.from_arrays([[0.5, 0.4], [0.6, 0.3], [0.55, 0.35]], parameter_names=["c1", "c2"],
                                       source_id=42)
    ensemble.bootstrap_seed = 7
    full = art.with_ensemble(ensemble).with_failed_replicas([(1, 99, "diverged")])
    path = tmp_path / "fit.json"
    full.save(path)
    back = ld.FitArtifact.load(str(path))
    _same(back, full)
    e = back.ensemble
    assert (e.draws, e.draw_ids, e.failures, e.source_id, e.bootstrap_seed, e.requires_external_datasets) == (
        ensemble.draws.tolist(), [0, 2, 3], [(1, 99, "diverged")], 42, 7, False)
    assert e.to_ensemble().source_id == 42
    art.save(tmp_path / "plain.json")
    _same(ld.FitArtifact.load(tmp_path / "plain.json"), art)
    assert ld.FitArtifact.load(tmp_path / "plain.json").ensemble is None


@needs_laddu
def test_save_refuses_an_existing_file_as_laddus_unless_overwrite(ours, theirs, tmp_path):
    (_, art), (_, want) = ours, theirs
    want.save(tmp_path / "laddu.fit")
    with pytest.raises(laddu.LadduError, match="already exists"):
        want.save(tmp_path / "laddu.fit")
    path = tmp_path / "notes.json"
    path.write_text("my notes\n")
    with pytest.raises(UnsafeOutputError, match=f"{path}.*overwrite=True"):
        art.save(path)
    assert path.read_text() == "my notes\n"
    assert sorted(os.listdir(tmp_path)) == ["laddu.fit", "notes.json"]  # no temporary left behind
    art.save(path, overwrite=True)
    assert ld.FitArtifact.load(path).objective == art.objective
    art.save(tmp_path / "new.json")
    assert sorted(os.listdir(tmp_path)) == ["laddu.fit", "new.json", "notes.json"]


def test_bind_gives_the_fits_objective_at_the_bound_values(ours):
    lik, art = ours
    state = art.bind(lik)
    assert isinstance(state, ld.BoundFitState)
    assert state.parameter_names == lik.parameter_names and state.migration == []
    assert (state.objective, state.outcome) == (art.objective, "converged")
    assert lik.value(state.values) == art.objective
    # dataset-free: the same likelihood on other accepted MC binds, with the stored objective
    other = _likelihood(ld, n_mc=2000)
    assert other.value(art.bind(other).values) != art.objective
    np.testing.assert_array_equal(art.bind(other).values, art.values)


@needs_laddu
@pytest.mark.parametrize(("names", "mapping"), [
    (("d1", "d2"), {"c1": "d1", "c2": "d2"}),
    (("d1", "c2"), {"c1": "d1", "c2": "c2"}),
    (("c2", "c1"), {"c1": "c2", "c2": "c1"}),
    (("c1", "c2"), {"c1": "c1", "c2": "c2"}),
], ids=["renamed", "one-renamed", "traded", "identity"])
def test_bind_with_parameter_map_as_laddus(ours, theirs, names, mapping):
    (_, art), (_, want) = ours, theirs
    got = art.bind_with_parameter_map(_likelihood(ld, names=names), mapping)
    expected = want.bind_with_parameter_map(_likelihood(laddu, names=names), mapping)
    assert got.parameter_names == expected.parameter_names == list(names)
    assert got.migration == expected.migration == list(mapping.items())
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-6)
    np.testing.assert_array_equal(got.values, art.values)  # each name keeps its value
    lik = _likelihood(ld, names=names)
    assert lik.value(got.values) == art.objective


#: Likelihoods the fitted one's artifact must not bind to (laddu refuses each too), by what
#: changed, with what our error says.
MISMATCHES = {
    "renamed": ({"names": ("d1", "d2")}, r"free parameters differ; the likelihood's \['d1', 'd2'\] are not"),
    "traded": ({"names": ("c2", "c1")}, "structural fingerprint"),
    "extra-parameter": ({"extra": True}, r"the likelihood's \['c3'\] are not in the artifact"),
    "constant": ({"const": 0.06}, "structural fingerprint"),
    "scale": ({"scale": 2.0}, "structural fingerprint"),
    "initial": ({"init": 0.3}, "structural fingerprint"),
    "bounds": ({"bounds": (-4.0, 5.0)}, "structural fingerprint"),
    "fixed-value": ({"fixed": 1.1}, "structural fingerprint"),
    "term-name": ({"term": "other"}, "structural fingerprint"),
    "extended": ({"extended": True}, "structural fingerprint"),
}


@needs_laddu
@pytest.mark.parametrize("case", list(MISMATCHES))
def test_bind_refuses_what_laddu_refuses(ours, theirs, case):
    (_, art), (_, want) = ours, theirs
    change, message = MISMATCHES[case]
    with pytest.raises(laddu.LadduError, match="fit artifact mismatch"):
        want.bind(_likelihood(laddu, **change))
    with pytest.raises(FitArtifactError, match=message):
        art.bind(_likelihood(ld, **change))


@needs_laddu
@pytest.mark.parametrize(("names", "mapping", "message"), [
    (("d1", "c2"), {"c1": "d1"}, r"unmapped \['c2'\]"),
    (("d1", "d2"), {"d1": "c1", "d2": "c2"}, r"unmapped \['c1', 'c2'\], not in the artifact \['d1', 'd2'\]"),
    (("c1", "c2"), {}, "map every artifact parameter exactly once"),
    (("d1", "d2"), {"c1": "d1", "c2": "d1"}, "each once"),
    (("d1", "d2"), {"c1": "d1", "c2": "c2"}, "must be the likelihood's free parameters"),
    (("c2", "c1"), {"c1": "c1", "c2": "c2"}, "structural fingerprint"),
], ids=["partial", "reversed", "empty", "duplicate-target", "wrong-target", "traded-unmapped"])
def test_bind_with_parameter_map_refuses_what_laddu_refuses(ours, theirs, names, mapping, message):
    (_, art), (_, want) = ours, theirs
    with pytest.raises(laddu.LadduError, match="fit artifact mismatch"):
        want.bind_with_parameter_map(_likelihood(laddu, names=names), mapping)
    with pytest.raises(FitArtifactError, match=message):
        art.bind_with_parameter_map(_likelihood(ld, names=names), mapping)


def test_bind_with_parameter_map_takes_a_dict_of_names(ours):
    lik, art = ours
    with pytest.raises(TypeError, match="mapping must be a dict"):
        art.bind_with_parameter_map(lik, [("c1", "c1")])


@needs_laddu
def test_with_ensemble_of_a_bootstrap_as_laddus(ours, theirs):
    (lik, art), (their_lik, want) = ours, theirs
    ensemble = lik.bootstrap_fit(2, seed=11)
    got = art.with_ensemble(ensemble)
    expected = want.with_ensemble(their_lik.bootstrap_fit(2, seed=11)).ensemble
    assert art.ensemble is None  # a copy: the artifact itself is unchanged, as laddu's
    e = got.ensemble
    assert isinstance(e, ld.FitEnsembleArtifact)
    for name in ("bootstrap_seed", "draw_ids", "failures", "parameter_names", "requires_external_datasets"):
        assert getattr(e, name) == getattr(expected, name), name
    assert e.draws == ensemble.draws.tolist() and e.source_id == ensemble.source_id
    back = e.to_ensemble()
    assert isinstance(back, ld.Ensemble) and back.source_id == ensemble.source_id
    np.testing.assert_array_equal(back.draws, ensemble.draws)
    plain = art.with_ensemble(ld.Ensemble.from_arrays([[0.5, 0.4]], parameter_names=["c1", "c2"])).ensemble
    assert plain.bootstrap_seed is None


@needs_laddu
@pytest.mark.parametrize("names", [["c2", "c1"], ["zz"]], ids=["reordered", "other"])
def test_with_ensemble_refuses_other_parameters_as_laddu(ours, theirs, names):
    (_, art), (_, want) = ours, theirs
    draws = np.full((1, len(names)), 0.5)
    with pytest.raises(laddu.LadduError, match="ensemble parameter schema"):
        want.with_ensemble(laddu.Ensemble.from_arrays(draws, parameter_names=names))
    with pytest.raises(FitArtifactError, match="ensemble's parameters"):
        art.with_ensemble(ld.Ensemble.from_arrays(draws, parameter_names=names))


@needs_laddu
@pytest.mark.parametrize("failures", [
    [(4, 123, "diverged")], [(2, None, "nan")], [(4, None, "x"), (5, 7, "y")],
    [(0, None, "a"), (1, None, "b")],
    [(5, None, "x")], [(4, None, "x"), (4, None, "y")], [(6, None, "x"), (4, None, "y")],
], ids=["last", "middle", "two", "first-two", "outside", "repeated", "outside-of-two"])
def test_with_failed_replicas_as_laddus(ours, theirs, failures):
    (_, art), (_, want) = ours, theirs
    draws = [[0.5, 0.4], [0.6, 0.3], [0.55, 0.35], [0.52, 0.38]]
    their_base = want.with_ensemble(laddu.Ensemble.from_arrays(np.array(draws), parameter_names=["c1", "c2"]))
    base = art.with_ensemble(ld.Ensemble.from_arrays(draws, parameter_names=["c1", "c2"]))
    try:
        expected = their_base.with_failed_replicas(failures).ensemble
    except laddu.LadduError as error:
        word = "given twice" if "duplicate" in str(error) else "outside"
        with pytest.raises(FitArtifactError, match=word):
            base.with_failed_replicas(failures)
        return
    got = base.with_failed_replicas(failures).ensemble
    assert (got.failures, got.draw_ids, got.draws) == (expected.failures, expected.draw_ids, expected.draws)
    # a second call replaces the failures, as laddu's
    again = base.with_failed_replicas(failures).with_failed_replicas([(4, None, "y")]).ensemble
    assert again.failures == their_base.with_failed_replicas([(4, None, "y")]).ensemble.failures


def test_failed_replicas_need_an_ensemble_and_well_formed_failures(ours):
    _, art = ours
    with pytest.raises(FitArtifactError, match="need an ensemble"):
        art.with_failed_replicas([])
    base = art.with_ensemble(ld.Ensemble.from_arrays([[0.5, 0.4]], parameter_names=["c1", "c2"]))
    for bad in ([(-1, None, "x")], [(0, "seed", "x")], [(0, None)], "oops"):
        with pytest.raises(FitArtifactError, match="failed replica|failures must be|outside"):
            base.with_failed_replicas(bad)


def _corrupt(tmp_path, art, change):
    path = tmp_path / "fit.json"
    art.save(path, overwrite=True)
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r.pop("objective"), "field 'objective' is missing"),
    (lambda r: r.update(objective="low"), "field 'objective' must be a finite number"),
    (lambda r: r.update(values=[1.0]), "field 'values' must be a list of 2 numbers"),
    (lambda r: r.update(parameter_names=["c1", "c1"]), "field 'parameter_names' must be a list of distinct"),
    (lambda r: r.update(covariance=[[1.0, 0.0]]), "field 'covariance' must be a 2 x 2 matrix"),
    (lambda r: r.update(schema_version=2), "field 'schema_version' is 2; this laddu-dask reads 1"),
    (lambda r: r.update(artifact_kind="laddu.snapshot"), "field 'artifact_kind'"),
    (lambda r: r.update(outcome="great"), "field 'outcome' must be one of"),
    (lambda r: r.update(likelihood_fingerprint=5), "field 'likelihood_fingerprint' must be a string"),
    (lambda r: r["diagnostics"].update(function_evaluations=-1), "field 'diagnostics'.*function_evaluations"),
    (lambda r: r.update(ensemble={"parameter_names": ["c1", "c2"], "draws": [[1.0]]}),
     "field 'ensemble'.*field 'draws' must be a K x 2 matrix"),
    (lambda r: r.update(kind="laddu_dask.FitResult"),
     "holds 'laddu_dask.FitResult', not a laddu_dask.FitArtifact"),
    (lambda r: r.update(values=[0.5, float("nan")]), "fields 'values' and 'objective' must be finite"),
    (lambda r: r["ensemble"].update(parameter_names=["c2", "c1"]),
     r"field 'ensemble' is over \['c2', 'c1'\]"),
    (lambda r: r["ensemble"].update(draw_ids=[1]), r"field 'draw_ids' must be \[0\]"),
], ids=["missing", "mistyped", "short-values", "repeated-names", "covariance-shape", "schema", "kind",
        "outcome", "fingerprint", "diagnostics", "ensemble", "file-kind", "nan", "ensemble-names",
        "draw-ids"])
def test_load_names_the_file_and_the_field_at_fault(ours, tmp_path, change, message):
    _, art = ours
    ensemble = ld.Ensemble.from_arrays([[0.5, 0.4]], parameter_names=["c1", "c2"])
    path = _corrupt(tmp_path, art.with_ensemble(ensemble).with_failed_replicas([(1, None, "x")]), change)
    with pytest.raises(FitArtifactError, match=f"{path}.*{message}"):
        ld.FitArtifact.load(path)


def test_load_refuses_what_is_not_a_fit_artifact(tmp_path):
    path = tmp_path / "fit.json"
    path.write_text("{not json")
    with pytest.raises(FitArtifactError, match=f"{path} is not JSON"):
        ld.FitArtifact.load(path)
    with pytest.raises(FileNotFoundError):
        ld.FitArtifact.load(tmp_path / "missing.json")


def _n_draws(estimate):
    return 0 if estimate.draws is None else len(estimate.draws)


@needs_laddu
def test_yield_context_and_cross_section_bind_then_evaluate_as_laddus():
    """An extended fit's artifact gives the term's yields and cross section at the stored
    values (the same as the likelihood's at the fit's values), with the attached ensemble's
    draws; laddu's central values to the fits' agreement."""
    rng = np.random.default_rng(5)
    generated = rng.uniform(-1, 1, 2000)
    results = {}
    for lib in (ld, laddu):
        lik = _likelihood(lib, extended=True, scale=400.0, const=20.0)
        gen = lib.Dataset.from_arrays(p4s={"beam": np.tile([8.5, 0.0, 0.0, 8.5], (len(generated), 1))},
                                      scalars={"x": generated})
        fit = lik.fit()
        art = fit.artifact()
        lum = lib.Luminosity(2.0, lib.AreaUnit.PICOBARN)
        direct = lik.yield_context("nll", generated_mc=gen, parameters=fit.values).generated_fitted_yield()
        stored = art.yield_context(lik, "nll", generated_mc=gen).generated_fitted_yield()
        assert stored.central == direct.central and _n_draws(stored) == 0
        xs = art.cross_section(lik, "nll", generated_mc=gen, luminosity=lum).total
        assert xs.central == lik.cross_section("nll", gen, lum, fit.values).total.central
        with_draws = art.with_ensemble(lib.Ensemble.from_arrays(
            np.array([fit.values, fit.values * 1.01]), parameter_names=list(fit.parameter_names)))
        drawn = with_draws.cross_section(lik, "nll", generated_mc=gen, luminosity=lum).total
        assert _n_draws(drawn) == 2
        drawn_yield = with_draws.yield_context(lik, "nll", generated_mc=gen).generated_fitted_yield()
        assert _n_draws(drawn_yield) == 2
        results[lib.__name__] = (stored.central, xs.central, np.asarray(drawn.draws))
    for got, want in zip(results["laddu_dask"], results["laddu"]):
        np.testing.assert_allclose(got, want, rtol=1e-5)


@needs_laddu
@pytest.mark.parametrize("path", ["", "a/../b", "a..b", "..", "./a", ".", "fits/central", "/abs", "bins/3"],
                         ids=["empty", "dotdot", "dots-in-a-name", "up", "dot", "here", "nested", "absolute",
                              "number"])
def test_snapshot_paths_as_laddus(ours, theirs, path):
    (_, art), (_, want) = ours, theirs
    try:
        laddu.AnalysisSnapshot().add_fit(path, want)
    except laddu.LadduError:
        with pytest.raises(FitArtifactError, match="is not a snapshot path"):
            ld.AnalysisSnapshot().add_fit(path, art)
    else:
        snap = ld.AnalysisSnapshot()
        snap.add_fit(path, art)
        assert snap.fit(path) is art


@needs_laddu
def test_snapshot_add_alias_fit_save_load_as_laddus(ours, theirs, tmp_path):
    (_, art), (_, want) = ours, theirs
    other = art.with_ensemble(ld.Ensemble.from_arrays([[0.5, 0.4]], parameter_names=["c1", "c2"]))
    snap, their = ld.AnalysisSnapshot(), laddu.AnalysisSnapshot()
    for s, a in ((snap, art), (their, want)):
        s.add_fit("main/fit", a)
        s.alias_fit("best", "main/fit")
        s.alias_fit("best2", "best")
    snap.add_fit("with-draws", other)
    assert snap.fit("best") is snap.fit("main/fit") is art
    for s, error in ((their, laddu.LadduError), (snap, FitArtifactError)):
        with pytest.raises(error, match="duplicate snapshot object path" if s is their else "already holds"):
            s.add_fit("main/fit", art if s is snap else want)
        with pytest.raises(error, match="missing" if s is their else r"no fit at path 'nope'.*best"):
            s.fit("nope")
        with pytest.raises(error, match="missing" if s is their else "no fit at path 'nope'"):
            s.alias_fit("x", "nope")
    with pytest.raises(TypeError, match="must be a FitArtifact"):
        snap.add_fit("result", art.values)
    path = tmp_path / "analysis.json"
    snap.save(path)
    with pytest.raises(UnsafeOutputError, match=f"{path}.*overwrite=True"):
        snap.save(path)
    snap.save(path, overwrite=True)
    stored = json.loads(path.read_text())
    assert len(stored["artifacts"]) == 2  # the shared fit once
    back = ld.AnalysisSnapshot.load(path)
    assert back.fit("best") is back.fit("main/fit") is back.fit("best2")
    _same(back.fit("best"), art)
    assert back.fit("with-draws").ensemble.draws == [[0.5, 0.4]]
    with pytest.raises(FitArtifactError, match="not a laddu_dask.AnalysisSnapshot"):
        art.save(tmp_path / "fit.json") or ld.AnalysisSnapshot.load(tmp_path / "fit.json")
    with pytest.raises(FitArtifactError, match="not a laddu_dask.FitArtifact"):
        ld.FitArtifact.load(path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["entries"][0].update(artifact_id=7), r"entries\[0\]: field 'artifact_id' is 7"),
    (lambda r: r["entries"].append(dict(r["entries"][0])), r"entries\[1\]: path 'a' already holds"),
    (lambda r: r["artifacts"][0].pop("values"), r"artifacts\[0\]: field 'values' is missing"),
    (lambda r: r.update(schema_version=3), "field 'schema_version' is 3"),
], ids=["artifact-id", "duplicate-path", "artifact-field", "schema"])
def test_snapshot_load_names_the_file_and_the_field(ours, tmp_path, change, message):
    _, art = ours
    snap = ld.AnalysisSnapshot()
    snap.add_fit("a", art)
    path = tmp_path / "s.json"
    snap.save(path)
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    with pytest.raises(FitArtifactError, match=f"{path}: {message}"):
        ld.AnalysisSnapshot.load(path)
