"""Draw ``docs/projection.png``: a fit of the K_S K_S toy projected onto m(K_S K_S) and
cos(theta), data against the fit, its S and D waves and the pulls.

Run from the repository root: ``python docs/projection_plot.py [--data N] [--mc N]``.
It also prints the fit fractions of the two waves with their fit-covariance errors.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import laddu_dask as ld  # noqa: E402
from laddu_dask import ksks  # noqa: E402


def angles_exprs():
    """m(K_S K_S) and cos(theta) of kshort1 in the K_S K_S helicity frame, as expressions."""
    beam = ld.Vec4.event("beam")
    k1, k2 = ld.Vec4.event("kshort1"), ld.Vec4.event("kshort2")
    x = k1 + k2
    k = k1.boost(-x.beta()).vec3()
    z = x.vec3().unit()
    return x.m(), k.dot(z) / k.mag(), beam


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=int, default=20_000)
    parser.add_argument("--mc", type=int, default=200_000)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "projection.png"))
    args = parser.parse_args(argv)
    data, mc = ksks.generate(n_data=args.data, n_mc=args.mc, seed=2024)
    lik = ld.Likelihood([ld.NLL(ksks.model("bw"), data=ld.Dataset.from_arrays(p4s=data),
                                accepted_mc=ld.Dataset.from_arrays(p4s=mc), name="ksks")])
    fit = lik.fit(initial=ksks.displaced_start(), method="migrad")
    print(f"fit valid: {fit.valid}")
    print(lik.fit_fractions("ksks", fit.values, covariance=fit))
    mass, costheta, _ = angles_exprs()
    fig, axes = plt.subplots(2, 2, figsize=(12, 6), sharex="col",
                             gridspec_kw={"height_ratios": [3, 1], "hspace": 0.05, "wspace": 0.25})
    for col, (expr, label, limits) in enumerate(((mass, r"$m(K_S K_S)$ [GeV]", (1.0, 2.0)),
                                                  (costheta, r"$\cos\theta$", (-1.0, 1.0)))):
        h = ld.projection_histograms(lik, "ksks", fit.values, expr, bins=40, range=limits)
        ld.plot_projection(h, ax=(axes[0, col], axes[1, col]), xlabel=label)
    fig.suptitle(rf"$\gamma p \to p K_S K_S$ toy: {args.data:,} events, NLL fit (laddu-dask)", y=0.96)
    out = Path(args.out)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
