"""sensitivity: when does caching pay at all?  A phase diagram of CBA's cached fraction.

Theorem 1 (proofs/cba_optimality.md): with the cache and bandwidth caps not
binding, the optimum of P1 caches dataset k whole when its IO density
ρ_k = R_k / d_k exceeds the price ratio p_c / p_b and not at all when it is
below.  One run is one instance at a (price ratio, IO density) point, solved
by CBA and scored by the referee; the cached fraction is Σ_k c_k / Σ_k d_k.

* ``spread = "equal"``: every dataset has exactly the density of the point
  (R_k = ρ d_k; 40 datasets of generated sizes, one job each), so Theorem 1
  predicts a sharp edge on the diagonal p_c/p_b = ρ;
* ``spread = "generated"``: experiments.workload.generate_cost's instance
  (200 jobs, 40 datasets, Zipf popularity, log-normal rates and sizes) with
  all rates scaled so that the aggregate density Σ R_k / Σ d_k equals the
  point's; the edge smears over the spread of the ρ_k around it.

Each is run with a cache that holds every dataset (``cache_fraction`` 1: the
threshold alone decides) and with one that holds 30% of the bytes (the cap
binds below the threshold, so the cached fraction saturates at 0.3).
``predicted_fraction`` is Theorem 1's prediction for the uncapped equal-ρ
case (1 above the diagonal, 0 below), recorded for comparison.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.experiments.paper.section import Results, ResultsUnusableError, Section, need, provenance
from cbalab.experiments.paper.text import fixed, integer, pct, sci
from cbalab.experiments.plotting import figure, paper_figure, save
from cbalab.experiments.runner import derive_seed

NAME = "sensitivity"
#: The prefix of the paper's macros for this experiment (``\SensMatch`` …, ``\ifHaveSens``).
PREFIX = "Sens"

PRICE_BANDWIDTH = 0.9


def log_grid(low: Fraction, high: Fraction, n: int) -> list[float]:
    """10^e for n exponents e evenly from ``low`` to ``high``, each correctly rounded to a double and the same on
    every machine.

    ``np.logspace`` takes ``np.power``, whose SIMD kernel numpy picks by CPU: on an AVX2 machine 292 of the
    2,500 points of the full grid came out one ulp away from those of an AVX-512 machine, so their run keys
    (and the runner's resume) differed.  The exponents here are exact fractions and the power is taken in
    decimal arithmetic at 40 digits (software, no CPU dependence), then rounded once.
    """
    out = []
    with localcontext() as ctx:
        ctx.prec = 40
        for i in range(n):
            e = low + (high - low) * i / (n - 1)
            out.append(float(Decimal(10) ** (Decimal(e.numerator) / Decimal(e.denominator))))
    return out


def grid(quick: bool, seed: int) -> list[dict]:
    """A log grid (:func:`log_grid`) of (price ratio, IO density) points × spreads × cache fractions."""
    n = 5 if quick else 25
    ratios = log_grid(Fraction(-6), Fraction(1), n)
    half = Fraction(7, 2 * (n - 1))  # densities sit half a step off the ratios: no point is an exact tie ρ = p_c/p_b
    densities = log_grid(-6 + half, 1 + half, n)
    runs = []
    for spread in ("equal", "generated"):
        for cache_fraction in (1.0, 0.3):
            inst_seed = derive_seed(seed, "sensitivity", spread)
            for ratio in ratios:
                for density in densities:
                    runs.append(
                        {
                            "spread": spread,
                            "cache_fraction": cache_fraction,
                            "price_ratio": float(ratio),
                            "io_density_per_s": float(density),
                            "seed": inst_seed,
                        }
                    )
    return runs


def run_one(params: dict) -> dict:
    """CBA on the point's instance: the cached fraction of the bytes, the IO cost and the status."""
    from cbalab.algorithms.cba import cba
    from cbalab.experiments.workload import generate_cost
    from cbalab.models.evaluate import evaluate
    from cbalab.models.instance import build

    ratio, density = float(params["price_ratio"]), float(params["io_density_per_s"])
    prices = (2.5, ratio * PRICE_BANDWIDTH, PRICE_BANDWIDTH)
    base = generate_cost(200, 40, int(params["seed"]), prices=prices)
    d = base.dataset_size_gb
    if params["spread"] == "equal":
        inst = build(
            dataset_size_gb=d,
            job_dataset=np.arange(d.size),
            job_gpus=np.ones(d.size, dtype=np.int64),
            job_io_gbps=density * d,
            cache_gb=float(params["cache_fraction"]) * float(d.sum()),
            prices=prices,
        )
    else:
        scale = density * float(d.sum()) / float(base.job_io_gbps.sum())
        inst = base.replace(
            job_io_gbps=base.job_io_gbps * scale, cache_gb=float(params["cache_fraction"]) * float(d.sum())
        )
    alloc = cba(inst)
    ev = evaluate(inst, alloc, "cost")
    cache = alloc.arrays()[1]
    rho = inst.dataset_demand(inst.job_io_gbps) / d
    return {
        "status": alloc.status,
        "feasible": bool(ev.feasible),
        "cached_fraction": float(np.sum(cache) / d.sum()),
        "datasets_cached": int(np.sum(cache > 1e-9 * d)),
        "datasets": int(d.size),
        "rho_min_per_s": float(rho.min()),
        "rho_max_per_s": float(rho.max()),
        "io_cost_usd_per_h": float(ev.cost_io),
        "predicted_fraction": 1.0 if density > ratio else (0.0 if density < ratio else math.nan),
    }


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``theorem1``: on the equal-density, uncapped runs, how many points CBA's cached fraction matches the edge."""
    eq = runs[(runs["spread"] == "equal") & (runs["cache_fraction"] == 1.0)]
    off = eq[eq["price_ratio"] != eq["io_density_per_s"]]
    match = np.isclose(off["cached_fraction"], off["predicted_fraction"], atol=1e-9)
    return {
        "theorem1": pd.DataFrame(
            [
                {
                    "points": len(eq),
                    "off_diagonal": len(off),
                    "match_theorem1": int(match.sum()),
                    "mismatch": int((~match).sum()),
                    "on_diagonal_cached_fraction_min": float(
                        eq[eq["price_ratio"] == eq["io_density_per_s"]]["cached_fraction"].min()
                    )
                    if (eq["price_ratio"] == eq["io_density_per_s"]).any()
                    else None,
                }
            ]
        )
    }


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """sensitivity: four phase diagrams (spread × cache fraction), cached fraction as colour, threshold drawn."""
    if runs.empty:
        return []
    fig, ax = figure(2, 2, width=4.0, height=3.4)
    mesh = None
    for i, spread in enumerate(("equal", "generated")):
        for j, cf in enumerate((1.0, 0.3)):
            a = ax[i, j]
            part = runs[(runs["spread"] == spread) & (runs["cache_fraction"] == cf)]
            if part.empty:
                a.axis("off")
                continue
            table = part.pivot_table(index="io_density_per_s", columns="price_ratio", values="cached_fraction")
            x, y = table.columns.to_numpy(dtype=float), table.index.to_numpy(dtype=float)
            mesh = a.pcolormesh(x, y, table.to_numpy(), shading="nearest", cmap="viridis", vmin=0, vmax=1)
            lo, hi = max(x.min(), y.min()), min(x.max(), y.max())
            a.plot([lo, hi], [lo, hi], "w--", lw=1.2, label="Theorem 1: p_c/p_b = ρ")
            a.set(xscale="log", yscale="log", xlabel="price ratio p_c/p_b (1/s)", ylabel="IO density ρ (1/s)")
            a.set_title(f"{spread} ρ_k, cache {cf:.0%} of bytes", fontsize=9)
    ax[0, 0].legend(fontsize=7, loc="upper left")
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    if mesh is not None:
        fig.colorbar(mesh, cax=fig.add_axes((0.91, 0.15, 0.015, 0.7)), label="cached fraction of the bytes")
    return save(fig, outdir, "sensitivity", tight=False)


def paper_section(res: Results) -> Section:
    """The paper's sensitivity section: CBA's cached fraction over (price ratio, IO density), Theorem 1's threshold."""
    runs = res.runs
    need(runs, "spread", "cache_fraction", "price_ratio", "io_density_per_s", "cached_fraction", "predicted_fraction")
    s = Section(PREFIX)
    provenance(s, res)
    eq = runs[(runs["spread"] == "equal") & (runs["cache_fraction"] == 1.0)]
    if eq.empty:
        raise ResultsUnusableError("sensitivity has no equal-density uncapped rows")
    off = eq[eq["predicted_fraction"].notna()]
    match = np.isclose(off["cached_fraction"], off["predicted_fraction"].astype(float), atol=1e-9)
    n_axis = eq["price_ratio"].nunique()
    s.number("GridSide", n_axis, integer(n_axis))
    s.number("Points", len(eq), integer(len(eq)))
    s.number("Match", int(match.sum()), integer(int(match.sum())))
    s.number("Mismatch", int((~match).sum()), integer(int((~match).sum())))
    s.number("RatioMin", float(eq["price_ratio"].min()), sci(float(eq["price_ratio"].min())))
    s.number("RatioMax", float(eq["price_ratio"].max()), sci(float(eq["price_ratio"].max())))
    gen = runs[(runs["spread"] == "generated") & (runs["cache_fraction"] == 1.0)]
    if len(gen):
        partial = float(((gen["cached_fraction"] > 1e-9) & (gen["cached_fraction"] < 1 - 1e-9)).mean())
        s.number("GeneratedPartialPct", partial, pct(partial))
    capped = runs[runs["cache_fraction"] < 1.0]
    if len(capped):
        cf = float(capped["cache_fraction"].iloc[0])
        s.number("CapPct", cf, pct(cf, 0))
        s.number(
            "CappedMaxFraction",
            float(capped["cached_fraction"].max()),
            fixed(float(capped["cached_fraction"].max()), 3),
        )

    fig, ax = paper_figure(2, 1, width=7.0, height=2.5)
    data = []
    mesh = None
    for a, spread, title in (
        (ax[0, 0], "equal", "(a) every dataset at density ρ"),
        (ax[0, 1], "generated", "(b) generated, aggregate density ρ"),
    ):
        part = runs[(runs["spread"] == spread) & (runs["cache_fraction"] == 1.0)]
        if part.empty:
            a.axis("off")
            continue
        table = part.pivot_table(index="io_density_per_s", columns="price_ratio", values="cached_fraction")
        x, y = table.columns.to_numpy(dtype=float), table.index.to_numpy(dtype=float)
        mesh = a.pcolormesh(
            x,
            y,
            table.to_numpy(),
            shading="nearest",
            cmap="viridis",
            vmin=0,
            vmax=1,
            edgecolors="none",
            antialiased=False,
            rasterized=True,
        )
        lo, hi = max(x.min(), y.min()), min(x.max(), y.max())
        a.plot([lo, hi], [lo, hi], "--", color="#ff3030", lw=1.2, label="Theorem 1: $p_c/p_b = \\rho$")
        a.set(xscale="log", yscale="log", xlabel="price ratio $p_c/p_b$ (1/s)", ylabel="IO density ρ (1/s)")
        a.set_title(title)
        a.legend(loc="upper left")
        data += [
            {"panel": spread, "series": "cached_fraction", "x": xx, "y": yy, "value": table.loc[yy, xx]}
            for yy in table.index
            for xx in table.columns
        ]
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    if mesh is not None:
        fig.colorbar(mesh, cax=fig.add_axes((0.93, 0.2, 0.012, 0.65)), label="cached fraction")
    s.figure("sensitivity", fig, pd.DataFrame(data))
    return s
