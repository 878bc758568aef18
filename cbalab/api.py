"""The public API of cbalab, re-exported by ``cbalab/__init__.py``: enough for a notebook with no other import.

Load, build or generate an instance, list the registered methods, solve with
any of them by name, and read the answer as the ``cbalab/result@1`` dict or
as tidy pandas frames.  Every answer is scored by the one referee
(:func:`cbalab.models.evaluate.evaluate`); no method grades itself.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import numbers
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.algorithms.resolve import check_policy, choose_problem, parse_problem
from cbalab.models.evaluate import Allocation, Evaluation, Scored, score
from cbalab.models.evaluate import evaluate as _referee
from cbalab.models.files import atomic_write_text
from cbalab.models.instance import MAX_COUNT, SCHEMA, Instance, InstanceError, from_dict
from cbalab.models.instance import load as _load
from cbalab.models.instance import loads as _loads
from cbalab.models.types import Problem, SolveOptions, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from cbalab.experiments.replay import SimResult
    from cbalab.experiments.workload import Workload
    from cbalab.experiments.workload.elastic import UtilityMix
    from cbalab.experiments.workload.traces import TraceError
    from cbalab.models.solve import Outcome


def _shown(value: Any) -> Any:
    """``value`` as a one-line error message shows it: plain Python and numpy values as themselves, any other
    object by its type's name (a DataFrame's repr spans many lines)."""
    plain = _plain(value)
    if plain is None or isinstance(plain, str | int | float | list | tuple | dict):
        return plain
    return f"<{type(value).__name__}>"


def _expect(value: Any, kind: type | tuple[type, ...], name: str, what: str) -> None:
    """InstanceError naming argument ``name`` and its value unless ``value`` is a ``kind`` (``what`` in words), so
    that a wrong type fails here, not as an AttributeError or TypeError deep inside the call."""
    if not isinstance(value, kind):
        raise InstanceError(name, _shown(value), f"must be {what}")


#: What an instance argument must be, in the words of the messages.
AN_INSTANCE = "an Instance (from cbalab.load, cbalab.build_instance or cbalab.generate; a file: cbalab.load(path))"

#: What a file path argument must be, in the words of the messages.
A_PATH = "a file path (str or pathlib.Path)"


def check_path(path: Any, name: str, what: str = A_PATH) -> None:
    """InstanceError naming argument ``name`` unless ``path`` is a str or os.PathLike (``what`` in words) that is
    not empty: an empty path would read or write the current folder, or be taken for no path at all (the rule
    of the command line's ``--out``)."""
    _expect(path, (str, os.PathLike), name, what)
    if not os.fspath(path):
        raise InstanceError(name, _shown(path), "empty path: give a file or folder name")


def load(path: str | Path) -> Instance:
    """Read and validate a ``cbalab/instance@1`` JSON file; InstanceError names the bad field and value."""
    check_path(path, "path")
    return _load(path)


def loads(text: str) -> Instance:
    """Parse and validate ``cbalab/instance@1`` JSON text."""
    _expect(text, str, "text", "JSON text (a str)")
    return _loads(text)


def save(instance: Instance, path: str | Path) -> Path:
    """Write ``instance`` as ``cbalab/instance@1`` JSON, atomically (temp file in the same folder, then rename)."""
    _expect(instance, Instance, "instance", AN_INSTANCE)
    check_path(path, "path")
    return atomic_write_text(path, instance.dumps() + "\n")


def _plain(value: Any) -> Any:
    """``value`` with numpy unwrapped to plain Python, at any depth (dicts, lists, tuples, arrays), so that the
    checks that accept Python numbers accept numpy's too (np.int64(16) is 16; np.bool_ stays a bool, refused
    where a number is due); any other value is returned as it is, for the checks to judge."""
    if isinstance(value, np.generic | np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _records(table: pd.DataFrame | Iterable[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
    """Rows as dicts; a cell that is a missing scalar (NaN/None) is left out, so the field takes its default.

    InstanceError names ``name`` when ``table`` is neither a DataFrame nor an iterable of dicts, ``name[i]``
    when its row ``i`` is not a dict, or ``name.COLUMN`` when a DataFrame has two columns of that name.
    """
    if isinstance(table, str | bytes | Mapping) or not isinstance(table, pd.DataFrame | Iterable):
        raise InstanceError(name, _shown(table), "must be a DataFrame or a list of dicts, one per row")
    if isinstance(table, pd.DataFrame):
        names = [str(c) for c in table.columns]
        twice = next((c for i, c in enumerate(names) if c in names[:i]), None)
        if twice is not None:  # to_dict would keep one of the two silently
            raise InstanceError(f"{name}.{twice}", twice, "is a column twice; give each column once")
    rows = table.to_dict("records") if isinstance(table, pd.DataFrame) else list(table)
    out = []
    for i, row in enumerate(rows):
        _expect(row, Mapping, f"{name}[{i}]", "a dict of the row's fields")
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

    numpy numbers count as Python ones, in the arguments and in the rows; a GPU count may be a float with a
    whole value (16.0, as a pandas column with a missing cell holds it), as in an instance file.  ``prices`` as
    a triple (a numpy array too) follows the rule of :func:`generate` and :func:`simulate`
    (``experiments.workload.synthetic.price_triple``: finite, >= 0, at most MAX_PRICE); as a dict, the file's.
    """
    from cbalab.experiments.workload.synthetic import price_triple

    plain_prices = _plain(prices)
    if isinstance(plain_prices, Mapping):
        price_doc = dict(plain_prices)
    else:
        p_g, p_c, p_b = price_triple(plain_prices)
        price_doc = {"gpu_per_hour": p_g, "cache_gb_per_hour": p_c, "bandwidth_gbps_per_hour": p_b}
    cluster: dict[str, Any] = {
        "gpus": _plain(gpus),
        "cache_gb": _plain(cache_gb),
        "bandwidth_gbps": _plain(bandwidth_gbps),
        "cache_granularity": _plain(cache_granularity),
        "bandwidth_step_gbps": _plain(bandwidth_step_gbps),
    }
    doc = {
        "schema": SCHEMA,
        "cluster": cluster,
        "prices": price_doc,
        "budget_per_hour": _plain(budget_per_hour),
        "datasets": _records(datasets, "datasets"),
        "jobs": _records(jobs, "jobs"),
    }
    return from_dict(doc)


#: The largest Zipf skew of dataset popularity.  The weights are 1 / rank^skew, and rank^skew overflows a double
#: once skew × ln(rank) passes ln(DBL_MAX) ≈ 709.8: at the most datasets there can be (MAX_COUNT, ln ≈ 21.5) that
#: is past skew 33.03.  So every skew up to 33 is computed at every dataset count; a larger one overflows with more
#: than e^(709.8 / skew) datasets (3 at skew 700), and no skew that large differs from 33 in practice: the most
#: popular dataset already takes all but about 2^-33 of the jobs.
MAX_SKEW = math.floor(math.log(sys.float_info.max) / math.log(MAX_COUNT))


def check_skew(skew: Any) -> float:
    """``skew`` as a float from 0 to MAX_SKEW; InstanceError naming ``skew`` otherwise (the rule of ``--skew``),
    so that a larger one is refused by name, not an OverflowError of the Zipf weights."""
    from cbalab.experiments.workload.synthetic import finite

    value = finite(skew, "skew")
    if value > MAX_SKEW:
        raise InstanceError(
            "skew", value, f"must be at most {MAX_SKEW}: a larger skew overflows the Zipf weights 1 / rank^skew"
        )
    return value


def generator_mix(text: Any) -> str | Mapping[str, float]:
    """A generator's ``utility_mix`` as :func:`generate` takes it: a dict of shares stays one, and a text that is
    neither ``mixed`` nor a shape of models.options.SHAPES is read as shares ``shape=share,...``
    (``linear=3,deadline=1``, each shape once, as ``--utility`` reads them); InstanceError naming
    ``utility_mix`` for a value of any other type."""
    from cbalab.models.options import SHAPES, parse_shares

    if isinstance(text, Mapping):
        return text
    _expect(text, str, "utility_mix", "mixed, a utility shape, shares such as linear=3,deadline=1, or a dict")
    if text == "mixed" or text in SHAPES:
        return text
    hint = f"must be mixed, one of {', '.join(SHAPES)}, or shares such as linear=3,deadline=1"
    return parse_shares(text, "utility_mix", hint)


def generate(
    kind: str = "cost",
    *,
    jobs: int = 50,
    datasets: int = 10,
    seed: int = 0,
    skew: float = 1.0,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    prices: tuple[float, float, float] | None = None,
    variant: str = "continuous",
    block_gb: float | None = None,
    tier_fraction: float | None = None,
    utility_mix: str | Mapping[str, float] | None = None,
    budget_fraction: float | None = None,
    gpu_options: tuple[int, ...] | None = None,
    gpu_fraction: float | None = None,
    alpha: float | None = None,
) -> Instance:
    """A seeded synthetic instance: ``kind="cost"`` (P1, docs/model.md §4) or ``"welfare"`` (P2, §5).

    The keywords are those of ``cbalab generate`` (its ``--option`` names with ``_``), and a bad value
    raises InstanceError naming the keyword:

    - both kinds: ``jobs`` jobs on ``datasets`` datasets chosen by Zipf(``skew``) popularity (0: uniform),
      the same ``seed`` giving the same instance; a cache of ``cache_fraction`` of all dataset bytes; a
      bandwidth cap of ``bandwidth_fraction`` of the total demand (None: no cap); ``prices`` (p_g, p_c, p_b)
      in $ per GPU-hour, GB-hour of cache and (GB/s)-hour of remote IO (None: the package's, 2.5, 0.0004,
      0.9);
    - cost only: ``variant``, ``continuous`` or an integer variant (``dataset``, ``block``, ``tiers``,
      ``block+tiers``, ``dataset+tiers``), with ``block_gb`` the block size (default 8) and
      ``tier_fraction`` the bandwidth tier as a fraction of the total demand (default 0.1);
    - welfare only (None: the generator's default): ``utility_mix`` ("mixed", one shape such as
      "linear", shares "linear=3,deadline=1" or {shape: share}), ``budget_fraction`` of running every job at its
      largest option on remote IO (0.5), ``gpu_options`` every job's GPU counts ((1, 2, 4, 8)), ``gpu_fraction``
      the cluster's GPUs as a fraction of every job at its largest option (0.5) and ``alpha`` of α-fair
      utilities (2).

    Implemented by ``cbalab.experiments.workload.synthetic.generate_instance`` (Philly GPU shares,
    log-normal rates and dataset sizes; see generate_cost and generate_welfare for the distributions).  The
    instance is held to the loader's rules (models.instance.from_dict), so that :func:`save` never writes a file
    that :func:`load` refuses: a field they refuse (a bandwidth cap below 1e-30 GB/s) is InstanceError naming it.
    """
    from cbalab.experiments.workload import DEFAULT_PRICES
    from cbalab.experiments.workload.synthetic import generate_instance

    instance = generate_instance(
        kind,
        jobs,
        datasets,
        seed,
        skew=check_skew(_plain(skew)),
        cache_fraction=cache_fraction,
        bandwidth_fraction=bandwidth_fraction,
        prices=DEFAULT_PRICES if prices is None else _plain(prices),
        variant=variant,
        block_gb=block_gb,
        tier_fraction=tier_fraction,
        utility_mix=None if utility_mix is None else generator_mix(_plain(utility_mix)),
        budget_fraction=budget_fraction,
        gpu_options=_plain(gpu_options),
        gpu_fraction=gpu_fraction,
        alpha=alpha,
    )
    from_dict(instance.to_dict())
    return instance


#: The columns of :func:`methods`, each with what it means (the table's ``attrs["columns"]``).
METHOD_COLUMNS = {
    "problem": "the problem the entry answers: cost (P1, fixed GPUs) or welfare (P2, elastic GPUs)",
    "name": "the name that solve(), --method and --policy take",
    "kind": "method; cache-policy (a cost method that can feed a GPU scheduler); gpu-scheduler",
    "exact": "solved by HiGHS at MIP gap 0, so an optimal status is the solver's proof for the model the "
    "method builds (for lp that model is the relaxation: on an integer variant only its bound is proven)",
    "optimal_on": "the instances on which the method's answer is proven optimal, with the theorem "
    "(empty: none beyond what exact says; a method may still prove optimality case by case)",
    "aggregable": "depends on the running jobs only through each dataset's demand R_k (docs/model.md §4)",
    "takes_cache_policy": "a GPU scheduler that a cache policy feeds (cache_policy=)",
    "summary": "what the method does, in one line",
}


def methods(problem: str | None = None) -> pd.DataFrame:
    """The registered methods (all, or those of ``problem``) with their properties, one row each.

    The columns, as :data:`METHOD_COLUMNS` (and the table's ``attrs["columns"]``) explain them: ``problem``,
    ``name``, ``kind``; ``exact``, True for the methods solved by HiGHS at MIP gap 0 (their ``optimal`` is
    the solver's proof for the model they build; for ``lp`` that is the relaxation); ``optimal_on``, the
    instances on which a method is proven optimal (``cba``: continuous P1, Theorem 1, so it is optimal
    there although it is not ``exact``); ``aggregable``, ``takes_cache_policy`` and ``summary``.  A
    ``problem`` other than cost or welfare is InstanceError, not an empty table.
    """
    if problem is not None:
        problem = parse_problem(problem)
    rows = [
        {
            "problem": str(m.problem),
            "name": m.name,
            "kind": str(m.kind),
            "exact": m.exact,
            "optimal_on": m.optimal_on,
            "aggregable": m.aggregable,
            "takes_cache_policy": m.takes_cache_policy,
            "summary": m.summary,
        }
        for m in registry.select(problem)
    ]
    table = pd.DataFrame(rows, columns=list(METHOD_COLUMNS))
    table.attrs["columns"] = dict(METHOD_COLUMNS)
    return table


@dataclass(frozen=True)
class Result:
    """A method's answer on an instance, scored by the referee (docs/model.md §3 and §5).

    ``status`` is the method's claim, demoted to ``infeasible`` when the
    referee finds a violation; ``objective`` is the referee's total cost
    ($/h, cost problem) or welfare (welfare problem); ``bound`` the method's
    proven bound or None.  It wraps the referee's typed result
    (:class:`cbalab.models.evaluate.Scored`), from which the JSON document is written.
    """

    scored: Scored

    @property
    def instance(self) -> Instance:
        """The instance that was solved."""
        return self.scored.instance

    @property
    def problem(self) -> Problem:
        """The problem that was solved: ``cost`` (P1) or ``welfare`` (P2)."""
        return self.scored.problem

    @property
    def method(self) -> str:
        """The registered method's name."""
        return self.scored.method

    @property
    def allocation(self) -> Allocation:
        """The method's answer, with its own (untrusted) claims and declared facts (models/result.py)."""
        return self.scored.allocation

    @property
    def evaluation(self) -> Evaluation | None:
        """The referee's verdict on the allocation, or None when the method returned none."""
        return self.scored.evaluation

    @property
    def status(self) -> Status:
        """The method's status, ``infeasible`` when the referee found a violation."""
        return self.scored.status

    @property
    def objective(self) -> float | None:
        """Total cost in $/h (cost problem) or welfare (welfare problem), as the referee computes it."""
        return self.scored.objective

    @property
    def bound(self) -> float | None:
        """The method's proven bound on the optimum (lower for cost, upper for welfare), or None."""
        return self.scored.bound

    def to_dict(self) -> dict[str, Any]:
        """The ``cbalab/result@1`` document of docs/interface.md."""
        return self.scored.document()

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
        """Draw the allocation: per dataset, what is cached against its size and IO density; per job, its feed.

        Readable at any size (:data:`LABELLED_DATASETS`, :data:`LABELLED_JOBS`):

        * ``ax``, per dataset, densest first (IO density ρ_k = R_k / d_k, the order in which Theorem 1
          caches): up to LABELLED_DATASETS datasets as named bars, grey the size (GB) and blue the cache,
          and on the right axis grey the demand R_k and orange the remote bandwidth (GB/s).  Beyond that,
          one step curve of ρ_k over the datasets' cumulative size, the cached bytes of each shaded blue,
          with the price ratio p_c/p_b (Theorem 1's threshold: caching pays above it) and the capacity C;
        * ``jobs_ax``, per job: up to LABELLED_JOBS jobs as named bars, rate r_j against bandwidth b_j.
          Beyond that, the jobs sorted by rate, stacked what the cache serves, r_j h_k, and the remote
          bandwidth, under the rate line: where the line stands above the stack, the job is short of data.

        With no axes given, a new figure holds both panels; with only ``ax``, only the dataset panel is drawn.
        Returns ``ax`` (its ``.figure`` holds both).
        """
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:  # tall enough that up to LABELLED_JOBS job names (0.18 in each) do not overprint
            named = self.instance.n_jobs if self.instance.n_jobs <= LABELLED_JOBS else 0
            height = max(4.0, 1.5 + 0.18 * named)
            fig, (ax, jobs_ax) = plt.subplots(1, 2, figsize=(11, height), gridspec_kw={"width_ratios": [1, 1.3]})
        ds = self.datasets_frame().fillna({"cache_gb": 0.0})
        ds["density"] = ds["demand_gbps"] / ds["size_gb"]
        ds = ds.sort_values("density", ascending=False, kind="stable").reset_index(drop=True)
        if len(ds) <= LABELLED_DATASETS:
            _dataset_bars(ax, ds)
        else:
            _dataset_densities(ax, ds, self.instance)
        objective = "none" if self.objective is None else f"{self.objective:.6g}"
        ax.set_title(f"{self.method} ({self.problem}): {self.status}, objective {objective}")
        if jobs_ax is not None:
            jf = self.jobs_frame()
            if len(jf) <= LABELLED_JOBS:
                _job_bars(jobs_ax, jf)
            else:
                _job_feeds(jobs_ax, jf)
        if fig is not None:
            fig.tight_layout()
        return ax


#: Result.plot draws per-dataset and per-job bars, each with its name, up to this many (the most whose names do
#: not overprint on its default figure); a summary beyond.
LABELLED_DATASETS = 24
LABELLED_JOBS = 24


def _dataset_bars(ax: Axes, ds: pd.DataFrame) -> None:
    """Named bars per dataset: size and cache (GB, left axis), demand and remote bandwidth (GB/s, right)."""
    x = np.arange(len(ds))
    ax.bar(x - 0.2, ds["size_gb"], width=0.4, label="size (GB)", color="0.8")
    ax.bar(x - 0.2, ds["cache_gb"], width=0.4, label="cache (GB)", color="tab:blue")
    twin = ax.twinx()
    twin.bar(x + 0.2, ds["demand_gbps"], width=0.4, label="demand Σ r_j (GB/s)", color="0.6")
    twin.bar(x + 0.2, ds["bandwidth_gbps"], width=0.4, label="remote bandwidth (GB/s)", color="tab:orange")
    size = "medium" if len(ds) <= 12 else "small"
    ax.set_xticks(x, ds["dataset"], rotation=30 if len(ds) <= 12 else 90, ha="right", fontsize=size)
    ax.set_xlabel("datasets, densest first (IO density R_k / d_k)")
    ax.set_ylabel("GB")
    twin.set_ylabel("GB/s")
    ax.set_ylim(0, 1.35 * max(float(ds["size_gb"].max()), 1e-12))
    twin.set_ylim(0, 1.35 * max(float(ds["demand_gbps"].max()), 1e-12))
    ax.legend(loc="upper left", fontsize="small")
    twin.legend(loc="upper right", fontsize="small")


def _dataset_densities(ax: Axes, ds: pd.DataFrame, inst: Instance) -> None:
    """IO density over cumulative dataset size, densest first, cached bytes shaded: Theorem 1 as a picture."""
    read = ds[ds["density"] > 0]
    edges = np.concatenate([[0.0], np.cumsum(read["size_gb"].to_numpy(float))])
    density = read["density"].to_numpy(float)
    cached = np.minimum(read["cache_gb"].to_numpy(float), read["size_gb"].to_numpy(float))
    ax.stairs(density, edges, color="0.3", label=f"IO density ρ_k of {len(read)} datasets read")
    ax.bar(
        edges[:-1],
        density,
        width=cached,
        align="edge",
        color="tab:blue",
        linewidth=0,
        label=f"cached: {float(cached.sum()):.4g} GB",
    )
    if inst.price_bandwidth > 0 and inst.price_cache > 0:
        ratio = inst.price_cache / inst.price_bandwidth
        ax.axhline(ratio, color="tab:red", linestyle="--", label=f"p_c / p_b = {ratio:.3g} (caching pays above)")
    ax.axvline(inst.cache_gb, color="tab:blue", linestyle=":", label=f"cache capacity C = {inst.cache_gb:.4g} GB")
    ax.set_yscale("log")
    ax.set_xlim(0, max(float(edges[-1]), 1e-12))
    ax.set_xlabel(f"cumulative dataset size, densest first (GB; {len(ds) - len(read)} datasets unread)")
    ax.set_ylabel("IO density R_k / d_k (1/s)")
    ax.legend(loc="upper right", fontsize="small")


def _job_bars(ax: Axes, jf: pd.DataFrame) -> None:
    """Named bars per job: rate r_j and remote bandwidth b_j (GB/s)."""
    y = np.arange(len(jf))
    ax.barh(y + 0.2, jf["rate_gbps"], height=0.4, color="0.6", label="rate r_j (GB/s)")
    ax.barh(y - 0.2, jf["bandwidth_gbps"], height=0.4, color="tab:orange", label="bandwidth b_j (GB/s)")
    size = "medium" if len(jf) <= 12 else "small"
    ax.set_yticks(y, [f"{j} ({k})" for j, k in zip(jf["job"], jf["dataset"])], fontsize=size)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s")
    ax.set_title("per job: data rate and remote bandwidth")
    ax.legend(loc="best", fontsize="small")


def _job_feeds(ax: Axes, jf: pd.DataFrame) -> None:
    """Every job, sorted by rate: what the cache serves and the remote bandwidth, stacked under the rate line."""
    jf = jf.fillna({"rate_gbps": 0.0, "bandwidth_gbps": 0.0, "hit_ratio": 0.0, "stall_factor": 1.0})
    jf = jf.sort_values("rate_gbps", ascending=False, kind="stable")
    rate = jf["rate_gbps"].to_numpy(float)
    from_cache = rate * jf["hit_ratio"].to_numpy(float)
    remote = jf["bandwidth_gbps"].to_numpy(float)
    rank = np.arange(1, len(jf) + 1)
    ax.fill_between(rank, 0, from_cache, step="mid", color="tab:blue", linewidth=0, label="served by the cache")
    ax.fill_between(
        rank, from_cache, from_cache + remote, step="mid", color="tab:orange", linewidth=0, label="remote bandwidth"
    )
    ax.step(rank, rate, where="mid", color="0.2", linewidth=0.8, label="rate r_j")
    short = int((jf["stall_factor"].to_numpy(float) < 1 - 1e-9).sum())
    ax.set_xscale("log")
    ax.set_xlim(1, len(jf))
    ax.set_xlabel(f"{len(jf)} jobs, by rate (rank)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"per job: {short} of {len(jf)} short of data")
    ax.legend(loc="upper right", fontsize="small")


def solve(
    instance: Instance,
    method: str,
    problem: str | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with the registered ``method`` and have the referee score the answer.

    ``problem`` ("cost" or "welfare") may be left out: it is the one that both
    the method and the instance serve (an instance whose jobs have fixed
    ``gpus``/``io_gbps`` poses the cost problem, one whose jobs have
    ``options`` the welfare problem), so only ``lp`` or ``milp`` on an
    instance that poses both needs it.  ``options`` are fields of
    SolveOptions (``mip_gap``, ``threads``, ``cache_policy``); exact methods
    use them, fast ones may not.  A misspelt method, a method of the other
    problem or a bad ``problem`` raises InstanceError naming the argument, as does an ``instance`` that is
    not an Instance or a ``method`` that is not a name.
    """
    _expect(instance, Instance, "instance", AN_INSTANCE)
    _expect(method, str, "method", "a method's name (cbalab.methods() lists them)")
    prob = choose_problem(instance, method, problem)
    entry = registry.get(prob, method)
    opts = SolveOptions(time_limit=time_limit, **options)
    start = time.perf_counter()
    alloc = entry.function()(instance, opts)
    seconds = time.perf_counter() - start
    return Result(score(instance, prob, method, alloc, seconds))


def evaluate(instance: Instance, allocation: Allocation, problem: str) -> Evaluation:
    """The referee (docs/model.md §3–§5): feasibility, costs, hit ratios, stalls and welfare of ``allocation``.

    InstanceError names the argument that is not an Instance, an Allocation, or cost or welfare, and an
    allocation array that does not hold numbers (``allocation.gpus``).
    """
    _expect(instance, Instance, "instance", AN_INSTANCE)
    _expect(allocation, Allocation, "allocation", "an Allocation (a Result's .allocation)")
    for name in ("gpus", "cache_gb", "bandwidth_gbps", "time_share"):
        array = getattr(allocation, name)
        if array is not None and np.asarray(array).dtype.kind not in "iuf":
            raise InstanceError(f"allocation.{name}", _shown(array), "must be an array of numbers")
    return _referee(instance, allocation, parse_problem(problem))


def build_model(instance: Instance, problem: str, relax: bool = False, scaled: bool = False) -> Any:
    """The Pyomo model (a ``pyomo.environ.ConcreteModel``) of P1 (``problem="cost"``, docs/model.md §4) or P2
    (``"welfare"``, §5) for ``instance``.

    Each formulation is stated once, one row function per group of constraints (models/milp/statement.py,
    models/milp/cost.py, models/milp/welfare.py); this model is that statement emitted to Pyomo, and the
    registered exact methods ``milp`` and ``lp`` hand HiGHS the same statement compiled to a sparse matrix
    (scaled; tests/test_statement.py checks that the two emissions hold the same numbers), the welfare
    ``milp`` by slices of its GPU row ``gpu_capacity`` (proofs/welfare_milp_forms.md, Theorem F4).
    ``relax=True`` gives the ``lp`` method's relaxation; ``scaled=True`` the numbers HiGHS sees
    (docs/model.md §8: rows divided by their limits, columns and objective in the units of
    models/milp/statement.py), the default the model as docs/model.md writes it.  ``model.pprint()`` prints
    every variable and constraint, one named block per group, e.g. P2's McCormick rows ``w_below_y``,
    ``w_below_h`` and ``w_above`` (proofs/mccormick_exact.md); a group's rows are numbered from 1.  Pyomo is
    imported here, so ``import cbalab`` stays light.  InstanceError names an ``instance`` that is not an
    Instance or a ``problem`` other than cost or welfare.
    """
    _expect(instance, Instance, "instance", AN_INSTANCE)
    prob = parse_problem(problem)
    if prob == Problem.COST:
        from cbalab.models.milp.cost import build_cost_model

        return build_cost_model(instance, relax=relax, scaled=scaled)
    from cbalab.models.milp.welfare import build_welfare_model

    return build_welfare_model(instance, relax=relax, scaled=scaled)


def solve_model(model: Any, time_limit: float | None = None, **options: Any) -> Outcome:
    """Solve a model of :func:`build_model` with HiGHS (MIP gap 0 unless ``mip_gap`` is given); loads its values.

    Returns the solver's ``Outcome`` (status, objective, bound, message); the
    variables then hold the solution (``model.y[0].value``).  This is the raw
    model's answer, not scored by the referee: :func:`solve` is the scored path.
    """
    from cbalab.models.solve import solve_model as _solve_model

    return _solve_model(model, SolveOptions(time_limit=time_limit, **options))


#: The columns of :func:`compare`, each with what it means (the table's ``attrs["columns"]``).
COMPARE_COLUMNS = {
    "method": "the registered method",
    "status": "its status, as the referee leaves it (demoted to infeasible on a violation)",
    "value": "the headline, as the referee scores it: the IO cost cache + bandwidth in $/h (cost; the GPU bill "
    "is the same for all) or the welfare (welfare); NaN when infeasible or without an allocation",
    "vs_milp": "(value - milp's) / |milp's| against the proven optimum (NaN without one)",
    "bound": "the method's proven bound in the headline's units: lower on the IO cost, upper on the welfare",
    "total_per_hour": "the whole spend in $/h, GPUs included",
    "cache_per_hour": "the cache's spend in $/h",
    "bandwidth_per_hour": "the remote bandwidth's spend in $/h",
    "solve_seconds": "the method's wall time",
    "reason": "why the method found no allocation or claims what it claims (None when it says nothing)",
}


def compare(instance: Instance, problem: str | None = None, time_limit: float | None = None) -> pd.DataFrame:
    """Every registered method of ``problem`` (None: the one ``instance`` poses) on ``instance``, one row each,
    every answer scored by the referee; ``cbalab compare`` prints it.

    The reference is the ``milp`` answer when it is proven optimal (docs/model.md §4, §5): ``vs_milp`` is each
    method's relative gap to it.  A cost method's bound is on the total cost (docs/model.md (4.1)); the
    headline is the IO cost, so the GPU bill p_g Σ_j g_j, the same for every method, comes off it.  The
    columns are :data:`COMPARE_COLUMNS`; ``attrs["problem"]`` holds the problem.
    """
    from cbalab.algorithms.resolve import posed_problem

    _expect(instance, Instance, "instance", AN_INSTANCE)
    prob = posed_problem(instance, problem)
    docs = [registry.run(instance, prob, name, time_limit=time_limit)[0] for name in registry.names(prob)]
    exact = [d for d in docs if d["method"] == "milp" and d["status"] == "optimal"]
    cost_problem = prob == Problem.COST
    gpu_bill = instance.price_gpu * float(instance.job_gpus.sum()) if cost_problem else 0.0

    def value(doc: dict[str, Any]) -> float:
        if doc["status"] == "infeasible":
            return math.nan
        if not cost_problem:  # null when the method found no allocation (a time limit with no incumbent)
            return math.nan if doc["welfare"] is None else float(doc["welfare"])
        cost = doc["cost_per_hour"]
        return math.nan if cost is None else float(cost["cache"] + cost["bandwidth"])

    ref = value(exact[0]) if exact else math.nan
    rows = []
    for doc in docs:
        x, cost = value(doc), doc["cost_per_hour"] or {}
        rows.append(
            {
                "method": doc["method"],
                "status": doc["status"],
                "value": x,
                "vs_milp": (x - ref) / abs(ref) if ref else math.nan,
                "bound": math.nan if doc["bound"] is None else doc["bound"] - gpu_bill,
                "total_per_hour": cost.get("total", math.nan),
                "cache_per_hour": cost.get("cache", math.nan),
                "bandwidth_per_hour": cost.get("bandwidth", math.nan),
                "solve_seconds": doc["solve_seconds"],
                "reason": doc.get("reason"),
            }
        )
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    table.attrs.update(problem=str(prob), columns=dict(COMPARE_COLUMNS))
    return table


@dataclass(frozen=True)
class ReplayResult:
    """A trace replay (docs/model.md §6): per-job table, per-event time series and summary, with a plot.

    ``jobs`` has one row per job (start, end, JCT, queueing, stall seconds and
    its share of the cost); ``timeseries`` one row per event, its values
    holding until the next row (running and queued jobs, GPUs busy, cache
    allocated ``cache_gb`` and filled ``cache_filled_gb``, remote bandwidth,
    spend rates in $/h); ``summary`` the ``cbalab/simulation@1`` document;
    ``datasets`` the datasets of the workload (``dataset``, ``size_gb``), the
    jobs' ``dataset`` column names them; ``notes`` what the replay remarks on its
    settings, as (setting, remark) pairs (a ``window`` that selects almost no job).
    """

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]
    datasets: pd.DataFrame
    notes: tuple[tuple[str, str], ...] = ()

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


@dataclass(frozen=True)
class ReplaySpec:
    """Every setting of one trace replay (docs/model.md §6 cost, §6b welfare): what ``cbalab simulate`` takes.

    ``trace`` is a trace file (generic CSV or Philly), a DataFrame in the generic CSV form (``submit_time_s``,
    ``duration_s``, ``gpus`` and optionally ``job_id``, ``model``, ``dataset``; validated exactly like a file)
    or a number of jobs to generate (Philly-calibrated); ``seed``, ``skew``, ``n_datasets`` and ``gpu_type``
    shape the generated jobs and the dataset assignment, and ``window`` (START, END) in seconds keeps the jobs
    submitted in it.  The cluster has ``gpus`` GPUs (a FIFO queue beyond), a cache of ``cache_gb``, a
    remote-IO cap ``bandwidth_gbps`` (None: none) and ``prices`` (p_g, p_c, p_b) (None: the package's);
    ``warmup`` False gives instant caches (docs/model.md (6.1)), ``period_s`` re-allocates every so many
    seconds besides the events.

    Per problem (every option works on each path it is offered on, or :func:`replay` refuses it naming it):

    - ``problem="cost"``: ``policy`` is a cost method (``cba``, ``io-only``, ``silod``, ...);
      ``offline_optimum`` also solves P3 over the replay's schedule, a lower bound on every online policy
      (proofs/dynamic_lower_bound.md, Theorem 1), within ``time_limit`` seconds;
    - ``problem="welfare"``: the elastic replay; ``policy`` a welfare method (``autocba``, ``gavel-tput``, ...)
      fed by ``cache_policy`` (None: ``silod``; autocba sets its caches itself), every job with a seeded
      utility table of ``utility_mix`` (None: ``mixed``), under ``budget_per_hour`` or ``budget_fraction``
      of the reference spend (None: 0.5), a job pausing ``restart_delay_s`` (None: 0) when its GPUs change.

    ``timing`` False leaves out the wall-clock fields (identical runs, identical bytes); ``progress`` shows a
    bar on replays of PROGRESS_JOBS jobs or more; ``out``, when given, is the folder the replay writes
    (jobs.csv, timeseries.csv, summary.json), checked before any work.
    """

    trace: str | Path | pd.DataFrame | int
    policy: str = "cba"
    problem: str = "cost"
    gpus: int = 768
    cache_gb: float = 500.0
    bandwidth_gbps: float | None = None
    prices: tuple[float, float, float] | None = None
    warmup: bool = True
    period_s: float | None = None
    seed: int = 0
    skew: float = 1.0
    n_datasets: int = 48
    gpu_type: str | None = None
    window: tuple[float, float] | None = None
    offline_optimum: bool = False
    time_limit: float | None = None
    cache_policy: str | None = None
    utility_mix: str | Mapping[str, float] | None = None
    budget_per_hour: float | None = None
    budget_fraction: float | None = None
    restart_delay_s: float | None = None
    timing: bool = True
    progress: bool = False
    out: str | Path | None = None


#: The settings of :class:`ReplaySpec` that only the welfare replay has (docs/model.md §6b).
WELFARE_SETTINGS = ("cache_policy", "utility_mix", "budget_per_hour", "budget_fraction", "restart_delay_s")

#: A replay of at least this many jobs shows a progress bar when ``ReplaySpec.progress`` is set.
PROGRESS_JOBS = 10_000

#: A ``window`` that selects fewer jobs than this is noted (with the trace's span) in ``ReplayResult.notes``.
WINDOW_FEW = 10


def simulate(
    trace: ReplaySpec | str | Path | pd.DataFrame | int, policy: str | None = None, **settings: Any
) -> ReplayResult:
    """Replay a job trace: ``simulate(spec)`` with a :class:`ReplaySpec`, or ``simulate(trace, policy, **settings)``
    with its fields as keywords (``simulate(trace, "cba", gpus=32)``); see :func:`replay`."""
    if isinstance(trace, ReplaySpec):
        if policy is not None or settings:
            raise TypeError("simulate(spec) takes no other arguments: the ReplaySpec holds every setting")
        return replay(trace)
    return replay(ReplaySpec(trace, "cba" if policy is None else policy, **settings))


def replay(spec: ReplaySpec) -> ReplayResult:
    """Run the replay of ``spec`` (experiments/replay.py): the cost replay (experiments/simulate.py) or the
    elastic welfare replay (experiments/elastic.py), and write it to ``spec.out`` if given.

    Every setting is checked before any work (:func:`check_replay`): a bad one, or one the chosen problem
    does not have, raises InstanceError naming the field (``seed=-1``, a misspelt ``policy`` with the closest
    names, ``offline_optimum`` on the welfare problem, ``cache_policy`` on the cost problem); once the trace is
    read, so is a ``period_s`` that would re-decide more than MAX_TICKS times over it (:func:`check_ticks`).
    """
    problem, spec = _checked(spec)
    workload, notes = _workload(spec)
    check_ticks(spec.period_s, workload.jobs, problem)
    if problem == Problem.COST:
        _fits(spec, workload)
    out = _replay_cost(spec, workload) if problem == Problem.COST else _replay_welfare(spec, workload)
    if not spec.timing:
        out.drop_timing()
    if spec.out is not None:
        out.write(spec.out)
    return ReplayResult(out.jobs, out.timeseries, out.summary, workload.datasets.copy(), notes)


#: The most periodic re-decisions (ticks) a replay's ``period_s`` may ask for: 10^7, hours of policy calls even
#: for the fastest policies, and more than 100 a second over a day-long replay.
MAX_TICKS = 10_000_000


def check_ticks(period_s: float | None, jobs: pd.DataFrame, problem: Problem) -> None:
    """InstanceError naming ``period_s`` when a replay of ``jobs`` (``submit_s``, ``duration_s``) would re-decide
    more than MAX_TICKS times, so that a tiny period is refused at once rather than replayed for days.

    The span is a lower bound on the replay's length: from the first submission to the last one, and on the cost
    problem to the last ``submit_s + duration_s``, before which a cost job never ends (an elastic job may run
    faster than its trace duration).  A period below the clock's resolution is refused first, as the replay
    would (experiments.replay.check_period); this refuses those above it that would still tick for hours.
    """
    if period_s is None:
        return
    from cbalab.experiments.replay import check_period

    submit = jobs["submit_s"].to_numpy(dtype=float)
    end = submit + jobs["duration_s"].to_numpy(dtype=float) if problem == Problem.COST else submit
    check_period(period_s, submit)
    span = float(end.max() - submit.min()) if submit.size else 0.0
    if span > MAX_TICKS * period_s:
        raise InstanceError(
            "period_s",
            period_s,
            f"gives {span / period_s:.3g} re-decisions over the {span:.6g} s the replay lasts at least, more "
            f"than {MAX_TICKS:,}: give at least {span / MAX_TICKS:.3g} s",
        )


#: The settings of :class:`ReplaySpec` that are switches: True or False, nothing else (not "no", not 1).
SWITCHES = ("warmup", "offline_optimum", "timing", "progress")


def check_replay(spec: ReplaySpec) -> Problem:
    """The problem of ``spec`` once every setting is checked; InstanceError names the first bad one.

    ``trace`` must be a file, a DataFrame or a whole number of jobs; ``policy`` a policy of the problem's
    replay; counts whole numbers (``n_datasets`` at least 1; ``gpus`` may be a float with a whole value, as
    in :func:`build_instance`); amounts finite and >= 0 (``period_s`` and ``time_limit`` > 0,
    ``restart_delay_s`` at most the longest trace time); ``window`` two finite numbers START < END;
    ``prices`` None or three such numbers (a numpy array too); the :data:`SWITCHES` True or False; ``out`` a
    folder that can be written, with no folder in the place of one of its files
    (experiments.replay.unwritable_outputs).  numpy numbers count as Python ones.  A setting of the other
    problem is refused rather than ignored: the offline optimum and its ``time_limit`` belong to the cost
    replay, :data:`WELFARE_SETTINGS` to the welfare replay, and ``time_limit`` needs ``offline_optimum``.
    """
    return _checked(spec)[0]


def _checked(spec: ReplaySpec) -> tuple[Problem, ReplaySpec]:
    """:func:`check_replay`'s problem, with ``spec`` as the replay runs it: numpy values as Python ones, a
    whole ``gpus`` as an int, ``window`` and ``prices`` as tuples of numbers."""
    from cbalab.experiments.replay import unwritable_outputs
    from cbalab.experiments.workload.synthetic import finite, price_triple, whole
    from cbalab.experiments.workload.traces import MAX_TRACE_SECONDS

    spec = dataclasses.replace(spec, **{f.name: _plain(getattr(spec, f.name)) for f in dataclasses.fields(spec)})
    prob = parse_problem(spec.problem)
    _expect(spec.policy, str, "policy", "a policy's name (cbalab.methods() lists them)")
    check_policy(spec.policy, prob, registry.names(prob))
    trace = spec.trace
    if isinstance(trace, bool) or not isinstance(trace, str | Path | pd.DataFrame | numbers.Integral):
        raise InstanceError("trace", repr(trace), "a trace file, a DataFrame or a number of jobs (a whole number)")
    if isinstance(trace, numbers.Integral):
        whole(trace, "trace")
    gpus = whole(_whole_float(spec.gpus), "gpus")
    whole(spec.seed, "seed", maximum=2**63 - 1)
    whole(spec.n_datasets, "n_datasets", minimum=1)
    for name in ("cache_gb", "bandwidth_gbps", "budget_per_hour", "budget_fraction", "restart_delay_s"):
        value = getattr(spec, name)
        if value is not None:
            finite(value, name)
    check_skew(spec.skew)
    for name in ("period_s", "time_limit"):
        if getattr(spec, name) is not None:
            finite(getattr(spec, name), name, positive=True)
    if spec.restart_delay_s is not None and spec.restart_delay_s > MAX_TRACE_SECONDS:
        raise InstanceError("restart_delay_s", spec.restart_delay_s, f"must be at most {MAX_TRACE_SECONDS:g} s")
    window = None if spec.window is None else _window(spec.window)
    prices = None if spec.prices is None else price_triple(spec.prices)
    for name in SWITCHES:
        _expect(getattr(spec, name), bool, name, "True or False")
    _check_problem_settings(spec, prob)
    if spec.utility_mix is not None:
        _replay_mix(spec.utility_mix)
    if spec.out is not None:
        check_path(spec.out, "out", "a folder path (str or pathlib.Path)")
        refused = unwritable_outputs(spec.out)
        if refused is not None:
            raise InstanceError("out", str(spec.out), refused)
    return prob, dataclasses.replace(spec, gpus=gpus, window=window, prices=prices)


def _replay_mix(mix: Any) -> UtilityMix:
    """The elastic replay's utility mix of ``utility_mix``: a text as ``--utility-mix`` reads it
    (UtilityMix.parse: ``mixed``, a shape, or ``shape=share,...``) or, as :func:`generate` takes it, a dict
    {shape: share}; InstanceError naming ``utility_mix`` (or ``utility_mix.SHAPE``) otherwise."""
    from cbalab.experiments.workload.elastic import UtilityMix
    from cbalab.experiments.workload.synthetic import finite

    if isinstance(mix, Mapping):
        return UtilityMix(shares={str(k): finite(v, f"utility_mix.{k}") for k, v in mix.items()})
    _expect(mix, str, "utility_mix", "mixed, a utility shape, shares such as linear=3,deadline=1, or a dict")
    return UtilityMix.parse(mix)


def _whole_float(value: Any) -> Any:
    """A float with a whole value (4.0) as that int, the instance file's rule for GPU counts
    (models.instance); any other value unchanged, for :func:`whole` to judge."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _window(window: Any) -> tuple[float, float]:
    """``window`` as (START, END): two finite numbers of seconds (any sign, as trace times) with START < END;
    InstanceError naming ``window`` otherwise (a bare number, a string, three numbers, END <= START)."""
    pair = window if isinstance(window, list | tuple) else ()
    if len(pair) != 2 or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in pair):
        raise InstanceError("window", _shown(window), "must be (START, END): two numbers of seconds")
    start, end = pair
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise InstanceError("window", _span((start, end)), "needs finite START < END (seconds)")
    return start, end


def _check_problem_settings(spec: ReplaySpec, problem: Problem) -> None:
    """InstanceError naming a setting that ``problem``'s replay does not have, which it would otherwise ignore."""
    if problem == Problem.WELFARE:
        if spec.offline_optimum:
            raise InstanceError(
                "offline_optimum",
                True,
                "the offline optimum P3 is a cost-problem bound (docs/model.md §6); not available for the welfare "
                "problem",
            )
        if spec.time_limit is not None:
            raise InstanceError(
                "time_limit",
                spec.time_limit,
                "it limits the solve of the offline optimum P3, a cost-problem bound; not available for the welfare "
                "problem",
            )
        return
    for name in WELFARE_SETTINGS:
        if getattr(spec, name) is not None:
            raise InstanceError(
                name, getattr(spec, name), "a welfare option (docs/model.md §6b): it needs the welfare problem"
            )
    if spec.time_limit is not None and not spec.offline_optimum:
        raise InstanceError(
            "time_limit",
            spec.time_limit,
            "it limits the solve of the offline optimum only; it needs the offline optimum",
        )


def _span(window: tuple[float, float]) -> str:
    """A window as the command line writes it, ``START:END``."""
    return f"{window[0]:g}:{window[1]:g}"


def _seconds_text(seconds: float) -> str:
    """A trace time as the window note prints it: seconds and, past a day, days (``9,408,690 s (108.9 d)``)."""
    text = f"{seconds:,.0f} s"
    return f"{text} ({seconds / 86400:.1f} d)" if abs(seconds) >= 86400 else text


def _workload(spec: ReplaySpec) -> tuple[Workload, tuple[tuple[str, str], ...]]:
    """The jobs of ``spec`` (the trace or generated ones, datasets assigned, seeded) kept to its ``window``, and
    the notes on them.

    A window that selects no job is InstanceError and one that selects fewer than WINDOW_FEW a note, both
    with the trace's span, so that a window in the wrong units or place is seen at once.
    """
    from cbalab.experiments.simulate import window
    from cbalab.experiments.workload import make_workload

    kw: dict[str, Any] = {"seed": spec.seed, "skew": spec.skew, "n_datasets": spec.n_datasets}
    kw["gpu_type"] = spec.gpu_type
    trace = spec.trace
    if isinstance(trace, pd.DataFrame):
        workload = _frame_workload(trace, kw)
    elif isinstance(trace, str | Path):
        workload = make_workload(trace=trace, **kw)
    else:  # a whole number of jobs (numpy's too), as check_replay checked
        workload = make_workload(n_jobs=int(trace), **kw)
    if spec.window is None:
        return workload, ()
    start, end = spec.window
    submit = workload.jobs["submit_s"]
    chosen = int(((submit >= start) & (submit < end)).sum())
    span = f"the trace's {len(submit):,} jobs, whose submissions span {_seconds_text(submit.min())} to "
    span += _seconds_text(submit.max())
    if chosen == 0:
        raise InstanceError("window", _span(spec.window), f"selects none of {span}")
    notes = (("window", f"{_span(spec.window)} selects {chosen} of {span}"),) if chosen < WINDOW_FEW else ()
    return window(workload, start, end), notes


def _fits(spec: ReplaySpec, workload: Workload) -> None:
    """InstanceError naming the file and line (a DataFrame's row) and the GPU column of the first job of a given
    trace that the cost replay would run and that asks for more GPUs than the cluster has: a cost job runs on
    its trace's count (docs/model.md §6), so it could never start.  Generated jobs are left to the replay, which
    names them by id; the welfare replay gives a job one of its options that fit."""
    from cbalab.experiments.workload.traces import TraceError

    jobs = workload.jobs
    big = np.flatnonzero(jobs["gpus"].to_numpy() > spec.gpus)
    if not big.size or not isinstance(spec.trace, str | Path | pd.DataFrame):
        return
    j = int(big[0])
    column = str(jobs.attrs.get("gpus_column", "gpus"))
    given = int(jobs["gpus"].iloc[j])
    error = TraceError(
        str(spec.trace), int(jobs["line"].iloc[j]), column, given, f"exceeds the cluster's {spec.gpus} GPUs"
    )
    if isinstance(spec.trace, pd.DataFrame):
        raise _frame_error(spec.trace, spec.trace.to_csv(index=False), error)
    raise error


def _frame_workload(trace: pd.DataFrame, kw: dict[str, Any]) -> Workload:
    """The workload of a DataFrame trace, read exactly as its rows written to a CSV file would be
    (experiments.workload.make_workload with keywords ``kw``).

    The file is temporary, so a bad cell is named as the DataFrame's: its row (index label) and column, not
    the file's line, which is gone once the call returns.
    """
    import tempfile

    from cbalab.experiments.workload import make_workload
    from cbalab.experiments.workload.traces import TraceError

    text = trace.to_csv(index=False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_text(text, encoding="utf-8", newline="")
        try:
            workload = make_workload(trace=path, **kw)
        except TraceError as e:
            raise _frame_error(trace, text, e) from None
    workload.jobs.attrs["source"] = "DataFrame"
    return workload


def _frame_error(trace: pd.DataFrame, text: str, error: TraceError) -> InstanceError:
    """``error``, about a line of ``text`` (``trace`` as CSV), as an InstanceError about ``trace``: the header
    line is the DataFrame's columns, record i its i-th row, named by its index label with the cell's value;
    a line cited in the message (a duplicate's first) becomes its row too."""
    reader = csv.reader(io.StringIO(text, newline=""))
    ends = [reader.line_num for _ in reader]  # the line on which each record ends, as the trace reader counts

    def row(line: int) -> Any:
        """The index label of the DataFrame row written as the record that ends on ``line``."""
        return _plain(trace.index[ends.index(line) - 1])

    column = error.column
    if error.line not in ends[1:]:  # the header: the DataFrame's columns
        return InstanceError(f"trace column {column!r}", error.value, error.problem)
    cells = trace[column] if column in trace.columns else None
    value = error.value if cells is None else _shown(cells.iloc[ends.index(error.line) - 1])
    problem = re.sub(r"line (\d+)", lambda m: f"row {row(int(m.group(1)))!r}", error.problem)
    return InstanceError(f"trace row {row(error.line)!r}, column {column!r}", value, problem)


def _cluster(spec: ReplaySpec, n_jobs: int) -> dict[str, Any]:
    """The settings both replays' configs share, from a spec :func:`_checked` returned: the cluster (G, C, B;
    B = inf when None), the prices (the package's when None), warm-up, the period, the seed, and a progress
    bar on PROGRESS_JOBS jobs or more."""
    from cbalab.experiments.workload import DEFAULT_PRICES

    return {
        "policy": spec.policy,
        "gpus": spec.gpus,
        "cache_gb": spec.cache_gb,
        "bandwidth_gbps": math.inf if spec.bandwidth_gbps is None else spec.bandwidth_gbps,
        "prices": DEFAULT_PRICES if spec.prices is None else spec.prices,
        "warmup": spec.warmup,
        "period_s": spec.period_s,
        "seed": spec.seed,
        "progress": spec.progress and n_jobs >= PROGRESS_JOBS,
    }


def _replay_cost(spec: ReplaySpec, workload: Workload) -> SimResult:
    """The cost replay (docs/model.md §6), with the offline optimum P3 over its schedule if asked."""
    from cbalab.experiments.simulate import SimConfig, offline_optimum, simulate

    cfg = SimConfig(**_cluster(spec, len(workload.jobs)))
    result = simulate(workload, cfg)
    if spec.offline_optimum:
        result.summary["offline_optimum"] = offline_optimum(workload, cfg, result, spec.time_limit)
    return result


def _replay_welfare(spec: ReplaySpec, workload: Workload) -> SimResult:
    """The elastic replay under a budget (docs/model.md §6b): every job gets a seeded utility table."""
    from cbalab.experiments.elastic import ElasticConfig
    from cbalab.experiments.elastic import replay as elastic_replay
    from cbalab.experiments.workload.elastic import elastic

    mix = _replay_mix("mixed" if spec.utility_mix is None else spec.utility_mix)
    elastic_workload = elastic(workload, spec.seed, mix, gpu_type=spec.gpu_type)
    cfg = ElasticConfig(
        **_cluster(spec, elastic_workload.n),
        cache_policy=spec.cache_policy,
        budget_per_hour=spec.budget_per_hour,
        budget_fraction=0.5 if spec.budget_fraction is None else spec.budget_fraction,
        restart_delay_s=0.0 if spec.restart_delay_s is None else spec.restart_delay_s,
    )
    return elastic_replay(elastic_workload, cfg)
