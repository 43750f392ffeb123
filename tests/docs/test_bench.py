"""The benchmarks' honesty: the Benchmarks page's figures from results files, like-for-like checks,
fresh processes."""

from __future__ import annotations

import difflib
import json
import os
import shutil

import numpy as np
import pytest
from laddu_reference import needs_laddu

from laddu_dask_bench import readme
from laddu_dask_bench.compare import Counted, NotComparableError, migrad, same_function, same_minimum
from laddu_dask_bench.first_eval import first_evaluations
from laddu_dask_bench.results import RESULTS_DIR, ROOT, command_line

# -- every figure of the Benchmarks page comes from a committed results file ---------------------


def _readme_section() -> str:
    """The documentation's Benchmarks page (``docs/benchmarks.md``) as committed."""
    with open(readme.PAGE) as f:
        return f.read().rstrip("\n")


def test_benchmarks_page_is_what_the_committed_results_render():
    rendered = readme.render(RESULTS_DIR).rstrip("\n")
    current = _readme_section()
    diff = "\n".join(difflib.unified_diff(current.splitlines(), rendered.splitlines(), "docs/benchmarks.md",
                                          "rendered", lineterm=""))
    assert current == rendered, (
        "docs/benchmarks.md differs from what benchmarks/results/*.json give; "
        f"run `python3 benchmarks/render_readme.py --write`:\n{diff}")


def test_the_readme_holds_no_benchmark_figure_and_links_the_page():
    """The README links to the rendered page instead of copying figures that could go stale."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    assert "](docs/benchmarks.md)" in text
    assert not any(line.startswith("| ") and " ms |" in line for line in text.splitlines())
    assert readme.PAGE == os.path.join(ROOT, "docs", "benchmarks.md")


def _render_edited(tmp_path, name, edit):
    """The section rendered from the committed files, ``name``'s results changed by ``edit``."""
    for n in readme.FILES:
        shutil.copy(os.path.join(RESULTS_DIR, n), tmp_path / n)
    path = tmp_path / name
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))
    return readme.render(str(tmp_path))


def test_a_changed_result_changes_the_rendered_section(tmp_path):
    # a figure that is not in the results files (a stale or hand-edited one) cannot match
    rendered = _render_edited(tmp_path, "bench_ksks.json",
                              lambda r: r["steady_s"]["ours"].update(value=0.123456))
    assert "| `value`, 10 free parameters | 123.46 ms |" in rendered
    assert rendered.rstrip("\n") != _readme_section()


def test_the_models_figures_are_rendered_from_their_results(tmp_path):
    def edit(r):
        r["models"]["zlm"]["steady_s"]["ours"]["value+gradient"] = 0.0123456
        ours = r["models"]["kmatrix"]["first_evaluation"]["laddu-dask"]
        ours["cold"].update(first_evaluation_s=7.5, compile_s=6.0)
        for run in ours["runs"]["cold"]:
            run["tier0"] = False  # the first evaluation waited for the compilation

    rendered = _render_edited(tmp_path, "models.json", edit)
    with open(os.path.join(RESULTS_DIR, "models.json")) as f:
        zlm = json.load(f)["models"]["zlm"]["steady_s"]
    theirs = zlm["theirs"]["value+gradient"]
    assert (f"| polarized Zlm: `value_and_gradient` | 12.35 ms | {readme.seconds(theirs)} "
            f"| {readme.ratio(0.0123456 / theirs)} |") in rendered
    assert "| 3-channel K-matrix: first value and gradient, cold (empty caches) | 7.50 s |" in rendered
    assert "kernel compiles in 6.00 s of its 7.50 s cold first evaluation (80%" in " ".join(rendered.split())
    assert rendered.rstrip("\n") != _readme_section()

    def served(r):  # the tier-0 kernel served the cold first evaluations while Numba compiled
        ours = r["models"]["kmatrix"]["first_evaluation"]["laddu-dask"]
        ours["cold"].update(first_evaluation_s=3.25, compile_s=9.5)
        for run in ours["runs"]["cold"]:
            run["tier0"] = True

    words = " ".join(_render_edited(tmp_path, "models.json", served).split())
    assert ("3-channel K-matrix: values agree with laddu's" in words and "its cold first evaluation ran "
            "the tier-0 kernel, while Numba compiled the fused kernel in a child process (9.50 s" in words)


