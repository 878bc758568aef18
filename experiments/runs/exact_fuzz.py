"""Every method's status and bound against the exact optimum, at magnitudes from 1e-12 to 1e22 (docs/model.md §8).

Each case is a tiny seeded instance (1–5 jobs; P1 continuous, P2 of a few options) put in other units as
``magnitude-fuzz`` does, each factor 1 or 10^x with x uniform in [:data:`LOW`, :data:`HIGH`].  Its optimum is
computed in rational arithmetic by models/exact_reference.py, which shares no code with the methods: under the
limits as written (what an ``optimal`` must reach) and as the referee accepts them (what a bound must bound,
docs/model.md (8.1)).  A method's answer is **wrong** when

* its ``bound`` lies on the wrong side of the accepted optimum, compared exactly (a cost's lower bound above it,
  a welfare's upper bound below it), whatever the tolerance;
* it says ``optimal`` and the referee scores it further from the written optimum than the tolerance (8.2);
* it says ``infeasible`` where the exact optimum exists (for P2, never: running nothing is feasible), if its
  status is a claim about the optimum (:data:`P1_CLAIMS`, :data:`P2_CLAIMS`; a baseline's ``infeasible`` says
  only that the referee refused its allocation).

    nice -n 10 cbalab bench exact-fuzz --welfare 1000 --cost 1000 [--seed 0]

prints one line per wrong answer, then (as JSON) the counts of statuses per method, the number of wrong answers
and bounds checked, and the wall and CPU time; it exits 1 if it found any.  tests/test_exact_reference.py draws
the same cases through hypothesis.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from cbalab.algorithms import registry
from cbalab.experiments.runs import magnitude_fuzz
from cbalab.experiments.runs.magnitude_fuzz import Units, in_units
from cbalab.experiments.workload import generate_cost
from cbalab.models.certify import instance_tolerance
from cbalab.models.exact_reference import cost_optimum, welfare_optimum
from cbalab.models.instance import Instance

#: The P2 methods checked; those with a referee-scored ``optimal`` claim about P2 are in :data:`P2_CLAIMS`.
WELFARE_METHODS = ("autocba", "lp", "milp", "milp-stall", "gavel-tput", "optimus")

#: Methods whose ``optimal`` claims the P2 optimum.  ``milp-stall`` claims P2s's, which is at least P2's, so
#: its ``optimal`` below P2's optimum is wrong too (it is checked the same way).
P2_CLAIMS = ("autocba", "milp", "milp-stall")

#: The P1 methods checked.
COST_METHODS = ("cba", "lp", "milp", "flow", "io-only", "cache-all", "coordl", "quiver", "silod")

#: The P1 methods whose status is a claim about the optimum (a baseline's ``infeasible`` only says that the
#: referee refused its own allocation).
P1_CLAIMS = ("cba", "lp", "milp", "flow")

#: Decades of the unit factors (the magnitudes the fuzz reaches).
LOW, HIGH = -12.0, 22.0


def units(rng: np.random.Generator, problem: str) -> Units:
    """Each factor 1 or 10^x, x uniform in [LOW, HIGH], with even odds (magnitude_fuzz.units at this range)."""
    return magnitude_fuzz.units(rng, problem, LOW, HIGH)


def welfare_case(rng: np.random.Generator) -> Instance:
    """A tiny P2 instance: 1–5 jobs of up to 4 options on 1–3 datasets, tight to loose limits (the enumeration of
    models/exact_reference.py takes at most 5^5 option choices)."""
    return magnitude_fuzz.welfare_case(rng, most_jobs=5)


def cost_case(rng: np.random.Generator) -> Instance:
    """A tiny continuous P1 instance: 1–5 jobs on 1–4 datasets, any cache and cap."""
    return generate_cost(
        int(rng.integers(1, 6)),
        int(rng.integers(1, 5)),
        int(rng.integers(0, 2**31)),
        cache_fraction=float(rng.choice([0.0, 0.05, 0.2, 1.0])),
        bandwidth_fraction=rng.choice(np.array([None, 0.3, 0.6, 0.9], dtype=object)),
    )


@dataclass(frozen=True)
class Exact:
    """The exact optimum under the written limits and under the accepted ones (None: infeasible)."""

    written: Fraction | None
    accepted: Fraction | None


def exact(inst: Instance, problem: str) -> Exact:
    """The exact optima of ``inst`` (models/exact_reference.py)."""
    if problem == "welfare":
        return Exact(welfare_optimum(inst, "written"), welfare_optimum(inst, "accepted"))
    return Exact(cost_optimum(inst, "written"), cost_optimum(inst, "accepted"))


def wrong(inst: Instance, problem: str, method: str, doc: dict[str, Any], score: float | None, opt: Exact) -> list[str]:
    """What is wrong in ``method``'s answer ``doc`` (referee score ``score``, None if refused): a line each."""
    minimise = problem == "cost"
    bad = []
    status, bound = doc["status"], doc["bound"]
    if bound is not None and opt.accepted is not None:
        beyond = Fraction(bound) > opt.accepted if minimise else Fraction(bound) < opt.accepted
        if beyond:
            bad.append(f"bound {bound!r} is beyond the exact optimum {float(opt.accepted)!r}")
    claims = method in (P1_CLAIMS if minimise else P2_CLAIMS)
    if status == "infeasible" and claims and opt.written is not None:
        bad.append(f"infeasible, but the exact optimum is {float(opt.written)!r}")
    if status == "optimal" and claims and score is not None and opt.written is not None:
        tol = instance_tolerance(inst, problem, score)
        off = Fraction(score) - opt.written
        if (off > Fraction(tol)) if minimise else (-off > Fraction(tol)):
            bad.append(f"optimal at {score!r}, {float(abs(off)):.3g} from the exact {float(opt.written)!r}")
    return bad


