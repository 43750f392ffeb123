"""Notebook views (HTML tables of models, datasets, executions, memory decisions and fit
results, parsed here) and the fit progress display in a terminal, in a notebook, and in a
file or a pipe."""

from __future__ import annotations

import html
import importlib
import re
import sys
import types
from html.parser import HTMLParser

import numpy as np
import pytest
from dask.utils import format_bytes

from laddu_dask.data.dataset import Dataset
from laddu_dask.expr import Model, parameter, scalar
from laddu_dask.likelihood import NLL, Likelihood
from laddu_dask.runtime.execution import Execution
from laddu_dask.runtime.memory import MemoryPlan, decide_storage

fit_module = importlib.import_module("laddu_dask.likelihood.fit")  # not the fit function
progress_module = importlib.import_module("laddu_dask.likelihood.progress")
BYTES = re.compile(r"^\d+(\.\d+)? (B|kiB|MiB|GiB|TiB)$")


class _Tables(HTMLParser):
    """Every table of a page as rows of (tag, text) cells, and every link's href."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[tuple[str, str]]]] = []
        self.links: list[str] = []
        self.captions: list[str] = []
        self._cell: list[str] | None = None
        self._tag = ""
        self._caption: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._tag = [], tag
        elif tag == "caption":
            self._caption = []
        elif tag == "a":
            self.links.append(dict(attrs)["href"])

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append((self._tag, "".join(self._cell).strip()))
            self._cell = None
        elif tag == "caption":
            self.captions.append("".join(self._caption))
            self._caption = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._caption is not None:
            self._caption.append(data)


def _parse(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(page)
    parser.close()
    return parser


def _grid(table) -> tuple[list[str], list[list[str]]]:
    """A table with a header row: a named header over every column, no "None" cell."""
    header, *rows = table
    assert header and all(tag == "th" for tag, _ in header)
    names = [text for _, text in header]
    assert all(names), f"a column without a header: {names}"
    for row in rows:
        assert len(row) == len(header) and all(tag == "td" for tag, _ in row)
    cells = [[text for _, text in row] for row in rows]
    assert not [c for row in cells for c in row if c in ("None", "", "nan")], cells
    return names, cells


def _properties(table) -> dict[str, str]:
    """A two-column table of row headers and values."""
    out = {}
    for row in table:
        assert [tag for tag, _ in row] == ["th", "td"]
        out[row[0][1]] = row[1][1]
    assert "None" not in out.values()
    return out


# ----------------------------------------------------------------------------- Model


def test_model_view_has_headers_and_shows_bounds_as_intervals():
    x = scalar("x<y")
    model = Model(
        parameter("a<b>", initial=1.5, bounds=(1.0, 2.0)) * x
        + parameter("lo", initial=1.0, bounds=(0.0, None))
        + parameter("hi", initial=-1.0, bounds=(None, 2.5))
        + parameter("free", initial=0.5)
        + parameter("held", fixed=3.0)
    )
    page = model._repr_html_()
    assert "x&lt;y" in page and "a&lt;b&gt;" in page and "<b>laddu_dask.Model</b>" in page
    (table,) = _parse(page).tables
    names, cells = _grid(table)
    assert names == ["parameter", "value", "bounds", "status"]
    assert {row[0]: row[2:] for row in cells} == {
        "a<b>": ["[1, 2]", "free"],
        "lo": ["[0, +inf)", "free"],
        "hi": ["(-inf, 2.5]", "free"],
        "free": ["unbounded", "free"],
        "held": ["\u2014", "fixed"],
    }
    assert [row[1] for row in cells if row[0] == "held"] == ["3"]


# ----------------------------------------------------------------------------- Dataset


def test_dataset_view_shows_its_size_in_bytes():
    ds = Dataset.from_arrays(scalars={"x": np.linspace(0.0, 1.0, 100_000)}, chunk_size=40_000)
    parsed = _parse(ds._repr_html_())
    (table,) = parsed.tables
    props = _properties(table)
    # one float64 column and the weights: 16 bytes an event
    assert props["Size loaded (f64)"] == "1.53 MiB" == format_bytes(1_600_000)
    assert props["Events"] == "100,000" and props["Partitions"] == "3 (chunk size 40,000)"
    assert parsed.captions == ["laddu_dask Dataset"]


# ----------------------------------------------------------------------------- memory decisions


def test_memory_decision_view_formats_byte_counts():
    d = decide_storage("sig<nal>/mc", "fastest", resident_bytes=3 * 2**30, partition_bytes=1_600_000,
                       chunk_size=100_000, partitions=40, budget_bytes=2**30, workers=2)
    page = d._repr_html_()
    assert "sig&lt;nal&gt;/mc" in page
    (table,) = _parse(page).tables
    names, (row,) = _grid(table)
    cell = dict(zip(names, row))
    assert cell["storage"] == "streaming" and cell["chunk size"] == "100,000"
    assert cell["estimated"] == "3.00 GiB" and cell["budget"] == "1.00 GiB"
    assert BYTES.match(cell["peak"]) and cell["peak"] == format_bytes(d.peak_bytes)
    unlimited = decide_storage("mc", "fastest", 100, 10, 5, 20, budget_bytes=None)
    names, (row,) = _grid(_parse(unlimited._repr_html_()).tables[0])
    assert dict(zip(names, row))["budget"] == "unlimited" and dict(zip(names, row))["estimated"] == "100 B"


# ----------------------------------------------------------------------------- Execution


def test_execution_view_before_any_evaluation_lists_its_settings():
    ex = Execution(precision="f32", kernel="numpy", normalization="general", num_workers=3,
                   memory=MemoryPlan(host="2 GiB", device=None))
    parsed = _parse(ex._repr_html_())
    assert len(parsed.tables) == 1  # no memory decisions yet
    props = _properties(parsed.tables[0])
    assert props["Device"] == "cpu" and props["Precision"] == "f32"
    assert props["Kernel"] == "numpy" and props["Normalization"] == "general"
    assert props["Scheduler"] == "local: persistent thread pool, 3 threads"
    assert props["Host memory budget"] == "2.00 GiB" and props["Device memory budget"] == "unlimited"


def test_execution_view_after_an_evaluation_adds_memory_decisions():
    rng = np.random.default_rng(3)
    x = scalar("x")
    model = Model(1.0 + parameter("a", initial=0.5, bounds=(0.0, 2.0)) * x)
    ex = Execution(memory=MemoryPlan(host="1 GiB"))
    data = Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 2000)})
    mc = Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 20_000)})
    Likelihood([NLL(model, data=data, accepted_mc=mc, name="toy")], execution=ex).value([0.5])
    parsed = _parse(ex._repr_html_())
    props, decisions = parsed.tables
    assert _properties(props)["Host memory budget"] == "1.00 GiB"
    names, cells = _grid(decisions)
    assert len(cells) == len(ex.memory_decisions()) >= 2
    for row, d in zip(cells, ex.memory_decisions()):
        cell = dict(zip(names, row))
        assert cell["dataset"] == d.dataset and cell["budget"] == "1.00 GiB"
        assert cell["estimated"] == format_bytes(d.estimated_bytes) and BYTES.match(cell["estimated"])
        assert cell["peak"] == format_bytes(d.peak_bytes)
    assert "memory decisions" in parsed.captions


def test_execution_view_with_a_client_shows_scheduler_workers_and_dashboard():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        parsed = _parse(Execution(client=client)._repr_html_())
        props = _properties(parsed.tables[0])
        assert props["Scheduler"] == f"distributed: {client.scheduler.address}"
        assert re.match(r"^1 \(2 threads, \d+(\.\d+)? (MiB|GiB|TiB) memory\)$", props["Workers"])
        assert props["Dashboard"] == client.dashboard_link
        assert parsed.links == [client.dashboard_link]


def test_execution_view_escapes_what_the_client_reports():
    class _Client:
        _scheduler_identity = {"address": "tcp://h<1>:8786", "n_workers": 4, "total_threads": 8,
                               "total_memory": 2**34}
        cluster = types.SimpleNamespace(dashboard_link='http://h<1>:8787/status?a="b"&c')

    page = Execution(client=_Client())._repr_html_()
    assert "h<1>" not in page and 'href="http://h&lt;1&gt;:8787/status?a=&quot;b&quot;&amp;c"' in page
    props = _properties(_parse(page).tables[0])
    assert props["Workers"] == "4 (8 threads, 16.00 GiB memory)"
    assert props["Scheduler"] == "distributed: tcp://h<1>:8786"


def test_execution_view_of_a_client_by_address_asks_the_scheduler_nothing():
    class _Client:  # connected to a scheduler's address: no cluster object; the view does no I/O
        cluster = None
        _scheduler_identity = {"address": "tcp://10.0.0.5:8786", "services": {"dashboard": 8790}}

        @property
        def dashboard_link(self):
            raise AssertionError("a view must not ask the scheduler")

    props = _properties(_parse(Execution(client=_Client())._repr_html_()).tables[0])
    assert props["Dashboard"] == "http://10.0.0.5:8790/status"
    assert props["Scheduler"] == "distributed: tcp://10.0.0.5:8786" and "Workers" not in props


# ----------------------------------------------------------------------------- FitResult


def _toy_likelihood() -> Likelihood:
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 1.0, 8000)
    keep = rng.uniform(0.0, 3.0, x.size) < 1.0 + 2.0 * x
    data = Dataset.from_arrays(scalars={"x": x[keep][:1000]})
    mc = Dataset.from_arrays(scalars={"x": rng.uniform(0.0, 1.0, 4000)})
    xs = scalar("x")
    model = Model(parameter("one", fixed=1.0) + parameter("s", initial=1.0, bounds=(0.5, None)) * xs
                  + parameter("q", initial=0.1) * xs * xs)
    return Likelihood([NLL(model, data=data, accepted_mc=mc)])


def test_fit_result_view_shows_validity_edm_bounds_and_correlations():
    r = _toy_likelihood().fit()
    assert r.valid, r.message
    page = r._repr_html_()
    parsed = _parse(page)
    params, corr = parsed.tables
    names, cells = _grid(params)
    assert names == ["parameter", "value", "error", "bounds"]
    assert [row[0] for row in cells] == r.parameter_names
    assert [row[3] for row in cells] == ["[0.5, +inf)", "unbounded"]
    assert [float(row[1]) for row in cells] == pytest.approx(r.values.tolist(), rel=1e-5)
    cnames, ccells = _grid(corr)
    assert cnames == ["correlation", *r.parameter_names]
    for i, row in enumerate(ccells):
        assert row[0] == r.parameter_names[i]
        assert [float(c) for c in row[1:]] == pytest.approx(r.correlation[i], abs=0.006)
        assert row[1 + i] == "+1.00"
    status = "valid" if r.valid else "INVALID"
    assert f"<b>FitResult</b> (lbfgsb: {status}, fval = {r.fval:.10g}, edm = {r.edm:.3g}," in page
    assert f"<p>{html.escape(r.message)}</p>" in page and r.message.startswith("valid minimum; L-BFGS-B")


# ----------------------------------------------------------------------------- fit progress


class _Handle:
    def __init__(self, text):
        self.shown = [text]

    def update(self, bundle, raw=False):
        assert raw and set(bundle) == {"text/plain"}
        self.shown.append(bundle["text/plain"])


def _stdout(monkeypatch, terminal: bool, notebook: bool = False) -> None:
    monkeypatch.setattr(progress_module, "_in_notebook", lambda: notebook)
    monkeypatch.setattr(progress_module, "on_terminal", lambda: terminal)


def test_progress_in_a_terminal_refreshes_one_line(monkeypatch, capsys):
    _stdout(monkeypatch, terminal=True)
    monkeypatch.setattr(progress_module.ProgressLine, "interval", 0.0)  # show every evaluation
    r = _toy_likelihood().fit(progress=True)
    out = capsys.readouterr().out
    assert out.count("\r") == r.n_calls + 1 and out.count("\n") == 1 and out.endswith("\n")
    updates = out.split("\r")[1:]
    assert re.fullmatch(r"fit: 1 evaluations, -2 ln L = \S+ *", updates[0])
    assert updates[-1].rstrip() == f"fit: done, {r.n_calls} evaluations, -2 ln L = {r.fval:.10g}"
    widths = {len(u.rstrip("\n")) for u in updates}
    assert len(updates[-1].rstrip("\n")) >= max(widths) - 1  # the last line blanks longer ones


def test_progress_in_a_notebook_updates_one_display(monkeypatch, capsys):
    handles = []

    def display(text):
        handles.append(_Handle(text))
        return handles[-1]

    _stdout(monkeypatch, terminal=False, notebook=True)
    monkeypatch.setattr(progress_module, "_notebook_display", display)
    monkeypatch.setattr(progress_module.ProgressLine, "interval", 0.0)
    r = _toy_likelihood().fit(progress=True, method="lbfgsb")
    assert capsys.readouterr().out == ""  # nothing printed: no line per update
    (handle,) = handles  # one display, updated in place
    assert len(handle.shown) == r.n_calls + 1
    assert handle.shown[0].startswith("fit: 1 evaluations, -2 ln L = ")
    assert handle.shown[-1] == f"fit: done, {r.n_calls} evaluations, -2 ln L = {r.fval:.10g}"


def test_progress_in_a_file_or_pipe_writes_whole_lines(monkeypatch, capsys):
    """Not a terminal (a log file, a pipe): one line per update, no \\r (the updates used to
    be joined with \\r on one line of hundreds of characters)."""
    _stdout(monkeypatch, terminal=False)
    monkeypatch.setattr(progress_module.ProgressLine, "line_interval", 0.0)  # every evaluation
    r = _toy_likelihood().fit(progress=True)
    out = capsys.readouterr().out
    assert "\r" not in out and out.endswith("\n")
    lines = out.splitlines()
    assert len(lines) == r.n_calls + 1
    assert all(re.fullmatch(rf"fit: {i} evaluations, -2 ln L = \S+", line)
               for i, line in enumerate(lines[:-1], start=1))
    assert lines[-1] == f"fit: done, {r.n_calls} evaluations, -2 ln L = {r.fval:.10g}"


def test_progress_lines_in_a_file_are_throttled(monkeypatch, capsys):
    """At most one line every ``line_interval`` (5 s) seconds: a short fit writes its first
    evaluation and its result, where a terminal refreshes every 0.25 s."""
    _stdout(monkeypatch, terminal=False)
    r = _toy_likelihood().fit(progress=True)
    assert r.n_calls > 2
    out = capsys.readouterr().out
    assert out.splitlines() == [out.splitlines()[0], f"fit: done, {r.n_calls} evaluations, "
                                                     f"-2 ln L = {r.fval:.10g}"]
    assert out.startswith("fit: 1 evaluations, -2 ln L = ")


def test_stdout_on_a_terminal_or_not(monkeypatch):
    from laddu_dask.views import on_terminal

    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            if self.tty is None:
                raise ValueError("I/O operation on closed file")
            return self.tty

    for stream, want in ((Stream(True), True), (Stream(False), False), (Stream(None), False),
                         (object(), False), (None, False)):
        monkeypatch.setattr(sys, "stdout", stream)
        assert on_terminal() is want


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "file"])
def test_progress_says_when_a_fit_stopped(terminal, monkeypatch, capsys):
    _stdout(monkeypatch, terminal=terminal)
    lik = _toy_likelihood()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_module, "_run_migrad", boom)
    monkeypatch.setattr(fit_module, "lbfgsb_run", boom)
    for method in ("migrad", None):
        with pytest.raises(KeyboardInterrupt):
            lik.fit(progress=True, method=method)
    assert capsys.readouterr().out == 2 * ("\r" * terminal + "fit: stopped after 0 evaluations\n")


def test_notebook_detection(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert progress_module._in_notebook() is False
    assert "IPython" not in sys.modules  # detecting never imports IPython

    def fake_ipython(shell):
        module = types.ModuleType("IPython")
        module.get_ipython = lambda: shell
        monkeypatch.setitem(sys.modules, "IPython", module)

    fake_ipython(None)  # imported, but no shell (a script)
    assert progress_module._in_notebook() is False
    fake_ipython(types.SimpleNamespace(config={"TerminalIPythonApp": {}}))  # the ipython terminal
    assert progress_module._in_notebook() is False
    fake_ipython(types.SimpleNamespace(config={"IPKernelApp": {"connection_file": "k.json"}}))
    assert progress_module._in_notebook() is True
    fake_ipython(types.SimpleNamespace(config={}, kernel=object()))
    assert progress_module._in_notebook() is True


class _Bar:
    """Stands in for Dask's progress bars; records that one was shown."""

    shown: list[str] = []

    def __init__(self, *args, **kwargs):
        _Bar.shown.append("bar")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "file"])
