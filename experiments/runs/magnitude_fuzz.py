"""No ``optimal`` that another method beats, at any scale of the numbers (docs/model.md §8).

Each case is a small seeded instance (``generate_welfare`` or ``generate_cost``, integer variants included) put in
other units: utilities times u, money times m (prices and budget), sizes times s (d_k, C, the block; p_c / s),
rates times t (r, B, the tier; p_b / t).  Each factor is 1 or 10^x with x uniform in [−8, 9], so the instance is
the same problem with its numbers anywhere from 1e-8 to 1e9 of their usual size.  Every method of the problem
answers it (:data:`WELFARE_METHODS`, :data:`COST_METHODS`), and so does the ``milp`` of the instance in its own
units, whose allocation is carried over to the new units; the referee scores them all.  A *false optimum* is
an ``optimal`` (or a ``bound``) that a feasible answer beats by more than the certification tolerance (8.2) of
the claimed objective, :func:`cbalab.models.certify.instance_tolerance`, or an ``infeasible`` of an exact method
or CBA where an answer is feasible.  A no-stall claim (P2: ``milp``,
``autocba``, ``lp``'s bound) is compared only with the answers that feed every job in full (:func:`fully_fed`);
``milp-stall`` (P2s) with all.

    nice -n 10 cbalab bench magnitude-fuzz --welfare 2000 --cost 2000 [--exact 2000] [--seed 0]

prints one line per false optimum, then (as JSON) the counts of statuses per method, the number of false optima
and the wall and CPU time; it exits 1 if it found any.  ``--exact N`` adds N tiny P1 cases at magnitudes from
1e-12 to 1e22 judged against the exact optimum in rationals (:func:`exact_p1`), not against the other methods:
a false ``optimal``, a printed bound above the optimum, a false ``infeasible`` (:func:`judge`), counted per method.
tests/test_certify.py draws the first cases through hypothesis (its size follows the profile), tests/test_magnitudes.py
the exact ones.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from cbalab.algorithms import registry
from cbalab.experiments.workload import generate_cost, generate_welfare
from cbalab.models.certify import instance_tolerance
from cbalab.models.evaluate import RTOL, Allocation, Evaluation, block_counts, evaluate, tolerated
from cbalab.models.instance import Instance, build
from cbalab.models.options import SHAPES
from cbalab.models.types import SolveOptions

WELFARE_METHODS = ("autocba", "lp", "milp", "milp-stall", "gavel-tput", "optimus")
COST_METHODS = ("cba", "lp", "milp", "flow", "io-only", "cache-all", "coordl", "quiver", "silod")

#: Methods whose welfare claims are about P2 (no stalls): only fully fed answers can beat them.
NO_STALL = ("autocba", "lp", "milp")

#: Methods whose ``infeasible`` is a claim (a proof, or the referee refusing what should have been an answer).
DECIDED = ("milp", "milp-stall", "cba")

#: Decades of the unit factors.
LOW, HIGH = -8.0, 9.0


@dataclass(frozen=True)
class Units:
    """The factors of a change of units: utility, money, size (GB) and rate (GB/s)."""

    utility: float = 1.0
    money: float = 1.0
    size: float = 1.0
    rate: float = 1.0


def in_units(inst: Instance, u: Units) -> Instance:
    """``inst`` in other units: the same problem, every number scaled by its unit's factor."""
    step = inst.bandwidth_step_gbps
    return inst.replace(
        option_utility=inst.option_utility * u.utility,
        price_gpu=inst.price_gpu * u.money,
        price_cache=inst.price_cache * u.money / u.size,
        price_bandwidth=inst.price_bandwidth * u.money / u.rate,
        budget_per_hour=inst.budget_per_hour * u.money,
        dataset_size_gb=inst.dataset_size_gb * u.size,
        cache_gb=inst.cache_gb * u.size,
        block_gb=None if inst.block_gb is None else inst.block_gb * u.size,
        job_io_gbps=inst.job_io_gbps * u.rate,
        option_io_gbps=inst.option_io_gbps * u.rate,
        bandwidth_gbps=inst.bandwidth_gbps * u.rate,
        bandwidth_step_gbps=None if step is None else step * u.rate,
    )


