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
        """One row per job: its dataset, GPUs, data rate, bandwidth, hit ratio and stall factor."""
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

    def plot(self, ax: Axes | None = None) -> Axes:
        """Per dataset cache vs size and demand, per job bandwidth vs rate (matplotlib, imported here)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(8, 4))
        ds = self.datasets_frame()
        x = np.arange(len(ds))
        ax.bar(x - 0.2, ds["size_gb"], width=0.4, label="size (GB)", color="0.8")
        ax.bar(x - 0.2, ds["cache_gb"].fillna(0.0), width=0.4, label="cache (GB)")
        twin = ax.twinx()
        twin.bar(x + 0.2, ds["demand_gbps"], width=0.4, label="demand (GB/s)", color="0.6")
        twin.bar(x + 0.2, ds["bandwidth_gbps"], width=0.4, label="bandwidth (GB/s)")
        ax.set_xticks(x, ds["dataset"], rotation=90)
        ax.set_ylabel("GB")
        twin.set_ylabel("GB/s")
        ax.set_title(f"{self.method} on {self.problem}: {self.status}, objective {self.objective}")
        ax.legend(loc="upper left")
        twin.legend(loc="upper right")
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
