"""``plot_projection``: data against the fit, per-wave contributions and pulls, in the
style of HEP papers (mplhep's when it is installed: ``mplhep.style.LHCb2`` style
settings and ``mplhep.histplot``; plain matplotlib otherwise).

Examples
--------
>>> import numpy as np
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from laddu_dask.data.histogram import Histogram
>>> from laddu_dask.results.histograms import ProjectionHistograms
>>> edges = np.array([0.0, 1.0, 2.0])
>>> h = ProjectionHistograms(edges, Histogram([3.0, 5.0], bin_edges=edges),
...                          Histogram([3.5, 4.5], bin_edges=edges, errors=[0.1, 0.1]),
...                          residuals=np.array([-0.3, 0.2]), label="m")
>>> fig, (top, bottom) = plot_projection(h)
>>> top.get_ylabel(), bottom.get_ylabel()
('Events / 1', 'Pull')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laddu_dask.results.histograms import ProjectionHistograms

#: Colours of the waves (the Okabe-Ito palette, readable by colour-blind readers).
COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#F0E442")


def _mplhep() -> Any:
    try:
        import mplhep
    except ImportError:
        return None
    return mplhep


def _step(ax: Any, edges: np.ndarray, counts: np.ndarray, **kw: Any) -> None:
    ax.stairs(counts, edges, **kw)


def plot_projection(hists: ProjectionHistograms, *, ax: Any = None, residuals: bool = True,
                    xlabel: str | None = None, title: str | None = None,
                    log: bool = False) -> tuple[Any, Any]:
    """Draw data (points with errors), the fit (a line with its Monte Carlo band), each
    wave (dashed) and, below, the pulls.

    Parameters
    ----------
    hists : ProjectionHistograms
        From :func:`~laddu_dask.results.histograms.projection_histograms`.
    ax : matplotlib Axes or (Axes, Axes), optional
        Draw the main panel there (no pull panel), or the main and the pull panels on a
        pair of axes; by default a new figure.
    residuals : bool
        Draw the pull panel under the main one.
    xlabel, title : str, optional
    log : bool
        A logarithmic y axis.

    Returns
    -------
    figure, axes
        The figure and ``(main, pulls)`` (``pulls`` is ``None`` without the panel).
    """
    import matplotlib.pyplot as plt

    hep = _mplhep()
    edges = np.asarray(hists.edges)
    centres = 0.5 * (edges[1:] + edges[:-1])
    widths = np.diff(edges)
    if isinstance(ax, (tuple, list)):
        main, pulls = ax
        fig = main.figure
    elif ax is not None:
        fig, main, pulls = ax.figure, ax, None
    elif residuals:
        fig, (main, pulls) = plt.subplots(2, 1, figsize=(7, 6), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 1], "hspace": 0.05})
    else:
        fig, main = plt.subplots(figsize=(7, 5))
        pulls = None
    fit = np.asarray(hists.fit.counts)
    fit_err = np.asarray(hists.fit.errors)
    if hep is not None:
        hep.histplot(fit, edges, ax=main, color="#D62728", lw=2, label="Fit")
    else:
        _step(main, edges, fit, color="#D62728", lw=2, label="Fit")
    main.fill_between(edges, np.append(fit - fit_err, (fit - fit_err)[-1]),
                      np.append(fit + fit_err, (fit + fit_err)[-1]), step="post", color="#D62728",
                      alpha=0.25, lw=0)
    for (wave, h), colour in zip(hists.waves.items(), COLOURS * 4):
        _step(main, edges, np.asarray(h.counts), color=colour, lw=1.5, ls="--", label=wave)
    data = np.asarray(hists.data.counts)
    main.errorbar(centres, data, yerr=np.asarray(hists.data.errors), xerr=widths / 2, fmt="o", ms=3.5,
                  color="black", elinewidth=1, capsize=0, label="Data", zorder=5)
    width = widths[0] if np.allclose(widths, widths[0]) else None
    main.set_ylabel(f"Events / {width:.3g}" if width is not None else "Events / bin")
    if log:
        main.set_yscale("log")
    else:
        main.set_ylim(bottom=0)
    main.set_xlim(edges[0], edges[-1])
    main.legend(frameon=False)
    main.tick_params(direction="in", top=True, right=True, which="both")
    main.minorticks_on()
    if title:
        main.set_title(title)
    label = xlabel if xlabel is not None else hists.label
    if pulls is not None:
        pulls.bar(centres, hists.residuals, width=widths, color="#7F7F7F", edgecolor="none")
        pulls.axhline(0.0, color="black", lw=0.8)
        for y in (-3, 3):
            pulls.axhline(y, color="black", lw=0.6, ls=":")
        top = max(3.5, float(np.max(np.abs(hists.residuals), initial=0.0)) * 1.15)
        pulls.set_ylim(-top, top)
        pulls.set_ylabel("Pull")
        pulls.set_xlabel(label)
        pulls.tick_params(direction="in", top=True, right=True, which="both")
        pulls.minorticks_on()
    else:
        main.set_xlabel(label)
    return fig, (main, pulls)
