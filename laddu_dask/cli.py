"""The ``laddu-dask`` command.

``laddu-dask demo [--generator]``
    generate a small KsKs sample (with ``--generator`` by laddu-dask's ``Generator``), fit it
    from a displaced start on the local scheduler and print fitted values against the truth.
``laddu-dask fit CONFIG.toml [--scheduler ADDRESS] [--output result.json]``
    a fit described by a TOML file, for batch jobs (see :mod:`laddu_dask.jobs`).
``laddu-dask bench [...]``
    says how to run the benchmark against laddu's JIT (``python3 benchmarks/bench_ksks.py``
    of a source checkout: the KsKs model, the polarized Zlm and 3-channel K-matrix models,
    a binned analysis); the benchmarks are not part of the installed package.
``laddu-dask --version``
    the installed version.

``demo`` and ``fit`` exit with 0 (valid fit), 1 (invalid fit), 2 (bad input or usage),
3 (could not run: a file or the kernel cache could not be written, ...; one line on
stderr, a traceback only with ``--debug``) or 130 (interrupted); see
:mod:`laddu_dask.jobs.command`.

Examples
--------
>>> from laddu_dask.cli import build_parser
>>> build_parser().parse_args(["demo", "--data", "1000"]).data
1000
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence

from laddu_dask.files import atomic_write
from laddu_dask.jobs.command import EXIT_BAD_INPUT, EXIT_INVALID, EXIT_VALID, run_command
from laddu_dask.jobs.command import main as fit_main
from laddu_dask.options import FitMethod


def run_demo(
    n_data: int = 20_000,
    n_mc: int = 200_000,
    seed: int = 2024,
    lineshape: str = "bw",
    method: str = "migrad",
    outdir: str | None = None,
    quiet: bool = False,
    generator: bool = False,
) -> dict:
    """Generate, fit and report the KsKs demo; returns a JSON-ready summary.

    Parameters
    ----------
    n_data, n_mc : int
        Events in the data and accepted-MC samples.
    seed : int
        Generator seed.
    lineshape : {"bw", "rbw"}
        Breit-Wigner form of the fitted model (the data always follow the constant-width truth).
    method : {"migrad", "lbfgsb"}
        Minimiser.
    outdir : str, optional
        Where to write the sample (by default a temporary folder, removed when the demo ends).
    quiet : bool
        Print nothing.
    generator : bool
        Draw the sample with laddu-dask's ``Generator`` (:func:`laddu_dask.datasets.ksks.generate_datasets`,
        folders ``data/`` and ``accmc/``) instead of the reference sampler
        (:func:`laddu_dask.datasets.ksks.write_sample`, ``data.parquet`` and ``accmc.parquet``).
    """
    import laddu_dask as ld
    from laddu_dask import ksks

    say = (lambda *a, **k: None) if quiet else print
    with tempfile.TemporaryDirectory(prefix="laddu-dask-demo-") as tmp:
        where = outdir or tmp
        t0 = time.perf_counter()
        execution = ld.Execution()
        if generator:
            data, mc = ksks.generate_datasets(n_data, n_mc, seed=seed, path=where, execution=execution)
        else:
            paths = ksks.write_sample(where, n_data=n_data, n_mc=n_mc, seed=seed)
            data, mc = ld.read_parquet(paths["data"]), ld.read_parquet(paths["accmc"])
        t_gen = time.perf_counter() - t0
        kept = f"in {where}" if outdir else "a temporary sample, removed at the end; --outdir DIR keeps it"
        how = " with laddu-dask's Generator" if generator else ""
        say(f"generated {n_data} data and {n_mc} accepted-MC KsKs events{how} in {t_gen:.1f} s ({kept})")
        start = ksks.displaced_start()
        model = ksks.model(lineshape)
        lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="ksks")], execution=execution)
        say(f"fitting {len(lik.parameter_names)} parameters with {method} on the local scheduler ...")
        result = lik.fit(initial=start, method=method, progress=not quiet)
    rows = []
    say("")
    say(f"{'parameter':>10s} {'start':>9s} {'fitted':>10s} {'error':>9s} {'truth':>9s} {'pull':>6s}")
    for name in lik.parameter_names:
        value, error, truth = result.named_parameters[name], result.errors[name], ksks.TRUTH[name]
        pull = (value - truth) / error if error > 0 else math.nan
        rows.append({"name": name, "start": start[name], "value": value, "error": error,
                     "truth": truth, "pull": pull})
        say(f"{name:>10s} {start[name]:9.4f} {value:10.5f} {error:9.5f} {truth:9.4f} {pull:6.2f}")
    say("")
    say(f"fit {'valid' if result.valid else 'INVALID'}: -2 ln L = {result.fval:.6f}, "
        f"{result.n_calls} evaluations, {result.wall_time:.1f} s")
    for d in execution.memory_decisions():
        say(f"memory: {d.dataset}: {d.strategy} ({d.reason})")
    return {"valid": result.valid, "fval": result.fval, "n_calls": result.n_calls,
            "wall_time": result.wall_time, "parameters": rows}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``laddu-dask``."""
    from laddu_dask import __version__

    parser = argparse.ArgumentParser(
        prog="laddu-dask", description="Amplitude analysis on Dask (laddu-dask)."
    )
    parser.add_argument("--version", action="version", version=f"laddu-dask {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="generate a KsKs toy sample and fit it on the local scheduler")
    demo.add_argument("--data", type=int, default=20_000, help="data events (default 20000)")
    demo.add_argument("--mc", type=int, default=200_000, help="accepted-MC events (default 200000)")
    demo.add_argument("--seed", type=int, default=2024,
                      help="seed of the generated sample (default 2024; the same seed gives the "
                           "same events)")
    demo.add_argument("--lineshape", choices=("bw", "rbw"), default="bw",
                      help="Breit-Wigner of the fitted model: bw constant width (the form the "
                           "sample was generated with), rbw relativistic (l = 0 S wave, l = 2 D "
                           "wave) (default bw)")
    demo.add_argument("--method", choices=FitMethod.values(), default="migrad",
                      help="minimiser: iminuit's MIGRAD or SciPy's L-BFGS-B, both followed by "
                           "HESSE for the errors (default migrad)")
    demo.add_argument("--outdir", help="write the sample (data.parquet, accmc.parquet) here and "
                                       "keep it (default: a temporary folder, removed at the end)")
    demo.add_argument("--generator", action="store_true",
                      help="draw the sample with laddu-dask's Generator on the toy's channel "
                           "(ksks.generate_datasets; --outdir then holds folders data/ and accmc/) "
                           "instead of the benchmark's reference sampler (same distributions, other "
                           "events)")
    demo.add_argument("--json", help="also write the summary to this JSON file")
    demo.add_argument("--debug", action="store_true",
                      help="print the traceback of a failure before its one-line message")
    sub.add_parser("bench", add_help=False,
                   help="how to run the benchmark against laddu's JIT (benchmarks/bench_ksks.py "
                        "of a source checkout)")
    sub.add_parser("fit", add_help=False,
                   help="fit as configured by a TOML file (batch jobs; see fit --help)")
    return parser


def run_bench(argv: list[str]) -> int:
    """``laddu-dask bench``: where the benchmark is. The benchmarks and their competitors' code
    live in ``benchmarks/`` of a source checkout, not in the installed library, and the
    command runs no file it did not install; it says which command to run there."""
    command = " ".join(["python3 benchmarks/bench_ksks.py", *argv])
    print(f"laddu-dask bench: the benchmarks are not part of the installed package; in a source "
          f"checkout of laddu-dask, run: {command}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return run_bench(argv[1:])
    if argv[:1] == ["fit"]:
        return fit_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        def demo() -> int:
            summary = run_demo(args.data, args.mc, args.seed, args.lineshape, args.method,
                               args.outdir, generator=args.generator)
            if args.json:
                with atomic_write(args.json) as f:
                    json.dump(summary, f, indent=2)
            return EXIT_VALID if summary["valid"] else EXIT_INVALID

        return run_command("laddu-dask demo", demo, debug=args.debug)
    return EXIT_BAD_INPUT  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
