"""The public API of cbalab, re-exported by ``cbalab/__init__.py``: enough for a notebook with no other import.

Load, build or generate an instance, list the registered methods, solve with
any of them by name, and read the answer as the ``cbalab/result@1`` dict or
as tidy pandas frames.  Every answer is scored by the one referee
(:func:`cbalab.models.evaluate.evaluate`); no method grades itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.models.evaluate import Allocation, Evaluation, result
from cbalab.models.evaluate import evaluate as _referee
from cbalab.models.files import atomic_write_text
from cbalab.models.instance import SCHEMA, Instance, from_dict
from cbalab.models.instance import load as _load
from cbalab.models.instance import loads as _loads
from cbalab.models.types import Problem, SolveOptions, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from cbalab.experiments.replay import SimResult
    from cbalab.models.solve import Outcome


def load(path: str | Path) -> Instance:
    """Read and validate a ``cbalab/instance@1`` JSON file; InstanceError names the bad field and value."""
    return _load(path)


def loads(text: str) -> Instance:
    """Parse and validate ``cbalab/instance@1`` JSON text."""
    return _loads(text)


def save(instance: Instance, path: str | Path) -> Path:
    """Write ``instance`` as ``cbalab/instance@1`` JSON, atomically (temp file in the same folder, then rename)."""
    return atomic_write_text(path, instance.dumps() + "\n")


def _plain(value: Any) -> Any:
    """A JSON-like Python value for a cell of a dict or DataFrame row (numpy scalars unwrapped, NaN dropped)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return value