def carried(alloc: Allocation, u: Units) -> Allocation:
    """An allocation of the original units in the new ones (cache times s, bandwidth times t)."""
    assert alloc.cache_gb is not None and alloc.bandwidth_gbps is not None
    provisioned = None if alloc.provisioned_gbps is None else alloc.provisioned_gbps * u.rate
    return Allocation(alloc.gpus, alloc.cache_gb * u.size, alloc.bandwidth_gbps * u.rate, provisioned)


def units(rng: np.random.Generator, problem: str, low: float = LOW, high: float = HIGH) -> Units:
    """Each factor 1 or 10^x, x uniform in [low, high], with even odds (the utility only for welfare)."""

    def factor() -> float:
        return float(10.0 ** rng.uniform(low, high)) if rng.random() < 0.5 else 1.0

    return Units(utility=factor() if problem == "welfare" else 1.0, money=factor(), size=factor(), rate=factor())


def welfare_case(rng: np.random.Generator, most_jobs: int = 10) -> Instance:
    """A small P2 instance: 1 to ``most_jobs`` jobs of 4 options, tight to loose budgets, G, C and B."""
    return generate_welfare(
        int(rng.integers(1, most_jobs + 1)),
        int(rng.integers(1, 4)),
        int(rng.integers(0, 2**31)),
        utility_mix=str(rng.choice([*SHAPES, "mixed"])),
        budget_fraction=float(rng.choice([0.05, 0.2, 0.5, 1.0])),
        gpu_fraction=float(rng.choice([0.2, 0.5, 1.0])),
        cache_fraction=float(rng.choice([0.0, 0.2, 1.0])),
        bandwidth_fraction=rng.choice(np.array([None, 0.1, 0.5], dtype=object)),
    )


def cost_case(rng: np.random.Generator) -> Instance:
    """A small P1 instance: 1-30 jobs on 1-8 datasets, any cache and cap, continuous or an integer variant."""
    inst = generate_cost(
        int(rng.integers(1, 31)),
        int(rng.integers(1, 9)),
        int(rng.integers(0, 2**31)),
        cache_fraction=float(rng.choice([0.0, 0.05, 0.2, 1.0])),
        bandwidth_fraction=rng.choice(np.array([None, 0.3, 0.6, 0.9], dtype=object)),
    )
    variant = int(rng.integers(0, 5))
    if variant == 1:
        inst = inst.replace(cache_granularity="dataset")
    elif variant == 2:
        inst = inst.replace(cache_granularity="block", block_gb=float(np.median(inst.dataset_size_gb)) / 4)
    elif variant >= 3:
        total = float(inst.job_io_gbps.sum())
        inst = inst.replace(bandwidth_step_gbps=max(total / 8, 1e-3))
        if variant == 4:
            inst = inst.replace(cache_granularity="dataset")
    return inst


@dataclass(frozen=True)
class Answer:
    """One scored answer: method, status, bound, referee objective (None if the referee refused it), fully fed."""

    method: str
    status: str
    bound: float | None
    objective: float | None
    fed: bool


