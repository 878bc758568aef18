"""optimality: how far from the proven optimum is each method, per integer variant and per utility shape?

One run is one generated instance; every method is scored by the referee
(models/evaluate.py) against the proven optimum of the same instance:

* problem ``cost`` (P1, docs/model.md §4), per variant — ``continuous`` (the
  optimum is the LP, solved by HiGHS directly), and the
  integer variants ``dataset`` (whole datasets), ``block``, ``tiers``
  (bandwidth sold in tiers), ``block+tiers``, ``dataset+tiers`` (the optimum is
  the MILP through Pyomo + HiGHS, MIP gap 0, no time limit; a run whose MILP is
  not proven optimal fails).  Methods: CBA and every cache baseline.  The gap
  is (cost − optimum) / optimum's IO cost (the GPU cost is fixed in P1, so the
  IO cost is what a method can change).  CBA's certificate slack is
  (optimum − CBA's proven lower bound) / optimum's IO cost; ``cba_gap_bound``
  its a-priori gap bound (proofs/cba_integer_gap.md) over the same scale.
  Continuous instances follow the draw of the former sweep_cba script
  (Theorem 1, proofs/cba_optimality.md): random sizes, price ratios over
  10^-6…10, adversarial equal-density instances, and bandwidth caps from
  none to exactly tight and just infeasible; the integer ones come from
  experiments.workload.variants (proofs/cba_integer_gap.md).  The continuous
  optimum is the registered ``lp`` (HiGHS on P1's LP, its cache fed least by
  the referee's rule, models/solve.py ``solve_cost``), the integer one ``milp``.
* problem ``welfare`` (P2, docs/model.md §5), per utility shape (each of
  models.options.SHAPES alone, and ``mixed``): AutoCBA and every registered GPU
  scheduler (naive and tuned, SiloD-fed), gap 1 − W/OPT against the MILP
  (MIP gap 0), and AutoCBA's certificate slack bound/OPT − 1
  (proofs/autocba_certificate.md); instances as in the former autocba_gaps
  script (5-40 jobs, swept budget, GPUs, cache, bandwidth cap, cache price).
  A scheduler the referee scores stalled or time-shared may exceed the no-stall
  P2, so each method also has its gap to its own upper bound
  (``<method>_gap_reference``, experiments/methods.reference_form): P2 for
  AutoCBA, the bound of ``milp-stall`` (P2s) for a stalling scheduler, the
  bound of ``lp`` (P2's LP) for a time-sharing one.

A method whose allocation the referee rejects has gap NaN and status
``infeasible`` (column ``<method>_status``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.experiments.methods import CACHE_POLICIES, GPU_SCHEDULERS, REPORTED_SCHEDULERS, reference_form
from cbalab.experiments.paper.section import (
    ZERO_GAP,
    Results,
    ResultsUnusableError,
    Section,
    as_bool,
    need,
    provenance,
)
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, sci, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.workload import DEFAULT_PRICES, generate_cost, generate_welfare
from cbalab.experiments.workload.variants import VARIANTS, variant_instance
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.instance import Instance, build
from cbalab.models.options import SHAPES
from cbalab.models.result import IntegerFacts
from cbalab.models.types import SolveOptions, Status

NAME = "optimality"
#: The prefix of the paper's macros for this experiment (``\OptAutoMeanGapPct`` …, ``\ifHaveOpt``).
PREFIX = "Opt"

COST_VARIANTS = ("continuous", *VARIANTS)
#: CBA and every cache baseline; AutoCBA and every GPU scheduler (experiments/methods.py, from the registry).
COST_METHODS = CACHE_POLICIES
WELFARE_SHAPES = ("mixed", *SHAPES)
WELFARE_METHODS = ("autocba", *GPU_SCHEDULERS)
#: The welfare methods in the order the paper lists them (the schedulers, then their oracle envelopes).
REPORTED_WELFARE_METHODS = ("autocba", *REPORTED_SCHEDULERS)
#: The run's columns of the welfare upper bounds a stalling or time-sharing scheduler is held to
#: (methods.reference_form): the stall-allowed P2s (``milp-stall``'s bound) and P2's LP relaxation (``lp``'s).
REFERENCE_COLUMN = {"P2s": "p2s_bound", "P2-LP": "p2lp_bound"}
BANDWIDTH_MODES = ("unlimited", "fraction", "tight", "infeasible")
#: Swept parameters of the welfare instances.
BUDGET_FRACTIONS = (0.2, 0.35, 0.5, 0.8, 0.1)
GPU_FRACTIONS = (0.5, 0.3, 1.0)
W_CACHE_FRACTIONS = (0.2, 0.05, 0.5, 0.1)
W_BANDWIDTH_FRACTIONS = (None, 0.3, None, None, 0.1, None, 0.5)
W_CACHE_PRICE_SCALES = (1.0, 100.0, 10.0, 1000.0, 0.1, 300.0, 30.0, 3.0, 3000.0, 1.0, 100.0)


def grid(quick: bool, seed: int) -> list[dict]:
    """``continuous`` instances, each integer variant's, each utility shape's (quick: a handful of each)."""
    n_cont, n_int, n_welfare = (6, 3, 2) if quick else (1000, 400, 150)
    runs = []
    for i in range(n_cont):
        runs.append({"problem": "cost", "variant": "continuous", "index": i, "seed": derive_seed(seed, "cont", i)})
    for variant in COST_VARIANTS[1:]:
        for i in range(n_int):
            runs.append({"problem": "cost", "variant": variant, "index": i, "seed": derive_seed(seed, variant, i)})
    for shape in WELFARE_SHAPES:
        for i in range(n_welfare):
            runs.append({"problem": "welfare", "variant": shape, "index": i, "seed": derive_seed(seed, shape, i)})
    return runs


def continuous_instance(seed: int) -> tuple[Instance, dict]:
    """A continuous P1 instance drawn as the former sweep_cba did, and its drawn parameters."""
    rng = np.random.default_rng(seed)
    n_jobs = int(rng.integers(2, 61))
    n_datasets = int(rng.integers(1, 31))
    p_b = float(10.0 ** rng.uniform(-2, 1))
    p_c = p_b * float(10.0 ** rng.uniform(-6, 1))
    u = rng.random()
    if u < 0.03:
        p_c = 0.0
    elif u < 0.06:
        p_b = 0.0
    prices = (2.5, p_c, p_b)
    cache_fraction = 0.0 if rng.random() < 0.1 else float(rng.uniform(0.0, 1.2))
    adversarial = bool(rng.random() < 0.1)
    if adversarial:
        size = float(10.0 ** rng.uniform(-1, 3))
        rate = float(10.0 ** rng.uniform(-3, 0))
        n_jobs = min(n_jobs, n_datasets)
        sizes = np.full(n_datasets, size)
        inst = build(
            dataset_size_gb=sizes,
            job_dataset=np.arange(n_jobs),
            job_gpus=np.ones(n_jobs, np.int64),
            job_io_gbps=np.full(n_jobs, rate),
            cache_gb=cache_fraction * float(sizes.sum()),
            prices=prices,
        )
    else:
        inst = generate_cost(
            n_jobs,
            n_datasets,
            int(rng.integers(0, 2**31)),
            skew=float(rng.uniform(0.0, 2.0)),
            cache_fraction=cache_fraction,
            prices=prices,
        )
    mode = BANDWIDTH_MODES[int(rng.integers(0, len(BANDWIDTH_MODES)))]
    total = float(inst.job_io_gbps.sum())
    tight = least_remote(inst)
    cap = {
        "unlimited": math.inf,
        "fraction": float(rng.uniform(0.0, 1.0)) * total,
        "tight": tight,
        "infeasible": max(0.0, tight - 1e-3 * total),
    }[mode]
    drawn = {"bandwidth_mode": mode, "adversarial": adversarial, "price_ratio": p_c / p_b if p_b > 0 else None}
    return inst.replace(bandwidth_gbps=cap), drawn


def least_remote(inst: Instance) -> float:
    """Remote IO left by filling C in decreasing ρ_k (Theorem 1 (ii)); numpy, independent of CBA's code path."""
    R = inst.dataset_demand(inst.job_io_gbps)
    d = inst.dataset_size_gb
    order = np.lexsort((np.arange(d.size), -(R / d)))
    cached = np.clip(inst.cache_gb - (np.cumsum(d[order]) - d[order]), 0.0, d[order])
    return float(np.sum(R[order] * (1.0 - cached / d[order])))