def test_the_binned_figures_are_rendered_from_their_results(tmp_path):
    def edit(r):
        r["own"]["laddu-dask"]["wall_s"] = 123.0
        r["own"]["laddu"]["wall_s"] = 41.0
        r["same_driver"]["laddu-dask"]["middle_bin_value_and_gradient_s"] = 0.0025

    rendered = _render_edited(tmp_path, "binned.json", edit)
    with open(os.path.join(RESULTS_DIR, "binned.json")) as f:
        r = json.load(f)
    p, theirs = r["provenance"]["parameters"], r["same_driver"]["laddu"]["middle_bin_value_and_gradient_s"]
    assert f"| {p['bins']} bins x {p['restarts']} restarts | laddu-dask | laddu | ratio |" in rendered
    if r["own"]["best_per_bin"]["same_minima"]:
        assert "| each library's own procedure, end to end | 123.00 s | 41.00 s | 3.00x |" in rendered
    mid = r["same_driver"]["middle_bin"]["index"]
    assert (f"| `value_and_gradient`, bin {mid} | 2.50 ms | {readme.seconds(theirs)} "
            f"| {readme.ratio(0.0025 / theirs)} |") in rendered
    assert rendered.rstrip("\n") != _readme_section()


def test_binned_minima_that_differ_give_no_ratio(tmp_path):
    def edit(r):
        r["own"]["best_per_bin"].update(same_minima=False, max_fval_difference=2.5)
        r["own"]["laddu-dask"]["wall_s"], r["own"]["laddu"]["wall_s"] = 10.0, 5.0

    rendered = " ".join(_render_edited(tmp_path, "binned.json", edit).split())
    assert "| each library's own procedure, end to end | 10.00 s | 5.00 s | not compared |" in rendered
    assert "differs by at most 2.5e+00 between the libraries" in rendered
    assert "more than 0.001, so no ratio is given" in rendered


@pytest.mark.parametrize("name", readme.FILES)
def test_every_results_file_records_machine_versions_date_command_and_parameters(name):
    with open(os.path.join(RESULTS_DIR, name)) as f:
        prov = json.load(f)["provenance"]
    assert prov["date"][:2] == "20" and prov["command"] and isinstance(prov["parameters"], dict)
    m = prov["machine"]
    assert m["cpu"] and m["cores"] >= 1 and m["memory_bytes"] > 2**30
    assert len(m["load_average_start"]) == 3 and len(m["load_average_end"]) == 3
    for package in ("python", "numpy", "numba", "dask", "pyarrow", "iminuit", "laddu-dask"):
        assert package in prov["versions"], (name, package)


def test_ksks_results_name_the_competitors_versions():
    with open(os.path.join(RESULTS_DIR, "bench_ksks.json")) as f:
        r = json.load(f)
    assert "laddu" in r["provenance"]["versions"]
    if r["tensorwaves"]["status"] == "compared":
        assert {"jax", "tensorwaves"} <= set(r["provenance"]["versions"])


def test_command_line_is_the_command_to_type_again():
    assert command_line(["/usr/local/bin/laddu-dask", "bench", "--data", "5"]) == "laddu-dask bench --data 5"
    script = os.path.join(ROOT, "benchmarks", "bench_streaming.py")
    assert command_line([script, "--events", "10"]) == "python3 benchmarks/bench_streaming.py --events 10"


# -- like-for-like fits ------------------------------------------------------------------------


class _Rosenbrock:
    """A bounded test function; ``slow_value`` computes the value another way (as laddu would)."""

    parameter_names = ["a", "b"]

    def __init__(self, slow_value: bool = False) -> None:
        self.slow_value = slow_value

    def resolve(self, p):
        if isinstance(p, dict):
            return np.array([p[n] for n in self.parameter_names])
        return np.asarray(p, dtype=float)

    def bounds(self):
        return [(-2.0, 2.0), (None, None)]

    def value_and_gradient(self, p):
        a, b = p
        v = (1 - a) ** 2 + 100 * (b - a * a) ** 2
        return float(v), np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])

    def value(self, p):
        if self.slow_value:
            a, b = p
            return float(sum([(1 - a) ** 2, 100 * (b - a * a) ** 2]))
        return self.value_and_gradient(p)[0]


