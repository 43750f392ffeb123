"""The laddu-dask page of Dask's dashboard: the fit itself, live.

``http://<scheduler>:8787/laddu-dask`` shows, for the likelihood noted last (a menu picks
another), what :class:`~laddu_dask.runtime.fit_board.FitBoard` holds on the scheduler:

* -2 ln L against the evaluation number, and the best value so far;
* the current parameters, with their errors once a fit has finished and HESSE gave them;
* evaluations done and evaluations per second;
* for a many-fit run (``fit_bins`` on the cluster): bins and fits done, valid fits and each
  finished bin's best -2 ln L;
* which worker holds which partitions of each dataset, and the runtime's memory decisions.

The page is a Bokeh document served by the scheduler's own dashboard server, built the way
distributed builds its pages (``distributed.dashboard.core.BokehApplication`` added to the
scheduler's HTTP application); :func:`install_page` adds it when laddu-dask's scheduler
plugin starts, that is with the first evaluation of a fit on the cluster. A scheduler
without a dashboard (``dashboard_address=None``) or without Bokeh gets no page. It reads
the board every :data:`INTERVAL` milliseconds, on the scheduler's event loop; nothing on the
fit's path waits for it.

Examples
--------
A page's components without a server (the test drives a real fit and reads them)::

    page = FitPage(scheduler)
    page.update()
    page.sources["values"].data["value"]  # -2 ln L of every evaluation shown
"""

from __future__ import annotations

import logging
from typing import Any

from laddu_dask.runtime.fit_board import FitBoard, FitTrace

logger = logging.getLogger(__name__)

__all__ = ["INTERVAL", "PATH", "FitPage", "board_of", "fit_page_doc", "install_page"]

#: Where the page is served, below the dashboard's prefix.
PATH = "/laddu-dask"
#: Milliseconds between two updates of an open page.
INTERVAL = 500
#: The scheduler plugin that holds the board (:class:`~laddu_dask.runtime.dashboard.EvaluationStream`).
PLUGIN = "laddu-dask-evaluations"


def board_of(scheduler: Any) -> FitBoard | None:
    """The scheduler's :class:`FitBoard`, or ``None`` before laddu-dask's plugin started."""
    plugin = scheduler.plugins.get(PLUGIN)
    return None if plugin is None else getattr(plugin, "board", None)


