"""Generation throughput: ``Generator(channel).weighted/unweighted`` against laddu's, per core.

The channel is laddu's tutorial reaction gamma p -> X p, X -> K_S K_S (beam energy uniform
in [8, 9] GeV, X mass uniform in [1, 2] GeV, a t-exchange with slope 4 and a uniform
fraction of 0.2, an isotropic decay), built with each library's own classes.  Three runs per
library, alternating, each on one thread (laddu ``Execution(threads=1)``, laddu-dask
``Execution(num_workers=1)``), so the rate is events per second per core:

* ``weighted``: phase-space events with their weights;
* ``unweighted``: accept-reject phase space (no model);
* ``unweighted_model``: accept-reject against an S + D-wave intensity
  ``|Y_0^0 + c_0 Y_2^0 + c_1 Y_2^1|^2`` of the K_S decay angles, each library evaluating
  its own model.

Prints the medians and the ratios (laddu-dask time / laddu time; below 1 laddu-dask is
faster), and for the unweighted cases both libraries' acceptance (events / proposals, the
pilots not counted) and its ratio (laddu-dask / laddu; above 1 laddu-dask needs fewer
proposals), and writes them, with the run's provenance, to
``benchmarks/results/generation.json``.

Examples
--------
>>> from laddu_dask_bench.generation_bench import build_parser
>>> build_parser().parse_args(["--weighted", "1000"]).weighted
1000
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from laddu_dask_bench.results import RESULTS_DIR, command_line, provenance, write_results

#: The D-wave coefficients of the benchmark intensity.
COEFFICIENTS = {"d0_re": 0.8, "d0_im": 0.3, "d1_re": -0.4, "d1_im": 0.5}


def channel(lib: Any, uniform_fraction: float = 0.2) -> Any:
    """laddu's tutorial photoproduction channel, in ``lib`` (``laddu`` or ``laddu_dask``); a
    ``uniform_fraction`` of the t-exchange proposal flat in t."""
    return lib.Channel("gamma p -> K_S K_S p", edges=[
        lib.Edge("beam", particle=lib.particles.PHOTON, initial_momentum=lib.InitialMomentum.uniform_energy(
            low=8.0, high=9.0, direction=[0.0, 0.0, 1.0])),
        lib.Edge("target", particle=lib.particles.PROTON,
                 initial_momentum=lib.InitialMomentum.momentum([0.0, 0.0, 0.0])),
        lib.Edge("X", mass_proposal=lib.MassProposal(1.0, high=2.0), output=False),
        lib.Edge("recoil", particle=lib.particles.PROTON),
        lib.Edge("ks1", particle=lib.particles.K_SHORT), lib.Edge("ks2", particle=lib.particles.K_SHORT)],
        vertices=[lib.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
                             generation=lib.VertexProposal.t_exchange(
                                 incoming="beam", outgoing="X", slope=4.0,
                                 uniform_fraction=uniform_fraction)),
                  lib.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"],
                             generation=lib.VertexProposal.isotropic())])


def model(lib: Any) -> Any:
    """The S + D-wave intensity of the first K_S's angles in the lab (``lib``'s expressions)."""
    k = lib.Vec4.event("ks1").vec3()
    costheta, phi = k.costheta(), k.phi()

    def y(l: int, m: int) -> Any:  # noqa: E741
        return lib.spherical_harmonic(l, m, costheta=costheta, phi=phi)

    amp = y(0, 0) + lib.complex(lib.parameter("d0_re"), lib.parameter("d0_im")) * y(2, 0) \
        + lib.complex(lib.parameter("d1_re"), lib.parameter("d1_im")) * y(2, 1)
    return lib.Model(amp.norm_sqr())


def _median(call: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(weighted: int = 1_000_000, unweighted: int = 100_000, repeats: int = 3,
        results: str | None = None, command: str | None = None) -> dict[str, Any]:
    """Measure and print; returns ``{case: {"events", "laddu-dask_s", "laddu_s", "ratio", ...}}``."""
    import laddu

    import laddu_dask as ld

    prov = provenance(command or command_line(), {"weighted": weighted, "unweighted": unweighted,
                                                  "repeats": repeats, "threads": 1})
    ours, theirs = ld.Generator(channel(ld)), laddu.Generator(channel(laddu))
    ours_model, theirs_model = model(ld), model(laddu)
    one, laddu_one = ld.Execution(num_workers=1), laddu.Execution(threads=1)
    cases: dict[str, tuple[int, Callable[[], Any], Callable[[], Any]]] = {
        "weighted": (weighted, lambda: ours.weighted(weighted, seed=1, execution=one),
                     lambda: theirs.weighted(weighted, seed=1, execution=laddu_one)),
        "unweighted": (unweighted, lambda: ours.unweighted(unweighted, seed=1, execution=one),
                       lambda: theirs.unweighted(unweighted, seed=1, execution=laddu_one)),
        "unweighted_model": (
            unweighted,
            lambda: ours.unweighted(unweighted, ours_model, parameters=COEFFICIENTS, seed=1, execution=one),
            lambda: theirs.unweighted(unweighted, theirs_model, parameters=COEFFICIENTS, seed=1,
                                      execution=laddu_one)),
    }
    out: dict[str, Any] = {"provenance": prov, "cases": {}}
    print(f"{'case':18s} {'events':>9s} {'laddu-dask ev/s/core':>21s} {'laddu ev/s/core':>16s} {'ratio':>7s} "
          f"{'acceptance laddu-dask':>21s} {'laddu':>7s} {'ratio':>7s}")
    for name, (n, mine, laddus) in cases.items():
        mine(), laddus()  # warm-up: compilation, first-call caches
        times = {"laddu-dask": [], "laddu": []}
        for _ in range(repeats):  # alternating
            times["laddu-dask"].append(_median(mine, 1))
            times["laddu"].append(_median(laddus, 1))
        t_ours, t_laddu = statistics.median(times["laddu-dask"]), statistics.median(times["laddu"])
        (_, report), (_, theirs_report) = mine(), laddus()
        ours_rate, laddu_rate = report.acceptance_rate, theirs_report.acceptance_rate
        row = {"events": n, "laddu-dask_s": t_ours, "laddu_s": t_laddu, "ratio": t_ours / t_laddu,
               "laddu-dask_events_per_s_per_core": n / t_ours, "laddu_events_per_s_per_core": n / t_laddu,
               "acceptance_rate": ours_rate, "laddu_acceptance_rate": laddu_rate,
               "acceptance_ratio": ours_rate / laddu_rate}
        out["cases"][name] = row
        print(f"{name:18s} {n:9d} {n / t_ours:21.3e} {n / t_laddu:16.3e} {t_ours / t_laddu:7.2f} "
              f"{ours_rate:21.4f} {laddu_rate:7.4f} {ours_rate / laddu_rate:7.2f}")
    if results:
        write_results(results, out)
    return out


def readme_lines(r: dict[str, Any]) -> list[str]:
    """The README's lines for a ``generation.json`` result."""
    from laddu_dask_bench.readme_format import ratio, run_line

    prov = r["provenance"]
    out = ["### Monte Carlo generation", "",
           "Events per second per core of `Generator(channel)` on laddu's photoproduction tutorial "
           "channel (gamma p -> X p, X -> K_S K_S), one thread each, against laddu's `Generator` on the "
           f"same channel, alternating, median of {prov['parameters']['repeats']}. "
           + run_line(prov, ("laddu-dask", "laddu", "dask", "numpy")), "",
           "Acceptance: events per proposal of the unweighted runs (laddu-dask adapts its proposal to the "
           "model more widely, see the difference table), and its ratio, laddu-dask / laddu.", "",
           "| | events | laddu-dask | laddu | ratio | acceptance laddu-dask | laddu | ratio |",
           "|---|---|---|---|---|---|---|---|"]
    titles = {"weighted": "weighted phase space", "unweighted": "unweighted phase space",
              "unweighted_model": "unweighted, S + D-wave intensity"}
    for name, row in r["cases"].items():
        accepted = (f"{row['acceptance_rate']:.1%} | {row['laddu_acceptance_rate']:.1%} | "
                    f"{row['acceptance_ratio']:.2f}x" if "laddu_acceptance_rate" in row else "| |")
        out.append(f"| {titles.get(name, name)} | {row['events']:,} | "
                   f"{row['laddu-dask_events_per_s_per_core'] / 1e6:.2f} M/s | "
                   f"{row['laddu_events_per_s_per_core'] / 1e6:.2f} M/s | {ratio(row['ratio'])} | "
                   f"{accepted} |")
    return [*out, ""]


def build_parser() -> argparse.ArgumentParser:
    """Options of the generation benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weighted", type=int, default=1_000_000, help="weighted events per run")
    ap.add_argument("--unweighted", type=int, default=100_000, help="unweighted events per run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default=os.path.join(RESULTS_DIR, "generation.json"))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``benchmarks/bench_generation.py``."""
    a = build_parser().parse_args(argv)
    run(weighted=a.weighted, unweighted=a.unweighted, repeats=a.repeats, results=a.results)
    return 0
