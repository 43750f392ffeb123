"""The ``laddu-dask fit`` command: its argument parser, and :func:`main` with its exit codes.

Exit status (of ``laddu-dask fit``; ``laddu-dask demo`` uses the same codes):

=== =====================================================================================
0   valid fit (the result is written)
1   the fit is not valid, e.g. the minimiser did not converge (the result is still
    written, with ``"valid": false``)
2   bad input: the config, a model file, the data, the start values or the command line
    (one line on stderr names the file, table, key or value; nothing is written)
3   the fit could not run: the cluster did not start or its workers did not arrive, a
    job submission failed, the kernel cache or the result file could not be written, an
    evaluation failed (one line on stderr; nothing is written)
130 interrupted (SIGINT, Ctrl-C; nothing is written)
=== =====================================================================================

``--debug`` prints the traceback of a failure before its line.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from laddu_dask.jobs.cluster import job_script
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.interrupts import forget_caught_interrupt, sigint_raises
from laddu_dask.jobs.run import default_output, print_summary, run_fit
from laddu_dask.jobs.schema import ConfigError, FitRunError, one_line

EXIT_VALID, EXIT_INVALID, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``laddu-dask fit``."""
    parser = argparse.ArgumentParser(
        prog="laddu-dask fit",
        description="Run the fit described by a TOML file and write the result as JSON "
                    "(schema: the docstring of laddu_dask.jobs). Exit status: 0 valid fit, "
                    "1 invalid fit (result written), 2 bad input, 3 the fit could not run, "
                    "130 interrupted; on 2, 3 and 130 nothing is written.",
    )
    parser.add_argument("config", help="the TOML file")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on this Dask scheduler (tcp://host:port), overriding [cluster]")
    parser.add_argument("--output", metavar="PATH",
                        help="result file (default: <config stem>.result.json beside the config)")
    parser.add_argument("--print-job-script", action="store_true",
                        help="print the worker job script of the [cluster] table and exit")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of a failure before its one-line message")
    return parser


def run_command(prog: str, body: Callable[[], int], *, debug: bool = False,
                interrupted: str = "nothing was written") -> int:
    """Run a command's ``body``; every failure becomes an exit status and one line on stderr.

    :class:`ConfigError` is 2, :class:`KeyboardInterrupt` (SIGINT raises it in ``body``,
    whatever handler a library installed) is 130, any other exception is 3. ``debug``
    prints the traceback first.

    Examples
    --------
    >>> run_command("demo", lambda: 1 // 0)  # stderr: "demo: error: could not run: ZeroDivisionError: ..."
    3
    """
    try:
        with sigint_raises():
            return body()
    except KeyboardInterrupt as exc:
        forget_caught_interrupt()  # else `python -m` ends by SIGINT at exit, not with 130
        error: BaseException = exc
        status, message = EXIT_INTERRUPTED, f"interrupted (SIGINT); {interrupted}"
    except ConfigError as exc:
        error, status, message = exc, EXIT_BAD_INPUT, f"error: {exc}"
    except FitRunError as exc:
        error, status, message = exc, EXIT_FAILED, f"error: {exc}"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - every failure to run is status 3
        error, status, message = exc, EXIT_FAILED, f"error: could not run: {type(exc).__name__}: {exc}"
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    print(f"{prog}: {one_line(message)}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """``laddu-dask fit``; returns the exit status (0 valid, 1 invalid, 2 bad input, 3 failed,
    130 interrupted).

    ``argv`` are the arguments after ``fit`` (default: ``sys.argv[1:]``).
    """
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, or a usage error argparse already reported
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    say = (lambda *a, **k: None) if args.quiet else functools.partial(print, flush=True)

    def body() -> int:
        config = load_config(args.config)
        if args.print_job_script:
            print(job_script(config), end="")
            return EXIT_VALID
        output = args.output if args.output is not None else default_output(config.path)
        result = run_fit(config, scheduler=args.scheduler, output=output, say=say)
        print_summary(result, os.path.abspath(output), say)
        return EXIT_VALID if result["valid"] else EXIT_INVALID

    return run_command("laddu-dask fit", body, debug=args.debug, interrupted="no result written")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
