"""io-cost's stall pricing and bill: the GPU time a stall idles, and what a saving is of the bill.

**Stall cost.**  A stalled job keeps its GPUs busy while it waits for remote IO (experiments/simulate.py runs it
at its stall factor, docs/model.md §3), so the replay's ``gpu_cost_usd`` already includes the stretched run
time: p_g x Σ_j g_j (end_j − start_j).  The part of it that the stalls added is ``stall_cost_usd`` =
p_g x Σ_j g_j stall_j (the per-job ``stall_s`` and ``gpus`` of the replay's jobs table).  It is *inside*
``total_cost_usd`` (the bill, GPUs + IO), never added again; ``io_plus_stall_usd`` = IO + stall cost is the
measure on which policies are compared (equal to the IO cost where nothing stalls), so that a policy that buys
less IO by stalling is charged the GPU time it idles.

**The bill.**  At a point, let the cheapest baseline by IO + stall have IO cost I_b, stall cost S_b and bill
T_b = G_b + I_b (G_b its GPU cost, stalls included), and CBA I_a, S_a.  The saving ΔIO + ΔS (ΔIO = I_b − I_a,
ΔS = S_b − S_a) as a share of the baseline's bill is share = (ΔIO + ΔS) / T_b.

**Price sensitivity.**  Scaling p_c and p_b by one factor f changes no decision: CBA, coordl and quiver read
the prices only through p_c / p_b (eq. 4.7, their cost-per-benefit comparisons), io-only, cache-all and silod
read none, and every policy reads C and B, which do not move; the replay's schedule (FIFO on GPUs) does not
read prices.  So every IO cost scales by f while GPU costs and stall GPU-hours (priced at p_g) stay:

    share(f) = (f ΔIO + ΔS) / (G_b + f I_b)

and share(f) = s solves to f = (s G_b − ΔS) / (ΔIO − s I_b) (share(f) is a ratio of two affine functions of f,
so monotone: one f at most); no GPU/IO ratio reaches s when that f is not positive.  The GPU/IO price
ratio there is p_g / (f p_b) (:func:`ratio_for_share`); tests/test_cap_arm.py checks share(f) against a
replay at scaled prices.  The rival is the one cheapest at the calibrated prices, held fixed as f moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from cbalab.experiments.paper.section import SCATTERED, ZERO_GAP, Section
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, sci, tex_escape


def stall_cost(jobs: pd.DataFrame, price_gpu: float) -> float:
    """p_g x the GPU-hours a replay's jobs spent stalled, Σ_j g_j stall_j (jobs table: ``gpus``, ``stall_s``)."""
    seconds = float(np.dot(jobs["gpus"].to_numpy(dtype=float), np.nan_to_num(jobs["stall_s"].to_numpy(dtype=float))))
    return price_gpu * seconds / 3600.0


def stall_priced(rows: pd.DataFrame, io: pd.Series) -> dict[str, pd.Series]:
    """The stall columns of price-blind rows priced at a ratio (io_cost.priced): the stall cost is at p_g, the
    same at every ratio, so only IO + stall moves with the IO cost ``io``."""
    if "stall_cost_usd" not in rows:
        return {}
    return {"io_plus_stall_usd": io + rows["stall_cost_usd"].astype(float)}


def bill_share(saving_io: float, saving_stall: float, gpu_b: float, io_b: float, f: float = 1.0) -> float:
    """share(f) = (f ΔIO + ΔS) / (G_b + f I_b): the saving as a share of the cheapest baseline's bill at IO
    prices scaled by ``f`` (module docstring)."""
    return (f * saving_io + saving_stall) / (gpu_b + f * io_b)


def ratio_for_share(
    s: float, saving_io: float, saving_stall: float, gpu_b: float, io_b: float, p_g: float, p_b: float
) -> float:
    """The GPU/IO price ratio p_g / (f p_b) at which the saving is ``s`` of the baseline's bill (module
    docstring); NaN when no scaling f > 0 reaches it."""
    denominator = saving_io - s * io_b
    f = (s * gpu_b - saving_stall) / denominator if denominator else math.nan
    return p_g / (f * p_b) if f > 0 else math.nan


def bill_table(pts: pd.DataFrame, p_g: float, p_b: float) -> pd.DataFrame:
    """Per headline row of ``pts`` (io_cost.summary rows, with a ``label``): the saving's share of the cheapest
    baseline's bill and the GPU/IO price ratios at which it would be 1% and 5% of it."""
    rows = []
    for _, r in pts.iterrows():
        rival = str(r["cheapest"])
        d_io = float(r[f"{rival}_io_usd"] - r["cba_io_usd"])
        d_stall = float(r[f"{rival}_io_stall_usd"] - r[f"{rival}_io_usd"] - (r["cba_io_stall_usd"] - r["cba_io_usd"]))
        io_b, total_b = float(r[f"{rival}_io_usd"]), float(r[f"{rival}_total_usd"])
        gpu_b = total_b - io_b
        rows.append(
            {
                "label": r["label"],
                "rival": rival,
                "saving_usd": d_io + d_stall,
                "bill_usd": total_b,
                "bill_share": bill_share(d_io, d_stall, gpu_b, io_b),
                "gpu_io_ratio_1pct": ratio_for_share(0.01, d_io, d_stall, gpu_b, io_b, p_g, p_b),
                "gpu_io_ratio_5pct": ratio_for_share(0.05, d_io, d_stall, gpu_b, io_b, p_g, p_b),
                "gpu_io_ratio_now": p_g / p_b,
            }
        )
    return pd.DataFrame(rows)


