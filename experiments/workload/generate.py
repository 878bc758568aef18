"""Seeded generators: cost (P1) and welfare (P2) instances and Philly-calibrated job traces.

The generators run without ../shared: their distributions are calibrated to
published figures, each named where it is used.  Every popularity draw goes
through :func:`zipf_draw`, every GPUs-per-job draw through :func:`philly_gpus`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from cbalab.models.instance import Instance, InstanceError, build
from cbalab.models.kernels import libm
from cbalab.models.options import SHAPES, OptionTable, Utility, amdahl_throughput, option_table, stack

#: GPUs per job in the Philly trace (share of the 82,247 jobs of
#: ../shared/data/philly/philly_jobs.csv at 1, 2, 4, 8, 16 GPUs; the few
#: larger jobs are folded into 16).  Source: Microsoft Philly traces, CC-BY 4.0.
PHILLY_GPU_SHARES = {1: 0.9317, 2: 0.0221, 4: 0.0227, 8: 0.0200, 16: 0.0035}

#: Default prices, $/h per unit: a V100 GPU-hour (AWS p3 on-demand is about
#: $3.06 per GPU-hour; we use 2.5), a GB-hour of cluster cache and a
#: (GB/s)-hour of provisioned remote throughput, as in docs/interface.md's
#: example.  Every experiment sweeps the cache/bandwidth price ratio.
DEFAULT_PRICES = (2.5, 0.0004, 0.9)


def zipf_weights(n: int, skew: float) -> np.ndarray:
    """Popularity of n items under Zipf(skew): weight ∝ 1 / rank^skew (skew = 0 is uniform)."""
    w = 1.0 / libm(math.pow, np.arange(1, n + 1), skew)
    return w / w.sum()


#: Calibration of :func:`generate_trace` to ../shared/data/philly/philly_jobs.csv (82,247 jobs, 2017-09-04 to
#: 2017-12-22): arrivals per second (82,247 jobs over 9,408,690 s), mean and standard deviation of ln(duration in
#: seconds), and the shortest and longest duration.  Source: Microsoft Philly traces, CC-BY 4.0.
PHILLY_ARRIVALS_PER_S = 82_247 / 9_408_690
PHILLY_LOG_DURATION = (6.79, 2.16)
PHILLY_DURATION_RANGE_S = (1.0, 4_628_226.0)


class ZipfDraw(NamedTuple):
    """A seeded Zipf draw: each draw's item, the popularity by rank and the item at each rank."""

    items: np.ndarray
    popularity: np.ndarray
    rank_to_item: np.ndarray


def zipf_draw(rng: np.random.Generator, n_items: int, size: int, skew: float) -> ZipfDraw:
    """Draw ``size`` of ``n_items`` items by Zipf(``skew``) popularity, the ranks in a seeded order.

    The rank order is a seeded permutation (drawn first), so which item is the
    most popular is itself random; then ``size`` ranks are drawn by
    :func:`zipf_weights`.
    """
    popularity = zipf_weights(n_items, skew)
    rank_to_item = rng.permutation(n_items)
    return ZipfDraw(rank_to_item[rng.choice(n_items, size=size, p=popularity)], popularity, rank_to_item)


def philly_gpus(rng: np.random.Generator, n_jobs: int) -> np.ndarray:
    """GPUs of ``n_jobs`` jobs drawn by PHILLY_GPU_SHARES."""
    counts = np.array(list(PHILLY_GPU_SHARES))
    shares = np.array(list(PHILLY_GPU_SHARES.values()))
    return rng.choice(counts, size=n_jobs, p=shares / shares.sum())


def dataset_sizes(rng: np.random.Generator, n_datasets: int) -> np.ndarray:
    """Dataset sizes in GB: log-normal around 50 GB, clipped to [0.1, 5,000] GB (see :func:`generate_cost`)."""
    return np.clip(rng.lognormal(math.log(50.0), 1.5, size=n_datasets), 0.1, 5000.0)