def test_one_driver_gives_both_sides_the_same_calls_and_minimum():
    start = {"a": -1.2, "b": 1.0}
    ours, theirs = migrad(_Rosenbrock(), start), migrad(_Rosenbrock(slow_value=True), start)
    for key in ("value_and_gradient_calls", "value_calls", "minuit_nfcn", "minuit_ngrad"):
        assert ours[key] == theirs[key], key
    assert ours["valid"] and np.allclose(ours["values"], [1.0, 1.0], atol=1e-2)
    check = same_minimum(ours, theirs, ["a", "b"])
    assert check["fval_difference"] <= 1e-3 and check["max_parameter_difference_sigma"] <= 0.05
    # the cache: at most one value_and_gradient per gradient MIGRAD asks for, and a value
    # asked at a cached point is not evaluated again (without the cache: value_calls == nfcn)
    assert 0 < ours["value_and_gradient_calls"] <= ours["minuit_ngrad"]
    assert ours["value_calls"] < ours["minuit_nfcn"]


def test_counted_delegates_and_counts():
    c = Counted(_Rosenbrock())
    c.value([0.0, 0.0])
    c.value_and_gradient([0.0, 0.0])
    c.value_and_gradient([0.5, 0.0])
    assert (c.value_calls, c.value_and_gradient_calls) == (1, 2)
    assert c.bounds() == [(-2.0, 2.0), (None, None)]


def test_different_minima_are_not_compared():
    a = {"valid": True, "fval": 100.0, "values": [1.0, 2.0], "errors": [0.1, 0.2]}
    with pytest.raises(NotComparableError, match="parameter 'y' differs by 0.5 sigma"):
        same_minimum(a, dict(a, values=[1.0, 2.1]), ["x", "y"])
    with pytest.raises(NotComparableError, match="-2 ln L differs by 0.01"):
        same_minimum(a, dict(a, fval=100.01), ["x", "y"])
    with pytest.raises(NotComparableError, match="second fit is not valid"):
        same_minimum(a, dict(a, valid=False), ["x", "y"])


def test_a_function_that_is_not_the_same_is_refused():
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 1.0, 1000)

    def ours(p):  # -2 ln L of an exponential-like shape, normalised over x
        i = p[0] + p[1] * x
        return float(-2 * (np.log(i).sum() - len(x) * np.log(i.sum()))), -2 * np.array(
            [(1 / i).sum() - len(x) / i.sum() * len(x), (x / i).sum() - len(x) / i.sum() * x.sum()])

    def convention(p):  # the same likelihood as -ln L with a mean normalisation: ours / 2 + const
        v, g = ours(p)
        return v / 2 - len(x) * np.log(len(x)), g / 2

    def other(p):  # a different model: the linear term squared
        q = np.array([p[0], p[1] * 1.1])
        return convention(q)

    points = [np.array([1.0, 0.5]), np.array([1.1, 0.4]), np.array([0.9, 0.7])]
    assert same_function(ours, convention, points, scale=2.0)["value_difference_rel"] < 1e-12
    with pytest.raises(NotComparableError, match="different functions: at point 0 the gradients"):
        same_function(ours, other, points, scale=2.0)
    with pytest.raises(NotComparableError, match="at point 1 the value difference"):
        same_function(ours, lambda p: (convention(p)[0] * 1.01, convention(p)[1]), points, scale=2.0)


@needs_laddu
def test_laddu_side_has_what_the_fit_driver_uses(tmp_path):
    from laddu_dask import ksks
    from laddu_dask_bench.laddu_ksks import laddu_ksks_nll

    paths = ksks.write_sample(str(tmp_path), n_data=300, n_mc=2000, seed=5)
    nll = laddu_ksks_nll(paths["data"], paths["accmc"])
    assert nll.bounds()[:4] == [ksks.BOUNDS[n] for n in ksks.PARAMETER_NAMES[:4]]
    assert nll.bounds()[4] == (None, None)
    start = ksks.displaced_start()
    assert list(nll.resolve(start)) == [start[n] for n in nll.parameter_names]