def integer_instance(variant: str, seed: int) -> tuple[Instance, dict]:
    """An integer-variant P1 instance: experiments.workload.variants.variant_instance of the run's seed."""
    inst = variant_instance(variant, seed)
    scale = inst.price_cache / DEFAULT_PRICES[1]
    return inst, {"cache_price_scale": scale, "block_gb": inst.block_gb, "tier_gbps": inst.bandwidth_step_gbps}


def welfare_instance(shape: str, seed: int, i: int) -> tuple[Instance, dict]:
    """A P2 instance of utility ``shape`` as the former autocba_gaps drew it (index ``i`` picks the swept values)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 41))
    k = int(rng.integers(1, max(2, n // 3) + 1))
    p_g, p_c, p_b = DEFAULT_PRICES
    budget = BUDGET_FRACTIONS[i % len(BUDGET_FRACTIONS)]
    gpu = GPU_FRACTIONS[i % len(GPU_FRACTIONS)]
    cache = W_CACHE_FRACTIONS[i % len(W_CACHE_FRACTIONS)]
    bandwidth = W_BANDWIDTH_FRACTIONS[i % len(W_BANDWIDTH_FRACTIONS)]
    scale = W_CACHE_PRICE_SCALES[i % len(W_CACHE_PRICE_SCALES)]
    inst = generate_welfare(
        n,
        k,
        seed=seed,
        utility_mix=shape,
        prices=(p_g, p_c * scale, p_b),
        budget_fraction=budget,
        gpu_fraction=gpu,
        cache_fraction=cache,
        bandwidth_fraction=bandwidth,
    )
    params = {"budget_fraction": budget, "gpu_fraction": gpu, "cache_fraction": cache, "bandwidth_fraction": bandwidth}
    return inst, {**params, "cache_price_scale": scale}


def _method(problem: str, name: str, inst: Instance) -> Allocation:
    """The registered method ``name`` of ``problem`` on ``inst`` (algorithms/registry.py)."""
    return registry.get(problem, name).function()(inst, SolveOptions())


def run_one(params: dict) -> dict:
    """Every method of the run's problem against the proven optimum of its instance."""
    seed, i = int(params["seed"]), int(params["index"])
    if params["problem"] == "welfare":
        return _welfare_run(*welfare_instance(params["variant"], seed, i))
    if params["variant"] == "continuous":
        inst, drawn = continuous_instance(seed)
    else:
        inst, drawn = integer_instance(params["variant"], seed)
    return _cost_run(inst, drawn, params["variant"])


