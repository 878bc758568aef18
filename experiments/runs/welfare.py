"""welfare: how much welfare does AutoCBA add under a budget, against every IO-unaware GPU scheduler × cache policy?

Static instances of the welfare problem P2 (docs/model.md §5) from
experiments.workload.generate_welfare (every job an Amdahl option table over
1, 2, 4, 8 GPUs, utility shapes by the swept mix, Zipf-shared datasets).  One
run is one method on one instance, scored by the referee (models/evaluate.py):

* ``autocba`` (algorithms/autocba.py), with its certificate: a proven upper
  bound on the P2 optimum (proofs/autocba_certificate.md);
* the exact references, run through the registry like every method and scored
  by the referee, without a time limit (a wall-clock limit would make
  the references depend on the machine; the slowest took under a minute), its
  seconds in ``solve_seconds``:
  ``milp``, the no-stall optimum P2 (solved by GPU-count slices,
  proofs/welfare_milp_forms.md Theorem F4), and ``milp-stall``, the
  stall-allowed problem P2s, whose relaxation bounds it from above
  (P2 ≤ P2s ≤ the relaxation, Theorem F3);
* ``lp``, the LP relaxation of P2, whose optimum bounds every time-shared and
  every stalled allocation (docs/model.md §5, "Time sharing");
* every GPU scheduler of algorithms/baselines — Gavel max-throughput, Gavel
  max-min fair (time-shared), Optimus as the Pollux artifact implements it,
  and the ``utility-greedy`` ablation, each naive (cut to its bill) and
  "tuned" (the oracle envelope over budget splits) — with every cache policy
  of the registry's cache policies (algorithms/registry.py) feeding its GPUs,
  named ``SCHEDULER[POLICY]``.

Every welfare is also reported as a share of a reference (:func:`references`),
one per instance and form.  AutoCBA never stalls a job, so its reference is
P2: the ``milp`` optimum when proven, else the lower of the MILP's proven bound
and AutoCBA's certificate.  The referee scores a baseline's under-fed jobs at
their stall factor (docs/model.md §5), so a baseline can beat P2; its reference
is P2s: the ``milp-stall`` optimum when certified, else its proven upper bound
(the relaxation's).  A time-sharing scheduler (``gavel-fair``) holds fractions
of options, which neither P2 nor P2s allows; its reference is the LP
relaxation of P2 (``p2-lp``).  Which one an instance used is recorded
(``reference``: ``p2-optimum``, ``p2-bound``, ``certificate``; ``p2s-optimum``,
``p2s-bound``; ``p2-lp``); a share of a bound under-states the share of the
optimum.

Sweeps: the budget (a fraction of what running every job at 8 GPUs fed by
remote IO alone would cost), the utility mix (all shapes mixed, or one shape),
and the IO prices (p_c and p_b both scaled by ``io_price_scale``: 1 is the
default catalog, 30 makes IO cost as much as a few GPUs per job).  The seed
paper reports AutoCBA "up to 2.27×" the welfare of its baselines; the tables
give the measured ratio AutoCBA / baseline per baseline, its largest value and
where.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.experiments.methods import (
    CACHE_POLICIES,
    GPU_SCHEDULERS,
    NO_STALL,
    REPORTED_SCHEDULERS,
    TIME_SHARING,
    reference_form,
)
from cbalab.experiments.paper.ratios import faithful_baselines, geomean, pairings, ratio_macros, unstarved, vs_strongest
from cbalab.experiments.paper.section import (
    PAPER_WELFARE_RATIO,
    STARVED,
    ZERO_GAP,
    Results,
    ResultsUnusableError,
    Section,
    need,
    provenance,
)
from cbalab.experiments.paper.text import booktabs, counted, fixed, integer, pct, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.runs.decomposition import add_to_section
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.kernels import exact_dot
from cbalab.models.types import SolveOptions

NAME = "welfare"
#: The prefix of the paper's macros for this experiment (``\WelfareMaxRatio`` …, ``\ifHaveWelfare``).
PREFIX = "Welfare"

#: The exact references (algorithms/registry.py): the no-stall optimum P2, the stall-allowed P2s, P2's LP relaxation.
EXACT = ("milp", "milp-stall", "lp")
METHODS = ("autocba", *EXACT, *(f"{s}[{p}]" for s in GPU_SCHEDULERS for p in CACHE_POLICIES))
#: Relative tolerance of "reaches": a lower bound within it of an upper bound closes the gap (floating point).
CLOSE = 1e-6
#: The ratio figure's right edge: a baseline that starves (welfare near 0) has a ratio of up to 1e17.
RATIO_AXIS_MAX = 100.0
DEFAULT_PRICES = (2.5, 0.0004, 0.9)


def grid(quick: bool, seed: int) -> list[dict]:
    """Every method on every instance of (budget, utility mix, IO price scale, replicate)."""
    budgets: tuple[float, ...]
    mixes: tuple[str, ...]
    scales: tuple[float, ...]
    if quick:
        jobs, datasets, budgets, mixes, scales, reps = 10, 4, (0.2,), ("mixed",), (1.0,), 1
    else:
        jobs, datasets, reps = 100, 20, 2
        budgets = (0.05, 0.1, 0.2, 0.5, 1.0)
        mixes = ("mixed", "linear", "log", "sigmoid", "deadline")
        scales = (1.0, 30.0)
    runs = []
    for budget in budgets:
        for mix in mixes:
            for scale in scales:
                for rep in range(reps):
                    inst_seed = derive_seed(seed, "welfare", jobs, budget, mix, scale, rep)
                    for method in METHODS:
                        runs.append(
                            {
                                "method": method,
                                "jobs": jobs,
                                "datasets": datasets,
                                "budget_fraction": budget,
                                "utility_mix": mix,
                                "io_price_scale": scale,
                                "replicate": rep,
                                "seed": inst_seed,
                            }
                        )
    return runs


def instance(params: dict) -> Instance:
    """The run's instance (every method of one (budget, mix, scale, replicate) sees the same one)."""
    from cbalab.experiments.workload import generate_welfare

    s = float(params["io_price_scale"])
    prices = (DEFAULT_PRICES[0], DEFAULT_PRICES[1] * s, DEFAULT_PRICES[2] * s)
    return generate_welfare(
        int(params["jobs"]),
        int(params["datasets"]),
        int(params["seed"]),
        utility_mix=params["utility_mix"],
        budget_fraction=float(params["budget_fraction"]),
        prices=prices,
    )


