"""The one referee: feasibility, cost, stalls and welfare of any allocation.

Every method in cbalab returns an :class:`Allocation`; this module alone turns
it into the numbers that are reported (README.md (Layout), "One referee").  A
method's own idea of its objective is never trusted: the CLI, the tests and
the experiments all score through :func:`evaluate`.

The scoring follows docs/model.md:

* hit ratio h_k = min(c_k, d_k) / d_k, where c_k is the capacity dataset k
  occupies and pays for (whole blocks under block caching, §4);
* consumption x_j = min(r_j(g_j), b_j / (1 - h_k(j))) and stall factor
  x_j / r_j(g_j) (§3);
* cost per hour p_g Σ g_j + p_c Σ c_k + p_b · (Σ b_j, or the provisioned
  P = m·β under bandwidth tiers, §4);
* welfare Σ_j U_j(g_j) · x_j / r_j(g_j) (§5: a stalled job earns utility
  only while its GPUs train);
* a time-shared job (``Allocation.time_share`` s_j < 1, §7: Gavel's rounds)
  runs a share s_j of the time: it holds s_j g_j GPUs and needs s_j r_j(g_j)
  of data on average, and earns s_j of its utility rate, the same linear rule
  as a stall (§5, "Time sharing").

For the cost problem P1 (§4) a stalled job is a violation; for the welfare
problem P2 (§5) stalls are allowed and scored, while the GPU, cache and
bandwidth capacities and the budget are hard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from cbalab.models.instance import Instance
from cbalab.models.kernels import exact_dot
from cbalab.models.result import Allocation as Allocation  # re-exported: methods import the result from the referee
from cbalab.models.types import Problem, Status

#: Relative tolerance of every feasibility check (floating-point slack, not modelling slack).
RTOL = 1e-9

PROBLEMS = tuple(Problem)


@dataclass
class Evaluation:
    """The referee's verdict on one allocation (costs in $/h)."""

    feasible: bool
    violations: list[str]
    cost_gpu: float
    cost_cache: float
    cost_bandwidth: float
    provisioned_gbps: float | None
    hit_ratio: np.ndarray
    rate_gbps: np.ndarray
    stall_factor: np.ndarray
    welfare: float | None
    time_share: np.ndarray

    @property
    def cost_total(self) -> float:
        """Total cost per hour: GPU + cache + bandwidth."""
        return self.cost_gpu + self.cost_cache + self.cost_bandwidth

    @property
    def cost_io(self) -> float:
        """IO cost per hour: cache + bandwidth."""
        return self.cost_cache + self.cost_bandwidth

    @property
    def welfare_score(self) -> float:
        """The welfare (docs/model.md (5.7)) of an evaluation that knows it, as every welfare-problem one does.

        Raises ValueError for a cost-problem evaluation whose jobs have no utilities (``welfare`` None).
        """
        if self.welfare is None:
            raise ValueError("this evaluation has no welfare: the jobs' options (utilities) are not all known")
        return self.welfare


def _slack(x: float | np.ndarray) -> float | np.ndarray:
    """The referee's slack RTOL·max(1, |x|) on a total x (docs/model.md (8.1)), element by element on an array.

    A number is taken without numpy (a replay asks it of its B at every event): the same product, and NaN stays
    NaN as ``np.maximum`` keeps it.
    """
    if isinstance(x, np.ndarray):
        return RTOL * np.maximum(1.0, np.abs(x))
    a = abs(x)
    return RTOL * (1.0 if a <= 1.0 else a)


#: Share of the referee's slack that a model's row may use (docs/model.md (8.1)): all of it but a thousandth, which
#: absorbs the rounding of the allocation the referee re-computes from a solution that sits on the row.
MODEL_SHARE = 0.999


def tolerated(limit: float, share: float = 1.0) -> float:
    """The largest total the referee accepts under a limit (C, B or the budget): ``limit + RTOL·max(1, abs(limit))``.

    The one budget tolerance of docs/model.md (8.1); ``share`` of the slack only (the exact models' rows use
    ``MODEL_SHARE``, so that they optimise over the set the referee accepts).
    """
    return float(limit + share * _slack(limit))