def generate_cost(
    n_jobs: int,
    n_datasets: int,
    seed: int,
    *,
    skew: float = 1.0,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    prices: tuple[float, float, float] = DEFAULT_PRICES,
) -> Instance:
    """A seeded cost-problem (P1) instance.

    GPUs per job follow the Philly shares; the per-GPU data rate is
    log-normal around 0.05 GB/s (ResNet-50 on a V100 reads about 1,200
    images/s × 110 KB ≈ 0.13 GB/s; lighter models read less); dataset sizes
    are log-normal around 50 GB, clipped to [0.1, 5,000] GB (CIFAR-10 is
    0.16 GB, ImageNet-1k 147 GB, OpenImages about 560 GB).  Jobs pick
    datasets by Zipf(``skew``) popularity.  The cache holds
    ``cache_fraction`` of all dataset bytes; the bandwidth cap is
    ``bandwidth_fraction`` of the total demand (None: no cap).
    """
    if n_jobs < 0 or n_datasets < 1:
        raise ValueError(f"need n_jobs >= 0 and n_datasets >= 1, got {n_jobs}, {n_datasets}")
    rng = np.random.default_rng(seed)
    gpus = philly_gpus(rng, n_jobs)
    per_gpu = rng.lognormal(math.log(0.05), 0.8, size=n_jobs)
    io = gpus * per_gpu
    sizes = dataset_sizes(rng, n_datasets)
    job_dataset = zipf_draw(rng, n_datasets, n_jobs, skew).items
    bandwidth = math.inf if bandwidth_fraction is None else bandwidth_fraction * float(io.sum())
    return build(
        dataset_size_gb=sizes,
        job_dataset=job_dataset,
        job_gpus=gpus,
        job_io_gbps=io,
        cache_gb=cache_fraction * float(sizes.sum()),
        bandwidth_gbps=bandwidth,
        gpus=int(gpus.sum()),
        prices=prices,
    )


def _utility_shares(utility_mix: str | Mapping[str, float]) -> dict[str, float]:
    """``"mixed"`` (every shape of models.options.SHAPES equally), one shape's name, or {shape: share}."""
    if isinstance(utility_mix, str):
        if utility_mix == "mixed":
            return dict.fromkeys(SHAPES, 1.0 / len(SHAPES))
        if utility_mix not in SHAPES:
            raise InstanceError("utility_mix", utility_mix, f"must be 'mixed' or one of {', '.join(SHAPES)}")
        return {utility_mix: 1.0}
    shares = {str(k): float(v) for k, v in utility_mix.items()}
    unknown = sorted(set(shares) - set(SHAPES))
    if unknown:
        raise InstanceError("utility_mix", unknown[0], f"unknown utility shape; known: {', '.join(SHAPES)}")
    total = sum(shares.values())
    if not all(math.isfinite(v) and v >= 0 for v in shares.values()) or total <= 0:
        raise InstanceError("utility_mix", shares, "shares must be >= 0 with a positive sum")
    return {k: v / total for k, v in shares.items()}