def answers(inst: Instance, problem: str, base: Instance, u: Units) -> list[Answer]:
    """Every method's scored answer on ``inst`` (= ``base`` in units ``u``), and the base milp's carried over."""
    out = []
    for name in WELFARE_METHODS if problem == "welfare" else COST_METHODS:
        doc, ev = registry.run(inst, problem, name)
        if ev is None or not ev.feasible:
            out.append(Answer(name, doc["status"], doc["bound"], None, False))
            continue
        bandwidth = np.fromiter(doc["bandwidth_gbps"].values(), dtype=float, count=inst.n_jobs)
        objective = ev.cost_total if problem == "cost" else ev.welfare
        out.append(Answer(name, doc["status"], doc["bound"], objective, fully_fed(inst, ev, bandwidth)))
    home = registry.get(problem, "milp").function()(base, SolveOptions())
    if home.has_allocation:
        away = carried(home, u)
        ev = evaluate(inst, away, problem)
        if ev.feasible:
            objective = ev.cost_total if problem == "cost" else ev.welfare
            fed = fully_fed(inst, ev, np.asarray(away.bandwidth_gbps))
            out.append(Answer("milp in its own units", "feasible", None, objective, fed))
    return out


def fully_fed(inst: Instance, ev: Evaluation, bandwidth: np.ndarray) -> bool:
    """Every job gets its need r_j (1 − h_k(j)) (docs/model.md (5.3)) to a relative 1e-9: a P2 allocation.

    Stricter than the referee's stall check, which forgives a shortfall of 1e-9 GB/s however small the need:
    below 1e-9 GB/s a job with no bandwidth at all counts as unstalled, and such an allocation is no P2 point.
    """
    need = ev.rate_gbps * (1.0 - ev.hit_ratio[inst.job_dataset])
    return bool(np.all(bandwidth >= need * (1.0 - 1e-9)))


def false_optima(inst: Instance, problem: str, found: list[Answer]) -> list[str]:
    """Every claim in ``found`` that a feasible answer beats by more than the tolerance (8.2): a line each.

    An ``infeasible`` of a method of :data:`DECIDED` where another answer is feasible is one too.
    """
    minimise = problem == "cost"
    bad = []
    witness = next((a for a in found if a.objective is not None), None)
    for claim in found:
        if claim.status == "infeasible" and claim.method in DECIDED and witness is not None:
            bad.append(f"{claim.method} infeasible but {witness.method} is feasible at {witness.objective:.9g}")
        values = []
        if claim.status == "optimal" and claim.objective is not None:
            values.append(("optimal", claim.objective))
        if claim.bound is not None:
            values.append(("bound", claim.bound))
        for kind, value in values:
            tol = instance_tolerance(inst, problem, value)
            for other in found:
                if other.objective is None or other is claim:
                    continue
                if problem == "welfare" and claim.method in NO_STALL and not other.fed:
                    continue
                beats = other.objective < value - tol if minimise else other.objective > value + tol
                if beats:
                    bad.append(
                        f"{claim.method} {kind} {value:.9g} beaten by {other.method} {other.objective:.9g} "
                        f"(tolerance {tol:.3g})"
                    )
    return bad


def run(n_welfare: int, n_cost: int, seed: int) -> tuple[int, Counter, float, float]:
    """The fuzz: ``n_welfare`` and ``n_cost`` cases from ``seed``.

    Returns the number of false optima, the status counts per (problem, method, status), and the wall and
    CPU seconds.
    """
    rng = np.random.default_rng(seed)
    begin, cpu = time.perf_counter(), time.process_time()
    statuses: Counter = Counter()
    bad = 0
    for problem, count in (("welfare", n_welfare), ("cost", n_cost)):
        for i in range(count):
            base = welfare_case(rng) if problem == "welfare" else cost_case(rng)
            u = units(rng, problem)
            inst = in_units(base, u)
            found = answers(inst, problem, base, u)
            statuses.update((problem, a.method, a.status) for a in found)
            for line in false_optima(inst, problem, found):
                bad += 1
                print(f"{problem} case {i} units {u}: {line}", flush=True)
    return bad, statuses, time.perf_counter() - begin, time.process_time() - cpu


