"""Solutions to the exercises of tutorials/02_exact_vs_fast.ipynb.

Only ``import cbalab`` (+ numpy, pandas) is used, as in the notebook; tests/test_tutorials.py checks every
function.  ``naive_greedy`` is the notebook's greedy (section 5), repeated here so the solutions stand alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import cbalab


def envelope(y: float, h: float) -> tuple[float, float]:
    """The interval of w allowed by McCormick's rows w ≤ y, w ≤ h, w ≥ h + y − 1, w ≥ 0 (proofs/mccormick_exact.md)."""
    return max(0.0, h + y - 1.0), min(y, h)


def exercise1_envelope() -> pd.DataFrame:
    """Width of the envelope and whether it holds y·h, for y ∈ {0, 0.5, 1} and 11 values of h.

    Theorem (a): width 0 for y = 0 and y = 1 (up to float rounding, about 1e-16).  For y = 0.5 the width
    min(0.5, h) − max(0, h − 0.5) is largest, 0.5, at h = 0.5.
    """
    rows = []
    for y in (0.0, 0.5, 1.0):
        for h in np.linspace(0.0, 1.0, 11):
            low, high = envelope(y, float(h))
            inside = low - 1e-12 <= y * h <= high + 1e-12  # float rounding of h + y − 1
            rows.append({"y": y, "h": float(h), "width": high - low, "holds_product": inside})
    return pd.DataFrame(rows)


def naive_greedy(inst: cbalab.Instance, best_single: bool = False) -> cbalab.Allocation:
    """Utility per dollar, one upgrade at a time; options cost p_g g + p_b r (no cache, Theorem C's (L0))."""
    doc = inst.to_dict()
    p_g, p_b = doc["prices"]["gpu_per_hour"], doc["prices"]["bandwidth_gbps_per_hour"]
    budget = doc["budget_per_hour"]
    gpu_cap = doc["cluster"]["gpus"]

    def cost(opt: dict[str, Any] | None) -> float:
        return 0.0 if opt is None else p_g * opt["gpus"] + p_b * opt["io_gbps"]

    def utility(opt: dict[str, Any] | None) -> float:
        return 0.0 if opt is None else float(opt["utility"])

    def gpus(opt: dict[str, Any] | None) -> int:
        return 0 if opt is None else int(opt["gpus"])

    choice: list[dict[str, Any] | None] = [None] * len(doc["jobs"])
    spent, used = 0.0, 0
    while True:
        best = None
        for j, job in enumerate(doc["jobs"]):
            for opt in job["options"]:
                gain, extra = utility(opt) - utility(choice[j]), cost(opt) - cost(choice[j])
                more = gpus(opt) - gpus(choice[j])
                fits = spent + extra <= budget + 1e-9 and (gpu_cap is None or used + more <= gpu_cap)
                if gain > 0 and fits:
                    ratio = gain / extra if extra > 0 else np.inf
                    if best is None or ratio > best[0]:
                        best = (ratio, j, opt, extra, more)
        if best is None:
            break
        _, j, opt, extra, more = best
        choice[j], spent, used = opt, spent + extra, used + more
    if best_single:
        alone = [
            (utility(o), j, o)
            for j, job in enumerate(doc["jobs"])
            for o in job["options"]
            if cost(o) <= budget and (gpu_cap is None or o["gpus"] <= gpu_cap)
        ]
        if alone:
            value, j, o = max(alone, key=lambda t: t[0])
            if value > sum(utility(c) for c in choice):
                choice = [None] * len(doc["jobs"])
                choice[j] = o
    return cbalab.Allocation(
        gpus=np.array([gpus(o) for o in choice]),
        cache_gb=np.zeros(len(doc["datasets"])),
        bandwidth_gbps=np.array([0.0 if o is None else float(o["io_gbps"]) for o in choice]),
    )


def welfare(inst: cbalab.Instance, alloc: cbalab.Allocation) -> float:
    """The referee's welfare of ``alloc`` (0 if it is infeasible)."""
    ev = cbalab.evaluate(inst, alloc, "welfare")
    return float(ev.welfare) if ev.feasible and ev.welfare is not None else 0.0


def exercise2_repaired_greedy(ms: tuple[int, ...] = (2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)) -> pd.DataFrame:
    """The greedy with the best single job on greedy_trap(m): ratio to the optimum 1.5 m, at least ½ (Theorem C)."""
    rows = []
    for m in ms:
        inst = cbalab.examples.greedy_trap(m)
        rows.append(
            {
                "m": m,
                "naive": welfare(inst, naive_greedy(inst)) / (1.5 * m),
                "repaired": welfare(inst, naive_greedy(inst, best_single=True)) / (1.5 * m),
            }
        )
    return pd.DataFrame(rows).set_index("m")