def generate_welfare(
    n_jobs: int,
    n_datasets: int,
    seed: int,
    *,
    utility_mix: str | Mapping[str, float] = "mixed",
    budget_fraction: float = 0.5,
    skew: float = 1.0,
    gpu_options: tuple[int, ...] = (1, 2, 4, 8),
    gpu_fraction: float = 0.5,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    alpha: float = 2.0,
    prices: tuple[float, float, float] = DEFAULT_PRICES,
) -> Instance:
    """A seeded welfare-problem (P2, docs/model.md §5) instance: every job has an option table, no fixed allocation.

    Each job scales by Amdahl's law (serial fraction uniform in [0, 0.3]) over
    ``gpu_options``; its per-GPU data rate is log-normal around 0.05 GB/s as in
    :func:`generate_cost`, its mean sample size log-normal around 110 KB (an
    ImageNet JPEG), which fixes its samples/s.  Utility shapes are drawn by
    ``utility_mix`` ("mixed" = every shape of models.options.SHAPES equally;
    α-fair uses ``alpha``); the sigmoid's midpoint is half the top speedup and
    a deadline job's remaining work is set so that a random one of its options
    is the slowest to meet a deadline of 2-24 h.  Every shape is scaled so
    that the top option is worth w × (top speedup), w log-normal around 3
    utility/h (a GPU-hour costs 2.5 $), so shapes differ in how value falls
    with fewer GPUs, not in scale.  Datasets and their Zipf(``skew``)
    popularity are as in :func:`generate_cost`.

    The cluster has G = ``gpu_fraction`` × Σ_j (largest option) GPUs, a cache
    of ``cache_fraction`` of all dataset bytes, a bandwidth cap of
    ``bandwidth_fraction`` × Σ_j r_j(largest option) (None: no cap), and a
    budget of ``budget_fraction`` × the cost of running every job at its
    largest option fed by remote IO only, p_g Σ g_max + p_b Σ r_j(g_max).
    """
    if n_jobs < 0 or n_datasets < 1:
        raise InstanceError("n_jobs, n_datasets", (n_jobs, n_datasets), "need n_jobs >= 0 and n_datasets >= 1")
    if not gpu_options or len(set(gpu_options)) != len(gpu_options) or min(gpu_options) < 1:
        raise InstanceError("gpu_options", list(gpu_options), "must be distinct whole numbers >= 1")
    for name, value in (("budget_fraction", budget_fraction), ("gpu_fraction", gpu_fraction)):
        if not (math.isfinite(value) and value >= 0):
            raise InstanceError(name, value, "must be finite and >= 0")
    shares = _utility_shares(utility_mix)
    rng = np.random.default_rng(seed)
    g = np.sort(np.asarray(gpu_options, dtype=np.int64))
    per_gpu = rng.lognormal(math.log(0.05), 0.8, size=n_jobs)
    sample_gb = rng.lognormal(math.log(1.1e-4), 0.5, size=n_jobs)
    serial = rng.uniform(0.0, 0.3, size=n_jobs)
    weight = rng.lognormal(math.log(3.0), 0.6, size=n_jobs)
    shape_names = list(shares)
    shapes = rng.choice(len(shape_names), size=n_jobs, p=np.array(list(shares.values())))
    deadline_h = rng.uniform(2.0, 24.0, size=n_jobs)
    threshold = rng.integers(0, g.size, size=n_jobs)
    tables = []
    for j in range(n_jobs):
        tput = amdahl_throughput(g, per_gpu[j] / sample_gb[j], float(serial[j]))
        x_top = float(tput[-1] / tput[0])
        shape = shape_names[shapes[j]]
        utility = Utility(
            shape,
            alpha=alpha,
            steepness=8.0 / x_top,
            midpoint=x_top / 2.0,
            remaining_samples=float(tput[threshold[j]]) * float(deadline_h[j]) * 3600.0 * 0.99,
            deadline_h=float(deadline_h[j]),
        )
        table = option_table(g, tput, float(sample_gb[j]), utility)
        scale = weight[j] * x_top / table.utility[-1]
        tables.append(OptionTable(table.gpus, table.io_gbps, table.utility * scale))
    options = stack(tables)
    top_gpus = float(g[-1]) * n_jobs
    top_io = float(sum(t.io_gbps[-1] for t in tables))
    sizes = dataset_sizes(rng, n_datasets)
    job_dataset = zipf_draw(rng, n_datasets, n_jobs, skew).items
    return build(
        dataset_size_gb=sizes,
        job_dataset=job_dataset,
        cache_gb=cache_fraction * float(sizes.sum()),
        bandwidth_gbps=math.inf if bandwidth_fraction is None else bandwidth_fraction * top_io,
        gpus=round(gpu_fraction * top_gpus),
        budget_per_hour=budget_fraction * (prices[0] * top_gpus + prices[2] * top_io),
        options=options,
        prices=prices,
    )


def generate_trace(
    n_jobs: int,
    seed: int,
    *,
    arrivals_per_s: float = PHILLY_ARRIVALS_PER_S,
    log_duration: tuple[float, float] = PHILLY_LOG_DURATION,
) -> pd.DataFrame:
    """A seeded synthetic trace calibrated to the Philly trace (same columns as :func:`load_trace`).

    Poisson arrivals at the Philly rate, log-normal durations (ln seconds with
    the trace's mean and standard deviation, clipped to its range) and GPUs
    per job by PHILLY_GPU_SHARES.
    """
    if n_jobs < 0:
        raise InstanceError("n_jobs", n_jobs, "must be >= 0")
    if not (arrivals_per_s > 0 and math.isfinite(arrivals_per_s)):
        raise InstanceError("arrivals_per_s", arrivals_per_s, "must be finite and > 0")
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(1.0 / arrivals_per_s, size=n_jobs))
    submit -= submit[0] if n_jobs else 0.0
    duration = np.clip(
        libm(math.exp, rng.normal(log_duration[0], log_duration[1], size=n_jobs)), *PHILLY_DURATION_RANGE_S
    )
    gpus = philly_gpus(rng, n_jobs)
    frame = pd.DataFrame(
        {
            "line": np.zeros(n_jobs, dtype=np.int64),
            "job_id": [f"gen-{j}" for j in range(n_jobs)],
            "submit_s": submit,
            "duration_s": np.round(duration),
            "gpus": gpus.astype(np.int64),
            "model": [""] * n_jobs,
            "dataset": [""] * n_jobs,
        }
    )
    frame.attrs["source"] = f"generated (n={n_jobs}, seed={seed})"
    return frame