class OptionLookup(NamedTuple):
    """Per job, what its option table says about its GPU count: found, r_j(g) in GB/s, U_j(g)."""

    found: np.ndarray
    rate_gbps: np.ndarray
    utility: np.ndarray


def option_lookup(inst: Instance, gpus: np.ndarray) -> OptionLookup:
    """For each job's GPU count: (found, r_j(g), U_j(g)) from its option table; g = 0 is found with 0, 0."""
    opt_job = inst.option_job()
    match = inst.option_gpus == gpus[opt_job]
    rows = np.flatnonzero(match)
    found = gpus == 0
    rate = np.zeros(inst.n_jobs)
    util = np.zeros(inst.n_jobs)
    jobs = opt_job[rows]
    found[jobs] = True
    rate[jobs] = inst.option_io_gbps[rows]
    util[jobs] = inst.option_utility[rows]
    return OptionLookup(found, rate, util)


def least_feeding(inst: Instance, rates: np.ndarray, cache: np.ndarray) -> np.ndarray:
    """b_j = r_j (1 - h_k(j)) with h_k = min(c_k, d_k) / d_k: the least bandwidth that keeps every job unstalled.

    docs/model.md §3; any feasible bandwidth dominates it (Lemma 1 of proofs/cba_optimality.md), so methods that
    decide only the cache complete their allocation with it.
    """
    return rates * (1.0 - hit_ratio(inst.dataset_size_gb, cache)[inst.job_dataset])


def hit_ratio(size_gb: np.ndarray, cache: np.ndarray) -> np.ndarray:
    """h_k = min(c_k, d_k) / d_k, the share of every read of dataset k that its cache serves (docs/model.md §3).

    On one pseudo-job per dataset (an aggregate instance, docs/model.md §4) the least feeding is R_k (1 − h_k).
    """
    return np.minimum(cache, size_gb) / size_gb


def block_counts(size_gb: np.ndarray, block_gb: float) -> np.ndarray:
    """The whole blocks of ``block_gb`` GB a dataset of ``size_gb`` can use: ⌈d/u − ε max(1, d/u)⌉ (docs/model.md §4).

    The one rule of the referee, CBA and the MILP: a dataset's count is d/u rounded up, less the slack of (8.1) on
    it, so that a count within rounding of a whole number is not rounded up to one block more.  A dataset smaller
    than ε = 10⁻⁹ of a block thus has 0 blocks: it cannot be cached, and its jobs are fed by remote IO.
    """
    q = size_gb / block_gb
    return np.ceil(q - _slack(q))


def usable_cache(inst: Instance) -> np.ndarray:
    """The most cache each dataset can use (GB): d_k, or its whole blocks u·n_k under block caching (§4)."""
    if inst.cache_granularity == "block":
        return block_counts(inst.dataset_size_gb, inst.block_size_gb) * inst.block_size_gb
    return inst.dataset_size_gb.copy()