def _columns(trace: FitTrace | None) -> dict[str, dict[str, list]]:
    """Every data source's columns for ``trace`` (empty ones for ``None``)."""
    if trace is None:
        return {"values": {"evaluation": [], "value": []},
                "parameters": {"name": [], "value": [], "error": []},
                "bins": {"bin": [], "best": []},
                "workers": {"dataset": [], "worker": [], "partitions": [], "count": []},
                "memory": {"dataset": [], "strategy": [], "resource": [], "bytes": [], "reason": []}}
    errors = trace.errors if trace.errors is not None and len(trace.errors) == len(trace.parameters) \
        else [float("nan")] * len(trace.parameters)
    names = trace.names if len(trace.names) == len(trace.parameters) else \
        [f"p{i}" for i in range(len(trace.parameters))]
    best = (trace.progress or {}).get("best", [])
    workers: dict[str, list] = {"dataset": [], "worker": [], "partitions": [], "count": []}
    for dataset, held in sorted(trace.placement.items()):
        for worker, ids in sorted(held.items()):
            workers["dataset"].append(dataset)
            workers["worker"].append(worker)
            workers["partitions"].append(_ranges(ids))
            workers["count"].append(len(ids))
    memory: dict[str, list] = {"dataset": [], "strategy": [], "resource": [], "bytes": [], "reason": []}
    for dataset, d in sorted(trace.decisions.items()):
        memory["dataset"].append(dataset)
        memory["strategy"].append(str(d.get("strategy", "")))
        memory["resource"].append(str(d.get("resource", "")))
        memory["bytes"].append(int(d.get("estimated_bytes") or 0))
        memory["reason"].append(str(d.get("reason", "")))
    return {"values": {"evaluation": list(trace.numbers), "value": list(trace.values)},
            "parameters": {"name": list(names), "value": list(trace.parameters), "error": list(errors)},
            "bins": {"bin": [str(b) for b, _ in best],
                     "best": [float("nan") if v is None else float(v) for _, v in best]},
            "workers": workers, "memory": memory}


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``"0-2, 5"``."""
    out: list[str] = []
    for i in sorted(ids):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])  # type: ignore[arg-type]
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)  # type: ignore[misc]


def _continues(shown: list, numbers: list) -> bool:
    """Whether ``numbers`` are ``shown`` and more after them (same first and last shown).

    Examples
    --------
    >>> _continues([1, 2], [1, 2, 3]), _continues([1, 2], [2, 3, 4]), _continues([], [1])
    (True, False, False)
    """
    n = len(shown)
    return 0 < n < len(numbers) and numbers[0] == shown[0] and numbers[n - 1] == shown[-1]


def summary(trace: FitTrace | None) -> str:
    """The page's headline (HTML) for ``trace``.

    Examples
    --------
    >>> summary(None)
    '<b>laddu-dask</b>: no fit noted yet'
    """
    if trace is None:
        return "<b>laddu-dask</b>: no fit noted yet"
    parts = [f"<b>{_html(trace.label)}</b>", f"{trace.evaluations:,} evaluations"]
    if trace.evaluations:
        parts.append(f"{trace.rate():.1f} evaluations/s")
        parts.append(f"-2 ln L now {trace.values[-1]:.10g}, best {trace.best:.10g}")
    if trace.result is not None:
        r = trace.result
        state = "valid" if r.get("valid") else "NOT valid"
        parts.append(f"fit finished ({r.get('method', '?')}, {state}): "
                     f"minimum {float(r.get('value', 0.0)):.10g}")
    if trace.progress:
        p = trace.progress
        parts.append(f"bins {p.get('bins_done', 0)}/{p.get('bins_total', '?')}, fits "
                     f"{p.get('fits_done', 0)}/{p.get('fits_total', '?')} ({p.get('valid', 0)} valid)")
    return " &middot; ".join(parts)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class FitPage:
    """The page's Bokeh components and their data sources (``sources``), updated from the
    scheduler's board by :meth:`update`."""

    def __init__(self, scheduler: Any, **kwargs: Any) -> None:
        from bokeh.layouts import column, row
        from bokeh.models import ColumnDataSource, DataTable, Div, NumberFormatter, Select, TableColumn
        from bokeh.plotting import figure

        self.scheduler = scheduler
        self.shown: str | None = None  # the likelihood the user picked (None: the newest)
        self._following = False  # the menu is being set to the newest, not picked
        self.sources = {k: ColumnDataSource(v) for k, v in _columns(None).items()}
        self.headline = Div(text=summary(None), sizing_mode="stretch_width")
        self.choice = Select(title="likelihood", options=[], value="", width=320)
        self.choice.on_change("value", lambda attr, old, new: self._pick(new))
        self.figure = figure(title="-2 ln L against evaluation", height=320, sizing_mode="stretch_width",
                             x_axis_label="evaluation", y_axis_label="-2 ln L",
                             tools="pan,wheel_zoom,box_zoom,reset")
        self.figure.line("evaluation", "value", source=self.sources["values"])
        self.figure.scatter("evaluation", "value", source=self.sources["values"], size=3)
        number = NumberFormatter(format="0.000000000")

        def table(name: str, columns: list[tuple[str, str]], height: int = 220) -> Any:
            cols = [TableColumn(field=f, title=t, formatter=number) if f in ("value", "error", "best")
                    else TableColumn(field=f, title=t) for f, t in columns]
            return DataTable(source=self.sources[name], columns=cols, height=height, index_position=None,
                             sizing_mode="stretch_width")

        self.tables = {
            "parameters": table("parameters", [("name", "parameter"), ("value", "value"),
                                               ("error", "error")]),
            "bins": table("bins", [("bin", "bin"), ("best", "best -2 ln L")]),
            "workers": table("workers", [("dataset", "dataset"), ("worker", "worker"),
                                         ("count", "partitions"), ("partitions", "which")]),
            "memory": table("memory", [("dataset", "dataset"), ("strategy", "strategy"), ("resource", "on"),
                                       ("bytes", "bytes"), ("reason", "why")]),
        }
        self.root = column(row(self.choice, self.headline, sizing_mode="stretch_width"), self.figure,
                           row(self.tables["parameters"], self.tables["bins"], sizing_mode="stretch_width"),
                           self.tables["workers"], self.tables["memory"], **kwargs)

    def _pick(self, label: str) -> None:
        if self._following:
            return
        self.shown = label or None
        self.update()

    def _trace(self) -> FitTrace | None:
        board = board_of(self.scheduler)
        if board is None:
            return None
        labels = list(board.traces)
        if labels != list(self.choice.options):
            self.choice.options = labels
        if self.shown in board.traces:
            return board.traces[self.shown]
        trace = board.latest()
        if trace is not None and self.choice.value != trace.label:
            self._following = True
            try:
                self.choice.value = trace.label
            finally:
                self._following = False
        return trace

    def update(self) -> None:
        """Read the board; replace each source's data where it changed (the evaluations only
        sent on where they continue the ones shown: a long fit does not resend its history)."""
        trace = self._trace()
        self.headline.text = summary(trace)
        for name, data in _columns(trace).items():
            source = self.sources[name]
            if name == "values" and _continues(source.data["evaluation"], data["evaluation"]):
                shown = len(source.data["evaluation"])
                source.stream({k: v[shown:] for k, v in data.items()})
            elif source.data != data:
                source.data = data
        # a many-fit run's bins, and the workers' partitions, only where there are some
        for name in ("bins", "workers", "memory"):
            shown = bool(self.sources[name].data[next(iter(self.sources[name].data))])
            if self.tables[name].visible != shown:
                self.tables[name].visible = shown