def solve(inst: Instance, method: str) -> Allocation:
    """Method ``method`` of :data:`METHODS` on ``inst``: a registered method, or ``SCHEDULER[POLICY]``."""
    name, policy = method[:-1].split("[") if "[" in method else (method, None)
    return registry.get("welfare", name).function()(inst, SolveOptions(cache_policy=policy))


def run_one(params: dict) -> dict:
    """One method on one instance, scored by the referee: welfare, cost, budget use, stall, GPUs, solve time."""
    from cbalab.models.evaluate import evaluate

    inst = instance(params)
    start = time.perf_counter()
    alloc = solve(inst, params["method"])
    seconds = time.perf_counter() - start
    row = {"status": alloc.status, "budget_usd_per_h": float(inst.budget_per_hour), "solve_seconds": seconds}
    if not alloc.has_allocation:
        return {**row, "welfare": 0.0, "feasible": False}
    ev = evaluate(inst, alloc, "welfare")
    gpus = np.asarray(alloc.gpus)
    return {
        **row,
        "feasible": bool(ev.feasible),
        "welfare": ev.welfare_score if ev.feasible else 0.0,
        "bound": None if alloc.bound is None else float(alloc.bound),
        "cost_usd_per_h": float(ev.cost_total),
        "io_cost_usd_per_h": float(ev.cost_io),
        "budget_use": float(ev.cost_total / inst.budget_per_hour) if inst.budget_per_hour > 0 else None,
        "jobs_running": int((gpus > 0).sum()),
        "gpus_used": exact_dot(gpus, ev.time_share),
        "min_stall_factor": float(ev.stall_factor.min()) if inst.n_jobs else 1.0,
        "mean_stall_factor_running": float(ev.stall_factor[gpus > 0].mean()) if (gpus > 0).any() else 1.0,
    }