def evaluate(inst: Instance, alloc: Allocation, problem: str) -> Evaluation:
    """Score ``alloc`` on ``inst`` for ``problem`` ("cost" = P1, "welfare" = P2), listing every violation.

    Raises ValueError if the allocation's arrays have the wrong shape (a method
    bug, not an infeasibility).
    """
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    if not alloc.has_allocation:
        raise ValueError("allocation has no arrays to evaluate")
    g = np.asarray(alloc.gpus)
    c = np.asarray(alloc.cache_gb, dtype=float)
    b = np.asarray(alloc.bandwidth_gbps, dtype=float)
    for name, arr, n in (
        ("gpus", g, inst.n_jobs),
        ("cache_gb", c, inst.n_datasets),
        ("bandwidth_gbps", b, inst.n_jobs),
    ):
        if arr.shape != (n,):
            raise ValueError(f"allocation.{name} has shape {arr.shape}, expected ({n},)")
    v: list[str] = []
    _check_values(inst, g, c, b, v)
    g = np.rint(g).astype(np.int64) if g.dtype.kind == "f" else g.astype(np.int64)
    share = _time_share(inst, alloc.time_share, problem, v)

    found, opt_rate, util = (
        option_lookup(inst, g) if inst.option_gpus.size else (g == 0, np.zeros(inst.n_jobs), np.zeros(inst.n_jobs))
    )
    if problem == "cost":
        inst.require_fixed()
        rate = inst.job_io_gbps.copy()
        wrong = np.flatnonzero(g != inst.job_gpus)
        if wrong.size:
            j = wrong[0]
            v.append(
                f"gpus[{inst.job_ids[j]}] = {g[j]} differs from the job's fixed {inst.job_gpus[j]} ({wrong.size} jobs)"
            )
        welfare_known = bool(inst.has_options.all() and found.all())
    else:
        inst.require_options()
        rate = opt_rate
        bad = np.flatnonzero(~found)
        if bad.size:
            j = bad[0]
            v.append(f"gpus[{inst.job_ids[j]}] = {g[j]} is not one of the job's options ({bad.size} jobs)")
        welfare_known = True

    hit = _hit_ratio(inst, c, v)
    need = rate * share * (1.0 - hit[inst.job_dataset])
    short = b < need - _slack(need)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(short, b / need, 1.0)
    factor = np.clip(np.nan_to_num(factor, nan=1.0), 0.0, 1.0)
    if problem == "cost" and short.any():
        j = int(np.flatnonzero(short)[0])
        v.append(
            f"bandwidth_gbps[{inst.job_ids[j]}] = {b[j]:.6g} < r_j (1 - h_k) = {need[j]:.6g}: "
            f"job stalls ({int(short.sum())} jobs)"
        )

    total_b = float(b.sum())
    if total_b > tolerated(inst.bandwidth_gbps):
        v.append(f"total bandwidth {total_b:.6g} GB/s exceeds the cap B = {inst.bandwidth_gbps:.6g}")
    provisioned = _provisioned(inst, alloc.provisioned_gbps, total_b, v)
    total_c = float(c.sum())
    if total_c > tolerated(inst.cache_gb):
        v.append(f"total cache {total_c:.6g} GB exceeds the capacity C = {inst.cache_gb:.6g}")
    # time-shared GPUs are a time average (a float, checked with the float slack); whole GPUs are counted exactly
    total_g: float = int(g.sum()) if alloc.time_share is None else exact_dot(g, share)
    room = inst.gpus if alloc.time_share is None or inst.gpus is None else inst.gpus + _slack(inst.gpus)
    if problem == "welfare" and room is not None and total_g > room:
        v.append(f"total GPUs {total_g:.9g} exceed the cluster's G = {inst.gpus}")
    if problem == "welfare" and inst.gpus is not None:
        # A time-shared job holds all g_j of its GPUs in each of its rounds (§5, "Time sharing"): its average
        # s_j g_j may fit G while g_j never does.  Whole jobs meet this through the total above.
        over = np.flatnonzero((share > 0) & (g > inst.gpus))
        if over.size:
            j = int(over[0])
            v.append(f"gpus[{inst.job_ids[j]}] = {g[j]} exceed the cluster's G = {inst.gpus} ({over.size} jobs)")

    cost_gpu = inst.price_gpu * total_g
    cost_cache = inst.price_cache * total_c
    cost_bw = inst.price_bandwidth * (total_b if provisioned is None else provisioned)
    total = cost_gpu + cost_cache + cost_bw
    if problem == "welfare" and total > tolerated(inst.budget_per_hour):
        v.append(f"cost {total:.6g} $/h exceeds the budget {inst.budget_per_hour:.6g} $/h")

    welfare = exact_dot(util * share, factor) if welfare_known else None
    return Evaluation(
        feasible=not v,
        violations=v,
        cost_gpu=cost_gpu,
        cost_cache=cost_cache,
        cost_bandwidth=cost_bw,
        provisioned_gbps=provisioned,
        hit_ratio=hit,
        rate_gbps=rate,
        stall_factor=factor,
        welfare=welfare,
        time_share=share,
    )