def measure(*, welfare: int = 200, cost: int = 200, exact: int = 0, seed: int = 0) -> dict[str, Any]:
    """Run the fuzz (``welfare`` and ``cost`` cases from ``seed``, then ``exact`` cases against the exact optimum of
    P1, :func:`exact_p1`; each fault printed as found) and return its counts: the statuses per problem and method,
    the number of false optima, the exact cases' statuses and faults per method, the wall and CPU seconds, and
    ``ok``, False if it found any (``cbalab bench magnitude-fuzz`` then exits 1)."""
    bad, statuses, seconds, cpu = run(welfare, cost, seed)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for (problem, method, status), n in sorted(statuses.items()):
        counts.setdefault(problem, {}).setdefault(method, {})[status] = n
    begin, cpu_begin = time.perf_counter(), time.process_time()
    tally, faults = run_exact(exact, seed) if exact else (Counter(), [])
    judged: dict[str, dict[str, int]] = {}
    for (method, what), n in sorted(tally.items()):
        judged.setdefault(method, {})[what] = n
    return {
        "welfare_cases": welfare,
        "cost_cases": cost,
        "exact_cases": exact,
        "seed": seed,
        "statuses": counts,
        "false_optima": bad,
        "exact": judged,
        "exact_faults": len(faults),
        "wall_seconds": seconds + time.perf_counter() - begin,
        "cpu_seconds": cpu + time.process_time() - cpu_begin,
        "ok": bad == 0 and not faults,
    }


# ------------------------------------------------------------------ the exact reference of P1 (docs/model.md §4, §8)
#
# The cases above compare the methods with one another; the cases below compare each P1 method's status and bound
# with the exact optimum, computed in rationals from the instance's floats, with C and B as the referee accepts them
# (``tolerated``, docs/model.md (8.1)).  Tiny instances (at most 3 datasets, 4 jobs, 8 blocks a dataset, 24 tiers)
# at magnitudes from 1e-12 to 1e22, the numbers of one instance up to twelve decades apart.

#: The P1 methods checked against the exact reference.
EXACT_METHODS = ("cba", "lp", "milp", "flow")

#: Decades of the exact cases' numbers.
EXACT_LOW, EXACT_HIGH = -12, 22


def _ordered_fill(d: list[Fraction], R: list[Fraction], limit: Fraction | None, room: Fraction) -> Fraction | None:
    """The least cache (GB) whose remote IO Σ_k R_k (1 − c_k/d_k) is at most ``limit``, filled by decreasing R_k/d_k
    (the fractional knapsack), or None if it needs more than ``room``; ``limit`` None: 0 GB."""
    if limit is None:
        return Fraction(0)
    remote = sum(R, Fraction(0))
    used = Fraction(0)
    for k in sorted(range(len(d)), key=lambda k: -R[k] / d[k]):
        if remote <= limit or R[k] == 0:
            break
        rho = R[k] / d[k]
        take = min(d[k], (remote - limit) / rho)
        used += take
        remote -= rho * take
    return used if remote <= limit and used <= room else None