def _cost_run(inst: Instance, drawn: dict, variant: str) -> dict:
    row: dict = {"jobs": inst.n_jobs, "datasets": inst.n_datasets, **drawn}
    from cbalab.models.solve import cost_lp, cost_milp

    exact = (cost_lp if variant == "continuous" else cost_milp)(inst, SolveOptions())
    if exact.status not in ("optimal", "infeasible"):
        raise RuntimeError(f"the exact method ended {exact.status!r}: {exact.reason}")
    row["optimum_status"] = exact.status
    opt_alloc = exact if exact.has_allocation else None
    opt = opt_io = None
    if opt_alloc is not None:
        ev = evaluate(inst, opt_alloc, "cost")
        if not ev.feasible:
            raise RuntimeError(f"the referee rejects the optimum: {ev.violations}")
        opt, opt_io = ev.cost_total, ev.cost_io
        row["optimum_total_usd_per_h"] = opt
        row["optimum_io_usd_per_h"] = opt_io
    scale = max(opt_io or 0.0, 1e-9 * max(1.0, opt or 0.0))
    for name in COST_METHODS:
        alloc = _method("cost", name, inst)
        status = alloc.status
        gap = None
        if alloc.has_allocation:
            ev = evaluate(inst, alloc, "cost")
            if not ev.feasible:
                status = Status.INFEASIBLE
            elif opt is not None:
                gap = max(ev.cost_total - opt, 0.0) / scale
        row[f"{name}_status"] = status
        row[f"{name}_gap"] = gap
        if name == "cba":
            row["cba_agrees_on_feasibility"] = alloc.has_allocation == (opt is not None)
            if opt is not None and alloc.bound is not None:
                row["cba_certificate_slack"] = max(opt - alloc.bound, 0.0) / scale
                row["cba_bound_valid"] = bool(alloc.bound <= opt + 1e-6 * max(1.0, opt))
            bound = alloc.facts.gap_bound if isinstance(alloc.facts, IntegerFacts) else None
            row["cba_gap_bound"] = None if bound is None or opt is None else float(bound) / scale
    return row


