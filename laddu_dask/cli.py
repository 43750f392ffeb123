"""The ``laddu-dask`` command.

``laddu-dask demo``
    generate a small KsKs sample, fit it from a displaced start on the local
    scheduler and print fitted values against the truth.
``laddu-dask fit CONFIG.toml [--scheduler ADDRESS] [--output result.json]``
    a fit described by a TOML file, for batch jobs (see :mod:`laddu_dask.jobs`).
``laddu-dask bench``
    time laddu-dask against laddu's JIT on the shared KsKs benchmark sample.

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


def run_demo(
    n_data: int = 20_000,
    n_mc: int = 200_000,
    seed: int = 2024,
    lineshape: str = "bw",
    method: str = "migrad",
    outdir: str | None = None,
    quiet: bool = False,
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
        Where to write the sample (a temporary folder by default, removed afterwards).
    quiet : bool
        Print nothing.
    """
    import laddu_dask as ld
    from laddu_dask import ksks

    say = (lambda *a, **k: None) if quiet else print
    with tempfile.TemporaryDirectory(prefix="laddu-dask-demo-") as tmp:
        where = outdir or tmp
        t0 = time.perf_counter()
        paths = ksks.write_sample(where, n_data=n_data, n_mc=n_mc, seed=seed)
        t_gen = time.perf_counter() - t0
        say(f"generated {n_data} data and {n_mc} accepted-MC KsKs events in {t_gen:.1f} s ({where})")
        start = ksks.displaced_start()
        model = ksks.model(lineshape)
        data = ld.read_parquet(paths["data"])
        mc = ld.read_parquet(paths["accmc"])
        execution = ld.Execution()
        lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc, name="ksks")], execution=execution)
        say(f"fitting {len(lik.parameter_names)} parameters with {method} on the local scheduler ...")
        result = lik.fit(initial=start, method=method, progress=not quiet)
    rows = []
    say("")
    say(f"{'parameter':>10s} {'start':>9s} {'fitted':>10s} {'error':>9s} {'truth':>9s} {'pull':>6s}")
    for name in lik.parameter_names:
        value, error, truth = result.values[name], result.errors[name], ksks.TRUTH[name]
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
    parser = argparse.ArgumentParser(
        prog="laddu-dask", description="Amplitude analysis on Dask (laddu-dask)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="generate a KsKs toy sample and fit it on the local scheduler")
    demo.add_argument("--data", type=int, default=20_000, help="data events (default 20000)")
    demo.add_argument("--mc", type=int, default=200_000, help="accepted-MC events (default 200000)")
    demo.add_argument("--seed", type=int, default=2024)
    demo.add_argument("--lineshape", choices=("bw", "rbw"), default="bw")
    demo.add_argument("--method", choices=("migrad", "lbfgsb"), default="migrad")
    demo.add_argument("--outdir", help="keep the generated sample here")
    demo.add_argument("--json", help="also write the summary to this JSON file")
    sub.add_parser("bench", add_help=False,
                   help="benchmark against laddu's JIT on the KsKs sample (see bench --help)")
    sub.add_parser("fit", add_help=False,
                   help="fit as configured by a TOML file (batch jobs; see fit --help)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from laddu_dask.bench.ksks_bench import main as bench_main

        return bench_main(argv[1:])
    if argv[:1] == ["fit"]:
        from laddu_dask.jobs import main as fit_main

        return fit_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        summary = run_demo(args.data, args.mc, args.seed, args.lineshape, args.method, args.outdir)
        if args.json:
            from laddu_dask.files import atomic_write

            with atomic_write(args.json) as f:
                json.dump(summary, f, indent=2)
        return 0 if summary["valid"] else 1
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
