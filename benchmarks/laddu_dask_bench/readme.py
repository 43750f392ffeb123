"""The documentation's Benchmarks page, rendered from the results files.

``python3 benchmarks/render_readme.py`` prints the page (Markdown, ``docs/benchmarks.md``) from
``benchmarks/results/bench_ksks.json``, ``overhead.json``, ``streaming.json``,
``cluster.json``, ``first_eval.json``, ``models.json``, ``binned.json``, ``generation.json``,
``closure.json``, ``projection.json``, ``ganesh_methods.json``, ``small_eval.json`` and ``fanout.json``;
``--write`` writes it to ``docs/benchmarks.md`` (the README links to it and holds no figure).
The renderers live in
:mod:`~laddu_dask_bench.readme_laddu` (against laddu and TensorWaves),
:mod:`~laddu_dask_bench.readme_runtime` (analysis, overhead, streaming, cluster) and the
benchmarks' own modules (generation, closure, projection, ganesh methods); they write their
tables under ``###`` headings, which the page raises to ``##`` below its ``#`` title.  The tests
check that the page is exactly what this renders from the committed files, so no
figure in it can be edited by hand or left behind by a new run.

Examples
--------
>>> from laddu_dask_bench.readme import ratio, seconds
>>> seconds(0.0123), seconds(2.5), ratio(0.456)
('12.30 ms', '2.50 s', '0.46x')
>>> page_headings(["### KsKs", "| ### not a heading |", "text"])
['## KsKs', '| ### not a heading |', 'text']
"""

from __future__ import annotations

import argparse
import os
import sys

from laddu_dask_bench.closure_bench import readme_lines as _closure
from laddu_dask_bench.fanout_bench import readme_lines as _fanout
from laddu_dask_bench.ganesh_bench import readme_lines as _ganesh
from laddu_dask_bench.generation_bench import readme_lines as _generation
from laddu_dask_bench.projection_bench import readme_lines as _projection
from laddu_dask_bench.readme_format import ratio, run_line, seconds, wrap
from laddu_dask_bench.readme_laddu import first_eval_lines, ksks_lines, models_lines
from laddu_dask_bench.readme_runtime import (
    binned_lines,
    cluster_lines,
    disk_tier_lines,
    overhead_lines,
    streaming_lines,
)
from laddu_dask_bench.results import RESULTS_DIR, ROOT, read_results
from laddu_dask_bench.small_eval_bench import readme_lines as _small_eval

__all__ = ["FILES", "HEADING", "PAGE", "main", "page_headings", "ratio", "render", "run_line", "seconds"]

PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
HEADING = "# Benchmarks"
FILES = ("bench_ksks.json", "overhead.json", "streaming.json", "cluster.json", "first_eval.json",
         "models.json", "binned.json", "generation.json", "closure.json", "projection.json",
         "ganesh_methods.json", "small_eval.json", "fanout.json", "disk_tier.json")


def page_headings(lines: list[str]) -> list[str]:
    """The renderers' ``###`` headings raised to ``##``: the page's sections under its title."""
    return [line[1:] if line.startswith("### ") else line for line in lines]


def render(folder: str = RESULTS_DIR) -> str:
    """The Benchmarks page (its title included) from the results files in ``folder``."""
    (ksks, overhead, streaming, cluster, first, models, binned, generation, closure, projection, ganesh,
     small, fanout, disk) = (read_results(name, folder) for name in FILES)
    lines = [
        HEADING, "",
        "<!-- Rendered by `python3 benchmarks/render_readme.py --write` from benchmarks/results/*.json; "
        "tests/docs/test_bench.py fails when this page differs. Do not edit by hand. -->", "",
        "Every figure on this page comes from a results file in `benchmarks/results/`, written by "
        "the benchmark that measured it with the machine, the package versions, the date, the command "
        "and its parameters. Ratios are laddu-dask / competitor (below 1: laddu-dask is faster), both "
        "sides measured in the same run on the same files. Absolute times depend on the machine and "
        "on its load; compare the ratios. To measure again, run the command given with each table, "
        "then `python3 benchmarks/render_readme.py --write`.", "",
        *page_headings([
            *ksks_lines(ksks), *first_eval_lines(first), *models_lines(models), *_ganesh(ganesh),
            *_small_eval(small), *binned_lines(binned),
            *overhead_lines(overhead), *streaming_lines(streaming), *disk_tier_lines(disk),
            *cluster_lines(cluster), *_fanout(fanout),
            *_generation(generation), *_closure(closure), *_projection(projection)]),
        "`benchmarks/gpu_check.py` is the one-shot check for a GPU machine (see [GPUs](guide/gpu.md)).",
    ]
    return "\n".join(wrap(line) for line in lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python3 benchmarks/render_readme.py [--write]``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=RESULTS_DIR, help="folder of the results files")
    ap.add_argument("--write", action="store_true", help=f"write the page to {PAGE}")
    a = ap.parse_args(argv)
    rendered = render(a.results)
    if not a.write:
        sys.stdout.write(rendered)
        return 0
    from laddu_dask.files import atomic_write

    with atomic_write(PAGE) as f:
        f.write(rendered)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