def _check_values(inst: Instance, g: np.ndarray, c: np.ndarray, b: np.ndarray, v: list[str]) -> None:
    if g.dtype.kind == "f" and not np.all(np.isfinite(g) & (g == np.rint(g))):
        v.append("gpus are not whole numbers")
    for name, arr, ids in (
        ("gpus", g, inst.job_ids),
        ("cache_gb", c, inst.dataset_ids),
        ("bandwidth_gbps", b, inst.job_ids),
    ):
        bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
        if bad.size:
            v.append(f"{name}[{ids[bad[0]]}] = {arr[bad[0]]} is negative or not finite ({bad.size} entries)")


def _time_share(inst: Instance, given: np.ndarray | None, problem: str, v: list[str]) -> np.ndarray:
    """Each job's share of the time (docs/model.md §5, "Time sharing"): 1 unless given, in [0, 1], welfare only."""
    if given is None:
        return np.ones(inst.n_jobs)
    share = np.asarray(given, dtype=float)
    if share.shape != (inst.n_jobs,):
        raise ValueError(f"allocation.time_share has shape {share.shape}, expected ({inst.n_jobs},)")
    bad = np.flatnonzero(~(np.isfinite(share) & (share >= 0) & (share <= 1)))
    if bad.size:
        j = int(bad[0])
        v.append(f"time_share[{inst.job_ids[j]}] = {share[j]} is not in [0, 1] ({bad.size} jobs)")
    elif problem == "cost" and (share < 1).any():
        j = int(np.flatnonzero(share < 1)[0])
        v.append(f"time_share[{inst.job_ids[j]}] = {share[j]:.6g}: the cost problem runs every job all the time")
    return np.clip(np.nan_to_num(share, nan=1.0), 0.0, 1.0)


def _hit_ratio(inst: Instance, c: np.ndarray, v: list[str]) -> np.ndarray:
    """h_k = min(c_k, d_k)/d_k, checking the cache granularity of docs/model.md §4."""
    d = inst.dataset_size_gb
    c = np.where(np.isfinite(c), np.maximum(c, 0.0), 0.0)
    if inst.cache_granularity == "block":
        u = inst.block_size_gb
        blocks = c / u
        off = np.abs(blocks - np.rint(blocks)) > _slack(blocks)
        limit = block_counts(d, u) * u
        what = f"a whole number of {u:g} GB blocks"
    elif inst.cache_granularity == "dataset":
        off = (c > _slack(c)) & (np.abs(c - d) > _slack(d))
        limit = d
        what = "0 or the whole dataset"
    else:
        off = np.zeros(c.size, dtype=bool)
        limit = d
        what = ""
    if off.any():
        k = int(np.flatnonzero(off)[0])
        v.append(f"cache_gb[{inst.dataset_ids[k]}] = {c[k]:.6g} is not {what} ({int(off.sum())} datasets)")
    over = c > limit + _slack(limit)
    if over.any():
        k = int(np.flatnonzero(over)[0])
        v.append(f"cache_gb[{inst.dataset_ids[k]}] = {c[k]:.6g} exceeds what the dataset can use ({limit[k]:.6g} GB)")
    return np.minimum(c, d) / d


def _provisioned(inst: Instance, claimed: float | None, total_b: float, v: list[str]) -> float | None:
    """The billed bandwidth P = m·β under tiers (docs/model.md §4), or None for continuous bandwidth."""
    step = inst.bandwidth_step_gbps
    if step is None:
        if claimed is not None and abs(claimed - total_b) > _slack(total_b):
            v.append(f"provisioned_gbps = {claimed:.6g} given, but bandwidth is not sold in tiers")
        return None
    if claimed is None:
        whole = math.ceil(total_b / step - _slack(total_b / step))
        claimed = max(whole, 0) * step
    m = claimed / step
    if not math.isfinite(claimed) or abs(m - round(m)) > _slack(m) or claimed < 0:
        v.append(f"provisioned_gbps = {claimed:.6g} is not a whole number of {step:g} GB/s tiers")
    if total_b > claimed + _slack(claimed):
        v.append(f"total bandwidth {total_b:.6g} GB/s exceeds the provisioned {claimed:.6g}")
    if claimed > tolerated(inst.bandwidth_gbps):
        v.append(f"provisioned_gbps = {claimed:.6g} exceeds the cap B = {inst.bandwidth_gbps:.6g}")
    return float(claimed)


