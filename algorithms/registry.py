"""The one registry of cbalab: every method, cache policy and GPU scheduler, by (problem, name).

Every entry is called the same way, ``function(instance, options) -> Allocation``
with ``options`` a :class:`cbalab.models.types.SolveOptions` that a fast
method may ignore.  Entries name their function as ``"module:function"`` and
are imported on first use, so that ``cbalab solve --method cba`` never pays
for importing Pyomo, and so that algorithms/ never imports it.

An entry's properties are fields: the problem it answers, whether it is exact
(solved by HiGHS at MIP gap 0, so that its ``optimal`` is the solver's proof for
the model it builds, for ``lp`` the relaxation), the instances on which its
answer is proven optimal (``optimal_on``: CBA on continuous P1, Theorem 1), its
kind (a plain method, a cost method that also serves as a cache policy feeding
a GPU scheduler, or a GPU scheduler), whether it may be
solved on dataset-aggregated demand (it depends on the running jobs only
through R_k, docs/model.md §4), whether it takes a cache policy, and how a
replay runs it online (algorithms/online.py): every entry is an online policy,
re-solved at every event unless ``online`` names its stateful class.  A cost
policy without one may name its rule on arrays, which a replay
(experiments/simulate.py) calls at every event instead of building an instance
and an Allocation: an aggregable policy its rule on the per-dataset demands R_k
(``on_demand``), a per-job one (its answer reads the jobs one by one, as
Quiver's and CoorDL's do) its rule on the running jobs' datasets and rates
(``on_jobs``).  Each rule is the entry's function stated once on arrays, which
the function itself calls too, so the two give the same numbers to the last
bit (tests/test_shared_replays.py, tests/test_perjob_rules.py).
:func:`select` queries them; :func:`run` is the one way to call a method: it
times the call and has the answer scored by the referee (models/evaluate.py).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from cbalab.algorithms.online import OnlinePolicy, Resolved
from cbalab.models.evaluate import Allocation, Evaluation, result
from cbalab.models.instance import Instance
from cbalab.models.types import Problem, SolveOptions

#: The one call signature of every registered function.
MethodFunction = Callable[[Instance, SolveOptions], Allocation]
#: An aggregable cost policy's rule on arrays (:meth:`Method.demand_rule`): (d, R, C, B, p_c, p_b) -> (cache per
#: dataset, bandwidth per dataset), or None when infeasible.
DemandRule = Callable[[np.ndarray, np.ndarray, float, float, float, float], "tuple[np.ndarray, np.ndarray] | None"]
#: A per-job cost policy's rule on arrays (:meth:`Method.job_rule`): (d, kj, r, C, B, p_c, p_b) -> (cache per
#: dataset, bandwidth per dataset), or None when infeasible.
JobRule = Callable[
    [np.ndarray, np.ndarray, np.ndarray, float, float, float, float], "tuple[np.ndarray, np.ndarray] | None"
]
#: A replay's division of a capped link (:meth:`Method.cap_rule`): (need, demand, share, B) -> (bandwidth, speed).
CapRule = Callable[[np.ndarray, np.ndarray, float, float], "tuple[np.ndarray, np.ndarray]"]


def proportional_share(need: np.ndarray, demand: np.ndarray, share: float, B: float) -> tuple[np.ndarray, np.ndarray]:
    """The default division of a capped link: every reading dataset gets ``share`` = B / Σ need of its need and
    runs at that speed (docs/model.md §3, the stall factor); what a shared link without a scheduler of its own
    gives its flows in the replay (io-only, cache-all, coordl, quiver, CBA)."""
    return need * share, np.where(need > 0, share, 1.0)


class Kind(StrEnum):
    """What an entry is: a method, a cost method that can feed a GPU scheduler's GPUs, or a GPU scheduler."""

    METHOD = "method"
    CACHE_POLICY = "cache-policy"
    GPU_SCHEDULER = "gpu-scheduler"