# -- first evaluation in fresh processes ----------------------------------------------------------


@pytest.mark.slow
def test_a_cold_process_starts_with_empty_caches_and_reports_the_compilation_and_a_warm_one_none(tmp_path):
    """One cold and one warm process (each a few seconds of imports and compilation)."""
    from laddu_dask import ksks
    from laddu_dask_bench.models import initial_point, polarized_sample

    paths = polarized_sample(ksks.write_sample(str(tmp_path), n_data=200, n_mc=1000, seed=2), str(tmp_path))
    r = first_evaluations(paths, "kmatrix", initial_point("kmatrix"), repeats=1, libraries=("laddu-dask",))
    cold, warm = r["laddu-dask"]["runs"]["cold"][0], r["laddu-dask"]["runs"]["warm"][0]
    # the cold process starts with an empty kernel cache, which the warm one finds filled
    assert cold["cache_files_before"] == 0 < warm["cache_files_before"]
    assert cold["import_s"] > 0 and cold["first_evaluation_s"] > 0
    # the compilation the laddu_dask logger reports (over a second: Numba's, of the fused kernel,
    # in a child process while the tier-0 kernel served the first evaluation); warm, Numba loads
    # it from its cache (reported when that takes over a second) and the value has the same bits
    assert cold["tier0"] is True and warm["tier0"] is False
    assert cold["compile_s"] >= 1.0
    assert (warm["compile_s"] or 0.0) < cold["compile_s"] / 2 and cold["value"] == warm["value"]
    assert r["laddu-dask"]["cold"]["compile_s"] == cold["compile_s"]


# -- the benchmark models: written once, the same numbers in both libraries ------------------------


def test_polarization_columns_are_added_deterministically(tmp_path):
    import pyarrow.parquet as pq

    from laddu_dask import ksks
    from laddu_dask_bench.models import POL_ANGLES, POL_MAGNITUDE, with_polarization

    paths = ksks.write_sample(str(tmp_path), n_data=10, n_mc=0, seed=1)
    first = pq.read_table(with_polarization(paths["data"], str(tmp_path / "a"), seed=11))
    again = pq.read_table(with_polarization(paths["data"], str(tmp_path / "b"), seed=11))
    assert first.equals(again) and first.num_rows == 10
    assert first.select(pq.read_table(paths["data"]).column_names).equals(pq.read_table(paths["data"]))
    angle, magnitude = first["pol_angle"].to_numpy(), first["pol_magnitude"].to_numpy()
    assert np.array_equal(angle, np.array(POL_ANGLES)[np.arange(10) % 4])
    assert np.all((magnitude >= POL_MAGNITUDE[0]) & (magnitude < POL_MAGNITUDE[1]))


def test_the_zlm_model_is_built_of_laddu_dasks_zlm():
    """The benchmark writes Zlm from laddu 0.28.1's pieces (laddu has no Zlm): per event they are
    ld.Zlm's real and imaginary parts."""
    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask.compile.compiled import CompiledModel
    from laddu_dask_bench.models import ZLM_WAVES, _helicity_angles, polarization_angle, zlm_parts

    data, _ = ksks.generate(200, 0, seed=3)
    rng = np.random.default_rng(4)
    columns = {f"{k}_{c}": v[:, i] for k, v in data.items() for i, c in enumerate(("e", "px", "py", "pz"))}
    columns.update(pol_magnitude=rng.uniform(0.0, 0.99, 200), pol_angle=rng.uniform(-3.1, 3.1, 200))
    _, costheta, phi = _helicity_angles(ld)
    pol = ld.Polarization("beam", "proton", pol_magnitude="pol_magnitude", pol_angle="pol_angle")

    def values(expr):
        cm = CompiledModel.from_expr(expr)
        return np.asarray(cm.values(cm.event_cache({c: columns[c] for c in cm.columns}), [], n=200))

    for _, l, m in ZLM_WAVES:  # noqa: E741
        for r in ("+", "-"):
            want = values(ld.Zlm("z", l, m, r, ld.Angles(costheta, phi), pol))
            re_z, im_z = zlm_parts(ld, l, m, r, costheta, phi, polarization_angle(ld))
            assert np.allclose(values(re_z), want.real, rtol=1e-13, atol=1e-15), (l, m, r)
            assert np.allclose(values(im_z), want.imag, rtol=1e-13, atol=1e-15), (l, m, r)