def run(n_welfare: int, n_cost: int, seed: int) -> tuple[int, int, Counter, float, float]:
    """The fuzz: ``n_welfare`` P2 and ``n_cost`` P1 cases from ``seed``.

    Returns the number of wrong answers, the number of bounds compared, the status counts per (problem, method,
    status), and the wall and CPU seconds.
    """
    rng = np.random.default_rng(seed)
    begin, cpu = time.perf_counter(), time.process_time()
    statuses: Counter = Counter()
    bad = bounds = 0
    for problem, count in (("welfare", n_welfare), ("cost", n_cost)):
        for i in range(count):
            base = welfare_case(rng) if problem == "welfare" else cost_case(rng)
            u = units(rng, problem)
            inst = in_units(base, u)
            opt = exact(inst, problem)
            for method in WELFARE_METHODS if problem == "welfare" else COST_METHODS:
                doc, ev = registry.run(inst, problem, method)
                statuses[(problem, method, doc["status"])] += 1
                bounds += doc["bound"] is not None
                score = None
                if ev is not None and ev.feasible:
                    score = ev.cost_total if problem == "cost" else float(ev.welfare or 0.0)
                for line in wrong(inst, problem, method, doc, score, opt):
                    bad += 1
                    print(f"{problem} case {i} {method} units {u}: {line}", flush=True)
    return bad, bounds, statuses, time.perf_counter() - begin, time.process_time() - cpu


def measure(*, welfare: int = 200, cost: int = 200, seed: int = 0) -> dict[str, Any]:
    """Run the fuzz (``welfare`` and ``cost`` cases from ``seed``; each wrong answer printed as found) and return
    its counts; ``ok`` is False if it found any (``cbalab bench exact-fuzz`` then exits 1)."""
    bad, bounds, statuses, seconds, cpu = run(welfare, cost, seed)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for (problem, method, status), n in sorted(statuses.items()):
        counts.setdefault(problem, {}).setdefault(method, {})[status] = n
    return {
        "welfare_cases": welfare,
        "cost_cases": cost,
        "seed": seed,
        "magnitudes": [10.0**LOW, 10.0**HIGH],
        "statuses": counts,
        "bounds_compared": bounds,
        "wrong": bad,
        "wall_seconds": seconds,
        "cpu_seconds": cpu,
        "ok": bad == 0,
    }