def exact_p1(inst: Instance) -> Fraction | None:
    """The exact optimum of P1 (docs/model.md §4) on ``inst`` with C and B as the referee accepts them, or None
    when no allocation exists: the GPU bill plus the least IO cost, in rationals.

    Continuous cache and bandwidth: the IO cost of caching X GB in decreasing R_k/d_k is convex in X, least at the
    profitable datasets' total, so the optimum caches that clamped to [least X that meets B, least of C and Σ d].
    Integer variants: every whole choice of cache (0 or d_k, or u·n_k for n_k up to the referee's block count),
    and under tiers every whole tier count m with m·β within B (continuous cache: the least cache that fits the
    remote IO in m·β; whole cache: the fewest tiers that carry its remote IO).  Exponential; tiny instances only.
    """
    F = Fraction
    room = F(tolerated(inst.cache_gb))
    cap = F(tolerated(inst.bandwidth_gbps)) if math.isfinite(inst.bandwidth_gbps) else None
    d = [F(x) for x in inst.dataset_size_gb.tolist()]
    R = [F(0)] * len(d)
    for k, r in zip(inst.job_dataset.tolist(), inst.job_io_gbps.tolist()):
        R[k] += F(r)
    p_c, p_b = F(inst.price_cache), F(inst.price_bandwidth)
    gpu = F(inst.price_gpu) * int(inst.job_gpus.sum())
    total = sum(R, F(0))
    step = inst.bandwidth_step_gbps
    best: Fraction | None = None
    if inst.cache_granularity == "continuous" and step is None:
        order = sorted(range(len(d)), key=lambda k: -R[k] / d[k])
        most = min(room, sum(d, F(0)))
        profit = sum((d[k] for k in order if p_b * R[k] > p_c * d[k]), F(0))
        need = _ordered_fill(d, R, cap, most)
        if need is None:
            return None
        x = min(max(profit, need), most)
        remote, left = total, x
        for k in order:
            take = min(d[k], left)
            remote -= R[k] / d[k] * take
            left -= take
        return gpu + p_c * x + p_b * remote
    if inst.cache_granularity == "continuous":
        assert step is not None
        beta = F(step)
        top = -((-total) // beta)  # more tiers than carry the whole demand never help
        if cap is not None:
            top = min(top, cap // beta)
        for m in range(int(top) + 1):
            held = _ordered_fill(d, R, min(m * beta, cap) if cap is not None else m * beta, room)
            if held is not None:
                cost = p_c * held + p_b * m * beta
                best = cost if best is None or cost < best else best
        return None if best is None else gpu + best
    if inst.cache_granularity == "dataset":
        choices = [[F(0), dk] for dk in d]
    else:
        # The referee's block caches: u·n as a float product, and the dataset itself where d_k/u is within the slack
        # of (8.1) of its block count (it then holds whole blocks).
        u = inst.block_size_gb
        counts = block_counts(inst.dataset_size_gb, u).astype(int).tolist()
        choices = []
        for dk, count in zip(inst.dataset_size_gb.tolist(), counts):
            blocks = {F(u * n) for n in range(count + 1)}
            q = dk / u
            if count and abs(q - round(q)) <= RTOL * max(1.0, q):
                blocks.add(F(dk))
            choices.append(sorted(blocks))
    for cache in itertools.product(*choices):
        if sum(cache, F(0)) > room:
            continue
        remote = sum((R[k] * (1 - min(c, d[k]) / d[k]) for k, c in enumerate(cache)), F(0))
        if step is None:
            if cap is not None and remote > cap:
                continue
            bill = remote
        else:
            beta = F(step)
            bill = -((-remote) // beta) * beta
            if cap is not None and bill > cap:
                continue
        cost = p_c * sum(cache, F(0)) + p_b * bill
        best = cost if best is None or cost < best else best
    return None if best is None else gpu + best


def _magnitude(rng: np.random.Generator, centre: float, spread: float = 0.0) -> float:
    """10^x × a mantissa in [1, 10) (a power of two half the time), x within ``spread`` decades below ``centre``."""
    x = centre - (rng.uniform(0.0, spread) if spread else 0.0)
    mantissa = float(2.0 ** rng.integers(0, 4)) if rng.random() < 0.5 else float(rng.uniform(1.0, 10.0))
    return float(mantissa * 10.0 ** np.floor(x))


def exact_case(rng: np.random.Generator) -> Instance:
    """A tiny P1 instance for :func:`exact_p1`: sizes, rates and each price at their own decade in
    [EXACT_LOW, EXACT_HIGH], a dataset or job now and then up to twelve decades below the rest; C and B from 0
    through tight to loose (1e-12 in absolute terms too); continuous, whole datasets, blocks (a dataset now and then
    below 1e-9 of a block) and tiers (one tier now and then above the whole demand)."""
    span = (EXACT_LOW, EXACT_HIGH)
    K, J = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    size_at, rate_at = rng.uniform(*span), rng.uniform(*span)
    spread = 12.0 if rng.random() < 0.3 else 0.0
    d = np.array([_magnitude(rng, size_at, spread) for _ in range(K)])
    r = np.array([0.0 if rng.random() < 0.15 else _magnitude(rng, rate_at, spread) for _ in range(J)])
    jd = rng.integers(0, K, size=J)
    prices = tuple(0.0 if rng.random() < 0.15 else _magnitude(rng, rng.uniform(*span)) for _ in range(3))
    demand = float(r.sum())
    cache = float(rng.choice([0.0, 1e-12, 0.3, 0.7, 1.0, 2.0])) * (1.0 if rng.random() < 0.2 else float(d.sum()))
    cap = math.inf
    if rng.random() < 0.4:
        cap = float(rng.choice([0.0, 1e-12, 0.2, 0.6, 0.95])) * (1.0 if rng.random() < 0.2 else demand)
    kind = int(rng.integers(0, 5))
    extra: dict[str, Any] = {}
    if kind == 1:
        extra["cache_granularity"] = "dataset"
    elif kind == 2:
        u = float(d.max()) / float(rng.choice([0.5, 1.0, 2.0, 3.0, 7.0]))
        if rng.random() < 0.2:
            d[int(rng.integers(0, K))] = u * 1e-10
        extra.update(cache_granularity="block", block_gb=u)
    elif kind >= 3 and demand > 0:
        extra["bandwidth_step_gbps"] = demand * float(rng.choice([1e3, 2.0, 1.0, 0.5, 0.25, 1 / 7]))
        if kind == 4:
            extra["cache_granularity"] = str(rng.choice(["dataset", "continuous"]))
    return build(
        dataset_size_gb=d,
        job_dataset=jd,
        job_gpus=rng.integers(0, 5, size=J),
        job_io_gbps=r,
        cache_gb=cache,
        bandwidth_gbps=cap,
        prices=(float(prices[0]), float(prices[1]), float(prices[2])),
        **extra,
    )


@dataclass(frozen=True)
class Judged:
    """One P1 method's answer judged against the exact optimum: which of the three faults it has, if any."""

    method: str
    status: str
    false_optimal: bool
    wrong_side: bool
    false_infeasible: bool


def judge(inst: Instance, method: str, optimum: Fraction | None) -> Judged:
    """``method``'s answer on ``inst`` against the exact optimum (None: no allocation exists).

    * a false ``optimal``: the referee's score exceeds the optimum by more than the certification tolerance (8.2),
      or no allocation exists;
    * a bound on the wrong side: a printed lower bound above the exact optimum;
    * a false ``infeasible``: an allocation exists.
    """
    doc, ev = registry.run(inst, "cost", method)
    status, bound = str(doc["status"]), doc["bound"]
    score = ev.cost_total if ev is not None and ev.feasible else None
    false_optimal = status == "optimal" and (
        optimum is None
        or score is None
        or Fraction(score) - optimum > Fraction(instance_tolerance(inst, "cost", score))
    )
    wrong_side = bound is not None and optimum is not None and Fraction(bound) > optimum
    return Judged(method, status, false_optimal, wrong_side, status == "infeasible" and optimum is not None)


def run_exact(count: int, seed: int, verbose: bool = True) -> tuple[Counter, list[str]]:
    """``count`` exact cases from ``seed``: the counts per (method, status or fault), and a line per fault."""
    rng = np.random.default_rng(seed)
    tally: Counter = Counter()
    lines = []
    for i in range(count):
        inst = exact_case(rng)
        optimum = exact_p1(inst)
        for method in EXACT_METHODS:
            j = judge(inst, method, optimum)
            tally[(method, j.status)] += 1
            for fault in ("false_optimal", "wrong_side", "false_infeasible"):
                if getattr(j, fault):
                    tally[(method, fault)] += 1
                    line = f"exact case {i}: {method} {fault} ({j.status}); optimum {optimum}"
                    lines.append(line)
                    if verbose:
                        print(line, flush=True)
    return tally, lines