@needs_laddu
@pytest.mark.parametrize("model", ["zlm", "kmatrix"])
def test_a_benchmark_model_is_the_same_likelihood_in_both_libraries(tmp_path, model):
    from laddu_dask import ksks
    from laddu_dask_bench.models import initial_point, likelihood, parameter_names, polarized_sample

    paths = polarized_sample(ksks.write_sample(str(tmp_path), n_data=300, n_mc=2000, seed=5), str(tmp_path))
    ours, theirs = likelihood("laddu-dask", model, paths), likelihood("laddu", model, paths)
    assert ours.parameter_names == theirs.parameter_names == parameter_names(model)
    x = np.array(initial_point(model)) * np.linspace(0.9, 1.1, len(parameter_names(model)))
    (v, g), (w, h) = ours.value_and_gradient(x), theirs.value_and_gradient(x)
    assert abs(v - w) <= 1e-12 * abs(w) and np.max(np.abs(g - h)) <= 1e-10 * np.max(np.abs(h))


@needs_laddu
def test_the_binned_benchmark_bins_are_the_same_likelihoods_in_both_libraries(tmp_path):
    import laddu

    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask_bench.binned_bench import edges, laddu_bins
    from laddu_dask_bench.models import ANGULAR_BOUNDS, angular_waves_model, ksks_mass

    paths = ksks.write_sample(str(tmp_path), n_data=400, n_mc=3000, seed=6)
    ours = ld.binned_likelihoods(angular_waves_model(ld), data=ld.read_parquet(paths["data"]),
                                 accepted_mc=ld.read_parquet(paths["accmc"]), by=ksks_mass(ld),
                                 bins=ld.Bin(edges(3)))
    theirs, _, _ = laddu_bins(paths, edges(3), laddu.Execution("jit", threads=1, precision="f64"))
    x = [0.5, 0.2, -0.3, 0.4, 0.2, -0.3]
    for (b, lik), other in zip(ours, theirs, strict=True):
        assert lik.parameter_names == other.parameter_names and other.bounds() == [ANGULAR_BOUNDS] * 6
        (v, g), (w, h) = lik.value_and_gradient(x), other.value_and_gradient(x)
        assert abs(v - w) <= 1e-12 * abs(w) and np.max(np.abs(g - h)) <= 1e-10 * np.max(np.abs(h)), b.index


# -- TensorWaves computes the same likelihood ---------------------------------------------------------


@pytest.mark.slow
def test_tensorwaves_is_the_same_likelihood(tmp_path):
    pytest.importorskip("tensorwaves")
    import laddu_dask as ld
    from laddu_dask import ksks
    from laddu_dask_bench.tensorwaves_ksks import SCALE, TensorWavesKsKs

    paths = ksks.write_sample(str(tmp_path), n_data=500, n_mc=3000, seed=4)
    ours = ld.Likelihood([ld.NLL(ksks.model(), data=ld.read_parquet(paths["data"]),
                                 accepted_mc=ld.read_parquet(paths["accmc"]))])
    tw = TensorWavesKsKs(paths["data"], paths["accmc"])
    base = np.array(list(ksks.TRUTH.values()))
    points = [base, base * 1.01, base * np.linspace(0.98, 1.02, base.size)]
    check = same_function(ours.value_and_gradient, tw.value_and_gradient, points, scale=SCALE)
    assert check["value_difference_rel"] < 1e-12 and check["gradient_difference_rel"] < 1e-10
    assert tw.data_weights_are_one and tw.value(base) == pytest.approx(tw.unbinned_nll(base), rel=1e-12)
