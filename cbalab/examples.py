"""Named teaching instances: small, readable, with prices where the decisions are close.

Every function returns a fresh object built through the public API
(:func:`cbalab.build_instance`), so a student can print it, change it and
solve it.  The prices are teaching choices, not measurements: at the package
defaults (p_c/p_b ≈ 4.4e-4 s⁻¹) caching pays for nearly every dataset and the
cache-or-bandwidth question has a boring answer.  Here the price ratio sits
among the datasets' IO densities, so Theorem 1's threshold rule
(proofs/cba_optimality.md) has something to decide.

Dataset sizes are the public training splits of the package's catalog
(ImageNet-1k 147 GB, COCO 2017 18 GB, LibriSpeech 960 h 59.3 GB); the job
rates are illustrative, of the order of the catalog's measured rates on
newer GPUs.

Units throughout: GB, GB/s, $/h (p_g per GPU, p_c per GB of cache, p_b per
GB/s of remote bandwidth), as in docs/model.md §2.
"""

from __future__ import annotations

import pandas as pd

from cbalab.api import Instance, build_instance

__all__ = [
    "TOY_PRICES",
    "elastic_toy",
    "greedy_trap",
    "mccormick_toy",
    "small_trace",
    "toy_cluster",
    "toy_datasets",
    "toy_jobs",
]

#: (p_g, p_c, p_b) of the toy instances: the threshold IO density p_c / p_b is 0.003 s⁻¹, i.e. a dataset pays
#: for its cache when its jobs together read all of it more often than once every p_b / p_c ≈ 333 s.
TOY_PRICES = (2.5, 0.027, 9.0)


def toy_datasets() -> pd.DataFrame:
    """The three datasets of the toy instances: ``id`` and ``size_gb`` (the catalog's public sizes)."""
    return pd.DataFrame({"id": ["imagenet-1k", "coco-2017", "librispeech-960h"], "size_gb": [147.0, 18.0, 59.3]})


def toy_jobs() -> pd.DataFrame:
    """The six named jobs of :func:`toy_cluster`: ``id``, ``dataset``, ``gpus`` and ``io_gbps`` (GB/s).

    Per dataset the demand R_k and the IO density ρ_k = R_k / d_k are
    ImageNet 0.60 GB/s (ρ ≈ 0.0041 s⁻¹), COCO 0.18 GB/s (ρ = 0.01 s⁻¹) and
    LibriSpeech 0.09 GB/s (ρ ≈ 0.0015 s⁻¹).
    """
    return pd.DataFrame(
        {
            "id": ["resnet50", "vit-b16", "yolov3", "detr", "deepspeech2", "conformer"],
            "dataset": ["imagenet-1k", "imagenet-1k", "coco-2017", "coco-2017", "librispeech-960h", "librispeech-960h"],
            "gpus": [8, 8, 4, 4, 4, 2],
            "io_gbps": [0.40, 0.20, 0.10, 0.08, 0.06, 0.03],
        }
    )


def toy_cluster(
    *,
    price_cache: float = TOY_PRICES[1],
    price_bandwidth: float = TOY_PRICES[2],
    cache_gb: float = 250.0,
    bandwidth_gbps: float | None = None,
) -> Instance:
    """Three datasets, six named jobs, fixed GPUs: the cost problem P1 (docs/model.md §4) where the threshold decides.

    What it teaches: Theorem 1 (proofs/cba_optimality.md) caches a dataset
    exactly when p_b ρ_k > p_c.  At the default prices the threshold
    p_c / p_b = 0.003 s⁻¹ lies between the datasets' densities: COCO
    (ρ = 0.01) and ImageNet (ρ ≈ 0.0041) are cached whole, LibriSpeech
    (ρ ≈ 0.0015) is fed over remote bandwidth, although it has more cache room
    than it needs (C = 250 GB ≥ 224.3 GB of data).  ImageNet, the dataset with
    the most traffic, is the closest call; "cache everything" (``cache-all``)
    pays for LibriSpeech and loses.

    Known optimum at the defaults: 80.265 $/h = 75 (30 GPUs × 2.5) + 4.455
    (165 GB × 0.027) + 0.81 (0.09 GB/s × 9).  ``price_cache``,
    ``price_bandwidth``, ``cache_gb`` and ``bandwidth_gbps`` (B, None for no
    cap) change the cluster for the sweeps and exercises of
    tutorials/01_caching_or_bandwidth.ipynb.
    """
    return build_instance(
        toy_jobs(),
        toy_datasets(),
        cache_gb=cache_gb,
        prices=(TOY_PRICES[0], price_cache, price_bandwidth),
        gpus=32,
        bandwidth_gbps=bandwidth_gbps,
    )