@dataclass(frozen=True)
class Method:
    """One registered entry: its CLI name, the problem it answers, where its function lives, and its properties.

    ``online`` ("module:Class", or None) is the entry's stateful online form; ``restart_aware`` says that the
    elastic replay hands it restart-aware utilities (docs/model.md §6b, "Reallocation is not free").
    """

    name: str
    problem: Problem
    target: str
    summary: str
    exact: bool = False
    kind: Kind = Kind.METHOD
    aggregable: bool = False
    takes_cache_policy: bool = False
    online: str | None = None
    optimal_on: str = ""
    restart_aware: bool = False
    on_demand: str | None = None
    on_cap: str | None = None
    on_jobs: str | None = None

    def online_policy(self, options: SolveOptions) -> OnlinePolicy:
        """A fresh online form of the entry for one replay (algorithms/online.py): its ``online`` class made with
        ``options``, else the static function re-solved at every event (:class:`~cbalab.algorithms.online.Resolved`).
        """
        if self.online is None:
            return Resolved(self.function(), options)
        module, name = self.online.split(":")
        cls: Callable[[SolveOptions], OnlinePolicy] = getattr(importlib.import_module(module), name)
        return cls(options)

    def demand_rule(self) -> DemandRule | None:
        """The entry's answer as a function of the per-dataset demands alone (``on_demand``, "module:function"), or
        None.

        An aggregable cost policy answers the aggregate instance (one pseudo-job of rate R_k per dataset,
        docs/model.md §4) by a rule on arrays: ``(d, R, C, B, p_c, p_b) -> (cache per dataset, bandwidth per
        dataset)``, or None when infeasible; the very numbers the entry's function gives on that instance
        (tests/test_registry.py).  A replay (experiments/simulate.py) calls it at every event instead of building
        an instance, when the entry has no stateful ``online`` form.
        """
        if self.on_demand is None:
            return None
        module, func = self.on_demand.split(":")
        rule: DemandRule = getattr(importlib.import_module(module), func)
        return rule

    def job_rule(self) -> JobRule | None:
        """The entry's answer as a function of the running jobs' arrays (``on_jobs``, "module:function"), or None.

        A cost policy that is not aggregable (its answer depends on the jobs one by one, not only on R_k,
        docs/model.md §4) answers the instance of the running jobs by a rule on arrays: ``(d, kj, r, C, B, p_c,
        p_b) -> (cache per dataset, bandwidth per dataset)``, or None when infeasible, with ``kj`` and ``r`` the
        jobs' datasets and rates in the instance's job order; the cache the entry's function gives on that
        instance with a continuous cache and its per-job bandwidths summed per dataset in that order
        (tests/test_perjob_rules.py).  The jobs' GPUs are not passed: in P1 they are fixed, and no cost policy's
        cache or bandwidth reads them.  A replay (experiments/simulate.py) calls it at every event instead of
        building an instance, when the entry has no stateful ``online`` form.
        """
        if self.on_jobs is None:
            return None
        module, func = self.on_jobs.split(":")
        rule: JobRule = getattr(importlib.import_module(module), func)
        return rule

    def cap_rule(self) -> CapRule:
        """How the entry's replay divides a capped remote link among its datasets when their need exceeds B
        (``on_cap``, "module:function"; default :func:`proportional_share`), docs/methods/cache-baselines.md.

        A rule ``(need, demand, share, B) -> (bandwidth, speed)`` per dataset: ``need`` the remote IO that would
        feed every job unstalled, ``demand`` R_k, ``share`` = B / Σ need; the bandwidth sums to at most B and
        each speed is bandwidth / need (1 where nothing is needed).  experiments/simulate.py consults it only
        when Σ need > B, so uncapped replays never see it.
        """
        if self.on_cap is None:
            return proportional_share
        module, func = self.on_cap.split(":")
        rule: CapRule = getattr(importlib.import_module(module), func)
        return rule

    def function(self) -> MethodFunction:
        """Import and return the entry's function ``(instance, options=SolveOptions()) -> Allocation``."""
        module, func = self.target.split(":")
        fn: MethodFunction = getattr(importlib.import_module(module), func)
        return fn


_METHODS: dict[tuple[Problem, str], Method] = {}


