"""No ``optimal`` that another method beats, at any scale of the numbers (issue 19; docs/model.md §8).

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

    nice -n 10 cbalab bench magnitude-fuzz --welfare 2000 --cost 2000 [--seed 0]

prints one line per false optimum, then (as JSON) the counts of statuses per method, the number of false optima
and the wall and CPU time; it exits 1 if it found any.  tests/test_certify.py draws the same cases through
hypothesis (its size follows the profile).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from cbalab.algorithms import registry
from cbalab.experiments.workload import generate_cost, generate_welfare
from cbalab.models.certify import instance_tolerance
from cbalab.models.evaluate import Allocation, Evaluation, evaluate
from cbalab.models.instance import Instance
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


def units(rng: np.random.Generator, problem: str) -> Units:
    """Each factor 1 or 10^x, x uniform in [LOW, HIGH], with even odds (the utility only for welfare)."""

    def factor() -> float:
        return float(10.0 ** rng.uniform(LOW, HIGH)) if rng.random() < 0.5 else 1.0

    return Units(utility=factor() if problem == "welfare" else 1.0, money=factor(), size=factor(), rate=factor())


def welfare_case(rng: np.random.Generator) -> Instance:
    """A small P2 instance: 1-10 jobs of 4 options, tight to loose budgets, G, C and B."""
    return generate_welfare(
        int(rng.integers(1, 11)),
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


def measure(*, welfare: int = 200, cost: int = 200, seed: int = 0) -> dict[str, Any]:
    """Run the fuzz (``welfare`` and ``cost`` cases from ``seed``; each false optimum printed as found) and
    return its counts: the statuses per problem and method, the number of false optima, the wall and CPU
    seconds, and ``ok``, False if it found any (``cbalab bench magnitude-fuzz`` then exits 1)."""
    bad, statuses, seconds, cpu = run(welfare, cost, seed)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for (problem, method, status), n in sorted(statuses.items()):
        counts.setdefault(problem, {}).setdefault(method, {})[status] = n
    return {
        "welfare_cases": welfare,
        "cost_cases": cost,
        "seed": seed,
        "statuses": counts,
        "false_optima": bad,
        "wall_seconds": seconds,
        "cpu_seconds": cpu,
        "ok": bad == 0,
    }
