"""Workloads: seeded instance generators (and, later, the catalog and trace loaders).

The generators run without ../shared: their distributions are calibrated to
published figures, each named where it is used.
"""

from __future__ import annotations

import math

import numpy as np

from models.instance import Instance, build

#: GPUs per job in the Philly trace (share of the 82,247 jobs of
#: ../shared/data/philly/philly_jobs.csv at 1, 2, 4, 8, 16 GPUs; the few
#: larger jobs are folded into 16).  Source: Microsoft Philly traces, CC-BY 4.0.
PHILLY_GPU_SHARES = {1: 0.9317, 2: 0.0221, 4: 0.0227, 8: 0.0200, 16: 0.0035}

#: Default prices, $/h per unit: a V100 GPU-hour (AWS p3 on-demand is about
#: $3.06 per GPU-hour; we use 2.5), a GB-hour of cluster cache and a
#: (GB/s)-hour of provisioned remote throughput, as in spec/INTERFACE.md's
#: example.  Every experiment sweeps the cache/bandwidth price ratio.
DEFAULT_PRICES = (2.5, 0.0004, 0.9)


def zipf_weights(n: int, skew: float) -> np.ndarray:
    """Popularity of n items under Zipf(skew): weight ∝ 1 / rank^skew (skew = 0 is uniform)."""
    w = 1.0 / np.arange(1, n + 1) ** skew
    return w / w.sum()


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
    counts = np.array(list(PHILLY_GPU_SHARES))
    shares = np.array(list(PHILLY_GPU_SHARES.values()))
    gpus = rng.choice(counts, size=n_jobs, p=shares / shares.sum())
    per_gpu = rng.lognormal(math.log(0.05), 0.8, size=n_jobs)
    io = gpus * per_gpu
    sizes = np.clip(rng.lognormal(math.log(50.0), 1.5, size=n_datasets), 0.1, 5000.0)
    popularity = zipf_weights(n_datasets, skew)
    rank_to_dataset = rng.permutation(n_datasets)
    job_dataset = rank_to_dataset[rng.choice(n_datasets, size=n_jobs, p=popularity)]
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