def cap_and_bill(
    s: Section,
    pts: pd.DataFrame,
    cap_reps: pd.DataFrame,
    top: pd.Series,
    where: Callable[[pd.Series], str],
    prices: tuple[float, float],
) -> None:
    """The cap arm's own values (``Cap…``, outside the headline: io_cost's module docstring) and the bill at the
    headline points (:func:`bill_table`), as values of the io-cost section ``s`` and its ``io-cost-bill`` table.

    ``pts`` are io_cost.summary's points, ``cap_reps`` the capped rows of io_cost.compared_points, ``top`` the
    headline point, ``where`` io_cost.where and ``prices`` (p_g, p_b).
    """
    done = pts["replicates_compared"] == pts["replicates"]
    cap = pts[done & np.isfinite(pts["bandwidth_gbps"].astype(float))]
    heads = [top.rename(None).to_frame().T.assign(label="headline (no cap)")]
    if len(cap):
        c = cap.loc[cap["mean_saving"].idxmax()]
        s.number("CapMaxSavingPct", float(c["mean_saving"]), pct(float(c["mean_saving"])))
        s.number("CapMaxSavingLowPct", float(c["min_saving"]), pct(float(c["min_saving"])))
        s.number("CapMaxSavingHighPct", float(c["max_saving"]), pct(float(c["max_saving"])))
        s.word("CapMaxSavingRival", str(c["cheapest"]))
        s.values["cap_max_where"] = where(c)
        low = float(cap["min_saving"].min())
        s.number("CapMinSavingPct", low, pct(low, 2))
        worse = int((cap_reps["saving"] < -ZERO_GAP).sum())
        s.number("CapWorseReplays", worse, integer(worse))
        heads.append(c.rename(None).to_frame().T.assign(label="cap arm"))
    if "cba_total_usd" not in pts:  # results without a bill (written before it was added)
        return
    bill = bill_table(pd.concat(heads, ignore_index=True), *prices)
    for prefix, row in zip(("", "Cap"), bill.itertuples()):
        s.number(f"{prefix}BillSharePct", row.bill_share, pct(row.bill_share, 3))
        for level, value in (("One", row.gpu_io_ratio_1pct), ("Five", row.gpu_io_ratio_5pct)):
            s.number(f"{prefix}GpuIoRatioFor{level}Pct", value, "--" if math.isnan(value) else fixed(value, 2))
    s.number("GpuIoRatio", prices[0] / prices[1], fixed(prices[0] / prices[1], 2))
    cells = [
        [
            r.label,
            tex_escape(r.rival),
            fixed(r.saving_usd, 2),
            fixed(r.bill_usd, 0),
            pct(r.bill_share, 3),
            "--" if math.isnan(r.gpu_io_ratio_1pct) else fixed(r.gpu_io_ratio_1pct, 2),
            "--" if math.isnan(r.gpu_io_ratio_5pct) else fixed(r.gpu_io_ratio_5pct, 2),
        ]
        for r in bill.itertuples()
    ]
    heads_ = ["point", "rival", "saving \\$", "rival's bill \\$", "share \\%", "$p_g/p_b$ for 1\\%", "for 5\\%"]
    s.table("io-cost-bill", booktabs(heads_, cells, "llrrrrr"))


def level(factor: str, value: float, tex: bool) -> str:
    """One factor level in words, as LaTeX or as plain text."""
    v = float(value)
    if factor == "price_ratio":
        return f"$p_c/p_b={sci(v)}$" if tex else f"p_c/p_b = {v:.2g}/s"
    if factor == "n_datasets":
        return f"{integer(v)} datasets"
    if factor == "skew":
        return f"skew {fixed(v, 1)}"
    if factor == "cache_gb":
        return f"$C={integer(v)}$\\,GB" if tex else f"C = {v:g} GB"
    if math.isinf(v):
        return "no cap"
    return f"$B={fixed(v, 1)}$\\,GB/s" if tex else f"B = {v:g} GB/s"


def short(x: float) -> str:
    """A price ratio as a short tick label: ``4e-4``, ``2e-3``."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def percent(x: float) -> str:
    """A saving in % as a cell label: whole numbers, one decimal below 1 in size (so -0.19 is "-0.2", not "-0")."""
    return f"{x:.1f}" if abs(x) < 1 else f"{x:.0f}"


#: A level of a factor belongs to the conditions of a finding when at least this share of the grid points at
#: that level show it (:func:`factor_conditions`).
CONDITION_SHARE = 0.5


def factor_conditions(points: pd.DataFrame, holds: pd.Series, factors: Sequence[str], tex: bool = False) -> str:
    """The conditions under which ``holds`` (a boolean per row of ``points``) is found, from the data.

    For each of ``factors`` with more than one level in ``points``, the levels at which at least
    :data:`CONDITION_SHARE` of the points hold; a factor all of whose levels qualify is no condition, and one
    none of whose levels qualify is left out (the finding does not follow it).  "nowhere" when no point
    holds, "everywhere" when every point does.  The conditions are read jointly: when no point that holds
    meets all of them at once (marginal levels that together describe no such point), the finding
    is at scattered points.
    """
    if not holds.any():
        return "nowhere"
    if holds.all():
        return "everywhere"
    parts = []
    joint = holds.to_numpy(dtype=bool).copy()
    for f in factors:
        values = points[f].astype(float)
        levels = sorted(values.unique())
        if len(levels) < 2:
            continue
        share = holds.groupby(values).mean()
        keep = [v for v in levels if share[v] >= CONDITION_SHARE]
        if keep and len(keep) < len(levels):
            parts.append(" or ".join(level(f, v, tex) for v in keep))
            joint &= values.isin(keep).to_numpy()
    if not parts:
        return f"{SCATTERED} (no factor level holds at half its points)"
    if not joint.any():
        return f"{SCATTERED} (the levels that hold at half their points together describe none of them)"
    return "; ".join(parts)