def _records(table: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows as dicts; a cell that is a missing scalar (NaN/None) is left out, so the field takes its default."""
    rows = table.to_dict("records") if isinstance(table, pd.DataFrame) else [dict(r) for r in table]
    out = []
    for row in rows:
        clean = {}
        for key, value in row.items():
            v = _plain(value)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            clean[str(key)] = v
        out.append(clean)
    return out


def build_instance(
    jobs: pd.DataFrame | Iterable[Mapping[str, Any]],
    datasets: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    cache_gb: float,
    prices: Mapping[str, float] | tuple[float, float, float],
    gpus: int | None = None,
    bandwidth_gbps: float | None = None,
    budget_per_hour: float | None = None,
    cache_granularity: str | Mapping[str, float] = "continuous",
    bandwidth_step_gbps: float | None = None,
) -> Instance:
    """An instance from job and dataset tables (pandas DataFrames or lists of dicts), validated like JSON input.

    Job rows carry ``id``, ``dataset`` and either ``gpus`` + ``io_gbps`` (the
    cost problem, docs/model.md §4) or ``options``, a list of
    ``{"gpus", "io_gbps", "utility"}`` (the welfare problem, §5); dataset rows
    carry ``id`` and ``size_gb``.  ``prices`` is ``(gpu, cache, bandwidth)``
    per hour or the dict of the JSON format.  A bad value raises
    InstanceError naming the field, e.g. ``jobs[3].io_gbps``.
    """
    if isinstance(prices, Mapping):
        price_doc = {k: _plain(v) for k, v in prices.items()}
    else:
        p_g, p_c, p_b = prices
        price_doc = {"gpu_per_hour": p_g, "cache_gb_per_hour": p_c, "bandwidth_gbps_per_hour": p_b}
    cluster: dict[str, Any] = {
        "gpus": gpus,
        "cache_gb": _plain(cache_gb),
        "bandwidth_gbps": _plain(bandwidth_gbps),
        "cache_granularity": dict(cache_granularity) if isinstance(cache_granularity, Mapping) else cache_granularity,
        "bandwidth_step_gbps": _plain(bandwidth_step_gbps),
    }
    doc = {
        "schema": SCHEMA,
        "cluster": cluster,
        "prices": price_doc,
        "budget_per_hour": _plain(budget_per_hour),
        "datasets": _records(datasets),
        "jobs": _records(jobs),
    }
    return from_dict(doc)


def generate(kind: str = "cost", *, jobs: int = 50, datasets: int = 10, seed: int = 0, **kw: Any) -> Instance:
    """A seeded synthetic instance: ``kind="cost"`` (P1) or ``"welfare"`` (P2); ``kw`` go to the generator.

    Wraps ``cbalab.experiments.workload.generate_cost`` / ``generate_welfare``
    (Philly GPU shares, Zipf dataset popularity; see their docstrings).
    """
    from cbalab.experiments import workload

    if kind == Problem.COST:
        return workload.generate_cost(jobs, datasets, seed, **kw)
    if kind == Problem.WELFARE:
        return workload.generate_welfare(jobs, datasets, seed, **kw)
    raise ValueError(f'kind must be "cost" or "welfare", got {kind!r}')


def methods(problem: str | None = None) -> pd.DataFrame:
    """The registered methods (all, or those of ``problem``) with their properties, one row each."""
    rows = [
        {
            "problem": str(m.problem),
            "name": m.name,
            "kind": str(m.kind),
            "exact": m.exact,
            "aggregable": m.aggregable,
            "takes_cache_policy": m.takes_cache_policy,
            "summary": m.summary,
        }
        for m in registry.select(problem)
    ]
    return pd.DataFrame(
        rows, columns=["problem", "name", "kind", "exact", "aggregable", "takes_cache_policy", "summary"]
    )


@dataclass(frozen=True)
class Result:
    """A method's answer on an instance, scored by the referee (docs/model.md §3 and §5).

    ``status`` is the method's claim, demoted to ``infeasible`` when the
    referee finds a violation; ``objective`` is the referee's total cost
    ($/h, cost problem) or welfare (welfare problem); ``bound`` the method's
    proven bound or None.
    """

    instance: Instance
    problem: Problem
    method: str
    allocation: Allocation
    evaluation: Evaluation | None
    document: dict[str, Any]

    @property
    def status(self) -> Status:
        """The status of the result document."""
        return Status(self.document["status"])

    @property
    def objective(self) -> float | None:
        """Total cost in $/h (cost problem) or welfare (welfare problem), as the referee computes it."""
        value = self.document["objective"]
        return None if value is None else float(value)

    @property
    def bound(self) -> float | None:
        """The method's proven bound on the optimum (lower for cost, upper for welfare), or None."""
        value = self.document["bound"]
        return None if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        """The ``cbalab/result@1`` document (a copy)."""
        return dict(self.document)

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job: its dataset, GPUs, data rate, bandwidth, hit ratio, stall factor and time share."""
        inst, alloc, ev = self.instance, self.allocation, self.evaluation
        n = inst.n_jobs
        bw = np.asarray(alloc.bandwidth_gbps, float) if alloc.has_allocation else np.full(n, np.nan)
        frame = pd.DataFrame(
            {
                "job": list(inst.job_ids),
                "dataset": [inst.dataset_ids[int(k)] for k in inst.job_dataset],
                "gpus": np.asarray(alloc.gpus, dtype=np.int64) if alloc.has_allocation else np.zeros(n, np.int64),
                "rate_gbps": ev.rate_gbps if ev is not None else np.full(n, np.nan),
                "bandwidth_gbps": bw,
                "hit_ratio": ev.hit_ratio[inst.job_dataset] if ev is not None else np.full(n, np.nan),
                "stall_factor": ev.stall_factor if ev is not None else np.full(n, np.nan),
                "time_share": ev.time_share if ev is not None else np.full(n, np.nan),
            }
        )
        return frame

    def to_frame(self) -> pd.DataFrame:
        """Alias of :meth:`jobs_frame`."""
        return self.jobs_frame()

    def datasets_frame(self) -> pd.DataFrame:
        """One row per dataset: size, cache, hit ratio, demand Σ r_j of its jobs and their bandwidth."""
        inst, alloc, ev = self.instance, self.allocation, self.evaluation
        k = inst.n_datasets
        rates = ev.rate_gbps if ev is not None else np.zeros(inst.n_jobs)
        bw = np.asarray(alloc.bandwidth_gbps, float) if alloc.has_allocation else np.zeros(inst.n_jobs)
        return pd.DataFrame(
            {
                "dataset": list(inst.dataset_ids),
                "size_gb": inst.dataset_size_gb,
                "cache_gb": np.asarray(alloc.cache_gb, float) if alloc.has_allocation else np.full(k, np.nan),
                "hit_ratio": ev.hit_ratio if ev is not None else np.full(k, np.nan),
                "demand_gbps": np.bincount(inst.job_dataset, weights=rates, minlength=k),
                "bandwidth_gbps": np.bincount(inst.job_dataset, weights=bw, minlength=k),
                "jobs": np.bincount(inst.job_dataset, minlength=k),
            }
        )

    def plot(self, ax: Axes | None = None, jobs_ax: Axes | None = None) -> Axes:
        """Draw the allocation: per dataset, cache against size and remote bandwidth against demand; per job, bandwidth.

        On ``ax`` (per dataset): grey bars are the dataset's size (GB) and its
        jobs' demand Σ r_j (GB/s, right axis), coloured bars what is cached
        and what is read remotely.  On ``jobs_ax`` (per job): rate r_j against
        bandwidth b_j, so a job with b_j < r_j (1 − h) is visibly short.  With
        no axes given, a new figure holds both panels; with only ``ax``, only
        the dataset panel is drawn.  Returns ``ax`` (its ``.figure`` holds both).
        """
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:
            fig, (ax, jobs_ax) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 1.3]})
        ds = self.datasets_frame()
        x = np.arange(len(ds))
        ax.bar(x - 0.2, ds["size_gb"], width=0.4, label="size (GB)", color="0.8")
        ax.bar(x - 0.2, ds["cache_gb"].fillna(0.0), width=0.4, label="cache (GB)", color="tab:blue")
        twin = ax.twinx()
        twin.bar(x + 0.2, ds["demand_gbps"], width=0.4, label="demand Σ r_j (GB/s)", color="0.6")
        twin.bar(x + 0.2, ds["bandwidth_gbps"], width=0.4, label="remote bandwidth (GB/s)", color="tab:orange")
        ax.set_xticks(x, ds["dataset"], rotation=30 if len(ds) <= 12 else 90, ha="right")
        ax.set_ylabel("GB")
        twin.set_ylabel("GB/s")
        ax.set_ylim(0, 1.35 * max(float(ds["size_gb"].max()), 1e-12))
        twin.set_ylim(0, 1.35 * max(float(ds["demand_gbps"].max()), 1e-12))
        objective = "none" if self.objective is None else f"{self.objective:.6g}"
        ax.set_title(f"{self.method} ({self.problem}): {self.status}, objective {objective}")
        ax.legend(loc="upper left", fontsize="small")
        twin.legend(loc="upper right", fontsize="small")
        if jobs_ax is not None:
            jf = self.jobs_frame()
            y = np.arange(len(jf))
            jobs_ax.barh(y + 0.2, jf["rate_gbps"], height=0.4, color="0.6", label="rate r_j (GB/s)")
            jobs_ax.barh(y - 0.2, jf["bandwidth_gbps"], height=0.4, color="tab:orange", label="bandwidth b_j (GB/s)")
            jobs_ax.set_yticks(y, [f"{j} ({k})" for j, k in zip(jf["job"], jf["dataset"])])
            jobs_ax.invert_yaxis()
            jobs_ax.set_xlabel("GB/s")
            jobs_ax.set_title("per job: data rate and remote bandwidth")
            jobs_ax.legend(loc="best", fontsize="small")
        if fig is not None:
            fig.tight_layout()
        return ax


def _infer_problem(method: str) -> Problem:
    found = {m.problem for m in registry.all_methods() if m.name == method}
    if not found:
        known = sorted({m.name for m in registry.all_methods()})
        raise ValueError(f"method: no method {method!r}; known: {', '.join(known)}")
    if len(found) > 1:
        raise ValueError(f"method {method!r} serves {sorted(found)}: pass problem=")
    return found.pop()


def solve(
    instance: Instance,
    method: str,
    problem: str | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with the registered ``method`` and have the referee score the answer.

    ``problem`` ("cost" or "welfare") may be left out when the method serves
    only one.  ``options`` are fields of SolveOptions (``mip_gap``,
    ``threads``, ``cache_policy``); exact methods use them, fast ones may not.
    """
    prob = _infer_problem(method) if problem is None else Problem(problem)
    entry = registry.get(prob, method)
    opts = SolveOptions(time_limit=time_limit, **options)
    start = time.perf_counter()
    alloc = entry.function()(instance, opts)
    seconds = time.perf_counter() - start
    doc, ev = result(instance, prob, method, alloc, seconds)
    return Result(instance, prob, method, alloc, ev, doc)


def evaluate(instance: Instance, allocation: Allocation, problem: str) -> Evaluation:
    """The referee (docs/model.md §3–§5): feasibility, costs, hit ratios, stalls and welfare of ``allocation``."""
    return _referee(instance, allocation, Problem(problem))


def build_model(instance: Instance, problem: str, relax: bool = False) -> Any:
    """The Pyomo model (a ``pyomo.environ.ConcreteModel``) of P1 (``problem="cost"``, docs/model.md §4) or P2
    (``"welfare"``, §5) for ``instance``.

    The same model the ``milp`` method solves (``relax=True``: the ``lp``
    method's relaxation), for reading: ``model.pprint()`` prints every
    variable and constraint, e.g. P2's McCormick rows ``w_below_y``,
    ``w_below_h`` and ``w_above`` (proofs/mccormick_exact.md).  Pyomo is
    imported here, so ``import cbalab`` stays light.
    """
    prob = Problem(problem)
    if prob == Problem.COST:
        from cbalab.models.milp.cost import build_cost_model

        return build_cost_model(instance, relax=relax)
    from cbalab.models.milp.welfare import build_welfare_model

    return build_welfare_model(instance, relax=relax)


def solve_model(model: Any, time_limit: float | None = None, **options: Any) -> Outcome:
    """Solve a model of :func:`build_model` with HiGHS (MIP gap 0 unless ``mip_gap`` is given); loads its values.

    Returns the solver's ``Outcome`` (status, objective, bound, message); the
    variables then hold the solution (``model.y[0].value``).  This is the raw
    model's answer, not scored by the referee: :func:`solve` is the scored path.
    """
    from cbalab.models.solve import solve_model as _solve_model

    return _solve_model(model, SolveOptions(time_limit=time_limit, **options))


@dataclass(frozen=True)
class ReplayResult:
    """A trace replay (docs/model.md §6): per-job table, per-event time series and summary, with a plot.

    ``jobs`` has one row per job (start, end, JCT, queueing, stall seconds and
    its share of the cost); ``timeseries`` one row per event, its values
    holding until the next row (running and queued jobs, GPUs busy, cache
    allocated ``cache_gb`` and filled ``cache_filled_gb``, remote bandwidth,
    spend rates in $/h); ``summary`` the ``cbalab/simulation@1`` document;
    ``datasets`` the datasets of the workload (``dataset``, ``size_gb``), the
    jobs' ``dataset`` column names them.
    """

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]
    datasets: pd.DataFrame

    def write(self, out_dir: str | Path) -> Path:
        """Write jobs.csv, timeseries.csv and summary.json into ``out_dir``, atomically (summary last)."""
        from cbalab.experiments.replay import SimResult

        return SimResult(self.jobs, self.timeseries, dict(self.summary)).write(out_dir)

    def plot(self, axes: Any = None, label: str | None = None) -> Any:
        """Cache (allocated and filled), remote bandwidth and spend rate over time, three stacked panels.

        The series are step functions: each value holds until the next event
        (the replay serves a slot from the cache filled at its start, and a
        slot ends when a cache reaches its target, docs/model.md §6).  Legends
        sit right of the panels.  Pass the ``axes`` of an earlier call (three
        Axes) to draw several replays on the same panels; ``label`` names this
        one (default: its policy).  Returns the three Axes.
        """
        import matplotlib.pyplot as plt

        if axes is None:
            _, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
        name = label or str(self.summary.get("policy", "replay"))
        ts = self.timeseries
        hours = ts["time_s"].to_numpy(float) / 3600.0
        cache_ax, bw_ax, cost_ax = axes
        line = cache_ax.step(hours, ts["cache_filled_gb"], where="post", label=f"{name}: filled")[0]
        cache_ax.step(
            hours, ts["cache_gb"], where="post", linestyle=":", color=line.get_color(), label=f"{name}: target"
        )
        bw_ax.step(hours, ts["bandwidth_gbps"], where="post", color=line.get_color(), label=name)
        if "gpu_cost_per_hour" in ts:
            spend, what = ts["cost_per_hour"] - ts["gpu_cost_per_hour"], "IO spend ($/h)"
        else:  # the elastic replay: GPUs are chosen too, so the whole spend is the decision
            spend, what = ts["spend_per_hour"], "spend ($/h)"
        cost_ax.step(hours, spend, where="post", color=line.get_color(), label=name)
        cache_ax.set_ylabel("cache (GB)")
        bw_ax.set_ylabel("remote IO (GB/s)")
        cost_ax.set_ylabel(what)
        cost_ax.set_xlabel("time (h)")
        for ax in axes:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        return axes


