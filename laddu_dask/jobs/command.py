"""The ``laddu-dask fit`` command: its argument parser, and :func:`main` with its exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from laddu_dask.errors import LadduDaskError
from laddu_dask.jobs.cluster import job_script
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.run import default_output, print_summary, run_fit
from laddu_dask.jobs.schema import ConfigError, FitRunError, one_line

EXIT_VALID, EXIT_INVALID, EXIT_BAD_INPUT, EXIT_FAILED = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``laddu-dask fit``."""
    parser = argparse.ArgumentParser(
        prog="laddu-dask fit",
        description="Run the fit described by a TOML file and write the result as JSON "
                    "(schema: the docstring of laddu_dask.jobs). Exit status: 0 valid fit, "
                    "1 invalid fit (result written), 2 bad input, 3 the fit could not run.",
    )
    parser.add_argument("config", help="the TOML file")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on this Dask scheduler (tcp://host:port), overriding [cluster]")
    parser.add_argument("--output", metavar="PATH",
                        help="result file (default: <config stem>.result.json beside the config)")
    parser.add_argument("--print-job-script", action="store_true",
                        help="print the worker job script of the [cluster] table and exit")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    return parser


def _fail(message: str) -> None:
    print(f"laddu-dask fit: error: {one_line(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """``laddu-dask fit``; returns the exit status (0 valid, 1 invalid, 2 bad input, 3 failed).

    ``argv`` are the arguments after ``fit`` (default: ``sys.argv[1:]``).
    """
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error argparse already reported
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    say = (lambda *a, **k: None) if args.quiet else print
    try:
        config = load_config(args.config)
        if args.print_job_script:
            print(job_script(config), end="")
            return EXIT_VALID
        output = args.output if args.output is not None else default_output(config.path)
        result = run_fit(config, scheduler=args.scheduler, output=output, say=say)
    except ConfigError as exc:
        _fail(str(exc))
        return EXIT_BAD_INPUT
    except FitRunError as exc:
        cause = exc.__cause__
        if cause is not None and not isinstance(cause, LadduDaskError | OSError):
            traceback.print_exception(cause, file=sys.stderr)
        _fail(str(exc))
        return EXIT_FAILED
    print_summary(result, os.path.abspath(output), say)
    return EXIT_VALID if result["valid"] else EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