def _welfare_run(inst: Instance, drawn: dict) -> dict:
    from cbalab.models.solve import welfare_milp

    exact = welfare_milp(inst)
    if exact.status != "optimal":
        raise RuntimeError(f"the MILP ended {exact.status!r}: {exact.reason}")
    if exact.bound is None:
        raise RuntimeError(f"the MILP proved optimality without a bound: {exact.reason}")
    opt = exact.bound
    row: dict = {"jobs": inst.n_jobs, "datasets": inst.n_datasets, **drawn, "optimum_welfare": opt}
    refs = {"P2": opt}
    for form, reference in (("P2s", "milp-stall"), ("P2-LP", "lp")):
        bound = _method("welfare", reference, inst).bound
        if bound is None:
            raise RuntimeError(f"{reference} gave no upper bound")
        refs[form] = float(bound)
        row[f"{REFERENCE_COLUMN[form]}_welfare"] = float(bound)
    for name in WELFARE_METHODS:
        alloc = _method("welfare", name, inst)
        welfare = 0.0
        status = alloc.status
        if alloc.has_allocation:
            ev = evaluate(inst, alloc, "welfare")
            welfare = ev.welfare_score if ev.feasible else 0.0
            status = status if ev.feasible else Status.INFEASIBLE
        row[f"{name}_status"] = status
        row[f"{name}_gap"] = 1.0 - welfare / opt if opt > 0 else 0.0
        ref = refs[reference_form(name)]
        row[f"{name}_gap_reference"] = 1.0 - welfare / ref if ref > 0 else 0.0
        if name == "autocba":
            row["autocba_certificate_slack"] = alloc.bound / opt - 1.0 if opt > 0 and alloc.bound else 0.0
            row["autocba_bound_valid"] = alloc.bound is not None and bool(alloc.bound >= opt * (1 - 1e-6) - 1e-6)
    return row


def _gaps(runs: pd.DataFrame, problem: str, methods: tuple[str, ...]) -> list[pd.DataFrame]:
    """One frame per method of ``methods``: variant, method and gap on each ``problem`` instance, and on P2 the
    gap to the method's own upper bound (``gap_reference``: P2, P2s or P2's LP, methods.reference_form).

    The gap is NaN where the referee rejected the method's allocation.
    """
    sub = runs[runs["problem"] == problem]
    return [
        pd.DataFrame(
            {
                "variant": sub["variant"],
                "method": m,
                "gap": sub[f"{m}_gap"].astype(float),
                "gap_reference": sub[f"{m}_gap_reference"].astype(float) if f"{m}_gap_reference" in sub else np.nan,
            }
        )
        for m in methods
        if f"{m}_gap" in sub
    ]