def fit_page_doc(scheduler: Any, extra: dict, doc: Any) -> None:
    """The page's Bokeh document (``BokehApplication`` calls it for each browser tab)."""
    from distributed.dashboard.components import add_periodic_callback
    from distributed.dashboard.components.scheduler import BOKEH_THEME, env

    page = FitPage(scheduler, sizing_mode="stretch_both")
    doc.title = "Dask: laddu-dask fit"
    add_periodic_callback(doc, page, INTERVAL)
    doc.add_root(page.root)
    doc.template = env.get_template("simple.html")
    doc.template_variables.update(extra)
    doc.theme = BOKEH_THEME


def install_page(scheduler: Any) -> bool:
    """Serve the page from ``scheduler``'s dashboard (once); ``False`` when the scheduler has
    no dashboard or Bokeh is missing. Runs on the scheduler's event loop."""
    if getattr(scheduler, "_laddu_dask_page", False):
        return True
    application = getattr(scheduler, "http_application", None)
    server = getattr(scheduler, "http_server", None)
    if application is None or server is None:
        return False
    try:
        from distributed.dashboard.core import BokehApplication
        from distributed.dashboard.scheduler import template_variables
        from tornado.ioloop import IOLoop
    except ImportError:  # no Bokeh: Dask serves no dashboard either
        return False
    prefix = None
    for app in getattr(application, "applications", []):
        if "BokehTornado" in type(app).__name__:  # distributed's dashboard server
            prefix = getattr(app, "_prefix", "") or ""
            break
    if prefix is None:  # the dashboard is off
        return False
    bokeh_app = BokehApplication({PATH: fit_page_doc}, scheduler, prefix=prefix,
                                 template_variables=template_variables(scheduler))
    application.add_application(bokeh_app)
    bokeh_app.initialize(IOLoop.current())
    bokeh_app.start()
    scheduler._laddu_dask_page = True
    return True