def register(
    name: str,
    problem: str,
    target: str,
    summary: str,
    *,
    exact: bool = False,
    kind: Kind = Kind.METHOD,
    aggregable: bool = False,
    online: str | None = None,
    optimal_on: str = "",
    restart_aware: bool = False,
    on_demand: str | None = None,
    on_cap: str | None = None,
    on_jobs: str | None = None,
) -> None:
    """Add an entry to the registry; a (problem, name) pair may be registered once.

    ``optimal_on`` names the instances on which the method's answer is proven optimal, with the theorem
    ("" when on none beyond what ``exact`` says).  A rule on the demands (``on_demand``) needs an aggregable
    entry and a rule on the jobs (``on_jobs``) one that is not: the replay asks an aggregable policy for R_k
    alone, a per-job one with the running jobs.
    """
    key = (Problem(problem), name)
    if key in _METHODS:
        raise ValueError(f"method {name!r} is already registered for problem {problem!r}")
    if (on_demand is not None and not aggregable) or (on_jobs is not None and aggregable):
        raise ValueError(f"method {name!r}: on_demand needs aggregable=True and on_jobs aggregable=False")
    _METHODS[key] = Method(
        name,
        Problem(problem),
        target,
        summary,
        exact=exact,
        kind=Kind(kind),
        aggregable=aggregable,
        takes_cache_policy=kind == Kind.GPU_SCHEDULER,
        online=online,
        optimal_on=optimal_on,
        restart_aware=restart_aware,
        on_demand=on_demand,
        on_cap=on_cap,
        on_jobs=on_jobs,
    )


register(
    "cba",
    "cost",
    "cbalab.algorithms.cba:cba",
    "CBA closed form (Theorem 1), integer variants by rounding",
    kind=Kind.CACHE_POLICY,
    aggregable=True,
    optimal_on="continuous P1 (Theorem 1); blocks or tiers alone (Theorems I1, I2)",
    on_demand="cbalab.algorithms.cba:on_demand",
)
register(
    "lp",
    "cost",
    "cbalab.models.solve:cost_lp",
    "continuous relaxation of P1, HiGHS via Pyomo",
    exact=True,
    aggregable=True,
    optimal_on="continuous P1, where the relaxation is P1",
)
register(
    "milp",
    "cost",
    "cbalab.models.solve:cost_milp",
    "exact optimum of P1 as written, HiGHS via Pyomo",
    exact=True,
    aggregable=True,
    optimal_on="every P1 instance",
)
register(
    "flow",
    "cost",
    "cbalab.models.flow:cost_flow",
    "uncapped continuous P1 as a min-cost flow (networkx), certified",
    optimal_on="continuous P1 without a bandwidth cap",
)
# The last field names the baseline's rule on arrays: on the demands (aggregable) or on the jobs; None: neither.
for _name, _module, _summary, _aggregable, _rule in (
    ("io-only", "io_only", "no cache, all remote IO (docs/model.md §7)", True, "on_demand"),
    (
        "cache-all",
        "cache_all",
        "whole datasets FIFO by first reference until C is full (Alluxio/Fluid-like)",
        False,
        "on_jobs",
    ),
    ("coordl", "coordl", "CoorDL/MinIO private per-job cache slices, no sharing", False, "on_jobs"),
    ("quiver", "quiver", "Quiver-like benefit-aware cache, judged per job", False, "on_jobs"),
    ("silod", "silod", "SiloD-like: fill C by IO density, price-blind", True, "on_demand"),
):
    register(
        _name,
        "cost",
        f"cbalab.algorithms.baselines.{_module}:{_module}",
        _summary,
        kind=Kind.CACHE_POLICY,
        aggregable=_aggregable,
        on_demand=f"cbalab.algorithms.baselines.{_module}:on_demand" if _rule == "on_demand" else None,
        on_cap="cbalab.algorithms.baselines.silod:on_cap" if _name == "silod" else None,
        on_jobs=f"cbalab.algorithms.baselines.{_module}:on_jobs" if _rule == "on_jobs" else None,
    )