#: Per job of :func:`elastic_toy`: (dataset, GB/s per GPU, utility weight).
_ELASTIC = {
    "resnet50": ("imagenet-1k", 0.05, 10.0),
    "vit-b16": ("imagenet-1k", 0.025, 12.0),
    "yolov3": ("coco-2017", 0.025, 6.0),
    "detr": ("coco-2017", 0.02, 8.0),
    "deepspeech2": ("librispeech-960h", 0.015, 5.0),
    "conformer": ("librispeech-960h", 0.015, 7.0),
}


def elastic_toy(*, budget_per_hour: float = 80.0, cache_gb: float = 100.0, gpus: int = 32) -> Instance:
    """The six toy jobs made elastic: the welfare problem P2 (docs/model.md §5) with a binding budget.

    Each job may run on 1, 2, 4 or 8 GPUs; its rate is linear in the GPUs
    (r(g) = g × its per-GPU rate) and its utility concave, U(g) = w g^0.6
    (rounded to cents).  The cluster has 32 GPUs and 100 GB of cache, less
    than the 224.3 GB of data, at :data:`TOY_PRICES`.

    What it teaches: at 80 $/h the budget binds (running every job at 8 GPUs
    would cost 120 $/h of GPUs alone), so GPUs, cache and bandwidth compete
    for the same dollars.  The exact optimum (the P2 MILP, HiGHS at gap 0) is
    welfare 130.06; AutoCBA finds 127.74, about 1.8 % below, and its
    Lagrangian certificate (proofs/autocba_certificate.md) bounds the optimum
    by 131.63 without solving the MILP.  The IO-unaware GPU schedulers
    (``gavel-tput``, ``optimus``) spend the whole budget on GPUs, leave none
    for IO and score 0.  These numbers are checked by tests/test_examples.py.
    """
    jobs = [
        {
            "id": name,
            "dataset": dataset,
            "options": [
                {"gpus": g, "io_gbps": round(per_gpu * g, 4), "utility": round(weight * g**0.6, 2)}
                for g in (1, 2, 4, 8)
            ],
        }
        for name, (dataset, per_gpu, weight) in _ELASTIC.items()
    ]
    return build_instance(
        jobs, toy_datasets(), cache_gb=cache_gb, prices=TOY_PRICES, gpus=gpus, budget_per_hour=budget_per_hour
    )


def mccormick_toy() -> Instance:
    """Two jobs with two options each on one shared dataset: a P2 model small enough to print and read.

    What it teaches: the McCormick envelope (proofs/mccormick_exact.md) in
    the printed Pyomo model of P2 (docs/model.md §5), one row per option.
    The dataset (40 GB) costs 1.2 $/h to cache; streaming it costs 9 $/h per
    GB/s read.  Both jobs at 2 GPUs (welfare 11) cost 11.2 $/h, above the
    budget of 9.5 $/h.  One job at 2 GPUs and one at 1 (welfare 9) cost
    8.7 $/h with the dataset cached but 9.57 $/h streamed, so the optimum,
    welfare 9, must cache: in the solved MILP w = y·h = 1 on the chosen rows.
    The LP relaxation runs train-b fractionally at both options and bounds
    the welfare by 9.64; AutoCBA finds 9 and its certificate also says 9.64,
    so neither bound proves the optimum here (checked by tests/test_examples.py).
    """
    jobs = [
        {
            "id": "train-a",
            "dataset": "shared",
            "options": [{"gpus": 1, "io_gbps": 0.08, "utility": 3.0}, {"gpus": 2, "io_gbps": 0.15, "utility": 5.0}],
        },
        {
            "id": "train-b",
            "dataset": "shared",
            "options": [{"gpus": 1, "io_gbps": 0.08, "utility": 4.0}, {"gpus": 2, "io_gbps": 0.15, "utility": 6.0}],
        },
    ]
    datasets = [{"id": "shared", "size_gb": 40.0}]
    return build_instance(jobs, datasets, cache_gb=50.0, prices=(2.5, 0.03, 9.0), gpus=8, budget_per_hour=9.5)