def test_preparation_progress_bar_only_on_a_terminal(terminal, monkeypatch, capsys):
    """Dask's bar rewrites its line with \\r: on a terminal only; in a file or a pipe the
    preparation says its label on a line."""
    import dask.diagnostics

    from laddu_dask.runtime import threaded

    monkeypatch.setattr(_Bar, "shown", [])
    monkeypatch.setattr(dask.diagnostics, "ProgressBar", _Bar)
    monkeypatch.setattr(threaded, "on_terminal", lambda: terminal)
    runner = threaded.ThreadedRunner(1, 8, progress=True)
    assert runner.get({"x": (abs, -2)}, "x", progress="preparing x") == 2
    assert capsys.readouterr().out == "preparing x\n"
    assert _Bar.shown == ["bar"] * terminal


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "file"])
def test_cluster_preparation_progress_bar_only_on_a_terminal(terminal, monkeypatch, capsys):
    import threading

    import distributed
    import distributed.utils

    from laddu_dask import views

    shown = threading.Event()
    monkeypatch.setattr(distributed, "progress", lambda *a, **k: shown.set())
    monkeypatch.setattr(distributed.utils, "is_kernel", lambda: False)
    monkeypatch.setattr(views, "on_terminal", lambda: terminal)
    views.show_progress(["f1", "f2"])
    assert shown.wait(10 if terminal else 0) is terminal  # the text bar runs in a thread
    assert capsys.readouterr().out == ("" if terminal else
                                       "laddu-dask: preparing 2 partition(s) on the cluster\n")