register(
    "cba-keep",
    "cost",
    "cbalab.algorithms.cba_keep:cba_keep",
    "online CBA that keeps warm caches through short lulls (rent-or-buy); statically CBA",
    aggregable=True,
    online="cbalab.algorithms.cba_keep:CbaKeep",
    optimal_on="continuous P1 as a static instance, where it is CBA (Theorem 1)",
)
register(
    "lp",
    "welfare",
    "cbalab.models.solve:welfare_lp",
    "LP relaxation of P2: its optimum as bound, rounded down",
    exact=True,
)
register(
    "milp",
    "welfare",
    "cbalab.models.solve:welfare_milp",
    "exact optimum of P2, no stalls (docs/model.md §5), array form, HiGHS",
    exact=True,
    optimal_on="every P2 instance",
)
register(
    "milp-stall",
    "welfare",
    "cbalab.models.solve:welfare_milp_stall",
    "stall-allowed reference P2s (docs/model.md §5): relaxation MILP, optimal only when realised (Theorem F3)",
    exact=True,
    optimal_on="P2s, when the referee realises its relaxation's optimum (Theorem F3)",
)
register(
    "autocba",
    "welfare",
    "cbalab.algorithms.autocba:autocba",
    "AutoCBA greedy + CBA feeding, Lagrangian certificate",
    online="cbalab.algorithms.autocba.online:OnlineAutoCBA",
    restart_aware=True,
)
for _name, _module, _summary in (
    ("gavel-tput", "gavel_tput", "Gavel max-sum-throughput, whole options (normalised throughput)"),
    ("gavel-fair", "gavel_fair", "Gavel max-min fairness: equal GPU-time shares, time-shared"),
    ("optimus", "optimus", "Optimus (Pollux artifact): one GPU each, then the largest cut in remaining time"),
    ("utility-greedy", "utility_greedy", "ablation, no scheduler: AutoCBA's utility-per-GPU greedy without IO"),
):
    register(
        _name,
        "welfare",
        f"cbalab.algorithms.baselines.{_module}:{_module}",
        _summary + "; IO-unaware, GPU cap cut to fit the bill",
        kind=Kind.GPU_SCHEDULER,
    )
    register(
        f"{_name}-tuned",
        "welfare",
        f"cbalab.algorithms.baselines.{_module}:{_module}_tuned",
        _summary.split(":")[0] + ", oracle envelope: best of every GPU/IO budget split (referee-scored)",
        kind=Kind.GPU_SCHEDULER,
    )


def all_methods() -> list[Method]:
    """Every registered entry, in registration order."""
    return list(_METHODS.values())


def select(
    problem: str | None = None,
    *,
    kind: str | None = None,
    aggregable: bool | None = None,
    exact: bool | None = None,
) -> list[Method]:
    """The entries that match every given property (None: any), in registration order."""
    return [
        m
        for m in _METHODS.values()
        if (problem is None or m.problem == problem)
        and (kind is None or m.kind == kind)
        and (aggregable is None or m.aggregable == aggregable)
        and (exact is None or m.exact == exact)
    ]


def names(problem: str) -> list[str]:
    """Names of the methods that answer ``problem``, in registration order."""
    return [m.name for m in select(problem)]


def cache_policies() -> list[str]:
    """Names of the cost methods that can feed a GPU scheduler's GPUs (docs/model.md §7)."""
    return [m.name for m in select(Problem.COST, kind=Kind.CACHE_POLICY)]


def get(problem: str, name: str) -> Method:
    """The method ``name`` for ``problem``; KeyError with the known names otherwise."""
    try:
        return _METHODS[(Problem(problem), name)]
    except (KeyError, ValueError):
        raise KeyError(f"no method {name!r} for problem {str(problem)!r}; known: {', '.join(names(problem))}") from None


def cache_policy(name: str) -> MethodFunction:
    """The function of cache policy ``name``; ValueError naming the known policies otherwise."""
    method = _METHODS.get((Problem.COST, name))
    if method is None or method.kind != Kind.CACHE_POLICY:
        raise ValueError(f"cache policy must be one of {tuple(cache_policies())}, got {name!r}")
    return method.function()


def run(
    inst: Instance,
    problem: str,
    name: str,
    *,
    time_limit: float | None = None,
    options: SolveOptions | None = None,
) -> tuple[dict[str, Any], Evaluation | None]:
    """Run a method on ``inst`` and return its scored ``cbalab/result@1`` document and the referee's Evaluation.

    ``options`` (default: ``SolveOptions(time_limit=time_limit)``) are handed to the method.
    """
    method = get(problem, name)
    fn = method.function()
    opts = options if options is not None else SolveOptions(time_limit=time_limit)
    start = time.perf_counter()
    alloc = fn(inst, opts)
    seconds = time.perf_counter() - start
    return result(inst, problem, name, alloc, seconds)