def greedy_trap(m: int = 10) -> Instance:
    """Counterexample 1 of proofs/autocba_guarantee.md: a utility-per-dollar greedy without the best single job.

    Prices p_g = 1, p_c = p_b = 0, no cache, budget m $/h.  Job ``small``:
    1 GPU worth 2 (2 per dollar).  Job ``big``: m GPUs worth 1.5 m (1.5 per
    dollar).  A naive greedy takes ``small`` first, after which ``big`` no
    longer fits: welfare 2.  The optimum is ``big`` alone, 1.5 m, so the
    naive greedy's ratio 4 / (3 m) tends to 0.  AutoCBA compares its greedy
    with the best single job and returns 1.5 m (Theorem C, the ½ guarantee).
    ``m`` must be an integer ≥ 2.
    """
    if m < 2:
        raise ValueError(f"m must be >= 2, got {m}")
    jobs = [
        {"id": "small", "dataset": "a", "options": [{"gpus": 1, "io_gbps": 0.0, "utility": 2.0}]},
        {"id": "big", "dataset": "b", "options": [{"gpus": m, "io_gbps": 0.0, "utility": 1.5 * m}]},
    ]
    datasets = [{"id": "a", "size_gb": 1.0}, {"id": "b", "size_gb": 1.0}]
    return build_instance(jobs, datasets, cache_gb=0.0, prices=(1.0, 0.0, 0.0), budget_per_hour=float(m))


#: (job id, submit minute, duration minutes, GPUs, model, dataset) of :func:`small_trace`.
_TRACE = (
    ("in-1", 0, 150, 8, "resnet50", "imagenet-1k"),
    ("ds-1", 5, 120, 8, "deepspeech2", "librispeech-960h"),
    ("c10-1", 10, 40, 2, "resnet18", "cifar-10"),
    ("yo-1", 15, 90, 4, "yolov3", "coco-2017"),
    ("in-2", 30, 100, 8, "pollux-resnet50", "imagenet-1k"),
    ("c10-2", 35, 30, 1, "resnet18", "cifar-10"),
    ("yo-2", 45, 60, 4, "yolov3", "coco-2017"),
    ("ds-2", 60, 80, 4, "deepspeech2", "librispeech-960h"),
    ("in-3", 70, 60, 4, "resnet50", "imagenet-1k"),
    ("lm-1", 75, 45, 2, "lm", "wikitext-103"),
    ("c10-3", 90, 25, 4, "resnet18", "cifar-10"),
    ("ds-3", 110, 100, 8, "deepspeech2", "librispeech-960h"),
    ("yo-3", 120, 50, 2, "yolov3", "coco-2017"),
    ("in-4", 150, 90, 8, "resnet50", "imagenet-1k"),
    ("in-5", 160, 70, 8, "pollux-resnet50", "imagenet-1k"),
    ("lm-2", 170, 30, 1, "lm", "wikitext-2"),
    ("ds-4", 180, 60, 4, "deepspeech2", "librispeech-960h"),
    ("c10-4", 200, 20, 2, "resnet18", "cifar-10"),
    ("yo-4", 210, 60, 8, "yolov3", "coco-2017"),
    ("in-6", 240, 45, 4, "resnet50", "imagenet-1k"),
    ("ds-5", 250, 50, 8, "deepspeech2", "librispeech-960h"),
    ("c10-5", 270, 30, 1, "resnet18", "cifar-10"),
    ("yo-5", 280, 40, 4, "yolov3", "coco-2017"),
    ("in-7", 300, 30, 8, "resnet50", "imagenet-1k"),
)


def small_trace() -> pd.DataFrame:
    """A 24-job, six-hour trace in the generic CSV form (``submit_time_s, duration_s, gpus, job_id, model, dataset``).

    What it teaches: a replay (docs/model.md §6) where the cache decision
    changes over time.  Every job names a catalog model and dataset, so its
    rate comes from measured throughputs.  ImageNet has two to three 8-GPU
    jobs at its peak (ρ ≈ 0.002 s⁻¹) and one or none at other times;
    LibriSpeech and COCO come and go; CIFAR-10 is tiny and always worth
    caching.  With the replay prices of tutorials/03_a_cluster_over_time.ipynb
    (p_c / p_b = 0.001 s⁻¹) CBA caches ImageNet only while enough of its jobs
    run, and evicts it when they leave.
    """
    rows = [
        {
            "submit_time_s": 60.0 * submit,
            "duration_s": 60.0 * minutes,
            "gpus": gpus,
            "job_id": job,
            "model": model,
            "dataset": dataset,
        }
        for job, submit, minutes, gpus, model, dataset in _TRACE
    ]
    return pd.DataFrame(rows, columns=["submit_time_s", "duration_s", "gpus", "job_id", "model", "dataset"])