def simulate(
    trace: str | Path | pd.DataFrame | int,
    policy: str = "cba",
    *,
    gpus: int = 768,
    cache_gb: float = 500.0,
    bandwidth_gbps: float | None = None,
    prices: tuple[float, float, float] | None = None,
    warmup: bool = True,
    period_s: float | None = None,
    seed: int = 0,
    skew: float = 1.0,
    n_datasets: int = 48,
    gpu_type: str | None = None,
    problem: str = "cost",
    budget_per_hour: float | None = None,
    budget_fraction: float = 0.5,
    cache_policy: str | None = None,
    utility_mix: str = "mixed",
) -> ReplayResult:
    """Replay a job trace on a cluster of ``gpus`` GPUs under a cost ``policy`` (docs/model.md §6).

    ``trace`` is a trace file (generic CSV or Philly), a DataFrame in the
    generic CSV form (``submit_time_s``, ``duration_s``, ``gpus`` and
    optionally ``job_id``, ``model``, ``dataset``; it is validated exactly
    like a file, so a bad row names its line and column), or a number of jobs
    to generate (Philly-calibrated).  ``policy`` is any cost method (``cba``,
    ``io-only``, ``cache-all``, ``coordl``, ``quiver``, ``silod``, ...);
    ``prices`` (p_g, p_c, p_b) default to the package's.  The other
    arguments are those of ``cbalab simulate`` (README "Commands").

    ``problem="welfare"`` is the elastic replay (docs/model.md §6b): every job
    gets a seeded utility table (``utility_mix``), and ``policy`` (``autocba``,
    ``gavel-tput``, ``gavel-fair``, ``optimus`` and their ``-tuned``
    versions, fed by ``cache_policy``, None: ``silod``; autocba sets its caches
    itself and takes none) chooses GPUs, cache and bandwidth under
    ``budget_per_hour`` (or ``budget_fraction`` of the reference spend).
    """
    import tempfile

    from cbalab.experiments.simulate import SimConfig
    from cbalab.experiments.simulate import simulate as _simulate
    from cbalab.experiments.workload import DEFAULT_PRICES, make_workload

    prob = Problem(problem)
    if prob == Problem.COST:
        try:
            registry.get(Problem.COST, policy)
        except KeyError as e:
            raise ValueError(f"policy: {e.args[0]}") from None
    kw: dict[str, Any] = {"seed": seed, "skew": skew, "n_datasets": n_datasets, "gpu_type": gpu_type}
    if isinstance(trace, bool):
        raise ValueError(f"trace: a trace file, a DataFrame or a number of jobs, got {trace!r}")
    if isinstance(trace, pd.DataFrame):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "trace.csv"
            trace.to_csv(path, index=False)
            workload = make_workload(trace=path, **kw)
        workload.jobs.attrs["source"] = "DataFrame"
    elif isinstance(trace, int):
        workload = make_workload(n_jobs=trace, **kw)
    else:
        workload = make_workload(trace=trace, **kw)
    price_tuple = DEFAULT_PRICES if prices is None else (float(prices[0]), float(prices[1]), float(prices[2]))
    if prob == Problem.WELFARE:
        return _simulate_elastic(
            workload,
            policy,
            gpus=gpus,
            cache_gb=cache_gb,
            bandwidth_gbps=bandwidth_gbps,
            prices=price_tuple,
            warmup=warmup,
            period_s=period_s,
            seed=seed,
            gpu_type=gpu_type,
            budget_per_hour=budget_per_hour,
            budget_fraction=budget_fraction,
            cache_policy=cache_policy,
            utility_mix=utility_mix,
        )
    cfg = SimConfig(
        policy=policy,
        gpus=gpus,
        cache_gb=cache_gb,
        bandwidth_gbps=math.inf if bandwidth_gbps is None else bandwidth_gbps,
        prices=price_tuple,
        warmup=warmup,
        period_s=period_s,
        seed=seed,
    )
    out: SimResult = _simulate(workload, cfg)
    return ReplayResult(out.jobs, out.timeseries, out.summary, workload.datasets.copy())