@dataclass(frozen=True)
class Scored:
    """A method's answer as the referee reports it (docs/interface.md, ``cbalab/result@1``), typed.

    ``status`` is the method's claim, demoted to ``infeasible`` when the referee finds a violation;
    ``objective`` the referee's total cost ($/h, P1) or welfare (P2), None without a scored allocation;
    ``bound`` the method's proven bound (None when none or not finite); ``reason`` the method's, or the
    violations; ``seconds`` the wall time of the method's call; ``evaluation`` the referee's verdict.
    """

    instance: Instance
    problem: Problem
    method: str
    allocation: Allocation
    evaluation: Evaluation | None
    status: Status
    objective: float | None
    bound: float | None
    reason: str | None
    seconds: float

    def document(self) -> dict[str, Any]:
        """The ``cbalab/result@1`` document of docs/interface.md (a new dict on each call)."""
        inst, alloc, ev = self.instance, self.allocation, self.evaluation
        doc: dict[str, Any] = {
            "schema": "cbalab/result@1",
            "problem": str(self.problem),
            "method": self.method,
            "status": str(self.status),
            "objective": self.objective,
            "bound": self.bound,
        }
        if ev is None:
            doc.update(
                cost_per_hour=None,
                welfare=None,
                gpus=None,
                cache_gb=None,
                bandwidth_gbps=None,
                solve_seconds=self.seconds,
                reason=self.reason,
            )
            return doc
        assert alloc.cache_gb is not None and alloc.bandwidth_gbps is not None  # scored, so it has arrays
        doc.update(
            cost_per_hour={
                "gpu": ev.cost_gpu,
                "cache": ev.cost_cache,
                "bandwidth": ev.cost_bandwidth,
                "total": ev.cost_total,
            },
            welfare=ev.welfare,
            gpus={jid: int(x) for jid, x in zip(inst.job_ids, np.asarray(alloc.gpus))},
            cache_gb={k: float(x) for k, x in zip(inst.dataset_ids, alloc.cache_gb)},
            bandwidth_gbps={jid: float(x) for jid, x in zip(inst.job_ids, alloc.bandwidth_gbps)},
            solve_seconds=self.seconds,
            feasible=ev.feasible,
        )
        if ev.provisioned_gbps is not None:
            doc["provisioned_gbps"] = ev.provisioned_gbps
        if not ev.feasible:
            doc["violations"] = ev.violations
        if self.reason:
            doc["reason"] = self.reason
        stalled = np.flatnonzero(ev.stall_factor < 1.0)
        if stalled.size:
            doc["stall_factor"] = {inst.job_ids[j]: float(ev.stall_factor[j]) for j in stalled}
        shared = np.flatnonzero(ev.time_share < 1.0)
        if shared.size:
            doc["time_share"] = {inst.job_ids[j]: float(ev.time_share[j]) for j in shared}
        return doc


def score(inst: Instance, problem: str, method: str, alloc: Allocation, seconds: float) -> Scored:
    """A method's answer scored by :func:`evaluate`: the typed result that every report is written from.

    An allocation that the referee finds infeasible is reported with status
    ``infeasible``, ``feasible: false`` and its violations: the method failed
    on this instance, whatever it claimed.
    """
    prob = Problem(problem)
    if not alloc.has_allocation:
        return Scored(inst, prob, method, alloc, None, alloc.status, None, _num(alloc.bound), alloc.reason, seconds)
    ev = evaluate(inst, alloc, problem)
    status = alloc.status if ev.feasible else Status.INFEASIBLE
    objective = ev.cost_total if problem == "cost" else ev.welfare
    reason = alloc.reason if ev.feasible else "the method's allocation breaks: " + "; ".join(ev.violations)
    return Scored(inst, prob, method, alloc, ev, status, objective, _num(alloc.bound), reason or None, seconds)


def result(
    inst: Instance, problem: str, method: str, alloc: Allocation, seconds: float
) -> tuple[dict[str, Any], Evaluation | None]:
    """The ``cbalab/result@1`` document (docs/interface.md) of :func:`score`, and the referee's evaluation."""
    scored = score(inst, problem, method, alloc, seconds)
    return scored.document(), scored.evaluation


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