INSTANCE = ("jobs", "datasets", "budget_fraction", "utility_mix", "io_price_scale", "replicate", "seed")


def _method_column(runs: pd.DataFrame, method: str, column: str) -> pd.Series:
    """``column`` of ``method``'s row per instance (NaN where the method has no row or the column is missing)."""
    rows = runs[runs["method"] == method]
    if column not in rows:
        return pd.Series(np.nan, index=pd.MultiIndex.from_frame(rows[list(INSTANCE)]), dtype=float)
    return rows.set_index(list(INSTANCE))[column]


def references(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per instance: the P2 and P2s references, the form each uses, and the proven gap left.

    P2 (no stalls, docs/model.md §5): ``p2-optimum``, the welfare the referee
    gives ``milp``'s allocation when ``milp`` answered ``optimal``; else the
    lower of two proven upper bounds, ``milp``'s bound (``p2-bound``, a
    time-limited HiGHS bound) and AutoCBA's Lagrangian certificate
    (``certificate``, proofs/autocba_certificate.md).  P2s (stalls scored at
    the stall factor): ``p2s-optimum`` when ``milp-stall`` answered ``optimal``
    (certified, proofs/welfare_milp_forms.md Theorem F3); else its bound
    (``p2s-bound``), the optimum of the P2s relaxation or HiGHS's bound on it,
    an upper bound on P2s; with none, ``none`` and NaN.  AutoCBA's certificate
    bounds P2 only, never P2s (P2 ≤ P2s), so it is no P2s fallback.  P2-LP:
    ``lp``'s bound, the optimum of P2's LP relaxation (``p2-lp``), which bounds
    every time-shared allocation.

    ``p2_gap`` and ``p2s_gap`` are the relative distance from the reference down
    to the best lower bound the runs prove: the referee's welfare of a method
    that cannot stall (``autocba``, ``milp``) for P2, of any method for P2s
    (P2 ≤ P2s).  0 means the reference is the optimum (up to :data:`CLOSE`).
    """
    idx = pd.MultiIndex.from_frame(runs[list(INSTANCE)].drop_duplicates())
    out = pd.DataFrame(index=idx)

    def col(method: str, column: str) -> pd.Series:
        return _method_column(runs, method, column).reindex(idx)

    def optimal(method: str) -> pd.Series:
        return (col(method, "status").astype(object) == "optimal") & col(method, "feasible").astype(object).eq(True)

    milp_bound = col("milp", "bound").astype(float)
    cert = col("autocba", "bound").astype(float)
    bounds = pd.concat([milp_bound.rename("p2-bound"), cert.rename("certificate")], axis=1)
    has_bound = bounds.notna().any(axis=1)
    fallback = bounds.min(axis=1)
    fallback_form = bounds.fillna(np.inf).idxmin(axis=1).where(has_bound, "none")
    p2_opt = optimal("milp")
    out["p2_reference"] = np.where(p2_opt, "p2-optimum", fallback_form)
    out["p2_reference_welfare"] = np.where(p2_opt, col("milp", "welfare").astype(float), fallback)
    stall_opt = optimal("milp-stall")
    stall_bound = col("milp-stall", "bound").astype(float)
    out["p2s_reference"] = np.where(stall_opt, "p2s-optimum", np.where(stall_bound.notna(), "p2s-bound", "none"))
    out["p2s_reference_welfare"] = np.where(stall_opt, col("milp-stall", "welfare").astype(float), stall_bound)
    lp_bound = col("lp", "bound").astype(float)
    out["p2lp_reference"] = np.where(lp_bound.notna(), "p2-lp", "none")
    out["p2lp_reference_welfare"] = lp_bound
    scored = runs[runs["feasible"].astype(object).eq(True)] if "feasible" in runs else runs.iloc[:0]
    lower_p2 = scored[scored["method"].isin(NO_STALL)].groupby(list(INSTANCE))["welfare"].max().reindex(idx)
    lower_p2s = scored.groupby(list(INSTANCE))["welfare"].max().reindex(idx)
    for form, lower in (("p2", lower_p2), ("p2s", lower_p2s), ("p2lp", lower_p2s)):
        ref = out[f"{form}_reference_welfare"]
        out[f"{form}_gap"] = np.maximum(ref - lower, 0.0) / ref.where(ref > 0)
    return out.reset_index()


def _ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (instance, method): its reference (P2, P2-LP or P2s: methods.reference_form), welfare / it, AutoCBA / it.

    Columns ``reference`` (the form, :func:`references`), ``reference_welfare``,
    ``of_reference`` and ``above_reference`` (the referee's welfare exceeds the
    reference by more than :data:`CLOSE`: it would not be an upper bound).
    """
    refs = references(runs)
    auto = runs[runs["method"] == "autocba"][[*INSTANCE, "welfare"]].rename(columns={"welfare": "autocba"})
    out = runs.merge(auto, on=list(INSTANCE), how="inner").merge(refs, on=list(INSTANCE), how="left")
    form = out["method"].map(reference_form)
    key = form.map({"P2": "p2", "P2-LP": "p2lp", "P2s": "p2s"})
    out["reference"] = [out.at[i, f"{k}_reference"] for i, k in key.items()]
    out["reference_welfare"] = np.array([out.at[i, f"{k}_reference_welfare"] for i, k in key.items()], dtype=float)
    out["of_reference"] = out["welfare"] / out["reference_welfare"]
    out["above_reference"] = out["welfare"] > out["reference_welfare"] * (1 + CLOSE) + CLOSE
    positive = out["welfare"].where(out["welfare"] > 0)
    out["autocba_over"] = np.where(out["welfare"] > 0, out["autocba"] / positive, np.inf)
    return out


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``headline``, ``max_ratio_by_budget`` and ``references`` (one row per instance, :func:`references`).

    ``headline``: per method, the form of its reference (P2 or P2s), its mean
    and least share of it, on how many instances that reference is a proven
    optimum and on how many the referee's welfare exceeds it (0 unless a
    reference is wrong); AutoCBA / method (geometric mean, median, max and
    where).  Ratios are over instances where the method's welfare is positive
    (those with welfare 0 are counted apart: AutoCBA's ratio is unbounded there).
    """
    r = _ratios(runs)
    rows = []
    for method, g in r.groupby("method", sort=False):
        pos = g[g["welfare"] > 0]
        row = {
            "method": method,
            "instances": len(g),
            "reference_form": reference_form(str(method)),
            "reference_proven": int(g["reference"].isin(["p2-optimum", "p2s-optimum"]).sum()),
            "of_reference_mean": float(g["of_reference"].mean()),
            "of_reference_min": float(g["of_reference"].min()),
            "above_reference": int(g["above_reference"].sum()),
            "autocba_over_geomean": geomean(pos["autocba_over"]) if len(pos) else None,
            "autocba_over_median": float(pos["autocba_over"].median()) if len(pos) else None,
            "autocba_over_max": float(pos["autocba_over"].max()) if len(pos) else None,
            "instances_zero_welfare": int((g["welfare"] <= 0).sum()),
            "instances_ratio_at_least_2_27": int((pos["autocba_over"] >= PAPER_WELFARE_RATIO).sum()),
        }
        if len(pos):
            at = pos.loc[pos["autocba_over"].idxmax()]
            row.update({f"max_at_{c}": at[c] for c in ("budget_fraction", "utility_mix", "io_price_scale")})
        rows.append(row)
    head = pd.DataFrame(rows)
    by = (
        r[r["method"].str.contains(r"\[", regex=True)]
        .assign(scheduler=lambda f: f["method"].str.split("[").str[0])
        .groupby(["budget_fraction", "io_price_scale", "scheduler"])["autocba_over"]
        .agg(lambda s: float(s[np.isfinite(s)].max()) if np.isfinite(s).any() else np.inf)
        .unstack("scheduler")
        .reset_index()
    )
    by.columns.name = None
    return {"headline": head, "max_ratio_by_budget": by, "references": references(runs)}


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """welfare_budget: share of the reference vs budget (AutoCBA: P2, baselines: P2s); welfare_ratio: CDF of ratios."""
    if runs.empty:
        return []
    r = _ratios(runs)
    paths: list[Path] = []
    scales = sorted(r["io_price_scale"].unique())
    fig, ax = figure(len(scales), 1, width=4.6, height=3.4)
    for a, scale in zip(ax[0], scales):
        part = r[r["io_price_scale"] == scale]
        for method, colour in (("autocba", style("cba")["color"]),):
            g = part[part["method"] == method].groupby("budget_fraction")["of_reference"].mean()
            a.plot(g.index, g.to_numpy(), "o-", color=colour, label="AutoCBA / P2", lw=2)
        for sched, colour in ((s, style(s)["color"]) for s in GPU_SCHEDULERS):
            sub = part[part["method"].str.startswith(sched + "[")]
            best = sub.groupby(["budget_fraction", *INSTANCE[3:]])["of_reference"].max().groupby("budget_fraction")
            worst = sub.groupby(["budget_fraction", *INSTANCE[3:]])["of_reference"].min().groupby("budget_fraction")
            label = f"{sched} (best cache) / {reference_form(sched)}"
            a.plot(best.mean().index, best.mean().to_numpy(), "-", color=colour, label=label)
            a.plot(worst.mean().index, worst.mean().to_numpy(), ":", color=colour)
        a.set(
            xscale="log",
            xlabel="budget (fraction of all jobs at 8 GPUs)",
            ylabel="welfare / reference (mean)",
        )
        a.set_title(f"IO prices × {scale:g} (dotted: worst cache policy)", fontsize=8)
    ax[0, 0].legend(fontsize=6)
    paths += save(fig, outdir, "welfare_budget")

    fig, ax = figure(1, 1, width=5.0, height=3.4)
    a = ax[0, 0]
    base = r[r["method"].str.contains(r"\[", regex=True)]
    for sched, colour in ((s, style(s)["color"]) for s in GPU_SCHEDULERS):
        v = np.sort(base[base["method"].str.startswith(sched + "[")]["autocba_over"].to_numpy())
        v = np.where(np.isfinite(v), np.minimum(v, RATIO_AXIS_MAX), np.nan)
        a.plot(v, np.arange(1, v.size + 1) / v.size, "-", color=colour, label=sched)
    a.axvline(PAPER_WELFARE_RATIO, color="k", ls="--", lw=0.8, label="paper: 2.27×")
    a.set(
        xscale="log",
        xlim=(0.9, RATIO_AXIS_MAX * 1.1),
        xlabel=f"AutoCBA welfare / baseline welfare (≥ {RATIO_AXIS_MAX:g} drawn at {RATIO_AXIS_MAX:g})",
        ylabel="fraction of instances × cache policies",
    )
    a.set_title("a curve below 1 at the right: baseline welfare 0 there", fontsize=8)
    a.legend(fontsize=7)
    paths += save(fig, outdir, "welfare_ratio")
    return paths


def paper_section(res: Results) -> Section:
    """The paper's welfare section: AutoCBA against every GPU scheduler x cache policy (docs/model.md §5).

    Each welfare is a share of its own form's reference (:func:`references`):
    AutoCBA, which never stalls a job, of P2's (the ``milp`` optimum, else the lower of its bound and
    AutoCBA's certificate); a baseline, which the referee scores stalled, of P2s's (the ``milp-stall``
    optimum, else its relaxation's bound; proofs/welfare_milp_forms.md Theorem F3); a time-sharing one
    (``gavel-fair``) of P2's LP relaxation (``lp``'s bound, docs/model.md §5 "Time sharing").  The strongest
    baseline is taken over the faithful schedulers (FAITHFUL); the oracle ``-tuned`` envelopes and the
    ``utility-greedy`` ablation are reported apart.
    """
    runs = res.runs
    need(runs, *INSTANCE, "method", "welfare", "status", "bound", "feasible", "solve_seconds")
    s = Section(PREFIX)
    provenance(s, res)
    for method in ("autocba", *EXACT):
        if not (runs["method"] == method).any():
            raise ResultsUnusableError(f"welfare has no {method} rows (a sweep older than the exact references)")
    wide = runs.pivot_table(index=list(INSTANCE), columns="method", values="welfare", aggfunc="first")
    refs = references(runs).set_index(list(INSTANCE)).reindex(wide.index)
    wide = wide.join(refs[["p2_reference_welfare", "p2s_reference_welfare", "p2lp_reference_welfare"]]).dropna(
        subset=["autocba", "p2_reference_welfare"]
    )
    refs = refs.loc[wide.index]
    opt = wide.pop("p2s_reference_welfare")
    p2 = wide.pop("p2_reference_welfare")
    p2lp = wide.pop("p2lp_reference_welfare")
    baselines = [m for m in wide.columns if "[" in str(m)]
    if not baselines:
        raise ResultsUnusableError("welfare has no baseline rows")
    auto = wide["autocba"]
    s.number("Instances", len(wide), integer(len(wide)))
    s.number("Baselines", len(baselines), integer(len(baselines)))
    s.number("Jobs", int(runs["jobs"].max()), integer(int(runs["jobs"].max())))
    slowest = float(runs[runs["method"].isin(EXACT)]["solve_seconds"].astype(float).max())
    s.number("SlowestReferenceSeconds", slowest, fixed(slowest, 1))

    form = refs["p2_reference"]
    for name, key in (("PTwoProven", "p2-optimum"), ("PTwoBound", "p2-bound"), ("PTwoCertificate", "certificate")):
        s.number(name, int((form == key).sum()), integer(int((form == key).sum())))
    standins = [
        f"{who} on {counted(int((form == key).sum()), 'instance')}"
        for who, key in (("the MILP's bound", "p2-bound"), ("AutoCBA's certificate", "certificate"))
        if (form == key).any()
    ]
    s.number("PTwoStandIn", math.nan, tex_escape(" and ".join(standins) or "on no instance"))
    stall_form = refs["p2s_reference"]
    for name, key in (("PTwoSProven", "p2s-optimum"), ("PTwoSBound", "p2s-bound"), ("PTwoSNone", "none")):
        s.number(name, int((stall_form == key).sum()), integer(int((stall_form == key).sum())))
    reached = int(((stall_form == "p2s-bound") & (refs["p2s_gap"] <= ZERO_GAP)).sum())
    s.number("PTwoSBoundReached", reached, integer(reached))
    stall_gap = float(refs["p2s_gap"].max())
    s.number("PTwoSGapMaxPct", stall_gap, pct(stall_gap, 3))
    seconds = runs.set_index("method")["solve_seconds"].astype(float)
    for name, method in (("Milp", "milp"), ("MilpStall", "milp-stall")):
        sec = seconds.loc[[method]]
        s.number(f"{name}SecondsMedian", float(sec.median()), fixed(float(sec.median()), 2))
        s.number(f"{name}SecondsMax", float(sec.max()), fixed(float(sec.max()), 1))

    share = auto / p2
    s.number("AutoOfRefMeanPct", float(share.mean()), pct(float(share.mean()), 3))
    s.number("AutoOfRefMinPct", float(share.min()), pct(float(share.min()), 2))
    proven = form == "p2-optimum"
    gap = ((p2 - auto) / p2)[proven]
    if len(gap):
        s.number("AutoGapMeanPct", float(gap.mean()), pct(float(gap.mean()), 3))
        s.number("AutoGapMaxPct", float(gap.max()), pct(float(gap.max()), 2))
        at_opt = int((gap <= ZERO_GAP).sum())
        s.number("AutoAtOptimum", at_opt, integer(at_opt))
        cert = runs[runs["method"] == "autocba"].set_index(list(INSTANCE))["bound"].astype(float)
        over = ((cert.reindex(wide.index) - p2) / p2)[proven]
        s.number("CertOverMeanPct", float(over.mean()), pct(float(over.mean()), 2))
        s.number("CertOverMaxPct", float(over.max()), pct(float(over.max()), 2))
    both = proven & (stall_form == "p2s-optimum")
    gain = ((opt - p2) / p2)[both]
    s.number("StallBothProven", int(both.sum()), integer(int(both.sum())))
    if len(gain):
        s.number("StallGainMaxPct", float(gain.max()), pct(float(gain.max()), 2))
        lifted = int((gain > ZERO_GAP).sum())
        s.number("StallGainInstances", lifted, integer(lifted))

    long = pairings(wide, INSTANCE, baselines)
    long = long.merge(opt.rename("opt").reset_index(), on=list(INSTANCE))
    long = long.merge(p2.rename("p2").reset_index(), on=list(INSTANCE))
    long = long.merge(p2lp.rename("p2lp").reset_index(), on=list(INSTANCE))
    long["cache"] = long["method"].astype(str).str.split("[").str[1].str.rstrip("]")
    # a time-sharing scheduler's reference is P2's LP relaxation, every other baseline's P2s (methods.reference_form)
    long["opt"] = np.where(long["scheduler"].isin(TIME_SHARING), long["p2lp"], long["opt"])
    above = int((long["base"] > long["opt"] * (1 + ZERO_GAP) + ZERO_GAP).sum())
    above += int((auto > p2 * (1 + ZERO_GAP) + ZERO_GAP).sum())
    s.number("AboveReference", above, integer(above))
    beat_p2 = int((long["base"] > long["p2"] * (1 + ZERO_GAP) + ZERO_GAP).sum())
    s.number("BaselineAboveTwo", beat_p2, integer(beat_p2))
    starved, pos = unstarved(long)
    zero = int(starved.sum())
    s.number("Pairs", len(long), integer(len(long)))
    s.number("ZeroPairs", zero, integer(zero))
    ratio_macros(s, pos, "Method", "io_price_scale")
    faithful = faithful_baselines(baselines)
    vs_best = vs_strongest(wide, "autocba", faithful)
    s.number("VsBestMax", float(vs_best.max()), fixed(float(vs_best.max()), 2))
    s.number("VsBestMedian", float(vs_best.median()), fixed(float(vs_best.median()), 3))
    below = int((vs_best < 1 - ZERO_GAP).sum())
    s.number("VsBestBelowOne", below, integer(below))
    s.number("VsBestMin", float(vs_best.min()), fixed(float(vs_best.min()), 3))
    best_of = wide[faithful].idxmax(axis=1).astype(str).str.split("[").str[0].value_counts()
    s.word("StrongestScheduler", str(best_of.index[0]))
    tuned_group = [m for m in baselines if "-tuned[" in str(m)]
    ablation = [m for m in baselines if str(m).startswith("utility-greedy[")]
    for name, group in (("VsTuned", tuned_group), ("VsAblation", ablation)):
        vs = vs_strongest(wide, "autocba", group)
        if len(vs):
            s.number(f"{name}Max", float(vs.max()), fixed(float(vs.max()), 2))
            s.number(f"{name}Median", float(vs.median()), fixed(float(vs.median()), 3))
    tuned = pos[pos["scheduler"].str.endswith("-tuned")]
    if len(tuned):
        s.number("TunedMaxRatio", float(tuned["ratio"].max()), fixed(float(tuned["ratio"].max()), 2))
    naive = pos[~pos["scheduler"].str.endswith("-tuned")]
    if len(naive):
        s.number("NaiveMaxRatio", float(naive["ratio"].max()), fixed(float(naive["ratio"].max()), 2))

    add_to_section(s, runs, list(INSTANCE), "welfare-source")

    rows = []
    for sched in REPORTED_SCHEDULERS:
        g = long[long["scheduler"] == sched]
        if g.empty:
            continue
        gp = pos[pos["scheduler"] == sched]
        of_opt = (g["base"] / g["opt"]).groupby(g["cache"]).mean()
        kk = gp["ratio"].idxmax()
        rows.append(
            [
                tex_escape(sched),
                tex_escape(str(of_opt.idxmax())),
                pct(float(of_opt.max())),
                fixed(float(gp["ratio"].median()), 2),
                fixed(float(gp["ratio"].max()), 2),
                f"{fixed(float(gp.loc[kk, 'budget_fraction']), 2)}, {tex_escape(str(gp.loc[kk, 'utility_mix']))}",
                pct(float((gp["ratio"] >= PAPER_WELFARE_RATIO).mean()), 0),
                integer(int((g["base"] <= STARVED * g["auto"]).sum())),
            ]
        )
    s.table(
        "welfare",
        booktabs(
            ["scheduler", "best cache", "of ref. \\%", "median", "max", "max at", "$\\geq$2.27", "starved"],
            rows,
            "llrrrlrr",
        ),
    )

    scales = sorted(long["io_price_scale"].unique())
    fig, ax = paper_figure(len(scales), 1, width=7.0, height=2.7)
    data = []
    for a, scale in zip(ax[0], scales):
        part = long[long["io_price_scale"] == scale]
        g = (
            (part.drop_duplicates(list(INSTANCE)).assign(v=lambda f: f["auto"] / f["p2"]))
            .groupby("budget_fraction")["v"]
            .mean()
        )
        a.plot(g.index, g.to_numpy(), "o-", color=style("autocba")["color"], lw=1.8, label="AutoCBA / P2")
        data += [{"panel": scale, "series": "autocba", "x": x, "y": y} for x, y in zip(g.index, g.to_numpy())]
        for sched in REPORTED_SCHEDULERS:
            sub = part[part["scheduler"] == sched]
            if sub.empty:
                continue
            per = sub.assign(v=sub["base"] / sub["opt"]).groupby(["budget_fraction", "cache"])["v"].mean()
            best = per.groupby("budget_fraction").max()
            ls = "--" if sched.endswith("-tuned") else "-"
            label = f"{sched} / {reference_form(sched)}"
            a.plot(best.index, best.to_numpy(), ls, color=style(sched)["color"], label=label)
            data += [{"panel": scale, "series": sched, "x": x, "y": y} for x, y in zip(best.index, best.to_numpy())]
        a.set(xscale="log", ylim=(0, 1.05), xlabel="budget (fraction of all jobs at 8 GPUs)")
        a.set_title(f"IO prices x {fixed(float(scale), 0)}")
    ax[0, 0].set_ylabel("welfare / its reference (mean)")
    handles, labels = ax[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=6, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    s.figure("welfare", fig, pd.DataFrame(data))
    return s