def counterexample3(n: int = 8) -> cbalab.Instance:
    """Counterexample 3 of proofs/autocba_guarantee.md with K = n: n jobs A (1 GPU, no IO, worth 1) and n jobs B
    (1 GPU, K − 1 GB/s, worth K − 0.01), each on its own dataset, C = 0, prices (1, 0, 1), G = n, budget n K."""
    k = float(n)
    jobs = [
        {"id": f"A{i}", "dataset": f"a{i}", "options": [{"gpus": 1, "io_gbps": 0.0, "utility": 1.0}]} for i in range(n)
    ]
    jobs += [
        {"id": f"B{i}", "dataset": f"b{i}", "options": [{"gpus": 1, "io_gbps": k - 1.0, "utility": k - 0.01}]}
        for i in range(n)
    ]
    datasets = [{"id": job["dataset"], "size_gb": 1.0} for job in jobs]
    return cbalab.build_instance(jobs, datasets, cache_gb=0.0, prices=(1.0, 0.0, 1.0), gpus=n, budget_per_hour=n * k)


def exercise3_gpus_bind(n: int = 8) -> dict[str, float]:
    """Per-dollar greedy (even with the best single job) takes the n A's first (ratio 1 > (K − 0.01)/K) and fills G:
    welfare n.  AutoCBA's normalised run (Theorem C, d = 2) takes the n B's: n (K − 0.01)."""
    inst = counterexample3(n)
    return {
        "naive": welfare(inst, naive_greedy(inst)),
        "naive_best_single": welfare(inst, naive_greedy(inst, best_single=True)),
        "autocba": float(cbalab.solve(inst, "autocba").objective or 0.0),
        "optimum": n * (n - 0.01),
    }


def exercise4_certificate(budgets: tuple[float, ...] = tuple(np.arange(1.0, 31.0, 1.0))) -> pd.DataFrame:
    """AutoCBA ≤ MILP ≤ certificate at every budget of elastic_toy; certified gap ≥ true gap; proven where equal."""
    rows = []
    for budget in budgets:
        inst = cbalab.examples.elastic_toy(budget_per_hour=float(budget))
        exact = cbalab.solve(inst, "milp", problem="welfare")
        fast = cbalab.solve(inst, "autocba")
        rows.append(
            {
                "budget": float(budget),
                "autocba": fast.objective,
                "milp": exact.objective,
                "certificate": fast.bound,
                "proven_optimal": fast.status == cbalab.Status.OPTIMAL,
            }
        )
    frame = pd.DataFrame(rows).set_index("budget")
    frame["true_gap"] = frame["milp"] - frame["autocba"]
    frame["certified_gap"] = frame["certificate"] - frame["autocba"]
    return frame


def checks() -> list[tuple[str, bool, str]]:
    """Every exercise's check as (what, whether it holds, the numbers), with the tolerances of
    tests/test_tutorials.py: what ``python tutorials/solutions/lab02.py`` prints."""
    envelope_frame = exercise1_envelope()
    binary = float(envelope_frame.loc[envelope_frame["y"] != 0.5, "width"].abs().max())
    half = envelope_frame[envelope_frame["y"] == 0.5]
    widest = half.loc[half["width"].idxmax()]
    greedy = exercise2_repaired_greedy()
    naive_ok = bool(np.allclose(greedy["naive"], 4.0 / (3.0 * greedy.index.to_numpy(float))))
    bind = exercise3_gpus_bind(8)
    certificate = exercise4_certificate()
    tol = 1e-6
    brackets = bool(
        (certificate["autocba"] <= certificate["milp"] + tol).all()
        and (certificate["milp"] <= certificate["certificate"] + tol).all()
    )
    return [
        ("1. the envelope holds y h everywhere", bool(envelope_frame["holds_product"].all()), "all 33 points"),
        ("1. its width is 0 for binary y", binary <= 1e-15, f"largest width {binary:.3g}"),
        (
            "1. for y = 0.5 it is widest, 0.5, at h = 0.5",
            abs(widest["width"] - 0.5) < 1e-12 and abs(widest["h"] - 0.5) < 1e-12,
            f"width {widest['width']:.3g} at h = {widest['h']:.3g}",
        ),
        (
            "2. the repaired greedy reaches >= 1/2",
            bool((greedy["repaired"] >= 0.5).all()),
            f"worst {greedy['repaired'].min():.3g}",
        ),
        ("2. the naive greedy reaches exactly 4/(3m)", naive_ok, f"at m = 1000: {greedy['naive'].iloc[-1]:.3g}"),
        (
            "3. per-dollar greedy gets n = 8, AutoCBA the optimum",
            abs(bind["naive"] - 8.0) < 1e-9 and abs(bind["autocba"] - bind["optimum"]) < 1e-6,
            f"naive {bind['naive']:.6g}, autocba {bind['autocba']:.6g}, optimum {bind['optimum']:.6g}",
        ),
        ("4. AutoCBA <= MILP <= certificate at every budget", brackets, f"{len(certificate)} budgets"),
        (
            "4. the certified gap is never below the true gap",
            bool((certificate["certified_gap"] >= certificate["true_gap"] - tol).all()),
            f"largest true gap {certificate['true_gap'].max():.3g}",
        ),
    ]


def main() -> int:
    """Print every check, one line each; exit status 1 if one fails."""
    results = checks()
    for what, ok, numbers in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {what}: {numbers}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