def _simulate_elastic(
    workload: Any,
    policy: str,
    *,
    gpus: int,
    cache_gb: float,
    bandwidth_gbps: float | None,
    prices: tuple[float, float, float],
    warmup: bool,
    period_s: float | None,
    seed: int,
    gpu_type: str | None,
    budget_per_hour: float | None,
    budget_fraction: float,
    cache_policy: str | None,
    utility_mix: str,
) -> ReplayResult:
    """The elastic replay of :func:`simulate` (``problem="welfare"``), as ``cbalab simulate --problem welfare``."""
    from cbalab.experiments.elastic import ElasticConfig, replay
    from cbalab.experiments.workload.elastic import UtilityMix, elastic

    try:
        registry.get(Problem.WELFARE, policy)
    except KeyError:
        known = ", ".join(registry.names(Problem.WELFARE))
        raise ValueError(f"policy: {policy!r} is not a welfare policy; known: {known}") from None
    elastic_workload = elastic(workload, seed, UtilityMix.parse(utility_mix), gpu_type=gpu_type)
    cfg = ElasticConfig(
        policy=policy,
        cache_policy=cache_policy,
        gpus=gpus,
        cache_gb=cache_gb,
        bandwidth_gbps=math.inf if bandwidth_gbps is None else bandwidth_gbps,
        prices=prices,
        budget_per_hour=budget_per_hour,
        budget_fraction=budget_fraction,
        period_s=period_s,
        warmup=warmup,
        seed=seed,
    )
    out = replay(elastic_workload, cfg)
    return ReplayResult(out.jobs, out.timeseries, out.summary, workload.datasets.copy())
