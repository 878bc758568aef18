"""Assigning models and datasets to a trace's jobs: a :class:`Workload` the simulator replays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.experiments.workload.catalog import Catalog
from cbalab.experiments.workload.generate import generate_trace, zipf_draw
from cbalab.experiments.workload.traces import TraceError, load_trace
from cbalab.models.instance import InstanceError


@dataclass(frozen=True)
class Workload:
    """A trace with every job's model, dataset and rate r_j(g_j), and the datasets it reads.

    ``jobs`` has the columns of :func:`load_trace` plus ``io_gbps`` and
    ``dataset_index`` (position in ``datasets``); ``datasets`` has ``dataset``
    and ``size_gb``; ``settings`` records the seed, skew, number of datasets
    and GPU type that produced it.
    """

    jobs: pd.DataFrame
    datasets: pd.DataFrame
    settings: dict


def workload_datasets(n_datasets: int, catalog: Catalog | None = None) -> list[str]:
    """The ids of ``n_datasets`` datasets: the catalog's public datasets, then copies of them.

    Dataset i is a copy of catalog dataset i mod T (T public datasets); copy
    c ≥ 1 is called ``id~c``.  Copies stand for the per-team versions (other
    preprocessing, subsets, augmented copies) that make real clusters hold many
    more datasets than the public list, with the same sizes and sample sizes.
    """
    cat = catalog or Catalog.default()
    if n_datasets < 1:
        raise InstanceError("n_datasets", n_datasets, "must be >= 1")
    base = list(cat.datasets)
    return [base[i % len(base)] + ("" if i < len(base) else f"~{i // len(base)}") for i in range(n_datasets)]


def assign(
    trace: pd.DataFrame,
    seed: int,
    *,
    skew: float = 1.0,
    n_datasets: int = 48,
    gpu_type: str | None = None,
    catalog: Catalog | None = None,
) -> Workload:
    """Give every job of ``trace`` a model and a dataset, seeded, and its rate r_j(g_j) from the catalog.

    Datasets are drawn with Zipf(``skew``) popularity over the
    :func:`workload_datasets` (ranks in a seeded order; skew 0 is uniform, a
    larger skew concentrates jobs on fewer datasets, so sharing is a swept
    parameter); the model uniformly among the catalog models that train on the
    dataset.  Jobs whose trace row pins a model or a dataset keep it (a pinned
    model without a dataset draws one of the model's datasets by the same
    Zipf weights).  ``gpu_type`` None uses each model's measured GPU type.
    The default of 48 datasets is four copies of each of the 12 public ones.
    """
    cat = catalog or Catalog.default()
    if not (math.isfinite(skew) and skew >= 0):
        raise InstanceError("skew", skew, "must be finite and >= 0")
    ids = workload_datasets(n_datasets, cat)
    source = trace.attrs.get("source", "trace")
    model_col = trace["model"].to_numpy(dtype=object)
    data_col = trace["dataset"].to_numpy(dtype=object)
    lines = trace["line"].to_numpy()
    for col, values, known in (("model", model_col, cat.models), ("dataset", data_col, set(ids))):
        bad = [i for i, v in enumerate(values) if v and v not in known]
        if bad:
            i = bad[0]
            raise TraceError(source, int(lines[i]), col, values[i], f"unknown {col}; known: {sorted(known)[:12]} ...")
    rng = np.random.default_rng(seed)
    n = len(trace)
    drawn, popularity, rank_to_dataset = zipf_draw(rng, len(ids), n, skew)
    index = {k: i for i, k in enumerate(ids)}
    template = [cat.dataset(k).id for k in ids]
    pick = rng.random(n)
    dataset_index = drawn.copy()
    rank_of = np.argsort(rank_to_dataset)
    for j in np.flatnonzero([bool(v) for v in data_col]):
        dataset_index[j] = index[data_col[j]]
    for j in np.flatnonzero([bool(m) and not d for m, d in zip(model_col, data_col)]):
        own = np.array([i for i in range(len(ids)) if template[i] in cat.models[model_col[j]].datasets])
        w = np.cumsum(popularity[rank_of[own]])
        dataset_index[j] = own[min(int(np.searchsorted(w / w[-1], pick[j], side="right")), own.size - 1)]
    readers = {d: [m.id for m in cat.models.values() if d in m.datasets] for d in cat.datasets}
    choices = [readers[template[i]] for i in range(len(ids))]
    n_choices = np.array([len(c) for c in choices])
    table = np.array([c + [""] * (n_choices.max() - len(c)) for c in choices], dtype=object)
    slot = np.minimum((pick * n_choices[dataset_index]).astype(np.int64), n_choices[dataset_index] - 1)
    models = np.where(np.asarray([bool(m) for m in model_col], dtype=bool), model_col, table[dataset_index, slot])
    gpus = trace["gpus"].to_numpy()
    sample_gb = np.array([cat.dataset(k).sample_gb for k in ids])
    sps = np.zeros(n)
    for name in set(models):
        mask = models == name
        sps[mask] = cat.model(name).samples_per_second(gpus[mask], gpu_type)
    jobs = trace.copy()
    jobs["model"] = models.astype(str)
    jobs["dataset"] = [ids[i] for i in dataset_index]
    jobs["dataset_index"] = dataset_index
    jobs["io_gbps"] = sps * sample_gb[dataset_index]
    datasets = pd.DataFrame({"dataset": ids, "size_gb": [cat.dataset(k).size_gb for k in ids]})
    settings = {"seed": seed, "skew": skew, "n_datasets": n_datasets, "gpu_type": gpu_type or "model default"}
    return Workload(jobs, datasets, settings)


def datasets_total_gb(n_datasets: int, catalog: Catalog | None = None) -> float:
    """Σ_k d_k over the ``n_datasets`` datasets of :func:`workload_datasets`: the cache that holds them all."""
    cat = catalog or Catalog.default()
    return float(sum(cat.dataset(k).size_gb for k in workload_datasets(n_datasets, cat)))


def make_workload(
    *,
    trace: str | Path | None = None,
    n_jobs: int | None = None,
    seed: int = 0,
    skew: float = 1.0,
    n_datasets: int = 48,
    gpu_type: str | None = None,
) -> Workload:
    """The workload of a replay: a trace file (``trace``) or ``n_jobs`` generated jobs, then :func:`assign`.

    Exactly one of ``trace`` and ``n_jobs`` is given; ``seed`` seeds both the
    generator and the assignment.
    """
    if (trace is None) == (n_jobs is None):
        raise InstanceError("trace, n_jobs", (trace, n_jobs), "give exactly one: a trace file or a number of jobs")
    if trace is not None:
        jobs = load_trace(trace)
    else:
        assert n_jobs is not None  # exactly one of the two, checked above
        jobs = generate_trace(n_jobs, seed)
    return assign(jobs, seed, skew=skew, n_datasets=n_datasets, gpu_type=gpu_type)