def _long(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (instance, method): problem, variant, method, gap."""
    parts = [
        part.assign(problem=problem)
        for problem, methods in (("cost", COST_METHODS), ("welfare", WELFARE_METHODS))
        for part in _gaps(runs, problem, methods)
    ]
    return (
        pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["problem", "variant", "method", "gap"])
    )


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``gaps``: per (problem, variant, method): instances scored, share at gap 0, median, p95 and worst gap.

    ``certificates``: per variant, CBA's / AutoCBA's certificate slack (mean, worst) and how often the bound held.
    """
    long = _long(runs)
    rows = []
    for (problem, variant, method), g in long.groupby(["problem", "variant", "method"], sort=False):
        gap = g["gap"].dropna()
        rows.append(
            {
                "problem": problem,
                "variant": variant,
                "method": method,
                "instances": len(g),
                "scored": len(gap),
                "share_optimal": float((gap <= 1e-6).mean()) if len(gap) else None,
                "median_gap": float(gap.median()) if len(gap) else None,
                "p95_gap": float(gap.quantile(0.95)) if len(gap) else None,
                "worst_gap": float(gap.max()) if len(gap) else None,
            }
        )
    certs = []
    for (problem, variant), g in runs.groupby(["problem", "variant"], sort=False):
        key = "cba" if problem == "cost" else "autocba"
        slack = g.get(f"{key}_certificate_slack", pd.Series(dtype=float)).dropna().astype(float)
        valid = g.get(f"{key}_bound_valid", pd.Series(dtype=object)).dropna()
        certs.append(
            {
                "problem": problem,
                "variant": variant,
                "method": key,
                "with_certificate": len(slack),
                "mean_slack": float(slack.mean()) if len(slack) else None,
                "worst_slack": float(slack.max()) if len(slack) else None,
                "bound_valid_share": float(valid.astype(bool).mean()) if len(valid) else None,
                "feasibility_agreement": float(g["cba_agrees_on_feasibility"].astype(bool).mean())
                if problem == "cost" and "cba_agrees_on_feasibility" in g
                else None,
            }
        )
    return {"gaps": pd.DataFrame(rows), "certificates": pd.DataFrame(certs)}


def _cdf(ax: Any, values: np.ndarray, label: str, *fmt: str, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """Draw the empirical CDF of ``values`` (gaps), 0 drawn at the axis floor of a log scale; its points (x, y)."""
    v = np.sort(values[np.isfinite(values)])
    x, y = np.maximum(v, 1e-7), np.arange(1, v.size + 1) / max(v.size, 1)
    if v.size:
        ax.step(x, y, *fmt, where="post", label=label, **kw)
    return x, y


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """optimality_cost (gap CDFs per P1 variant) and optimality_welfare (per utility shape), log gap axis."""
    if runs.empty:
        return []
    long = _long(runs)
    paths: list[Path] = []
    for problem, methods, variants in (
        ("cost", COST_METHODS, list(COST_VARIANTS)),
        ("welfare", WELFARE_METHODS, list(WELFARE_SHAPES)),
    ):
        present = [v for v in variants if ((long["problem"] == problem) & (long["variant"] == v)).any()]
        if not present:
            continue
        cols = min(4, len(present))
        nrows = math.ceil(len(present) / cols)
        fig, ax = figure(cols, nrows, width=3.4, height=2.8)
        for n, variant in enumerate(present):
            a = ax[n // cols, n % cols]
            part = long[(long["problem"] == problem) & (long["variant"] == variant)]
            for m in methods:
                kw = style(m)
                kw.pop("marker", None)
                _cdf(a, part[part["method"] == m]["gap"].to_numpy(dtype=float), m, **kw)
            a.set(xscale="log", xlim=(5e-8, 2), ylim=(0, 1.02), xlabel="gap to optimum (0 drawn at 1e-7)")
            a.set_title(f"{variant} (n = {int(part['method'].eq(methods[0]).sum())})", fontsize=8)
            if n % cols == 0:
                a.set_ylabel("fraction of instances")
        for n in range(len(present), nrows * cols):
            ax[n // cols, n % cols].axis("off")
        ax[0, 0].legend(fontsize=6, loc="lower right")
        paths += save(fig, outdir, f"optimality_{problem}")
    return paths


def paper_section(res: Results) -> Section:
    """The paper's optimality section: gaps of CBA, AutoCBA and every baseline to the proven optimum.

    proofs/cba_optimality.md, cba_integer_gap.md, autocba_guarantee.md, autocba_certificate.md.
    """
    runs = res.runs
    need(runs, "problem", "variant", "cba_gap", "autocba_gap", "autocba_certificate_slack", "autocba_bound_valid")
    s = Section(PREFIX)
    provenance(s, res)
    cost = _scored(runs, "cost", COST_METHODS)
    wel = _scored(runs, "welfare", REPORTED_WELFARE_METHODS)
    cost_runs = runs[runs["problem"] == "cost"]
    wel_runs = runs[runs["problem"] == "welfare"]
    s.number("CostInstances", len(cost_runs), integer(len(cost_runs)))
    s.number("WelfareInstances", len(wel_runs), integer(len(wel_runs)))
    names = {
        "continuous": "Continuous",
        "dataset": "Dataset",
        "block": "Block",
        "tiers": "Tiers",
        "block+tiers": "BlockTiers",
        "dataset+tiers": "DatasetTiers",
    }
    rows = []
    for variant in COST_VARIANTS:
        g = cost[(cost["variant"] == variant)]
        if g.empty:
            continue
        cba_gap = g[g["method"] == "cba"]["gap"].dropna()
        vr = cost_runs[cost_runs["variant"] == variant]
        share = float((cba_gap <= ZERO_GAP).mean())
        worst = float(cba_gap.max())
        s.number(f"{names[variant]}Instances", len(vr), integer(len(vr)))
        s.number(f"{names[variant]}Compared", len(cba_gap), integer(len(cba_gap)))
        if "optimum_status" in vr:
            infeasible = int((vr["optimum_status"].astype(str) == "infeasible").sum())
            s.number(f"{names[variant]}Infeasible", infeasible, integer(infeasible))
        s.number(f"{names[variant]}CbaSharePct", share, pct(share))
        s.number(f"{names[variant]}CbaWorstGapPct", worst, sci(100 * worst))
        medians = g[g["method"] != "cba"].groupby("method")["gap"].median().dropna()
        best_rival = str(medians.idxmin()) if len(medians) else "-"
        agree = as_bool(vr["cba_agrees_on_feasibility"]).mean() if "cba_agrees_on_feasibility" in vr else math.nan
        ratio = "--"
        if "cba_gap_bound" in vr and vr["cba_gap_bound"].notna().any():
            both = vr[["cba_gap", "cba_gap_bound"]].astype(float).dropna()
            both = both[both["cba_gap_bound"] > 0]
            if len(both):
                used = float((both["cba_gap"] / both["cba_gap_bound"]).max())
                s.number(f"{names[variant]}GapOverBound", used, fixed(used, 2))
                ratio = fixed(used, 2)
        rows.append(
            [
                tex_escape(variant),
                integer(len(vr)),
                integer(len(cba_gap)),
                pct(share),
                sci(100 * worst),
                ratio,
                f"{tex_escape(best_rival)} {pct(float(medians.min())) if len(medians) else ''}",
                pct(float(agree)) if math.isfinite(agree) else "--",
            ]
        )
    s.table(
        "optimality-cost",
        booktabs(
            [
                "variant",
                "inst.",
                "scored",
                "CBA opt.\\ \\%",
                "worst \\%",
                "gap/bound",
                "best baseline, median \\%",
                "feas.\\ \\%",
            ],
            rows,
            "lrrrrrlr",
        ),
    )
    valid_cost = as_bool(cost_runs["cba_bound_valid"].dropna()) if "cba_bound_valid" in cost_runs else pd.Series([])
    if len(valid_cost):
        s.number("CbaBoundValidPct", float(valid_cost.mean()), pct(float(valid_cost.mean())))
    cont = cost[(cost["variant"] == "continuous") & (cost["method"] == "cba")]["gap"].dropna()
    s.values["continuous_worst_gap"] = float(cont.max()) if len(cont) else math.nan
    exact = cost[cost["variant"].isin(["block", "tiers", "block+tiers"]) & (cost["method"] == "cba")]["gap"].dropna()
    s.number("ExactVariantsWorstGapPct", float(exact.max()) if len(exact) else math.nan, sci(100 * float(exact.max())))

    auto = wel[wel["method"] == "autocba"]["gap"].dropna()
    s.number("AutoMeanGapPct", float(auto.mean()), pct(float(auto.mean()), 2))
    s.number("AutoMedianGapPct", float(auto.median()), pct(float(auto.median()), 2))
    s.number("AutoWorstGapPct", float(auto.max()), pct(float(auto.max()), 1))
    share = float((auto <= ZERO_GAP).mean())
    s.number("AutoSharePct", share, pct(share))
    slack = wel_runs["autocba_certificate_slack"].astype(float).dropna()
    s.number("AutoMeanSlackPct", float(slack.mean()), pct(float(slack.mean()), 2))
    s.number("AutoWorstSlackPct", float(slack.max()), pct(float(slack.max()), 1))
    valid = as_bool(wel_runs["autocba_bound_valid"])
    s.number("AutoBoundValidPct", float(valid.mean()), pct(float(valid.mean())))
    s.number("AutoBoundInvalid", int((~valid).sum()), integer(int((~valid).sum())))
    by_shape = wel[wel["method"] == "autocba"].groupby("variant")["gap"].max()
    s.word("AutoWorstShape", str(by_shape.idxmax()))
    rows = []
    for m in REPORTED_WELFARE_METHODS:
        g = wel[wel["method"] == m]["gap"].dropna()
        if g.empty:
            continue
        own = wel[wel["method"] == m]["gap_reference"].dropna()
        rows.append(
            [
                tex_escape(m),
                integer(len(g)),
                pct(float((g <= ZERO_GAP).mean())),
                pct(float(g.median()), 2),
                pct(float(g.quantile(0.95)), 1),
                pct(float(g.max()), 1),
                reference_form(m),
                pct(float(own.median()), 2) if len(own) else "--",
                pct(float(own.min()), 2) if len(own) else "--",
            ]
        )
    above = int((wel["gap_reference"] < -ZERO_GAP).sum())
    s.number("AboveOwnBound", above, integer(above))
    base = wel[wel["method"] != "autocba"].groupby("method")["gap"].median()
    s.word("BestSchedulerWelfare", str(base.idxmin()))
    s.number("BestSchedulerMedianGapPct", float(base.min()), pct(float(base.min()), 1))
    s.table(
        "optimality-welfare",
        booktabs(
            [
                "method",
                "inst.",
                "optimal \\%",
                "median \\%",
                "p95 \\%",
                "worst \\%",
                "own bound",
                "median \\%",
                "least \\%",
            ],
            rows,
            "lrrrrrlrr",
        ),
    )

    fig, ax = paper_figure(2, 1, width=7.0, height=2.3)
    data = []
    for a, frame, methods, title in (
        (ax[0, 0], cost, COST_METHODS, "(a) P1, all variants"),
        (ax[0, 1], wel, REPORTED_WELFARE_METHODS, "(b) P2, all utility shapes"),
    ):
        for m in methods:
            ls = "--" if m.endswith("-tuned") else "-"
            gaps = frame[frame["method"] == m]["gap"].to_numpy(dtype=float)
            x, y = _cdf(a, gaps, m, ls, color=style(m)["color"], lw=1.6 if "cba" in m else 1.0)
            if x.size == 0:
                continue
            q = np.unique(np.linspace(0, x.size - 1, min(x.size, 50)).astype(int))
            data += [{"panel": title, "series": m, "x": x[i], "y": y[i]} for i in q]
        a.set(xscale="log", xlim=(5e-8, 5), ylim=(0, 1.02), xlabel="gap to the optimum (0 drawn at $10^{-7}$)")
        a.set_title(title)
        a.legend(fontsize=5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, borderaxespad=0.0)
    ax[0, 0].set_ylabel("fraction of instances")
    fig.tight_layout()
    s.figure("optimality", fig, pd.DataFrame(data))
    return s


def _scored(runs: pd.DataFrame, problem: str, methods: tuple[str, ...]) -> pd.DataFrame:
    """:func:`_gaps` of ``problem`` as one frame; ResultsUnusableError when the results have no gap column for it."""
    parts = _gaps(runs, problem, methods)
    if not parts:
        raise ResultsUnusableError(f"optimality has no {problem} gap columns")
    return pd.concat(parts, ignore_index=True)
